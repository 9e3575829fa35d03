//! The merge policies.

mod garnering;
mod leveling;

pub use garnering::Garnering;
pub use leveling::Leveling;

#[cfg(test)]
mod tests;
