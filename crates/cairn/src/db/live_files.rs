//! Live files: the run-time handle of each table in a read view ([`LiveFile`]), kept in a side
//! table keyed by file number (never in the immutable [`FileMeta`]). A handle is created when a
//! version first holds the file and dropped when the file is deleted as obsolete; a file moved
//! to another level keeps its handle.
//!
//! The read path never touches the table's map: a super-version carries the handles of its
//! files, and a point read finds there the open reader (one atomic load), the loaded elastic
//! filter units and whether the range filter may be pinned, and records its probe in the file's
//! statistics (`stats::FileStats`).

use crate::filter::loaded::ElasticSegments;
use crate::sst::TableReader;
use crate::stats::{counted_segments, FileNumber, FileRegistry, FileStats, FileStatsSnapshot, StatsSnapshot};
use crate::tuning::bpk::BpkPolicy;
use crate::version::FileMeta;
use crate::version::Version;
use arc_swap::ArcSwapOption;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// Where a live file's open reader is published for the read path (in its [`LiveFile`] handle): set while the table cache holds the reader, cleared when it evicts it, so a point
/// read finds the reader with one atomic load and no lock, and `max_open_files` still bounds
/// open readers.
pub type ReaderSlot = ArcSwapOption<TableReader>;

/// The run-time state of one live table.
#[derive(Debug)]
pub struct LiveFile {
    stats: FileStats,
    /// The open reader, while the table cache holds it.
    reader: ReaderSlot,
    /// ElasticBF's loaded filter units per segment (none tracked unless the table's units are
    /// elastic).
    elastic: ElasticSegments,
    /// Whether a bounded read may pin the file's range filter (while range-filter memory has
    /// room); cleared by the round that keeps that memory for the filters worth it most
    /// (`db/control/range_filter_memory.rs`).
    range_admitted: AtomicBool,
}

impl LiveFile {
    /// The file's access statistics.
    #[inline]
    pub fn stats(&self) -> &FileStats {
        &self.stats
    }

    /// The units of this table loaded in filter memory (ElasticBF).
    #[inline]
    pub fn elastic(&self) -> &ElasticSegments {
        &self.elastic
    }

    /// Where the table cache publishes the file's open reader for point reads.
    #[inline]
    pub fn reader_slot(&self) -> &ReaderSlot {
        &self.reader
    }

    /// Whether a bounded read may pin the file's range filter.
    #[inline]
    pub fn range_admitted(&self) -> bool {
        self.range_admitted.load(Relaxed)
    }

    /// Admits the file's range filter to range-filter memory, or not.
    pub fn set_range_admitted(&self, admitted: bool) {
        self.range_admitted.store(admitted, Relaxed);
    }

    /// The statistics at `level` when `g` recorded lookups have reached the tables.
    pub fn snapshot(&self, level: usize, g: u64) -> FileStatsSnapshot {
        self.stats.snapshot(level, g, self.elastic.total_loaded())
    }
}

/// The side table of live files.
#[derive(Debug)]
pub struct LiveFiles {
    files: Mutex<HashMap<FileNumber, Arc<LiveFile>>>,
    stats: FileRegistry,
    /// An elastic policy is in force: tables written with elastic units get slots for their
    /// loaded units.
    elastic: bool,
}

impl LiveFiles {
    /// No live file yet; new files' statistics start from `stats`.
    pub fn new(stats: FileRegistry, elastic: bool) -> Self {
        LiveFiles {
            files: Mutex::new(HashMap::new()),
            stats,
            elastic,
        }
    }

    /// Where files' statistics start, and the lookup counter.
    pub fn stats(&self) -> &FileRegistry {
        &self.stats
    }

    /// The handle of `f` (of `tree`), created on first sight.
    pub fn register(&self, tree: u32, f: &FileMeta) -> Arc<LiveFile> {
        let n = FileNumber(f.number);
        let mut files = self.files.lock();
        files
            .entry(n)
            .or_insert_with(|| {
                let elastic = self.elastic && BpkPolicy::parse(&f.filter_policy).is_some_and(|p| p.is_elastic());
                Arc::new(LiveFile {
                    stats: self.stats.start(tree, f),
                    reader: ReaderSlot::empty(),
                    elastic: ElasticSegments::new(if elastic { counted_segments(f) } else { 0 }),
                    range_admitted: AtomicBool::new(true),
                })
            })
            .clone()
    }

    /// The counters of every live file in `version`, or of one tree's (what the deciders
    /// read).
    pub fn snapshot(&self, version: &Version, tree: Option<usize>) -> StatsSnapshot {
        let g = self.stats.lookups();
        let mut files = Vec::new();
        for (t, tv) in version.trees.iter().enumerate() {
            if tree.is_some_and(|only| only != t) {
                continue;
            }
            for (level, fs) in tv.levels.iter().enumerate() {
                for f in fs {
                    files.push(self.register(t as u32, f).snapshot(level, g));
                }
            }
        }
        StatsSnapshot { files, lookups: g }
    }

    /// Whether file `n` has a handle (it was not deleted).
    pub fn is_live(&self, n: FileNumber) -> bool {
        self.files.lock().contains_key(&n)
    }

    /// Drops the handle (and any statistics seed) of a deleted file.
    pub fn remove(&self, n: FileNumber) {
        self.files.lock().remove(&n);
        self.stats.forget(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(number: u64, policy: &str) -> FileMeta {
        FileMeta {
            number,
            entries: 10,
            filter_policy: policy.into(),
            filter_bpk: 10.0,
            segments: 4,
            ..FileMeta::default()
        }
    }

    #[test]
    fn one_handle_per_file_until_it_is_removed() {
        let live = LiveFiles::new(FileRegistry::new(8), true);
        let f = live.register(0, &meta(7, "mnemosyne-elastic"));
        assert!(Arc::ptr_eq(&f, &live.register(0, &meta(7, "mnemosyne-elastic"))));
        assert_eq!(f.elastic().len(), 4, "elastic units tracked per segment");
        assert!(f.range_admitted());
        f.set_range_admitted(false);
        assert!(!live.register(0, &meta(7, "mnemosyne-elastic")).range_admitted());
        live.remove(FileNumber(7));
        assert!(
            live.register(0, &meta(7, "mnemosyne-elastic")).range_admitted(),
            "a new handle"
        );
        // Units are tracked only for elastic tables under an elastic policy.
        assert_eq!(live.register(0, &meta(8, "uniform")).elastic().len(), 0);
        let fixed = LiveFiles::new(FileRegistry::new(8), false);
        assert_eq!(fixed.register(0, &meta(9, "mnemosyne-elastic")).elastic().len(), 0);
    }
}
