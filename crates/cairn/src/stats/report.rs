//! Statistics as text for people: aligned tables, each with a one-line legend, sizes in
//! KiB/MiB/GiB, shares in %, the tuner's rules in words. The `Display` of the report types and
//! the `cairn.stats`, `cairn.filters` and `cairn.tuner` properties all come from here; the
//! machine-readable form is the types' fields, exact.

use super::counters::{FlushCount, Flushes};
use super::counters::{LevelStats, ScanStats, TreeStatsSnapshot};
use super::io::{BlockKind, IoSnapshot, KindSnapshot, ReadaheadSnapshot};
use super::types::{
    DbStats, ElasticStats, FileAccessStats, KvCacheStats, LevelInfo, MerlinAccuracy, RangeBuildStats, TransactionStats,
    TreeLevels, TunerRecord,
};
use crate::memory::MemoryUsage;
use std::fmt::{self, Display, Write as _};

/// `Debug` that lists only the fields that are not zero (or empty), so that `{:#?}` of a report
/// shows what happened rather than pages of zeros; `..` marks that some were left out. The
/// fields before `;` name the record and are always shown. The
/// destructuring makes a field added to a type without being added here a compile error.
macro_rules! debug_nonzero {
    ($($t:ident { $($id:ident),* ; $($f:ident),* $(,)? })*) => {$(
        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let $t { $($id,)* $($f),* } = self;
                let mut d = f.debug_struct(stringify!($t));
                // What names the record (a tree, a level, a file) is shown even when 0.
                $(d.field(stringify!($id), $id);)*
                let mut left_out = false;
                $(
                    if is_zero($f) {
                        left_out = true;
                    } else {
                        d.field(stringify!($f), $f);
                    }
                )*
                if left_out { d.finish_non_exhaustive() } else { d.finish() }
            }
        }
    )*};
}

/// Whether a report field is its type's zero (a `Default` that compares equal).
fn is_zero<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

debug_nonzero! {
    KindSnapshot { ; reads, bytes, cache_hits, ghost_hits }
    IoSnapshot { ; data, index, filter, range_filter, properties, meta, readahead, bytes_written, syncs }
    ReadaheadSnapshot { ; chunks, bytes, served, blocks }
    ScanStats { ; seeks, entries, memtables, l0_runs, levels, tables }
    FlushCount { ; count, bytes }
    Flushes { ; whole, partial, log, full }
    LevelStats {
        ;
        probes, filter_units_probed, filter_negatives, filter_false_positives, found, data_reads,
        data_cache_hits, unnecessary_data_reads, compactions, compaction_bytes_read,
        compaction_upper_bytes_read, compaction_bytes_written, moves, range_probes,
        range_negatives, range_false_positives,
    }
    TreeStatsSnapshot {
        name;
        gets, ranges, memtable_hits, scans, flush_bytes, flushes, switched_for_memory,
        switched_for_log, levels_added, levels_removed, expired, filter_removed, filter_changed,
        memory_merges, memory_merge_bytes_in, memory_merge_bytes_out, memory_merge_micros, levels,
    }
    FileAccessStats {
        tree, level, file;
        entries, filter_bpk, filter_policy, probes, filter_negatives, found,
        data_reads, estimated_lookups, estimated_hits, estimated_empty, exact_lookups, exact_hits,
        exact_empty, range_probes, range_empty, loaded_units,
    }
    ElasticStats { ; budget, usage, loads, unloads, load_errors, rounds, solves, loaded_per_level }
    KvCacheStats { ; capacity, usage, entries, hits, negative_hits, misses, fills, refused }
    RangeBuildStats { ; bits_per_key, built, filter_bytes, failed, misfits, read_bytes }
    TransactionStats { ; commits, conflicts, rollbacks, lock_waits, lock_timeouts, deadlocks }
    DbStats {
        ;
        io, compaction_io, trees, files, user_write_ops, user_bytes_written, wal_bytes_written,
        flush_bytes_written, compaction_bytes_written, stall_slowdowns, stall_stops, stall_micros,
        delay_micros, delayed_write_rate, pending_compaction_bytes, l0_files, l0_groups,
        memtable_bytes, cache_usage, cache_capacity, elastic, kv_cache, range_builds, transactions,
    }
}

/// Rows of cells printed in aligned columns: the first left-aligned, the others right-aligned.
pub(crate) struct Table {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Columns of words, left-aligned like the first.
    text: Vec<usize>,
}

impl Table {
    pub(crate) fn new(head: &[&str]) -> Table {
        Table {
            head: head.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            text: vec![0],
        }
    }

    /// Marks `columns` as words (left-aligned).
    pub(crate) fn words(mut self, columns: &[usize]) -> Table {
        self.text.extend_from_slice(columns);
        self
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table, each line starting with `indent`.
    pub(crate) fn render(&self, indent: &str) -> String {
        let columns = self.head.len();
        let width = |c: usize| {
            std::iter::once(&self.head)
                .chain(&self.rows)
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..columns).map(width).collect();
        let mut out = String::new();
        for r in std::iter::once(&self.head).chain(&self.rows) {
            let mut line = String::from(indent);
            for (c, w) in widths.iter().enumerate() {
                let cell = r.get(c).map_or("", String::as_str);
                let pad = w.saturating_sub(cell.chars().count());
                if c > 0 {
                    line.push_str("  ");
                }
                if self.text.contains(&c) {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Bytes with a binary unit: `512 B`, `1.4 KiB`, `23.1 MiB`, `1.02 GiB`.
pub(crate) fn size(n: u64) -> String {
    const UNITS: [(u32, &str); 4] = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
    for (shift, unit) in UNITS {
        if n >= 1 << shift {
            let x = n as f64 / (1u64 << shift) as f64;
            return if x < 10.0 {
                format!("{x:.2} {unit}")
            } else {
                format!("{x:.1} {unit}")
            };
        }
    }
    format!("{n} B")
}

/// A count with thousands separators: `1,234,567`.
pub(crate) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `part` of `whole` in percent (`–` when `whole` is 0).
pub(crate) fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "–".into()
    } else {
        format!("{:.1}%", 100.0 * part as f64 / whole as f64)
    }
}

/// A number to three significant digits, never `-0`.
pub(crate) fn num(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || x.abs() < 5e-7 {
        return "0".into();
    }
    let digits = (2 - x.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let s = format!("{x:.digits$}");
    if s.trim_start_matches('-').chars().all(|c| c == '0' || c == '.') {
        "0".into()
    } else {
        s
    }
}

/// `1 file`, `3 files`.
fn plural(n: u64, what: &str) -> String {
    format!("{} {what}{}", count(n), if n == 1 { "" } else { "s" })
}

/// Milliseconds as seconds: `12.3 s`.
fn seconds(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

impl Display for KindSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} storage reads ({}), {} cache hits ({} of lookups), {} ghost hits",
            count(self.reads),
            size(self.bytes),
            count(self.cache_hits),
            pct(self.cache_hits, self.cache_hits + self.reads),
            count(self.ghost_hits)
        )
    }
}

/// Block I/O by kind, user reads and (when given) compaction reads side by side.
fn io_table(io: &IoSnapshot, compaction: Option<&IoSnapshot>) -> String {
    let mut head = vec![
        "blocks",
        "storage reads",
        "read bytes",
        "cache hits",
        "hit rate",
        "ghost hits",
    ];
    if compaction.is_some() {
        head.extend(["compaction reads", "compaction ghost hits"]);
    }
    let mut t = Table::new(&head);
    for k in BlockKind::ALL {
        let c = io.kind(k);
        let mut row = vec![
            k.name().to_string(),
            count(c.reads),
            size(c.bytes),
            count(c.cache_hits),
            pct(c.cache_hits, c.cache_hits + c.reads),
            count(c.ghost_hits),
        ];
        if let Some(m) = compaction {
            row.extend([count(m.kind(k).reads), count(m.kind(k).ghost_hits)]);
        }
        t.row(row);
    }
    let mut o = t.render("  ");
    o.push_str(
        "  (hit rate: cache hits of all lookups of that kind; ghost hits: storage reads a cache larger by the \
         ghost cache's size would have saved)\n",
    );
    o
}

impl Display for IoSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&io_table(self, None))?;
        let ra = &self.readahead;
        if ra.chunks > 0 {
            writeln!(
                f,
                "  readahead: {} chunks, {} read, {} of it served as {} blocks, {} not",
                count(ra.chunks),
                size(ra.bytes),
                size(ra.served),
                count(ra.blocks),
                size(ra.wasted())
            )?;
        }
        writeln!(
            f,
            "  written {} in {} syncs",
            size(self.bytes_written),
            count(self.syncs)
        )
    }
}

impl Display for MemoryUsage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut t = Table::new(&["memory", "capacity", "used", ""]).words(&[3]);
        t.row(vec![
            "write memory (memtables)".into(),
            size(self.write_capacity as u64),
            size(self.write_usage as u64),
            format!("a memtable is switched at {}", size(self.write_buffer_size as u64)),
        ]);
        t.row(vec![
            "block cache".into(),
            size(self.cache_capacity as u64),
            size(self.cache_usage as u64),
            format!(
                "{} data blocks, {}{} filter units; {} of the capacity reserved for what readers pin",
                size(self.cache_data_usage as u64),
                if self.cache_index_usage > 0 {
                    format!(
                        "{} index blocks (of {}), ",
                        size(self.cache_index_usage as u64),
                        size(self.table_index_bytes as u64)
                    )
                } else {
                    String::new()
                },
                size(self.cached_filter_usage() as u64),
                size(self.cache_reserved as u64)
            ) + &if self.cache_huge_pages > 0 {
                format!(
                    "; in huge pages: {} ({} of free slots beside the cache)",
                    size(self.cache_huge_pages as u64),
                    size(self.cache_huge_page_slack as u64)
                )
            } else {
                String::new()
            },
        ]);
        if self.kv_cache_capacity > 0 {
            t.row(vec![
                "key-value cache".into(),
                size(self.kv_cache_capacity as u64),
                size(self.kv_cache_usage as u64),
                "the tables' answers for hot keys".into(),
            ]);
        }
        t.row(vec![
            "filter units".into(),
            if self.filter_capacity > 0 {
                size(self.filter_capacity as u64)
            } else {
                "–".into()
            },
            size(self.filter_usage as u64),
            format!(
                "{} pinned in table readers, the rest in the block cache",
                size(self.pinned_filter_usage as u64)
            ),
        ]);
        if self.range_filter_usage > 0 || self.range_filter_capacity != usize::MAX {
            t.row(vec![
                "range filters".into(),
                if self.range_filter_capacity == usize::MAX {
                    "–".into()
                } else {
                    size(self.range_filter_capacity as u64)
                },
                size(self.range_filter_usage as u64),
                "pinned in table readers".into(),
            ]);
        }
        t.row(vec![
            "pinned by table readers".into(),
            "–".into(),
            size(self.pinned_meta_usage as u64),
            "index blocks (unless in the block cache), fences, properties".into(),
        ]);
        f.write_str(&t.render(""))?;
        if self.ghost_capacity > 0 {
            writeln!(
                f,
                "ghost cache: {} of block ids simulated, {} ids held",
                size(self.ghost_capacity as u64),
                count(self.ghost_ids as u64)
            )?;
        }
        writeln!(f, "accounted in all: {}", size(self.total_usage() as u64))
    }
}

/// The deepest level that holds a file (`None` for an empty tree).
fn deepest(shape: &TreeLevels) -> Option<usize> {
    shape.levels.iter().rposition(|l| l.files > 0)
}

impl Display for TreeLevels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match deepest(self) {
            Some(d) => writeln!(f, "tree {:?}: deepest level L{d}", self.name)?,
            None => writeln!(f, "tree {:?}: no tables", self.name)?,
        }
        // The column appears once a tree holds range tombstones.
        let ranges = self.levels.iter().any(|l| l.range_deletions > 0);
        let mut head = vec!["level", "files", "size", "entries"];
        if ranges {
            head.push("range deletions");
        }
        let mut t = Table::new(&head);
        for (i, l) in self.levels.iter().enumerate() {
            let mut row = vec![format!("L{i}"), count(l.files as u64), size(l.bytes), count(l.entries)];
            if ranges {
                row.push(count(l.range_deletions));
            }
            t.row(row);
        }
        if !t.is_empty() {
            f.write_str(&t.render("  "))?;
        }
        Ok(())
    }
}

/// One tree's counters, with its shape when known: point lookups per level, then compactions.
fn tree_text(o: &mut String, t: &TreeStatsSnapshot, shape: Option<&TreeLevels>) {
    let _ = write!(
        o,
        "tree {:?}: {} point lookups ({} answered by memtables), {} range reads",
        t.name,
        count(t.gets),
        count(t.memtable_hits),
        count(t.ranges)
    );
    let sc = &t.scans;
    if sc.seeks > 0 {
        let per = |n: u64| n as f64 / sc.seeks as f64;
        let _ = write!(
            o,
            " ({} seeks; per seek {:.1} entries, runs merged: {:.1} memtables, {:.1} L0, {:.1} levels; {:.2} tables opened)",
            count(sc.seeks),
            per(sc.entries),
            per(sc.memtables),
            per(sc.l0_runs),
            per(sc.levels),
            per(sc.tables)
        );
    }
    match shape.map(deepest) {
        Some(Some(d)) => {
            let _ = write!(o, "; deepest level L{d}");
        }
        Some(None) => o.push_str("; no tables"),
        None => {}
    }
    if t.levels_added + t.levels_removed > 0 {
        let _ = write!(o, "; levels added {} removed {}", t.levels_added, t.levels_removed);
    }
    if t.expired > 0 {
        let _ = write!(o, "; {} expired values dropped", count(t.expired));
    }
    if t.filter_removed + t.filter_changed > 0 {
        let _ = write!(
            o,
            "; compaction filter removed {} changed {}",
            count(t.filter_removed),
            count(t.filter_changed)
        );
    }
    o.push('\n');
    let flushes: Vec<String> = t
        .flushes
        .by_kind()
        .iter()
        .filter(|(_, c)| c.count > 0)
        .map(|(k, c)| format!("{} {k} ({})", count(c.count), size(c.bytes)))
        .collect();
    if !flushes.is_empty() {
        let _ = writeln!(o, "  flushes: {}", flushes.join(", "));
    }
    if t.memory_merges > 0 {
        let _ = writeln!(
            o,
            "  memory merges: {} ({} of runs read, {} built, {:.1} s of CPU)",
            count(t.memory_merges),
            size(t.memory_merge_bytes_in),
            size(t.memory_merge_bytes_out),
            t.memory_merge_micros as f64 / 1e6
        );
    }
    let info = |i: usize| {
        shape
            .and_then(|s| s.levels.get(i))
            .cloned()
            .unwrap_or(LevelInfo::default())
    };
    let shown = |i: usize, l: &LevelStats| info(i).files > 0 || l.probes > 0 || l.compaction_bytes_written > 0;
    let mut reads = Table::new(&[
        "level",
        "files",
        "size",
        "entries",
        "probes",
        "filtered out",
        "false positives",
        "found",
        "data reads",
        "data cache hits",
        "unneeded reads",
    ]);
    let mut writes = Table::new(&[
        "level",
        "compactions",
        "read",
        "from the level above",
        "written",
        "moves",
    ]);
    for (i, l) in t.levels.iter().enumerate() {
        if !shown(i, l) {
            continue;
        }
        let s = info(i);
        reads.row(vec![
            format!("L{i}"),
            if shape.is_some() {
                count(s.files as u64)
            } else {
                "–".into()
            },
            if shape.is_some() { size(s.bytes) } else { "–".into() },
            if shape.is_some() {
                count(s.entries)
            } else {
                "–".into()
            },
            count(l.probes),
            count(l.filter_negatives),
            count(l.filter_false_positives),
            count(l.found),
            count(l.data_reads),
            count(l.data_cache_hits),
            count(l.unnecessary_data_reads),
        ]);
        if l.compactions + l.moves > 0 {
            writes.row(vec![
                format!("L{i}"),
                count(l.compactions),
                size(l.compaction_bytes_read),
                size(l.compaction_upper_bytes_read),
                size(l.compaction_bytes_written),
                count(l.moves),
            ]);
        }
    }
    if !reads.is_empty() {
        o.push_str(&reads.render("  "));
        o.push_str(
            "  (probes: tables a point lookup asked; filtered out: the filter said absent; false positives: it \
             said maybe for an absent key; data reads: blocks from storage; unneeded: blocks read for a key \
             the table did not hold)\n",
        );
    }
    if !writes.is_empty() {
        o.push_str(&writes.render("  "));
        o.push_str("  (compactions into each level; read: input bytes, of them from the level above; moves: files moved down whole)\n");
    }
}

/// What `DbStats` and the `cairn.stats` property share: writes, stalls, block I/O and the trees
/// (with their shapes when given).
fn stats_body(o: &mut String, s: &DbStats, shapes: &[TreeLevels]) {
    let _ = writeln!(
        o,
        "writes: {} from users ({} puts and deletes); WAL {}, flushes {}, compactions {}; write amplification {:.2} (tables written per user byte)",
        size(s.user_bytes_written),
        count(s.user_write_ops),
        size(s.wal_bytes_written),
        size(s.flush_bytes_written),
        size(s.compaction_bytes_written),
        s.write_amplification()
    );
    if s.stall_slowdowns + s.stall_stops == 0 {
        o.push_str("write stalls: none");
    } else {
        let _ = write!(
            o,
            "write stalls: {} write groups delayed ({:.1} s), {} stopped ({:.1} s)",
            count(s.stall_slowdowns),
            s.delay_micros as f64 / 1e6,
            count(s.stall_stops),
            s.stall_micros as f64 / 1e6
        );
    }
    if let Some(r) = s.delayed_write_rate {
        let _ = write!(o, "; writes delayed now to {}/s", size(r));
    }
    let _ = writeln!(
        o,
        "; L0 now: {} in {}; compaction pending: {}",
        plural(s.l0_files, "file"),
        plural(s.l0_groups, "run"),
        size(s.pending_compaction_bytes)
    );
    o.push_str("block I/O of user reads, and of compactions:\n");
    o.push_str(&io_table(&s.io, Some(&s.compaction_io)));
    if s.elastic.budget > 0 || s.elastic.loads > 0 {
        let e = &s.elastic;
        let _ = writeln!(
            o,
            "elastic filter units: {} of {} loaded; {} loads, {} unloads, {} unreadable; {} adjuster rounds, {} solves",
            size(e.usage),
            size(e.budget),
            count(e.loads),
            count(e.unloads),
            count(e.load_errors),
            count(e.rounds),
            count(e.solves)
        );
    }
    if s.kv_cache.capacity > 0 {
        let k = &s.kv_cache;
        let _ = writeln!(
            o,
            "key-value cache: {} of {} in {} entries; {} hits, {} negative hits, {} misses ({} answered); {} fills, {} refused",
            size(k.usage),
            size(k.capacity),
            count(k.entries),
            count(k.hits),
            count(k.negative_hits),
            count(k.misses),
            pct(k.hits + k.negative_hits, k.hits + k.negative_hits + k.misses),
            count(k.fills),
            count(k.refused)
        );
    }
    let b = &s.range_builds;
    if b.built + b.failed > 0 {
        let _ = writeln!(
            o,
            "range filters built for tables already written: {} ({}), {} failed; {} read; {:.1} bits per key on average",
            count(b.built),
            size(b.filter_bytes),
            count(b.failed),
            size(b.read_bytes),
            b.bits_per_key
        );
    }
    for t in &s.trees {
        tree_text(o, t, shapes.iter().find(|l| l.name == t.name));
    }
}

impl Display for DbStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut o = String::new();
        stats_body(&mut o, self, &[]);
        f.write_str(&o)
    }
}

/// The `cairn.stats` property.
pub(crate) fn stats_text(header: &str, s: &DbStats, shapes: &[TreeLevels], memory: &MemoryUsage) -> String {
    let mut o = format!("** cairn stats ** {header}\n");
    stats_body(&mut o, s, shapes);
    o.push_str(&memory.to_string());
    o
}

impl Display for TunerRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at {}: {} operations, {} page I/O per operation; write memory {} ({}), block cache {}",
            seconds(self.at_ms),
            count(self.ops),
            num(self.cost),
            size(self.write),
            signed_size(self.write_step),
            size(self.cache)
        )?;
        if self.filter > 0 || self.filter_step != 0 {
            write!(
                f,
                ", filter memory {} ({})",
                size(self.filter),
                signed_size(self.filter_step)
            )?;
        }
        if self.kv > 0 || self.kv_step != 0 {
            write!(f, ", key-value cache {} ({})", size(self.kv), signed_size(self.kv_step))?;
        }
        write!(f, "; {}", self.rule)
    }
}

fn signed_size(n: i64) -> String {
    match n {
        0 => "±0".into(),
        n if n > 0 => format!("+{}", size(n as u64)),
        n => format!("-{}", size(n.unsigned_abs())),
    }
}

/// The `cairn.tuner` property: one row per cycle.
pub(crate) fn tuner_text(budget: u64, history: &[TunerRecord]) -> String {
    let n = history.len();
    let mut o = format!(
        "** cairn tuner ** budget {}, {n} cycle{}\n",
        size(budget),
        if n == 1 { "" } else { "s" }
    );
    let mut t = Table::new(&[
        "time",
        "operations",
        "I/O per op",
        "write′ /MiB",
        "read′ /MiB",
        "step",
        "write memory",
        "block cache",
        "filters",
        "key-value cache",
        "why",
    ])
    .words(&[10]);
    const MIB: f64 = (1 << 20) as f64;
    for r in history {
        t.row(vec![
            seconds(r.at_ms),
            count(r.ops),
            num(r.cost),
            num(r.write_derivative * MIB),
            num(r.read_derivative * MIB),
            signed_size(r.write_step),
            size(r.write),
            size(r.cache),
            if r.filter > 0 { size(r.filter) } else { "–".into() },
            if r.kv > 0 || r.kv_step != 0 {
                format!("{} ({})", size(r.kv), signed_size(r.kv_step))
            } else {
                "–".into()
            },
            r.rule.to_string(),
        ]);
    }
    o.push_str(&t.render(""));
    o.push_str(
        "(I/O per op: the cycle's page writes and reads per operation; write′ and read′: the change of write \
         and read I/O per operation per MiB moved from the cache into write memory, negative: fewer; step: \
         memory moved into write memory)\n",
    );
    o
}

/// One file of the `cairn.filters` property: its record and how its filter is probed now.
pub(crate) struct FilterRow<'a> {
    pub file: &'a FileAccessStats,
    pub probed: String,
}

/// The range filters of one tree for `cairn.filters`.
pub(crate) struct RangeTree {
    pub tree: u32,
    /// Sampled range sizes: (upper bound of the bucket, reads).
    pub sizes: Vec<(u128, u64)>,
    /// Sampled probes per dyadic height.
    pub heights: Vec<(usize, u64)>,
    /// Per file: level, number, range reads, empty range reads, its filter's levels in words.
    pub files: Vec<(usize, u64, u64, f64, String)>,
}

/// The `cairn.filters` property.
pub(crate) fn filters_text(
    header: &str,
    lookups: u64,
    accuracy: MerlinAccuracy,
    files: &[FilterRow<'_>],
    range_header: &str,
    ranges: &[RangeTree],
) -> String {
    let mut o = format!("** cairn filters ** {header}; {} lookups recorded\n", count(lookups));
    if accuracy.cosine > 0.0 {
        let _ = writeln!(
            o,
            "Merlin's estimate of each file's empty lookups against the exact counts: cosine {:.3} (1: the same \
             proportions, which is what the allocation needs), distance {}",
            accuracy.cosine,
            num(accuracy.distance)
        );
    } else {
        o.push_str("Merlin's estimates: no empty lookups recorded yet, nothing to compare\n");
    }
    let mut t = Table::new(&[
        "file",
        "tree",
        "level",
        "entries",
        "bits/key",
        "policy",
        "probed",
        "probes",
        "found",
        "filtered out",
        "est. lookups",
        "est. empty",
        "lookups",
        "empty",
    ])
    .words(&[5, 6]);
    for r in files {
        let f = r.file;
        t.row(vec![
            f.file.to_string(),
            f.tree.to_string(),
            format!("L{}", f.level),
            count(f.entries),
            format!("{:.2}", f.filter_bpk),
            f.filter_policy.clone(),
            r.probed.clone(),
            count(f.probes),
            count(f.found),
            count(f.filter_negatives),
            count(f.estimated_lookups.round().max(0.0) as u64),
            count(f.estimated_empty.round().max(0.0) as u64),
            count(f.exact_lookups.round().max(0.0) as u64),
            count(f.exact_empty.round().max(0.0) as u64),
        ]);
    }
    o.push_str(&t.render(""));
    o.push_str(
        "(probed: yes, skip — Mnemosyne decided the filter does not pay and lookups go straight to the \
         index — or the elastic units loaded; est.: Merlin's estimates, the others exact counts)\n",
    );
    let _ = writeln!(o, "** range filters ** {range_header}");
    for r in ranges {
        let sizes: Vec<String> = r.sizes.iter().map(|(b, n)| format!("≤{b}: {}", count(*n))).collect();
        let heights: Vec<String> = r.heights.iter().map(|(h, n)| format!("h{h}: {}", count(*n))).collect();
        let _ = writeln!(
            o,
            "tree {}: sampled range sizes {}; probes per height (1 in 64 reads) {}",
            r.tree,
            if sizes.is_empty() {
                "none".into()
            } else {
                sizes.join(", ")
            },
            if heights.is_empty() {
                "none".into()
            } else {
                heights.join(", ")
            }
        );
        let mut t = Table::new(&[
            "file",
            "level",
            "range reads",
            "empty",
            "filter (height: bits per prefix)",
        ]);
        for (level, file, probes, empty, levels) in &r.files {
            t.row(vec![
                file.to_string(),
                format!("L{level}"),
                count(*probes),
                count(empty.round().max(0.0) as u64),
                levels.clone(),
            ]);
        }
        if !t.is_empty() {
            o.push_str(&t.render("  "));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_lists_what_is_not_zero() {
        let mut s = DbStats::default();
        assert_eq!(format!("{s:?}"), "DbStats { .. }");
        s.io.data.reads = 3;
        s.files.push(FileAccessStats {
            file: 7,
            probes: 2,
            ..Default::default()
        });
        assert_eq!(
            format!("{s:?}"),
            "DbStats { io: IoSnapshot { data: KindSnapshot { reads: 3, .. }, .. }, files: \
             [FileAccessStats { tree: 0, level: 0, file: 7, probes: 2, .. }], .. }"
        );
        let all = FlushCount { count: 1, bytes: 2 };
        assert_eq!(format!("{all:?}"), "FlushCount { count: 1, bytes: 2 }");
    }

    #[test]
    fn units_and_numbers() {
        assert_eq!(size(0), "0 B");
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1536), "1.50 KiB");
        assert_eq!(size(23 << 20), "23.0 MiB");
        assert_eq!(size(134_217_728), "128.0 MiB");
        assert_eq!(count(0), "0");
        assert_eq!(count(1234), "1,234");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(pct(1, 3), "33.3%");
        assert_eq!(pct(1, 0), "–");
        assert_eq!(num(-0.0), "0");
        assert_eq!(num(-4.738e-9), "0");
        assert_eq!(num(-0.004968), "-0.00497");
        assert_eq!(num(0.2480), "0.248");
        assert_eq!(num(16715.6), "16716");
    }

    #[test]
    fn tables_align() {
        let mut t = Table::new(&["level", "files", "size"]);
        t.row(vec!["L0".into(), "1".into(), "1.38 MiB".into()]);
        t.row(vec!["L10".into(), "123".into(), "22.0 MiB".into()]);
        assert_eq!(
            t.render("  "),
            "  level  files      size\n  L0         1  1.38 MiB\n  L10      123  22.0 MiB\n"
        );
    }

    /// The report types print in words and units, with no `-0`.
    #[test]
    fn reports_read_as_text() {
        let s = DbStats::default().to_string();
        assert!(
            s.contains("write stalls: none") && s.contains("L0 now: 0 files in 0 runs"),
            "{s}"
        );
        let m = MemoryUsage {
            write_capacity: 64 << 20,
            write_usage: 3 << 19,
            cache_capacity: 192 << 20,
            ..MemoryUsage::default()
        }
        .to_string();
        assert!(
            m.contains("64.0 MiB")
                && m.contains("1.50 MiB")
                && m.contains("192.0 MiB")
                && !m.contains("index blocks (of"),
            "{m}"
        );
        // Index blocks in the cache are named, with every open reader's index beside them.
        let m = MemoryUsage {
            cache_capacity: 192 << 20,
            cache_index_usage: 1 << 20,
            table_index_bytes: 2 << 20,
            ..MemoryUsage::default()
        }
        .to_string();
        assert!(
            m.contains("1.00 MiB index blocks (of 2.00 MiB)") && !m.contains("huge pages"),
            "{m}"
        );
        let m = MemoryUsage {
            cache_capacity: 512 << 20,
            cache_huge_pages: 64 << 20,
            cache_huge_page_slack: 3 << 20,
            ..MemoryUsage::default()
        };
        assert_eq!(m.total_usage(), 3 << 20);
        let m = m.to_string();
        assert!(
            m.contains("in huge pages: 64.0 MiB (3.00 MiB of free slots beside the cache)"),
            "{m}"
        );
        let r = TunerRecord {
            at_ms: 12_300,
            ops: 1234,
            cost: 0.25,
            write_derivative: -0.0,
            read_derivative: 0.0,
            cost_derivative: 0.0,
            write_step: -(1 << 20),
            filter_derivative: 0.0,
            filter_step: 0,
            rule: crate::tuning::memory::Rule::Idle,
            write: 8 << 20,
            cache: 56 << 20,
            filter: 0,
            kv_derivative: 0.0,
            kv_step: 0,
            kv: 0,
        };
        let line = r.to_string();
        assert_eq!(
            line,
            "at 12.3 s: 1,234 operations, 0.250 page I/O per operation; write memory 8.00 MiB (-1.00 MiB), \
             block cache 56.0 MiB; no writes: write memory to the cache"
        );
        let t = tuner_text(64 << 20, &[r]);
        assert!(
            !t.contains("-0 ") && t.contains("no writes: write memory to the cache"),
            "{t}"
        );
    }

    #[test]
    fn the_deepest_level_is_the_deepest_with_files() {
        let shape = TreeLevels {
            name: "t".into(),
            levels: vec![
                LevelInfo {
                    files: 2,
                    bytes: 10,
                    entries: 3,
                    range_deletions: 0,
                },
                LevelInfo::default(),
            ],
            deepest: 1,
        };
        assert!(
            shape.to_string().starts_with("tree \"t\": deepest level L0\n"),
            "{shape}"
        );
    }
}
