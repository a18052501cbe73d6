#!/usr/bin/env bash
# Writes linker/hot-symbols.txt: the functions a `harness check` runs, which
# build.rs hands to the linker (`--symbol-ordering-file`) so that they sit
# together at the start of the text segment.
#
# Why: the kernel maps a binary's code 64 KiB at a time around each page
# touched ("fault-around"). Left where the linker puts them, the ~600
# functions a check of a small history runs are strewn over ~70 such windows
# of a 10 MB text, and a check of a 100-transaction history was ~4.4 MB of
# mapped code; laid out together they fill a dozen windows. Order changes
# no behaviour: a name the build does not have is skipped, so a stale list
# only costs memory, and this script renews it.
#
# How: runs `harness check` under valgrind's callgrind on the example
# histories and on small generated ones (every format, every level, text
# and JSON reports, a certificate and a DOT file), collects every function
# it ran, and keeps those the binary defines, sorted by name (stable diffs).
#
# Usage: scripts/hot-symbols.sh            (needs valgrind, python3)
#   HARNESS  a release `harness` binary to profile instead of building one
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -z "${HARNESS:-}" ]; then
  cargo build --release --bin harness >&2
  HARNESS=$ROOT/target/release/harness
fi
command -v valgrind >/dev/null || { echo "hot-symbols.sh: needs valgrind" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"

n=0
profile() { # harness arguments...: one callgrind run (any exit code)
  n=$((n + 1))
  valgrind --tool=callgrind --demangle=no --callgrind-out-file="cg.$n" \
    "$HARNESS" "$@" >/dev/null 2>&1 || true
}

G="python3 $ROOT/scripts/gen-history.py"
$G text t.txt --events 3000 --sessions 8 --keys 50
$G awdit a.awdit --events 3000 --sessions 8 --keys 50
# Over 256 KB and 5,000 transactions: read whole in pieces, cc decided ahead.
$G awdit big.awdit --events 40000 --sessions 200 --keys 8
$G dbcop d.bincode --events 3000 --sessions 8 --keys 50
$G elle-edn e.edn --events 2000 --sessions 8 --keys 50
python3 "$ROOT/scripts/dbcop-history.py" violate \
  "$ROOT/history/tests/fixtures/dbcop/clean-small/0.json" bad.json >/dev/null
mkdir -p dj bj && cp "$ROOT/history/tests/fixtures/dbcop/clean-small/0.json" dj/ && cp bad.json bj/0.json

for lvl in rc ra cc pc si ser strong-session-si strong-session-ser; do
  profile check dj --format dbcop --level "$lvl" --json
  profile check bj --format dbcop --level "$lvl" --json
  profile check a.awdit --level "$lvl" --json
done
for lvl in rc cc si ser sser; do
  profile check t.txt --format text --level "$lvl"
  profile check d.bincode --format dbcop --level "$lvl" --json
done
profile check e.edn --level si --json
profile check big.awdit --level rc --json
# The examples, as their manifest checks them, with a certificate and DOT.
while IFS=$'\t' read -r path format level flags _; do
  case $path in '#'* | path) continue ;; esac
  [ "$flags" = - ] && flags=
  # shellcheck disable=SC2086 # flags are words
  profile check "$ROOT/examples/$path" --format "$format" --level "$level" $flags \
    --certify cert.json --dot out.dot
done <"$ROOT/examples/MANIFEST.tsv"

nm --defined-only "$HARNESS" | awk '$2 ~ /^[tTwW]$/ {print $3}' | sort -u >defined.txt
mkdir -p "$ROOT/linker"
python3 - "$ROOT/linker/hot-symbols.txt" cg.* <<'EOF'
import re, sys
out, files = sys.argv[1], sys.argv[2:]
defined = set(open("defined.txt").read().split())
ran = set()
for f in files:
    for line in open(f, errors="replace"):
        m = re.match(r"c?fn=\(\d+\) (.+)", line)
        if m:
            ran.add(re.sub(r"'\d+$", "", m.group(1).strip()))
hot = sorted(ran & defined)
with open(out, "w") as w:
    w.write("".join(s + "\n" for s in hot))
print(f"{len(hot)} functions of {len(defined)} -> {out}", file=sys.stderr)
EOF
