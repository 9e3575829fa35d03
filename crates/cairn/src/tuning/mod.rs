//! Pure deciders that tune the engine. Point-filter allocation for now.

pub mod bpk;
