//! The entry point: one check as an ordered list of stages.
//!
//! 1. **Index** the history ([`Index`]).
//! 2. **Decide** the requested level ([`decide`]), each stage deciding or
//!    passing on:
//!    - the non-cyclic anomalies (they need no version order);
//!    - below SI, the weak levels' saturation;
//!    - from SI up, one linear check when the version order is known
//!      (mini-transactions), of the session variants first: their witness
//!      is one for the level, and places the weak levels;
//!    - the lattice: for `si` and `ser`, a witness of their session
//!      variant, on a share of the time ([`stronger_witness`]);
//!    - the general black-box search ([`general`](crate::decide::blackbox::general): known
//!      edges, witnesses, pruning by clocks with windows, a time- or
//!      order-guided polygraph, a local refutation, the complete
//!      polygraph).
//! 3. **Place** the other levels ([`place`]): the lattice where it applies,
//!    else direct checks on a small budget of their own.
//! 4. **Certify** the verdict ([`certify_verdict`]): its witness or
//!    refutations re-checked by the independent [`certify`](crate::certify)
//!    module. A proof that fails is a checker bug, and says so. It needs
//!    only the verdict, so it runs on a second thread while stage 3 places
//!    the other levels.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use history::{History, Level};

use crate::anomaly::{AnomalyKind, CommonName, Scope};
use crate::certify::{CertError, Certificate, Claim, Refutation, Witness};
use crate::decide::blackbox::general::{check_general, model_of, General, GeneralOptions};
use crate::decide::blackbox::interpret::counterexample_core;
use crate::decide::cycles::{classify, find_cycles, Cycle};
use crate::decide::depgraph::{Dep, DepGraph, Orders, VersionOrder};
use crate::decide::mini::{not_mini, version_order, Divergence};
use crate::decide::weak::WeakVerdict;
use crate::explain::evidence;
use crate::explain::{cycle_anomaly, divergence_anomaly, finding_anomaly, finding_class};
use crate::index::Index;
use crate::lattice::{forbidding, forbids, implies, stronger_or_equal, weaker_or_equal};
use crate::options::{CheckOptions, Stage};
use crate::report::{Anomaly, Certified, HistoryStats, Report, Verdict};

/// What one method found at one level, before it becomes a report.
struct Outcome {
    verdict: Verdict,
    method: &'static str,
    /// With `ok` (when explaining), the execution that shows it.
    witness: Option<Witness>,
    /// The first `max_examples` counterexamples of each kind.
    anomalies: Vec<Anomaly>,
    /// How many anomalies of each kind were found, shown or not.
    counts: Vec<(Class, usize)>,
    /// Proofs of the anomalies, for the certificate.
    refutations: Vec<Refutation>,
    /// Levels shown failed by anomalies whose edges are all forced.
    also_fails: Vec<Level>,
    /// Stronger levels whose witness showed an `ok` verdict.
    also_satisfies: Vec<Level>,
    notes: Vec<String>,
    /// When the verdict was known, before any shrinking.
    decided: std::time::Duration,
}

/// Checks a history against a level; see [`check_stages`]. For rc, ra or
/// cc on a plain register history, the part of its certificate check that
/// needs no witness is done on the other core meanwhile.
pub fn check(h: &History, level: Level, opts: &CheckOptions) -> Report {
    if !crate::certify::plain::covers(level) {
        return check_stages(h, level, opts, None);
    }
    std::thread::scope(|s| {
        // Whether the history is plain (reads and writes only) is found out
        // there, not here: the walk over every op held this thread up 0.6 ms
        // on AWDIT's causal history of 2^16 events, before the index.
        let preparing = std::thread::Builder::new()
            .name("certify-prepare".into())
            .spawn_scoped(s, || crate::certify::plain::prepare(h))
            .expect("cannot start the certifying thread");
        check_stages(h, level, opts, Some(preparing))
    })
}

/// Checks a history against a level.
///
/// The stages, in order:
///
/// 1. **Index** the history (dense ids, read-from, non-cyclic anomalies).
/// 2. **Decide** the requested level ([`decide`]), within the overall
///    time limit.
/// 3. **Place** the other levels ("fails" / "satisfies"): by the lattice
///    where it applies, else by deciding them directly on a small budget of
///    their own, so a verdict known in milliseconds is not held up by a
///    level nobody asked for. Levels left unplaced are said to be unknown.
///    On a large rc or ra check, another thread builds the index of stage
///    1 and then decides cc during stage 2 ([`Ahead`]).
fn check_stages(
    h: &History,
    level: Level,
    opts: &CheckOptions,
    prepared: Option<Prepared<'_>>,
) -> Report {
    let t0 = Instant::now();
    crate::decide::blackbox::polygraph::reset_work();
    let deadline = opts.timeout.map(|t| t0 + t);
    let stop_ahead = AtomicBool::new(false);
    let certified_flag = AtomicBool::new(false);
    let indexed: OnceLock<Index> = OnceLock::new();
    let (stats, out, notes, constraints, (fails, satisfies, not_placed), certification) =
        std::thread::scope(|outer| {
            // It builds the index, which this thread waits for.
            let mut ahead = Ahead::start(outer, &indexed, h, level, opts, deadline, &stop_ahead);
            opts.tell(Stage::Indexing { txns: h.txns.len() });
            if let Some(a) = &mut ahead {
                a.await_index();
            }
            let ix = indexed.get_or_init(|| Index::new(h));
            opts.tell(Stage::Indexed { txns: ix.len() });
            let stats = stats(ix);
            opts.tell(Stage::Deciding { level });
            let out = decide(ix, level, opts, true, t0, deadline, None);
            // The search effort of the requested level alone.
            let constraints = crate::decide::blackbox::polygraph::work();
            opts.tell(Stage::Decided(out.verdict));
            if let Some(cb) = &opts.on_verdict {
                cb(level, out.verdict, t0.elapsed());
            }
            let mut notes = out.notes.clone();
            if h.end.is_none() && h.header.is_some() {
                notes.push("the history has no end line: the run was cut short; in-flight transactions are missing".into());
            }
            // Stages 3 and 4 only read what stage 2 found: certifying runs on
            // the other core while the other levels are placed.
            opts.tell(Stage::Placing);
            let decided_at = Instant::now();
            let (placed, certification) = std::thread::scope(|s| {
                let certifying = std::thread::Builder::new()
                    .name("certify".into())
                    .stack_size(CERTIFY_STACK)
                    .spawn_scoped(s, || {
                        let t_cert = Instant::now();
                        let prep = prepared
                            .map(|p| p.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
                        let (certificate, certified) =
                            certify_verdict(h, level, opts.use_dbts, &out, prep.flatten().as_ref());
                        certified_flag.store(true, Ordering::Relaxed);
                        (certificate, certified, t_cert.elapsed().as_millis() as u64)
                    })
                    .expect("cannot start the certifying thread");
                // Small histories are placed in full, whatever the certificate.
                let soft = (ix.len() > PLACE_SEARCH_MAX)
                    .then_some((decided_at + PLACE_SOFT, &certified_flag));
                let placed = place(ix, level, &out, ahead, opts, deadline, soft, &mut notes);
                opts.tell(Stage::Certifying);
                let certification = certifying
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e));
                (placed, certification)
            });
            (stats, out, notes, constraints, placed, certification)
        });
    let (certificate, certified, certify_ms) = certification;
    opts.tell(Stage::Done);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for &((kind, scope, common), n) in &out.counts {
        *counts
            .entry(Anomaly::title_of(kind, scope, common))
            .or_default() += n;
    }
    // The most serious kinds first (a stable sort keeps each kind's own
    // order); deciding built at most `max_examples` of each.
    let mut anomalies = out.anomalies;
    anomalies.sort_by_key(crate::report::severity);
    Report {
        level,
        verdict: out.verdict,
        notes,
        method: out.method.to_string(),
        anomalies,
        anomaly_counts: counts,
        fails,
        satisfies,
        not_placed,
        stats,
        constraints,
        decided_ms: out.decided.as_millis() as u64,
        elapsed_ms: t0.elapsed().as_millis() as u64,
        certified,
        certify_ms,
        certificate,
    }
}

/// The thread preparing an rc certificate check ([`check`]).
type Prepared<'s> = std::thread::ScopedJoinHandle<'s, Option<crate::certify::plain::Prepared>>;

/// The certifying thread's stack: as deep as the main thread's would be.
const CERTIFY_STACK: usize = 64 << 20;

/// Stage 4: the verdict's proof, re-checked by the independent
/// [`certify`](crate::certify) module. A proof that does not hold is a
/// checker bug and says so; one the module cannot check (a construct it
/// does not handle, a sub-history too large to brute-force) is said to be
/// unchecked.
fn certify_verdict(
    h: &History,
    level: Level,
    use_dbts: bool,
    out: &Outcome,
    prep: Option<&crate::certify::plain::Prepared>,
) -> (Option<Certificate>, Certified) {
    let cert = |claim| Certificate {
        level,
        use_dbts,
        claim,
    };
    let unsupported =
        |e: &CertError| matches!(e, CertError::Unsupported(_) | CertError::TooLarge { .. });
    match out.verdict {
        Verdict::Unknown => (None, Certified::NotChecked("the verdict is unknown".into())),
        Verdict::Ok => {
            let Some(w) = out.witness.clone() else {
                return (
                    None,
                    Certified::Failed("an ok verdict came without a witness".into()),
                );
            };
            let c = cert(Claim::Ok(w));
            match crate::certify::verify_prepared(h, &c, prep) {
                Ok(()) => (Some(c), Certified::Checked),
                Err(e) if unsupported(&e) => (None, Certified::NotChecked(e.to_string())),
                Err(e) => (Some(c), Certified::Failed(e.to_string())),
            }
        }
        Verdict::Anomalous => {
            let results = crate::certify::verify_each(h, level, use_dbts, &out.refutations);
            let mut held = Vec::new();
            let mut unchecked = None;
            for (r, res) in out.refutations.iter().zip(results) {
                match res {
                    Ok(()) => held.push(r.clone()),
                    Err(e) if unsupported(&e) => unchecked = Some(e.to_string()),
                    Err(e) => {
                        return (
                            Some(cert(Claim::Anomalous(vec![r.clone()]))),
                            Certified::Failed(e.to_string()),
                        )
                    }
                }
            }
            if held.is_empty() {
                let why = unchecked.unwrap_or_else(|| "no checkable proof was produced".into());
                return (None, Certified::NotChecked(why));
            }
            (Some(cert(Claim::Anomalous(held))), Certified::Checked)
        }
    }
}

/// True when every history satisfying `strong` satisfies `weak` *in this
/// check's semantics*. Black-box, that is the lattice. With the database's
/// timestamps, a strong level also promises the timestamps' own orders,
/// which differ between the SI model (snapshots at start timestamps) and
/// the SER model (only each key's version order): a level implies a strong
/// level of the other model only black-box, while the weak levels never
/// use the timestamps, so every implication into them still holds.
pub fn follows(strong: Level, weak: Level, use_dbts: bool) -> bool {
    implies(strong, weak) && (!use_dbts || !is_strong(weak) || model_of(strong) == model_of(weak))
}

/// Every level `l` implies, in this check's semantics.
fn implied_by(l: Level, use_dbts: bool) -> Vec<Level> {
    Level::ALL
        .into_iter()
        .filter(|&w| follows(l, w, use_dbts))
        .collect()
}

/// Every level that implies `l`, in this check's semantics.
fn implying(l: Level, use_dbts: bool) -> Vec<Level> {
    Level::ALL
        .into_iter()
        .filter(|&s| follows(s, l, use_dbts))
        .collect()
}

/// A level decided on the spare core while the requested one is, for
/// placing to take up: cc, the costliest weak level to place (its lazy
/// saturation takes several rounds), on an rc or ra check of a history
/// larger than [`PLACE_SEARCH_MAX`]. rc or ra places cc only when it
/// holds, so an anomalous verdict stops it unused; the other levels are
/// placed on the checking thread.
///
/// The thread builds the index itself, while the checking thread waits
/// for it, and goes straight on to cc: cc is what the check ends on, and
/// woken once the index was there it took 0.9 ms to start (a timeline of
/// 21 rc checks of AWDIT's causal history of 2^16 events, medians).
struct Ahead<'s> {
    stop: &'s AtomicBool,
    thread: Option<std::thread::ScopedJoinHandle<'s, Outcome>>,
    /// Says the index is there, and the core it was built on.
    built: Option<std::sync::mpsc::Receiver<Option<usize>>>,
}

impl<'s> Ahead<'s> {
    /// The level decided ahead.
    const LEVEL: Level = Level::Cc;

    /// Starts a thread to build the index and then decide ahead, when it
    /// may apply; it gives up (`unknown`) once `stop` is set.
    #[allow(clippy::too_many_arguments)]
    fn start<'e, 'h>(
        scope: &'s std::thread::Scope<'s, 'e>,
        indexed: &'s OnceLock<Index<'h>>,
        h: &'h History,
        level: Level,
        opts: &'s CheckOptions,
        deadline: Option<Instant>,
        stop: &'s AtomicBool,
    ) -> Option<Ahead<'s>>
    where
        'h: 's,
    {
        if !crate::two_cores()
            || !matches!(level, Level::Rc | Level::Ra)
            // The index has one entry per transaction.
            || h.txns.len() <= PLACE_SEARCH_MAX
        {
            return None;
        }
        let (done, built) = std::sync::mpsc::channel::<Option<usize>>();
        let thread = std::thread::Builder::new()
            .name("place-ahead".into())
            .spawn_scoped(scope, move || {
                let ix = indexed.get_or_init(|| Index::new(h));
                let _ = done.send(crate::cores::here());
                let now = Instant::now();
                decide(
                    ix,
                    Self::LEVEL,
                    opts,
                    false,
                    now,
                    deadline,
                    Some((now, stop)),
                )
            })
            .ok()?;
        Some(Ahead {
            stop,
            thread: Some(thread),
            built: Some(built),
        })
    }

    /// Waits until the thread has built the index. Woken, the checking
    /// thread may be put behind it on its core while the other idles (see
    /// `crate::cores`), so it moves off that core.
    fn await_index(&mut self) {
        if let Some(Ok(core)) = self.built.take().map(|b| b.recv()) {
            let _ = crate::cores::leave(core);
        }
    }

    /// Its outcome, once decided, or `unknown` once `give_up` says so.
    fn outcome(mut self, give_up: impl Fn() -> bool) -> Outcome {
        let thread = self.thread.take().expect("joined once");
        while !thread.is_finished() && !give_up() {
            std::thread::sleep(Duration::from_micros(200));
        }
        self.stop.store(true, Ordering::Relaxed);
        thread
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    }
}

impl Drop for Ahead<'_> {
    /// Not wanted after all: it stops (its scope joins it).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// How long placing the other levels may take, beyond what deciding took.
const PLACE_MIN: Duration = Duration::from_millis(100);
/// How long placing may go on once the verdict is certified (placing runs
/// while the certificate is checked on the other core, and stops when it
/// is done and this much time has passed since the verdict).
const PLACE_SOFT: Duration = Duration::from_millis(50);
/// The largest history on which other levels are placed by a search. A
/// search (pc's) does not stop for the deadline while it builds its
/// constraints: on AWDIT's 2^16-event causal history (19,718 transactions)
/// a cc check decided in 21 ms took 387 ms and 213 MB with it, to leave pc
/// `unknown`. Larger histories also stop placing soon after the certificate.
const PLACE_SEARCH_MAX: usize = 5_000;
const PLACE_MAX: Duration = Duration::from_secs(4);

/// Stage 3: which other levels the history fails or satisfies. What the
/// lattice gives is free. The rest is decided directly, on one shared
/// budget in proportion to what deciding the requested level took: each
/// weaker level an anomalous verdict leaves open, and the weak levels (`rc`
/// … `pc`), which Adya's `si` and `ser` do not imply because they ignore
/// sessions. What the budget does not reach is said to be unknown. The
/// weak levels also stop past `soft.0` once `soft.1` is set (the verdict
/// is certified), so placing them never holds up the verdict (on
/// histories larger than [`PLACE_SEARCH_MAX`]; smaller ones place fast).
#[allow(clippy::too_many_arguments)]
fn place(
    ix: &Index,
    level: Level,
    out: &Outcome,
    mut ahead: Option<Ahead<'_>>,
    opts: &CheckOptions,
    deadline: Option<Instant>,
    soft: Option<(Instant, &AtomicBool)>,
    notes: &mut Vec<String>,
) -> (Vec<Level>, Vec<Level>, Vec<Level>) {
    let dbts = opts.use_dbts;
    let mut fails: Vec<Level> = Vec::new();
    let mut satisfies: Vec<Level> = Vec::new();
    let mut open: Vec<Level> = Vec::new();
    match out.verdict {
        Verdict::Ok => {
            satisfies = implied_by(level, dbts);
            for &s in &out.also_satisfies {
                satisfies.extend(implied_by(s, dbts));
            }
        }
        Verdict::Anomalous => {
            fails = implying(level, dbts);
            fails.extend(out.also_fails.iter().copied());
            open = weaker_or_equal(level);
        }
        Verdict::Unknown => {
            let rest = leftover(level, &fails, &satisfies, &[]);
            if !rest.is_empty() {
                notes.push(format!(
                    "not placed (the verdict at {level} is unknown, so no other level was checked): {}",
                    names(&rest)
                ));
            }
            return (fails, satisfies, rest);
        }
    }
    // The cheapest first, so a short budget places some: ra costs about
    // what rc does, cc more (and on a valid history places ra and rc).
    open.extend([Level::Ra, Level::Cc, Level::Rc, Level::Pc]);
    let budget = (2 * out.decided).clamp(PLACE_MIN, PLACE_MAX);
    let until = Instant::now() + budget;
    let until = deadline.map_or(until, |d| d.min(until));
    let mut unplaced: Vec<Level> = Vec::new();
    // Levels decided by a search (pc through its split history; SI and SER
    // when the version order is not known) do not stop for a deadline while
    // they build their constraints: on a large history they are left open.
    let known_order = !opts.use_dbts && !ix.lists && not_mini(ix).is_none();
    let searched = |w: Level| w == Level::Pc || (is_strong(w) && !known_order);
    for w in open {
        if w == level || fails.contains(&w) || satisfies.contains(&w) || unplaced.contains(&w) {
            continue;
        }
        let stopped = || {
            soft.is_some_and(|(at, done)| Instant::now() > at && done.load(Ordering::Relaxed))
                || Instant::now() > until
        };
        let o = match ahead.take_if(|_| w == Ahead::LEVEL) {
            // Decided on the other core meanwhile, on the same budget.
            Some(a) => a.outcome(stopped),
            None if stopped() || (searched(w) && ix.len() > PLACE_SEARCH_MAX) => {
                unplaced.push(w);
                continue;
            }
            None => decide(ix, w, opts, false, Instant::now(), Some(until), soft),
        };
        match o.verdict {
            Verdict::Ok => {
                satisfies.extend(implied_by(w, dbts));
                for &s in &o.also_satisfies {
                    satisfies.extend(implied_by(s, dbts));
                }
            }
            Verdict::Anomalous => {
                fails.extend(implying(w, dbts));
                fails.extend(o.also_fails.iter().copied());
            }
            Verdict::Unknown => unplaced.push(w),
        }
    }
    fails.sort();
    fails.dedup();
    satisfies.sort();
    satisfies.dedup();
    satisfies.retain(|l| !fails.contains(l));
    unplaced.retain(|l| !fails.contains(l) && !satisfies.contains(l));
    if !unplaced.is_empty() {
        notes.push(format!(
            "not placed within the time given to other levels (unknown): {}",
            names(&unplaced)
        ));
    }
    // The levels neither the verdict nor placing reached (above all the
    // real-time ones over an `ok` at a level that does not imply them): said
    // to be unknown rather than left out of both lists.
    let untried = leftover(level, &fails, &satisfies, &unplaced);
    if !untried.is_empty() {
        let why = match out.verdict {
            Verdict::Ok => format!("stronger than {level}, which the history satisfies"),
            _ => format!("neither implied nor refuted by the {level} verdict"),
        };
        notes.push(format!(
            "not placed ({why}; not checked: check one with --level): {}",
            names(&untried)
        ));
    }
    unplaced.extend(untried);
    unplaced.sort();
    (fails, satisfies, unplaced)
}

/// The levels other than `level` in none of `fails`, `satisfies`, `also`.
fn leftover(level: Level, fails: &[Level], satisfies: &[Level], also: &[Level]) -> Vec<Level> {
    Level::ALL
        .into_iter()
        .filter(|l| {
            *l != level && !fails.contains(l) && !satisfies.contains(l) && !also.contains(l)
        })
        .collect()
}

/// `a, b, c`.
fn names(levels: &[Level]) -> String {
    let n: Vec<&str> = levels.iter().map(|l| l.name()).collect();
    n.join(", ")
}

fn stats(ix: &Index) -> HistoryStats {
    let (ok, fail, info) = ix.statuses;
    HistoryStats {
        txns: ix.len(),
        ok,
        fail,
        info,
        info_committed: ix.info_committed,
        sessions: ix.session_count(),
        keys: ix.keys.len(),
        ops: ix.ops,
    }
}

/// How many refutations a certificate carries at most.
const MAX_PROOFS: usize = 16;

/// What deciding a level has found so far: the counterexamples to show,
/// the refutations that prove them, and the levels they fail.
#[derive(Default)]
struct Found {
    /// Whether counterexamples and their proofs are wanted (the requested
    /// level), or only the verdict (placing the others).
    explain: bool,
    /// Counterexamples of one kind built at most: the report shows no more
    /// (`max_examples`), so the others are only counted.
    max_shown: usize,
    anomalies: Vec<Anomaly>,
    /// How many of each kind were found, shown or not.
    counts: Vec<(Class, usize)>,
    refutations: Vec<Refutation>,
    also_fails: Vec<Level>,
}

/// What an anomaly's title is made of: the report counts by it.
type Class = (AnomalyKind, Scope, Option<CommonName>);

impl Found {
    /// Nothing found yet; counterexamples only when `explain`, at most
    /// `max_examples` of each kind.
    fn new(explain: bool, opts: &CheckOptions) -> Found {
        Found {
            explain,
            max_shown: opts.max_examples,
            ..Found::default()
        }
    }

    /// A counterexample and the refutation that proves it (when one can be
    /// given), kept only when explaining.
    fn show(&mut self, a: impl FnOnce() -> Anomaly, r: impl FnOnce() -> Option<Refutation>) {
        if self.explain {
            let a = a();
            self.show_class((a.kind, a.scope, a.common), || a, r);
        }
    }

    /// [`Found::show`] for an anomaly whose class is known before it is
    /// built: past `max_shown` of its class it is only counted (a history
    /// with 44,205 non-repeatable reads spent most of its check writing
    /// their text).
    fn show_class(
        &mut self,
        class: Class,
        a: impl FnOnce() -> Anomaly,
        r: impl FnOnce() -> Option<Refutation>,
    ) {
        if !self.explain {
            return;
        }
        let n = match self.counts.iter_mut().find(|(c, _)| *c == class) {
            Some((_, n)) => n,
            None => {
                self.counts.push((class, 0));
                &mut self.counts.last_mut().expect("just pushed").1
            }
        };
        *n += 1;
        if *n <= self.max_shown {
            self.anomalies.push(a());
        }
        // One proof that holds is enough; a few spare ones cost little.
        if self.refutations.len() < MAX_PROOFS {
            self.refutations.extend(r());
        }
    }

    fn anomalous(&self) -> bool {
        !self.also_fails.is_empty() || !self.counts.is_empty()
    }
}

/// Stage 2: decides one level. With `explain` false, only the verdict
/// matters (no counterexamples, no witness).
fn decide(
    ix: &Index,
    level: Level,
    opts: &CheckOptions,
    explain: bool,
    started: Instant,
    deadline: Option<Instant>,
    soft: Option<(Instant, &AtomicBool)>,
) -> Outcome {
    let mut found = Found::new(explain, opts);
    let mut decided = None;
    let mut witness = None;
    let mut also_satisfies = Vec::new();
    // Non-cyclic anomalies need no version order.
    let list_findings = if ix.lists {
        crate::index::lists::list_orders(ix).findings
    } else {
        Vec::new()
    };
    for f in ix.findings.iter().chain(&list_findings) {
        if forbids(level, f.kind, Scope::Item) {
            found.show_class(
                finding_class(f),
                || finding_anomaly(ix, f),
                || Some(evidence::finding(f)),
            );
            for &m in forbidding(f.kind, Scope::Item) {
                found.also_fails.extend(stronger_or_equal(m));
            }
        }
    }
    let mut notes = Vec::new();
    let (verdict, method) = if !is_strong(level) {
        let limit = crate::decide::weak::Limit { deadline, soft };
        let w = crate::decide::weak::check_weak_limited(ix, level, explain, limit);
        // Weak-level cycles are shown by the axioms' forced edges; their
        // levels come with them (the lattice rows are about Adya cycles).
        // Each is proved by re-deciding its transactions alone.
        for a in w.anomalies {
            let txns = evidence::weak_core(ix, &a);
            found.show(|| a, || evidence::sub_history(ix, txns));
        }
        found.also_fails.extend(w.also_fails);
        notes.extend(w.notes);
        match w.verdict {
            WeakVerdict::Ok => {
                witness = w.witness.map(Witness::CommitOrder);
                (Verdict::Ok, w.method)
            }
            WeakVerdict::Anomalous => (Verdict::Anomalous, w.method),
            WeakVerdict::Unknown(why) => {
                notes.push(why);
                (Verdict::Unknown, w.method)
            }
        }
    } else if !opts.use_dbts && !ix.lists && not_mini(ix).is_none() {
        let (vo, div) = version_order(ix);
        // The lattice, at the price of a linear check each: a stronger
        // level's witness is one for `level` (a serial order is a schedule
        // whose transactions never overlap), and it places the weak levels
        // (`pc` … `rc`) with it. The serial graph has half the nodes of the
        // SI one. Only when they fail is `level` itself checked.
        let ordered = ix.sessions.iter().any(|s| s.len() > 1);
        let stronger: &[Level] = match level {
            _ if !ordered || !div.is_empty() || found.anomalous() => &[],
            Level::Si => &[Level::StrongSessionSer, Level::StrongSessionSi],
            Level::Ser => &[Level::StrongSessionSer],
            _ => &[],
        };
        let mut decided_by = None;
        for &sv in stronger {
            let mut trial = Found::new(explain, opts);
            let w = known_order(ix, &vo, &div, sv, &mut trial);
            if !trial.anomalous() && (!explain || w.is_some()) {
                decided_by = Some((sv, w));
                break;
            }
        }
        match decided_by {
            Some((sv, w)) => {
                witness = w.map(|w| in_model(w, model_of(level)));
                also_satisfies.push(sv);
            }
            None => witness = known_order(ix, &vo, &div, level, &mut found),
        }
        (Verdict::Ok, "mini-transaction")
    } else if found.anomalous() && !explain {
        // Already decided by a non-cyclic anomaly.
        (Verdict::Anomalous, "non-cyclic")
    } else if let Some((stronger, schedule)) = (!found.anomalous())
        .then(|| stronger_witness(ix, level, opts, deadline))
        .flatten()
    {
        // The lattice: a witness of a stronger level is one of this level.
        if explain {
            witness = Some(evidence::witness_of_schedule(
                ix,
                model_of(level),
                &schedule,
            ));
        }
        also_satisfies.push(stronger);
        (Verdict::Ok, lattice_method(stronger))
    } else {
        let gopts = GeneralOptions {
            deadline,
            use_dbts: opts.use_dbts,
            strategy: opts.strategy,
            skip_witness: opts.skip_witness,
            force_fast_paths: opts.force_fast_paths,
            local: !opts.skip_witness,
            prove: explain,
            ..GeneralOptions::default()
        };
        match check_general(ix, level, &gopts) {
            General::Ok { how, schedule } => {
                if explain {
                    witness = Some(evidence::witness_of_schedule(
                        ix,
                        model_of(level),
                        &schedule,
                    ));
                }
                (Verdict::Ok, how)
            }
            General::Forced { cycles, lost } => {
                for l in &lost {
                    found.show(
                        || divergence_anomaly(ix, l.key, l.base, l.a, l.b),
                        || Some(evidence::lost_update(ix, l.key, l.base, l.a, l.b)),
                    );
                    found.also_fails.extend(stronger_or_equal(Level::Si));
                }
                for c in &cycles {
                    record_forced_cycle(ix, c, level, opts.use_dbts, &mut found);
                }
                (Verdict::Anomalous, "known edges")
            }
            General::Refuted {
                how,
                seed,
                cycle,
                derivation,
            } => {
                found.also_fails.extend(implying(level, opts.use_dbts));
                if explain {
                    // Shrinking is a nicety: give it a bounded share of time,
                    // in proportion to what deciding took.
                    let spent = started.elapsed();
                    decided = Some(spent);
                    let budget = Instant::now() + (2 * spent).clamp(MINIMIZE_FOR / 6, MINIMIZE_FOR);
                    let until = Some(deadline.map_or(budget, |d| d.min(budget)));
                    let core = counterexample_core(ix, level, &seed, until);
                    let cycle = cycle.filter(|c| !c.is_empty()).map(Cycle::of_edges);
                    // The proof: the refuted core re-decided alone, else the
                    // closing cycle when every edge of it has evidence.
                    let proof = core
                        .as_ref()
                        .and_then(|(_, txns)| evidence::sub_history(ix, txns.clone()))
                        .or_else(|| cycle.as_ref().and_then(|c| evidence::cycle(ix, c)))
                        .or_else(|| derivation.map(Refutation::Derivation))
                        .or_else(|| evidence::sub_history(ix, ix.committed_txns().collect()));
                    found.refutations.extend(proof);
                    match (core.and_then(|(a, _)| a), cycle) {
                        (Some(a), _) => found.show(|| a, || None),
                        (None, Some(c)) => found.show(|| refutation_anomaly(ix, c), || None),
                        (None, None) => notes.push(
                            "no version order satisfies the level, but no small counterexample was found".into(),
                        ),
                    }
                }
                (Verdict::Anomalous, how)
            }
            General::Unknown(why) => {
                notes.push(why);
                (Verdict::Unknown, "general")
            }
        }
    };
    let anomalous = found.anomalous();
    // With no session ordering two transactions, a session variant is the
    // level itself: its `ok` places the variant (and so `pc`) for free.
    if verdict == Verdict::Ok && !ix.sessions.iter().any(|s| s.len() > 1) {
        also_satisfies.extend(session_variant(level));
    }
    Outcome {
        verdict: if anomalous {
            Verdict::Anomalous
        } else {
            verdict
        },
        method,
        witness: if anomalous { None } else { witness },
        anomalies: found.anomalies,
        counts: found.counts,
        refutations: found.refutations,
        also_fails: found.also_fails,
        also_satisfies: if anomalous {
            Vec::new()
        } else {
            also_satisfies
        },
        notes,
        decided: decided.unwrap_or_else(|| started.elapsed()),
    }
}

/// The stronger level whose witness is tried first, and the method name
/// that says so.
fn lattice_method(stronger: Level) -> &'static str {
    match stronger {
        Level::StrongSessionSer => "witness of strong-session-ser",
        _ => "witness of strong-session-si",
    }
}

/// Stage 2d, the lattice: a witness of the session variant of `si` or
/// `ser`, found on a share of the time. Session order adds known edges, so
/// pruning decides most choices the weaker level leaves open; its witness
/// (a schedule of the same model) is one for `level`, and is certified as
/// such. A failure proves nothing about `level` and passes on.
fn stronger_witness(
    ix: &Index,
    level: Level,
    opts: &CheckOptions,
    deadline: Option<Instant>,
) -> Option<(Level, Vec<u32>)> {
    let stronger = session_variant(level)?;
    let forced = opts.force_fast_paths;
    // Session order must order something, else the levels coincide.
    let ordered = ix.sessions.iter().any(|s| s.len() > 1);
    if !follows(stronger, level, opts.use_dbts) || (!forced && (opts.skip_witness || !ordered)) {
        return None;
    }
    let gopts = GeneralOptions {
        deadline: Some(crate::decide::lattice_deadline(deadline)),
        use_dbts: opts.use_dbts,
        strategy: opts.strategy,
        force_fast_paths: forced,
        local: false,
        prove: false,
        ..GeneralOptions::default()
    };
    match check_general(ix, stronger, &gopts) {
        General::Ok { schedule, .. } => Some((stronger, schedule)),
        _ => None,
    }
}

/// The session variant of `si` and `ser`: the same level with session
/// order added.
fn session_variant(level: Level) -> Option<Level> {
    match level {
        Level::Si => Some(Level::StrongSessionSi),
        Level::Ser => Some(Level::StrongSessionSer),
        _ => None,
    }
}

/// The linear check for a known version order: divergences first (lost
/// updates), then one cycle search. Returns the witness when there is no
/// anomaly and one is wanted.
fn known_order(
    ix: &Index,
    vo: &VersionOrder,
    div: &[Divergence],
    level: Level,
    found: &mut Found,
) -> Option<Witness> {
    for d in div {
        found.show(
            || divergence_anomaly(ix, d.key, d.base, d.a, d.b),
            || Some(evidence::lost_update(ix, d.key, d.base, d.a, d.b)),
        );
        found.also_fails.extend(stronger_or_equal(Level::Si));
    }
    let orders = Orders::of(level);
    let model = model_of(level);
    // A topological order of the whole graph (every scope's edges) shows
    // that no scope has a cycle, in one pass instead of a search per
    // scope, and is the witness. Only a cycle needs the edges' labels.
    let schedule = DepGraph::schedule(ix, vo, model, orders);
    if schedule.is_none() {
        let dg = DepGraph::build(ix, vo, model, orders);
        for c in find_cycles(&dg, orders) {
            record_forced_cycle(ix, &c, level, false, found);
        }
    }
    if found.anomalous() || !found.explain {
        return None;
    }
    Some(evidence::witness_of_schedule(ix, model, &schedule?))
}

/// A witness of the SER or SI model as one of `model`: a serial order is a
/// schedule in which each transaction commits before the next begins.
fn in_model(w: Witness, model: crate::decide::depgraph::Model) -> Witness {
    match (w, model) {
        (Witness::Serial(order), crate::decide::depgraph::Model::Si) => Witness::Schedule(
            order
                .into_iter()
                .flat_map(|t| [(t, false), (t, true)])
                .collect(),
        ),
        (w, _) => w,
    }
}

/// True for the levels decided by version orders (SI and SER families).
fn is_strong(level: Level) -> bool {
    matches!(
        level,
        Level::Si
            | Level::StrongSessionSi
            | Level::StrongSi
            | Level::Ser
            | Level::StrongSessionSer
            | Level::Sser
    )
}

/// Records a cycle all of whose edges the history forces: it fails the
/// checked level and every strong level that forbids its kind.
fn record_forced_cycle(ix: &Index, c: &Cycle, level: Level, use_dbts: bool, found: &mut Found) {
    let (kind, _) = classify(c);
    if !forbids(level, kind, c.scope) {
        return;
    }
    found.also_fails.extend(implying(level, use_dbts));
    // Adya's classes place the cycle in other levels only when it is made
    // of dependencies: a timestamp edge means different things in the SI
    // and SER models, so such a cycle speaks for its own model alone.
    if !c.edges.iter().any(|e| e.label.dep == Dep::Ts) {
        for &m in forbidding(kind, c.scope) {
            if is_strong(m) {
                found.also_fails.extend(stronger_or_equal(m));
            }
        }
    }
    found.show(|| cycle_anomaly(ix, c), || evidence::cycle(ix, c));
}

/// How long a refuted check may spend shrinking its counterexample.
const MINIMIZE_FOR: std::time::Duration = std::time::Duration::from_secs(3);

/// The cycle that closed a refutation, as a counterexample. Its guessed
/// edges were forced: the opposite order of each pair closes a cycle too.
fn refutation_anomaly(ix: &Index, c: Cycle) -> Anomaly {
    let mut a = cycle_anomaly(ix, &c);
    for (e, te) in a.edges.iter_mut().zip(&c.edges) {
        if te.label.why == crate::decide::depgraph::Why::Chosen {
            e.reason
                .push_str(" [forced: the opposite order closes a cycle too]");
        }
    }
    a.summary = format!("{} (no version order avoids it)", a.summary);
    a
}
