//! The index's own tests: read resolution, non-cyclic anomalies, commits.

use super::*;
use checkers_testkit::build::{a, r, rl, w};
use history::Txn;

fn kinds(h: &History) -> Vec<AnomalyKind> {
    Index::new(h).findings.iter().map(|f| f.kind).collect()
}

#[test]
fn resolves_reads_to_writers() {
    let h = History::from_txns(vec![
        Txn::new(0, 0, Status::Ok, vec![w(1, 10), w(2, 20)]),
        Txn::new(1, 1, Status::Ok, vec![r(1, Some(10)), r(2, None), w(2, 21)]),
    ]);
    let ix = Index::new(&h);
    assert!(ix.findings.is_empty());
    let reads = ix.reads(1);
    assert_eq!(reads.len(), 2);
    assert_eq!(reads[0].writer, 0);
    assert_eq!(reads[1].writer, INIT);
    assert_eq!(ix.writes(1).len(), 1);
}

#[test]
fn finds_each_non_cyclic_anomaly() {
    use AnomalyKind::*;
    let thin = History::from_txns(vec![Txn::new(0, 0, Status::Ok, vec![r(1, Some(5))])]);
    assert_eq!(kinds(&thin), vec![ThinAirRead]);
    let aborted = History::from_txns(vec![
        Txn::new(0, 0, Status::Fail, vec![w(1, 5)]),
        Txn::new(1, 1, Status::Ok, vec![r(1, Some(5))]),
    ]);
    assert_eq!(kinds(&aborted), vec![AbortedRead]);
    let inter = History::from_txns(vec![
        Txn::new(0, 0, Status::Ok, vec![w(1, 5), w(1, 6)]),
        Txn::new(1, 1, Status::Ok, vec![r(1, Some(5))]),
    ]);
    assert_eq!(kinds(&inter), vec![IntermediateRead]);
    let future = History::from_txns(vec![Txn::new(
        0,
        0,
        Status::Ok,
        vec![r(1, Some(5)), w(1, 5)],
    )]);
    assert_eq!(kinds(&future), vec![FutureRead]);
    let own = History::from_txns(vec![
        Txn::new(0, 0, Status::Ok, vec![w(1, 4)]),
        Txn::new(1, 1, Status::Ok, vec![w(1, 5), r(1, Some(4))]),
    ]);
    assert_eq!(kinds(&own), vec![NotMyOwnWrite]);
    let last = History::from_txns(vec![Txn::new(
        0,
        0,
        Status::Ok,
        vec![w(1, 4), w(1, 5), r(1, Some(4))],
    )]);
    assert_eq!(kinds(&last), vec![NotMyLastWrite]);
    let nonrep = History::from_txns(vec![
        Txn::new(0, 0, Status::Ok, vec![w(1, 4)]),
        Txn::new(1, 1, Status::Ok, vec![r(1, None), r(1, Some(4))]),
    ]);
    assert_eq!(kinds(&nonrep), vec![NonRepeatableRead]);
    let dup = History::from_txns(vec![
        Txn::new(0, 0, Status::Ok, vec![w(1, 4)]),
        Txn::new(1, 1, Status::Ok, vec![w(1, 4)]),
    ]);
    assert_eq!(kinds(&dup), vec![DuplicateWrite]);
}

#[test]
fn observed_info_transactions_commit_and_aborted_readers_do_not_count() {
    let h = History::from_txns(vec![
        Txn::new(0, 0, Status::Info, vec![w(1, 5)]),
        Txn::new(1, 1, Status::Info, vec![w(2, 6)]),
        Txn::new(2, 2, Status::Ok, vec![r(1, Some(5))]),
        Txn::new(3, 3, Status::Fail, vec![r(2, Some(6)), r(3, Some(99))]),
    ]);
    let ix = Index::new(&h);
    assert_eq!(ix.committed, vec![true, false, true, false]);
    assert_eq!(ix.info_committed, 1);
    assert!(
        ix.findings.is_empty(),
        "a failed txn's thin-air read is not evidence"
    );
}

#[test]
fn a_list_read_after_own_appends_reads_the_rest_externally() {
    let h = History::from_txns(vec![
        Txn::new(0, 0, Status::Ok, vec![a(1, 1)]),
        Txn::new(1, 1, Status::Ok, vec![a(1, 2), a(1, 3), rl(1, &[1, 2, 3])]),
        Txn::new(2, 2, Status::Ok, vec![a(1, 4), rl(1, &[4])]),
    ]);
    let ix = Index::new(&h);
    assert!(ix.findings.is_empty(), "{:?}", ix.findings);
    assert_eq!(ix.reads(1).len(), 1);
    assert_eq!(ix.reads(1)[0].writer, 0);
    assert_eq!(ix.reads(2)[0].writer, INIT);
}

#[test]
fn a_list_read_after_own_appends_must_end_with_them() {
    use AnomalyKind::*;
    let with = |ops: Vec<Op>| {
        kinds(&History::from_txns(vec![
            Txn::new(0, 0, Status::Ok, vec![a(1, 1)]),
            Txn::new(1, 1, Status::Ok, ops),
        ]))
    };
    assert_eq!(with(vec![a(1, 2), rl(1, &[1])]), vec![NotMyOwnWrite]);
    assert_eq!(with(vec![a(1, 2), rl(1, &[2, 1])]), vec![NotMyOwnWrite]);
    assert_eq!(
        with(vec![a(1, 2), a(1, 3), rl(1, &[1, 2])]),
        vec![NotMyLastWrite]
    );
    assert_eq!(
        with(vec![a(1, 2), a(1, 3), rl(1, &[1, 3, 2])]),
        vec![NotMyLastWrite]
    );
    assert_eq!(with(vec![a(1, 2), a(1, 3), rl(1, &[1, 2, 3])]), vec![]);
}

#[test]
fn an_info_append_seen_anywhere_in_a_list_committed() {
    let h = History::from_txns(vec![
        Txn::new(0, 0, Status::Info, vec![a(1, 1)]),
        Txn::new(1, 1, Status::Info, vec![a(1, 2)]),
        Txn::new(2, 2, Status::Ok, vec![rl(1, &[1, 2])]),
        Txn::new(3, 3, Status::Info, vec![a(1, 3)]),
        Txn::new(4, 4, Status::Fail, vec![rl(1, &[3])]),
    ]);
    let ix = Index::new(&h);
    assert_eq!(ix.committed, vec![true, true, true, false, false]);
    assert_eq!(ix.info_committed, 2);
}

#[test]
fn range_reads_read_unlisted_keys_as_absent() {
    let h = History::from_txns(vec![
        Txn::new(0, 0, Status::Ok, vec![w(1, 10), w(3, 30), w(9, 90)]),
        Txn::new(
            1,
            1,
            Status::Ok,
            vec![Op::RangeRead {
                lo: Key::Int(0),
                hi: Key::Int(5),
                rows: Box::new(vec![(Key::Int(1), 10)]),
            }],
        ),
    ]);
    let ix = Index::new(&h);
    let reads = ix.reads(1);
    assert_eq!(reads.len(), 2);
    assert!(reads.iter().all(|r| r.predicate));
    assert_eq!(reads[1].writer, INIT);
    assert_eq!(ix.keys[reads[1].key as usize], Key::Int(3));
}
