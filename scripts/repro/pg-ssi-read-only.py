#!/usr/bin/env python3
"""Forces the interleaving of docs/findings/postgres-15-ser-g2-item.md on a
PostgreSQL server at 127.0.0.1, with gdb holding one backend.

Run it through pg-ssi-read-only.sh (same folder); `--help` lists the
options. Three sessions, all BEGIN ISOLATION LEVEL SERIALIZABLE:

  W  the writer that commits first (T2039 of the third sighting)
  P  the pivot: reads k0 and k5, writes k0 (T2038)
  R  the reader, which writes nothing (T2044)

gdb stops W's backend inside its COMMIT, at the entry of
ReleasePredicateLocks(isCommit=true): W's commit is in the commit log and
gone from the proc array (new snapshots see it), W has passed
PreCommit_CheckForSerializationFailure (it is "prepared" for SSI), but SSI
does not yet know that it committed (no SXACT_FLAG_COMMITTED, no
commitSeqNo). While W is held, R takes its snapshot and P commits.

Standard library only; every statement goes through a `psql` process.
Exit code: 0 when the schedule ran (whatever the verdict), 2 on a setup
error (no psql or gdb, no server, gdb could not hold the backend, an
unexpected SQL error).
"""

import argparse
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HOST = "127.0.0.1"
STEP_TIMEOUT = 10.0  # seconds a statement may take (except the held COMMIT)
HOLD_TIMEOUT = 20.0  # seconds to wait for gdb to attach / the breakpoint


class SetupError(Exception):
    pass


T0 = time.monotonic()


def stamp():
    return f"+{time.monotonic() - T0:6.3f}s"


def say(msg=""):
    print(msg, flush=True)


class Session:
    """One psql process, driven statement by statement.

    After each statement the script sends `\\echo` and `\\warn` markers
    (psql >= 13) carrying :SQLSTATE, so it knows when the statement ended,
    what it printed on stdout, what it printed on stderr, and its SQLSTATE.
    """

    def __init__(self, name, port, dbname, user):
        self.name = name
        self.n = 0
        self.q = queue.Queue()
        cmd = [
            "psql", "-X", "-A", "-t", "-h", HOST, "-p", str(port),
            "-U", user, "-d", dbname,
            "-v", "ON_ERROR_STOP=0", "-v", "VERBOSITY=verbose",
        ]
        env = dict(os.environ, PGAPPNAME=f"ssi-repro-{name}", PGCONNECT_TIMEOUT="5")
        self.p = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, bufsize=1, env=env)
        for stream, tag in ((self.p.stdout, "out"), (self.p.stderr, "err")):
            threading.Thread(target=self._pump, args=(stream, tag), daemon=True).start()
        self.pending = None

    def _pump(self, stream, tag):
        for line in stream:
            self.q.put((tag, line.rstrip("\n")))
        self.q.put((tag, None))

    def send(self, sql):
        assert self.pending is None, f"{self.name}: a statement is still running"
        self.n += 1
        mark = f"__{self.name}_{self.n}__"
        self.p.stdin.write(f"{sql}\n\\echo {mark} :SQLSTATE\n\\warn {mark}\n")
        self.p.stdin.flush()
        self.pending = (mark, [], [], [False, False], None)
        return mark

    def wait(self, timeout):
        """Waits for the pending statement; returns (rows, errors, sqlstate)
        or None when it is still running after `timeout` seconds."""
        mark, out, err, seen, _ = self.pending
        deadline = time.monotonic() + timeout
        sqlstate = None
        while not (seen[0] and seen[1]):
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                tag, line = self.q.get(timeout=left)
            except queue.Empty:
                return None
            if line is None:
                raise SetupError(f"session {self.name}: psql exited: {' | '.join(err)}")
            if tag == "out" and line.startswith(mark):
                seen[0] = True
                sqlstate = line[len(mark):].strip()
                self.pending = (mark, out, err, seen, sqlstate)
            elif tag == "err" and line == mark:
                seen[1] = True
            elif tag == "out":
                out.append(line)
            else:
                err.append(line)
        sqlstate = self.pending[4]
        self.pending = None
        return out, err, sqlstate

    def run(self, sql, timeout=STEP_TIMEOUT):
        self.send(sql)
        r = self.wait(timeout)
        if r is None:
            raise SetupError(f"session {self.name}: `{sql}` did not finish in {timeout:.0f}s")
        return r

    def close(self):
        try:
            self.p.stdin.write("\\q\n")
            self.p.stdin.flush()
            self.p.stdin.close()
        except Exception:
            pass
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()


class Hold:
    """gdb attached to one backend, stopping it at the entry of `func`.

    gdb runs in batch mode: set the breakpoint, print ARMED, continue; on
    the hit print HIT and the registers that carry the arguments, then
    wait (a `shell` loop) for a file to appear, detach (which removes the
    breakpoint) and quit. The backend is never left with a breakpoint in
    it: release() always makes gdb detach.
    """

    def __init__(self, pid, func, workdir):
        # The function must be a symbol of the server binary, else gdb
        # would go on without a breakpoint.
        exe = f"/proc/{pid}/exe"
        chk = subprocess.run(["gdb", "-q", "-nx", "-batch", "-ex", f"info address {func}", exe],
                             capture_output=True, text=True, timeout=60)
        if f'Symbol "{func}" is at' not in chk.stdout:
            raise SetupError(f"gdb finds no function {func} in {exe}: "
                             + (chk.stdout + chk.stderr).strip().replace("\n", " | "))
        self.release_file = os.path.join(workdir, "release")
        self.lines = []
        self.armed = threading.Event()
        self.hit = threading.Event()
        self.shown = threading.Event()  # bt and the first argument printed
        self.done = threading.Event()
        cmds = [
            "set pagination off",
            "set confirm off",
            "set debuginfod enabled off",
            "handle SIGUSR1 SIGUSR2 SIGALRM SIGPIPE SIGURG SIGTERM SIGQUIT SIGHUP SIGCHLD nostop noprint pass",
            f"break {func}",
            "echo ARMED\\n",
            "continue",
            "echo HIT\\n",
            "bt 8",
            "p $rdi",
            f"shell while [ ! -e {self.release_file} ]; do sleep 0.02; done",
            "detach",
            "echo DETACHED\\n",
            "quit",
        ]
        argv = ["gdb", "-q", "-nx", "-batch", "-p", str(pid)]
        for c in cmds:
            argv += ["-ex", c]
        self.p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, bufsize=1)
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self):
        for line in self.p.stdout:
            line = line.rstrip("\n")
            self.lines.append(line)
            if line == "ARMED":
                if any(l.startswith("Breakpoint 1 at") for l in self.lines):
                    self.armed.set()
            elif line == "HIT":
                self.hit.set()
            elif line.startswith("$1 = "):
                self.shown.set()
        self.done.set()
        self.shown.set()
        self.armed.set()
        self.hit.set()

    def release(self):
        """Lets the backend go: gdb detaches (removing the breakpoint) and
        exits. If the breakpoint was never hit, SIGINT makes gdb stop the
        backend so that it can go on to detach."""
        with open(self.release_file, "w"):
            pass
        if not self.hit.is_set() and self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        self.p.wait(timeout=15)

    def detached(self):
        return any(l == "DETACHED" for l in self.lines)

    def report(self):
        self.shown.wait(5)
        out = []
        for l in self.lines:
            if l.startswith("#"):
                out.append("bt " + l)
            elif l.startswith("$1 = "):
                out.append("first argument (%rdi; isCommit for ReleasePredicateLocks): " + l[5:])
        return out


def main():
    ap = argparse.ArgumentParser(
        prog="pg-ssi-read-only.sh",
        description="Deterministic reproduction of PostgreSQL SSI's missed read-only G2-item cycle.")
    ap.add_argument("--port", type=int, default=int(os.environ.get("PGPORT", "5432")))
    ap.add_argument("--dbname", default=os.environ.get("PGDATABASE", "postgres"))
    ap.add_argument("--user", default="postgres")
    ap.add_argument("--hold", default="ReleasePredicateLocks",
                    help="function W's backend is stopped at during COMMIT (gdb breakpoint), "
                         "or `none` to run the same schedule with W's COMMIT completing at once")
    ap.add_argument("--release", choices=["after-p-commit", "after-r-read", "before-p-commit"],
                    default="after-p-commit",
                    help="when gdb lets W's COMMIT finish: after P's COMMIT and before R reads k0 "
                         "(default; the sighting's order), after R reads k0, or before P's COMMIT")
    ap.add_argument("--read-only", action="store_true",
                    help="declare R READ ONLY (the sightings' reader was not declared)")
    args = ap.parse_args()

    for tool in ("psql", "gdb") if args.hold != "none" else ("psql",):
        if not shutil.which(tool):
            raise SetupError(f"{tool} is not installed")

    table = f"ssi_ro_repro_{os.getpid()}_{random.randrange(1 << 30):x}"
    workdir = tempfile.mkdtemp(prefix="pg-ssi-repro-")
    sessions = {}
    hold = None
    log = []  # (step, txn, sql, result)
    step_no = [0]
    admin = None

    def step(s, sql, timeout=STEP_TIMEOUT):
        step_no[0] += 1
        n = step_no[0]
        r = s.run(sql, timeout)
        report(n, s.name, sql, r)
        return r

    def report(n, name, sql, r):
        rows, errs, state = r
        shown = ", ".join(rows) if rows else "(nothing)"
        say(f"[{n:2}] {stamp()} {name}: {sql}")
        say(f"       -> {shown}  sqlstate={state}")
        for e in errs:
            say(f"          {e}")
        log.append((n, name, sql, r))

    def value(r):
        rows, errs, state = r
        if state != "00000":
            return None
        if len(rows) != 1:
            raise SetupError(f"expected one row, got {rows!r}")
        return int(rows[0])

    try:
        admin = Session("setup", args.port, args.dbname, args.user)
        r = admin.run("SELECT version();")
        if r[2] != "00000":
            raise SetupError("cannot reach PostgreSQL: " + " | ".join(r[1]))
        say(f"server: {r[0][0] if r[0] else '?'}")
        say(f"table: {table}; hold: {args.hold}; release W {args.release}"
            f"{'; R declared READ ONLY' if args.read_only else ''}")
        for sql in (f"CREATE TABLE {table} (k int PRIMARY KEY, v bigint NOT NULL);",
                    f"INSERT INTO {table} VALUES (0, 100), (1, 110), (5, 150);"):
            r = admin.run(sql)
            if r[2] != "00000":
                raise SetupError(f"{sql}: " + " | ".join(r[1]))
        say("initial: k0=100 k1=110 k5=150")

        for name in ("W", "P", "R"):
            s = Session(name, args.port, args.dbname, args.user)
            sessions[name] = s
            # Point reads through the primary key, as the harness's are;
            # a sequential scan would take a relation-level SIREAD lock.
            for sql in ("SET enable_seqscan = off;", "SET enable_bitmapscan = off;"):
                if s.run(sql)[2] != "00000":
                    raise SetupError(f"{name}: {sql} failed")
        W, P, R = sessions["W"], sessions["P"], sessions["R"]
        wpid = int(W.run("SELECT pg_backend_pid();")[0][0])
        say(f"backends: W={wpid} P={P.run('SELECT pg_backend_pid();')[0][0]} "
            f"R={R.run('SELECT pg_backend_pid();')[0][0]}")

        sel = lambda k: f"SELECT v FROM {table} WHERE k = {k};"
        upd = lambda k, v: f"UPDATE {table} SET v = {v} WHERE k = {k};"
        begin = "BEGIN ISOLATION LEVEL SERIALIZABLE;"
        r_begin = "BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY;" if args.read_only else begin

        # W reads and writes k1 and k5 (read-modify-write).
        step(W, begin)
        step(W, sel(1))
        step(W, sel(5))
        step(W, upd(1, 111))
        step(W, upd(5, 151))
        # P takes its snapshot before W commits.
        step(P, begin)
        p_k0 = value(step(P, sel(0)))

        # W commits; gdb holds its backend inside COMMIT.
        step_no[0] += 1
        hold_step = step_no[0]
        if args.hold != "none":
            hold = Hold(wpid, args.hold, workdir)
            if not hold.armed.wait(HOLD_TIMEOUT) or hold.done.is_set():
                raise SetupError("gdb could not attach to W's backend:\n  " + "\n  ".join(hold.lines[-15:]))
            t_hold = time.monotonic()
            W.send("COMMIT;")
            if not hold.hit.wait(HOLD_TIMEOUT) or hold.done.is_set():
                raise SetupError(f"W's backend did not reach {args.hold}:\n  " + "\n  ".join(hold.lines[-15:]))
            say(f"[{hold_step:2}] {stamp()} W: COMMIT;")
            say(f"       -> held by gdb at {args.hold} (backend {wpid}); W's COMMIT has not returned")
            for l in hold.report():
                say(f"          gdb: {l}")
        else:
            W.send("COMMIT;")
            w_commit = W.wait(STEP_TIMEOUT)
            if w_commit is None:
                raise SetupError("W's COMMIT did not finish")
            report(hold_step, "W", "COMMIT;", w_commit)

        step(R, r_begin)
        p_k5 = value(step(P, sel(5)))
        p_w = step(P, upd(0, p_k0 + 1 if p_k0 is not None else 101))
        r_k1 = value(step(R, sel(1)))

        def release_w():
            hold.release()
            t = time.monotonic() - t_hold
            step_no[0] += 1
            r = W.wait(STEP_TIMEOUT)
            if r is None:
                raise SetupError("W's COMMIT did not return after gdb detached")
            say(f"     {stamp()} gdb detaches from W's backend (W held {t:.2f}s, from its COMMIT to gdb's exit)"
                f"{'' if hold.detached() else ' -- gdb did not report DETACHED'}")
            report(step_no[0], "W", "(COMMIT returns)", r)
            return r

        held = args.hold != "none"
        w_commit_r = None
        if held and args.release == "before-p-commit":
            w_commit_r = release_w()
        p_commit = step(P, "COMMIT;")
        if held and args.release == "after-p-commit":
            w_commit_r = release_w()
        r_k0 = value(step(R, sel(0)))
        if held and args.release == "after-r-read":
            w_commit_r = release_w()
        r_commit = step(R, "COMMIT;")
        if args.hold == "none":
            w_commit_r = w_commit

        # What the database holds now: were all the writes kept?
        final = admin.run(f"SELECT k || '=' || v FROM {table} ORDER BY k;")
        say(f"final: {' '.join(final[0])}")

        committed = {}
        for name, r in (("W", w_commit_r), ("P", p_commit), ("R", r_commit)):
            rows, errs, state = r
            committed[name] = state == "00000" and rows == ["COMMIT"]
        say("commits: " + ", ".join(f"{n} {'committed' if c else 'did not commit'}"
                                   for n, c in committed.items()))

        aborts = []
        for n, name, sql, (rows, errs, state) in log:
            if state not in ("00000", None) and state != "25P02":
                reason = next((e.split("Reason code: ", 1)[1] for e in errs if "Reason code: " in e), "")
                aborts.append((name, n, sql, state, reason))
        unexpected = [a for a in aborts if a[3] != "40001"]
        if unexpected:
            raise SetupError(f"unexpected error: {unexpected[0]}")

        if all(committed.values()):
            cycle = (p_k5 == 150 and r_k1 == 111 and r_k0 == 100)
            if cycle:
                say("verdict: anomaly reproduced (all three committed; read-only txn R saw W's k1=111 "
                    "but not P's k0=101, and P read k5=150 before W's write: R -rw-> P -rw-> W -wr-> R)")
            else:
                say(f"verdict: no anomaly (all three committed, but the reads do not form the cycle: "
                    f"P k5={p_k5}, R k1={r_k1}, R k0={r_k0})")
        else:
            first = aborts[0] if aborts else None
            if first:
                name, n, sql, state, reason = first
                say(f"verdict: no anomaly ({name} aborted with {state} at step {n} `{sql}`"
                    f"{': ' + reason if reason else ''})")
            else:
                say("verdict: no anomaly (" + ", ".join(n for n, c in committed.items() if not c)
                    + " did not commit)")
        return 0
    finally:
        if hold is not None and hold.p.poll() is None:
            try:
                hold.release()
            except Exception:
                pass
            if hold.p.poll() is None:
                say("warning: gdb did not exit; terminating it")
                hold.p.terminate()
        for s in sessions.values():
            s.close()
        try:
            a = Session("cleanup", args.port, args.dbname, args.user)
            a.run(f"DROP TABLE IF EXISTS {table};")
            a.close()
        except Exception as e:  # noqa: BLE001
            say(f"warning: could not drop {table}: {e}")
        if admin is not None:
            admin.close()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SetupError as e:
        say(f"setup error: {e}")
        sys.exit(2)
