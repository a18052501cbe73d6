//! Every transaction of a run, as Jepsen draws them: a timeline (one row
//! per client session, each transaction a bar from its start to its end,
//! coloured by outcome) and a raw latency plot (one dot per transaction,
//! its start against its latency, on a log scale), both with the fault
//! windows shaded and on the time axis of the charts in [`plot`].
//!
//! Both stay small on big histories: above [`MAX_BARS`] transactions the
//! timeline draws, per row, columns coloured by the worst outcome running
//! in them, and above [`MAX_DOTS`] the latency plot draws one dot per
//! small cell of the plot and outcome; the captions say so.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use history::{History, Status, Txn};

use super::escape::escape;
use super::plot::{self, Buckets, FaultBand, BOTTOM, LEFT, RIGHT, TOP, W};

/// Above this many transactions the timeline aggregates.
pub const MAX_BARS: usize = 2000;
/// Above this many transactions the latency plot bins its dots.
pub const MAX_DOTS: usize = 2000;
/// At most this many rows (sessions) are drawn.
const MAX_ROWS: usize = 256;
/// About this many cells in all in an aggregated timeline.
const CELL_BUDGET: usize = 2400;
/// The side of a latency plot's cell when binned, in px.
const BIN_PX: f64 = 8.0;
/// The height of the latency plot.
const LAT_H: f64 = 260.0;
/// An error is cut to this many characters in a tooltip.
const ERROR_CHARS: usize = 160;

/// The CSS class of an outcome (the page's style colours it).
pub fn class(s: Status) -> &'static str {
    match s {
        Status::Ok => "t-ok",
        Status::Fail => "t-fail",
        Status::Info => "t-info",
    }
}

/// The colour of an outcome, for the legends.
fn color(s: Status) -> &'static str {
    match s {
        Status::Ok => "#59a14f",
        Status::Fail => "#e15759",
        Status::Info => "#f2a900",
    }
}

/// The style of the classes above, for the page's `<style>`.
pub const STYLE: &str = "svg .t-ok { fill: #59a14f; } svg .t-fail { fill: #e15759; } \
svg .t-info { fill: #f2a900; } svg .open { fill-opacity: 0.45; } \
svg .cx { fill: none; stroke: #000; stroke-width: 1.5; } svg .tlrow text { font-size: 9px; fill: #444; } \
svg .sep { stroke: #f2f2f2; } svg.latency-raw circle { fill-opacity: 0.7; }";

const STATUSES: [Status; 3] = [Status::Ok, Status::Fail, Status::Info];

/// How serious an outcome is when several share a cell: info over fail
/// over ok.
fn rank(s: Status) -> u8 {
    match s {
        Status::Ok => 1,
        Status::Fail => 2,
        Status::Info => 3,
    }
}

fn of_rank(r: u8) -> Status {
    match r {
        1 => Status::Ok,
        2 => Status::Fail,
        _ => Status::Info,
    }
}

/// A clock value (ns) in ms from `origin`, the charts' axis: `12.345`.
pub fn ms(origin: u64, t: u64) -> String {
    format!("{:.3}", t.saturating_sub(origin) as f64 / 1e6)
}

/// The tooltip of one transaction (not escaped yet): id, outcome, session
/// and node, times in ms on the charts' axis, kind and error.
pub fn tooltip(
    id: u64,
    status: Status,
    session: u64,
    node: Option<&str>,
    (start, end): (Option<u64>, Option<u64>),
    origin: u64,
) -> String {
    let mut t = format!("T{id} {}, session {session}", status.as_str());
    if let Some(n) = node {
        let _ = write!(t, " on {n}");
    }
    match (start, end) {
        (Some(a), Some(b)) => {
            let _ = write!(
                t,
                ", {} ms to {} ms ({} ms)",
                ms(origin, a),
                ms(origin, b),
                ms(a, b)
            );
        }
        (Some(a), None) => {
            let _ = write!(t, ", from {} ms, no end", ms(origin, a));
        }
        _ => t.push_str(", no time"),
    }
    t
}

fn txn_tip(t: &Txn, origin: u64) -> String {
    let mut tip = tooltip(
        t.id,
        t.status,
        t.session,
        t.node.as_deref(),
        (t.start, t.end),
        origin,
    );
    if let Some(k) = &t.kind {
        let _ = write!(tip, ", {k}");
    }
    if let Some(e) = &t.error {
        let cut: String = e.chars().take(ERROR_CHARS).collect();
        let more = if cut.len() < e.len() { "..." } else { "" };
        let _ = write!(tip, ": {cut}{more}");
    }
    tip
}

/// The anchor id of a transaction's marker on the timeline.
pub fn anchor(id: u64) -> String {
    format!("tl-T{id}")
}

/// A drawn timeline.
pub struct Timeline {
    /// The `<svg>` element.
    pub svg: String,
    /// What it shows, for the caption (HTML, escaped).
    pub caption: String,
    /// The transactions marked on it, each with the id [`anchor`] gives.
    pub anchored: HashSet<u64>,
}

/// A row's label: the session, and the node(s) that served it.
fn row_label(session: u64, nodes: &BTreeSet<&str>) -> String {
    if nodes.is_empty() {
        return format!("s{session}");
    }
    let names: Vec<&str> = nodes.iter().copied().collect();
    format!("s{session} {}", names.join("/"))
}

/// A text cut to `n` characters (with an ellipsis when cut).
fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(n.saturating_sub(1)).collect();
        c.push('\u{2026}');
        c
    }
}

/// The plot width in px.
fn plot_width() -> f64 {
    W - LEFT - RIGHT
}

/// The x of `t` seconds from the origin on the axis of `b`.
fn x_of(b: &Buckets) -> impl Fn(f64) -> f64 {
    let x0 = b.start_s();
    let span = if b.span_s() > 0.0 { b.span_s() } else { 1.0 };
    move |t: f64| LEFT + ((t - x0) / span).clamp(0.0, 1.0) * plot_width()
}

/// Seconds from the origin of `b`.
fn secs(b: &Buckets, t: u64) -> f64 {
    t.saturating_sub(b.origin) as f64 / 1e9
}

/// The legend at the top of a plot: the outcomes present, `extra` marks
/// (their SVG with `LX` for their x, and their label), then the fault kinds.
fn legend(s: &mut String, present: &[Status], extra: &[(&str, &str)], faults: &[FaultBand]) {
    let mut lx = LEFT;
    let ly = 30.0;
    for st in present {
        let _ = write!(
            s,
            "<rect x=\"{lx:.1}\" y=\"{y:.1}\" width=\"12\" height=\"9\" fill=\"{c}\"/>\
             <text class=\"legend\" x=\"{tx:.1}\" y=\"{ty}\">{n}</text>",
            y = ly - 5.0,
            c = color(*st),
            tx = lx + 16.0,
            ty = ly + 4.0,
            n = st.as_str()
        );
        lx += 24.0 + 6.5 * st.as_str().len() as f64;
    }
    for (mark, label) in extra {
        let _ = write!(
            s,
            "{mark}<text class=\"legend\" x=\"{tx:.1}\" y=\"{ty}\">{l}</text>",
            mark = mark.replace("LX", &format!("{lx:.1}")),
            tx = lx + 16.0,
            ty = ly + 4.0,
            l = escape(label)
        );
        lx += 24.0 + 6.5 * label.chars().count() as f64;
    }
    let kinds = plot::fault_kinds(faults);
    for k in &kinds {
        let label = format!("fault: {k}");
        let _ = write!(
            s,
            "<rect x=\"{lx:.1}\" y=\"{y:.1}\" width=\"12\" height=\"9\" fill=\"{c}\" fill-opacity=\"0.35\"/>\
             <text class=\"legend\" x=\"{tx:.1}\" y=\"{ty}\">{l}</text>",
            y = ly - 5.0,
            c = plot::fault_color(&kinds, k),
            tx = lx + 16.0,
            ty = ly + 4.0,
            l = escape(&label)
        );
        lx += 24.0 + 6.5 * label.chars().count() as f64;
    }
}

/// The outcomes that occur in `h`, in the order ok, fail, info.
fn present(h: &History) -> Vec<Status> {
    STATUSES
        .into_iter()
        .filter(|s| h.txns.iter().any(|t| t.status == *s))
        .collect()
}

/// Draws the timeline of `h` on the axis of `b`, with `faults` shaded and
/// `marks` (the counterexamples' transactions) outlined, each with the id
/// [`anchor`] gives.
pub fn timeline(
    h: &History,
    b: &Buckets,
    faults: &[FaultBand],
    marks: &[&checkers::TxnView],
) -> Timeline {
    let x = x_of(b);
    let pw = plot_width();
    // The rows: sessions in order, with the nodes that served them.
    let mut sessions: BTreeMap<u64, BTreeSet<&str>> = BTreeMap::new();
    for t in &h.txns {
        let e = sessions.entry(t.session).or_default();
        if let Some(n) = &t.node {
            e.insert(&**n);
        }
    }
    let all_rows = sessions.len();
    let rows: Vec<(u64, BTreeSet<&str>)> = sessions.into_iter().take(MAX_ROWS).collect();
    let row_of: HashMap<u64, usize> = rows.iter().enumerate().map(|(i, (s, _))| (*s, i)).collect();
    let n = rows.len().max(1);
    let rh = (480.0 / n as f64).clamp(3.0, 14.0).floor();
    let ph = rh * n as f64;
    let height = TOP + ph + BOTTOM;
    let bar_h = if rh >= 6.0 { rh - 2.0 } else { rh };
    let y_of = |row: usize| TOP + row as f64 * rh + (rh - bar_h) / 2.0;
    let end_s = b.start_s() + b.span_s();
    let timed = h.txns.iter().filter(|t| t.start.is_some()).count();
    let aggregate = timed > MAX_BARS;

    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"plot timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {height}\" \
         width=\"{W}\" height=\"{height}\" role=\"img\" aria-label=\"timeline\">\
         <text x=\"{LEFT}\" y=\"16\" class=\"ptitle\">timeline: every transaction, one row per session</text>"
    );
    plot::draw_faults(&mut s, faults, &x, TOP, ph);

    // Per row, the transactions to draw (exact) or its cells (aggregate).
    let mut by_row: Vec<Vec<&Txn>> = vec![Vec::new(); rows.len()];
    for t in &h.txns {
        if let (Some(&r), Some(_)) = (row_of.get(&t.session), t.start) {
            by_row[r].push(t);
        }
    }
    let cols = (CELL_BUDGET / n).clamp(40, pw as usize);
    let col_w = pw / cols as f64;
    let col = |t_s: f64| (((x(t_s) - LEFT) / col_w) as usize).min(cols - 1);
    let mut open_infos = 0usize;
    for (r, (session, nodes)) in rows.iter().enumerate() {
        let label = row_label(*session, nodes);
        let ry = TOP + r as f64 * rh;
        let _ = write!(
            s,
            "<g class=\"tlrow\" id=\"tl-s{session}\"><title>session {session}{on}</title>\
             <line class=\"sep\" x1=\"{LEFT}\" x2=\"{x2}\" y1=\"{ry}\" y2=\"{ry}\"/>",
            on = if nodes.is_empty() {
                String::new()
            } else {
                escape(&format!(
                    " on {}",
                    label.split_once(' ').map_or("", |p| p.1)
                ))
            },
            x2 = LEFT + pw
        );
        if rh >= 8.0 {
            let _ = write!(
                s,
                "<text x=\"{tx}\" y=\"{ty:.1}\" text-anchor=\"end\">{l}</text>",
                tx = LEFT - 4.0,
                ty = ry + rh / 2.0 + 3.0,
                l = escape(&cut(&label, 11))
            );
        }
        let y = y_of(r);
        if !aggregate {
            // Open infos first, as thin strips under the others.
            for t in by_row[r].iter().filter(|t| t.end.is_none()) {
                let x0 = x(secs(b, t.start.unwrap_or(0)));
                open_infos += 1;
                let _ = write!(
                    s,
                    "<rect class=\"{c} open\" x=\"{x0:.1}\" y=\"{yy:.1}\" width=\"{w:.1}\" height=\"{hh:.1}\">\
                     <title>{tip} (drawn to the end of the run)</title></rect>",
                    c = class(t.status),
                    yy = y + bar_h * 2.0 / 3.0,
                    w = (x(end_s) - x0).max(1.0),
                    hh = (bar_h / 3.0).max(1.0),
                    tip = escape(&txn_tip(t, b.origin))
                );
            }
            for t in by_row[r].iter().filter(|t| t.end.is_some()) {
                let (x0, x1) = (
                    x(secs(b, t.start.unwrap_or(0))),
                    x(secs(b, t.end.unwrap_or(0))),
                );
                let _ = write!(
                    s,
                    "<rect class=\"{c}\" x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{bar_h}\">\
                     <title>{tip}</title></rect>",
                    c = class(t.status),
                    w = (x1 - x0).max(0.6),
                    tip = escape(&txn_tip(t, b.origin))
                );
            }
        } else {
            // Each column: the outcome of most of the transactions running
            // in it, and the worst other than ok (a strip under the bar);
            // the counts of those that start in it; a non-ok example.
            let mut cover = vec![[0usize; 3]; cols];
            let mut started = vec![[0usize; 3]; cols];
            let mut example: Vec<Option<&Txn>> = vec![None; cols];
            for t in &by_row[r] {
                let start = t.start.unwrap_or(0);
                let c0 = col(secs(b, start));
                let c1 = match t.end {
                    Some(e) => col(secs(b, e)),
                    None => {
                        open_infos += 1;
                        c0
                    }
                };
                let k = rank(t.status) as usize - 1;
                for c in &mut cover[c0..=c1.max(c0)] {
                    c[k] += 1;
                }
                started[c0][k] += 1;
                if t.status != Status::Ok {
                    let e = &mut example[c0];
                    if e.is_none_or(|x| rank(x.status) < rank(t.status)) {
                        *e = Some(t);
                    }
                }
            }
            // Ties go to the worse outcome.
            let major: Vec<u8> = cover
                .iter()
                .map(|n| match n.iter().max() {
                    Some(&m) if m > 0 => {
                        (0..3).rev().find(|&k| n[k] == m).map_or(0, |k| k as u8 + 1)
                    }
                    _ => 0,
                })
                .collect();
            let bad: Vec<u8> = cover
                .iter()
                .map(|n| {
                    if n[2] > 0 {
                        3
                    } else if n[1] > 0 {
                        2
                    } else {
                        0
                    }
                })
                .collect();
            let t_of = |px: f64| b.start_s() + (px - LEFT) / pw * b.span_s();
            let strip_h = (bar_h / 3.0).max(1.0);
            for (key, yy, hh) in [(&major, y, bar_h), (&bad, y + bar_h - strip_h, strip_h)] {
                let mut c = 0;
                while c < cols {
                    if key[c] == 0 {
                        c += 1;
                        continue;
                    }
                    let from = c;
                    let mut counts = [0usize; 3];
                    let mut ex: Option<&Txn> = None;
                    while c < cols && key[c] == key[from] {
                        for (k, v) in counts.iter_mut().zip(started[c]) {
                            *k += v;
                        }
                        if let Some(e) = example[c] {
                            if ex.is_none_or(|x| rank(x.status) < rank(e.status)) {
                                ex = Some(e);
                            }
                        }
                        c += 1;
                    }
                    let (x0, x1) = (LEFT + from as f64 * col_w, LEFT + c as f64 * col_w);
                    let mut tip = format!(
                        "session {session}, {:.3} ms to {:.3} ms: started {} ok, {} fail, {} info",
                        t_of(x0) * 1e3,
                        t_of(x1) * 1e3,
                        counts[0],
                        counts[1],
                        counts[2]
                    );
                    if let Some(e) = ex {
                        let _ = write!(tip, "; e.g. {}", txn_tip(e, b.origin));
                    }
                    let _ = write!(
                        s,
                        "<rect class=\"{cl}\" x=\"{x0:.1}\" y=\"{yy:.1}\" width=\"{w:.1}\" height=\"{hh:.1}\">\
                         <title>{tip}</title></rect>",
                        cl = class(of_rank(key[from])),
                        w = x1 - x0,
                        tip = escape(&tip)
                    );
                }
            }
        }
        s.push_str("</g>");
    }
    // The fault windows again, over the bars: a tint and their edges that
    // leave the bars' tooltips reachable.
    let kinds = plot::fault_kinds(faults);
    for f in faults {
        let (x0, x1) = (x(f.from_s), x(f.to_s.max(f.from_s)));
        let c = plot::fault_color(&kinds, &f.kind);
        let _ = write!(
            s,
            "<rect class=\"fault-over\" x=\"{x0:.1}\" y=\"{TOP}\" width=\"{w:.1}\" height=\"{ph}\" \
             fill=\"{c}\" fill-opacity=\"{o}\" stroke=\"{c}\" pointer-events=\"none\"/>",
            w = (x1 - x0).max(1.0),
            o = if f.applied { "0.15" } else { "0.04" }
        );
    }
    // The counterexamples' transactions, outlined, with their anchors.
    let mut anchored = HashSet::new();
    for t in marks {
        let (Some(&r), Some(start)) = (row_of.get(&t.session), t.start) else {
            continue;
        };
        if !anchored.insert(t.id) {
            continue;
        }
        let x0 = x(secs(b, start));
        let x1 = t.end.map_or(x0, |e| x(secs(b, e)));
        let (x0, x1) = if x1 - x0 < 4.0 {
            let mid = (x0 + x1) / 2.0;
            (mid - 2.0, mid + 2.0)
        } else {
            (x0, x1)
        };
        let tip = tooltip(
            t.id,
            t.status,
            t.session,
            t.node.as_deref(),
            (t.start, t.end),
            b.origin,
        );
        let _ = write!(
            s,
            "<rect class=\"cx\" id=\"{id}\" x=\"{x0:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{hh:.1}\">\
             <title>{tip} (in a counterexample)</title></rect>",
            id = anchor(t.id),
            y = y_of(r) - 1.0,
            w = x1 - x0,
            hh = bar_h + 2.0,
            tip = escape(&tip)
        );
    }
    plot::draw_time_axis(&mut s, b.start_s(), b.span_s(), &x, TOP + ph, height - 4.0);
    let _ = write!(
        s,
        "<rect class=\"frame\" x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\"/>"
    );
    let extra: Vec<(&str, &str)> = if anchored.is_empty() {
        vec![]
    } else {
        vec![(
            "<rect class=\"cx\" x=\"LX\" y=\"25\" width=\"12\" height=\"9\"/>",
            "in a counterexample",
        )]
    };
    legend(&mut s, &present(h), &extra, faults);
    s.push_str("</svg>");

    // The caption.
    let mut caption =
        format!("One row per client session ({all_rows}), labelled <code>s</code> and the session");
    if rows.iter().any(|(_, n)| !n.is_empty()) {
        caption.push_str(" and the node that served it");
    }
    if all_rows > rows.len() {
        let _ = write!(
            caption,
            "; only the first {} sessions are drawn",
            rows.len()
        );
    }
    if aggregate {
        let _ = write!(
            caption,
            ". The history has {timed} timed transactions, more than {MAX_BARS}: each row is cut \
             into {cols} columns of {}, each coloured by the outcome of most of the transactions \
             running in it, with a thin strip along its bottom where any failed (red) or \
             ended unknown (amber, over red); hover over one for the counts of the \
             transactions starting in it",
            escape(&plot::fmt_duration(b.span_s() / cols as f64))
        );
        if open_infos > 0 {
            let _ = write!(
                caption,
                "; the {open_infos} info transactions without an end are marked in their start column only"
            );
        }
    } else {
        caption.push_str(
            ". Each transaction is a bar from its start to its end, coloured by outcome \
             (green ok, red fail, amber info); hover over one for its id, times and error",
        );
        if open_infos > 0 {
            let _ = write!(
                caption,
                "; the {open_infos} info transactions without an end are thin pale strips to \
                 the end of the run"
            );
        }
    }
    if !faults.is_empty() {
        caption.push_str("; shaded: fault windows");
    }
    if !anchored.is_empty() {
        caption.push_str("; outlined: the counterexamples' transactions (linked from below)");
    }
    caption.push('.');
    Timeline {
        svg: s,
        caption,
        anchored,
    }
}

/// Draws every transaction with a start and an end as a dot at (start,
/// latency) on a log scale, on the axis of `b`, with `faults` shaded;
/// returns the `<svg>` and its caption (HTML, escaped).
pub fn latency(h: &History, b: &Buckets, faults: &[FaultBand]) -> (String, String) {
    let x = x_of(b);
    let pw = plot_width();
    let ph = LAT_H - TOP - BOTTOM;
    // (start s, latency ms, txn), ok first so the others are drawn on top.
    let mut pts: Vec<(f64, f64, &Txn)> = h
        .txns
        .iter()
        .filter_map(|t| {
            let (a, e) = (t.start?, t.end?);
            Some((secs(b, a), e.saturating_sub(a) as f64 / 1e6, t))
        })
        .collect();
    pts.sort_by_key(|p| rank(p.2.status));
    let unplotted = h.txns.len() - pts.len();
    // Whole powers of ten from the fastest to the slowest (1 ns at least).
    let floor_ms = 1e-6;
    let lat = |v: f64| v.max(floor_ms);
    let (min, max) = pts.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), p| {
        (lo.min(lat(p.1)), hi.max(lat(p.1)))
    });
    let (lo, hi) = if pts.is_empty() {
        (0.0, 1.0)
    } else {
        let lo = min.log10().floor();
        (lo, max.log10().ceil().max(lo + 1.0))
    };
    let y = |v: f64| TOP + ph - ((lat(v).log10() - lo) / (hi - lo)).clamp(0.0, 1.0) * ph;

    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"plot latency-raw\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {LAT_H}\" \
         width=\"{W}\" height=\"{LAT_H}\" role=\"img\" aria-label=\"latency of every transaction\">\
         <text x=\"{LEFT}\" y=\"16\" class=\"ptitle\">latency of every transaction (ms, log scale)</text>"
    );
    plot::draw_faults(&mut s, faults, &x, TOP, ph);
    let ticks: Vec<f64> = (lo as i32..=hi as i32).map(|e| 10f64.powi(e)).collect();
    plot::draw_y_ticks(&mut s, &ticks, &plot::log_tick_labels(&ticks), &y, pw);
    plot::draw_time_axis(&mut s, b.start_s(), b.span_s(), &x, TOP + ph, LAT_H - 4.0);
    let _ = write!(
        s,
        "<rect class=\"frame\" x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\"/>"
    );
    let binned = pts.len() > MAX_DOTS;
    if !binned {
        for (t_s, l, t) in &pts {
            let _ = write!(
                s,
                "<circle class=\"{c}\" cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"2\">\
                 <title>{tip}</title></circle>",
                c = class(t.status),
                cx = x(*t_s),
                cy = y(*l),
                tip = escape(&txn_tip(t, b.origin))
            );
        }
    } else {
        // Cells of BIN_PX, per outcome: how many, and their ranges.
        type Cell = (usize, f64, f64, f64, f64);
        let mut cells: BTreeMap<(u8, i64, i64), Cell> = BTreeMap::new();
        for (t_s, l, t) in &pts {
            let (px, py) = (x(*t_s), y(*l));
            let key = (rank(t.status), (px / BIN_PX) as i64, (py / BIN_PX) as i64);
            let c = cells
                .entry(key)
                .or_insert((0, f64::INFINITY, 0.0, f64::INFINITY, 0.0));
            *c = (
                c.0 + 1,
                c.1.min(*t_s),
                c.2.max(*t_s),
                c.3.min(*l),
                c.4.max(*l),
            );
        }
        for ((r, bx, by), (n, t0, t1, l0, l1)) in &cells {
            let st = of_rank(*r);
            let range = |a: String, b: String| if a == b { a } else { format!("{a} to {b}") };
            let tip = format!(
                "{n} {}: start {} ms, latency {} ms",
                st.as_str(),
                range(format!("{:.3}", t0 * 1e3), format!("{:.3}", t1 * 1e3)),
                range(plot::fmt_num(*l0), plot::fmt_num(*l1))
            );
            let _ = write!(
                s,
                "<circle class=\"{c}\" cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"{rr:.1}\">\
                 <title>{tip}</title></circle>",
                c = class(st),
                // The outcomes of one cell side by side; more, bigger.
                cx = (*bx as f64 + 0.5) * BIN_PX + (f64::from(*r) - 2.0) * 2.0,
                rr = (1.5 + (*n as f64).log10() * 0.8).min(3.5),
                cy = (*by as f64 + 0.5) * BIN_PX,
                tip = escape(&tip)
            );
        }
    }
    legend(&mut s, &present(h), &[], faults);
    s.push_str("</svg>");

    let mut caption = String::from(
        "Each transaction with a start and an end: its start against its latency (end minus start), \
         on a log scale, coloured by outcome (green ok, red fail, amber info)",
    );
    if binned {
        let _ = write!(
            caption,
            ". The history has {} such transactions, more than {MAX_DOTS}: one dot per \
             {BIN_PX} &times; {BIN_PX} px cell and outcome, bigger for more; hover over one for how many it holds \
             and their ranges",
            pts.len()
        );
    } else {
        caption.push_str("; hover over a dot for its id, times and error");
    }
    if unplotted > 0 {
        let _ = write!(
            caption,
            "; {unplotted} transactions without a start or an end (info) are not drawn"
        );
    }
    if !faults.is_empty() {
        caption.push_str("; shaded: fault windows");
    }
    caption.push('.');
    (s, caption)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(n: u64) -> History {
        let txns = (0..n)
            .map(|i| {
                let status = match i % 10 {
                    0 => Status::Fail,
                    1 => Status::Info,
                    _ => Status::Ok,
                };
                let mut t = Txn::new(i, i % 4, status, vec![]);
                t.start = Some(i * 100_000);
                t.end = (i % 20 != 1).then_some(i * 100_000 + 90_000);
                t
            })
            .collect();
        History::from_txns(txns)
    }

    #[test]
    fn small_histories_draw_every_transaction() {
        let h = history(100);
        let b = plot::bucket(&h).unwrap();
        let tl = timeline(&h, &b, &[], &[]);
        assert_eq!(tl.svg.matches("<g class=\"tlrow\"").count(), 4);
        assert_eq!(tl.svg.matches("<rect class=\"t-").count(), 100);
        assert_eq!(tl.svg.matches("class=\"t-info open\"").count(), 5);
        let (svg, caption) = latency(&h, &b, &[]);
        assert_eq!(svg.matches("<circle").count(), 95);
        assert!(caption.contains("5 transactions without a start or an end"));
    }

    #[test]
    fn big_histories_are_aggregated_deterministically() {
        let h = history(50_000);
        let b = plot::bucket(&h).unwrap();
        let tl = timeline(&h, &b, &[], &[]);
        assert!(tl.caption.contains("more than 2000"), "{}", tl.caption);
        assert!(tl.svg.len() < 300_000, "{}", tl.svg.len());
        assert_eq!(tl.svg, timeline(&h, &b, &[], &[]).svg);
        let (svg, caption) = latency(&h, &b, &[]);
        assert!(caption.contains("one dot per"), "{caption}");
        assert!(svg.matches("<circle").count() < 2000);
    }
}
