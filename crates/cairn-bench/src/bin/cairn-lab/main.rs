//! The lab's experiments, one subcommand each (`cairn-lab <experiment> --help`); the engine
//! runners users know stay binaries of their own (`db_bench`, `ycsb`). Each experiment writes
//! its table, JSON and PNG under `--out`; the scripts in `scripts/` name the subcommand they run.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod build_impact;
mod compare;
mod component_grid;
mod elastic_grid;
mod equal_memory;
mod filter_grid;
#[cfg(feature = "internals")]
mod filter_units;
mod memory_grid;
mod merlin_accuracy;
mod plot_bars;
mod plot_timeline;
mod plot_windows;
mod range_filter_fpr;
mod range_memory;

#[derive(Parser)]
#[command(
    name = "cairn-lab",
    about = "cairn's experiments: each writes a table, JSON and a PNG"
)]
struct Lab {
    #[command(subcommand)]
    experiment: Experiment,
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant, reason = "parsed once, at start")]
enum Experiment {
    /// What range-filter builds for tables already written cost foreground lookups and writes.
    BuildImpact(build_impact::Args),
    /// One workload on several engines or configurations, interleaved rounds (db_bench or ycsb).
    Compare(compare::Args),
    /// Monolithic against partitioned memory components, and RocksDB, at equal write memory.
    ComponentGrid(component_grid::Args),
    /// ElasticBF's figures: filter policies and RocksDB at equal filter and total memory.
    ElasticGrid(elastic_grid::Args),
    /// The plain engine against RocksDB at equal memory (bits per key × cache share).
    EqualMemory(equal_memory::Args),
    /// Mnemosyne's Fig. 11: unnecessary reads by key distribution, empty share and bits per key.
    FilterGrid(filter_grid::Args),
    /// Filter-unit layouts: false-positive rate and probe time (needs the `internals` feature).
    #[cfg(feature = "internals")]
    FilterUnits(filter_units::Args),
    /// Luo & Carey's memory experiments: the tuner and the flush policies at one budget.
    MemoryGrid(memory_grid::Args),
    /// Merlin's accuracy over a mixed workload (Mnemosyne Fig. 10).
    MerlinAccuracy(merlin_accuracy::Args),
    /// A grouped bar chart from a text table (for the shell scripts' results).
    PlotBars(plot_bars::Args),
    /// Compaction-debt timelines of db_bench/ycsb `--json` reports.
    PlotTimeline(plot_timeline::Args),
    /// Operations per second per window of a phase (db_bench `--window` reports), per round.
    PlotWindows(plot_windows::Args),
    /// Rosetta's Fig. 8: the range filter's false-positive rate against its bits per key.
    RangeFilterFpr(range_filter_fpr::Args),
    /// Range-filter memory at run time while the block cache is resized.
    RangeMemory(range_memory::Args),
}

fn main() {
    let m = Lab::command().get_matches();
    // The flags given on the command line (not defaulted), for the experiments that map them
    // onto engine options as db_bench does.
    let given = m.subcommand().map_or_else(Default::default, |(_, sub)| {
        sub.ids()
            .filter(|id| sub.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
            .map(|id| id.to_string())
            .collect()
    });
    let lab = Lab::from_arg_matches(&m).unwrap_or_else(|e| e.exit());
    match lab.experiment {
        Experiment::BuildImpact(a) => build_impact::main(a, given),
        Experiment::Compare(a) => compare::main(a),
        Experiment::ComponentGrid(a) => component_grid::main(a),
        Experiment::ElasticGrid(a) => elastic_grid::main(a),
        Experiment::EqualMemory(a) => equal_memory::main(a),
        Experiment::FilterGrid(a) => filter_grid::main(a),
        #[cfg(feature = "internals")]
        Experiment::FilterUnits(a) => filter_units::main(a),
        Experiment::MemoryGrid(a) => memory_grid::main(a),
        Experiment::MerlinAccuracy(a) => merlin_accuracy::main(a),
        Experiment::PlotBars(a) => plot_bars::main(a),
        Experiment::PlotTimeline(a) => plot_timeline::main(a),
        Experiment::PlotWindows(a) => plot_windows::main(a),
        Experiment::RangeFilterFpr(a) => range_filter_fpr::main(a),
        Experiment::RangeMemory(a) => range_memory::main(a, given),
    }
}
