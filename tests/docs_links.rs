//! Every relative link in the repository's Markdown files (`[text](path)`,
//! `[text](path#anchor)`, `![alt](path)`, `[name]: path`) names a file or
//! folder that exists. Web links, `mailto:` and links to an anchor of the
//! same page are not checked.

use std::fs;
use std::path::{Path, PathBuf};

/// The Markdown files of the repository: everything under its root except
/// build output, Git's own folder, hidden folders and the run results that
/// `.gitignore` keeps out (only `results/README.md` is tracked there).
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let entry = entry.unwrap();
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel = path.strip_prefix(root).unwrap();
            let ty = entry.file_type().unwrap();
            if ty.is_dir() {
                if name.starts_with('.') || rel == Path::new("target") {
                    continue;
                }
                dirs.push(path);
            } else if name.ends_with(".md") {
                if rel.starts_with("results") && rel != Path::new("results/README.md") {
                    continue;
                }
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The text with fenced code blocks and inline code spans blanked out
/// (newlines kept, so line numbers stay right).
fn without_code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut fence: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let marker: String = trimmed
            .chars()
            .take_while(|&c| c == '`' || c == '~')
            .collect();
        let is_fence =
            marker.len() >= 3 && marker.chars().all(|c| c == marker.as_bytes()[0] as char);
        match &fence {
            Some(open) => {
                if is_fence && marker.starts_with(open.as_str()) {
                    fence = None;
                }
                out.push('\n');
                continue;
            }
            None if is_fence => {
                fence = Some(marker);
                out.push('\n');
                continue;
            }
            None => {}
        }
        // Inline code: a run of backticks up to the same run.
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] == '`' {
                let run = chars[i..].iter().take_while(|&&c| c == '`').count();
                let close = (i + run..chars.len()).find(|&j| {
                    chars[j..].iter().take_while(|&&c| c == '`').count() == run
                        && (j == 0 || chars[j - 1] != '`')
                });
                if let Some(j) = close {
                    out.push_str(&" ".repeat(j + run - i));
                    i = j + run;
                    continue;
                }
            }
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

/// The link targets in `text`, with their line numbers.
fn links(text: &str) -> Vec<(usize, String)> {
    let text = without_code(text);
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        // Reference definitions: `[name]: target`.
        let t = line.trim_start();
        if t.starts_with('[') && line.len() - t.len() <= 3 {
            if let Some(end) = t.find("]:") {
                let target = t[end + 2..].split_whitespace().next().unwrap_or("");
                if !target.is_empty() {
                    found.push((line_no, target.to_string()));
                }
            }
        }
        // Inline links: `](target)`, with balanced parentheses inside.
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let mut depth = 0usize;
            let mut end = None;
            for (i, c) in after.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' if depth == 0 => {
                        end = Some(i);
                        break;
                    }
                    ')' => depth -= 1,
                    _ => {}
                }
            }
            let Some(end) = end else { break };
            let inner = after[..end].trim();
            let target = if let Some(stripped) = inner.strip_prefix('<') {
                stripped.split('>').next().unwrap_or("")
            } else {
                // A title may follow the target: `(path "title")`.
                inner.split_whitespace().next().unwrap_or("")
            };
            found.push((line_no, target.to_string()));
            rest = &after[end..];
        }
    }
    found
}

/// Whether `target` is a link this test checks, and the path it names.
fn local_path(target: &str) -> Option<String> {
    let lower = target.to_ascii_lowercase();
    if target.is_empty()
        || target.starts_with('#')
        || lower.starts_with("http:")
        || lower.starts_with("https:")
        || lower.starts_with("mailto:")
        || lower.contains("://")
    {
        return None;
    }
    let path = target.split(['#', '?']).next().unwrap_or("");
    if path.is_empty() {
        return None;
    }
    Some(path.replace("%20", " "))
}

#[test]
fn relative_markdown_links_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = markdown_files(root);
    assert!(
        files.iter().any(|f| f.ends_with("README.md")),
        "no Markdown found under {}",
        root.display()
    );
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        let dir = file.parent().unwrap();
        for (line, target) in links(&text) {
            let Some(path) = local_path(&target) else {
                continue;
            };
            checked += 1;
            let resolved = match path.strip_prefix('/') {
                Some(from_root) => root.join(from_root),
                None => dir.join(&path),
            };
            if !resolved.exists() {
                broken.push(format!(
                    "{}:{line}: ({target}) does not exist",
                    file.strip_prefix(root).unwrap().display()
                ));
            }
        }
    }
    assert!(checked > 0, "no relative links found");
    assert!(
        broken.is_empty(),
        "{} broken link(s):\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn link_parser_finds_what_it_should() {
    let md = "See [a](docs/a.md#x) and ![img](b.png \"t\") and [w](https://x.y).\n\
              `[not](code.md)` and [p](<with space.md>)\n\
              ```\n[fenced](nope.md)\n```\n\
              [ref]: ../c.md\n";
    let got: Vec<String> = links(md).into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        got,
        [
            "docs/a.md#x",
            "b.png",
            "https://x.y",
            "with space.md",
            "../c.md"
        ]
    );
    assert_eq!(local_path("docs/a.md#x").as_deref(), Some("docs/a.md"));
    assert_eq!(local_path("#anchor"), None);
    assert_eq!(local_path("mailto:a@b"), None);
    assert_eq!(local_path("https://x.y/z.md"), None);
}
