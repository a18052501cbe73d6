//! The time series of a run and their inline SVG line charts: committed
//! throughput, latency and abort rate per time bucket, with every fault
//! window shaded.

use std::fmt::Write as _;

use history::{Fault, History, Status, Txn};

use crate::quantiles::Latencies;

pub(super) use super::axes::*;
use super::escape::escape;

/// At most this many buckets.
pub const BUCKETS: u64 = 100;
/// At least this many buckets, when the run is long enough in ns.
const MIN_BUCKETS: u64 = 10;
/// About this many transactions a bucket, on average, so that a bucket's
/// percentiles mean something and few buckets are empty.
const TXNS_PER_BUCKET: u64 = 20;

/// A run cut into equal time buckets; each transaction counts in the
/// bucket of its end (its start when it has no end, as `info` ones do).
#[derive(Clone, Debug, PartialEq)]
pub struct Buckets {
    /// The clock value (ns) the axis counts from: 0 for the harness's
    /// clock, the first time for an imported history's wall clock.
    pub origin: u64,
    /// The clock value (ns) where the first bucket starts: the first
    /// transaction, so that setting up before it takes no room.
    pub t0: u64,
    /// The first and last transaction times (ns).
    pub first: u64,
    pub last: u64,
    /// The width of one bucket, in ns.
    pub width: u64,
    /// Committed (`ok`) transactions per bucket.
    pub committed: Vec<u64>,
    /// Transactions of any outcome per bucket.
    pub attempted: Vec<u64>,
    /// `fail` and `info` transactions per bucket.
    pub aborted: Vec<u64>,
    /// Median latency of the bucket's committed transactions, in ms.
    pub p50_ms: Vec<Option<f64>>,
    /// 99th-percentile latency of the bucket's committed transactions, in ms.
    pub p99_ms: Vec<Option<f64>>,
}

impl Buckets {
    /// The width of one bucket, in seconds.
    pub fn width_s(&self) -> f64 {
        self.width as f64 / 1e9
    }

    /// The time the buckets cover, in seconds.
    pub fn span_s(&self) -> f64 {
        self.width_s() * self.committed.len() as f64
    }

    /// Where the first bucket starts, in seconds from the origin.
    pub fn start_s(&self) -> f64 {
        (self.t0 - self.origin) as f64 / 1e9
    }

    /// Committed transactions per second, per bucket: over the part of
    /// the bucket the run covers, so that the first and last buckets, which
    /// the run fills only in part, do not show a false drop.
    pub fn throughput(&self) -> Vec<Option<f64>> {
        let n = self.committed.len() as u64;
        self.committed
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                let lo = (self.t0 + i as u64 * self.width).max(self.first);
                let hi = (self.t0 + (i as u64 + 1) * self.width).min(self.last + 1);
                let covered = if n == 1 {
                    self.width
                } else {
                    hi.saturating_sub(lo)
                };
                // A sliver of a bucket says nothing; count it as a whole one.
                let covered = if covered * 4 < self.width {
                    self.width
                } else {
                    covered
                };
                Some(c as f64 / (covered as f64 / 1e9))
            })
            .collect()
    }

    /// The share of `fail` and `info` transactions, per bucket (none when
    /// the bucket has no transaction).
    pub fn abort_rate(&self) -> Vec<Option<f64>> {
        self.aborted
            .iter()
            .zip(&self.attempted)
            .map(|(&a, &n)| (n > 0).then(|| a as f64 / n as f64))
            .collect()
    }
}

/// The times a history spans: over its transactions (the range the plots
/// show) and over everything, faults included (for the origin); `None`
/// when no transaction has a time.
fn time_range(h: &History) -> Option<((u64, u64), u64)> {
    let mut txns: Option<(u64, u64)> = None;
    for t in h.txns.iter().flat_map(|t| [t.start, t.end]).flatten() {
        txns = Some(match txns {
            None => (t, t),
            Some((lo, hi)) => (lo.min(t), hi.max(t)),
        });
    }
    let (lo, hi) = txns?;
    let first = h.faults.iter().map(|f| f.start).fold(lo, u64::min);
    Some(((lo, hi), first))
}

/// The bucket width (ns) for `txns` transactions over `span` ns: about
/// [`TXNS_PER_BUCKET`] transactions a bucket, between [`MIN_BUCKETS`] and
/// [`BUCKETS`] buckets, and a round width (1, 2 or 5 times a power of ten
/// ns) so that the page can say "buckets of 50 ms".
pub fn bucket_width(span: u64, txns: usize) -> u64 {
    let want = (txns as u64 / TXNS_PER_BUCKET).clamp(MIN_BUCKETS, BUCKETS);
    let raw = span.div_ceil(want).max(1);
    let mut mag = 1u64;
    loop {
        for m in [1, 2, 5] {
            if m * mag >= raw {
                return m * mag;
            }
        }
        mag *= 10;
    }
}

/// Times from this on (ns; about 11.6 days) are taken for a wall clock,
/// and the axis counts from the first of them.
const WALL_CLOCK: u64 = 1_000_000_000_000_000;

/// Cuts `h` into buckets ([`bucket_width`]) from its first transaction to
/// its last; `None` when no transaction has a time (imported histories
/// often have none).
pub fn bucket(h: &History) -> Option<Buckets> {
    let ((first, t1), very_first) = time_range(h)?;
    // A harness clock starts at 0 with the clients: keep that origin unless
    // the times are far from it (an imported history's wall clock).
    let origin = if very_first < WALL_CLOCK {
        0
    } else {
        very_first
    };
    let width = bucket_width(t1 - first + 1, h.txns.len());
    // Buckets on round clock values, from the one holding the first time.
    let t0 = origin + (first - origin) / width * width;
    let n = (t1 - t0 + 1).div_ceil(width) as usize;
    let mut b = Bucketing::new(origin, t0, width, n, usize::MAX);
    for t in &h.txns {
        b.add(t);
    }
    b.finish()
}

/// The first bucket width of [`Bucketing::growing`]: 1 ms.
const FIRST_WIDTH: u64 = 1_000_000;
/// The latencies a bucket of [`Bucketing::growing`] keeps exactly (8 kB)
/// before it counts them in a histogram.
const GROWING_EXACT: usize = 1 << 10;

/// Buckets filled one transaction at a time: over the range of a history
/// read whole ([`bucket`]), or, for the recorder of a run, over a range
/// that grows with the run. The growing kind starts at the harness clock's
/// 0 with buckets of 1 ms and, when a time falls past its last bucket,
/// merges neighbours into buckets 2 and then 5 times wider (1, 2, 10, 20,
/// 100 ms ...), so that it never holds more than [`BUCKETS`] buckets and
/// their widths stay round. Each bucket's latencies are exact up to a cap,
/// then a histogram: an hour-long run's charts take no more memory than a
/// minute's.
#[derive(Clone, Debug)]
pub struct Bucketing {
    origin: u64,
    t0: u64,
    width: u64,
    /// Whether the range grows (else a late time counts in the last
    /// bucket).
    grows: bool,
    /// The next growth factor (2, then 5, then 2 ...).
    factor: u64,
    cap: usize,
    range: Option<(u64, u64)>,
    committed: Vec<u64>,
    attempted: Vec<u64>,
    aborted: Vec<u64>,
    lat: Vec<Latencies>,
}

impl Bucketing {
    fn new(origin: u64, t0: u64, width: u64, n: usize, cap: usize) -> Bucketing {
        Bucketing {
            origin,
            t0,
            width,
            grows: false,
            factor: 2,
            cap,
            range: None,
            committed: vec![0; n],
            attempted: vec![0; n],
            aborted: vec![0; n],
            lat: vec![Latencies::coarse(cap); n],
        }
    }

    /// Buckets over the harness clock from 0, as long as the run lasts.
    pub fn growing() -> Bucketing {
        Bucketing {
            grows: true,
            ..Bucketing::new(0, 0, FIRST_WIDTH, BUCKETS as usize, GROWING_EXACT)
        }
    }

    /// Counts `t` in the bucket of its end (its start when it has none);
    /// a transaction with neither is not drawn.
    pub fn add(&mut self, t: &Txn) {
        let Some(at) = t.end.or(t.start) else {
            return;
        };
        for x in [t.start, t.end].into_iter().flatten() {
            self.range = Some(match self.range {
                None => (x, x),
                Some((lo, hi)) => (lo.min(x), hi.max(x)),
            });
        }
        let n = self.committed.len();
        let mut i = (at.saturating_sub(self.t0) / self.width) as usize;
        while self.grows && i >= n {
            self.grow();
            i = (at.saturating_sub(self.t0) / self.width) as usize;
        }
        let i = i.min(n - 1);
        self.attempted[i] += 1;
        match t.status {
            Status::Ok => {
                self.committed[i] += 1;
                if let (Some(s), Some(e)) = (t.start, t.end) {
                    self.lat[i].add(e.saturating_sub(s));
                }
            }
            Status::Fail | Status::Info => self.aborted[i] += 1,
        }
    }

    /// Merges each `factor` neighbours into one bucket.
    fn grow(&mut self) {
        let k = self.factor as usize;
        let n = self.committed.len();
        for v in [&mut self.committed, &mut self.attempted, &mut self.aborted] {
            let merged: Vec<u64> = v.chunks(k).map(|c| c.iter().sum()).collect();
            v.fill(0);
            v[..merged.len()].copy_from_slice(&merged);
        }
        let mut old = std::mem::replace(&mut self.lat, vec![Latencies::coarse(self.cap); n]);
        for (j, chunk) in old.chunks_mut(k).enumerate() {
            for l in chunk {
                let l = std::mem::replace(l, Latencies::coarse(self.cap));
                self.lat[j].merge(l);
            }
        }
        self.width *= self.factor;
        self.factor = if self.factor == 2 { 5 } else { 2 };
    }

    /// The buckets, up to the one of the last time; `None` when no
    /// transaction had a time.
    pub fn finish(mut self) -> Option<Buckets> {
        let (first, last) = self.range?;
        let used = if self.grows {
            (last.saturating_sub(self.t0) / self.width + 1) as usize
        } else {
            self.committed.len()
        }
        .min(self.committed.len());
        let mut p50_ms = Vec::with_capacity(used);
        let mut p99_ms = Vec::with_capacity(used);
        for l in &mut self.lat[..used] {
            let some = l.count() > 0;
            let [p50, p99] = l.percentiles([50.0, 99.0]);
            p50_ms.push(some.then(|| p50 as f64 / 1e6));
            p99_ms.push(some.then(|| p99 as f64 / 1e6));
        }
        self.committed.truncate(used);
        self.attempted.truncate(used);
        self.aborted.truncate(used);
        Some(Buckets {
            origin: self.origin,
            t0: self.t0,
            first,
            last,
            width: self.width,
            committed: self.committed,
            attempted: self.attempted,
            aborted: self.aborted,
            p50_ms,
            p99_ms,
        })
    }
}

/// The fault windows of `faults`, on the time axis of `b`.
pub fn fault_bands(faults: &[Fault], b: &Buckets) -> Vec<FaultBand> {
    let rel = |t: u64| t.saturating_sub(b.origin) as f64 / 1e9;
    faults
        .iter()
        .map(|f| FaultBand {
            kind: f.kind.clone(),
            target: f.target.clone(),
            from_s: rel(f.start),
            to_s: f.end.map_or(b.start_s() + b.span_s(), rel),
            applied: f.applied,
            detail: f.detail.clone(),
        })
        .collect()
}

/// One line of a chart.
pub struct Series<'a> {
    /// Its name in the legend.
    pub name: &'a str,
    /// Its SVG colour.
    pub color: &'a str,
    /// One value per bucket; `None` where the bucket has none.
    pub values: Vec<Option<f64>>,
    /// Its stroke width (the line drawn last, on top, thicker when lines
    /// may overlap).
    pub width: f64,
}

/// This many buckets in a row without a value break a line.
const GAP: usize = 3;

/// What one chart shows.
pub struct Chart<'a> {
    /// The heading inside the chart.
    pub title: &'a str,
    /// The bucket width, in seconds (values sit at bucket midpoints).
    pub bucket_s: f64,
    /// Where the time axis starts, in seconds from the origin.
    pub start_s: f64,
    /// The length of the time axis, in seconds.
    pub span_s: f64,
    /// The lines.
    pub series: Vec<Series<'a>>,
    /// The fault windows to shade.
    pub faults: &'a [FaultBand],
    /// A fixed top of the y axis (1 for rates); else the data's maximum.
    pub y_max: Option<f64>,
    /// A logarithmic y axis when the values span more than a factor of
    /// [`LOG_SPREAD`] (latencies: a p50 of 1 ms under a p99 of 2 s).
    pub log_when_spread: bool,
}

/// How far apart the smallest and largest positive values must be for a
/// logarithmic axis.
pub const LOG_SPREAD: f64 = 30.0;

/// Draws `c` as one inline `<svg>` element.
pub fn chart(c: &Chart) -> String {
    let mut s = String::new();
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let span = if c.span_s > 0.0 { c.span_s } else { 1.0 };
    let x0_s = c.start_s;
    let values = || c.series.iter().flat_map(|s| s.values.iter().flatten());
    let data_max = values().fold(0.0f64, |m, &v| m.max(v));
    let data_min = values()
        .filter(|v| **v > 0.0)
        .fold(f64::INFINITY, |m, &v| m.min(v));
    let log = c.log_when_spread && data_min.is_finite() && data_max / data_min > LOG_SPREAD;
    // Linear: 0 to a round top. Logarithmic: whole powers of ten.
    let (lo, hi) = if log {
        (
            data_min.log10().floor(),
            data_max.log10().ceil().max(data_min.log10().floor() + 1.0),
        )
    } else {
        (0.0, 0.0)
    };
    let y_step = nice_step(c.y_max.unwrap_or(data_max), 4.0);
    let y_top = match c.y_max {
        Some(m) => m,
        None => (data_max / y_step).ceil().max(1.0) * y_step,
    };
    let x = |t: f64| LEFT + ((t - x0_s) / span).clamp(0.0, 1.0) * pw;
    let y = |v: f64| {
        let f = if log {
            (v.max(10f64.powf(lo)).log10() - lo) / (hi - lo)
        } else {
            v / y_top
        };
        TOP + ph - f.clamp(0.0, 1.0) * ph
    };
    let title = if log {
        format!("{} (log scale)", c.title)
    } else {
        c.title.to_string()
    };
    let _ = write!(
        s,
        "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" \
         width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"{t}\">\
         <text x=\"{LEFT}\" y=\"16\" class=\"ptitle\">{t}</text>",
        t = escape(&title)
    );
    // Fault windows, under everything else.
    let kinds = fault_kinds(c.faults);
    draw_faults(&mut s, c.faults, &x, TOP, ph);
    // Axes, grid and ticks.
    let y_ticks: Vec<f64> = if log {
        (lo as i32..=hi as i32).map(|e| 10f64.powi(e)).collect()
    } else {
        let n = (y_top / y_step + 1e-6).floor() as usize;
        (0..=n).map(|i| i as f64 * y_step).collect()
    };
    let y_labels = if log {
        log_tick_labels(&y_ticks)
    } else {
        tick_labels(&y_ticks)
    };
    draw_y_ticks(&mut s, &y_ticks, &y_labels, &y, pw);
    draw_time_axis(&mut s, x0_s, span, &x, TOP + ph, H - 4.0);
    let _ = write!(
        s,
        "<rect class=\"frame\" x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\"/>"
    );
    // The lines: a bucket without a value (no commit in it) is bridged;
    // a stall of [`GAP`] buckets or more breaks the line.
    for ser in &c.series {
        let mut run: Vec<(f64, f64)> = Vec::new();
        let flush = |run: &mut Vec<(f64, f64)>, s: &mut String| {
            match run.len() {
                0 => {}
                1 => {
                    let _ = write!(
                        s,
                        "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\" fill=\"{}\"/>",
                        run[0].0,
                        run[0].1,
                        escape(ser.color)
                    );
                }
                _ => {
                    let pts: Vec<String> =
                        run.iter().map(|(a, b)| format!("{a:.1},{b:.1}")).collect();
                    let _ = write!(
                        s,
                        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\" points=\"{}\"/>",
                        escape(ser.color),
                        ser.width,
                        pts.join(" ")
                    );
                }
            }
            run.clear();
        };
        let mut missing = 0;
        for (i, val) in ser.values.iter().enumerate() {
            match val {
                Some(v) => {
                    if missing >= GAP {
                        flush(&mut run, &mut s);
                    }
                    missing = 0;
                    run.push((x(x0_s + (i as f64 + 0.5) * c.bucket_s), y(*v)));
                }
                None => missing += 1,
            }
        }
        flush(&mut run, &mut s);
    }
    // The legend: each line, then each fault kind.
    let mut items: Vec<(bool, &str, String)> = c
        .series
        .iter()
        .map(|ser| (true, ser.color, ser.name.to_string()))
        .collect();
    for k in &kinds {
        items.push((false, fault_color(&kinds, k), format!("fault: {k}")));
    }
    let mut lx = LEFT;
    let ly = 30.0;
    for (line, color, label) in items {
        let color = escape(color);
        if line {
            let _ = write!(
                s,
                "<line x1=\"{lx:.1}\" x2=\"{x2:.1}\" y1=\"{ly}\" y2=\"{ly}\" stroke=\"{color}\" stroke-width=\"2\"/>",
                x2 = lx + 12.0
            );
        } else {
            let _ = write!(
                s,
                "<rect x=\"{lx:.1}\" y=\"{y:.1}\" width=\"12\" height=\"9\" fill=\"{color}\" fill-opacity=\"0.35\"/>",
                y = ly - 5.0
            );
        }
        let _ = write!(
            s,
            "<text class=\"legend\" x=\"{tx:.1}\" y=\"{ty}\">{}</text>",
            escape(&label),
            tx = lx + 16.0,
            ty = ly + 4.0
        );
        lx += 24.0 + 6.5 * label.chars().count() as f64;
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use history::{Fault, Txn};

    fn txn(id: u64, status: Status, start: u64, end: Option<u64>) -> Txn {
        let mut t = Txn::new(id, id % 4, status, vec![]);
        t.start = Some(start);
        t.end = end;
        t
    }

    fn history() -> History {
        let mut txns = Vec::new();
        for i in 0..1000u64 {
            let status = match i % 10 {
                0 => Status::Fail,
                1 => Status::Info,
                _ => Status::Ok,
            };
            let end = (status != Status::Info).then_some(i * 1_000_000 + 700_000);
            txns.push(txn(i, status, i * 1_000_000 + 17, end));
        }
        let mut h = History::from_txns(txns);
        h.faults.push(Fault {
            kind: "partition".into(),
            target: Some("n1".into()),
            start: 200_000_000,
            end: Some(300_000_000),
            applied: true,
            detail: None,
        });
        h
    }

    #[test]
    fn bucket_counts_sum_to_the_totals() {
        let h = history();
        let b = bucket(&h).unwrap();
        let (ok, fail, info) = h.status_counts();
        // 1000 transactions over 1 s: 50 buckets of 20 ms.
        assert_eq!((b.committed.len(), b.width), (50, 20_000_000));
        assert_eq!(b.committed.iter().sum::<u64>(), ok as u64);
        assert_eq!(b.attempted.iter().sum::<u64>(), h.txns.len() as u64);
        assert_eq!(b.aborted.iter().sum::<u64>(), (fail + info) as u64);
        // A steady 800 commits/s in every bucket, the last (which the run
        // fills to 19.7 of its 20 ms) too: no false drop at the end.
        for r in b.throughput().into_iter().flatten() {
            assert!((r - 800.0).abs() < 800.0 * 0.02, "{r}");
        }
        // Every bucket of this steady run sees aborts at 20%.
        for r in b.abort_rate().into_iter().flatten() {
            assert!(r > 0.0 && r < 0.5, "{r}");
        }
        assert!(b
            .p50_ms
            .iter()
            .flatten()
            .all(|&l| (l - 0.699983).abs() < 1e-9));
        let bands = fault_bands(&h.faults, &b);
        assert_eq!(bands.len(), 1);
        assert_eq!(b.t0, 0, "the run's clock starts at 0");
        assert!((bands[0].from_s - 0.2).abs() < 1e-9 && (bands[0].to_s - 0.3).abs() < 1e-9);
    }

    #[test]
    fn growing_buckets_merge_into_round_widths_and_lose_nothing() {
        // Times up to 999.7 ms: buckets of 1, then 2, then 10 ms, whose 100
        // reach 1 s.
        let mut h = history();
        let mut g = Bucketing::growing();
        for t in &h.txns {
            g.add(t);
        }
        let b = g.finish().unwrap();
        assert_eq!(b.width, 10_000_000, "1 -> 2 -> 10 ms");
        assert_eq!(b.t0, 0);
        assert_eq!(b.committed.len(), 100);
        // The same buckets as a fixed range of that width gives.
        let mut fixed = Bucketing::new(0, 0, b.width, 100, usize::MAX);
        for t in &h.txns {
            fixed.add(t);
        }
        assert_eq!(fixed.finish().unwrap(), b);
        // One more, at 1.5 s: 20 ms buckets, 76 of them, nothing lost.
        let mut late = txn(1000, Status::Ok, 1_499_000_000, Some(1_500_000_000));
        late.session = 3;
        h.txns.push(late);
        let mut g = Bucketing::growing();
        for t in &h.txns {
            g.add(t);
        }
        let b = g.finish().unwrap();
        assert_eq!((b.width, b.committed.len()), (20_000_000, 76));
        let (ok, fail, info) = h.status_counts();
        assert_eq!(b.committed.iter().sum::<u64>(), ok as u64);
        assert_eq!(b.aborted.iter().sum::<u64>(), (fail + info) as u64);
        assert_eq!(b.p50_ms[75], Some(1.0));
        // Each 20 ms bucket holds 20 transactions, 16 of them committed.
        assert!(b.committed[..50].iter().all(|&c| c == 16), "{b:?}");
        assert_eq!((b.first, b.last), (17, 1_500_000_000));
    }

    #[test]
    fn tiny_and_untimed_histories() {
        let h = History::from_txns(vec![txn(0, Status::Ok, 5, Some(7))]);
        let b = bucket(&h).unwrap();
        assert_eq!(b.committed.iter().sum::<u64>(), 1);
        assert_eq!((b.t0, b.width), (5, 1));
        assert_eq!(b.committed.len(), 3);
        assert_eq!(
            b.start_s(),
            5e-9,
            "the axis starts at the first transaction"
        );
        let wall = History::from_txns(vec![txn(
            0,
            Status::Ok,
            1_700_000_000_000_000_000,
            Some(1_700_000_000_000_000_100),
        )]);
        assert_eq!(
            bucket(&wall).unwrap().start_s(),
            0.0,
            "a wall clock counts from the first time"
        );
        let untimed = History::from_txns(vec![Txn::new(0, 0, Status::Ok, vec![])]);
        assert!(bucket(&untimed).is_none());
    }

    #[test]
    fn charts_shade_faults_and_name_them() {
        let h = history();
        let b = bucket(&h).unwrap();
        let bands = fault_bands(&h.faults, &b);
        let svg = chart(&Chart {
            title: "throughput",
            bucket_s: b.width_s(),
            start_s: b.start_s(),
            span_s: b.span_s(),
            series: vec![Series {
                name: "committed",
                color: "#333",
                values: b.throughput(),
                width: 1.5,
            }],
            faults: &bands,
            y_max: None,
            log_when_spread: false,
        });
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("class=\"fault\"").count(), 1);
        assert!(svg.contains("fault: partition"));
        assert!(svg.contains("<polyline"));
    }

    #[test]
    fn partition_bands_name_their_shape() {
        let mut h = history();
        h.faults[0].target = Some("random".into());
        h.faults[0].detail = Some("halves: galera-1 | galera-2 <galera-3>".into());
        h.faults[0].end = Some(600_000_000);
        let b = bucket(&h).unwrap();
        let bands = fault_bands(&h.faults, &b);
        assert_eq!(bands[0].label(), "partition halves");
        let svg = chart(&Chart {
            title: "throughput",
            bucket_s: b.width_s(),
            start_s: b.start_s(),
            span_s: b.span_s(),
            series: vec![],
            faults: &bands,
            y_max: None,
            log_when_spread: false,
        });
        // Drawn on the band, and the sides in its tooltip, escaped.
        assert!(svg.contains(">partition halves</text>"), "{svg}");
        assert!(svg.contains("galera-2 &lt;galera-3&gt;"), "{svg}");
        let kill = FaultBand {
            kind: "kill".into(),
            target: Some("galera-2".into()),
            detail: None,
            ..bands[0].clone()
        };
        assert_eq!(kill.label(), "kill galera-2");
        // A failed fault's error is no shape.
        let failed = FaultBand {
            applied: false,
            detail: Some("exit 2: error: no netem".into()),
            ..kill
        };
        assert_eq!(failed.label(), "kill galera-2");
    }

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(10.0, 4.0), 5.0);
        assert_eq!(nice_step(0.9, 4.0), 0.5);
        assert_eq!(nice_step(0.0, 4.0), 1.0);
        assert_eq!(fmt_num(0.30000000000000004), "0.3");
        assert_eq!(fmt_num(120000.0), "120k");
        assert_eq!(fmt_num(0.0005), "0.0005");
        assert_eq!(fmt_num(2.5e6), "2.5M");
        assert_eq!(fmt_num(0.0), "0");
    }

    #[test]
    fn tick_labels_share_one_suffix_and_one_precision() {
        let t = |xs: &[f64]| tick_labels(xs);
        assert_eq!(
            t(&[0.0, 5000.0, 10000.0, 15000.0]),
            ["0", "5k", "10k", "15k"]
        );
        assert_eq!(
            t(&[0.0, 2000.0, 4000.0, 6000.0, 8000.0]),
            ["0", "2000", "4000", "6000", "8000"]
        );
        assert_eq!(
            t(&[0.0, 0.2, 0.4, 0.6000000000000001]),
            ["0", "0.2", "0.4", "0.6"]
        );
        assert_eq!(t(&[0.0, 0.5, 1.0, 1.5]), ["0", "0.5", "1.0", "1.5"]);
        assert_eq!(t(&[0.0, 2.5e6, 5e6, 1e7]), ["0", "2.5M", "5.0M", "10.0M"]);
        assert_eq!(t(&[0.0, 2e7, 4e7]), ["0", "20M", "40M"]);
        assert_eq!(t(&[10.0, 20.0, 30.0]), ["10", "20", "30"]);
        assert_eq!(
            log_tick_labels(&[0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0]),
            ["0.1", "1", "10", "100", "1k", "10k"]
        );
        assert_eq!(log_tick_labels(&[0.1, 1.0, 1000.0]), ["0.1", "1", "1000"]);
        // Time ticks are round, inside the range, from wherever it starts.
        assert_eq!(
            t(&time_ticks(0.35, 1.2)),
            ["0.4", "0.6", "0.8", "1.0", "1.2"]
        );
        assert_eq!(
            time_ticks(0.0, 60.0),
            [0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0]
        );
        assert_eq!(time_unit(3600.0), ("min", 1.0 / 60.0));
        assert_eq!(time_unit(0.1).0, "ms");
        assert_eq!(fmt_duration(0.05), "50 ms");
        assert_eq!(fmt_duration(50.0), "50 s");
        assert_eq!(fmt_duration(0.0000005), "500 ns");
    }

    #[test]
    fn buckets_are_round_and_hold_enough_transactions() {
        let ms = 1_000_000u64;
        // A 0.1 s run of 300 transactions: 15 buckets would do; 10 ms is
        // the round width, 10 buckets.
        assert_eq!(bucket_width(100 * ms, 300), 10 * ms);
        // Fewer than 200 transactions: still 10 buckets.
        assert_eq!(bucket_width(100 * ms, 5), 10 * ms);
        // 5000 transactions in 0.71 s: 100 buckets of about 7.1 ms, made
        // a round 10 ms (71 buckets), never "0.0007101 s".
        assert_eq!(bucket_width(710 * ms, 5000), 10 * ms);
        // An hour with millions of transactions: 100 buckets of 36 s make
        // 50 s buckets, 72 of them.
        assert_eq!(bucket_width(3_600_000 * ms, 3_000_000), 50_000 * ms);
        assert_eq!(bucket_width(3, 1), 1);
        // Startup before the first transaction takes no room.
        let late = History::from_txns(
            (0..100u64)
                .map(|i| {
                    txn(
                        i,
                        Status::Ok,
                        5_000_000_000 + i * 10 * ms,
                        Some(5_000_000_000 + i * 10 * ms + ms),
                    )
                })
                .collect(),
        );
        let b = bucket(&late).unwrap();
        assert_eq!(b.origin, 0, "the harness clock's origin");
        assert_eq!(
            (b.t0, b.width, b.committed.len()),
            (5_000_000_000, 100 * ms, 10)
        );
        assert!(b.committed.iter().all(|&c| c == 10), "{:?}", b.committed);
        assert!((b.start_s() - 5.0).abs() < 1e-9);
    }

    #[test]
    fn short_gaps_are_bridged_and_log_scale_shows_p50_beside_p99() {
        let mut p50 = vec![Some(1.0); 20];
        p50[5] = None;
        let p99: Vec<Option<f64>> = p50.iter().map(|v| v.map(|_| 2000.0)).collect();
        let svg = chart(&Chart {
            title: "latency",
            bucket_s: 0.01,
            start_s: 0.0,
            span_s: 0.2,
            series: vec![
                Series {
                    name: "p99",
                    color: "#d00",
                    values: p99,
                    width: 1.5,
                },
                Series {
                    name: "p50",
                    color: "#0a0",
                    values: p50,
                    width: 2.2,
                },
            ],
            faults: &[],
            y_max: None,
            log_when_spread: true,
        });
        assert_eq!(svg.matches("<polyline").count(), 2, "one line each: {svg}");
        assert!(!svg.contains("<circle"), "no isolated dots");
        assert!(svg.contains("(log scale)"));
        for label in [">1<", ">10<", ">100<", ">1k<", ">10k<"] {
            assert!(svg.contains(label), "{label}: {svg}");
        }
        assert!(!svg.contains("fault"), "no fault legend without faults");
    }
}
