//! Replaying a witness of the SER and SI families: a serial order or a
//! schedule of begin and commit events, with one store.
//!
//!
//! A level holds iff *some* execution of its kind explains the history; a
//! witness names one, so checking that it is an execution of the level is
//! a complete proof of `ok`:
//!
//! * [`Witness::Serial`] (ser, strong-session-ser, sser): the committed
//!   transactions in a serial order. Every `ok` transaction must appear
//!   once, no `fail` one, and `info` ones that appear are the committed
//!   ones. Replaying in order with one current value (or list) per key,
//!   every read of an `ok` transaction must return its own latest write of
//!   the key, or the store's value (lists: the store's list followed by its
//!   own appends). Session order (earlier transaction of a session first)
//!   and real-time order (an `ok` transaction that ended before another
//!   started comes first) must hold when the level uses them. With
//!   `use_dbts`, timestamped writers of a key appear in commit-timestamp
//!   order. That is exactly the oracle's definition, for one order.
//! * [`Witness::Schedule`] (si, strong-session-si, strong-si): begin and
//!   commit events. Each committed transaction begins once then commits
//!   once; its reads see what committed before its begin (plus its own
//!   writes), checked by replaying the events with one store (a read is
//!   checked at the begin event, when the store is the snapshot); no two
//!   writers of a key overlap (first committer wins: at each commit, the
//!   latest earlier commit of a writer of each written key must precede the
//!   begin); session and real-time order put the earlier transaction's
//!   commit before the later one's begin. With `use_dbts` the events are in
//!   timestamp order (begin at `dbts.start`, commit at `dbts.commit`, begin
//!   first at equal timestamps).
//!
//! Enters: the history and a [`Witness::Serial`] or [`Witness::Schedule`];
//! leaves: `Ok(())` or the first read or order the replay contradicts.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use smallvec::SmallVec;
use std::cell::OnceCell;
use std::sync::atomic::{AtomicUsize, Ordering};

use history::{History, Key, Level, Op, Status, Value};

use super::certificate::*;
use super::common::*;

#[derive(Default)]
pub(super) struct Store {
    /// The registers, for reads of one key.
    pub(super) reg: HashMap<Key, Value>,
    /// The same, ordered, for range reads: built at the first one, then
    /// kept up to date.
    pub(super) sorted: OnceCell<BTreeMap<Key, Value>>,
    pub(super) list: HashMap<Key, Vec<Value>>,
}

impl Store {
    /// The registers in key order.
    pub(super) fn sorted(&self) -> &BTreeMap<Key, Value> {
        self.sorted
            .get_or_init(|| self.reg.iter().map(|(k, v)| (k.clone(), *v)).collect())
    }
}

/// What a transaction installs when it commits.
pub(super) struct Effects {
    /// Final register value per key.
    pub(super) reg: SmallVec<[(Key, Value); 2]>,
    /// Appends, in program order.
    pub(super) app: Vec<(Key, Value)>,
    /// The distinct keys written, in key order.
    pub(super) keys: SmallVec<[Key; 2]>,
}

/// A transaction's own latest write of each key so far, in key order: a
/// transaction writes few keys, so a sorted inline vector beats a map.
type Own<'h> = SmallVec<[(&'h Key, Value); 4]>;

/// The transaction's own latest write of `k`, if any.
fn own_get(own: &Own<'_>, k: &Key) -> Option<Value> {
    own.binary_search_by(|(x, _)| (*x).cmp(k))
        .ok()
        .map(|i| own[i].1)
}

/// Records the transaction's write of `v` to `k`.
fn own_set<'h>(own: &mut Own<'h>, k: &'h Key, v: Value) {
    match own.binary_search_by(|(x, _)| (*x).cmp(k)) {
        Ok(i) => own[i].1 = v,
        Err(i) => own.insert(i, (k, v)),
    }
}

/// One share of the keys. Every check of a replay is about one key (a
/// read, a list read, a range read's row or missing key, first committer
/// wins), so the keys can be replayed in shares, each with a store of its
/// own keys only, on several cores; the history holds iff every share
/// does.
#[derive(Clone, Copy, Debug)]
pub(super) struct Share {
    this: u64,
    of: u64,
}

impl Share {
    /// Every key: the replay of one thread.
    pub(super) const ALL: Share = Share { this: 0, of: 1 };

    /// True when `k` is one of this share's keys.
    fn has(self, k: &Key) -> bool {
        if self.of == 1 {
            return true;
        }
        use std::hash::{Hash, Hasher};
        let mut s = rustc_hash::FxHasher::default();
        k.hash(&mut s);
        // The high bits: FxHash mixes its input upwards.
        (s.finish() >> 32) % self.of == self.this
    }
}

/// Replays worth two cores: below this many transactions or events, a
/// thread costs more than it saves. Tests move it, to replay small
/// histories both ways ([`set_shared_from`]).
static SHARED_FROM: AtomicUsize = AtomicUsize::new(100_000);

/// From how many steps (transactions, events) a replay runs in two shares
/// of the keys; for tests that compare the two ways on small histories.
#[doc(hidden)]
pub fn set_shared_from(steps: usize) {
    SHARED_FROM.store(steps, Ordering::Relaxed);
}

/// Runs `replay` on each share of the keys, on two threads when the
/// history is large and there are two cores, else once on all the keys.
/// Of the failures, the one at the earliest step (then the lower share) is
/// reported, so the outcome does not depend on the threads' timing.
fn replay_shares<F>(steps: usize, replay: F) -> R<()>
where
    F: Fn(Share) -> Result<(), (usize, CertError)> + Sync,
{
    let two = steps >= SHARED_FROM.load(Ordering::Relaxed) && crate::two_cores();
    if !two {
        return replay(Share::ALL).map_err(|(_, e)| e);
    }
    let (a, b) = std::thread::scope(|s| {
        let second = std::thread::Builder::new()
            .name("certify-share".into())
            .spawn_scoped(s, || replay(Share { this: 1, of: 2 }))
            .expect("cannot start a certifying thread");
        let a = replay(Share { this: 0, of: 2 });
        let b = second
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        (a, b)
    });
    match (a, b) {
        (Ok(()), Ok(())) => Ok(()),
        (Err((_, e)), Ok(())) | (Ok(()), Err((_, e))) => Err(e),
        (Err((i, e)), Err((j, f))) => Err(if i <= j { e } else { f }),
    }
}

/// Runs `t` against `store` (the state it sees), checking the reads of an
/// ok transaction on the keys of `share`; returns what it installs there.
pub(super) fn run_txn(h: &History, t: u32, store: &Store, share: Share) -> R<Effects> {
    let txn = &h.txns[t as usize];
    let check = txn.status == Status::Ok;
    let mut own: Own<'_> = SmallVec::new();
    let mut own_app: HashMap<&Key, Vec<Value>> = HashMap::default();
    let mut app = Vec::new();
    for (o, op) in txn.ops.iter().enumerate() {
        if let Some(key) = op.key() {
            if !share.has(key) {
                continue;
            }
        }
        match op {
            Op::Read { key, value } => {
                if !check {
                    continue;
                }
                let want = own_get(&own, key).or_else(|| store.reg.get(key).copied());
                if want != *value {
                    return Err(CertError::WrongRead {
                        txn: t,
                        op: o as u32,
                        key: key.clone(),
                        got: fmt_opt(*value),
                        want: fmt_opt(want),
                    });
                }
            }
            Op::ReadList { key, values } => {
                let (true, Some(vs)) = (check, values) else {
                    continue;
                };
                let base = store.list.get(key).map_or(&[][..], |v| v.as_slice());
                let mine = own_app.get(key).map_or(&[][..], |v| v.as_slice());
                let same = vs.len() == base.len() + mine.len()
                    && vs[..base.len()] == *base
                    && vs[base.len()..] == *mine;
                if !same {
                    let mut want = base.to_vec();
                    want.extend_from_slice(mine);
                    return Err(CertError::WrongRead {
                        txn: t,
                        op: o as u32,
                        key: key.clone(),
                        got: fmt_list(vs),
                        want: fmt_list(&want),
                    });
                }
            }
            Op::Write { key, value } | Op::Insert { key, value } | Op::Delete { key, value } => {
                own_set(&mut own, key, *value);
            }
            Op::Append { key, value } => {
                own_app.entry(key).or_default().push(*value);
                app.push((key.clone(), *value));
            }
            Op::RangeRead { lo, hi, rows } => {
                if !check {
                    continue;
                }
                let bad = |key: &Key, got: String, want: Option<Value>| {
                    Err(CertError::WrongRead {
                        txn: t,
                        op: o as u32,
                        key: key.clone(),
                        got,
                        want: fmt_opt(want),
                    })
                };
                // Each row listed is the version visible now...
                for (k, v) in rows.iter().filter(|(k, _)| share.has(k)) {
                    let want = own_get(&own, k).or_else(|| store.reg.get(k).copied());
                    if want != Some(*v) {
                        return bad(k, format!("{v} (range row)"), want);
                    }
                }
                // ... and each key visible in range is listed (else it was
                // read as absent). The scans stop at the first key not
                // listed, so they visit at most rows + 1 keys each.
                if lo <= hi {
                    let listed: HashSet<&Key> = rows.iter().map(|(k, _)| k).collect();
                    let first = own.partition_point(|(k, _)| *k < lo);
                    let mine = own[first..].iter().take_while(|(k, _)| *k <= hi);
                    let visible = mine.map(|(k, v)| (*k, *v)).chain(
                        store
                            .sorted()
                            .range::<Key, _>(lo..=hi)
                            .map(|(k, v)| (k, *v)),
                    );
                    for (k, v) in visible {
                        if !listed.contains(k) {
                            return bad(k, "absent (not in the range read)".into(), Some(v));
                        }
                    }
                }
            }
        }
    }
    // The own writes are in key order and distinct already.
    let mut keys: SmallVec<[Key; 2]> = own.iter().map(|(k, _)| (*k).clone()).collect();
    if !app.is_empty() {
        keys.extend(app.iter().map(|(k, _)| k.clone()));
        keys.sort();
        keys.dedup();
    }
    Ok(Effects {
        reg: own.into_iter().map(|(k, v)| (k.clone(), v)).collect(),
        app,
        keys,
    })
}

pub(super) fn install(store: &mut Store, e: Effects) {
    for (k, v) in e.reg {
        if let Some(sorted) = store.sorted.get_mut() {
            sorted.insert(k.clone(), v);
        }
        store.reg.insert(k, v);
    }
    for (k, v) in e.app {
        store.list.entry(k).or_default().push(v);
    }
}

pub(super) fn verify_serial(h: &History, level: Level, use_dbts: bool, order: &[u32]) -> R<()> {
    let pos = positions(h, order)?;
    replay_shares(order.len(), |share| {
        let mut store = Store::default();
        for (i, &t) in order.iter().enumerate() {
            let e = run_txn(h, t, &store, share).map_err(|e| (i, e))?;
            install(&mut store, e);
        }
        Ok(())
    })?;
    check_level_orders(h, level, &pos, &pos)?;
    if use_dbts {
        check_dbts_keys(h, order.iter().copied())?;
    }
    Ok(())
}

pub(super) fn verify_schedule(
    h: &History,
    level: Level,
    use_dbts: bool,
    events: &[(u32, bool)],
) -> R<()> {
    let n = h.txns.len();
    let mut bpos = vec![NONE; n];
    let mut cpos = vec![NONE; n];
    for (i, &(t, c)) in events.iter().enumerate() {
        if t as usize >= n {
            return Err(CertError::NoSuchTxn(t));
        }
        let bad = |why| Err(CertError::BadEvents { txn: t, why });
        let tu = t as usize;
        if !c {
            if bpos[tu] != NONE {
                return bad("begins twice");
            }
            bpos[tu] = i as u32;
        } else {
            if bpos[tu] == NONE {
                return bad("commits before it begins");
            }
            if cpos[tu] != NONE {
                return bad("commits twice");
            }
            cpos[tu] = i as u32;
        }
    }
    // One scan of the history for what three scans would report first: a
    // begin without a commit or a failed transaction included, else the
    // first `ok` transaction left out (`check_all_ok_present`).
    let mut missing = None;
    for (t, txn) in h.txns.iter().enumerate() {
        if bpos[t] != NONE && cpos[t] == NONE {
            return Err(CertError::BadEvents {
                txn: t as u32,
                why: "begins but never commits",
            });
        }
        if cpos[t] != NONE && txn.status == Status::Fail {
            return Err(CertError::FailIncluded(t as u32));
        }
        if missing.is_none() && cpos[t] == NONE && txn.status == Status::Ok {
            missing = Some(CertError::MissingOk(t as u32));
        }
    }
    if let Some(e) = missing {
        return Err(e);
    }
    replay_shares(events.len(), |share| {
        replay_schedule(h, events, &bpos, share)
    })?;
    check_level_orders(h, level, &cpos, &bpos)?;
    if use_dbts {
        check_dbts_keys(h, events.iter().filter(|e| e.1).map(|e| e.0))?;
        check_dbts_events(h, events)?;
    }
    Ok(())
}

/// The session and real-time orders, where `level` uses them: the earlier
/// transaction's `end_pos` comes before the later one's `start_pos` (one
/// position each in a serial order; commit and begin in a schedule).
fn check_level_orders(h: &History, level: Level, end_pos: &[u32], start_pos: &[u32]) -> R<()> {
    if uses_so(level) {
        check_sessions(h, end_pos, start_pos)?;
    }
    if level.uses_real_time() {
        check_real_time(h, end_pos, start_pos)?;
    }
    Ok(())
}

/// The replay of a schedule on the keys of `share`: each read is checked at
/// its begin event against the store of what committed before it, and
/// writes are installed at the commit event. A failure comes with its
/// event's position.
fn replay_schedule(
    h: &History,
    events: &[(u32, bool)],
    bpos: &[u32],
    share: Share,
) -> Result<(), (usize, CertError)> {
    let mut store = Store::default();
    let mut pending: HashMap<u32, Effects> = HashMap::default();
    // Per key, the latest commit (position, txn) of a writer.
    let mut last_commit: HashMap<Key, (u32, u32)> = HashMap::default();
    // The latest begun transaction's effects, outside `pending`: most
    // commit right after they begin (always in a serial schedule).
    let mut latest: Option<(u32, Effects)> = None;
    for (i, &(t, c)) in events.iter().enumerate() {
        if !c {
            if let Some((u, e)) = latest.take() {
                pending.insert(u, e);
            }
            latest = Some((t, run_txn(h, t, &store, share).map_err(|e| (i, e))?));
            continue;
        }
        let e = match latest.take() {
            Some((u, e)) if u == t => e,
            other => {
                if let Some((u, e)) = other {
                    pending.insert(u, e);
                }
                pending.remove(&t).expect("begun before commit")
            }
        };
        for k in &e.keys {
            let Some(last) = last_commit.get_mut(k) else {
                last_commit.insert(k.clone(), (i as u32, t));
                continue;
            };
            let (p, u) = *last;
            if p > bpos[t as usize] {
                return Err((
                    i,
                    CertError::FirstCommitterWins {
                        txn: t,
                        other: u,
                        key: k.clone(),
                    },
                ));
            }
            *last = (i as u32, t);
        }
        install(&mut store, e);
    }
    Ok(())
}

/// With timestamps, SI: timestamped events in non-decreasing (timestamp,
/// begin-before-commit) order.
pub(super) fn check_dbts_events(h: &History, events: &[(u32, bool)]) -> R<()> {
    let mut max: Option<((u64, bool), u32)> = None;
    for &(t, c) in events {
        let Some(d) = h.txns[t as usize].dbts else {
            continue;
        };
        let ts = if c {
            match d.commit {
                Some(x) => x,
                None => continue,
            }
        } else {
            d.start
        };
        let key = (ts, c);
        match max {
            Some((m, u)) if key < m => {
                return Err(CertError::DbTsEvents {
                    first: u,
                    first_commit: m.1,
                    second: t,
                    second_commit: c,
                })
            }
            Some((m, _)) if key == m => {}
            _ => max = Some((key, t)),
        }
    }
    Ok(())
}
