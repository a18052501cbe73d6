//! Refutations about whole transactions: a lost update, and a small
//! sub-history that brute force finds inconsistent.
//!
//! * [`Refutation::LostUpdate`]: two committed transactions both read one
//!   version of a key and both overwrote it. In a serial order the later
//!   one must see the earlier one's write; in an SI schedule first
//!   committer wins forces the later one to begin after the earlier one's
//!   commit, so it sees that write too. Not a violation at the weak levels.
//! * [`Refutation::SubHistory`]: a restriction of any valid execution to a
//!   set `S` of transactions is a valid execution of the sub-history that
//!   keeps `S` and only the reads whose value was written inside `S` (the
//!   latest writer before a read, if in `S`, is still the latest in `S`;
//!   session, real-time and first-committer constraints restrict; weak
//!   axiom premises only shrink). So if brute force finds the sub-history
//!   inconsistent, so is the history.

use rustc_hash::FxHashMap as HashMap;

use history::{History, Key, Level, Op, Status, Value};

use super::certificate::*;
use super::context::*;

pub(super) fn verify_lost_update(
    ctx: &Ctx,
    level: Level,
    key: &Key,
    base: Option<u32>,
    a: u32,
    b: u32,
) -> R<()> {
    let fail = |why: String| {
        Err(CertError::BadLostUpdate {
            key: key.clone(),
            a,
            b,
            why,
        })
    };
    if family(level) == Family::Weak {
        return Err(CertError::NotForbidden {
            level,
            why: "lost updates are allowed below si".into(),
        });
    }
    if a == b {
        return fail("the same transaction twice".into());
    }
    for t in [a, b] {
        if !ctx.txn_ok(t) {
            return fail(format!("T{t} is not ok"));
        }
        let ops = &ctx.h.txns[t as usize].ops;
        let read = ctx
            .external_reads(t, key)
            .into_iter()
            .find(|&(_, v)| v == base);
        let Some((o, _)) = read else {
            return fail(format!("T{t} did not read that version of {key}"));
        };
        let writes_after = ops[o as usize + 1..]
            .iter()
            .any(|p| p.written().is_some_and(|(k, _)| k == key));
        if !writes_after {
            return fail(format!("T{t} does not write {key} after reading it"));
        }
    }
    Ok(())
}

pub(super) fn verify_sub_history(h: &History, level: Level, use_dbts: bool, txns: &[u32]) -> R<()> {
    let mut set: Vec<u32> = txns.to_vec();
    set.sort_unstable();
    set.dedup();
    if set.len() != txns.len() {
        return Err(CertError::Duplicate(txns[0]));
    }
    if let Some(&t) = set.iter().find(|&&t| t as usize >= h.txns.len()) {
        return Err(CertError::NoSuchTxn(t));
    }
    let info = set
        .iter()
        .filter(|&&t| h.txns[t as usize].status == Status::Info)
        .count();
    let max = if family(level) == Family::Si {
        MAX_SUB_TXNS_SI
    } else {
        MAX_SUB_TXNS
    };
    if set.len() > max || info > MAX_SUB_INFO {
        return Err(CertError::TooLarge {
            txns: set.len(),
            info,
            max,
        });
    }
    // Writers of each (key, value) over the whole history.
    let mut writers: HashMap<(&Key, Value), Vec<u32>> = HashMap::default();
    for (t, txn) in h.txns.iter().enumerate() {
        for op in &txn.ops {
            if let Some((k, v)) = op.written() {
                writers.entry((k, v)).or_default().push(t as u32);
            }
        }
    }
    // A value nobody wrote is kept: no execution can read it.
    let inside = |k: &Key, v: Value| {
        writers
            .get(&(k, v))
            .is_none_or(|ws| ws.iter().all(|w| set.binary_search(w).is_ok()))
    };
    let register = |op: &Op| {
        matches!(
            op,
            Op::Read { .. } | Op::Write { .. } | Op::Insert { .. } | Op::Delete { .. }
        )
    };
    let list = |op: &Op| matches!(op, Op::Append { .. } | Op::ReadList { .. });
    let all_ops = || set.iter().flat_map(|&t| h.txns[t as usize].ops.iter());
    let lists = all_ops().all(list);
    if !lists && !all_ops().all(register) {
        return Err(CertError::Unsupported(
            "sub-history with range reads, or with lists and registers mixed".into(),
        ));
    }
    let mut sub = Vec::with_capacity(set.len());
    for &t in &set {
        let mut txn = h.txns[t as usize].clone();
        // A register read of a value written outside the set is dropped; a
        // list read keeps the elements appended inside it (what the same
        // read shows in the execution restricted to the set).
        txn.ops.retain(|op| match op {
            Op::Read {
                key,
                value: Some(v),
            } => inside(key, *v),
            _ => true,
        });
        for op in &mut txn.ops {
            if let Op::ReadList {
                key,
                values: Some(vs),
            } = op
            {
                vs.retain(|v| inside(key, *v));
            }
        }
        sub.push(txn);
    }
    let sub = History::from_txns(sub);
    // With the database's timestamps, the restriction of a valid execution
    // keeps them, so the timestamp oracle decides (registers only).
    let decided = match (lists, use_dbts && family(level) != Family::Weak) {
        (true, true) => {
            return Err(CertError::Unsupported(
                "list sub-histories with timestamps".into(),
            ))
        }
        (true, false) => crate::exhaustive::lists::satisfies(&sub, level),
        (false, true) => crate::exhaustive::registers::satisfies_dbts(&sub, level),
        (false, false) => crate::exhaustive::registers::satisfies(&sub, level),
    };
    match decided {
        Some(false) => Ok(()),
        Some(true) => Err(CertError::SubHistoryHolds { txns: set, level }),
        None => Err(CertError::Unsupported(format!(
            "the oracle does not decide {level}"
        ))),
    }
}
