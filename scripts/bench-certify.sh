#!/usr/bin/env bash
# What certifying costs, and how long a whole report takes when the
# requested level is anomalous: histories recorded from memdb, checked by
# `harness check --json`; prints decided, certify and wall times and peak
# RSS per check (`certify_ms` is the independent certificate checker).
# Usage: scripts/bench-certify.sh [OUT_DIR]   (release build of `harness`)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/isoharness-bench-certify}
. scripts/bench-lib.sh

# One table row a check (a Python f-string; see scripts/bench-lib.sh).
ROW=$(cat <<'END'
| {f} | {level} | {s['txns']} | {r['verdict']} | {r['certified'] if isinstance(r['certified'], str) else json.dumps(r['certified'])} | {r['decided_ms']/1000:.2f} s | {r['certify_ms']/1000:.2f} s | {secs:.2f} s | {kb/1024:.0f} MB | {len(r['fails']) + len(r['satisfies'])}/10 |
END
)

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
