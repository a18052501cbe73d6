//! White-box checking (`--use-dbts`) against the brute-force oracle with
//! timestamps, at every strong level, on random small histories whose
//! transactions carry database timestamps: some plausible (near the
//! simulated order), some arbitrary, some without a commit timestamp or
//! without any (`info` transactions included). Every verdict, and every
//! "fails" / "satisfies" claim about other levels, must agree with the
//! oracle deciding those levels directly.

use checkers::exhaustive::registers as oracle;
use checkers::{check, CheckOptions};
use checkers_testkit::{
    assert_certified_on, assert_two_sided, assert_verdict, random_history, stamp_ties,
    unchecked_certificates, GenConfig, STRONG,
};
use history::{to_jsonl_string, DbTs, History, Level, Status};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Gives each transaction distinct timestamps: plausible ones (a snapshot
/// a little before its place in the simulated order, a commit at it) or
/// arbitrary ones; drops the commit timestamp (always for `info`, as a
/// client that lost the reply has none, and sometimes otherwise) or all of
/// them now and then.
fn stamp(h: &mut History, rng: &mut ChaCha8Rng) {
    let n = h.txns.len() as u64;
    let arbitrary = rng.random_bool(0.3);
    let mut pool: Vec<u64> = (1..=4 * n + 4).collect();
    for i in (1..pool.len()).rev() {
        let j = rng.random_range(0..=i);
        pool.swap(i, j);
    }
    for (i, t) in h.txns.iter_mut().enumerate() {
        if rng.random_bool(0.1) {
            t.dbts = None;
            continue;
        }
        let (start, commit) = if arbitrary {
            let a = pool[2 * i];
            let b = pool[2 * i + 1];
            (a.min(b), a.max(b))
        } else {
            let i = i as u64;
            (
                100 * i + 291 - 100 * rng.random_range(0..3u64),
                100 * i + 302,
            )
        };
        let keep_commit = t.status != Status::Info && rng.random_bool(0.9);
        t.dbts = Some(DbTs {
            start,
            commit: keep_commit.then_some(commit),
        });
    }
}

fn truth(h: &History, l: Level) -> bool {
    if matches!(l, Level::Rc | Level::Ra | Level::Cc | Level::Pc) {
        oracle::satisfies(h, l).expect("weak level")
    } else {
        oracle::satisfies_dbts(h, l).expect("strong level")
    }
}

/// Checks `h` at `l` and asserts that the verdict and every fails /
/// satisfies claim agree with the oracle, and that the certificate holds.
/// Returns whether `h` satisfies `l`.
fn agree(i: usize, h: &History, l: Level, opts: &CheckOptions, claims: &mut usize) -> bool {
    let want = truth(h, l);
    let rep = check(h, l, opts);
    assert_certified_on(h, &rep, "oracle_dbts");
    assert_verdict(h, &rep, want, &format!("history {i}"));
    for &f in &rep.fails {
        *claims += 1;
        assert!(
            !truth(h, f),
            "history {i}: {l} claims it fails {f}, which holds\n{}",
            to_jsonl_string(h)
        );
    }
    for &s in &rep.satisfies {
        *claims += 1;
        assert!(
            truth(h, s),
            "history {i}: {l} claims it satisfies {s}, which fails\n{}",
            to_jsonl_string(h)
        );
    }
    want
}

/// Checks `count` random histories, stamped by `stamp`, at each of
/// `levels` with `--use-dbts`; asserts that both answers are common.
fn white_box(
    seed: u64,
    count: usize,
    levels: &[Level],
    stamp: &mut dyn FnMut(&mut History, &mut ChaCha8Rng),
) {
    let cfg = GenConfig {
        keys: 2,
        ..GenConfig::default()
    };
    let opts = CheckOptions {
        use_dbts: true,
        ..CheckOptions::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut seen = vec![[0usize; 2]; levels.len()];
    let mut claims = 0usize;
    for i in 0..count {
        let mut h = random_history(&mut rng, &cfg);
        stamp(&mut h, &mut rng);
        for (li, &l) in levels.iter().enumerate() {
            let want = agree(i, &h, l, &opts, &mut claims);
            seen[li][usize::from(want)] += 1;
        }
    }
    assert_two_sided("--use-dbts ", levels, &seen, 100);
    eprintln!("{claims} fails/satisfies claims checked");
    eprintln!(
        "{} decided verdicts without a checked certificate",
        unchecked_certificates()
    );
}

#[test]
fn white_box_checking_agrees_with_the_oracle() {
    white_box(0xdb75, 10_000, STRONG, &mut stamp);
}

/// The same with timestamp ties ([`stamp_ties`](checkers_testkit::stamp_ties)), at every level: two
/// writers of a key that share a commit timestamp are unordered by it, and
/// only they (the other timestamps still order them against the rest); a
/// snapshot at a commit's timestamp does not see that commit.
#[test]
fn white_box_checking_with_timestamp_ties_agrees_with_the_oracle() {
    let (mut commit_ties, mut start_ties) = (0usize, 0usize);
    white_box(0x71e5, 4_000, &Level::ALL, &mut |h, rng| {
        stamp_ties(h, rng);
        let commits: Vec<u64> = h
            .txns
            .iter()
            .filter_map(|t| t.dbts.and_then(|d| d.commit))
            .collect();
        let mut sorted = commits.clone();
        sorted.sort_unstable();
        commit_ties += usize::from(sorted.windows(2).any(|p| p[0] == p[1]));
        start_ties += usize::from(
            h.txns
                .iter()
                .any(|t| t.dbts.is_some_and(|d| commits.contains(&d.start))),
        );
    });
    eprintln!("{commit_ties} histories with a commit-timestamp tie, {start_ties} with a snapshot at a commit timestamp");
    assert!(commit_ties > 1_000 && start_ties > 1_000);
}
