//! The OPTIONS file (spec: `docs/format/options.md`), written at each open: every setting that
//! has a place under the alternatives chosen, by its name, and the stored configuration a
//! reopen keeps.

use super::table::{refused, settings, Refusal, Scope};
use super::{invalid, Options, FORMAT_VERSION};
use crate::env::{read_all, FileSystem};
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::format::coding::masked_crc;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The entries OPTIONS holds that are not options, with this build's values: a database
/// keeps them for life.
fn fixed() -> [(&'static str, String); 2] {
    [
        ("format_version", FORMAT_VERSION.to_string()),
        ("comparator", "bytewise".to_string()),
    ]
}

impl Options {
    /// Every setting with a place under these options, by name, with `format_version` and
    /// `comparator`.
    pub(crate) fn to_map(&self) -> BTreeMap<&'static str, String> {
        settings()
            .iter()
            .filter_map(|s| Some((s.name, (s.get)(self)?)))
            .chain(fixed())
            .collect()
    }

    /// The OPTIONS file contents: `key=value` lines, then `checksum=<masked crc32c hex>` over
    /// every byte before that line.
    pub(crate) fn encode_file(&self) -> Vec<u8> {
        let mut s = String::from("# cairn OPTIONS (informational except format_version, comparator)\n");
        for (k, v) in self.to_map() {
            s.push_str(&format!("{k}={v}\n"));
        }
        let crc = masked_crc(&[s.as_bytes()]);
        s.push_str(&format!("checksum={crc:08x}\n"));
        s.into_bytes()
    }

    /// These options with every setting stored in the newest OPTIONS file of the database in
    /// `dir` applied (what the database was last opened with); unchanged when it has none.
    /// Settings this build does not know are skipped, and so are those about one open
    /// (`create_if_missing`, `error_if_exists`, `keep_stored`).
    ///
    /// # Errors
    /// `Corruption` for a damaged OPTIONS file or a stored value that does not parse; I/O
    /// errors.
    pub fn with_stored(mut self, dir: &Path) -> Result<Options> {
        let Some((path, stored)) = read_stored(&*self.fs, dir, &self.fs.list(dir)?)? else {
            return Ok(self);
        };
        apply(&mut self, &stored, |s, _| {
            !matches!(s.name, "create_if_missing" | "error_if_exists" | "keep_stored")
        })
        .map_err(|e| Error::corruption(&path, 0, e))?;
        Ok(self)
    }
}

/// The options of a reopen: the stored value of each "stored" setting that `given` leaves at
/// its default (unless `keep_stored` is false). A stored value that has no place, or no effect,
/// under the result is not taken. Returns the settings taken.
pub(crate) fn merge_stored(
    given: &mut Options,
    stored: &BTreeMap<String, String>,
) -> std::result::Result<Vec<&'static str>, String> {
    if !given.keep_stored {
        return Ok(Vec::new());
    }
    let caller = given.clone();
    let mut taken = apply(given, stored, |s, _| s.scope == Scope::Stored && !s.is_set(&caller))?;
    // Until none is left: a stored setting without effect under what the caller set goes
    // back to its default.
    while let Err(Error::InvalidOptions { option, .. }) = given.check_unused() {
        let Some(i) = taken.iter().position(|n| *n == option) else {
            break;
        };
        let s = super::table::find(option).ok_or("a setting without a row")?;
        (s.set)(given, &(s.default)()).map_err(|e| format!("{option}: {e:?}"))?;
        taken.remove(i);
    }
    Ok(taken)
}

/// Applies the stored settings `take` accepts, in table order; one the alternatives chosen
/// have no place for is skipped. Returns those that now differ from their defaults.
fn apply(
    o: &mut Options,
    stored: &BTreeMap<String, String>,
    take: impl Fn(&super::table::Setting, &Options) -> bool,
) -> std::result::Result<Vec<&'static str>, String> {
    let mut taken = Vec::new();
    for s in settings() {
        let Some(v) = stored.get(s.name) else {
            continue;
        };
        if !take(s, o) {
            continue;
        }
        match (s.set)(o, v) {
            Ok(()) if s.is_set(o) => taken.push(s.name),
            Ok(()) | Err(Refusal::NoPlace(_)) => {}
            Err(why) => return Err(refused(s, v, why).to_string()),
        }
    }
    Ok(taken)
}

/// The newest OPTIONS file among `names` in `dir`, parsed.
pub(crate) fn read_stored(
    fs: &dyn FileSystem,
    dir: &Path,
    names: &[String],
) -> Result<Option<(PathBuf, BTreeMap<String, String>)>> {
    let Some(&n) = filename::numbers(names, FileKind::Options).last() else {
        return Ok(None);
    };
    let path = filename::options(dir, n);
    let stored = parse_options_file(&read_all(fs, &path)?).map_err(|e| Error::corruption(&path, 0, e))?;
    Ok(Some((path, stored)))
}

/// Parses an OPTIONS file into its key/value pairs, verifying the checksum.
pub(crate) fn parse_options_file(bytes: &[u8]) -> std::result::Result<BTreeMap<String, String>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "OPTIONS is not UTF-8".to_string())?;
    let body_end = text.rfind("checksum=").ok_or("OPTIONS has no checksum line")?;
    let (body, tail) = text.split_at(body_end);
    // The line ends the file exactly as written (8 lowercase digits, a newline): any other
    // spelling is damage too.
    let crc = tail
        .strip_suffix('\n')
        .and_then(|t| t.strip_prefix("checksum="))
        .ok_or("OPTIONS checksum line is malformed")?;
    if crc != format!("{:08x}", masked_crc(&[body.as_bytes()])) {
        return Err("OPTIONS checksum mismatch".into());
    }
    let mut m = BTreeMap::new();
    for line in body.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| format!("OPTIONS line without '=': {line:?}"))?;
        m.insert(k.to_string(), v.to_string());
    }
    Ok(m)
}

/// Checks options stored by an earlier open against this build: the on-disk format and key
/// order must not change.
pub(crate) fn check_compatible(stored: &BTreeMap<String, String>) -> Result<()> {
    for (option, now) in fixed() {
        if let Some(old) = stored.get(option) {
            if *old != now {
                return Err(invalid(
                    option,
                    format!("the database was created with {option}={old}, which cannot change"),
                ));
            }
        }
    }
    Ok(())
}
