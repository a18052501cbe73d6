//! Each key's writes, per session, laid out for one question that causal
//! consistency asks of every read: given the reader's vector clock `hi`
//! and its source's `lo` (entry `s`: how many of session `s`'s
//! transactions each has in its causal past), which sessions wrote the
//! key in between, and where is the latest such write?
//!
//! Both cc's decision (`decide/weak/cc.rs`) and its certificate
//! (`certify/plain/cc.rs`) ask it, once for each session that wrote the
//! read's key: reads × writing sessions. With hundreds of sessions and a
//! few writes of a key in each, a search per session is mostly branch
//! misses. So a key with few writes per session is also kept *dense*:
//! row `j` holds, for every session, the index of its `j`-th write of the
//! key (or `i16::MAX`), and the test `lo[s] <= row[j][s] < hi[s]` runs on
//! all sessions at once, in SIMD lanes; only the sessions it picks are
//! looked at one by one. A key with many writes per session (a hot key,
//! read most) gets a table of counts instead: per session and block of
//! [`BLOCK`] transactions, how many of the session's writes of the key
//! come before the block, so the search is one load (from a table small
//! enough to stay in cache) and a step or two. The rest (a memory budget
//! caps both forms) keep the per-session binary search.
//!
//! When every clock fits in memory at once, both callers avoid the
//! question instead: they walk each key's writers in an order, keeping
//! per session the first writer not yet passed ([`by_key`],
//! [`start_walk`], [`end_walk`]), and compare whole clocks against that
//! vector, on every core ([`walk_parallel`]); all they ask of the
//! writes is a key's runs by session ([`SessionWrites::runs_of`]).

/// No dense rows.
const NONE: u32 = u32::MAX;

/// A vector clock entry (a count of a session's transactions): `i16` when
/// sessions are short enough, as its element-wise max and compares
/// vectorize on baseline x86-64, else `u32`.
pub(crate) trait ClockEntry: Copy + Ord + Default + Send + Sync {
    /// The entry counting `x` transactions.
    fn of(x: u32) -> Self;
    /// The count.
    fn get(self) -> u32;
    /// The clock as `i16` lanes, for the dense test; `None` when wider.
    fn narrow(clock: &[Self]) -> Option<&[i16]>;
    /// Above every entry of a clock.
    fn never() -> Self;
}

impl ClockEntry for i16 {
    fn of(x: u32) -> Self {
        x as i16
    }
    fn get(self) -> u32 {
        self as u32
    }
    fn narrow(clock: &[Self]) -> Option<&[i16]> {
        Some(clock)
    }
    fn never() -> Self {
        i16::MAX
    }
}

impl ClockEntry for u32 {
    fn of(x: u32) -> Self {
        x
    }
    fn get(self) -> u32 {
        self
    }
    fn narrow(_: &[Self]) -> Option<&[i16]> {
        None
    }
    fn never() -> Self {
        u32::MAX
    }
}

/// Joins into clock `vc` a causal predecessor of session `s`, counted
/// `tick` (1 + its index in its session), whose own clock is `past`.
/// Nothing to do when `vc` counts it already: then its whole past is in
/// too (the session predecessor, joined first, often brings it).
pub(crate) fn join<T: ClockEntry>(vc: &mut [T], s: usize, tick: T, past: &[T]) {
    if vc[s] >= tick {
        return;
    }
    for (a, &b) in vc.iter_mut().zip(past) {
        *a = (*a).max(b);
    }
    vc[s] = tick;
}

/// Asks the cache for `row` (a hint: no effect on results).
pub(crate) fn prefetch<T>(row: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let bytes = std::mem::size_of_val(row);
        let p = row.as_ptr() as *const i8;
        for off in (0..bytes).step_by(64) {
            // SAFETY: a prefetch is a hint that never faults, whatever the
            // address; SSE is part of every x86-64.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = row;
}

/// The latest of `run` (ascending in-session indices) below `c`.
pub(crate) fn latest_in(run: &[u32], c: u32) -> Option<u32> {
    let j = run.partition_point(|&w| w < c);
    (j > 0).then(|| run[j - 1])
}

/// `len` zeroed clock entries for a walk that reads them at random: on
/// Linux backed by huge pages where the kernel allows, as 4 KB pages would
/// make nearly every clock read a TLB miss (on 100 MB of clocks, a quarter
/// of the certificate's cc samples sat on one prefetch). A hint: without
/// it, the same vector.
pub(crate) fn zeroed_clocks<T: ClockEntry>(len: usize) -> Vec<T> {
    let v = vec![T::default(); len];
    #[cfg(target_os = "linux")]
    {
        let bytes = std::mem::size_of_val(v.as_slice());
        if bytes >= HUGE {
            // The part inside whole 4 KB pages; the allocation is fresh and
            // untouched, so the pages are faulted in huge from the start.
            let start = v.as_ptr() as usize;
            let lo = start.next_multiple_of(4096);
            let hi = (start + bytes) & !4095;
            if hi > lo {
                // SAFETY: madvise only advises on pages of this live
                // allocation; MADV_HUGEPAGE changes no contents.
                unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
            }
        }
    }
    v
}

/// Clocks below this many bytes are left on ordinary pages.
const HUGE: usize = 8 << 20;

/// True when every session is short enough for `i16` clock entries (and
/// for `i16::MAX` to stay above every entry, as dense padding).
pub(crate) fn narrow_fits(longest_session: usize) -> bool {
    longest_session < i16::MAX as usize - 1
}

/// A key is kept dense only while its rows stay this few.
const MAX_DEPTH: usize = 16;

/// Dense rows, over all keys, stop at this many cells (64 MB).
const MAX_DENSE_CELLS: usize = 32 << 20;

/// Count tables, over all keys, stop at this many cells (64 MB).
const MAX_COUNT_CELLS: usize = 32 << 20;

/// A count table has one entry per this many transactions of a session
/// (a power of two: [`BLOCK_SHIFT`]).
const BLOCK: usize = 1 << BLOCK_SHIFT;
const BLOCK_SHIFT: u32 = 4;

/// Lanes tested together: wide enough for the compiler's SIMD, small
/// enough to keep the per-lane flags in registers.
const LANES: usize = 16;

/// How many writes a key has.
fn idx_len(runs: &[(u32, u32, u32)], k: &KeyAt) -> u32 {
    let (from, to) = k.runs;
    if from == to {
        return 0;
    }
    runs[to as usize - 1].2 - runs[from as usize].1
}

/// Where one key's writes are.
#[derive(Clone, Copy)]
struct KeyAt {
    /// Its runs, `runs[from..to]`.
    runs: (u32, u32),
    /// Its first dense row in `dense` (in cells), or [`NONE`].
    dense: u32,
    /// How many dense rows (its most writes in one session).
    depth: u32,
    /// Its count table in `counts` (in cells), or [`NONE`].
    counts: u32,
}

/// Each key's writes per session: in-session indices, ascending.
pub(crate) struct SessionWrites {
    sessions: usize,
    keys: Vec<KeyAt>,
    /// (session, from, to) into `idx`, per key by session.
    runs: Vec<(u32, u32, u32)>,
    idx: Vec<u32>,
    dense: Vec<i16>,
    /// Where each session's entries start in a key's count table (entry
    /// `b` of session `s`: its writes of the key with index below
    /// `b * BLOCK`).
    count_base: Vec<u32>,
    counts: Vec<u16>,
}

impl SessionWrites {
    /// From `(key, session, index in session)` triples of every write of
    /// `nk` keys by `sessions` sessions (sorted here): runs only (all
    /// [`runs_of`](Self::runs_of) needs).
    pub(crate) fn searched(
        nk: usize,
        sessions: usize,
        mut triples: Vec<(u32, u32, u32)>,
    ) -> SessionWrites {
        triples.sort_unstable();
        let idx: Vec<u32> = triples.iter().map(|t| t.2).collect();
        let mut keys = Vec::with_capacity(nk);
        let mut runs: Vec<(u32, u32, u32)> = Vec::new();
        let mut i = 0;
        for key in 0..nk as u32 {
            let first = runs.len() as u32;
            let mut depth = 0;
            while i < triples.len() && triples[i].0 == key {
                let (s, from) = (triples[i].1, i);
                while i < triples.len() && triples[i].0 == key && triples[i].1 == s {
                    i += 1;
                }
                runs.push((s, from as u32, i as u32));
                depth = depth.max(i - from);
            }
            keys.push(KeyAt {
                runs: (first, runs.len() as u32),
                dense: NONE,
                depth: depth as u32,
                counts: NONE,
            });
        }
        SessionWrites {
            sessions,
            keys,
            runs,
            idx,
            dense: Vec::new(),
            count_base: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// [`searched`](Self::searched), with dense rows (when `narrow`: the
    /// callers' clocks are `i16`) and count tables where they pay, for
    /// [`latest_between`](Self::latest_between); sessions of
    /// `session_lens` transactions.
    pub(crate) fn new(
        nk: usize,
        session_lens: &[usize],
        triples: Vec<(u32, u32, u32)>,
        narrow: bool,
    ) -> SessionWrites {
        let mut w = SessionWrites::searched(nk, session_lens.len(), triples);
        if narrow {
            w.add_dense();
        }
        w.add_counts(session_lens);
        w
    }

    /// Dense rows for the keys whose rows are few, and cheaper than
    /// searching each of their sessions (about 50 lanes a search).
    fn add_dense(&mut self) {
        let k = self.sessions;
        for key in self.keys.iter_mut() {
            let mine = &self.runs[key.runs.0 as usize..key.runs.1 as usize];
            let (depth, cells) = (key.depth as usize, key.depth as usize * k);
            let worth = depth <= MAX_DEPTH && cells <= 50 * mine.len();
            if !worth || self.dense.len() + cells > MAX_DENSE_CELLS {
                continue;
            }
            let at = self.dense.len();
            self.dense.resize(at + cells, i16::MAX);
            for &(s, from, to) in mine {
                for (j, &w) in self.idx[from as usize..to as usize].iter().enumerate() {
                    self.dense[at + j * k + s as usize] = w as i16;
                }
            }
            key.dense = at as u32;
        }
    }

    /// Count tables for the keys left to search with many writes in one
    /// session, most writes first, within [`MAX_COUNT_CELLS`].
    fn add_counts(&mut self, session_lens: &[usize]) {
        let mut width = 0usize;
        for &len in session_lens {
            self.count_base.push(width as u32);
            width += len / BLOCK + 1;
        }
        let keys = &self.keys;
        let mut deep: Vec<u32> = (0..keys.len() as u32)
            .filter(|&x| keys[x as usize].dense == NONE && keys[x as usize].depth > 4)
            .filter(|&x| keys[x as usize].depth <= u16::MAX as u32)
            .collect();
        deep.sort_unstable_by_key(|&x| std::cmp::Reverse(idx_len(&self.runs, &keys[x as usize])));
        for x in deep {
            if self.counts.len() + width > MAX_COUNT_CELLS || width >= NONE as usize {
                break;
            }
            let at = self.counts.len();
            self.counts.resize(at + width, 0);
            let (from, to) = self.keys[x as usize].runs;
            for &(s, a, b) in &self.runs[from as usize..to as usize] {
                let base = at + self.count_base[s as usize] as usize;
                let table = &mut self.counts[base..base + session_lens[s as usize] / BLOCK + 1];
                let run = &self.idx[a as usize..b as usize];
                for (block, cell) in table.iter_mut().enumerate() {
                    *cell = run.partition_point(|&w| (w as usize) < block * BLOCK) as u16;
                }
            }
            self.keys[x as usize].counts = at as u32;
        }
    }

    /// Calls `found(s, w)`, sessions ascending, for each session `s` whose
    /// latest write of key `x` below `hi[s]` has index `w >= lo[s]` (`lo`:
    /// `None` for zeros). Stops, false, at the first `found` that says
    /// false.
    pub(crate) fn latest_between<T: ClockEntry>(
        &self,
        x: u32,
        hi: &[T],
        lo: Option<&[T]>,
        mut found: impl FnMut(u32, u32) -> bool,
    ) -> bool {
        let at = self.keys[x as usize];
        if at.dense != NONE {
            if let Some(hi) = T::narrow(hi) {
                let lo = lo.map(|lo| T::narrow(lo).expect("one clock type"));
                return self.dense_between(at, hi, lo, found);
            }
        }
        for &(s, from, to) in &self.runs[at.runs.0 as usize..at.runs.1 as usize] {
            let c = hi[s as usize];
            if c == T::default() || lo.is_some_and(|lo| c <= lo[s as usize]) {
                continue; // nothing of session s beyond lo
            }
            let run = &self.idx[from as usize..to as usize];
            let j = if at.counts != NONE {
                let base = at.counts as usize + self.count_base[s as usize] as usize;
                let mut j = self.counts[base + (c.get() >> BLOCK_SHIFT) as usize] as usize;
                while j < run.len() && run[j] < c.get() {
                    j += 1;
                }
                j
            } else {
                run.partition_point(|&w| w < c.get())
            };
            if j == 0 {
                continue;
            }
            let w = run[j - 1];
            if lo.is_some_and(|lo| w < lo[s as usize].get()) {
                continue;
            }
            if !found(s, w) {
                return false;
            }
        }
        true
    }

    /// The index of session `s`'s latest write of key `x` below `c` (the
    /// walks index [`runs_of`](Self::runs_of) by session instead).
    #[cfg(test)]
    fn latest_below(&self, x: u32, s: u32, c: u32) -> Option<u32> {
        let runs = self.runs_of(x);
        let i = runs.binary_search_by_key(&s, |r| r.0).ok()?;
        let (_, from, to) = runs[i];
        latest_in(self.run(from, to), c)
    }

    /// Key `x`'s writing sessions, in order, each as (session, its run's
    /// bounds for [`run`](Self::run)): for a caller asking about one key
    /// many times, to index by session instead of searching.
    pub(crate) fn runs_of(&self, x: u32) -> &[(u32, u32, u32)] {
        let at = self.keys[x as usize];
        &self.runs[at.runs.0 as usize..at.runs.1 as usize]
    }

    /// A session's writes of a key (bounds from [`runs_of`](Self::runs_of)):
    /// their in-session indices, ascending.
    pub(crate) fn run(&self, from: u32, to: u32) -> &[u32] {
        &self.idx[from as usize..to as usize]
    }

    /// [`latest_between`](Self::latest_between) on a dense key.
    fn dense_between(
        &self,
        at: KeyAt,
        hi: &[i16],
        lo: Option<&[i16]>,
        mut found: impl FnMut(u32, u32) -> bool,
    ) -> bool {
        let k = self.sessions;
        let rows = &self.dense[at.dense as usize..][..at.depth as usize * k];
        let zeros = [0i16; LANES];
        let mut base = 0;
        while base < k {
            let lanes = LANES.min(k - base);
            let h = &hi[base..base + lanes];
            let l = lo.map_or(&zeros[..lanes], |lo| &lo[base..base + lanes]);
            // Per lane: 1 when some row's write is in [lo, hi).
            let mut hit = [0i16; LANES];
            if lanes == LANES {
                let (h, l): (&[i16; LANES], &[i16; LANES]) =
                    (h.try_into().unwrap(), l.try_into().unwrap());
                for row in rows.chunks_exact(k) {
                    let r: &[i16; LANES] = row[base..base + LANES].try_into().unwrap();
                    for q in 0..LANES {
                        hit[q] |= ((r[q] >= l[q]) & (r[q] < h[q])) as i16;
                    }
                }
            } else {
                for row in rows.chunks_exact(k) {
                    for q in 0..lanes {
                        let w = row[base + q];
                        hit[q] |= ((w >= l[q]) & (w < h[q])) as i16;
                    }
                }
            }
            if hit.iter().any(|&b| b != 0) {
                for q in (0..lanes).filter(|&q| hit[q] != 0) {
                    let s = base + q;
                    // Rows ascend per session: the last one below hi.
                    let w = rows
                        .chunks_exact(k)
                        .map(|row| row[s])
                        .take_while(|&w| w < hi[s])
                        .last()
                        .expect("a hit lane has a write below hi");
                    if !found(s as u32, w as u32) {
                        return false;
                    }
                }
            }
            base += lanes;
        }
        true
    }
}

/// A write in a per-key walk: (key, the writer's position in the order).
pub(crate) type WalkWrite = (u32, u32);

/// A read in a per-key walk: (key, 1 + the source's position or 0, the
/// reader's position).
pub(crate) type WalkRead = (u32, u32, u32);

/// Sorts a walk's lists as [`by_key`] wants them, in linear time: `writes`
/// come in position order and `reads` in reader order (as the callers
/// build them, walking their order), so stable counting sorts by source,
/// then by key, give what a comparison sort would.
pub(crate) fn sort_walk(
    keys: usize,
    positions: usize,
    writes: &mut Vec<WalkWrite>,
    reads: &mut Vec<WalkRead>,
) {
    let mut w = Vec::new();
    counting_sort(writes, &mut w, keys, |e| e.0 as usize);
    *writes = w;
    let mut r = Vec::new();
    counting_sort(reads, &mut r, positions + 1, |e| e.1 as usize);
    counting_sort(&r, reads, keys, |e| e.0 as usize);
}

/// `out` becomes `v` stably sorted by `key` (below `buckets`).
fn counting_sort<E: Copy>(v: &[E], out: &mut Vec<E>, buckets: usize, key: impl Fn(&E) -> usize) {
    let mut at = vec![0u32; buckets + 1];
    for e in v {
        at[key(e) + 1] += 1;
    }
    for b in 0..buckets {
        at[b + 1] += at[b];
    }
    out.clear();
    let Some(&first) = v.first() else { return };
    out.resize(v.len(), first);
    for e in v {
        let b = &mut at[key(e)];
        out[*b as usize] = *e;
        *b += 1;
    }
}

/// True when a per-key walk may keep every clock of `txns` transactions
/// over `sessions` sessions at once: at most 64 M entries (128 MB of
/// `i16`); past it, the callers search per read and free each clock after
/// its last use.
pub(crate) fn walk_fits(txns: usize, sessions: usize) -> bool {
    txns.saturating_mul(sessions) <= 64 << 20
}

/// The per-key walks of cc (`decide/weak/cc.rs`, `certify/plain/cc.rs`)
/// share this: `writes` as (key, position in the walk's order) and
/// `reads` as (key, 1 + the source's position or 0, the reader's), both
/// sorted, cut into (writers, reads) of each key that is read.
pub(crate) fn by_key<'a>(
    writes: &'a [WalkWrite],
    reads: &'a [WalkRead],
) -> impl Iterator<Item = (&'a [WalkWrite], &'a [WalkRead])> {
    let (mut w, mut r) = (0, 0);
    std::iter::from_fn(move || {
        let x = reads.get(r)?.0;
        let rs = r;
        while r < reads.len() && reads[r].0 == x {
            r += 1;
        }
        while w < writes.len() && writes[w].0 < x {
            w += 1;
        }
        let ws = w;
        while w < writes.len() && writes[w].0 == x {
            w += 1;
        }
        Some((&writes[ws..w], &reads[rs..r]))
    })
}

/// Fewer reads than this are walked on one thread: a thread costs more
/// than it saves.
#[cfg(not(test))]
const PARALLEL_WALK_READS: usize = 1 << 16;
/// Tests: their histories are small, and the parts must agree with one walk.
#[cfg(test)]
const PARALLEL_WALK_READS: usize = 8;

/// Parts a core: a key's cost is its reads times how many sessions wrote
/// it, and a few hot keys would leave one core alone with them.
const PARTS_A_CORE: usize = 16;

/// The per-key walks are independent, so the callers walk on every core
/// (at most 4): `writes` and `reads` (as for [`by_key`]) are cut at key
/// boundaries into parts of about as many reads each, which the threads
/// take in turn; `walk` is called on each part, and its results come back
/// in key order, as one walk would give them.
pub(crate) fn walk_parallel<R: Send>(
    writes: &[WalkWrite],
    reads: &[WalkRead],
    walk: impl Fn(&[WalkWrite], &[WalkRead]) -> R + Sync,
) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get().min(4));
    if cores == 1 || reads.len() < PARALLEL_WALK_READS {
        return vec![walk(writes, reads)];
    }
    let parts = cut(writes, reads, cores * PARTS_A_CORE);
    let taken = std::sync::atomic::AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(&(w, r)) = parts.get(i) else {
                return done;
            };
            done.push((i, walk(w, r)));
        }
    };
    let mut all: Vec<(usize, R)> = std::thread::scope(|scope| {
        let others: Vec<_> = (1..cores).map(|_| scope.spawn(work)).collect();
        let mut all = work();
        for h in others {
            all.extend(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        all
    });
    all.sort_unstable_by_key(|p| p.0);
    all.into_iter().map(|p| p.1).collect()
}

/// `writes` and `reads` cut at key boundaries into at most `parts` parts
/// of about as many reads each (none empty), in key order.
fn cut<'a>(
    writes: &'a [WalkWrite],
    reads: &'a [WalkRead],
    parts: usize,
) -> Vec<(&'a [WalkWrite], &'a [WalkRead])> {
    let mut out = Vec::with_capacity(parts);
    let (mut w, mut r) = (0, 0);
    for p in 1..=parts {
        // This part ends after the key of the read at its share.
        let share = reads.len() * p / parts;
        if share <= r {
            continue;
        }
        let x = reads[share - 1].0;
        let end = r + reads[r..].partition_point(|e| e.0 <= x);
        let wend = match reads.get(end) {
            Some(e) => w + writes[w..].partition_point(|v| v.0 < e.0),
            None => writes.len(),
        };
        out.push((&writes[w..wend], &reads[r..end]));
        (w, r) = (wend, end);
    }
    out
}

/// Starts a key's walk over its writers `mine` (in walk order; `place`
/// gives a writer's session and in-session index): sets `next[s]` to
/// session `s`'s first writer and `after[j]` to the one after writer `j`
/// in its session ([`ClockEntry::never`]: none), and lists the sessions
/// set in `touched`, for [`end_walk`].
pub(crate) fn start_walk<T: ClockEntry>(
    mine: &[WalkWrite],
    place: &impl Fn(u32) -> (usize, u32),
    next: &mut [T],
    after: &mut Vec<T>,
    touched: &mut Vec<u32>,
) {
    after.clear();
    after.resize(mine.len(), T::never());
    for (j, &(_, i)) in mine.iter().enumerate().rev() {
        let (s, idx) = place(i);
        after[j] = next[s];
        next[s] = T::of(idx);
        touched.push(s as u32);
    }
}

/// Ends a key's walk: `next` back to [`ClockEntry::never`] and `last` (if
/// any) to zero where [`start_walk`] set them.
pub(crate) fn end_walk<T: ClockEntry>(next: &mut [T], last: &mut [T], touched: &mut Vec<u32>) {
    for &s in touched.iter() {
        next[s as usize] = T::never();
        if let Some(l) = last.get_mut(s as usize) {
            *l = T::default();
        }
    }
    touched.clear();
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};

    use super::*;

    /// What [`SessionWrites::latest_between`] must say, by brute force.
    fn expected(
        triples: &[(u32, u32, u32)],
        x: u32,
        hi: &[u32],
        lo: Option<&[u32]>,
    ) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for s in 0..hi.len() as u32 {
            let latest = triples
                .iter()
                .filter(|t| t.0 == x && t.1 == s && t.2 < hi[s as usize])
                .map(|t| t.2)
                .max();
            if let Some(w) = latest {
                if lo.is_none_or(|lo| w >= lo[s as usize]) {
                    out.push((s, w));
                }
            }
        }
        out
    }

    /// Dense keys, counted keys, searched keys, and clocks of both widths give the
    /// brute-force answer, over session counts around the lane width.
    #[test]
    fn dense_and_searched_keys_agree_with_brute_force() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x5e55);
        let (mut dense_keys, mut counted_keys) = (0, 0);
        for round in 0..400 {
            let sessions = [1, 3, 15, 16, 17, 40][round % 6];
            let nk = rng.random_range(1..6);
            let per_session = rng.random_range(1..30u32);
            let mut triples = Vec::new();
            for s in 0..sessions as u32 {
                for i in 0..per_session {
                    if rng.random_bool(0.3) {
                        triples.push((rng.random_range(0..nk as u32), s, i));
                    }
                }
            }
            let lens = vec![per_session as usize; sessions];
            let wide = SessionWrites::new(nk, &lens, triples.clone(), false);
            let narrow = SessionWrites::new(nk, &lens, triples.clone(), true);
            dense_keys += narrow.keys.iter().filter(|k| k.dense != NONE).count();
            counted_keys += wide.keys.iter().filter(|k| k.counts != NONE).count();
            for _ in 0..20 {
                let x = rng.random_range(0..nk as u32);
                let hi: Vec<u32> = (0..sessions)
                    .map(|_| rng.random_range(0..=per_session))
                    .collect();
                let lo: Option<Vec<u32>> = rng
                    .random_bool(0.7)
                    .then(|| hi.iter().map(|&h| rng.random_range(0..=h)).collect());
                let want = expected(&triples, x, &hi, lo.as_deref());
                let mut got = Vec::new();
                wide.latest_between(x, &hi, lo.as_deref(), |s, w| {
                    got.push((s, w));
                    true
                });
                assert_eq!(got, want);
                for s in 0..sessions as u32 {
                    let latest = triples
                        .iter()
                        .filter(|t| t.0 == x && t.1 == s && t.2 < hi[s as usize])
                        .map(|t| t.2)
                        .max();
                    assert_eq!(wide.latest_below(x, s, hi[s as usize]), latest);
                }
                let hi16: Vec<i16> = hi.iter().map(|&v| v as i16).collect();
                let lo16: Option<Vec<i16>> =
                    lo.as_ref().map(|l| l.iter().map(|&v| v as i16).collect());
                got.clear();
                narrow.latest_between(x, &hi16, lo16.as_deref(), |s, w| {
                    got.push((s, w));
                    true
                });
                assert_eq!(got, want);
                // Stopping at the first answer stops.
                if !want.is_empty() {
                    let mut calls = 0;
                    let done = narrow.latest_between(x, &hi16, lo16.as_deref(), |_, _| {
                        calls += 1;
                        false
                    });
                    assert!(!done);
                    assert_eq!(calls, 1);
                }
            }
        }
        assert!(dense_keys > 200, "too few dense keys tested: {dense_keys}");
        assert!(
            counted_keys > 200,
            "too few counted keys tested: {counted_keys}"
        );
    }
}
