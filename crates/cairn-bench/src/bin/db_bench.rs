//! A db_bench-compatible runner: RocksDB db_bench's flag names, key encoding, per-thread
//! operation counts and output line, over any engine adapter (`--engine`), so one command
//! line runs the same experiment on cairn, on RocksDB through the adapter, and on Debian's
//! `db_bench` binary.
//!
//! ```sh
//! cargo run --release -p cairn-bench --bin db_bench -- --benchmarks=fillrandom,readrandom \
//!     --num=1000000 --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=none
//! ```

use cairn_bench::engine::{self, Engine, EngineArgs};
use cairn_bench::keys::{absent_key, db_bench_key, KeyDist};
use cairn_bench::peak_rss_bytes;
use cairn_bench::report::{CairnMetrics, Latencies, Phase, RunReport};
use cairn_bench::{plot, timeline};
use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    rename_all = "snake_case",
    about = "db_bench-compatible benchmarks for cairn, RocksDB and fjall"
)]
struct Args {
    /// Comma-separated: fillseq, fillrandom, overwrite, readrandom, readmissing,
    /// multireadrandom (batches of --batch_size keys in one multi_get), readseq,
    /// readreverse, seekrandom, rangerandom (our benchmark: range queries, `--empty_ratio` of
    /// them empty), rangenonempty (ours: range queries that each start at a key),
    /// readwhilewriting, readrandomwriterandom, deleterandom, deleterange:P (ours: one range
    /// delete of the first P% of the keys), deleteranges:N:W (ours: N range deletes of W keys
    /// each, at random), mergerandom (8-byte counters through --merge_operator=uint64add),
    /// updaterandom (the same counters by get and put), checkpoint (ours: one checkpoint while
    /// a writer runs), backup (into `<db>.backup`, incremental after the first), restore (the
    /// newest backup into `<db>.restored`), counters (mergerandom with
    /// --merge_operator, updaterandom without: one phase name for both), compact, flush,
    /// waitforcompaction, stats. `NAME@LABEL` runs NAME as
    /// a phase called `NAME@LABEL` (the same benchmark twice in one run); `NAME/DIST` (ours)
    /// draws the phase's keys from DIST instead of `--key_dist` (a workload that changes phase:
    /// `readrandom@a/zipf:0.9,readrandom@b/uniform`).
    #[arg(long, default_value = "fillrandom,readrandom")]
    benchmarks: String,
    #[arg(long, default_value_t = 1_000_000)]
    num: u64,
    /// Reads per thread per read benchmark (-1: num).
    #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
    reads: i64,
    #[arg(long, default_value_t = 16)]
    key_size: usize,
    /// number (db_bench's: the 8-byte big-endian number, then `'0'` padding) | string (`user:`
    /// and the zero-padded decimal number, `key_size` bytes in all).
    #[arg(long, default_value = "number")]
    key_format: String,
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    /// Threads per benchmark; each does the full count, as in db_bench.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    #[arg(long)]
    db: Option<PathBuf>,
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_parser = cairn_bench::flag_bool)]
    use_existing_db: bool,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Entries each seekrandom visits after its seek.
    #[arg(long, default_value_t = 0)]
    seek_nexts: usize,
    /// seekrandom seeks to the last key ≤ its target and walks backward (RocksDB's flag).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_parser = cairn_bench::flag_bool)]
    reverse_iterator: bool,
    /// Key values each rangerandom query spans (our flag): `[lo, lo + R)`. A comma-separated
    /// list runs one phase per size (`rangerandom-R`).
    #[arg(long, default_value = "16", value_delimiter = ',')]
    range_size: Vec<u64>,
    /// Key numbers are written as `k × stride` (our flag; default 1): strides above 1 leave gaps
    /// of `stride − 1` absent values between keys, inside every table's key range, where
    /// rangerandom's empty ranges (`--empty_ratio`) and readmissing-style absent keys lie.
    #[arg(long, default_value_t = 1)]
    key_stride: u64,
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_parser = cairn_bench::flag_bool)]
    sync: bool,
    /// Keys per write batch of the fill benchmarks (fillrandom, fillseq, overwrite; one tree),
    /// and per `multi_get` of multireadrandom.
    #[arg(long, default_value_t = 1)]
    batch_size: u64,
    /// multireadrandom as a loop of single lookups instead of one multi_get per batch (ours:
    /// what a batch saves over the loop, in one comparison).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_parser = cairn_bench::flag_bool)]
    multi_get_loop: bool,
    /// fillseq as a bulk load (ours): its keys and values written into external tables of
    /// --target_file_size_base bytes by the engine's table writer (RocksDB's SstFileWriter),
    /// then added in one ingestion that moves them, on one thread.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_parser = cairn_bench::flag_bool)]
    bulk_load: bool,
    /// Print latency percentiles after each benchmark, timing every operation (otherwise one
    /// in 8 is timed, for the percentiles of the JSON report).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_parser = cairn_bench::flag_bool)]
    histogram: bool,
    /// Keep every lookup key and, after each phase with lookups, replay them all against the
    /// current tree with filters off to get each file's exact empty lookups, and compare
    /// Merlin's estimates with them (cairn; our flag; for Merlin's accuracy experiment).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, value_parser = cairn_bench::flag_bool)]
    merlin_truth: bool,
    /// Share of operations of readrandomwriterandom that are lookups, in percent (RocksDB's
    /// flag).
    #[arg(long, default_value_t = 90)]
    readwritepercent: u32,
    /// Fraction of readrandom/readwhilewriting lookups for absent keys that sort between
    /// existing keys, and of rangerandom queries that lie in a gap between keys (our flag).
    #[arg(long, default_value_t = 0.0)]
    empty_ratio: f64,
    /// uniform | zipf:θ | normal:σ | latest (our flag).
    #[arg(long, default_value = "uniform")]
    key_dist: String,
    /// Key distribution of fillrandom and overwrite (our flag; default: --key_dist), so one
    /// run loads uniform keys and then reads skewed ones.
    #[arg(long)]
    fill_key_dist: Option<String>,
    /// Every N lookups of a phase the popular keys move to another part of the key space
    /// (each key number shifts by a further 0.382 × num; our flag; 0: never).
    #[arg(long, default_value_t = 0)]
    hot_shift_every: u64,
    /// Record what each window of N lookups or range reads cost (seconds, unnecessary data
    /// reads, blocks read) in the JSON report (our flag; 0: no windows).
    #[arg(long, default_value_t = 0)]
    window: u64,
    /// Write every phase's figures as JSON to this file (our flag).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw L0 files and pending compaction bytes over the run into this PNG (our flag).
    #[arg(long)]
    timeline_png: Option<PathBuf>,
    /// Draw cairn's memory-tuner trajectory (write memory, I/O per operation) into this PNG
    /// (our flag; with --memory_tuner=1).
    #[arg(long)]
    tuner_png: Option<PathBuf>,
    /// Trees (column families) the writes and lookups spread over (our flag; cairn only).
    #[arg(long, default_value_t = 1)]
    num_trees: usize,
    /// `X-Y`: X% of the operations go to the first Y% of the trees, uniformly within each
    /// group (our flag; the paper's hotspot distribution; default: uniform over the trees).
    #[arg(long)]
    tree_skew: Option<String>,
    /// Seconds between samples of the compaction debt (our flag).
    #[arg(long, default_value_t = 0.25)]
    timeline_every: f64,
    #[command(flatten)]
    engine: EngineArgs,
}

/// readwhilewriting's background writer: runs until the flag is set.
type Writer<'a> = dyn Fn(&mut StdRng, &AtomicBool) + Sync + 'a;

/// What one thread did in a phase.
#[derive(Default)]
struct Tally {
    ops: u64,
    /// Transaction attempts the engine refused (each retried until it commits).
    aborts: u64,
    /// Transactions committed.
    txns: u64,
    /// Point lookups among `ops`.
    lookups: u64,
    bytes: u64,
    found: u64,
    /// Every operation but point lookups.
    lat: Latencies,
    /// Point lookups.
    get_lat: Latencies,
}

impl Tally {
    /// Runs a transaction until the engine commits it (timed with its retries), counting it
    /// and the attempts the engine refused.
    fn transaction(&mut self, mut attempt: impl FnMut() -> cairn_bench::engine::EResult<bool>) {
        let aborts = self.lat.time(|| {
            let mut aborts = 0;
            while !attempt()? {
                aborts += 1;
            }
            Ok::<_, cairn_bench::engine::EngineError>(aborts)
        });
        self.aborts += aborts.unwrap_or_else(|e| fail(e));
        self.txns += 1;
    }
}

/// Values as db_bench makes them: slices of one pre-generated random buffer at moving offsets
/// (random bytes, so compression settings flatter no engine), costing nothing per write.
struct Values {
    buf: Vec<u8>,
    pos: usize,
}

impl Values {
    fn new(rng: &mut StdRng) -> Self {
        let mut buf = vec![0u8; 1 << 20];
        rng.fill(&mut buf[..]);
        Values { buf, pos: 0 }
    }

    fn next(&mut self, len: usize) -> &[u8] {
        if len > self.buf.len() {
            self.buf.resize(len, 0x5a);
        }
        if self.pos + len > self.buf.len() {
            self.pos = 0;
        }
        self.pos += len.max(1);
        let start = self.pos - len.max(1);
        &self.buf[start..start + len]
    }
}

/// At a window's end: lookups, seconds, unnecessary data reads and blocks read so far.
type WindowSample = (u64, f64, Option<u64>, Option<cairn_bench::engine::BlockReads>);

struct Bench<'a> {
    args: &'a Args,
    db: &'a dyn Engine,
    /// `--key_dist`, then each `NAME/DIST` phase's distribution in the order of the phases.
    dists: Vec<KeyDist>,
    /// The running phase's entry of `dists`.
    dist_now: std::sync::atomic::AtomicUsize,
    fill_dist: KeyDist,
    phase_no: std::sync::atomic::AtomicU64,
    /// Every lookup key so far (`--merlin_truth`).
    history: std::sync::Mutex<Vec<Vec<u8>>>,
    /// Lookups of the running phase (with `--hot_shift_every` or `--window`).
    phase_lookups: std::sync::atomic::AtomicU64,
    /// Cumulative samples at each window's end (`--window`).
    windows: std::sync::Mutex<Vec<WindowSample>>,
    /// When the running phase started.
    phase_start: std::sync::Mutex<Instant>,
    /// `--num_trees`, `--tree_skew`.
    trees: cairn_bench::keys::TreeChoice,
    /// The database directory.
    dir: PathBuf,
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("db_bench: {msg}");
    std::process::exit(1)
}

fn progress(name: &str, total: u64) -> ProgressBar {
    let pb = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template("{prefix:>12} [{bar:40}] {pos}/{len} {per_sec} eta {eta}") {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_prefix(name.to_string());
    pb
}

impl Bench<'_> {
    /// The running phase's key distribution.
    fn dist(&self) -> &KeyDist {
        &self.dists[self.dist_now.load(std::sync::atomic::Ordering::Relaxed)]
    }

    /// The tree an operation goes to (`--num_trees`, `--tree_skew`).
    fn pick_tree(&self, rng: &mut StdRng) -> usize {
        self.trees.pick(rng)
    }

    /// The key value written for key number `k`.
    fn stride(&self, k: u64) -> u64 {
        k.wrapping_mul(self.args.key_stride)
    }

    fn reads(&self) -> u64 {
        u64::try_from(self.args.reads).unwrap_or(self.args.num)
    }

    fn key_size(&self, name: &str) -> usize {
        // db_bench's readmissing looks up keys one byte longer than any written.
        self.args.key_size + usize::from(name.starts_with("readmissing"))
    }

    /// Runs `body` on `threads` threads, each with its own seeded generator, and reports.
    fn phase(
        &self,
        name: &str,
        per_thread: u64,
        body: impl Fn(&mut StdRng, &mut Tally, &ProgressBar) + Sync,
        writer: Option<&Writer<'_>>,
    ) -> Phase {
        let phase_no = self.phase_no.fetch_add(1, Ordering::Relaxed) + 1;
        let threads = self.args.threads.max(1);
        let seed = self.args.seed.wrapping_mul(1_000_003).wrapping_add(phase_no << 16);
        let pb = progress(name, per_thread * threads as u64);
        let before = self.db.as_cairn().map(|d| d.stats());
        let (wrote_before, cpu_before) = (cairn_bench::process_write_bytes(), cairn_bench::process_cpu_secs());
        let fp_before = self.db.filter_false_positives();
        let reads_before = self.db.block_reads();
        let scans_before = self.db.scan_counters();
        self.phase_lookups.store(0, Ordering::Relaxed);
        if let Ok(mut w) = self.windows.lock() {
            w.clear();
            w.push((0, 0.0, self.unnecessary(), reads_before));
        }
        if let Ok(mut t) = self.phase_start.lock() {
            *t = Instant::now();
        }
        let done = AtomicBool::new(false);
        let t0 = Instant::now();
        let tallies: Vec<Tally> = std::thread::scope(|s| {
            let bg = writer.map(|w| {
                let done = &done;
                s.spawn(move || w(&mut StdRng::seed_from_u64(seed ^ 0xfeed), done))
            });
            let handles: Vec<_> = (0..threads as u64)
                .map(|t| {
                    let (body, pb) = (&body, &pb);
                    s.spawn(move || {
                        let mut rng = StdRng::seed_from_u64(seed + t);
                        let mut tally = Tally {
                            // Every operation timed only for --histogram (as db_bench does).
                            lat: Latencies::sampled(if self.args.histogram { 1 } else { 8 }),
                            get_lat: Latencies::sampled(if self.args.histogram { 1 } else { 8 }),
                            ..Tally::default()
                        };
                        body(&mut rng, &mut tally, pb);
                        tally
                    })
                })
                .collect();
            let tallies = handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| fail("a benchmark thread panicked")))
                .collect();
            done.store(true, Ordering::Relaxed);
            if let Some(h) = bg {
                h.join().unwrap_or_else(|_| fail("the writer thread panicked"));
            }
            tallies
        });
        let secs = t0.elapsed().as_secs_f64();
        pb.finish_and_clear();
        let (mut ops, mut lookups, mut bytes, mut found, mut aborts, mut txns) = (0, 0, 0, 0, 0, 0);
        let (mut lat, mut gets, mut others) = (Latencies::default(), Latencies::default(), Latencies::default());
        for t in &tallies {
            ops += t.ops;
            lookups += t.lookups;
            bytes += t.bytes;
            found += t.found;
            aborts += t.aborts;
            txns += t.txns;
            lat.merge(&t.lat);
            lat.merge(&t.get_lat);
            gets.merge(&t.get_lat);
            others.merge(&t.lat);
        }
        let mut p = Phase::new(name, ops, secs, threads);
        p.device_write_bytes = wrote_before
            .zip(cairn_bench::process_write_bytes())
            .map(|(b, a)| a.saturating_sub(b));
        p.cpu_secs = cpu_before.zip(cairn_bench::process_cpu_secs()).map(|(b, a)| a - b);
        if name.starts_with("seekrandom") || name.starts_with("rangerandom") || name.starts_with("rangenonempty") {
            lookups = ops;
        }
        let is_lookup = lookups > 0;
        let mut extra = if is_lookup {
            p.found = Some(found);
            format!(" ({found} of {lookups} found)")
        } else {
            String::new()
        };
        if name.starts_with("tx") {
            p.aborts = Some(aborts);
            p.transactions = Some(txns);
            extra += &format!(" ({txns} transactions, {aborts} aborted attempts)");
        }
        p.print_db_bench(bytes, &extra);
        if let (Some(w), Some(c)) = (p.device_write_bytes, p.cpu_secs) {
            println!("  process: {} MB written to storage, {c:.1} CPU s", w >> 20);
        }
        p.latency = Some(lat.summary());
        if lookups > 0 && lookups < ops {
            // Mixed phases: lookups and the other operations apart.
            p.by_op.insert("get".into(), gets.summary());
            p.by_op.insert("other".into(), others.summary());
        }
        if self.args.histogram {
            lat.summary().print_db_bench("op");
        }
        if let (Some(b), Some(a), true) = (reads_before, self.db.block_reads(), lookups > 0) {
            let r = cairn_bench::report::ReadsPerLookup::between(b, a, lookups);
            println!(
                "  blocks read per lookup: data {:.4}, filter {:.4}, index {:.4}",
                r.data, r.filter, r.index
            );
            p.block_reads_per_lookup = Some(r);
            p.cache = self.db.cache_accounting();
            if let Some(c) = &p.cache {
                println!("  {}", c.line());
            }
        }
        if let (Some(b), Some(a)) = (scans_before, self.db.scan_counters()) {
            p.scans = cairn_bench::report::PerSeek::between(b, a);
            if let Some(sc) = &p.scans {
                println!("  scans {}", sc.line());
            }
        }
        // Operations the windows counted: the lookups, or the range reads.
        let counted = self.phase_lookups.load(Ordering::Relaxed);
        if self.args.window > 0 && counted > 0 {
            let mut w = self.windows.lock().map(|w| w.clone()).unwrap_or_default();
            w.push((counted, secs, self.unnecessary(), self.db.block_reads()));
            p.windows = w
                .windows(2)
                .map(|pair| {
                    let ((_, _, u0, r0), (n1, s1, u1, r1)) = (pair[0], pair[1]);
                    cairn_bench::report::Window {
                        lookups: n1,
                        secs: s1,
                        unnecessary: u0.zip(u1).map(|(a, b)| b.saturating_sub(a)),
                        reads: r0.zip(r1).map(|(a, b)| b.since(a)),
                    }
                })
                .collect();
        }
        if let (Some(b), Some(a), true) = (fp_before, self.db.filter_false_positives(), lookups > 0) {
            let per = a.saturating_sub(b) as f64 / lookups as f64;
            println!("  filter false positives per lookup {per:.4}");
            p.false_positives_per_lookup = Some(per);
        }
        if let (Some(before), Some(db)) = (before, self.db.as_cairn()) {
            let mut m = CairnMetrics::between(&before, &db.stats(), lookups, db);
            m.print();
            if self.args.merlin_truth && lookups > 0 {
                let (d, c) = self.replayed_accuracy(db);
                println!(
                    "  merlin vs replayed lookups: distance {d:.1}, cosine {c:.3} ({} lookups replayed)",
                    self.history.lock().map_or(0, |h| h.len())
                );
                m.replayed_distance = Some(d);
                m.replayed_cosine = Some(c);
            }
            p.cairn = Some(m);
        }
        p
    }

    fn fill(&self, name: &str, sequential: bool) -> Phase {
        let a = self.args;
        let db = self.db;
        let next = std::sync::atomic::AtomicU64::new(0);
        self.phase(
            name,
            a.num,
            |rng, t, pb| {
                let (mut key, mut values) = (Vec::new(), Values::new(rng));
                if a.batch_size > 1 {
                    return self.fill_batches(rng, t, pb, sequential, &next);
                }
                for i in 0..a.num {
                    let k = if sequential {
                        // Threads share one sequence so fillseq stays sequential overall.
                        next.fetch_add(1, Ordering::Relaxed) % a.num
                    } else {
                        self.fill_dist.next(a.num, rng)
                    };
                    db_bench_key(self.stride(k), a.key_size, &mut key);
                    let value = values.next(a.value_size);
                    let tree = self.pick_tree(rng);
                    t.lat
                        .time(|| db.put_in(tree, &key, value, a.sync))
                        .unwrap_or_else(|e| fail(e));
                    t.ops += 1;
                    t.bytes += (a.key_size + a.value_size) as u64;
                    if i % 1024 == 1023 {
                        pb.inc(1024);
                    }
                }
            },
            None,
        )
    }

    /// The fill loop with `--batch_size` keys per write (each batch timed as one operation's
    /// latency; ops count keys).
    fn fill_batches(
        &self,
        rng: &mut StdRng,
        t: &mut Tally,
        pb: &indicatif::ProgressBar,
        sequential: bool,
        next: &std::sync::atomic::AtomicU64,
    ) {
        let a = self.args;
        let mut values = Values::new(rng);
        let mut done = 0;
        while done < a.num {
            let n = a.batch_size.min(a.num - done);
            let mut entries = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let k = if sequential {
                    next.fetch_add(1, Ordering::Relaxed) % a.num
                } else {
                    self.fill_dist.next(a.num, rng)
                };
                let mut key = Vec::new();
                db_bench_key(self.stride(k), a.key_size, &mut key);
                entries.push((key, values.next(a.value_size).to_vec()));
            }
            t.lat
                .time(|| self.db.put_batch(&entries, a.sync))
                .unwrap_or_else(|e| fail(e));
            t.ops += n;
            t.bytes += n * (a.key_size + a.value_size) as u64;
            pb.inc(n);
            done += n;
        }
    }

    /// Unnecessary data-block reads so far (cairn's counter, or the engine's false positives).
    fn unnecessary(&self) -> Option<u64> {
        match self.db.as_cairn() {
            Some(db) => Some(db.stats().total(|l| l.unnecessary_data_reads)),
            None => self.db.filter_false_positives(),
        }
    }

    /// Counts one operation of the phase (its number is returned) and samples a window at
    /// every `--window` operations.
    fn count_for_window(&self) -> u64 {
        let a = self.args;
        let n = self.phase_lookups.fetch_add(1, Ordering::Relaxed);
        if a.window > 0 && n > 0 && n % a.window == 0 {
            let secs = self
                .phase_start
                .lock()
                .map(|t| t.elapsed().as_secs_f64())
                .unwrap_or(0.0);
            let sample = (n, secs, self.unnecessary(), self.db.block_reads());
            if let Ok(mut w) = self.windows.lock() {
                w.push(sample);
            }
        }
        n
    }

    fn lookup(&self, rng: &mut StdRng, key_size: usize, t: &mut Tally, key: &mut Vec<u8>) {
        self.lookup_key(rng, key_size, key);
        let tree = self.pick_tree(rng);
        if let Some(len) = t.get_lat.time(|| self.db.get_in(tree, key)).unwrap_or_else(|e| fail(e)) {
            t.found += 1;
            t.bytes += (key.len() + len) as u64;
        }
        t.ops += 1;
        t.lookups += 1;
        if self.args.merlin_truth {
            if let Ok(mut h) = self.history.lock() {
                h.push(key.clone());
            }
        }
    }

    /// The key a lookup asks for, into `key`: drawn by the distribution, shifted by the hot
    /// set's moves, absent for `--empty_ratio` of them.
    fn lookup_key(&self, rng: &mut StdRng, key_size: usize, key: &mut Vec<u8>) {
        let a = self.args;
        let mut k = self.dist().next(a.num, rng);
        if a.hot_shift_every > 0 || a.window > 0 {
            let n = self.count_for_window();
            if let Some(shifts) = n.checked_div(a.hot_shift_every) {
                let step = (a.num as f64 * 0.381_966) as u64;
                k = (k + shifts % a.num.max(1) * step) % a.num.max(1);
            }
        }
        let k = self.stride(k);
        if self.args.empty_ratio > 0.0 && rng.gen_bool(self.args.empty_ratio.min(1.0)) {
            absent_key(k, key_size, key);
        } else {
            db_bench_key(k, key_size, key);
        }
    }

    /// multireadrandom: `--reads` lookups per thread in batches of `--batch_size` keys, each
    /// batch one `multi_get` (RocksDB's batched MultiGet); every key counts as an operation,
    /// each at its batch's time per key.
    fn multi_read_random(&self, name: &str) -> Phase {
        let n = self.reads();
        let ks = self.key_size(name);
        let batch = self.args.batch_size.max(1);
        let body = |rng: &mut StdRng, t: &mut Tally, pb: &ProgressBar| {
            let mut keys = vec![Vec::new(); batch as usize];
            let mut done = 0;
            while done < n {
                let m = batch.min(n - done) as usize;
                for key in &mut keys[..m] {
                    self.lookup_key(rng, ks, key);
                }
                let t0 = Instant::now();
                let got = if self.args.multi_get_loop {
                    keys[..m].iter().map(|k| self.db.get(k)).collect()
                } else {
                    self.db.multi_get(&keys[..m])
                };
                let got = got.unwrap_or_else(|e| fail(e));
                t.get_lat.record_n(t0.elapsed().as_nanos() as u64 / m as u64, m as u64);
                for (key, v) in keys.iter().zip(&got) {
                    if let Some(len) = v {
                        t.found += 1;
                        t.bytes += (key.len() + len) as u64;
                    }
                }
                t.ops += m as u64;
                t.lookups += m as u64;
                done += m as u64;
                pb.inc(m as u64);
            }
        };
        self.phase(name, n, body, None)
    }

    /// Replays every lookup so far (filters off) for each live file's exact empty lookups, and
    /// compares Merlin's estimates with them: (Euclidean distance, cosine similarity).
    fn replayed_accuracy(&self, db: &cairn::Db) -> (f64, f64) {
        let mut empty: std::collections::HashMap<u64, f64> = std::collections::HashMap::new();
        for key in self.history.lock().map(|h| h.clone()).unwrap_or_default() {
            for (file, found) in db.trace_lookup(&key).unwrap_or_else(|e| fail(e)) {
                if !found {
                    *empty.entry(file).or_default() += 1.0;
                }
            }
        }
        let files = db.stats().files;
        let pairs: Vec<(f64, f64)> = files
            .iter()
            .map(|f| (f.estimated_empty, empty.get(&f.file).copied().unwrap_or(0.0)))
            .collect();
        let dist = pairs.iter().map(|(e, t)| (e - t).powi(2)).sum::<f64>().sqrt();
        let dot: f64 = pairs.iter().map(|(e, t)| e * t).sum();
        let (ne, nt) = (
            pairs.iter().map(|(e, _)| e * e).sum::<f64>().sqrt(),
            pairs.iter().map(|(_, t)| t * t).sum::<f64>().sqrt(),
        );
        (dist, if ne > 0.0 && nt > 0.0 { dot / (ne * nt) } else { 0.0 })
    }

    /// RocksDB's readrandomwriterandom: each operation a lookup with probability
    /// `--readwritepercent`, otherwise a write of a random key (same key choice, so lookups and
    /// writes share the skew).
    fn read_random_write_random(&self, name: &str, readwritepercent: u32) -> Phase {
        let n = self.reads();
        let ks = self.key_size(name);
        let a = self.args;
        let db = self.db;
        let pct = f64::from(readwritepercent.min(100)) / 100.0;
        self.phase(
            name,
            n,
            |rng, t, pb| {
                let (mut key, mut values) = (Vec::new(), Values::new(rng));
                for i in 0..n {
                    if rng.gen_bool(pct) {
                        self.lookup(rng, ks, t, &mut key);
                    } else {
                        db_bench_key(self.stride(self.dist().next(a.num, rng)), a.key_size, &mut key);
                        let value = values.next(a.value_size);
                        let tree = self.pick_tree(rng);
                        t.lat
                            .time(|| db.put_in(tree, &key, value, a.sync))
                            .unwrap_or_else(|e| fail(e));
                        t.ops += 1;
                        t.bytes += (a.key_size + a.value_size) as u64;
                    }
                    if i % 1024 == 1023 {
                        pb.inc(1024);
                    }
                }
            },
            None,
        )
    }

    fn read_random(&self, name: &str, while_writing: bool) -> Phase {
        let n = self.reads();
        let ks = self.key_size(name);
        let a = self.args;
        let db = self.db;
        let writer = |rng: &mut StdRng, done: &AtomicBool| {
            let (mut key, mut values) = (Vec::new(), Values::new(rng));
            while !done.load(Ordering::Relaxed) {
                db_bench_key(self.stride(self.dist().next(a.num, rng)), a.key_size, &mut key);
                db.put(&key, values.next(a.value_size), a.sync)
                    .unwrap_or_else(|e| fail(e));
            }
        };
        let body = |rng: &mut StdRng, t: &mut Tally, pb: &ProgressBar| {
            let mut key = Vec::new();
            for i in 0..n {
                self.lookup(rng, ks, t, &mut key);
                if i % 1024 == 1023 {
                    pb.inc(1024);
                }
            }
        };
        let writer: Option<&Writer<'_>> = if while_writing { Some(&writer) } else { None };
        self.phase(name, n, body, writer)
    }

    fn read_seq(&self, name: &str, reverse: bool) -> Phase {
        let n = self.reads();
        let db = self.db;
        self.phase(
            name,
            n,
            |_, t, _| {
                let t0 = Instant::now();
                let (count, bytes) = db.scan(None, n, reverse).unwrap_or_else(|e| fail(e));
                // One scan, so per-entry latency is the average.
                let per = t0.elapsed().as_nanos() as u64 / count.max(1);
                t.lat.record_n(per, count);
                t.ops += count;
                t.bytes += bytes;
            },
            None,
        )
    }

    fn seek_random(&self, name: &str) -> Phase {
        let a = self.args;
        self.scan_phase(
            name,
            |rng, key, _| db_bench_key(self.stride(self.dist().next(a.num, rng)), a.key_size, key),
            |key, _| self.db.scan(Some(key), 1 + a.seek_nexts as u64, a.reverse_iterator),
        )
    }

    /// A phase of `--reads` scans per thread: `draw` picks one into two reused key buffers,
    /// `run` (the timed part) returns its (entries, bytes); a scan that returns an entry counts
    /// as found.
    fn scan_phase(
        &self,
        name: &str,
        draw: impl Fn(&mut StdRng, &mut Vec<u8>, &mut Vec<u8>) + Sync,
        run: impl Fn(&[u8], &[u8]) -> engine::EResult<(u64, u64)> + Sync,
    ) -> Phase {
        let n = self.reads();
        self.phase(
            name,
            n,
            |rng, t, pb| {
                let (mut lo, mut hi) = (Vec::new(), Vec::new());
                for i in 0..n {
                    draw(rng, &mut lo, &mut hi);
                    let (count, bytes) = t.lat.time(|| run(&lo, &hi)).unwrap_or_else(|e| fail(e));
                    t.found += u64::from(count > 0);
                    t.bytes += bytes;
                    t.ops += 1;
                    if i % 1024 == 1023 {
                        pb.inc(1024);
                    }
                }
            },
            None,
        )
    }

    /// Range queries `[lo, lo + R)` over key values, one phase per `--range_size`. With
    /// probability `empty` the range lies strictly inside the gap after a key (`--key_stride`
    /// must exceed R + 1), so it is empty yet inside the tables' key ranges: fence pointers
    /// cannot rule it out. Otherwise it starts at a key. Counts the entries of each.
    fn range_random(&self, name: &str, empty: f64) -> Vec<Phase> {
        let sizes = &self.args.range_size;
        sizes
            .iter()
            .map(|&r| {
                let phase = if sizes.len() > 1 {
                    format!("{name}-{r}")
                } else {
                    name.to_string()
                };
                self.range_phase(&phase, r.max(1), empty)
            })
            .collect()
    }

    fn range_phase(&self, name: &str, r: u64, empty: f64) -> Phase {
        let a = self.args;
        self.scan_phase(
            name,
            |rng, lo, hi| {
                if a.window > 0 {
                    self.count_for_window();
                }
                let k = self.stride(self.dist().next(a.num, rng));
                let start = if empty > 0.0 && rng.gen_bool(empty.min(1.0)) {
                    // Inside (k, k + stride): both ends strictly between two keys.
                    k + 1 + rng.gen_range(0..a.key_stride.saturating_sub(r + 1).max(1))
                } else {
                    k
                };
                db_bench_key(start, a.key_size, lo);
                db_bench_key(start + r, a.key_size, hi);
            },
            |lo, hi| self.db.range(lo, hi),
        )
    }

    /// `--num` merges of the 8-byte little-endian 1 into keys of `--key_dist` (counters; needs
    /// `--merge_operator=uint64add`), or with `read_modify_write` the same counters by a get
    /// and a put each (db_bench's updaterandom).
    /// `--reads` transfers per thread between two accounts of `--key_dist` (read both for
    /// update, move an amount from one to the other when it has it), each retried until it
    /// commits; a value's first 8 bytes are its balance. Timed: the transfer with its retries.
    fn transfers(&self, name: &str) -> Phase {
        let (a, db, n) = (self.args, self.db, self.reads());
        self.phase(
            name,
            n,
            |rng, t, pb| {
                let (mut from, mut to) = (Vec::new(), Vec::new());
                for i in 0..n {
                    db_bench_key(self.stride(self.dist().next(a.num, rng)), a.key_size, &mut from);
                    // Two accounts: a transfer to itself would write one key twice.
                    while {
                        db_bench_key(self.stride(self.dist().next(a.num, rng)), a.key_size, &mut to);
                        to == from && a.num > 1
                    } {}
                    let amount = rng.gen_range(1..100u64);
                    t.transaction(|| db.transact(&[&from, &to], &mut |v| transfer(v, amount, a.value_size)));
                    t.ops += 1;
                    if i % 1024 == 1023 {
                        pb.inc(1024);
                    }
                }
            },
            None,
        )
    }

    /// YCSB F as transactions: per thread `--reads` operations of `--key_dist` keys, half of
    /// them lookups, half read-modify-writes (read for update, write a value one higher),
    /// each transaction retried until it commits.
    fn read_modify_writes(&self, name: &str) -> Phase {
        let (a, db, n) = (self.args, self.db, self.reads());
        self.phase(
            name,
            n,
            |rng, t, pb| {
                let mut key = Vec::new();
                for i in 0..n {
                    db_bench_key(self.stride(self.dist().next(a.num, rng)), a.key_size, &mut key);
                    if rng.gen_bool(0.5) {
                        let found = t.get_lat.time(|| db.get(&key)).unwrap_or_else(|e| fail(e));
                        t.lookups += 1;
                        t.found += u64::from(found.is_some());
                    } else {
                        t.transaction(|| db.transact(&[&key], &mut |v| increment(v, a.value_size)));
                    }
                    t.ops += 1;
                    if i % 1024 == 1023 {
                        pb.inc(1024);
                    }
                }
            },
            None,
        )
    }

    /// `--reads` groups of 10 lookups of `--key_dist` keys per thread, each group at one point
    /// in time: a read-only transaction (`transaction`) or a snapshot.
    fn reads_at_once(&self, name: &str, transaction: bool) -> Phase {
        let (a, db, n) = (self.args, self.db, self.reads());
        self.phase(
            name,
            n,
            |rng, t, pb| {
                let mut keys = vec![Vec::new(); 10];
                for i in 0..n {
                    for k in &mut keys {
                        db_bench_key(self.stride(self.dist().next(a.num, rng)), a.key_size, k);
                    }
                    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                    let found = t
                        .lat
                        .time(|| db.read_at_once(&refs, transaction))
                        .unwrap_or_else(|e| fail(e));
                    t.found += found as u64;
                    t.lookups += 10;
                    t.txns += u64::from(transaction);
                    t.ops += 1;
                    if i % 1024 == 1023 {
                        pb.inc(1024);
                    }
                }
            },
            None,
        )
    }

    fn count_random(&self, name: &str, read_modify_write: bool) -> Phase {
        let a = self.args;
        let db = self.db;
        let dist = self.dist();
        self.phase(
            name,
            a.num,
            |rng, t, _| {
                let mut key = Vec::new();
                for _ in 0..a.num {
                    db_bench_key(self.stride(dist.next(a.num, rng)), a.key_size, &mut key);
                    let r = t.lat.time(|| {
                        if read_modify_write {
                            let n = db.get_value(&key)?.map_or(0, |v| {
                                <[u8; 8]>::try_from(&v[..v.len().min(8)]).map_or(0, u64::from_le_bytes)
                            });
                            db.put(&key, &(n + 1).to_le_bytes(), a.sync)
                        } else {
                            db.merge(&key, &1u64.to_le_bytes())
                        }
                    });
                    r.unwrap_or_else(|e| fail(e));
                    t.ops += 1;
                }
            },
            None,
        )
    }

    /// One checkpoint into `<db>.checkpoint` (replaced) while a writer puts random keys, from
    /// 0.5 s before it to 0.5 s after: the phase's time is the checkpoint's, its latencies the
    /// writer's puts meanwhile (the longest one is the longest writer stall).
    fn checkpoint_while_writing(&self, name: &str, db_dir: &std::path::Path) -> Phase {
        let a = self.args;
        let db = self.db;
        let target = db_dir.with_extension("checkpoint");
        let _ = std::fs::remove_dir_all(&target);
        let done = AtomicBool::new(false);
        let (secs, bytes, lat) = std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let mut rng = StdRng::seed_from_u64(a.seed ^ 0xc0ffee);
                let (mut key, mut values) = (Vec::new(), Values::new(&mut rng));
                let mut lat = Latencies::default();
                while !done.load(Ordering::Relaxed) {
                    db_bench_key(self.stride(self.dist().next(a.num, &mut rng)), a.key_size, &mut key);
                    let v = values.next(a.value_size);
                    lat.time(|| db.put(&key, v, false)).unwrap_or_else(|e| fail(e));
                }
                lat
            });
            std::thread::sleep(std::time::Duration::from_millis(500));
            let t0 = Instant::now();
            let bytes = db.checkpoint(&target).unwrap_or_else(|e| fail(e));
            let secs = t0.elapsed().as_secs_f64();
            std::thread::sleep(std::time::Duration::from_millis(500));
            done.store(true, Ordering::Relaxed);
            (
                secs,
                bytes,
                writer.join().unwrap_or_else(|_| fail("the writer panicked")),
            )
        });
        let mut p = Phase::new(name, 1, secs, 1);
        let w = lat.summary();
        let extra = format!(
            " ({}; writer puts meanwhile: {} , p99.9 {:.0} us, longest {:.1} ms)",
            bytes.map_or("bytes copied unknown".into(), |b| format!("{b} bytes copied")),
            w.count,
            w.p999_us,
            w.max_us / 1000.0
        );
        p.by_op.insert("put".into(), w);
        p.print_db_bench(0, &extra);
        p
    }

    /// `count` range deletes of `width` consecutive keys each: at key 0 when `count` is 1,
    /// else at random positions.
    fn delete_ranges(&self, name: &str, count: u64, width: u64) -> Phase {
        let a = self.args;
        let db = self.db;
        self.phase(
            name,
            count,
            |rng, t, _| {
                let (mut lo, mut hi) = (Vec::new(), Vec::new());
                for _ in 0..count {
                    let start = if count == 1 {
                        0
                    } else {
                        rng.gen_range(0..a.num.saturating_sub(width).max(1))
                    };
                    db_bench_key(self.stride(start), a.key_size, &mut lo);
                    db_bench_key(self.stride(start + width), a.key_size, &mut hi);
                    t.lat.time(|| db.delete_range(&lo, &hi)).unwrap_or_else(|e| fail(e));
                    t.ops += 1;
                }
            },
            None,
        )
    }

    fn delete_random(&self) -> Phase {
        let a = self.args;
        let db = self.db;
        let dist = self.dist();
        self.phase(
            "deleterandom",
            a.num,
            |rng, t, _| {
                let mut key = Vec::new();
                for _ in 0..a.num {
                    db_bench_key(self.stride(dist.next(a.num, rng)), a.key_size, &mut key);
                    t.lat.time(|| db.delete(&key, a.sync)).unwrap_or_else(|e| fail(e));
                    t.ops += 1;
                }
            },
            None,
        )
    }

    /// A single-operation phase (compact, flush, waitforcompaction).
    /// fillseq with `--bulk_load`: its keys and values written into external tables of
    /// `--target_file_size_base` bytes by the engine's table writer, then added in one
    /// ingestion (moved), on one thread: a load without the write path. Timed whole; the
    /// ingestion's own share is printed beside.
    fn fill_ingest(&self, name: &str) -> Phase {
        let a = self.args;
        let db = self.db;
        let staging = self.dir.with_extension("ingest");
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging).unwrap_or_else(|e| fail(format!("{}: {e}", staging.display())));
        let entry = (a.key_size + a.value_size) as u64;
        let per_table = (a.engine.target_file_size_base / entry.max(1)).max(1);
        let mut rng = StdRng::seed_from_u64(a.seed);
        let mut values = Values::new(&mut rng);
        let mut key = Vec::new();
        let t0 = Instant::now();
        let mut paths = Vec::new();
        let mut k = 0;
        while k < a.num {
            let end = (k + per_table).min(a.num);
            let path = staging.join(format!("{:06}.sst", paths.len()));
            db.write_table(&path, &mut |sink| {
                for i in k..end {
                    db_bench_key(self.stride(i), a.key_size, &mut key);
                    sink(&key, values.next(a.value_size))?;
                }
                Ok(())
            })
            .unwrap_or_else(|e| fail(e));
            paths.push(path);
            k = end;
        }
        let written = t0.elapsed().as_secs_f64();
        db.ingest(&paths, true).unwrap_or_else(|e| fail(e));
        let secs = t0.elapsed().as_secs_f64();
        let _ = std::fs::remove_dir_all(&staging);
        let p = Phase::new(name, a.num, secs, 1);
        p.print_db_bench(
            a.num * entry,
            &format!(
                " ({} tables written in {written:.3} s, ingested in {:.3} s)",
                paths.len(),
                secs - written
            ),
        );
        p
    }

    fn once(&self, name: &str, f: impl FnOnce() -> engine::EResult<()>) -> Phase {
        let t0 = Instant::now();
        f().unwrap_or_else(|e| fail(e));
        let p = Phase::new(name, 1, t0.elapsed().as_secs_f64(), 1);
        p.print_db_bench(0, "");
        p
    }
}

/// Runs one benchmark by name (one phase, or one per range size); none for `stats`, which only
/// prints.
fn run_benchmark(b: &Bench<'_>, name: &str) -> Vec<Phase> {
    let db = b.db;
    // `NAME/DIST`: the phase's key distribution (set by the caller); the rest names the work.
    let spec = name.split_once('/').map_or(name, |(n, _)| n);
    // `readrandomwriterandom:P`: this phase's share of lookups (a workload that changes phase).
    if let Some(pct) = spec.strip_prefix("readrandomwriterandom:") {
        let pct = pct
            .parse()
            .unwrap_or_else(|_| fail(format!("{name}: expected readrandomwriterandom:PERCENT")));
        return vec![b.read_random_write_random(name, pct)];
    }
    // `deleterange:P`: one range delete of the first P% of the keys; `deleteranges:N:W`: N
    // range deletes of W keys each, at random.
    if let Some(pct) = spec.strip_prefix("deleterange:") {
        let pct: u64 = pct
            .parse()
            .unwrap_or_else(|_| fail(format!("{name}: expected deleterange:PERCENT")));
        return vec![b.delete_ranges(name, 1, b.args.num * pct / 100)];
    }
    if let Some(spec) = spec.strip_prefix("deleteranges:") {
        let parsed = spec
            .split_once(':')
            .and_then(|(n, w)| Some((n.parse().ok()?, w.parse().ok()?)));
        let (n, w) = parsed.unwrap_or_else(|| fail(format!("{name}: expected deleteranges:COUNT:WIDTH")));
        return vec![b.delete_ranges(name, n, w)];
    }
    // `NAME@LABEL` runs NAME under its own phase name (the same benchmark twice in one run).
    let base = spec.split_once('@').map_or(spec, |(b, _)| b);
    vec![match base {
        "rangerandom" => return b.range_random(name, b.args.empty_ratio),
        "rangenonempty" => return b.range_random(name, 0.0),
        "fillseq" if b.args.bulk_load => b.fill_ingest(name),
        "fillseq" => b.fill(name, true),
        "fillrandom" | "overwrite" => b.fill(name, false),
        "readrandom" | "readmissing" => b.read_random(name, false),
        "multireadrandom" => b.multi_read_random(name),
        "readwhilewriting" => b.read_random(name, true),
        "readrandomwriterandom" => b.read_random_write_random(name, b.args.readwritepercent),
        "readseq" => b.read_seq(name, false),
        "readreverse" => b.read_seq(name, true),
        "seekrandom" => b.seek_random(name),
        "deleterandom" => b.delete_random(),
        "mergerandom" => b.count_random(name, false),
        // Counters by merges when the engine has an operator, else by get and put.
        "counters" => b.count_random(name, b.args.engine.merge_operator == "none"),
        "updaterandom" => b.count_random(name, true),
        "txtransfer" => b.transfers(name),
        "txrmw" => b.read_modify_writes(name),
        "txreadonly" => b.reads_at_once(name, true),
        "snapshotreads" => b.reads_at_once(name, false),
        "compact" => b.once(name, || db.compact()),
        "checkpoint" => b.checkpoint_while_writing(name, &b.dir),
        // Into `<db>.backup` (kept between phases: a second backup is incremental), and the
        // newest backup restored into `<db>.restored` (replaced).
        "backup" => {
            let bytes = std::cell::Cell::new(None);
            let p = b.once(name, || {
                bytes.set(db.backup(&b.dir.with_extension("backup"))?);
                Ok(())
            });
            if let Some(n) = bytes.get() {
                println!("  ({name}: {n} bytes copied)");
            }
            p
        }
        "restore" => {
            let to = b.dir.with_extension("restored");
            let _ = std::fs::remove_dir_all(&to);
            b.once(name, || db.restore(&b.dir.with_extension("backup"), &to))
        }
        "flush" => b.once(name, || db.flush()),
        "waitforcompaction" => b.once(name, || db.wait_for_background()),
        "stats" => {
            println!("{}", db.stats_text());
            return Vec::new();
        }
        other => fail(format!("unknown benchmark {other}")),
    }]
}

fn main() {
    let (mut args, given) = cairn_bench::parse_args::<Args>();
    args.engine.given = given;
    let dir = args
        .db
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("{}_db_bench", args.engine.engine)));
    if !args.use_existing_db {
        // With the database go its checkpoint, backups and restored copy.
        for d in [
            dir.clone(),
            dir.with_extension("checkpoint"),
            dir.with_extension("backup"),
            dir.with_extension("restored"),
        ] {
            let _ = std::fs::remove_dir_all(d);
        }
    }
    if !(0.0..=1.0).contains(&args.empty_ratio) {
        fail(format!("--empty_ratio={}: must be in [0, 1]", args.empty_ratio));
    }
    if args.batch_size == 0 || (args.batch_size > 1 && args.num_trees > 1) {
        fail(format!(
            "--batch_size={}: at least 1, and batches write one tree (--num_trees={})",
            args.batch_size, args.num_trees
        ));
    }
    match args.key_format.as_str() {
        "number" => {}
        "string" => cairn_bench::keys::use_string_keys(true),
        other => fail(format!("--key_format is number or string, not {other}")),
    }
    if args.key_stride == 0 || args.num.checked_mul(args.key_stride).is_none() {
        fail(format!(
            "--key_stride={}: must be at least 1, and num × stride must fit in 64 bits",
            args.key_stride
        ));
    }
    let widest = args.range_size.iter().copied().max().unwrap_or(1);
    if args.benchmarks.contains("rangerandom") && args.empty_ratio > 0.0 && args.key_stride < widest.saturating_add(2) {
        fail(format!(
            "--key_stride={}: empty ranges of --range_size={widest} need a stride of at least {}",
            args.key_stride,
            widest.saturating_add(2)
        ));
    }
    let specs: Vec<&str> = args
        .benchmarks
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    let mut dists = vec![KeyDist::parse(&args.key_dist, args.num).unwrap_or_else(|e| fail(e))];
    // Each phase's entry of `dists`: 0 (`--key_dist`) unless it names its own.
    let phase_dists: Vec<usize> = specs
        .iter()
        .map(|p| match p.split_once('/') {
            Some((_, d)) => {
                dists.push(KeyDist::parse(d, args.num).unwrap_or_else(|e| fail(format!("{p}: {e}"))));
                dists.len() - 1
            }
            None => 0,
        })
        .collect();
    let fill_dist =
        KeyDist::parse(args.fill_key_dist.as_deref().unwrap_or(&args.key_dist), args.num).unwrap_or_else(|e| fail(e));
    let trees =
        cairn_bench::keys::TreeChoice::new(args.num_trees, args.tree_skew.as_deref()).unwrap_or_else(|e| fail(e));
    let start_rss = cairn_bench::rss_bytes("VmRSS").unwrap_or(0);
    let db = engine::open(&args.engine, &dir).unwrap_or_else(|e| fail(e));
    db.open_trees(args.num_trees).unwrap_or_else(|e| fail(e));
    println!(
        "{} db_bench: {} keys of {} B, values of {} B, {} threads, keys {}, db {}",
        db.name(),
        args.num,
        args.key_size,
        args.value_size,
        args.threads,
        args.key_dist,
        dir.display()
    );
    let b = Bench {
        args: &args,
        db: db.as_ref(),
        dists,
        dist_now: std::sync::atomic::AtomicUsize::new(0),
        fill_dist,
        phase_no: std::sync::atomic::AtomicU64::new(0),
        history: std::sync::Mutex::new(Vec::new()),
        phase_lookups: std::sync::atomic::AtomicU64::new(0),
        windows: std::sync::Mutex::new(Vec::new()),
        phase_start: std::sync::Mutex::new(Instant::now()),
        trees,
        dir: dir.clone(),
    };
    let mut report = RunReport {
        tool: "db_bench".into(),
        engine: db.name().into(),
        command: std::env::args().collect(),
        ..RunReport::default()
    };
    let current = std::sync::Mutex::new(String::new());
    let every = std::time::Duration::from_secs_f64(args.timeline_every.max(0.01));
    let (phases, timeline) = timeline::sampled(db.as_ref(), every, &current, || {
        let mut phases = Vec::new();
        for (&name, &d) in specs.iter().zip(&phase_dists) {
            b.dist_now.store(d, std::sync::atomic::Ordering::Relaxed);
            if let Ok(mut c) = current.lock() {
                name.clone_into(&mut c);
            }
            for mut p in run_benchmark(&b, name) {
                p.debt_after = db.debt();
                phases.push(p);
            }
            if args.engine.statistics {
                println!("{}", db.stats_text());
            }
        }
        phases
    });
    report.phases = phases;
    report.timeline = timeline;
    if let Some(png) = &args.timeline_png {
        let title = format!("{} db_bench {}: compaction debt", db.name(), args.benchmarks);
        plot::timeline(png, &title, &[(db.name().to_string(), report.timeline.clone())])
            .unwrap_or_else(|e| fail(format!("--timeline_png {}: {e}", png.display())));
    }
    if let Some(c) = db.as_cairn() {
        report.tuner = c.tuner_history().iter().map(Into::into).collect();
        if let Some(r) = report.tuner.last() {
            println!(
                "cairn memory tuner: {} cycles; last: write {} MiB, cache {} MiB, filters {} MiB, {:.4} I/O per op",
                report.tuner.len(),
                r.write >> 20,
                r.cache >> 20,
                r.filter >> 20,
                r.cost
            );
        }
    }
    if let Some(png) = &args.tuner_png {
        let title = format!("{} db_bench {}: memory tuner", db.name(), args.benchmarks);
        plot::tuner(png, &title, &[(db.name().to_string(), report.tuner.clone())])
            .unwrap_or_else(|e| fail(format!("--tuner_png {}: {e}", png.display())));
    }
    report.peak_rss_bytes = peak_rss_bytes().unwrap_or(0);
    report.start_rss_bytes = start_rss;
    if let Some(c) = db.as_cairn() {
        let s = c.stats();
        println!(
            "cairn: write-amp {:.2}, {} delayed write groups ({:.1} s), {} stops ({:.1} s), L0 files {}, peak RSS {} MB",
            s.write_amplification(),
            s.stall_slowdowns,
            s.delay_micros as f64 / 1e6,
            s.stall_stops,
            s.stall_micros as f64 / 1e6,
            s.l0_files,
            report.peak_rss_bytes >> 20
        );
    } else {
        println!("peak RSS {} MB", report.peak_rss_bytes >> 20);
    }
    if let Some(path) = &args.json {
        report
            .write(path)
            .unwrap_or_else(|e| fail(format!("--json {}: {e}", path.display())));
    }
}

/// A balance: the first 8 bytes of an account's value (0 when absent).
fn balance(v: Option<&Vec<u8>>) -> u64 {
    v.and_then(|v| v.get(..8))
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
}

/// An account's value holding `balance`, `size` bytes long.
fn account(balance: u64, size: usize) -> Vec<u8> {
    let mut v = vec![b'a'; size.max(8)];
    v[..8].copy_from_slice(&balance.to_le_bytes());
    v
}

/// The writes of a transfer of `amount` from account 0 to account 1 (none when the first
/// lacks it).
fn transfer(values: &[Option<Vec<u8>>], amount: u64, size: usize) -> Vec<(usize, Vec<u8>)> {
    let (from, to) = (balance(values[0].as_ref()), balance(values[1].as_ref()));
    if from < amount {
        return Vec::new();
    }
    vec![
        (0, account(from - amount, size)),
        (1, account(to.wrapping_add(amount), size)),
    ]
}

/// The write of a read-modify-write: the balance one higher.
fn increment(values: &[Option<Vec<u8>>], size: usize) -> Vec<(usize, Vec<u8>)> {
    vec![(0, account(balance(values[0].as_ref()).wrapping_add(1), size))]
}
