//! Every setting once, by its one name (`group.setting`): where [`Options`] holds it, its text
//! form, valid range, scope and description. It serves the text forms only — `Options::set`
//! and `get`, the OPTIONS file, range checks and the generated `docs/options.md`; the engine
//! reads `Options`' fields.
//!
//! A setting inside an alternative (the budget, the tuner, fixed sizes, elastic units) has no
//! value while another alternative is chosen: `get` answers `None`, and `set` refuses it
//! naming the choice that leaves it no place. The rows that choose an alternative (`memory.budget`,
//! `memory.tuner`, `filters.policy`) come before the settings they hold, so that applying rows
//! in table order never refuses a setting for an alternative chosen later in the same call.

pub(crate) use super::value::Kind;
use super::value::{Range, Value, ANY};
use super::{
    BackgroundOptions, Budget, CacheOptions, CacheSource, CompactionOptions, ElasticUnits, FileOptions, FilterOptions,
    FilterPolicy, FixedMemory, Limits, Memory, MemtableOptions, Options, RangeFilterOptions, TableFormat, Tuner,
    WalOptions, WriteStallOptions,
};
use crate::error::{Error, Result};

/// Whether a reopen keeps the stored value when the caller leaves the setting at its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The database's configuration: a reopen keeps the stored value unless the caller sets
    /// another one.
    Stored,
    /// About one open of one process: the caller's value always applies.
    Open,
}

/// Why `set` did not take a value.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The text is not a value of the setting.
    Parse(String),
    /// The alternatives chosen have no place for the setting; the text says which.
    NoPlace(String),
}

/// One row of the table. What only the generated docs read is kept in every build, so that the
/// table stays one list.
#[cfg_attr(
    not(any(test, feature = "test-util")),
    expect(dead_code, reason = "place, path, doc and choices are read by the docs table")
)]
pub(crate) struct Setting {
    pub name: &'static str,
    /// Where `Options` holds it: the group's path (empty for the rows that spell it whole)
    /// and the field.
    pub place: &'static str,
    pub path: &'static str,
    pub kind: Kind,
    pub range: Range,
    pub scope: Scope,
    /// Chooses an alternative (switching it drops the settings of the other).
    pub selector: bool,
    pub doc: &'static str,
    pub choices: fn() -> &'static [&'static str],
    /// The value as OPTIONS writes it; `None` where the alternatives chosen leave no place.
    pub get: fn(&Options) -> Option<String>,
    pub set: fn(&mut Options, &str) -> std::result::Result<(), Refusal>,
    /// The value of `Options::default()`, or of the alternative's defaults.
    pub default: fn() -> String,
}

impl Setting {
    /// The value shown to a person: sizes with units.
    pub(crate) fn show(&self, o: &Options) -> String {
        let v = (self.get)(o).unwrap_or_default();
        match (self.kind, v.parse::<u64>()) {
            (Kind::Bytes, Ok(n)) => super::show_bytes(n),
            _ => v,
        }
    }

    /// The value as a number, for range checks (`None` for booleans, enums and no place).
    pub(crate) fn number(&self, o: &Options) -> Option<f64> {
        match self.kind {
            Kind::Bytes | Kind::Count | Kind::Float => (self.get)(o)?.parse().ok(),
            Kind::Bool | Kind::Choice => None,
        }
    }

    /// Whether the caller changed it: it has a value, and not the default one.
    pub(crate) fn is_set(&self, o: &Options) -> bool {
        (self.get)(o).is_some_and(|v| v != (self.default)())
    }
}

/// Where a group of settings lives in `Options`.
pub(super) trait Place {
    type G: Default;
    const PATH: &'static str;
    fn of(o: &Options) -> Option<&Self::G>;
    fn of_mut(o: &mut Options) -> std::result::Result<&mut Self::G, String>;
}

macro_rules! plain_places {
    ($($place:ident: $g:ty = $field:ident;)*) => {$(
        pub(super) struct $place;
        impl Place for $place {
            type G = $g;
            const PATH: &'static str = concat!("o.", stringify!($field));
            fn of(o: &Options) -> Option<&$g> {
                Some(&o.$field)
            }
            fn of_mut(o: &mut Options) -> std::result::Result<&mut $g, String> {
                Ok(&mut o.$field)
            }
        }
    )*};
}
plain_places! {
    Cache: CacheOptions = cache;
    Memtable: MemtableOptions = memtable;
    Wal: WalOptions = wal;
    Table: TableFormat = table;
    Filters: FilterOptions = filters;
    RangeFilter: RangeFilterOptions = range_filter;
    Compaction: CompactionOptions = compaction;
    Background: BackgroundOptions = background;
    WriteStalls: WriteStallOptions = write_stalls;
    Files: FileOptions = files;
    LimitsPlace: Limits = limits;
}

pub(super) struct Top;
impl Place for Top {
    type G = Options;
    const PATH: &'static str = "o";
    fn of(o: &Options) -> Option<&Options> {
        Some(o)
    }
    fn of_mut(o: &mut Options) -> std::result::Result<&mut Options, String> {
        Ok(o)
    }
}

const NO_BUDGET: &str = "it applies only with memory.budget set (memory.budget = 0)";

pub(super) struct InBudget;
impl Place for InBudget {
    type G = Budget;
    const PATH: &'static str = "Budget";
    fn of(o: &Options) -> Option<&Budget> {
        o.memory.budget()
    }
    fn of_mut(o: &mut Options) -> std::result::Result<&mut Budget, String> {
        match &mut o.memory {
            Memory::Budget(b) => Ok(b),
            Memory::Fixed(_) => Err(NO_BUDGET.into()),
        }
    }
}

pub(super) struct InTuner;
impl Place for InTuner {
    type G = Tuner;
    const PATH: &'static str = "Tuner";
    fn of(o: &Options) -> Option<&Tuner> {
        o.memory.budget()?.tuner.as_ref()
    }
    fn of_mut(o: &mut Options) -> std::result::Result<&mut Tuner, String> {
        InBudget::of_mut(o)?
            .tuner
            .as_mut()
            .ok_or_else(|| "it applies only with memory.tuner = true (memory.tuner = false)".into())
    }
}

/// Fixed sizes; a region sized by hand while the budget is at its default selects them (a
/// program that sizes its memtables or cache as with RocksDB keeps doing so).
pub(super) struct InFixed;
impl Place for InFixed {
    type G = FixedMemory;
    const PATH: &'static str = "FixedMemory";
    fn of(o: &Options) -> Option<&FixedMemory> {
        o.memory.fixed()
    }
    fn of_mut(o: &mut Options) -> std::result::Result<&mut FixedMemory, String> {
        match &o.memory {
            Memory::Budget(b) if *b != Budget::default() => Err(format!(
                "memory.budget = {} sizes write memory, the block cache, the key-value cache and filter memory \
                 itself (change their split with memory.write_share, memory.kv_cache_share and \
                 memory.filter_share, or set memory.budget = 0)",
                super::show_bytes(b.bytes as u64)
            )),
            _ => Ok(o.memory.fixed_mut()),
        }
    }
}

pub(super) struct InElastic;
impl Place for InElastic {
    type G = ElasticUnits;
    const PATH: &'static str = "ElasticUnits";
    fn of(o: &Options) -> Option<&ElasticUnits> {
        o.filters.policy.units()
    }
    fn of_mut(o: &mut Options) -> std::result::Result<&mut ElasticUnits, String> {
        let policy = o.filters.policy.kind().name();
        o.filters.policy.units_mut().ok_or_else(|| {
            format!(
                "only the elastic policies (elastic, mnemosyne-elastic) load filter units (filters.policy = {policy})"
            )
        })
    }
}

/// The rows that are not one field of a group: the alternatives' selectors and the settings
/// inside enums.
fn custom(name: &'static str) -> Setting {
    let row = |path, kind, doc, get, set, default| Setting {
        name,
        place: "",
        path,
        kind,
        range: ANY,
        scope: Scope::Stored,
        selector: matches!(name, "memory.budget" | "memory.tuner" | "filters.policy"),
        doc,
        choices: || &[],
        get,
        set,
        default,
    };
    match name {
        "memory.budget" => row(
            "memory: Memory::Budget(Budget { bytes })",
            Kind::Bytes,
            "One memory budget for write memory, the block cache, the key-value cache and filter memory (Luo & Carey \
             §3). It is split \
             into write memory (memory.write_share; memtables switch at half of it), filter memory for the elastic \
             policies (memory.filter_share), the key-value cache (memory.kv_cache_share) and the block cache (the \
             rest, which also holds the index blocks and the filters), and the memory tuner moves memory between \
             them. 0: fixed sizes (memory.write_memory, memtable.size, memory.block_cache, memory.filter_memory, \
             memory.kv_cache); sizing one of those while the budget is at \
             its default selects fixed sizes too. 0, or at least 256 KiB.",
            |o| Some(o.memory.budget().map_or(0, |b| b.bytes).to_string()),
            |o, v| {
                match bytes(v)? {
                    0 => drop(o.memory.fixed_mut()),
                    n => o.memory.budget_mut().bytes = n,
                }
                Ok(())
            },
            || super::DEFAULT_BUDGET.to_string(),
        ),
        "memory.tuner" => row(
            "Budget.tuner: Option<Tuner>",
            Kind::Bool,
            "Run the memory tuner: every wal.max_size of log, or every memory.tuner_period_ms without that much, \
             move memory between write memory, the block cache and (elastic policies) filter memory where it saves \
             the most I/O per operation. Turns on a 128 MiB ghost cache when cache.ghost_cache is 0.",
            |o| InBudget::of(o).map(|b| b.tuner.is_some().to_string()),
            |o, v| {
                let on: bool = Value::parse(v, Kind::Bool).map_err(Refusal::Parse)?;
                let b = InBudget::of_mut(o).map_err(Refusal::NoPlace)?;
                match on {
                    true => drop(b.tuner_mut()),
                    false => b.tuner = None,
                }
                Ok(())
            },
            || "true".into(),
        ),
        "memory.block_cache" => row(
            "FixedMemory.block_cache: CacheSource::Own(bytes)",
            Kind::Bytes,
            "Block cache capacity with fixed sizes and no shared block cache.",
            |o| match InFixed::of(o)?.block_cache {
                CacheSource::Own(n) => Some(n.to_string()),
                CacheSource::Shared(_) => None,
            },
            |o, v| {
                let n = bytes(v)?;
                let f = InFixed::of_mut(o).map_err(Refusal::NoPlace)?;
                if let CacheSource::Shared(_) = f.block_cache {
                    return Err(Refusal::NoPlace(
                        "the shared block cache given has its own capacity".into(),
                    ));
                }
                f.block_cache = CacheSource::Own(n);
                Ok(())
            },
            || (32u64 << 20).to_string(),
        ),
        "filters.policy" => Setting {
            choices: || <super::BpkPolicy as Value>::CHOICES,
            ..row(
                "filters.policy: FilterPolicy",
                Kind::Choice,
                "How the point-filter bits are spread over files (see FilterPolicy). May change between opens: \
                 new files follow the new policy.",
                |o| Some(o.filters.policy.kind().name().into()),
                |o, v| {
                    let kind: super::BpkPolicy = Value::parse(v, Kind::Choice).map_err(Refusal::Parse)?;
                    if o.filters.policy.kind() != kind {
                        o.filters.policy = kind.into();
                    }
                    Ok(())
                },
                || FilterPolicy::Mnemosyne.kind().name().into(),
            )
        },
        _ => Setting {
            range: super::value::within(1.0, f64::INFINITY),
            ..row(
                "FilterPolicy::MnemosyneElastic { solve_every }",
                Kind::Count,
                "mnemosyne-elastic: lookups between solves of the optimum.",
                |o| match o.filters.policy {
                    FilterPolicy::MnemosyneElastic { solve_every, .. } => Some(solve_every.to_string()),
                    _ => None,
                },
                |o, v| {
                    let n: u64 = Value::parse(v, Kind::Count).map_err(Refusal::Parse)?;
                    match &mut o.filters.policy {
                        FilterPolicy::MnemosyneElastic { solve_every, .. } => *solve_every = n,
                        p => {
                            return Err(Refusal::NoPlace(format!(
                                "it applies only with filters.policy = mnemosyne-elastic (filters.policy = {})",
                                p.kind().name()
                            )))
                        }
                    }
                    Ok(())
                },
                || super::SOLVE_EVERY.to_string(),
            )
        },
    }
}

fn bytes(v: &str) -> std::result::Result<usize, Refusal> {
    Value::parse(v, Kind::Bytes).map_err(Refusal::Parse)
}

/// Every setting, the selectors before the settings they hold.
pub(crate) fn settings() -> &'static [Setting] {
    static ROWS: std::sync::LazyLock<Vec<Setting>> = std::sync::LazyLock::new(|| {
        let mut r = Vec::new();
        Options::rows(&mut r);
        r.push(custom("memory.budget"));
        Budget::rows(&mut r);
        r.push(custom("memory.tuner"));
        Tuner::rows(&mut r);
        FixedMemory::rows(&mut r);
        r.push(custom("memory.block_cache"));
        CacheOptions::rows(&mut r);
        MemtableOptions::rows(&mut r);
        WalOptions::rows(&mut r);
        TableFormat::rows(&mut r);
        r.push(custom("filters.policy"));
        FilterOptions::rows(&mut r);
        ElasticUnits::rows(&mut r);
        r.push(custom("filters.elastic_solve_every"));
        RangeFilterOptions::rows(&mut r);
        CompactionOptions::rows(&mut r);
        BackgroundOptions::rows(&mut r);
        WriteStallOptions::rows(&mut r);
        FileOptions::rows(&mut r);
        Limits::rows(&mut r);
        r
    });
    &ROWS
}

/// The setting called `name`.
pub(crate) fn find(name: &str) -> Option<&'static Setting> {
    settings().iter().find(|s| s.name == name)
}

/// The position of `name` in the table, or the unknown-option error.
fn position(name: &str) -> Result<usize> {
    settings()
        .iter()
        .position(|s| s.name == name)
        .ok_or_else(|| Error::InvalidArgument(unknown(name)))
}

/// The error for a value `set` refused.
pub(crate) fn refused(s: &Setting, value: &str, why: Refusal) -> Error {
    match why {
        Refusal::Parse(why) => super::invalid(s.name, format!("{} = {value:?}: {why}", s.name)),
        Refusal::NoPlace(why) => super::invalid(s.name, format!("{} = {value} has no effect: {why}", s.name)),
    }
}

impl Options {
    /// Sets the option `name` (`group.setting`, as in `docs/options.md` and OPTIONS) from its
    /// text form. Sizes take binary units (`64MiB`, `1.5 GiB`, `4k`), enums their names
    /// (`mnemosyne-elastic`). Sizing a region by hand (`memory.write_memory`, `memtable.size`,
    /// `memory.block_cache`, …) while the budget is at its default selects fixed sizes;
    /// `memory.budget = 0` does too.
    ///
    /// # Errors
    /// `InvalidArgument` for an unknown name (with the closest known names); `InvalidOptions`
    /// naming the option when the value does not parse (an enum's error lists its valid
    /// names), when the alternatives chosen have no place for it (an elastic unit setting
    /// under `filters.policy = mnemosyne`: set the policy first), or when it would drop a
    /// setting made before (`memory.budget` after regions sized by hand). Ranges and the other
    /// combinations are checked by [`validate`](Self::validate) at open.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        self.set_all([(name, value)])
    }

    /// [`set`](Self::set) for several options at once, in any order: the settings that choose
    /// an alternative are applied first (`filters.elastic_units` may come before
    /// `filters.policy = elastic`). Nothing changes when one fails.
    ///
    /// # Errors
    /// As [`set`](Self::set), for the first option that fails.
    pub fn set_all<'a>(&mut self, options: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<()> {
        let mut rows = Vec::new();
        for (name, value) in options {
            rows.push((position(name)?, value));
        }
        rows.sort_by_key(|(i, _)| *i);
        let mut o = self.clone();
        for (i, value) in rows {
            let s = &settings()[i];
            let before = o.clone();
            (s.set)(&mut o, value).map_err(|why| refused(s, value, why))?;
            // A setting made before that this one changed (its alternative switched away):
            // refused, naming the setting that would have no effect.
            if let Some(d) = settings()
                .iter()
                .find(|d| d.name != s.name && d.is_set(&before) && (d.get)(&o) != (d.get)(&before))
            {
                let (named, other, other_value) = if s.selector {
                    (d, s, value.to_string())
                } else {
                    (s, d, d.show(&before))
                };
                let shown = if named.name == s.name {
                    value.to_string()
                } else {
                    named.show(&before)
                };
                return Err(super::invalid(
                    named.name,
                    format!(
                        "{} = {shown} has no effect with {} = {other_value}",
                        named.name, other.name
                    ),
                ));
            }
        }
        *self = o;
        Ok(())
    }

    /// The value of the option `name` as OPTIONS writes it; `None` for an unknown name, or
    /// where the alternatives chosen leave it no place.
    pub fn get(&self, name: &str) -> Option<String> {
        (find(name)?.get)(self)
    }
}

/// "unknown option", with the known names that share a word with it.
fn unknown(name: &str) -> String {
    let words: Vec<&str> = name.split(['.', '_']).filter(|w| w.len() > 2).collect();
    let near: Vec<&str> = settings()
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

/// `docs/options.md`: every setting with where `Options` holds it, its type, default, valid
/// values and scope (generated; a test keeps the file current).
#[cfg(any(test, feature = "test-util"))]
pub fn options_table() -> String {
    let mut s = String::from(
        "# Options\n\n\
         Generated from the table in `crates/cairn/src/options/table.rs` (`CAIRN_REWRITE=1 cargo test -p cairn \
         --test options` rewrites it). In Rust a setting is a field of `Options` (column *in Options*): most in \
         their group (`o.filters.bits_per_key`); the memory settings inside `o.memory`, which is either \
         `Memory::Budget(Budget { .., tuner: Some(Tuner { .. }) })` or `Memory::Fixed(FixedMemory { .. })`; the \
         elastic units inside `o.filters.policy` (`FilterPolicy::Elastic(ElasticUnits { .. })`). \
         `Options::set(name, value)` and OPTIONS files take the name. Sizes take binary units (`64MiB`, \
         `1.5 GiB`, `4k`).\n\n\
         Scope: **stored** settings are the database's configuration; a reopen keeps the stored value of each one \
         the caller leaves at its default (`keep_stored = false` turns that off). **open** settings are about one \
         open and always come from the caller. A setting that has no effect under the others must stay at its \
         default: the open fails otherwise, naming it.\n\n\
         | name | in Options | type | default | valid | scope | description |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for sp in settings() {
        let valid = match sp.kind {
            Kind::Choice => (sp.choices)().join(", "),
            Kind::Bool => "true, false".into(),
            _ => sp.range.describe(sp.kind),
        };
        let default = match sp.name {
            "background.compaction_threads" | "background.max_subcompactions" => "cores, at most 4".to_string(),
            _ => match (sp.kind, (sp.default)().parse::<u64>()) {
                (Kind::Bytes, Ok(n)) => super::show_bytes(n),
                (_, _) => (sp.default)(),
            },
        };
        let path = match sp.place {
            "" => sp.path.to_string(),
            place => format!("{place}.{}", sp.path),
        };
        s.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {} | {} | {} |\n",
            sp.name,
            path,
            sp.kind.name(),
            default,
            valid,
            if sp.scope == Scope::Stored { "stored" } else { "open" },
            plain_text(sp.doc),
        ));
    }
    s
}

/// A doc comment as one line of a markdown table: whitespace collapsed, rustdoc links reduced
/// to their text (`[`A`](crate::a::A)` → `` `A` ``).
#[cfg(any(test, feature = "test-util"))]
fn plain_text(doc: &str) -> String {
    let mut out = String::new();
    let mut rest = doc.split_whitespace().collect::<Vec<_>>().join(" ");
    while let Some(i) = rest.find("](") {
        let end = rest[i..].find(')').map_or(rest.len(), |j| i + j + 1);
        out.push_str(&rest[..i]);
        rest = rest[end..].to_string();
    }
    out.push_str(&rest);
    out.replace('[', "").replace('|', "\\|")
}
