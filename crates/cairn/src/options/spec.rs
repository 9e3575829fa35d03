//! The option table's vocabulary: how a setting is spelled as text (sizes with units, enums by
//! name), its valid range, whether a reopen keeps it from the database's OPTIONS file, and
//! when it has an effect. The table itself is the `options!` invocation in `mod.rs`: one entry
//! per option drives the struct, its defaults, `Options::set`, the OPTIONS file, range
//! validation and the generated table in `docs/options.md`.

use super::{
    BpkPolicy, FlushPolicy, LevelTargets, MemoryComponent, MergePolicyKind, RangeFilterKind, Settings, UnitFormat,
};
use crate::sst::Compression;
use crate::wal::RecoveryMode;

/// How a setting's text is read and shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `true` / `false` (also `1` / `0`).
    Bool,
    /// A byte count: an integer with an optional binary unit (`64MiB`, `4 KiB`, `1g`).
    Bytes,
    /// A plain integer.
    Count,
    /// A decimal number.
    Float,
    /// One name of a fixed list.
    Choice,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::Bytes => "size",
            Kind::Count => "integer",
            Kind::Float => "number",
            Kind::Choice => "choice",
        }
    }
}

/// Whether a reopen keeps the stored value when the caller leaves the setting at its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The database's configuration: what shapes its files, its tuning and its memory. A
    /// reopen keeps the stored value unless the caller sets another one.
    Stored,
    /// About one open of one process (threads, direct I/O, recovery mode): the caller's value
    /// always applies.
    Open,
}

/// When a setting has an effect. A setting that has none under the other settings must stay
/// at its default: `validate` refuses it instead of ignoring it silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cond {
    Always,
    /// Bits per key decide the filters: any policy but an elastic one given filter memory.
    BitsPerKey,
    /// `memory_budget` is 0 (the regions are sized one by one).
    NoBudget,
    /// `memory_budget` is set.
    Budget,
    /// `memory_budget` is set and the filter policy is elastic (a filter region exists).
    BudgetElastic,
    /// The memory tuner runs.
    Tuner,
    /// The tuner runs with an elastic policy (a filter region to tune).
    TunerElastic,
    /// An elastic filter policy.
    Elastic,
    /// `mnemosyne-elastic`.
    MnemosyneElastic,
    /// An elastic policy without `memory_budget` (filter memory sized on its own).
    NoBudgetElastic,
    /// The partitioned memory component.
    Partitioned,
    /// The range filter is on.
    RangeFilter,
    /// The range filter is on and of kind rosetta.
    Rosetta,
    /// The range filter is on and charged to the block cache (`memory_budget`, or
    /// `index_in_block_cache`).
    RangeFilterCharged,
    /// Leveling.
    Leveling,
    /// Level targets are not `write-memory`.
    FixedTargets,
    /// No `memory_budget` and no shared `block_cache` (the engine sizes its own cache).
    OwnCache,
    /// No shared `block_cache`.
    NoSharedCache,
    /// The process allocates with glibc's malloc (Linux, the gnu target environment).
    Glibc,
}

impl Cond {
    /// The conditions a compound one is made of (a compound holds when all of them do).
    fn parts(self) -> Option<[Cond; 2]> {
        match self {
            Cond::BudgetElastic => Some([Cond::Budget, Cond::Elastic]),
            Cond::TunerElastic => Some([Cond::Tuner, Cond::Elastic]),
            Cond::NoBudgetElastic => Some([Cond::NoBudget, Cond::Elastic]),
            Cond::OwnCache => Some([Cond::NoBudget, Cond::NoSharedCache]),
            _ => None,
        }
    }

    /// Where the condition fails, something else decides the feature (a shared cache has its
    /// own settings) rather than the feature being absent: a switch set to false is then
    /// ignored, not agreed with (`cache.huge_pages = false` beside a shared cache).
    pub(crate) fn decided_elsewhere(self) -> bool {
        matches!(self, Cond::NoSharedCache | Cond::OwnCache)
    }

    pub(crate) fn holds(self, o: &Settings) -> bool {
        if let Some(parts) = self.parts() {
            return parts.iter().all(|c| c.holds(o));
        }
        let budget = o.memory_budget > 0;
        let elastic = o.bpk_policy.is_elastic();
        match self {
            Cond::BitsPerKey => !elastic || (o.filter_memory == 0 && !(budget && o.memory_filter_share > 0.0)),
            Cond::NoBudget => !budget,
            Cond::Budget => budget,
            Cond::Tuner => o.memory_tuner,
            Cond::Elastic => elastic,
            Cond::MnemosyneElastic => o.bpk_policy == BpkPolicy::MnemosyneElastic,
            Cond::Partitioned => o.memory_component == MemoryComponent::Partitioned,
            Cond::RangeFilter => o.range_filter_bits_per_key > 0.0,
            Cond::Rosetta => o.range_filter_bits_per_key > 0.0 && o.range_filter_kind == RangeFilterKind::Rosetta,
            Cond::RangeFilterCharged => o.range_filter_bits_per_key > 0.0 && (budget || o.index_in_block_cache),
            Cond::Leveling => o.merge_policy == MergePolicyKind::Leveling,
            Cond::FixedTargets => o.level_targets == LevelTargets::Fixed,
            Cond::NoSharedCache => o.block_cache.is_none(),
            Cond::Glibc => cfg!(all(target_os = "linux", target_env = "gnu")),
            _ => true,
        }
    }

    /// When the setting applies, for the docs table.
    pub(crate) fn label(self) -> String {
        if let Some(parts) = self.parts() {
            return parts.map(Cond::label).join(", ");
        }
        match self {
            Cond::BitsPerKey => "filter policy not elastic, or no filter memory",
            Cond::NoBudget => "memory.budget = 0",
            Cond::Budget => "memory.budget set",
            Cond::Tuner => "memory.tuner",
            Cond::Elastic => "elastic policy",
            Cond::MnemosyneElastic => "mnemosyne-elastic",
            Cond::Partitioned => "memtable.component = partitioned",
            Cond::RangeFilter => "range_filter.bits_per_key > 0",
            Cond::Rosetta => "range_filter.bits_per_key > 0, range_filter.kind = rosetta",
            Cond::RangeFilterCharged => "range_filter.bits_per_key > 0, memory.budget or cache.index_in_block_cache",
            Cond::Leveling => "leveling",
            Cond::FixedTargets => "compaction.level_targets = fixed",
            Cond::NoSharedCache => "no shared block_cache",
            Cond::Glibc => "glibc's malloc",
            _ => "always",
        }
        .into()
    }

    /// Why the setting has no effect under `o` (the settings that decide it, with their
    /// values): for a compound condition, the first of its parts that does not hold.
    pub(crate) fn why_not(self, o: &Settings) -> String {
        if let Some(parts) = self.parts() {
            return parts
                .into_iter()
                .find(|c| !c.holds(o))
                .map_or_else(String::new, |c| c.why_not(o));
        }
        let budget = format!("memory.budget = {}", show_bytes(o.memory_budget as u64));
        let policy = format!("filters.policy = {}", o.bpk_policy.name());
        match self {
            Cond::BitsPerKey => format!(
                "with {policy} the filter memory ({}) decides how many units are loaded; bits per key \
                 size it only when it is 0",
                if o.memory_budget > 0 {
                    "memory.filter_share of memory.budget"
                } else {
                    "memory.filter_memory"
                }
            ),
            Cond::NoBudget => format!(
                "{budget} sizes write memory, the block cache and filter memory itself (change their split \
                 with memory.write_share and memory.filter_share, or set memory.budget = 0)"
            ),
            Cond::Budget => "it applies only with memory.budget set (memory.budget = 0)".into(),
            Cond::Tuner => "it applies only with memory.tuner = true (memory.tuner = false)".into(),
            Cond::Elastic => format!(
                "only the elastic policies (elastic, mnemosyne-elastic) load filter units into filter memory ({policy})"
            ),
            Cond::MnemosyneElastic => format!("it applies only with filters.policy = mnemosyne-elastic ({policy})"),
            Cond::Partitioned => format!(
                "it applies only with memtable.component = partitioned (memtable.component = {})",
                o.memory_component.name()
            ),
            Cond::RangeFilter => "it applies only with the range filter on (range_filter.bits_per_key = 0)".into(),
            Cond::Rosetta if o.range_filter_bits_per_key > 0.0 => format!(
                "it applies only to Rosetta range filters (range_filter.kind = {})",
                o.range_filter_kind.name()
            ),
            Cond::Rosetta | Cond::RangeFilterCharged if o.range_filter_bits_per_key == 0.0 => {
                "it applies only with the range filter on (range_filter.bits_per_key = 0)".into()
            }
            Cond::RangeFilterCharged => format!(
                "range filters are bounded only where they are charged to the block cache ({budget}, \
                 cache.index_in_block_cache = false)"
            ),
            Cond::Leveling => format!(
                "Garnering sets its own level capacities (compaction.merge_policy = {})",
                o.merge_policy.show()
            ),
            Cond::FixedTargets => {
                "with compaction.level_targets = write-memory, L1's capacity follows write memory".into()
            }
            Cond::NoSharedCache => "the shared block_cache given in the options has its own capacity, high-priority pool and huge-page threshold (BlockCache::huge_pages_from)".into(),
            Cond::Glibc => "this build does not allocate with glibc's malloc (set 0)".into(),
            _ => String::new(),
        }
    }
}

/// A numeric setting's valid values.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Range {
    pub lo: f64,
    pub lo_open: bool,
    pub hi: f64,
}

/// `[lo, hi]`.
pub(crate) const fn within(lo: f64, hi: f64) -> Range {
    Range { lo, lo_open: false, hi }
}

/// `(lo, hi]`.
pub(crate) const fn above(lo: f64, hi: f64) -> Range {
    Range { lo, lo_open: true, hi }
}

/// Anything (booleans, enums, values every number of the type is fine for).
pub(crate) const ANY: Range = within(f64::NEG_INFINITY, f64::INFINITY);

impl Range {
    pub(crate) fn contains(&self, x: f64) -> bool {
        !x.is_nan() && (if self.lo_open { x > self.lo } else { x >= self.lo }) && x <= self.hi
    }

    /// "between 64 B and 64 MiB", "at least 1", "above 0 and at most 16".
    pub(crate) fn describe(&self, kind: Kind) -> String {
        let show = |x: f64| match kind {
            Kind::Bytes => show_bytes(x as u64),
            _ => show_number(x),
        };
        match (self.lo.is_finite(), self.hi.is_finite(), self.lo_open) {
            (true, true, false) => format!("between {} and {}", show(self.lo), show(self.hi)),
            (true, true, true) => format!("above {} and at most {}", show(self.lo), show(self.hi)),
            (true, false, false) => format!("at least {}", show(self.lo)),
            (true, false, true) => format!("above {}", show(self.lo)),
            (false, true, _) => format!("at most {}", show(self.hi)),
            (false, false, _) => "any value".into(),
        }
    }
}

/// One row of the option table.
pub(crate) struct Spec {
    /// The name in OPTIONS and `Options::set`: `group.setting`.
    pub name: &'static str,
    /// The struct field, also accepted by `set` and in OPTIONS files written before the names
    /// had groups.
    pub field: &'static str,
    /// Where [`Options`](super::Options) holds it: a field path, or the variant and field.
    pub path: &'static str,
    pub kind: Kind,
    pub range: Range,
    pub scope: Scope,
    pub when: Cond,
    /// The field's doc comment.
    pub doc: &'static str,
    /// The value as text (as OPTIONS stores it).
    pub get: fn(&Settings) -> String,
    /// The value as a number, for range checks (`None` for booleans and enums).
    pub number: fn(&Settings) -> Option<f64>,
    /// Sets the value from text; the error says what was wrong with it.
    pub set: fn(&mut Settings, &str) -> std::result::Result<(), String>,
    /// The valid names of an enum setting.
    pub choices: &'static [&'static str],
}

impl std::fmt::Debug for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spec").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Spec {
    /// A switch turned off: never in conflict with what would make it have no effect, when
    /// that leaves the feature absent too (see [`Cond::decided_elsewhere`]).
    pub(crate) fn is_off(&self, o: &Settings) -> bool {
        matches!(self.kind, Kind::Bool) && (self.get)(o) == "false" && !self.when.decided_elsewhere()
    }

    /// The value shown to a person: sizes with units.
    pub(crate) fn show(&self, o: &Settings) -> String {
        match (self.kind, (self.number)(o)) {
            (Kind::Bytes, Some(x)) => show_bytes(x as u64),
            _ => (self.get)(o),
        }
    }
}

/// A setting's text form, read and written (the OPTIONS file's values).
pub(crate) trait OptionValue: Sized {
    /// The valid names, for enums.
    const CHOICES: &'static [&'static str] = &[];
    fn show(&self) -> String;
    fn parse(text: &str, kind: Kind) -> std::result::Result<Self, String>;
    fn number(&self) -> Option<f64> {
        None
    }
}

impl OptionValue for bool {
    fn show(&self) -> String {
        self.to_string()
    }
    fn parse(text: &str, _: Kind) -> std::result::Result<Self, String> {
        match text.trim() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            _ => Err(format!("{text:?} is not true or false")),
        }
    }
}

macro_rules! integer_value {
    ($($t:ty),*) => {$(
        impl OptionValue for $t {
            fn show(&self) -> String {
                self.to_string()
            }
            fn parse(text: &str, kind: Kind) -> std::result::Result<Self, String> {
                let n = if kind == Kind::Bytes { parse_bytes(text)? } else {
                    text.trim().parse::<u64>().map_err(|_| format!("{text:?} is not a whole number"))?
                };
                <$t>::try_from(n).map_err(|_| format!("{text:?} is too large"))
            }
            fn number(&self) -> Option<f64> {
                Some(*self as f64)
            }
        }
    )*};
}
integer_value!(usize, u64, u32);

impl OptionValue for f64 {
    fn show(&self) -> String {
        self.to_string()
    }
    fn parse(text: &str, _: Kind) -> std::result::Result<Self, String> {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| x.is_finite())
            .ok_or_else(|| format!("{text:?} is not a number"))
    }
    fn number(&self) -> Option<f64> {
        Some(*self)
    }
}

/// Enums spelled by name; the first name of each pair is written, the others are accepted
/// (spellings of earlier OPTIONS files).
macro_rules! choice_value {
    ($t:ty: $($v:expr => $name:literal $(| $alt:literal)*),* $(,)?) => {
        impl $t {
            /// The name OPTIONS writes.
            pub(crate) fn label(self) -> &'static str {
                $(if self == $v { return $name; })*
                ""
            }
        }

        impl OptionValue for $t {
            const CHOICES: &'static [&'static str] = &[$($name),*];
            fn show(&self) -> String {
                self.label().to_string()
            }
            fn parse(text: &str, _: Kind) -> std::result::Result<Self, String> {
                match text.trim() {
                    $($name $(| $alt)* => Ok($v),)*
                    _ => Err(format!("{text:?} is not one of {}", Self::CHOICES.join(", "))),
                }
            }
        }
    };
}

choice_value!(BpkPolicy:
    BpkPolicy::Uniform => "uniform",
    BpkPolicy::Monkey => "monkey",
    BpkPolicy::Mnemosyne => "mnemosyne",
    BpkPolicy::Optimal => "optimal",
    BpkPolicy::Elastic => "elastic",
    BpkPolicy::MnemosyneElastic => "mnemosyne-elastic",
);
choice_value!(FlushPolicy:
    FlushPolicy::MaxMemory => "max-memory",
    FlushPolicy::MinLsn => "min-lsn",
    FlushPolicy::Optimal => "optimal",
);
choice_value!(MemoryComponent:
    MemoryComponent::Monolithic => "monolithic",
    MemoryComponent::Partitioned => "partitioned",
);
choice_value!(RangeFilterKind:
    RangeFilterKind::Rosetta => "rosetta",
    RangeFilterKind::Grafite => "grafite",
);
choice_value!(UnitFormat:
    UnitFormat::Standard => "standard",
    UnitFormat::CacheLocal => "cache-local",
);
choice_value!(LevelTargets:
    LevelTargets::Fixed => "fixed",
    LevelTargets::WriteMemory => "write-memory",
);
choice_value!(Compression:
    Compression::None => "none" | "None",
    Compression::Lz4 => "lz4" | "Lz4" | "LZ4",
    Compression::Zstd => "zstd" | "Zstd" | "ZSTD",
);
choice_value!(RecoveryMode:
    RecoveryMode::PointInTime => "point-in-time" | "PointInTime",
    RecoveryMode::TolerateCorruptedTail => "tolerate-corrupted-tail" | "TolerateCorruptedTail",
    RecoveryMode::AbsoluteConsistency => "absolute-consistency" | "AbsoluteConsistency",
);

impl OptionValue for crate::merge::MergeName {
    const CHOICES: &'static [&'static str] = crate::merge::BUILT_IN;
    fn show(&self) -> String {
        if self.is_none() {
            "none".into()
        } else {
            self.0.clone()
        }
    }
    fn parse(text: &str, _: Kind) -> std::result::Result<Self, String> {
        match text.trim() {
            "" | "none" => Ok(crate::merge::MergeName::default()),
            name if name.chars().any(char::is_control) => Err(format!("{text:?} is not an operator name")),
            name => Ok(crate::merge::MergeName(name.to_string())),
        }
    }
}

impl OptionValue for crate::ttl::TreeTtls {
    const CHOICES: &'static [&'static str] = &[
        "none",
        "sessions=30m,default=7d (TREE=DURATION pairs; units ms, s, m, h, d)",
    ];
    fn show(&self) -> String {
        crate::ttl::TreeTtls::show(self)
    }
    fn parse(text: &str, _: Kind) -> std::result::Result<Self, String> {
        crate::ttl::TreeTtls::parse(text)
    }
}

impl OptionValue for MergePolicyKind {
    const CHOICES: &'static [&'static str] = &["leveling", "garnering:C (0 < C <= 1, e.g. garnering:0.8)"];
    fn show(&self) -> String {
        match self {
            MergePolicyKind::Leveling => "leveling".into(),
            MergePolicyKind::Garnering { c } => format!("garnering:{c}"),
        }
    }
    fn parse(text: &str, _: Kind) -> std::result::Result<Self, String> {
        match text.trim().split_once(':') {
            None if text.trim() == "leveling" => Ok(MergePolicyKind::Leveling),
            None if text.trim() == "garnering" => Ok(MergePolicyKind::Garnering { c: 0.8 }),
            Some(("garnering", c)) => match c.trim().parse::<f64>() {
                Ok(c) if c > 0.0 && c <= 1.0 => Ok(MergePolicyKind::Garnering { c }),
                _ => Err(format!("Garnering's c must be above 0 and at most 1 (is {c:?})")),
            },
            _ => Err(format!("{text:?} is not one of {}", Self::CHOICES.join(", "))),
        }
    }
}

const KIB: u64 = 1 << 10;

/// A byte count with an optional binary unit: `4096`, `64MiB`, `64 MiB`, `1.5GiB`, `8k`. Units
/// are powers of 1024 whatever their spelling (`KB` = `KiB`), as in RocksDB's option strings.
pub(crate) fn parse_bytes(text: &str) -> std::result::Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => KIB,
        "m" | "mb" | "mib" => KIB << 10,
        "g" | "gb" | "gib" => KIB << 20,
        "t" | "tb" | "tib" => KIB << 30,
        _ => return Err(format!("{text:?} is not a size (examples: 4096, 64MiB, 1.5GiB)")),
    };
    if let Ok(n) = num.parse::<u64>() {
        return n.checked_mul(scale).ok_or_else(|| format!("{text:?} is too large"));
    }
    match num.parse::<f64>() {
        Ok(x) if x.is_finite() && scale > 1 && x * (scale as f64) < u64::MAX as f64 => Ok((x * scale as f64) as u64),
        _ => Err(format!("{text:?} is not a size (examples: 4096, 64MiB, 1.5GiB)")),
    }
}

/// Bytes for a person: `64 MiB`, `1.5 GiB`, `4097 B`.
pub(crate) fn show_bytes(n: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        let scale = 1u64 << shift;
        if n >= scale {
            let x = n as f64 / scale as f64;
            // Exact multiples and round tenths print short; anything else prints its bytes too.
            if n % scale == 0 {
                return format!("{} {unit}", n / scale);
            }
            if (x * 10.0).fract() == 0.0 {
                return format!("{x:.1} {unit}");
            }
            return format!("{x:.2} {unit} ({n} B)");
        }
    }
    format!("{n} B")
}

fn show_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}
