//! Assertions on the checker's reports: certificates, verdicts against an
//! oracle, and tallies that a generator exercised both answers or a method.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use checkers::{Certified, Report, Verdict};
use history::{to_jsonl_string, History, Level};

/// The weak levels, weakest first (`rc`, `ra`, `cc`, `pc`).
pub const WEAK: &[Level] = Level::ALL.as_slice().split_at(4).0;

/// The strong levels, weakest first (`si` to `sser`).
pub const STRONG: &[Level] = Level::ALL.as_slice().split_at(4).1;

static UNCHECKED: AtomicUsize = AtomicUsize::new(0);

/// For tests: panics when the certificate checker rejected a verdict's
/// proof (a checker bug), and counts the decided verdicts whose proof
/// could not be checked ([`unchecked_certificates`]).
pub fn assert_certified(rep: &Report, what: &str) {
    match &rep.certified {
        Certified::Failed(why) => panic!(
            "{what}: the certificate of {} at {} does not hold: {why}\n{:?}",
            rep.verdict, rep.level, rep.certificate
        ),
        Certified::NotChecked(_) if rep.verdict != Verdict::Unknown => {
            UNCHECKED.fetch_add(1, Ordering::Relaxed);
        }
        Certified::Absent => panic!("{what}: no certificate status"),
        _ => {}
    }
}

/// [`assert_certified`], first printing the history and the anomalies when
/// the certificate does not hold.
pub fn assert_certified_on(h: &History, rep: &Report, what: &str) {
    if matches!(rep.certified, Certified::Failed(_)) {
        eprintln!("{what} at {}:\n{}", rep.level, to_jsonl_string(h));
        for a in &rep.anomalies {
            eprintln!("{a}");
        }
    }
    assert_certified(rep, what);
}

/// How many decided verdicts [`assert_certified`] saw without a checked
/// proof.
pub fn unchecked_certificates() -> usize {
    UNCHECKED.load(Ordering::Relaxed)
}

/// Whether the report says its level holds; panics on an unknown verdict.
pub fn holds(h: &History, rep: &Report, what: &str) -> bool {
    match rep.verdict {
        Verdict::Ok => true,
        Verdict::Anomalous => false,
        Verdict::Unknown => panic!(
            "{what}: unknown at {}: {:?}\n{}",
            rep.level,
            rep.notes,
            to_jsonl_string(h)
        ),
    }
}

/// Asserts that the report decided its level and that the answer is
/// `want` (the oracle's); returns it.
pub fn assert_verdict(h: &History, rep: &Report, want: bool, what: &str) -> bool {
    let got = holds(h, rep, what);
    assert_eq!(
        got,
        want,
        "{what} at {}: checker says {} ({}), oracle says {want}\n{}\n{}",
        rep.level,
        rep.verdict,
        rep.method,
        to_jsonl_string(h),
        rep.anomalies
            .iter()
            .map(|a| format!("{a}\n"))
            .collect::<String>()
    );
    want
}

/// Prints, per level, how many histories were anomalous (`s[0]`) and ok
/// (`s[1]`), and asserts that both exceed `min`.
pub fn assert_two_sided(what: &str, levels: &[Level], seen: &[[usize; 2]], min: usize) {
    for (l, s) in levels.iter().zip(seen) {
        eprintln!("{what}{l}: {} anomalous, {} ok", s[0], s[1]);
        assert!(s[0] > min && s[1] > min, "{what}{l}: {s:?}");
    }
}

/// Counts of the methods that decided, by name and answer.
pub type Methods = BTreeMap<String, usize>;

/// Counts one decision of `how` with answer `ok`, as `"{how} ok"` or
/// `"{how} anomalous"`.
pub fn count_method(methods: &mut Methods, how: &str, ok: bool) {
    let answer = if ok { "ok" } else { "anomalous" };
    *methods.entry(format!("{how} {answer}")).or_default() += 1;
}

/// Prints the methods, and asserts that each of `expect` decided more than
/// `min` times.
pub fn assert_methods(methods: &Methods, expect: &[&str], min: usize) {
    eprintln!("{methods:?}");
    for m in expect {
        let n = methods.get(*m).copied().unwrap_or(0);
        assert!(n > min, "{m}: {methods:?}");
    }
}
