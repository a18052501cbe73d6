//! List-append histories: the order comes from the lists themselves.

use checkers::{check, AnomalyKind, CheckOptions, CommonName, Verdict};
use history::{History, Key, Level, Op, Status, Txn};

fn a(k: &str, v: i64) -> Op {
    Op::Append {
        key: Key::str(k),
        value: v,
    }
}
fn r(k: &str, vs: &[i64]) -> Op {
    Op::ReadList {
        key: Key::str(k),
        values: Some(vs.to_vec()),
    }
}
fn t(id: u64, ops: Vec<Op>) -> Txn {
    Txn::new(id, id, Status::Ok, ops)
}

#[test]
fn a_serial_list_history_is_valid_everywhere() {
    let h = History::from_txns(vec![
        t(0, vec![a("x", 1), a("y", 1)]),
        t(1, vec![r("x", &[1]), a("x", 2)]),
        t(2, vec![r("x", &[1, 2]), r("y", &[1])]),
        t(3, vec![a("y", 2)]),
    ]);
    for l in [Level::Si, Level::Ser, Level::Sser, Level::StrongSessionSi] {
        let rep = check(&h, l, &CheckOptions::default());
        assert_eq!(rep.verdict, Verdict::Ok, "{l}: {}", rep.summary());
    }
}

#[test]
fn incompatible_orders_are_reported() {
    let h = History::from_txns(vec![
        t(0, vec![a("x", 1)]),
        t(1, vec![a("x", 2)]),
        t(2, vec![r("x", &[1, 2])]),
        t(3, vec![r("x", &[2, 1])]),
    ]);
    let rep = check(&h, Level::Si, &CheckOptions::default());
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
    let h = History::from_txns(vec![t(0, vec![a("x", 1)]), t(1, vec![r("x", &[1, 1])])]);
    let rep = check(&h, Level::Ser, &CheckOptions::default());
    assert_eq!(rep.verdict, Verdict::Anomalous);
    assert_eq!(rep.anomalies[0].kind, AnomalyKind::DuplicateElements);
}

#[test]
fn lost_append_order_is_a_g_single() {
    // T2 sees T0's x and misses T0's y: a fractured read, with the version
    // orders known from the lists.
    let h = History::from_txns(vec![
        t(0, vec![a("x", 1), a("y", 1)]),
        t(1, vec![r("x", &[1]), r("y", &[])]),
        t(2, vec![r("y", &[1])]),
    ]);
    let rep = check(&h, Level::Si, &CheckOptions::default());
    assert_eq!(rep.verdict, Verdict::Anomalous, "{}", rep.summary());
    assert_eq!(rep.anomalies[0].kind, AnomalyKind::GSingle);
    assert_eq!(rep.anomalies[0].common, Some(CommonName::FracturedRead));
    assert_eq!(rep.method, "known edges");
}

#[test]
fn write_skew_on_lists_passes_si_and_fails_ser() {
    let h = History::from_txns(vec![
        t(0, vec![r("x", &[]), r("y", &[]), a("x", 1)]),
        t(1, vec![r("x", &[]), r("y", &[]), a("y", 2)]),
        t(2, vec![r("x", &[1]), r("y", &[2])]),
    ]);
    assert_eq!(
        check(&h, Level::Si, &CheckOptions::default()).verdict,
        Verdict::Ok
    );
    let rep = check(&h, Level::Ser, &CheckOptions::default());
    assert_eq!(rep.verdict, Verdict::Anomalous);
    assert_eq!(
        rep.anomalies[0].common,
        Some(CommonName::WriteSkew),
        "{}",
        rep.anomalies[0]
    );
}
