//! Black-box checking of SER and SI (and their session and real-time
//! variants) for any read/write history.
//!
//! The stages of [`check_with_chains`], cheapest first; each decides or
//! passes on:
//!
//! 1. **Known edges.** wr, so, rt and the write-write orders the history
//!    forces (read-modify-writes). A cycle here, or two transactions that
//!    overwrote the same version, is an anomaly under every version order.
//! 2. **Witness.** Sort the known graph topologically, breaking ties by
//!    time (commit order approximates real time in real databases, Viper's
//!    heuristic) or, without times, by layers of read-from and session
//!    order; take each key's version order from it, and check that one
//!    order in linear time. An acyclic graph is a witness. A failed witness
//!    proves nothing.
//! 3. **Pruning by clocks** over the sessions ([`clock_prune`]); for
//!    `si` and `ser`, which ignore sessions, under *assumed* session order:
//!    its `ok` is checked at the level, its contradiction counts only when
//!    its derivation needs no session edge. Otherwise the real anomaly is
//!    looked for in windows around the contradiction
//!    ([`window`](crate::decide::blackbox::window)), and the session edges it used are cut
//!    for another round.
//! 4. **Guided polygraph.** Writers far apart in real time (or in the
//!    guessed order) are assumed ordered; the proposal is checked.
//! 5. **Local search** for a small refuted sub-history around where the
//!    witness failed ([`interpret`](crate::decide::blackbox::interpret)).
//! 6. **Complete polygraph.** One constraint per pair of writers of a key;
//!    prune by reachability until nothing changes; solve what is left
//!    with CDCL plus an acyclicity theory, starting from the witness's
//!    choices.
//!
//! Guesses only ever speed things up: "ok" needs a witness or a model, and
//! "anomalous" needs a contradiction; running out of time gives "unknown".

//!
//! Enters: an [`Index`] and a level ([`check_general`]); leaves a
//! [`General`] verdict. Its files: [`types`] (what it takes and gives,
//! and the [`Search`] the sub-history searches call it back through),
//! [`order`] (witness orders, spans and chains), and this one, the
//! stages in order.

use std::time::Instant;

use history::Level;

use crate::decide::blackbox::acyclic::{Acyclic, FIXED};
use crate::decide::blackbox::clock_prune::{clock_prune, ClockPruned};
use crate::decide::blackbox::polygraph::{
    prune_logged, NodeEdge, Pairs, Polygraph, PruneLog, Pruned,
};
use crate::decide::blackbox::solve::{solve, Solved};
use crate::decide::cycles::{find_cycles, Cycle};
use crate::decide::depgraph::{Dep, DepGraph, Label, Model, Orders, Why};
use crate::index::Index;

pub mod order;
pub mod types;

pub use order::timestamp_chains;
pub use types::{model_of, General, GeneralOptions, Search};

use order::*;
use types::graph_of;

/// Runs the general check of one level.
pub fn check_general(ix: &Index, level: Level, opts: &GeneralOptions) -> General {
    let chains = if opts.use_dbts {
        timestamp_chains(ix)
    } else if ix.lists {
        crate::index::lists::list_orders(ix).chains
    } else {
        Default::default()
    };
    check_with_chains(ix, level, opts, &chains)
}

impl Search for GeneralOptions {
    fn search(&self, ix: &Index, level: Level) -> General {
        check_general(ix, level, self)
    }
}

/// The general check, with the version order of some keys already known.
pub fn check_with_chains(
    ix: &Index,
    level: Level,
    opts: &GeneralOptions,
    chains: &rustc_hash::FxHashMap<u32, Vec<u32>>,
) -> General {
    let model = model_of(level);
    let mut orders = Orders::of(level);
    orders.timestamps = opts.use_dbts;
    let known = match Polygraph::build(ix, model, orders, chains, false, 0) {
        Ok(p) => p,
        Err(_) => unreachable!("no constraints requested"),
    };
    // 1. Forced anomalies.
    let kg = graph_of(&known, known.known.iter().copied());
    let cycles = find_cycles(&kg, orders);
    if !cycles.is_empty() || !known.lost_updates.is_empty() {
        return General::Forced {
            cycles,
            lost: known.lost_updates.clone(),
        };
    }
    // 2. Witness. With client times, the known graph's topological order
    //    breaks ties by time; without, by layers of read-from and session
    //    order (Viper's BFS order), which no file order can mislead.
    let timed = ix
        .history
        .txns
        .iter()
        .any(|t| t.start.is_some() && t.end.is_some());
    let forced = opts.force_fast_paths;
    let ties = if timed { Ties::Time } else { Ties::Layers };
    let order = match topo_order_by(ix, &known, ties) {
        Some(o) => o,
        None => unreachable!("the known graph is acyclic"),
    };
    let mut witness_cycles: Vec<Cycle> = Vec::new();
    if !opts.skip_witness {
        // Without times, the file's order is a second guess (often the
        // commit order); forced fast paths leave it out.
        let file = (!timed && !forced)
            .then(|| topo_order_by(ix, &known, Ties::File))
            .flatten();
        // The database's timestamps, when it gave them, are a first guess
        // (checked like any other).
        let stamped = !opts.use_dbts && ix.history.txns.iter().any(|t| t.dbts.is_some());
        let dbts = stamped
            .then(|| topo_order_by(ix, &known, Ties::DbTs))
            .flatten();
        for guess in dbts.iter().chain(&file).chain(std::iter::once(&order)) {
            match checked_order(ix, model, orders, guess) {
                Ok(schedule) => {
                    return General::Ok {
                        how: "witness",
                        schedule,
                    }
                }
                Err(cycles) if witness_cycles.is_empty() => witness_cycles = cycles,
                Err(_) => {}
            }
        }
        // Second guess: a greedy serial replay (a serial order is also a
        // snapshot-isolation witness). Only with no known chains, which the
        // replay does not consult.
        if chains.is_empty() && !orders.timestamps {
            if let Some(serial) = crate::decide::blackbox::witness::serial_order(ix, orders) {
                let vo = crate::decide::blackbox::witness::version_order_of(ix, &serial);
                let dg = DepGraph::build(ix, &vo, model, orders);
                if find_cycles(&dg, orders).is_empty() {
                    if let Some(schedule) = schedule_of(&dg) {
                        return General::Ok {
                            how: "witness",
                            schedule,
                        };
                    }
                }
            }
        }
    }
    let mut clock_seed: Vec<u32> = Vec::new();
    // 3. Pruning by clocks: when the level orders sessions, every key's
    //    writer pairs are pruned without being built; an order of every
    //    pair is a witness once checked, and only the open pairs go to the
    //    solver.
    if opts.clocks && opts.prune && chains.is_empty() && !orders.timestamps {
        match by_clocks(ix, level, &known, orders, opts) {
            Ok(decided) => return decided,
            Err(seed) => clock_seed = seed,
        }
    }
    if opts.deadline.is_some_and(|d| Instant::now() > d) {
        return General::Unknown("the time budget ran out before the solver started".into());
    }
    // 4. Guided polygraph: writers far apart in real time (or, without
    //    times, in the guessed order) are assumed ordered, so only nearby
    //    pairs become constraints; the proposal is checked before it is
    //    believed. A hint gets a budget of its own; an order's slack grows
    //    fourfold until it assumes nothing.
    if timed && !opts.skip_witness {
        let until = Instant::now() + HINT_BUDGET;
        let o = GeneralOptions {
            deadline: Some(opts.deadline.map_or(until, |d| d.min(until))),
            ..*opts
        };
        let spans = client_spans(ix);
        if let Some(schedule) = guided(ix, model, orders, chains, &o, &spans) {
            return General::Ok {
                how: "solver (time-guided)",
                schedule,
            };
        }
    }
    if !timed && !opts.skip_witness && (forced || open_pairs(ix, chains) > GUIDE_ABOVE) {
        let pos = positions(&order);
        let mut slack = SLACK_START;
        let mut budget = HINT_BUDGET;
        while slack < 2 * known.nodes as u64 {
            let until = Instant::now() + budget;
            let o = GeneralOptions {
                deadline: Some(opts.deadline.map_or(until, |d| d.min(until))),
                ..*opts
            };
            let spans = order_spans(ix, model, &pos, slack);
            if let Some(schedule) = guided(ix, model, orders, chains, &o, &spans) {
                return General::Ok {
                    how: "solver (order-guided)",
                    schedule,
                };
            }
            if opts.deadline.is_some_and(|d| Instant::now() > d) {
                return General::Unknown("the time budget ran out in the guided search".into());
            }
            slack *= 4;
            budget *= 2;
            if !forced && slack > SLACK_MAX {
                break;
            }
        }
    }
    // 5. A small refuted neighbourhood of a witness cycle refutes the
    //    whole history (dropping transactions only removes constraints).
    //    Where session order was assumed and contradicted again and again,
    //    the transactions every contradiction went through come first.
    if opts.local && (!witness_cycles.is_empty() || !clock_seed.is_empty()) {
        let seed: Vec<u32> = if clock_seed.is_empty() {
            witness_cycles
                .iter()
                .take(4)
                .flat_map(|c| c.edges.iter().map(|e| e.from))
                .collect()
        } else {
            clock_seed
        };
        if let Some(set) = crate::decide::blackbox::interpret::local_refutation(
            ix,
            level,
            &seed,
            160,
            opts.deadline,
        ) {
            return General::Refuted {
                how: "local search",
                seed: set,
                cycle: None,
                derivation: None,
            };
        }
    }
    // 6. Complete polygraph: prune, then solve.
    let p = match Polygraph::build(ix, model, orders, chains, true, opts.max_pairs) {
        Ok(p) => p,
        Err(e) => {
            return General::Unknown(format!(
                "{} pairs of writers of the same key is more than the solver takes ({})",
                e.0, opts.max_pairs
            ))
        }
    };
    let seed: Vec<u32> = witness_cycles
        .iter()
        .flat_map(|c| c.edges.iter().map(|e| e.from))
        .collect();
    // The search starts from the time-guided order. Misleading times can
    // make that start slow, so a timed history alternates it with the
    // order of the file, on budgets that grow fourfold: a misleading hint
    // costs a constant factor, never the whole budget.
    if !timed || opts.skip_witness {
        return complete(ix, &p, &order, opts.deadline, opts, &seed);
    }
    let plain = match topo_order_by(ix, &known, Ties::File) {
        Some(o) => o,
        None => unreachable!("the known graph is acyclic"),
    };
    let mut budget = HINT_BUDGET;
    loop {
        for start in [&order, &plain] {
            let until = Instant::now() + budget;
            let until = opts.deadline.map_or(until, |d| d.min(until));
            match complete(ix, &p, start, Some(until), opts, &seed) {
                General::Unknown(why) if opts.deadline.is_some_and(|d| Instant::now() >= d) => {
                    return General::Unknown(why)
                }
                General::Unknown(_) => {}
                decided => return decided,
            }
        }
        budget *= 4;
    }
}

/// How long a hint (real time) may steer a search before the search tries
/// without it.
const HINT_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

/// How long writing down a contradiction of pruning by clocks may take.
const DERIVATION_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);

/// Stage 3: pruning by vector clocks over the sessions, then the solver on
/// the open pairs alone. An error passes on, with the transactions to
/// look for a small refutation around (maybe none).
///
/// When the level orders sessions, they are the chains. When it does not
/// (`si`, `ser`), session order is *assumed* (most histories keep it, and
/// with it pruning decides nearly every pair), so only an `ok`, checked
/// against the level itself, counts. A contradiction counts only when its
/// derivation needs no session edge; otherwise windows around it are
/// checked on their own (within a third of the time left), and the session
/// edges it used are cut for another try.
fn by_clocks(
    ix: &Index,
    level: Level,
    known: &Polygraph,
    orders: Orders,
    opts: &GeneralOptions,
) -> Result<General, Vec<u32>> {
    if orders.sessions {
        return clocks_once(ix, known, &ix.sessions, orders, opts, None).map_err(|_| Vec::new());
    }
    if !ix.sessions.iter().any(|s| s.len() > 1) {
        return Err(Vec::new());
    }
    let mut excused: rustc_hash::FxHashSet<u32> = Default::default();
    // Session edges a contradiction's derivation used: cut, so that the
    // next search does without exactly them.
    let mut cut: rustc_hash::FxHashSet<(u32, u32)> = Default::default();
    // How many contradictions each transaction was on.
    let mut seen: rustc_hash::FxHashMap<u32, u32> = Default::default();
    let recurring = |seen: &rustc_hash::FxHashMap<u32, u32>| -> Vec<u32> {
        let mut v: Vec<u32> = seen
            .iter()
            .filter(|&(_, &n)| n > 1)
            .map(|(&t, _)| t)
            .collect();
        v.sort_unstable();
        v
    };
    let windows_until = crate::decide::blackbox::window::share(opts.deadline);
    let mut ranks: Option<crate::decide::blackbox::window::Ranks> = None;
    for _ in 0..MAX_EXCUSE_ROUNDS {
        if opts.deadline.is_some_and(|d| Instant::now() > d) {
            return Err(recurring(&seen));
        }
        let mut chains: Vec<Vec<u32>> = Vec::new();
        let mut so: Vec<NodeEdge> = Vec::new();
        for s in &ix.sessions {
            let mut chain: Vec<u32> = Vec::new();
            for &t in s {
                if excused.contains(&t) {
                    chains.push(vec![t]);
                    continue;
                }
                if let Some(&prev) = chain.last() {
                    if cut.contains(&(prev, t)) {
                        chains.push(std::mem::take(&mut chain));
                        chain.push(t);
                        continue;
                    }
                    let (f, to) = crate::decide::depgraph::map_edge(known.model, prev, t, Dep::So);
                    so.push((f, to, Label::plain(Dep::So, Why::Order)));
                }
                chain.push(t);
            }
            chains.push(chain);
        }
        let assumed = known.known_with(so.into_iter());
        let outcome = clocks_once(ix, &assumed, &chains, orders, opts, Some(level));
        // A contradiction that needs session edges: look for the real
        // anomaly in windows around it, while their share of time lasts.
        if let (Err(Some(c)), true) = (&outcome, opts.local && Instant::now() < windows_until) {
            let ranks = ranks.get_or_insert_with(|| {
                let order = topo_order_by(ix, &assumed, Ties::Layers)
                    .unwrap_or_else(|| (0..assumed.nodes as u32).collect());
                let pos = positions(&order);
                crate::decide::blackbox::window::Ranks::new(ix, |t| {
                    pos[commit_node(known.model, t) as usize]
                })
            });
            if let Some(refuted) = crate::decide::blackbox::window::refute_by_windows(
                ix,
                level,
                ranks,
                &c.seed,
                windows_until,
            ) {
                return Ok(refuted);
            }
        }
        match outcome {
            Ok(decided) => return Ok(decided),
            Err(Some(c)) if c.so_used.iter().any(|e| !cut.contains(e)) => {
                for &t in &c.seed {
                    *seen.entry(t).or_default() += 1;
                }
                cut.extend(c.so_used);
            }
            Err(Some(c)) if c.seed.iter().any(|t| !excused.contains(t)) => {
                for &t in &c.seed {
                    *seen.entry(t).or_default() += 1;
                }
                excused.extend(c.seed);
            }
            _ => break,
        }
    }
    Err(recurring(&seen))
}

/// A contradiction of the search under assumed session order: the
/// transactions it went through, and the ends of the runs of session edges
/// its derivation used (none when it could not be written down).
struct Contradicted {
    seed: Vec<u32>,
    so_used: Vec<(u32, u32)>,
}

/// The ends of each run of consecutive session edges among `edges`: cutting
/// one edge of a run already breaks every path through it, and cutting a
/// whole run (a session's every edge, when a contradiction goes along it)
/// multiplies the chains pruning by clocks keeps clocks for.
fn run_ends(edges: &[(u32, u32)]) -> Vec<(u32, u32)> {
    let next: rustc_hash::FxHashMap<u32, u32> = edges.iter().copied().collect();
    let entered: rustc_hash::FxHashSet<u32> = edges.iter().map(|&(_, t)| t).collect();
    let mut ends = Vec::new();
    for &(f, t) in edges {
        if entered.contains(&f) {
            continue; // not the first edge of its run
        }
        ends.push((f, t));
        let mut last = (f, t);
        while let Some(&u) = next.get(&last.1) {
            last = (last.1, u);
        }
        if last != (f, t) {
            ends.push(last);
        }
    }
    ends.sort_unstable();
    ends.dedup();
    ends
}

/// The session edges a derivation rests on.
fn so_edges_of(d: &crate::certify::certificate::Derivation) -> Vec<(u32, u32)> {
    use crate::certify::certificate::EdgeClaim;
    use crate::certify::certificate::ProofEdge;
    d.steps
        .iter()
        .flat_map(|s| &s.back)
        .chain(&d.cycle)
        .filter_map(|e| match e {
            ProofEdge::Forced(c) if c.kind == EdgeClaim::So => Some((c.from, c.to)),
            _ => None,
        })
        .collect()
}

/// How many times the search by clocks under assumed session order may
/// cut session edges or take transactions out of their sessions before it
/// gives up (each round is also bounded by the deadline).
const MAX_EXCUSE_ROUNDS: usize = 40;

/// One search by clocks over `chains` (paths of `known`). When `known`
/// holds assumed session order (`assumed` is the level checked), a
/// contradiction proves something only if its derivation checks at that
/// level without them; otherwise it is returned as its seed transactions,
/// and a refutation by the solver as nothing.
fn clocks_once(
    ix: &Index,
    known: &Polygraph,
    chains: &[Vec<u32>],
    orders: Orders,
    opts: &GeneralOptions,
    assumed: Option<Level>,
) -> Result<General, Option<Contradicted>> {
    let model = known.model;
    let proves = assumed.is_none();
    let (order, added, open) = match (clock_prune(ix, known, chains, opts.deadline), assumed) {
        (ClockPruned::Decided { order }, _) => {
            let schedule = checked_order(ix, model, orders, &order).map_err(|_| None)?;
            return Ok(General::Ok {
                how: "pruning (clocks)",
                schedule,
            });
        }
        (ClockPruned::Contradiction { seed, proof }, Some(level)) => {
            // The contradiction may not need the assumed session edges:
            // its derivation is then a refutation at the level itself,
            // which the certificate checker decides.
            let until = Instant::now() + DERIVATION_BUDGET;
            let until = opts.deadline.map_or(until, |d| d.min(until));
            let Some(derivation) = proof.derivation(ix, known, Some(until)) else {
                let so_used = Vec::new();
                return Err(Some(Contradicted { seed, so_used }));
            };
            let r = crate::certify::certificate::Refutation::Derivation(derivation.clone());
            if !crate::certify::refutes(ix.history, level, r) {
                let so_used = run_ends(&so_edges_of(&derivation));
                return Err(Some(Contradicted { seed, so_used }));
            }
            let edges = cycle_in(known, known.known.iter().chain(&proof.added), &proof.cycle);
            return Ok(General::Refuted {
                how: "pruning (clocks, no session order)",
                seed,
                cycle: Some(edges),
                derivation: Some(derivation),
            });
        }
        (ClockPruned::Contradiction { seed, proof }, None) => {
            let edges = cycle_in(known, known.known.iter().chain(&proof.added), &proof.cycle);
            // Writing the proof down searches back through the decisions:
            // bounded, since the verdict is already known.
            let until = Instant::now() + DERIVATION_BUDGET;
            let derivation = opts
                .prove
                .then(|| {
                    proof.derivation(
                        ix,
                        known,
                        Some(opts.deadline.map_or(until, |d| d.min(until))),
                    )
                })
                .flatten();
            return Ok(General::Refuted {
                how: "pruning (clocks)",
                seed,
                cycle: Some(edges),
                derivation,
            });
        }
        (ClockPruned::Pass(_), _) => return Err(None),
        (ClockPruned::Open { order, added, open }, _) => (order, added, open),
    };
    let none = rustc_hash::FxHashMap::default();
    let mut p = Polygraph::build_with(ix, model, orders, &none, Pairs::Only(&open), u64::MAX)
        .map_err(|_| None)?;
    // The known edges of the search, with any assumed ones.
    p.known = known.known.clone();
    p.known.extend(added);
    // The added edges are forced, but not by the history alone: a
    // refutation keeps only the transactions it went through, for a proof
    // to be found by re-deciding them.
    let o = GeneralOptions {
        prove: false,
        ..*opts
    };
    match complete(ix, &p, &order, opts.deadline, &o, &[]) {
        General::Ok { schedule, .. } => {
            let schedule = checked_order(ix, model, orders, &schedule).map_err(|_| None)?;
            Ok(General::Ok {
                how: "solver (after pruning by clocks)",
                schedule,
            })
        }
        General::Refuted { seed, .. } if proves => Ok(General::Refuted {
            how: "pruning (clocks) and solver",
            seed,
            cycle: None,
            derivation: None,
        }),
        _ => Err(None),
    }
}

/// The witness schedule of the version order a node order proposes (each
/// key's writers by their commit nodes' places), or the cycles that refute
/// the proposal.
fn checked_order(
    ix: &Index,
    model: Model,
    orders: Orders,
    order: &[u32],
) -> Result<Vec<u32>, Vec<Cycle>> {
    let pos = positions(order);
    let vo = witness_order(ix, &|t| pos[commit_node(model, t) as usize]);
    let dg = DepGraph::build(ix, &vo, model, orders);
    let cycles = find_cycles(&dg, orders);
    if cycles.is_empty() {
        if let Some(schedule) = schedule_of(&dg) {
            return Ok(schedule);
        }
    }
    Err(cycles)
}

/// Stage 6, from one initial order: prune, then solve.
fn complete(
    ix: &Index,
    p: &Polygraph,
    order: &[u32],
    deadline: Option<Instant>,
    opts: &GeneralOptions,
    witness_seed: &[u32],
) -> General {
    let mut position = vec![0u32; p.nodes];
    for (i, &v) in order.iter().enumerate() {
        position[v as usize] = i as u32;
    }
    let commit_pos = |t: u32| match p.model {
        Model::Ser => position[t as usize],
        Model::Si => position[2 * t as usize + 1],
    };
    let mut g = Acyclic::new(order);
    // Known edges follow the initial order, so these inserts never reorder.
    for &(f, t, _) in &p.known {
        if let Err(cyc) = g.add(f, t, FIXED) {
            return General::Refuted {
                how: "known edges",
                seed: txns_of(p, &cyc),
                cycle: Some(labelled_cycle(p, &cyc)),
                derivation: None,
            };
        }
    }
    let mut state = vec![None; p.constraints.len()];
    let mut log = PruneLog::default();
    let pruned = if opts.prune {
        prune_logged(
            p,
            &mut g,
            &mut state,
            deadline,
            opts.prove.then_some(&mut log),
        )
    } else {
        Pruned::Open((0..p.constraints.len() as u32).collect())
    };
    let open = match pruned {
        Pruned::Open(open) => open,
        Pruned::Contradiction(cyc) => {
            let mut seed = txns_of(p, &cyc);
            seed.extend_from_slice(witness_seed);
            return General::Refuted {
                how: "pruning",
                seed,
                cycle: Some(labelled_cycle(p, &cyc)),
                derivation: if opts.prove {
                    crate::decide::blackbox::derive::derivation(ix, p, &log, deadline)
                } else {
                    None
                },
            };
        }
        Pruned::OutOfTime => {
            return General::Unknown("the time budget ran out while pruning".into())
        }
    };
    if open.is_empty() {
        return General::Ok {
            how: "pruning",
            schedule: txn_nodes_in_order(p, &g.positions()),
        };
    }
    if !opts.solve {
        return General::Unknown(format!(
            "{} constraints left after pruning, and no solver asked for",
            open.len()
        ));
    }
    let polarity: Vec<bool> = open
        .iter()
        .map(|&c| {
            let c = &p.constraints[c as usize];
            commit_pos(c.a) < commit_pos(c.b)
        })
        .collect();
    match solve(p, g, &open, &polarity, deadline, opts.strategy) {
        Solved::Sat(_, pos) => General::Ok {
            how: "solver",
            schedule: txn_nodes_in_order(p, &pos),
        },
        Solved::Unsat => General::Refuted {
            how: "solver",
            seed: witness_seed.to_vec(),
            cycle: None,
            derivation: None,
        },
        Solved::OutOfTime => General::Unknown(format!(
            "the time budget ran out in the solver ({} constraints left after pruning)",
            open.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::run_ends;

    #[test]
    fn a_run_of_session_edges_is_cut_at_its_ends() {
        // 1→2→3→4 is one run; 7→8 another; 10→11→12 a third.
        let edges = [(2, 3), (1, 2), (7, 8), (3, 4), (11, 12), (10, 11)];
        assert_eq!(
            run_ends(&edges),
            vec![(1, 2), (3, 4), (7, 8), (10, 11), (11, 12)]
        );
        assert!(run_ends(&[]).is_empty());
    }
}
