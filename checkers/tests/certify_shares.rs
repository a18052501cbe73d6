//! The replay of a serial or schedule witness in two shares of the keys
//! (as large histories are certified, one share per core) against the
//! replay of all the keys at once, on every witness of small random
//! histories: the same answer every time.

use checkers::certify::*;
use checkers_testkit::brute::{any_perm, any_schedule, committed_sets, is_ser, is_si};
use checkers_testkit::certs::cert;
use checkers_testkit::{random_history, GenConfig};
use history::{to_jsonl_string, History, Level};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Every serial order or schedule of every committed set of `h`, verified
/// at `level`: whether each one holds.
fn answers(h: &History, level: Level) -> Vec<bool> {
    let mut out = Vec::new();
    for set in committed_sets(h) {
        if is_si(level) {
            any_schedule(&set, &mut |s| {
                let c = cert(level, false, Claim::Ok(Witness::Schedule(s.to_vec())));
                out.push(verify(h, &c).is_ok());
                false
            });
        } else {
            any_perm(&set, &mut |o| {
                let c = cert(level, false, Claim::Ok(Witness::Serial(o.to_vec())));
                out.push(verify(h, &c).is_ok());
                false
            });
        }
    }
    out
}

#[test]
fn two_shares_of_the_keys_replay_like_one() {
    let levels: Vec<Level> = Level::ALL
        .into_iter()
        .filter(|&l| is_ser(l) || is_si(l))
        .collect();
    let configs = [
        GenConfig {
            max_txns: 3,
            ..GenConfig::default()
        },
        GenConfig {
            max_txns: 3,
            mini: true,
            p_info: 0.15,
            ..GenConfig::default()
        },
        GenConfig {
            max_txns: 3,
            keys: 6,
            p_wild: 0.3,
            p_fail: 0.15,
            ..GenConfig::default()
        },
    ];
    let (mut held, mut failed) = (0usize, 0usize);
    for (ci, cfg) in configs.iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(77 + ci as u64);
        for i in 0..400 {
            let h = random_history(&mut rng, cfg);
            for &level in &levels {
                set_shared_from(usize::MAX);
                let one = answers(&h, level);
                set_shared_from(0);
                let two = answers(&h, level);
                set_shared_from(usize::MAX);
                assert_eq!(
                    one,
                    two,
                    "{level}, config {ci}, history {i}: one replay and two shares differ\n{}",
                    to_jsonl_string(&h)
                );
                held += one.iter().filter(|&&b| b).count();
                failed += one.iter().filter(|&&b| !b).count();
            }
        }
    }
    // Both answers were compared many times.
    assert!(held > 500 && failed > 5_000, "{held} held, {failed} failed");
}
