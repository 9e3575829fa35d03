//! Settings as text: `Options::set` by name, the OPTIONS file (spec: `docs/format/options.md`)
//! written at each open, the stored configuration applied on a reopen, and the generated
//! table of every option (`docs/options.md`).

use super::spec::{Kind, Scope, Spec};
use super::{invalid, Settings, FORMAT_VERSION, SPECS};
use crate::error::{Error, Result};
use crate::format::coding::masked_crc;
use std::collections::BTreeMap;
use std::path::Path;

/// The entries OPTIONS holds that are not options, with this build's values: a database
/// keeps them for life.
fn fixed() -> [(&'static str, String); 2] {
    [
        ("format_version", FORMAT_VERSION.to_string()),
        ("comparator", "bytewise".to_string()),
    ]
}

/// The setting called `name`: its `group.setting` name or its field's name.
pub(super) fn find(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.name == name || s.field == name)
}

impl Settings {
    /// Sets the option `name` from its text form. `name` is the option's name in OPTIONS and
    /// `docs/options.md` (`memory.budget`, `filters.policy`) or its field's name
    /// (`memory_budget`, `bpk_policy`; the names of OPTIONS files before groups). Sizes take
    /// binary units (`64MiB`, `1.5 GiB`, `4k`), enums their names (`mnemosyne-elastic`).
    /// `format_version` and `comparator` are accepted only with the values this build writes.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown name (with the closest known names);
    /// `InvalidOptions` naming the option when the value does not parse (an enum's error lists
    /// its valid names). Ranges and combinations are checked by [`validate`](Self::validate)
    /// at open.
    pub(crate) fn set(&mut self, name: &str, value: &str) -> Result<()> {
        if let Some((option, want)) = fixed().into_iter().find(|(k, _)| *k == name) {
            if value != want {
                return Err(invalid(
                    option,
                    format!("{option} = {value:?}: this build supports only {want}"),
                ));
            }
            return Ok(());
        }
        let Some(s) = find(name) else {
            return Err(Error::InvalidArgument(unknown(name)));
        };
        (s.set)(self, value).map_err(|why| invalid(s.field, format!("{} = {value:?}: {why}", s.name)))
    }

    /// These options with every setting stored in the newest OPTIONS file of the database in
    /// `dir` applied (what the database was last opened with); unchanged when it has none.
    /// Settings this build does not know (written by a newer one) are skipped, and so are
    /// those about one open (`create_if_missing`, `error_if_exists`, `keep_stored`).
    ///
    /// # Errors
    /// `Corruption` for a damaged OPTIONS file or a stored value that does not parse; I/O
    /// errors.
    pub(crate) fn with_stored(mut self, dir: &Path) -> Result<Settings> {
        let Some((path, stored)) = crate::inspect::stored_options(&*self.fs, dir)? else {
            return Ok(self);
        };
        self.apply_stored(&stored, false)
            .map_err(|e| Error::corruption(&path, 0, e))?;
        Ok(self)
    }

    /// The options of a reopen: the stored value of each "stored" setting that these options
    /// leave at its default (unless `keep_stored` is false). Returns the settings taken.
    pub(crate) fn merge_stored(
        &mut self,
        stored: &BTreeMap<String, String>,
    ) -> std::result::Result<Vec<&'static str>, String> {
        if !self.keep_stored {
            return Ok(Vec::new());
        }
        self.apply_stored(stored, true)
    }

    /// Applies `stored`: every setting (`only_defaults` false) or the "stored" ones the caller
    /// left at their defaults. A stored value that has no effect under the result goes back
    /// to its default: OPTIONS lists every setting, and files written before 2026-11-25 also
    /// list the region sizes derived from `memory_budget`.
    pub(super) fn apply_stored(
        &mut self,
        stored: &BTreeMap<String, String>,
        only_defaults: bool,
    ) -> std::result::Result<Vec<&'static str>, String> {
        let default = Settings::default();
        let legacy = !stored.keys().any(|k| k.contains('.'));
        let mut taken = Vec::new();
        for s in SPECS {
            let skip = match s.scope {
                // A reopen takes none of them; a tool (`with_stored`) all but the open's flags.
                Scope::Open => {
                    only_defaults || matches!(s.field, "create_if_missing" | "error_if_exists" | "keep_stored")
                }
                Scope::Stored => only_defaults && (s.get)(self) != (s.get)(&default),
            };
            if skip {
                continue;
            }
            let Some(v) = stored.get(s.name).or_else(|| stored.get(s.field)) else {
                continue;
            };
            // Files before groups wrote the tuner floor's old default, which is now the
            // automatic floor for budgets of 512 MiB and more; smaller budgets start below it.
            if legacy && s.field == "memory_tuner_floor" && v == "33554432" {
                continue;
            }
            (s.set)(self, v).map_err(|why| format!("{} = {v:?}: {why}", s.name))?;
            if (s.get)(self) != (s.get)(&default) {
                taken.push(s.name);
            }
        }
        // Until none is left: resetting one can make another inactive.
        while let Some(s) = SPECS
            .iter()
            .find(|s| taken.contains(&s.name) && !s.when.holds(self) && !s.is_off(self))
        {
            (s.set)(self, &(s.get)(&default))?;
            taken.retain(|n| *n != s.name);
        }
        Ok(taken)
    }

    /// Every setting by its OPTIONS name (with `format_version` and `comparator`).
    pub(crate) fn to_map(&self) -> BTreeMap<&'static str, String> {
        SPECS.iter().map(|s| (s.name, (s.get)(self))).chain(fixed()).collect()
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
}

/// "unknown option", with the known names that share a word with it.
fn unknown(name: &str) -> String {
    let words: Vec<&str> = name.split(['.', '_']).filter(|w| w.len() > 2).collect();
    let near: Vec<&str> = SPECS
        .iter()
        .filter(|s| words.iter().any(|w| s.name.contains(w)))
        .map(|s| s.name)
        .take(6)
        .collect();
    if near.is_empty() {
        format!("unknown option {name:?} (every option: docs/options.md)")
    } else {
        format!(
            "unknown option {name:?}; options with a similar name: {}",
            near.join(", ")
        )
    }
}

/// Parses an OPTIONS file into its key/value pairs, verifying the checksum.
pub fn parse_options_file(bytes: &[u8]) -> std::result::Result<BTreeMap<String, String>, String> {
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

/// `docs/options.md`: every setting with its alias, kind, default, valid values, scope and
/// when it applies (generated; a test keeps the file current).
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "read by the test that writes docs/options.md")
)]
pub(crate) fn options_table() -> String {
    let default = Settings::default();
    let mut s = String::from(
        "# Options\n\n\
         Generated from the option table in `crates/cairn/src/options/mod.rs` (`CAIRN_REWRITE=1 cargo test -p cairn \
         --lib options` rewrites it). In Rust a setting is a field of `Options` (column *in Options*): most at \
         their name (`o.filters.bits_per_key`); the memory settings inside `o.memory`, which is either \
         `Memory::Budget(Budget { .., tuner: Some(Tuner { .. }) })` or `Memory::Fixed(FixedMemory { .. })`; the \
         elastic units inside `o.filters.policy` (`FilterPolicy::Elastic(ElasticUnits { .. })`). \
         `Options::set(name, value)` and OPTIONS files take the name or the flat name of earlier releases. Sizes \
         take binary units (`64MiB`, `1.5 GiB`, `4k`).\n\n\
         Scope: **stored** settings are the database's configuration; a reopen keeps the stored value of each one \
         the caller leaves at its default (`keep_stored = false` turns that off). **open** settings are about one \
         open and always come from the caller. A setting that has no effect under the others (column *applies*) \
         must stay at its default: the open fails otherwise, naming it.\n\n\
         | name | in Options | flat name | type | default | valid | scope | applies | description |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for sp in SPECS {
        let valid = if sp.kind == Kind::Choice {
            sp.choices.join(", ")
        } else if sp.kind == Kind::Bool {
            "true, false".into()
        } else {
            sp.range.describe(sp.kind)
        };
        let default_text = match sp.field {
            "compaction_threads" | "max_subcompactions" => "cores, at most 4".to_string(),
            _ => sp.show(&default),
        };
        let doc = sp
            .doc
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace(['[', ']'], "")
            .replace('|', "\\|");
        s.push_str(&format!(
            "| `{}` | `{}` | `{}` | {} | {} | {} | {} | {} | {} |\n",
            sp.name,
            sp.path,
            sp.field,
            sp.kind.name(),
            default_text,
            valid,
            if sp.scope == Scope::Stored { "stored" } else { "open" },
            sp.when.label(),
            doc
        ));
    }
    s
}
