//! Where an ingested table goes (`db/ingest.rs`): the deepest level it can join without
//! breaking the rule that, for every key, shallower levels hold newer versions. Tested in
//! `testdata/compaction/ingest.txt`.
//!
//! The table is newer than everything in the tree, so it must sit above every level that holds
//! (or a running compaction is writing) a file overlapping its key range: at the level just
//! above the shallowest such level, or at L0 when that is L0 or L1 (L0 as its own, newest
//! group). A table that overlaps nothing goes to the tree's deepest level, as if compacted
//! there (RocksDB's ingestion picks the same).

/// The level for a table over user keys `[lo, hi]`; `spans(level)` lists the user-key ranges
/// of a level's files and of the outputs running compactions write into it, `deepest` is the
/// tree's deepest level (≥ 1).
pub fn ingest_level<'a, S>(lo: &[u8], hi: &[u8], deepest: usize, spans: impl Fn(usize) -> S) -> usize
where
    S: IntoIterator<Item = (&'a [u8], &'a [u8])>,
{
    let overlaps = |level: usize| spans(level).into_iter().any(|(a, b)| a <= hi && lo <= b);
    match (0..=deepest).find(|&l| overlaps(l)) {
        None => deepest.max(1),
        Some(first) if first <= 1 => 0,
        Some(first) => first - 1,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests fail by panicking")]
    use super::ingest_level;
    use crate::testutil::run_file;

    /// `place deepest=N` then one line per level, `L<n> a-c e-f ...` (its spans), and last
    /// `file lo-hi`: prints the level chosen.
    #[test]
    fn placement() {
        run_file("compaction/ingest.txt", |c| {
            let deepest = c.arg("deepest", 1usize);
            let span = |s: &str| {
                let (a, b) = s.split_once('-').expect("lo-hi");
                (a.as_bytes().to_vec(), b.as_bytes().to_vec())
            };
            let mut levels: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); deepest + 1];
            let mut file = None;
            for line in &c.input {
                let mut parts = line.split_whitespace();
                let head = parts.next().expect("a line");
                if head == "file" {
                    file = Some(span(parts.next().expect("lo-hi")));
                } else {
                    let l: usize = head.trim_start_matches('L').parse().expect("L<n>");
                    levels[l].extend(parts.map(span));
                }
            }
            let (lo, hi) = file.expect("a file line");
            let l = ingest_level(&lo, &hi, deepest, |l| {
                levels[l].iter().map(|(a, b)| (a.as_slice(), b.as_slice()))
            });
            format!("L{l}")
        });
    }
}
