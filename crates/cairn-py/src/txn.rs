//! Transactions from Python: `with db.transaction() as tx:` commits when the block ends
//! normally and rolls back when it raises. The transaction sits behind a lock taken only with
//! the GIL released (a thread holding the GIL while waiting for it could deadlock with the
//! holder waiting for the GIL).

use super::{bounds, bytes_like, err, tree_of, value_or, Bounds, Tree, Yield, READ_AHEAD};
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::VecDeque;
use std::ops::Bound as KeyBound;

fn finished() -> PyErr {
    super::Error::new_err("the transaction already committed or rolled back")
}

/// A transaction (`db.transaction()`).
#[pyclass(module = "cairn", name = "Transaction", frozen)]
pub(crate) struct Transaction {
    default: cairn::Tree,
    tx: Mutex<Option<cairn::Transaction<'static>>>,
}

impl Transaction {
    pub(crate) fn new(db: &cairn::Db, opts: &cairn::TransactionOptions) -> Self {
        Transaction {
            default: (**db).clone(),
            tx: Mutex::new(Some(db.transaction_with(opts).detach())),
        }
    }

    /// Runs `f` on the open transaction with the GIL released.
    fn run<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut cairn::Transaction<'static>) -> cairn::Result<R> + Send,
    ) -> PyResult<R> {
        py.detach(|| {
            let mut tx = self.tx.lock();
            tx.as_mut().map(f)
        })
        .ok_or_else(finished)?
        .map_err(err)
    }
}

/// `TransactionOptions` from the keywords of `db.transaction()`.
pub(crate) fn options(
    isolation: &str,
    pessimistic: bool,
    lock_timeout: f64,
    sync: bool,
) -> PyResult<cairn::TransactionOptions> {
    let isolation = match isolation {
        "serializable" => cairn::Isolation::Serializable,
        "snapshot" => cairn::Isolation::Snapshot,
        other => {
            return Err(super::InvalidArgumentError::new_err(format!(
                "isolation = {other:?}: expected \"serializable\" or \"snapshot\""
            )))
        }
    };
    let lock_timeout = std::time::Duration::try_from_secs_f64(lock_timeout)
        .map_err(|e| super::InvalidArgumentError::new_err(format!("lock_timeout = {lock_timeout}: {e}")))?;
    Ok(cairn::TransactionOptions {
        isolation,
        concurrency: if pessimistic {
            cairn::Concurrency::Pessimistic
        } else {
            cairn::Concurrency::Optimistic
        },
        lock_timeout,
        write_options: cairn::WriteOptions {
            sync,
            ..Default::default()
        },
    })
}

#[pymethods]
impl Transaction {
    /// The value of `key` (in `tree`) as the transaction sees it, or `default`.
    #[pyo3(signature = (key, default = None, tree = None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
        tree: Option<&Bound<'_, Tree>>,
    ) -> PyResult<Py<PyAny>> {
        let (k, t) = (bytes_like(key, "key")?, tree_of(tree, &self.default)?);
        let v = self.run(py, |tx| tx.get_in(&t, &k))?;
        Ok(value_or(py, v, default))
    }

    /// `get` of a key the transaction means to write: checked at commit under snapshot
    /// isolation too; locked (and read at its newest) by a pessimistic transaction.
    #[pyo3(signature = (key, default = None, tree = None))]
    fn get_for_update(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
        tree: Option<&Bound<'_, Tree>>,
    ) -> PyResult<Py<PyAny>> {
        let (k, t) = (bytes_like(key, "key")?, tree_of(tree, &self.default)?);
        let v = self.run(py, |tx| tx.get_for_update_in(&t, &k))?;
        Ok(value_or(py, v, default))
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let k = bytes_like(key, "key")?;
        let t = self.default.clone();
        match self.run(py, |tx| tx.get_in(&t, &k))? {
            Some(v) => Ok(PyBytes::new(py, &v).into_any().unbind()),
            None => Err(pyo3::exceptions::PyKeyError::new_err(PyBytes::new(py, &k).unbind())),
        }
    }

    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        self.put(py, key, value, None)
    }

    /// Sets `key` (in `tree`) to `value` when the transaction commits.
    #[pyo3(signature = (key, value, tree = None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        tree: Option<&Bound<'_, Tree>>,
    ) -> PyResult<()> {
        let (k, v, t) = (
            bytes_like(key, "key")?,
            bytes_like(value, "value")?,
            tree_of(tree, &self.default)?,
        );
        self.run(py, |tx| tx.put_in(&t, &k, &v))
    }

    /// Deletes `key` (in `tree`) when the transaction commits.
    #[pyo3(signature = (key, tree = None))]
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>, tree: Option<&Bound<'_, Tree>>) -> PyResult<()> {
        let (k, t) = (bytes_like(key, "key")?, tree_of(tree, &self.default)?);
        self.run(py, |tx| tx.delete_in(&t, &k))
    }

    /// Adds a merge operand for `key` (in `tree`).
    #[pyo3(signature = (key, operand, tree = None))]
    fn merge(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        operand: &Bound<'_, PyAny>,
        tree: Option<&Bound<'_, Tree>>,
    ) -> PyResult<()> {
        let (k, v, t) = (
            bytes_like(key, "key")?,
            bytes_like(operand, "operand")?,
            tree_of(tree, &self.default)?,
        );
        self.run(py, |tx| tx.merge_in(&t, &k, &v))
    }

    /// `(key, value)` pairs of `[start, end)` (in `tree`) as the transaction sees them, lazily.
    #[pyo3(signature = (start = None, end = None, reverse = false, tree = None))]
    fn items(
        slf: &Bound<'_, Self>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
        tree: Option<&Bound<'_, Tree>>,
    ) -> PyResult<TransactionIter> {
        let tree = tree_of(tree, &slf.get().default)?;
        Ok(TransactionIter {
            tx: slf.clone().unbind(),
            tree,
            state: Mutex::new(IterState {
                rest: Some(owned_bounds(bounds(start, end)?)),
                ahead: VecDeque::new(),
            }),
            reverse,
            what: Yield::Items,
        })
    }

    /// Marks a savepoint.
    fn set_savepoint(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, |tx| {
            tx.set_savepoint();
            Ok(())
        })
    }

    /// Undoes the writes since the last savepoint.
    fn rollback_to_savepoint(&self, py: Python<'_>) -> PyResult<()> {
        self.run(py, cairn::Transaction::rollback_to_savepoint)
    }

    /// Applies the writes atomically; `cairn.ConflictError` when something the transaction
    /// read changed meanwhile (nothing is written).
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.tx.lock().take().map(cairn::Transaction::commit))
            .ok_or_else(finished)?
            .map_err(err)
    }

    /// Drops the writes (nothing happens if the transaction already ended).
    fn rollback(&self, py: Python<'_>) {
        py.detach(|| drop(self.tx.lock().take()));
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Commits when the block ended normally (unless it already ended), rolls back when it
    /// raised.
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if exc_type.is_some_and(|t| !t.is_none()) {
            self.rollback(py);
        } else if py.detach(|| self.tx.lock().is_some()) {
            self.commit(py)?;
        }
        Ok(false)
    }
}

/// A lazy iteration of a transaction's view: `READ_AHEAD` entries per engine call, each run
/// read by a new engine iterator from just past the last key (the transaction records each
/// run's covered range, so together they cover what was read).
#[pyclass(module = "cairn", name = "TransactionIterator")]
pub(crate) struct TransactionIter {
    tx: Py<Transaction>,
    tree: cairn::Tree,
    state: Mutex<IterState>,
    reverse: bool,
    what: Yield,
}

struct IterState {
    /// What is left to read; `None` once exhausted.
    rest: Option<OwnedBounds>,
    ahead: VecDeque<(Vec<u8>, Vec<u8>)>,
}

/// A key range to read, as the engine's bounds.
type OwnedBounds = (KeyBound<Vec<u8>>, KeyBound<Vec<u8>>);

/// `[start, end)` as owned bounds.
fn owned_bounds((start, end): Bounds) -> OwnedBounds {
    (
        start.map_or(KeyBound::Unbounded, KeyBound::Included),
        end.map_or(KeyBound::Unbounded, KeyBound::Excluded),
    )
}

#[pymethods]
impl TransactionIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let tx = self.tx.get();
        let next = py.detach(|| {
            let mut st = self.state.lock();
            if st.ahead.is_empty() {
                let Some((lo, hi)) = st.rest.clone() else {
                    return Ok(None);
                };
                let mut guard = tx.tx.lock();
                let Some(t) = guard.as_mut() else {
                    return Err(None);
                };
                let mut it = t.range_in(&self.tree, (lo.clone(), hi.clone()));
                let mut got = VecDeque::new();
                for _ in 0..READ_AHEAD {
                    match if self.reverse { it.next_back() } else { it.next() } {
                        Some(Ok(e)) => got.push_back(e),
                        Some(Err(e)) => return Err(Some(e)),
                        None => break,
                    }
                }
                // A full run may have more behind it: the next starts just past its last key.
                st.rest = match got.back() {
                    Some((k, _)) if got.len() == READ_AHEAD && self.reverse => {
                        Some((lo, KeyBound::Excluded(k.clone())))
                    }
                    Some((k, _)) if got.len() == READ_AHEAD => Some((KeyBound::Excluded(k.clone()), hi)),
                    _ => None,
                };
                st.ahead = got;
            }
            Ok(st.ahead.pop_front())
        });
        let (k, v) = match next {
            Ok(Some(e)) => e,
            Ok(None) => return Ok(None),
            Err(None) => return Err(finished()),
            Err(Some(e)) => return Err(err(e)),
        };
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
