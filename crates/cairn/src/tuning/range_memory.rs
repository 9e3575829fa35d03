//! Which tables' range filters range-filter memory keeps (`db/control/range_filter_memory.rs` runs it): a
//! filter saves about one data-block read per empty range read that reaches its table, so
//! the filters worth memory most are those with the most empty range reads per byte. Each
//! round ranks the tables whose readers are open by that rate — a filter already in memory
//! counts [`KEEP`] times its rate, so that two filters of about the same worth do not take
//! turns being read from storage — and admits them in that order while they fit; a filter
//! that does not fit is passed over for smaller ones after it. The others are unloaded and not
//! read again until a round admits them.

/// Weight of a filter already in memory (what reading it again costs is not counted
/// otherwise: one read of the whole block).
pub const KEEP: f64 = 2.0;

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
    let rate = |c: &Candidate| {
        let weight = if c.pinned { KEEP } else { 1.0 };
        weight * c.score / c.bytes.max(1) as f64
    };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::run_file;

    #[test]
    fn range_memory_cases() {
        run_file("tuning/range_memory.txt", |c| {
            let capacity = c.arg("capacity", 0u64);
            let parsed: Vec<(String, Candidate)> = c
                .input
                .iter()
                .map(|l| {
                    let mut parts = l.split_whitespace();
                    let name = parts.next().unwrap_or_default().to_string();
                    let mut cand = Candidate {
                        bytes: 0,
                        pinned: false,
                        score: 0.0,
                    };
                    for p in parts {
                        match p.split_once('=') {
                            Some(("bytes", v)) => cand.bytes = v.parse().unwrap(),
                            Some(("score", v)) => cand.score = v.parse().unwrap(),
                            None if p == "pinned" => cand.pinned = true,
                            _ => panic!("unknown field {p}"),
                        }
                    }
                    (name, cand)
                })
                .collect();
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
        });
    }
}
