//! Merge semantics.
