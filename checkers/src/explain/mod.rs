//! Turning what the checker found into counterexamples a person can read:
//! the transactions involved with their ops, and one sentence of evidence
//! for each edge ("T40 read x7=5 written by T12 and then wrote x7=9").
//! Also Graphviz output.
//!
//! Enters: what the deciding stage found (cycles, findings, divergences,
//! over the [`Index`]). Leaves: [`Anomaly`]s for the [`Report`](crate::report::Report),
//! and, in [`evidence`], the verdict as a certificate for
//! [`certify`](crate::certify), the last stage. The deciding stage calls in
//! here as it shrinks its counterexamples; [`check`](mod@crate::check)
//! calls it to assemble the report.

pub mod evidence;

use std::fmt::Write as _;

use history::{Key, Op, Value};

use crate::anomaly::{AnomalyKind, CommonName, Scope};
use crate::decide::cycles::{classify, Cycle};
use crate::decide::depgraph::{Dep, TxnEdge, Why};
use crate::index::{Finding, Index, INIT};
use crate::report::{Anomaly, EdgeKind, EdgeView, TxnView};

/// How to show a transaction: its id in the history, `T<id>`.
fn tn(ix: &Index, t: u32) -> String {
    format!("T{}", ix.history.txns[t as usize].id)
}

/// A transaction with its ops.
pub fn txn_view(ix: &Index, t: u32) -> TxnView {
    let x = &ix.history.txns[t as usize];
    TxnView {
        id: x.id,
        session: x.session,
        status: x.status,
        start: x.start,
        end: x.end,
        ops: x.ops.clone(),
        node: x.node.as_deref().map(str::to_string),
    }
}

fn key<'a>(ix: &'a Index, k: u32) -> &'a Key {
    &ix.keys[k as usize]
}

/// The value `t` installed on key `k`.
fn installed(ix: &Index, t: u32, k: u32) -> Option<Value> {
    ix.writes(t).iter().find(|w| w.key == k).map(|w| w.value)
}

/// The value `t` read of key `k` from `writer`.
fn read_value(ix: &Index, t: u32, k: u32, writer: u32) -> Option<Option<Value>> {
    ix.reads(t)
        .iter()
        .find(|r| r.key == k && r.writer == writer)
        .map(|r| r.value)
}

/// A value as shown in a sentence: `absent`, the raw value, and for a
/// history the harness recorded its write id decoded: `4294967297 (s1#1)`.
fn show(ix: &Index, v: Option<Value>) -> String {
    let ids = crate::report::has_write_ids(ix.history);
    v.map_or_else(
        || "absent".to_string(),
        |v| crate::report::value_text(v, ids),
    )
}

/// One edge with its evidence.
pub fn edge_view(ix: &Index, e: &TxnEdge) -> EdgeView {
    let (from, to, l) = (e.from, e.to, e.label);
    let h = ix.history;
    // The two ends as shown.
    let (f, t) = (tn(ix, from), tn(ix, to));
    // How a read of the key is told: a range read's or a plain one.
    let how = if l.predicate {
        "'s range read saw"
    } else {
        " read"
    };
    let (kind, k, reason) = match l.dep {
        Dep::Wr => {
            let v = read_value(ix, to, l.key, from).flatten();
            (
                EdgeKind::Wr,
                Some(l.key),
                format!(
                    "{t}{how} {}={}, written by {f}",
                    key(ix, l.key),
                    show(ix, v)
                ),
            )
        }
        Dep::Ww => {
            let kk = key(ix, l.key);
            let (a, b) = (
                show(ix, installed(ix, from, l.key)),
                show(ix, installed(ix, to, l.key)),
            );
            let reason = match l.why {
                Why::Rmw => format!("{t} read {kk}={a} written by {f} and then wrote {kk}={b}"),
                Why::FirstWriter => format!(
                    "{f} read {kk} as it was initially and then wrote {kk}={a}: at this level its version is the first, so it precedes {t}'s ({b}); Adya: {f} -rw-> {t}"
                ),
                Why::ListOrder => {
                    format!("a read of list {kk} shows {f}'s append ({a}) before {t}'s ({b})")
                }
                Why::DbTs => {
                    format!("both wrote {kk}, and the database committed {f} before {t}")
                }
                _ => format!(
                    "both wrote {kk}; this version order ({a} before {b}) is the one left once the others are refuted",
                ),
            };
            (EdgeKind::Ww, Some(l.key), reason)
        }
        Dep::Rw => {
            let kk = key(ix, l.key);
            let v = read_value(ix, from, l.key, l.read_from).flatten();
            let nv = show(ix, installed(ix, to, l.key));
            let reason = if l.read_from == INIT && l.why != Why::Chosen {
                format!("{f}{how} {kk} as absent, and {t} wrote the first version of {kk} ({nv})")
            } else {
                let which = if l.why == Why::Chosen {
                    "a later"
                } else {
                    "the next"
                };
                format!(
                    "{f}{how} {kk}={} (written by {}), and {t} wrote {which} version of {kk} ({nv})",
                    show(ix, v),
                    tn(ix, l.read_from)
                )
            };
            (EdgeKind::Rw, Some(l.key), reason)
        }
        Dep::So => (
            EdgeKind::So,
            None,
            format!(
                "{f} comes before {t} in session {}",
                h.txns[from as usize].session
            ),
        ),
        Dep::Ts => {
            // A timestamp edge joins two of the database's events: a begin
            // (which takes the snapshot) or a commit; the label's key says
            // which (bit 0: the source's commit, bit 1: the target's).
            let d = |t: u32| h.txns[t as usize].dbts;
            let event = |x: u32, commit: bool, name: &str| match (d(x), commit) {
                (Some(ts), false) => format!("{name} took its snapshot at {}", ts.start),
                (Some(ts), true) => match ts.commit {
                    Some(c) => format!("the database committed {name} at {c}"),
                    None => format!("{name} committed"),
                },
                (None, _) => format!("{name} ran"),
            };
            let reason = format!(
                "{}, before {}",
                event(from, l.key & 1 == 1, &f),
                event(to, l.key & 2 == 2, &t)
            );
            (EdgeKind::Ts, None, reason)
        }
        Dep::Rt | Dep::RtChain | Dep::Internal => {
            let end = h.txns[from as usize].end.unwrap_or(0);
            let start = h.txns[to as usize].start.unwrap_or(0);
            (
                EdgeKind::Rt,
                None,
                format!("{f} ended (t={end}ns) before {t} started (t={start}ns)"),
            )
        }
    };
    EdgeView {
        from: h.txns[from as usize].id,
        to: h.txns[to as usize].id,
        kind,
        key: k.map(|k| key(ix, k).clone()),
        reason,
    }
}

/// A cycle as an anomaly.
pub fn cycle_anomaly(ix: &Index, c: &Cycle) -> Anomaly {
    let (kind, common) = classify(c);
    let mut order: Vec<u32> = Vec::new();
    for e in &c.edges {
        if !order.contains(&e.from) {
            order.push(e.from);
        }
    }
    let what = match common {
        Some(CommonName::LostUpdate) => "two transactions overwrote the same version".to_string(),
        Some(CommonName::WriteSkew) => "each transaction read what the other overwrote".to_string(),
        Some(CommonName::LongFork) => {
            "two readers saw two independent writes in opposite orders".to_string()
        }
        Some(CommonName::FracturedRead) => {
            "a transaction saw some of another's writes but not all".to_string()
        }
        Some(CommonName::CausalityViolation) => {
            "a transaction saw an effect but missed its cause".to_string()
        }
        Some(CommonName::SessionGuaranteeViolation) => {
            "a session missed the effect of its own earlier transaction".to_string()
        }
        Some(CommonName::StaleRead) => {
            "a transaction missed a write that finished before it started".to_string()
        }
        _ => format!("a dependency cycle ({})", kind.name()),
    };
    let summary = format!("{what}: {}", cycle_text(ix, &c.edges));
    Anomaly {
        kind,
        scope: c.scope,
        common,
        summary,
        txns: order.iter().map(|&t| txn_view(ix, t)).collect(),
        edges: c.edges.iter().map(|e| edge_view(ix, e)).collect(),
        write_ids: crate::report::has_write_ids(ix.history),
    }
}

/// A cycle in one line: `T1 -ww-> T2 -rw-> T1`.
pub fn cycle_text(ix: &Index, edges: &[TxnEdge]) -> String {
    let mut s = String::new();
    for e in edges {
        let l = match e.label.dep {
            Dep::Ww => "ww",
            Dep::Wr => "wr",
            Dep::Rw => "rw",
            Dep::So => "so",
            Dep::Ts => "ts",
            _ => "rt",
        };
        s.push_str(&format!("{} -{l}-> ", tn(ix, e.from)));
    }
    if let Some(e) = edges.first() {
        s.push_str(&tn(ix, e.from));
    }
    s
}

/// The kind, scope and common name of [`finding_anomaly`]'s counterexample,
/// known before it is built (the report counts anomalies by them).
pub fn finding_class(f: &Finding) -> (AnomalyKind, Scope, Option<CommonName>) {
    (f.kind, Scope::Item, None)
}

/// A non-cyclic anomaly as a counterexample.
pub fn finding_anomaly(ix: &Index, f: &Finding) -> Anomaly {
    let t = f.txn;
    let op = &ix.history.txns[t as usize].ops[f.op as usize];
    let kk = key(ix, f.key);
    let read = op_value_of(op, kk);
    let reads = reads_of(ix, t, kk, f.key);
    // The reader and the value it read, as shown.
    let (me, rv) = (tn(ix, t), show(ix, read));
    let other = || tn(ix, f.other.unwrap_or(t));
    let summary = match f.kind {
        AnomalyKind::ThinAirRead => format!("{me} read {kk}={rv} which no transaction wrote"),
        AnomalyKind::AbortedRead => {
            format!("{me} read {kk}={rv} written by {}, which aborted", other())
        }
        AnomalyKind::IntermediateRead => format!(
            "{me} read {kk}={rv} written by {}, which later overwrote it in the same transaction",
            other()
        ),
        AnomalyKind::FutureRead => format!("{me} read {kk}={rv}, a value it only writes later"),
        AnomalyKind::NotMyOwnWrite => {
            format!("{me} wrote {kk} and then read {kk}={rv}, not its own write")
        }
        AnomalyKind::NotMyLastWrite => {
            format!("{me} read {kk}={rv}, its own earlier write, not its last")
        }
        AnomalyKind::NonRepeatableRead if matches!(op, Op::ReadList { .. }) => {
            // Each list read's part before the transaction's own appends:
            // what it saw of the others' appends.
            let mut own = 0usize;
            let mut seen: Vec<String> = Vec::new();
            for o in &ix.history.txns[t as usize].ops {
                match o {
                    Op::Append { key, .. } if key == kk => own += 1,
                    Op::ReadList {
                        key,
                        values: Some(vs),
                    } if key == kk && vs.len() >= own => {
                        let ext = format!("{:?}", &vs[..vs.len() - own]);
                        if own > 0 {
                            seen.push(format!("{ext} under its own appends"));
                        } else {
                            seen.push(ext);
                        }
                    }
                    _ => {}
                }
            }
            let times = match seen.len() {
                2 => "twice".to_string(),
                n => format!("{n} times"),
            };
            format!(
                "{me} read list {kk} {times} and saw different versions of the others' appends: {}",
                seen.join(", then ")
            )
        }
        AnomalyKind::NonRepeatableRead => {
            let seen: Vec<String> = reads
                .iter()
                .map(|(_, v, w)| match w {
                    Some(w) if *w != t => format!("{} (written by {})", show(ix, *v), tn(ix, *w)),
                    _ => show(ix, *v),
                })
                .collect();
            let times = match reads.len() {
                2 => "twice".to_string(),
                n => format!("{n} times"),
            };
            format!(
                "{me} read {kk} {times} with no write of its own between, and got different values: {}",
                seen.join(", then ")
            )
        }
        AnomalyKind::DuplicateWrite => format!(
            "{} and {me} both wrote {kk}={}: written values must be unique per key",
            other(),
            show(ix, op.written().map(|(_, v)| v))
        ),
        AnomalyKind::IncompatibleOrder => format!(
            "{me}'s read of list {kk} does not agree with another read of {kk}: neither is a prefix of the other, or a transaction's appends are split",
        ),
        AnomalyKind::DuplicateElements => format!("{me}'s read of list {kk} holds an element twice"),
        kind => format!("{me} shows {}", kind.name()),
    };
    // The writers whose versions the reader saw, each with its wr edge and
    // the value, so that the drawing is not one lone transaction.
    let mut writers: Vec<u32> = Vec::new();
    let mut edges = Vec::new();
    let nth = |i: usize| match (reads.len(), i) {
        (1, _) => String::new(),
        (_, 0) => "first ".to_string(),
        (_, 1) => "second ".to_string(),
        (_, 2) => "third ".to_string(),
        (_, i) => format!("#{} ", i + 1),
    };
    for (i, (_, v, w)) in reads.iter().enumerate() {
        let Some(w) = *w else { continue };
        if w == t || writers.contains(&w) {
            continue;
        }
        writers.push(w);
        let status = match ix.history.txns[w as usize].status {
            history::Status::Ok => "committed".to_string(),
            history::Status::Fail => "aborted".to_string(),
            history::Status::Info => "its outcome is unknown".to_string(),
        };
        let later = if f.kind == AnomalyKind::IntermediateRead && Some(w) == f.other {
            format!(", which later wrote {kk} again in the same transaction")
        } else {
            String::new()
        };
        edges.push(EdgeView {
            from: ix.history.txns[w as usize].id,
            to: ix.history.txns[t as usize].id,
            kind: EdgeKind::Wr,
            key: Some(kk.clone()),
            reason: format!(
                "{me}'s {}read of {kk} saw {}, written by {} ({status}){later}",
                nth(i),
                show(ix, *v),
                tn(ix, w)
            ),
        });
    }
    if let Some(o) = f.other {
        if o != t && !writers.contains(&o) {
            writers.insert(0, o);
        }
    }
    let mut txns: Vec<TxnView> = writers.iter().map(|&w| txn_view(ix, w)).collect();
    txns.push(txn_view(ix, t));
    let (kind, scope, common) = finding_class(f);
    Anomaly {
        kind,
        scope,
        common,
        summary,
        txns,
        edges,
        write_ids: crate::report::has_write_ids(ix.history),
    }
}

/// Every read of key `k` (id `kid`) in transaction `t`, in order: the op's
/// index, the value seen, and who wrote it (none for the initial version
/// or a value nobody wrote).
fn reads_of(ix: &Index, t: u32, k: &Key, kid: u32) -> Vec<(usize, Option<Value>, Option<u32>)> {
    ix.history.txns[t as usize]
        .ops
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match o {
            Op::Read { key, value } if key == k => Some((i, *value)),
            Op::RangeRead { rows, .. } => rows
                .iter()
                .find(|(rk, _)| rk == k)
                .map(|(_, v)| (i, Some(*v))),
            _ => None,
        })
        .map(|(i, v)| {
            (
                i,
                v,
                v.and_then(|v| ix.writer.get(&(kid, v)).map(|l| l.txn)),
            )
        })
        .collect()
}

/// The value an op shows for key `k` (a read's result, a write's value).
fn op_value_of(op: &Op, k: &Key) -> Option<Value> {
    match op {
        Op::Read { value, .. } => *value,
        Op::ReadList { values, .. } => values.as_ref().and_then(|v| v.last().copied()),
        Op::RangeRead { rows, .. } => rows.iter().find(|(rk, _)| rk == k).map(|(_, v)| *v),
        other => other.written().map(|(_, v)| v),
    }
}

/// Two committed transactions read the same version of a key and both
/// overwrote it: whichever is ordered first, the other's read is stale.
pub fn divergence_anomaly(ix: &Index, k: u32, base: u32, a: u32, b: u32) -> Anomaly {
    let kk = key(ix, k);
    let v = if base == INIT {
        "absent".to_string()
    } else {
        show(ix, installed(ix, base, k))
    };
    let (ta, tb) = (tn(ix, a), tn(ix, b));
    let edge = |from: u32, to: u32, kind: EdgeKind, reason: String| EdgeView {
        from: ix.history.txns[from as usize].id,
        to: ix.history.txns[to as usize].id,
        kind,
        key: Some(kk.clone()),
        reason,
    };
    let mut txns = Vec::new();
    let mut edges = Vec::new();
    if base != INIT {
        txns.push(txn_view(ix, base));
        for t in [a, b] {
            edges.push(edge(
                base,
                t,
                EdgeKind::Ww,
                format!(
                    "{} read {kk}={v} written by {} and then wrote {kk}={}",
                    tn(ix, t),
                    tn(ix, base),
                    show(ix, installed(ix, t, k))
                ),
            ));
        }
    }
    txns.push(txn_view(ix, a));
    txns.push(txn_view(ix, b));
    edges.push(edge(
        b,
        a,
        EdgeKind::Rw,
        format!(
            "if {ta} installed the version right after {kk}={v}, then {tb} read {kk}={v}, which {ta} overwrote (and symmetrically the other way)",
        ),
    ));
    edges.push(edge(
        a,
        b,
        EdgeKind::Ww,
        format!("{tb} then overwrote {ta}'s version of {kk} without having read it"),
    ));
    Anomaly {
        kind: AnomalyKind::GSingle,
        scope: Scope::Item,
        common: Some(CommonName::LostUpdate),
        summary: format!(
            "{ta} and {tb} both read {kk}={v} and both wrote {kk}: one update is lost"
        ),
        txns,
        edges,
        write_ids: crate::report::has_write_ids(ix.history),
    }
}

/// The Graphviz colour of an edge kind.
fn dot_color(k: EdgeKind) -> &'static str {
    match k {
        EdgeKind::Rw => "red",
        EdgeKind::Ww => "blue",
        EdgeKind::Wr => "darkgreen",
        EdgeKind::So => "gray40",
        EdgeKind::Rt => "orange",
        EdgeKind::Ts => "purple",
    }
}

/// What an edge kind means, for legends.
pub fn edge_meaning(k: EdgeKind) -> &'static str {
    match k {
        EdgeKind::Ww => "write-write: overwrote the source's version",
        EdgeKind::Wr => "write-read: read the source's version",
        EdgeKind::Rw => "read-write: overwrote what the source read",
        EdgeKind::So => "session order",
        EdgeKind::Rt => "real-time order",
        EdgeKind::Ts => "the database's timestamps",
    }
}

/// Graphviz DOT of one counterexample. Labels are escaped.
pub fn to_dot(a: &Anomaly) -> String {
    fn esc(s: &str) -> String {
        s.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
    }
    let mut s = String::new();
    let _ = writeln!(s, "digraph anomaly {{");
    let _ = writeln!(
        s,
        "  label=\"{}\";",
        esc(&format!("{}: {}", a.title(), a.summary))
    );
    let _ = writeln!(s, "  labelloc=t; node [shape=box, fontname=\"monospace\"];");
    // The edge colours, for the kinds this graph has.
    let mut kinds: Vec<EdgeKind> = a.edges.iter().map(|e| e.kind).collect();
    kinds.sort();
    kinds.dedup();
    if !kinds.is_empty() {
        let rows: String = kinds
            .iter()
            .map(|&k| {
                format!(
                    "<tr><td><font color=\"{c}\">&#9472;&#9472;&#9654;</font></td><td align=\"left\">{} {}</td></tr>",
                    k.name(),
                    edge_meaning(k),
                    c = dot_color(k)
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "  legend [shape=plaintext, fontname=\"sans-serif\", fontsize=10, label=<<table border=\"0\" cellborder=\"0\" cellspacing=\"0\">{rows}</table>>];"
        );
    }
    for t in &a.txns {
        let ops: Vec<String> = t
            .ops
            .iter()
            .map(|o| crate::report::op_text(o, a.write_ids))
            .collect();
        let _ = writeln!(
            s,
            "  T{} [label=\"{}\"];",
            t.id,
            esc(&format!(
                "T{} (session {}, {})\n{}",
                t.id,
                t.session,
                t.status.as_str(),
                ops.join(" ")
            ))
        );
    }
    for e in &a.edges {
        let color = dot_color(e.kind);
        let k = e.key.as_ref().map(|k| format!(" {k}")).unwrap_or_default();
        let _ = writeln!(
            s,
            "  T{} -> T{} [label=\"{}\", color={color}, tooltip=\"{}\"];",
            e.from,
            e.to,
            esc(&format!("{}{k}", e.kind.name())),
            esc(&e.reason)
        );
    }
    s.push_str("}\n");
    s
}
