#!/usr/bin/env bash
# rc, ra and cc on AWDIT's causal history of 2^20 events, ours next to
# AWDIT's. Prints one table row per level: median of 3 runs of wall time
# and of peak RSS (/usr/bin/time "%e %M"), for `harness check` (import,
# index, decide, place the other levels, certify) and `awdit check`.
#
# Usage: AWDIT=/tmp/awdit/target/release/awdit scripts/bench-weak.sh [OUT_DIR]
#
# AWDIT (github.com/lassemoldrup/AWDIT) is built outside the repository,
# see BENCHMARKS.md ("Weak levels"). Its generator makes the history
# (`awdit generate`; it takes no seed, so each OUT_DIR keeps its own file).
# Without $AWDIT, give the history as $HISTORY (AWDIT's test format) and
# only ours is measured. EVENTS (default 1048576) and LOCATIONS (default
# 100000; `default` for AWDIT's own default, 8 keys) shape the generated
# history; HARNESS names a prebuilt `harness` to measure instead of
# building this tree's; LEVELS (default "rc ra cc") picks the rows.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/isoharness-bench-weak}
EVENTS=${EVENTS:-1048576}
LOCATIONS=${LOCATIONS:-100000}
if [ -n "${HARNESS:-}" ]; then
  H=$HARNESS # another build of ours, e.g. an older one to compare with
else
  H=${CARGO_TARGET_DIR:-./target}/release/harness
  cargo build --release -q --bin harness
fi
mkdir -p "$OUT"

HIST=${HISTORY:-$OUT/causal-e$EVENTS-l$LOCATIONS.txt}
if [ ! -f "$HIST" ]; then
  if [ -z "${AWDIT:-}" ] || [ ! -x "$AWDIT" ]; then
    echo "no history: set AWDIT to AWDIT's binary (to generate one) or HISTORY to a file" >&2
    exit 2
  fi
  loc=(-l "$LOCATIONS")
  [ "$LOCATIONS" = default ] && loc=()
  "$AWDIT" generate -e "$EVENTS" "${loc[@]}" -i causal -f test "$HIST" >/dev/null
fi

median3() { # command...: prints "wall cpu rss-kb", each the median of 3 runs
  local w=() c=() m=()
  for _ in 1 2 3; do
    /usr/bin/time -o "$OUT/time.txt" -f "%e %U %S %M" "$@" >/dev/null 2>&1 || true
    read -r secs user sys kb < <(tail -1 "$OUT/time.txt")
    w+=("$secs"); c+=("$(python3 -c "print(f'{$user + $sys:.2f}')")"); m+=("$kb")
  done
  local mid='sort -g | sed -n 2p'
  echo "$(printf '%s\n' "${w[@]}" | eval "$mid") $(printf '%s\n' "${c[@]}" | eval "$mid") $(printf '%s\n' "${m[@]}" | eval "$mid")"
}

echo "history: $HIST ($(wc -c <"$HIST") bytes)"
echo "| level | ours wall | ours CPU | ours peak RSS | AWDIT wall | AWDIT CPU | AWDIT peak RSS | ours / AWDIT (wall) |"
echo "|---|---|---|---|---|---|---|---|"
for ours in ${LEVELS:-rc ra cc}; do
  case $ours in rc) theirs=read-committed ;; ra) theirs=read-atomic ;; *) theirs=causal ;; esac
  verdict=$($H check "$HIST" --format awdit --level "$ours" 2>/dev/null | head -1 || true)
  case "$verdict" in *": ok "*) ;; *) echo "unexpected verdict: $verdict" >&2 ;; esac
  read -r ow oc om < <(median3 "$H" check "$HIST" --format awdit --level "$ours")
  if [ -n "${AWDIT:-}" ] && [ -x "$AWDIT" ]; then
    read -r aw ac am < <(median3 "$AWDIT" check -i "$theirs" -f test "$HIST")
    ratio=$(python3 -c "print(f'{$ow/$aw:.2f}x')")
    echo "| $ours | $ow s | $oc s | $((om / 1024)) MB | $aw s | $ac s | $((am / 1024)) MB | $ratio |"
  else
    echo "| $ours | $ow s | $oc s | $((om / 1024)) MB | — | — | — | — |"
  fi
done
