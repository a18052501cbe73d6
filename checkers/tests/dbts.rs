//! White-box checking with the database's own timestamps (`--use-dbts`).

use checkers::{check, CheckOptions, Verdict};
use history::{DbTs, History, Key, Level, Op, Status, Txn};

fn txn(id: u64, ops: Vec<Op>, start: u64, commit: Option<u64>) -> Txn {
    let mut t = Txn::new(id, id, Status::Ok, ops);
    t.dbts = Some(DbTs { start, commit });
    t
}
fn r(k: i64, v: Option<i64>) -> Op {
    Op::Read {
        key: Key::Int(k),
        value: v,
    }
}
fn w(k: i64, v: i64) -> Op {
    Op::Write {
        key: Key::Int(k),
        value: v,
    }
}

fn opts(use_dbts: bool) -> CheckOptions {
    CheckOptions {
        use_dbts,
        ..CheckOptions::default()
    }
}

#[test]
fn reads_that_match_the_timestamps_pass() {
    let h = History::from_txns(vec![
        txn(0, vec![w(1, 10)], 1, Some(2)),
        txn(1, vec![w(1, 11)], 3, Some(4)),
        txn(2, vec![r(1, Some(11))], 5, None),
        txn(3, vec![r(1, Some(10))], 3, None),
    ]);
    for l in [Level::Si, Level::Ser] {
        assert_eq!(check(&h, l, &opts(true)).verdict, Verdict::Ok, "{l}");
    }
}

#[test]
fn a_snapshot_that_misses_an_earlier_commit_is_caught_only_with_timestamps() {
    // T2 starts at 5, after T1 committed x=11 at 4, yet reads x=10.
    let h = History::from_txns(vec![
        txn(0, vec![w(1, 10)], 1, Some(2)),
        txn(1, vec![w(1, 11)], 3, Some(4)),
        txn(2, vec![r(1, Some(10))], 5, None),
    ]);
    assert_eq!(
        check(&h, Level::Si, &opts(false)).verdict,
        Verdict::Ok,
        "black-box it is fine"
    );
    let rep = check(&h, Level::Si, &opts(true));
    assert_eq!(rep.verdict, Verdict::Anomalous);
    let a = &rep.anomalies[0];
    assert!(
        a.edges.iter().any(|e| e.kind == checkers::EdgeKind::Ts),
        "{a}"
    );
}

#[test]
fn a_read_from_the_future_is_caught() {
    // T1 reads x=11, which T0 only commits at ts 9, after T1's start at 5.
    let h = History::from_txns(vec![
        txn(0, vec![w(1, 11)], 1, Some(9)),
        txn(1, vec![r(1, Some(11))], 5, None),
    ]);
    assert_eq!(
        check(&h, Level::Si, &opts(true)).verdict,
        Verdict::Anomalous
    );
}
