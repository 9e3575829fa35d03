//! How far a forward range read reads ahead of the block its seek lands on, per level.
//!
//! A user iterator reads blocks alone until its reads turn sequential, then in chunks that
//! grow (RocksDB's auto-readahead): a scan of a few blocks pays an I/O for each of its first
//! blocks. The engine counts, per level, how many further blocks each forward seek went on to
//! read in file order (its *run*), and this decider picks the readahead that the seek's own
//! read takes along so that the runs it saw cost the least: each read costs
//! [`IO_COST_BYTES`] plus the bytes it reads. Seeks that stay in their block (point-like
//! reads) keep reading one block; scans of dozens of blocks read most of them with the seek.

/// Buckets of a seek's run length ([`bucket`]).
pub const BUCKETS: usize = 12;

/// The first chunk of auto-readahead once reads turn sequential (RocksDB's 8 KiB).
pub const FIRST_CHUNK: u64 = 8 << 10;

/// The largest chunk a user iterator reads ahead (RocksDB's `max_auto_readahead_size`).
pub const MAX_CHUNK: u64 = 256 << 10;

/// What one more read costs, in bytes read: on this project's machine a 4 KiB O_DIRECT read
/// took 59 µs and a 256 KiB one 384 µs (1.27 µs per KiB), so a read's fixed cost is the
/// transfer of about 42 KiB (`docs/results/2026-12-07/scans-seek-ahead/device.txt`).
pub const IO_COST_BYTES: f64 = 40.0 * 1024.0;

/// Seeks a level must have seen (decayed) before its readahead moves from none.
pub const MIN_SEEKS: f64 = 32.0;

/// The bucket of a run of `blocks` further blocks: 0 for none, 1 for one, then one bucket per
/// power of two (`(2^(k-2), 2^(k-1)]` blocks in bucket k), the last open-ended.
pub fn bucket(blocks: u64) -> usize {
    if blocks == 0 {
        return 0;
    }
    (1 + (64 - (blocks - 1).leading_zeros()) as usize).min(BUCKETS - 1)
}

/// The run length that stands for bucket `k`: the middle of its range.
fn representative(k: usize) -> u64 {
    match k {
        0 => 0,
        1 => 1,
        _ => {
            let (lo, hi) = ((1u64 << (k - 2)) + 1, 1u64 << (k - 1));
            if k == BUCKETS - 1 {
                2 * hi
            } else {
                (lo + hi) / 2
            }
        }
    }
}

/// The chunk after one of `chunk` bytes.
pub fn grow(chunk: u64) -> u64 {
    (chunk * 2).min(MAX_CHUNK)
}

/// Reads and bytes read by a seek that goes on for `run` further blocks of `block` bytes
/// (trailer included), reading `ahead` bytes beyond its own block: with none, the next block
/// alone, then chunks of [`FIRST_CHUNK`] and up; each chunk read holds the block it starts at
/// and `chunk` bytes beyond.
pub fn cost(run: u64, ahead: u64, block: u64) -> (u64, u64) {
    let block = block.max(1);
    let (mut reads, mut bytes, mut have, mut chunk) = (1, block + ahead, ahead / block, grow(ahead));
    if ahead == 0 {
        if run == 0 {
            return (reads, bytes);
        }
        (reads, bytes, have, chunk) = (2, 2 * block, 1, FIRST_CHUNK);
    }
    while have < run {
        reads += 1;
        bytes += block + chunk;
        have += 1 + chunk / block;
        chunk = grow(chunk);
    }
    (reads, bytes)
}

/// The readahead (bytes beyond the seek's block: a whole number of blocks and a quarter, as
/// blocks vary around their average) with the least expected cost over `runs` (seeks per
/// [`bucket`], decayed weights), for blocks of `block` bytes on average; 0 until
/// [`MIN_SEEKS`] seeks were seen. Ties go to the smaller readahead.
pub fn seek_readahead(runs: &[f64; BUCKETS], block: u64) -> u64 {
    let seeks: f64 = runs.iter().sum();
    if seeks < MIN_SEEKS || block == 0 {
        return 0;
    }
    let expected = |ahead: u64| -> f64 {
        runs.iter()
            .enumerate()
            .filter(|(_, w)| **w > 0.0)
            .map(|(k, w)| {
                let (reads, bytes) = cost(representative(k), ahead, block);
                w * (reads as f64 * IO_COST_BYTES + bytes as f64)
            })
            .sum()
    };
    let ahead = |blocks: u64| blocks * block + block / 4;
    let max_blocks = ((MAX_CHUNK - block / 4) / block).max(1);
    let mut best = (expected(0), 0);
    for blocks in [1u64, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, max_blocks] {
        if blocks > max_blocks {
            break;
        }
        let c = expected(ahead(blocks));
        if c < best.0 * (1.0 - 1e-9) {
            best = (c, ahead(blocks));
        }
    }
    best.1
}

/// Folds a period's new runs into the decayed weights: the past counts half.
pub fn decay_into(weights: &mut [f64; BUCKETS], new: &[u64; BUCKETS]) {
    for (w, n) in weights.iter_mut().zip(new) {
        *w = *w * 0.5 + *n as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{num, run_file, Case};

    #[test]
    fn buckets() {
        let got: Vec<usize> = [0, 1, 2, 3, 4, 5, 8, 9, 16, 17, 512, 513, 1 << 20]
            .iter()
            .map(|&b| bucket(b))
            .collect();
        assert_eq!(got, vec![0, 1, 2, 3, 3, 4, 4, 5, 5, 6, 10, 11, 11]);
        for k in 0..BUCKETS {
            assert_eq!(bucket(representative(k)), k, "bucket {k}");
        }
    }

    #[test]
    fn cost_follows_the_chunks() {
        let b = 4101;
        // Without readahead: the seek's block, the next alone, then 8 KiB chunks (+ a block).
        assert_eq!(cost(0, 0, b), (1, b));
        assert_eq!(cost(1, 0, b), (2, 2 * b));
        assert_eq!(cost(2, 0, b), (3, 3 * b + FIRST_CHUNK));
        assert_eq!(cost(3, 0, b), (3, 3 * b + FIRST_CHUNK));
        assert_eq!(cost(4, 0, b), (4, 4 * b + FIRST_CHUNK + 2 * FIRST_CHUNK));
        // Four blocks ahead serve a run of four in one read; a fifth takes a chunk of twice that.
        assert_eq!(cost(4, 4 * b, b), (1, 5 * b));
        assert_eq!(cost(5, 4 * b, b), (2, 5 * b + b + 8 * b));
    }

    #[test]
    fn readahead_cases() {
        run_file("tuning/readahead.txt", |c| match c.command.as_str() {
            "decide" => decide_case(c),
            other => panic!("unknown command {other}"),
        });
    }

    /// Input: one line per bucket with seeks, as `runs=N seeks=W`: W seeks whose runs were N
    /// further blocks (bucketed).
    fn decide_case(c: &Case) -> String {
        let block = c.arg("block", 4101u64);
        let mut runs = [0.0; BUCKETS];
        for line in &c.input {
            let mut parts = line.split_whitespace();
            let (Some(r), Some(w)) = (parts.next(), parts.next()) else {
                panic!("bad line {line:?}");
            };
            let run: u64 = num(r.trim_start_matches("runs="));
            runs[bucket(run)] += num::<f64>(w.trim_start_matches("seeks="));
        }
        let ahead = seek_readahead(&runs, block);
        format!("ahead {} blocks ({} KiB)", ahead / block, ahead / 1024)
    }
}
