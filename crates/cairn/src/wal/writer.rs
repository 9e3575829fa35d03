//! Appends records to a WAL file.

use super::{FragmentType, BLOCK_SIZE, HEADER_LEN};
use crate::env::{FileSystem, WritableFile};
use crate::error::Result;
use crate::format::coding::masked_crc;
use std::path::Path;

/// Writes records to one WAL file. Not synchronized: the engine's group-commit leader owns it.
#[derive(Debug)]
pub struct WalWriter {
    file: Box<dyn WritableFile>,
    log_number: u64,
    /// Bytes used in the current block.
    block_offset: usize,
    /// File length known durable.
    synced: u64,
    /// The sequence number of its first write (0 when unknown: a log reopened for append).
    first_seq: u64,
    /// Reused buffer holding the fragments of one record.
    scratch: Vec<u8>,
}

impl WalWriter {
    /// Starts writing `log_number` into `file` (empty, or reopened for append: everything
    /// already in it is taken as durable).
    pub fn new(file: Box<dyn WritableFile>, log_number: u64) -> Self {
        let len = file.len();
        WalWriter {
            block_offset: (len % BLOCK_SIZE as u64) as usize,
            synced: len,
            file,
            log_number,
            first_seq: 0,
            scratch: Vec::new(),
        }
    }

    /// Creates database log `log_number` at `path`, whose first write will be `first_seq`: the
    /// header record (`super::header_record`) is written and synced under a temporary name,
    /// which is then renamed to `path`. So a log either does not exist or starts with its
    /// synced header, and a live log without one has lost bytes. The caller syncs the directory.
    ///
    /// # Errors
    /// I/O errors; the caller must not use the log (at most the temporary file is left).
    pub fn create(fs: &dyn FileSystem, path: &Path, log_number: u64, db_id: u64, first_seq: Option<u64>) -> Result<Self> {
        let w = Self::create_unnamed(fs, path, log_number, db_id, first_seq)?;
        fs.rename(&crate::filename::temp(path), path)?;
        Ok(w)
    }

    /// [`create`](Self::create) without the rename: the log stays under the temporary name of
    /// `path` (removed at the next open if never renamed) until its user renames it into place.
    ///
    /// # Errors
    /// As `create`.
    pub fn create_unnamed(
        fs: &dyn FileSystem,
        path: &Path,
        log_number: u64,
        db_id: u64,
        first_seq: Option<u64>,
    ) -> Result<Self> {
        let mut w = WalWriter::new(fs.create(&crate::filename::temp(path))?, log_number);
        w.first_seq = first_seq.unwrap_or(0);
        w.add_record(&super::header_record(db_id, first_seq))?;
        w.sync()?;
        Ok(w)
    }

    /// The sequence number of the log's first write (0 when unknown).
    pub fn first_seq(&self) -> u64 {
        self.first_seq
    }

    /// A spare log (made without a first sequence number) starts at `first_seq`.
    pub fn set_first_seq(&mut self, first_seq: u64) {
        self.first_seq = first_seq;
    }

    /// The log's number.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// Bytes written so far.
    pub fn size(&self) -> u64 {
        self.file.len()
    }


    /// Appends one record (buffered; call [`flush`](Self::flush) or [`sync`](Self::sync)).
    /// Returns the file offset just past the record.
    ///
    /// # Errors
    /// An I/O error leaves the file in an unknown state; the caller must stop using this log.
    pub fn add_record(&mut self, body: &[u8]) -> Result<u64> {
        let mut prefix = [0u8; super::RECORD_PREFIX_LEN];
        prefix[..8].copy_from_slice(&self.log_number.to_le_bytes());
        prefix[8..].copy_from_slice(&self.synced.to_le_bytes());
        let total = prefix.len() + body.len();
        self.scratch.clear();
        let mut done = 0usize;
        let mut first = true;
        loop {
            let left_in_block = BLOCK_SIZE - self.block_offset;
            if left_in_block < HEADER_LEN {
                self.scratch.resize(self.scratch.len() + left_in_block, 0);
                self.block_offset = 0;
                continue;
            }
            let avail = left_in_block - HEADER_LEN;
            let n = (total - done).min(avail);
            let last = done + n == total;
            let ty = match (first, last) {
                (true, true) => FragmentType::Full,
                (true, false) => FragmentType::First,
                (false, false) => FragmentType::Middle,
                (false, true) => FragmentType::Last,
            };
            let start = self.scratch.len();
            self.scratch.extend_from_slice(&[0u8; HEADER_LEN]);
            // The payload is bytes done..done + n of prefix ‖ body, copied as two slices (the
            // prefix part is empty past the first fragment).
            let end = done + n;
            self.scratch.extend_from_slice(&prefix[done.min(prefix.len())..end.min(prefix.len())]);
            self.scratch.extend_from_slice(&body[done.saturating_sub(prefix.len())..end.saturating_sub(prefix.len())]);
            let crc = masked_crc(&[&[ty as u8], &self.scratch[start + HEADER_LEN..]]);
            self.scratch[start..start + 4].copy_from_slice(&crc.to_le_bytes());
            self.scratch[start + 4..start + 6].copy_from_slice(&(n as u16).to_le_bytes());
            self.scratch[start + 6] = ty as u8;
            self.block_offset += HEADER_LEN + n;
            done += n;
            first = false;
            if last {
                break;
            }
        }
        self.file.append(&self.scratch)?;
        Ok(self.file.len())
    }

    /// Hands buffered records to the OS (they then survive a process crash).
    pub fn flush(&mut self) -> Result<()> {
        self.file.flush()
    }

    /// Makes every record durable (fdatasync).
    ///
    /// # Errors
    /// A failed sync must poison the database: the OS may have dropped the dirty pages, so
    /// retrying could report durability that does not exist.
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync_data()?;
        self.synced = self.file.len();
        Ok(())
    }
}
