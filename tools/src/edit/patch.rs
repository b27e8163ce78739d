//! The codex `apply_patch` format (in progress).
