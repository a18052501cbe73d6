#!/usr/bin/env bash
# Builds tidb-server from the Go module proxy (the one version go.mod pins)
# into a cache folder outside the repository, and starts it standalone on
# its embedded unistore store: TiDB's real SQL and transaction layer over an
# in-process MVCC store (docs/clusters.md, "TiDB").
#
#   tools/tidb/tidb.sh build    # build, or reuse the cached binary
#   tools/tidb/tidb.sh start    # build if needed, start on 127.0.0.1:4000, wait
#   tools/tidb/tidb.sh stop     # stop it gracefully (SIGTERM)
#   tools/tidb/tidb.sh status   # exit 0 when it answers
#
# Settings: ISOHARNESS_TIDB_CACHE (default ~/.cache/isoharness/tidb),
# ISOHARNESS_TIDB_DATA (default /tmp/isoharness-tidb), TIDB_PORT (4000),
# TIDB_STATUS_PORT (10080).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
VERSION=v1.1.0-beta.0.20260724063146-0a6cfba9f749
PARSER=v0.0.0-20260724063146-0a6cfba9f749
COMMIT=0a6cfba9f749
CACHE=${ISOHARNESS_TIDB_CACHE:-$HOME/.cache/isoharness/tidb}
DATA=${ISOHARNESS_TIDB_DATA:-/tmp/isoharness-tidb}
PORT=${TIDB_PORT:-4000}
STATUS=${TIDB_STATUS_PORT:-10080}
BIN=$CACHE/tidb-server-$VERSION

die() { echo "tidb.sh: $*" >&2; exit 2; }

build() {
  if [ -x "$BIN" ]; then echo "tidb.sh: cached $BIN"; return; fi
  command -v go >/dev/null || die "no go on PATH (Go 1.26 is needed)"
  mkdir -p "$CACHE"
  # The module files are copied to a scratch folder: go writes go.sum
  # there, never into the repository.
  local work; work=$(mktemp -d)
  cp "$HERE/go.mod" "$work/"
  export GOTOOLCHAIN=local GOFLAGS=-mod=mod
  # The checksum database has no entry for these pseudo-versions; the
  # proxy's zips are hashed locally instead.
  export GONOSUMDB='github.com/pingcap/*'
  echo "tidb.sh: fetching github.com/pingcap/tidb@$VERSION and its parser"
  (cd "$work" && go mod download github.com/pingcap/tidb@"$VERSION" \
     github.com/pingcap/tidb/pkg/parser@"$PARSER") \
    || die "the Go module proxy did not serve TiDB $VERSION (above); nothing built"
  local ld="-X github.com/pingcap/tidb/pkg/parser/mysql.TiDBReleaseVersion=v9.0.0-isoharness-$COMMIT"
  ld="$ld -X github.com/pingcap/tidb/pkg/util/versioninfo.TiDBGitHash=$COMMIT"
  echo "tidb.sh: building tidb-server (cold: 10-25 minutes on 2 cores)"
  (cd "$work" && go build -tags codes -ldflags "$ld" -o "$BIN.tmp" \
     github.com/pingcap/tidb/cmd/tidb-server) || die "go build failed (above)"
  mv "$BIN.tmp" "$BIN"
  rm -rf "$work"
}

status() { curl -fsS "http://127.0.0.1:$STATUS/status" >/dev/null 2>&1; }

start() {
  if status; then echo "tidb.sh: already answering on $STATUS"; return; fi
  build
  mkdir -p "$DATA"
  # Detached, bound to loopback only.
  setsid "$BIN" -store unistore -path "$DATA/store" -host 127.0.0.1 -P "$PORT" \
    -status-host 127.0.0.1 -status "$STATUS" -socket '' -L warn \
    -log-file "$DATA/tidb.log" </dev/null >"$DATA/stdout.log" 2>&1 &
  echo $! >"$DATA/pid"
  for _ in $(seq 1 120); do
    status && { echo "tidb.sh: tidb-server answers on 127.0.0.1:$PORT"; return; }
    kill -0 "$(cat "$DATA/pid")" 2>/dev/null || die "tidb-server exited; see $DATA/tidb.log"
    sleep 1
  done
  die "tidb-server did not answer within 120 s; see $DATA/tidb.log"
}

stop() {
  [ -f "$DATA/pid" ] || return 0
  local pid; pid=$(cat "$DATA/pid")
  # Gracefully: unistore writes its lock table out only on a clean stop.
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  rm -f "$DATA/pid"
}

case "${1:-}" in
  build) build ;;
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) die "usage: tidb.sh build|start|stop|status" ;;
esac
