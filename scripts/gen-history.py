#!/usr/bin/env python3
"""Writes a large valid history from a seed, for the import and weak-level
benchmarks (scripts/bench-speed.sh).

The history is serializable by construction: transactions run one at a
time against one store, each from a random session, reading a key's
latest value and writing a fresh one. So it satisfies every level from
rc to strict serializability, and every checker must say ok.

    gen-history.py FORMAT OUT [--seed S] [--mb MB | --events N]
                   [--sessions N] [--keys N] [--ops N]

FORMAT is `text` (the `r(k,v,s,t)` lines of PolySI / Plume; 0 is the
initial value) or `awdit` (AWDIT's test format: `r k v` / `w k v`, a
`-----` line after each transaction, sessions one after another, parted
by `=====`; an initial transaction writes 0 to every key). Stops at MB
megabytes of output or N events (reads and writes).
"""

import argparse
import random
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("format", choices=["text", "awdit"])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mb", type=float, default=None)
    ap.add_argument("--events", type=int, default=None)
    ap.add_argument("--sessions", type=int, default=24)
    ap.add_argument("--keys", type=int, default=2000)
    ap.add_argument("--ops", type=int, default=8)
    a = ap.parse_args()
    if (a.mb is None) == (a.events is None):
        sys.exit("give one of --mb or --events")
    rng = random.Random(a.seed)
    limit_bytes = int(a.mb * 1e6) if a.mb is not None else None
    limit_events = a.events
    latest = [0] * a.keys  # the value each key holds (0: initial)
    next_value = 1
    size = events = 0
    txn_no = 0
    # awdit: transactions are kept per session, then written session by
    # session (the format lists each session's transactions together).
    per_session = [[] for _ in range(a.sessions)]
    out = open(a.out, "w")
    if a.format == "awdit":
        init = "".join(f"w {k} 0\n" for k in range(a.keys)) + "=====\n"
        out.write(init)
        size += len(init)
        events += a.keys
    while True:
        if limit_bytes is not None and size >= limit_bytes:
            break
        if limit_events is not None and events >= limit_events:
            break
        txn_no += 1
        s = rng.randrange(a.sessions)
        n = rng.randint(1, a.ops)
        if limit_events is not None:
            n = min(n, limit_events - events)
        committed = []  # (write?, key, value)
        local = {}  # this transaction's own writes: it reads them back
        for _ in range(n):
            k = rng.randrange(a.keys)
            if rng.random() < 0.5:
                committed.append((0, k, local.get(k, latest[k])))
            else:
                committed.append((1, k, next_value))
                local[k] = next_value
                next_value += 1
        for k, v in local.items():
            latest[k] = v
        events += len(committed)
        if a.format == "text":
            txt = "".join(
                f"{'w' if w else 'r'}({k},{v},{s + 1},{txn_no})\n" for (w, k, v) in committed
            )
            out.write(txt)
            size += len(txt)
        else:
            txt = "".join(f"{'w' if w else 'r'} {k} {v}\n" for (w, k, v) in committed) + "-----\n"
            per_session[s].append(txt)
            size += len(txt)
    if a.format == "awdit":
        for i, txns in enumerate(per_session):
            if i:
                out.write("=====\n")
            out.write("".join(txns))
    out.close()
    print(f"{a.out}: {txn_no} transactions, {events} events, {size / 1e6:.1f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
