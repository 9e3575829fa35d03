//! Where a compaction output is cut. Without a level below the output level, at
//! `target_file_size`. With one (the *grandparent* level), at the boundaries of its files: an
//! output that straddles one makes the later merge of the output into that level read both
//! files there, the one it barely overlaps in full. So an output is cut before the first user
//! key at or past a grandparent file's first key once it holds a share of the target that
//! starts at half and grows by a tenth with every crossing of a boundary in the output, up to
//! 90%: an output that crossed many will likely meet another before the target, so it waits
//! for a later one (RocksDB 7.8's rule, whose 5% per boundary counts a file's start and end;
//! with a fixed half, outputs over a level of small files ended little past half the target).
//! It grows past the target toward the next boundary, up to twice the target; past the last
//! boundary the target applies again. Tested in `testdata/compaction/cuts.txt`.

/// The cut decision for one output run.
#[derive(Debug, Clone)]
pub struct Cuts {
    target: u64,
    /// First user keys of the grandparent level's files, ascending.
    bounds: Vec<Vec<u8>>,
    /// Bounds before `next` are at or before the last key seen.
    next: usize,
    /// Crossings (keys past one boundary or more) since the current output began (`None`
    /// before the first key: the boundaries at or before it were not crossed by any output).
    crossings: Option<u64>,
}

impl Cuts {
    /// Cuts at `target` bytes, aligned to `bounds` (first user keys of the grandparent
    /// files; any order, empty for none).
    pub fn new(target: u64, mut bounds: Vec<Vec<u8>>) -> Self {
        bounds.sort_unstable();
        Cuts {
            target,
            bounds,
            next: 0,
            crossings: None,
        }
    }

    /// Whether the output holding `size` bytes is closed before `key`, a new user key (keys
    /// come in ascending order, one call each).
    pub fn cut_before(&mut self, key: &[u8], size: u64) -> bool {
        let before = self.next;
        while self.bounds.get(self.next).is_some_and(|b| b.as_slice() <= key) {
            self.next += 1;
        }
        if self.bounds.is_empty() {
            return size >= self.target;
        }
        let crossed = self.next > before;
        let crossings = self.crossings.map_or(0, |c| c + u64::from(crossed));
        let percent = 50 + (10 * crossings).min(40);
        let none_ahead = self.next == self.bounds.len();
        let cut = size >= self.target.saturating_mul(2)
            || (crossed && size.saturating_mul(100) >= self.target.saturating_mul(percent))
            || (none_ahead && size >= self.target);
        self.crossings = Some(if cut { 0 } else { crossings });
        cut
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail by panicking")]
    use super::Cuts;
    use crate::testutil::run_file;

    /// `cuts target=T bounds=a,b,...` then one line per key, `KEY SIZE`: prints the keys an
    /// output is cut before.
    #[test]
    fn cuts() {
        run_file("compaction/cuts.txt", |c| {
            let target = c.arg("target", 100u64);
            let bounds: Vec<Vec<u8>> = c
                .get("bounds")
                .map(|b| b.split(',').filter(|s| !s.is_empty()).map(|s| s.as_bytes().to_vec()).collect())
                .unwrap_or_default();
            let mut cuts = Cuts::new(target, bounds);
            let mut out = Vec::new();
            for line in &c.input {
                let (key, size) = line.split_once(' ').expect("KEY SIZE");
                if cuts.cut_before(key.as_bytes(), size.parse().expect("size")) {
                    out.push(format!("cut before {key}"));
                }
            }
            if out.is_empty() {
                "no cut".into()
            } else {
                out.join("\n")
            }
        });
    }
}
