//! The file-system abstraction every byte of cairn's I/O goes through (docs/design.md §2).
//!
//! `std::fs` appears only in [`StdFs`]. [`MemFs`] keeps files in memory; [`FaultFs`] wraps any
//! file system to simulate power loss and inject I/O faults.

mod fault_fs;
mod mem_fs;
mod std_fs;

pub use fault_fs::{CrashMode, FaultFs, FaultKind, OpClass, OpRecord};
pub use mem_fs::MemFs;
pub use std_fs::StdFs;

use crate::error::Result;
use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

/// How a file is opened for positional reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Bypass the OS page cache (O_DIRECT) where the platform and file system allow it.
    pub direct: bool,
}

/// A file being written sequentially.
pub trait WritableFile: Send + Sync + Debug {
    /// Appends bytes (possibly buffered in the process until [`flush`](Self::flush)).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered bytes to the OS: afterwards they survive a process crash.
    fn flush(&mut self) -> Result<()>;
    /// Flushes and makes the file's data durable (fdatasync): it survives power loss.
    fn sync_data(&mut self) -> Result<()>;
    /// Flushes and makes data and metadata durable (fsync).
    fn sync_all(&mut self) -> Result<()>;
    /// Bytes appended so far, including those still buffered.
    fn len(&self) -> u64;
    /// True when nothing was appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A file read at arbitrary offsets, shared between threads.
pub trait RandomAccessFile: Send + Sync + Debug {
    /// Fills `buf` from `offset`; reading past the end of the file is an error.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// Size of the file when it was opened (files read this way are immutable once written,
    /// except WAL files, which recovery reads after the writer is gone).
    fn size(&self) -> u64;
    /// Whether reads bypass the OS page cache.
    fn is_direct(&self) -> bool {
        false
    }
}

/// An advisory lock, released on drop.
pub trait FileLock: Send + Sync + Debug {}

/// What an LSM needs from a file system.
///
/// Paths are used as given; implementations do not resolve `..`.
pub trait FileSystem: Send + Sync + Debug {
    /// Creates (or truncates) a file for appending.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens an existing file to append at its end.
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Opens a file for positional reads.
    fn open_read(&self, path: &Path, opts: ReadOptions) -> Result<Arc<dyn RandomAccessFile>>;
    /// Size of a file in bytes.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Whether a file or directory exists.
    fn exists(&self, path: &Path) -> Result<bool>;
    /// Atomically renames `from` to `to`, replacing `to` if present.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes a file.
    fn remove_file(&self, path: &Path) -> Result<()>;
    /// Makes `to` a second name of the file `from` (a hard link; `to` must not exist).
    /// `Unsupported` where the file system cannot (callers copy instead).
    fn hard_link(&self, from: &Path, _to: &Path) -> Result<()> {
        Err(crate::Error::io(
            "hard link",
            from,
            std::io::Error::from(std::io::ErrorKind::Unsupported),
        ))
    }
    /// Shrinks (or extends with zeros) a file to `len` bytes.
    fn truncate(&self, path: &Path, len: u64) -> Result<()>;
    /// Names of the entries of a directory (not full paths), sorted.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// Creates a directory and its missing parents.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Makes the directory's entries (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Takes an exclusive advisory lock on `path` (created if missing). A second lock of the
    /// same path, from this process or another, fails with [`Error::Locked`](crate::Error).
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
}

/// Copies the first `len` bytes of `from` into a new file `to` (1 MiB at a time), synced;
/// returns the bytes copied.
pub fn copy_prefix(fs: &dyn FileSystem, from: &Path, to: &Path, len: u64) -> Result<u64> {
    let src = fs.open_read(from, ReadOptions::default())?;
    let mut dst = fs.create(to)?;
    let mut buf = vec![0u8; (1 << 20).min(len as usize)];
    let mut at = 0u64;
    while at < len {
        let n = buf.len().min((len - at) as usize);
        src.read_exact_at(at, &mut buf[..n])?;
        dst.append(&buf[..n])?;
        at += n as u64;
    }
    dst.flush()?;
    dst.sync_data()?;
    Ok(len)
}

/// Reads a whole file into memory (used for small files: CURRENT, OPTIONS, tests).
pub fn read_all(fs: &dyn FileSystem, path: &Path) -> Result<Vec<u8>> {
    let f = fs.open_read(path, ReadOptions::default())?;
    let len = usize::try_from(f.size())
        .map_err(|_| crate::Error::InvalidArgument(format!("{} too large", path.display())))?;
    let mut buf = vec![0u8; len];
    f.read_exact_at(0, &mut buf)?;
    Ok(buf)
}

/// Writes a whole file and syncs it (not its directory).
pub fn write_all_synced(fs: &dyn FileSystem, path: &Path, data: &[u8]) -> Result<()> {
    let mut f = fs.create(path)?;
    f.append(data)?;
    f.sync_all()
}

fn parent_of(path: &Path) -> &Path {
    path.parent().unwrap_or_else(|| Path::new(""))
}

#[cfg(test)]
mod tests;
