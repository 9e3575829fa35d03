//! cairn from Python: the `cairn._native` extension module that the `cairn` package re-exports.
//!
//! Every engine call runs with the interpreter detached (the GIL released), so Python threads
//! read and write in parallel. Keys and values are bytes-like: `bytes` is read in place (it is
//! immutable and kept alive by the caller's reference), `bytearray` and `memoryview` are
//! copied first, and `str` is refused with `TypeError` (an encoding is the caller's choice).

use parking_lot::Mutex;
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyString};
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

mod txn;

create_exception!(cairn, Error, PyException, "Base class of every error cairn raises.");
create_exception!(
    cairn,
    CorruptionError,
    Error,
    "Stored bytes failed a checksum or a structural check."
);
create_exception!(
    cairn,
    InvalidArgumentError,
    Error,
    "An argument or option the engine refuses (the message names it)."
);
create_exception!(cairn, IoError, Error, "An operating-system I/O call failed.");
create_exception!(
    cairn,
    LockedError,
    Error,
    "Another handle or process holds the database directory's lock."
);
create_exception!(
    cairn,
    ReadOnlyError,
    Error,
    "The database writes nothing: opened read-only, or after a failed durable write."
);

create_exception!(
    cairn,
    ConflictError,
    Error,
    "A transaction's commit was refused: something it read changed meanwhile (nothing was written; run it again)."
);
create_exception!(
    cairn,
    TreeDroppedError,
    Error,
    "The tree was dropped (Db.drop_tree): its handles read and write nothing."
);
create_exception!(
    cairn,
    LockTimeoutError,
    Error,
    "A pessimistic transaction waited for a key's lock longer than its lock_timeout."
);
create_exception!(
    cairn,
    DeadlockError,
    Error,
    "A pessimistic transaction's lock request would have closed a cycle of waiting transactions."
);

/// The Python exception for an engine error.
fn err(e: cairn::Error) -> PyErr {
    let msg = e.to_string();
    match e {
        cairn::Error::Corruption { .. } => CorruptionError::new_err(msg),
        cairn::Error::InvalidArgument(_) | cairn::Error::InvalidOptions { .. } => InvalidArgumentError::new_err(msg),
        cairn::Error::Io { .. } => IoError::new_err(msg),
        cairn::Error::Locked(_) => LockedError::new_err(msg),
        cairn::Error::ReadOnly | cairn::Error::Poisoned(_) => ReadOnlyError::new_err(msg),
        cairn::Error::Conflict { .. } => ConflictError::new_err(msg),
        cairn::Error::TreeDropped { .. } => TreeDroppedError::new_err(msg),
        cairn::Error::LockTimeout { .. } => LockTimeoutError::new_err(msg),
        cairn::Error::Deadlock { .. } => DeadlockError::new_err(msg),
        _ => Error::new_err(msg),
    }
}

/// A dict of `obj`'s named fields.
macro_rules! fields {
    ($py:expr, $obj:expr, $($f:ident),* $(,)?) => {{
        let d = PyDict::new($py);
        $(d.set_item(stringify!($f), $obj.$f)?;)*
        d
    }};
}

fn closed() -> PyErr {
    Error::new_err("the database is closed")
}

fn spent_batch() -> PyErr {
    Error::new_err("the batch was already written or discarded")
}

/// The bytes of a bytes-like `obj` (`what` names it in the error).
fn bytes_like<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Cow::Owned(b.to_vec()));
    }
    if obj.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be bytes-like (bytes, bytearray, memoryview), not str: encode it first"
        )));
    }
    if obj.hasattr("tobytes")? && obj.get_type().name()? == "memoryview" {
        let b = obj.call_method0("tobytes")?;
        return Ok(Cow::Owned(b.cast::<PyBytes>()?.as_bytes().to_vec()));
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be bytes-like (bytes, bytearray, memoryview), not {}",
        obj.get_type().name()?
    )))
}

fn optional_bytes<'a>(obj: Option<&'a Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Cow<'a, [u8]>>> {
    obj.filter(|o| !o.is_none()).map(|o| bytes_like(o, what)).transpose()
}

/// An option's value as `Options::set` takes it.
fn option_value(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(b) = v.extract::<bool>() {
        return Ok(b.to_string());
    }
    if v.is_instance_of::<PyString>() {
        return v.extract::<String>();
    }
    if let Ok(i) = v.extract::<i64>() {
        return Ok(i.to_string());
    }
    if let Ok(f) = v.extract::<f64>() {
        return Ok(f.to_string());
    }
    Err(PyTypeError::new_err(format!(
        "option values are str, int, float or bool, not {}",
        v.get_type().name()?
    )))
}

/// The key range of an iteration: `[start, end)`, either end open when `None`.
type Bounds = (Option<Vec<u8>>, Option<Vec<u8>>);

fn bounds(start: Option<&Bound<'_, PyAny>>, end: Option<&Bound<'_, PyAny>>) -> PyResult<Bounds> {
    Ok((
        optional_bytes(start, "start")?.map(Cow::into_owned),
        optional_bytes(end, "end")?.map(Cow::into_owned),
    ))
}

/// `b` as the engine's range bounds.
fn key_range((start, end): &Bounds) -> (std::ops::Bound<&[u8]>, std::ops::Bound<&[u8]>) {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    (
        start.as_deref().map_or(Unbounded, Included),
        end.as_deref().map_or(Unbounded, Excluded),
    )
}

/// What an iterator yields.
#[derive(Clone, Copy, Debug)]
enum Yield {
    Items,
    Keys,
    Values,
}

/// Entries an iterator reads ahead per engine call: the GIL is released once per run of them,
/// not once per entry (a release and re-acquire costs about as much as a cached step).
const READ_AHEAD: usize = 64;

/// A lazy iteration over a key range, in either direction: reads `READ_AHEAD` entries at a
/// time with the GIL released.
#[pyclass(module = "cairn", name = "Iterator")]
struct RangeIter {
    state: Mutex<IterState>,
    what: Yield,
    reverse: bool,
}

struct IterState {
    /// `None` once exhausted (the view it held is released).
    range: Option<cairn::Range>,
    ahead: std::collections::VecDeque<cairn::Result<(Vec<u8>, Vec<u8>)>>,
}

#[pymethods]
impl RangeIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        // An entry read ahead is taken without releasing the GIL, by a lock that never waits
        // (a thread waiting for the lock while holding the GIL could deadlock with the one
        // holding it while waiting for the GIL); reading more, or a busy lock, releases it.
        let ready = self.state.try_lock().and_then(|mut st| st.ahead.pop_front());
        let next = ready.or_else(|| {
            py.detach(|| {
                let mut st = self.state.lock();
                let st = &mut *st;
                if st.ahead.is_empty() {
                    while let Some(r) = st.range.as_mut() {
                        match if self.reverse { r.next_back() } else { r.next() } {
                            Some(item) => st.ahead.push_back(item),
                            None => st.range = None,
                        }
                        if st.ahead.len() >= READ_AHEAD {
                            break;
                        }
                    }
                }
                st.ahead.pop_front()
            })
        });
        let Some(item) = next else { return Ok(None) };
        let (k, v) = item.map_err(err)?;
        Ok(Some(match self.what {
            Yield::Items => (PyBytes::new(py, &k), PyBytes::new(py, &v))
                .into_pyobject(py)?
                .into_any()
                .unbind(),
            Yield::Keys => PyBytes::new(py, &k).into_any().unbind(),
            Yield::Values => PyBytes::new(py, &v).into_any().unbind(),
        }))
    }
}

impl RangeIter {
    fn new(range: cairn::Range, what: Yield, reverse: bool) -> Self {
        RangeIter {
            state: Mutex::new(IterState {
                range: Some(range),
                ahead: Default::default(),
            }),
            what,
            reverse,
        }
    }
}

fn iter(py: Python<'_>, tree: &cairn::Tree, b: Bounds, what: Yield, reverse: bool) -> RangeIter {
    RangeIter::new(py.detach(|| tree.range::<&[u8], _>(key_range(&b))), what, reverse)
}

/// One tree of a database, with the dict protocol (`db.tree(name)`). `Db` is the default tree.
#[pyclass(module = "cairn", name = "Tree", subclass, frozen)]
struct Tree {
    tree: cairn::Tree,
    /// Set by `Db.close()`, shared by the database's trees.
    closed: Arc<AtomicBool>,
}

thread_local! {
    /// Where a get's value lands before it is copied into a Python `bytes`: one allocation
    /// per get instead of two.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Tree {
    /// Runs `f` on the tree with the GIL released.
    fn run<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&cairn::Tree) -> cairn::Result<R> + Send) -> PyResult<R> {
        let t = self.handle()?;
        py.detach(|| f(t)).map_err(err)
    }

    fn handle(&self) -> PyResult<&cairn::Tree> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        Ok(&self.tree)
    }

    /// The value of `key` as `bytes`, or `None`.
    fn lookup(&self, py: Python<'_>, key: &[u8]) -> PyResult<Option<Py<PyBytes>>> {
        SCRATCH.with(|buf| {
            let mut buf = buf.borrow_mut();
            let buf = &mut *buf;
            let found = self.run(py, |t| t.get_into(key, buf))?;
            Ok(found.then(|| PyBytes::new(py, buf).unbind()))
        })
    }
}

#[pymethods]
impl Tree {
    /// The tree's name (`"default"` for the database itself).
    #[getter]
    fn name(&self) -> PyResult<String> {
        Ok(self.handle()?.name().to_owned())
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyBytes>> {
        let k = bytes_like(key, "key")?;
        match self.lookup(py, &k)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(PyBytes::new(py, &k).unbind())),
        }
    }

    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (k, v) = (bytes_like(key, "key")?, bytes_like(value, "value")?);
        self.run(py, |t| t.put(&k, &v))
    }

    /// Deletes `key`; `KeyError` when it is absent (checked by a read first, so a concurrent
    /// writer may make the two disagree).
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_like(key, "key")?;
        let found = self.run(py, |t| {
            let found = t.get(&k)?.is_some();
            if found {
                t.delete(&k)?;
            }
            Ok(found)
        })?;
        if found {
            Ok(())
        } else {
            Err(PyKeyError::new_err(PyBytes::new(py, &k).unbind()))
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = bytes_like(key, "key")?;
        SCRATCH.with(|buf| {
            let buf = &mut *buf.borrow_mut();
            self.run(py, |t| t.get_into(&k, buf))
        })
    }

    /// The value of `key`, or `default` when it is absent.
    #[pyo3(signature = (key, default = None))]
    fn get(&self, py: Python<'_>, key: &Bound<'_, PyAny>, default: Option<Py<PyAny>>) -> PyResult<Py<PyAny>> {
        let k = bytes_like(key, "key")?;
        Ok(match self.lookup(py, &k)? {
            Some(v) => v.into_any(),
            None => default.unwrap_or_else(|| py.None()),
        })
    }

    /// The values of `keys` (`None` for an absent key), in order, read with one release of the
    /// GIL: what lets reader threads run in parallel when each key costs less than a GIL
    /// hand-off.
    fn get_many<'py>(&self, py: Python<'py>, keys: &Bound<'py, PyAny>) -> PyResult<Vec<Option<Bound<'py, PyBytes>>>> {
        let ks: Vec<Vec<u8>> = keys
            .try_iter()?
            .map(|k| Ok(bytes_like(&k?, "key")?.into_owned()))
            .collect::<PyResult<_>>()?;
        let vals = self.run(py, |t| t.multi_get(&ks))?;
        Ok(vals.into_iter().map(|v| v.map(|v| PyBytes::new(py, &v))).collect())
    }

    /// Writes `value` under `key`; with `ttl` (seconds), the value expires after it.
    #[pyo3(signature = (key, value, ttl = None))]
    fn put(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>, ttl: Option<f64>) -> PyResult<()> {
        let Some(ttl) = ttl else {
            return self.__setitem__(py, key, value);
        };
        let ttl = std::time::Duration::try_from_secs_f64(ttl)
            .map_err(|e| InvalidArgumentError::new_err(format!("ttl = {ttl}: {e}")))?;
        let (k, v) = (bytes_like(key, "key")?, bytes_like(value, "value")?);
        self.run(py, |t| t.put_with_ttl(&k, &v, ttl))
    }

    /// Adds a merge operand for `key` (the database needs a merge operator, e.g.
    /// `merge={"operator": "uint64add"}`).
    fn merge(&self, py: Python<'_>, key: &Bound<'_, PyAny>, operand: &Bound<'_, PyAny>) -> PyResult<()> {
        let (k, v) = (bytes_like(key, "key")?, bytes_like(operand, "operand")?);
        self.run(py, |t| t.merge(&k, &v))
    }

    /// Deletes `key` (nothing happens when it is absent).
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_like(key, "key")?;
        self.run(py, |t| t.delete(&k))
    }

    /// Deletes every key in `[start, end)`.
    fn delete_range(&self, py: Python<'_>, start: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>) -> PyResult<()> {
        let (s, e) = (bytes_like(start, "start")?, bytes_like(end, "end")?);
        self.run(py, |t| t.delete_range(&s, &e))
    }

    /// `(key, value)` pairs of `[start, end)` in key order (`reverse`: descending), lazily.
    #[pyo3(signature = (start = None, end = None, reverse = false))]
    fn items(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<RangeIter> {
        Ok(iter(py, self.handle()?, bounds(start, end)?, Yield::Items, reverse))
    }

    /// The keys of `[start, end)`, lazily.
    #[pyo3(signature = (start = None, end = None, reverse = false))]
    fn keys(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<RangeIter> {
        Ok(iter(py, self.handle()?, bounds(start, end)?, Yield::Keys, reverse))
    }

    /// The values of `[start, end)`, lazily.
    #[pyo3(signature = (start = None, end = None, reverse = false))]
    fn values(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<RangeIter> {
        Ok(iter(py, self.handle()?, bounds(start, end)?, Yield::Values, reverse))
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<RangeIter> {
        Ok(iter(py, self.handle()?, (None, None), Yield::Keys, false))
    }

    /// Flushes the tree's memtables to tables.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, cairn::Tree::flush)
    }

    /// Compacts the tables overlapping `[start, end)` (the whole tree by default).
    #[pyo3(signature = (start = None, end = None))]
    fn compact(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let b = bounds(start, end)?;
        self.run(py, |t| t.compact_range::<&[u8], _>(key_range(&b)))
    }
}

/// A database (`cairn.open`): the default tree, plus trees, batches, snapshots and reports.
#[pyclass(module = "cairn", name = "Db", extends = Tree, frozen)]
struct Db {
    db: cairn::Db,
    closed: Arc<AtomicBool>,
}

impl Db {
    fn handle(&self) -> PyResult<&cairn::Db> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed());
        }
        Ok(&self.db)
    }
}

#[pymethods]
impl Db {
    /// The tree named `name`, created if missing.
    fn tree(&self, py: Python<'_>, name: &str) -> PyResult<Tree> {
        let db = self.handle()?;
        let t = py.detach(|| db.tree(name)).map_err(err)?;
        Ok(Tree {
            tree: t,
            closed: self.closed.clone(),
        })
    }

    /// Drops the tree named `name` and everything in it, durably; its handles then raise
    /// `TreeDroppedError`, and a tree created later under the name starts empty.
    fn drop_tree(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.drop_tree(name)).map_err(err)
    }

    /// Names of every tree.
    fn tree_names(&self) -> PyResult<Vec<String>> {
        Ok(self.handle()?.tree_names())
    }

    /// A batch written atomically when its `with` block ends normally, dropped when it raises.
    fn batch(&self) -> PyResult<Batch> {
        Ok(Batch {
            db: self.handle()?.clone(),
            batch: Mutex::new(Some(cairn::WriteBatch::new())),
        })
    }

    /// A transaction: reads see the database as of now plus the transaction's own writes;
    /// `with db.transaction() as tx:` commits at the end of the block (`ConflictError` when
    /// something it read changed) and rolls back when the block raises. `isolation`:
    /// "serializable" or "snapshot"; `pessimistic` locks keys at their first write or
    /// `get_for_update` (waiting up to `lock_timeout` seconds); `sync` makes the commit durable
    /// against power loss.
    #[pyo3(signature = (isolation = "serializable", pessimistic = false, lock_timeout = 1.0, sync = false))]
    fn transaction(
        &self,
        py: Python<'_>,
        isolation: &str,
        pessimistic: bool,
        lock_timeout: f64,
        sync: bool,
    ) -> PyResult<txn::Transaction> {
        let db = self.handle()?;
        let opts = txn::options(isolation, pessimistic, lock_timeout, sync)?;
        Ok(py.detach(|| txn::Transaction::new(db, &opts)))
    }

    /// A consistent read view of every tree as of now, held until it is closed or collected.
    fn snapshot(&self, py: Python<'_>) -> PyResult<Snapshot> {
        let db = self.handle()?;
        let snap = py.detach(|| db.snapshot());
        Ok(Snapshot {
            default: (**db).clone(),
            snap: Mutex::new(Some(Arc::new(snap))),
        })
    }

    /// The engine's counters as nested dicts of numbers: `io` and `compaction_io` (per block
    /// kind: reads, bytes, cache hits, ghost hits), write and stall totals, the cache, and per
    /// tree its operations and per level its probes, filter outcomes, reads and compactions.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let db = self.handle()?;
        let s = py.detach(|| db.stats());
        stats_dict(py, &s)
    }

    /// A report by name (`cairn.stats`, `cairn.filters`, `cairn.tuner`, ...); `None` when
    /// unknown.
    fn property(&self, py: Python<'_>, name: &str) -> PyResult<Option<String>> {
        let db = self.handle()?;
        Ok(py.detach(|| db.property(name)))
    }

    /// Flushes every tree's memtables.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let db = self.handle()?;
        py.detach(|| db.flush_all()).map_err(err)
    }

    /// Writes a consistent copy of the database into the new directory `path` (tables hard
    /// linked where the file system allows); returns what it did as a dict.
    fn checkpoint<'py>(&self, py: Python<'py>, path: std::path::PathBuf) -> PyResult<Bound<'py, PyDict>> {
        let db = self.handle()?;
        let c = py.detach(|| db.checkpoint(&path)).map_err(err)?;
        Ok(fields!(
            py,
            c,
            tables,
            linked,
            bytes_copied,
            last_seqno,
            writer_pause_micros
        ))
    }

    /// Backs the database up into `path` as its next numbered backup, copying only the tables
    /// earlier backups there lack (writes go on meanwhile); returns what it did as a dict.
    /// `cairn.restore` brings the newest back.
    fn backup<'py>(&self, py: Python<'py>, path: std::path::PathBuf) -> PyResult<Bound<'py, PyDict>> {
        let db = self.handle()?;
        let b = py.detach(|| db.backup(&path)).map_err(err)?;
        Ok(fields!(
            py,
            b,
            id,
            tables,
            tables_shared,
            bytes_copied,
            last_seqno,
            writer_pause_micros
        ))
    }

    /// Stops background work, syncs the log and releases the directory; later calls raise
    /// `cairn.Error`. Iterators and snapshots still open keep the engine alive until they go.
    fn close(slf: PyRef<'_, Self>, py: Python<'_>) -> PyResult<()> {
        if slf.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let db = slf.db.clone();
        py.detach(|| db.close()).map_err(err)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(slf: PyRef<'_, Self>, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        Db::close(slf, py)?;
        Ok(false)
    }
}

fn io_dict<'py>(py: Python<'py>, io: &cairn::stats::IoSnapshot) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, k) in [
        ("data", io.data),
        ("index", io.index),
        ("filter", io.filter),
        ("range_filter", io.range_filter),
        ("properties", io.properties),
        ("meta", io.meta),
    ] {
        d.set_item(name, fields!(py, k, reads, bytes, cache_hits, ghost_hits))?;
    }
    let ra = &io.readahead;
    d.set_item("readahead", fields!(py, ra, chunks, bytes, served, blocks))?;
    d.set_item("bytes_written", io.bytes_written)?;
    d.set_item("syncs", io.syncs)?;
    Ok(d)
}

fn stats_dict<'py>(py: Python<'py>, s: &cairn::stats::DbStats) -> PyResult<Bound<'py, PyDict>> {
    let d = fields!(
        py,
        s,
        user_write_ops,
        user_bytes_written,
        wal_bytes_written,
        flush_bytes_written,
        compaction_bytes_written,
        stall_slowdowns,
        stall_stops,
        stall_micros,
        delay_micros,
        delayed_write_rate,
        pending_compaction_bytes,
        l0_files,
        l0_groups,
        memtable_bytes,
        cache_usage,
        cache_capacity,
    );
    d.set_item("io", io_dict(py, &s.io)?)?;
    d.set_item("compaction_io", io_dict(py, &s.compaction_io)?)?;
    let kv = &s.kv_cache;
    d.set_item(
        "kv_cache",
        fields!(
            py,
            kv,
            capacity,
            usage,
            entries,
            hits,
            negative_hits,
            misses,
            fills,
            refused
        ),
    )?;
    let tx = &s.transactions;
    d.set_item(
        "transactions",
        fields!(
            py,
            tx,
            commits,
            conflicts,
            rollbacks,
            lock_waits,
            lock_timeouts,
            deadlocks
        ),
    )?;
    let rb = &s.range_builds;
    d.set_item(
        "range_builds",
        fields!(py, rb, bits_per_key, built, filter_bytes, failed, misfits, read_bytes),
    )?;
    let trees = PyDict::new(py);
    for t in &s.trees {
        let td = fields!(
            py,
            t,
            gets,
            ranges,
            memtable_hits,
            flush_bytes,
            switched_for_memory,
            switched_for_log,
            expired,
            filter_removed,
            filter_changed,
        );
        let levels = t
            .levels
            .iter()
            .map(|l| {
                Ok(fields!(
                    py,
                    l,
                    probes,
                    filter_units_probed,
                    filter_negatives,
                    filter_false_positives,
                    found,
                    data_reads,
                    data_cache_hits,
                    unnecessary_data_reads,
                    compactions,
                    compaction_bytes_read,
                    compaction_bytes_written,
                    moves,
                    range_probes,
                    range_negatives,
                ))
            })
            .collect::<PyResult<Vec<_>>>()?;
        td.set_item("levels", levels)?;
        let sc = &t.scans;
        td.set_item(
            "scans",
            fields!(py, sc, seeks, entries, memtables, l0_runs, levels, tables),
        )?;
        trees.set_item(&t.name, td)?;
    }
    d.set_item("trees", trees)?;
    Ok(d)
}

/// Writes collected in a `with db.batch() as b:` block.
#[pyclass(module = "cairn", name = "Batch", frozen)]
struct Batch {
    db: cairn::Db,
    batch: Mutex<Option<cairn::WriteBatch>>,
}

impl Batch {
    fn add(&self, f: impl FnOnce(&mut cairn::WriteBatch)) -> PyResult<()> {
        let mut b = self.batch.lock();
        let b = b.as_mut().ok_or_else(spent_batch)?;
        f(b);
        Ok(())
    }
}

/// A read's answer for Python: its value as `bytes`, or `default`.
fn value_or(py: Python<'_>, v: Option<Vec<u8>>, default: Option<Py<PyAny>>) -> Py<PyAny> {
    match v {
        Some(v) => PyBytes::new(py, &v).into_any().unbind(),
        None => default.unwrap_or_else(|| py.None()),
    }
}

/// The tree a batch or snapshot call names, `default` when none.
fn tree_of(tree: Option<&Bound<'_, Tree>>, default: &cairn::Tree) -> PyResult<cairn::Tree> {
    match tree {
        Some(t) => t.get().handle().cloned(),
        None => Ok(default.clone()),
    }
}

#[pymethods]
impl Batch {
    /// Adds a put of `key` (in `tree`, default: the database's default tree).
    #[pyo3(signature = (key, value, tree = None))]
    fn put(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>, tree: Option<&Bound<'_, Tree>>) -> PyResult<()> {
        let (k, v, t) = (
            bytes_like(key, "key")?,
            bytes_like(value, "value")?,
            tree_of(tree, &self.db)?,
        );
        self.add(|b| {
            b.put_in(&t, &k, &v);
        })
    }

    /// Adds a delete of `key`.
    #[pyo3(signature = (key, tree = None))]
    fn delete(&self, key: &Bound<'_, PyAny>, tree: Option<&Bound<'_, Tree>>) -> PyResult<()> {
        let (k, t) = (bytes_like(key, "key")?, tree_of(tree, &self.db)?);
        self.add(|b| {
            b.delete_in(&t, &k);
        })
    }

    /// Adds a delete of every key in `[start, end)`.
    #[pyo3(signature = (start, end, tree = None))]
    fn delete_range(
        &self,
        start: &Bound<'_, PyAny>,
        end: &Bound<'_, PyAny>,
        tree: Option<&Bound<'_, Tree>>,
    ) -> PyResult<()> {
        let (s, e, t) = (
            bytes_like(start, "start")?,
            bytes_like(end, "end")?,
            tree_of(tree, &self.db)?,
        );
        self.add(|b| {
            b.delete_range_in(&t, &s, &e);
        })
    }

    /// Adds a merge operand for `key` (the database needs a merge operator).
    #[pyo3(signature = (key, operand, tree = None))]
    fn merge(
        &self,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        tree: Option<&Bound<'_, Tree>>,
    ) -> PyResult<()> {
        let (k, v, t) = (
            bytes_like(key, "key")?,
            bytes_like(operand, "operand")?,
            tree_of(tree, &self.db)?,
        );
        self.add(|b| {
            b.merge_in(&t, &k, &v);
        })
    }

    /// Writes the batch now (atomically); it can take nothing more afterwards.
    fn write(&self, py: Python<'_>) -> PyResult<()> {
        let b = self.batch.lock().take().ok_or_else(spent_batch)?;
        py.detach(|| self.db.write(b, &cairn::WriteOptions::default()))
            .map_err(err)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Writes the batch when the block ended normally, drops it when it raised.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some_and(|t| !t.is_none()) {
            self.batch.lock().take();
        } else {
            self.write(py)?;
        }
        Ok(false)
    }
}

/// A consistent read view (`db.snapshot()`); a context manager that releases it on exit.
#[pyclass(module = "cairn", name = "Snapshot", frozen)]
struct Snapshot {
    /// The database's default tree (what calls without `tree` read).
    default: cairn::Tree,
    /// Locked only briefly, never across a GIL release (a holder waiting for the GIL could
    /// deadlock with a thread holding the GIL while waiting for the lock).
    snap: Mutex<Option<Arc<cairn::Snapshot>>>,
}

impl Snapshot {
    fn view(&self) -> PyResult<Arc<cairn::Snapshot>> {
        self.snap
            .lock()
            .clone()
            .ok_or_else(|| Error::new_err("the snapshot was released"))
    }
}

#[pymethods]
impl Snapshot {
    /// The value of `key` in the view (in `tree`), or `default`.
    #[pyo3(signature = (key, default = None, tree = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
        tree: Option<&Bound<'_, Tree>>,
    ) -> PyResult<Py<PyAny>> {
        let (k, t) = (bytes_like(key, "key")?, tree_of(tree, &self.default)?);
        let s = self.view()?;
        let v = py.detach(|| s.get_in(&t, &k)).map_err(err)?;
        Ok(value_or(py, v, default))
    }

    /// `(key, value)` pairs of `[start, end)` as of the view, lazily.
    #[pyo3(signature = (start = None, end = None, reverse = false, tree = None))]
    fn items(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        tree: Option<&Bound<'_, Tree>>,
    ) -> PyResult<RangeIter> {
        let (b, t) = (bounds(start, end)?, tree_of(tree, &self.default)?);
        let s = self.view()?;
        let range = py.detach(|| s.range_in::<&[u8], _>(&t, key_range(&b)));
        Ok(RangeIter::new(range, Yield::Items, reverse))
    }

    /// Releases the view (compactions may then drop the versions it held).
    fn close(&self) {
        self.snap.lock().take();
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }
}

/// Opens (creating if missing) the database at `path`, with options by the names
/// `Options::set` takes: a dict per group (`memory={"budget": "1GiB"}`), `group__setting`
/// keywords (`memory__budget="1GiB"`), or the names themselves (`**{"memory.budget": 1 << 30}`);
/// `read_only=True` opens an existing database that writes nothing.
#[pyfunction]
#[pyo3(signature = (path, read_only = false, **options))]
fn open(
    py: Python<'_>,
    path: std::path::PathBuf,
    read_only: bool,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<Db>> {
    let mut named = Vec::new();
    for (k, v) in options.into_iter().flat_map(|d| d.iter()) {
        let key: String = k.extract()?;
        match v.cast::<PyDict>() {
            Ok(group) => {
                for (s, v) in group.iter() {
                    named.push((format!("{key}.{}", s.extract::<String>()?), option_value(&v)?));
                }
            }
            Err(_) => named.push((key.replacen("__", ".", 1), option_value(&v)?)),
        }
    }
    let mut o = cairn::Options::default();
    o.set_all(named.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(err)?;
    let db = py
        .detach(|| {
            if read_only {
                cairn::Db::open_read_only(&path, o)
            } else {
                cairn::Db::open(&path, o)
            }
        })
        .map_err(err)?;
    let closed = Arc::new(AtomicBool::new(false));
    let tree = Tree {
        tree: (*db).clone(),
        closed: closed.clone(),
    };
    Py::new(py, PyClassInitializer::from(tree).add_subclass(Db { db, closed }))
}

/// Restores the newest complete backup in `backup_dir` into `db_dir` (new or empty); `open`
/// then opens it. Returns what it did as a dict.
#[pyfunction]
fn restore<'py>(
    py: Python<'py>,
    backup_dir: std::path::PathBuf,
    db_dir: std::path::PathBuf,
) -> PyResult<Bound<'py, PyDict>> {
    let r = py.detach(|| cairn::Db::restore(&backup_dir, &db_dir)).map_err(err)?;
    Ok(fields!(py, r, id, tables, bytes_copied))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(restore, m)?)?;
    m.add_class::<Tree>()?;
    m.add_class::<Db>()?;
    m.add_class::<Batch>()?;
    m.add_class::<Snapshot>()?;
    m.add_class::<RangeIter>()?;
    m.add_class::<txn::Transaction>()?;
    m.add_class::<txn::TransactionIter>()?;
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("CorruptionError", py.get_type::<CorruptionError>())?;
    m.add("InvalidArgumentError", py.get_type::<InvalidArgumentError>())?;
    m.add("IoError", py.get_type::<IoError>())?;
    m.add("LockedError", py.get_type::<LockedError>())?;
    m.add("ReadOnlyError", py.get_type::<ReadOnlyError>())?;
    m.add("ConflictError", py.get_type::<ConflictError>())?;
    m.add("TreeDroppedError", py.get_type::<TreeDroppedError>())?;
    m.add("LockTimeoutError", py.get_type::<LockTimeoutError>())?;
    m.add("DeadlockError", py.get_type::<DeadlockError>())?;
    Ok(())
}
