//! Cyclic refutations: every edge checked against its evidence, then the
//! cycle.
//!
//! * [`Refutation::Cycle`]: every edge is checked against its evidence and
//!   means "in every valid execution, both ends are committed and `from`
//!   comes before `to`" (in the serial order, or, for SI, between the
//!   named begin/commit events; see [`EdgeClaim`]). A cycle of such
//!   orderings is a contradiction. For SI the begin/commit mapping and the
//!   rule that a path may go from a transaction's begin to its own commit
//!   but not back make the same argument with events.
//! * [`Refutation::WeakCycle`]: a cycle of session, read-from and axiom
//!   edges; each axiom edge is re-derived from its read and premise, and
//!   every such edge must be in every valid commit order.

use history::{History, Level, Op, Status};

use super::certificate::*;
use super::common::*;
use super::context::*;

/// Where an edge leaves and enters in the SI begin/commit graph: (from is
/// the commit event, to is the commit event).
pub(super) fn si_nodes(kind: &EdgeClaim) -> (bool, bool) {
    match kind {
        EdgeClaim::Rw { .. } => (false, true),
        EdgeClaim::Ts {
            from_commit,
            to_commit,
        } => (*from_commit, *to_commit),
        _ => (true, false),
    }
}

pub(super) fn verify_cycle(
    ctx: &Ctx,
    level: Level,
    use_dbts: bool,
    edges: &[ClaimedEdge],
) -> R<()> {
    let len = edges.len();
    if len == 0 {
        return Err(CertError::Disconnected { index: 0, next: 0 });
    }
    for i in 0..len {
        if edges[i].to != edges[(i + 1) % len].from {
            return Err(CertError::Disconnected {
                index: i,
                next: (i + 1) % len,
            });
        }
    }
    let fam = family(level);
    for (i, e) in edges.iter().enumerate() {
        let allowed = edge_allowed(level, use_dbts, &e.kind);
        if !allowed {
            return Err(CertError::NotForbidden {
                level,
                why: format!("edge {i} ({:?}) does not order {level} executions", e.kind),
            });
        }
        verify_edge(ctx, use_dbts, e).map_err(|why| CertError::BadEdge {
            index: i,
            from: e.from,
            to: e.to,
            why,
        })?;
    }
    if fam == Family::Si {
        for i in 0..len {
            let (_, into_commit) = si_nodes(&edges[i].kind);
            let (from_commit, _) = si_nodes(&edges[(i + 1) % len].kind);
            if into_commit && !from_commit {
                return Err(CertError::NotForbidden {
                    level,
                    why: format!(
                        "edges {i} and {} meet at T{}'s commit and leave from its begin (e.g. two adjacent rw edges)",
                        (i + 1) % len,
                        edges[i].to
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Does an edge of this kind order the executions of `level`?
pub(super) fn edge_allowed(level: Level, use_dbts: bool, kind: &EdgeClaim) -> bool {
    match (kind, family(level)) {
        (EdgeClaim::Wr | EdgeClaim::So, Family::Weak) => true,
        (_, Family::Weak) => false,
        (EdgeClaim::So, _) => uses_so(level),
        (EdgeClaim::Rt, _) => level.uses_real_time(),
        (EdgeClaim::Ts { .. }, f) => f == Family::Si && use_dbts,
        _ => true,
    }
}

/// Checks one edge's evidence: in every valid execution both ends are
/// committed and `from` precedes `to`.
pub(super) fn verify_edge(ctx: &Ctx, use_dbts: bool, e: &ClaimedEdge) -> Result<(), String> {
    let h = ctx.h;
    let (from, to) = (e.from, e.to);
    if !ctx.in_range(from) || !ctx.in_range(to) {
        return Err("no such transaction".into());
    }
    if from == to && !matches!(e.kind, EdgeClaim::Ts { .. }) {
        return Err("a self edge".into());
    }
    // Every endpoint must commit in every valid execution: ok, or the
    // writer of a value an ok transaction read.
    if !matches!(e.kind, EdgeClaim::Wr) && !ctx.surely_committed(from) {
        return Err(format!("T{from} need not commit"));
    }
    if !ctx.surely_committed(to) {
        return Err(format!("T{to} need not commit"));
    }
    let key = || {
        e.key
            .as_ref()
            .ok_or_else(|| "the edge names no key".to_string())
    };
    let (tf, tt) = (&h.txns[from as usize], &h.txns[to as usize]);
    match &e.kind {
        EdgeClaim::Wr => {
            let k = key()?;
            if ctx.reads_from(to, k, from) {
                Ok(())
            } else {
                Err(format!("T{to} did not read T{from}'s {k}"))
            }
        }
        EdgeClaim::Ww(why) => ctx.ww(from, to, key()?, why, use_dbts),
        EdgeClaim::Rw { read_from, why } => {
            let k = key()?;
            if !ctx.writes_key(to, k) {
                return Err(format!("T{to} does not write {k}"));
            }
            if !ctx
                .external_reads(from, k)
                .iter()
                .any(|&(_, v)| v == *read_from)
            {
                return Err(format!(
                    "T{from} did not read {k}'s version {}",
                    read_from.map_or("initial".to_string(), |w| format!("of T{w}"))
                ));
            }
            match read_from {
                None => Ok(()),
                Some(w) if *w == to => Err("the version read is the target's own".into()),
                Some(w) => ctx.ww(*w, to, k, why, use_dbts),
            }
        }
        EdgeClaim::So => {
            if tf.session == tt.session && from < to {
                Ok(())
            } else {
                Err("not in session order".into())
            }
        }
        EdgeClaim::Rt => match (tf.end, tt.start) {
            // An `info` transaction's end orders nothing: it may have
            // committed after its client gave up.
            _ if tf.status != Status::Ok => Err(format!("T{from} is not ok")),
            (Some(a), Some(b)) if a < b => Ok(()),
            _ => Err(format!("T{from} did not end before T{to} started")),
        },
        EdgeClaim::Ts {
            from_commit,
            to_commit,
        } => {
            let ev = |t: &history::Txn, c: bool| -> Option<u64> {
                let d = t.dbts?;
                if c {
                    d.commit
                } else {
                    Some(d.start)
                }
            };
            match (ev(tf, *from_commit), ev(tt, *to_commit)) {
                (Some(a), Some(b)) if a < b || (a == b && !*from_commit && *to_commit) => Ok(()),
                _ => Err("the timestamps do not order these events".into()),
            }
        }
    }
}

pub(super) fn verify_weak_cycle(ctx: &Ctx, level: Level, edges: &[WeakEdge]) -> R<()> {
    if family(level) != Family::Weak {
        return Err(CertError::NotForbidden {
            level,
            why: "a weak cycle refutes the weak levels only".into(),
        });
    }
    let len = edges.len();
    if len == 0 {
        return Err(CertError::Disconnected { index: 0, next: 0 });
    }
    let into_init = edges.iter().any(|e| e.to == INIT);
    if into_init && len != 1 {
        return Err(CertError::Disconnected { index: 0, next: 0 });
    }
    if !into_init {
        for i in 0..len {
            if edges[i].to != edges[(i + 1) % len].from {
                return Err(CertError::Disconnected {
                    index: i,
                    next: (i + 1) % len,
                });
            }
        }
    }
    for (i, e) in edges.iter().enumerate() {
        weak_edge(ctx, level, e).map_err(|why| CertError::BadEdge {
            index: i,
            from: e.from,
            to: e.to,
            why,
        })?;
    }
    Ok(())
}

/// Checks that `e.from` commits before `e.to` in every valid commit order of
/// `level` (both committed).
pub(super) fn weak_edge(ctx: &Ctx, level: Level, e: &WeakEdge) -> Result<(), String> {
    let h = ctx.h;
    let (from, to) = (e.from, e.to);
    if !ctx.in_range(from) || (to != INIT && !ctx.in_range(to)) {
        return Err("no such transaction".into());
    }
    if from == to {
        return Err("a self edge".into());
    }
    match &e.why {
        WeakWhy::So => {
            if to != INIT
                && ctx.txn_ok(from)
                && ctx.txn_ok(to)
                && h.txns[from as usize].session == h.txns[to as usize].session
                && from < to
            {
                Ok(())
            } else {
                Err("not in session order (both ok)".into())
            }
        }
        WeakWhy::Wr { key } => {
            if to != INIT && ctx.reads_from(to, key, from) {
                Ok(())
            } else {
                Err(format!("T{to} (ok) did not read T{from}'s {key}"))
            }
        }
        WeakWhy::Axiom {
            reader,
            op,
            key,
            premise,
        } => {
            let t3 = *reader;
            if !ctx.txn_ok(t3) || *op as usize >= h.txns[t3 as usize].ops.len() {
                return Err(format!("T{t3} op {op} is not an op of an ok transaction"));
            }
            let Op::Read { key: k, value } = &h.txns[t3 as usize].ops[*op as usize] else {
                return Err("the axiom's read is not a register read".into());
            };
            if k != key {
                return Err(format!("op {op} reads {k}, not {key}"));
            }
            let src = if to == INIT { None } else { Some(to) };
            if !ctx
                .external_reads(t3, key)
                .iter()
                .any(|&(o, v)| o == *op && v == src)
            {
                return Err(format!(
                    "T{t3} op {op} does not read {key} = {} from {}",
                    fmt_opt(*value),
                    src.map_or("the initial version".to_string(), |w| format!("T{w}"))
                ));
            }
            if !ctx.writes_key(from, key) {
                return Err(format!("T{from} does not write {key}"));
            }
            if from == t3 {
                return Err("the reader is not its own premise".into());
            }
            match premise {
                Premise::EarlierRead { op: o2 } => {
                    let earlier = *o2 < *op
                        && h.txns[t3 as usize].ops[*o2 as usize]
                            .key()
                            .is_some_and(|k2| {
                                ctx.external_reads(t3, k2)
                                    .iter()
                                    .any(|&(o, v)| o == *o2 && v == Some(from))
                            });
                    if earlier {
                        Ok(())
                    } else {
                        Err(format!("T{t3} op {o2} is not an earlier read from T{from}"))
                    }
                }
                Premise::Session => {
                    if level == Level::Rc {
                        return Err("rc's axiom has no session premise".into());
                    }
                    weak_edge(
                        ctx,
                        level,
                        &WeakEdge {
                            from,
                            to: t3,
                            why: WeakWhy::So,
                        },
                    )
                }
                Premise::ReadFrom { key: y } => {
                    if level == Level::Rc {
                        return Err("rc's premise must be an earlier read".into());
                    }
                    if ctx.reads_from(t3, y, from) {
                        Ok(())
                    } else {
                        Err(format!("T{t3} did not read {y} from T{from}"))
                    }
                }
                Premise::Path(path) => {
                    if matches!(level, Level::Rc | Level::Ra) {
                        return Err(format!("{level}'s premise is not a causal path"));
                    }
                    if path.is_empty() || path[0].from != from || path[path.len() - 1].to != t3 {
                        return Err(format!("the path does not lead from T{from} to T{t3}"));
                    }
                    for (i, p) in path.iter().enumerate() {
                        if i + 1 < path.len() && p.to != path[i + 1].from {
                            return Err(format!("path steps {i} and {} do not connect", i + 1));
                        }
                        if !matches!(p.why, WeakWhy::So | WeakWhy::Wr { .. }) {
                            return Err("a path step must be so or wr".into());
                        }
                        weak_edge(ctx, level, p).map_err(|w| format!("path step {i}: {w}"))?;
                    }
                    Ok(())
                }
            }
        }
    }
}

/// Checks one claimed cycle edge on its own: `Ok` when the history forces
/// it (both ends committed in every valid execution, `from` first). For
/// tests and tools; [`verify`] checks every edge of a cycle this way.
pub fn verify_edge_claim(h: &History, level: Level, use_dbts: bool, e: &ClaimedEdge) -> R<()> {
    if !edge_allowed(level, use_dbts, &e.kind) {
        return Err(CertError::NotForbidden {
            level,
            why: format!("a {:?} edge does not order {level} executions", e.kind),
        });
    }
    verify_edge(&Ctx::new(h), use_dbts, e).map_err(|why| CertError::BadEdge {
        index: 0,
        from: e.from,
        to: e.to,
        why,
    })
}

/// Checks one weak-cycle edge on its own (see [`verify_edge_claim`]).
pub fn verify_weak_edge(h: &History, level: Level, e: &WeakEdge) -> R<()> {
    weak_edge(&Ctx::new(h), level, e).map_err(|why| CertError::BadEdge {
        index: 0,
        from: e.from,
        to: e.to,
        why,
    })
}
