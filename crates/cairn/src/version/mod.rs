//! Versions: the immutable set of table files per level per tree, changed only by applying a
//! [`VersionEdit`] logged in the manifest (spec: `docs/format/manifest.md`).

mod edit;
pub mod manifest;
pub(crate) mod set;

pub use edit::{FileMeta, VersionEdit};

use crate::format::ikey;
use std::cmp::Ordering;
use std::sync::Arc;

/// The files of one tree.
#[derive(Debug, Clone, Default)]
pub struct TreeVersion {
    /// `levels[0]`: overlapping files, newest first; `levels[i ≥ 1]`: one sorted run of
    /// non-overlapping files ordered by smallest key.
    pub levels: Vec<Vec<Arc<FileMeta>>>,
    /// Deepest level in use (Garnering's L; ≥ the deepest non-empty level, ≥ 1).
    pub deepest: u32,
}

impl TreeVersion {
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

    /// The position in sorted level `level ≥ 1` of the file that may hold `user_key`.
    pub fn index_for_key(&self, level: usize, user_key: &[u8]) -> Option<usize> {
        let files = self.level(level);
        let i = files.partition_point(|f| f.largest_user_key() < user_key);
        files.get(i).filter(|f| f.smallest_user_key() <= user_key).map(|_| i)
    }
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
        for (tree, _) in &edit.new_trees {
            let t = *tree as usize;
            if v.trees.len() <= t {
                v.trees.resize_with(t + 1, || TreeVersion {
                    levels: Vec::new(),
                    deepest: 1,
                });
            }
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
                l0.sort_by(|a, b| b.largest_seqno.cmp(&a.largest_seqno).then(b.number.cmp(&a.number)));
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
            e.new_trees.push((id as u32, name.clone()));
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
