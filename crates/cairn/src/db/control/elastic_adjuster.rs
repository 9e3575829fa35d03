//! Elastic filter units at run time (DESIGN §6.3): the adjuster that loads and unloads units
//! in filter memory as segments get hot and cold. It runs off the read path — a background
//! thread every `elastic_interval_ms` while lookups arrive, or [`Db::adjust_filters`](crate::Db)
//! — and takes no lock a reader needs: readers find a segment's loaded units with one atomic
//! load (`filter/loaded.rs`) and count their probes per segment (striped counters); the
//! adjuster reads those counts, asks the pure decider (`tuning/elastic.rs`) what to change and
//! reads or frees units.
//!
//! Its own state, per live elastic table and segment: the key range, the access count the
//! segment inherited and the probes seen at the previous round, the logical time (Gets) of its
//! last access. Hotness inheritance: a table that appears in the same round as others of its
//! tree disappear (a compaction's edit installs outputs and removes inputs at once) gives each
//! of its segments the mean access count of the departed segments whose key ranges overlap it.
//! Combined mode (`mnemosyne-elastic`): every `elastic_solve_every` lookups, and whenever the
//! tables change, the targets of Mnemosyne's optimum over segments are applied in the next
//! round; ElasticBF's rule handles the accesses between solves.
//!
//! The adjuster sees the engine only through [`Host`] (the live tables, two clocks, reading a
//! table, the filter region), which `DbInner` implements; nothing here imports the rest of `db/`.

use crate::db::live_files::LiveFile;
use crate::error::Result;
use crate::filter::loaded::LoadedUnit;
use crate::memory::Region;
use crate::options::{FilterPolicy, Options};
use crate::sst::TableReader;
use crate::tuning::elastic::{adjust, marginals, targets, Action, Demand, Params, Segment};
use crate::version::FileMeta;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// What a round reads from the engine and does to it.
pub(crate) trait Host {
    fn options(&self) -> &Options;
    /// Logical time: Gets of every tree so far.
    fn logical_time(&self) -> u64;
    /// Lookups Merlin recorded (the clock of its estimates).
    fn lookups(&self) -> u64;
    /// The elastic tables in the current versions.
    fn live_elastic(&self) -> Vec<Live>;
    /// Whether a table is still in a current version.
    fn is_live(&self, number: u64) -> bool;
    fn open_table(&self, meta: &FileMeta, state: &Arc<LiveFile>) -> Result<Arc<TableReader>>;
    /// The region loaded units are charged to.
    fn filter_region(&self) -> &Arc<Region>;
}

/// A load must lower the expected extra I/O by more than this share of it.
const MIN_GAIN: f64 = 1e-4;

/// One segment as the adjuster tracks it.
#[derive(Debug, Clone)]
struct Tracked {
    smallest: Vec<u8>,
    largest: Vec<u8>,
    /// Access count inherited at creation.
    inherited: f64,
    /// Probes counted at the previous round.
    seen: u64,
    last_access: u64,
    units: u32,
    unit_bytes: u64,
    keys: u64,
    fresh: bool,
    target: Option<u32>,
}

#[derive(Debug)]
struct TrackedFile {
    tree: u32,
    /// Its runtime state: departed files' units are unloaded at once (a reader of an older
    /// super-version still probing it then reads the data).
    state: Arc<LiveFile>,
    segments: Vec<Tracked>,
}

#[derive(Debug, Default)]
struct SolveSchedule {
    last: Option<u64>,
    changed: bool,
}

/// Merlin-recorded lookups before the combined mode's first solve (its estimates say nothing
/// before).
const MIN_SOLVE_LOOKUPS: u64 = 1000;

/// Counters of the adjuster (reported in `db.stats()`).
#[derive(Debug, Default)]
pub(crate) struct ElasticCounters {
    pub rounds: AtomicU64,
    pub loads: AtomicU64,
    pub unloads: AtomicU64,
    pub load_errors: AtomicU64,
    pub solves: AtomicU64,
}

/// The adjuster: its tracked segments, behind a mutex only adjusters take.
#[derive(Debug, Default)]
pub(crate) struct Elastic {
    files: Mutex<HashMap<u64, TrackedFile>>,
    /// The combined mode's schedule: Gets at the last solve, and whether the tables changed
    /// since.
    solve: Mutex<SolveSchedule>,
    pub counters: ElasticCounters,
    /// Filter memory set by the user (`filter_memory` or a resize); 0: bits per live key.
    pub explicit_budget: AtomicU64,
    /// After the last round, per unit of access frequency per byte: what one more byte of
    /// filter memory would save, and what the last byte saves (`tuning::elastic::marginals`).
    pub marginals: Mutex<(f64, f64)>,
}

impl Elastic {
    /// An adjuster with `filter_memory` bytes set by the user (0: bits per live key).
    pub fn new(filter_memory: u64) -> Self {
        Elastic {
            explicit_budget: AtomicU64::new(filter_memory),
            ..Elastic::default()
        }
    }
}

/// A live elastic table in the current versions.
pub(crate) struct Live {
    pub tree: u32,
    pub meta: Arc<FileMeta>,
    pub state: Arc<LiveFile>,
}

impl Elastic {
    /// The filter memory: the user's, or `bloom_bits_per_key` bits per key of the live elastic
    /// tables.
    fn budget(&self, host: &impl Host, live: &[Live], tracked: &HashMap<u64, TrackedFile>) -> u64 {
        let explicit = self.explicit_budget.load(Relaxed);
        if explicit > 0 {
            return explicit;
        }
        let keys: u64 = live
            .iter()
            .filter_map(|l| tracked.get(&l.meta.number))
            .flat_map(|t| t.segments.iter().map(|s| s.keys))
            .sum();
        (host.options().filters.bits_per_key * keys as f64 / 8.0) as u64
    }

    /// One round of the adjuster: track new tables (with what they inherit), count accesses,
    /// decide, then load and unload units.
    pub(crate) fn adjust(&self, host: &impl Host) {
        let opts = host.options();
        let Some(units) = opts.filters.policy.units() else {
            return;
        };
        let mut tracked = self.files.lock();
        let now = host.logical_time();
        let live = host.live_elastic();
        let changed = self.track(host, &live, &mut tracked, now);
        let budget = self.budget(host, &live, &tracked);
        host.filter_region().set_capacity(budget as usize);
        if let FilterPolicy::MnemosyneElastic { .. } = opts.filters.policy {
            self.solve_if_due(host, &live, &mut tracked, budget, now, changed);
        }
        // The decider's view, segment by segment over the live tables.
        let mut index = Vec::new();
        let mut segs = Vec::new();
        for (li, l) in live.iter().enumerate() {
            let Some(t) = tracked.get_mut(&l.meta.number) else {
                continue;
            };
            for (si, s) in t.segments.iter_mut().enumerate() {
                let probes = l.state.stats().segment_probe_count(si);
                let accesses = probes.saturating_sub(s.seen);
                if accesses > 0 {
                    s.last_access = now;
                }
                s.seen = probes;
                segs.push(Segment {
                    freq: s.inherited + probes as f64,
                    last_access: s.last_access,
                    accesses: accesses.min(u64::from(u32::MAX)) as u32,
                    loaded: l.state.elastic().loaded(si),
                    units: s.units,
                    unit_bytes: s.unit_bytes,
                    fresh: s.fresh,
                    inherited: s.inherited > 0.0,
                    target: s.target.take(),
                });
                s.fresh = false;
                index.push((li, si));
            }
        }
        let p = Params {
            now,
            // The paper's rule: about the number of segments.
            life_time: match units.life_time {
                0 => segs.len().max(1) as u64,
                t => t,
            },
            budget,
            unit_fpr: (-units.unit_bits_per_key * opts.filters.unit_format.decay()).exp(),
            initial_units: 1,
            min_gain: MIN_GAIN,
        };
        let actions = adjust(&segs, &p);
        *self.marginals.lock() = marginals(&segs, &actions, p.unit_fpr);
        for a in actions {
            match a {
                Action::Load(i) => {
                    let (li, si) = index[i];
                    if let Err(e) = self.load_unit(host, &live[li], si) {
                        // A unit that cannot be read is simply not loaded: lookups read the
                        // data instead (and report the error if the data is bad too). A table
                        // a compaction deleted meanwhile is no error.
                        if host.is_live(live[li].meta.number) {
                            tracing::warn!(error = %e, file = live[li].meta.number, "filter unit not loaded");
                            self.counters.load_errors.fetch_add(1, Relaxed);
                        }
                    }
                }
                Action::Unload(i) => {
                    let (li, si) = index[i];
                    live[li].state.elastic().pop(si);
                    self.counters.unloads.fetch_add(1, Relaxed);
                }
            }
        }
        self.counters.rounds.fetch_add(1, Relaxed);
    }

    fn load_unit(&self, host: &impl Host, l: &Live, segment: usize) -> Result<()> {
        let reader = host.open_table(&l.meta, &l.state)?;
        let unit = l.state.elastic().loaded(segment) as usize;
        let filter = reader.read_filter_unit(segment, unit)?;
        let charge = host.filter_region().charge(filter.memory_usage());
        l.state.elastic().push(segment, LoadedUnit::new(filter, charge));
        self.counters.loads.fetch_add(1, Relaxed);
        Ok(())
    }

    /// Tracks the live tables not seen before and forgets departed ones, passing their
    /// hotness on; true when the set of tables changed.
    fn track(&self, host: &impl Host, live: &[Live], tracked: &mut HashMap<u64, TrackedFile>, now: u64) -> bool {
        let alive: std::collections::HashSet<u64> = live.iter().map(|l| l.meta.number).collect();
        let departed: Vec<(u32, Tracked)> = {
            let gone: Vec<u64> = tracked.keys().filter(|n| !alive.contains(n)).copied().collect();
            gone.into_iter()
                .filter_map(|n| tracked.remove(&n))
                .flat_map(|t| {
                    let tree = t.tree;
                    t.state.elastic().clear();
                    t.segments.into_iter().map(move |s| (tree, s))
                })
                .collect()
        };
        let mut changed = !departed.is_empty();
        for l in live {
            if tracked.contains_key(&l.meta.number) {
                continue;
            }
            changed = true;
            let reader = match host.open_table(&l.meta, &l.state) {
                Ok(r) => r,
                Err(e) => {
                    // Gone meanwhile (no error), or unreadable: tracked without segments, so
                    // its units are never loaded and lookups read its data (which reports the
                    // error to them).
                    if host.is_live(l.meta.number) {
                        tracing::warn!(error = %e, file = l.meta.number, "table not readable: no filter units");
                        self.counters.load_errors.fetch_add(1, Relaxed);
                    }
                    tracked.insert(
                        l.meta.number,
                        TrackedFile {
                            tree: l.tree,
                            state: l.state.clone(),
                            segments: Vec::new(),
                        },
                    );
                    continue;
                }
            };
            let props = reader.properties();
            let units = props.filter.units.len() as u32;
            let segments = props
                .segments
                .iter()
                .take(l.state.elastic().len())
                .map(|s| {
                    // Mean access count of the departed segments (same tree) it overlaps.
                    let over: Vec<f64> = departed
                        .iter()
                        .filter(|(tree, d)| {
                            *tree == l.tree && d.smallest <= s.largest_user_key && d.largest >= s.smallest_user_key
                        })
                        .map(|(_, d)| d.inherited + d.seen as f64)
                        .collect();
                    let inherited = if over.is_empty() {
                        0.0
                    } else {
                        over.iter().sum::<f64>() / over.len() as f64
                    };
                    Tracked {
                        smallest: s.smallest_user_key.clone(),
                        largest: s.largest_user_key.clone(),
                        inherited,
                        seen: 0,
                        last_access: now,
                        units,
                        unit_bytes: s.units.first().map_or(0, |h| h.size),
                        keys: s.distinct_keys,
                        fresh: true,
                        target: None,
                    }
                })
                .collect();
            tracked.insert(
                l.meta.number,
                TrackedFile {
                    tree: l.tree,
                    state: l.state.clone(),
                    segments,
                },
            );
        }
        changed
    }

    /// The combined mode: when due, Mnemosyne's optimum over segments sets each segment's
    /// target for this round. A file's estimated empty lookups (Merlin's z) are spread over its
    /// segments in proportion to their probes (plus one each, so unprobed segments count).
    fn solve_if_due(
        &self,
        host: &impl Host,
        live: &[Live],
        tracked: &mut HashMap<u64, TrackedFile>,
        budget: u64,
        now: u64,
        changed: bool,
    ) {
        let opts = host.options();
        let FilterPolicy::MnemosyneElastic {
            units,
            solve_every: every,
        } = &opts.filters.policy
        else {
            return;
        };
        let every = *every;
        let mut sched = self.solve.lock();
        sched.changed |= changed;
        let due = match sched.last {
            None => true,
            Some(last) => sched.changed || now >= last.saturating_add(every),
        };
        let g = host.lookups();
        if !due || g < MIN_SOLVE_LOOKUPS {
            return; // not due, or nothing estimated yet: ElasticBF's rule alone
        }
        let mut demands = Vec::new();
        let mut at = Vec::new();
        for l in live {
            let Some(t) = tracked.get(&l.meta.number) else { continue };
            let z = l.state.stats().estimate(g).z();
            let probes: Vec<f64> = (0..t.segments.len())
                .map(|i| l.state.stats().segment_probe_count(i) as f64 + 1.0)
                .collect();
            let total: f64 = probes.iter().sum();
            for (i, s) in t.segments.iter().enumerate() {
                demands.push(Demand {
                    keys: s.keys as f64,
                    empty: z * probes[i] / total,
                    units: s.units,
                    unit_bytes: s.unit_bytes,
                });
                at.push((l.meta.number, i));
            }
        }
        for ((n, i), target) in at.into_iter().zip(targets(
            &demands,
            budget,
            units.unit_bits_per_key,
            opts.filters.unit_format.decay(),
        )) {
            if let Some(s) = tracked.get_mut(&n).and_then(|t| t.segments.get_mut(i)) {
                s.target = Some(target);
            }
        }
        *sched = SolveSchedule {
            last: Some(now),
            changed: false,
        };
        self.counters.solves.fetch_add(1, Relaxed);
    }
}
