//! Every transaction history in `../shared/fixtures/MANIFEST.tsv` is
//! imported and checked at each level its row names, and must give the
//! verdict the row states. Rows the project decides differently, or cannot
//! decide, are listed below with the reason; a listed row that starts to
//! agree fails the test too, so the list stays true.
//!
//! Note on names: what PolySI, dbcop, Plume and AWDIT call SI and SER
//! includes session order: our `strong-session-si` / `strong-session-ser`;
//! their TCC is our `cc`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use checkers::{check, CheckOptions, Verdict};
use history::Level;

/// Where the fixtures are: `$ISOHARNESS_FIXTURES`, else `../shared/fixtures`
/// beside the repository.
fn fixtures() -> Option<PathBuf> {
    let dir = std::env::var_os("ISOHARNESS_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures"));
    dir.join("MANIFEST.tsv").exists().then_some(dir)
}

/// Rows we do not decide as labelled, and why.
const EXCEPTIONS: &[(&str, &str)] = &[
    (
        "plume-on-hat/History/testcase/cobra/tap-e/",
        "the upstream Cobra copy is lossy: it keeps only the last write of the transaction, so the not-my-last-write read cannot be seen",
    ),
    (
        "plume-on-hat/History/testcase/elle/tap-n.edn",
        "Plume reads these single-element lists as reads of their last element; read as Elle list-append, the reads are not prefixes of each other (incompatible order), which every level forbids",
    ),
    (
        "plume-on-hat/History/testcase/elle/tap-l.edn",
        "read as Elle list-append, the lists order the writers both ways (x = [1] puts T0's append before T1's, y = [2] T1's before T0's): no commit order builds both lists, at any level; Plume reads them as registers and allows it at rc",
    ),
    (
        "elle-cli/histories/elle/rw-register.edn",
        "reads x=3, which no transaction writes: a thin-air read, so anomalous at every level; elle-cli's expectation of valid does not check thin-air reads",
    ),
    (
        "elle-cli/histories/elle/rw-register.json",
        "the JSON twin of rw-register.edn: the same thin-air read",
    ),
    (
        "plume-on-hat/History/testcase/text/tap-j.txt",
        "the transaction reads another value after its own write: not-my-own-write, which the Biswas-Enea axioms (and AWDIT) reject at rc; Plume allows it",
    ),
    (
        "plume-on-hat/History/testcase/elle/tap-j.edn",
        "tap-j in Elle form: the same not-my-own-write at rc",
    ),
    (
        "plume-on-hat/History/testcase/dbcop/tap-j/history.bincode",
        "tap-j in dbcop form: the same not-my-own-write at rc",
    ),
    (
        "plume-on-hat/History/testcase/cobra/tap-j/",
        "tap-j in Cobra form: the same not-my-own-write at rc",
    ),
    (
        "plume-on-hat/History/testcase/viper/tap-j/",
        "tap-j in Viper form: the same not-my-own-write at rc",
    ),
    (
        "plume-on-hat/History/testcase/text/tap-i.txt",
        "NonMonoReadAO: Plume lists it under RC, but under the Biswas-Enea rc axiom the history is consistent (see the fixtures README); we answer ok at rc",
    ),
    (
        "plume-on-hat/History/testcase/dbcop/tap-i/history.bincode",
        "tap-i in dbcop form: ok at rc, as the text form",
    ),
    (
        "plume-on-hat/History/testcase/cobra/tap-i/",
        "tap-i in Cobra form: ok at rc, as the text form",
    ),
    (
        "plume-on-hat/History/testcase/viper/tap-i/",
        "tap-i in Viper form: ok at rc, as the text form",
    ),
];

/// Rows with no transactions to check: reading them is an error ("the
/// viper logs in this directory hold no transactions").
const EMPTY: &[(&str, &str)] = &[
    (
        "plume-on-hat/History/testcase/viper/tap-a/",
        "the upstream Viper files are empty",
    ),
    (
        "plume-on-hat/History/testcase/viper/tap-b/",
        "the upstream Viper files are empty",
    ),
    (
        "plume-on-hat/History/testcase/viper/tap-c/",
        "the upstream Viper files are empty",
    ),
    (
        "plume-on-hat/History/testcase/viper/tap-d/",
        "the upstream Viper files are empty",
    ),
];

/// The (level, verdict) pairs a row's `expected` text states.
fn expectations(path: &str, expected: &str) -> Vec<(Level, Verdict)> {
    use Level::*;
    use Verdict::{Anomalous as Bad, Ok as Good};
    let e = expected.to_ascii_lowercase();
    let name = |s: &str| match s.trim().trim_end_matches('.') {
        "rc" => Some(Rc),
        "ra" => Some(Ra),
        "tcc" | "causal" => Some(Cc),
        _ => None,
    };
    let mut out = Vec::new();
    // Plume and AWDIT phrasing: "violates RC, RA, TCC (not prohibited at RC)",
    // "satisfies RA, RC; violates causal".
    for part in e.split(';') {
        let part = part.trim();
        let (verdict, rest) = if let Some(r) = part.strip_prefix("satisfies ") {
            (Good, r)
        } else if let Some(i) = part.find("violates ") {
            (Bad, &part[i + "violates ".len()..])
        } else {
            continue;
        };
        let list = rest.split('(').next().unwrap_or("");
        for w in list.split(',') {
            if let Some(l) = name(w) {
                out.push((l, verdict));
            }
        }
        if let Some(i) = rest.find("not prohibited at ") {
            for w in rest[i + "not prohibited at ".len()..]
                .trim_end_matches(')')
                .split(" or ")
            {
                if let Some(l) = name(w) {
                    out.push((l, Good));
                }
            }
        }
    }
    if !out.is_empty() {
        return out;
    }
    // The other sources, by what their labels say.
    if e.starts_with("real bug") && e.contains("si violation") {
        return vec![(StrongSessionSi, Bad)];
    }
    if e.contains("serializable violation") {
        return vec![(StrongSessionSer, Bad)];
    }
    if e.contains("(tcc) violation") {
        return vec![(Cc, Bad)];
    }
    if e.contains("expected to satisfy si") || e.contains("expected valid") {
        return vec![(StrongSessionSi, Good)];
    }
    if path.ends_with("si-without-g-single.edn") {
        return vec![(Si, Good), (Ser, Bad)];
    }
    if e.starts_with("violates serializable") {
        return vec![(Ser, Bad)];
    }
    if e.starts_with("invalid") && e.contains("strict-serializable") {
        return vec![(Sser, Bad)];
    }
    if e.starts_with("valid under") && e.contains("strict-serializable") {
        return vec![(Sser, Good)];
    }
    if e.starts_with("real bug (known): mongodb") {
        return vec![(StrongSessionSi, Bad)];
    }
    Vec::new()
}

#[test]
fn every_labelled_fixture_gives_its_verdict() {
    let Some(dir) = fixtures() else {
        eprintln!("NOTE: ../shared/fixtures not found; set ISOHARNESS_FIXTURES to run this test");
        assert!(
            std::env::var_os("ISOHARNESS_REQUIRE_FIXTURES").is_none(),
            "fixtures required but missing"
        );
        return;
    };
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let opts = CheckOptions {
        timeout: Some(Duration::from_secs(60)),
        ..CheckOptions::default()
    };
    let mut checked = 0;
    let mut unlabelled = 0;
    let mut disagreements: Vec<String> = Vec::new();
    let mut exceptions_seen: Vec<&str> = Vec::new();
    let mut empty_seen = 0;
    for line in manifest.lines().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        let (path, format, expected) = (cols[0], cols[1], cols[3]);
        if format == "other" {
            continue;
        }
        let file = dir.join(path);
        let read = history::formats::read(&file, history::Format::Auto);
        if let Some((_, why)) = EMPTY.iter().find(|(p, _)| *p == path) {
            // Nothing to check is an input error, not a verdict.
            let e = read.expect_err(&format!("{path} was listed as empty ({why})"));
            assert!(
                e.to_string().contains("hold no transactions"),
                "{path}: {e}"
            );
            empty_seen += 1;
            continue;
        }
        let h = read.unwrap_or_else(|e| panic!("{path}: {e}"));
        let exp = expectations(path, expected);
        if exp.is_empty() {
            // No verdict stated: the history must still be decided.
            unlabelled += 1;
            for level in [Level::Si, Level::Ser] {
                let rep = check(&h, level, &opts);
                checkers_testkit::assert_certified(&rep, "fixtures");
                assert_ne!(
                    rep.verdict,
                    Verdict::Unknown,
                    "{path} at {level}: {:?}",
                    rep.notes
                );
            }
            continue;
        }
        let mut agrees = true;
        for (level, want) in exp {
            let rep = check(&h, level, &opts);
            checkers_testkit::assert_certified(&rep, "fixtures");
            checked += 1;
            if rep.verdict != want {
                agrees = false;
                disagreements.push(format!(
                    "{path} at {level}: expected {want}, got {} ({}) {:?} {:?}",
                    rep.verdict, rep.method, rep.anomaly_counts, rep.notes
                ));
            }
        }
        if let Some((p, _)) = EXCEPTIONS.iter().find(|(p, _)| *p == path) {
            assert!(
                !agrees,
                "{p} is listed as an exception but now agrees: take it off the list"
            );
            exceptions_seen.push(p);
            disagreements.retain(|d| !d.starts_with(path));
        }
    }
    eprintln!(
        "{checked} verdicts checked, {unlabelled} unlabelled histories decided, {} listed exceptions",
        exceptions_seen.len()
    );
    for (p, why) in EXCEPTIONS {
        assert!(
            exceptions_seen.contains(p),
            "exception {p} ({why}) was not met"
        );
    }
    assert_eq!(empty_seen, EMPTY.len(), "every empty fixture is refused");
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    assert!(checked > 100, "too few verdicts checked: {checked}");
}
