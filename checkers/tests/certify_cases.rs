//! Hand-written certificates and the rejection each must get: orders, sessions, real time, cycles, findings, lists.

use checkers::certify::*;
use checkers::exhaustive::registers as oracle;
use checkers::AnomalyKind;
use checkers_testkit::brute::some_witness;
use checkers_testkit::build::{a, r, rl, rq, t, timed, w};
use checkers_testkit::certs::{cert, edge, keyless, ok_schedule, ok_serial, refute, rw};
use history::{History, Key, Level, Status};

/// Asserts that `r` refutes `h` at each of `at`, and that it is no
/// refutation at `not`, which allows what it shows.
fn refutes_only(h: &History, r: &Refutation, at: &[Level], not: Level) {
    for &l in at {
        refute(h, l, r.clone()).unwrap_or_else(|e| panic!("{l}: {e}"));
    }
    let e = refute(h, not, r.clone()).unwrap_err();
    assert!(matches!(e, CertError::NotForbidden { .. }), "{not}: {e}");
    eprintln!("{e}");
}

#[test]
fn a_wrong_serial_order_and_a_stale_read_are_rejected() {
    let h = History::from_txns(vec![
        t(0, 0, vec![w(1, 1)]),
        t(1, 1, vec![r(1, Some(1)), w(1, 2)]),
        t(2, 2, vec![r(1, Some(1))]),
    ]);
    ok_serial(&h, Level::Ser, &[0, 2, 1]).unwrap();
    let e = ok_serial(&h, Level::Ser, &[1, 0, 2]).unwrap_err();
    assert!(
        matches!(e, CertError::WrongRead { txn: 1, op: 0, .. }),
        "{e}"
    );
    // T2 reads a stale 1 after T1 installed 2.
    let e = ok_serial(&h, Level::Ser, &[0, 1, 2]).unwrap_err();
    assert!(matches!(e, CertError::WrongRead { txn: 2, .. }), "{e}");
    eprintln!("{e}");
    assert!(matches!(
        ok_serial(&h, Level::Ser, &[0, 2]).unwrap_err(),
        CertError::MissingOk(1)
    ));
    assert!(matches!(
        ok_serial(&h, Level::Ser, &[0, 2, 1, 0]).unwrap_err(),
        CertError::Duplicate(0)
    ));
    assert!(matches!(
        ok_serial(&h, Level::Ser, &[0, 2, 7]).unwrap_err(),
        CertError::NoSuchTxn(7)
    ));
    let e = verify(
        &h,
        &cert(Level::Si, false, Claim::Ok(Witness::Serial(vec![0, 2, 1]))),
    )
    .unwrap_err();
    assert!(matches!(e, CertError::WrongWitness { .. }));
    let mut failed = h.clone();
    failed.txns[2].status = Status::Fail;
    assert!(matches!(
        ok_serial(&failed, Level::Ser, &[0, 2, 1]).unwrap_err(),
        CertError::FailIncluded(2)
    ));
}

#[test]
fn session_and_real_time_violations_are_rejected() {
    // Same session: T0 then T1; T1 read x absent, so only [1, 0] works.
    let h = History::from_txns(vec![t(0, 0, vec![w(1, 1)]), t(1, 0, vec![r(1, None)])]);
    ok_serial(&h, Level::Ser, &[1, 0]).unwrap();
    let e = ok_serial(&h, Level::StrongSessionSer, &[1, 0]).unwrap_err();
    assert_eq!(
        e,
        CertError::SessionOrder {
            before: 0,
            after: 1
        }
    );
    let s = [(1, false), (0, false), (0, true), (1, true)];
    ok_schedule(&h, Level::Si, false, &s).unwrap();
    assert!(matches!(
        ok_schedule(&h, Level::StrongSessionSi, false, &s),
        Err(CertError::SessionOrder { .. })
    ));
    // Real time: different sessions, T0 ended before T1 started.
    let h = History::from_txns(vec![
        timed(t(0, 0, vec![w(1, 1)]), 1, 2),
        timed(t(1, 1, vec![r(1, None)]), 3, 4),
    ]);
    ok_serial(&h, Level::StrongSessionSer, &[1, 0]).unwrap();
    let e = ok_serial(&h, Level::Sser, &[1, 0]).unwrap_err();
    assert_eq!(
        e,
        CertError::RealTime {
            before: 0,
            after: 1
        }
    );
    eprintln!("{e}");
    let s = [(1, false), (1, true), (0, false), (0, true)];
    let e = ok_schedule(&h, Level::StrongSi, false, &s).unwrap_err();
    assert!(matches!(e, CertError::RealTime { .. }));
    // Real time and sessions as refutation edges.
    let cyc = Refutation::Cycle(vec![
        keyless(0, 1, EdgeClaim::Rt),
        rw(1, 0, None, WwWhy::ReadModifyWrite, 1),
    ]);
    refutes_only(&h, &cyc, &[Level::Sser, Level::StrongSi], Level::Ser);
}

#[test]
fn first_committer_wins_is_enforced() {
    // Both read x = 0 and write x: a lost update.
    let h = History::from_txns(vec![
        t(0, 0, vec![w(1, 1)]),
        t(1, 1, vec![r(1, Some(1)), w(1, 2)]),
        t(2, 2, vec![r(1, Some(1)), w(1, 3)]),
    ]);
    let s = [
        (0, false),
        (0, true),
        (1, false),
        (2, false),
        (1, true),
        (2, true),
    ];
    let e = ok_schedule(&h, Level::Si, false, &s).unwrap_err();
    assert_eq!(
        e,
        CertError::FirstCommitterWins {
            txn: 2,
            other: 1,
            key: Key::Int(1)
        }
    );
    eprintln!("{e}");
    let lu = Refutation::LostUpdate {
        key: Key::Int(1),
        base: Some(0),
        a: 1,
        b: 2,
    };
    let at = [Level::Si, Level::Ser, Level::Sser, Level::StrongSessionSi];
    refutes_only(&h, &lu, &at, Level::Pc);
    let wrong = Refutation::LostUpdate {
        key: Key::Int(1),
        base: None,
        a: 1,
        b: 2,
    };
    assert!(matches!(
        refute(&h, Level::Si, wrong).unwrap_err(),
        CertError::BadLostUpdate { .. }
    ));
    // A G0-style cycle of ww edges is not available; the lost update as a
    // cycle: T1 -rw-> T2 -rw-> T1 (adjacent rw edges: ser only).
    let g2 = Refutation::Cycle(vec![
        rw(1, 2, Some(0), WwWhy::ReadModifyWrite, 1),
        rw(2, 1, Some(0), WwWhy::ReadModifyWrite, 1),
    ]);
    refutes_only(&h, &g2, &[Level::Ser], Level::Si);
}

#[test]
fn g_single_and_write_skew() {
    // G-single (read skew): T1 reads x=1 (T0's), T2 overwrites x and y,
    // T1 reads y = 2 (T2's).
    let h = History::from_txns(vec![
        t(0, 0, vec![w(1, 1), w(2, 1)]),
        t(1, 1, vec![r(1, Some(1)), r(2, Some(2))]),
        t(2, 2, vec![r(1, Some(1)), w(1, 2), w(2, 2)]),
    ]);
    let g_single = Refutation::Cycle(vec![
        rw(1, 2, Some(0), WwWhy::ReadModifyWrite, 1),
        edge(2, 1, EdgeClaim::Wr, 2),
    ]);
    for l in [Level::Si, Level::Ser, Level::StrongSi] {
        refute(&h, l, g_single.clone()).unwrap();
    }
    assert!(oracle::satisfies(&h, Level::Si) == Some(false));
    // Write skew: both read both keys absent and write one each.
    let ws = History::from_txns(vec![
        t(0, 0, vec![r(1, None), r(2, None), w(1, 1)]),
        t(1, 1, vec![r(1, None), r(2, None), w(2, 2)]),
    ]);
    let cyc = Refutation::Cycle(vec![
        rw(0, 1, None, WwWhy::FirstWriter, 2),
        rw(1, 0, None, WwWhy::FirstWriter, 1),
    ]);
    refutes_only(&ws, &cyc, &[Level::Ser], Level::Si);
    // The predicate version (G2): each read the range 1..=2 empty.
    let g2 = History::from_txns(vec![
        t(0, 0, vec![rq(1, 2, &[]), w(1, 1)]),
        t(1, 1, vec![rq(1, 2, &[]), w(2, 2)]),
    ]);
    refute(&g2, Level::Ser, cyc.clone()).unwrap();
    assert!(refute(&g2, Level::Si, cyc).is_err());
    assert!(!some_witness(&g2, Level::Ser, false));
    assert!(some_witness(&g2, Level::Si, false));
    // The same as a sub-history.
    let sub = Refutation::SubHistory(vec![0, 1]);
    refute(&ws, Level::Ser, sub.clone()).unwrap();
    assert!(matches!(
        refute(&ws, Level::Si, sub).unwrap_err(),
        CertError::SubHistoryHolds { .. }
    ));
    // And a schedule proves si.
    ok_schedule(
        &ws,
        Level::Si,
        false,
        &[(0, false), (1, false), (0, true), (1, true)],
    )
    .unwrap();
}

#[test]
fn fake_edges_are_rejected() {
    let h = History::from_txns(vec![
        t(0, 0, vec![w(1, 1)]),
        t(1, 1, vec![r(1, None), w(1, 2)]),
        t(2, 2, vec![r(1, Some(1))]),
    ]);
    let bad = |edges| refute(&h, Level::Ser, Refutation::Cycle(edges)).unwrap_err();
    // T1 did not read T0's x.
    let e = bad(vec![
        edge(0, 1, EdgeClaim::Wr, 1),
        edge(1, 0, EdgeClaim::Wr, 1),
    ]);
    assert!(matches!(e, CertError::BadEdge { index: 0, .. }), "{e}");
    eprintln!("{e}");
    // A ww read-modify-write whose target did not read the source.
    let e = bad(vec![
        edge(0, 1, EdgeClaim::Ww(WwWhy::ReadModifyWrite), 1),
        rw(1, 0, None, WwWhy::ReadModifyWrite, 1),
    ]);
    assert!(matches!(e, CertError::BadEdge { index: 0, .. }), "{e}");
    eprintln!("{e}");
    // Edges that do not connect.
    let e = bad(vec![
        edge(0, 2, EdgeClaim::Wr, 1),
        edge(1, 0, EdgeClaim::Wr, 1),
    ]);
    assert!(matches!(e, CertError::Disconnected { .. }));
    assert_eq!(bad(vec![]), CertError::Disconnected { index: 0, next: 0 });
    assert_eq!(
        verify(&h, &cert(Level::Ser, false, Claim::Anomalous(vec![]))).unwrap_err(),
        CertError::NoRefutation
    );
}

#[test]
fn findings_are_re_derived() {
    let mut failed = t(3, 3, vec![w(2, 7)]);
    failed.status = Status::Fail;
    let h = History::from_txns(vec![
        t(0, 0, vec![w(1, 1), w(1, 2)]),
        t(1, 1, vec![r(1, Some(1)), r(2, Some(7)), r(3, Some(99))]),
        t(
            2,
            2,
            vec![
                r(1, Some(5)),
                w(1, 5),
                w(4, 1),
                r(4, Some(9)),
                r(5, None),
                r(5, Some(2)),
            ],
        ),
        failed,
    ]);
    let f = |kind, txn, op| Refutation::Finding { kind, txn, op };
    for (kind, txn, op) in [
        (AnomalyKind::IntermediateRead, 1, 0),
        (AnomalyKind::AbortedRead, 1, 1),
        (AnomalyKind::ThinAirRead, 1, 2),
        (AnomalyKind::FutureRead, 2, 0),
        (AnomalyKind::NotMyOwnWrite, 2, 3),
    ] {
        for l in Level::ALL {
            refute(&h, l, f(kind, txn, op)).unwrap_or_else(|e| panic!("{kind} at {l}: {e}"));
        }
    }
    // Non-repeatable read: forbidden from ra up, not at rc. (r(5) = 2 is
    // also a thin-air-free read of T0's intermediate value... key 5 is
    // never written, so it is thin air as well.)
    let nrr = f(AnomalyKind::NonRepeatableRead, 2, 5);
    refutes_only(&h, &nrr, &[Level::Ra], Level::Rc);
    // Wrong claims.
    for (kind, txn, op) in [
        (AnomalyKind::ThinAirRead, 1, 0),
        (AnomalyKind::AbortedRead, 1, 0),
        (AnomalyKind::IntermediateRead, 1, 1),
        (AnomalyKind::NotMyLastWrite, 2, 3),
        (AnomalyKind::G1c, 1, 0),
        (AnomalyKind::FutureRead, 1, 0),
    ] {
        let e = refute(&h, Level::Ser, f(kind, txn, op)).unwrap_err();
        assert!(matches!(e, CertError::BadFinding { .. }), "{e}");
    }
}

#[test]
fn weak_witnesses_and_cycles() {
    // rc ok, ra not: T2 reads x from T0, then y from T1; T1 read T0 and
    // wrote x and y.
    let h = History::from_txns(vec![
        t(0, 0, vec![w(1, 1)]),
        t(1, 1, vec![r(1, Some(1)), w(1, 2), w(2, 2)]),
        t(2, 2, vec![r(1, Some(1)), r(2, Some(2))]),
    ]);
    let co = |l| {
        verify(
            &h,
            &cert(l, false, Claim::Ok(Witness::CommitOrder(vec![0, 1, 2]))),
        )
    };
    co(Level::Rc).unwrap();
    let e = co(Level::Ra).unwrap_err();
    assert!(matches!(e, CertError::Axiom { .. }), "{e}");
    eprintln!("{e}");
    // A fractured read: T1 -> T0 forced by the ra axiom (T2 read x from T0
    // and read y from T1, which also wrote x), and T0 -wr-> T1.
    let cyc = Refutation::WeakCycle(vec![
        WeakEdge {
            from: 1,
            to: 0,
            why: WeakWhy::Axiom {
                reader: 2,
                op: 0,
                key: Key::Int(1),
                premise: Premise::ReadFrom { key: Key::Int(2) },
            },
        },
        WeakEdge {
            from: 0,
            to: 1,
            why: WeakWhy::Wr { key: Key::Int(1) },
        },
    ]);
    for l in [Level::Ra, Level::Cc, Level::Pc] {
        refute(&h, l, cyc.clone()).unwrap();
    }
    assert!(refute(&h, Level::Rc, cyc.clone()).is_err());
    assert!(refute(&h, Level::Ser, cyc).is_err());
    // pc through a sub-history.
    refute(&h, Level::Pc, Refutation::SubHistory(vec![0, 1, 2])).unwrap();
    assert!(refute(&h, Level::Rc, Refutation::SubHistory(vec![0, 1, 2])).is_err());
}

#[test]
fn lists_replay_and_list_order_edges() {
    let h = History::from_txns(vec![
        t(0, 0, vec![a(1, 1)]),
        t(1, 1, vec![rl(1, &[1]), a(1, 2), rl(1, &[1, 2])]),
        t(2, 2, vec![rl(1, &[1, 2])]),
        t(3, 3, vec![rl(1, &[2])]),
    ]);
    ok_serial(&h, Level::Ser, &[0, 1, 2, 3]).unwrap_err();
    let g = History::from_txns(h.txns[..3].to_vec());
    ok_serial(&g, Level::Ser, &[0, 1, 2]).unwrap();
    assert!(matches!(
        ok_serial(&g, Level::Ser, &[0, 2, 1]).unwrap_err(),
        CertError::WrongRead { txn: 2, .. }
    ));
    verify(
        &g,
        &cert(
            Level::Cc,
            false,
            Claim::Ok(Witness::CommitOrder(vec![0, 1, 2])),
        ),
    )
    .unwrap();
    let s = [
        (0, false),
        (0, true),
        (1, false),
        (1, true),
        (2, false),
        (2, true),
    ];
    ok_schedule(&g, Level::Si, false, &s).unwrap();
    // Incompatible orders: [1, 2] and [2].
    refute(
        &h,
        Level::Rc,
        Refutation::Finding {
            kind: AnomalyKind::IncompatibleOrder,
            txn: 3,
            op: 0,
        },
    )
    .unwrap();
    // ListOrder edges: T0's element before T1's.
    let list_order = |h: &History, from, to| {
        let e = edge(from, to, EdgeClaim::Ww(WwWhy::ListOrder), 1);
        verify_edge_claim(h, Level::Ser, false, &e)
    };
    list_order(&h, 0, 1).unwrap();
    // On the consistent history, the opposite order has no evidence.
    assert!(list_order(&g, 1, 0).is_err());
    list_order(&g, 0, 1).unwrap();
    // A read that shows T0's element and none of a committed appender's
    // orders them too: lists only grow.
    let late = History::from_txns(vec![
        t(0, 0, vec![a(1, 1)]),
        t(1, 1, vec![rl(1, &[1])]),
        t(2, 2, vec![a(1, 2)]),
    ]);
    list_order(&late, 0, 2).unwrap();
    assert!(list_order(&late, 2, 0).is_err());
}

#[test]
fn certificates_round_trip_through_json() {
    let c = cert(
        Level::StrongSi,
        true,
        Claim::Anomalous(vec![
            Refutation::Cycle(vec![ClaimedEdge {
                from: 0,
                to: 1,
                kind: EdgeClaim::Rw {
                    read_from: Some(2),
                    why: WwWhy::Chain(vec![(3, WwWhy::ReadModifyWrite), (1, WwWhy::DbTs)]),
                },
                key: Some(Key::str("x")),
            }]),
            Refutation::LostUpdate {
                key: Key::Int(1),
                base: None,
                a: 0,
                b: 1,
            },
            Refutation::WeakCycle(vec![WeakEdge {
                from: 0,
                to: INIT,
                why: WeakWhy::Axiom {
                    reader: 1,
                    op: 0,
                    key: Key::Int(1),
                    premise: Premise::Path(vec![]),
                },
            }]),
        ]),
    );
    let s = serde_json::to_string(&c).unwrap();
    let back: Certificate = serde_json::from_str(&s).unwrap();
    assert_eq!(back, c);
    let w = cert(Level::Ser, false, Claim::Ok(Witness::Serial(vec![2, 0, 1])));
    let s = serde_json::to_string(&w).unwrap();
    assert_eq!(serde_json::from_str::<Certificate>(&s).unwrap(), w);
}
