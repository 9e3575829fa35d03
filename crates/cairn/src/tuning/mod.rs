//! Pure deciders that tune the engine: point-filter allocation, range-filter layout, the write
//! controller.

pub mod bpk;
pub mod elastic;
pub mod filter_plan;
pub mod rosetta;
pub mod write_control;

pub use filter_plan::{FilterPlan, UnitChoice};
