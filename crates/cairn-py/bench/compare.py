"""cairn from Python against RocksDict (RocksDB) and python-lmdb on the same data: random puts
one call each, random gets of present keys on 1 and 4 threads (one key per call, then 100 per
call: cairn's get_many, RocksDict's list index), a full forward scan, then gets on 1 and 4
threads after a reopen with 8 MiB of memory and O_DIRECT reads (cairn and RocksDict).
Each engine runs in a fresh process per round (engines interleaved); the tables report the
median of the rounds. Writes results.md, results.json and chart.png under --out.

    scripts/test-python.sh   # builds the package into target/pyenv
    target/pyenv/bin/pip install rocksdict lmdb matplotlib
    target/pyenv/bin/python crates/cairn-py/bench/compare.py --out /tmp/py-bench

Comparable settings: 256 MiB of memory for each engine where it has a knob (cairn's budget;
RocksDB two 64 MiB write buffers and a 128 MiB block cache, Bloom 10 bits per key), no
compression, no sync on puts (lmdb: sync=False, one write transaction per put; reads in one
read transaction per thread, lmdb's usual way), raw bytes (RocksDict raw_mode).
"""

import argparse
import json
import multiprocessing as mp
import os
import random
import shutil
import statistics
import threading
import time

ENGINES = ["cairn", "rocksdict", "lmdb"]


def keys(num, seed):
    rng = random.Random(seed)
    order = list(range(num))
    rng.shuffle(order)
    return [b"%016d" % i for i in order]


def value(i):
    return (b"%016d" % i) * 6 + b"v" * 4  # 100 bytes


def open_engine(name, path, uncached=False):
    if name == "cairn":
        import cairn

        if uncached:
            db = cairn.open(
                path,
                memory_budget="8MiB",
                **{"table.compression": "none", "files.use_direct_reads": True},
            )
        else:
            db = cairn.open(path, memory_budget="256MiB", **{"table.compression": "none"})
        return db, db.__setitem__, db.__getitem__, lambda: db.items(), db.close, db.get_many, db.flush
    if name == "rocksdict":
        from rocksdict import BlockBasedOptions, Cache, DBCompressionType, Options, Rdict

        o = Options(raw_mode=True)
        o.create_if_missing(True)
        o.set_write_buffer_size(64 << 20)
        o.set_max_write_buffer_number(2)
        o.set_compression_type(DBCompressionType.none())
        o.set_use_direct_reads(uncached)
        t = BlockBasedOptions()
        t.set_block_cache(Cache((8 if uncached else 128) << 20))
        t.set_bloom_filter(10, False)
        o.set_block_based_table_factory(t)
        db = Rdict(path, o)
        # RocksDict's multi-get: indexing with a list of keys.
        return db, db.__setitem__, db.__getitem__, lambda: db.items(), db.close, db.__getitem__, db.flush
    if name == "lmdb":
        import lmdb

        env = lmdb.open(path, map_size=8 << 30, sync=False, metasync=False, writemap=True)

        def put(k, v):
            with env.begin(write=True) as txn:
                txn.put(k, v)

        local = threading.local()

        def get(k):
            txn = getattr(local, "txn", None)
            if txn is None:
                txn = local.txn = env.begin(buffers=False)
            v = txn.get(k)
            if v is None:
                raise KeyError(k)
            return v

        def scan():
            with env.begin() as txn:
                yield from txn.cursor().iternext(keys=True, values=True)

        def get_many(ks):
            return [get(k) for k in ks]

        return env, put, get, scan, env.close, get_many, None
    raise ValueError(name)


def run_round(name, path, num, reads, queue):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, exist_ok=True)
    ks = keys(num, 7)
    _, put, get, scan, close, get_many, flush = open_engine(name, path)
    out = {}
    t = time.perf_counter()
    for i, k in enumerate(ks):
        put(k, value(i))
    out["put"] = num / (time.perf_counter() - t)
    probe = keys(num, 11)[:reads]

    def one_by_one(part):
        for k in part:
            get(k)

    # Batches of 100 keys per call (lmdb: a loop in Python, its gets being in-process reads).
    def batched(part):
        for j in range(0, len(part), 100):
            get_many(part[j : j + 100])

    def timed(reader, part, threads):
        per = len(part) // threads
        ts = [threading.Thread(target=reader, args=(part[j * per : (j + 1) * per],)) for j in range(threads)]
        t = time.perf_counter()
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        return per * threads / (time.perf_counter() - t)

    for op, reader in (("get", one_by_one), ("get_many", batched)):
        for threads in (1, 4):
            out[f"{op} {threads}t"] = timed(reader, probe[:reads], threads)
    t = time.perf_counter()
    n = sum(1 for _ in scan())
    out["scan"] = n / (time.perf_counter() - t)
    assert n == num, (name, n)
    if flush is not None:
        # Reads that wait for the device (8 MiB of memory, O_DIRECT; lmdb reads through the
        # page cache and has no such mode): where releasing the GIL lets threads overlap.
        flush()
        close()
        _, _, get, _, close, _, _ = open_engine(name, path, uncached=True)
        n = reads // 20
        for threads in (1, 4):
            part = probe[(threads // 4) * n : (threads // 4 + 1) * n]
            out[f"uncached get {threads}t"] = timed(one_by_one, part, threads)
    close()
    shutil.rmtree(path, ignore_errors=True)
    queue.put(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--num", type=int, default=1_000_000)
    ap.add_argument("--reads", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/cairn-py-bench")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    runs = {e: [] for e in ENGINES}
    ctx = mp.get_context("spawn")
    for r in range(a.rounds):
        order = ENGINES if r % 2 == 0 else list(reversed(ENGINES))
        for e in order:
            os.sync()
            q = ctx.Queue()
            p = ctx.Process(target=run_round, args=(e, os.path.join(a.dir, e), a.num, a.reads, q))
            p.start()
            p.join()
            if p.exitcode != 0:
                raise SystemExit(f"{e}: the round's process failed (exit code {p.exitcode})")
            res = q.get(timeout=10)
            runs[e].append(res)
            print(f"round {r + 1} {e}: " + ", ".join(f"{k} {v:,.0f}/s" for k, v in res.items()), flush=True)
    ops = list(runs["cairn"][0])
    # lmdb has no uncached phase: None, printed as "–".
    med = {e: {o: statistics.median(x[o] for x in runs[e]) if o in runs[e][0] else None for o in ops} for e in ENGINES}
    lines = [
        f"{a.num} keys of 16 B with 100 B values, {a.reads} gets of present keys in random order, "
        f"one Python call per operation; medians of {a.rounds} rounds, each engine in a fresh "
        "process per round (engines interleaved). Settings: see the script's docstring.",
        "",
        "| operation | cairn ops/s | RocksDict ops/s | lmdb ops/s | cairn ÷ RocksDict | cairn ÷ lmdb |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for o in ops:
        c, r, l = med["cairn"][o], med["rocksdict"][o], med["lmdb"][o]
        lmdb = ("–", "–") if l is None else (f"{l:,.0f}", f"{c / l:.2f}")
        lines.append(f"| {o} | {c:,.0f} | {r:,.0f} | {lmdb[0]} | {c / r:.2f} | {lmdb[1]} |")
    lines.append("")
    for op in ("get", "get_many", "uncached get"):
        r = [med[e][f"{op} 4t"] / med[e][f"{op} 1t"] if med[e][f"{op} 1t"] else None for e in ENGINES]
        r = ["–" if x is None else f"{x:.2f}" for x in r]
        lines.append(f"{op}: cairn 4 threads ÷ 1 thread {r[0]} (RocksDict {r[1]}, lmdb {r[2]})")
    md = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(md)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"args": vars(a), "runs": runs, "medians": med}, f, indent=2)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 5))
    width = 0.27
    for i, e in enumerate(ENGINES):
        ax.bar([x + i * width for x in range(len(ops))], [med[e][o] or 0 for o in ops], width, label=e)
    ax.set_xticks([x + width for x in range(len(ops))], ops)
    ax.set_yscale("log")
    ax.set_ylabel("operations per second (log)")
    ax.set_title(f"From Python: {a.num} keys, medians of {a.rounds} rounds")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "chart.png"), dpi=100)
    print(md)


if __name__ == "__main__":
    main()
