//! Concatenates the tables of one sorted level (non-overlapping, ordered by key), opening each
//! table only when the iterator reaches it. A range read hands down its bounds: tables outside
//! them are never opened, and a [`TableSkip`] hook (the range filter) may rule out a table
//! inside them before its index or data is read.

use super::{BlockWindow, IterOptions, TableIter, TableReader};
use crate::error::Result;
use crate::format::ikey;
use crate::iter::{KeyBounds, TwoLevelIndex, TwoLevelIter};
use crate::version::FileMeta;
use std::cmp::Ordering;
use std::sync::Arc;

/// Opens a table by its metadata (through the table cache).
pub type TableOpener = Arc<dyn Fn(&FileMeta) -> Result<Arc<TableReader>> + Send + Sync>;

/// What a range read does with a table, as its range filter says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableAccess {
    /// The table holds no key within the bounds: skip it without reading its index or data.
    Skip,
    /// Read it, skipping the data blocks the window rules out.
    Window(BlockWindow),
    /// Read it.
    Read,
}

/// Asked before a range read reads a table. This is where a range filter answers.
pub type TableSkip = Arc<dyn Fn(&FileMeta, &TableReader, &KeyBounds) -> Result<TableAccess> + Send + Sync>;

/// Iterator over a sorted level.
pub type LevelIter = TwoLevelIter<LevelFiles>;

/// The file list of a sorted level, as the outer level of [`LevelIter`].
pub struct LevelFiles {
    files: Vec<Arc<FileMeta>>,
    open: TableOpener,
    opts: IterOptions,
    bounds: KeyBounds,
    skip: Option<TableSkip>,
    /// Current file; `files.len()` when past either end.
    index: usize,
}

impl std::fmt::Debug for LevelFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LevelFiles")
            .field("files", &self.files.len())
            .field("index", &self.index)
            .finish()
    }
}

impl LevelIter {
    /// Iterates `files` (sorted, non-overlapping).
    #[cfg(any(test, feature = "test-util"))]
    pub fn new(files: Vec<Arc<FileMeta>>, open: TableOpener) -> Self {
        Self::with_options(files, open, IterOptions::default())
    }

    /// Iterates `files`, reading tables as `opts` says.
    pub fn with_options(files: Vec<Arc<FileMeta>>, open: TableOpener, opts: IterOptions) -> Self {
        Self::bounded(files, open, opts, KeyBounds::all(), None)
    }

    /// Iterates the files of `files` that may hold keys within `bounds`, asking `skip` before
    /// reading each.
    pub fn bounded(
        files: Vec<Arc<FileMeta>>,
        open: TableOpener,
        opts: IterOptions,
        bounds: KeyBounds,
        skip: Option<TableSkip>,
    ) -> Self {
        let files: Vec<_> = files
            .into_iter()
            .filter(|f| bounds.overlaps(f.smallest_user_key(), f.largest_user_key()))
            .collect();
        let index = files.len();
        TwoLevelIter::over(LevelFiles {
            files,
            open,
            opts,
            bounds,
            skip,
            index,
        })
    }
}

impl TwoLevelIndex for LevelFiles {
    type Child = TableIter;

    fn valid(&self) -> bool {
        self.index < self.files.len()
    }
    fn seek_to_first(&mut self) {
        self.index = 0;
    }
    fn seek_to_last(&mut self) {
        self.index = self.files.len().saturating_sub(1);
    }
    fn seek(&mut self, target: &[u8]) {
        self.index = self
            .files
            .partition_point(|f| ikey::compare(&f.largest, target) == Ordering::Less);
    }
    fn seek_for_prev(&mut self, target: &[u8]) {
        // The last file whose smallest key is ≤ target.
        let i = self
            .files
            .partition_point(|f| ikey::compare(&f.smallest, target) != Ordering::Greater);
        self.index = if i == 0 { self.files.len() } else { i - 1 };
    }
    fn next(&mut self) {
        self.index = (self.index + 1).min(self.files.len());
    }
    fn prev(&mut self) {
        self.index = if self.index == 0 {
            self.files.len()
        } else {
            self.index - 1
        };
    }
    fn open(&mut self) -> Result<Option<TableIter>> {
        let Some(f) = self.files.get(self.index) else {
            return Ok(None);
        };
        let table = (self.open)(f)?;
        let access = match &self.skip {
            Some(skip) => skip(f, &table, &self.bounds)?,
            None => TableAccess::Read,
        };
        Ok(match access {
            TableAccess::Skip => None,
            TableAccess::Window(w) => Some(table.iter_with(self.opts.clone()).with_window(w)),
            TableAccess::Read => Some(table.iter_with(self.opts.clone())),
        })
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{FileSystem, MemFs};
    use crate::format::ikey::{InternalKey, ValueKind};
    use crate::sst::{ReaderOptions, TableBuilder, TableOptions};
    use crate::stats::IoStats;
    use rand::{Rng, SeedableRng};
    use std::collections::BTreeMap;
    use std::ops::Bound;
    use std::path::Path;

    type Model = BTreeMap<InternalKey, Vec<u8>>;

    /// Six tables of 200 consecutive keys each (`k0000`…), every 4th key with two versions.
    fn level(fs: &MemFs) -> (Vec<Arc<FileMeta>>, Vec<Model>) {
        fs.create_dir_all(Path::new("/l")).unwrap();
        let (mut files, mut models) = (Vec::new(), Vec::new());
        for t in 0..6u64 {
            let mut m = Model::new();
            for i in t * 200..(t + 1) * 200 {
                let uk = format!("k{i:04}").into_bytes();
                m.insert(InternalKey::new(&uk, 10, ValueKind::Put), i.to_le_bytes().to_vec());
                if i % 4 == 0 {
                    m.insert(InternalKey::new(&uk, 20, ValueKind::Delete), Vec::new());
                }
            }
            files.push(table(fs, t + 1, &m, 256));
            models.push(m);
        }
        (files, models)
    }

    /// Table `n` in `/l` holding `m`, with its manifest entry.
    fn table(fs: &MemFs, n: u64, m: &Model, block_size: usize) -> Arc<FileMeta> {
        let opts = TableOptions {
            block_size,
            ..TableOptions::default()
        };
        let path = crate::filename::table(Path::new("/l"), n);
        let mut b = TableBuilder::new(fs.create(&path).unwrap(), n, opts, Arc::new(IoStats::new()));
        for (k, v) in m {
            b.add(k.encoded(), v).unwrap();
        }
        let s = b.finish().unwrap();
        let seqnos = m.keys().filter_map(|k| crate::format::ikey::split(k.encoded()).map(|(_, seq, _)| seq));
        Arc::new(FileMeta {
            number: n,
            size: s.file_size,
            smallest: s.properties.smallest_key.clone(),
            largest: s.properties.largest_key.clone(),
            smallest_seqno: seqnos.clone().min().unwrap_or(0),
            largest_seqno: seqnos.max().unwrap_or(0),
            entries: s.properties.entries,
            tombstones: s.properties.tombstones,
            filter_policy: String::new(),
            filter_bpk: 0.0,
            segments: 1,
            l0_group: 0,
            range_deletions: 0,
            min_deadline: 0,
            global_seqno: 0,
        })
    }

    fn opener(fs: &MemFs) -> TableOpener {
        let fs = fs.clone();
        Arc::new(move |f: &FileMeta| {
            TableReader::open(
                &fs,
                &crate::filename::table(Path::new("/l"), f.number),
                Some(f.number),
                ReaderOptions {
                    stats: Arc::new(IoStats::new()),
                    ..ReaderOptions::default()
                },
            )
            .map(Arc::new)
        })
    }

    fn target(r: &mut dyn rand::RngCore) -> InternalKey {
        let uk = format!("k{:04}", r.gen_range(0..1300)).into_bytes();
        InternalKey::new(&uk, r.gen_range(0..30), ValueKind::Put)
    }

    #[test]
    fn conformance_over_a_level_with_and_without_skipped_tables() {
        let fs = MemFs::new();
        let (files, models) = level(&fs);
        let mut rng = rand::rngs::StdRng::seed_from_u64(5);
        let all: Model = models.iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect();
        let mut it = LevelIter::new(files.clone(), opener(&fs));
        crate::iter::conformance::check(&mut it, &all, &mut rng, 400, 40, target);

        // A hook that rules out tables 2 and 5: their entries vanish, nothing else changes.
        let opened = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let seen = opened.clone();
        let skip: TableSkip = Arc::new(move |f: &FileMeta, _: &TableReader, _: &KeyBounds| {
            seen.lock().push(f.number);
            Ok(if f.number != 2 && f.number != 5 {
                TableAccess::Read
            } else {
                TableAccess::Skip
            })
        });
        let kept: Model = models
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != 1 && *i != 4)
            .flat_map(|(_, m)| m.iter().map(|(k, v)| (k.clone(), v.clone())))
            .collect();
        let mut it = LevelIter::bounded(
            files.clone(),
            opener(&fs),
            IterOptions::default(),
            KeyBounds::all(),
            Some(skip),
        );
        crate::iter::conformance::check(&mut it, &kept, &mut rng, 400, 40, target);
        assert!(opened.lock().contains(&2));

        // Bounds leave out the tables entirely outside them (never opened).
        let bounds = KeyBounds {
            lo: Bound::Included(b"k0250".to_vec()),
            hi: Bound::Excluded(b"k0600".to_vec()),
        };
        let opened = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let seen = opened.clone();
        let skip: TableSkip = Arc::new(move |f: &FileMeta, _: &TableReader, _: &KeyBounds| {
            seen.lock().push(f.number);
            Ok(TableAccess::Read)
        });
        let mut it = LevelIter::bounded(files, opener(&fs), IterOptions::default(), bounds, Some(skip));
        let inside: Model = models[1..3]
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        crate::iter::conformance::check(&mut it, &inside, &mut rng, 200, 40, target);
        let mut numbers = opened.lock().clone();
        numbers.sort_unstable();
        numbers.dedup();
        assert_eq!(numbers, vec![2, 3], "only the tables overlapping the bounds are opened");
    }

    #[test]
    fn key_bounds_overlap() {
        let b = KeyBounds {
            lo: Bound::Excluded(b"c".to_vec()),
            hi: Bound::Included(b"f".to_vec()),
        };
        assert!(!b.overlaps(b"a", b"c"));
        assert!(b.overlaps(b"a", b"ca"));
        assert!(b.overlaps(b"f", b"z"));
        assert!(!b.overlaps(b"fa", b"z"));
        assert!(KeyBounds::all().overlaps(b"", b""));
    }

    /// `testdata/iter/level.txt`: a level of tables (one per input line, `N: key@seq=value ...`)
    /// walked with optional bounds (`lo=`, included; `hi=`, excluded) and a hook that rules
    /// tables out (`skip=N,M`); each step prints where the iterator stands, and the walk ends
    /// with the tables it opened.
    #[test]
    fn level_from_testdata() {
        use crate::iter::InternalIterator;
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/l")).unwrap();
        let mut files: Vec<Arc<FileMeta>> = Vec::new();
        crate::testutil::run_file("iter/level.txt", |c| match c.command.as_str() {
            "level" => {
                files.clear();
                for line in &c.input {
                    let (n, entries) = line.split_once(':').unwrap();
                    let n: u64 = n.trim().parse().unwrap();
                    let mut m = Model::new();
                    for w in entries.split_whitespace() {
                        let (key, value) = w.split_once('=').unwrap_or((w, ""));
                        let (user, seq) = key.split_once('@').unwrap_or((key, "1"));
                        m.insert(
                            InternalKey::new(user.as_bytes(), seq.parse().unwrap(), ValueKind::Put),
                            value.as_bytes().to_vec(),
                        );
                    }
                    files.push(table(&fs, n, &m, TableOptions::default().block_size));
                }
                "ok\n".into()
            }
            "walk" => {
                let bound = |key: &str, f: fn(Vec<u8>) -> Bound<Vec<u8>>| {
                    c.get(key).map_or(Bound::Unbounded, |v| f(v.as_bytes().to_vec()))
                };
                let bounds = KeyBounds {
                    lo: bound("lo", Bound::Included),
                    hi: bound("hi", Bound::Excluded),
                };
                let ruled_out: Vec<u64> = c
                    .get("skip")
                    .map(|v| v.split(',').map(|n| n.parse().expect("skip: file numbers")).collect())
                    .unwrap_or_default();
                let opened = Arc::new(parking_lot::Mutex::new(Vec::new()));
                let seen = opened.clone();
                let skip: TableSkip = Arc::new(move |f: &FileMeta, _: &TableReader, _: &KeyBounds| {
                    seen.lock().push(f.number);
                    Ok(if ruled_out.contains(&f.number) {
                        TableAccess::Skip
                    } else {
                        TableAccess::Read
                    })
                });
                let mut it = LevelIter::bounded(files.clone(), opener(&fs), IterOptions::default(), bounds, Some(skip));
                let mut out = String::new();
                for op in &c.input {
                    crate::iter::conformance::step(&mut it, op, |k| InternalKey::new(k.as_bytes(), 99, ValueKind::Put));
                    let at = if it.valid() {
                        let (user, _, _) = crate::format::ikey::split(it.key()).unwrap();
                        format!("{}={}", String::from_utf8_lossy(user), String::from_utf8_lossy(it.value()))
                    } else {
                        "end".into()
                    };
                    out.push_str(&format!("{op}: {at}\n"));
                }
                let mut numbers = opened.lock().clone();
                numbers.sort_unstable();
                numbers.dedup();
                out.push_str(&format!("tables opened: {numbers:?}\n"));
                out
            }
            _ => c.unknown(),
        });
    }
}
