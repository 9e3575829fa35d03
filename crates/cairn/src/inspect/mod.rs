//! Looking inside a database and its files without opening it for writing: decoded dumps of a
//! table, a WAL and the manifest (for people; the text layout is not a stable format), and
//! [`verify`], which reads every byte a database's recovery and reads depend on and reports
//! each damaged structure (for scripts: [`Damage`] names file, offset and what). The `cairn`
//! command line is built on this module.
//!
//! Nothing here writes, and nothing here counts in a database's statistics.

mod log;
mod table;
mod verify;

pub use log::{dump_manifest, dump_wal};
pub(crate) use table::check_table_with;
pub use table::{dump_table, dump_table_with, verify_table, TableDump};
pub use verify::verify;

use crate::env::FileSystem;
use crate::error::Result;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The newest OPTIONS file of the database in `dir` and its options (`key` → stored text);
/// `None` when there is none.
///
/// # Errors
/// `Corruption` for a damaged OPTIONS file; I/O errors.
pub fn stored_options(fs: &dyn FileSystem, dir: &Path) -> Result<Option<(PathBuf, BTreeMap<String, String>)>> {
    crate::options::read_stored(fs, dir, &fs.list(dir)?)
}

/// How keys and values are printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Bytes {
    /// UTF-8 as it is; control characters, a backslash and invalid UTF-8 escaped as `\xNN`.
    #[default]
    Text,
    /// Lowercase hex.
    Hex,
}

impl Bytes {
    /// `b` as this format prints it.
    pub fn show(self, b: &[u8]) -> String {
        let mut out = String::with_capacity(b.len());
        if self == Bytes::Hex {
            for x in b {
                out.push_str(&format!("{x:02x}"));
            }
            return out;
        }
        for chunk in b.utf8_chunks() {
            for c in chunk.valid().chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    c if c.is_control() => {
                        let mut buf = [0u8; 4];
                        for x in c.encode_utf8(&mut buf).bytes() {
                            out.push_str(&format!("\\x{x:02x}"));
                        }
                    }
                    c => out.push(c),
                }
            }
            for x in chunk.invalid() {
                out.push_str(&format!("\\x{x:02x}"));
            }
        }
        out
    }
}

/// One damaged structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The damaged file.
    pub file: PathBuf,
    /// Byte offset of the damaged structure in it.
    pub offset: u64,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at offset {}: {}", self.file.display(), self.offset, self.what)
    }
}

impl Damage {
    /// The damage an error describes (a corruption names its own file and offset; any other
    /// error is charged to `file` at offset 0).
    fn from_error(file: impl Into<PathBuf>, e: &crate::Error) -> Damage {
        match e {
            crate::Error::Corruption { file, offset, what } => Damage {
                file: file.clone(),
                offset: *offset,
                what: what.clone(),
            },
            e => Damage {
                file: file.into(),
                offset: 0,
                what: e.to_string(),
            },
        }
    }
}

/// What [`verify`] found.
#[derive(Debug, Clone, Default)]
pub struct VerifyReport {
    /// Files read, by kind: (`"table"`, `"wal"`, `"manifest"`, ...) and path.
    pub checked: Vec<(&'static str, PathBuf)>,
    /// Blocks whose checksum was checked (data, index, filter units, range filters, meta).
    pub blocks: u64,
    /// Table entries and WAL records read.
    pub entries: u64,
    /// Every damaged structure found, in the order found.
    pub damage: Vec<Damage>,
    /// Findings that are not damage: a torn WAL tail past its last sync (normal after a crash),
    /// leftovers the next open deletes.
    pub notes: Vec<String>,
}

impl VerifyReport {
    /// Whether nothing was damaged.
    pub fn is_ok(&self) -> bool {
        self.damage.is_empty()
    }
}

/// A user key as the dumps print it: the empty key as `""` (and a key that is exactly two
/// double quotes escaped, so the two cannot be confused).
pub fn key_text(bytes: Bytes, key: &[u8]) -> String {
    match key {
        [] => "\"\"".into(),
        b"\"\"" if bytes == Bytes::Text => "\\x22\\x22".into(),
        k => bytes.show(k),
    }
}

/// A sequence number as the dumps print it: the largest one (what seeks and range tombstones
/// use as "every version") as `max`.
pub(crate) fn seq_text(seq: u64) -> String {
    if seq == crate::format::ikey::MAX_SEQNO {
        "max".into()
    } else {
        seq.to_string()
    }
}

/// Unix seconds as an ISO 8601 UTC time: `2026-11-25T12:34:56Z`.
/// An expiring value as `value (expires TIME)`.
pub(crate) fn expiring_text(bytes: Bytes, entry_value: &[u8]) -> String {
    match crate::ttl::split(entry_value) {
        Some((_, v)) => format!("{} ({})", bytes.show(v), deadline_text(entry_value)),
        None => format!("{} (too short for a deadline)", Bytes::Hex.show(entry_value)),
    }
}

/// `expires TIME` for an expiring value's deadline (to the millisecond).
pub(crate) fn deadline_text(entry_value: &[u8]) -> String {
    match crate::ttl::split(entry_value) {
        Some((ms, _)) => {
            let t = iso_time(ms / 1000);
            format!("expires {}.{:03}Z", t.trim_end_matches('Z'), ms % 1000)
        }
        None => "no deadline: too short".into(),
    }
}

pub(crate) fn iso_time(unix: u64) -> String {
    let (days, secs) = (unix / 86_400, unix % 86_400);
    // Howard Hinnant's civil-from-days, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod text_tests {
    use super::*;

    #[test]
    fn times_keys_and_seqnos() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_time(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso_time(1_795_629_257), "2026-11-25T17:54:17Z");
        assert_eq!(key_text(Bytes::Text, b""), "\"\"");
        assert_eq!(key_text(Bytes::Hex, b""), "\"\"");
        assert_eq!(key_text(Bytes::Text, b"\"\""), "\\x22\\x22");
        assert_eq!(key_text(Bytes::Text, b"k"), "k");
        assert_eq!(seq_text(crate::format::ikey::MAX_SEQNO), "max");
        assert_eq!(seq_text(7), "7");
    }
}
