//! The time series of a run and their inline SVG line charts: committed
//! throughput, latency and abort rate per time bucket, with every fault
//! window shaded.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use history::{History, Status};

use super::html::escape;

/// How many buckets a run is cut into (fewer when it is only a few ns long).
pub const BUCKETS: u64 = 100;

/// A run cut into equal time buckets; each transaction counts in the
/// bucket of its end (its start when it has no end, as `info` ones do).
#[derive(Clone, Debug, PartialEq)]
pub struct Buckets {
    /// The clock value (ns) where the first bucket starts.
    pub t0: u64,
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

    /// Committed transactions per second, per bucket.
    pub fn throughput(&self) -> Vec<Option<f64>> {
        let w = self.width_s();
        self.committed.iter().map(|&c| Some(c as f64 / w)).collect()
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

/// The value at percentile `p` (nearest rank) of sorted `xs`.
fn percentile(xs: &[u64], p: f64) -> u64 {
    let rank = ((p / 100.0) * xs.len() as f64).ceil() as usize;
    xs[rank.clamp(1, xs.len()) - 1]
}

/// The times a history spans, over its transactions and faults: `None`
/// when nothing in it has a time.
fn time_range(h: &History) -> Option<(u64, u64)> {
    let txn_times = h.txns.iter().flat_map(|t| [t.start, t.end]).flatten();
    let fault_times = h
        .faults
        .iter()
        .flat_map(|f| [Some(f.start), f.end])
        .flatten();
    let mut range: Option<(u64, u64)> = None;
    for t in txn_times.chain(fault_times) {
        range = Some(match range {
            None => (t, t),
            Some((lo, hi)) => (lo.min(t), hi.max(t)),
        });
    }
    range
}

/// Cuts `h` into about [`BUCKETS`] buckets, from the clock's 0 (or the
/// first time, for a clock far from 0); `None` when no transaction has a
/// time (imported histories often have none).
pub fn bucket(h: &History) -> Option<Buckets> {
    if !h.txns.iter().any(|t| t.start.or(t.end).is_some()) {
        return None;
    }
    let (first, t1) = time_range(h)?;
    // A harness clock starts at 0 with the clients: keep that origin unless
    // the times are far from it (an imported history's wall clock).
    let t0 = if first <= t1 - first { 0 } else { first };
    let span = t1 - t0 + 1;
    let width = span.div_ceil(BUCKETS).max(1);
    let n = span.div_ceil(width) as usize;
    let mut b = Buckets {
        t0,
        width,
        committed: vec![0; n],
        attempted: vec![0; n],
        aborted: vec![0; n],
        p50_ms: vec![None; n],
        p99_ms: vec![None; n],
    };
    let mut lat: Vec<Vec<u64>> = vec![Vec::new(); n];
    for t in &h.txns {
        let Some(at) = t.end.or(t.start) else {
            continue;
        };
        let i = (((at - t0) / width) as usize).min(n - 1);
        b.attempted[i] += 1;
        match t.status {
            Status::Ok => {
                b.committed[i] += 1;
                if let (Some(s), Some(e)) = (t.start, t.end) {
                    lat[i].push(e.saturating_sub(s));
                }
            }
            Status::Fail | Status::Info => b.aborted[i] += 1,
        }
    }
    for (i, xs) in lat.iter_mut().enumerate() {
        if xs.is_empty() {
            continue;
        }
        xs.sort_unstable();
        b.p50_ms[i] = Some(percentile(xs, 50.0) as f64 / 1e6);
        b.p99_ms[i] = Some(percentile(xs, 99.0) as f64 / 1e6);
    }
    Some(b)
}

/// A fault window, in seconds from the first bucket's start.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultBand {
    /// What was done (`partition`, `reset`, ...).
    pub kind: String,
    /// What it was done to.
    pub target: Option<String>,
    /// Start, in seconds.
    pub from_s: f64,
    /// End, in seconds (the end of the run when the history has none).
    pub to_s: f64,
    /// False when the fault's command failed.
    pub applied: bool,
}

/// The fault windows of `h`, on the time axis of `b`.
pub fn fault_bands(h: &History, b: &Buckets) -> Vec<FaultBand> {
    let rel = |t: u64| t.saturating_sub(b.t0) as f64 / 1e9;
    h.faults
        .iter()
        .map(|f| FaultBand {
            kind: f.kind.clone(),
            target: f.target.clone(),
            from_s: rel(f.start),
            to_s: f.end.map_or(b.span_s(), rel),
            applied: f.applied,
        })
        .collect()
}

/// One line of a chart.
pub struct Series<'a> {
    /// Its name in the legend.
    pub name: &'a str,
    /// Its SVG colour.
    pub color: &'a str,
    /// One value per bucket; `None` leaves a gap.
    pub values: Vec<Option<f64>>,
}

/// What one chart shows.
pub struct Chart<'a> {
    /// The heading inside the chart.
    pub title: &'a str,
    /// The bucket width, in seconds (values sit at bucket midpoints).
    pub bucket_s: f64,
    /// The length of the time axis, in seconds.
    pub span_s: f64,
    /// The lines.
    pub series: Vec<Series<'a>>,
    /// The fault windows to shade.
    pub faults: &'a [FaultBand],
    /// A fixed top of the y axis (1 for rates); else the data's maximum.
    pub y_max: Option<f64>,
}

const W: f64 = 760.0;
const H: f64 = 220.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 12.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 34.0;

/// Colours of fault kinds, by their order among the kinds of the run.
const FAULT_COLORS: [&str; 6] = [
    "#e45756", "#f58518", "#b279a2", "#54a24b", "#4c78a8", "#9d755d",
];

/// The distinct fault kinds, in a stable order, for colours and legends.
pub fn fault_kinds(faults: &[FaultBand]) -> Vec<&str> {
    let set: BTreeSet<&str> = faults.iter().map(|f| f.kind.as_str()).collect();
    set.into_iter().collect()
}

/// The colour of fault kind `kind` among `kinds`.
fn fault_color(kinds: &[&str], kind: &str) -> &'static str {
    let i = kinds.iter().position(|k| *k == kind).unwrap_or(0);
    FAULT_COLORS[i % FAULT_COLORS.len()]
}

/// A number as an axis label: short, without float noise.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", fmt_num(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", fmt_num(v / 1e3))
    } else if a == 0.0 || !a.is_finite() {
        format!("{v}")
    } else {
        // Four significant digits at most.
        let p = 10f64.powi(3 - a.log10().floor() as i32);
        format!("{}", (v * p).round() / p)
    }
}

/// The unit of a time axis of `span_s` seconds: its name and how many of
/// it make a second.
fn time_unit(span_s: f64) -> (&'static str, f64) {
    if span_s >= 2.0 {
        ("s", 1.0)
    } else if span_s >= 2e-3 {
        ("ms", 1e3)
    } else {
        ("\u{b5}s", 1e6)
    }
}

/// A round step that cuts `0..max` into about `n` parts (1, 2 or 5 times a
/// power of ten).
pub fn nice_step(max: f64, n: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / n;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Draws `c` as one inline `<svg>` element.
pub fn chart(c: &Chart) -> String {
    let mut s = String::new();
    let pw = W - LEFT - RIGHT;
    let ph = H - TOP - BOTTOM;
    let span = if c.span_s > 0.0 { c.span_s } else { 1.0 };
    let data_max = c
        .series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .fold(0.0f64, |m, &v| m.max(v));
    let y_step = nice_step(c.y_max.unwrap_or(data_max), 4.0);
    let y_top = match c.y_max {
        Some(m) => m,
        None => (data_max / y_step).ceil().max(1.0) * y_step,
    };
    let x = |t: f64| LEFT + (t / span).clamp(0.0, 1.0) * pw;
    let y = |v: f64| TOP + ph - (v / y_top).clamp(0.0, 1.0) * ph;
    let _ = write!(
        s,
        "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" \
         width=\"{W}\" height=\"{H}\" role=\"img\" aria-label=\"{t}\">\
         <text x=\"{LEFT}\" y=\"16\" class=\"ptitle\">{t}</text>",
        t = escape(c.title)
    );
    // Fault windows, under everything else.
    let kinds = fault_kinds(c.faults);
    for f in c.faults {
        let (x0, x1) = (x(f.from_s), x(f.to_s.max(f.from_s)));
        let color = fault_color(&kinds, &f.kind);
        let mut tip = f.kind.clone();
        if let Some(t) = &f.target {
            let _ = write!(tip, " on {t}");
        }
        let _ = write!(tip, ", {} s to {} s", fmt_num(f.from_s), fmt_num(f.to_s));
        if !f.applied {
            tip.push_str(" (not applied)");
        }
        let (opacity, dash) = if f.applied {
            ("0.22", "")
        } else {
            ("0.06", " stroke-dasharray=\"3 3\"")
        };
        let _ = write!(
            s,
            "<rect class=\"fault\" x=\"{x0:.1}\" y=\"{TOP}\" width=\"{w:.1}\" height=\"{ph}\" \
             fill=\"{color}\" fill-opacity=\"{opacity}\" stroke=\"{color}\" stroke-opacity=\"0.5\"{dash}>\
             <title>{tip}</title></rect>",
            w = (x1 - x0).max(1.0),
            tip = escape(&tip)
        );
    }
    // Axes, grid and ticks.
    let mut v = 0.0;
    while v <= y_top * 1.0001 {
        let yy = y(v);
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{x2}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\"/>\
             <text class=\"tick\" x=\"{tx}\" y=\"{ty:.1}\" text-anchor=\"end\">{label}</text>",
            x2 = LEFT + pw,
            tx = LEFT - 4.0,
            ty = yy + 3.5,
            label = escape(&fmt_num(v))
        );
        v += y_step;
    }
    let (unit, per_s) = time_unit(span);
    let x_step = nice_step(span * per_s, 8.0);
    let mut t = 0.0;
    while t <= span * per_s * 1.0001 {
        let xx = x(t / per_s);
        let _ = write!(
            s,
            "<line class=\"axis\" x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{y0}\" y2=\"{y1}\"/>\
             <text class=\"tick\" x=\"{xx:.1}\" y=\"{ty}\" text-anchor=\"middle\">{label}</text>",
            y0 = TOP + ph,
            y1 = TOP + ph + 4.0,
            ty = TOP + ph + 15.0,
            label = escape(&fmt_num(t))
        );
        t += x_step;
    }
    let _ = write!(
        s,
        "<text class=\"tick\" x=\"{xx}\" y=\"{yy}\" text-anchor=\"end\">time ({unit})</text>\
         <rect class=\"frame\" x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\"/>",
        xx = LEFT + pw,
        yy = H - 4.0
    );
    // The lines, broken where a bucket has no value.
    for ser in &c.series {
        let mut run: Vec<(f64, f64)> = Vec::new();
        let flush = |run: &mut Vec<(f64, f64)>, s: &mut String| {
            match run.len() {
                0 => {}
                1 => {
                    let _ = write!(
                        s,
                        "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"1.8\" fill=\"{}\"/>",
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
                        "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"/>",
                        escape(ser.color),
                        pts.join(" ")
                    );
                }
            }
            run.clear();
        };
        for (i, val) in ser.values.iter().enumerate() {
            match val {
                Some(v) => run.push((x((i as f64 + 0.5) * c.bucket_s), y(*v))),
                None => flush(&mut run, &mut s),
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
        assert!(b.committed.len() <= BUCKETS as usize && b.committed.len() >= 90);
        assert_eq!(b.committed.iter().sum::<u64>(), ok as u64);
        assert_eq!(b.attempted.iter().sum::<u64>(), h.txns.len() as u64);
        assert_eq!(b.aborted.iter().sum::<u64>(), (fail + info) as u64);
        // Throughput times the bucket width gives the counts back.
        let total: f64 = b
            .throughput()
            .iter()
            .flatten()
            .map(|r| r * b.width_s())
            .sum();
        assert!((total - ok as f64).abs() < 1e-6, "{total}");
        // Every bucket of this steady run sees aborts at 20%.
        for r in b.abort_rate().into_iter().flatten() {
            assert!(r > 0.0 && r < 0.5, "{r}");
        }
        assert!(b
            .p50_ms
            .iter()
            .flatten()
            .all(|&l| (l - 0.699983).abs() < 1e-9));
        let bands = fault_bands(&h, &b);
        assert_eq!(bands.len(), 1);
        assert_eq!(b.t0, 0, "the run's clock starts at 0");
        assert!((bands[0].from_s - 0.2).abs() < 1e-9 && (bands[0].to_s - 0.3).abs() < 1e-9);
    }

    #[test]
    fn tiny_and_untimed_histories() {
        let h = History::from_txns(vec![txn(0, Status::Ok, 5, Some(7))]);
        let b = bucket(&h).unwrap();
        assert_eq!(b.committed.iter().sum::<u64>(), 1);
        assert_eq!((b.t0, b.width), (5, 1));
        assert_eq!(b.committed.len(), 3);
        let untimed = History::from_txns(vec![Txn::new(0, 0, Status::Ok, vec![])]);
        assert!(bucket(&untimed).is_none());
    }

    #[test]
    fn charts_shade_faults_and_name_them() {
        let h = history();
        let b = bucket(&h).unwrap();
        let bands = fault_bands(&h, &b);
        let svg = chart(&Chart {
            title: "throughput",
            bucket_s: b.width_s(),
            span_s: b.span_s(),
            series: vec![Series {
                name: "committed",
                color: "#333",
                values: b.throughput(),
            }],
            faults: &bands,
            y_max: None,
        });
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("class=\"fault\"").count(), 1);
        assert!(svg.contains("fault: partition"));
        assert!(svg.contains("<polyline"));
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
}
