//! Pure deciders that tune the engine: point-filter allocation, range-filter layout, what
//! range-filter memory keeps, the write controller, the memory tuner, a partitioned memory
//! component's flush choice.

pub mod bpk;
pub mod elastic;
pub mod filter_plan;
pub mod flush;
pub mod memory;
pub mod range_memory;
pub mod readahead;
pub mod rosetta;
pub mod write_control;

pub use filter_plan::{FilterPlan, UnitChoice};
