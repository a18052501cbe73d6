//! List-append histories: the order comes from the lists themselves.

use checkers::{check, AnomalyKind, CheckOptions, CommonName, Verdict};
use checkers_testkit::build::{a, r, rl, w};
use checkers_testkit::WEAK;
use history::{History, Level, Op, Status, Txn};

fn t(id: u64, ops: Vec<Op>) -> Txn {
    Txn::new(id, id, Status::Ok, ops)
}

#[test]
fn a_serial_list_history_is_valid_everywhere() {
    let h = History::from_txns(vec![
        t(0, vec![a("x", 1), a("y", 1)]),
        t(1, vec![rl("x", &[1]), a("x", 2)]),
        t(2, vec![rl("x", &[1, 2]), rl("y", &[1])]),
        t(3, vec![a("y", 2)]),
    ]);
    for l in [Level::Si, Level::Ser, Level::Sser, Level::StrongSessionSi] {
        let rep = check(&h, l, &CheckOptions::default());
        checkers_testkit::assert_certified(&rep, "lists");
        assert_eq!(rep.verdict, Verdict::Ok, "{l}: {}", rep.summary());
    }
}

#[test]
fn incompatible_orders_are_reported() {
    let h = History::from_txns(vec![
        t(0, vec![a("x", 1)]),
        t(1, vec![a("x", 2)]),
        t(2, vec![rl("x", &[1, 2])]),
        t(3, vec![rl("x", &[2, 1])]),
    ]);
    let rep = check(&h, Level::Si, &CheckOptions::default());
    checkers_testkit::assert_certified(&rep, "lists");
    assert_eq!(rep.verdict, Verdict::Anomalous);
    assert!(
        rep.anomalies
            .iter()
            .any(|x| x.kind == AnomalyKind::IncompatibleOrder),
        "{:#?}",
        rep.anomalies
    );
}

#[test]
fn duplicate_elements_are_reported() {
    let h = History::from_txns(vec![t(0, vec![a("x", 1)]), t(1, vec![rl("x", &[1, 1])])]);
    let rep = check(&h, Level::Ser, &CheckOptions::default());
    checkers_testkit::assert_certified(&rep, "lists");
    assert_eq!(rep.verdict, Verdict::Anomalous);
    assert_eq!(rep.anomalies[0].kind, AnomalyKind::DuplicateElements);
}

#[test]
fn lost_append_order_is_a_g_single() {
    // T2 sees T0's x and misses T0's y: a fractured read, with the version
    // orders known from the lists.
    let h = History::from_txns(vec![
        t(0, vec![a("x", 1), a("y", 1)]),
        t(1, vec![rl("x", &[1]), rl("y", &[])]),
        t(2, vec![rl("y", &[1])]),
    ]);
    let rep = check(&h, Level::Si, &CheckOptions::default());
    checkers_testkit::assert_certified(&rep, "lists");
    assert_eq!(rep.verdict, Verdict::Anomalous, "{}", rep.summary());
    assert_eq!(rep.anomalies[0].kind, AnomalyKind::GSingle);
    assert_eq!(rep.anomalies[0].common, Some(CommonName::FracturedRead));
    assert_eq!(rep.method, "known edges");
}

#[test]
fn write_skew_on_lists_passes_si_and_fails_ser() {
    let h = History::from_txns(vec![
        t(0, vec![rl("x", &[]), rl("y", &[]), a("x", 1)]),
        t(1, vec![rl("x", &[]), rl("y", &[]), a("y", 2)]),
        t(2, vec![rl("x", &[1]), rl("y", &[2])]),
    ]);
    assert_eq!(
        check(&h, Level::Si, &CheckOptions::default()).verdict,
        Verdict::Ok
    );
    let rep = check(&h, Level::Ser, &CheckOptions::default());
    checkers_testkit::assert_certified(&rep, "lists");
    assert_eq!(rep.verdict, Verdict::Anomalous);
    assert_eq!(
        rep.anomalies[0].common,
        Some(CommonName::WriteSkew),
        "{}",
        rep.anomalies[0]
    );
}

// ---------------------------------------------------------------------------
// Audit cases: each was misjudged before; the verdict at every level.
// ---------------------------------------------------------------------------

/// A transaction with a session and a status of its own.
fn ts(id: u64, session: u64, status: Status, ops: Vec<Op>) -> Txn {
    Txn::new(id, session, status, ops)
}

/// Asserts the verdict at every level: ok exactly at the levels in `ok`
/// (and that the brute-force list oracle agrees).
fn assert_levels(h: &History, ok: &[Level]) {
    let mut wrong = Vec::new();
    for l in Level::ALL {
        assert_eq!(
            checkers::exhaustive::lists::satisfies(h, l),
            Some(ok.contains(&l)),
            "the oracle at {l}"
        );
        let rep = check(h, l, &CheckOptions::default());
        checkers_testkit::assert_certified(&rep, "lists");
        let want = if ok.contains(&l) {
            Verdict::Ok
        } else {
            Verdict::Anomalous
        };
        if rep.verdict != want {
            wrong.push(format!("{l}: want {want:?}, got {}", rep.summary()));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_read_after_its_own_append_shows_the_version_it_installs() {
    // T3's append went on the empty list (its read shows [3]), yet T4 saw
    // T1's 1 before T3's 3: two versions of x that are not one history, at
    // every level (Elle: incompatible order). A read-committed database
    // holds x from T3's append to its commit; a snapshot store that
    // replays appends at commit would install [1, 3] and show [3].
    let h = History::from_txns(vec![
        t(1, vec![a("x", 1)]),
        t(3, vec![a("x", 3), rl("x", &[3])]),
        t(4, vec![rl("x", &[1, 3])]),
    ]);
    assert_levels(&h, &[]);
    let rep = check(&h, Level::Rc, &CheckOptions::default());
    assert!(
        rep.anomalies
            .iter()
            .any(|x| x.kind == AnomalyKind::IncompatibleOrder),
        "{}",
        rep.summary()
    );
}

#[test]
fn a_read_after_its_own_append_must_end_with_it() {
    let h = History::from_txns(vec![
        t(1, vec![a("x", 1)]),
        t(3, vec![a("x", 3), rl("x", &[3, 1])]),
    ]);
    assert_levels(&h, &[]);
    let rep = check(&h, Level::Rc, &CheckOptions::default());
    checkers_testkit::assert_certified(&rep, "lists");
    assert!(
        rep.anomalies
            .iter()
            .any(|x| x.kind == AnomalyKind::NotMyOwnWrite),
        "{}",
        rep.summary()
    );
}

#[test]
fn an_info_append_seen_mid_list_committed_fractured_read() {
    // T1 (info) appended to x and y; T3 saw its x under T2's append, and
    // missed its y: T1 committed, and T3's read of y is fractured.
    let h = History::from_txns(vec![
        ts(1, 1, Status::Info, vec![a("x", 1), a("y", 1)]),
        ts(2, 2, Status::Ok, vec![a("x", 2)]),
        ts(3, 3, Status::Ok, vec![rl("y", &[]), rl("x", &[1, 2])]),
    ]);
    assert_levels(&h, &[Level::Rc]);
}

#[test]
fn an_info_append_seen_mid_list_committed_session_order() {
    // T1 (info) appended to x; T3 saw it under T5's append, so it
    // committed; T2, after T1 in its session, missed it.
    let h = History::from_txns(vec![
        ts(1, 1, Status::Info, vec![a("x", 1)]),
        ts(2, 1, Status::Ok, vec![rl("x", &[])]),
        ts(5, 5, Status::Ok, vec![a("x", 5)]),
        ts(3, 3, Status::Ok, vec![rl("x", &[1, 5])]),
    ]);
    assert_levels(&h, &[Level::Rc, Level::Si, Level::Ser]);
}

#[test]
fn a_list_read_reads_from_every_element_writer() {
    // T3 read x = [1, 2]: it read from T1 (and T2), then missed T1's y.
    let x_first = History::from_txns(vec![
        t(1, vec![a("x", 1), a("y", 1)]),
        t(2, vec![a("x", 2)]),
        t(3, vec![rl("x", &[1, 2]), rl("y", &[])]),
    ]);
    assert_levels(&x_first, &[]);
    // Reading y first is read committed, and still a fractured read.
    let y_first = History::from_txns(vec![
        t(1, vec![a("x", 1), a("y", 1)]),
        t(2, vec![a("x", 2)]),
        t(3, vec![rl("y", &[]), rl("x", &[1, 2])]),
    ]);
    assert_levels(&y_first, &[Level::Rc]);
    let rep = check(&y_first, Level::Ra, &CheckOptions::default());
    checkers_testkit::assert_certified(&rep, "lists");
    assert_eq!(
        rep.anomalies[0].common,
        Some(CommonName::FracturedRead),
        "{}",
        rep.summary()
    );
}

#[test]
fn the_list_order_is_the_commit_order_at_weak_levels() {
    // T4 read x = [1, 7] from T3, which its session's earlier T2 (that
    // appended 4) precedes: T2's 4 must be in the list.
    let h = History::from_txns(vec![
        ts(1, 1, Status::Ok, vec![a("x", 1)]),
        ts(2, 2, Status::Ok, vec![a("x", 4)]),
        ts(3, 2, Status::Ok, vec![a("x", 7)]),
        ts(4, 4, Status::Ok, vec![rl("x", &[1, 7])]),
    ]);
    // Without session order, T2 may come after T3.
    assert_levels(&h, &[Level::Si, Level::Ser]);
}

#[test]
fn prefix_consistency_is_decided_on_lists() {
    // A long fork: causal, not a prefix of one order.
    let fork = History::from_txns(vec![
        t(1, vec![a("x", 1)]),
        t(2, vec![a("y", 1)]),
        t(3, vec![rl("x", &[1]), rl("y", &[])]),
        t(4, vec![rl("y", &[1]), rl("x", &[])]),
    ]);
    assert_levels(&fork, &[Level::Rc, Level::Ra, Level::Cc]);
    // A lost update: prefix consistent, not snapshot isolation.
    let lost = History::from_txns(vec![
        t(1, vec![a("x", 1)]),
        t(2, vec![rl("x", &[1]), a("x", 2)]),
        t(3, vec![rl("x", &[1]), a("x", 3)]),
        t(4, vec![rl("x", &[1, 2, 3])]),
    ]);
    assert_levels(&lost, WEAK);
}

#[test]
fn a_first_writer_cycle_is_named_by_its_anti_dependency_not_g0() {
    // Seen on Galera at repeatable read without innodb_snapshot_isolation:
    // T1 read the empty list and then appended, yet a later read shows
    // T0's blind append before T1's. Under SI, T1's version must be the
    // first, so T1 -> T0; the list says T0 -> T1. That is no dirty write
    // (G0, forbidden even at rc): Adya's graph has T1 -rw-> T0 there.
    let h = History::from_txns(vec![
        t(0, vec![a("x", 1)]),
        t(1, vec![rl("x", &[]), a("x", 2)]),
        t(2, vec![rl("x", &[1, 2])]),
    ]);
    let rep = check(&h, Level::Si, &CheckOptions::default());
    checkers_testkit::assert_certified(&rep, "first writer");
    assert_eq!(rep.verdict, Verdict::Anomalous, "{}", rep.summary());
    assert!(
        rep.anomalies.iter().all(|x| x.kind != AnomalyKind::G0),
        "{:?}",
        rep.anomalies
    );
    let x = &rep.anomalies[0];
    assert_eq!(x.kind, AnomalyKind::GSingle, "{x:?}");
    assert!(
        x.edges
            .iter()
            .any(|e| e.reason.contains("as it was initially") && e.reason.contains("-rw->")),
        "{x:?}"
    );
    // And read committed holds: nothing here is a dirty write.
    let rc = check(&h, Level::Rc, &CheckOptions::default());
    assert_eq!(rc.verdict, Verdict::Ok, "{}", rc.summary());
}

/// Issue 20, case A1: T1 saw T0's append, then its own append went on the
/// empty list (its read after it shows [2]). At rc too: the list its append
/// went on was read at the append, after [1]: a non-monotonic read, and two
/// versions of x that are not one history (Elle: incompatible order).
#[test]
fn an_append_on_an_older_version_than_one_already_seen_fails_every_level() {
    let h = History::from_txns(vec![
        t(0, vec![a("x", 1)]),
        t(1, vec![rl("x", &[1]), a("x", 2), rl("x", &[2])]),
    ]);
    assert_levels(&h, &[]);
    let rep = check(&h, Level::Rc, &CheckOptions::default());
    assert!(rep.fails.contains(&Level::Rc), "{}", rep.summary());
}

/// Issue 20, case A2: T1 saw T0 (through y), then appended to x on a list
/// without T0's 7: T1 -ww(x)-> T0 -wr(y)-> T1, a G1c that rc forbids. The
/// same with y a register (lists and registers mixed).
#[test]
fn an_append_that_misses_a_writer_already_seen_fails_every_level() {
    let h = History::from_txns(vec![
        t(0, vec![a("x", 7), a("y", 5)]),
        t(1, vec![rl("y", &[5]), a("x", 1), rl("x", &[1])]),
    ]);
    assert_levels(&h, &[]);
    let mixed = History::from_txns(vec![
        t(0, vec![a("x", 7), w("y", 5)]),
        t(1, vec![r("y", Some(5)), a("x", 1), rl("x", &[1])]),
    ]);
    for l in Level::ALL {
        let rep = check(&mixed, l, &CheckOptions::default());
        checkers_testkit::assert_certified(&rep, "lists and registers");
        assert_eq!(rep.verdict, Verdict::Anomalous, "{l}: {}", rep.summary());
        assert!(rep.fails.contains(&Level::Rc), "{l}: {}", rep.summary());
    }
}

/// Where a read after own appends happened decides rc: T1 read y before T0
/// committed and appended to x after, on T0's version. Read committed
/// allows it (T0 committed between T1's statements); read atomic does not
/// (T1 saw T0's x and missed its y).
#[test]
fn a_read_after_own_appends_happened_at_the_first_append() {
    let h = History::from_txns(vec![
        t(0, vec![a("x", 7), a("y", 5)]),
        t(1, vec![rl("y", &[]), a("x", 1), rl("x", &[7, 1])]),
    ]);
    assert_levels(&h, &[Level::Rc]);
    // Appending first: the append went on [7], so T0 had committed, and
    // then T1 read y = []: a non-monotonic read, even at rc.
    let h = History::from_txns(vec![
        t(0, vec![a("x", 7), a("y", 5)]),
        t(1, vec![a("x", 1), rl("y", &[]), rl("x", &[7, 1])]),
    ]);
    assert_levels(&h, &[]);
}
