#!/usr/bin/env python3
"""Lays out a PolySI text history (`r(key,value,session,txn)`) for the
black-box benchmarks, renumbering transactions in file order so that no id
says when a transaction committed.

Usage: scripts/layout-text.py IN OUT MODE
  commit    the input's order
  grouped   each session's transactions together (PolySI, Plume, Viper files)
  shuffled  a random interleaving of the sessions, each session in order
  nosession no sessions (each transaction its own) and shuffled: Viper-style
  inject    the input's order, one read-only transaction made to read, as
            its initial value, a key its writer of another key overwrote
"""
import random, sys
inp, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
blocks, cur = [], None  # ((session, txn), [(op, key, value)]) in file order
for line in open(inp):
    line = line.strip()
    if not line:
        continue
    k, v, s, t = line[2:-1].split(',')
    if cur is None or cur[0] != (s, t):
        cur = ((s, t), [])
        blocks.append(cur)
    cur[1].append([line[0], k, v])
rng = random.Random(1)
by_s = {}
for b in blocks:
    by_s.setdefault(b[0][0], []).append(b)
if mode in ('commit', 'inject'):
    order = blocks
elif mode == 'grouped':
    order = [b for s in sorted(by_s, key=int) for b in by_s[s]]
elif mode == 'shuffled':  # a random interleaving, each session in order
    pool = [s for s, v in by_s.items() for _ in v]
    rng.shuffle(pool)
    nxt = {s: 0 for s in by_s}
    order = []
    for s in pool:
        order.append(by_s[s][nxt[s]])
        nxt[s] += 1
elif mode == 'nosession':
    order = [b for b in blocks if b[0][1] != '-1']
    rng.shuffle(order)
if mode == 'inject':
    writer = {}  # value -> keys its writer wrote
    for (s, t), ops in blocks:
        if t != '-1' and ops[0][0] == 'w':
            keys = {o[1] for o in ops}
            for o in ops:
                writer[o[2]] = keys
    done = False
    for (s, t), ops in blocks[len(blocks) // 2:]:
        if done or t == '-1' or ops[0][0] != 'r':
            continue
        for r in ops:
            keys = writer.get(r[2], set()) if r[2] != '0' else set()
            hit = [o for o in ops if o is not r and o[1] in keys and o[2] != '0']
            if hit:
                hit[0][2] = '0'
                done = True
                break
    assert done, 'nothing to inject'
ren = {}
with open(out, 'w') as f:
    for (s, t), ops in order:
        t2 = '-1' if t == '-1' else str(ren.setdefault((s, t), len(ren) + 1))
        s2 = t2 if mode == 'nosession' else s
        for op, k, v in ops:
            f.write(f"{op}({k},{v},{s2},{t2})\n")
