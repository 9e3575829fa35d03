//! Versions: the immutable set of table files per level per tree, changed only by applying a
//! [`VersionEdit`] logged in the manifest (spec: `docs/format/manifest.md`).

mod edit;
pub mod manifest;
pub(crate) mod set;

pub use edit::{FileMeta, VersionEdit};
pub(crate) use set::is_dropped;

use crate::format::ikey;
use std::cmp::Ordering;
use std::sync::Arc;

/// The files of one tree.
#[derive(Debug, Clone, Default)]
pub struct TreeVersion {
    /// `levels[0]`: groups of disjoint files, newest group first (files by largest seqno, newest
    /// first, within one); `levels[i ≥ 1]`: one sorted run of non-overlapping files ordered by
    /// smallest key.
    pub levels: Vec<Vec<Arc<FileMeta>>>,
    /// Deepest level in use (Garnering's L; ≥ the deepest non-empty level, ≥ 1).
    pub deepest: u32,
}

impl TreeVersion {
    /// A tree without files.
    fn empty() -> Self {
        TreeVersion {
            levels: Vec::new(),
            deepest: 1,
        }
    }

    /// Files of `level` (empty past the last level).
    pub fn level(&self, level: usize) -> &[Arc<FileMeta>] {
        self.levels.get(level).map_or(&[], |v| v.as_slice())
    }

    /// Bytes of `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.level(level).iter().map(|f| f.size).sum()
    }

    /// Deepest non-empty level (0 if none).
    pub fn deepest_nonempty(&self) -> usize {
        self.levels.iter().rposition(|l| !l.is_empty()).unwrap_or(0)
    }

    /// L0's groups: its sorted runs (each flush of a monolithic memory component is one).
    pub fn l0_groups(&self) -> usize {
        l0_runs(self.level(0).iter().map(|f| f.l0_group))
    }

    /// The group a flushed file covering user keys `[lo, hi]` joins: with `oldest_fit`, the
    /// oldest group such that no newer group holds a file overlapping it (Luo & Carey §4.1.2: a
    /// flush holds the newest data of its range, so it must sit above every group that has the
    /// range, and may sit in the group just above the newest one); otherwise a new group. A
    /// group with a file in `busy` (an intra-L0 merge's input, whose output will take the
    /// group and may span the flushed range) is never joined.
    pub fn l0_group_for(&self, lo: &[u8], hi: &[u8], oldest_fit: bool, busy: &dyn Fn(u64) -> bool) -> u64 {
        let l0 = self.level(0);
        let next = l0.iter().map(|f| f.l0_group).max().map_or(1, |g| g + 1);
        if !oldest_fit {
            return next;
        }
        let overlaps = |f: &FileMeta| f.smallest_user_key() <= hi && f.largest_user_key() >= lo;
        let newest_overlapping = l0.iter().filter(|f| overlaps(f)).map(|f| f.l0_group).max();
        let busy_group = |g: u64| l0.iter().any(|f| f.l0_group == g && busy(f.number));
        // The oldest existing group above it, else a new one.
        l0.iter()
            .map(|f| f.l0_group)
            .filter(|&g| g >= 1 && newest_overlapping.is_none_or(|o| g > o) && !busy_group(g))
            .min()
            .unwrap_or(next)
    }

    /// The position in sorted level `level ≥ 1` of the file that may hold `user_key`.
    pub fn index_for_key(&self, level: usize, user_key: &[u8]) -> Option<usize> {
        let files = self.level(level);
        let i = files.partition_point(|f| f.largest_user_key() < user_key);
        files.get(i).filter(|f| f.smallest_user_key() <= user_key).map(|_| i)
    }
}

/// L0 `files` as sorted runs, each ordered by key: the files of one group ≥ 1 together (they
/// are disjoint, checked when a version is built, so one level iterator reads them in turn
/// rather than a merge comparing every file's head per entry), each file of group 0 alone.
pub(crate) fn l0_sorted_runs(files: &[Arc<FileMeta>]) -> Vec<Vec<Arc<FileMeta>>> {
    let mut runs: Vec<Vec<Arc<FileMeta>>> = Vec::new();
    let mut group_at: Vec<(u64, usize)> = Vec::new();
    for f in files {
        match group_at.iter().find(|(g, _)| f.l0_group != 0 && *g == f.l0_group) {
            Some(&(_, i)) => runs[i].push(f.clone()),
            None => {
                group_at.push((f.l0_group, runs.len()));
                runs.push(vec![f.clone()]);
            }
        }
    }
    for r in &mut runs {
        r.sort_by(|a, b| a.smallest_user_key().cmp(b.smallest_user_key()));
    }
    runs
}

/// Sorted runs among L0 files given by their groups, newest first: a group ≥ 1 counts once,
/// each file of group 0 (logged before groups) once.
pub(crate) fn l0_runs(groups: impl Iterator<Item = u64>) -> usize {
    let mut last = None;
    groups
        .filter(|&g| {
            let new = g == 0 || last != Some(g);
            last = Some(g);
            new
        })
        .count()
}

/// All trees' files at one moment. Immutable; shared by `Arc`.
#[derive(Debug, Clone, Default)]
pub struct Version {
    /// Indexed by tree id.
    pub trees: Vec<TreeVersion>,
}

impl Version {
    /// Applies an edit, producing the next version.
    ///
    /// # Errors
    /// A description of the inconsistency (a deleted file that does not exist, overlapping
    /// files in a sorted level), which the caller reports as manifest corruption.
    pub fn apply(&self, edit: &VersionEdit) -> Result<Version, String> {
        let mut v = self.clone();
        // A created tree, or a dropped one (a snapshot may name a dropped id first), starts
        // with no files.
        let created = edit.new_trees.iter().map(|(t, _)| *t);
        for t in created.chain(edit.dropped_trees.iter().copied()) {
            let t = t as usize;
            if v.trees.len() <= t {
                v.trees.resize_with(t + 1, TreeVersion::empty);
            }
        }
        for &tree in &edit.dropped_trees {
            v.trees[tree as usize] = TreeVersion::empty();
        }
        for &(tree, level, number) in &edit.deleted {
            let files = v
                .trees
                .get_mut(tree as usize)
                .and_then(|t| t.levels.get_mut(level as usize))
                .ok_or_else(|| format!("edit deletes file {number} from missing tree {tree} level {level}"))?;
            let before = files.len();
            files.retain(|f| f.number != number);
            if files.len() == before {
                return Err(format!("edit deletes file {number} not in tree {tree} level {level}"));
            }
        }
        for (tree, level, meta) in &edit.added {
            let t = v
                .trees
                .get_mut(*tree as usize)
                .ok_or_else(|| format!("edit adds file {} to missing tree {tree}", meta.number))?;
            let level = *level as usize;
            if t.levels.len() <= level {
                t.levels.resize_with(level + 1, Vec::new);
            }
            t.levels[level].push(Arc::new(meta.clone()));
            t.deepest = t.deepest.max(level as u32);
        }
        for &(tree, deepest) in &edit.deepest {
            if let Some(t) = v.trees.get_mut(tree as usize) {
                t.deepest = deepest.max(t.deepest_nonempty() as u32).max(1);
            }
        }
        for (ti, t) in v.trees.iter_mut().enumerate() {
            if let Some(l0) = t.levels.get_mut(0) {
                l0.sort_by(|a, b| {
                    (b.l0_group, b.largest_seqno, b.number).cmp(&(a.l0_group, a.largest_seqno, a.number))
                });
                // Files of one numbered group must be disjoint (reads stop at the first hit).
                for (i, a) in l0.iter().enumerate() {
                    let same = l0[i + 1..].iter().take_while(|b| b.l0_group == a.l0_group);
                    for b in same.filter(|_| a.l0_group != 0) {
                        if a.smallest_user_key() <= b.largest_user_key() && b.smallest_user_key() <= a.largest_user_key() {
                            return Err(format!(
                                "tree {ti} L0 group {}: files {} and {} overlap",
                                a.l0_group, a.number, b.number
                            ));
                        }
                    }
                }
            }
            for (li, files) in t.levels.iter_mut().enumerate().skip(1) {
                files.sort_by(|a, b| ikey::compare(&a.smallest, &b.smallest));
                for w in files.windows(2) {
                    if ikey::compare(&w[0].largest, &w[1].smallest) != Ordering::Less {
                        return Err(format!(
                            "tree {ti} level {li}: files {} and {} overlap",
                            w[0].number, w[1].number
                        ));
                    }
                }
            }
        }
        Ok(v)
    }

    /// Every file number referenced.
    pub fn file_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.trees
            .iter()
            .flat_map(|t| t.levels.iter().flatten().map(|f| f.number))
    }

    /// An edit that recreates this version from nothing (written first in a new manifest).
    pub fn snapshot_edit(&self, tree_names: &[String]) -> VersionEdit {
        let mut e = VersionEdit::default();
        for (id, name) in tree_names.iter().enumerate() {
            // A dropped tree (no name) keeps its id's place.
            if name.is_empty() {
                e.dropped_trees.push(id as u32);
            } else {
                e.new_trees.push((id as u32, name.clone()));
            }
        }
        for (id, t) in self.trees.iter().enumerate() {
            e.deepest.push((id as u32, t.deepest));
            for (level, files) in t.levels.iter().enumerate() {
                for f in files {
                    e.added.push((id as u32, level as u32, (**f).clone()));
                }
            }
        }
        e
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::version::edit::tests::meta;

    /// `testdata/version/edits.txt`: edits applied in turn (each one also through its encoding),
    /// printing the version after each, or the inconsistency that refuses it.
    #[test]
    fn edits_from_testdata() {
        let mut v = Version::default();
        crate::testutil::run_file("version/edits.txt", |c| match c.command.as_str() {
            "reset" => {
                v = Version::default();
                "ok\n".into()
            }
            "apply" => {
                let mut e = VersionEdit::default();
                for line in &c.input {
                    let w: Vec<&str> = line.split_whitespace().collect();
                    let n = |i: usize| w.get(i).map_or(0, |x| crate::testutil::num::<u64>(x));
                    let opt = |key: &str| {
                        w.iter()
                            .find_map(|x| x.strip_prefix(key).map(crate::testutil::num::<u64>))
                    };
                    match w.first().copied() {
                        Some("new-tree") => e.new_trees.push((n(1) as u32, w.get(2).unwrap_or(&"").to_string())),
                        Some("delete") => e.deleted.push((n(1) as u32, n(2) as u32, n(3))),
                        Some("drop-tree") => e.dropped_trees.push(n(1) as u32),
                        Some("deepest") => e.deepest.push((n(1) as u32, n(2) as u32)),
                        Some("add") => {
                            let (lo, hi) = w.get(4).and_then(|r| r.split_once('-')).unwrap_or(("", ""));
                            let mut f = FileMeta {
                                l0_group: opt("group=").unwrap_or(0),
                                ..meta(n(3), lo, hi)
                            };
                            if let Some(seq) = opt("seq=") {
                                f.largest_seqno = seq;
                            }
                            e.added.push((n(1) as u32, n(2) as u32, f));
                        }
                        other => panic!("unknown edit line {other:?}"),
                    }
                }
                let decoded = VersionEdit::decode(&e.encode()).unwrap();
                let (a, b) = (v.apply(&e), v.apply(&decoded));
                assert_eq!(a.is_ok(), b.is_ok(), "the encoded edit applies as the edit");
                match a {
                    Ok(next) => {
                        v = next;
                        show(&v)
                    }
                    Err(why) => format!("error: {why}\n"),
                }
            }
            _ => c.unknown(),
        });
    }

    /// Each tree's deepest level and its levels' files in read order: `number[lo-hi]`, with
    /// `gN` for an L0 group.
    fn show(v: &Version) -> String {
        let mut o = String::new();
        for (t, tv) in v.trees.iter().enumerate() {
            o.push_str(&format!("tree {t} deepest L{}\n", tv.deepest));
            for (l, files) in tv.levels.iter().enumerate().filter(|(_, f)| !f.is_empty()) {
                let fs: Vec<String> = files
                    .iter()
                    .map(|f| {
                        let key = |k: &[u8]| String::from_utf8_lossy(k).into_owned();
                        let group = if f.l0_group > 0 { format!(" g{}", f.l0_group) } else { String::new() };
                        format!(
                            "{}[{}-{}{group}]",
                            f.number,
                            key(f.smallest_user_key()),
                            key(f.largest_user_key())
                        )
                    })
                    .collect();
                o.push_str(&format!("  L{l}: {}\n", fs.join(" ")));
            }
        }
        o
    }

    fn l0(files: &[(u64, &str, &str, u64)]) -> Version {
        let mut e = VersionEdit::default();
        e.new_trees.push((0, "default".into()));
        for &(n, lo, hi, g) in files {
            e.added.push((0, 0, FileMeta { l0_group: g, ..meta(n, lo, hi) }));
        }
        Version::default().apply(&e).unwrap()
    }

    #[test]
    fn l0_groups_place_flushes_above_what_they_overlap() {
        // Group 1: [a-c] [m-p]; group 2: [d-f].
        let v = l0(&[(1, "a", "c", 1), (2, "m", "p", 1), (3, "d", "f", 2)]);
        let t = &v.trees[0];
        assert_eq!(t.l0_groups(), 2);
        assert_eq!(t.level(0).iter().map(|f| f.number).collect::<Vec<_>>(), [3, 2, 1], "newest group first");
        // Overlapping only group 1: the oldest group above it, group 2.
        let idle = |_| false;
        assert_eq!(t.l0_group_for(b"n", b"o", true, &idle), 2);
        // ... but not into a group an intra-L0 merge is rewriting.
        assert_eq!(t.l0_group_for(b"n", b"o", true, &|n| n == 3), 3);
        // Overlapping group 2: a new group.
        assert_eq!(t.l0_group_for(b"e", b"z", true, &idle), 3);
        // Overlapping nothing: the oldest group.
        assert_eq!(t.l0_group_for(b"x", b"z", true, &idle), 1);
        // A monolithic flush always starts a new group.
        assert_eq!(t.l0_group_for(b"x", b"z", false, &idle), 3);
        // Files logged before groups are runs of their own.
        assert_eq!(l0(&[(1, "a", "c", 0), (2, "m", "p", 0)]).trees[0].l0_groups(), 2);
        // Two overlapping files in one group are corruption.
        let mut e = VersionEdit::default();
        e.added.push((0, 0, FileMeta { l0_group: 1, ..meta(9, "b", "n") }));
        assert!(v.apply(&e).unwrap_err().contains("overlap"));
    }

    #[test]
    fn l0_sorted_runs_are_groups_in_key_order_and_ungrouped_files_alone() {
        // Group 2: [m-p] then [a-c] by seqno order; group 1: [d-f]; group 0: two files.
        let v = l0(&[(1, "d", "f", 1), (2, "a", "c", 2), (3, "m", "p", 2), (4, "a", "z", 0), (5, "b", "y", 0)]);
        let runs: Vec<Vec<u64>> = l0_sorted_runs(v.trees[0].level(0))
            .iter()
            .map(|r| r.iter().map(|f| f.number).collect())
            .collect();
        let mut sorted = runs.clone();
        sorted.sort();
        assert_eq!(sorted, [vec![1], vec![2, 3], vec![4], vec![5]]);
        assert_eq!(runs.len(), v.trees[0].l0_groups());
    }
}
