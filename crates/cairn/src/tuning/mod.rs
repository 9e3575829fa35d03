//! Pure deciders that tune the engine: point-filter allocation, the write controller.

pub mod bpk;
pub mod filter_plan;
pub mod write_control;

pub use filter_plan::{FilterPlan, UnitChoice};
