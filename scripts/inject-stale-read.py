#!/usr/bin/env python3
"""Makes one anomaly in a valid JSONL history, for the benchmarks: in the
second half, the first ok read-only transaction whose read of some key saw
the latest of at least three earlier writes is made to read the write two
before it instead (a stale read the rest of the history contradicts).

Usage: scripts/inject-stale-read.py IN.jsonl OUT.jsonl
"""
import json
import sys

recs = [json.loads(l) for l in open(sys.argv[1])]
writes = {}
for i, r in enumerate(recs):
    if "ops" in r and r["status"] == "ok":
        for op in r["ops"]:
            if op[0] == "w":
                writes.setdefault(op[1], []).append((i, op[2]))
done = False
for i in range(len(recs) // 2, len(recs)):
    r = recs[i]
    if "ops" in r and r["status"] == "ok" and all(o[0] == "r" for o in r["ops"]):
        for op in r["ops"]:
            ws = [v for (j, v) in writes.get(op[1], []) if j < i]
            if op[2] is not None and len(ws) >= 3 and op[2] == ws[-1]:
                op[2] = ws[-3]
                done = True
                break
    if done:
        break
with open(sys.argv[2], "w") as f:
    for r in recs:
        f.write(json.dumps(r, separators=(",", ":")) + "\n")
