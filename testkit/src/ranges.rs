//! Reads rewritten as range reads that mean the same.

use history::{History, Key, Op};

/// A choice [`as_range_reads`] asks about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeStep {
    /// Whether a read of `k` joins the range read of `..=k-1` just before
    /// it; `single`: that range is one key so far.
    Extend { single: bool },
    /// Whether a read of `k` stays a plain read.
    KeepRead,
    /// Whether a read of key 0 becomes a range from `-1` (a key nobody
    /// writes).
    WidenLow,
}

/// Turns reads of integer keys into range reads: a read of `k` becomes
/// `k..=k`, or joins the range read of `..=k-1` just before it, as `choose`
/// says; the rows are the values read.
pub fn as_range_reads(h: &History, choose: &mut dyn FnMut(RangeStep) -> bool) -> History {
    let mut g = h.clone();
    for t in &mut g.txns {
        let mut ops: Vec<Op> = Vec::new();
        for op in t.ops.drain(..) {
            let Op::Read {
                key: Key::Int(k),
                value,
            } = op
            else {
                ops.push(op);
                continue;
            };
            let row: Vec<(Key, i64)> = value.map(|v| (Key::Int(k), v)).into_iter().collect();
            if let Some(Op::RangeRead { lo, hi, rows }) = ops.last_mut() {
                let single = *lo == *hi;
                if *hi == Key::Int(k - 1) && choose(RangeStep::Extend { single }) {
                    *hi = Key::Int(k);
                    rows.extend(row);
                    continue;
                }
            }
            if choose(RangeStep::KeepRead) {
                ops.push(Op::Read {
                    key: Key::Int(k),
                    value,
                });
                continue;
            }
            let lo = if k == 0 && choose(RangeStep::WidenLow) {
                -1
            } else {
                k
            };
            ops.push(Op::RangeRead {
                lo: Key::Int(lo),
                hi: Key::Int(k),
                rows: Box::new(row),
            });
        }
        t.ops = ops;
    }
    g
}
