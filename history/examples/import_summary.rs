//! Imports every history listed in a fixtures MANIFEST.tsv and prints a
//! one-line summary per row (format, transactions, statuses, op kinds), or
//! the error. Usage: `cargo run -p history --example import_summary -- DIR`.

use std::path::Path;
use std::time::Instant;

use history::formats::{self, Format};
use history::Op;

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "../shared/fixtures".into());
    let manifest =
        std::fs::read_to_string(Path::new(&dir).join("MANIFEST.tsv")).expect("MANIFEST.tsv");
    for row in manifest.lines().skip(1) {
        let path = row.split('\t').next().unwrap_or("");
        let fmt = row.split('\t').nth(1).unwrap_or("");
        let full = Path::new(&dir).join(path);
        let t0 = Instant::now();
        let detected = formats::detect(&full)
            .map(|f| f.to_string())
            .unwrap_or_else(|e| format!("?{e}"));
        match formats::read(&full, Format::Auto) {
            Ok(h) => {
                let (ok, fail, info) = h.status_counts();
                let mut kinds = [0usize; 7];
                for t in &h.txns {
                    for op in &t.ops {
                        kinds[match op {
                            Op::Read { value: None, .. } => 0,
                            Op::Read { .. } => 1,
                            Op::Write { .. } => 2,
                            Op::Append { .. } => 3,
                            Op::ReadList { .. } => 4,
                            _ => 5,
                        }] += 1;
                    }
                }
                let sessions: std::collections::BTreeSet<u64> =
                    h.txns.iter().map(|t| t.session).collect();
                println!(
                    "{fmt:16} {detected:10} ok={ok} fail={fail} info={info} sessions={} r0={} r={} w={} a={} rl={} other={} {:?} {path}",
                    sessions.len(), kinds[0], kinds[1], kinds[2], kinds[3], kinds[4], kinds[5], t0.elapsed()
                );
            }
            Err(e) => println!("{fmt:16} {detected:10} ERROR {e}"),
        }
    }
}
