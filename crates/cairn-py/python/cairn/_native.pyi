"""Type stubs of the cairn extension module (re-exported by the `cairn` package)."""

from types import TracebackType
from typing import Any, Iterable, Iterator as _Iterator, Optional, Tuple, Type, TypeVar, Union, overload

BytesLike = Union[bytes, bytearray, memoryview]
OptionValue = Union[str, int, float, bool]
_T = TypeVar("_T")

class Error(Exception):
    """Base class of every error cairn raises."""

class CorruptionError(Error):
    """Stored bytes failed a checksum or a structural check."""

class InvalidArgumentError(Error):
    """An argument or option the engine refuses (the message names it)."""

class IoError(Error):
    """An operating-system I/O call failed."""

class LockedError(Error):
    """Another handle or process holds the database directory's lock."""

class ReadOnlyError(Error):
    """The database writes nothing: opened read-only, or after a failed durable write."""

class ConflictError(Error):
    """A transaction's commit was refused: something it read changed meanwhile (nothing was
    written; run it again)."""

class TreeDroppedError(Error):
    """The tree was dropped (Db.drop_tree): its handles read and write nothing."""

class LockTimeoutError(Error):
    """A pessimistic transaction waited for a key's lock longer than its lock_timeout."""

class DeadlockError(Error):
    """A pessimistic transaction's lock request would have closed a cycle of waiting
    transactions."""

class Iterator:
    """A lazy iteration over a key range; each step releases the GIL."""

    def __iter__(self) -> "Iterator": ...
    def __next__(self) -> Any: ...

class Tree:
    """One tree of a database, with the dict protocol. `Db` is the default tree."""

    @property
    def name(self) -> str: ...
    def __getitem__(self, key: BytesLike) -> bytes: ...
    def __setitem__(self, key: BytesLike, value: BytesLike) -> None: ...
    def __delitem__(self, key: BytesLike) -> None: ...
    def __contains__(self, key: BytesLike) -> bool: ...
    def __iter__(self) -> _Iterator[bytes]: ...
    @overload
    def get(self, key: BytesLike) -> Optional[bytes]: ...
    @overload
    def get(self, key: BytesLike, default: _T) -> Union[bytes, _T]: ...
    def get_many(self, keys: Iterable[BytesLike]) -> list[Optional[bytes]]:
        """The values of `keys` in order (None when absent), with one release of the GIL."""
    def put(self, key: BytesLike, value: BytesLike, ttl: Optional[float] = None) -> None:
        """Writes `value` under `key`; with `ttl` (seconds) the value expires after it."""
    def merge(self, key: BytesLike, operand: BytesLike) -> None:
        """Adds a merge operand (the database needs a merge operator, e.g. uint64add)."""
    def delete(self, key: BytesLike) -> None:
        """Deletes `key`; nothing happens when it is absent (`del db[key]` raises KeyError)."""
    def delete_range(self, start: BytesLike, end: BytesLike) -> None:
        """Deletes every key in `[start, end)`."""
    def items(
        self, start: Optional[BytesLike] = None, end: Optional[BytesLike] = None, reverse: bool = False
    ) -> _Iterator[Tuple[bytes, bytes]]:
        """`(key, value)` pairs of `[start, end)` in key order (descending with `reverse`)."""
    def keys(
        self, start: Optional[BytesLike] = None, end: Optional[BytesLike] = None, reverse: bool = False
    ) -> _Iterator[bytes]: ...
    def values(
        self, start: Optional[BytesLike] = None, end: Optional[BytesLike] = None, reverse: bool = False
    ) -> _Iterator[bytes]: ...
    def flush(self) -> None: ...
    def compact(self, start: Optional[BytesLike] = None, end: Optional[BytesLike] = None) -> None: ...

class Batch:
    """Writes collected in a `with db.batch() as b:` block: written atomically when the block
    ends normally, dropped when it raises."""

    def put(self, key: BytesLike, value: BytesLike, tree: Optional[Tree] = None) -> None: ...
    def delete(self, key: BytesLike, tree: Optional[Tree] = None) -> None: ...
    def delete_range(self, start: BytesLike, end: BytesLike, tree: Optional[Tree] = None) -> None: ...
    def merge(self, key: BytesLike, operand: BytesLike, tree: Optional[Tree] = None) -> None: ...
    def write(self) -> None: ...
    def __enter__(self) -> "Batch": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Snapshot:
    """A consistent read view of every tree; released by `close()` or at the end of `with`."""

    @overload
    def get(self, key: BytesLike, *, tree: Optional[Tree] = None) -> Optional[bytes]: ...
    @overload
    def get(self, key: BytesLike, default: _T, tree: Optional[Tree] = None) -> Union[bytes, _T]: ...
    def items(
        self,
        start: Optional[BytesLike] = None,
        end: Optional[BytesLike] = None,
        reverse: bool = False,
        tree: Optional[Tree] = None,
    ) -> _Iterator[Tuple[bytes, bytes]]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Snapshot": ...
    def __exit__(self, *args: Any) -> bool: ...

class TransactionIterator:
    """A lazy iteration of a transaction's view; each run of entries releases the GIL."""

    def __iter__(self) -> "TransactionIterator": ...
    def __next__(self) -> Tuple[bytes, bytes]: ...

class Transaction:
    """Reads see the database as of the transaction's start plus its own writes; `commit`
    applies the writes atomically. A context manager: commits when the block ends normally,
    rolls back when it raises."""

    @overload
    def get(self, key: BytesLike, *, tree: Optional[Tree] = None) -> Optional[bytes]: ...
    @overload
    def get(self, key: BytesLike, default: _T, tree: Optional[Tree] = None) -> Union[bytes, _T]: ...
    @overload
    def get_for_update(self, key: BytesLike, *, tree: Optional[Tree] = None) -> Optional[bytes]: ...
    @overload
    def get_for_update(self, key: BytesLike, default: _T, tree: Optional[Tree] = None) -> Union[bytes, _T]: ...
    def __getitem__(self, key: BytesLike) -> bytes: ...
    def __setitem__(self, key: BytesLike, value: BytesLike) -> None: ...
    def put(self, key: BytesLike, value: BytesLike, tree: Optional[Tree] = None) -> None: ...
    def delete(self, key: BytesLike, tree: Optional[Tree] = None) -> None: ...
    def merge(self, key: BytesLike, operand: BytesLike, tree: Optional[Tree] = None) -> None: ...
    def items(
        self,
        start: Optional[BytesLike] = None,
        end: Optional[BytesLike] = None,
        reverse: bool = False,
        tree: Optional[Tree] = None,
    ) -> TransactionIterator: ...
    def set_savepoint(self) -> None: ...
    def rollback_to_savepoint(self) -> None: ...
    def commit(self) -> None:
        """Applies the writes; `ConflictError` when something the transaction read changed."""
    def rollback(self) -> None: ...
    def __enter__(self) -> "Transaction": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> bool: ...

class Db(Tree):
    """A database: the default tree, plus trees, batches, snapshots and reports."""

    def tree(self, name: str) -> Tree: ...
    def drop_tree(self, name: str) -> None:
        """Drops the tree and everything in it, durably; its handles then raise
        `TreeDroppedError`, and a tree created later under the name starts empty."""
    def tree_names(self) -> list[str]: ...
    def batch(self) -> Batch: ...
    def snapshot(self) -> Snapshot: ...
    def transaction(
        self,
        isolation: str = "serializable",
        pessimistic: bool = False,
        lock_timeout: float = 1.0,
        sync: bool = False,
    ) -> Transaction:
        """A transaction; `isolation` "serializable" or "snapshot"; `pessimistic` locks keys
        at their first write or `get_for_update`, waiting up to `lock_timeout` seconds."""
    def stats(self) -> dict[str, Any]:
        """The engine's counters as nested dicts of numbers (io per block kind and readahead,
        writes, stalls, the cache, range-filter builds, per tree (with its range reads' `scans`)
        and per level)."""
    def property(self, name: str) -> Optional[str]: ...
    def checkpoint(self, path: str) -> dict[str, int]:
        """A consistent copy in the new directory `path` (tables hard linked where possible)."""
    def backup(self, path: str) -> dict[str, int]:
        """The next numbered backup in `path`, copying only tables earlier backups there lack."""
    def close(self) -> None: ...
    def __enter__(self) -> "Db": ...
    def __exit__(self, *args: Any) -> bool: ...

def open(path: str, read_only: bool = False, **options: OptionValue | dict[str, OptionValue]) -> Db:
    """Opens (creating if missing) the database at `path`, with options by the names
    `Options::set` takes: a dict per group (`memory={"budget": "1GiB"}`), `group__setting`
    keywords (`memory__budget="1GiB"`), or the names themselves (`**{"memory.budget": 1 << 30}`);
    `read_only=True` opens an existing database that writes nothing."""

def restore(backup_dir: str, db_dir: str) -> dict[str, int]:
    """Restores the newest complete backup in `backup_dir` into `db_dir` (new or empty)."""
