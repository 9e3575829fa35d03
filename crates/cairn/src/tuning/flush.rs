//! Which runs a flush of a partitioned memory component takes (Luo & Carey §4.1–4.2): pure,
//! over a view of the component (`memtable/component.rs` builds it and queues the job).
//!
//! The view is the component's tiers from newest to oldest: each pending memtable alone, then
//! the memory levels M1, M2, …, each run with its user-key range, bytes, the oldest WAL its data
//! came from, and whether a queued flush already took it (`chosen`) or a merge holds it
//! (`busy`).

/// One run (or pending memtable) of the view.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// Smallest user key.
    pub lo: &'a [u8],
    /// Largest user key.
    pub hi: &'a [u8],
    /// The oldest WAL holding its data.
    pub first_wal: u64,
    /// A queued flush already takes it.
    pub chosen: bool,
    /// A merge holds it.
    pub busy: bool,
}

/// A run by tier and position in it.
pub type RunId = (usize, usize);

fn overlaps(a: &Run<'_>, b: &Run<'_>) -> bool {
    a.lo <= b.hi && b.lo <= a.hi
}

/// The memory-triggered flush: one run of the deepest tier that has one free, no deeper run
/// (not already chosen) overlapping it — so that no newer data passes older data of the same
/// keys — taking the next range after `cursor` (round robin over the key space, the paper's
/// partial flush), or the first. `None` when a tier holds data that may not go yet (it would
/// pass older data, or a merge holds it): nothing shallower may go either.
pub fn partial(tiers: &[Vec<Run<'_>>], cursor: Option<&[u8]>) -> Option<RunId> {
    for (ti, tier) in tiers.iter().enumerate().rev() {
        let deeper_overlap =
            |r: &Run<'_>| tiers[ti + 1..].iter().flatten().any(|d| !d.chosen && overlaps(r, d));
        let ok: Vec<usize> = (0..tier.len())
            .filter(|&i| !tier[i].chosen && !tier[i].busy && !deeper_overlap(&tier[i]))
            .collect();
        if ok.is_empty() {
            if tier.iter().any(|r| !r.chosen) {
                return None;
            }
            continue;
        }
        let after = |i: &usize| cursor.is_none_or(|c| tier[*i].lo > c);
        let pick = ok.iter().copied().find(after).unwrap_or(ok[0]);
        return Some((ti, pick));
    }
    None
}

/// What a log-triggered flush takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogChoice {
    /// Everything (a full flush).
    Full,
    /// The run holding the oldest WAL data, and every deeper run overlapping it (transitively).
    Runs(Vec<RunId>),
    /// Nothing may go now (a merge holds a run the flush needs, or everything is chosen).
    Nothing,
}

/// The log-triggered flush (Luo & Carey's β rule): a full flush unless more than `beta` of the
/// component's `total` bytes were flushed for memory since the oldest live WAL was started
/// (`recent`), else the oldest data and what it must take along.
pub fn log(tiers: &[Vec<Run<'_>>], recent: usize, total: usize, beta: f64) -> LogChoice {
    if recent as f64 <= beta * total as f64 {
        return LogChoice::Full;
    }
    let Some((ti, i)) = tiers
        .iter()
        .enumerate()
        .flat_map(|(ti, t)| (0..t.len()).map(move |i| (ti, i)))
        .filter(|&(ti, i)| !tiers[ti][i].chosen)
        .min_by_key(|&(ti, i)| tiers[ti][i].first_wal)
    else {
        return LogChoice::Nothing;
    };
    let mut set = vec![(ti, i)];
    for (dt, tier) in tiers.iter().enumerate().skip(ti + 1) {
        let more: Vec<RunId> = (0..tier.len())
            .filter(|&j| {
                !tier[j].chosen && set.iter().any(|&(st, si)| overlaps(&tiers[st][si], &tier[j]))
            })
            .map(|j| (dt, j))
            .collect();
        set.extend(more);
    }
    if set.iter().any(|&(st, si)| tiers[st][si].busy) {
        return LogChoice::Nothing;
    }
    LogChoice::Runs(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::run_file;

    /// A run as the test file writes it: lo, hi, first WAL, chosen, busy.
    type Owned = (String, String, u64, bool, bool);

    /// A tier line: runs as `lo-hi` with optional `@wal`, `*` (chosen) and `!` (busy) marks:
    /// `M1: a-c@3 d-f* g-k!`.
    fn parse(lines: &[String]) -> Vec<Vec<Owned>> {
        lines
            .iter()
            .map(|l| {
                let runs = l.split_once(':').map_or(l.as_str(), |(_, r)| r);
                runs.split_whitespace()
                    .map(|w| {
                        let (chosen, busy) = (w.contains('*'), w.contains('!'));
                        let w = w.trim_end_matches(['*', '!']);
                        let (range, wal) = w.split_once('@').unwrap_or((w, "0"));
                        let (lo, hi) = range.split_once('-').unwrap_or((range, range));
                        (lo.to_string(), hi.to_string(), crate::testutil::num(wal), chosen, busy)
                    })
                    .collect()
            })
            .collect()
    }

    fn show(tiers: &[Vec<Owned>], ids: &[RunId]) -> String {
        ids.iter()
            .map(|&(t, i)| format!("tier {t} {}-{}", tiers[t][i].0, tiers[t][i].1))
            .collect::<Vec<_>>()
            .join(", ")
    }

    #[test]
    fn flush_cases() {
        run_file("tuning/flush.txt", |c| {
            let owned = parse(&c.input);
            let tiers: Vec<Vec<Run<'_>>> = owned
                .iter()
                .map(|t| {
                    t.iter()
                        .map(|(lo, hi, wal, chosen, busy)| Run {
                            lo: lo.as_bytes(),
                            hi: hi.as_bytes(),
                            first_wal: *wal,
                            chosen: *chosen,
                            busy: *busy,
                        })
                        .collect()
                })
                .collect();
            match c.command.as_str() {
                "partial" => {
                    let cursor = c.get("cursor").map(|s| s.as_bytes());
                    match partial(&tiers, cursor) {
                        Some(id) => format!("{}\n", show(&owned, &[id])),
                        None => "nothing\n".into(),
                    }
                }
                "log" => {
                    let (recent, total, beta) = (c.arg("recent", 0usize), c.arg("total", 1usize), c.arg("beta", 0.5));
                    match log(&tiers, recent, total, beta) {
                        LogChoice::Full => "full\n".into(),
                        LogChoice::Nothing => "nothing\n".into(),
                        LogChoice::Runs(ids) => format!("{}\n", show(&owned, &ids)),
                    }
                }
                _ => c.unknown(),
            }
        });
    }
}
