//! A counterexample drawn as a small inline SVG: its transactions on a
//! circle, each dependency an arrow labelled with its kind and key.

use std::collections::HashMap;
use std::fmt::Write as _;

use checkers::{Anomaly, EdgeKind};

use super::html::escape;

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
const STANDALONE_STYLE: &str = "text { font-family: sans-serif; font-size: 12px; } \
ellipse { fill: #f7f7ff; stroke: #446; } \
.elabel { font-size: 11px; paint-order: stroke; stroke: #fff; stroke-width: 3px; }";

/// Draws `a` as an SVG file of its own (`anomaly-N.svg` beside the DOT), so
/// that it shows without Graphviz.
pub fn standalone(a: &Anomaly) -> String {
    let svg = draw(a, "a");
    match svg.find("<defs>") {
        Some(i) => format!(
            "{}<style>{STANDALONE_STYLE}</style>{}\n",
            &svg[..i],
            &svg[i..]
        ),
        None => svg,
    }
}

/// Draws `a` as an `<svg>`; `prefix` makes its marker ids unique in the
/// page.
pub fn draw(a: &Anomaly, prefix: &str) -> String {
    // The nodes: the transactions shown, then any edge end not among them.
    let mut ids: Vec<u64> = a.txns.iter().map(|t| t.id).collect();
    for e in &a.edges {
        for id in [e.from, e.to] {
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    let n = ids.len().max(1);
    let radius = if n == 1 {
        0.0
    } else {
        (n as f64 * 26.0).clamp(70.0, 220.0)
    };
    let w = (2.0 * radius + 280.0).max(420.0);
    let h = 2.0 * radius + 110.0;
    let (cx, cy) = (w / 2.0, h / 2.0);
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
                let ops: Vec<String> = t.ops.iter().map(|o| o.to_string()).collect();
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
        };
        let svg = draw(&a, "a1");
        assert_eq!(svg.matches("<ellipse").count(), 2);
        assert_eq!(svg.matches("<g class=\"edge\">").count(), 2);
        assert!(svg.contains("marker-end=\"url(#a1-rw)\""));
        assert!(svg.contains(">rw &lt;k&gt;</text>"));
        assert!(!svg.contains("<k>") && !svg.contains("<reasons>"));
    }
}
