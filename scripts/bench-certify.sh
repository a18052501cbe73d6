#!/usr/bin/env bash
# What certifying costs, and how long a whole report takes when the
# requested level is anomalous: histories recorded from memdb, checked by
# `harness check --json`; prints decided, certify and wall times and peak
# RSS per check (`certify_ms` is the independent certificate checker).
# Usage: scripts/bench-certify.sh [OUT_DIR]   (release build of `harness`)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/isoharness-bench-certify}
H=./target/release/harness
cargo build --release -q --bin harness
mkdir -p "$OUT"

gen() { # name, then harness run flags
  local name=$1; shift
  if [ ! -f "$OUT/$name.jsonl" ]; then
    $H run --db memdb --out "$OUT/runs" --check-timeout 1s "$@" >/dev/null 2>&1 || true
    cp "$(ls -td "$OUT"/runs/*/ | head -1)history.jsonl" "$OUT/$name.jsonl"
  fi
}

measure() { # history, level, extra flags
  local f=$1 level=$2; shift 2
  /usr/bin/time -o "$OUT/time.txt" -f "%e %M" $H check "$OUT/$f.jsonl" --level "$level" --json "$@" \
    > "$OUT/report.json" 2>/dev/null || true
  read -r secs kb < <(tail -1 "$OUT/time.txt")
  python3 - "$OUT/report.json" "$f" "$level" "$secs" "$kb" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
f, level, secs, kb = sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
s = r["stats"]
c = r["certified"] if isinstance(r["certified"], str) else json.dumps(r["certified"])
placed = len(r["fails"]) + len(r["satisfies"])
print(f"| {f} | {level} | {s['txns']} | {r['verdict']} | {c} | {r['decided_ms']/1000:.2f} s | {r['certify_ms']/1000:.2f} s | {secs:.2f} s | {kb/1024:.0f} MB | {placed}/10 |")
PY
}

echo "| history | level | txns | verdict | certificate | decided | certify | wall | peak RSS | levels placed |"
echo "|---|---|---|---|---|---|---|---|---|---|"
gen mini-1m --workload mini --clients 24 --txns 1000000 --level ser --seed 1
for lvl in ser si sser; do measure mini-1m $lvl; done
for n in 10000 100000; do
  gen "blindw-$n" --workload blindw --variant rw --ops 8 --keys 2000 --dist uniform --clients 24 --txns $n --level si --seed 1
  for lvl in si ser; do measure "blindw-$n" $lvl; done
done
# One stale read in the 10k history: anomalous; sser is refuted by real
# time in milliseconds, and the weaker levels are placed on their own budget.
python3 scripts/inject-stale-read.py "$OUT/blindw-10000.jsonl" "$OUT/blindw-10000-stale.jsonl"
for lvl in sser ser si; do measure blindw-10000-stale $lvl; done
