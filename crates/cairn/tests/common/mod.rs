//! Helpers shared by the integration tests: small option sets, key naming, reading a whole tree.

#![allow(dead_code, reason = "each test binary uses a different part of this module")]

use cairn::env::FileSystem;
use cairn::{Db, Options};
use std::collections::BTreeMap;
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
