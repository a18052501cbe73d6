//! Derivations: the proof behind "no version order works" when no single
//! cycle of forced edges shows it.
//!
//! Pruning a polygraph (PolySI) decides, round after round, the commit
//! order of two writers of a common key because the other order would
//! close a cycle with what is already known. A [`Derivation`] writes those
//! decisions down as [`Step`]s, each with the cycle that rules out the
//! other order, and ends with a cycle that no remaining choice avoids.
//!
//! Why each step holds: in every valid execution of the SER or SI family
//! two committed transactions are ordered one way or the other (a serial
//! order; a commit order that is also the version order). If the order
//! `second` before `first` implies an edge (`second →ww first` on a key
//! both write, or `R →rw first` for a transaction `R` that read
//! `second`'s version of it) that, with edges every valid execution has,
//! closes a cycle, then every valid execution has `first` before
//! `second`, and so every edge that order implies. The edges a step's
//! cycle may use are forced edges, checked against their evidence as in a
//! [`Refutation::Cycle`](super::Refutation::Cycle), and edges implied by
//! *earlier* steps, so the argument never goes round in a circle. The final
//! cycle uses both kinds too: it shows that no valid execution exists.
//!
//! Cycles are checked on the graph of the level's model: transactions for
//! the SER family; for the SI family, each transaction's begin and commit
//! events (wr, ww, so, rt edges leave a commit and enter a begin, rw edges
//! leave a begin and enter a commit, and a path may step from a
//! transaction's begin to its own commit).

use super::certificate::{family, CertError, ClaimedEdge, EdgeClaim, Family, R};
pub use super::certificate::{Derivation, ProofEdge, Step};
use super::context::Ctx;
use super::cycles::{edge_allowed, si_nodes, verify_edge};
use history::Level;

/// Checks a derivation against the history at `level`.
pub(super) fn verify(ctx: &Ctx, level: Level, use_dbts: bool, d: &Derivation) -> R<()> {
    let fam = family(level);
    if fam == Family::Weak {
        return Err(CertError::NotForbidden {
            level,
            why: "a derivation of commit orders refutes the ser and si families only".into(),
        });
    }
    // A derivation that does not hold is a failed proof.
    let bad = |why: String| CertError::BadDerivation(why);
    for (i, s) in d.steps.iter().enumerate() {
        for t in [s.first, s.second] {
            if !ctx.in_range(t) || !ctx.surely_committed(t) {
                return Err(bad(format!("step {i}: T{t} need not commit")));
            }
        }
        implied(ctx, s.second, s.first, &s.rejected)
            .map_err(|w| bad(format!("step {i}: the rejected edge: {w}")))?;
        for (j, e) in s.back.iter().enumerate() {
            edge_holds(ctx, level, use_dbts, &d.steps, i, e)
                .map_err(|w| bad(format!("step {i}, edge {j}: {w}")))?;
        }
        let path: Vec<&ClaimedEdge> = s.back.iter().map(ProofEdge::edge).collect();
        closes(fam, &s.rejected, &path).map_err(|w| bad(format!("step {i}: {w}")))?;
    }
    let Some((first, rest)) = d.cycle.split_first() else {
        return Err(bad("an empty final cycle".into()));
    };
    for (j, e) in d.cycle.iter().enumerate() {
        edge_holds(ctx, level, use_dbts, &d.steps, d.steps.len(), e)
            .map_err(|w| bad(format!("final cycle, edge {j}: {w}")))?;
    }
    let path: Vec<&ClaimedEdge> = rest.iter().map(ProofEdge::edge).collect();
    closes(fam, first.edge(), &path).map_err(|w| bad(format!("final cycle: {w}")))
}

/// An edge holds: forced by its evidence, or implied by a step before
/// `before`.
fn edge_holds(
    ctx: &Ctx,
    level: Level,
    use_dbts: bool,
    steps: &[Step],
    before: usize,
    e: &ProofEdge,
) -> Result<(), String> {
    match e {
        ProofEdge::Forced(c) => {
            if !edge_allowed(level, use_dbts, &c.kind) {
                return Err(format!("{:?} does not order {level} executions", c.kind));
            }
            verify_edge(ctx, use_dbts, c)
        }
        ProofEdge::Chosen { step, edge } => {
            let s = steps
                .get(*step as usize)
                .filter(|_| (*step as usize) < before)
                .ok_or_else(|| format!("step {step} does not come before"))?;
            implied(ctx, s.first, s.second, edge)
        }
    }
}

/// `e` is an edge the order `first` before `second` implies.
fn implied(ctx: &Ctx, first: u32, second: u32, e: &ClaimedEdge) -> Result<(), String> {
    let key = e.key.as_ref().ok_or("the edge names no key")?;
    if !ctx.writes_key(first, key) || !ctx.writes_key(second, key) {
        return Err(format!("T{first} and T{second} do not both write {key}"));
    }
    match &e.kind {
        EdgeClaim::Ww(_) if e.from == first && e.to == second => Ok(()),
        EdgeClaim::Rw { read_from, .. }
            if e.to == second && *read_from == Some(first) && e.from != second =>
        {
            if !ctx.surely_committed(e.from) {
                return Err(format!("T{} need not commit", e.from));
            }
            if ctx
                .external_reads(e.from, key)
                .iter()
                .any(|&(_, v)| v == Some(first))
            {
                Ok(())
            } else {
                Err(format!("T{} did not read T{first}'s {key}", e.from))
            }
        }
        _ => Err(format!(
            "not an edge of T{first} before T{second}: {:?} T{} -> T{}",
            e.kind, e.from, e.to
        )),
    }
}

/// A node of the model's graph: a transaction, and for SI whether it is
/// its commit event.
type Node = (u32, bool);

fn ends(fam: Family, e: &ClaimedEdge) -> (Node, Node) {
    match fam {
        Family::Si => {
            let (fc, tc) = si_nodes(&e.kind);
            ((e.from, fc), (e.to, tc))
        }
        _ => ((e.from, false), (e.to, false)),
    }
}

/// `a` then `b` are joined: the same node, or a begin then its own commit.
fn joined(a: Node, b: Node) -> bool {
    a == b || (a.0 == b.0 && !a.1 && b.1)
}

/// `first` followed by `path` is a cycle of the model's graph.
fn closes(fam: Family, first: &ClaimedEdge, path: &[&ClaimedEdge]) -> Result<(), String> {
    let (start, mut at) = ends(fam, first);
    for (j, e) in path.iter().enumerate() {
        let (f, t) = ends(fam, e);
        if !joined(at, f) {
            return Err(format!(
                "edge {j} does not start where the path is (T{})",
                at.0
            ));
        }
        at = t;
    }
    if joined(at, start) {
        Ok(())
    } else {
        Err(format!(
            "the path ends at T{}, not back at T{}",
            at.0, start.0
        ))
    }
}
