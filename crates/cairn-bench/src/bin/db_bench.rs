//! A db_bench-compatible runner for cairn: same flag names, key encoding and output line as
//! RocksDB's `db_bench`, so one command line runs the same experiment on both.
//!
//! ```sh
//! cargo run --release -p cairn-bench --bin db_bench -- --benchmarks=fillrandom,readrandom \
//!     --num=1000000 --key_size=16 --value_size=100 --bloom_bits=10 --compression_type=none
//! ```

use cairn::{Compression, Db, MergePolicyKind, Options, WriteBatch, WriteOptions};
use cairn_bench::{db_bench_key, peak_rss_bytes};
use clap::Parser;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(rename_all = "snake_case", about = "db_bench-compatible benchmarks for cairn")]
struct Args {
    /// Comma-separated benchmarks: fillseq, fillrandom, overwrite, readrandom, readmissing,
    /// readseq, readreverse, seekrandom, deleterandom, compact, flush, waitforcompaction, stats.
    #[arg(long, default_value = "fillrandom,readrandom")]
    benchmarks: String,
    #[arg(long, default_value_t = 1_000_000)]
    num: u64,
    /// Reads per read benchmark (-1: num).
    #[arg(long, default_value_t = -1, allow_hyphen_values = true)]
    reads: i64,
    #[arg(long, default_value_t = 16)]
    key_size: usize,
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    #[arg(long)]
    db: Option<PathBuf>,
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    use_existing_db: bool,
    /// Bloom bits per key (db_bench's default −1 means none; cairn treats ≤ 0 as none).
    #[arg(long, default_value_t = -1.0, allow_hyphen_values = true)]
    bloom_bits: f64,
    #[arg(long, default_value_t = 8 << 20)]
    cache_size: usize,
    #[arg(long, default_value_t = 64 << 20)]
    write_buffer_size: usize,
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    use_direct_reads: bool,
    #[arg(long, default_value = "none")]
    compression_type: String,
    #[arg(long, default_value_t = 4096)]
    block_size: usize,
    #[arg(long, default_value_t = 256 << 20)]
    max_bytes_for_level_base: u64,
    #[arg(long, default_value_t = 10.0)]
    max_bytes_for_level_multiplier: f64,
    #[arg(long, default_value_t = 4)]
    level0_file_num_compaction_trigger: usize,
    #[arg(long, default_value_t = 64 << 20)]
    target_file_size_base: u64,
    #[arg(long, default_value_t = 0)]
    seed: u64,
    #[arg(long, default_value_t = 0)]
    seek_nexts: usize,
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    sync: bool,
    /// Write memory for all memtables (cairn; default 2 × write_buffer_size).
    #[arg(long)]
    memory_budget: Option<usize>,
    /// leveling | garnering
    #[arg(long, default_value = "leveling")]
    merge_policy: String,
    #[arg(long, default_value_t = 0.8)]
    garnering_c: f64,
    /// Print cairn's stats text after each benchmark.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    statistics: bool,
}

struct Bench<'a> {
    args: &'a Args,
    db: Db,
    rng: StdRng,
    key: Vec<u8>,
    value: Vec<u8>,
}

fn report(name: &str, ops: u64, secs: f64, bytes: u64, extra: &str) {
    let micros = secs * 1e6 / ops.max(1) as f64;
    let ops_sec = ops as f64 / secs.max(1e-9);
    let mbs = bytes as f64 / 1048576.0 / secs.max(1e-9);
    println!("{name:<12} : {micros:>11.3} micros/op {ops_sec:.0} ops/sec {secs:.3} seconds {ops} operations; {mbs:>6.1} MB/s{extra}");
}

impl Bench<'_> {
    fn fill(&mut self, name: &str, sequential: bool) {
        let a = self.args;
        let wo = WriteOptions {
            sync: a.sync,
            ..Default::default()
        };
        let t0 = Instant::now();
        for i in 0..a.num {
            let k = if sequential { i } else { self.rng.gen_range(0..a.num) };
            db_bench_key(k, a.key_size, &mut self.key);
            // Incompressible values, so compression settings do not flatter either engine.
            self.rng.fill(&mut self.value[..]);
            let mut b = WriteBatch::new();
            b.put(&self.key, &self.value);
            self.db.write(b, &wo).unwrap_or_else(|e| fail(e));
        }
        let secs = t0.elapsed().as_secs_f64();
        report(name, a.num, secs, a.num * (a.key_size + a.value_size) as u64, "");
    }

    fn reads(&self) -> u64 {
        if self.args.reads < 0 {
            self.args.num
        } else {
            self.args.reads as u64
        }
    }

    fn read_random(&mut self, name: &str, missing: bool) {
        let n = self.reads();
        let ks = self.args.key_size + usize::from(missing);
        let before = self.db.stats();
        let t0 = Instant::now();
        let mut found = 0u64;
        for _ in 0..n {
            db_bench_key(self.rng.gen_range(0..self.args.num), ks, &mut self.key);
            if self.db.get(&self.key).unwrap_or_else(|e| fail(e)).is_some() {
                found += 1;
            }
        }
        let secs = t0.elapsed().as_secs_f64();
        report(
            name,
            n,
            secs,
            found * (self.args.key_size + self.args.value_size) as u64,
            &format!(" ({found} of {n} found)"),
        );
        io_line(&before, &self.db.stats(), n);
    }

    fn read_seq(&mut self, name: &str, reverse: bool) {
        let n = self.reads();
        let t0 = Instant::now();
        let mut count = 0u64;
        let mut bytes = 0u64;
        let it = self.db.iter();
        let mut step = |kv: cairn::Result<(Vec<u8>, Vec<u8>)>| {
            let (k, v) = kv.unwrap_or_else(|e| fail(e));
            bytes += (k.len() + v.len()) as u64;
            count += 1;
            count < n
        };
        if reverse {
            for kv in it.rev() {
                if !step(kv) {
                    break;
                }
            }
        } else {
            for kv in it {
                if !step(kv) {
                    break;
                }
            }
        }
        report(name, count, t0.elapsed().as_secs_f64(), bytes, "");
    }

    fn seek_random(&mut self) {
        let n = self.reads();
        let before = self.db.stats();
        let t0 = Instant::now();
        let mut found = 0u64;
        for _ in 0..n {
            db_bench_key(self.rng.gen_range(0..self.args.num), self.args.key_size, &mut self.key);
            let mut it = self.db.range(self.key.clone()..);
            if let Some(kv) = it.next() {
                kv.unwrap_or_else(|e| fail(e));
                found += 1;
                for _ in 0..self.args.seek_nexts {
                    match it.next() {
                        Some(kv) => {
                            kv.unwrap_or_else(|e| fail(e));
                        }
                        None => break,
                    }
                }
            }
        }
        report(
            "seekrandom",
            n,
            t0.elapsed().as_secs_f64(),
            0,
            &format!(" ({found} of {n} found)"),
        );
        io_line(&before, &self.db.stats(), n);
    }

    fn delete_random(&mut self) {
        let n = self.args.num;
        let t0 = Instant::now();
        for _ in 0..n {
            db_bench_key(self.rng.gen_range(0..n), self.args.key_size, &mut self.key);
            self.db.delete(&self.key).unwrap_or_else(|e| fail(e));
        }
        report("deleterandom", n, t0.elapsed().as_secs_f64(), 0, "");
    }
}

fn io_line(before: &cairn::DbStats, after: &cairn::DbStats, ops: u64) {
    use cairn::stats::BlockKind;
    let d = after.io - before.io;
    let per = |x: u64| x as f64 / ops.max(1) as f64;
    let unneeded = after.total(|l| l.unnecessary_data_reads) - before.total(|l| l.unnecessary_data_reads);
    let probes = after.total(|l| l.probes) - before.total(|l| l.probes);
    let negatives = after.total(|l| l.filter_negatives) - before.total(|l| l.filter_negatives);
    let fps = after.total(|l| l.filter_false_positives) - before.total(|l| l.filter_false_positives);
    println!(
        "  cairn I/O per op: data blocks from storage {:.3}, data cache hits {:.3}, unnecessary data-block reads {:.4}, filter-unit loads {:.3}, index loads {:.4}; filter FPR {:.4} ({fps} of {} negatives+fps)",
        per(d.kind(BlockKind::Data).reads),
        per(d.kind(BlockKind::Data).cache_hits),
        per(unneeded),
        per(d.kind(BlockKind::FilterUnit).reads),
        per(d.kind(BlockKind::Index).reads),
        fps as f64 / (negatives + fps).max(1) as f64,
        negatives + fps,
    );
    let _ = probes;
}

fn fail(e: cairn::Error) -> ! {
    eprintln!("db_bench: {e}");
    std::process::exit(1)
}

fn main() {
    let args = Args::parse();
    let dir = args
        .db
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("cairn_db_bench"));
    if !args.use_existing_db && dir.exists() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let policy = match args.merge_policy.as_str() {
        "leveling" => MergePolicyKind::Leveling,
        "garnering" => MergePolicyKind::Garnering { c: args.garnering_c },
        other => {
            eprintln!("db_bench: unknown --merge_policy {other}");
            std::process::exit(2)
        }
    };
    let compression = match args.compression_type.as_str() {
        "none" => Compression::None,
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd,
        other => {
            eprintln!("db_bench: unsupported --compression_type {other} (none, lz4, zstd)");
            std::process::exit(2)
        }
    };
    let opts = Options {
        bloom_bits_per_key: args.bloom_bits.max(0.0),
        block_cache_size: args.cache_size,
        write_buffer_size: args.write_buffer_size,
        write_memory_budget: args.memory_budget.unwrap_or(2 * args.write_buffer_size),
        use_direct_reads: args.use_direct_reads,
        compression,
        block_size: args.block_size,
        max_bytes_for_level_base: args.max_bytes_for_level_base,
        size_ratio: args.max_bytes_for_level_multiplier,
        l0_compaction_trigger: args.level0_file_num_compaction_trigger,
        target_file_size: args.target_file_size_base,
        merge_policy: policy,
        ..Options::default()
    };
    let db = Db::open(&dir, opts).unwrap_or_else(|e| fail(e));
    println!(
        "cairn db_bench: {} keys of {} B, values of {} B, db {}",
        args.num,
        args.key_size,
        args.value_size,
        dir.display()
    );
    let mut b = Bench {
        args: &args,
        db,
        rng: StdRng::seed_from_u64(args.seed),
        key: Vec::new(),
        value: vec![0u8; args.value_size],
    };
    for name in args.benchmarks.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match name {
            "fillseq" => b.fill(name, true),
            "fillrandom" | "overwrite" => b.fill(name, false),
            "readrandom" => b.read_random(name, false),
            "readmissing" => b.read_random(name, true),
            "readseq" => b.read_seq(name, false),
            "readreverse" => b.read_seq(name, true),
            "seekrandom" => b.seek_random(),
            "deleterandom" => b.delete_random(),
            "compact" => {
                let t0 = Instant::now();
                b.db.compact_range::<&[u8], _>(..).unwrap_or_else(|e| fail(e));
                report(name, 1, t0.elapsed().as_secs_f64(), 0, "");
            }
            "flush" => b.db.flush().unwrap_or_else(|e| fail(e)),
            "waitforcompaction" => {
                let t0 = Instant::now();
                b.db.wait_for_background().unwrap_or_else(|e| fail(e));
                report(name, 1, t0.elapsed().as_secs_f64(), 0, "");
            }
            "stats" => println!("{}", b.db.property("cairn.stats").unwrap_or_default()),
            other => {
                eprintln!("db_bench: unknown benchmark {other}");
                std::process::exit(2)
            }
        }
        if args.statistics {
            println!("{}", b.db.property("cairn.stats").unwrap_or_default());
        }
    }
    let s = b.db.stats();
    let shape: Vec<String> = b.db.levels()[0]
        .levels
        .iter()
        .map(|l| format!("{}/{}MB", l.files, l.bytes >> 20))
        .collect();
    println!(
        "levels (files/size): [{}]  write-amp {:.2}  stalls {} slowdowns {} stops  peak RSS {} MB",
        shape.join(" "),
        s.write_amplification(),
        s.stall_slowdowns,
        s.stall_stops,
        peak_rss_bytes().unwrap_or(0) >> 20
    );
}
