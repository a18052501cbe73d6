//! White-box checking with the database's own timestamps (`--use-dbts`).

use checkers::{check, CheckOptions, Verdict};
use checkers_testkit::build::{r, w};
use history::{DbTs, History, Level, Op, Status, Txn};

fn txn(id: u64, ops: Vec<Op>, start: u64, commit: Option<u64>) -> Txn {
    let mut t = Txn::new(id, id, Status::Ok, ops);
    t.dbts = Some(DbTs { start, commit });
    t
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
    checkers_testkit::assert_certified(&rep, "dbts");
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

// ---------------------------------------------------------------------------
// Audit cases: timestamps may fix the version order and each snapshot, but a
// transaction without a timestamp is placed by black-box reasoning, and SER
// never needs the serial order to be the commit order.
// ---------------------------------------------------------------------------

fn with(id: u64, status: Status, ops: Vec<Op>, dbts: Option<DbTs>) -> Txn {
    let mut t = Txn::new(id, id, status, ops);
    t.dbts = dbts;
    t
}

#[test]
fn an_info_writer_without_a_commit_timestamp_is_not_committed_at_its_start() {
    // T1 (info, snapshot at 3, no commit timestamp) wrote x=1. T4's
    // snapshot at 4 missed it and T2's at 6 saw it: T1 committed between 4
    // and 6, which nothing contradicts. Taking T1's start as its commit
    // would make T4's read stale.
    let h = History::from_txns(vec![
        txn(0, vec![w(1, 3)], 1, Some(2)),
        with(
            1,
            Status::Info,
            vec![w(1, 1)],
            Some(DbTs {
                start: 3,
                commit: None,
            }),
        ),
        txn(2, vec![r(1, Some(3))], 4, Some(5)),
        txn(3, vec![r(1, Some(1))], 6, Some(7)),
    ]);
    for l in Level::ALL {
        let rep = check(&h, l, &opts(true));
        checkers_testkit::assert_certified(&rep, "dbts");
        assert_eq!(rep.verdict, Verdict::Ok, "{l}: {rep:?}");
    }
}

#[test]
fn an_ok_writer_without_timestamps_is_not_forced_after_a_timestamped_one() {
    // T0 has no dbts at all; T1 (timestamped) read T0's x and overwrote it.
    let h = History::from_txns(vec![
        with(0, Status::Ok, vec![w(1, 10)], None),
        txn(1, vec![r(1, Some(10)), w(1, 11)], 5, Some(6)),
        txn(2, vec![r(1, Some(11))], 7, Some(8)),
    ]);
    for l in Level::ALL {
        let rep = check(&h, l, &opts(true));
        checkers_testkit::assert_certified(&rep, "dbts");
        assert_eq!(rep.verdict, Verdict::Ok, "{l}: {rep:?}");
    }
}

#[test]
fn ser_does_not_require_the_commit_order() {
    // T1 (start 5, commit 20) reads x as absent; T2 (start 10, commit 15)
    // writes x. Serial order T1, T2 works; SI too (T1's snapshot at 5).
    let h = History::from_txns(vec![
        txn(0, vec![r(1, None)], 5, Some(20)),
        txn(1, vec![w(1, 7)], 10, Some(15)),
    ]);
    for l in [Level::Ser, Level::Si, Level::Sser, Level::StrongSi] {
        let rep = check(&h, l, &opts(true));
        checkers_testkit::assert_certified(&rep, "dbts");
        assert_eq!(rep.verdict, Verdict::Ok, "{l}: {rep:?}");
    }
}

#[test]
fn si_and_ser_with_timestamps_do_not_claim_each_other() {
    // SI with timestamps fails (T1's snapshot at 5 is after T0's commit at
    // 2, yet it missed x=10), but the history is serializable with the
    // version order the timestamps fix: T1 first. Neither verdict may claim
    // the other level.
    let h = History::from_txns(vec![
        txn(0, vec![w(1, 10)], 1, Some(2)),
        txn(1, vec![r(1, None)], 5, Some(6)),
    ]);
    let si = check(&h, Level::Si, &opts(true));
    checkers_testkit::assert_certified(&si, "dbts");
    assert_eq!(si.verdict, Verdict::Anomalous);
    assert!(!si.fails.contains(&Level::Ser), "{:?}", si.fails);
    let ser = check(&h, Level::Ser, &opts(true));
    checkers_testkit::assert_certified(&ser, "dbts");
    assert_eq!(ser.verdict, Verdict::Ok);
    assert!(!ser.satisfies.contains(&Level::Si), "{:?}", ser.satisfies);
}

#[test]
fn equal_timestamps_order_nothing() {
    // Two snapshots at the same timestamp as a commit: begins come first,
    // so both miss it; two commits at one timestamp stay unordered.
    let h = History::from_txns(vec![
        txn(0, vec![w(1, 10)], 1, Some(5)),
        txn(1, vec![w(2, 20)], 2, Some(5)),
        txn(2, vec![r(1, None), r(2, None)], 5, None),
        txn(3, vec![r(1, Some(10)), r(2, Some(20))], 6, None),
    ]);
    assert_eq!(check(&h, Level::Si, &opts(true)).verdict, Verdict::Ok);
}

#[test]
fn a_commit_timestamp_tie_leaves_only_the_tied_writers_unordered() {
    // T0 writes x=1 at commit 1; T1 (x=2, y=2) and T2 (x=3) both commit at
    // 5. T3's snapshot at 6 reads x=1 and y=2: T1 committed before it, and
    // so (x's version order is commit order) x=1 was overwritten. At ser
    // that is a cycle T3 -rw-> T1 -wr-> T3; the tie between T1 and T2 must
    // not drop the order T0 < {T1, T2} on x.
    let h = History::from_txns(vec![
        txn(0, vec![w(1, 1)], 0, Some(1)),
        txn(1, vec![w(1, 2), w(2, 2)], 2, Some(5)),
        txn(2, vec![w(1, 3)], 3, Some(5)),
        txn(3, vec![r(1, Some(1)), r(2, Some(2))], 6, None),
    ]);
    for l in Level::ALL {
        let rep = check(&h, l, &opts(true));
        checkers_testkit::assert_certified(&rep, "dbts tie");
        assert_eq!(rep.certified, checkers::Certified::Checked, "{l}: {rep:?}");
        let holds = checkers::exhaustive::registers::satisfies_dbts(&h, l).unwrap();
        let weak = matches!(l, Level::Rc | Level::Ra | Level::Cc | Level::Pc);
        assert!(weak || !holds, "{l}: the oracle says it holds");
        let want = if holds {
            Verdict::Ok
        } else {
            Verdict::Anomalous
        };
        assert_eq!(rep.verdict, want, "{l}: {rep:?}");
    }
}
