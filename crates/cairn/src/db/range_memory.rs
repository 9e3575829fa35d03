//! Range-filter memory at run time (docs/design.md §5): when range filters are charged to the
//! block cache, they may hold `range_filter.memory_share` of its capacity. A bounded read pins a
//! table's filter (`TableReader::with_range_filter`) only while the region has room and the
//! file is admitted; a round every `range_filter.round_ms` while range reads arrive — and at
//! once when the cache is resized — keeps the region for the filters with the most recent empty range reads
//! per byte (`tuning/range_memory.rs`), unloads the others and clears their admission. A
//! table whose filter is out is read as if it had none; its empty reads are still counted in
//! its side-table entry, so a round can bring it back.

use super::inner::DbInner;
use crate::memory::Regions;
use crate::options::Options;
use crate::tuning::range_memory::{choose, Candidate};
use parking_lot::Mutex;
use std::collections::HashMap;

/// Weight of the previous rounds' empty reads in a file's score (halved each round).
const DECAY: f64 = 0.5;

/// What range filters may hold with a block cache of `cache_capacity` bytes: a share of it
/// when they are reserved in it, else no bound.
pub(super) fn capacity(opts: &Options, regions: &Regions, cache_capacity: usize) -> usize {
    if opts.range_filter.bits_per_key > 0.0 && regions.index_in_block_cache {
        (cache_capacity as f64 * opts.range_filter.memory_share) as usize
    } else {
        usize::MAX
    }
}

/// The round's state: per live file with an open reader, its empty range reads at the last
/// round and its score (behind a mutex only rounds take, held for a whole round so that a
/// resize's round and the timer's do not interleave their admissions).
#[derive(Debug, Default)]
pub(crate) struct RangeMemory {
    files: Mutex<HashMap<u64, (f64, f64)>>,
}

impl DbInner {
    /// One round: the region's capacity from the cache's, then which filters it keeps.
    pub(crate) fn keep_range_filters(&self) {
        let cap = capacity(&self.opts, &self.regions, self.cache.capacity());
        self.memory.range_filters.set_capacity(cap);
        if cap == usize::MAX {
            return;
        }
        let mut files = self.range_memory.files.lock();
        let mut next = HashMap::with_capacity(files.len());
        let mut candidates = Vec::new();
        let mut tables = Vec::new();
        for sv in self.super_versions().iter() {
            let Some(tv) = sv.version.trees.get(sv.tree) else {
                continue;
            };
            for (level, fs) in tv.levels.iter().enumerate() {
                for (f, state) in fs.iter().zip(sv.files.get(level).into_iter().flatten()) {
                    // A file without an open reader holds no filter; it is judged once one is
                    // open again.
                    let Some(reader) = state.reader_slot().load_full() else {
                        continue;
                    };
                    let block = reader.range_filter_block_size();
                    if block == 0 {
                        continue;
                    }
                    let pinned = reader.range_filter_bytes() as u64;
                    let empty = state.range_empty();
                    let (seen, score) = files.get(&f.number).copied().unwrap_or_default();
                    let score = score * DECAY + (empty - seen).max(0.0);
                    next.insert(f.number, (empty, score));
                    candidates.push(Candidate {
                        bytes: if pinned > 0 { pinned } else { block },
                        pinned: pinned > 0,
                        score,
                    });
                    tables.push((state.clone(), reader));
                }
            }
        }
        *files = next;
        for ((state, reader), admit) in tables.iter().zip(choose(&candidates, cap as u64)) {
            state.set_range_admitted(admit);
            if !admit {
                reader.unload_range_filter();
            }
        }
    }
}
