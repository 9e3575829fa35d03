//! Real files through `std::fs`, with optional O_DIRECT positional reads.

use super::{FileLock, FileSystem, RandomAccessFile, ReadOptions, WritableFile};
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// Bytes a writable file buffers before handing them to the OS.
const WRITE_BUFFER: usize = 64 * 1024;

/// O_DIRECT alignment of offsets, lengths and buffers. 4 KiB covers the logical block size of
/// every device we run on (512 B or 4 KiB sectors).
const DIRECT_ALIGN: usize = 4096;

/// The real file system.
#[derive(Debug, Default, Clone)]
pub struct StdFs {
    _private: (),
}

impl StdFs {
    /// A handle to the real file system.
    pub fn new() -> Self {
        StdFs::default()
    }
}

/// Paths locked by this process: `flock` already conflicts between two opens in one process on
/// Linux, but keeping our own set makes the error immediate and platform-independent.
fn locked_paths() -> &'static Mutex<HashSet<PathBuf>> {
    static LOCKED: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    LOCKED.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Logged once per process when O_DIRECT is refused by a file system.
static DIRECT_FALLBACK_WARNED: AtomicBool = AtomicBool::new(false);

impl FileSystem for StdFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = File::create(path).map_err(|e| Error::io("create", path, e))?;
        Ok(Box::new(StdWritable::new(file, path, 0)))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io("open for append", path, e))?;
        let len = file.metadata().map_err(|e| Error::io("stat", path, e))?.len();
        Ok(Box::new(StdWritable::new(file, path, len)))
    }

    fn open_read(&self, path: &Path, opts: ReadOptions) -> Result<Arc<dyn RandomAccessFile>> {
        let mut direct = false;
        let file = if opts.direct {
            match OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path) {
                Ok(f) => {
                    direct = true;
                    f
                }
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    if !DIRECT_FALLBACK_WARNED.swap(true, Ordering::Relaxed) {
                        tracing::warn!(
                            path = %path.display(),
                            "the file system refuses O_DIRECT (EINVAL); reading through the page cache instead"
                        );
                    }
                    File::open(path).map_err(|e| Error::io("open for read", path, e))?
                }
                Err(e) => return Err(Error::io("open for read (O_DIRECT)", path, e)),
            }
        } else {
            File::open(path).map_err(|e| Error::io("open for read", path, e))?
        };
        let size = file.metadata().map_err(|e| Error::io("stat", path, e))?.len();
        Ok(Arc::new(StdRandomAccess {
            file,
            path: path.to_path_buf(),
            size,
            direct,
        }))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(std::fs::metadata(path).map_err(|e| Error::io("stat", path, e))?.len())
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        path.try_exists().map_err(|e| Error::io("stat", path, e))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::rename(from, to).map_err(|e| Error::io("rename", from, e))
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        std::fs::remove_file(path).map_err(|e| Error::io("remove", path, e))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::hard_link(from, to).map_err(|e| Error::io("hard link", from, e))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io("open for truncate", path, e))?;
        f.set_len(len).map_err(|e| Error::io("truncate", path, e))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io("list", dir, e))? {
            let entry = entry.map_err(|e| Error::io("list", dir, e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("create dir", dir, e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let d = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        let f = File::open(d).map_err(|e| Error::io("open dir", d, e))?;
        f.sync_all().map_err(|e| Error::io("fsync dir", d, e))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| Error::io("open lock file", path, e))?;
        let key = std::fs::canonicalize(path).map_err(|e| Error::io("canonicalize", path, e))?;
        if !locked_paths().lock().insert(key.clone()) {
            return Err(Error::Locked(path.to_path_buf()));
        }
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor we own; no memory is involved.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc != 0 {
            let err = io::Error::last_os_error();
            locked_paths().lock().remove(&key);
            return if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
                Err(Error::Locked(path.to_path_buf()))
            } else {
                Err(Error::io("flock", path, err))
            };
        }
        Ok(Box::new(StdLock { _file: file, key }))
    }
}

#[derive(Debug)]
struct StdLock {
    _file: File, // closing the descriptor releases the flock
    key: PathBuf,
}

impl FileLock for StdLock {}

impl Drop for StdLock {
    fn drop(&mut self) {
        locked_paths().lock().remove(&self.key);
    }
}

#[derive(Debug)]
struct StdWritable {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    len: u64,
}

impl StdWritable {
    fn new(file: File, path: &Path, len: u64) -> Self {
        StdWritable {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(WRITE_BUFFER),
            len,
        }
    }
}

impl WritableFile for StdWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.buf.len() + data.len() > WRITE_BUFFER {
            self.flush()?;
        }
        if data.len() >= WRITE_BUFFER {
            self.file
                .write_all(data)
                .map_err(|e| Error::io("append", &self.path, e))?;
        } else {
            self.buf.extend_from_slice(data);
        }
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            let r = self.file.write_all(&self.buf);
            // On failure the bytes are not retried: the caller must treat the file as broken.
            self.buf.clear();
            r.map_err(|e| Error::io("append", &self.path, e))?;
        }
        Ok(())
    }

    fn sync_data(&mut self) -> Result<()> {
        self.flush()?;
        self.file.sync_data().map_err(|e| Error::io("fdatasync", &self.path, e))
    }

    fn sync_all(&mut self) -> Result<()> {
        self.flush()?;
        self.file.sync_all().map_err(|e| Error::io("fsync", &self.path, e))
    }

    fn len(&self) -> u64 {
        self.len
    }
}

impl Drop for StdWritable {
    fn drop(&mut self) {
        // Best effort: a caller that forgot to flush still gets its bytes to the OS. Errors here
        // cannot be reported; callers that care flush or sync explicitly.
        let _ = self.flush();
    }
}

#[derive(Debug)]
struct StdRandomAccess {
    file: File,
    path: PathBuf,
    size: u64,
    direct: bool,
}

impl RandomAccessFile for StdRandomAccess {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        if self.direct {
            return self.read_direct(offset, buf);
        }
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| Error::io("read", &self.path, e))
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn is_direct(&self) -> bool {
        self.direct
    }
}

impl StdRandomAccess {
    /// O_DIRECT needs offset, length and buffer address aligned: read the aligned range covering
    /// the request into a thread-local aligned buffer and copy the wanted bytes out.
    fn read_direct(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let align = DIRECT_ALIGN as u64;
        let end = offset
            .checked_add(buf.len() as u64)
            .ok_or_else(|| Error::InvalidArgument("read range overflows".into()))?;
        let start = offset - offset % align;
        let aligned_end = end.div_ceil(align) * align;
        let span = usize::try_from(aligned_end - start).map_err(|_| Error::InvalidArgument("read too large".into()))?;
        thread_local! {
            static BUF: std::cell::RefCell<AlignedBuf> = const { std::cell::RefCell::new(AlignedBuf::empty()) };
        }
        BUF.with(|cell| {
            let mut ab = cell.borrow_mut();
            let scratch = ab.get(span)?;
            let mut done = 0usize;
            while done < span {
                match self.file.read_at(&mut scratch[done..], start + done as u64) {
                    Ok(0) => break, // end of file
                    Ok(n) => done += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(Error::io("read (O_DIRECT)", &self.path, e)),
                }
            }
            let lo = (offset - start) as usize;
            let hi = lo + buf.len();
            if done < hi {
                return Err(Error::io(
                    "read (O_DIRECT)",
                    &self.path,
                    io::Error::new(io::ErrorKind::UnexpectedEof, "read past end of file"),
                ));
            }
            buf.copy_from_slice(&scratch[lo..hi]);
            Ok(())
        })
    }
}

/// A heap buffer aligned to [`DIRECT_ALIGN`], grown on demand and reused.
struct AlignedBuf {
    ptr: *mut u8,
    cap: usize,
}

impl AlignedBuf {
    const fn empty() -> Self {
        AlignedBuf {
            ptr: std::ptr::null_mut(),
            cap: 0,
        }
    }

    fn get(&mut self, len: usize) -> Result<&mut [u8]> {
        if len > self.cap {
            self.release();
            let cap = len.next_power_of_two().max(DIRECT_ALIGN);
            let layout = std::alloc::Layout::from_size_align(cap, DIRECT_ALIGN)
                .map_err(|_| Error::InvalidArgument("direct read buffer too large".into()))?;
            // SAFETY: layout has non-zero size. Zeroed so the slice below is initialised memory.
            let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
            if ptr.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            self.ptr = ptr;
            self.cap = cap;
        }
        // SAFETY: ptr points to `cap >= len` initialised bytes owned by self, borrowed mutably.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr, len) })
    }

    fn release(&mut self) {
        if !self.ptr.is_null() {
            if let Ok(layout) = std::alloc::Layout::from_size_align(self.cap, DIRECT_ALIGN) {
                // SAFETY: allocated above with this exact layout.
                unsafe { std::alloc::dealloc(self.ptr, layout) };
            }
            self.ptr = std::ptr::null_mut();
            self.cap = 0;
        }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        self.release();
    }
}
