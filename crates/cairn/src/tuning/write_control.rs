//! The write controller, as a pure decider: before each write group, from the shape of write
//! memory, L0 and the compaction debt, decide whether the group proceeds (switching some trees'
//! memtables first), slows down, or stops until background work catches up.
//!
//! Rules (RocksDB's write-buffer manager and write stall conditions):
//! - **Stop** when L0 reaches `l0_stop_trigger` files, the pending compaction bytes reach the
//!   hard limit, or the immutable memtables alone fill the write budget (flush is behind).
//! - **Delay** (once per group, for the group's bytes at the delayed write rate) at
//!   `l0_slowdown_trigger` or the soft pending-bytes limit. The rate starts at
//!   `delayed_write_rate` and adapts each time the debt changes (RocksDB's scheme): × 0.8 when L0
//!   or the pending bytes grew since the last change, × 1.25 (up to the start rate) when they
//!   shrank, never below 16 KiB/s. So a load that outruns compaction slows down until it
//!   matches it, instead of piling up L0 files for the reads after it.
//! - **Switch** a tree whose active memtable reached `write_buffer_size`; one tree chosen by
//!   the flush policy when the mutable memtables reach 7/8 of the budget, or everything reaches
//!   the budget with at least half of it still mutable (memory held by immutable memtables is
//!   freed by flushes, not switches); and, when the WALs pass `max_wal_size`, the tree holding
//!   the oldest data not yet on its way to storage (log truncation) — but only while the WALs
//!   from that data's on still pass the limit: older WALs go once the flushes already chosen
//!   end (RocksDB's `getting_flushed`), and flushing newer data then would only cut memtables
//!   and runs into small L0 pieces.
//! - **Flush policies** (Luo & Carey §4.2), among trees with a non-empty active memtable:
//!   max-memory takes the largest; min-lsn the one holding the oldest WAL data; optimal the one
//!   whose share of write memory (active + immutable) most exceeds its share of the recent
//!   write bytes ([`WriteRates`]), falling back to max-memory when nothing was written
//!   recently. The paper schedules a flush of every tree above its share; one switch per
//!   decision does the same over successive write groups without freeing more than needed.


/// The limits the controller enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteLimits {
    /// Size at which one tree's active memtable is switched.
    pub write_buffer_size: usize,
    /// Write memory shared by every tree.
    pub write_memory_budget: usize,
    /// Total WAL bytes after which the oldest data is flushed.
    pub max_wal_size: u64,
    /// L0 files at which writes slow down.
    pub l0_slowdown_trigger: usize,
    /// L0 files at which writes stop.
    pub l0_stop_trigger: usize,
    /// Pending compaction bytes at which writes slow down.
    pub soft_pending_compaction_bytes: u64,
    /// ... and stop.
    pub hard_pending_compaction_bytes: u64,
    /// The rate delayed writes start at, in bytes per second.
    pub delayed_write_rate: u64,
    /// Which tree a memory-triggered switch picks.
    pub flush_policy: FlushPolicy,
}

/// The adaptive delay: its current rate and the debt it was set for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelayState {
    /// Bytes per second.
    pub rate: u64,
    /// L0 files when the rate was last set.
    pub l0_files: usize,
    /// Pending compaction bytes when the rate was last set.
    pub pending_compaction_bytes: u64,
}

/// The slowest delayed write rate (RocksDB's floor is the same 16 KiB/s).
pub const MIN_DELAYED_WRITE_RATE: u64 = 16 << 10;

/// One tree's write memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TreeWriteView {
    /// Bytes of the active memtable.
    pub active_bytes: usize,
    /// Bytes of immutable memtables waiting for flush.
    pub immutable_bytes: usize,
    /// The oldest WAL holding data of the active memtable (`None` when it is empty); for a
    /// partitioned component, of any data not chosen for a flush.
    pub active_oldest_wal: Option<u64>,
    /// Partitioned components: bytes of memory runs and switched memtables not chosen for a
    /// flush (memory a flush can free; mutable for the budget rules, not switched).
    pub retained_bytes: usize,
    /// Bytes written to the tree recently ([`WriteRates::recent`]).
    pub recent_write_bytes: u64,
}

/// Bytes written per tree over the last one to two windows of `window` bytes (all trees
/// together): the write rates the optimal flush policy compares memory shares with. Kept by
/// the write leader; pure bookkeeping.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteRates {
    window: u64,
    current: Vec<u64>,
    previous: Vec<u64>,
    in_current: u64,
}

impl WriteRates {
    /// Windows of `window` bytes from now on (the paper: the maximum log length, which
    /// follows write memory).
    pub fn set_window(&mut self, window: u64) {
        self.window = window.max(1);
    }

    /// `bytes` written to `tree`.
    pub fn record(&mut self, tree: usize, bytes: u64) {
        if self.current.len() <= tree {
            self.current.resize(tree + 1, 0);
        }
        self.current[tree] += bytes;
        self.in_current += bytes;
        if self.in_current >= self.window {
            self.previous = std::mem::take(&mut self.current);
            self.in_current = 0;
        }
    }

    /// Bytes written to `tree` in the previous and the current window.
    pub fn recent(&self, tree: usize) -> u64 {
        self.current.get(tree).copied().unwrap_or(0) + self.previous.get(tree).copied().unwrap_or(0)
    }
}

/// What the controller decides from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriteView {
    /// Per tree, by id.
    pub trees: Vec<TreeWriteView>,
    /// L0 files of the tree that has the most.
    pub l0_files: usize,
    /// Estimated bytes compaction still has to move.
    pub pending_compaction_bytes: u64,
    /// Every live WAL, oldest first: its number and bytes (the one being written last).
    pub wals: Vec<(u64, u64)>,
    /// The WAL being written.
    pub current_wal: u64,
    /// This group was already delayed once.
    pub slowed: bool,
    /// The delay in force, if writes were being delayed.
    pub delay: Option<DelayState>,
}

/// Why writes stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// L0 holds `l0_stop_trigger` files.
    L0Files,
    /// The pending compaction bytes reached the hard limit.
    PendingCompaction,
    /// Immutable memtables fill the write budget.
    FlushBehind,
}

/// The decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteAction {
    /// Wait for background work, then decide again.
    Stop(StopReason),
    /// Delay this group for its bytes at `rate` bytes per second, then decide again.
    Delay {
        /// Bytes per second.
        rate: u64,
    },
    /// Write, after switching the active memtables of these trees (sorted, distinct).
    Proceed {
        /// Trees whose active memtable becomes immutable.
        switch: Vec<usize>,
        /// The one of them switched because the WALs passed `max_wal_size` (its flush is
        /// log-triggered; the others' are memory-triggered).
        for_log: Option<usize>,
        /// The one chosen by the flush policy because write memory is full (a partitioned
        /// component flushes one of its runs instead of switching).
        for_memory: Option<usize>,
    },
}

/// What the controller decided: the action, and the delay state to keep (`None`: writes are not
/// being delayed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// What the group does.
    pub action: WriteAction,
    /// The delay in force after this decision.
    pub delay: Option<DelayState>,
}

/// The delayed write rate for the debt `(l0, pending)`, adapted from `prev`.
fn delay_rate(limits: &WriteLimits, prev: Option<DelayState>, l0: usize, pending: u64) -> DelayState {
    let rate = match prev {
        None => limits.delayed_write_rate,
        Some(p) if l0 > p.l0_files || (l0 == p.l0_files && pending > p.pending_compaction_bytes) => {
            p.rate / 5 * 4
        }
        Some(p) if l0 < p.l0_files || (l0 == p.l0_files && pending < p.pending_compaction_bytes) => {
            (p.rate / 4 * 5).min(limits.delayed_write_rate)
        }
        Some(p) => p.rate,
    };
    DelayState {
        rate: rate.max(MIN_DELAYED_WRITE_RATE),
        l0_files: l0,
        pending_compaction_bytes: pending,
    }
}

/// Decides what a write group does.
pub fn decide(limits: &WriteLimits, view: &WriteView) -> Decision {
    let delayed = view.l0_files >= limits.l0_slowdown_trigger
        || view.pending_compaction_bytes >= limits.soft_pending_compaction_bytes;
    let delay = delayed.then(|| delay_rate(limits, view.delay, view.l0_files, view.pending_compaction_bytes));
    let action = action(limits, view, delay);
    Decision { action, delay }
}

fn action(limits: &WriteLimits, view: &WriteView, delay: Option<DelayState>) -> WriteAction {
    let imm: usize = view.trees.iter().map(|t| t.immutable_bytes).sum();
    if view.l0_files >= limits.l0_stop_trigger {
        return WriteAction::Stop(StopReason::L0Files);
    }
    if view.pending_compaction_bytes >= limits.hard_pending_compaction_bytes {
        return WriteAction::Stop(StopReason::PendingCompaction);
    }
    if imm > 0 && imm >= limits.write_memory_budget {
        return WriteAction::Stop(StopReason::FlushBehind);
    }
    // The hard cap: all write memory at the budget plus one memtable, with a flush on its way.
    // (Monolithic components switch at 7/8 of the budget in memtables of half of it, so they
    // stay below; partitioned ones keep memory full and rely on this. A memory merge step that
    // is running adds its output, at most 2.5 runs, before its inputs go.)
    let held: usize = view.trees.iter().map(|t| t.active_bytes + t.retained_bytes).sum();
    if imm > 0 && held + imm >= limits.write_memory_budget.saturating_add(limits.write_buffer_size) {
        return WriteAction::Stop(StopReason::FlushBehind);
    }
    if let (false, Some(d)) = (view.slowed, delay) {
        return WriteAction::Delay { rate: d.rate };
    }
    let mut switch: Vec<usize> = (0..view.trees.len())
        .filter(|&t| view.trees[t].active_bytes >= limits.write_buffer_size)
        .collect();
    let mutable: usize = view.trees.iter().map(|t| t.active_bytes + t.retained_bytes).sum();
    let budget = limits.write_memory_budget;
    let mut for_memory = None;
    if mutable >= budget / 8 * 7 || (mutable + imm >= budget && mutable >= budget / 2) {
        if let Some(t) = memory_victim(limits.flush_policy, &view.trees) {
            switch.push(t);
            for_memory = Some(t);
        }
    }
    let mut for_log = None;
    let oldest_unflushed = (0..view.trees.len())
        .filter_map(|t| view.trees[t].active_oldest_wal.map(|w| (t, w)))
        .min_by_key(|&(_, w)| w);
    if let Some((t, wal)) = oldest_unflushed {
        // The WALs that stay once the flushes already chosen end.
        let staying: u64 = view.wals.iter().filter(|&&(n, _)| n >= wal).map(|&(_, b)| b).sum();
        // A tree whose data is all in the current WAL frees nothing by flushing, unless
        // nothing else is being flushed either.
        let no_immutable = view.trees.iter().all(|t| t.immutable_bytes == 0);
        if staying > limits.max_wal_size && (wal < view.current_wal || no_immutable) {
            switch.push(t);
            for_log = Some(t);
        }
    }
    switch.sort_unstable();
    switch.dedup();
    WriteAction::Proceed {
        switch,
        for_log,
        for_memory,
    }
}

/// How far writes alone can go before [`decide`] could do anything but proceed without a
/// switch: while the memtables grow by less than `memory` bytes (spread over the trees in any
/// way) and the log by less than `log` bytes, the decision stays the same. Background work
/// only widens it (flushes free memory and logs) except where it changes the compaction debt,
/// which the caller detects (a new version). It lets the write path skip building the view,
/// which reads every tree: with 128 trees that cost more than the put.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Headroom {
    /// Memtable bytes.
    pub memory: usize,
    /// Log bytes.
    pub log: u64,
}

impl Headroom {
    /// What is left after writes added `memory` and `log` bytes (`None`: nothing).
    pub fn spend(self, memory: usize, log: u64) -> Option<Headroom> {
        Some(Headroom {
            memory: self.memory.checked_sub(memory).filter(|&m| m > 0)?,
            log: self.log.checked_sub(log).filter(|&l| l > 0)?,
        })
    }
}

/// The [`Headroom`] of `view`, given `d`, what [`decide`] made of it: `None` unless that is to
/// proceed without a switch or a delay, and for partitioned components (their merges add
/// memory in the background).
pub fn headroom(limits: &WriteLimits, view: &WriteView, d: &Decision) -> Option<Headroom> {
    let plain = matches!(&d.action, WriteAction::Proceed { switch, .. } if switch.is_empty());
    if !plain || d.delay.is_some() || view.trees.iter().any(|t| t.retained_bytes > 0) {
        return None;
    }
    let (wbs, budget) = (limits.write_buffer_size, limits.write_memory_budget);
    let imm: usize = view.trees.iter().map(|t| t.immutable_bytes).sum();
    let mutable: usize = view.trees.iter().map(|t| t.active_bytes).sum();
    let largest = view.trees.iter().map(|t| t.active_bytes).max().unwrap_or(0);
    // Growth δ trips each memory rule at: one tree's memtable at the switch size (all of δ
    // may go to the largest); the mutable memtables at 7/8 of the budget; everything at the
    // budget with half of it mutable; the hard cap (only with a flush on its way).
    let mut memory = [
        wbs.saturating_sub(largest),
        (budget / 8 * 7).saturating_sub(mutable),
        budget.saturating_sub(mutable + imm).max((budget / 2).saturating_sub(mutable)),
    ]
    .into_iter()
    .min()
    .unwrap_or(0);
    if imm > 0 {
        memory = memory.min(budget.saturating_add(wbs).saturating_sub(mutable + imm));
    }
    // The log rule looks at the WALs from the oldest unflushed data on; when that is (or,
    // with empty memtables, becomes) the current WAL, it trips only with no flush on its way,
    // which writes cannot change.
    let oldest = view.trees.iter().filter_map(|t| t.active_oldest_wal).min();
    let from = oldest.unwrap_or(view.current_wal);
    let log = if from == view.current_wal && imm > 0 {
        u64::MAX
    } else {
        let staying: u64 = view.wals.iter().filter(|&&(n, _)| n >= from).map(|&(_, b)| b).sum();
        (limits.max_wal_size + 1).saturating_sub(staying)
    };
    (memory > 0 && log > 0).then_some(Headroom { memory, log })
}

/// The tree a memory-triggered switch picks under `policy` (`None`: no active memtable holds
/// data).
fn memory_victim(policy: FlushPolicy, trees: &[TreeWriteView]) -> Option<usize> {
    let held = |t: usize| trees[t].active_bytes + trees[t].retained_bytes;
    let candidates = || (0..trees.len()).filter(move |&t| held(t) > 0);
    let largest = || candidates().max_by_key(|&t| held(t));
    match policy {
        FlushPolicy::MaxMemory => largest(),
        FlushPolicy::MinLsn => candidates().min_by_key(|&t| {
            (
                trees[t].active_oldest_wal.unwrap_or(u64::MAX),
                std::cmp::Reverse(held(t)),
            )
        }),
        FlushPolicy::Optimal => {
            let rate: u64 = trees.iter().map(|t| t.recent_write_bytes).sum();
            let memory: usize = trees
                .iter()
                .map(|t| t.active_bytes + t.immutable_bytes + t.retained_bytes)
                .sum();
            if rate == 0 || memory == 0 {
                return largest();
            }
            // a_i − a_i^opt, compared without division: (m_i·R − r_i·M) / (M·R).
            let excess = |t: usize| {
                let m = (held(t) + trees[t].immutable_bytes) as i128;
                m * i128::from(rate) - i128::from(trees[t].recent_write_bytes) * memory as i128
            };
            candidates()
                .filter(|&t| excess(t) > 0)
                .max_by_key(|&t| (excess(t), held(t)))
                .or_else(largest)
        }
    }
}


/// Which tree a memory-triggered flush picks (Luo & Carey §4.2). A log-triggered flush (the
/// WALs passed `wal.max_size`) always picks the tree holding the oldest WAL data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlushPolicy {
    /// The largest active memtable (RocksDB's and HBase's choice).
    #[default]
    MaxMemory,
    /// The tree holding the oldest WAL data.
    MinLsn,
    /// The tree whose share of write memory most exceeds its share of the recent write rate
    /// (the paper's optimum).
    Optimal,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{run_file, Case};

    fn limits(c: &Case) -> WriteLimits {
        WriteLimits {
            write_buffer_size: c.arg("buffer", 100),
            write_memory_budget: c.arg("budget", 400),
            max_wal_size: c.arg("max_wal", 10_000),
            l0_slowdown_trigger: c.arg("l0_slow", 20),
            l0_stop_trigger: c.arg("l0_stop", 36),
            soft_pending_compaction_bytes: c.arg("soft", 1_000_000),
            hard_pending_compaction_bytes: c.arg("hard", 4_000_000),
            delayed_write_rate: c.arg("rate", 1 << 20),
            flush_policy: c
                .get("policy")
                .map(|p| FlushPolicy::parse(p).unwrap_or_else(|| panic!("policy={p}: not a flush policy")))
                .unwrap_or_default(),
        }
    }

    /// `decide <limits> l0= pending= wals=N:B,N:B wal= slowed` with one line per tree:
    /// `active=B imm=B [wal=N]`.
    fn view(c: &Case) -> WriteView {
        WriteView {
            trees: c
                .input
                .iter()
                .map(|line| {
                    let mut t = TreeWriteView::default();
                    for kv in line.split_whitespace() {
                        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                        match k {
                            "active" => t.active_bytes = crate::testutil::num(v),
                            "imm" => t.immutable_bytes = crate::testutil::num(v),
                            "retained" => t.retained_bytes = crate::testutil::num(v),
                            "wal" => t.active_oldest_wal = Some(crate::testutil::num(v)),
                            "rate" => t.recent_write_bytes = crate::testutil::num(v),
                            other => panic!("unknown tree field {other:?}"),
                        }
                    }
                    t
                })
                .collect(),
            l0_files: c.arg("l0", 0),
            pending_compaction_bytes: c.arg("pending", 0),
            wals: c.get("wals").map_or(Vec::new(), |w| {
                w.split(',')
                    .map(|nb| {
                        let (n, b) = nb.split_once(':').expect("wals=N:BYTES,...");
                        (crate::testutil::num(n), crate::testutil::num(b))
                    })
                    .collect()
            }),
            current_wal: c.arg("wal", 1),
            slowed: c.has("slowed"),
            delay: c.get("prev").and_then(|p| {
                // prev=RATE/L0/PENDING: the delay in force before this decision.
                let mut it = p.split('/').map(crate::testutil::num::<u64>);
                Some(DelayState {
                    rate: it.next()?,
                    l0_files: it.next()? as usize,
                    pending_compaction_bytes: it.next()?,
                })
            }),
        }
    }

    #[test]
    fn write_rates_cover_one_to_two_windows() {
        let mut r = WriteRates::default();
        r.set_window(100);
        r.record(0, 60);
        r.record(2, 30);
        assert_eq!((r.recent(0), r.recent(1), r.recent(2)), (60, 0, 30));
        r.record(1, 20); // the window fills: it becomes the previous one
        assert_eq!((r.recent(0), r.recent(1), r.recent(2)), (60, 20, 30));
        r.record(1, 50);
        assert_eq!((r.recent(0), r.recent(1)), (60, 70));
        r.record(1, 50); // a second window fills: the first is forgotten
        assert_eq!((r.recent(0), r.recent(1), r.recent(2)), (0, 100, 0));
    }

    #[test]
    fn write_control_cases() {
        run_file("tuning/write_control.txt", |c| match c.command.as_str() {
            "decide" => {
                let d = decide(&limits(c), &view(c));
                let action = match d.action {
                    WriteAction::Stop(r) => format!("stop {r:?}"),
                    WriteAction::Delay { rate } => format!("delay at {rate} B/s"),
                    WriteAction::Proceed { switch, .. } if switch.is_empty() => "proceed".into(),
                    WriteAction::Proceed {
                        switch,
                        for_log,
                        for_memory,
                    } => {
                        let mut a = format!("proceed, switch {switch:?}");
                        if let Some(t) = for_log {
                            a += &format!(" (tree {t} for the log)");
                        }
                        // Printed only where it matters: a partitioned tree flushes a run.
                        if let Some(t) = for_memory.filter(|&t| view(c).trees[t].retained_bytes > 0) {
                            a += &format!(" (tree {t} for memory)");
                        }
                        a
                    }
                };
                match d.delay {
                    Some(s) => format!("{action}; delay state {}/{}/{}", s.rate, s.l0_files, s.pending_compaction_bytes),
                    None => action,
                }
            }
            "headroom" => match headroom(&limits(c), &view(c), &decide(&limits(c), &view(c))) {
                Some(h) => format!("memory {}, log {}", h.memory, h.log),
                None => "none".into(),
            },
            _ => c.unknown(),
        });
    }

    proptest::proptest! {
        /// Any growth inside the headroom, spread over the trees in any way, leaves the
        /// decision a plain proceed.
        #[test]
        fn growth_inside_the_headroom_changes_nothing(
            trees in proptest::collection::vec((0usize..120, 0usize..200, proptest::option::of(3u64..6)), 1..6),
            wals in proptest::collection::vec(0u64..4000, 3),
            budget in 200usize..600,
            buffer in 50usize..300,
            max_wal in 1000u64..9000,
            l0 in 0usize..25,
            shares in proptest::collection::vec(0u32..100, 6),
            spend in 0.0f64..1.0,
        ) {
            let limits = WriteLimits {
                write_buffer_size: buffer,
                write_memory_budget: budget,
                max_wal_size: max_wal,
                l0_slowdown_trigger: 20,
                l0_stop_trigger: 36,
                soft_pending_compaction_bytes: 1 << 40,
                hard_pending_compaction_bytes: 1 << 41,
                delayed_write_rate: 1 << 20,
                flush_policy: FlushPolicy::MaxMemory,
            };
            let view = WriteView {
                trees: trees
                    .iter()
                    .map(|&(active, imm, wal)| TreeWriteView {
                        active_bytes: if wal.is_some() { active } else { 0 },
                        immutable_bytes: imm,
                        active_oldest_wal: wal,
                        ..TreeWriteView::default()
                    })
                    .collect(),
                l0_files: l0,
                wals: (3..6).zip(wals.iter().copied()).collect(),
                current_wal: 5,
                ..WriteView::default()
            };
            if let Some(h) = headroom(&limits, &view, &decide(&limits, &view)) {
                // Spend less than the headroom, split by `shares` over the trees.
                let grow = ((h.memory - 1) as f64 * spend) as usize;
                let log = ((h.log.min(1 << 40) - 1) as f64 * spend) as u64;
                let total: u64 = shares[..view.trees.len()].iter().map(|&s| u64::from(s)).sum::<u64>().max(1);
                let mut grown = view.clone();
                let mut left = grow;
                for (t, s) in grown.trees.iter_mut().zip(&shares) {
                    let add = (grow as u64 * u64::from(*s) / total) as usize;
                    let add = add.min(left);
                    left -= add;
                    t.active_bytes += add;
                    if add > 0 && t.active_oldest_wal.is_none() {
                        t.active_oldest_wal = Some(5);
                    }
                }
                if left > 0 {
                    grown.trees[0].active_bytes += left;
                    grown.trees[0].active_oldest_wal.get_or_insert(5);
                }
                grown.wals[2].1 += log;
                let d = decide(&limits, &grown);
                let plain = matches!(&d.action, WriteAction::Proceed { switch, .. } if switch.is_empty());
                proptest::prop_assert!(plain && d.delay.is_none(), "{h:?} {grown:?} → {d:?}");
            }
        }
    }
}
