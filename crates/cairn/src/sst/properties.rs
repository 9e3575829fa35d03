//! The properties block (spec: `docs/format/sst.md` § Properties): what a table holds and how
//! its filters were decided. Encoded as a versioned sequence of fields (varints unless noted):
//!
//! ```text
//! version:u8 (=1) file_number entries tombstones data_blocks raw_key_bytes raw_value_bytes
//! data_size filter_size index_size smallest_key:lp largest_key:lp smallest_seqno largest_seqno
//! compression:u8 block_size segment_size creation_time
//! policy:lp unit_count { bpk:f64le seed:u64le }*unit_count
//! segment_count { first_block block_count data_offset data_len entries distinct_keys
//!                 smallest_user_key:lp largest_user_key:lp
//!                 { unit_offset unit_size }*unit_count }*segment_count
//! db_id                                                          (version ≥ 2)
//! range_deletions                                                (version ≥ 3)
//! index_user_keys:u8 (0 or 1)                                    (version ≥ 4)
//! index_delta_handles:u8 (0 or 1)                                (version ≥ 5)
//! ```
//! `lp` = varint length + bytes. Keys are internal keys; segment key ranges are user keys.
//! Version 2 (2026-11-25) adds the id of the database that wrote the table, so that a table
//! from another database put in its place is found; version 1 tables read with id 0
//! (unknown). Version 3 (2026-11-26) adds the number of range tombstones (one per fragment and
//! sequence number of the range-deletion block); older tables have none. Version 4
//! (2026-11-26) says whether the index block's keys are user keys (no user key spans two data
//! blocks; 8 bytes less per index entry) or internal keys, as every older table's are.
//! Version 5 (2026-11-27) says whether the index block's entries carry delta handles
//! (`sst::block`: no value length, the offset only at restart points) in restart intervals of
//! several entries; older tables' index entries are plain entries, one per restart point.

use super::footer::BlockHandle;
use crate::filter::{FilterDecision, UnitSpec};
use super::trailer::Compression;
use crate::format::coding::{put_len_prefixed, put_varint64, Decoder};

pub(crate) const VERSION: u8 = 5;

/// A run of consecutive data blocks sharing one group of filter units.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SegmentMeta {
    /// Ordinal of its first data block.
    pub first_block: u64,
    /// Data blocks in it.
    pub block_count: u64,
    /// File offset of its first data block.
    pub data_offset: u64,
    /// Bytes of data blocks (with trailers).
    pub data_len: u64,
    /// Entries (all versions).
    pub entries: u64,
    /// Distinct user keys (the keys its filter units hold).
    pub distinct_keys: u64,
    /// Smallest user key.
    pub smallest_user_key: Vec<u8>,
    /// Largest user key.
    pub largest_user_key: Vec<u8>,
    /// One handle per unit of the file's [`FilterDecision`].
    pub units: Vec<BlockHandle>,
}

/// Everything the properties block records.
#[derive(Debug, Clone, PartialEq)]
pub struct Properties {
    /// The file number the table was written as (detects a file substituted from elsewhere).
    pub file_number: u64,
    /// Entries (puts and tombstones, all versions).
    pub entries: u64,
    /// Tombstones.
    pub tombstones: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// Sum of internal key lengths.
    pub raw_key_bytes: u64,
    /// Sum of value lengths.
    pub raw_value_bytes: u64,
    /// Bytes of the data section (blocks with trailers).
    pub data_size: u64,
    /// Bytes of all filter units (with trailers).
    pub filter_size: u64,
    /// Bytes of the index block (with trailer).
    pub index_size: u64,
    /// Smallest internal key (empty for an empty table).
    pub smallest_key: Vec<u8>,
    /// Largest internal key.
    pub largest_key: Vec<u8>,
    /// Smallest sequence number.
    pub smallest_seqno: u64,
    /// Largest sequence number.
    pub largest_seqno: u64,
    /// Compression requested for data blocks.
    pub compression: Compression,
    /// Target data block size.
    pub block_size: u64,
    /// Target segment size.
    pub segment_size: u64,
    /// Seconds since the Unix epoch when written.
    pub creation_time: u64,
    /// The file's filter decision.
    pub filter: FilterDecision,
    /// Segments in file order.
    pub segments: Vec<SegmentMeta>,
    /// The database that wrote the table (0: unknown, a version 1 table or a lone table).
    pub db_id: u64,
    /// Range tombstones in its range-deletion block (one per fragment and sequence number).
    pub range_deletions: u64,
    /// The index block's keys are user keys, compared bytewise (else internal keys).
    pub index_user_keys: bool,
    /// The index block's entries carry delta handles (else plain handle values).
    pub index_delta_handles: bool,
}

impl Properties {
    /// Whether the table was written by a database other than `db_id` (unknown ids, 0 on
    /// either side, never count).
    pub fn written_by_other(&self, db_id: u64) -> bool {
        self.db_id != 0 && db_id != 0 && self.db_id != db_id
    }

    /// Encodes the block contents.
    pub fn encode(&self) -> Vec<u8> {
        let mut o = vec![VERSION];
        for v in [
            self.file_number,
            self.entries,
            self.tombstones,
            self.data_blocks,
            self.raw_key_bytes,
            self.raw_value_bytes,
            self.data_size,
            self.filter_size,
            self.index_size,
        ] {
            put_varint64(&mut o, v);
        }
        put_len_prefixed(&mut o, &self.smallest_key);
        put_len_prefixed(&mut o, &self.largest_key);
        put_varint64(&mut o, self.smallest_seqno);
        put_varint64(&mut o, self.largest_seqno);
        o.push(self.compression as u8);
        put_varint64(&mut o, self.block_size);
        put_varint64(&mut o, self.segment_size);
        put_varint64(&mut o, self.creation_time);
        put_len_prefixed(&mut o, self.filter.policy.as_bytes());
        put_varint64(&mut o, self.filter.units.len() as u64);
        for u in &self.filter.units {
            o.extend_from_slice(&u.bpk.to_bits().to_le_bytes());
            o.extend_from_slice(&u.seed.to_le_bytes());
        }
        put_varint64(&mut o, self.segments.len() as u64);
        for s in &self.segments {
            for v in [
                s.first_block,
                s.block_count,
                s.data_offset,
                s.data_len,
                s.entries,
                s.distinct_keys,
            ] {
                put_varint64(&mut o, v);
            }
            put_len_prefixed(&mut o, &s.smallest_user_key);
            put_len_prefixed(&mut o, &s.largest_user_key);
            for h in &s.units {
                h.encode_to(&mut o);
            }
        }
        put_varint64(&mut o, self.db_id);
        put_varint64(&mut o, self.range_deletions);
        o.push(u8::from(self.index_user_keys));
        o.push(u8::from(self.index_delta_handles));
        o
    }

    /// Decodes the block contents (structure only; the reader checks consistency).
    pub fn decode(b: &[u8]) -> Result<Self, &'static str> {
        let mut d = Decoder::new(b);
        let version = d.u8("properties version")?;
        if !(1..=VERSION).contains(&version) {
            return Err("unknown properties version");
        }
        let mut nums = [0u64; 9];
        for n in &mut nums {
            *n = d.varint64("properties counter")?;
        }
        let smallest_key = d.len_prefixed("smallest key")?.to_vec();
        let largest_key = d.len_prefixed("largest key")?.to_vec();
        let smallest_seqno = d.varint64("smallest seqno")?;
        let largest_seqno = d.varint64("largest seqno")?;
        let compression = Compression::from_u8(d.u8("compression")?).ok_or("unknown compression")?;
        let block_size = d.varint64("block size")?;
        let segment_size = d.varint64("segment size")?;
        let creation_time = d.varint64("creation time")?;
        let policy = std::str::from_utf8(d.len_prefixed("filter policy")?)
            .map_err(|_| "filter policy is not UTF-8")?
            .to_string();
        let unit_count = d.len(d.remaining() / 16, "unit count")?;
        let mut units = Vec::with_capacity(unit_count);
        for _ in 0..unit_count {
            let bpk = d.f64("unit bits per key")?;
            if bpk <= 0.0 {
                return Err("unit bits per key not positive");
            }
            units.push(UnitSpec {
                bpk,
                seed: d.u64("unit seed")?,
            });
        }
        // Every segment takes at least 8 bytes, which bounds the count by the bytes present.
        let seg_count = d.len(d.remaining() / 8, "segment count")?;
        let mut segments = Vec::with_capacity(seg_count);
        for _ in 0..seg_count {
            let mut s = SegmentMeta {
                first_block: d.varint64("segment first block")?,
                block_count: d.varint64("segment block count")?,
                data_offset: d.varint64("segment offset")?,
                data_len: d.varint64("segment length")?,
                entries: d.varint64("segment entries")?,
                distinct_keys: d.varint64("segment keys")?,
                smallest_user_key: d.len_prefixed("segment smallest key")?.to_vec(),
                largest_user_key: d.len_prefixed("segment largest key")?.to_vec(),
                units: Vec::with_capacity(unit_count),
            };
            for _ in 0..unit_count {
                s.units.push(BlockHandle::decode(&mut d)?);
            }
            segments.push(s);
        }
        let db_id = if version >= 2 { d.varint64("database id")? } else { 0 };
        let range_deletions = if version >= 3 { d.varint64("range deletions")? } else { 0 };
        // A one-byte flag of the versions from `since` on (`false` before).
        let mut flag = |since: u8, what, bad| match version >= since {
            false => Ok(false),
            true => match d.u8(what)? {
                0 => Ok(false),
                1 => Ok(true),
                _ => Err(bad),
            },
        };
        let index_user_keys = flag(4, "index key kind", "index key kind is neither 0 nor 1")?;
        let index_delta_handles = flag(5, "index entry format", "index entry format is neither 0 nor 1")?;
        if !d.is_empty() {
            return Err("trailing bytes after properties");
        }
        let [file_number, entries, tombstones, data_blocks, raw_key_bytes, raw_value_bytes, data_size, filter_size, index_size] =
            nums;
        Ok(Properties {
            file_number,
            entries,
            tombstones,
            data_blocks,
            raw_key_bytes,
            raw_value_bytes,
            data_size,
            filter_size,
            index_size,
            smallest_key,
            largest_key,
            smallest_seqno,
            largest_seqno,
            compression,
            block_size,
            segment_size,
            creation_time,
            filter: FilterDecision { policy, units },
            segments,
            db_id,
            range_deletions,
            index_user_keys,
            index_delta_handles,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn sample() -> Properties {
        Properties {
            file_number: 12,
            entries: 1000,
            tombstones: 3,
            data_blocks: 2,
            raw_key_bytes: 24_000,
            raw_value_bytes: 100_000,
            data_size: 8000,
            filter_size: 1300,
            index_size: 60,
            smallest_key: b"a\x01\0\0\0\0\0\0\0".to_vec(),
            largest_key: b"z\x01\0\0\0\0\0\0\0".to_vec(),
            smallest_seqno: 1,
            largest_seqno: 999,
            compression: Compression::Lz4,
            block_size: 4096,
            segment_size: 4 << 20,
            creation_time: 1_700_000_000,
            filter: FilterDecision::units("elastic", 2, 4.0),
            segments: vec![SegmentMeta {
                first_block: 0,
                block_count: 2,
                data_offset: 0,
                data_len: 8000,
                entries: 1000,
                distinct_keys: 990,
                smallest_user_key: b"a".to_vec(),
                largest_user_key: b"z".to_vec(),
                units: vec![
                    BlockHandle {
                        offset: 8000,
                        size: 620,
                    },
                    BlockHandle {
                        offset: 8625,
                        size: 620,
                    },
                ],
            }],
            db_id: 77,
            range_deletions: 5,
            index_user_keys: true,
            index_delta_handles: true,
        }
    }

    /// Version 1 (before the database id), 2 (before range deletions), 3 (before user-key
    /// indexes) and 4 (before delta handles) blocks still read.
    #[test]
    fn older_versions_read() {
        let mut v4 = sample().encode();
        assert_eq!(v4.pop(), Some(1)); // index_delta_handles
        v4[0] = 4;
        let p = Properties::decode(&v4).unwrap();
        assert_eq!(p, Properties { index_delta_handles: false, ..sample() });
        let mut v3 = v4.clone();
        assert_eq!(v3.pop(), Some(1)); // index_user_keys
        v3[0] = 3;
        let p = Properties::decode(&v3).unwrap();
        assert_eq!(p, Properties { index_user_keys: false, index_delta_handles: false, ..sample() });
        let mut v2 = v3.clone();
        v2.pop(); // the one-byte varint 5
        v2[0] = 2;
        let p = Properties::decode(&v2).unwrap();
        assert_eq!(p, Properties { range_deletions: 0, index_user_keys: false, index_delta_handles: false, ..sample() });
        let mut v1 = v2.clone();
        v1.pop(); // the one-byte varint 77
        v1[0] = 1;
        let p = Properties::decode(&v1).unwrap();
        assert_eq!(p, Properties { db_id: 0, range_deletions: 0, index_user_keys: false, index_delta_handles: false, ..sample() });
        v1[0] = 6;
        assert!(Properties::decode(&v1).is_err());
    }

    #[test]
    fn round_trip_and_trailing_bytes() {
        let p = sample();
        let enc = p.encode();
        assert_eq!(Properties::decode(&enc), Ok(p));
        let mut longer = enc.clone();
        longer.push(0);
        assert!(Properties::decode(&longer).is_err());
        for cut in 0..enc.len() {
            assert!(
                Properties::decode(&enc[..cut]).is_err(),
                "prefix of {cut} bytes accepted"
            );
        }
    }

    /// Random and mutated bytes never panic and never allocate beyond what is present.
    #[test]
    fn garbage_never_panics() {
        let enc = sample().encode();
        let mut rng = rand::rngs::StdRng::seed_from_u64(4);
        for _ in 0..20_000 {
            let mut d = enc.clone();
            for _ in 0..rng.gen_range(1..5) {
                let i = rng.gen_range(0..d.len());
                d[i] = rng.gen();
            }
            let _ = Properties::decode(&d);
            let junk: Vec<u8> = (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect();
            let _ = Properties::decode(&junk);
        }
    }
}
