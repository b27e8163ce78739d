//! Hashline edits (in progress).
