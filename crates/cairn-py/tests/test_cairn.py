"""The Python API against a dict model, and its edges: trees, batches, snapshots, threads,
exceptions, reopen."""

import random
import threading
import time

import pytest

import cairn

# Small memtables: the model test flushes and compacts tables, not only the memtable.
SMALL = {"memtable__size": 64 << 10, "memory__write_memory": 256 << 10}


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "db")


def test_model_against_a_dict(path):
    rng = random.Random(7)
    model = {}
    with cairn.open(path, **SMALL) as db:
        for step in range(6000):
            k = b"k%04d" % rng.randrange(800)
            op = rng.random()
            if op < 0.55:
                v = rng.randbytes(rng.randrange(1, 200))
                db[k] = v
                model[k] = v
            elif op < 0.7:
                if k in model:
                    del db[k]
                    del model[k]
                else:
                    with pytest.raises(KeyError):
                        del db[k]
            elif op < 0.72:
                lo, hi = sorted([b"k%04d" % rng.randrange(800), b"k%04d" % rng.randrange(800)])
                db.delete_range(lo, hi)
                for key in [key for key in model if lo <= key < hi]:
                    del model[key]
            else:
                assert db.get(k) == model.get(k)
                assert (k in db) == (k in model)
            if step % 1500 == 1499:
                db.flush()
        assert list(db.items()) == sorted(model.items())
        assert list(db.keys(reverse=True)) == sorted(model, reverse=True)
        lo, hi = b"k0200", b"k0500"
        assert list(db.values(start=lo, end=hi)) == [model[k] for k in sorted(model) if lo <= k < hi]
        assert list(db.items(start=lo, end=hi, reverse=True)) == sorted(
            ((k, v) for k, v in model.items() if lo <= k < hi), reverse=True
        )
        assert list(db) == sorted(model)
        db.compact()
        assert list(db.items()) == sorted(model.items())
    # Reopen: everything written is there.
    with cairn.open(path) as db:
        assert list(db.items()) == sorted(model.items())


def test_dict_protocol_and_bytes_like_keys(path):
    with cairn.open(path) as db:
        db[b"a"] = b"1"
        db[bytearray(b"b")] = memoryview(b"2")
        assert db[memoryview(b"b")] == b"2"
        assert db[bytearray(b"a")] == b"1"
        assert db.get(b"missing") is None
        assert db.get(b"missing", b"d") == b"d"
        with pytest.raises(KeyError):
            db[b"missing"]
        with pytest.raises(TypeError, match="not str"):
            db["a"] = b"1"
        with pytest.raises(TypeError, match="not str"):
            db[b"a"] = "1"
        with pytest.raises(TypeError):
            db[1] = b"1"
        db.delete(b"never")  # deleting an absent key with delete() is not an error
        assert db.get_many([b"a", bytearray(b"b"), b"missing"]) == [b"1", b"2", None]
        assert db.get_many(iter([])) == []
        with pytest.raises(TypeError, match="not str"):
            db.get_many([b"a", "b"])
        assert db.name == "default"


def test_trees_are_separate_key_spaces(path):
    with cairn.open(path) as db:
        users = db.tree("users")
        db[b"k"] = b"default"
        users[b"k"] = b"users"
        assert db[b"k"] == b"default" and users[b"k"] == b"users"
        assert list(users.items()) == [(b"k", b"users")]
        assert users.name == "users"
        assert "users" in db.tree_names()
    with cairn.open(path) as db:
        assert db.tree("users")[b"k"] == b"users"


def test_a_dropped_tree_is_gone_and_its_name_free(path):
    with cairn.open(path) as db:
        logs = db.tree("logs")
        logs[b"k"] = b"v"
        db.drop_tree("logs")
        assert "logs" not in db.tree_names()
        with pytest.raises(cairn.TreeDroppedError):
            logs.get(b"k")
        with pytest.raises(cairn.TreeDroppedError):
            logs[b"k2"] = b"v"
        with pytest.raises(cairn.InvalidArgumentError):
            db.drop_tree("logs")
        assert db.tree("logs").get(b"k") is None
    with cairn.open(path) as db:
        assert list(db.tree("logs").items()) == []


def test_batches_commit_atomically_and_roll_back(path):
    with cairn.open(path) as db:
        t = db.tree("t")
        db[b"gone"] = b"x"
        with db.batch() as b:
            b.put(b"a", b"1")
            b.put(b"a", b"2", tree=t)
            b.delete(b"gone")
            b.delete_range(b"r0", b"r9")
        assert db[b"a"] == b"1" and t[b"a"] == b"2" and b"gone" not in db
        with pytest.raises(RuntimeError):
            with db.batch() as b:
                b.put(b"never", b"1")
                raise RuntimeError("abort")
        assert b"never" not in db
        b = db.batch()
        b.put(b"late", b"1")
        b.write()
        assert db[b"late"] == b"1"
        with pytest.raises(cairn.Error, match="already written"):
            b.put(b"again", b"1")


def test_snapshots_see_the_past(path):
    with cairn.open(path) as db:
        t = db.tree("t")
        db[b"k"] = b"old"
        t[b"k"] = b"t-old"
        with db.snapshot() as snap:
            db[b"k"] = b"new"
            db[b"added"] = b"1"
            t[b"k"] = b"t-new"
            assert snap.get(b"k") == b"old"
            assert snap.get(b"added") is None
            assert snap.get(b"added", b"d") == b"d"
            assert snap.get(b"k", tree=t) == b"t-old"
            assert list(snap.items()) == [(b"k", b"old")]
            assert list(snap.items(tree=t, reverse=True)) == [(b"k", b"t-old")]
        with pytest.raises(cairn.Error, match="released"):
            snap.get(b"k")
        assert db[b"k"] == b"new"


def test_threads_read_and_write_in_parallel(path):
    with cairn.open(path) as db:
        for i in range(2000):
            db[b"%05d" % i] = b"v%d" % i
        errors = []

        def reader(seed):
            rng = random.Random(seed)
            try:
                for _ in range(3000):
                    i = rng.randrange(2000)
                    assert db[b"%05d" % i] == b"v%d" % i
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        def writer():
            try:
                for i in range(2000, 4000):
                    db[b"%05d" % i] = b"w"
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=reader, args=(s,)) for s in range(4)]
        threads.append(threading.Thread(target=writer))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(list(db.keys())) == 4000
        # One iterator and one snapshot shared by threads: every key exactly once, no deadlock.
        shared = db.items()
        seen = []
        with db.snapshot() as snap:

            def drain():
                for k, _ in shared:
                    seen.append(k)
                    assert snap.get(k) is not None

            threads = [threading.Thread(target=drain) for _ in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert sorted(seen) == [b"%05d" % i for i in range(4000)]


def test_errors_are_typed(path):
    db = cairn.open(path)
    with pytest.raises(cairn.LockedError):
        cairn.open(path)
    with pytest.raises(cairn.InvalidArgumentError, match="no_such_option"):
        cairn.open(path + "-2", no_such_option=1)
    with pytest.raises(cairn.InvalidArgumentError, match="key"):
        db[b"k" * (1 << 20)] = b"v"
    assert issubclass(cairn.CorruptionError, cairn.Error)
    assert issubclass(cairn.IoError, cairn.Error)
    assert issubclass(cairn.ReadOnlyError, cairn.Error)
    db.close()
    with pytest.raises(cairn.Error, match="closed"):
        db[b"k"]
    db.close()  # closing twice is harmless
    # The lock was released: it opens again.
    cairn.open(path).close()


def test_options_by_name_and_reports(path):
    with cairn.open(path, memory={"block_cache": "4MiB"}, **{"filters.bits_per_key": 12.5, "table__block_size": 8192}) as db:
        db[b"k"] = b"v"
        db.flush()
        assert "cache" in db.property("cairn.stats").lower()
        assert db.property("no.such.property") is None
        for _ in range(10):
            assert db[b"k"] == b"v"
        s = db.stats()
        assert s["user_write_ops"] == 1
        assert s["trees"]["default"]["gets"] >= 10
        assert set(s["io"]) >= {"data", "index", "filter", "bytes_written", "syncs"}
        assert s["io"]["data"]["reads"] + s["io"]["data"]["cache_hits"] >= 1
        assert all(isinstance(level["probes"], int) for level in s["trees"]["default"]["levels"])
        assert s["cache_capacity"] == 4 << 20
        assert s["kv_cache"]["capacity"] == 0
        assert s["range_builds"] == {
            "bits_per_key": 10.0, "built": 0, "filter_bytes": 0, "failed": 0, "misfits": 0, "read_bytes": 0
        }
        assert set(s["io"]["readahead"]) == {"chunks", "bytes", "served", "blocks"}
        assert s["trees"]["default"]["scans"]["seeks"] == 0
        it = db.items(b"a", b"z")
        assert list(it) == [(b"k", b"v")]
        del it  # a range read's entries are counted when it is released
        scans = db.stats()["trees"]["default"]["scans"]
        assert (scans["seeks"], scans["entries"]) == (1, 1)


def test_the_key_value_cache_reports_its_hits(path):
    with cairn.open(path, memory={"kv_cache": "1MiB"}) as db:
        db[b"k"] = b"v"
        db.flush()
        for _ in range(3):
            assert db[b"k"] == b"v"
        kv = db.stats()["kv_cache"]
        assert kv["capacity"] == 1 << 20
        assert (kv["fills"], kv["hits"]) == (1, 2)
        assert kv["entries"] == 1 and kv["usage"] > 0


def test_merge_ttl_read_only_and_checkpoint(tmp_path):
    path = str(tmp_path / "db")
    with cairn.open(path, merge__operator="uint64add") as db:
        counters = db.tree("counters")
        for _ in range(3):
            counters.merge(b"hits", (5).to_bytes(8, "little"))
        with db.batch() as b:
            b.merge(b"hits", (1).to_bytes(8, "little"), tree=counters)
        assert int.from_bytes(counters[b"hits"], "little") == 16
        db.put(b"short", b"lived", ttl=0.05)
        db.put(b"long", b"lived", ttl=3600)
        with pytest.raises(cairn.InvalidArgumentError, match="ttl"):
            db.put(b"k", b"v", ttl=-1)
        time.sleep(0.1)
        assert db.get(b"short") is None and db[b"long"] == b"lived"
        info = db.checkpoint(str(tmp_path / "copy"))
        assert info["last_seqno"] > 0
    with cairn.open(str(tmp_path / "copy"), merge__operator="uint64add") as copy:
        assert int.from_bytes(copy.tree("counters")[b"hits"], "little") == 16
    with cairn.open(path, read_only=True, merge__operator="uint64add") as ro:
        assert ro[b"long"] == b"lived"
        with pytest.raises(cairn.ReadOnlyError):
            ro[b"x"] = b"y"


def test_backups_share_tables_and_restore_the_newest(tmp_path):
    path, backups = str(tmp_path / "db"), str(tmp_path / "backups")
    with cairn.open(path, **SMALL) as db:
        for i in range(2000):
            db[b"k%05d" % i] = b"first"
        db.flush()
        first = db.backup(backups)
        assert first["id"] == 1 and first["tables"] > 0 and first["tables_shared"] == 0
        for i in range(1000):
            db[b"k%05d" % i] = b"second"
        del db[b"k01999"]
        second = db.backup(backups)
        assert second["id"] == 2 and second["tables_shared"] > 0
        db[b"after"] = b"not in any backup"
    restored = str(tmp_path / "restored")
    info = cairn.restore(backups, restored)
    assert info["id"] == 2
    with cairn.open(restored) as db:
        assert db[b"k00000"] == b"second" and db[b"k01000"] == b"first"
        assert b"k01999" not in db and b"after" not in db
        assert len(list(db.keys())) == 1999
    with pytest.raises(cairn.InvalidArgumentError):
        cairn.restore(backups, restored)  # not empty any more


def test_a_transaction_commits_at_the_end_of_its_block_and_rolls_back_when_it_raises(path):
    with cairn.open(path) as db:
        db[b"a"] = b"1"
        users = db.tree("users")
        with db.transaction() as tx:
            assert tx[b"a"] == b"1"
            tx[b"b"] = b"2"
            tx.put(b"u", b"x", tree=users)
            tx.delete(b"a")
            assert tx.get(b"a") is None
            assert list(tx.items()) == [(b"b", b"2")]
            assert b"b" not in db, "nothing is visible before the commit"
        assert db.get(b"a") is None and db[b"b"] == b"2" and users[b"u"] == b"x"
        with pytest.raises(RuntimeError):
            with db.transaction() as tx:
                tx[b"c"] = b"3"
                raise RuntimeError("the block failed")
        assert b"c" not in db
        tx = db.transaction()
        tx.commit()
        with pytest.raises(cairn.Error):
            tx.put(b"d", b"4")
        with pytest.raises(cairn.Error):
            tx.commit()
        stats = db.stats()["transactions"]
        assert stats["commits"] == 2 and stats["rollbacks"] == 1


def test_a_conflict_raises_and_transact_retries_it(path):
    with cairn.open(path) as db:
        db[b"n"] = b"0"
        t1, t2 = db.transaction(), db.transaction()
        for t in (t1, t2):
            t[b"n"] = str(int(t[b"n"]) + 1).encode()
        t1.commit()
        with pytest.raises(cairn.ConflictError):
            t2.commit()
        assert db[b"n"] == b"1"

        def increment(tx):
            tx[b"n"] = str(int(tx[b"n"]) + 1).encode()

        threads = [threading.Thread(target=lambda: [cairn.transact(db, increment, attempts=1000) for _ in range(200)]) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert db[b"n"] == b"801"
        with pytest.raises(cairn.InvalidArgumentError):
            db.transaction(isolation="eventual")


def test_write_skew_is_refused_only_when_serializable(path):
    with cairn.open(path) as db:
        for isolation, refused in (("serializable", True), ("snapshot", False)):
            db[b"alice"], db[b"bob"] = b"on", b"on"
            t1, t2 = db.transaction(isolation=isolation), db.transaction(isolation=isolation)
            for t, me, other in ((t1, b"alice", b"bob"), (t2, b"bob", b"alice")):
                if t[other] == b"on":
                    t[me] = b"off"
            t1.commit()
            if refused:
                with pytest.raises(cairn.ConflictError):
                    t2.commit()
            else:
                t2.commit()


def test_transaction_iterators_read_past_their_read_ahead_in_both_directions(path):
    with cairn.open(path) as db:
        for i in range(0, 300, 2):
            db[b"k%04d" % i] = b"db"
        with db.transaction() as tx:
            for i in range(1, 300, 3):
                tx[b"k%04d" % i] = b"own"
            tx.delete(b"k0010")
            model = {b"k%04d" % i: b"db" for i in range(0, 300, 2)}
            model.update({b"k%04d" % i: b"own" for i in range(1, 300, 3)})
            del model[b"k0010"]
            want = sorted(model.items())
            assert list(tx.items()) == want
            assert list(tx.items(reverse=True)) == want[::-1]
            assert list(tx.items(start=b"k0100", end=b"k0200")) == [kv for kv in want if b"k0100" <= kv[0] < b"k0200"]


def test_pessimistic_transactions_time_out_on_a_held_lock(path):
    with cairn.open(path) as db:
        holder = db.transaction(pessimistic=True)
        holder.put(b"k", b"1")
        waiter = db.transaction(pessimistic=True, lock_timeout=0.01)
        with pytest.raises(cairn.LockTimeoutError):
            waiter.put(b"k", b"2")
        waiter.rollback()
        holder.commit()
        assert db[b"k"] == b"1"
        assert db.stats()["transactions"]["lock_timeouts"] == 1
