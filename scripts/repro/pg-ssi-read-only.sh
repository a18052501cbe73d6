#!/usr/bin/env bash
# Deterministic reproduction of the read-only G2-item cycle that
# PostgreSQL 15 committed at SERIALIZABLE
# (docs/findings/postgres-15-ser-g2-item.md), written up in
# docs/findings/postgres-ssi-read-only-repro.md.
#
# Three psql sessions on 127.0.0.1 (user postgres, $PGPORT or 5432,
# $PGDATABASE or postgres) run the sighting's schedule on a table of their
# own (dropped at the end). gdb, attached to the first writer's backend,
# stops it inside COMMIT at ReleasePredicateLocks -- after the commit is
# visible in the proc array, before SSI records it as committed -- while
# the pivot commits and the reader takes its snapshot. Prints every
# statement, what it returned, whether each COMMIT succeeded, and one
# `verdict:` line. Needs psql, python3 and gdb (run as root, or as a user
# allowed to ptrace the server's processes).
#
# Usage: scripts/repro/pg-ssi-read-only.sh [--hold FUNC|none]
#          [--release after-p-commit|after-r-read|before-p-commit] [--read-only]
# Exit code: 0 when the schedule ran, whatever the verdict; 2 on a setup
# error.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if ! command -v python3 >/dev/null 2>&1; then
  echo "setup error: python3 is not installed" >&2
  exit 2
fi
exec python3 "$here/pg-ssi-read-only.py" "$@"
