//! Reads ahead of a long scan on other threads, so the scan's next chunk comes from storage
//! while the scan decodes this one.
//!
//! A synchronous readahead alternates: read 256 KiB (about 360 µs with O_DIRECT here), then
//! spend the CPU on its entries with the device idle. Once a run of blocks is long (its chunks
//! have grown to the largest size), [`super::trailer::Readahead`] asks this pool for the chunk
//! after the one it holds; the read overlaps the scan's work and the scan waits only for what
//! is left of it. One chunk ahead per iterator: the memory held is bounded by the iterators
//! open, and a scan that stops or jumps wastes at most one chunk (counted as unused readahead).
//!
//! The reads run on the process's I/O pool (`io_pool.rs`). A job holds its file open until its
//! read ends; a table deleted meanwhile stays readable until then, as for any open reader.

use crate::env::RandomAccessFile;
use crate::error::{Error, Result};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;

/// A chunk being read: `len` bytes from `start`.
#[derive(Debug)]
pub(crate) struct Ahead {
    pub start: u64,
    pub len: usize,
    done: Receiver<Result<Vec<u8>>>,
}

impl Ahead {
    /// The chunk, once read (waiting for the read if it is still under way).
    ///
    /// # Errors
    /// The read's error; `Io` when the pool's thread ended without an answer.
    pub fn wait(self, path: &std::path::Path) -> Result<Vec<u8>> {
        self.done.recv().unwrap_or_else(|_| {
            Err(Error::io("read ahead", path, std::io::Error::other("the read-ahead thread ended without an answer")))
        })
    }
}

/// Starts reading `len` bytes of `file` from `start` into `buf` (a buffer to reuse: its
/// capacity is kept), on the I/O pool.
pub(crate) fn read(file: Arc<dyn RandomAccessFile>, start: u64, len: usize, mut buf: Vec<u8>) -> Ahead {
    let (tx, done) = mpsc::sync_channel::<Result<Vec<u8>>>(1);
    crate::io_pool::spawn(Box::new(move || {
        buf.clear();
        buf.resize(len, 0);
        // The scan may have moved on and dropped its receiver: nothing to deliver then.
        let _ = tx.send(file.read_exact_at(start, &mut buf).map(|()| buf));
    }));
    Ahead { start, len, done }
}
