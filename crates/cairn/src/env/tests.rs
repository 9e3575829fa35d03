use super::*;
use crate::Error;
use std::path::PathBuf;

/// The contract every file system implements, run against each of them.
fn conformance(fs: &dyn FileSystem, root: &Path) {
    let dir = root.join("db");
    fs.create_dir_all(&dir).unwrap();
    let a = dir.join("a");
    let mut w = fs.create(&a).unwrap();
    w.append(b"hello ").unwrap();
    w.append(&vec![7u8; 100_000]).unwrap(); // larger than StdFs's write buffer
    w.append(b"world").unwrap();
    assert_eq!(w.len(), 100_011);
    w.sync_data().unwrap();
    drop(w);
    assert_eq!(fs.file_size(&a).unwrap(), 100_011);
    let r = fs.open_read(&a, ReadOptions::default()).unwrap();
    assert_eq!(r.size(), 100_011);
    let mut buf = [0u8; 5];
    r.read_exact_at(100_006, &mut buf).unwrap();
    assert_eq!(&buf, b"world");
    assert!(r.read_exact_at(100_008, &mut buf).is_err(), "read past end must fail");

    let mut w = fs.open_append(&a).unwrap();
    assert_eq!(w.len(), 100_011);
    w.append(b"!").unwrap();
    w.sync_all().unwrap();
    drop(w);
    assert_eq!(read_all(fs, &a).unwrap().len(), 100_012);

    let b = dir.join("b");
    fs.rename(&a, &b).unwrap();
    assert!(!fs.exists(&a).unwrap());
    assert!(fs.exists(&b).unwrap());
    // An open handle still reads the renamed file.
    r.read_exact_at(0, &mut buf).unwrap();
    assert_eq!(&buf, b"hello");
    write_all_synced(fs, &a, b"replacement").unwrap();
    fs.rename(&a, &b).unwrap(); // replaces
    assert_eq!(read_all(fs, &b).unwrap(), b"replacement");
    fs.truncate(&b, 4).unwrap();
    assert_eq!(read_all(fs, &b).unwrap(), b"repl");
    fs.sync_dir(&dir).unwrap();
    assert_eq!(fs.list(&dir).unwrap(), vec!["b".to_string()]);
    fs.remove_file(&b).unwrap();
    assert!(fs.list(&dir).unwrap().is_empty());
    assert!(fs.remove_file(&b).is_err());
    assert!(fs.open_read(&b, ReadOptions::default()).is_err());

    let lock_path = dir.join("LOCK");
    let l = fs.lock(&lock_path).unwrap();
    assert!(matches!(fs.lock(&lock_path), Err(Error::Locked(_))));
    drop(l);
    let _again = fs.lock(&lock_path).unwrap();
}

#[test]
fn std_fs_conformance() {
    let tmp = tempfile::tempdir().unwrap();
    conformance(&StdFs::new(), tmp.path());
}

#[test]
fn mem_fs_conformance() {
    conformance(&MemFs::new(), Path::new("/m"));
}

#[test]
fn fault_fs_conformance() {
    conformance(&FaultFs::new(Arc::new(MemFs::new()), 1), Path::new("/f"));
    let tmp = tempfile::tempdir().unwrap();
    conformance(&FaultFs::new(Arc::new(StdFs::new()), 2), tmp.path());
}

#[test]
fn std_fs_direct_reads_match_buffered_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = StdFs::new();
    let p = tmp.path().join("f");
    let data: Vec<u8> = (0..50_000u32).map(|i| (i * 7 % 251) as u8).collect();
    write_all_synced(&fs, &p, &data).unwrap();
    let d = fs.open_read(&p, ReadOptions { direct: true }).unwrap();
    eprintln!("O_DIRECT active on this file system: {}", d.is_direct());
    for (off, len) in [
        (0usize, 1usize),
        (1, 4095),
        (4095, 2),
        (4096, 4096),
        (12_345, 20_000),
        (49_999, 1),
    ] {
        let mut buf = vec![0u8; len];
        d.read_exact_at(off as u64, &mut buf).unwrap();
        assert_eq!(buf, &data[off..off + len], "offset {off} len {len}");
    }
    let mut buf = vec![0u8; 10];
    assert!(d.read_exact_at(49_995, &mut buf).is_err());
}

fn write(fs: &dyn FileSystem, p: &Path, data: &[u8], sync: bool) -> Box<dyn WritableFile> {
    let mut w = fs.create(p).unwrap();
    w.append(data).unwrap();
    if sync {
        w.sync_data().unwrap();
    }
    w
}

#[test]
fn crash_keeps_exactly_the_synced_bytes() {
    let mem = Arc::new(MemFs::new());
    let fs = FaultFs::new(mem.clone(), 7);
    let dir = PathBuf::from("/d");
    fs.create_dir_all(&dir).unwrap();
    let durable = dir.join("durable");
    let mut w = write(&fs, &durable, b"synced-part", true);
    w.append(b"+unsynced").unwrap();
    w.flush().unwrap();
    let unsynced_file = dir.join("never-synced");
    let _w2 = write(&fs, &unsynced_file, b"abc", false);
    fs.sync_dir(&dir).unwrap();
    let new_entry = dir.join("entry-not-synced");
    let _w3 = write(&fs, &new_entry, b"data synced, dir not", true);
    assert_eq!(fs.unsynced_bytes(&durable), 9);

    let report = fs.crash(CrashMode::DropUnsynced).unwrap();
    assert!(report.bytes_lost >= 9 + 3);
    // Dead until restart, including old handles.
    assert!(fs.exists(&durable).is_err());
    assert!(w.append(b"x").is_err());
    fs.restart();
    assert!(w.append(b"x").is_err(), "handles from before the crash stay dead");
    assert_eq!(read_all(&fs, &durable).unwrap(), b"synced-part");
    assert_eq!(read_all(&fs, &unsynced_file).unwrap(), b"");
    assert!(
        !fs.exists(&new_entry).unwrap(),
        "entry whose directory was not synced is undone"
    );
}

#[test]
fn crash_undoes_unsynced_renames_and_removals() {
    let fs = FaultFs::new(Arc::new(MemFs::new()), 3);
    let dir = PathBuf::from("/d");
    fs.create_dir_all(&dir).unwrap();
    let cur = dir.join("CURRENT");
    let tmp = dir.join("CURRENT.tmp");
    let old = dir.join("old");
    drop(write(&fs, &cur, b"MANIFEST-1", true));
    drop(write(&fs, &old, b"old file", true));
    fs.sync_dir(&dir).unwrap();

    drop(write(&fs, &tmp, b"MANIFEST-2", true));
    fs.rename(&tmp, &cur).unwrap();
    fs.remove_file(&old).unwrap();
    fs.crash(CrashMode::DropUnsynced).unwrap();
    fs.restart();
    assert_eq!(read_all(&fs, &cur).unwrap(), b"MANIFEST-1");
    assert_eq!(read_all(&fs, &old).unwrap(), b"old file");
    assert!(!fs.exists(&tmp).unwrap());

    // The same sequence with the directory synced survives.
    drop(write(&fs, &tmp, b"MANIFEST-2", true));
    fs.rename(&tmp, &cur).unwrap();
    fs.remove_file(&old).unwrap();
    fs.sync_dir(&dir).unwrap();
    fs.crash(CrashMode::DropUnsynced).unwrap();
    fs.restart();
    assert_eq!(read_all(&fs, &cur).unwrap(), b"MANIFEST-2");
    assert!(!fs.exists(&old).unwrap());
}

#[test]
fn torn_crash_modes_keep_the_synced_prefix() {
    for (i, mode) in [
        CrashMode::KeepRandomPrefix,
        CrashMode::TearZeros,
        CrashMode::TearGarbage,
    ]
    .into_iter()
    .enumerate()
    {
        for seed in 0..50u64 {
            let fs = FaultFs::new(Arc::new(MemFs::new()), seed * 10 + i as u64);
            let dir = PathBuf::from("/d");
            fs.create_dir_all(&dir).unwrap();
            let p = dir.join("wal");
            let synced: Vec<u8> = (0..3000u32).map(|x| (x % 200) as u8 + 1).collect();
            let tail: Vec<u8> = vec![0xAB; 9000];
            let mut w = write(&fs, &p, &synced, true);
            fs.sync_dir(&dir).unwrap();
            w.append(&tail).unwrap();
            fs.crash(mode).unwrap();
            fs.restart();
            let got = read_all(&fs, &p).unwrap();
            assert!(got.len() >= synced.len() && got.len() <= synced.len() + tail.len());
            assert_eq!(&got[..synced.len()], &synced[..], "{mode:?} seed {seed}");
            if mode == CrashMode::KeepRandomPrefix {
                assert!(got[synced.len()..].iter().all(|&b| b == 0xAB));
            }
        }
    }
}

#[test]
fn injected_read_faults_surface_as_errors_or_flipped_bits() {
    let fs = FaultFs::new(Arc::new(MemFs::new()), 11);
    fs.create_dir_all(Path::new("/d")).unwrap();
    let p = Path::new("/d/f");
    drop(write(&fs, p, &[0u8; 4096], true));
    let r = fs.open_read(p, ReadOptions::default()).unwrap();
    for kind in [FaultKind::Eio, FaultKind::Short, FaultKind::Enospc] {
        fs.clear_faults();
        fs.fail_fraction(OpClass::Read, 1.0, kind);
        let mut buf = [0u8; 64];
        let err = r.read_exact_at(0, &mut buf).unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{kind:?}: {err}");
    }
    fs.clear_faults();
    fs.fail_fraction(OpClass::Read, 1.0, FaultKind::FlipBytes);
    let mut buf = [0u8; 64];
    r.read_exact_at(0, &mut buf).unwrap();
    assert_eq!(buf.iter().map(|b| b.count_ones()).sum::<u32>(), 1);
    fs.clear_faults();
    let before = fs.op_count();
    fs.fail_nth(before + 2, FaultKind::Eio);
    r.read_exact_at(0, &mut buf).unwrap();
    assert!(r.read_exact_at(0, &mut buf).is_err(), "the n-th operation fails");
    r.read_exact_at(0, &mut buf).unwrap();
    assert_eq!(fs.injected_faults(), 5);
}

#[test]
fn failed_syncs_do_not_make_bytes_durable() {
    let fs = FaultFs::new(Arc::new(MemFs::new()), 5);
    fs.create_dir_all(Path::new("/d")).unwrap();
    let p = Path::new("/d/f");
    let mut w = write(&fs, p, b"one", true);
    fs.sync_dir(Path::new("/d")).unwrap();
    w.append(b"two").unwrap();
    fs.fail_fraction(OpClass::Sync, 1.0, FaultKind::Eio);
    assert!(w.sync_data().is_err());
    fs.fail_fraction(OpClass::Write, 1.0, FaultKind::Enospc);
    fs.clear_faults();
    fs.crash(CrashMode::DropUnsynced).unwrap();
    fs.restart();
    assert_eq!(read_all(&fs, p).unwrap(), b"one");
}

/// Older tmpfs refuses O_DIRECT with EINVAL and the open falls back to buffered reads; newer
/// kernels accept it. Either way reads must be correct; the test says which path ran.
#[test]
fn std_fs_direct_read_on_tmpfs_is_correct_either_way() {
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        eprintln!("no /dev/shm on this machine; fallback not exercised");
        return;
    }
    let dir = tempfile::tempdir_in(shm).unwrap();
    let fs = StdFs::new();
    let p = dir.path().join("f");
    write_all_synced(&fs, &p, b"0123456789").unwrap();
    let f = fs.open_read(&p, ReadOptions { direct: true }).unwrap();
    eprintln!(
        "tmpfs O_DIRECT accepted: {} (false = fallback path exercised)",
        f.is_direct()
    );
    let mut buf = [0u8; 4];
    f.read_exact_at(3, &mut buf).unwrap();
    assert_eq!(&buf, b"3456");
}
