use super::*;
use crate::env::{read_all, CrashMode, FaultFs, FileSystem, MemFs, ReadOptions};
use crate::format::coding::masked_crc;
use rand::{Rng, SeedableRng};
use std::path::Path;
use std::sync::Arc;

fn write_log(fs: &dyn FileSystem, path: &Path, log: u64, records: &[Vec<u8>]) -> WalWriter {
    let mut w = WalWriter::new(fs.create(path).unwrap(), log);
    for r in records {
        w.add_record(r).unwrap();
    }
    w.flush().unwrap();
    w
}

fn read_log(fs: &dyn FileSystem, path: &Path, log: u64, mode: RecoveryMode) -> crate::Result<(Vec<Vec<u8>>, WalEnd)> {
    let f = fs.open_read(path, ReadOptions::default())?;
    let mut r = WalReader::new(f, path, log, mode);
    let mut out = Vec::new();
    while let Some(rec) = r.next_record()? {
        out.push(rec.body);
    }
    Ok((out, r.end().clone()))
}

fn mem() -> (MemFs, &'static Path) {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/w")).unwrap();
    (fs, Path::new("/w/000001.wal"))
}

#[test]
fn golden_bytes_of_one_record() {
    let (fs, p) = mem();
    write_log(&fs, p, 5, &[b"abc".to_vec()]);
    let bytes = read_all(&fs, p).unwrap();
    let mut payload = Vec::new();
    payload.extend_from_slice(&5u64.to_le_bytes()); // log number
    payload.extend_from_slice(&0u64.to_le_bytes()); // synced offset: nothing synced yet
    payload.extend_from_slice(b"abc");
    let mut expect = Vec::new();
    expect.extend_from_slice(&masked_crc(&[&[1], &payload]).to_le_bytes());
    expect.extend_from_slice(&19u16.to_le_bytes());
    expect.push(1); // FULL
    expect.extend_from_slice(&payload);
    assert_eq!(bytes, expect);
    // The masked CRC itself, pinned so a change of checksum function is caught.
    assert_eq!(&bytes[..4], &[0x27, 0x02, 0x32, 0x02]);
}

#[test]
fn round_trip_sizes_and_block_boundaries() {
    let fit = BLOCK_SIZE - HEADER_LEN - RECORD_PREFIX_LEN; // fills a block exactly
    let sizes = [
        0usize,
        1,
        100,
        fit,
        fit - 1,
        fit - 6, // leaves 6 bytes: padding, next record starts in the next block
        fit + 1,
        3 * BLOCK_SIZE + 17,
        1 << 20,
        0,
    ];
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let records: Vec<Vec<u8>> = sizes.iter().map(|&n| (0..n).map(|_| rng.gen()).collect()).collect();
    let (fs, p) = mem();
    write_log(&fs, p, 1, &records);
    let (got, end) = read_log(&fs, p, 1, RecoveryMode::AbsoluteConsistency).unwrap();
    assert_eq!(end, WalEnd::Clean);
    assert_eq!(got.len(), records.len());
    for (i, (g, r)) in got.iter().zip(&records).enumerate() {
        assert_eq!(g, r, "record {i} of size {}", r.len());
    }
}

#[test]
fn record_prefix_split_across_fragments() {
    // The second record starts with HEADER_LEN + k bytes left in the block: its FIRST fragment
    // carries k bytes, none, part or all of the record prefix.
    let fit = BLOCK_SIZE - HEADER_LEN - RECORD_PREFIX_LEN;
    for k in 0..=RECORD_PREFIX_LEN + 2 {
        let records = vec![vec![1u8; fit - HEADER_LEN - k], (0..100u8).collect(), vec![3u8; 5]];
        let (fs, p) = mem();
        write_log(&fs, p, 1, &records);
        let (got, end) = read_log(&fs, p, 1, RecoveryMode::AbsoluteConsistency).unwrap();
        assert_eq!(end, WalEnd::Clean, "k = {k}");
        assert_eq!(got, records, "k = {k}");
    }
}

#[test]
fn exact_block_boundary_ends_cleanly() {
    let fit = BLOCK_SIZE - HEADER_LEN - RECORD_PREFIX_LEN;
    let (fs, p) = mem();
    write_log(&fs, p, 1, &[vec![9u8; fit]]);
    assert_eq!(fs.file_size(p).unwrap(), BLOCK_SIZE as u64);
    let (got, end) = read_log(&fs, p, 1, RecoveryMode::AbsoluteConsistency).unwrap();
    assert_eq!((got.len(), end), (1, WalEnd::Clean));
}

#[test]
fn empty_log_is_clean() {
    let (fs, p) = mem();
    write_log(&fs, p, 1, &[]);
    let (got, end) = read_log(&fs, p, 1, RecoveryMode::AbsoluteConsistency).unwrap();
    assert!(got.is_empty());
    assert_eq!(end, WalEnd::Clean);
}

#[test]
fn reopened_writer_appends_after_existing_records() {
    let (fs, p) = mem();
    let mut w = write_log(&fs, p, 3, &[vec![1u8; 40_000]]);
    w.sync().unwrap();
    drop(w);
    let mut w = WalWriter::new(fs.open_append(p).unwrap(), 3);
    w.add_record(b"second").unwrap();
    w.flush().unwrap();
    let (got, _) = read_log(&fs, p, 3, RecoveryMode::AbsoluteConsistency).unwrap();
    assert_eq!(got, vec![vec![1u8; 40_000], b"second".to_vec()]);
}

/// Power loss at random points with every torn variant: PointInTime recovery returns a prefix
/// of what was written that contains every synced record, and never errors.
#[test]
fn torn_tails_recover_the_synced_prefix() {
    let modes = [
        CrashMode::DropUnsynced,
        CrashMode::KeepRandomPrefix,
        CrashMode::TearZeros,
        CrashMode::TearGarbage,
    ];
    let mut checked = 0;
    for seed in 0..200u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let fs = FaultFs::new(Arc::new(MemFs::new()), seed);
        fs.create_dir_all(Path::new("/w")).unwrap();
        let p = Path::new("/w/000007.wal");
        let mut w = WalWriter::new(fs.create(p).unwrap(), 7);
        fs.sync_dir(Path::new("/w")).unwrap();
        let mut written = Vec::new();
        let mut synced_count = 0;
        for i in 0..rng.gen_range(1..60) {
            let n = if rng.gen_bool(0.1) {
                rng.gen_range(0..100_000)
            } else {
                rng.gen_range(0..300)
            };
            let rec: Vec<u8> = (0..n).map(|j| (i * 31 + j) as u8).collect();
            w.add_record(&rec).unwrap();
            written.push(rec);
            if rng.gen_bool(0.2) {
                w.sync().unwrap();
                synced_count = written.len();
            } else {
                w.flush().unwrap();
            }
        }
        fs.crash(modes[(seed % 4) as usize]).unwrap();
        fs.restart();
        let (got, end) = read_log(&fs, p, 7, RecoveryMode::PointInTime).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(got.len() >= synced_count, "seed {seed}: lost synced records ({end:?})");
        assert_eq!(&written[..got.len()], &got[..], "seed {seed}: not a prefix");
        checked += 1;
    }
    assert_eq!(checked, 200);
}

fn three_synced_blocks(fs: &MemFs, p: &Path) -> Vec<Vec<u8>> {
    let recs: Vec<Vec<u8>> = (0..12u8).map(|i| vec![i; 10_000]).collect();
    let mut w = WalWriter::new(fs.create(p).unwrap(), 1);
    for r in &recs {
        w.add_record(r).unwrap();
        w.sync().unwrap();
    }
    recs
}

fn flip(fs: &MemFs, p: &Path, at: u64) {
    let mut d = read_all(fs, p).unwrap();
    d[at as usize] ^= 0x10;
    crate::env::write_all_synced(fs, p, &d).unwrap();
}

#[test]
fn corrupted_middle_record_under_each_mode() {
    let (fs, p) = mem();
    let recs = three_synced_blocks(&fs, p);
    flip(&fs, p, 20_100); // inside the third record, which later records prove synced
    let err = read_log(&fs, p, 1, RecoveryMode::PointInTime).unwrap_err();
    match &err {
        crate::Error::Corruption { file, offset, .. } => {
            assert_eq!(file, p);
            assert_eq!(*offset, 2 * (10_000 + 16 + 7));
        }
        e => panic!("{e}"),
    }
    let err = read_log(&fs, p, 1, RecoveryMode::AbsoluteConsistency).unwrap_err();
    assert!(err.is_corruption());
    let (got, end) = read_log(&fs, p, 1, RecoveryMode::TolerateCorruptedTail).unwrap();
    assert_eq!(got, recs[..2].to_vec());
    assert!(matches!(end, WalEnd::CorruptionTolerated { .. }));
}

#[test]
fn corrupted_record_in_a_single_block_log_is_detected() {
    let (fs, p) = mem();
    let mut w = WalWriter::new(fs.create(p).unwrap(), 1);
    for i in 0..5u8 {
        w.add_record(&[i; 100]).unwrap();
        w.sync().unwrap();
    }
    flip(&fs, p, 150); // second record; records 3..5 were written after syncs past it
    assert!(read_log(&fs, p, 1, RecoveryMode::PointInTime)
        .unwrap_err()
        .is_corruption());
}

#[test]
fn torn_tail_is_an_error_only_under_absolute_consistency() {
    let (fs, p) = mem();
    let mut w = WalWriter::new(fs.create(p).unwrap(), 1);
    w.add_record(&[1; 50]).unwrap();
    w.sync().unwrap();
    w.add_record(&[2; 50_000]).unwrap();
    w.flush().unwrap();
    let len = fs.file_size(p).unwrap();
    fs.truncate(p, len - 1000).unwrap();
    let (got, end) = read_log(&fs, p, 1, RecoveryMode::PointInTime).unwrap();
    assert_eq!(got, vec![vec![1u8; 50]]);
    assert!(matches!(end, WalEnd::TornTail { offset: 73, .. }), "{end:?}");
    assert!(read_log(&fs, p, 1, RecoveryMode::AbsoluteConsistency).is_err());
}

#[test]
fn record_from_another_log_is_rejected() {
    let (fs, p) = mem();
    write_log(&fs, p, 9, &[b"x".to_vec()]);
    let err = read_log(&fs, p, 10, RecoveryMode::AbsoluteConsistency).unwrap_err();
    assert!(err.to_string().contains("belongs to log 9"), "{err}");
}

#[test]
fn every_single_bit_flip_is_detected_or_cut_cleanly() {
    let (fs, p) = mem();
    let recs: Vec<Vec<u8>> = (0..4u8).map(|i| vec![i; 300]).collect();
    write_log(&fs, p, 1, &recs);
    let orig = read_all(&fs, p).unwrap();
    for byte in 0..orig.len() {
        for bit in [0u8, 3, 7] {
            let mut d = orig.clone();
            d[byte] ^= 1 << bit;
            crate::env::write_all_synced(&fs, p, &d).unwrap();
            // Nothing was synced, so PointInTime may cut the log there; it must never return
            // a damaged record, and AbsoluteConsistency must refuse.
            let (got, _) = read_log(&fs, p, 1, RecoveryMode::PointInTime).unwrap();
            assert_eq!(&recs[..got.len()], &got[..], "byte {byte} bit {bit}");
            assert!(got.len() < recs.len());
            assert!(read_log(&fs, p, 1, RecoveryMode::AbsoluteConsistency).is_err());
        }
    }
}

#[test]
fn headers_with_and_without_the_first_sequence_number_parse() {
    let new = super::header_record(0xfeed, Some(42));
    assert_eq!(
        super::parse_header(&new),
        Some(super::WalHeader {
            db_id: 0xfeed,
            first_seq: Some(42)
        })
    );
    // Logs written before the first sequence number was recorded stay readable.
    let old = [b"cairnWAL".as_slice(), &0xfeed_u64.to_le_bytes()].concat();
    assert_eq!(
        super::parse_header(&old),
        Some(super::WalHeader {
            db_id: 0xfeed,
            first_seq: None
        })
    );
    for bad in [&new[..20], &new[..8], b"cairnWAX01234567".as_slice(), &[new.as_slice(), &[0]].concat()] {
        assert_eq!(super::parse_header(bad), None);
    }
}

#[test]
fn sequence_skip_records_round_trip_and_refuse_bad_bodies() {
    let r = super::skip_record(7, 9);
    assert_eq!(r.len(), 24);
    assert_eq!(&r[..8], b"cairnSEQ");
    assert_eq!(super::parse_skip(&r), Some((7, 9)));
    assert_eq!(super::parse_header(&r), None, "not a header");
    // first > last, wrong lengths, another magic.
    let backwards = super::skip_record(9, 7);
    let header = super::header_record(1, Some(2));
    for bad in [&backwards[..], &r[..23], &[r.as_slice(), &[0]].concat(), &header[..]] {
        assert_eq!(super::parse_skip(bad), None);
    }
}
