#!/usr/bin/env bash
# Black-box SI/SER checking without timestamps (issue 14): BlindW-RW
# histories recorded from memdb with a seed, exported to PolySI's text
# format (no times), and laid out three ways: commit order, grouped by
# session (PolySI, Plume and Viper files), and a random interleaving of the
# sessions; every layout renumbers the transactions in file order, so no
# id says when a transaction committed. Viper-style histories also drop
# the sessions (each transaction its own session) and are shuffled. One
# 100k history gets an injected anomaly: a read-only transaction that read
# a key from a writer is made to read another key that writer overwrote as
# its initial value.
# Prints a markdown row per case: history, level, verdict, method, wall,
# peak RSS.
# Usage: scripts/bench-blackbox.sh [OUT_DIR]; HARNESS=path/to/harness to
# measure another build (e.g. main's, for before/after); TIMEOUT (60s).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/isoharness-blackbox}
TIMEOUT=${TIMEOUT:-60s}
if [ -z "${HARNESS:-}" ]; then
  cargo build --release -q --bin harness
  HARNESS=${CARGO_TARGET_DIR:-target}/release/harness
fi
H=$HARNESS
mkdir -p "$OUT"

record() { # name, txns, keys: a memdb BlindW-RW run at si, exported to text
  local name=$1 n=$2 keys=$3
  if [ ! -f "$OUT/$name.txt" ]; then
    $H run --db memdb --out "$OUT/runs" --check-timeout 1s --workload blindw --variant rw \
      --ops 8 --keys "$keys" --dist uniform --clients 24 --txns "$n" --level si --seed 1 >/dev/null 2>&1 || true
    $H convert "$(ls -td "$OUT"/runs/*/ | head -1)history.jsonl" "$OUT/$name.txt" --to text --lossy >/dev/null 2>&1
  fi
}

layout() { # in, out, mode (commit | grouped | shuffled | nosession | inject)
  python3 scripts/layout-text.py "$@"
}

measure() { # history, level
  local f=$1 level=$2
  /usr/bin/time -o "$OUT/time.txt" -f "%e %M" $H check "$OUT/$f.txt" --level "$level" --json --timeout "$TIMEOUT" \
    > "$OUT/report.json" 2>/dev/null || true
  read -r secs kb < <(tail -1 "$OUT/time.txt")
  python3 - "$OUT/report.json" "$f" "$level" "$secs" "$kb" <<'PY'
import json, sys
f, level, secs, kb = sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
try:
    r = json.load(open(sys.argv[1]))
    verdict, method = r['verdict'], r['method']
except Exception:
    verdict, method = 'error', '-'
print(f"| {f} | {level} | {verdict} | {method} | {secs:.2f} s | {kb/1024:.0f} MB |")
PY
}

record bw10k 10000 2000
record bw1k 1000 2000
record bw2k 2000 2000
record bw100k 100000 2000
for m in commit grouped shuffled; do layout "$OUT/bw10k.txt" "$OUT/bw10k-$m.txt" $m; done
for n in 1k 2k; do layout "$OUT/bw$n.txt" "$OUT/viper-bw$n.txt" nosession; done
layout "$OUT/bw100k.txt" "$OUT/bw100k-grouped.txt" grouped
layout "$OUT/bw100k.txt" "$OUT/bw100k-injected.txt" inject
layout "$OUT/bw100k-injected.txt" "$OUT/bw100k-injected-grouped.txt" grouped

echo "| history | level | verdict | method | wall | peak RSS |"
echo "|---|---|---|---|---|---|"
for m in commit grouped shuffled; do
  for lvl in si ser strong-session-si; do measure "bw10k-$m" $lvl; done
done
for n in 1k 2k; do measure "viper-bw$n" si; done
for f in bw100k-grouped bw100k-injected-grouped; do
  for lvl in si strong-session-si; do measure $f $lvl; done
done
