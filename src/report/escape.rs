//! HTML escaping, shared by the page, the plots and the cycle drawings:
//! everything taken from a history or a report goes through [`escape`].

/// Makes text safe inside HTML (and SVG) text and quoted attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
