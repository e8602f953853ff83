//! Disk surgery on a data dir: each cut changes exactly what its record says, and nothing outside the data dir.

use faultline_faults::disk::{self, surgery, xxh3_hex, Pick, Region, Surgeon, SurgeryError, SurgerySpec};
use std::fs;
use std::path::Path;

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + 3) as u8).collect()
}

fn data_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("member/wal")).unwrap();
    fs::create_dir_all(dir.path().join("member/snap")).unwrap();
    fs::write(dir.path().join("member/wal/0.wal"), pattern(20_000)).unwrap();
    fs::write(dir.path().join("member/wal/1.wal"), pattern(30_000)).unwrap();
    fs::write(dir.path().join("member/snap/a.snap"), b"old snapshot").unwrap();
    fs::write(dir.path().join("member/snap/b.snap"), b"new snapshot").unwrap();
    dir
}

fn spec(yaml: &str) -> SurgerySpec {
    serde_saphyr::from_str(yaml).unwrap()
}

fn diff_offsets(a: &[u8], b: &[u8]) -> Vec<usize> {
    (0..a.len().max(b.len())).filter(|&i| a.get(i) != b.get(i)).collect()
}

#[test]
fn given_truncate_tail_when_applied_should_cut_the_newest_file_by_the_recorded_length() {
    let dir = data_dir();
    let mut surgeon = Surgeon::new(7, "n1");
    let record = surgeon
        .apply(
            dir.path(),
            &spec("{op: truncate-tail, files: 'member/wal/*.wal', max_bytes: 500}"),
        )
        .unwrap();
    let original = pattern(30_000);
    let after = fs::read(dir.path().join("member/wal/1.wal")).unwrap();
    assert_eq!(record.op, "truncate-tail");
    assert!(record.file.ends_with("member/wal/1.wal"));
    assert!((1..=500).contains(&record.length));
    assert_eq!(after.len() as u64, 30_000 - record.length);
    assert_eq!(record.offset, after.len() as u64);
    assert_eq!(after[..], original[..after.len()]);
    assert_eq!(record.before_xxh3, xxh3_hex(&original[after.len()..]));
    assert_eq!(record.after_xxh3, xxh3_hex(&[]));
    assert_eq!(
        (record.size_before_bytes, record.size_after_bytes),
        (30_000, after.len() as u64)
    );
    assert_eq!(
        fs::read(dir.path().join("member/wal/0.wal")).unwrap(),
        pattern(20_000),
        "other file untouched"
    );
}

#[test]
fn given_flip_bits_in_the_interior_when_applied_should_flip_exactly_the_recorded_bits() {
    let dir = data_dir();
    let mut surgeon = Surgeon::new(7, "n1");
    let record = surgeon
        .apply(
            dir.path(),
            &spec("{op: flip-bits, files: 'member/wal/*.wal', pick: first, region: interior, bits: 5}"),
        )
        .unwrap();
    let original = pattern(20_000);
    let after = fs::read(dir.path().join("member/wal/0.wal")).unwrap();
    assert_eq!(record.bits.len(), 5);
    let mut expected = original.clone();
    for bit in &record.bits {
        assert!((2500 * 8..17_500 * 8).contains(bit), "bit {bit} outside the interior");
        expected[(bit / 8) as usize] ^= 1 << (bit % 8);
    }
    assert_eq!(after, expected);
    let changed = diff_offsets(&original, &after);
    assert_eq!(record.offset, changed[0] as u64);
    assert_eq!(record.offset + record.length - 1, *changed.last().unwrap() as u64);
    let span = record.offset as usize..(record.offset + record.length) as usize;
    assert_eq!(record.before_xxh3, xxh3_hex(&original[span.clone()]));
    assert_eq!(record.after_xxh3, xxh3_hex(&after[span]));
}

#[test]
fn given_flip_bits_in_a_byte_range_or_the_tail_should_stay_inside_it() {
    let dir = data_dir();
    let file = dir.path().join("member/wal/0.wal");
    let mut rng = faultline_faults::rng::stream(3, "t");
    let record = surgery::flip_bits(dir.path(), &file, &Region::parse("100..104").unwrap(), 32, &mut rng).unwrap();
    assert_eq!((record.offset, record.length), (100, 4));
    let after = fs::read(&file).unwrap();
    assert_eq!(
        &after[100..104],
        &pattern(20_000)[100..104].iter().map(|b| !b).collect::<Vec<_>>()[..]
    );
    let record = surgery::flip_bits(dir.path(), &file, &Region::Tail, 1, &mut rng).unwrap();
    assert!(record.offset >= 20_000 - 2500, "tail is the last eighth, at most 4 KiB");
    let err = surgery::flip_bits(dir.path(), &file, &Region::parse("0..1").unwrap(), 9, &mut rng).unwrap_err();
    assert!(matches!(err, SurgeryError::Refused(_)), "{err}");
}

#[test]
fn given_zero_block_when_applied_should_zero_one_aligned_block() {
    let dir = data_dir();
    let mut surgeon = Surgeon::new(11, "n2");
    let record = surgeon
        .apply(
            dir.path(),
            &spec("{op: zero-block, files: 'member/wal/1.wal', region: any}"),
        )
        .unwrap();
    let original = pattern(30_000);
    let after = fs::read(dir.path().join("member/wal/1.wal")).unwrap();
    assert_eq!(record.op, "zero-block");
    assert_eq!(record.offset % 4096, 0);
    assert_eq!(record.length, 4096.min(30_000 - record.offset));
    let block = record.offset as usize..(record.offset + record.length) as usize;
    assert!(after[block.clone()].iter().all(|&b| b == 0));
    assert_eq!(after[..block.start], original[..block.start]);
    assert_eq!(after[block.end..], original[block.end..]);
    assert_eq!(record.before_xxh3, xxh3_hex(&original[block.clone()]));
    assert_eq!(record.after_xxh3, xxh3_hex(&vec![0u8; block.len()]));
}

#[test]
fn given_a_chunk_snapshot_when_restored_later_should_undo_the_writes_since() {
    let dir = data_dir();
    let wal = dir.path().join("member/wal/0.wal");
    let mut surgeon = Surgeon::new(5, "n1");
    let snap = surgeon
        .apply(
            dir.path(),
            &spec("{op: snapshot-chunk, files: 'member/wal/0.wal', region: any, length_bytes: 4096, name: c1}"),
        )
        .unwrap();
    assert_eq!(snap.before_xxh3, snap.after_xxh3, "a snapshot changes nothing");
    // The node runs and overwrites the whole file.
    fs::write(&wal, vec![0xEE; 20_000]).unwrap();
    let restore = surgeon
        .apply(dir.path(), &spec("{op: restore-chunk, name: c1}"))
        .unwrap();
    assert_eq!(
        (restore.op.as_str(), restore.offset, restore.length),
        ("restore-chunk", snap.offset, 4096)
    );
    let after = fs::read(&wal).unwrap();
    let chunk = snap.offset as usize..snap.offset as usize + 4096;
    assert_eq!(after[chunk.clone()], pattern(20_000)[chunk.clone()]);
    assert!(after[..chunk.start]
        .iter()
        .chain(&after[chunk.end..])
        .all(|&b| b == 0xEE));
    assert_eq!(restore.before_xxh3, xxh3_hex(&[0xEE; 4096]));
    assert_eq!(restore.after_xxh3, snap.before_xxh3);
    // Used up: a second restore is refused.
    let err = surgeon
        .apply(dir.path(), &spec("{op: restore-chunk, name: c1}"))
        .unwrap_err();
    assert!(err.to_string().contains("no chunk snapshot named `c1`"), "{err}");
}

#[test]
fn given_a_misdirected_restore_should_land_on_another_aligned_offset() {
    let dir = data_dir();
    let mut surgeon = Surgeon::new(5, "n1");
    let snap = surgeon
        .apply(
            dir.path(),
            &spec("{op: snapshot-chunk, files: 'member/wal/1.wal', region: '0..4096', length_bytes: 4096, name: m}"),
        )
        .unwrap();
    assert_eq!(snap.offset, 0);
    let record = surgeon
        .apply(dir.path(), &spec("{op: restore-chunk, name: m, misdirect: true}"))
        .unwrap();
    assert_eq!(record.op, "misdirect-chunk");
    assert_ne!(record.offset, 0);
    assert_eq!(record.offset % 4096, 0);
    let after = fs::read(dir.path().join("member/wal/1.wal")).unwrap();
    let at = record.offset as usize;
    assert_eq!(after[at..at + 4096], pattern(30_000)[..4096]);
}

#[test]
fn given_delete_file_with_pick_last_should_delete_the_newest_snapshot_only() {
    let dir = data_dir();
    let mut surgeon = Surgeon::new(1, "n3");
    let record = surgeon
        .apply(
            dir.path(),
            &spec("{op: delete-file, files: 'member/snap/*.snap', pick: last}"),
        )
        .unwrap();
    assert_eq!(record.op, "delete-file");
    assert!(record.file.ends_with("member/snap/b.snap"));
    assert_eq!((record.offset, record.length), (0, 12));
    assert_eq!(record.before_xxh3, xxh3_hex(b"new snapshot"));
    assert!(!dir.path().join("member/snap/b.snap").exists());
    assert!(dir.path().join("member/snap/a.snap").exists());
}

#[test]
fn given_the_same_seed_when_cuts_repeat_should_make_the_same_choices() {
    let cut = spec("{op: flip-bits, files: 'member/wal/*', pick: random, region: any, bits: 3}");
    let records: Vec<_> = (0..2)
        .map(|_| {
            let dir = data_dir();
            let mut record = Surgeon::new(99, "n1").apply(dir.path(), &cut).unwrap();
            record.file = Path::new(&record.file)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            record
        })
        .collect();
    assert_eq!(records[0], records[1]);
}

#[test]
fn given_a_symlink_leading_out_of_the_data_dir_when_cut_should_refuse_and_leave_the_target_alone() {
    let dir = data_dir();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("precious.wal");
    fs::write(&victim, b"keep me").unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join("wal-link")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("linked-dir")).unwrap();
    let mut surgeon = Surgeon::new(1, "n1");
    for cut in [
        "{op: truncate-tail, files: 'wal-link', max_bytes: 3}",
        "{op: flip-bits, files: 'wal-link', region: any}",
        "{op: zero-block, files: 'wal-link', region: any}",
        "{op: delete-file, files: 'wal-link'}",
    ] {
        let err = surgeon.apply(dir.path(), &spec(cut)).unwrap_err();
        assert!(matches!(err, SurgeryError::OutsideDataDir { .. }), "{cut}: {err}");
    }
    // A path through a symlinked directory, and a plain path outside.
    let through = dir.path().join("linked-dir/precious.wal");
    assert!(matches!(
        disk::delete_file(dir.path(), &through),
        Err(SurgeryError::OutsideDataDir { .. })
    ));
    assert!(matches!(
        disk::delete_file(dir.path(), &victim),
        Err(SurgeryError::OutsideDataDir { .. })
    ));
    let escape = dir
        .path()
        .join("member/../../")
        .join(outside.path().file_name().unwrap())
        .join("precious.wal");
    assert!(matches!(
        disk::delete_file(dir.path(), &escape),
        Err(SurgeryError::OutsideDataDir { .. })
    ));
    assert_eq!(fs::read(&victim).unwrap(), b"keep me");
    assert!(
        dir.path().join("wal-link").exists(),
        "the refused symlink itself is left in place"
    );
}

#[test]
fn given_bad_specs_should_fail_to_parse_or_validate_with_a_reason() {
    assert!(serde_saphyr::from_str::<SurgerySpec>("{op: flip-bits, files: wal, bitz: 2}").is_err());
    assert!(serde_saphyr::from_str::<SurgerySpec>("{op: shred, files: wal}").is_err());
    assert!(serde_saphyr::from_str::<SurgerySpec>("{op: flip-bits, files: wal, region: middle}").is_err());
    let err = spec("{op: truncate-tail, files: '../wal', max_bytes: 1}")
        .validate()
        .unwrap_err();
    assert!(err.to_string().contains("may not contain `..`"), "{err}");
    let err = spec("{op: flip-bits, files: wal, bits: 0}").validate().unwrap_err();
    assert!(err.to_string().contains("1..=4096 bits"), "{err}");
    let dir = data_dir();
    let err = Surgeon::new(1, "n1")
        .apply(dir.path(), &spec("{op: delete-file, files: 'nothing*'}"))
        .unwrap_err();
    assert!(matches!(err, SurgeryError::NoFile { .. }), "{err}");
    assert_eq!(Pick::default(), Pick::Last);
    let yaml = serde_json::to_string(&spec("{op: zero-block, files: wal, region: '1..9'}")).unwrap();
    assert_eq!(
        yaml,
        r#"{"op":"zero-block","files":"wal","pick":"last","region":"1..9"}"#
    );
}

/// etcd preallocates 64 MB WAL segments: the data is a prefix, the rest zeros. Cuts aim at the data, not the zeros.
#[test]
fn given_a_preallocated_file_when_cut_should_aim_at_its_written_data_and_keep_its_size() {
    let dir = data_dir();
    let segment = dir.path().join("member/wal/1.wal");
    let mut bytes = pattern(30_000);
    bytes.resize(4 << 20, 0);
    fs::write(&segment, &bytes).unwrap();

    let mut surgeon = Surgeon::new(3, "n1");
    let flip = surgeon
        .apply(
            dir.path(),
            &spec("{op: flip-bits, files: 'member/wal/1.wal', region: interior, bits: 4}"),
        )
        .unwrap();
    assert!((30_000 / 8..30_000 - 30_000 / 8).contains(&flip.offset), "{flip:?}");
    assert_eq!(flip.extent_bytes, 30_000);

    let torn = surgeon
        .apply(
            dir.path(),
            &spec("{op: truncate-tail, files: 'member/wal/1.wal', max_bytes: 300}"),
        )
        .unwrap();
    let after = fs::read(&segment).unwrap();
    assert_eq!(after.len(), 4 << 20, "a preallocated file keeps its size");
    assert_eq!(torn.offset, 30_000 - torn.length);
    assert_eq!(torn.offset % 512, 0, "a torn append loses whole sectors");
    assert!(
        after[torn.offset as usize..].iter().all(|&b| b == 0),
        "the torn bytes are zeros"
    );
    assert_eq!(
        after[..torn.offset as usize - 1],
        bytes_after_flip(&bytes, &flip)[..torn.offset as usize - 1]
    );
}

fn bytes_after_flip(original: &[u8], flip: &disk::SurgeryRecord) -> Vec<u8> {
    let mut bytes = original.to_vec();
    for bit in &flip.bits {
        bytes[(bit / 8) as usize] ^= 1 << (bit % 8);
    }
    bytes
}

/// A preallocated WAL holding less than two sectors of data (etcd's, right after a wipe): a torn tail keeps the
/// first sector, and one with a single sector of data or less is refused rather than erased.
#[test]
fn given_a_small_preallocated_file_when_its_tail_is_torn_should_keep_its_first_sector() {
    let dir = data_dir();
    let segment = dir.path().join("member/wal/1.wal");
    for seed in 0..32 {
        let mut bytes = pattern(700);
        bytes.resize(1 << 20, 0);
        fs::write(&segment, &bytes).unwrap();
        let torn = Surgeon::new(seed, "n1")
            .apply(
                dir.path(),
                &spec("{op: truncate-tail, files: 'member/wal/1.wal', max_bytes: 4096}"),
            )
            .unwrap();
        assert_eq!((torn.offset, torn.length), (512, 188), "seed {seed}: {torn:?}");
        assert_eq!(fs::read(&segment).unwrap()[..512], bytes[..512]);
    }
    let mut one_sector = pattern(400);
    one_sector.resize(1 << 20, 0);
    fs::write(&segment, &one_sector).unwrap();
    let err = Surgeon::new(1, "n1")
        .apply(
            dir.path(),
            &spec("{op: truncate-tail, files: 'member/wal/1.wal', max_bytes: 4096}"),
        )
        .unwrap_err();
    assert!(matches!(err, SurgeryError::TooSmall { .. }), "{err}");
    assert_eq!(fs::read(&segment).unwrap(), one_sector, "nothing was cut");
}

/// A misdirected write into a preallocated file lands inside its written data, where its reader reads, never in the
/// zeros past it.
#[test]
fn given_a_misdirected_restore_into_a_preallocated_file_should_land_inside_its_written_data() {
    let dir = data_dir();
    let segment = dir.path().join("member/wal/1.wal");
    let mut bytes = pattern(5 * 4096 + 100);
    bytes.resize(64 << 20, 0);
    fs::write(&segment, &bytes).unwrap();
    for seed in 0..16 {
        let mut surgeon = Surgeon::new(seed, "n1");
        surgeon
            .apply(
                dir.path(),
                &spec(
                    "{op: snapshot-chunk, files: 'member/wal/1.wal', region: '0..4096', length_bytes: 4096, name: m}",
                ),
            )
            .unwrap();
        let record = surgeon
            .apply(dir.path(), &spec("{op: restore-chunk, name: m, misdirect: true}"))
            .unwrap();
        assert!(
            record.offset > 0 && record.offset + 4096 <= 5 * 4096 + 100,
            "seed {seed}: {record:?}"
        );
    }
}
