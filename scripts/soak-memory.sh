#!/usr/bin/env bash
# Peak memory against run length (issue 26, goal 2): for each duration, one
# `harness run --duration D` (SQLite by default, mini-transactions, ser)
# with a `harness check --follow` on its history beside it. Prints one
# Markdown row per duration:
#   txns, history size, the run's peak RSS while recording, its overall
#   peak (the read-back and full check of the history at the end included),
#   the follower's peak RSS, its verdict and how long after the run's last
#   transaction it came.
#
# Usage: scripts/soak-memory.sh [DURATION ...]     (default: 1m 5m 15m)
# Environment: HARNESS (a binary; default: build this tree), DB (sqlite),
#   WORKLOAD (mini), LEVEL (ser), CLIENTS (8), OUT (a scratch folder),
#   RUN_ARGS (more `harness run` flags, e.g. `--stream`: no read-back, so
#   the overall peak is the peak while recording).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${HARNESS:-}" ]; then
  cargo build --release --quiet --bin harness
  HARNESS=$PWD/target/release/harness
fi
DB=${DB:-sqlite} WORKLOAD=${WORKLOAD:-mini} LEVEL=${LEVEL:-ser} CLIENTS=${CLIENTS:-8}
read -r -a RUN_ARGS <<<"${RUN_ARGS:-}"
OUT=${OUT:-$(mktemp -d /tmp/soak-memory.XXXXXX)}
DURATIONS=${*:-1m 5m 15m}

hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
mb() { echo $(( ($1 + 512) / 1024 )); }

echo "| duration | txns | history | run: peak while recording | run: overall peak (the read-back included, if any) | follower: peak | follower: verdict |"
echo "|---|---|---|---|---|---|---|"
for d in $DURATIONS; do
  dir=$OUT/$d
  rm -rf "$dir" && mkdir -p "$dir"
  # The run's overall peak is its high-water mark when it exits, which
  # /usr/bin/time reports; the samples below follow it while it records.
  /usr/bin/time -f "%M" -o "$dir/run.kb" "$HARNESS" run --db "$DB" --workload "$WORKLOAD" \
    --level "$LEVEL" --clients "$CLIENTS" --duration "$d" --out "$dir" \
    ${RUN_ARGS[@]+"${RUN_ARGS[@]}"} >"$dir/run.out" 2>"$dir/run.err" &
  timer=$!
  run=
  while [ -z "$run" ] && kill -0 $timer 2>/dev/null; do
    run=$(pgrep -P $timer | head -1 || true)
    sleep 0.05
  done
  hist=
  while [ -z "$hist" ] && kill -0 $run 2>/dev/null; do
    hist=$(ls "$dir"/*/history.jsonl 2>/dev/null | head -1 || true)
    sleep 0.2
  done
  /usr/bin/time -f "%M" -o "$dir/follow.kb" "$HARNESS" check "$hist" --level "$LEVEL" --follow \
    >"$dir/follow.out" 2>"$dir/follow.err" &
  fol=$!
  # The run's memory while it records: its high-water mark until the
  # history's end line.
  rec=0
  while kill -0 $run 2>/dev/null; do
    if tail -c 200 "$hist" 2>/dev/null | grep -q '"type":"end"'; then break; fi
    h=$(hwm_kb $run)
    [ "${h:-0}" -gt "$rec" ] && rec=$h
    sleep 0.2
  done
  wait $timer || true
  peak=$(cat "$dir/run.kb")
  wait $fol || true
  txns=$(grep -o '"txns":[0-9]*' "$hist" | tail -1 | cut -d: -f2)
  size=$(( $(stat -c %s "$hist") / 1048576 ))
  verdict=$(head -1 "$dir/follow.out" | sed 's/|/\\|/g')
  after=$(grep -o 'verdict [0-9]* ms after the last line read' "$dir/follow.err" | grep -o '[0-9]*' || echo "?")
  echo "| $d | $txns | $size MB | $(mb $rec) MB | $(mb $peak) MB | $(mb "$(cat "$dir/follow.kb")") MB | $verdict; $after ms after the last line |"
done
