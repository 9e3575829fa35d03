//! Data-driven engine tests (`testdata/db/*.txt`, run by `cairn::testutil`): each file is a
//! script of operations on an in-memory database and their expected output; `CAIRN_REWRITE=1`
//! rewrites the expected outputs (review the diff).
//!
//! Commands:
//! - `open [buffer=BYTES] [bpk=BITS] [l0=FILES] [rbpk=BITS] [rkind=KIND]` — a new database on a
//!   fresh `MemFs` (small memtables; no background compaction unless `l0` is given; `rbpk`:
//!   range filter bits per key, default none; `rkind`: its kind, default the default).
//! - `write` with input lines `put KEY VALUE` / `delete KEY` — one atomic batch.
//! - `get KEY...` — `KEY=VALUE` or `KEY: absent` per key.
//! - `scan [from=K] [to=K] [rev]` — every entry in `[from, to)`.
//! - `flush`, `compact [from=K] [to=K]`, `reopen` (drop and open again).
//! - `levels` — files and entries per non-empty level (after background work settles).
//! - `probes KEY...` — for each lookup, the tables it probed, the filter negatives, and the
//!   data blocks it read (from the per-level counters).
//! - `rangeprobes from=K to=K` — the entries of `[from, to)`, then the range filters asked, the
//!   tables they ruled out and the data blocks read (storage or cache).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "tests and benchmarks fail by panicking"
)]

mod common;

use cairn::env::{FileSystem, MemFs};
use cairn::testutil::{run_file, Case};
use cairn::{Db, Options, WriteBatch, WriteOptions};
use std::fmt::Write as _;
use std::sync::Arc;

struct Script {
    fs: MemFs,
    opts: Option<Options>,
    db: Option<Db>,
}

impl Script {
    fn db(&self) -> &Db {
        self.db.as_ref().expect("`open` first")
    }

    fn run(&mut self, c: &Case) -> String {
        match c.command.as_str() {
            "open" => {
                self.db = None;
                self.fs = MemFs::new();
                let l0 = c.arg("l0", 64usize);
                let opts = {
                    let mut o = common::small(
                        Arc::new(self.fs.clone()) as Arc<dyn FileSystem>,
                        c.arg("buffer", 64 << 10),
                    );
                    o.filters.bits_per_key = c.arg("bpk", 10.0);
                    o.range_filter.bits_per_key = c.arg("rbpk", 0.0);
                    if c.has("rkind") {
                        o.set("range_filter.kind", &c.arg("rkind", String::new())).unwrap();
                    }
                    // The same bits in every table, from the first.
                    o.range_filter.by_workload = false;
                    o.compaction.l0_trigger = l0;
                    o.write_stalls.l0_slowdown_trigger = l0.max(20);
                    o.write_stalls.l0_stop_trigger = l0.max(36);
                    o.compaction.max_bytes_for_level_base = if c.has("l0") { 16 << 10 } else { 1 << 40 };
                    // L0 files stay until asked (`drain=MS`: merged into L1 once writes stop
                    // that long, or at a wait — `levels` waits).
                    o.compaction.l0_drain_ms = c.arg("drain", 0u64);
                    o
                };
                self.db = Some(Db::open("/s", opts.clone()).unwrap());
                self.opts = Some(opts);
                "ok".into()
            }
            "reopen" => {
                self.db = None;
                self.db = Some(Db::open("/s", self.opts.clone().expect("`open` first")).unwrap());
                "ok".into()
            }
            "write" => {
                let mut b = WriteBatch::new();
                for line in &c.input {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    match words.as_slice() {
                        ["put", k, v] => {
                            b.put(k, v);
                        }
                        ["delete", k] => {
                            b.delete(k);
                        }
                        _ => return format!("bad line {line:?}"),
                    }
                }
                match self.db().write(b, &WriteOptions::default()) {
                    Ok(()) => "ok".into(),
                    Err(e) => format!("error: {e}"),
                }
            }
            "get" => {
                let mut o = String::new();
                for k in c.arg_names() {
                    match self.db().get(&k).unwrap() {
                        Some(v) => writeln!(o, "{k}={}", String::from_utf8_lossy(&v)),
                        None => writeln!(o, "{k}: absent"),
                    }
                    .unwrap();
                }
                o
            }
            "scan" => {
                let from = c.get("from").map(|s| s.as_bytes().to_vec());
                let to = c.get("to").map(|s| s.as_bytes().to_vec());
                let range = match (from, to) {
                    (Some(a), Some(b)) => self.db().range(a..b),
                    (Some(a), None) => self.db().range(a..),
                    (None, Some(b)) => self.db().range(..b),
                    (None, None) => self.db().iter(),
                };
                let items: Vec<(Vec<u8>, Vec<u8>)> = if c.has("rev") {
                    range.rev().map(|r| r.unwrap()).collect()
                } else {
                    range.map(|r| r.unwrap()).collect()
                };
                if items.is_empty() {
                    return "(empty)".into();
                }
                items
                    .iter()
                    .map(|(k, v)| format!("{}={}\n", String::from_utf8_lossy(k), String::from_utf8_lossy(v)))
                    .collect()
            }
            "flush" => {
                self.db().flush_all().unwrap();
                "ok".into()
            }
            "compact" => {
                let from = c.get("from").map(|s| s.as_bytes().to_vec());
                let to = c.get("to").map(|s| s.as_bytes().to_vec());
                match (from, to) {
                    (Some(a), Some(b)) => self.db().compact_range(a..b),
                    _ => self.db().compact_range::<&[u8], _>(..),
                }
                .unwrap();
                "ok".into()
            }
            "levels" => {
                self.db().wait_for_background().unwrap();
                let mut o = String::new();
                for (i, l) in self.db().levels()[0].levels.iter().enumerate() {
                    if l.files > 0 {
                        writeln!(o, "L{i}: {} files, {} entries", l.files, l.entries).unwrap();
                    }
                }
                if o.is_empty() {
                    o.push_str("(no tables)");
                }
                o
            }
            "probes" => {
                let mut o = String::new();
                for k in c.arg_names() {
                    let before = self.db().stats();
                    let found = self.db().get(&k).unwrap().is_some();
                    let after = self.db().stats();
                    let d = |f: fn(&cairn::LevelStats) -> u64| after.total(f) - before.total(f);
                    writeln!(
                        o,
                        "{k}: {} tables probed, {} filter negatives, {} data blocks, {}",
                        d(|l| l.probes),
                        d(|l| l.filter_negatives),
                        d(|l| l.data_reads + l.data_cache_hits),
                        if found { "found" } else { "absent" }
                    )
                    .unwrap();
                }
                o
            }
            "rangeprobes" => {
                let (from, to) = (
                    c.required("from").as_bytes().to_vec(),
                    c.required("to").as_bytes().to_vec(),
                );
                let before = self.db().stats();
                let items: Vec<String> = self
                    .db()
                    .range(from..to)
                    .map(|r| r.unwrap())
                    .map(|(k, v)| format!("{}={}", String::from_utf8_lossy(&k), String::from_utf8_lossy(&v)))
                    .collect();
                let after = self.db().stats();
                let d = |f: fn(&cairn::LevelStats) -> u64| after.total(f) - before.total(f);
                let blocks = |s: &cairn::DbStats| {
                    let k = s.io.kind(cairn::BlockKind::Data);
                    k.reads + k.cache_hits
                };
                format!(
                    "[{}]: {} range filters asked, {} ruled out, {} data blocks",
                    items.join(" "),
                    d(|l| l.range_probes),
                    d(|l| l.range_negatives),
                    blocks(&after) - blocks(&before)
                )
            }
            _ => c.unknown(),
        }
    }
}

#[test]
fn scripts() {
    for file in ["db/basics.txt", "db/filters.txt", "db/range_filter.txt"] {
        let mut s = Script {
            fs: MemFs::new(),
            opts: None,
            db: None,
        };
        run_file(file, |c| s.run(c));
    }
}
