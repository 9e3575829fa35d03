//! Helpers shared by the integration tests: small option sets, key naming, reading a whole tree.

#![allow(dead_code, reason = "each test binary uses a different part of this module")]

use cairn::env::FileSystem;
use cairn::{Db, Options};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// Keys to values: what a tree should hold.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// Options for tests that want many flushes and compactions from little data: memtables of
/// `write_buffer` bytes, 4 of them in write memory (fixed sizes), an L1 of 4 memtables, output
/// files of one memtable, blocks of 512 B (256 B below 16 KiB memtables) and segments of a
/// quarter memtable. Tests change what they need on the result.
pub fn small(fs: Arc<dyn FileSystem>, write_buffer: usize) -> Options {
    let mut o = Options::with_fixed_memory(4 * write_buffer, write_buffer, 32 << 20);
    o.fs = fs;
    o.compaction.max_bytes_for_level_base = 4 * write_buffer as u64;
    o.compaction.target_file_size = write_buffer as u64;
    o.table.block_size = if write_buffer >= 16 << 10 { 512 } else { 256 };
    o.filters.segment_size = (write_buffer as u64 / 4).max(64);
    o
}

/// The files of directory `dir` whose names end with `suffix` (`.sst`, `.wal`), sorted.
///
/// # Panics
/// When the directory cannot be listed.
pub fn files(fs: &dyn FileSystem, dir: &std::path::Path, suffix: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<std::path::PathBuf> = fs
        .list(dir)
        .expect("list")
        .into_iter()
        .filter(|n| n.ends_with(suffix))
        .map(|n| dir.join(n))
        .collect();
    v.sort();
    v
}

/// `key00042`.
pub fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// Every entry of the default tree, read by a forward scan.
///
/// # Panics
/// On a read error.
pub fn contents(db: &Db) -> Model {
    db.iter().map(|r| r.expect("scan")).collect()
}

/// A file system whose table reads wait `delay` each, like a device's (a read from `inner`
/// alone, in memory, takes a fraction of a microsecond): for paths that act on reads that
/// wait for the device (`multi_get` overlaps them).
#[derive(Debug)]
pub struct SlowReads {
    pub inner: Arc<dyn FileSystem>,
    pub delay: std::time::Duration,
}

#[derive(Debug)]
struct SlowFile {
    inner: Arc<dyn cairn::env::RandomAccessFile>,
    delay: std::time::Duration,
}

impl cairn::env::RandomAccessFile for SlowFile {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> cairn::Result<()> {
        std::thread::sleep(self.delay);
        self.inner.read_exact_at(offset, buf)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl FileSystem for SlowReads {
    fn create(&self, path: &Path) -> cairn::Result<Box<dyn cairn::env::WritableFile>> {
        self.inner.create(path)
    }
    fn open_append(&self, path: &Path) -> cairn::Result<Box<dyn cairn::env::WritableFile>> {
        self.inner.open_append(path)
    }
    fn open_read(
        &self,
        path: &Path,
        opts: cairn::env::ReadOptions,
    ) -> cairn::Result<Arc<dyn cairn::env::RandomAccessFile>> {
        let file = self.inner.open_read(path, opts)?;
        if path.extension().is_some_and(|e| e == "sst") {
            return Ok(Arc::new(SlowFile {
                inner: file,
                delay: self.delay,
            }));
        }
        Ok(file)
    }
    fn file_size(&self, path: &Path) -> cairn::Result<u64> {
        self.inner.file_size(path)
    }
    fn exists(&self, path: &Path) -> cairn::Result<bool> {
        self.inner.exists(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> cairn::Result<()> {
        self.inner.rename(from, to)
    }
    fn remove_file(&self, path: &Path) -> cairn::Result<()> {
        self.inner.remove_file(path)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> cairn::Result<()> {
        self.inner.hard_link(from, to)
    }
    fn truncate(&self, path: &Path, len: u64) -> cairn::Result<()> {
        self.inner.truncate(path, len)
    }
    fn list(&self, dir: &Path) -> cairn::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> cairn::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> cairn::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> cairn::Result<Box<dyn cairn::env::FileLock>> {
        self.inner.lock(path)
    }
}
