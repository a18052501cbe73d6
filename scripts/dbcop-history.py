#!/usr/bin/env python3
"""Edits a history that `dbcop generate` wrote (dbcop 0.2 JSON, `<n>.json`),
for the dbcop rows of scripts/bench-goals.sh: dbcop's verifier and ours
then read the same file.

    dbcop-history.py fix IN.json OUT.json
    dbcop-history.py violate IN.json OUT.json

`dbcop generate` runs no database: it lays out a serial execution, except
that a transaction that writes a variable and later reads it reads the
version from before its own write (history/tests/fixtures/dbcop/README.md),
so its histories fail every level from ra up (and rc in ours:
not-my-own-write). `fix` makes each such read see the transaction's own
(latest) write instead: what a database returns, and a valid history at
every level. It prints how many reads it repaired.

`violate` fixes the history too, then adds a fractured read on two fresh
variables x and y that every level forbids, read committed as Biswas and
Enea define it included (ours `rc` finds it; dbcop 0.2's `committed-read`
lets it pass, its `atomic-read` and stronger fail it): at the end of
session 0, W1 writes x, then W2 reads x from W1 and writes x and y; at the
end of session 1, T reads y from W2 and then x from W1, the version W2
overwrote.
"""

import json
import sys


def fix(doc):
    """Repairs the stale own-variable reads; returns how many there were."""
    n = 0
    for session in doc["data"]:
        for txn in session:
            own = {}
            for ev in txn["events"]:
                if isinstance(ev, dict):
                    kind, body = next(iter(ev.items()))
                    var, ver = body["variable"], body.get("version")
                    if kind == "Write":
                        own[var] = ver
                    elif var in own and ver != own[var]:
                        body["version"] = own[var]
                        n += 1
                else:  # compact form ["r"|"w", variable, version]
                    if ev[0] == "w":
                        own[ev[1]] = ev[2]
                    elif ev[1] in own and ev[2] != own[ev[1]]:
                        ev[2] = own[ev[1]]
                        n += 1
    return n


def violate(doc):
    data = doc["data"]
    nvar = 1 + max(
        (ev[1] if isinstance(ev, list) else next(iter(ev.values()))["variable"])
        for session in data for txn in session for ev in txn["events"]
    )
    x, y = nvar, nvar + 1

    def ev(kind, var, ver):
        return {kind: {"variable": var, "version": ver}}

    def txn(*events):
        return {"events": list(events), "committed": True}

    data[0].append(txn(ev("Write", x, 1)))
    data[0].append(txn(ev("Read", x, 1), ev("Write", x, 2), ev("Write", y, 1)))
    data[1].append(txn(ev("Read", y, 1), ev("Read", x, 1)))
    doc.setdefault("params", {})["n_variable"] = nvar + 2
    doc["info"] = str(doc.get("info", "")) + " (scripts/dbcop-history.py violate)"


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("fix", "violate"):
        sys.exit(__doc__)
    doc = json.load(open(sys.argv[2]))
    if isinstance(doc, list):
        doc = {"data": doc}
    if len(doc["data"]) < 2:
        sys.exit("violate and fix want at least two sessions")
    print(f"{fix(doc)} stale own-variable reads repaired")
    if sys.argv[1] == "violate":
        violate(doc)
    with open(sys.argv[3], "w") as f:
        json.dump(doc, f)


if __name__ == "__main__":
    main()
