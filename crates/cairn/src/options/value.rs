//! How a setting's value is written as text and read back: sizes with binary units, enums by
//! name, valid ranges described for a person.

use super::{BpkPolicy, FlushPolicy, LevelTargets, MemoryComponent, MergePolicyKind, RangeFilterKind, UnitFormat};
use crate::merge::MergeOperator;
use crate::sst::Compression;
use crate::wal::RecoveryMode;
use std::sync::Arc;

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
    #[cfg(any(test, feature = "test-util"))]
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

/// A setting's value as text (the OPTIONS file's form) and back.
pub(crate) trait Value: Sized {
    /// The valid names, for enums.
    const CHOICES: &'static [&'static str] = &[];
    fn show(&self) -> String;
    fn parse(text: &str, kind: Kind) -> std::result::Result<Self, String>;
}

impl Value for bool {
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
        impl Value for $t {
            fn show(&self) -> String {
                self.to_string()
            }
            fn parse(text: &str, kind: Kind) -> std::result::Result<Self, String> {
                let n = if kind == Kind::Bytes { parse_bytes(text)? } else {
                    text.trim().parse::<u64>().map_err(|_| format!("{text:?} is not a whole number"))?
                };
                <$t>::try_from(n).map_err(|_| format!("{text:?} is too large"))
            }
        }
    )*};
}
integer_value!(usize, u64, u32);

impl Value for f64 {
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
}

/// Enums spelled by name, with `name()` and `parse(name)` for users.
macro_rules! choice_value {
    ($t:ty: $($v:expr => $name:literal),* $(,)?) => {
        impl $t {
            /// The setting's name (as in OPTIONS).
            pub fn name(self) -> &'static str {
                $(if self == $v { return $name; })*
                ""
            }

            /// The setting named `name`.
            pub fn parse(name: &str) -> Option<Self> {
                <Self as Value>::parse(name, Kind::Choice).ok()
            }
        }

        impl Value for $t {
            const CHOICES: &'static [&'static str] = &[$($name),*];
            fn show(&self) -> String {
                self.name().to_string()
            }
            fn parse(text: &str, _: Kind) -> std::result::Result<Self, String> {
                match text.trim() {
                    $($name => Ok($v),)*
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
    Compression::None => "none",
    Compression::Lz4 => "lz4",
    Compression::Zstd => "zstd",
);
choice_value!(RecoveryMode:
    RecoveryMode::PointInTime => "point-in-time",
    RecoveryMode::TolerateCorruptedTail => "tolerate-corrupted-tail",
    RecoveryMode::AbsoluteConsistency => "absolute-consistency",
);

/// The merge operator, by name: a built-in is made from its name; any other name stands for
/// an operator the caller must give as `Options::merge_operator` at open.
impl Value for Option<Arc<dyn MergeOperator>> {
    const CHOICES: &'static [&'static str] = crate::merge::BUILT_IN;
    fn show(&self) -> String {
        self.as_ref().map_or_else(|| "none".into(), |op| op.name())
    }
    fn parse(text: &str, _: Kind) -> std::result::Result<Self, String> {
        match text.trim() {
            "" | "none" => Ok(None),
            name if name.chars().any(char::is_control) => Err(format!("{text:?} is not an operator name")),
            name => Ok(Some(crate::merge::by_name(name))),
        }
    }
}

impl Value for crate::ttl::TreeTtls {
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

impl Value for MergePolicyKind {
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
