#!/usr/bin/env bash
# The checking-speed table of issue 14: builds each history from a seed
# into OUT, checks it with `harness`, and prints one markdown row per check:
# verdict, wall time and peak RSS (from /usr/bin/time).
#
# Usage: scripts/bench-speed.sh [OUT_DIR] [ROW...]
#   ROW: blindw10k grouped10k text100k jsonl100k mini1m awdit import-text
#        import-awdit viper (default: all). `ROWS="mini1m awdit"` does the
#        same; `SKIP="text100k"` leaves rows out.
#   TIMEOUT: the limit of the black-box rows (default 300s).
#   HARNESS: a `harness` binary to measure instead of building this tree.
#   Peers, when built (scripts/README.md): AWDIT_BIN=/tmp/.../awdit adds
#   AWDIT's time on the AWDIT rows and generates that history with AWDIT's
#   own generator; VIPER_1K / VIPER_2K name folders of Viper's J<n>.log
#   histories for the `viper` row (unset: Viper-style histories made here).
#   PEER_MEM_GB: the peers' `ulimit -v` in GB (default 8).
# Histories are kept in OUT and reused; release build of `harness`.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-/tmp/isoharness-speed}
shift || true
ROWS=${*:-${ROWS:-blindw10k grouped10k text100k jsonl100k mini1m awdit import-text import-awdit viper}}
SKIP=${SKIP:-}
TIMEOUT=${TIMEOUT:-300s}
ROOT=$PWD
GEN="python3 $ROOT/scripts/gen-history.py"
if [ -n "${HARNESS:-}" ]; then
  H=$HARNESS # another build, e.g. the one before a change
else
  H=${CARGO_TARGET_DIR:-$ROOT/target}/release/harness
  cargo build --release -q --bin harness
fi
mkdir -p "$OUT"
cd "$OUT"

want() { # is row $1 selected?
  [[ " $ROWS " == *" $1 "* && " $SKIP " != *" $1 "* ]]
}

gen_run() { # name, then `harness run` flags: a memdb history (valid by construction)
  local name=$1; shift
  if [ ! -f "$name.jsonl" ]; then
    "$H" run --db memdb --out runs --check-timeout 1s "$@" >/dev/null 2>&1 || true
    cp "$(ls -td runs/*/ | head -1)history.jsonl" "$name.jsonl"
  fi
}

to_text() { # jsonl name: the same history as `r(k,v,s,t)` text, no timestamps
  # --lossy: text carries no timestamps, kinds or dbts (it never did)
  [ -f "$1.txt" ] || "$H" convert "$1.jsonl" "$1.txt" --to text --lossy 2>/dev/null
}

row() { # label, level, file, extra flags: one `harness check`, one row
  local label=$1 level=$2 file=$3; shift 3
  local code=0
  /usr/bin/time -o time.txt -f "%e %M" "$H" check "$file" --level "$level" "$@" >check.out 2>/dev/null || code=$?
  local verdict
  case $code in 0) verdict=ok ;; 1) verdict=anomalous ;; 3) verdict=unknown ;; *) verdict="error ($code)" ;; esac
  read -r secs kb < <(tail -1 time.txt)
  printf '| %s | %s | %s | %s s | %d MB |\n' "$label" "$level" "$verdict" "$secs" $((kb / 1024))
}

peer() { # label, then the peer's command: its wall time and peak RSS
  local label=$1; shift
  local code=0
  # Under `ulimit -v` (PEER_MEM_GB, default 8): AWDIT's cc at 2^20 took
  # 23.7 GB of this 24 GB machine before the kernel killed it.
  (ulimit -v $((${PEER_MEM_GB:-8} * 1048576)); exec /usr/bin/time -o time.txt -f "%e %M" "$@") \
    >peer.out 2>&1 || code=$?
  read -r secs kb < <(tail -1 time.txt)
  printf '| %s | | exit %d: %s | %s s | %d MB |\n' "$label" "$code" "$(tail -1 peer.out | cut -c1-40)" "$secs" $((kb / 1024))
}

inject() { # jsonl in, jsonl out: one read of a read-only transaction made stale
  python3 "$ROOT/scripts/inject-stale-read.py" "$1" "$2"
}

blindw() { # txns: the BlindW-RW history of the table (24 sessions, 2k keys, 8 ops)
  gen_run "blindw-$1" --workload blindw --variant rw --ops 8 --keys 2000 --dist uniform \
    --clients 24 --txns "$1" --level si --seed 1
}

echo "| history | level | verdict | wall | peak RSS |"
echo "|---|---|---|---|---|"

if want blindw10k; then
  blindw 10000 && to_text blindw-10000
  row "BlindW-RW 10k, text" si blindw-10000.txt --format text --timeout "$TIMEOUT"
  row "BlindW-RW 10k, text" strong-session-si blindw-10000.txt --format text --timeout "$TIMEOUT"
fi

if want grouped10k; then
  blindw 10000 && to_text blindw-10000
  # The layout of PolySI, Plume and Viper files: each session's lines together.
  [ -f blindw-10000-grouped.txt ] || python3 - blindw-10000.txt blindw-10000-grouped.txt <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
sess = lambda l: int(l[l.index("(") + 1:-1].split(",")[2])
open(sys.argv[2], "w").write("\n".join(sorted(lines, key=sess)) + "\n")
PY
  for lvl in si ser; do
    row "BlindW-RW 10k, text, grouped by session" $lvl blindw-10000-grouped.txt --format text --timeout 60s
  done
fi

if want text100k; then
  blindw 100000 && to_text blindw-100000
  [ -f blindw-100000-stale.jsonl ] || inject blindw-100000.jsonl blindw-100000-stale.jsonl
  to_text blindw-100000-stale
  for lvl in si strong-session-si; do
    row "BlindW-RW 100k, text" $lvl blindw-100000.txt --format text --timeout "$TIMEOUT"
    row "BlindW-RW 100k, text, one stale read" $lvl blindw-100000-stale.txt --format text --timeout "$TIMEOUT"
  done
fi

if want jsonl100k; then
  blindw 100000
  row "BlindW-RW 100k, JSONL with timestamps" si blindw-100000.jsonl
fi

if want mini1m; then
  gen_run mini-1m --workload mini --clients 24 --txns 1000000 --level ser --seed 1
  row "1M mini-transactions, JSONL" si mini-1m.jsonl
fi

if want awdit; then
  if [ ! -f causal-2e20.txt ]; then
    if [ -n "${AWDIT_BIN:-}" ]; then
      "$AWDIT_BIN" generate -e 1048576 -i causal -f test causal-2e20.txt >/dev/null
    else
      $GEN awdit causal-2e20.txt --events 1048576 --seed 1 2>/dev/null
    fi
  fi
  for lvl in rc ra cc; do
    row "causal history, 2^20 events (AWDIT format)" $lvl causal-2e20.txt --format awdit
    if [ -n "${AWDIT_BIN:-}" ]; then
      case $lvl in rc) iso=read-committed ;; ra) iso=read-atomic ;; cc) iso=causal ;; esac
      peer "AWDIT, same, $lvl" "$AWDIT_BIN" check -i $iso -f test causal-2e20.txt
    fi
  done
fi

import_row() { # label, file, format: `convert` to JSONL (import + export), then a check at rc
  local label=$1 file=$2 fmt=$3
  local mb
  mb=$(( $(stat -c %s "$file") / 1000000 ))
  /usr/bin/time -o time.txt -f "%e %M" "$H" convert "$file" /dev/null --from "$fmt" --to jsonl 2>/dev/null
  read -r secs kb < <(tail -1 time.txt)
  printf '| %s (%d MB): convert to JSONL | | %s MB/s | %s s | %d MB |\n' "$label" "$mb" \
    "$(python3 -c "print(round($mb / max($secs, 0.01)))")" "$secs" $((kb / 1024))
  row "$label ($mb MB)" rc "$file" --format "$fmt"
}

if want import-text; then
  [ -f text-200mb.txt ] || $GEN text text-200mb.txt --mb 200 --seed 1 2>/dev/null
  import_row "import text" text-200mb.txt text
fi

if want import-awdit; then
  [ -f awdit-200mb.txt ] || $GEN awdit awdit-200mb.txt --mb 200 --seed 1 2>/dev/null
  import_row "import AWDIT format" awdit-200mb.txt awdit
fi

if want viper; then
  for v in VIPER_1K VIPER_2K; do
    dir=${!v:-}
    if [ -n "$dir" ]; then
      row "Viper's BlindW ($v)" si "$dir" --format viper --timeout "$TIMEOUT"
      row "Viper's BlindW ($v), --solver lazy" si "$dir" --format viper --solver lazy --timeout "$TIMEOUT"
    else
      # Viper's own files are not public outside its authors' drive: a
      # Viper-style history instead (memdb BlindW-RW, no sessions, shuffled).
      n=${v#VIPER_}; n=${n%K}000
      blindw "$n" && to_text "blindw-$n"
      [ -f "viper-style-$n.txt" ] || python3 "$ROOT/scripts/layout-text.py" "blindw-$n.txt" "viper-style-$n.txt" nosession
      row "Viper-style BlindW ${n%000}k (no sessions, shuffled; $v unset)" si "viper-style-$n.txt" --format text --timeout "$TIMEOUT"
    fi
  done
fi
