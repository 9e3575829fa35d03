"""cairn: an embedded, read-optimized, memory-adaptive LSM-tree key-value engine.

    import cairn
    with cairn.open("/tmp/db", memory={"budget": "64MiB"}) as db:
        db[b"k"] = b"v"
        for k, v in db.items(start=b"a", end=b"z"):
            ...

Keys and values are bytes-like (bytes, bytearray, memoryview); a str raises TypeError.
Every engine call releases the GIL, so threads read and write in parallel.
"""

from ._native import (
    Batch,
    CorruptionError,
    Db,
    Error,
    InvalidArgumentError,
    IoError,
    Iterator,
    LockedError,
    ReadOnlyError,
    Snapshot,
    Tree,
    open,
    restore,
)

__all__ = [
    "Batch",
    "CorruptionError",
    "Db",
    "Error",
    "InvalidArgumentError",
    "IoError",
    "Iterator",
    "LockedError",
    "ReadOnlyError",
    "Snapshot",
    "Tree",
    "open",
    "restore",
]
