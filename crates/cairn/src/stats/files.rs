//! Per-file and per-segment runtime state, in one side table keyed by [`FileNumber`] (never in
//! the immutable [`FileMeta`]): an entry is created when a version first adds the file and
//! dropped when the file is deleted as obsolete. Today it holds exact access counters; Merlin's
//! window, elastic-unit state and range-filter statistics join it.
//!
//! The read path never touches the registry's map: a super-version carries the entries of its
//! files ([`FileState`] handles), and recording a probe is a few relaxed atomic adds on the
//! file's own cache line.

use crate::sst::GetOutcome;
use crate::version::FileMeta;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// A table's number (`NNNNNN.sst`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileNumber(pub u64);

/// Exact point-lookup counters of one file, on their own cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct AccessCounters {
    probes: AtomicU64,
    filter_negatives: AtomicU64,
    found: AtomicU64,
    data_reads: AtomicU64,
}

/// The runtime state of one live table.
#[derive(Debug)]
pub struct FileState {
    number: FileNumber,
    tree: u32,
    entries: u64,
    access: AccessCounters,
    /// Point-lookup probes per segment (the granularity of filter units).
    segment_probes: Box<[AtomicU64]>,
}

impl FileState {
    fn new(tree: u32, f: &FileMeta) -> Self {
        FileState {
            number: FileNumber(f.number),
            tree,
            entries: f.entries,
            access: AccessCounters::default(),
            segment_probes: (0..f.segments.max(1)).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Records one point-lookup probe of this file.
    #[inline]
    pub fn record_probe(&self, out: &GetOutcome) {
        let a = &self.access;
        a.probes.fetch_add(1, Relaxed);
        if out.filter_negative {
            a.filter_negatives.fetch_add(1, Relaxed);
        }
        if out.found.is_some() {
            a.found.fetch_add(1, Relaxed);
        }
        if out.data_block_read {
            a.data_reads.fetch_add(1, Relaxed);
        }
        if let Some(s) = out.segment.and_then(|s| self.segment_probes.get(s)) {
            s.fetch_add(1, Relaxed);
        }
    }

    /// A copy of the counters, at `level`.
    pub fn snapshot(&self, level: usize) -> FileStatsSnapshot {
        let a = &self.access;
        FileStatsSnapshot {
            number: self.number,
            tree: self.tree,
            level,
            entries: self.entries,
            probes: a.probes.load(Relaxed),
            filter_negatives: a.filter_negatives.load(Relaxed),
            found: a.found.load(Relaxed),
            data_reads: a.data_reads.load(Relaxed),
            segment_probes: self.segment_probes.iter().map(|p| p.load(Relaxed)).collect(),
        }
    }
}

/// Counters of one file at one moment (what pure deciders read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStatsSnapshot {
    /// File number.
    pub number: FileNumber,
    /// Tree id.
    pub tree: u32,
    /// Level the file was in when the snapshot was taken.
    pub level: usize,
    /// Entries.
    pub entries: u64,
    /// Point-lookup probes.
    pub probes: u64,
    /// Probes a filter unit ruled out.
    pub filter_negatives: u64,
    /// Probes that found the key (a put or a tombstone).
    pub found: u64,
    /// Probes that read a data block.
    pub data_reads: u64,
    /// Probes per segment.
    pub segment_probes: Vec<u64>,
}

impl FileStatsSnapshot {
    /// Probes for keys the file does not hold (Mnemosyne's z_i, exact).
    #[cfg_attr(not(feature = "test-util"), expect(dead_code, reason = "read by the workload-aware allocators (Mnemosyne)"))]
    pub fn empty_probes(&self) -> u64 {
        self.probes - self.found.min(self.probes)
    }
}

/// Every live file's counters at one moment, and the lookups that reached the tables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Per live file, in tree, level, key order.
    pub files: Vec<FileStatsSnapshot>,
}

impl StatsSnapshot {
    /// The snapshot of file `n`, if live.
    #[cfg_attr(not(feature = "test-util"), expect(dead_code, reason = "read by the workload-aware allocators (Mnemosyne)"))]
    pub fn file(&self, n: FileNumber) -> Option<&FileStatsSnapshot> {
        self.files.iter().find(|f| f.number == n)
    }
}

/// The side table of live files' runtime state.
#[derive(Debug, Default)]
pub struct FileRegistry {
    files: Mutex<HashMap<FileNumber, Arc<FileState>>>,
}

impl FileRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The entry of `f` (of `tree`), created on first sight; a file moved to another level
    /// keeps its entry.
    pub fn register(&self, tree: u32, f: &FileMeta) -> Arc<FileState> {
        self.files
            .lock()
            .entry(FileNumber(f.number))
            .or_insert_with(|| Arc::new(FileState::new(tree, f)))
            .clone()
    }

    /// The entry of file `n`, if registered.
    #[cfg(any(test, feature = "test-util"))]
    pub fn get(&self, n: FileNumber) -> Option<Arc<FileState>> {
        self.files.lock().get(&n).cloned()
    }

    /// Drops the entry of a deleted file.
    pub fn remove(&self, n: FileNumber) {
        self.files.lock().remove(&n);
    }

    /// Files registered.
    #[cfg(any(test, feature = "test-util"))]
    pub fn len(&self) -> usize {
        self.files.lock().len()
    }

    /// True when no file is registered.
    #[cfg(any(test, feature = "test-util"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(number: u64, segments: u64) -> FileMeta {
        FileMeta {
            number,
            size: 100,
            smallest: Vec::new(),
            largest: Vec::new(),
            smallest_seqno: 0,
            largest_seqno: 0,
            entries: 10,
            tombstones: 0,
            filter_policy: "uniform".into(),
            filter_bpk: 10.0,
            segments,
        }
    }

    #[test]
    fn probes_are_counted_per_file_and_segment() {
        let r = FileRegistry::new();
        let f = r.register(0, &meta(7, 3));
        assert!(Arc::ptr_eq(&f, &r.register(0, &meta(7, 3))), "one entry per file");
        f.record_probe(&GetOutcome {
            filter_negative: true,
            units_probed: 1,
            segment: Some(2),
            ..Default::default()
        });
        f.record_probe(&GetOutcome {
            found: Some(crate::sst::Found {
                kind: crate::format::ikey::ValueKind::Put,
                seqno: 1,
                value: Vec::new(),
            }),
            data_block_read: true,
            segment: Some(0),
            ..Default::default()
        });
        let s = f.snapshot(3);
        assert_eq!((s.probes, s.filter_negatives, s.found, s.data_reads), (2, 1, 1, 1));
        assert_eq!(s.segment_probes, vec![1, 0, 1]);
        assert_eq!((s.level, s.empty_probes()), (3, 1));
        r.remove(FileNumber(7));
        assert!(r.get(FileNumber(7)).is_none());
        assert!(r.is_empty());
    }
}
