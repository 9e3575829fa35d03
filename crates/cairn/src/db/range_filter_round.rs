//! Range-filter memory's round (docs/design.md §5, decider `tuning/range_memory.rs`, state
//! `control/range_filter_memory.rs`): every `range_filter.round_ms` while range reads arrive or
//! tables change, and at once when the cache is resized. It scores each table with an open
//! reader by its recent empty range reads, solves each one's share of the bits, admits filters
//! in order of empty reads per byte while they fit the region, unloads the others, and returns
//! the builds it admitted: tables whose filter falls short of their share (written before the
//! reads reached them). [`DbInner::build_range_filters`] builds those from the tables' keys,
//! one table at a time, reading at most `range_filter.build_rate` bytes per second outside the
//! block cache, and pins each filter in its reader.
//!
//! Why built filters live in memory only (rebuilt after a restart, when reads reach the table
//! again) rather than in a side file or a rewritten table: docs/design.md §5, range-filter
//! memory.

use super::inner::DbInner;
use super::live_files::LiveFile;
use crate::filter::range::{RangeBuilder, RangeFilter};
use crate::format::ikey;
use crate::iter::InternalIterator;
use crate::sst::{IterOptions, TableReader};
use crate::tuning::range_memory::{grow, plan, Action, Growth, Table, Window};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A filter a round decided to build.
pub(crate) struct Build {
    tree: usize,
    file: Arc<LiveFile>,
    reader: Arc<TableReader>,
    bpk: f64,
    rate: f64,
    /// The bytes the round reserved for it.
    planned: u64,
}

/// Readahead of a build's sequential read of its table (a compaction's).
const BUILD_READAHEAD: usize = 2 << 20;

/// Keys a build reads between checks of its pace.
const PACE_KEYS: u64 = 1024;

/// Seconds of `range_filter.build_rate` a round's builds may read at the device's speed before
/// the pace holds them (a token bucket that starts full): the first filter, for the table with
/// the most empty reads per byte, arrives at once. Paced from the first byte, the first 50,000
/// empty reads after a load at 5% of the data ran 0.84x RocksDB (1.1 data reads each, slowed by
/// the builds' reads); reading each table whole at the device's speed and then waiting, they ran
/// 1.32x, but foreground lookups met every table's burst.
const BURST_SECS: f64 = 1.0;

/// The round's builds' reads against `range_filter.build_rate`.
struct Pace {
    rate: f64,
    started: Instant,
    read_before: u64,
}

impl DbInner {
    /// One round: the region's capacity from the cache's, what it keeps, and the builds it
    /// admitted (most empty reads per byte first).
    pub(crate) fn keep_range_filters(&self) -> Vec<Build> {
        let cap = super::control::range_filter_memory::capacity(&self.opts, &self.regions, self.cache.capacity());
        self.memory.range_filters.set_capacity(cap);
        if cap == usize::MAX {
            return Vec::new();
        }
        let rf = &self.opts.range_filter;
        let may_build = rf.by_workload && rf.build_rate > 0 && !self.life.is_read_only();
        let mut files = self.range_memory.files.lock();
        let mut next = HashMap::with_capacity(files.len());
        let mut tables = Vec::new();
        let mut live = Vec::new();
        let mut empty_since = 0.0;
        self.for_each_live_file(|tree, f, state| {
            // A file without an open reader holds no filter; it is judged once one is open
            // again.
            let Some(reader) = state.reader_slot().load_full() else {
                return;
            };
            let block = reader.range_filter_block_size();
            if block == 0 && !may_build {
                return;
            }
            let pinned = reader.range_filter_bytes() as u64;
            let empty = state.stats().range_empty();
            let known = files.get(&f.number).copied();
            let (seen, score) = known.unwrap_or_default();
            // The window's empty reads: a file new to the rounds brings what it inherited,
            // reads its inputs had and earlier windows counted.
            empty_since += match known {
                Some(_) => (empty - seen).max(0.0),
                None => state.stats().range_empty_here(),
            };
            let score = score * super::control::range_filter_memory::DECAY + (empty - seen).max(0.0);
            next.insert(f.number, (empty, score));
            tables.push(Table {
                entries: f.entries as f64,
                empty,
                score,
                bytes: if pinned > 0 { pinned } else { block },
                bits: reader.range_filter_bits(),
                pinned: pinned > 0,
            });
            live.push((tree, state.clone(), reader, f.entries as f64));
        });
        *files = next;
        let kind = self.range_memory.kind(rf);
        let average = self.grow_range_bits(&tables, empty_since);
        let actions = plan(&tables, cap as u64, average, kind, may_build);
        let mut builds = Vec::new();
        for ((tree, state, reader, entries), action) in live.into_iter().zip(actions) {
            state.set_range_admitted(matches!(action, Action::Keep | Action::Admit | Action::Build { .. }));
            match action {
                Action::Unload | Action::Out => {
                    reader.unload_range_filter();
                }
                Action::Build { bpk, rate } => builds.push(Build {
                    planned: kind.bytes(bpk, entries),
                    tree,
                    file: state,
                    reader,
                    bpk,
                    rate,
                }),
                Action::Keep | Action::Admit => {}
            }
        }
        builds.sort_by(|a, b| b.rate.total_cmp(&a.rate));
        builds
    }

    /// The range filters' average bits per key after this round's window (`empty`: the empty
    /// range reads that reached `tables` since the last round): grown or lowered by
    /// `tuning::range_memory::grow` between `range_filter.bits_per_key` and
    /// `range_filter.max_bits_per_key` against the memory tuner's last marginal.
    fn grow_range_bits(&self, tables: &[Table], empty: f64) -> f64 {
        let rf = &self.opts.range_filter;
        let most = rf.max_bits_per_key.max(rf.bits_per_key);
        if !rf.by_workload || most <= rf.bits_per_key {
            return rf.bits_per_key;
        }
        let trees: Vec<_> = self.counters.trees().iter().map(|t| t.snapshot("")).collect();
        let levels = || trees.iter().flat_map(|t| t.levels.iter());
        let now = [
            self.counters.writes().user_ops + trees.iter().map(|t| t.gets + t.ranges).sum::<u64>(),
            levels().map(|l| l.range_false_positives).sum(),
            levels().map(|l| l.range_negatives).sum(),
        ];
        let (pinned_bits, pinned_keys) = tables
            .iter()
            .filter(|t| t.pinned)
            .fold((0.0, 0.0), |(b, k), t| (b + t.bits as f64, k + t.entries));
        let mut st = self.range_memory.growth.lock();
        let (g, last) = st.unwrap_or((
            Growth {
                average: rf.bits_per_key,
                scale: 1.0,
            },
            [0; 3],
        ));
        let since = |i: usize| now[i].saturating_sub(last[i]) as f64;
        let w = Window {
            ops: since(0),
            empty,
            false_positives: since(1),
            negatives: since(2),
            filter_bpk: if pinned_keys > 0.0 {
                pinned_bits / pinned_keys
            } else {
                0.0
            },
            entries: tables.iter().map(|t| t.entries).sum(),
            cache_marginal: self.tuner.as_ref().and_then(|t| t.cache_marginal()),
        };
        let g = grow(g, &w, rf.kind.decay(), rf.bits_per_key, most);
        *st = Some((g, now));
        self.range_memory.set_average(g.average);
        g.average
    }

    /// Builds the filters a round admitted, one table at a time, keeping the bytes read to
    /// `range_filter.build_rate` per second as they are read (not per table: a table read at
    /// the device's speed and then a pause would take the device from foreground reads in
    /// bursts); stops at shutdown. A table deleted meanwhile is skipped; a table that cannot be
    /// read is left as it was (its reads meet the error themselves).
    pub(crate) fn build_range_filters(&self, builds: Vec<Build>) {
        let pace = Pace {
            rate: self.opts.range_filter.build_rate.max(1) as f64,
            started: Instant::now(),
            read_before: self.range_memory.io.snapshot().data.bytes,
        };
        for b in builds {
            if self.life.is_shut_down() || self.life.is_poisoned() {
                return;
            }
            // The room may have shrunk since the round (the cache resized): a filter that
            // would not be kept is not worth reading the table for.
            if !self.files.is_live(b.file.stats().number())
                || !b.file.range_admitted()
                || !b.reader.range_filter_fits(b.planned)
            {
                continue;
            }
            match self.build_range_filter(&b, &pace) {
                Ok(Some(filter)) => {
                    let bytes = filter.memory_usage() as u64;
                    if b.reader.install_range_filter(filter) {
                        self.range_memory.record_build(bytes);
                    } else if bytes > b.planned {
                        self.range_memory.record_misfit(bytes, b.planned);
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    self.range_memory.record_failure();
                    tracing::warn!(file = %b.reader.path().display(), error = %e, "range filter not built");
                }
            }
        }
    }

    /// Ahead of `pace`'s rate (after the first [`BURST_SECS`] of it): waits until the bytes
    /// builds read so far are within it.
    fn keep_pace(&self, pace: &Pace) {
        let read = self
            .range_memory
            .io
            .snapshot()
            .data
            .bytes
            .saturating_sub(pace.read_before);
        let due = Duration::from_secs_f64((read as f64 / pace.rate - BURST_SECS).max(0.0));
        if let Some(wait) = due.checked_sub(pace.started.elapsed()) {
            self.pause(wait);
        }
    }

    /// Waits `d`, or less if the database shuts down.
    fn pause(&self, d: Duration) {
        let until = Instant::now() + d;
        let mut st = self.state.lock();
        while !self.life.is_shut_down() {
            let Some(left) = until.checked_duration_since(Instant::now()).filter(|l| !l.is_zero()) else {
                return;
            };
            self.bg_cv.wait_for(&mut st, left);
        }
    }

    /// The filter of `b.bpk` bits per key built from its table's distinct user keys, laid out
    /// for its tree's sampled range reads as a flush would lay it out (`None`: the kind gives
    /// the table none at those bits).
    fn build_range_filter(&self, b: &Build, pace: &Pace) -> crate::error::Result<Option<RangeFilter>> {
        let rf = &self.opts.range_filter;
        let fixed = (rf.key_offset > 0).then_some(rf.key_offset);
        let mut builder = RangeBuilder::new(rf.kind, fixed);
        let mut it = b.reader.iter_with(IterOptions {
            fill_cache: false,
            stats: Some(self.range_memory.io.clone()),
            readahead: BUILD_READAHEAD,
            ..crate::sst::IterOptions::default()
        });
        let mut last: Option<Vec<u8>> = None;
        let mut distinct = 0u64;
        it.seek_to_first();
        while it.valid() {
            if distinct % PACE_KEYS == 0 {
                self.keep_pace(pace);
                if self.life.is_shut_down() {
                    return Ok(None);
                }
            }
            let uk = ikey::user_key(it.key());
            if last.as_deref() != Some(uk) {
                builder.add_key(uk);
                distinct += 1;
                match &mut last {
                    Some(l) => {
                        l.clear();
                        l.extend_from_slice(uk);
                    }
                    None => last = Some(uk.to_vec()),
                }
            }
            it.next();
        }
        it.status()?;
        let counters = self.counters.tree(b.tree);
        let (sizes, ends) = (counters.range_sizes(), counters.range_ends());
        let plan = crate::tuning::rosetta::planner(b.bpk * distinct as f64, Some(&sizes), rf.probe_budget);
        let number = b.file.stats().number().0;
        let Some((version, block)) = builder.finish(number, b.bpk, Some(&ends), plan) else {
            return Ok(None);
        };
        RangeFilter::decode(version, block)
            .map(Some)
            .map_err(|e| crate::error::Error::corruption(b.reader.path(), 0, format!("range filter built: {e}")))
    }
}
