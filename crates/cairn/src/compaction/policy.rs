//! The `MergePolicy` decider contract and the picking logic both policies share.

/// A file as a policy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileView {
    /// File number.
    pub number: u64,
    /// Bytes.
    pub size: u64,
    /// Smallest user key.
    pub smallest: Vec<u8>,
    /// Largest user key.
    pub largest: Vec<u8>,
    /// Already an input or output of a running compaction.
    pub busy: bool,
    /// L0 group (Luo & Carey §4.1.2): files of one group ≥ 1 are disjoint and form one sorted
    /// run; group 0 files are runs of their own.
    pub group: u64,
}

/// Sorted runs among `l0` (newest first): a group ≥ 1 counts once.
pub(crate) fn l0_runs<'a>(l0: impl Iterator<Item = &'a FileView>) -> usize {
    crate::version::l0_runs(l0.map(|f| f.group))
}

/// One level.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LevelView {
    /// Files (level 0: newest group first; others: by key).
    pub files: Vec<FileView>,
}

/// What a policy decides from: one tree's shape.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LsmView {
    /// Levels 0.., possibly fewer than `max_levels`.
    pub levels: Vec<LevelView>,
    /// Deepest level in use (Garnering's L, ≥ 1).
    pub deepest: u32,
    /// The tree's share of write memory in bytes, when level targets follow it
    /// (`level_targets = write-memory`) and the tree was written to recently.
    pub write_memory: Option<u64>,
}

impl LsmView {
    /// Level `i` (empty past the end).
    pub fn level(&self, i: usize) -> &[FileView] {
        self.levels.get(i).map_or(&[], |l| &l.files)
    }
}

/// A compaction to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Nothing is over its trigger.
    DoNothing,
    /// Move one file from `from` to `from + 1` without rewriting it (nothing overlaps there).
    Move {
        /// Source level.
        from: usize,
        /// The file.
        file: u64,
    },
    /// Luo & Carey §4.1.3: every file of levels `1..` moves one level deeper, leaving an empty
    /// L1 (the tree grows by one level; metadata only).
    AddLevel,
    /// ... and the reverse once L1 is empty: every file of levels `2..` moves one level up.
    RemoveLevel,
    /// Merge `inputs` of `level` with the `overlaps` of `output_level`.
    Merge {
        /// Input level.
        level: usize,
        /// Input files of `level`.
        inputs: Vec<u64>,
        /// Output level (`level + 1`).
        output_level: usize,
        /// Files of `output_level` overlapping the inputs.
        overlaps: Vec<u64>,
    },
}

/// A policy's decision: the work, and possibly a new deepest level (Garnering's delay).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Set when the policy grows the tree by one level.
    pub deepest: Option<u32>,
    /// The work.
    pub choice: Choice,
}

/// A merge policy: a pure function from a tree's shape to the next compaction.
pub trait MergePolicy: Send + Sync + std::fmt::Debug {
    /// Short name ("leveling", "garnering").
    fn name(&self) -> &'static str;
    /// Capacity in bytes of each level `1..` for a tree whose deepest level is `deepest` and
    /// holds `bottom` bytes; `None` for a level without a limit.
    fn capacity(&self, level: usize, deepest: u32, bottom: u64) -> Option<f64>;
    /// Picks the next compaction.
    fn pick(&self, view: &LsmView) -> Decision;
}

/// Score of every level under `capacity`: `(level, score)` sorted by descending score, only
/// levels with score ≥ 1. Level 0 scores by sorted runs (groups) against `l0_trigger` and, as RocksDB's,
/// by its bytes against level 1's capacity, whichever is higher: small write buffers under a
/// small L1 otherwise leave up to `l0_trigger − 1` overlapping tables for every lookup to probe.
pub(crate) fn scores(
    view: &LsmView,
    l0_trigger: usize,
    max_levels: usize,
    capacity: impl Fn(usize) -> Option<f64>,
) -> Vec<(usize, f64)> {
    let mut s = Vec::new();
    let idle_l0 = || view.level(0).iter().filter(|f| !f.busy);
    let (runs, bytes) = (l0_runs(idle_l0()), idle_l0().map(|f| f.size).sum::<u64>());
    let by_bytes = capacity(1).map_or(0.0, |cap| bytes as f64 / cap.max(1.0));
    s.push((0, (runs as f64 / l0_trigger.max(1) as f64).max(by_bytes)));
    for level in 1..max_levels.saturating_sub(1) {
        if let Some(cap) = capacity(level) {
            let bytes = view
                .level(level)
                .iter()
                .filter(|f| !f.busy)
                .map(|f| f.size)
                .sum::<u64>();
            s.push((level, bytes as f64 / cap.max(1.0)));
        }
    }
    s.retain(|&(_, sc)| sc >= 1.0);
    s.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    s
}

/// The intra-L0 merge of L0's newest idle groups (level 0 is newest first), if there are two
/// sorted runs among them. Whole groups only: the output takes the newest input group's place,
/// and a group must stay disjoint.
pub(crate) fn intra_l0(l0: &[FileView]) -> Choice {
    let busy_group = l0.iter().find(|f| f.busy).map(|f| f.group);
    let run: Vec<&FileView> = l0
        .iter()
        .take_while(|f| !f.busy && (f.group == 0 || busy_group != Some(f.group)))
        .collect();
    if l0_runs(run.iter().copied()) < 2 {
        return Choice::DoNothing;
    }
    let mut inputs: Vec<u64> = run.iter().map(|f| f.number).collect();
    inputs.sort_unstable();
    Choice::Merge {
        level: 0,
        inputs,
        output_level: 0,
        overlaps: Vec::new(),
    }
}

fn overlaps<'a>(files: &'a [FileView], lo: &[u8], hi: &[u8]) -> Vec<&'a FileView> {
    files
        .iter()
        .filter(|f| f.smallest.as_slice() <= hi && f.largest.as_slice() >= lo)
        .collect()
}

/// The compaction out of `level` into `level + 1`: all of level 0 with its overlaps, or for a
/// sorted level the one file whose overlap with the next level is smallest relative to its
/// size (RocksDB's `kMinOverlappingRatio`). A file with no overlap is moved, not rewritten (in
/// level 0: no overlap with level 1 nor with another level-0 file).
///
/// When level 0 cannot go down (part of it, or the L1 files it overlaps, are already being
/// compacted), its newest files are merged among themselves instead (**intra-L0**, as
/// RocksDB): the newest run of at least two idle files, which is newer than every busy one, so
/// the output keeps its place in L0's newest-first order and lookups probe fewer tables.
pub(crate) fn pick_from_level(view: &LsmView, level: usize) -> Choice {
    let next = view.level(level + 1);
    if level == 0 {
        let l0 = view.level(0);
        if l0.is_empty() {
            return Choice::DoNothing;
        }
        let lo = l0.iter().map(|f| f.smallest.as_slice()).min().unwrap_or_default();
        let hi = l0.iter().map(|f| f.largest.as_slice()).max().unwrap_or_default();
        let ov = overlaps(next, lo, hi);
        if l0.iter().any(|f| f.busy) || ov.iter().any(|f| f.busy) {
            return intra_l0(l0);
        }
        // The oldest L0 file that shares no key range with another L0 file or with L1 goes
        // down as it is (RocksDB's L0 trivial move): sequential loads are never rewritten
        // into L1. The policy picks again after a move, so the others follow one by one.
        let alone = |f: &&FileView| {
            overlaps(next, &f.smallest, &f.largest).is_empty()
                && overlaps(l0, &f.smallest, &f.largest).len() == 1
        };
        if let Some(f) = l0.iter().rev().find(alone) {
            return Choice::Move { from: 0, file: f.number };
        }
        // Oldest first: the job merges in any order, but a stable order keeps outputs stable.
        let mut inputs: Vec<u64> = l0.iter().map(|f| f.number).collect();
        inputs.sort_unstable();
        return Choice::Merge {
            level: 0,
            inputs,
            output_level: 1,
            overlaps: ov.iter().map(|f| f.number).collect(),
        };
    }
    let mut best: Option<(f64, &FileView, Vec<&FileView>)> = None;
    for f in view.level(level).iter().filter(|f| !f.busy) {
        let ov = overlaps(next, &f.smallest, &f.largest);
        if ov.iter().any(|o| o.busy) {
            continue;
        }
        let ratio = ov.iter().map(|o| o.size).sum::<u64>() as f64 / f.size.max(1) as f64;
        if best.as_ref().is_none_or(|(r, _, _)| ratio < *r) {
            best = Some((ratio, f, ov));
        }
    }
    match best {
        None => Choice::DoNothing,
        Some((_, f, ov)) if ov.is_empty() => Choice::Move {
            from: level,
            file: f.number,
        },
        Some((_, f, ov)) => Choice::Merge {
            level,
            inputs: vec![f.number],
            output_level: level + 1,
            overlaps: ov.iter().map(|o| o.number).collect(),
        },
    }
}

/// The manual compaction (`compact_range`) of `level`'s files overlapping the user-key range
/// `[lo, hi]` (`None`: unbounded), for a tree whose deepest non-empty level is `bottom`: level 0
/// goes down whole (its files overlap each other) into the overlapping files of level 1; a
/// sorted level's overlapping files go into the next level's overlaps; at the bottom they are
/// rewritten in place (`output_level == level`, purging dead versions). Busy files are not
/// considered here: the caller waits for them.
pub fn pick_range(view: &LsmView, level: usize, bottom: usize, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Choice {
    let in_range = |f: &FileView| {
        lo.is_none_or(|lo| f.largest.as_slice() >= lo) && hi.is_none_or(|hi| f.smallest.as_slice() <= hi)
    };
    let files = view.level(level);
    if !files.iter().any(in_range) {
        return Choice::DoNothing;
    }
    let inputs: Vec<&FileView> = if level == 0 {
        files.iter().collect()
    } else {
        files.iter().filter(|f| in_range(f)).collect()
    };
    let output_level = if level == bottom && level > 0 { level } else { level + 1 };
    let overlaps = if output_level == level {
        Vec::new()
    } else {
        let lo = inputs.iter().map(|f| f.smallest.as_slice()).min().unwrap_or_default();
        let hi = inputs.iter().map(|f| f.largest.as_slice()).max().unwrap_or_default();
        overlaps(view.level(output_level), lo, hi)
            .iter()
            .map(|f| f.number)
            .collect()
    };
    let mut inputs: Vec<u64> = inputs.iter().map(|f| f.number).collect();
    if level == 0 {
        inputs.sort_unstable();
    }
    Choice::Merge {
        level,
        inputs,
        output_level,
        overlaps,
    }
}

/// Bytes over capacity in every sorted level `1..levels` of a tree whose deepest level is
/// `deepest` (`bytes(level)` gives a level's size): a cheap stand-in for RocksDB's pending
/// compaction bytes estimate, for write slowdowns and stops.
pub fn pending_bytes(policy: &dyn MergePolicy, deepest: u32, levels: usize, bytes: impl Fn(usize) -> u64) -> u64 {
    let bottom = bytes(deepest as usize);
    (1..levels)
        .filter_map(|level| {
            let cap = policy.capacity(level, deepest, bottom)?;
            Some(bytes(level).saturating_sub(cap as u64))
        })
        .sum()
}

/// Which merge policy shapes the trees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MergePolicyKind {
    /// RocksDB-like leveling with size ratio `size_ratio`.
    Leveling,
    /// Autumn's Garnering with scaling factor `c ∈ (0, 1]` (paper default 0.8).
    Garnering {
        /// The scaling factor.
        c: f64,
    },
}

/// How the sorted levels' capacities are set (leveling only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LevelTargets {
    /// L1 holds `max_bytes_for_level_base`, each level below `size_ratio` times more.
    #[default]
    Fixed,
    /// Luo & Carey §4.1.3: capacities anchored at the deepest level, and L1 added or removed
    /// as the tree's share of write memory shrinks or grows. Meant for the memory tuner.
    WriteMemory,
}
