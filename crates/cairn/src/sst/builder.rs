//! Writes a table: data blocks grouped into segments, filter units per segment, index,
//! properties, metaindex, footer.

use super::block::BlockBuilder;
use super::footer::{BlockHandle, Footer, FORMAT_VERSION};
use super::properties::{Properties, SegmentMeta};
use crate::filter::FilterDecision;
use super::trailer::{compress, trailer, Compression, TRAILER_LEN};
use super::{TableOptions, METAINDEX_PROPERTIES, METAINDEX_RANGE_DEL, METAINDEX_RANGE_FILTER};
use crate::env::WritableFile;
use crate::error::{Error, Result};
use crate::filter::range::RangeBuilder;
use crate::filter::{key_hash, BloomUnitsWriter, FilterWriter};
use crate::format::ikey::{self, ValueKind};
use crate::range_del::{self, Fragments};
use crate::stats::IoStats;
use std::cmp::Ordering;
use std::sync::Arc;

/// What a finished table is.
#[derive(Debug, Clone)]
pub struct TableSummary {
    /// Bytes in the file.
    pub file_size: u64,
    /// Its properties block.
    pub properties: Properties,
    /// The earliest deadline of its expiring values (0: none); the manifest keeps it, so
    /// compactions can find files whose values expired without opening them.
    pub min_deadline: u64,
}

#[derive(Debug, Default)]
struct SegmentAcc {
    meta: SegmentMeta,
    last_user_key: Option<Vec<u8>>,
}

/// Builds one table; entries must be added in strictly increasing internal-key order.
#[derive(Debug)]
pub struct TableBuilder {
    file: Box<dyn WritableFile>,
    opts: TableOptions,
    stats: Arc<IoStats>,
    offset: u64,
    data: BlockBuilder,
    /// The index with internal keys, and beside it the same with user keys, which the table
    /// keeps unless a user key's versions span two data blocks (then `None`): a user-key
    /// separator could not tell those blocks apart.
    index: BlockBuilder,
    user_index: Option<BlockBuilder>,
    props: Properties,
    seg: SegmentAcc,
    filter: Box<dyn FilterWriter>,
    range: Option<RangeBuilder>,
    distinct_keys: u64,
    last_key: Vec<u8>,
    /// The handle of the last data block written, whose index entry waits for the next key:
    /// its key only needs to separate the block from the next one ([`ikey::separator`]).
    pending_index: Option<BlockHandle>,
    separator: Vec<u8>,
    /// The table's range tombstones (`range_del/`), written in their own block.
    range_dels: Fragments,
    /// The earliest deadline of the expiring values added (0: none).
    min_deadline: u64,
}

impl TableBuilder {
    /// Starts a table in `file` (empty), to be known as `file_number`.
    pub fn new(file: Box<dyn WritableFile>, file_number: u64, opts: TableOptions, stats: Arc<IoStats>) -> Self {
        let props = Properties {
            file_number,
            entries: 0,
            tombstones: 0,
            data_blocks: 0,
            raw_key_bytes: 0,
            raw_value_bytes: 0,
            data_size: 0,
            filter_size: 0,
            index_size: 0,
            smallest_key: Vec::new(),
            largest_key: Vec::new(),
            smallest_seqno: u64::MAX,
            largest_seqno: 0,
            compression: opts.compression,
            block_size: opts.block_size as u64,
            segment_size: opts.segment_size,
            creation_time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            filter: opts.filter.clone(),
            segments: Vec::new(),
            db_id: opts.db_id,
            range_deletions: 0,
            index_user_keys: false,
            index_delta_handles: true,
        };
        let filter = Box::new(
            BloomUnitsWriter::new(opts.filter.clone(), opts.filter_decider.clone()).cache_local(opts.cache_local_filters),
        );
        let range = opts
            .range_filter
            .as_ref()
            .filter(|r| r.bits_per_key > 0.0)
            .map(|r| RangeBuilder::new(r.kind, (r.key_offset > 0).then_some(r.key_offset)));
        TableBuilder {
            range,
            data: if opts.hash_index {
                BlockBuilder::with_hash_index(opts.restart_interval)
            } else {
                BlockBuilder::new(opts.restart_interval)
            },
            index: BlockBuilder::new(opts.index_restart_interval),
            user_index: Some(BlockBuilder::new(opts.index_restart_interval)),
            file,
            opts,
            stats,
            offset: 0,
            props,
            seg: SegmentAcc::default(),
            filter,
            distinct_keys: 0,
            last_key: Vec::new(),
            pending_index: None,
            separator: Vec::new(),
            range_dels: Fragments::default(),
            min_deadline: 0,
        }
    }

    /// Sets the table's range tombstones (they widen its key and sequence-number ranges). A
    /// table may hold only tombstones.
    pub fn set_range_dels(&mut self, f: Fragments) {
        self.range_dels = f;
    }

    /// Overrides the creation time recorded in the properties (for reproducible files).
    #[cfg(any(test, feature = "test-util"))]
    pub fn set_creation_time(&mut self, secs: u64) {
        self.props.creation_time = secs;
    }

    /// Bytes written so far plus the pending data block: the file size if finished now,
    /// without filters and index.
    pub fn estimated_size(&self) -> u64 {
        self.offset + self.data.size_estimate() as u64
    }

    /// Adds an entry.
    ///
    /// # Errors
    /// `InvalidArgument` when `ikey` is not a valid internal key or not greater than the
    /// previous key; I/O errors from writing a finished block.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let (user_key, seqno, kind) = ikey::split(ikey)
            .ok_or_else(|| Error::InvalidArgument("table entry is not a valid internal key".into()))?;
        if self.props.entries > 0 && ikey::compare(ikey, &self.last_key) != Ordering::Greater {
            return Err(Error::InvalidArgument(
                "table entries must be added in increasing key order".into(),
            ));
        }
        if let Some(h) = self.pending_index.take() {
            ikey::separator(&self.last_key, ikey, &mut self.separator);
            self.index.add_handle(&self.separator, h);
            if ikey::user_key(&self.last_key) == user_key {
                self.user_index = None;
            } else if let Some(u) = &mut self.user_index {
                // last ≤ separator < next, and the two user keys differ: so do the user keys.
                u.add_handle(ikey::user_key(&self.separator), h);
            }
        }
        if self.seg.last_user_key.as_deref() != Some(user_key) {
            self.filter.add_key(user_key, key_hash(user_key));
            self.seg.meta.distinct_keys += 1;
            // A key whose versions span two segments is in both segments' filters.
            if self.last_key.is_empty() || ikey::user_key(&self.last_key) != user_key {
                self.distinct_keys += 1;
                if let Some(r) = &mut self.range {
                    r.add_key(user_key);
                }
            }
            if self.seg.last_user_key.is_none() {
                self.seg.meta.smallest_user_key = user_key.to_vec();
            }
            self.seg.last_user_key = Some(user_key.to_vec());
        }
        self.seg.meta.entries += 1;
        let p = &mut self.props;
        if p.entries == 0 {
            p.smallest_key = ikey.to_vec();
        }
        p.entries += 1;
        p.tombstones += u64::from(kind == ValueKind::Delete);
        if kind == ValueKind::Expiring {
            if let Some((d, _)) = crate::ttl::split(value) {
                self.min_deadline = if self.min_deadline == 0 { d } else { self.min_deadline.min(d) };
            }
        }
        p.raw_key_bytes += ikey.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        p.smallest_seqno = p.smallest_seqno.min(seqno);
        p.largest_seqno = p.largest_seqno.max(seqno);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.data.add(ikey, value);
        if self.data.size_estimate() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    fn write_block(&mut self, contents: &[u8], c: Compression) -> Result<BlockHandle> {
        let handle = BlockHandle {
            offset: self.offset,
            size: contents.len() as u64,
        };
        self.file.append(contents)?;
        self.file.append(&trailer(contents, c))?;
        let n = (contents.len() + TRAILER_LEN) as u64;
        self.offset += n;
        self.stats.record_write(n);
        Ok(handle)
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        let (contents, c) = compress(self.data.finish(), self.opts.compression);
        let handle = self.write_block(&contents, c)?;
        self.pending_index = Some(handle);
        self.data.reset();
        self.props.data_blocks += 1;
        let m = &mut self.seg.meta;
        m.block_count += 1;
        m.data_len += handle.size + TRAILER_LEN as u64;
        if m.data_len >= self.opts.segment_size {
            self.close_segment();
        }
        Ok(())
    }

    fn close_segment(&mut self) {
        if self.seg.meta.block_count == 0 {
            return;
        }
        let mut seg = std::mem::take(&mut self.seg);
        seg.meta.largest_user_key = seg.last_user_key.take().unwrap_or_default();
        self.filter.finish_segment();
        self.props.segments.push(seg.meta);
        self.seg.meta.first_block = self.props.data_blocks;
        self.seg.meta.data_offset = self.offset;
    }

    /// The finished table's data, as filter decisions see it.
    fn output(&self) -> crate::filter::TableOutput<'_> {
        crate::filter::TableOutput {
            number: self.props.file_number,
            keys: self.distinct_keys,
            smallest: ikey::user_key(&self.props.smallest_key),
            largest: ikey::user_key(&self.last_key),
        }
    }

    /// Writes the meta blocks and footer, then syncs the file's data.
    ///
    /// # Errors
    /// I/O errors; the file is then incomplete and must be deleted by the caller.
    pub fn finish(mut self) -> Result<TableSummary> {
        self.flush_data_block()?;
        // The last block's entry keeps its last key: the table's largest key bounds lookups.
        if let Some(h) = self.pending_index.take() {
            self.index.add_handle(&self.last_key, h);
            if let Some(u) = &mut self.user_index {
                u.add_handle(ikey::user_key(&self.last_key), h);
            }
        }
        self.close_segment();
        self.props.data_size = self.offset;
        if self.props.entries == 0 {
            self.props.smallest_seqno = 0;
        }
        self.props.largest_key = self.last_key.clone();
        self.widen_for_range_dels();
        let filter_start = self.offset;
        let filter = std::mem::replace(
            &mut self.filter,
            Box::new(BloomUnitsWriter::new(FilterDecision::uniform(0.0), None)),
        );
        let out = filter.finish(&self.output());
        if out.segments.len() != self.props.segments.len() {
            return Err(Error::InvalidArgument(format!(
                "filter writer built {} segments for {}",
                out.segments.len(),
                self.props.segments.len()
            )));
        }
        self.props.filter = out.decision;
        for (seg, units) in out.segments.into_iter().enumerate() {
            for unit in units {
                let h = self.write_block(&unit, Compression::None)?;
                self.props.segments[seg].units.push(h);
            }
        }
        self.props.filter_size = self.offset - filter_start;
        let range_filter = match (self.range.take(), &self.opts.range_filter) {
            (Some(r), Some(ro)) => {
                let bpk = ro
                    .decider
                    .as_ref()
                    .map_or(ro.bits_per_key, |d| d.range_bits_per_key(&self.output()));
                let budget = bpk * self.distinct_keys as f64;
                let plan = crate::tuning::rosetta::planner(budget, ro.sizes.as_deref(), ro.probe_budget);
                match r.finish(self.props.file_number, bpk, ro.ends.as_deref(), plan) {
                    Some((version, block)) => Some((version, self.write_block(&block, Compression::None)?)),
                    None => None,
                }
            }
            _ => None,
        };
        let range_dels = if self.range_dels.is_empty() {
            None
        } else {
            Some(self.write_block(&range_del::block::encode(&self.range_dels), Compression::None)?)
        };
        self.props.index_user_keys = self.user_index.is_some();
        let index_bytes = match &mut self.user_index {
            Some(u) => u.finish().to_vec(),
            None => self.index.finish().to_vec(),
        };
        let index = self.write_block(&index_bytes, Compression::None)?;
        self.props.index_size = index.size + TRAILER_LEN as u64;
        let props = self.write_block(&self.props.encode(), Compression::None)?;
        let mut meta = BlockBuilder::new(1);
        let mut h = Vec::new();
        props.encode_to(&mut h);
        meta.add(METAINDEX_PROPERTIES, &h);
        if let Some(rd) = range_dels {
            let mut v = Vec::new();
            rd.encode_to(&mut v);
            meta.add(METAINDEX_RANGE_DEL, &v);
        }
        if let Some((version, rf)) = range_filter {
            let mut v = vec![version];
            rf.encode_to(&mut v);
            meta.add(METAINDEX_RANGE_FILTER, &v);
        }
        let metaindex = self.write_block(meta.finish(), Compression::None)?;
        let footer = Footer {
            metaindex,
            index,
            version: FORMAT_VERSION,
        }
        .encode();
        self.file.append(&footer)?;
        self.offset += footer.len() as u64;
        self.stats.record_write(footer.len() as u64);
        self.file.sync_data()?;
        self.stats.record_sync();
        Ok(TableSummary {
            file_size: self.offset,
            properties: self.props,
            min_deadline: self.min_deadline,
        })
    }
}

impl TableBuilder {
    /// Widens the key and sequence-number ranges to the range tombstones'.
    fn widen_for_range_dels(&mut self) {
        let p = &mut self.props;
        let mut seqnos = (p.smallest_seqno, p.largest_seqno);
        self.range_dels
            .widen(p.entries == 0, &mut p.smallest_key, &mut p.largest_key, &mut seqnos);
        (p.smallest_seqno, p.largest_seqno) = seqnos;
        p.range_deletions = self.range_dels.count();
    }
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            restart_interval: 16,
            index_restart_interval: 8,
            hash_index: true,
            compression: Compression::None,
            segment_size: 4 << 20,
            filter: FilterDecision::uniform(10.0),
            cache_local_filters: false,
            filter_decider: None,
            range_filter: None,
            db_id: 0,
        }
    }
}

