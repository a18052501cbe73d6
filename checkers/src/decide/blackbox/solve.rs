//! Solving the constraints that pruning leaves: CDCL SAT (batsat) with an
//! acyclicity theory, in the style of MonoSAT.
//!
//! Each open constraint is one boolean. As the SAT solver assigns them, the
//! theory adds the chosen side's edges to a Pearce–Kelly graph
//! ([`Acyclic`]); an edge that closes a cycle is a conflict, explained by
//! the literals whose edges form the cycle. The solver learns that clause
//! and backjumps; the theory undoes edges level by level. Initial
//! polarities come from a witness order, so a history that is nearly right
//! is repaired rather than searched.
//!
//! A second strategy, [`Strategy::Lazy`], solves without the theory and
//! learns the cycle clauses of each full assignment, up to 64 per round.
//! Neither wins everywhere: on histories with no session order and no
//! time (Viper's BlindW) the theory can stall where lazy clauses finish
//! in a fraction of a second, and the other way round on dense ones. [`Strategy::Portfolio`], the default, runs them in turn on
//! budgets that grow fourfold, so the worse one costs a constant factor.

use std::time::Instant;

use batsat::{
    callbacks::Callbacks, lbool, theory::TheoryArg, Lit, Solver, SolverInterface, SolverOpts,
    Theory, Var,
};

use crate::decide::blackbox::acyclic::{Acyclic, TaggedEdge, FIXED};
use crate::decide::blackbox::polygraph::Polygraph;

/// How to search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// CDCL with the acyclicity theory checking every partial assignment.
    Theory,
    /// Full assignments, one learned cycle clause per round.
    Lazy,
    /// Lazy and theory in turn, on budgets growing fourfold from
    /// [`PORTFOLIO_START`].
    Portfolio,
}

/// The first budget of each strategy in the portfolio.
pub const PORTFOLIO_START: std::time::Duration = std::time::Duration::from_millis(250);

/// The answer of the solver.
pub enum Solved {
    /// A choice for every open constraint (indexed like `open`), and a
    /// topological order position of every node under those choices.
    Sat(Vec<bool>, Vec<u32>),
    /// No choice works.
    Unsat,
    /// The deadline passed.
    OutOfTime,
}

/// Stops the SAT search at a deadline. The solver asks at every
/// decision, and reading the clock each time cost an eighth of a Viper
/// history's search, so the clock is read every [`CLOCK_EVERY`] asks.
/// Once passed, the deadline stays passed: the solver asks again right
/// after it stopped, and must hear the same answer.
struct Deadline {
    at: Option<Instant>,
    asked: std::cell::Cell<u32>,
    passed: std::cell::Cell<bool>,
}

/// How many of the solver's asks share one reading of the clock.
const CLOCK_EVERY: u32 = 64;

impl Callbacks for Deadline {
    fn stop(&self) -> bool {
        let Some(d) = self.at else { return false };
        if self.passed.get() {
            return true;
        }
        let n = self.asked.get().wrapping_add(1);
        self.asked.set(n);
        if n.is_multiple_of(CLOCK_EVERY) && Instant::now() > d {
            self.passed.set(true);
        }
        self.passed.get()
    }
}

struct AcyclicTheory<'a> {
    p: &'a Polygraph,
    g: Acyclic,
    /// Constraint of each SAT variable.
    open: &'a [u32],
    /// Per decision level: (graph checkpoint, trail position processed).
    levels: Vec<(usize, usize)>,
    processed: usize,
    lemma: Vec<Lit>,
}

impl AcyclicTheory<'_> {
    fn check(&mut self, acts: &mut TheoryArg) {
        let model = acts.model();
        while self.processed < model.len() {
            let lit = model[self.processed];
            self.processed += 1;
            let v = lit.var().idx() as usize;
            let c = self.open[v] as usize;
            let tag = lit.idx();
            for &(f, t, _) in self.p.side(c, lit.sign()) {
                if let Err(cyc) = self.g.add(f, t, tag) {
                    self.lemma.clear();
                    explain(&cyc, &mut self.lemma);
                    acts.raise_conflict(&self.lemma, false);
                    return;
                }
            }
        }
    }
}

/// The clause forbidding a cycle: not all of its guessed edges.
fn explain(cyc: &[TaggedEdge], out: &mut Vec<Lit>) {
    for &(_, _, tag) in cyc {
        if tag != FIXED {
            let l = !lit_of_idx(tag);
            if !out.contains(&l) {
                out.push(l);
            }
        }
    }
}

fn lit_of_idx(idx: u32) -> Lit {
    Lit::new(Var::unsafe_from_idx(idx >> 1), idx & 1 == 0)
}

impl Theory for AcyclicTheory<'_> {
    fn final_check(&mut self, acts: &mut TheoryArg) {
        self.check(acts);
    }

    fn partial_check(&mut self, acts: &mut TheoryArg) {
        self.check(acts);
    }

    fn create_level(&mut self) {
        self.levels.push((self.g.checkpoint(), self.processed));
    }

    fn pop_levels(&mut self, n: usize) {
        let keep = self.levels.len() - n;
        let (cp, pos) = self.levels[keep];
        self.levels.truncate(keep);
        self.g.undo_to(cp);
        self.processed = pos;
    }

    fn n_levels(&self) -> usize {
        self.levels.len()
    }

    fn explain_propagation(&mut self, _p: Lit) -> &[Lit] {
        unreachable!("the acyclicity theory does not propagate")
    }
}

/// Solves the open constraints over the graph `g` (which holds every known
/// and pruned edge). `polarity[i]` is the preferred choice for `open[i]`.
pub fn solve(
    p: &Polygraph,
    g: Acyclic,
    open: &[u32],
    polarity: &[bool],
    deadline: Option<Instant>,
    strategy: Strategy,
) -> Solved {
    match strategy {
        Strategy::Theory => solve_theory(p, g, open, polarity, deadline),
        Strategy::Lazy => solve_lazy(p, g, open, polarity, deadline),
        Strategy::Portfolio => {
            let mut budget = PORTFOLIO_START;
            loop {
                for lazy in [true, false] {
                    let until = Instant::now() + budget;
                    let until = deadline.map_or(until, |d| d.min(until));
                    let g = g.clone();
                    let r = if lazy {
                        solve_lazy(p, g, open, polarity, Some(until))
                    } else {
                        solve_theory(p, g, open, polarity, Some(until))
                    };
                    match r {
                        Solved::OutOfTime if deadline.is_some_and(|d| Instant::now() >= d) => {
                            return Solved::OutOfTime
                        }
                        Solved::OutOfTime => {}
                        decided => return decided,
                    }
                }
                budget *= 4;
            }
        }
    }
}

fn new_solver(polarity: &[bool], deadline: Option<Instant>) -> (Solver<Deadline>, Vec<Var>) {
    let mut s: Solver<Deadline> = Solver::new(
        SolverOpts::default(),
        Deadline {
            at: deadline,
            asked: Default::default(),
            passed: Default::default(),
        },
    );
    let vars: Vec<Var> = polarity
        .iter()
        .map(|&pol| s.new_var(lbool::new(pol), true))
        .collect();
    (s, vars)
}

/// CDCL with the acyclicity theory.
fn solve_theory(
    p: &Polygraph,
    g: Acyclic,
    open: &[u32],
    polarity: &[bool],
    deadline: Option<Instant>,
) -> Solved {
    let (mut s, vars) = new_solver(polarity, deadline);
    let mut th = AcyclicTheory {
        p,
        g,
        open,
        levels: Vec::new(),
        processed: 0,
        lemma: Vec::new(),
    };
    let r = s.solve_limited_preserving_trail_th(&mut th, &[]);
    if r == lbool::TRUE {
        let out = vars
            .iter()
            .map(|&v| s.value_var(v) == lbool::TRUE)
            .collect();
        let pos = th.g.positions();
        s.pop_model(&mut th);
        Solved::Sat(out, pos)
    } else if r == lbool::FALSE {
        Solved::Unsat
    } else {
        Solved::OutOfTime
    }
}

/// The most cycle clauses one lazy round learns.
const LAZY_CLAUSES_PER_ROUND: usize = 64;

/// Full assignments, cycle clauses learned per round.
fn solve_lazy(
    p: &Polygraph,
    mut g: Acyclic,
    open: &[u32],
    polarity: &[bool],
    deadline: Option<Instant>,
) -> Solved {
    let (mut s, vars) = new_solver(polarity, deadline);
    loop {
        let r = s.solve_limited(&[]);
        if r == lbool::FALSE {
            return Solved::Unsat;
        }
        if r != lbool::TRUE {
            return Solved::OutOfTime;
        }
        let choice: Vec<bool> = vars
            .iter()
            .map(|&v| s.value_var(v) == lbool::TRUE)
            .collect();
        // Every edge that would close a cycle is left out and its cycle
        // becomes a clause, so one round learns many clauses, not one.
        let cp = g.checkpoint();
        let mut clauses: Vec<Vec<Lit>> = Vec::new();
        'learn: for (i, &c) in open.iter().enumerate() {
            let lit = Lit::new(vars[i], choice[i]);
            for &(f, t, _) in p.side(c as usize, choice[i]) {
                if let Err(cyc) = g.add(f, t, lit.idx()) {
                    let mut clause = Vec::new();
                    explain(&cyc, &mut clause);
                    clauses.push(clause);
                    if clauses.len() >= LAZY_CLAUSES_PER_ROUND {
                        break 'learn;
                    }
                }
            }
        }
        let pos = g.positions();
        g.undo_to(cp);
        if clauses.is_empty() {
            return Solved::Sat(choice, pos);
        }
        for mut clause in clauses {
            if !s.add_clause_reuse(&mut clause) {
                return Solved::Unsat;
            }
        }
        if deadline.is_some_and(|d| Instant::now() > d) {
            return Solved::OutOfTime;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// batsat asks again right after a stop; a deadline that answered
    /// "go on" then made the search restart forever (a hang past
    /// `--timeout`).
    #[test]
    fn a_passed_deadline_stays_passed() {
        let d = Deadline {
            at: Some(Instant::now() - std::time::Duration::from_secs(1)),
            asked: Default::default(),
            passed: Default::default(),
        };
        let first = (0..CLOCK_EVERY).position(|_| d.stop());
        assert_eq!(first, Some(CLOCK_EVERY as usize - 1));
        assert!((0..3 * CLOCK_EVERY).all(|_| d.stop()));
        let none = Deadline {
            at: None,
            asked: Default::default(),
            passed: Default::default(),
        };
        assert!((0..3 * CLOCK_EVERY).all(|_| !none.stop()));
    }
}
