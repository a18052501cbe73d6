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

The other importers' formats, for the streaming-import benchmark: `elle-edn`
and `elle-json` (an invoke and an ok per transaction, a read of the initial
state is nil/null), `timekiller` (one JSON array of transactions with HLC
timestamps), `dbcop` (history.bincode), and the directory formats `viper`
(OUT/J<n>.log) and `cobra` (OUT/T<n>.log, reads name their write ids).
"""

import argparse
import random
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "format",
        choices=["text", "awdit", "elle-edn", "elle-json", "timekiller", "dbcop", "viper", "cobra"],
    )
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
    if a.format in OTHERS:
        return others(a, rng)
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


OTHERS = ("elle-edn", "elle-json", "timekiller", "dbcop", "viper", "cobra")
INIT_ID = 0xBEBEEBEE


def others(a, rng):
    """The formats of the other importers: same history, other syntax."""
    import os
    import struct

    latest = [0] * a.keys
    writer = [INIT_ID] * a.keys  # the transaction whose write each key holds
    next_value = 1
    size = events = 0
    txn_no = 0
    limit_bytes = int(a.mb * 1e6) if a.mb is not None else None
    directory = a.format in ("viper", "cobra")
    if directory:
        os.makedirs(a.out, exist_ok=True)
        mode = "wb" if a.format == "cobra" else "w"
        ext = "T" if a.format == "cobra" else "J"
        files = [open(os.path.join(a.out, f"{ext}{s}.log"), mode) for s in range(a.sessions)]
    elif a.format == "dbcop":
        per_session = [[] for _ in range(a.sessions)]
    else:
        out = open(a.out, "w")
        if a.format != "elle-edn":
            out.write("[")
    while True:
        if limit_bytes is not None and size >= limit_bytes:
            break
        if a.events is not None and events >= a.events:
            break
        txn_no += 1
        s = rng.randrange(a.sessions)
        n = rng.randint(1, a.ops)
        ops = []  # (write?, key, value, writer txn)
        local = {}
        for _ in range(n):
            k = rng.randrange(a.keys)
            if rng.random() < 0.5:
                if k in local:
                    ops.append((0, k, local[k], txn_no))
                else:
                    ops.append((0, k, latest[k], writer[k]))
            else:
                ops.append((1, k, next_value, txn_no))
                local[k] = next_value
                next_value += 1
        for k, v in local.items():
            latest[k] = v
            writer[k] = txn_no
        events += n
        t = 2 * txn_no
        if a.format == "elle-edn":
            def edn(done):
                return "[" + " ".join(
                    f"[:w {k} {v}]" if w else f"[:r {k} {v if (done and v) else 'nil'}]"
                    for (w, k, v, _) in ops
                ) + "]"
            txt = (
                f"{{:index {t - 2}, :time {t * 10}, :type :invoke, :process {s}, :f :txn, :value {edn(False)}}}\n"
                f"{{:index {t - 1}, :time {t * 10 + 5}, :type :ok, :process {s}, :f :txn, :value {edn(True)}}}\n"
            )
        elif a.format == "elle-json":
            def js(done):
                return "[" + ",".join(
                    f'["w",{k},{v}]' if w else f'["r",{k},{v if (done and v) else "null"}]'
                    for (w, k, v, _) in ops
                ) + "]"
            sep = "," if txn_no > 1 else ""
            txt = (
                f'{sep}{{"type":"invoke","f":"txn","value":{js(False)},"process":{s},"time":{t * 10},"index":{t - 2}}},\n'
                f'{{"type":"ok","f":"txn","value":{js(True)},"process":{s},"time":{t * 10 + 5},"index":{t - 1}}}\n'
            )
        elif a.format == "timekiller":
            sep = "," if txn_no > 1 else ""
            body = ", ".join(
                f'{{"t": "{"w" if w else "r"}", "k": {k}, "v": {v}}}' for (w, k, v, _) in ops
            )
            txt = (
                f'{sep}{{"tid": {txn_no}, "sid": {s}, "sts": {{"p": "{t * 10}", "l": 0}}, '
                f'"cts": {{"p": "{t * 10 + 5}", "l": 0}}, "ops": [{body}]}}\n'
            )
        elif a.format == "viper":
            body = ", ".join(
                f'["{"w" if w else "r"}", {k}, {v}, true]' for (w, k, v, _) in ops
            )
            txt = f'{{"value": [{body}]}}\n'
            files[s].write(txt)
            size += len(txt)
            continue
        elif a.format == "cobra":
            b = [struct.pack(">cq", b"S", txn_no)]
            for (w, k, v, wr) in ops:
                if w:
                    b.append(struct.pack(">cqqq", b"W", v, k, v))
                elif v == 0:
                    b.append(struct.pack(">cqqqq", b"R", INIT_ID, INIT_ID, k, 0))
                else:
                    b.append(struct.pack(">cqqqq", b"R", wr, v, k, v))
            b.append(struct.pack(">cq", b"C", txn_no))
            data = b"".join(b)
            files[s].write(data)
            size += len(data)
            continue
        else:  # dbcop: sessions are written one after another at the end
            ev = b"".join(struct.pack("<?QQ?", bool(w), k, v, True) for (w, k, v, _) in ops)
            data = struct.pack("<Q", n) + ev + b"\x01"
            per_session[s].append(data)
            size += len(data)
            continue
        out.write(txt)
        size += len(txt)
    if directory:
        for f in files:
            f.close()
    elif a.format == "dbcop":
        with open(a.out, "wb") as f:
            f.write(struct.pack("<QQQQQ", 0, a.sessions, a.keys, txn_no, events))
            for text in (b"generated by gen-history.py", b"0", b"0"):
                f.write(struct.pack("<Q", len(text)) + text)
            f.write(struct.pack("<Q", a.sessions))
            for txns in per_session:
                f.write(struct.pack("<Q", len(txns)))
                f.write(b"".join(txns))
    else:
        if a.format != "elle-edn":
            out.write("]\n")
        out.close()
    print(f"{a.out}: {txn_no} transactions, {events} events, {size / 1e6:.1f} MB", file=sys.stderr)


if __name__ == "__main__":
    main()
