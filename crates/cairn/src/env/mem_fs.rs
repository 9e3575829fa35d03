//! An in-memory file system. Open handles keep referring to their file after a rename or
//! removal, like inodes.

use super::{parent_of, FileLock, FileSystem, RandomAccessFile, ReadOptions, WritableFile};
use crate::error::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

type Data = Arc<RwLock<Vec<u8>>>;

/// Files and directories held in memory. Cloning gives another handle to the same files.
#[derive(Debug, Clone, Default)]
pub struct MemFs {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    tree: Mutex<Tree>,
    locks: Arc<Mutex<HashSet<PathBuf>>>,
}

#[derive(Debug, Default)]
struct Tree {
    files: BTreeMap<PathBuf, Data>,
    dirs: BTreeSet<PathBuf>,
}

fn not_found(op: &'static str, path: &Path) -> Error {
    Error::io(op, path, io::Error::from(io::ErrorKind::NotFound))
}

impl Tree {
    fn dir_exists(&self, dir: &Path) -> bool {
        dir.as_os_str().is_empty() || dir == Path::new("/") || self.dirs.contains(dir)
    }
    fn file(&self, op: &'static str, path: &Path) -> Result<&Data> {
        self.files.get(path).ok_or_else(|| not_found(op, path))
    }
}

impl MemFs {
    /// An empty file system.
    pub fn new() -> Self {
        MemFs::default()
    }
}

impl FileSystem for MemFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut t = self.inner.tree.lock();
        if !t.dir_exists(parent_of(path)) {
            return Err(not_found("create", path));
        }
        let data: Data = Arc::default();
        t.files.insert(path.to_path_buf(), data.clone());
        Ok(Box::new(MemWritable { data, len: 0 }))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let t = self.inner.tree.lock();
        let data = t.file("open for append", path)?.clone();
        let len = data.read().len() as u64;
        Ok(Box::new(MemWritable { data, len }))
    }

    fn open_read(&self, path: &Path, _opts: ReadOptions) -> Result<Arc<dyn RandomAccessFile>> {
        let t = self.inner.tree.lock();
        let data = t.file("open for read", path)?.clone();
        let size = data.read().len() as u64;
        Ok(Arc::new(MemReadable {
            data,
            size,
            path: path.to_path_buf(),
        }))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(self.inner.tree.lock().file("stat", path)?.read().len() as u64)
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        let t = self.inner.tree.lock();
        Ok(t.files.contains_key(path) || t.dirs.contains(path))
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        let mut t = self.inner.tree.lock();
        if !t.dir_exists(parent_of(to)) {
            return Err(not_found("hard link", to));
        }
        if t.files.contains_key(to) {
            return Err(Error::io(
                "hard link",
                to,
                std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            ));
        }
        let data = t.files.get(from).ok_or_else(|| not_found("hard link", from))?.clone();
        t.files.insert(to.to_path_buf(), data);
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut t = self.inner.tree.lock();
        if !t.dir_exists(parent_of(to)) {
            return Err(not_found("rename", to));
        }
        let data = t.files.remove(from).ok_or_else(|| not_found("rename", from))?;
        t.files.insert(to.to_path_buf(), data);
        Ok(())
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        let mut t = self.inner.tree.lock();
        t.files
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found("remove", path))
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let t = self.inner.tree.lock();
        let len = usize::try_from(len).map_err(|_| Error::InvalidArgument("length".into()))?;
        t.file("truncate", path)?.write().resize(len, 0);
        Ok(())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let t = self.inner.tree.lock();
        if !t.dir_exists(dir) {
            return Err(not_found("list", dir));
        }
        let mut names: Vec<String> = t
            .files
            .keys()
            .chain(t.dirs.iter())
            .filter(|p| parent_of(p) == dir)
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        names.sort();
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let mut t = self.inner.tree.lock();
        let mut p = Some(dir);
        while let Some(d) = p {
            if d.as_os_str().is_empty() {
                break;
            }
            t.dirs.insert(d.to_path_buf());
            p = d.parent();
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        if self.inner.tree.lock().dir_exists(dir) {
            Ok(())
        } else {
            Err(not_found("fsync dir", dir))
        }
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        if !self.inner.locks.lock().insert(path.to_path_buf()) {
            return Err(Error::Locked(path.to_path_buf()));
        }
        let mut t = self.inner.tree.lock();
        if !t.files.contains_key(path) {
            if !t.dir_exists(parent_of(path)) {
                self.inner.locks.lock().remove(path);
                return Err(not_found("open lock file", path));
            }
            t.files.insert(path.to_path_buf(), Arc::default());
        }
        Ok(Box::new(MemLock {
            locks: self.inner.locks.clone(),
            path: path.to_path_buf(),
        }))
    }
}

#[derive(Debug)]
struct MemLock {
    locks: Arc<Mutex<HashSet<PathBuf>>>,
    path: PathBuf,
}
impl FileLock for MemLock {}
impl Drop for MemLock {
    fn drop(&mut self) {
        self.locks.lock().remove(&self.path);
    }
}

#[derive(Debug)]
struct MemWritable {
    data: Data,
    len: u64,
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut d = self.data.write();
        d.extend_from_slice(data);
        self.len = d.len() as u64;
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync_data(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync_all(&mut self) -> Result<()> {
        Ok(())
    }
    fn len(&self) -> u64 {
        self.len
    }
}

#[derive(Debug)]
struct MemReadable {
    data: Data,
    size: u64,
    path: PathBuf,
}

impl RandomAccessFile for MemReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let d = self.data.read();
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| d.get(o..o.checked_add(buf.len())?));
        match src {
            Some(s) => {
                buf.copy_from_slice(s);
                Ok(())
            }
            None => Err(Error::io(
                "read",
                &self.path,
                io::Error::new(io::ErrorKind::UnexpectedEof, "read past end of file"),
            )),
        }
    }
    fn size(&self) -> u64 {
        self.size
    }
}
