//! Random histories written by an exporter and read back give the same
//! transactions, modulo what the format cannot carry:
//!
//! - text: times, errors, `kind`, `dbts`; reads of failed and unknown
//!   transactions; an unknown transaction becomes committed when one of its
//!   writes is observed, else its writes become aborted writes; a session's
//!   aborted writes come back as one failed transaction;
//! - Elle EDN: transaction ids (they become the invoke's `:index`), reads of
//!   failed and unknown transactions, the end time of unknown ones, `kind`
//!   and `dbts`; without start times, times are lost.

use std::collections::BTreeMap;

use history::formats::{self, elle_edn, text, Format};
use history::{History, Key, Op, Status, Txn};

mod common;
use common::Rng;

fn status(rng: &mut Rng) -> Status {
    match rng.below(10) {
        0..=6 => Status::Ok,
        7 | 8 => Status::Fail,
        _ => Status::Info,
    }
}

/// A random register history over integer keys, as the text format needs:
/// positive values unique per key, reads of written values or of nothing.
fn register_history(rng: &mut Rng) -> History {
    let mut written: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    let mut next_val: BTreeMap<i64, i64> = BTreeMap::new();
    let n = 1 + rng.below(40);
    let mut txns = Vec::new();
    for i in 0..n {
        let mut ops = Vec::new();
        for _ in 0..1 + rng.below(5) {
            let key = rng.below(6) as i64;
            if rng.chance(50) {
                let v = next_val.entry(key).or_insert(0);
                *v += 1 + rng.below(3) as i64;
                written.entry(key).or_default().push(*v);
                ops.push(Op::Write {
                    key: Key::Int(key),
                    value: *v,
                });
            } else {
                let seen = written.get(&key).map_or(&[][..], Vec::as_slice);
                let value = if seen.is_empty() || rng.chance(20) {
                    None
                } else {
                    Some(seen[rng.below(seen.len() as u64) as usize])
                };
                ops.push(Op::Read {
                    key: Key::Int(key),
                    value,
                });
            }
        }
        let mut t = Txn::new(i * 7 + rng.below(7), rng.below(4), status(rng), ops);
        t.start = Some(i * 10);
        t.error = (t.status != Status::Ok).then(|| "boom".into());
        txns.push(t);
    }
    History::from_txns(txns)
}

/// What the text format keeps of a history: committed transactions (with
/// unknown ones whose writes are observed, minus their reads), and each
/// session's aborted writes in order.
/// (id, session, ops) of committed transactions.
type Committed = Vec<(u64, u64, Vec<Op>)>;

fn text_view(h: &History) -> (Committed, BTreeMap<u64, Vec<Op>>) {
    // Committed: ok, and info whose write an ok transaction read.
    let committed_flag: Vec<bool> = h
        .txns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            t.status == Status::Ok
                || (t.status == Status::Info
                    && h.txns.iter().enumerate().any(|(j, u)| {
                        j != i
                            && u.status == Status::Ok
                            && u.ops.iter().any(|o| match o {
                                Op::Read {
                                    key,
                                    value: Some(v),
                                } => t.ops.iter().any(|w| w.written() == Some((key, *v))),
                                _ => false,
                            })
                    }))
        })
        .collect();
    let mut committed = Vec::new();
    let mut aborted: BTreeMap<u64, Vec<Op>> = BTreeMap::new();
    for (i, t) in h.txns.iter().enumerate() {
        let writes: Vec<Op> = t.ops.iter().filter(|o| !o.is_read()).cloned().collect();
        if t.status == Status::Ok {
            committed.push((t.id, t.session, t.ops.clone()));
        } else if committed_flag[i] {
            committed.push((t.id, t.session, writes));
        } else {
            aborted.entry(t.session).or_default().extend(writes);
        }
    }
    aborted.retain(|_, w| !w.is_empty());
    committed.retain(|(_, _, ops)| !ops.is_empty());
    (committed, aborted)
}

#[test]
fn text_round_trip() {
    let mut rng = Rng(7);
    for round in 0..500 {
        let h = register_history(&mut rng);
        let s = text::to_string(&h).unwrap();
        let back = text::parse(&s, None).unwrap_or_else(|e| panic!("round {round}: {e}\n{s}"));
        let (committed, aborted) = text_view(&h);
        let got_committed: Vec<_> = back
            .txns
            .iter()
            .filter(|t| t.status == Status::Ok)
            .map(|t| (t.id, t.session, t.ops.clone()))
            .collect();
        assert_eq!(got_committed, committed, "round {round}\n{s}");
        let got_aborted: BTreeMap<u64, Vec<Op>> = back
            .txns
            .iter()
            .filter(|t| t.status == Status::Fail)
            .map(|t| (t.session, t.ops.clone()))
            .collect();
        assert_eq!(got_aborted, aborted, "round {round}\n{s}");
        assert!(back.txns.iter().all(|t| t.status != Status::Info));
        // Once aborted writes are grouped, writing and reading is stable.
        let s2 = text::to_string(&back).unwrap();
        let back2 = text::parse(&s2, None).unwrap();
        assert_eq!(text::to_string(&back2).unwrap(), s2, "round {round}");
    }
}

fn key(rng: &mut Rng, list: bool) -> Key {
    match (list, rng.below(3)) {
        (true, 0) => Key::Int(100 + rng.below(3) as i64),
        (true, _) => Key::str(["l0", "l-1", "list.2"][rng.below(3) as usize]),
        (false, 0) => Key::str(["x", "y z", "w\"q", "1", "é"][rng.below(5) as usize]),
        (false, _) => Key::Int(rng.below(5) as i64 - 1),
    }
}

/// A random Elle-shaped history: registers and lists on separate keys,
/// sessions run one transaction after another, errors with odd characters.
fn elle_history(rng: &mut Rng, timed: bool) -> History {
    let sessions = 1 + rng.below(5);
    let mut clock: Vec<u64> = vec![0; sessions as usize];
    let mut next = 1i64;
    let mut txns = Vec::new();
    for i in 0..1 + rng.below(30) {
        let s = rng.below(sessions);
        let mut ops = Vec::new();
        for _ in 0..rng.below(6) {
            next += 1;
            let list = rng.chance(50);
            let k = key(rng, list);
            ops.push(match (list, rng.chance(50)) {
                (false, true) => Op::Write {
                    key: k,
                    value: next,
                },
                (false, false) => Op::Read {
                    key: k,
                    value: rng.chance(70).then_some(next),
                },
                (true, true) => Op::Append {
                    key: k,
                    value: next,
                },
                (true, false) => Op::ReadList {
                    key: k,
                    values: Some((0..rng.below(4)).map(|j| j as i64 * 3 - 2).collect()),
                },
            });
        }
        let mut t = Txn::new(i, s, status(rng), ops);
        if timed {
            let start = clock[s as usize] + rng.below(50);
            let end = start + rng.below(50);
            clock[s as usize] = end;
            t.start = Some(start);
            t.end = (t.status != Status::Info || rng.chance(50)).then_some(end);
        }
        if t.status != Status::Ok || rng.chance(10) {
            t.error = Some(
                ["40001: \"serialization\"", "timeout\n", "✗ \\ \t"][rng.below(3) as usize].into(),
            );
        }
        txns.push(t);
    }
    History::from_txns(txns)
}

/// What Elle EDN keeps of a transaction.
fn elle_view(t: &Txn, timed: bool) -> (Status, Vec<Op>, Option<u64>, Option<u64>, Option<String>) {
    let ops = match t.status {
        Status::Ok => t.ops.clone(),
        _ => t.ops.iter().filter(|o| !o.is_read()).cloned().collect(),
    };
    let start = if timed { t.start } else { None };
    let end = if timed && t.status != Status::Info {
        t.end
    } else {
        None
    };
    (
        t.status,
        ops,
        start,
        end,
        t.error.as_deref().map(str::to_string),
    )
}

/// Transactions by (session, position in session).
fn by_session(h: &History) -> BTreeMap<(u64, usize), &Txn> {
    let mut pos: BTreeMap<u64, usize> = BTreeMap::new();
    h.txns
        .iter()
        .map(|t| {
            let p = pos.entry(t.session).or_default();
            *p += 1;
            ((t.session, *p - 1), t)
        })
        .collect()
}

#[test]
fn elle_edn_round_trip() {
    let mut rng = Rng(11);
    for round in 0..500 {
        let timed = round % 3 != 0;
        let h = elle_history(&mut rng, timed);
        let s = elle_edn::to_string(&h).unwrap();
        let back = elle_edn::parse(&s, None).unwrap_or_else(|e| panic!("round {round}: {e}\n{s}"));
        let (want, got) = (by_session(&h), by_session(&back));
        assert_eq!(want.len(), got.len(), "round {round}\n{s}");
        for (slot, t) in &want {
            let b = got[slot];
            assert_eq!(
                elle_view(t, timed),
                elle_view(b, timed),
                "round {round} {slot:?}\n{s}"
            );
            assert_eq!(
                b.end.is_none(),
                b.status == Status::Info || !timed || t.end.is_none()
            );
        }
        // And through the file-level API, with auto-detection.
        let back2 = formats::parse(s.as_bytes(), Format::Auto, None).unwrap();
        assert_eq!(back, back2);
    }
}

#[test]
fn jsonl_round_trip_through_the_format_api() {
    let mut rng = Rng(3);
    let dir = std::env::temp_dir().join(format!("isoharness-formats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for round in 0..20 {
        let h = elle_history(&mut rng, true);
        let path = dir.join(format!("h{round}.jsonl"));
        formats::write(&h, &path, Format::Jsonl).unwrap();
        assert_eq!(formats::detect(&path).unwrap(), Format::Jsonl);
        assert_eq!(formats::read(&path, Format::Auto).unwrap(), h);
        let path = dir.join(format!("h{round}.edn"));
        formats::write(&h, &path, Format::ElleEdn).unwrap();
        assert_eq!(formats::detect(&path).unwrap(), Format::ElleEdn);
        assert_eq!(
            formats::read(&path, Format::Auto).unwrap().txns.len(),
            h.txns.len()
        );
    }
    let h = register_history(&mut rng);
    let path = dir.join("h.txt");
    formats::write(&h, &path, Format::Text).unwrap();
    assert_eq!(formats::detect(&path).unwrap(), Format::Text);
    // Formats without an exporter refuse before creating anything.
    let e = formats::write(&h, &dir.join("h.bincode"), Format::Dbcop).unwrap_err();
    assert!(e.to_string().contains("cannot be written"), "{e}");
    assert!(!dir.join("h.bincode").exists());
    // What the text format cannot express is refused with the transaction.
    let lists = elle_history(&mut Rng(5), false);
    if lists.has_lists() {
        let e = formats::write(&lists, &dir.join("bad.txt"), Format::Text).unwrap_err();
        assert!(e.to_string().contains("cannot be written as text"), "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
