//! Certificates: verdicts that carry their own proof, and an independent
//! verifier for them.
//!
//! # What a certificate is
//!
//! The fast checker decides a level with clever machinery (dense indexes,
//! inferred version orders, constraint solving, saturation). A bug there
//! turns into a wrong verdict that nobody can see. A [`Certificate`] is the
//! verdict *together with a proof of it* in a form that is cheap to check:
//!
//! * an `ok` verdict carries a [`Witness`]: an execution (a serial order, an
//!   SI schedule of begin and commit events, or a commit order for the weak
//!   levels) that explains every read of the history;
//! * an `anomalous` verdict carries [`Refutation`]s: a non-cyclic finding
//!   (a read no execution can produce), a cycle of orderings every valid
//!   execution must contain, a lost update, or a small sub-history that is
//!   already inconsistent by brute force.
//!
//! [`verify`] re-checks the proof against the history and the definition of
//! the level, and nothing else.
//!
//! # Why it is separate
//!
//! This module shares no code with the fast checker: it reads the
//! [`history`] types directly, re-derives every read-from and every edge
//! from the ops, and uses only [`AnomalyKind`] for names and
//! [`exhaustive::registers::satisfies`](crate::exhaustive::registers::satisfies) for tiny sub-histories.
//! Its semantics are those of [`oracle`](crate::oracle), checked literally
//! but on one given execution instead of all of them, so the checks stay
//! near-linear (`O(ops log n)`) while the tests compare them with the
//! oracle on thousands of random histories.
//!
//! # What a witness proves
//!
//! A level holds iff *some* execution of its kind explains the history; a
//! witness names one, so checking that it is an execution of the level is
//! a complete proof of `ok`. [`witness`] replays serial orders and SI
//! schedules, [`commit_order`] checks the weak levels' commit orders; each
//! says exactly what it checks.
//!
//! # Where each check is
//!
//! * [`certificate`]: the types (claims, witnesses, refutations, errors);
//! * [`witness`]: replaying a serial order or an SI schedule;
//! * [`commit_order`] (with [`plain`]): the weak levels' commit orders;
//! * [`context`]: the history indexed for the refutations;
//! * [`findings`]: non-cyclic anomalies;
//! * [`cycles`]: cycles and their edges (SER/SI and weak);
//! * [`sub_history`]: lost updates and brute-forced sub-histories;
//! * [`derivation`]: pruning derivations, replayed step by step.
//!
//! Enters: a history and a [`Certificate`] (from the checker's
//! [`evidence`](crate::explain::evidence) or a file); leaves: `Ok(())` or
//! the [`CertError`] that shows the proof wrong. It is the last stage of a
//! check ([`check`](mod@crate::check)); the decide stage imports its types
//! to write proofs, and nothing here imports the checker.
//!
//! # What a refutation proves
//!
//! A refutation shows that *no* execution of the level exists:
//!
//! [`findings`], [`cycles`] and [`sub_history`] say what each kind proves.
//!
//! Range reads are replayed for the SER and SI families (each row listed
//! must be the visible version, and each key visible in the range must be
//! listed); the weak levels and sub-histories return
//! [`CertError::Unsupported`] for them (the oracle handles registers only).
//! `use_dbts` constrains the SER and SI families only; weak witnesses
//! ignore it.

use history::{History, Level};

pub mod certificate;
mod commit_order;
mod common;
mod context;
mod cycles;
pub mod derivation;
mod findings;
pub mod plain;
mod sub_history;
mod witness;

pub use certificate::*;
pub use cycles::{verify_edge_claim, verify_weak_edge};
pub use witness::set_shared_from;

use commit_order::*;
use context::*;
use cycles::*;
use findings::*;
use sub_history::*;
use witness::*;

/// Checks a certificate against the history: `Ok(())` when it proves its
/// claim.
pub fn verify(h: &History, cert: &Certificate) -> Result<(), CertError> {
    verify_prepared(h, cert, None)
}

/// [`verify`], with what [`plain::prepare`] found beforehand (when the
/// certificate is an rc, ra or cc commit order of a plain register
/// history).
pub fn verify_prepared(
    h: &History,
    cert: &Certificate,
    prep: Option<&plain::Prepared>,
) -> Result<(), CertError> {
    if h.txns.len() >= INIT as usize {
        return Err(CertError::Unsupported(
            "more than 2^32-1 transactions".into(),
        ));
    }
    match &cert.claim {
        Claim::Ok(w) => {
            // The linear check; when it does not hold, the general one
            // names the violation.
            if let (Witness::CommitOrder(co), Some(p)) = (w, prep) {
                if plain::covers(cert.level) && plain::holds(h, p, co, cert.level) {
                    return Ok(());
                }
            }
            verify_witness(h, cert.level, cert.use_dbts, w)
        }
        Claim::Anomalous(refs) => {
            if refs.is_empty() {
                return Err(CertError::NoRefutation);
            }
            let ctx = Ctx::new(h);
            for r in refs {
                verify_refutation(&ctx, cert.level, cert.use_dbts, r)?;
            }
            Ok(())
        }
    }
}

/// Checks a weak level's commit order. rc, ra and cc on a plain register
/// history: the fast check ([`plain`]); when it does not hold, the general
/// check names the violation.
fn verify_commit_order(h: &History, level: Level, co: &[u32]) -> R<()> {
    if plain::covers(level) && plain::applies(h) {
        if let Some(p) = plain::prepare(h) {
            if plain::holds(h, &p, co, level) {
                return Ok(());
            }
        }
    }
    verify_commit_order_general(h, level, co)
}

/// Whether one refutation holds at `level` (database timestamps not
/// trusted): the check a search makes before it believes its own proof.
pub fn refutes(h: &History, level: Level, r: Refutation) -> bool {
    verify_each(h, level, false, &[r]).iter().all(|v| v.is_ok())
}

/// Checks each refutation on its own (one shared index of the history), so
/// a caller can tell the ones that hold from the ones that cannot be
/// checked ([`CertError::Unsupported`], [`CertError::TooLarge`]) or fail.
pub fn verify_each(
    h: &History,
    level: Level,
    use_dbts: bool,
    refs: &[Refutation],
) -> Vec<Result<(), CertError>> {
    if h.txns.len() >= INIT as usize {
        return refs
            .iter()
            .map(|_| {
                Err(CertError::Unsupported(
                    "more than 2^32-1 transactions".into(),
                ))
            })
            .collect();
    }
    let ctx = Ctx::new(h);
    refs.iter()
        .map(|r| verify_refutation(&ctx, level, use_dbts, r))
        .collect()
}

/// Checks that `w` is an execution of `level` explaining `h`.
pub fn verify_witness(h: &History, level: Level, use_dbts: bool, w: &Witness) -> R<()> {
    match (family(level), w) {
        (Family::Ser, Witness::Serial(order)) => verify_serial(h, level, use_dbts, order),
        (Family::Si, Witness::Schedule(ev)) => verify_schedule(h, level, use_dbts, ev),
        (Family::Weak, Witness::CommitOrder(co)) => verify_commit_order(h, level, co),
        (_, w) => Err(CertError::WrongWitness {
            witness: match w {
                Witness::Serial(_) => "serial",
                Witness::Schedule(_) => "schedule",
                Witness::CommitOrder(_) => "commit-order",
            },
            level,
        }),
    }
}

fn verify_refutation(ctx: &Ctx, level: Level, use_dbts: bool, r: &Refutation) -> R<()> {
    match r {
        Refutation::Finding { kind, txn, op } => verify_finding(ctx, level, *kind, *txn, *op),
        Refutation::Cycle(edges) => verify_cycle(ctx, level, use_dbts, edges),
        Refutation::LostUpdate { key, base, a, b } => {
            verify_lost_update(ctx, level, key, *base, *a, *b)
        }
        Refutation::SubHistory(txns) => verify_sub_history(ctx.h, level, use_dbts, txns),
        Refutation::WeakCycle(edges) => verify_weak_cycle(ctx, level, edges),
        Refutation::Derivation(d) => derivation::verify(ctx, level, use_dbts, d),
    }
}

#[cfg(test)]
mod tests {
    use super::commit_order::CC_CLOCKS;
    use super::common::Top2;
    use super::*;
    use history::{DbTs, Key, Op, Status, Txn};

    fn w(k: i64, v: i64) -> Op {
        Op::Write {
            key: Key::Int(k),
            value: v,
        }
    }

    fn r(k: i64, v: Option<i64>) -> Op {
        Op::Read {
            key: Key::Int(k),
            value: v,
        }
    }

    fn ok(id: u64, session: u64, ops: Vec<Op>) -> Txn {
        Txn::new(id, session, Status::Ok, ops)
    }

    fn serial(h: &History, level: Level, dbts: bool, o: &[u32]) -> R<()> {
        verify(
            h,
            &Certificate {
                level,
                use_dbts: dbts,
                claim: Claim::Ok(Witness::Serial(o.to_vec())),
            },
        )
    }

    fn schedule(h: &History, level: Level, dbts: bool, ev: &[(u32, bool)]) -> R<()> {
        verify(
            h,
            &Certificate {
                level,
                use_dbts: dbts,
                claim: Claim::Ok(Witness::Schedule(ev.to_vec())),
            },
        )
    }

    /// cc's per-key rows and per-session clocks accept the same commit
    /// orders: the history's own order, lightly shuffled.
    #[test]
    fn cc_rows_and_clocks_agree() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(0xcc);
        let cfg = checkers_testkit::GenConfig {
            max_txns: 10,
            sessions: 3,
            keys: 3,
            max_ops: 4,
            p_info: 0.0,
            p_wild: 0.2,
            max_stale: 4,
            ..checkers_testkit::GenConfig::default()
        };
        let (mut ok, mut axiom) = (0, 0);
        for _ in 0..3000 {
            let h = checkers_testkit::random_history(&mut rng, &cfg);
            let mut co: Vec<u32> = (0..h.txns.len() as u32)
                .filter(|&t| h.txns[t as usize].status == Status::Ok)
                .collect();
            for _ in 0..rng.random_range(0..3) {
                if co.len() > 1 {
                    let i = rng.random_range(0..co.len() - 1);
                    co.swap(i, i + 1);
                }
            }
            let c = Certificate {
                level: Level::Cc,
                use_dbts: false,
                claim: Claim::Ok(Witness::CommitOrder(co)),
            };
            let run = |clocks: bool| {
                CC_CLOCKS.with(|f| f.set(Some(clocks)));
                let r = verify(&h, &c);
                CC_CLOCKS.with(|f| f.set(None));
                r
            };
            let (rows, clocks) = (run(false), run(true));
            assert_eq!(rows.is_ok(), clocks.is_ok(), "{rows:?} vs {clocks:?}");
            match rows {
                Ok(()) => ok += 1,
                Err(CertError::Axiom { .. }) => axiom += 1,
                Err(_) => {}
            }
        }
        assert!(
            ok > 200 && axiom > 200,
            "{ok} accepted, {axiom} broke the axiom"
        );
    }

    #[test]
    fn top2_skips_the_excluded_txn() {
        let mut t = Top2::default();
        assert_eq!(t.best_except(0), None);
        t.add(5, 1);
        t.add(3, 2);
        t.add(4, 3);
        assert_eq!(t.best_except(9), Some((5, 1)));
        assert_eq!(t.best_except(1), Some((4, 3)));
        assert_eq!(t.best_except(3), Some((5, 1)));
    }

    #[test]
    fn real_time_ignores_a_txn_against_itself() {
        // T0's recorded end is before its own start (clock skew): it must
        // not be ordered before itself.
        let mut a = ok(0, 0, vec![w(1, 1)]);
        a.start = Some(10);
        a.end = Some(5);
        let h = History::from_txns(vec![a]);
        serial(&h, Level::Sser, false, &[0]).unwrap();
        schedule(&h, Level::StrongSi, false, &[(0, false), (0, true)]).unwrap();
    }

    #[test]
    fn schedule_structure_is_checked() {
        let h = History::from_txns(vec![ok(0, 0, vec![w(1, 1)]), ok(1, 1, vec![r(1, None)])]);
        let bad = [
            vec![(0, true), (0, false), (1, false), (1, true)],
            vec![(0, false), (0, false), (0, true), (1, false), (1, true)],
            vec![(0, false), (0, true), (0, true), (1, false), (1, true)],
            vec![(0, false), (1, false), (1, true)],
        ];
        for ev in bad {
            let e = schedule(&h, Level::Si, false, &ev).unwrap_err();
            assert!(
                matches!(e, CertError::BadEvents { txn: 0, .. }),
                "{ev:?}: {e}"
            );
        }
        assert_eq!(
            schedule(&h, Level::Si, false, &[(1, false), (1, true)]).unwrap_err(),
            CertError::MissingOk(0)
        );
        schedule(
            &h,
            Level::Si,
            false,
            &[(1, false), (0, false), (1, true), (0, true)],
        )
        .unwrap();
    }

    #[test]
    fn equal_timestamps() {
        // Begin and commit at the same timestamp: the begin comes first, so
        // T1 (begin 2) must not see T0 (commit 2).
        let mut a = ok(0, 0, vec![w(1, 1)]);
        a.dbts = Some(DbTs {
            start: 1,
            commit: Some(2),
        });
        let mut b = ok(1, 1, vec![r(1, None)]);
        b.dbts = Some(DbTs {
            start: 2,
            commit: None,
        });
        let h = History::from_txns(vec![a, b]);
        schedule(
            &h,
            Level::Si,
            true,
            &[(0, false), (1, false), (0, true), (1, true)],
        )
        .unwrap();
        let e = schedule(
            &h,
            Level::Si,
            true,
            &[(0, false), (0, true), (1, false), (1, true)],
        );
        assert!(matches!(e, Err(CertError::WrongRead { .. })));
        // Two commits at one timestamp are unordered.
        let mut c = ok(0, 0, vec![w(1, 1)]);
        c.dbts = Some(DbTs {
            start: 1,
            commit: Some(3),
        });
        let mut d = ok(1, 1, vec![w(2, 1)]);
        d.dbts = Some(DbTs {
            start: 1,
            commit: Some(3),
        });
        let h = History::from_txns(vec![c, d]);
        for ev in [
            [(0, false), (1, false), (0, true), (1, true)],
            [(0, false), (1, false), (1, true), (0, true)],
        ] {
            schedule(&h, Level::Si, true, &ev).unwrap();
        }
        serial(&h, Level::Ser, true, &[1, 0]).unwrap();
    }

    #[test]
    fn range_reads_outside_replay_are_unsupported_and_sub_histories_bounded() {
        let h = History::from_txns(vec![ok(
            0,
            0,
            vec![Op::RangeRead {
                lo: Key::Int(0),
                hi: Key::Int(9),
                rows: Box::new(vec![]),
            }],
        )]);
        serial(&h, Level::Ser, false, &[0]).unwrap();
        let weak = Certificate {
            level: Level::Cc,
            use_dbts: false,
            claim: Claim::Ok(Witness::CommitOrder(vec![0])),
        };
        verify(&h, &weak).unwrap();
        let sub = Certificate {
            level: Level::Ser,
            use_dbts: false,
            claim: Claim::Anomalous(vec![Refutation::SubHistory(vec![0])]),
        };
        assert!(matches!(verify(&h, &sub), Err(CertError::Unsupported(_))));
        let big = History::from_txns((0..10).map(|i| ok(i, 0, vec![w(1, i as i64)])).collect());
        let e = verify(
            &big,
            &Certificate {
                level: Level::Ser,
                use_dbts: false,
                claim: Claim::Anomalous(vec![Refutation::SubHistory((0..10).collect())]),
            },
        )
        .unwrap_err();
        assert_eq!(
            e,
            CertError::TooLarge {
                txns: 10,
                info: 0,
                max: MAX_SUB_TXNS
            }
        );
        eprintln!("{e}");
    }

    #[test]
    fn families() {
        for l in Level::ALL {
            let f = family(l);
            assert_eq!(
                f == Family::Weak,
                matches!(l, Level::Rc | Level::Ra | Level::Cc | Level::Pc)
            );
            // Session order constrains every level but plain si and ser.
            assert_eq!(uses_so(l), !matches!(l, Level::Si | Level::Ser));
        }
    }
}
