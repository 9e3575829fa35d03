//! Which tables' range filters range-filter memory keeps, and which it builds
//! (`db/range_filter_round.rs` runs it): a filter saves about one data-block read per empty
//! range read that reaches its table, so the filters worth memory most are those with the most
//! empty range reads per byte. Each round ranks the tables whose readers are open by that rate
//! — a filter already in memory counts [`KEEP`] times its rate, so that two filters of about
//! the same worth do not take turns being read from storage — and admits them in that order
//! while they fit; a filter that does not fit is passed over for smaller ones after it. The
//! others are unloaded and not read again until a round admits them.
//!
//! A table written before empty range reads reached its data has no filter, or fewer bits than
//! the reads now call for (range filters by workload give bits only to what reads reached
//! when the table was written). [`plan`] solves each table's bits per key with Mnemosyne's
//! sort-and-search over all of them, weighted by their empty range reads — the average fitted
//! to the memory the region has, so that when the memory cannot hold the configured bits for
//! every table, every table reached gets fewer bits instead of some getting none — and a table
//! whose filter has at least [`REBUILD_BITS`] fewer bits than its share competes for the
//! region with the filter it would get; admitted, it is built from the table's keys. A filter
//! with at least as many bits more than its share that does not fit is built again at its
//! share in the room the others left.

use super::bpk::{sort_and_search, SolverFile};

/// Weight of a filter already in memory (what reading it again costs is not counted
/// otherwise: one read of the whole block).
pub const KEEP: f64 = 2.0;

/// A candidate's empty reads per byte, a filter in memory weighted by [`KEEP`].
fn rate(c: &Candidate) -> f64 {
    let weight = if c.pinned { KEEP } else { 1.0 };
    weight * c.score / c.bytes.max(1) as f64
}

/// A table's range filter as a round sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Bytes it holds (pinned) or would hold (its block's size).
    pub bytes: u64,
    /// It is in memory now.
    pub pinned: bool,
    /// Its recent empty range reads (decayed per round).
    pub score: f64,
}

/// Whether each candidate is admitted within `capacity` bytes (parallel to `candidates`).
pub fn choose(candidates: &[Candidate], capacity: u64) -> Vec<bool> {
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    // Highest rate first; among equals, what is pinned, then the smaller (more fit), then the
    // given order.
    order.sort_by(|&a, &b| {
        let (x, y) = (&candidates[a], &candidates[b]);
        rate(y)
            .total_cmp(&rate(x))
            .then(y.pinned.cmp(&x.pinned))
            .then(x.bytes.cmp(&y.bytes))
            .then(a.cmp(&b))
    });
    let mut admitted = vec![false; candidates.len()];
    let mut used = 0u64;
    for i in order {
        let bytes = candidates[i].bytes;
        if used.saturating_add(bytes) <= capacity {
            used += bytes;
            admitted[i] = true;
        }
    }
    admitted
}

/// Bits per key a table's filter must fall short of its share by before it is built again
/// (each bit of a Rosetta level cuts its false positives by about a third; fewer is not worth
/// a read of the whole table).
pub const REBUILD_BITS: f64 = 2.0;

/// A table as a round sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Table {
    /// Entries (what a filter built from it holds).
    pub entries: f64,
    /// Its empty range reads since it was written (inherited ones included): what its share
    /// of the bits is solved by.
    pub empty: f64,
    /// Its recent empty range reads (decayed per round): what it is ranked by.
    pub score: f64,
    /// Bytes of the filter it has (in memory, or its block's), 0: none.
    pub bytes: u64,
    /// Bits of that filter proper (what its false-positive rate follows).
    pub bits: u64,
    /// That filter is in memory.
    pub pinned: bool,
}

impl Table {
    /// Bits per key of the filter it has.
    fn bpk(&self) -> f64 {
        if self.entries > 0.0 {
            self.bits as f64 / self.entries
        } else {
            0.0
        }
    }
}

/// What a round does with one table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Its filter stays in memory.
    Keep,
    /// Its filter may be read at its next range read.
    Admit,
    /// Its filter leaves memory.
    Unload,
    /// It has no filter in memory and gets none.
    Out,
    /// A filter of `bpk` bits per key is built from its keys (and replaces the one it has);
    /// `rate` orders the builds (most empty reads per byte first).
    Build { bpk: f64, rate: f64 },
}

/// The kind of filter a round builds: its false-positive rate falls by `decay` per bit per
/// key, it gives no filter under `min_bpk` bits per key, and what a filter of it holds in
/// memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kind {
    /// The false-positive rate's decay per bit per key (`RangeFilterKind::decay`).
    pub decay: f64,
    /// The fewest bits per key it builds a filter of.
    pub min_bpk: f64,
    /// Bits per key its filters hold in memory beyond their bits
    /// (`RangeFilterKind::memory_extra_bits_per_key`).
    pub extra_bpk: f64,
    /// Bytes its filters hold in memory whatever their size
    /// (`RangeFilterKind::memory_fixed_bytes`).
    pub fixed_bytes: u64,
    /// How far built filters have exceeded [`Kind::bytes`] (at least 1): a build that did not
    /// fit the room planned for it raises it, so that the same table is not read again for a
    /// filter that cannot be kept.
    pub margin: f64,
}

impl Kind {
    /// Bytes a filter of `bpk` bits per key over `entries` keys holds in memory: what a round
    /// reserves for a build.
    pub fn bytes(&self, bpk: f64, entries: f64) -> u64 {
        let bytes = (bpk + self.extra_bpk) * entries.max(0.0) / 8.0 + self.fixed_bytes as f64;
        (bytes * self.margin.max(1.0)).round() as u64
    }

    /// The average bits per key over `tables` tables of `entries` keys that range-filter
    /// memory of `capacity` bytes holds: `avg_bpk`, or fewer when the region cannot hold that
    /// much for every key (every table gets fewer bits rather than some none). Compaction
    /// outputs' bits follow it too.
    pub fn fitted_bpk(&self, avg_bpk: f64, capacity: u64, tables: usize, entries: f64) -> f64 {
        if entries <= 0.0 {
            return avg_bpk;
        }
        let bytes = capacity as f64 / self.margin.max(1.0) - (tables as u64 * self.fixed_bytes) as f64;
        avg_bpk.min((bytes * 8.0 / entries - self.extra_bpk).max(0.0))
    }
}

/// What a round within `capacity` bytes does with each of `tables` (parallel), for range
/// filters of `kind` and `avg_bpk` bits per key on average; `build`: filters may be built
/// (otherwise only the filters the tables have compete).
pub fn plan(tables: &[Table], capacity: u64, avg_bpk: f64, kind: Kind, build: bool) -> Vec<Action> {
    let wanted: Vec<f64> = if build {
        wanted_bpk(tables, capacity, avg_bpk, kind)
            .into_iter()
            .map(|w| if w < kind.min_bpk { 0.0 } else { w })
            .collect()
    } else {
        vec![0.0; tables.len()]
    };
    let mut builds: Vec<bool> =
        tables.iter().zip(&wanted).map(|(t, &w)| w > 0.0 && w >= t.bpk() + REBUILD_BITS).collect();
    let mut candidates: Vec<Candidate> = tables
        .iter()
        .zip(&wanted)
        .zip(&builds)
        .map(|((t, &w), &b)| match b {
            true => Candidate {
                bytes: kind.bytes(w, t.entries),
                pinned: false,
                score: t.score,
            },
            false => Candidate {
                bytes: t.bytes,
                pinned: t.pinned,
                score: t.score,
            },
        })
        .collect();
    let mut admitted = choose(&candidates, capacity);
    // A filter larger than its share that did not fit is built again at its share in the
    // room left (fewer bits per key rather than none).
    let used: u64 = candidates.iter().zip(&admitted).filter(|(_, &a)| a).map(|(c, _)| c.bytes).sum();
    let shrink: Vec<usize> = (0..tables.len())
        .filter(|&i| !admitted[i] && wanted[i] > 0.0 && tables[i].bpk() >= wanted[i] + REBUILD_BITS)
        .collect();
    let smaller: Vec<Candidate> = shrink
        .iter()
        .map(|&i| Candidate {
            bytes: kind.bytes(wanted[i], tables[i].entries),
            pinned: false,
            score: tables[i].score,
        })
        .collect();
    for (k, fits) in choose(&smaller, capacity.saturating_sub(used)).into_iter().enumerate() {
        let i = shrink[k];
        (admitted[i], builds[i], candidates[i]) = (fits, fits, smaller[k]);
    }
    admitted
        .into_iter()
        .enumerate()
        .map(|(i, admitted)| match (admitted, builds[i], tables[i].pinned) {
            (true, true, _) => Action::Build {
                bpk: wanted[i],
                rate: rate(&candidates[i]),
            },
            (true, false, true) => Action::Keep,
            (true, false, false) if tables[i].bytes > 0 => Action::Admit,
            (false, _, true) => Action::Unload,
            _ => Action::Out,
        })
        .collect()
}

/// What a round saw since the one before, for [`grow`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Window {
    /// Operations (writes, lookups and range reads: the memory tuner's count).
    pub ops: f64,
    /// Empty range reads that reached a table (one per table reached).
    pub empty: f64,
    /// Of them, those a range filter ruled out.
    pub negatives: f64,
    /// Of them, those a range filter let through (its false positives).
    pub false_positives: f64,
    /// Average bits per key of the filters in memory (what answered).
    pub filter_bpk: f64,
    /// Keys of every table (what filters for all of them hold).
    pub entries: f64,
    /// Storage reads one more byte of block cache saves per operation (the memory tuner's
    /// read'); `None`: no tuner, nothing to weigh the bits against.
    pub cache_marginal: Option<f64>,
}

/// The range filters' average bits per key, and how their false-positive rate scales.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Growth {
    /// The average bits per key range filters get (`range_filter.bits_per_key` at first).
    pub average: f64,
    /// `s` in the false-positive rate `s · e^(−decay · b)` at `b` bits per key: 1 until
    /// filters have answered, then fitted to their false positives (it grows with the ranges'
    /// length: Grafite's bound is `4ℓ · 2^(−b)`).
    pub scale: f64,
}

/// False positives a window needs before it fits [`Growth::scale`].
pub const FIT_FALSE_POSITIVES: f64 = 50.0;

/// Empty range reads reaching tables a window needs before it moves the average.
pub const MOVE_EMPTY: f64 = 1000.0;

/// The next [`Growth`] after window `w`, for a kind whose false-positive rate falls by
/// `decay` per bit per key, the average kept within `[least, most]`.
///
/// One more byte of filters (8/N bits per key over N keys) removes `E·s·decay·e^(−decay·b)·8/N`
/// false positives per operation (E: empty reads reaching tables per operation), each a data
/// block read; one more byte of block cache saves `m` reads (the tuner's marginal). The two
/// meet at `b* = ln(E·s·decay·8 / (N·m)) / decay`. The average moves to `b*` (clamped) only
/// when it is [`REBUILD_BITS`] away, as a table's filter is built again only then.
pub fn grow(g: Growth, w: &Window, decay: f64, least: f64, most: f64) -> Growth {
    let mut g = g;
    if w.false_positives >= FIT_FALSE_POSITIVES && w.filter_bpk > 0.0 {
        let fpr = w.false_positives / (w.false_positives + w.negatives);
        g.scale = fpr * (decay * w.filter_bpk).exp();
    }
    let Some(m) = w.cache_marginal else {
        return g;
    };
    if w.empty < MOVE_EMPTY || w.ops <= 0.0 || w.entries <= 0.0 || most <= least {
        return g;
    }
    let e = w.empty / w.ops;
    let target = if m > 0.0 {
        ((e * g.scale * decay * 8.0 / (w.entries * m)).ln() / decay).clamp(least, most)
    } else {
        most
    };
    let at_bound = (target == least || target == most) && target != g.average;
    if (target - g.average).abs() >= REBUILD_BITS || at_bound {
        g.average = target;
    }
    g
}

/// Each table's share of the bits (Mnemosyne's sort-and-search weighted by empty range reads),
/// the average fitted to `capacity`.
fn wanted_bpk(tables: &[Table], capacity: u64, avg_bpk: f64, kind: Kind) -> Vec<f64> {
    let entries: f64 = tables.iter().map(|t| t.entries.max(0.0)).sum();
    if entries <= 0.0 {
        return vec![0.0; tables.len()];
    }
    let avg = kind.fitted_bpk(avg_bpk, capacity, tables.len(), entries);
    let files: Vec<SolverFile> = tables
        .iter()
        .map(|t| SolverFile {
            entries: t.entries,
            empty: t.empty,
        })
        .collect();
    sort_and_search(&files, avg, 1.0, kind.decay).bpk
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{run_file, Case};

    #[test]
    fn range_memory_cases() {
        run_file("tuning/range_memory.txt", |c| match c.command.as_str() {
            "choose" => choose_case(c),
            "plan" => plan_case(c),
            "grow" => grow_case(c),
            other => panic!("unknown command {other}"),
        });
    }

    /// The case's input lines: a name, then `key=value` fields (and bare flags) for `set`.
    fn rows<T>(c: &Case, blank: T, mut set: impl FnMut(&mut T, &str, &str)) -> Vec<(String, T)>
    where
        T: Copy,
    {
        c.input
            .iter()
            .map(|l| {
                let mut parts = l.split_whitespace();
                let name = parts.next().unwrap_or_default().to_string();
                let mut row = blank;
                for p in parts {
                    let (k, v) = p.split_once('=').unwrap_or((p, ""));
                    set(&mut row, k, v);
                }
                (name, row)
            })
            .collect()
    }

    fn choose_case(c: &Case) -> String {
        let capacity = c.arg("capacity", 0u64);
        let blank = Candidate {
            bytes: 0,
            pinned: false,
            score: 0.0,
        };
        let parsed = rows(c, blank, |cand, k, v| match k {
            "bytes" => cand.bytes = v.parse().unwrap(),
            "score" => cand.score = v.parse().unwrap(),
            "pinned" => cand.pinned = true,
            _ => panic!("unknown field {k}"),
        });
        let cands: Vec<Candidate> = parsed.iter().map(|(_, c)| *c).collect();
        let admitted = choose(&cands, capacity);
        parsed
            .iter()
            .zip(admitted)
            .map(|((name, c), a)| {
                let what = match (a, c.pinned) {
                    (true, true) => "keep",
                    (true, false) => "admit",
                    (false, true) => "unload",
                    (false, false) => "out",
                };
                format!("{name} {what}\n")
            })
            .collect()
    }

    fn plan_case(c: &Case) -> String {
        let capacity = c.arg("capacity", 0u64);
        let avg = c.arg("avg", 10.0f64);
        let kind = Kind {
            decay: c.arg("decay", crate::filter::bloom::LN2_SQ),
            min_bpk: c.arg("min_bpk", 1.0f64),
            extra_bpk: c.arg("extra_bpk", 0.0f64),
            fixed_bytes: c.arg("fixed_bytes", 0u64),
            margin: c.arg("margin", 1.0f64),
        };
        let build = c.has("build");
        let blank = Table {
            entries: 0.0,
            empty: 0.0,
            score: 0.0,
            bytes: 0,
            bits: 0,
            pinned: false,
        };
        let parsed = rows(c, blank, |t, k, v| match k {
            "entries" => t.entries = v.parse().unwrap(),
            "empty" => t.empty = v.parse().unwrap(),
            "score" => t.score = v.parse().unwrap(),
            "bytes" => t.bytes = v.parse().unwrap(),
            "bits" => t.bits = v.parse().unwrap(),
            "pinned" => t.pinned = true,
            _ => panic!("unknown field {k}"),
        });
        // Bits default to the bytes' (a filter whose fixed fields are not counted).
        let tables: Vec<Table> = parsed
            .iter()
            .map(|(_, t)| Table {
                bits: if t.bits == 0 { t.bytes * 8 } else { t.bits },
                ..*t
            })
            .collect();
        parsed
            .iter()
            .zip(plan(&tables, capacity, avg, kind, build))
            .map(|((name, _), a)| match a {
                Action::Build { bpk, .. } => format!("{name} build {bpk:.1}\n"),
                other => format!("{name} {}\n", format!("{other:?}").to_lowercase()),
            })
            .collect()
    }
    /// `grow average= [scale=] decay= least= most=`, then one window per line (`ops= empty=
    /// neg= fp= bpk= entries= [m=]`, no `m`: no tuner): the growth after each.
    fn grow_case(c: &Case) -> String {
        let mut g = Growth {
            average: c.arg("average", 10.0f64),
            scale: c.arg("scale", 1.0f64),
        };
        let (decay, least, most) = (c.arg("decay", std::f64::consts::LN_2), c.arg("least", 10.0), c.arg("most", 22.0));
        let mut out = String::new();
        for line in c.input.iter().filter(|l| !l.trim().is_empty()) {
            let mut w = Window::default();
            for kv in line.split_whitespace() {
                let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("{kv}: expected key=value"));
                let x: f64 = v.parse().unwrap();
                match k {
                    "ops" => w.ops = x,
                    "empty" => w.empty = x,
                    "neg" => w.negatives = x,
                    "fp" => w.false_positives = x,
                    "bpk" => w.filter_bpk = x,
                    "entries" => w.entries = x,
                    "m" => w.cache_marginal = Some(x),
                    _ => panic!("unknown field {k}"),
                }
            }
            g = grow(g, &w, decay, least, most);
            out.push_str(&format!("average {:.2} scale {:.3}\n", g.average, g.scale));
        }
        out
    }
}
