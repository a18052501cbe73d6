#!/usr/bin/env bash
# Checker benchmarks on histories recorded from memdb (valid by
# construction), plus one with an injected anomaly. Prints one line per
# check: history, level, verdict, method, wall seconds, peak RSS.
# Usage: scripts/bench-checker.sh [OUT_DIR]   (release build of `harness`)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/isoharness-bench}
. scripts/bench-lib.sh

# One table row a check (a Python f-string; see scripts/bench-lib.sh).
ROW=$(cat <<'END'
| {f} | {level} | {s['txns']} ({s['ok']} ok) | {r['verdict']} | {r['method']} | {r['decided_ms']/1000:.2f} s | {secs:.2f} s | {kb/1024:.0f} MB |
END
)

echo "| history | level | txns | verdict | method | decided | wall | peak RSS |"
echo "|---|---|---|---|---|---|---|---|"
# BlindW (8 ops, half read-only, half write-only), 2000 keys, 24 sessions.
for n in 1000 10000 100000; do
  for lvl in si ser; do
    gen "blindw-$lvl-$n" --workload blindw --variant rw --ops 8 --keys 2000 --dist uniform --clients 24 --txns $n --level $lvl --seed 1
    measure "blindw-$lvl-$n" $lvl
  done
done

# One injected anomaly in a valid 10k history: a read-only transaction
# made to read an older version of one key (a fractured read).
for lvl in si ser; do
  python3 scripts/inject-stale-read.py "$OUT/blindw-$lvl-10000.jsonl" "$OUT/blindw-$lvl-10000-anomaly.jsonl"
done
measure blindw-si-10000-anomaly si
measure blindw-ser-10000-anomaly ser

# Mini-transactions: one million.
gen mini-1m --workload mini --clients 24 --txns 1000000 --level ser --seed 1
for lvl in ser si sser; do measure mini-1m $lvl; done

# List-append: 10^5 transactions.
gen append-100k --workload append --clients 24 --txns 100000 --level ser --seed 1
for lvl in ser si; do measure append-100k $lvl; done

# White-box: the same BlindW histories carry memdb's snapshot and commit
# timestamps (`dbts`, as TiDB reports them). With `--use-dbts` the version
# order is known; against the black-box search alone (`--no-witness`,
# given 120 s).
echo
echo "| history | level | mode | verdict | method | constraints | wall | peak RSS |"
echo "|---|---|---|---|---|---|---|---|"
for n in 10000 100000; do
  for lvl in si ser; do
    for mode in --use-dbts --no-witness; do
      /usr/bin/time -o "$OUT/time.txt" -f "%e %M" $H check "$OUT/blindw-$lvl-$n.jsonl" --level "$lvl" --json --timeout 120s $mode \
        > "$OUT/report.json" 2>/dev/null || true
      read -r secs kb < <(tail -1 "$OUT/time.txt")
      python3 - "$OUT/report.json" "blindw-$lvl-$n" "$lvl" "$mode" "$secs" "$kb" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
f, level, mode, secs, kb = sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), int(sys.argv[6])
print(f"| {f} | {level} | {mode} | {r['verdict']} | {r['method']} | {r['constraints']} | {secs:.2f} s | {kb/1024:.0f} MB |")
PY
    done
  done
done
