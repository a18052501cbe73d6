//! What every chart of the report shares: the plot's layout, the fault
//! windows drawn as bands and their colours, number and time formatting,
//! the ticks of linear, logarithmic and time axes, and the axes themselves.
//! The line charts (`plot.rs`) and the timeline and latency plot
//! (`timeline.rs`) draw with these.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::escape::escape;

/// A fault window, in seconds from the buckets' origin.
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
    /// What exactly it did (a partition's shape and sides), when known.
    pub detail: Option<String>,
}

impl FaultBand {
    /// The short name drawn on the band: the kind, and a partition's shape
    /// (`partition halves`) or the target (`kill galera-2`).
    pub fn label(&self) -> String {
        let shape = self
            .detail
            .as_deref()
            .filter(|_| self.applied)
            .and_then(|d| d.split_once(':'))
            .map(|(s, _)| s.trim())
            .filter(|s| !s.is_empty() && !s.contains(' '));
        match (shape, &self.target) {
            (Some(s), _) => format!("{} {s}", self.kind),
            (None, Some(t)) => format!("{} {t}", self.kind),
            (None, None) => self.kind.clone(),
        }
    }
}

pub(super) const W: f64 = 760.0;
pub(super) const H: f64 = 220.0;
pub(super) const LEFT: f64 = 64.0;
pub(super) const RIGHT: f64 = 12.0;
pub(super) const TOP: f64 = 40.0;
pub(super) const BOTTOM: f64 = 34.0;

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
pub(super) fn fault_color(kinds: &[&str], kind: &str) -> &'static str {
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
pub(super) fn time_unit(span_s: f64) -> (&'static str, f64) {
    if span_s >= 3.0 * 3600.0 {
        ("h", 1.0 / 3600.0)
    } else if span_s >= 300.0 {
        ("min", 1.0 / 60.0)
    } else if span_s >= 2.0 {
        ("s", 1.0)
    } else if span_s >= 2e-3 {
        ("ms", 1e3)
    } else {
        ("\u{b5}s", 1e6)
    }
}

/// A duration, e.g. a bucket's width, in its own round unit: `50 ms`.
pub fn fmt_duration(s: f64) -> String {
    let (unit, per_s) = if s >= 120.0 {
        ("min", 1.0 / 60.0)
    } else if s >= 1.0 {
        ("s", 1.0)
    } else if s >= 1e-3 {
        ("ms", 1e3)
    } else if s >= 1e-6 {
        ("\u{b5}s", 1e6)
    } else {
        ("ns", 1e9)
    };
    format!("{} {unit}", fmt_num(s * per_s))
}

/// The labels of axis ticks at `ticks` (evenly spaced, or powers of ten):
/// one suffix for the whole axis (all `k` once the largest reaches 10,000:
/// `5k`, `10k`, never `5000` beside `10k`) and as many decimals as the
/// step needs, the same for every label.
pub fn tick_labels(ticks: &[f64]) -> Vec<String> {
    let top = ticks.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let (div, suffix) = if top >= 1e7 {
        (1e6, "M")
    } else if top >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    // The smallest difference between ticks says how many decimals.
    let step = ticks
        .windows(2)
        .map(|w| (w[1] - w[0]).abs() / div)
        .filter(|d| *d > 0.0)
        .fold(f64::INFINITY, f64::min);
    let smallest = ticks
        .iter()
        .map(|v| v.abs() / div)
        .filter(|v| *v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let finest = step.min(smallest);
    let mut decimals = if finest.is_finite() {
        (-(finest.log10() + 1e-9).floor()).clamp(0.0, 9.0) as usize
    } else {
        0
    };
    // More when a label would not give its tick back (2.5 is not "2").
    let exact = |d: usize| {
        ticks.iter().all(|v| {
            let shown: f64 = format!("{:.d$}", v / div).parse().unwrap_or(f64::NAN);
            (shown - v / div).abs() <= 1e-9 * (v / div).abs().max(1.0)
        })
    };
    while decimals < 9 && !exact(decimals) {
        decimals += 1;
    }
    ticks
        .iter()
        .map(|&v| {
            if v == 0.0 {
                "0".to_string()
            } else {
                format!("{:.decimals$}{suffix}", v / div)
            }
        })
        .collect()
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

/// Labels of a logarithmic axis's powers of ten: `0.1`, `1`, `10`, `1k`.
pub fn log_tick_labels(ticks: &[f64]) -> Vec<String> {
    let big = ticks.iter().any(|v| *v >= 1e4);
    ticks
        .iter()
        .map(|&v| {
            if big && v >= 1e3 {
                format!("{}k", fmt_num(v / 1e3))
            } else {
                fmt_num(v)
            }
        })
        .collect()
}

/// Round ticks from `from` to `to` (in the axis's unit), about 8 of them,
/// at multiples of the step.
pub fn time_ticks(from: f64, to: f64) -> Vec<f64> {
    let step = nice_step(to - from, 8.0);
    let first = (from / step - 1e-9).ceil();
    let last = (to / step + 1e-9).floor();
    (first as i64..=last as i64)
        .map(|i| i as f64 * step)
        .collect()
}

/// Shades every fault window of `faults` from `top` down `height` px on the
/// time axis `x` (seconds to px), naming each band when there is room.
pub(super) fn draw_faults(
    s: &mut String,
    faults: &[FaultBand],
    x: &dyn Fn(f64) -> f64,
    top: f64,
    height: f64,
) {
    let kinds = fault_kinds(faults);
    for f in faults {
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
        if let Some(d) = &f.detail {
            let _ = write!(tip, ": {d}");
        }
        let (opacity, dash) = if f.applied {
            ("0.22", "")
        } else {
            ("0.06", " stroke-dasharray=\"3 3\"")
        };
        let _ = write!(
            s,
            "<rect class=\"fault\" x=\"{x0:.1}\" y=\"{top}\" width=\"{w:.1}\" height=\"{height}\" \
             fill=\"{color}\" fill-opacity=\"{opacity}\" stroke=\"{color}\" stroke-opacity=\"0.5\"{dash}>\
             <title>{tip}</title></rect>",
            w = (x1 - x0).max(1.0),
            tip = escape(&tip)
        );
        // Named on the band when there is room for the name.
        let full = f.label();
        let short = full.rsplit(' ').next().unwrap_or_default().to_string();
        let label = [full, short]
            .into_iter()
            .find(|l| x1 - x0 >= 5.5 * l.len() as f64);
        if let (true, Some(label)) = (f.applied, label) {
            let _ = write!(
                s,
                "<text class=\"flabel\" x=\"{:.1}\" y=\"{}\">{}</text>",
                x0 + 2.0,
                top + 10.0,
                escape(&label)
            );
        }
    }
}

/// Draws a horizontal grid line and a label at each of `ticks`, placed by
/// `y`, across a plot `pw` wide.
pub(super) fn draw_y_ticks(
    s: &mut String,
    ticks: &[f64],
    labels: &[String],
    y: &dyn Fn(f64) -> f64,
    pw: f64,
) {
    for (v, label) in ticks.iter().zip(labels) {
        let yy = y(*v);
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{LEFT}\" x2=\"{x2}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\"/>\
             <text class=\"tick\" x=\"{tx}\" y=\"{ty:.1}\" text-anchor=\"end\">{label}</text>",
            x2 = LEFT + pw,
            tx = LEFT - 4.0,
            ty = yy + 3.5,
            label = escape(label)
        );
    }
}

/// The time axis under a plot whose bottom is at `base` px: round ticks in
/// the unit [`time_unit`] picks for `span` s from `x0_s`, and the unit's
/// name at the right, at `label_y`.
pub(super) fn draw_time_axis(
    s: &mut String,
    x0_s: f64,
    span: f64,
    x: &dyn Fn(f64) -> f64,
    base: f64,
    label_y: f64,
) {
    let (unit, per_s) = time_unit(span);
    let x_ticks = time_ticks(x0_s * per_s, (x0_s + span) * per_s);
    for (t, label) in x_ticks.iter().zip(tick_labels(&x_ticks)) {
        let xx = x(t / per_s);
        let _ = write!(
            s,
            "<line class=\"axis\" x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{base}\" y2=\"{y1}\"/>\
             <text class=\"tick\" x=\"{xx:.1}\" y=\"{ty}\" text-anchor=\"middle\">{label}</text>",
            y1 = base + 4.0,
            ty = base + 15.0,
            label = escape(&label)
        );
    }
    let _ = write!(
        s,
        "<text class=\"tick\" x=\"{xx}\" y=\"{label_y}\" text-anchor=\"end\">time ({unit})</text>",
        xx = W - RIGHT
    );
}
