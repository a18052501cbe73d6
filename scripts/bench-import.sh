#!/usr/bin/env bash
# Streaming importers: builds a large valid history in each importer's
# format from a seed (scripts/gen-history.py) and times
# `harness convert FILE --from FORMAT` to JSONL, printing one markdown row
# per format: median wall time of RUNS runs, MB/s, peak RSS, and RSS over
# the model's size (176 bytes a transaction + 56 an op, the figures of
# BENCHMARKS.md's "Parsing and importing at scale").
#
# Usage: scripts/bench-import.sh [OUT_DIR] [FORMAT...]
#   FORMAT: elle-edn elle-json timekiller dbcop viper cobra (default: all)
#   MB: size of each history (default 150); RUNS: runs per row (default 3)
#   HARNESS: a `harness` binary to measure instead of building this tree.
#   BEFORE: another `harness` (e.g. main's) measured first on each file, in
#   a column of its own, so that both see the same load.
#   READ_ONLY=1: time the importer alone instead of `convert` (which also
#   writes the JSONL): HARNESS and BEFORE are then builds of
#   `cargo build --release -p history --example import_file`.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/isoharness-import}
shift || true
FORMATS=${*:-elle-edn elle-json timekiller dbcop viper cobra}
MB=${MB:-150}
RUNS=${RUNS:-3}
ROOT=$PWD
if [ -n "${HARNESS:-}" ]; then
  H=$HARNESS
elif [ -n "${READ_ONLY:-}" ]; then
  H=${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/import_file
  cargo build --release -q -p history --example import_file
else
  H=${CARGO_TARGET_DIR:-$ROOT/target}/release/harness
  cargo build --release -q --bin harness
fi
mkdir -p "$OUT"
# measure BINARY INPUT FORMAT: sets secs (median) and kb (max peak RSS).
measure() {
  local times=() k
  kb=0
  for _ in $(seq "$RUNS"); do
    if [ -n "${READ_ONLY:-}" ]; then # the importer alone: examples/import_file
      /usr/bin/time -o "$OUT/time.txt" -f "%e %M" "$1" "$3" "$2" >/dev/null 2>&1
    else
      /usr/bin/time -o "$OUT/time.txt" -f "%e %M" "$1" convert "$2" "$OUT/out.jsonl" --from "$3" >/dev/null 2>&1
    fi
    read -r s k < <(tail -1 "$OUT/time.txt")
    times+=("$s")
    kb=$((k > kb ? k : kb))
  done
  secs=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((RUNS + 1) / 2))p")
}

cell() { # size secs kb model: "wall, MB/s, RSS (x model)"
  python3 -c 'import sys; b, s, kb, m = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]); print(f"{s:.2f} s, {b / 1e6 / s:.0f} MB/s, {kb / 1024:.0f} MB ({kb * 1024 / m:.1f}x)", end="")' "$@"
}

if [ -n "${BEFORE:-}" ]; then
  echo "| format | file | txns | ops | model | before: wall, speed, peak RSS (x model) | after |"
  echo "|---|---|---|---|---|---|---|"
else
  echo "| format | file | txns | ops | model | wall, speed, peak RSS (x model) |"
  echo "|---|---|---|---|---|---|"
fi
for f in $FORMATS; do
  in="$OUT/big-$f"
  if [ ! -e "$in" ]; then
    python3 "$ROOT/scripts/gen-history.py" "$f" "$in" --mb "$MB" 2>"$OUT/$f.info"
  fi
  read -r txns ops < <(sed -E 's/.*: ([0-9]+) transactions, ([0-9]+) events.*/\1 \2/' "$OUT/$f.info")
  bytes=$(du -sb "$in" | cut -f1)
  model=$((176 * txns + 56 * ops))
  row="| $f | $((bytes / 1000000)) MB | $txns | $ops | $((model / 1048576)) MB |"
  if [ -n "${BEFORE:-}" ]; then
    measure "$BEFORE" "$in" "$f"
    row="$row $(cell "$bytes" "$secs" "$kb" "$model") |"
  fi
  measure "$H" "$in" "$f"
  echo "$row $(cell "$bytes" "$secs" "$kb" "$model") |"
done
