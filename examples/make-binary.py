#!/usr/bin/env python3
"""Writes the two binary examples, dbcop-session.bincode and cobra-valid/.

The harness cannot write these formats (`harness convert --to` writes
jsonl, elle-edn and text only), so they are generated here from the layouts
documented in history/src/formats/dbcop.rs and cobra.rs.
Run from this folder: python3 make-binary.py
"""
import os
import struct


def u64(n):
    return struct.pack("<Q", n)


def string(s):
    b = s.encode()
    return u64(len(b)) + b


def dbcop(path, sessions):
    """sessions: list of sessions; a session is a list of (committed, events);
    an event is (write, variable, value)."""
    n_txns = sum(len(s) for s in sessions)
    n_events = sum(len(e) for s in sessions for _, e in s)
    out = u64(0) + u64(len(sessions)) + u64(2) + u64(n_txns) + u64(n_events)
    out += string("isoharness example") + string("") + string("")
    out += u64(len(sessions))
    for s in sessions:
        out += u64(len(s))
        for committed, events in s:
            out += u64(len(events))
            for write, var, val in events:
                out += struct.pack("<?QQ?", write, var, val, True)
            out += struct.pack("<?", committed)
    with open(path, "wb") as f:
        f.write(out)


# Session 0 writes 1 to variable 1, then reads variable 1 as 0 (the initial
# value): it misses its own earlier transaction. Session 1 reads the 1.
dbcop(
    "dbcop-session.bincode",
    [
        [(True, [(True, 1, 1)]), (True, [(False, 1, 0)])],
        [(True, [(False, 1, 1), (True, 2, 2)])],
    ],
)


def cobra(folder, logs):
    """logs: {session: [records]}; a record is (tag, fields...)."""
    os.makedirs(folder, exist_ok=True)
    for session, records in logs.items():
        out = b""
        for tag, *fields in records:
            out += tag.encode() + b"".join(struct.pack(">q", f) for f in fields)
        with open(os.path.join(folder, f"T{session}.log"), "wb") as f:
            f.write(out)


NULL = 0xDEADBEEF  # Cobra's write id for a read of an absent key
# 'S' txn | 'W' writeId key value | 'R' writerTxn writeId key value | 'C' txn | 'A' txn
cobra(
    "cobra-valid",
    {
        0: [
            ("S", 1), ("R", NULL, NULL, 1, 0), ("W", 0x101, 1, 7), ("C", 1),
            ("S", 3), ("R", 2, 0x201, 2, 8), ("R", 1, 0x101, 1, 7), ("C", 3),
        ],
        1: [
            ("S", 2), ("R", 1, 0x101, 1, 7), ("W", 0x201, 2, 8), ("C", 2),
            ("S", 4), ("W", 0x401, 1, 9), ("A", 4),
        ],
    },
)
