//! Executes a flush or compaction: writes the kept entries of a merged input stream into new
//! tables. Outputs are cut at `target_file_size`, but never between two versions of one user
//! key, so the files of a sorted level never share a user key.

use super::iter::CompactionFilter;
use crate::env::FileSystem;
use crate::error::Result;
use crate::format::ikey;
use crate::iter::InternalIterator;
use crate::sst::{TableBuilder, TableOptions, TableSummary};
use crate::stats::IoStats;
use crate::version::FileMeta;
use std::path::Path;
use std::sync::Arc;

/// Where and how outputs are written.
pub struct Outputs<'a> {
    /// File system.
    pub fs: &'a dyn FileSystem,
    /// Database directory.
    pub dir: &'a Path,
    /// Table options (filter decision included).
    pub table: TableOptions,
    /// Size at which an output is closed (`u64::MAX`: one file).
    pub target_file_size: u64,
    /// Write accounting.
    pub stats: Arc<IoStats>,
    /// Allocates a file number (registered as a pending output by the caller).
    pub new_file_number: &'a mut dyn FnMut() -> u64,
}

impl std::fmt::Debug for Outputs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outputs")
            .field("dir", &self.dir)
            .field("target_file_size", &self.target_file_size)
            .finish()
    }
}

/// What a job wrote.
#[derive(Debug, Default)]
pub struct JobOutput {
    /// New files, in key order.
    pub files: Vec<FileMeta>,
    /// Bytes written.
    pub bytes_written: u64,
    /// Entries read from the input.
    pub entries_in: u64,
    /// Entries written.
    pub entries_out: u64,
}

fn meta(number: u64, s: &TableSummary) -> FileMeta {
    let p = &s.properties;
    FileMeta {
        number,
        size: s.file_size,
        smallest: p.smallest_key.clone(),
        largest: p.largest_key.clone(),
        smallest_seqno: p.smallest_seqno,
        largest_seqno: p.largest_seqno,
        entries: p.entries,
        tombstones: p.tombstones,
        filter_policy: p.filter.policy.clone(),
        filter_bpk: p.filter.total_bpk(),
        segments: p.segments.len() as u64,
    }
}

/// Writes `input` (positioned by this function) through `filter` into new tables, then syncs
/// the directory so the files are durable before a manifest edit names them.
///
/// # Errors
/// Read, write and corruption errors; files already written are reported through
/// `out.files` being discarded by the caller (their numbers stay pending until deleted).
pub fn write_outputs(
    input: &mut dyn InternalIterator,
    filter: &mut CompactionFilter<'_>,
    out: &mut Outputs<'_>,
) -> Result<JobOutput> {
    let mut result = JobOutput::default();
    let mut builder: Option<(u64, TableBuilder)> = None;
    let mut last_user_key: Vec<u8> = Vec::new();
    input.seek_to_first();
    while input.valid() {
        let key = input.key();
        result.entries_in += 1;
        if filter.keep(key) {
            let uk = ikey::user_key(key);
            let cut = builder
                .as_ref()
                .is_some_and(|(_, b)| b.estimated_size() >= out.target_file_size && uk != last_user_key.as_slice());
            if cut {
                if let Some((n, b)) = builder.take() {
                    let s = b.finish()?;
                    result.bytes_written += s.file_size;
                    result.files.push(meta(n, &s));
                }
            }
            if builder.is_none() {
                let n = (out.new_file_number)();
                let f = out.fs.create(&crate::filename::table(out.dir, n))?;
                builder = Some((n, TableBuilder::new(f, n, out.table.clone(), out.stats.clone())));
            }
            if let Some((_, b)) = builder.as_mut() {
                b.add(key, input.value())?;
            }
            result.entries_out += 1;
            last_user_key.clear();
            last_user_key.extend_from_slice(uk);
        }
        input.next();
    }
    input.status()?;
    if let Some((n, b)) = builder.take() {
        let s = b.finish()?;
        result.bytes_written += s.file_size;
        result.files.push(meta(n, &s));
    }
    if !result.files.is_empty() {
        out.fs.sync_dir(out.dir)?;
        out.stats.record_sync();
    }
    Ok(result)
}
