//! A counterexample drawn as a small inline SVG: its transactions on a
//! circle, each dependency an arrow labelled with its kind and key.

use std::collections::HashMap;
use std::fmt::Write as _;

use checkers::{Anomaly, EdgeKind};
use history::{Key, Op};

use super::escape::escape;

/// The colour of an edge kind (the same as the DOT drawings use).
fn color(k: EdgeKind) -> &'static str {
    match k {
        EdgeKind::Rw => "#d62728",
        EdgeKind::Ww => "#1f57b4",
        EdgeKind::Wr => "#1b7f2a",
        EdgeKind::So => "#666666",
        EdgeKind::Rt => "#e07b00",
        EdgeKind::Ts => "#7b3fa0",
    }
}

const KINDS: [EdgeKind; 6] = [
    EdgeKind::Ww,
    EdgeKind::Wr,
    EdgeKind::Rw,
    EdgeKind::So,
    EdgeKind::Rt,
    EdgeKind::Ts,
];

/// A node: its centre and the half-axes of its ellipse.
#[derive(Clone, Copy)]
struct Node {
    x: f64,
    y: f64,
    rx: f64,
    ry: f64,
}

impl Node {
    /// The distance from the centre to the ellipse's border in direction
    /// (dx, dy), a unit vector.
    fn reach(&self, dx: f64, dy: f64) -> f64 {
        let d = ((self.ry * dx).powi(2) + (self.rx * dy).powi(2)).sqrt();
        if d > 0.0 {
            self.rx * self.ry / d
        } else {
            self.rx
        }
    }

    /// The point on the border towards (x, y).
    fn toward(&self, x: f64, y: f64) -> (f64, f64) {
        let (dx, dy) = (x - self.x, y - self.y);
        let len = (dx * dx + dy * dy).sqrt();
        if len == 0.0 {
            return (self.x, self.y);
        }
        let r = self.reach(dx / len, dy / len) + 2.0;
        (self.x + dx / len * r, self.y + dy / len * r)
    }
}

/// The drawing's style outside the page (the page styles it itself).
const STANDALONE_STYLE: &str = "text { font-family: sans-serif; font-size: 12px; fill: #222; } \
ellipse { fill: #f7f7ff; stroke: #446; } \
.elabel { font-size: 11px; paint-order: stroke; stroke: #fff; stroke-width: 3px; } \
.legend { font-size: 11px; fill: #444; } \
.title { font-size: 16px; font-weight: bold; } \
.mono { font-family: monospace; font-size: 12px; } .head { font-weight: bold; }";

/// Cuts `text` into lines of at most about `width` characters, at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
            line.push_str("    ");
        } else if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.trim().is_empty() {
        lines.push(line);
    }
    lines
}

/// Draws `a` as an SVG file of its own (`anomaly-N.svg` beside the DOT), so
/// that it shows without Graphviz: the anomaly's name and summary, the
/// drawing with its legend, each transaction's ops and each edge's reason.
pub fn standalone(a: &Anomaly) -> String {
    const CHARS: usize = 110;
    const LINE: f64 = 16.0;
    let inner = draw(a, "a");
    let (iw, ih) = size(a);
    let w = iw.max(CHARS as f64 * 7.3 + 40.0);
    let mut body = String::new();
    let mut y = 28.0;
    let text = |body: &mut String, y: &mut f64, class: &str, t: &str| {
        let _ = write!(
            body,
            "<text x=\"20\" y=\"{y:.1}\" class=\"{class}\">{}</text>",
            escape(t)
        );
        *y += LINE;
    };
    text(&mut body, &mut y, "title", &a.title());
    y += 4.0;
    for l in wrap(&a.summary, CHARS) {
        text(&mut body, &mut y, "", &l);
    }
    let _ = write!(
        body,
        "<svg x=\"{x:.1}\" y=\"{y:.1}\" width=\"{iw}\" height=\"{ih}\" viewBox=\"0 0 {iw} {ih}\">{}</svg>",
        inner_of(&inner),
        x = (w - iw) / 2.0
    );
    y += ih + 10.0;
    text(&mut body, &mut y, "head", "Transactions");
    for t in &a.txns {
        let ops: Vec<String> = t
            .ops
            .iter()
            .map(|o| checkers::op_text(o, a.write_ids))
            .collect();
        let line = format!(
            "T{} (session {}, {}): {}",
            t.id,
            t.session,
            t.status.as_str(),
            ops.join(" ")
        );
        for l in wrap(&line, CHARS) {
            text(&mut body, &mut y, "mono", &l);
        }
    }
    if !a.edges.is_empty() {
        y += 6.0;
        text(&mut body, &mut y, "head", "Edges");
        for e in &a.edges {
            let on = e
                .key
                .as_ref()
                .map(|k| format!(" on {k}"))
                .unwrap_or_default();
            let line = format!(
                "T{} -> T{} ({}{on}): {}",
                e.from,
                e.to,
                e.kind.name(),
                e.reason
            );
            for l in wrap(&line, CHARS) {
                text(&mut body, &mut y, "", &l);
            }
        }
    }
    let h = y + 10.0;
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w:.0} {h:.0}\" width=\"{w:.0}\" height=\"{h:.0}\" \
         role=\"img\" aria-label=\"{}\"><style>{STANDALONE_STYLE}</style>\
         <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>{body}</svg>\n",
        escape(&a.title())
    )
}

/// The content of an `<svg>` element, without its own tags.
fn inner_of(svg: &str) -> &str {
    let start = svg.find('>').map_or(0, |i| i + 1);
    let end = svg.rfind("</svg>").unwrap_or(svg.len());
    &svg[start..end]
}

/// The nodes of a drawing: the transactions shown, then any edge end not
/// among them.
fn node_ids(a: &Anomaly) -> Vec<u64> {
    let mut ids: Vec<u64> = a.txns.iter().map(|t| t.id).collect();
    for e in &a.edges {
        for id in [e.from, e.to] {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    ids
}

/// The radius of the circle the nodes sit on.
fn radius(n: usize) -> f64 {
    if n <= 1 {
        0.0
    } else {
        (n as f64 * 26.0).clamp(70.0, 220.0)
    }
}

/// The edge kinds a drawing has, in legend order.
fn kinds_of(a: &Anomaly) -> Vec<EdgeKind> {
    KINDS
        .into_iter()
        .filter(|k| a.edges.iter().any(|e| e.kind == *k))
        .collect()
}

/// Height of the legend below the drawing.
const LEGEND_ROW: f64 = 18.0;

/// The width and height of [`draw`]'s drawing.
fn size(a: &Anomaly) -> (f64, f64) {
    let r = radius(node_ids(a).len());
    let w = (2.0 * r + 280.0).max(460.0);
    let h = 2.0 * r + 110.0 + LEGEND_ROW * kinds_of(a).len() as f64;
    (w, h)
}

/// The value a write-read edge carries: what the target read of the key
/// that the source wrote, shortened to its write id when it has one.
fn wr_value(a: &Anomaly, from: u64, to: u64, key: &Key) -> Option<String> {
    let writer = a.txns.iter().find(|t| t.id == from)?;
    let reader = a.txns.iter().find(|t| t.id == to)?;
    let written: Vec<i64> = writer
        .ops
        .iter()
        .filter_map(|o| o.written().filter(|(k, _)| *k == key).map(|(_, v)| v))
        .collect();
    let v = reader.ops.iter().find_map(|o| match o {
        Op::Read {
            key: k,
            value: Some(v),
        } if k == key && written.contains(v) => Some(*v),
        _ => None,
    })?;
    Some(match checkers::write_id_label(v).filter(|_| a.write_ids) {
        Some(l) => l,
        None => v.to_string(),
    })
}

/// Draws `a` as an `<svg>`; `prefix` makes its marker ids unique in the
/// page.
pub fn draw(a: &Anomaly, prefix: &str) -> String {
    let ids = node_ids(a);
    let n = ids.len().max(1);
    let radius = radius(n);
    let (w, h) = size(a);
    let legend_h = LEGEND_ROW * kinds_of(a).len() as f64;
    let (cx, cy) = (w / 2.0, (h - legend_h) / 2.0);
    let mut nodes: HashMap<u64, Node> = HashMap::new();
    for (i, id) in ids.iter().enumerate() {
        let angle = -std::f64::consts::FRAC_PI_2 + std::f64::consts::TAU * i as f64 / n as f64;
        let label_len = format!("T{id}").len() as f64;
        nodes.insert(
            *id,
            Node {
                x: cx + radius * angle.cos(),
                y: cy + radius * angle.sin(),
                rx: (6.0 + 4.2 * label_len).max(20.0),
                ry: 15.0,
            },
        );
    }
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"cycle\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" \
         width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{}\"><defs>",
        escape(&a.title())
    );
    for k in KINDS {
        let _ = write!(
            s,
            "<marker id=\"{p}-{k}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" \
             markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"{c}\"/></marker>",
            p = escape(prefix),
            k = k.name(),
            c = color(k)
        );
    }
    s.push_str("</defs>");
    // Edges: several between the same two nodes bend apart.
    let mut seen: HashMap<(u64, u64), usize> = HashMap::new();
    for e in &a.edges {
        let (Some(&p), Some(&q)) = (nodes.get(&e.from), nodes.get(&e.to)) else {
            continue;
        };
        let nth = seen.entry((e.from, e.to)).or_insert(0);
        let bend_by = 26.0 * (*nth as f64 + 1.0);
        *nth += 1;
        let col = color(e.kind);
        let mut label = e.kind.name().to_string();
        if let Some(k) = &e.key {
            let _ = write!(label, " {k}");
            if e.kind == EdgeKind::Wr {
                if let Some(v) = wr_value(a, e.from, e.to, k) {
                    let _ = write!(label, "={v}");
                }
            }
        }
        let (path, lx, ly) = if e.from == e.to {
            // A loop above the node.
            let top = p.y - p.ry;
            let d = format!(
                "M{:.1},{:.1} C{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}",
                p.x - 8.0,
                top,
                p.x - 30.0,
                top - 20.0 - bend_by,
                p.x + 30.0,
                top - 20.0 - bend_by,
                p.x + 8.0,
                top - 1.0
            );
            (d, p.x, top - 12.0 - bend_by)
        } else {
            let (dx, dy) = (q.x - p.x, q.y - p.y);
            let len = (dx * dx + dy * dy).sqrt().max(1e-9);
            // The normal to the left of the direction of travel.
            let (nx, ny) = (dy / len, -dx / len);
            let (mx, my) = ((p.x + q.x) / 2.0, (p.y + q.y) / 2.0);
            let (c1x, c1y) = (mx + nx * bend_by * 2.0, my + ny * bend_by * 2.0);
            let (sx, sy) = p.toward(c1x, c1y);
            let (ex, ey) = q.toward(c1x, c1y);
            let d = format!("M{sx:.1},{sy:.1} Q{c1x:.1},{c1y:.1} {ex:.1},{ey:.1}");
            let lx = 0.25 * sx + 0.5 * c1x + 0.25 * ex;
            let ly = 0.25 * sy + 0.5 * c1y + 0.25 * ey;
            (d, lx, ly)
        };
        let _ = write!(
            s,
            "<g class=\"edge\"><title>{tip}</title><path d=\"{path}\" fill=\"none\" stroke=\"{col}\" \
             stroke-width=\"1.6\" marker-end=\"url(#{p}-{k})\"/>\
             <text x=\"{lx:.1}\" y=\"{ly:.1}\" text-anchor=\"middle\" dominant-baseline=\"middle\" \
             class=\"elabel\" fill=\"{col}\">{label}</text></g>",
            tip = escape(&format!("T{} -> T{}: {}", e.from, e.to, e.reason)),
            p = escape(prefix),
            k = e.kind.name(),
            label = escape(&label)
        );
    }
    for id in &ids {
        let node = nodes[id];
        let tip = match a.txns.iter().find(|t| t.id == *id) {
            Some(t) => {
                let ops: Vec<String> = t
                    .ops
                    .iter()
                    .map(|o| checkers::op_text(o, a.write_ids))
                    .collect();
                let node = t
                    .node
                    .as_ref()
                    .map_or(String::new(), |n| format!(", node {n}"));
                format!(
                    "T{} (session {}{node}, {}): {}",
                    t.id,
                    t.session,
                    t.status.as_str(),
                    ops.join(" ")
                )
            }
            None => format!("T{id}"),
        };
        let _ = write!(
            s,
            "<g class=\"node\"><title>{tip}</title><ellipse cx=\"{x:.1}\" cy=\"{y:.1}\" rx=\"{rx:.1}\" ry=\"{ry:.1}\"/>\
             <text x=\"{x:.1}\" y=\"{y:.1}\" text-anchor=\"middle\" dominant-baseline=\"central\">T{id}</text></g>",
            tip = escape(&tip),
            x = node.x,
            y = node.y,
            rx = node.rx,
            ry = node.ry
        );
    }
    // The legend: one row per edge kind drawn.
    for (i, k) in kinds_of(a).into_iter().enumerate() {
        let y = h - legend_h + LEGEND_ROW * i as f64 + 4.0;
        let _ = write!(
            s,
            "<line x1=\"12\" x2=\"40\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{c}\" stroke-width=\"1.6\" \
             marker-end=\"url(#{p}-{n})\"/><text class=\"legend\" x=\"48\" y=\"{ty:.1}\">{n}: {m}</text>",
            c = color(k),
            p = escape(prefix),
            n = k.name(),
            m = escape(checkers::edge_meaning(k)),
            ty = y + 4.0
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use checkers::{AnomalyKind, CommonName, EdgeView, Scope, TxnView};
    use history::{Key, Op, Status};

    #[test]
    fn a_lost_update_is_two_nodes_and_two_labelled_arrows() {
        let key = Key::str("<k>");
        let txn = |id| TxnView {
            id,
            session: id,
            status: Status::Ok,
            start: None,
            end: None,
            node: None,
            ops: vec![Op::Read {
                key: key.clone(),
                value: None,
            }],
        };
        let edge = |from, to, kind| EdgeView {
            from,
            to,
            kind,
            key: Some(key.clone()),
            reason: "because <reasons>".into(),
        };
        let a = Anomaly {
            kind: AnomalyKind::GSingle,
            scope: Scope::Item,
            common: Some(CommonName::LostUpdate),
            summary: "s".into(),
            txns: vec![txn(0), txn(1)],
            edges: vec![edge(1, 0, EdgeKind::Rw), edge(0, 1, EdgeKind::Ww)],
            write_ids: false,
        };
        let svg = draw(&a, "a1");
        assert_eq!(svg.matches("<ellipse").count(), 2);
        assert_eq!(svg.matches("<g class=\"edge\">").count(), 2);
        assert!(svg.contains("marker-end=\"url(#a1-rw)\""));
        assert!(svg.contains(">rw &lt;k&gt;</text>"));
        assert!(!svg.contains("<k>") && !svg.contains("<reasons>"));
    }
}
