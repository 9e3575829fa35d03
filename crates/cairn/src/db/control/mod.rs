//! The run-time controllers: each keeps its state in `DbInner`, runs off the read path (a
//! background thread, or the call that changes what it decides from), hands the decision to
//! its pure decider in `tuning/`, and publishes the result for the engine to apply.
//!
//! - `memory_tuner.rs`: Luo & Carey's memory tuner, its cycles' statistics and history
//!   (decider `tuning/memory.rs`; the engine gathers its inputs and applies its sizes in
//!   `db/regions.rs`).
//! - `elastic_adjuster.rs`: ElasticBF's filter-unit adjuster, through its narrow `Host` trait
//!   (decider `tuning/elastic.rs`).
//! - `range_filter_memory.rs`: what range-filter memory may hold and its rounds' scores
//!   (decider `tuning/range_memory.rs`; the round runs in `db/range_filter_round.rs`).
//! - `readahead.rs`: how far each level's forward seeks read ahead (decider
//!   `tuning/readahead.rs`).

pub(super) mod elastic_adjuster;
pub(super) mod memory_tuner;
pub(super) mod range_filter_memory;
pub(super) mod readahead;
