//! The streaming check against the offline one: over random
//! mini-transaction and list-append histories, fed in random chunks with a
//! tiny window (so transactions are retired all the time and stale reads
//! hand over), the stream's `ok` and `anomalous` are always the offline
//! check's.

use checkers::stream::{streams, Stream, StreamOptions, Streamed};
use checkers::{check, CheckOptions, Verdict};
use checkers_testkit::{random_history, random_list_history, GenConfig};
use history::{History, Level, Op, Txn};
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;

const LEVELS: [Level; 4] = [
    Level::Ser,
    Level::Si,
    Level::StrongSessionSer,
    Level::StrongSessionSi,
];

/// The same history with the harness's write ids: each session's values
/// increase and sit in a range of their own (the generator counts values
/// across sessions, which the stream cannot show unique and hands over).
/// Reads follow their writes; a value nobody wrote stays out of every
/// range.
fn harness_values(h: &History) -> History {
    let mut map: FxHashMap<i64, i64> = FxHashMap::default();
    let mut counter: FxHashMap<u64, i64> = FxHashMap::default();
    let mut out = h.clone();
    for t in &mut out.txns {
        for op in &mut t.ops {
            if let Op::Write { value, .. } | Op::Append { value, .. } = op {
                let c = counter.entry(t.session).or_insert(0);
                *c += 1;
                let id = ((t.session as i64 + 1) << 32) | *c;
                map.insert(*value, id);
                *value = id;
            }
        }
    }
    for t in &mut out.txns {
        for op in &mut t.ops {
            match op {
                Op::Read { value: Some(v), .. } => {
                    *v = map.get(v).copied().unwrap_or(-*v - 1);
                }
                Op::ReadList {
                    values: Some(vs), ..
                } => {
                    for v in vs {
                        *v = map.get(v).copied().unwrap_or(-*v - 1);
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// Moves transactions of different sessions past each other (each
/// session's order is kept): readers may now come before their writers.
fn interleave(rng: &mut ChaCha8Rng, h: &mut History) {
    let mut by_session: FxHashMap<u64, Vec<Txn>> = FxHashMap::default();
    let mut order = Vec::new();
    for t in h.txns.drain(..) {
        order.push(t.session);
        by_session.entry(t.session).or_default().push(t);
    }
    order.shuffle(rng);
    for v in by_session.values_mut() {
        v.reverse();
    }
    for s in order {
        let t = by_session.get_mut(&s).unwrap().pop().unwrap();
        h.txns.push(t);
    }
}

/// Streams `h` in random chunks, settling at each chunk's end.
fn stream(rng: &mut ChaCha8Rng, h: &History, level: Level, opts: StreamOptions) -> (Streamed, u64) {
    let mut s = Stream::new(level, opts).expect("a streamed level");
    let mut i = 0;
    while i < h.txns.len() {
        let chunk = rng.random_range(1..=8).min(h.txns.len() - i);
        for t in &h.txns[i..i + chunk] {
            s.push(t);
        }
        s.settle();
        i += chunk;
    }
    let (v, stats) = s.finish();
    (v, stats.retired)
}

#[derive(Default, Debug)]
struct Tally {
    ok: usize,
    anomalous: usize,
    offline: usize,
    /// Retired and seen in the histories the stream found ok.
    retired: u64,
    txns: u64,
}

fn agree(rng: &mut ChaCha8Rng, h: &History, what: &str, tally: &mut Tally) {
    for level in LEVELS {
        let want = check(h, level, &CheckOptions::default()).verdict;
        let opts = StreamOptions {
            window: rng.random_range(0..6),
            batch: rng.random_range(1..6),
        };
        let (got, retired) = stream(rng, h, level, opts);
        if got == Streamed::Ok {
            tally.retired += retired;
            tally.txns += h.txns.len() as u64;
        }
        let text = || history::to_jsonl_string(h);
        match got {
            Streamed::Ok => {
                tally.ok += 1;
                assert_eq!(
                    want,
                    Verdict::Ok,
                    "{what} at {level}: stream ok\n{}",
                    text()
                );
            }
            Streamed::Anomalous(why) => {
                tally.anomalous += 1;
                assert_eq!(
                    want,
                    Verdict::Anomalous,
                    "{what} at {level}: stream says {why}\n{}",
                    text()
                );
            }
            Streamed::Offline(_) => tally.offline += 1,
        }
    }
}

/// Streams `n` histories made by `make` from `configs` in turn (half of
/// them with sessions interleaved), each at every level, against the
/// offline check. `STREAM_SEED` and `STREAM_HISTORIES` run a longer search
/// by hand.
fn search(
    seed: u64,
    configs: &[GenConfig],
    make: fn(&mut ChaCha8Rng, &GenConfig) -> History,
    what: &str,
) -> Tally {
    let env = |name: &str, or: u64| std::env::var(name).map_or(or, |s| s.parse().unwrap());
    let mut rng = ChaCha8Rng::seed_from_u64(env("STREAM_SEED", seed));
    let mut tally = Tally::default();
    for i in 0..env("STREAM_HISTORIES", 1500) as usize {
        let cfg = &configs[i % configs.len()];
        let mut h = harness_values(&make(&mut rng, cfg));
        if rng.random_bool(0.5) {
            interleave(&mut rng, &mut h);
        }
        agree(&mut rng, &h, &format!("{what} {i}"), &mut tally);
    }
    eprintln!("{tally:?}");
    tally
}

#[test]
fn the_stream_agrees_with_the_offline_check_on_random_chunked_histories() {
    assert!(LEVELS.iter().all(|&l| streams(l)));
    let configs = [
        GenConfig {
            max_txns: 12,
            sessions: 3,
            keys: 2,
            mini: true,
            ..GenConfig::default()
        },
        GenConfig {
            max_txns: 60,
            sessions: 4,
            keys: 3,
            mini: true,
            p_fail: 0.05,
            p_info: 0.02,
            p_wild: 0.03,
            max_stale: 4,
            ..GenConfig::default()
        },
        // Long and mostly valid: many retirements between anomalies.
        GenConfig {
            max_txns: 200,
            sessions: 4,
            keys: 6,
            mini: true,
            p_fail: 0.02,
            p_info: 0.0,
            p_wild: 0.0,
            max_stale: 1,
            ..GenConfig::default()
        },
    ];
    let tally = search(0x5743, &configs, random_history, "history");
    // Not vacuous: the stream decides most histories itself, both ways,
    // while retiring transactions.
    let all = tally.ok + tally.anomalous + tally.offline;
    assert!(tally.ok > all / 10, "{tally:?}");
    assert!(tally.anomalous > all / 10, "{tally:?}");
    assert!(tally.offline < all / 2, "{tally:?}");
    assert!(tally.retired > tally.txns / 4, "{tally:?}");
}

#[test]
fn the_list_stream_agrees_with_the_offline_check_on_random_chunked_histories() {
    let configs = [
        GenConfig {
            max_txns: 12,
            sessions: 3,
            keys: 2,
            max_ops: 3,
            p_own_read: 0.3,
            ..GenConfig::default()
        },
        GenConfig {
            max_txns: 40,
            sessions: 4,
            keys: 3,
            max_ops: 4,
            p_fail: 0.05,
            p_info: 0.02,
            p_wild: 0.03,
            max_stale: 3,
            p_own_read: 0.3,
            per_read_stale: 0.05,
            ..GenConfig::default()
        },
        // Long and mostly valid: many retirements between anomalies.
        GenConfig {
            max_txns: 150,
            sessions: 4,
            keys: 6,
            max_ops: 4,
            p_fail: 0.02,
            p_info: 0.0,
            p_wild: 0.0,
            max_stale: 1,
            p_own_read: 0.3,
            ..GenConfig::default()
        },
    ];
    let tally = search(0x1157, &configs, random_list_history, "list history");
    // Not vacuous: the stream decides many histories itself, both ways,
    // while retiring transactions.
    let all = tally.ok + tally.anomalous + tally.offline;
    assert!(tally.ok > all / 10, "{tally:?}");
    assert!(tally.anomalous > all / 20, "{tally:?}");
    assert!(tally.retired > tally.txns / 10, "{tally:?}");
}

#[test]
fn a_history_with_nothing_committed_is_not_ok() {
    let h = checkers_testkit::build::jsonl(
        r#"{"id":0,"session":0,"status":"fail","ops":[["r","x",null],["w","x",4294967297]]}"#,
    );
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for level in LEVELS {
        let (got, _) = stream(&mut rng, &h, level, StreamOptions::default());
        assert!(
            matches!(got, Streamed::Offline(ref why) if why.contains("nothing")),
            "{got:?}"
        );
    }
}

#[test]
fn values_shared_across_sessions_hand_over_to_the_offline_check() {
    let h = checkers_testkit::build::jsonl(
        &[
            r#"{"id":0,"session":0,"status":"ok","ops":[["r","x",null],["w","x",1]]}"#,
            r#"{"id":1,"session":1,"status":"ok","ops":[["r","x",1],["w","x",2]]}"#,
            r#"{"id":2,"session":0,"status":"ok","ops":[["r","x",2],["w","x",3]]}"#,
        ]
        .join("\n"),
    );
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (got, _) = stream(&mut rng, &h, Level::Ser, StreamOptions::default());
    assert!(
        matches!(got, Streamed::Offline(ref why) if why.contains("unique")),
        "{got:?}"
    );
}

#[test]
fn a_stale_read_past_the_window_hands_over_and_within_it_is_followed() {
    // Session 1 reads key 1's first version after three more versions.
    let v = |s: i64, c: i64| (s << 32) | c;
    let mut lines = vec![format!(
        r#"{{"id":0,"session":0,"status":"ok","ops":[["r","x",null],["w","x",{}]]}}"#,
        v(1, 1)
    )];
    for c in 2..=4 {
        lines.push(format!(
            r#"{{"id":{},"session":0,"status":"ok","ops":[["r","x",{}],["w","x",{}]]}}"#,
            c - 1,
            v(1, c - 1),
            v(1, c)
        ));
    }
    lines.push(format!(
        r#"{{"id":4,"session":1,"status":"ok","ops":[["r","x",{}]]}}"#,
        v(1, 1)
    ));
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let h = checkers_testkit::build::jsonl(&refs.join("\n"));
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let narrow = StreamOptions {
        window: 1,
        batch: 1,
    };
    let (got, _) = stream(&mut rng, &h, Level::Ser, narrow);
    assert!(matches!(got, Streamed::Offline(_)), "{got:?}");
    let (got, _) = stream(&mut rng, &h, Level::Ser, StreamOptions::default());
    assert_eq!(got, Streamed::Ok);
}

#[test]
fn list_appends_no_read_shows_are_ordered_after_the_chain_or_left_open() {
    // T0 read list 0 empty and appended to it: its append is the first of
    // list 0, before T3's, which no read shows (T0 -ww-> T3), while T3 read
    // list 2 empty, before T0's append to it (T3 -rw-> T0): a cycle at SI.
    let installs = [
        r#"{"id":1,"session":0,"status":"ok","start":30,"end":44,"ops":[["a",2,4294967297],["r",2,[4294967297]],["a",1,4294967298],["r",1,[4294967298]]]}"#,
        r#"{"id":2,"session":2,"status":"ok","start":27,"end":36,"ops":[["a",1,12884901889]]}"#,
        r#"{"id":0,"session":3,"status":"ok","start":20,"end":21,"ops":[["a",2,17179869185],["a",1,17179869186],["r",0,[]],["a",0,17179869187]]}"#,
        r#"{"id":3,"session":3,"status":"ok","start":41,"end":50,"ops":[["a",0,17179869188],["a",0,17179869189],["r",2,[]]]}"#,
    ];
    // Two appends to list 0 that no read shows: each order of them closes
    // a cycle at SI, which only the offline check can see.
    let open = [
        r#"{"id":0,"session":0,"status":"ok","start":17,"end":26,"ops":[["r",2,[]],["r",1,[]],["r",1,[]],["r",1,[]]]}"#,
        r#"{"id":1,"session":3,"status":"ok","start":24,"end":25,"ops":[["r",0,[]],["r",1,[]],["r",0,[]],["a",0,17179869185]]}"#,
        r#"{"id":2,"session":2,"status":"ok","start":27,"end":37,"ops":[["r",0,[]],["a",2,12884901889],["r",2,[12884901889]]]}"#,
        r#"{"id":3,"session":0,"status":"ok","start":44,"end":56,"ops":[["r",2,[12884901889]],["a",0,4294967297],["r",1,[]]]}"#,
        r#"{"id":4,"session":1,"status":"ok","start":46,"end":54,"ops":[["a",0,8589934593],["r",2,[]],["a",1,8589934594],["r",1,[8589934594]],["a",0,8589934595]]}"#,
        r#"{"id":5,"session":2,"status":"ok","start":64,"end":66,"ops":[["a",1,12884901890],["r",2,[12884901889]],["r",1,[8589934594,12884901890]]]}"#,
        r#"{"id":6,"session":3,"status":"ok","start":69,"end":74,"ops":[["r",2,[12884901889]],["r",2,[12884901889]],["a",2,17179869186]]}"#,
    ];
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    for lines in [&installs[..], &open[..]] {
        let h = checkers_testkit::build::jsonl(&lines.join("\n"));
        let want = check(&h, Level::Si, &CheckOptions::default()).verdict;
        assert_eq!(want, Verdict::Anomalous);
        let (got, _) = stream(&mut rng, &h, Level::Si, StreamOptions::default());
        assert_ne!(got, Streamed::Ok, "{}", lines.join("\n"));
    }
}

/// A list-append history where session 1 touches list 1 far behind
/// session 0, with other lists between; `closing`: it reads lists as they
/// close (a `final-read` of list 999, which no one uses, first, and of
/// list 1 after session 1), and `after`: list 1 is read again after its
/// closing read.
fn drifting_list_history(closing: bool, after: bool) -> History {
    let v = |s: i64, c: i64| (s << 32) | c;
    let mut lines = Lines::default();
    let mut line = |session, kind, ops: String| lines.push(session, kind, &ops);
    if closing {
        line(9, "final-read", r#"["r",999,[]]"#.into());
    }
    line(0, "mixed", format!(r#"["r",1,[]],["a",1,{}]"#, v(1, 1)));
    line(0, "mixed", format!(r#"["r",1,[{}]]"#, v(1, 1)));
    // Session 0 moves on: 200 lists of its own, each appended to and read.
    for c in 2..202 {
        let x = v(1, c);
        line(0, "mixed", format!(r#"["a",{c},{x}],["r",{c},[{x}]]"#));
        if closing {
            line(9, "final-read", format!(r#"["r",{c},[{x}]]"#));
        }
    }
    // Session 1 arrives at list 1.
    let (a, b) = (v(1, 1), v(2, 1));
    line(
        1,
        "mixed",
        format!(r#"["r",1,[{a}]],["a",1,{b}],["r",1,[{a},{b}]]"#),
    );
    if closing {
        line(9, "final-read", format!(r#"["r",1,[{a},{b}]]"#));
    }
    for c in 202..302 {
        let x = v(2, c);
        line(1, "mixed", format!(r#"["a",{c},{x}],["r",{c},[{x}]]"#));
        if closing {
            line(9, "final-read", format!(r#"["r",{c},[{x}]]"#));
        }
    }
    if after {
        line(2, "read-only", format!(r#"["r",1,[{a},{b}]]"#));
    }
    lines.history()
}

/// JSONL lines of committed transactions, numbered as they are added.
#[derive(Default)]
struct Lines(Vec<String>);

impl Lines {
    fn push(&mut self, session: u64, kind: &str, ops: &str) {
        let id = self.0.len();
        self.0.push(format!(
            r#"{{"id":{id},"session":{session},"status":"ok","kind":"{kind}","ops":[{ops}]}}"#
        ));
    }

    fn history(&self) -> History {
        checkers_testkit::build::jsonl(&self.0.join("\n"))
    }
}

#[test]
fn a_list_read_as_it_closes_is_kept_until_its_closing_read_and_let_go_after() {
    let narrow = StreamOptions {
        window: 4,
        batch: 1,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for level in [Level::Ser, Level::Si] {
        for (closing, after) in [(true, false), (false, false), (true, true)] {
            let h = drifting_list_history(closing, after);
            assert_eq!(
                check(&h, level, &CheckOptions::default()).verdict,
                Verdict::Ok
            );
            let (got, retired) = stream(&mut rng, &h, level, narrow);
            match (closing, after) {
                // Kept whole however long session 1 takes, let go of once
                // closed: nearly every transaction left memory.
                (true, false) => {
                    assert_eq!(got, Streamed::Ok, "{level}");
                    assert!(retired > 500, "{retired}");
                }
                // Without closing reads, an idle list is let go of after
                // a few windows, and session 1's late read hands over.
                (false, false) => assert!(
                    matches!(&got, Streamed::Offline(why) if why.contains("list 1 is read")),
                    "{got:?}"
                ),
                // A read after the closing read finds the list let go of.
                _ => assert!(
                    matches!(&got, Streamed::Offline(why) if why.contains("let go")),
                    "{got:?}"
                ),
            }
        }
    }
}

/// Lists 1..=40 in a row, each read by its closing read; only the even
/// ones were appended to (a client that skips epochs leaves lists only
/// ever read empty). Every list is remembered once let go of, in one run.
#[test]
fn closed_lists_read_empty_are_remembered_so_the_runs_stay_whole() {
    let mut lines = Lines::default();
    let mut line = |session, kind, ops: String| lines.push(session, kind, &ops);
    for k in 1..=40i64 {
        let x = 1000 + k;
        if k % 2 == 0 {
            line(0, "mixed", format!(r#"["a",{k},{x}],["r",{k},[{x}]]"#));
            line(9, "final-read", format!(r#"["r",{k},[{x}]]"#));
        } else {
            line(9, "final-read", format!(r#"["r",{k},[]]"#));
        }
    }
    let h = lines.history();
    let mut s = Stream::new(
        Level::Ser,
        StreamOptions {
            window: 2,
            batch: 1,
        },
    )
    .expect("a streamed level");
    for t in &h.txns {
        s.push(t);
        s.settle();
    }
    let (got, stats) = s.finish();
    assert_eq!(got, Streamed::Ok);
    assert!(stats.retired > 50, "{}", stats.retired);
    assert_eq!(stats.dropped_entries, 1, "{stats:?}");
}
