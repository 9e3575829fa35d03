//! The write path: validate → group commit (`commit.rs`: the first queued writer leads and
//! runs [`commit`] for the group: every batch appended to the WAL, one sync) → memtable inserts
//! → publish the sequence number → acknowledge.

use super::commit::Pending;
use super::inner::{DbInner, Room, State, WalState};
use super::txn::Validation;
use crate::batch::WriteBatch;
use crate::compaction::pending_bytes;
use crate::error::{Error, Result};
use crate::options::MemoryComponent;
use crate::options::WriteOptions;
use crate::tuning::write_control::{decide, headroom, TreeWriteView, WriteAction, WriteLimits, WriteView};
use crate::wal::WalWriter;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub(super) fn write(inner: &Arc<DbInner>, batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
    write_checked(inner, batch, opts, None)
}

/// [`write`] of a transaction's batch: applied only if `check` passes when its group commits.
pub(super) fn write_checked(
    inner: &Arc<DbInner>,
    batch: WriteBatch,
    opts: &WriteOptions,
    check: Option<Validation>,
) -> Result<()> {
    let batch = {
        let supers = inner.supers.load();
        // Times to live become deadlines here, before the WAL: recovery replays deadlines.
        let batch = if batch.has_ttls() || !inner.opts.ttl.is_empty() {
            batch.stamped(inner.opts.clock.now_ms(), |t| {
                supers.get(t as usize).and_then(|sv| sv.ttl_ms)
            })
        } else {
            batch
        };
        validate(inner, &batch, &supers)?;
        batch
    };
    inner.check_writable()?;
    if batch.is_empty() {
        return Ok(());
    }
    inner
        .commits
        .submit(batch, opts, check, |batches| commit(inner, batches))
}

/// Checks `batch` against the limits, the trees `supers` holds (and not dropped) and the merge
/// operator, before anything of it is logged. A write racing a drop of its tree may pass and
/// commit after it: it lands in the dropped tree's memory, which no read, flush or recovery
/// installs (as if it had come just before the drop).
pub(super) fn validate(inner: &DbInner, batch: &WriteBatch, supers: &[Arc<super::inner::SuperVersion>]) -> Result<()> {
    let l = &inner.opts.limits;
    batch.validate(
        l.max_key_size,
        l.max_value_size,
        l.max_batch_size,
        |t| {
            supers
                .get(t as usize)
                .ok_or_else(|| super::inner::unknown_tree(t))?
                .check_live()
        },
        inner.opts.merge_operator.is_some(),
    )
}

fn commit(inner: &Arc<DbInner>, batches: &mut [Pending]) -> Result<()> {
    let mut wal = inner.wal.lock();
    inner.check_writable()?;
    let no_slowdown = batches.iter().all(|p| p.opts.no_slowdown);
    let bytes: usize = batches.iter().map(|p| p.batch.size_bytes()).sum();
    make_room(inner, &mut wal, no_slowdown, bytes)?;
    // Under the WAL lock every earlier group is in the memtables: a transaction's check sees
    // each write committed before its own.
    if batches.iter().any(|p| p.check.is_some()) {
        super::txn::validate_group(inner, batches);
    }
    let sync = batches.iter().any(|p| p.opts.sync && p.refused.is_none());
    let first = inner.last_seq.load(Ordering::Acquire) + 1;
    let mut seq = first;
    let writer = wal.writer()?;
    let wal_number = writer.log_number();
    let before = writer.size();
    let logged = (|| {
        for p in batches.iter_mut().filter(|p| p.refused.is_none()) {
            let b = &mut p.batch;
            b.set_seqno(seq);
            seq += b.len() as u64;
            writer.add_record(b.encoded())?;
        }
        writer.flush()?;
        if sync {
            sync_logs(inner, writer)?;
        }
        Ok::<_, Error>(())
    })();
    if let Err(e) = logged {
        // The log's state is unknown: nothing more may be acknowledged.
        inner.set_poison(&e);
        return Err(e);
    }
    let wal_bytes = writer.size() - before;
    inner.io.record_write(wal_bytes);
    if sync {
        inner.io.record_sync();
    }
    if wal.actives.is_empty() {
        wal.actives = inner.state.lock().mems.iter().map(|m| m.active().clone()).collect();
    }
    let WalState {
        actives, rates, room, ..
    } = &mut *wal;
    let mut s = first;
    let mut user_bytes = 0u64;
    let mut grown = 0usize;
    rates.set_window(inner.max_wal_size());
    for p in batches.iter().filter(|p| p.refused.is_none()) {
        for op in p.batch.ops() {
            if let Some(m) = actives.get(op.tree as usize) {
                let before = m.approximate_bytes();
                m.insert(op.key, s, op.kind, op.value, wal_number);
                grown += m.approximate_bytes().saturating_sub(before);
            }
            let bytes = (op.key.len() + op.value.len()) as u64;
            rates.record(op.tree as usize, bytes);
            user_bytes += bytes;
            s += 1;
        }
    }
    *room = room.and_then(|r| {
        Some(Room {
            left: r.left.spend(grown, wal_bytes)?,
            ..r
        })
    });
    inner.counters.record_user_write(s - first, user_bytes, wal_bytes);
    inner.last_seq.store(seq - 1, Ordering::Release);
    Ok(())
}

/// Makes every write acknowledged so far durable against power loss: one fdatasync of the
/// WAL (closed ones first) under the WAL lock, so a replication layer can acknowledge a run of
/// non-sync writes with one sync (group commit outside the engine). A failed sync poisons.
pub(super) fn sync_wal(inner: &Arc<DbInner>) -> Result<()> {
    let mut wal = inner.wal.lock();
    inner.check_writable()?;
    if let Err(e) = sync_logs(inner, wal.writer()?) {
        inner.set_poison(&e);
        return Err(e);
    }
    inner.io.record_sync();
    Ok(())
}

/// Makes every write so far durable: a synced write implies every earlier one is, so the
/// closed WALs first, then `writer`'s.
pub(super) fn sync_logs(inner: &DbInner, writer: &mut crate::wal::WalWriter) -> Result<()> {
    inner.closed_wals.sync_all(inner)?;
    writer.sync()
}

/// The write controller's view of the engine now.
fn write_view(inner: &DbInner, st: &State, wal: &WalState, slowed: bool) -> WriteView {
    let version = st.version();
    WriteView {
        trees: st
            .mems
            .iter()
            .enumerate()
            .map(|(t, m)| TreeWriteView {
                active_bytes: m.active_bytes(),
                immutable_bytes: m.immutable_bytes(),
                retained_bytes: m.retained_bytes(),
                active_oldest_wal: m.oldest_unflushed_wal(),
                recent_write_bytes: wal.rates.recent(t),
            })
            .collect(),
        l0_files: version.trees.iter().map(|t| t.l0_groups()).max().unwrap_or(0),
        pending_compaction_bytes: version
            .trees
            .iter()
            .map(|t| pending_bytes(&*inner.policy, t.deepest, t.levels.len(), |l| t.level_bytes(l)))
            .sum(),
        wals: st
            .old_wals
            .iter()
            .map(|(&n, &b)| (n, b))
            .chain(wal.writer.as_ref().map(|w| (st.wal_number, w.size())))
            .collect(),
        current_wal: st.wal_number,
        slowed,
        delay: wal.delay,
    }
}

/// Stalls, delays or switches memtables before a write group of `bytes`, as the write
/// controller decides (called by the leader, holding `wal`: the whole queue waits with it).
fn make_room(inner: &Arc<DbInner>, wal: &mut WalState, no_slowdown: bool, bytes: usize) -> Result<()> {
    let o = &inner.opts;
    let limits = || WriteLimits {
        write_buffer_size: inner.memory.write_buffer_size(),
        write_memory_budget: inner.memory.write_budget(),
        max_wal_size: inner.max_wal_size(),
        l0_slowdown_trigger: o.write_stalls.l0_slowdown_trigger,
        l0_stop_trigger: o.write_stalls.l0_stop_trigger,
        soft_pending_compaction_bytes: o.write_stalls.soft_pending_compaction_bytes,
        hard_pending_compaction_bytes: o.write_stalls.hard_pending_compaction_bytes,
        delayed_write_rate: o.write_stalls.delayed_write_rate,
        flush_policy: o.memtable.flush_policy,
    };
    // Inside the last decision's headroom nothing can have changed it (write_control.rs).
    let epoch = inner.state_epoch.load(Ordering::Acquire);
    if wal.room.is_some_and(|r| r.epoch == epoch && r.limits == limits()) {
        return Ok(());
    }
    wal.room = None;
    let mut slowed = false;
    let mut stopped = false;
    let mut st = inner.state.lock();
    loop {
        inner.check_writable()?;
        let limits = limits();
        let view = write_view(inner, &st, wal, slowed);
        st.recent_writes.clear();
        st.recent_writes.extend(view.trees.iter().map(|t| t.recent_write_bytes));
        let decision = decide(&limits, &view);
        if o.memtable.component == MemoryComponent::Monolithic {
            // Under the state lock, as every install is: no change since the view was read.
            let epoch = inner.state_epoch.load(Ordering::Acquire);
            wal.room = headroom(&limits, &view, &decision).map(|left| Room { epoch, limits, left });
        }
        if wal.delay != decision.delay {
            inner.counters.set_delayed_rate(decision.delay.map(|d| d.rate));
        }
        wal.delay = decision.delay;
        match decision.action {
            WriteAction::Stop(_) | WriteAction::Delay { .. } if no_slowdown => {
                return Err(Error::Busy("writes are stalled and no_slowdown is set".into()));
            }
            WriteAction::Stop(_) => {
                if !stopped {
                    stopped = true;
                    inner.counters.record_stop();
                }
                let t0 = std::time::Instant::now();
                inner.bg_cv.notify_all();
                inner.done_cv.wait_for(&mut st, Duration::from_millis(100));
                inner.counters.record_stall_micros(t0.elapsed().as_micros() as u64);
            }
            WriteAction::Delay { rate } => {
                slowed = true;
                inner.counters.record_slowdown();
                let t0 = std::time::Instant::now();
                let until = t0 + Duration::from_secs_f64(bytes as f64 / rate as f64);
                // The state lock is released while waiting; wake-ups before the end re-wait.
                while !inner.life.is_poisoned() {
                    if inner.done_cv.wait_until(&mut st, until).timed_out() {
                        break;
                    }
                }
                inner.counters.record_delay_micros(t0.elapsed().as_micros() as u64);
            }
            WriteAction::Proceed {
                switch,
                for_log,
                for_memory,
            } => {
                let (parts, whole): (Vec<usize>, Vec<usize>) =
                    switch.iter().partition(|&&t| st.mems[t].is_partitioned());
                for &t in &whole {
                    let bytes = st.mems[t].active_bytes() as u64;
                    inner.counters.tree(t).record_switch(bytes, for_log == Some(t));
                }
                switch_memtables(inner, wal, &mut st, &whole)?;
                let mut stuck = false;
                for t in parts {
                    stuck |= !relieve_partitioned(inner, wal, &mut st, t, for_log == Some(t), for_memory == Some(t))?;
                }
                // Nothing could be chosen (a memory merge holds the runs) and memory is at its
                // cap: wait for the merge, as for a stop.
                let held: usize = st.mems.iter().map(|m| m.bytes()).sum();
                if stuck && held >= limits.write_memory_budget + limits.write_buffer_size {
                    if no_slowdown {
                        return Err(Error::Busy("write memory is full and no_slowdown is set".into()));
                    }
                    let t0 = std::time::Instant::now();
                    inner.done_cv.wait_for(&mut st, Duration::from_millis(100));
                    inner.counters.record_stall_micros(t0.elapsed().as_micros() as u64);
                    continue;
                }
                return Ok(());
            }
        }
    }
}

/// What a switch decision means for partitioned tree `t`: a full active memtable goes to wait
/// for its merge into M1; for memory, one run is chosen for a partial flush (the active
/// memtable is switched instead when it holds everything); for the log, the oldest data and what
/// it overlaps, or everything (β rule) — the active memtable first when it holds the oldest data.
/// False when memory was asked for and nothing could be chosen.
fn relieve_partitioned(
    inner: &Arc<DbInner>,
    wal: &mut WalState,
    st: &mut State,
    t: usize,
    for_log: bool,
    for_memory: bool,
) -> Result<bool> {
    let m = &st.mems[t];
    let active_oldest = Some(m.active().first_wal()) == m.oldest_unflushed_wal();
    if m.active_bytes() >= inner.memory.write_buffer_size() || (for_log && active_oldest) {
        switch_memtables(inner, wal, st, &[t])?;
    }
    let before = st.mems[t].immutable_bytes();
    if for_log {
        let oldest_live = st.old_wals.keys().next().copied().unwrap_or(st.wal_number);
        let beta = inner.opts.memtable.partitioned_flush_beta;
        st.mems[t].choose_log_flush(oldest_live, beta);
    }
    let mut relieved = true;
    if for_memory && !st.mems[t].choose_partial_flush(st.wal_number) {
        if st.mems[t].retained_bytes() == 0 {
            switch_memtables(inner, wal, st, &[t])?;
        } else {
            relieved = false;
        }
    }
    let chosen = st.mems[t].immutable_bytes().saturating_sub(before) as u64;
    if chosen > 0 {
        inner.counters.tree(t).record_switch(chosen, for_log);
        inner.bg_cv.notify_all();
    }
    Ok(relieved)
}

/// Makes the active memtables of `trees` immutable, starting a new WAL (the old one is parked
/// unsynced in `closed_wals`).
pub(super) fn switch_memtables(
    inner: &Arc<DbInner>,
    wal: &mut WalState,
    st: &mut State,
    trees: &[usize],
) -> Result<()> {
    let trees: Vec<usize> = trees
        .iter()
        .copied()
        .filter(|&t| !st.mems[t].active().is_empty())
        .collect();
    if trees.is_empty() {
        return Ok(());
    }
    // The old WAL is not synced here (it was, holding every writer for 50–110 ms under
    // compaction I/O): it is parked for a flush or a sync write to sync (`closed_wals.rs`).
    // The new WAL is the spare the WAL thread made ahead (`background.rs`), renamed into place,
    // or, without one (switches in quick succession), made here. Either way the directory is
    // synced later, by whatever needs the log durable (`closed_wals.rs`): a file creation, a
    // header sync and a directory sync cost up to 40 ms here under compaction I/O.
    // The leader holds the WAL lock: the next write is the one after the last published.
    let first = inner.last_seq.load(Ordering::Acquire) + 1;
    let rotated = match st.spare_wal.take() {
        Some(mut w) => {
            let path = crate::filename::wal(&inner.dir, w.log_number());
            inner.fs.rename(&crate::filename::temp(&path), &path).map(|()| {
                w.set_first_seq(first);
                w
            })
        }
        None => {
            let n = st.versions.new_file_number();
            WalWriter::create(
                &*inner.fs,
                &crate::filename::wal(&inner.dir, n),
                n,
                inner.db_id,
                Some(first),
            )
        }
    };
    st.spare_wanted = true;
    let new = match rotated {
        Ok(w) => w,
        Err(e) => {
            inner.set_poison(&e);
            return Err(e);
        }
    };
    inner.closed_wals.renamed();
    st.wal_number = new.log_number();
    wal.actives.clear();
    if let Some(old) = wal.writer.replace(new) {
        st.old_wals.insert(old.log_number(), old.size());
        inner.closed_wals.push(old);
    }
    let share = inner.memory.write_budget() / st.mems.len();
    for &t in &trees {
        st.mems[t].switch(inner.memory.write_buffer_size(), share);
        inner.install_super_version(st, t);
    }
    inner.bg_cv.notify_all();
    Ok(())
}
