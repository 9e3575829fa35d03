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
pub use table::{dump_table, verify_table};
pub use verify::verify;

use crate::env::{read_all, FileSystem};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// The newest OPTIONS file of the database in `dir` and its options (`key` → stored text);
/// `None` when there is none.
///
/// # Errors
/// `Corruption` for a damaged OPTIONS file; I/O errors.
pub fn stored_options(fs: &dyn FileSystem, dir: &Path) -> Result<Option<(PathBuf, BTreeMap<String, String>)>> {
    let names = fs.list(dir)?;
    let Some(&n) = filename::numbers(&names, FileKind::Options).last() else {
        return Ok(None);
    };
    let path = filename::options(dir, n);
    let map = crate::options::parse_options_file(&read_all(fs, &path)?).map_err(|e| Error::corruption(&path, 0, e))?;
    Ok(Some((path, map)))
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
