//! Edits through the real file handlers and the execution coordinator while the file changes
//! between the read and the write.
