# Shared by the bench-*.sh scripts (sourced, not run): the release build,
# histories recorded from memdb, and `harness check` timed by /usr/bin/time.
# Set OUT before sourcing, and ROW: the body of a Python f-string over
# f, level, secs, kb, the report r, its stats s and the json module.
H=./target/release/harness
cargo build --release -q --bin harness
mkdir -p "$OUT"

gen() { # name, then harness run flags: a memdb history, made once
  local name=$1; shift
  if [ ! -f "$OUT/$name.jsonl" ]; then
    $H run --db memdb --out "$OUT/runs" --check-timeout 1s "$@" >/dev/null 2>&1 || true
    cp "$(ls -td "$OUT"/runs/*/ | head -1)history.jsonl" "$OUT/$name.jsonl"
  fi
}

timed_check() { # history, level, extra flags: sets secs and kb, writes $OUT/report.json
  local f=$1 level=$2; shift 2
  /usr/bin/time -o "$OUT/time.txt" -f "%e %M" $H check "$OUT/$f.jsonl" --level "$level" --json "$@" \
    > "$OUT/report.json" 2>/dev/null || true
  read -r secs kb < <(tail -1 "$OUT/time.txt")
}

measure() { # history, level, extra flags: one table row, as ROW says
  local f=$1 level=$2
  timed_check "$@"
  python3 - "$OUT/report.json" "$f" "$level" "$secs" "$kb" "$ROW" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
f, level, secs, kb = sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
s = r["stats"]
print(eval("f" + repr(sys.argv[6])))
PY
}
