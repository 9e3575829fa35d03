//! Filter decisions for a job's outputs (docs/design.md §1 [C]): what each output inherits from
//! the job's inputs (Merlin's statistics, the same rule over the exact counts, and empty range
//! reads), the allocator's decision from the tree's statistics, the skip list it publishes for
//! the read path, and the output's share of the range-filter budget. Uniform allocation needs
//! none of it and takes a fixed decision.

use super::inner::DbInner;
use crate::error::Result;
use crate::filter::rosetta::SIZE_BUCKETS;
use crate::filter::FilterDecision;
use crate::filter::{DecideFilters, TableOutput};
use crate::options::Options;
use crate::sst::{RangeFilterOptions, TableOptions, TableReader};
use crate::stats::merlin::inherit;
use crate::stats::{Estimate, FileNumber, FileStatsSnapshot, Seed, StatsSnapshot};
use crate::tuning::bpk::{filter_decision, sort_and_search, BpkAllocator, OutputContext, SolverFile};
use crate::version::{FileMeta, TreeVersion};
use parking_lot::Mutex;
use std::sync::Arc;

/// An input of a job (or, for a flush, a file a lookup in the output's range probes next).
#[derive(Debug)]
pub(super) struct Input {
    reader: Arc<TableReader>,
    stats: FileStatsSnapshot,
}

impl Input {
    /// The share of this input's data blocks inside `[lo, hi]`: the α of Mnemosyne's
    /// inheritance, block-exact (an output covers whole blocks of each input but at its edges).
    fn share(&self, lo: &[u8], hi: &[u8]) -> f64 {
        let (mut inside, mut total) = (0u64, 0u64);
        let walked = self.reader.for_each_block_key(|uk| {
            total += 1;
            inside += u64::from(uk >= lo && uk <= hi);
        });
        if let Err(e) = walked {
            // Only an estimate rides on it; the job reading this input meets the error itself.
            tracing::warn!(file = %self.reader.path().display(), error = %e, "input index unreadable: nothing inherited from it");
            return 0.0;
        }
        if total == 0 {
            0.0
        } else {
            inside as f64 / total as f64
        }
    }
}

/// How one job's outputs get their filters.
#[derive(Debug)]
pub(super) struct OutputDecider {
    allocator: Arc<dyn BpkAllocator>,
    level: usize,
    /// The tree's live files when the job started.
    stats: StatsSnapshot,
    /// Inputs probed before the others (the shallower level), and the others.
    upper: Vec<Input>,
    deeper: Vec<Input>,
    /// A flush: the output holds new data, so it inherits lookups but no hits.
    flush: bool,
    /// Where seeds and skip lists go (none during recovery, before the engine exists).
    inner: Option<Arc<DbInner>>,
    /// The average range-filter bits per key, when outputs get their share by workload.
    range_bpk: Option<f64>,
    /// The seed of the output decided last (by number), for its second decision.
    last_seed: Mutex<Option<(u64, Seed)>>,
    /// The units' false-positive decay per bit per key (their layout's).
    decay: f64,
    /// The range-filter kind's decay (`RangeFilterKind::decay`).
    range_decay: f64,
}

impl OutputDecider {
    /// What output `t` inherits, computed once per output: its point and range decisions both
    /// ask, and each share walks an input's whole index.
    fn seed(&self, t: &TableOutput<'_>) -> Seed {
        // Subcompactions decide their outputs in parallel: the lock is not held while computing.
        if let Some((n, seed)) = *self.last_seed.lock() {
            if n == t.number {
                return seed;
            }
        }
        let shares = |inputs: &[Input]| -> Vec<f64> { inputs.iter().map(|i| i.share(t.smallest, t.largest)).collect() };
        let (up, deep) = (shares(&self.upper), shares(&self.deeper));
        let part = |inputs: &[Input], a: &[f64], pick: fn(&FileStatsSnapshot) -> Estimate| -> Vec<(f64, Estimate)> {
            a.iter().zip(inputs).map(|(&a, i)| (a, pick(&i.stats))).collect()
        };
        let both = |pick: fn(&FileStatsSnapshot) -> Estimate| {
            let e = inherit(&part(&self.upper, &up, pick), &part(&self.deeper, &deep, pick));
            if self.flush {
                Estimate { q: e.q, x: 0.0 }
            } else {
                e
            }
        };
        // A range read over the output's keys asked the inputs of both levels: it counts once,
        // so the output inherits the larger of the two levels' shares.
        let range =
            |inputs: &[Input], a: &[f64]| -> f64 { a.iter().zip(inputs).map(|(a, i)| a * i.stats.range_empty).sum() };
        let seed = Seed {
            merlin: both(|s| s.estimate),
            exact: both(|s| s.exact),
            range_empty: range(&self.upper, &up).max(range(&self.deeper, &deep)),
        };
        if let Some(inner) = &self.inner {
            inner.files.stats().seed(FileNumber(t.number), seed);
        }
        *self.last_seed.lock() = Some((t.number, seed));
        seed
    }

    fn replaced(&self) -> Vec<FileNumber> {
        if self.flush {
            return Vec::new();
        }
        self.upper.iter().chain(&self.deeper).map(|i| i.stats.number).collect()
    }
}

impl DecideFilters for OutputDecider {
    fn decide(&self, t: &TableOutput<'_>) -> FilterDecision {
        let seed = self.seed(t);
        let replaced = self.replaced();
        let d = self.allocator.decide(&OutputContext {
            level: self.level,
            keys: t.keys,
            stats: &self.stats,
            replaced: &replaced,
            seed,
            decay: self.decay,
        });
        if let Some(inner) = &self.inner {
            let tree_files: Vec<u64> = self.stats.files.iter().map(|f| f.number.0).collect();
            let skip: Vec<u64> = d.skip.iter().map(|n| n.0).collect();
            inner
                .filter_plan
                .rcu(|plan| Arc::new(plan.with_tree(&tree_files, &skip)));
        }
        filter_decision(self.allocator.name(), d.bpk)
    }

    /// The output's bits per key from the same solver as point filters (Mnemosyne's
    /// sort-and-search): files weighted by their empty range reads, the output by what it
    /// inherits. The solver runs over the tree as the job will leave it — the kept files, and
    /// the job's inputs standing in for its outputs (a job that rewrites a whole level writes
    /// outputs none of which exists yet) — and the output takes its bits from the optimum's
    /// multiplier C: `bpk = −(ln(n/z) + C)/β`, β the kind's decay (`RangeFilterKind::decay`). Before any empty range read has been
    /// counted, no file gets any: range filters cost nothing where range reads do not happen.
    fn range_bits_per_key(&self, t: &TableOutput<'_>) -> f64 {
        let avg = self.range_bpk.unwrap_or(0.0);
        let seed = self.seed(t);
        let replaced = self.replaced();
        let population: Vec<SolverFile> = self
            .stats
            .files
            .iter()
            .filter(|f| !replaced.contains(&f.number))
            .chain(
                self.upper
                    .iter()
                    .chain(&self.deeper)
                    .filter(|_| !self.flush)
                    .map(|i| &i.stats),
            )
            .map(|f| SolverFile {
                entries: f.entries as f64,
                empty: f.range_empty,
            })
            .collect();
        // Rosetta's levels are standard Bloom filters; Grafite's rate halves per bit.
        let decay = self.range_decay;
        let Some(c) = sort_and_search(&population, avg, 1.0, decay).c else {
            return 0.0; // no empty range read counted yet
        };
        if seed.range_empty <= 0.0 || t.keys == 0 {
            return 0.0;
        }
        let bpk = -((t.keys as f64 / seed.range_empty).ln() + c) / decay;
        // The solver's rounding: under half a bit is no filter, under one bit is one.
        if bpk < 0.5 {
            0.0
        } else {
            bpk.max(1.0)
        }
    }
}

/// A tree's sampled range-read sizes and ends (what range filters are laid out by).
type RangeSamples = (Arc<[u64; SIZE_BUCKETS]>, Arc<[u64]>);

/// Table options with the options' block layout and `filter` deciding the filter; a range
/// filter laid out for `samples` (the tree's sampled range-read sizes and ends), its bits decided by
/// `range` when given, when the options ask for one.
fn with_filter(
    opts: &Options,
    db_id: u64,
    filter: FilterDecision,
    decider: Option<Arc<dyn DecideFilters>>,
    range: Option<Arc<dyn DecideFilters>>,
    samples: Option<RangeSamples>,
) -> TableOptions {
    let (sizes, ends) = samples.map_or((None, None), |(s, e)| (Some(s), Some(e)));
    TableOptions {
        block_size: opts.table.block_size,
        restart_interval: opts.table.restart_interval,
        index_restart_interval: opts.table.index_restart_interval,
        hash_index: opts.table.hash_index,
        compression: opts.table.compression,
        segment_size: opts.filters.segment_size,
        filter,
        cache_local_filters: opts.filters.unit_format == crate::options::UnitFormat::CacheLocal,
        filter_decider: decider,
        range_filter: (opts.range_filter.bits_per_key > 0.0).then_some(RangeFilterOptions {
            bits_per_key: opts.range_filter.bits_per_key,
            kind: opts.range_filter.kind,
            decider: range,
            key_offset: opts.range_filter.key_offset,
            sizes,
            ends,
            probe_budget: opts.range_filter.probe_budget,
        }),
        db_id,
    }
}

/// How a database with `opts` writes an external table (`external.rs`): its table settings,
/// with the filter its policy gives a file no statistics decide.
pub(crate) fn external_table_options(opts: &Options) -> TableOptions {
    let filter = super::open::allocator(opts).fixed().unwrap_or_else(|| {
        crate::tuning::bpk::filter_decision(opts.filters.policy.kind().name(), opts.filters.bits_per_key)
    });
    with_filter(opts, 0, filter, None, None, None)
}

/// What a job that writes `level` of a tree whose version is `tv` needs to decide its outputs'
/// filters: `upper` and `deeper` are its inputs (empty for a flush, which then inherits from the
/// files a lookup in its range probes after it).
pub(super) struct JobFilter<'a> {
    pub level: usize,
    pub upper: &'a [Arc<FileMeta>],
    pub deeper: &'a [Arc<FileMeta>],
    pub flush: bool,
}

impl DbInner {
    /// Table options for a job of `tree` described by `job`: a fixed filter for uniform
    /// allocation, otherwise a per-output decision. Opens the inputs' readers (for the
    /// inheritance shares), so call it without the state lock.
    pub(super) fn job_table_options(self: &Arc<Self>, tree: usize, job: JobFilter<'_>) -> Result<TableOptions> {
        let counters = self.counters.tree(tree);
        let sizes: Option<RangeSamples> = Some((Arc::new(counters.range_sizes()), counters.range_ends().into()));
        let point_fixed = self.bpk.fixed();
        let range_fixed = self.opts.range_filter.bits_per_key <= 0.0 || !self.opts.range_filter.by_workload;
        if let (Some(fixed), true) = (point_fixed.clone(), range_fixed) {
            return Ok(with_filter(&self.opts, self.db_id, fixed, None, None, sizes));
        }
        let version = self.state.lock().version().clone();
        let Some(tv) = version.trees.get(tree) else {
            return Ok(with_filter(
                &self.opts,
                self.db_id,
                FilterDecision::uniform(0.0),
                None,
                None,
                sizes,
            ));
        };
        let stats = self.files.snapshot(&version, Some(tree));
        let input = |f: &Arc<FileMeta>| -> Result<Option<Input>> {
            let Some(s) = stats.files.iter().find(|s| s.number.0 == f.number) else {
                return Ok(None);
            };
            Ok(Some(Input {
                reader: self.open_table(f)?,
                stats: s.clone(),
            }))
        };
        let (upper, deeper) = if job.flush {
            (Vec::new(), next_probed(tv))
        } else {
            (job.upper.to_vec(), job.deeper.to_vec())
        };
        let collect = |fs: &[Arc<FileMeta>]| -> Result<Vec<Input>> {
            Ok(fs
                .iter()
                .map(input)
                .collect::<Result<Vec<_>>>()?
                .into_iter()
                .flatten()
                .collect())
        };
        let decider = Arc::new(OutputDecider {
            allocator: self.bpk.clone(),
            level: job.level,
            upper: collect(&upper)?,
            deeper: collect(&deeper)?,
            stats,
            flush: job.flush,
            inner: Some(self.clone()),
            range_bpk: (!range_fixed).then(|| self.range_bits_that_fit(&version)),
            last_seed: Mutex::new(None),
            decay: self.opts.filters.unit_format.decay(),
            range_decay: self.opts.range_filter.kind.decay(),
        });
        let (filter, point): (_, Option<Arc<dyn DecideFilters>>) = match point_fixed {
            Some(fixed) => (fixed, None),
            None => (FilterDecision::uniform(0.0), Some(decider.clone())),
        };
        let range: Option<Arc<dyn DecideFilters>> = if range_fixed { None } else { Some(decider) };
        Ok(with_filter(&self.opts, self.db_id, filter, point, range, sizes))
    }

    /// The average range-filter bits per key (as the rounds grew it), fitted to range-filter
    /// memory over the keys of `version` (`Kind::fitted_bpk`, the round's rule).
    fn range_bits_that_fit(&self, version: &crate::version::Version) -> f64 {
        let configured = self.range_memory.average(self.opts.range_filter.bits_per_key);
        let cap = self.memory.range_filters.capacity();
        if cap == usize::MAX {
            return configured;
        }
        let files = || version.trees.iter().flat_map(|t| t.levels.iter().flatten());
        let entries: u64 = files().map(|f| f.entries).sum();
        let kind = self.range_memory.kind(&self.opts.range_filter);
        kind.fitted_bpk(configured, cap as u64, files().count(), entries as f64)
    }
}

/// The files a lookup probes right after a new L0 file: the newest L0 file, or the first
/// non-empty sorted level.
fn next_probed(tv: &TreeVersion) -> Vec<Arc<FileMeta>> {
    if let Some(f) = tv.level(0).first() {
        return vec![f.clone()];
    }
    (1..tv.levels.len())
        .map(|l| tv.level(l))
        .find(|l| !l.is_empty())
        .map(<[_]>::to_vec)
        .unwrap_or_default()
}

/// Table options for the tables recovery writes from replayed WALs (before the engine exists:
/// no statistics, no seeds).
pub(super) fn recovery_table_options(
    opts: &Options,
    db_id: u64,
    allocator: &Arc<dyn BpkAllocator>,
    tv: Option<&TreeVersion>,
) -> TableOptions {
    if let Some(fixed) = allocator.fixed() {
        return with_filter(opts, db_id, fixed, None, None, None);
    }
    let stats = StatsSnapshot {
        files: tv
            .map(|tv| {
                tv.levels
                    .iter()
                    .enumerate()
                    .flat_map(|(level, fs)| fs.iter().map(move |f| blank_stats(level, f)))
                    .collect()
            })
            .unwrap_or_default(),
        lookups: 0,
    };
    let decider = OutputDecider {
        allocator: allocator.clone(),
        level: 0,
        stats,
        upper: Vec::new(),
        deeper: Vec::new(),
        flush: true,
        inner: None,
        range_bpk: None,
        last_seed: Mutex::new(None),
        decay: opts.filters.unit_format.decay(),
        range_decay: opts.range_filter.kind.decay(),
    };
    with_filter(
        opts,
        db_id,
        FilterDecision::uniform(0.0),
        Some(Arc::new(decider)),
        None,
        None,
    )
}

fn blank_stats(level: usize, f: &FileMeta) -> FileStatsSnapshot {
    FileStatsSnapshot {
        number: FileNumber(f.number),
        tree: 0,
        level,
        entries: f.entries,
        probes: 0,
        filter_negatives: 0,
        found: 0,
        data_reads: 0,
        segment_probes: Vec::new(),
        bpk: f.filter_bpk,
        estimate: Estimate::default(),
        exact: Estimate::default(),
        range_probes: 0,
        range_empty: 0.0,
        loaded_units: 0,
    }
}
