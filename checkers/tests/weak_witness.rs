//! The commit order an `ok` weak-level verdict comes with is checked here
//! against the Biswas–Enea axioms, written out again from their definition,
//! on many random register and list-append histories.

use std::collections::HashMap;

use checkers::index::Index;
use checkers::weak::{check_weak, WeakVerdict};
use checkers_testkit::{random_history, random_list_history, GenConfig};
use history::{to_jsonl_string, History, Key, Level, Op, Status, Value};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// One external read: its op, key, the writer of the version read (`None`:
/// the initial version), every transaction read from, and for a list the
/// elements seen.
struct Ext {
    op: usize,
    key: Key,
    version: Option<usize>,
    from: Vec<usize>,
    seen: Option<Vec<Value>>,
    /// A list read after the transaction's own appends to the key.
    internal: bool,
}

/// Why `order` is not a commit order satisfying `level`, if it is not.
fn violation(h: &History, level: Level, order: &[u32]) -> Option<String> {
    let n = h.txns.len();
    let mut pos = vec![usize::MAX; n];
    for (i, &t) in order.iter().enumerate() {
        if t as usize >= n || pos[t as usize] != usize::MAX {
            return Some(format!("T{t} is not a transaction, or twice"));
        }
        pos[t as usize] = i;
    }
    let inc = |t: usize| pos[t] != usize::MAX;
    for (t, txn) in h.txns.iter().enumerate() {
        match txn.status {
            Status::Ok if !inc(t) => return Some(format!("ok T{t} left out")),
            Status::Fail if inc(t) => return Some(format!("failed T{t} commits")),
            _ => {}
        }
    }
    let co = |a: usize, b: usize| pos[a] < pos[b];
    // Writers of each value; each transaction's writes per key in order.
    let mut writer: HashMap<(Key, Value), usize> = HashMap::new();
    let writes_of = |t: usize, x: &Key| -> Vec<Value> {
        h.txns[t]
            .ops
            .iter()
            .filter_map(|o| o.written().filter(|(k, _)| *k == x).map(|(_, v)| v))
            .collect()
    };
    for (t, txn) in h.txns.iter().enumerate() {
        for o in &txn.ops {
            if let Some((k, v)) = o.written() {
                writer.insert((k.clone(), v), t);
            }
        }
    }
    let mut reads: Vec<Vec<Ext>> = (0..n).map(|_| Vec::new()).collect();
    for (t, txn) in h.txns.iter().enumerate() {
        if !inc(t) || txn.status != Status::Ok {
            continue;
        }
        let mut own: HashMap<Key, Vec<Value>> = HashMap::new();
        for (o, op) in txn.ops.iter().enumerate() {
            match op {
                Op::Read { key, value } => {
                    if let Some(mine) = own.get(key) {
                        if *value != mine.last().copied() {
                            return Some(format!("T{t} misses its own write"));
                        }
                        continue;
                    }
                    let version = match value {
                        None => None,
                        Some(v) => match writer.get(&(key.clone(), *v)) {
                            Some(&w) if w != t && inc(w) && writes_of(w, key).last() == Some(v) => {
                                Some(w)
                            }
                            _ => return Some(format!("T{t} reads {key}={v} from nowhere")),
                        },
                    };
                    reads[t].push(Ext {
                        op: o,
                        key: key.clone(),
                        version,
                        from: version.into_iter().collect(),
                        seen: None,
                        internal: false,
                    });
                }
                Op::ReadList {
                    key,
                    values: Some(vs),
                } => {
                    let mine: &[Value] = own.get(key).map_or(&[], Vec::as_slice);
                    if !vs.ends_with(mine) {
                        return Some(format!("T{t} misses its own appends"));
                    }
                    let seen = vs[..vs.len() - mine.len()].to_vec();
                    let mut from = Vec::new();
                    for v in &seen {
                        match writer.get(&(key.clone(), *v)) {
                            Some(&w) if w != t && inc(w) => from.push(w),
                            _ => return Some(format!("T{t} reads {v} in {key} from nowhere")),
                        }
                    }
                    reads[t].push(Ext {
                        op: o,
                        key: key.clone(),
                        version: from.last().copied(),
                        from,
                        seen: Some(seen),
                        internal: !mine.is_empty(),
                    });
                }
                _ => {
                    if let Some((k, v)) = op.written() {
                        own.entry(k.clone()).or_default().push(v);
                    }
                }
            }
        }
    }
    let txns: Vec<usize> = (0..n).filter(|&t| inc(t)).collect();
    let so = |a: usize, b: usize| a < b && h.txns[a].session == h.txns[b].session;
    let wr = |a: usize, b: usize| reads[b].iter().any(|r| r.from.contains(&a));
    for &a in &txns {
        for &b in &txns {
            if (so(a, b) || wr(a, b)) && !co(a, b) {
                return Some(format!("T{a} (so ∪ wr) T{b} but not co"));
            }
        }
    }
    // (so ∪ wr)+ for cc.
    let mut hb = vec![vec![false; n]; n];
    for &a in &txns {
        for &b in &txns {
            hb[a][b] = so(a, b) || wr(a, b);
        }
    }
    for m in 0..n {
        let via = hb[m].clone();
        for row in hb.iter_mut() {
            if row[m] {
                for (cell, &reach) in row.iter_mut().zip(&via) {
                    *cell |= reach;
                }
            }
        }
    }
    for &t3 in &txns {
        for r in &reads[t3] {
            if let Some(seen) = &r.seen {
                let upto = r.version.map_or(0, |t2| pos[t2] + 1);
                let built: Vec<Value> = order[..upto]
                    .iter()
                    .flat_map(|&w| writes_of(w as usize, &r.key))
                    .collect();
                if built != *seen {
                    return Some(format!(
                        "T{t3} read {} = {seen:?}, the order builds {built:?}",
                        r.key
                    ));
                }
            }
            // At rc a list read after its own appends is no observation in
            // program order: its content counts, the axiom does not.
            if level == Level::Rc && r.internal {
                continue;
            }
            for &t1 in &txns {
                if Some(t1) == r.version || writes_of(t1, &r.key).is_empty() {
                    continue;
                }
                let premise = match level {
                    Level::Rc => reads[t3]
                        .iter()
                        .any(|r2| r2.op < r.op && !r2.internal && r2.from.contains(&t1)),
                    Level::Ra => so(t1, t3) || wr(t1, t3),
                    Level::Cc => hb[t1][t3],
                    Level::Pc => txns
                        .iter()
                        .any(|&t4| (t4 == t1 || co(t1, t4)) && (so(t4, t3) || wr(t4, t3))),
                    _ => unreachable!("weak levels only"),
                };
                if premise && !r.version.is_some_and(|t2| co(t1, t2)) {
                    return Some(format!(
                        "T{t3} reads {} from {:?}; the premise puts T{t1} before it",
                        r.key, r.version
                    ));
                }
            }
        }
    }
    None
}

/// The witnesses checked per level, and pc's by where they came from: a
/// strong-session SI schedule, or the split history.
fn run(lists: bool, cfg: &GenConfig, seed: u64, count: usize) -> ([usize; 4], [usize; 2]) {
    let levels = [Level::Rc, Level::Ra, Level::Cc, Level::Pc];
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut shown = [0usize; 4];
    let mut pc_by = [0usize; 2];
    for i in 0..count {
        let h = if lists {
            random_list_history(&mut rng, cfg)
        } else {
            random_history(&mut rng, cfg)
        };
        let ix = Index::new(&h);
        for (li, &l) in levels.iter().enumerate() {
            let out = check_weak(&ix, l, li % 2 == 0);
            match (&out.verdict, &out.witness) {
                (WeakVerdict::Ok, Some(w)) => {
                    if let Some(why) = violation(&h, l, w) {
                        panic!(
                            "history {i} at {l}: witness {w:?} fails: {why}\n{}",
                            to_jsonl_string(&h)
                        );
                    }
                    shown[li] += 1;
                    if l == Level::Pc {
                        pc_by[usize::from(out.method == "split SI")] += 1;
                    }
                }
                (WeakVerdict::Ok, None) => panic!("history {i} at {l}: ok without a witness"),
                (_, Some(_)) => panic!("history {i} at {l}: a witness without ok"),
                _ => {}
            }
        }
    }
    eprintln!(
        "lists {lists}, seed {seed:#x}: witnesses checked per level (rc, ra, cc, pc): {shown:?}; pc's from strong-session SI, split SI: {pc_by:?}"
    );
    (shown, pc_by)
}

#[test]
fn ok_verdicts_come_with_a_valid_commit_order() {
    let registers = GenConfig {
        max_txns: 6,
        max_ops: 5,
        p_wild: 0.03,
        per_read_stale: 0.3,
        session_floor: 0.8,
        p_fork: 0.2,
        ..GenConfig::default()
    };
    let lists = GenConfig {
        p_info: 0.15,
        ..registers.clone()
    };
    for (shown, pc_by) in [
        run(false, &registers, 0x3c0, 10_000),
        run(true, &lists, 0x3c1, 10_000),
    ] {
        assert!(shown.iter().all(|&s| s > 1000), "{shown:?}");
        // Both ways of finding a pc witness are checked.
        assert!(pc_by.iter().all(|&s| s > 100), "{pc_by:?}");
    }
}
