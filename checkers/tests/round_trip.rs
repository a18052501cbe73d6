//! Converting a history to another format and back does not change its
//! verdicts: JSONL → text → JSONL at every level the text format can carry
//! (it has no times), and JSONL → Elle EDN → JSONL at every level.

use checkers::{check, CheckOptions};
use checkers_testkit::{random_history, GenConfig};
use history::formats::{self, Format};
use history::{read_jsonl_str, to_jsonl_string, Level};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn via(h: &history::History, f: Format) -> history::History {
    let mut buf = Vec::new();
    formats::write_to(h, &mut buf, f).expect("export");
    let back = formats::parse(&buf, f, None).expect("import");
    // And through JSONL, as a user would store it.
    read_jsonl_str(&to_jsonl_string(&back)).expect("jsonl")
}

#[test]
fn conversions_keep_verdicts() {
    let cfg = GenConfig {
        ..GenConfig::default()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    let untimed = [
        Level::Rc,
        Level::Ra,
        Level::Cc,
        Level::Si,
        Level::StrongSessionSi,
        Level::Ser,
        Level::StrongSessionSer,
    ];
    let opts = CheckOptions::default();
    let mut differ = 0;
    for i in 0..1500 {
        let h = random_history(&mut rng, &cfg);
        let text = via(&h, Format::Text);
        let edn = via(&h, Format::ElleEdn);
        for l in Level::ALL {
            let want = check(&h, l, &opts).verdict;
            if untimed.contains(&l) {
                let got = check(&text, l, &opts).verdict;
                assert_eq!(
                    got,
                    want,
                    "history {i} via text at {l}\n{}",
                    to_jsonl_string(&h)
                );
            }
            let got = check(&edn, l, &opts).verdict;
            assert_eq!(
                got,
                want,
                "history {i} via EDN at {l}\n{}",
                to_jsonl_string(&h)
            );
            differ += usize::from(want == checkers::Verdict::Anomalous);
        }
    }
    assert!(
        differ > 500,
        "the histories must include anomalies: {differ}"
    );
}
