#!/usr/bin/env python3
"""Makes one write skew in a valid JSONL BlindW history, for the benchmarks:
in the second half, two ok write-only transactions of different sessions
that overlap in time, W1 writing x and W2 writing y (neither writing the
other's key), each get reads of x and y that see the versions before both (the latest write of that key that ended before either
started, with no write of it in between). Each then overwrote what the
other read: a cycle of two anti-dependencies, which SI (and pc) allow and
serializability forbids.

Usage: scripts/inject-write-skew.py IN.jsonl OUT.jsonl
"""
import json
import sys

recs = [json.loads(l) for l in open(sys.argv[1])]
txns = [r for r in recs if "ops" in r]
writes = {}  # key -> [(end, start, value, index)]
for i, r in enumerate(recs):
    if "ops" in r and r["status"] == "ok":
        for op in r["ops"]:
            if op[0] == "w":
                writes.setdefault(op[1], []).append((r["end"], r["start"], op[2], i))


def before_both(key, lo, hi, skip):
    """The value of `key` every snapshot between `lo` and `hi` sees, or
    None: the latest write that ended before `lo`, and no write of the key
    (but those of the transactions `skip`) that ends or starts between `lo`
    and `hi`."""
    ws = [w for w in writes.get(key, []) if w[3] not in skip]
    if any(lo <= e <= hi or lo <= s <= hi for (e, s, _, _) in ws):
        return None
    done = [w for w in ws if w[0] < lo]
    return max(done)[2] if done else None


def writes_of(r):
    return {o[1] for o in r["ops"] if o[0] == "w"}


ok = [
    i
    for i, r in enumerate(recs)
    if "ops" in r and r["status"] == "ok" and r["ops"] and all(o[0] == "w" for o in r["ops"])
]
done = False
for a, i in enumerate(ok):
    if i < len(recs) // 2:
        continue
    w1 = recs[i]
    for j in ok[a + 1 : a + 40]:
        w2 = recs[j]
        if w2["session"] == w1["session"] or w2["start"] >= w1["end"] or w1["start"] >= w2["end"]:
            continue
        k1, k2 = writes_of(w1), writes_of(w2)
        lo, hi = min(w1["start"], w2["start"]), max(w1["end"], w2["end"])
        for x in sorted(k1 - k2):
            for y in sorted(k2 - k1):
                vy = before_both(y, lo, hi, (i, j))
                vx = before_both(x, lo, hi, (i, j))
                if vx is None or vy is None:
                    continue
                # Each reads both keys, so any serial order has the
                # second overwrite what the first read.
                w1["ops"][0:0] = [["r", x, vx], ["r", y, vy]]
                w2["ops"][0:0] = [["r", x, vx], ["r", y, vy]]
                for r in (w1, w2):
                    r.pop("kind", None)
                    r.pop("dbts", None)
                done = True
                print(f"write skew: txn {w1['id']} reads {y}, writes {x}; txn {w2['id']} reads {x}, writes {y}", file=sys.stderr)
                break
            if done:
                break
        if done:
            break
    if done:
        break
if not done:
    sys.exit("no pair of overlapping write-only transactions fits")
with open(sys.argv[2], "w") as f:
    for r in recs:
        f.write(json.dumps(r, separators=(",", ":")) + "\n")
