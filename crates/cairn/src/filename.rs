//! The names of the files in a database directory (docs/design.md §4), in one place.
//!
//! ```text
//! NNNNNN.sst        table            NNNNNN.wal      write-ahead log
//! MANIFEST-NNNNNN   version edits    OPTIONS-NNNNNN  options the database was opened with
//! CURRENT           names the live manifest
//! LOCK              advisory lock    *.tmp           a file being written before its rename
//! ```
//! Numbers come from one counter (the manifest's next file number) and are never reused.

use crate::env::FileSystem;
use crate::error::Result;
use std::path::{Path, PathBuf};

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `NNNNNN.sst`.
    Table(u64),
    /// `NNNNNN.wal`.
    Wal(u64),
    /// `MANIFEST-NNNNNN`.
    Manifest(u64),
    /// `OPTIONS-NNNNNN`.
    Options(u64),
    /// `CURRENT`.
    Current,
    /// `LOCK`.
    Lock,
    /// A file written under a temporary name and renamed once durable (`NNNNNN.wal.tmp`,
    /// `OPTIONS-NNNNNN.tmp`, `CURRENT.tmp`): left over only by a failed or interrupted write.
    Temp,
    /// Anything else (never touched).
    Other,
}

/// Classifies a directory entry by name.
pub fn parse(name: &str) -> FileKind {
    if name.ends_with(".tmp") {
        return FileKind::Temp;
    }
    let num = |s: &str| {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    if let Some(n) = name.strip_suffix(".sst").and_then(num) {
        return FileKind::Table(n);
    }
    if let Some(n) = name.strip_suffix(".wal").and_then(num) {
        return FileKind::Wal(n);
    }
    if let Some(n) = name.strip_prefix("MANIFEST-").and_then(num) {
        return FileKind::Manifest(n);
    }
    if let Some(n) = name.strip_prefix("OPTIONS-").and_then(num) {
        return FileKind::Options(n);
    }
    match name {
        "CURRENT" => FileKind::Current,
        "LOCK" => FileKind::Lock,
        _ => FileKind::Other,
    }
}

/// `dir/NNNNNN.sst`.
pub fn table(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.sst"))
}

/// `dir/NNNNNN.wal`.
pub fn wal(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:06}.wal"))
}

/// `MANIFEST-NNNNNN`.
pub fn manifest_name(n: u64) -> String {
    format!("MANIFEST-{n:06}")
}

/// `dir/MANIFEST-NNNNNN`.
pub fn manifest(dir: &Path, n: u64) -> PathBuf {
    dir.join(manifest_name(n))
}

/// `dir/OPTIONS-NNNNNN`.
pub fn options(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("OPTIONS-{n:06}"))
}

/// `dir/CURRENT`.
pub fn current(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}

/// `dir/LOCK`.
pub fn lock(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}

/// The temporary name `path` is written under before its rename: `path.tmp`.
pub fn temp(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// Numbers of the entries of kind `kind` (a constructor such as `FileKind::Wal`), sorted.
pub fn numbers(names: &[String], kind: fn(u64) -> FileKind) -> Vec<u64> {
    let mut v: Vec<u64> = names
        .iter()
        .filter_map(|n| match parse(n) {
            k @ (FileKind::Table(x) | FileKind::Wal(x) | FileKind::Manifest(x) | FileKind::Options(x))
                if k == kind(x) =>
            {
                Some(x)
            }
            _ => None,
        })
        .collect();
    v.sort_unstable();
    v
}

/// Writes `data` to `path` so that the file either does not exist or holds all of it, synced:
/// written and synced under [`temp`]`(path)`, then renamed. The caller syncs the directory.
///
/// # Errors
/// I/O errors; a failure leaves at most the temporary file behind (removed at the next open).
pub fn write_atomically(fs: &dyn FileSystem, path: &Path, data: &[u8]) -> Result<()> {
    let tmp = temp(path);
    crate::env::write_all_synced(fs, &tmp, data)?;
    fs.rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let dir = Path::new("/d");
        assert_eq!(table(dir, 7), Path::new("/d/000007.sst"));
        assert_eq!(wal(dir, 1234567), Path::new("/d/1234567.wal"));
        assert_eq!(temp(&wal(dir, 5)), Path::new("/d/000005.wal.tmp"));
        for (name, kind) in [
            ("000007.sst", FileKind::Table(7)),
            ("1234567.wal", FileKind::Wal(1234567)),
            ("MANIFEST-000003", FileKind::Manifest(3)),
            ("OPTIONS-000012", FileKind::Options(12)),
            ("CURRENT", FileKind::Current),
            ("LOCK", FileKind::Lock),
            ("CURRENT.tmp", FileKind::Temp),
            ("000005.wal.tmp", FileKind::Temp),
            ("OPTIONS-000012.tmp", FileKind::Temp),
            ("+1.sst", FileKind::Other),
            (".sst", FileKind::Other),
            ("MANIFEST-", FileKind::Other),
            ("notes.txt", FileKind::Other),
        ] {
            assert_eq!(parse(name), kind, "{name}");
        }
        let names: Vec<String> = ["000009.wal", "000002.wal", "000003.sst", "000004.wal.tmp"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(numbers(&names, FileKind::Wal), vec![2, 9]);
        assert_eq!(numbers(&names, FileKind::Table), vec![3]);
    }
}
