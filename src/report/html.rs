//! `report.html`: one self-contained page (no script, no external asset)
//! with the run, its time series, the verdict and every counterexample.
//!
//! Everything that comes from a history or a report goes through
//! [`escape`](super::escape::escape); the page's own markup is the only unescaped text.

use std::collections::HashSet;
use std::fmt::Write as _;

use checkers::{Anomaly, Report};
use history::{History, Key, Op};
use serde_json::Value;

use super::escape::escape;
use super::{cycle, plot, timeline, Drawn};

/// A JSON value as escaped text: strings bare, absent values as a dash.
fn text(v: &Value) -> String {
    match v {
        Value::Null => "&ndash;".into(),
        Value::String(s) => escape(s),
        Value::Array(xs) => {
            let parts: Vec<String> = xs.iter().map(text).collect();
            parts.join(", ")
        }
        other => escape(&other.to_string()),
    }
}

/// A JSON number with `digits` decimals, or a dash.
fn num(v: &Value, digits: usize) -> String {
    match v.as_f64() {
        Some(x) => format!("{x:.digits$}"),
        None => "&ndash;".into(),
    }
}

/// A JSON fraction as a percentage, or a dash.
fn pct(v: &Value) -> String {
    match v.as_f64() {
        Some(x) => format!("{:.1}%", x * 100.0),
        None => "&ndash;".into(),
    }
}

/// Removes passwords from the URL field, in case a report was written by
/// hand or by an older harness (the run already writes it redacted).
fn redact(url: &str) -> String {
    let parts: Vec<String> = url.split(' ').map(adapters::redact_url).collect();
    parts.join(" ")
}

const STYLE: &str = "
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 70em; padding: 0 1em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
code, .ops { font-family: ui-monospace, monospace; font-size: 0.92em; }
.verdict { font-size: 1.3em; padding: 0.5em 0.8em; border-radius: 4px; display: inline-block; }
.verdict.ok { background: #dff3e0; } .verdict.anomalous { background: #fbdcdc; }
.verdict.unknown { background: #fff3cd; }
.warning { background: #fff3cd; border: 2px solid #c77c00; padding: 0.4em 0.8em; border-radius: 4px; }
.anomaly { border: 1px solid #e2c6c6; border-radius: 4px; padding: 0.2em 1em 0.8em; margin: 1em 0; }
.edges li { margin: 0.2em 0; } .edge-kind { font-weight: bold; }
.ops mark, th mark { background: #ffe066; padding: 0 0.15em; border-radius: 2px; }
svg { display: block; margin: 0.6em 0; max-width: 100%; height: auto; }
svg text { font-family: system-ui, sans-serif; }
svg .ptitle { font-size: 13px; font-weight: bold; } svg .flabel { font-size: 9px; fill: #333; } svg .tick, svg .legend { font-size: 10px; fill: #444; }
svg .grid { stroke: #eee; } svg .axis { stroke: #999; } svg .frame { fill: none; stroke: #bbb; }
svg.cycle ellipse { fill: #f7f7ff; stroke: #446; } svg.cycle text { font-size: 12px; }
svg.cycle .elabel { font-size: 11px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
.muted { color: #777; }
";

/// Renders the page. `run` is the whole `report.json`; `check` its `check`
/// part; `drawn` the run's history or what its recorder kept.
pub fn render(run: &Value, check: &Report, drawn: &Drawn) -> String {
    let mut s = String::new();
    let info = &run["run"];
    let id = info["id"].as_str().unwrap_or("run");
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>isoharness: {}</title><style>{STYLE}{}</style></head>\n<body>\n",
        escape(id),
        timeline::STYLE
    );
    let _ = writeln!(s, "<h1>isoharness report: {}</h1>", escape(id));
    verdict(&mut s, run, check);
    tested_little(&mut s, info);
    run_info(&mut s, info);
    outcomes(&mut s, run);
    let axis = match drawn {
        Drawn::Whole(h) => {
            over_time(&mut s, plot::bucket(h).as_ref(), &h.faults);
            every_txn(&mut s, h, check)
        }
        Drawn::Kept {
            buckets,
            faults,
            txns,
        } => {
            over_time(&mut s, buckets.as_ref(), faults);
            let _ = writeln!(
                s,
                "<h2 id=\"timeline\">Timeline</h2>\n<p class=\"muted\">Not drawn: the run's {txns} \
                 transactions were checked and counted as they were recorded, and the history \
                 was not read back (<code>harness report</code> on the run folder draws them).</p>"
            );
            None
        }
    };
    by_kind(&mut s, &run["abort_rate"]);
    end_check(&mut s, &run["end_check"]);
    check_details(&mut s, check);
    counterexamples(&mut s, check, axis.as_ref());
    s.push_str("</body></html>\n");
    s
}

/// The loud warning of a run that tested little (`run.tested_little`),
/// and of one a signal interrupted.
fn tested_little(s: &mut String, info: &Value) {
    if let Some(why) = info["tested_little"].as_array().filter(|a| !a.is_empty()) {
        let items: Vec<String> = why
            .iter()
            .map(|w| format!("<li>{}</li>", text(w)))
            .collect();
        let _ = writeln!(
            s,
            "<div class=\"warning\"><b>WARNING: this run tested little, so its verdict \
             says little.</b><ul>{}</ul></div>",
            items.join("")
        );
    }
    if info["interrupted"] == Value::Bool(true) {
        let by = info["interrupted_by"].as_str().unwrap_or("a signal");
        let _ = writeln!(
            s,
            "<p class=\"warning\">interrupted by {} before the run's budget was used up</p>",
            escape(by)
        );
    }
}

fn verdict(s: &mut String, run: &Value, check: &Report) {
    let v = run["verdict"]
        .as_str()
        .map_or_else(|| check.verdict.to_string(), str::to_string);
    let class = match v.as_str() {
        "ok" | "anomalous" | "unknown" => v.as_str(),
        _ => "unknown",
    };
    let _ = writeln!(
        s,
        "<p class=\"verdict {class}\">verdict: <b>{}</b> at level <b>{}</b> \
         <span class=\"muted\">(method {})</span></p>",
        escape(&v),
        escape(check.level.name()),
        escape(&check.method)
    );
    if !check.anomaly_counts.is_empty() {
        let parts: Vec<String> = check
            .anomaly_counts
            .iter()
            .map(|(k, n)| format!("{} &times;{n}", escape(k)))
            .collect();
        let _ = writeln!(s, "<p>anomalies: {}</p>", parts.join(", "));
    }
    for n in &check.notes {
        let _ = writeln!(s, "<p class=\"muted\">note: {}</p>", escape(n));
    }
}

/// The fields of `run` shown first, in this order; others follow.
const RUN_FIELDS: [&str; 23] = [
    "id",
    "db",
    "url",
    "workload",
    "variant",
    "level",
    "isolation",
    "server",
    "settings",
    "seed",
    "clients",
    "keys",
    "dist",
    "txns_budget",
    "duration_s",
    "started",
    "finished",
    "complete",
    "interrupted",
    "interrupted_by",
    "tested_little",
    "nemesis",
    "warnings",
];

fn run_info(s: &mut String, info: &Value) {
    let Some(obj) = info.as_object() else {
        return;
    };
    s.push_str("<h2>Run</h2>\n<table>\n");
    let rest = obj.keys().filter(|k| !RUN_FIELDS.contains(&k.as_str()));
    for k in RUN_FIELDS.iter().copied().chain(rest.map(String::as_str)) {
        let Some(v) = obj.get(k) else {
            continue;
        };
        let shown = match (k, v) {
            ("url", Value::String(u)) => escape(&redact(u)),
            _ => text(v),
        };
        let _ = writeln!(s, "<tr><th>{}</th><td>{shown}</td></tr>", escape(k));
    }
    s.push_str("</table>\n");
}

fn outcomes(s: &mut String, run: &Value) {
    let c = &run["counts"];
    let a = &run["abort_rate"];
    let t = &run["throughput"];
    if c.is_null() && t.is_null() {
        return;
    }
    s.push_str("<h2>Outcomes</h2>\n<table>\n");
    let _ = writeln!(
        s,
        "<tr><th>transactions</th><td class=\"n\">{}</td></tr>\
         <tr><th>committed</th><td class=\"n\">{}</td></tr>\
         <tr><th>failed</th><td class=\"n\">{}</td></tr>\
         <tr><th>info (unknown)</th><td class=\"n\">{}</td></tr>\
         <tr><th>abort rate (failed)</th><td class=\"n\">{}</td></tr>\
         <tr><th>info rate</th><td class=\"n\">{}</td></tr>\
         <tr><th>committed txn/s</th><td class=\"n\">{}</td></tr>\
         <tr><th>attempted txn/s</th><td class=\"n\">{}</td></tr>\
         <tr><th>client phase (s)</th><td class=\"n\">{}</td></tr>",
        text(&c["total"]),
        text(&c["committed"]),
        text(&c["failed"]),
        text(&c["info"]),
        pct(&a["overall"]),
        pct(&a["info"]),
        num(&t["committed_per_s"], 1),
        num(&t["attempted_per_s"], 1),
        num(&t["elapsed_s"], 3)
    );
    deadlock_row(s, a);
    // The final reads: not the workload's, so not in the counts above.
    let f = &run["final_reads"];
    if f.is_object() {
        let _ = writeln!(
            s,
            "<tr><th>final reads (apart)</th><td class=\"n\">{} txns, {} ok, {} keys</td></tr>",
            text(&f["txns"]),
            text(&f["ok"]),
            text(&f["keys"])
        );
    }
    let l = &run["latency_ms"];
    if l.is_object() {
        let _ = writeln!(
            s,
            "<tr><th>commit latency (ms)</th><td class=\"n\">p50 {} &middot; p95 {} &middot; \
             p99 {} &middot; max {} &middot; mean {}</td></tr>",
            num(&l["p50"], 3),
            num(&l["p95"], 3),
            num(&l["p99"], 3),
            num(&l["max"], 3),
            num(&l["mean"], 3)
        );
    }
    s.push_str("</table>\n");
    if let Some(errs) = a["top_errors"].as_array().filter(|e| !e.is_empty()) {
        s.push_str("<h3>Top errors</h3>\n<table><tr><th>code</th><th>count</th></tr>\n");
        for e in errs {
            let _ = writeln!(
                s,
                "<tr><td><code>{}</code></td><td class=\"n\">{}</td></tr>",
                text(&e["code"]),
                text(&e["count"])
            );
        }
        s.push_str("</table>\n");
    }
}

fn over_time(s: &mut String, b: Option<&plot::Buckets>, fault_list: &[history::Fault]) {
    s.push_str("<h2>Over time</h2>\n");
    let Some(b) = b else {
        s.push_str("<p class=\"muted\">The history has no transaction times.</p>\n");
        return;
    };
    let faults = plot::fault_bands(fault_list, b);
    let shaded = if faults.is_empty() {
        ""
    } else {
        "; shaded: fault windows"
    };
    let _ = writeln!(
        s,
        "<p class=\"muted\">From the first transaction to the last, in {} buckets of {} each{shaded}.</p>",
        b.committed.len(),
        escape(&plot::fmt_duration(b.width_s()))
    );
    let chart = |title, series, y_max, log_when_spread| plot::Chart {
        title,
        bucket_s: b.width_s(),
        start_s: b.start_s(),
        span_s: b.span_s(),
        series,
        faults: &faults,
        y_max,
        log_when_spread,
    };
    let charts = [
        chart(
            "committed throughput (txn/s)",
            vec![plot::Series {
                name: "committed txn/s",
                color: "#1f57b4",
                values: b.throughput(),
                width: 1.5,
            }],
            None,
            false,
        ),
        // p99 first, so that p50 is drawn over it.
        chart(
            "latency of committed transactions (ms)",
            vec![
                plot::Series {
                    name: "p99",
                    color: "#d62728",
                    values: b.p99_ms.clone(),
                    width: 1.5,
                },
                plot::Series {
                    name: "p50",
                    color: "#1b7f2a",
                    values: b.p50_ms.clone(),
                    width: 2.2,
                },
            ],
            None,
            true,
        ),
        chart(
            "abort rate (fail + info, fraction of attempts)",
            vec![plot::Series {
                name: "aborted",
                color: "#e07b00",
                values: b.abort_rate(),
                width: 1.5,
            }],
            Some(1.0),
            false,
        ),
    ];
    for c in &charts {
        s.push_str(&plot::chart(c));
        s.push('\n');
    }
    if fault_list.is_empty() {
        return;
    }
    s.push_str(
        "<h3>Faults</h3>\n<table><tr><th>kind</th><th>target</th><th>start (s)</th>\
         <th>end (s)</th><th>applied</th><th>detail</th></tr>\n",
    );
    for (f, band) in fault_list.iter().zip(&faults) {
        let end = match f.end {
            Some(_) => escape(&plot::fmt_num(band.to_s)),
            None => "&ndash;".into(),
        };
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{end}</td>\
             <td>{}</td><td>{}</td></tr>",
            escape(&f.kind),
            escape(f.target.as_deref().unwrap_or("")),
            escape(&plot::fmt_num(band.from_s)),
            if f.applied { "yes" } else { "no" },
            escape(f.detail.as_deref().unwrap_or(""))
        );
    }
    s.push_str("</table>\n");
}

/// The deadlock row of the outcomes table: how many transactions a
/// deadlock ended and their share; nothing in a report from before it
/// was counted.
fn deadlock_row(s: &mut String, abort_rate: &Value) {
    if abort_rate["deadlocks"].is_null() {
        return;
    }
    let _ = writeln!(
        s,
        "<tr><th>deadlocks (40P01, 1213)</th><td class=\"n\">{} ({})</td></tr>",
        text(&abort_rate["deadlocks"]),
        pct(&abort_rate["deadlock_rate"])
    );
}

/// Where the counterexamples' times go: the clock value (ns) the charts
/// count from, and the transactions the timeline marks.
struct Axis {
    origin: u64,
    anchored: HashSet<u64>,
}

/// The timeline and the latency plot of every transaction, on the time
/// axis of the charts; `None` when the history has no times.
fn every_txn(s: &mut String, h: &History, check: &Report) -> Option<Axis> {
    let b = plot::bucket(h)?;
    let faults = plot::fault_bands(&h.faults, &b);
    let marks: Vec<&checkers::TxnView> = check.anomalies.iter().flat_map(|a| &a.txns).collect();
    let tl = timeline::timeline(h, &b, &faults, &marks);
    let _ = writeln!(
        s,
        "<h2 id=\"timeline\">Timeline</h2>\n<p class=\"muted\">{}</p>\n{}",
        tl.caption, tl.svg
    );
    let (svg, caption) = timeline::latency(h, &b, &faults);
    let _ = writeln!(
        s,
        "<h2 id=\"latency-raw\">Latency of every transaction</h2>\n<p class=\"muted\">{caption}</p>\n{svg}"
    );
    Some(Axis {
        origin: b.origin,
        anchored: tl.anchored,
    })
}

fn by_kind(s: &mut String, abort_rate: &Value) {
    let Some(kinds) = abort_rate["by_kind"].as_object().filter(|k| !k.is_empty()) else {
        return;
    };
    s.push_str(
        "<h2>By transaction kind</h2>\n<table><tr><th>kind</th><th>total</th><th>committed</th>\
         <th>failed</th><th>info</th><th>abort rate</th><th>info rate</th><th>top errors</th></tr>\n",
    );
    for (kind, o) in kinds {
        let errs: Vec<String> = o["top_errors"]
            .as_array()
            .map(|es| {
                es.iter()
                    .map(|e| format!("{} &times;{}", text(&e["code"]), text(&e["count"])))
                    .collect()
            })
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "<tr><td><code>{}</code></td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td>{}</td></tr>",
            escape(kind),
            text(&o["total"]),
            text(&o["committed"]),
            text(&o["failed"]),
            text(&o["info"]),
            pct(&o["abort_rate"]),
            pct(&o["info_rate"]),
            errs.join(", ")
        );
    }
    s.push_str("</table>\n");
}

fn end_check(s: &mut String, e: &Value) {
    if !e.is_object() {
        return;
    }
    let ok = e["ok"].as_bool() == Some(true);
    let _ = writeln!(
        s,
        "<h2>End check: {}</h2>\n<p class=\"verdict {}\">{}</p>",
        text(&e["check"]),
        if ok { "ok" } else { "anomalous" },
        if ok {
            "every condition holds"
        } else {
            "some conditions are violated"
        }
    );
    let Some(conds) = e["conditions"].as_array() else {
        return;
    };
    s.push_str(
        "<table><tr><th>#</th><th>condition</th><th>ok</th><th>checked</th>\
         <th>violations</th><th>first violations</th></tr>\n",
    );
    for c in conds {
        let _ = writeln!(
            s,
            "<tr><td class=\"n\">{}</td><td><code>{}</code></td><td>{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td>{}</td></tr>",
            text(&c["id"]),
            text(&c["name"]),
            if c["ok"].as_bool() == Some(true) {
                "yes"
            } else {
                "no"
            },
            text(&c["checked"]),
            text(&c["violation_count"]),
            c["violations"]
                .as_array()
                .map(|vs| vs.iter().map(text).collect::<Vec<_>>().join("<br>"))
                .unwrap_or_default()
        );
    }
    s.push_str("</table>\n");
}

fn check_details(s: &mut String, c: &Report) {
    let levels = |ls: &[history::Level]| {
        if ls.is_empty() {
            "&ndash;".to_string()
        } else {
            let names: Vec<String> = ls.iter().map(|l| escape(l.name())).collect();
            names.join(", ")
        }
    };
    let st = &c.stats;
    let _ = writeln!(
        s,
        "<h2>Check</h2>\n<table>\
         <tr><th>level</th><td>{}</td></tr>\
         <tr><th>verdict</th><td>{}</td></tr>\
         <tr><th>method</th><td>{}</td></tr>\
         <tr><th>fails</th><td>{}</td></tr>\
         <tr><th>satisfies</th><td>{}</td></tr>\
         <tr><th>not placed</th><td>{}</td></tr>\
         <tr><th>history</th><td>{} txns ({} ok, {} fail, {} info, {} info seen committed), \
         {} sessions, {} keys, {} ops</td></tr>\
         <tr><th>write-order constraints</th><td class=\"n\">{}</td></tr>\
         <tr><th>verdict known after (ms)</th><td class=\"n\">{}</td></tr>\
         <tr><th>check time (ms)</th><td class=\"n\">{}</td></tr></table>",
        escape(c.level.name()),
        escape(&c.verdict.to_string()),
        escape(&c.method),
        levels(&c.fails),
        levels(&c.satisfies),
        levels(&c.not_placed),
        st.txns,
        st.ok,
        st.fail,
        st.info,
        st.info_committed,
        st.sessions,
        st.keys,
        st.ops,
        c.constraints,
        c.decided_ms,
        c.elapsed_ms
    );
}

fn counterexamples(s: &mut String, c: &Report, axis: Option<&Axis>) {
    let found: usize = c.anomaly_counts.values().sum();
    let _ = writeln!(
        s,
        "<h2>Counterexamples ({} shown of {})</h2>",
        c.anomalies.len(),
        found.max(c.anomalies.len())
    );
    if c.anomalies.is_empty() {
        s.push_str("<p>None.</p>\n");
    } else {
        s.push_str("<table><tr><th>anomaly</th><th>found</th><th>shown below</th></tr>\n");
        for (k, n, shown) in c.kinds_shown() {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td class=\"n\">{n}</td><td class=\"n\">{shown}</td></tr>",
                escape(&k)
            );
        }
        s.push_str(
            "</table>\n<p class=\"muted\">The most serious first; at most a few of each kind \
             are spelled out.</p>\n",
        );
    }
    for (i, a) in c.anomalies.iter().enumerate() {
        anomaly(s, i + 1, a, axis);
    }
}

/// True when `o` touches a key in `keys` (a range read: one in its range).
fn relevant(o: &Op, keys: &[&Key]) -> bool {
    match o {
        Op::RangeRead { lo, hi, .. } => keys.iter().any(|k| *k >= lo && *k <= hi),
        other => other.key().is_some_and(|k| keys.contains(&k)),
    }
}

fn anomaly(s: &mut String, n: usize, a: &Anomaly, axis: Option<&Axis>) {
    let _ = writeln!(
        s,
        "<section class=\"anomaly\" id=\"anomaly-{n}\"><h3>{n}. {}</h3>\n<p>{}</p>",
        escape(&a.title()),
        escape(&a.summary)
    );
    s.push_str(&cycle::draw(a, &format!("a{n}")));
    s.push('\n');
    let keys: Vec<&Key> = a.edges.iter().filter_map(|e| e.key.as_ref()).collect();
    s.push_str(
        "<table><tr><th>txn</th><th>session</th><th>status</th><th>start / end (ms, as on the charts)</th>\
         <th>ops (those on the edges' keys <mark>highlighted</mark>)</th></tr>\n",
    );
    for t in &a.txns {
        let ops: Vec<String> = t
            .ops
            .iter()
            .map(|o| {
                let text = escape(&checkers::op_text(o, a.write_ids));
                if relevant(o, &keys) {
                    format!("<mark>{text}</mark>")
                } else {
                    text
                }
            })
            .collect();
        // In ms on the charts' axis, linked to the transaction's marker on
        // the timeline (ns in the tooltip).
        let times = match (axis, t.start) {
            (Some(ax), Some(start)) => {
                let ms = |v: Option<u64>| {
                    v.map_or_else(|| "&ndash;".to_string(), |x| timeline::ms(ax.origin, x))
                };
                let ns = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |x| x.to_string());
                let href = if ax.anchored.contains(&t.id) {
                    timeline::anchor(t.id)
                } else {
                    "timeline".to_string()
                };
                format!(
                    "<a class=\"tl\" href=\"#{href}\" title=\"on the timeline; ns {} / {}\">{} / {}</a>",
                    ns(Some(start)),
                    ns(t.end),
                    ms(Some(start)),
                    ms(t.end)
                )
            }
            _ => "&ndash; / &ndash;".to_string(),
        };
        let _ = writeln!(
            s,
            "<tr><td>T{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td>\
             <td class=\"ops\">{}</td></tr>",
            t.id,
            match &t.node {
                // The cluster node that served it.
                Some(n) => format!("{} ({})", t.session, escape(n)),
                None => t.session.to_string(),
            },
            t.status.as_str(),
            times,
            ops.join(" ")
        );
    }
    s.push_str("</table>\n<ul class=\"edges\">\n");
    for e in &a.edges {
        let on = e
            .key
            .as_ref()
            .map(|k| format!(" on <code>{}</code>", escape(&k.to_string())))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "<li>T{} &rarr; T{} (<span class=\"edge-kind\">{}</span>{on}): {}</li>",
            e.from,
            e.to,
            e.kind.name(),
            escape(&e.reason)
        );
    }
    let _ = writeln!(
        s,
        "</ul>\n<p class=\"muted\">Graphviz: <a href=\"anomaly-{n}.dot\">anomaly-{n}.dot</a></p></section>"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_the_five_characters() {
        assert_eq!(
            escape(r#"<script>alert("x" & 'y')</script>"#),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;"
        );
        assert_eq!(escape("plain ü text"), "plain ü text");
        assert_eq!(escape(""), "");
    }

    #[test]
    fn json_text_is_escaped_and_urls_lose_passwords() {
        assert_eq!(text(&Value::String("<b>".into())), "&lt;b&gt;");
        assert_eq!(text(&serde_json::json!(["<a>", 1])), "&lt;a&gt;, 1");
        assert_eq!(text(&Value::Null), "&ndash;");
        assert_eq!(
            redact("postgres://bob:hunter2@h/db (through the proxy to x)"),
            "postgres://bob:***@h/db (through the proxy to x)"
        );
    }
}
