#!/usr/bin/env bash
# Two `harness` builds on the same files, interleaved (old, new, old, new,
# old, new), the median wall time of each: whether a change, or the code
# of an earlier round, is faster, apart from the machine the figures of
# BENCHMARKS.md were taken on. The files are those `bench-speed.sh` makes
# in OUT (run it first); a row whose file is missing is left out.
#
# Usage: scripts/bench-before-after.sh OLD_HARNESS NEW_HARNESS [OUT]   (OUT default /tmp/isoharness-speed)
set -euo pipefail
OLD=$1 NEW=$2 OUT=${3:-/tmp/isoharness-speed}
cd "$OUT"

median() { sort -n | sed -n 2p; }

row() { # label, file, then the harness arguments after the subcommand's file
  local label=$1 file=$2 cmd=$3; shift 3
  [ -e "$file" ] || return 0
  local old=() new=() i
  for i in 1 2 3; do
    /usr/bin/time -o time.txt -f "%e" "$OLD" "$cmd" "$file" "$@" >/dev/null 2>&1 || true
    old+=("$(tail -1 time.txt)")
    /usr/bin/time -o time.txt -f "%e" "$NEW" "$cmd" "$file" "$@" >/dev/null 2>&1 || true
    new+=("$(tail -1 time.txt)")
  done
  printf '| %s | %s s | %s s |\n' "$label" "$(printf '%s\n' "${old[@]}" | median)" \
    "$(printf '%s\n' "${new[@]}" | median)"
}

echo "| row | old | new |"
echo "|---|---|---|"
for lvl in si strong-session-si; do
  row "BlindW-RW 10k, text, $lvl" blindw-10000.txt check --format text --level $lvl
done
for lvl in si ser; do
  row "BlindW-RW 10k, text, grouped, $lvl" blindw-10000-grouped.txt check --format text --level $lvl
done
for lvl in si strong-session-si; do
  row "BlindW-RW 100k, text, $lvl" blindw-100000.txt check --format text --level $lvl
  row "BlindW-RW 100k, text, one stale read, $lvl" blindw-100000-stale.txt check --format text --level $lvl
done
row "BlindW-RW 100k, JSONL, si" blindw-100000.jsonl check --level si
row "1M mini-transactions, JSONL, si" mini-1m.jsonl check --level si
for lvl in rc ra cc; do
  row "causal 2^20 (AWDIT format), $lvl" causal-2e20.txt check --format awdit --level $lvl
done
row "import text 200 MB: convert to JSONL" text-200mb.txt convert /dev/null --from text --to jsonl
row "import AWDIT 200 MB: convert to JSONL" awdit-200mb.txt convert /dev/null --from awdit --to jsonl
row "Viper-style BlindW 2k, si" viper-style-2000.txt check --format text --level si
