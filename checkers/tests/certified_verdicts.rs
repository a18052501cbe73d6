//! Every verdict `check` gives comes with a proof the independent
//! certificate checker accepts: on random register, mini-transaction and
//! list histories, at all ten levels, no certificate may fail, and nearly
//! every decided verdict must be checked (the rest are counted and shown).

use checkers::{check, Certified, CheckOptions, Report, Verdict};
use checkers_testkit::{assert_certified, random_history, random_list_history, GenConfig};
use history::{History, Level};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[derive(Default)]
struct Tally {
    checked: usize,
    unchecked: Vec<String>,
}

impl Tally {
    fn add(&mut self, h: &History, rep: &Report, what: &str) {
        if matches!(rep.certified, Certified::Failed(_)) {
            eprintln!("{what}:\n{}", history::to_jsonl_string(h));
            for a in &rep.anomalies {
                eprintln!("{a}");
            }
        }
        assert_certified(rep, what);
        match &rep.certified {
            Certified::Checked => self.checked += 1,
            Certified::NotChecked(why) if rep.verdict != Verdict::Unknown => {
                self.unchecked
                    .push(format!("{} {}: {why}", rep.level, rep.verdict));
            }
            _ => {}
        }
    }
}

fn run(name: &str, histories: impl Iterator<Item = History>, max_unchecked: f64) {
    let mut t = Tally::default();
    for (i, h) in histories.enumerate() {
        for l in Level::ALL {
            let rep = check(&h, l, &CheckOptions::default());
            t.add(&h, &rep, &format!("{name} history {i}"));
        }
    }
    eprintln!(
        "{name}: {} verdicts certified, {} not checked",
        t.checked,
        t.unchecked.len()
    );
    for u in t.unchecked.iter().take(5) {
        eprintln!("  not checked: {u}");
    }
    let share = t.unchecked.len() as f64 / (t.checked + t.unchecked.len()) as f64;
    assert!(
        share <= max_unchecked,
        "{name}: {share:.4} of verdicts not checked"
    );
}

#[test]
fn register_verdicts_are_certified() {
    let cfg = GenConfig {
        max_txns: 6,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0xce27);
    run(
        "registers",
        (0..2_000).map(|_| random_history(&mut rng, &cfg)),
        0.01,
    );
}

#[test]
fn mini_transaction_verdicts_are_certified() {
    let cfg = GenConfig {
        max_txns: 8,
        mini: true,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0x3171);
    run(
        "mini",
        (0..2_000).map(|_| random_history(&mut rng, &cfg)),
        0.01,
    );
}

#[test]
fn list_verdicts_are_certified() {
    let cfg = GenConfig {
        max_txns: 6,
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0x1157);
    run(
        "lists",
        (0..2_000).map(|_| random_list_history(&mut rng, &cfg)),
        0.01,
    );
}
