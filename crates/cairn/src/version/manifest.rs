//! The manifest (a log of version edits in WAL framing) and the CURRENT file naming it.
//!
//! CURRENT holds one line: `MANIFEST-NNNNNN <crc>\n`, `crc` being the masked CRC32C of the
//! name in 8 lowercase hex digits. It is replaced atomically: write `CURRENT.tmp`, fsync it,
//! rename over `CURRENT`, fsync the directory.

use crate::env::{read_all, FileSystem};
use crate::error::{Error, Result};
use crate::filename;
use crate::format::coding::masked_crc;
use std::path::{Path, PathBuf};

/// Appends a version edit and makes it durable, then appends an empty edit (flushed to the OS,
/// not synced) whose synced-offset field proves the real edit was synced: without it, damage to
/// the last edit could not be told from a torn unsynced append and recovery would drop an edit
/// that had already been acted on. A lost or torn marker is harmless (it changes nothing).
///
/// # Errors
/// I/O errors; the caller must stop using the manifest (poison).
pub fn append_durably(w: &mut crate::wal::WalWriter, edit: &[u8]) -> Result<()> {
    w.add_record(edit)?;
    w.sync()?;
    w.add_record(&[])?;
    w.flush()
}

/// Points CURRENT at manifest `number`, durably.
pub fn set_current(fs: &dyn FileSystem, dir: &Path, number: u64) -> Result<()> {
    let name = filename::manifest_name(number);
    let line = format!("{name} {:08x}\n", masked_crc(&[name.as_bytes()]));
    filename::write_atomically(fs, &filename::current(dir), line.as_bytes())?;
    fs.sync_dir(dir)
}

/// Reads CURRENT: the manifest number and its path.
pub fn read_current(fs: &dyn FileSystem, dir: &Path) -> Result<(u64, PathBuf)> {
    let path = filename::current(dir);
    let bytes = read_all(fs, &path)?;
    let bad = |what: &str| Error::corruption(&path, 0, what);
    let text = std::str::from_utf8(&bytes).map_err(|_| bad("CURRENT is not text"))?;
    let line = text
        .strip_suffix('\n')
        .ok_or_else(|| bad("CURRENT does not end in a newline"))?;
    let (name, crc) = line.split_once(' ').ok_or_else(|| bad("CURRENT lacks its checksum"))?;
    // Compared as text: the spec writes 8 lowercase digits, and any other spelling is damage.
    if crc != format!("{:08x}", masked_crc(&[name.as_bytes()])) {
        return Err(bad("CURRENT checksum mismatch"));
    }
    let number = name
        .strip_prefix("MANIFEST-")
        .and_then(|n| n.parse::<u64>().ok())
        .ok_or_else(|| bad("CURRENT does not name a manifest"))?;
    Ok((number, dir.join(name)))
}
