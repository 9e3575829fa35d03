"""cairn: an embedded, read-optimized, memory-adaptive LSM-tree key-value engine.

    import cairn
    with cairn.open("/tmp/db", memory={"budget": "64MiB"}) as db:
        db[b"k"] = b"v"
        for k, v in db.items(start=b"a", end=b"z"):
            ...

Keys and values are bytes-like (bytes, bytearray, memoryview); a str raises TypeError.
Every engine call releases the GIL, so threads read and write in parallel.

Transactions commit at the end of a `with` block and roll back when it raises:

    with db.transaction() as tx:
        tx[b"a"] = b"1"

or, retried on conflicts: `cairn.transact(db, lambda tx: ...)`.
"""

from typing import Any, Callable, TypeVar

from ._native import (
    Batch,
    ConflictError,
    CorruptionError,
    Db,
    DeadlockError,
    Error,
    InvalidArgumentError,
    IoError,
    Iterator,
    LockedError,
    LockTimeoutError,
    ReadOnlyError,
    Snapshot,
    Transaction,
    TransactionIterator,
    Tree,
    TreeDroppedError,
    open,
    restore,
)

_R = TypeVar("_R")


def transact(db: Db, fn: Callable[[Transaction], _R], attempts: int = 16, **options: Any) -> _R:
    """Runs `fn(tx)` in a transaction of `db` (`options`: those of `db.transaction`) and
    commits it; on a conflict or deadlock runs it again in a new transaction, up to `attempts`
    times in all, and raises the last error after that. Returns what `fn` returned. `fn` may
    run more than once: it should do nothing outside the transaction it is given."""
    if attempts < 1:
        raise InvalidArgumentError(f"attempts = {attempts}: at least 1")
    for attempt in range(attempts):
        tx = db.transaction(**options)
        try:
            result = fn(tx)
            tx.commit()
            return result
        except (ConflictError, DeadlockError):
            tx.rollback()
            if attempt == attempts - 1:
                raise
        except BaseException:
            tx.rollback()
            raise
    raise AssertionError("unreachable")

__all__ = [
    "Batch",
    "ConflictError",
    "CorruptionError",
    "Db",
    "DeadlockError",
    "Error",
    "InvalidArgumentError",
    "IoError",
    "Iterator",
    "LockedError",
    "LockTimeoutError",
    "ReadOnlyError",
    "Snapshot",
    "Transaction",
    "TransactionIterator",
    "Tree",
    "TreeDroppedError",
    "open",
    "restore",
    "transact",
]
