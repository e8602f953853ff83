use super::faketime::{skew_offset_ms, spec_line, NodeClock};
use super::*;
use rand::SeedableRng;
use std::time::{Duration, SystemTime};

#[test]
fn given_plan_offsets_and_rates_when_parsed_should_keep_sign_and_refuse_nonsense() {
    assert_eq!(Offset::parse("-30s").unwrap(), Offset(-30_000));
    assert_eq!(Offset::parse("+250ms").unwrap(), Offset(250));
    assert_eq!(Offset::parse("2m").unwrap(), Offset(120_000));
    assert!(Offset::parse("30").is_err());
    let range = OffsetRange::parse("-30s..+30s").unwrap();
    assert_eq!((range.min, range.max), (Offset(-30_000), Offset(30_000)));
    assert!(OffsetRange::parse("+1s..-1s").unwrap_err().contains("min > max"));
    assert_eq!(RateRange::parse("1.5x").unwrap(), RateRange { min: 1.5, max: 1.5 });
    assert!(RateRange::parse("1.5").unwrap_err().contains("1.5x"));
    assert!(RateRange::parse("0x").is_err(), "a stopped clock is out of bounds");
    assert_eq!(serde_json::to_value(range).unwrap(), "-30s..+30s");
}

#[test]
fn given_clock_fields_when_validated_should_need_exactly_one_on_clock_and_none_elsewhere() {
    let bump = ClockSpec {
        bump: Some(OffsetRange::parse("-1s..1s").unwrap()),
        ..ClockSpec::default()
    };
    assert!(bump.validate(true, "clock").is_ok());
    assert!(bump.validate(false, "kill").unwrap_err().contains("`kind: clock`"));
    assert!(ClockSpec::default()
        .validate(true, "clock")
        .unwrap_err()
        .contains("exactly one"));
    let both = ClockSpec {
        skew: Some(RateRange::parse("2x").unwrap()),
        ..bump
    };
    assert!(both.validate(true, "clock").unwrap_err().contains("exactly one"));
    let still = ClockSpec {
        strobe: Some(StrobeSpec {
            delta: Offset(0),
            period: Millis(10),
        }),
        ..ClockSpec::default()
    };
    assert!(still.validate(true, "clock").unwrap_err().contains("delta"));
}

#[test]
fn given_a_seed_when_drawn_should_give_the_same_shift_within_the_range() {
    let spec = ClockSpec {
        bump: Some(OffsetRange::parse("-30s..+30s").unwrap()),
        ..ClockSpec::default()
    };
    let draw = |seed| spec.draw(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed)).unwrap();
    assert_eq!(draw(7), draw(7));
    for seed in 0..50 {
        let ClockShift::Bump { offset_ms } = draw(seed) else {
            panic!("a bump draws a bump")
        };
        assert!((-30_000..=30_000).contains(&offset_ms));
    }
}

#[test]
fn given_offsets_and_rates_when_written_should_be_libfaketime_spec_lines() {
    assert_eq!(spec_line(0, 1.0), "+0.000 x1\n");
    assert_eq!(spec_line(-1500, 1.0), "-1.500 x1\n");
    assert_eq!(spec_line(250, 1.5), "+0.250 x1.5\n");
}

#[test]
fn given_a_skew_anchored_after_the_process_started_should_cancel_libfaketimes_jump() {
    let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
    let anchor = start + Duration::from_secs(10);
    // Faked = t + offset + (t - start)(rate - 1); at t = anchor it must be t itself.
    let offset_ms = skew_offset_ms(start, anchor, 1.5);
    assert_eq!(offset_ms, -5000);
    assert_eq!(offset_ms as f64 + 10_000.0 * 0.5, 0.0);
    assert_eq!(
        skew_offset_ms(anchor, anchor, 3.0),
        0,
        "a process spawned at the anchor needs none"
    );
}

/// What a process preloading libfaketime reads: `date +%s%3N` run by a shell that itself preloads it, so each
/// reading comes from a fresh process (which shows an offset, and a skew's offset at its start).
fn faked_minus_real_ms(clock: &NodeClock) -> i64 {
    let env = clock.before_spawn(None).expect("control file");
    let real_before = now_ms();
    let output = std::process::Command::new("date")
        .arg("+%s%3N")
        .envs(env)
        .output()
        .expect("date runs");
    let real_after = now_ms();
    let faked: i64 = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("date prints ms");
    // The real time of the reading lies between the two; report the offset from their midpoint.
    faked - (real_before + real_after) / 2
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn library_or_skip() -> Option<std::path::PathBuf> {
    match faketime::library() {
        Ok(library) => Some(library),
        Err(why) => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI needs libfaketime: {why}"
            );
            eprintln!("skipping: {why}");
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn given_each_clock_shift_when_applied_and_healed_should_move_a_preloaded_process_then_return_it() {
    let Some(library) = library_or_skip() else { return };
    let dir = tempfile::tempdir().unwrap();
    let clock = NodeClock::new(dir.path(), library).unwrap();
    // A process spawn takes a few ms and the machine may be busy: allow 250 ms of slack on every reading.
    let near = |got: i64, want: i64| (got - want).abs() < 250;
    assert!(near(faked_minus_real_ms(&clock), 0), "real time before any fault");

    clock.apply(ClockShift::Bump { offset_ms: -30_000 }).unwrap();
    let got = faked_minus_real_ms(&clock);
    assert!(near(got, -30_000), "bumped back 30 s: {got}");
    let healed = clock.heal().unwrap();
    assert_eq!(healed["offset_ms_before"], -30_000);
    assert!(near(faked_minus_real_ms(&clock), 0), "real again after the heal");

    clock.apply(ClockShift::Skew { rate: 3.0 }).unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let got = faked_minus_real_ms(&clock);
    // 1 s (and the spawn) at 3x gains at least 2 s, and no jump at the start: well under 2 s + the slack more.
    assert!((1900..2800).contains(&got), "skewed from the current time: {got}");
    clock.heal().unwrap();
    assert!(near(faked_minus_real_ms(&clock), 0), "real again after the skew's heal");

    clock
        .apply(ClockShift::Strobe {
            delta_ms: 60_000,
            period_ms: 10,
        })
        .unwrap();
    // Read until both states were seen (a 10 ms period flips 200 times in the 2 s bound), each reading one of them.
    let (mut far, mut real) = (0, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while (far == 0 || real == 0) && std::time::Instant::now() < deadline {
        let reading = faked_minus_real_ms(&clock);
        match reading {
            r if near(r, 60_000) => far += 1,
            r if near(r, 0) => real += 1,
            r => panic!("a strobed reading is +60 s or real time, not {r} ms off"),
        }
    }
    assert!(far > 0 && real > 0, "the strobe flipped: {far} far, {real} real");
    clock.heal().unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let after: Vec<i64> = (0..5).map(|_| faked_minus_real_ms(&clock)).collect();
    assert!(
        after.iter().all(|&r| near(r, 0)),
        "the strobe stopped at the heal: {after:?}"
    );
}
