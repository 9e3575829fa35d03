//! A fault-injecting wrapper around any [`FileSystem`], for crash and error tests.
//!
//! **Durability model** (what survives [`FaultFs::crash`], following the ALICE rules of
//! docs/design.md §4): a file's bytes survive up to the length at its last successful `sync_data` /
//! `sync_all`; a directory entry created, renamed or removed survives only once the directory
//! holding it was synced (`sync_dir` of the parent of the new name). Files that existed before
//! the wrapper saw them count as durable. A crash undoes every undurable directory change
//! (newest first, restoring replaced or removed files to their durable contents), then cuts each
//! tracked file to its durable length, optionally keeping part of the unsynced tail
//! ([`CrashMode`]). Truncation is treated as durable at once (a simplification: real file
//! systems may resurrect the old tail).
//!
//! After a crash the file system is *dead* — every call fails — until [`FaultFs::restart`], the
//! way a killed process can no longer write. Each operation holds a shared gate for its whole
//! duration and `crash` takes it exclusively, so no background thread can write into the
//! post-crash state.
//!
//! **Faults**: fail the n-th operation, or a random fraction of an operation class, with EIO,
//! ENOSPC, a short read/write, or flipped bytes (reads return a flipped bit; writes store one).

use super::{parent_of, FileLock, FileSystem, RandomAccessFile, ReadOptions, WritableFile};
use crate::error::{Error, Result};
use parking_lot::{Mutex, RwLock};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

/// What happens to the unsynced tail of each file at a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Every unsynced byte is lost.
    DropUnsynced,
    /// A random prefix of the unsynced bytes survives (writes reached the disk in order).
    KeepRandomPrefix,
    /// A random prefix survives but its last up-to-4-KiB block (within the unsynced part) is
    /// zeros: a torn sector write.
    TearZeros,
    /// Like `TearZeros` but the torn block holds random garbage.
    TearGarbage,
}

/// The kind of an injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The call fails with EIO.
    Eio,
    /// The call fails with ENOSPC.
    Enospc,
    /// Reads and appends transfer part of the bytes, then fail.
    Short,
    /// Reads return one flipped bit; appends store one flipped bit and report success.
    FlipBytes,
}

/// Classes of operations a fault rule applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpClass {
    /// Positional reads.
    Read,
    /// Appends and flushes.
    Write,
    /// File and directory syncs.
    Sync,
    /// Create, open, rename, remove, truncate, list, lock.
    Metadata,
    /// Every operation.
    Any,
}

#[derive(Debug, Clone)]
enum Rule {
    /// Fail the operation whose 1-based index (over all operations) is `n`.
    Nth { n: u64, kind: FaultKind },
    /// The operation whose index is `n` kills the file system (it fails, and so does every
    /// later one until `crash` + `restart`): a power cut at that exact point.
    CrashAt { n: u64 },
    /// Fail each operation of `class` with probability `p`.
    Fraction { class: OpClass, p: f64, kind: FaultKind },
    /// Fail one operation: the `skip + 1`-th of `class` (and named `op`, if set) on a file
    /// whose name matches `prefix` (see [`FaultFs::fail_matching`]), counted from when the rule
    /// was added. Deterministic whatever background threads do to other files.
    Matching {
        class: OpClass,
        op: Option<&'static str>,
        prefix: String,
        skip: u64,
        kind: FaultKind,
        done: bool,
    },
}

/// One file-system operation, as the operation log records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpRecord {
    /// 1-based index over all operations (the `n` of [`FaultFs::fail_nth`]).
    pub index: u64,
    /// Its class.
    pub class: OpClass,
    /// Its name (`"append"`, `"fdatasync"`, `"rename"`, ...).
    pub op: &'static str,
    /// The file or directory it acted on.
    pub path: PathBuf,
    /// The fault injected into it, if any.
    pub fault: Option<FaultKind>,
}

#[derive(Debug, Clone, Copy)]
struct Track {
    len: u64,
    synced: u64,
}

#[derive(Debug)]
enum DirOp {
    Created {
        path: PathBuf,
    },
    Renamed {
        from: PathBuf,
        to: PathBuf,
        displaced: Option<Vec<u8>>,
    },
    Removed {
        path: PathBuf,
        durable: Vec<u8>,
    },
}

impl DirOp {
    fn dir(&self) -> &Path {
        match self {
            DirOp::Created { path } | DirOp::Removed { path, .. } => parent_of(path),
            DirOp::Renamed { to, .. } => parent_of(to),
        }
    }
}

/// A writer's inner handle; `None` once a crash closed it.
type WriterCell = Mutex<Option<Box<dyn WritableFile>>>;
type WriterSlot = Arc<WriterCell>;

#[derive(Debug)]
struct State {
    dead: bool,
    generation: u64,
    next_id: u64,
    paths: HashMap<PathBuf, u64>,
    files: HashMap<u64, Track>,
    pending: Vec<DirOp>,
    writers: Vec<Weak<WriterCell>>,
    rules: Vec<Rule>,
    ops: u64,
    injected: u64,
    /// Recorded operations, when recording is on.
    log: Option<Vec<OpRecord>>,
    rng: StdRng,
}

#[derive(Debug)]
struct Shared {
    inner: Arc<dyn FileSystem>,
    gate: RwLock<()>,
    state: Mutex<State>,
}

/// A fault-injecting file system; clones share state.
#[derive(Debug, Clone)]
pub struct FaultFs {
    shared: Arc<Shared>,
}

/// What a crash did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CrashReport {
    /// Unsynced bytes dropped or damaged, over all files.
    pub bytes_lost: u64,
    /// Directory changes undone.
    pub dir_ops_undone: usize,
}

fn injected(op: &'static str, path: &Path, kind: io::ErrorKind, msg: &str) -> Error {
    Error::io(op, path, io::Error::new(kind, format!("injected fault: {msg}")))
}

fn fault_error(op: &'static str, path: &Path, kind: FaultKind) -> Error {
    match kind {
        FaultKind::Enospc => Error::io(op, path, io::Error::from_raw_os_error(libc::ENOSPC)),
        FaultKind::Short => injected(op, path, io::ErrorKind::UnexpectedEof, "short transfer"),
        _ => Error::io(op, path, io::Error::from_raw_os_error(libc::EIO)),
    }
}

impl State {
    /// Counts an operation and decides whether it fails.
    fn check(&mut self, class: OpClass, op: &'static str, path: &Path) -> Option<FaultKind> {
        self.ops += 1;
        let ops = self.ops;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let mut hit = None;
        for r in &mut self.rules {
            match r {
                Rule::Nth { n, kind } if *n == ops => hit = Some(*kind),
                Rule::CrashAt { n } if *n == ops => {
                    self.dead = true;
                    hit = Some(FaultKind::Eio);
                }
                Rule::Fraction { class: c, p, kind }
                    if (*c == class || *c == OpClass::Any) && hit.is_none() && self.rng.gen_bool(p.clamp(0.0, 1.0)) =>
                {
                    hit = Some(*kind);
                }
                Rule::Matching {
                    class: c,
                    op: o,
                    prefix,
                    skip,
                    kind,
                    done,
                } if !*done
                    && (*c == class || *c == OpClass::Any)
                    && o.is_none_or(|o| o == op)
                    && name_matches(name, prefix) =>
                {
                    if *skip == 0 {
                        *done = true;
                        hit = Some(*kind);
                    } else {
                        *skip -= 1;
                    }
                }
                _ => {}
            }
        }
        if hit.is_some() {
            self.injected += 1;
        }
        if let Some(log) = &mut self.log {
            log.push(OpRecord {
                index: ops,
                class,
                op,
                path: path.to_path_buf(),
                fault: hit,
            });
        }
        hit
    }

    fn durable_contents(&self, inner: &dyn FileSystem, path: &Path) -> Result<Vec<u8>> {
        let mut data = super::read_all(inner, path)?;
        if let Some(t) = self.paths.get(path).and_then(|id| self.files.get(id)) {
            data.truncate(usize::try_from(t.synced).unwrap_or(usize::MAX));
        }
        Ok(data)
    }
}

impl FaultFs {
    /// Wraps `inner`; `seed` drives every random choice (faults and crash tails).
    pub fn new(inner: Arc<dyn FileSystem>, seed: u64) -> Self {
        FaultFs {
            shared: Arc::new(Shared {
                inner,
                gate: RwLock::new(()),
                state: Mutex::new(State {
                    dead: false,
                    generation: 0,
                    next_id: 1,
                    paths: HashMap::new(),
                    files: HashMap::new(),
                    pending: Vec::new(),
                    writers: Vec::new(),
                    rules: Vec::new(),
                    ops: 0,
                    injected: 0,
                    log: None,
                    rng: StdRng::seed_from_u64(seed),
                }),
            }),
        }
    }

    /// Fails the operation whose 1-based index over all operations (counted from creation of
    /// this file system) is `n`.
    pub fn fail_nth(&self, n: u64, kind: FaultKind) {
        self.shared.state.lock().rules.push(Rule::Nth { n, kind });
    }

    /// Kills the file system at the operation whose 1-based index is `n`: that operation and
    /// every later one fail until [`crash`](Self::crash) rolls back the undurable state and
    /// [`restart`](Self::restart) revives it.
    pub fn crash_at(&self, n: u64) {
        self.shared.state.lock().rules.push(Rule::CrashAt { n });
    }

    /// Fails each operation of `class` with probability `p`.
    pub fn fail_fraction(&self, class: OpClass, p: f64, kind: FaultKind) {
        self.shared.state.lock().rules.push(Rule::Fraction { class, p, kind });
    }

    /// Fails one operation: the `skip + 1`-th operation of `class` from now on, named `op` when
    /// given (`"fdatasync"`, `"rename"`, ...), on a file whose name starts with `prefix` (or,
    /// when it holds a `*`, starts with what is before it and ends with what is after it:
    /// `"0*.wal.tmp"`). Unlike
    /// [`fail_nth`](Self::fail_nth) it does not depend on how many operations background
    /// threads performed before it.
    pub fn fail_matching(&self, class: OpClass, op: Option<&'static str>, prefix: &str, skip: u64, kind: FaultKind) {
        self.shared.state.lock().rules.push(Rule::Matching {
            class,
            op,
            prefix: prefix.to_string(),
            skip,
            kind,
            done: false,
        });
    }

    /// Starts (or restarts, empty) the operation log.
    pub fn record_ops(&self) {
        self.shared.state.lock().log = Some(Vec::new());
    }

    /// The operations recorded since [`record_ops`](Self::record_ops).
    pub fn op_log(&self) -> Vec<OpRecord> {
        self.shared.state.lock().log.clone().unwrap_or_default()
    }

    /// Removes every fault rule.
    pub fn clear_faults(&self) {
        self.shared.state.lock().rules.clear();
    }

    /// Operations performed so far.
    pub fn op_count(&self) -> u64 {
        self.shared.state.lock().ops
    }

    /// Faults injected so far.
    pub fn injected_faults(&self) -> u64 {
        self.shared.state.lock().injected
    }

    /// Bytes of `path` that would be lost by a crash now (0 for untracked files).
    pub fn unsynced_bytes(&self, path: &Path) -> u64 {
        let st = self.shared.state.lock();
        st.paths
            .get(path)
            .and_then(|id| st.files.get(id))
            .map_or(0, |t| t.len - t.synced)
    }

    /// Simulates power loss (see the module docs), then leaves the file system dead until
    /// [`restart`](Self::restart).
    pub fn crash(&self, mode: CrashMode) -> Result<CrashReport> {
        let _gate = self.shared.gate.write();
        let inner = &*self.shared.inner;
        let mut st = self.shared.state.lock();
        st.dead = true;
        st.generation += 1;
        // Close every writer first so buffered bytes cannot land after the rollback.
        for w in std::mem::take(&mut st.writers) {
            if let Some(slot) = w.upgrade() {
                drop(slot.lock().take());
            }
        }
        let mut report = CrashReport::default();
        let pending = std::mem::take(&mut st.pending);
        report.dir_ops_undone = pending.len();
        for op in pending.into_iter().rev() {
            match op {
                DirOp::Created { path } => {
                    if inner.exists(&path)? {
                        inner.remove_file(&path)?;
                    }
                    if let Some(id) = st.paths.remove(&path) {
                        if let Some(t) = st.files.remove(&id) {
                            report.bytes_lost += t.len;
                        }
                    }
                }
                DirOp::Renamed { from, to, displaced } => {
                    if inner.exists(&to)? {
                        inner.rename(&to, &from)?;
                    }
                    if let Some(id) = st.paths.remove(&to) {
                        st.paths.insert(from, id);
                    }
                    if let Some(old) = displaced {
                        super::write_all_synced(inner, &to, &old)?;
                    }
                }
                DirOp::Removed { path, durable } => {
                    super::write_all_synced(inner, &path, &durable)?;
                    st.paths.remove(&path);
                }
            }
        }
        let tracked: Vec<(PathBuf, Track)> = st
            .paths
            .iter()
            .filter_map(|(p, id)| st.files.get(id).map(|t| (p.clone(), *t)))
            .collect();
        for (path, t) in tracked {
            if t.len <= t.synced || !inner.exists(&path)? {
                continue;
            }
            let mut data = super::read_all(inner, &path)?;
            let synced = usize::try_from(t.synced).unwrap_or(usize::MAX).min(data.len());
            let keep = match mode {
                CrashMode::DropUnsynced => synced,
                _ => st.rng.gen_range(synced..=data.len()),
            };
            data.truncate(keep);
            if matches!(mode, CrashMode::TearZeros | CrashMode::TearGarbage) && keep > synced {
                let torn = st.rng.gen_range(1..=(keep - synced).min(4096));
                for b in &mut data[keep - torn..] {
                    *b = if mode == CrashMode::TearZeros { 0 } else { st.rng.gen() };
                }
                report.bytes_lost += torn as u64;
            }
            report.bytes_lost += t.len - keep as u64;
            super::write_all_synced(inner, &path, &data)?;
        }
        // Everything that survived is durable now.
        st.paths.clear();
        st.files.clear();
        Ok(report)
    }

    /// Brings the file system back after [`crash`](Self::crash): a new process starts.
    pub fn restart(&self) {
        self.shared.state.lock().dead = false;
    }

    /// Runs `f` under the gate after counting the operation against the fault rules.
    fn op<T>(
        &self,
        class: OpClass,
        op: &'static str,
        path: &Path,
        f: impl FnOnce(&dyn FileSystem, &mut State) -> Result<T>,
    ) -> Result<T> {
        let _gate = self.shared.gate.read();
        let mut st = self.shared.state.lock();
        if st.dead {
            return Err(injected(op, path, io::ErrorKind::Other, "file system crashed"));
        }
        if let Some(kind) = st.check(class, op, path) {
            return Err(fault_error(op, path, kind));
        }
        f(&*self.shared.inner, &mut st)
    }

    fn track_new(&self, st: &mut State, path: &Path, len: u64) -> u64 {
        let id = st.next_id;
        st.next_id += 1;
        st.paths.insert(path.to_path_buf(), id);
        st.files.insert(id, Track { len, synced: len });
        id
    }

    fn wrap_writer(&self, st: &mut State, inner: Box<dyn WritableFile>, id: u64, path: &Path) -> Box<dyn WritableFile> {
        let slot: WriterSlot = Arc::new(Mutex::new(Some(inner)));
        st.writers.retain(|w| w.strong_count() > 0);
        st.writers.push(Arc::downgrade(&slot));
        Box::new(FaultWritable {
            fs: self.clone(),
            slot,
            id,
            generation: st.generation,
            path: path.to_path_buf(),
        })
    }
}

impl FileSystem for FaultFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.op(OpClass::Metadata, "create", path, |inner, st| {
            // Truncating an existing file keeps its (durable) entry; its old bytes are gone.
            let existed = inner.exists(path)?;
            let w = inner.create(path)?;
            if !existed {
                st.pending.push(DirOp::Created {
                    path: path.to_path_buf(),
                });
            }
            let id = self.track_new(st, path, 0);
            Ok(self.wrap_writer(st, w, id, path))
        })
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.op(OpClass::Metadata, "open for append", path, |inner, st| {
            let w = inner.open_append(path)?;
            let id = match st.paths.get(path) {
                Some(&id) => id,
                None => self.track_new(st, path, w.len()),
            };
            Ok(self.wrap_writer(st, w, id, path))
        })
    }

    fn open_read(&self, path: &Path, opts: ReadOptions) -> Result<Arc<dyn RandomAccessFile>> {
        self.op(OpClass::Metadata, "open for read", path, |inner, st| {
            let f = inner.open_read(path, opts)?;
            Ok(Arc::new(FaultReadable {
                fs: self.clone(),
                inner: f,
                generation: st.generation,
                path: path.to_path_buf(),
            }) as Arc<dyn RandomAccessFile>)
        })
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.op(OpClass::Metadata, "stat", path, |inner, _| inner.file_size(path))
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        self.op(OpClass::Metadata, "stat", path, |inner, _| inner.exists(path))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.op(OpClass::Metadata, "rename", from, |inner, st| {
            let displaced = if inner.exists(to)? {
                Some(st.durable_contents(inner, to)?)
            } else {
                None
            };
            inner.rename(from, to)?;
            st.paths.remove(to);
            if let Some(id) = st.paths.remove(from) {
                st.paths.insert(to.to_path_buf(), id);
            }
            st.pending.push(DirOp::Renamed {
                from: from.to_path_buf(),
                to: to.to_path_buf(),
                displaced,
            });
            Ok(())
        })
    }

    fn remove_file(&self, path: &Path) -> Result<()> {
        self.op(OpClass::Metadata, "remove", path, |inner, st| {
            let durable = st.durable_contents(inner, path)?;
            inner.remove_file(path)?;
            st.paths.remove(path);
            st.pending.push(DirOp::Removed {
                path: path.to_path_buf(),
                durable,
            });
            Ok(())
        })
    }

    fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        self.op(OpClass::Metadata, "truncate", path, |inner, st| {
            inner.truncate(path, len)?;
            if let Some(t) = st.paths.get(path).and_then(|id| st.files.get_mut(id)) {
                t.len = len;
                t.synced = t.synced.min(len);
            }
            Ok(())
        })
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.op(OpClass::Metadata, "list", dir, |inner, _| inner.list(dir))
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        // Directory creation is treated as durable at once (the engine syncs the parent anyway).
        self.op(OpClass::Metadata, "create dir", dir, |inner, _| {
            inner.create_dir_all(dir)
        })
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.op(OpClass::Sync, "fsync dir", dir, |inner, st| {
            inner.sync_dir(dir)?;
            st.pending.retain(|op| op.dir() != dir);
            Ok(())
        })
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.op(OpClass::Metadata, "lock", path, |inner, _| inner.lock(path))
    }
}

/// Whether file name `name` matches `pattern`: a prefix, or `before*after`.
fn name_matches(name: &str, pattern: &str) -> bool {
    match pattern.split_once('*') {
        Some((before, after)) => {
            name.len() >= before.len() + after.len() && name.starts_with(before) && name.ends_with(after)
        }
        None => name.starts_with(pattern),
    }
}

#[derive(Debug)]
struct FaultWritable {
    fs: FaultFs,
    slot: WriterSlot,
    id: u64,
    generation: u64,
    path: PathBuf,
}

impl FaultWritable {
    fn with<T>(
        &self,
        class: OpClass,
        op: &'static str,
        f: impl FnOnce(&mut dyn WritableFile, &mut State, Option<FaultKind>) -> Result<T>,
    ) -> Result<T> {
        let _gate = self.fs.shared.gate.read();
        let mut st = self.fs.shared.state.lock();
        if st.dead || st.generation != self.generation {
            return Err(injected(
                op,
                &self.path,
                io::ErrorKind::Other,
                "handle from before a crash",
            ));
        }
        let fault = st.check(class, op, &self.path);
        let mut slot = self.slot.lock();
        let w = slot
            .as_deref_mut()
            .ok_or_else(|| injected(op, &self.path, io::ErrorKind::Other, "closed by crash"))?;
        f(w, &mut st, fault)
    }
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let (id, path) = (self.id, self.path.clone());
        self.with(OpClass::Write, "append", |w, st, fault| {
            let written: Vec<u8>;
            let (bytes, result) = match fault {
                None => (data, Ok(())),
                Some(FaultKind::Short) => (
                    &data[..data.len() / 2],
                    Err(fault_error("append", &path, FaultKind::Short)),
                ),
                Some(FaultKind::FlipBytes) if !data.is_empty() => {
                    let mut v = data.to_vec();
                    let i = st.rng.gen_range(0..v.len());
                    v[i] ^= 1 << st.rng.gen_range(0..8);
                    written = v;
                    (&written[..], Ok(()))
                }
                Some(FaultKind::FlipBytes) => (data, Ok(())),
                Some(k) => return Err(fault_error("append", &path, k)),
            };
            w.append(bytes)?;
            if let Some(t) = st.files.get_mut(&id) {
                t.len += bytes.len() as u64;
            }
            result
        })
    }

    fn flush(&mut self) -> Result<()> {
        let path = self.path.clone();
        self.with(OpClass::Write, "flush", |w, _, fault| match fault {
            None | Some(FaultKind::FlipBytes) => w.flush(),
            Some(k) => Err(fault_error("flush", &path, k)),
        })
    }

    fn sync_data(&mut self) -> Result<()> {
        self.sync("fdatasync", false)
    }

    fn sync_all(&mut self) -> Result<()> {
        self.sync("fsync", true)
    }

    fn len(&self) -> u64 {
        self.slot.lock().as_ref().map_or(0, |w| w.len())
    }
}

impl FaultWritable {
    fn sync(&mut self, op: &'static str, all: bool) -> Result<()> {
        let (id, path) = (self.id, self.path.clone());
        self.with(OpClass::Sync, op, |w, st, fault| {
            if let Some(k) = fault {
                return Err(fault_error(op, &path, k));
            }
            if all {
                w.sync_all()?;
            } else {
                w.sync_data()?;
            }
            if let Some(t) = st.files.get_mut(&id) {
                t.synced = t.len;
            }
            Ok(())
        })
    }
}

#[derive(Debug)]
struct FaultReadable {
    fs: FaultFs,
    inner: Arc<dyn RandomAccessFile>,
    generation: u64,
    path: PathBuf,
}

impl RandomAccessFile for FaultReadable {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let _gate = self.fs.shared.gate.read();
        let mut st = self.fs.shared.state.lock();
        if st.dead || st.generation != self.generation {
            return Err(injected(
                "read",
                &self.path,
                io::ErrorKind::Other,
                "handle from before a crash",
            ));
        }
        match st.check(OpClass::Read, "read", &self.path) {
            None => {
                drop(st);
                self.inner.read_exact_at(offset, buf)
            }
            Some(FaultKind::FlipBytes) => {
                self.inner.read_exact_at(offset, buf)?;
                if !buf.is_empty() {
                    let i = st.rng.gen_range(0..buf.len());
                    buf[i] ^= 1 << st.rng.gen_range(0..8);
                }
                Ok(())
            }
            Some(k) => Err(fault_error("read", &self.path, k)),
        }
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn is_direct(&self) -> bool {
        self.inner.is_direct()
    }
}
