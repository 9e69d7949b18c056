#!/usr/bin/env python3
"""Performance benchmark of majordomus (standard library only, Python 3.9+).

Run from the checkout:

    python3 tests/bench.py [--quick]

It builds majordomus.pyz first (build_zipapp.py, same interpreter) when the archive is
missing or older than majordomus.py, creates two scratch repositories under a temporary
directory (the skeleton fixture, and the skeleton plus 10,000 generated rules), measures,
prints one table to stdout (progress goes to stderr), stops every process it started and
removes the scratch directory.

Every spawn figure is the median of N runs (N=10, 3 with --quick) after one discarded
warm-up run; ratios are against `python3 -c pass` spawned by the same interpreter
(sys.executable), its runs interleaved with the measured row's runs so that both see the
same machine load (the baseline row pools all of them). Spawn rows also show the child's
CPU time (user + system, median; the mcp session's includes its exit after stdin closes),
which tells a slow program from a busy machine; the targets apply to wall time. Latency
rows are p50/p95 over single requests sent one at a time on one long-lived session (each
request is written, then its answer line is awaited). Pipelined rows write a whole batch
of requests at once and read all answers, and report the mean time per request. Everything
runs on loopback; every loop is bounded by a count and a deadline.
"""
import argparse
import json
import math
import os
import platform
import re
import resource
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import http.client

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = os.path.join(ROOT, "majordomus.py")
PYZ = os.path.join(ROOT, "majordomus.pyz")
BUILD = os.path.join(ROOT, "build_zipapp.py")
SKELETON = os.environ.get("MAJORDOMUS_SKELETON") or os.path.join(
    os.path.dirname(ROOT), "shared", "fixtures", "skeleton")
PYTHON = sys.executable

GEN_RULES = 10000
RULE_URI = "majordomus://rule/majordomus.scope-integrity@1"
REPS = 200            # requests per latency row
WARMUP = 5            # discarded requests before each latency row
HTTP_CLIENTS = 8
SPAWN_TIMEOUT = 120   # seconds, any single spawn or start-up
REQUEST_TIMEOUT = 60  # seconds, any single answer

GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@bench.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@bench.invalid",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}

CHILDREN = []   # every Popen this script started, stopped in cleanup()


class NotAvailable(Exception):
    """The feature a section measures is not there (yet): the row prints n/a (reason)."""


def progress(msg):
    sys.stderr.write("bench: %s\n" % msg)
    sys.stderr.flush()


def child_env():
    env = dict(os.environ)
    env.update(GIT_ENV)
    env.pop("MAJORDOMUS_LOG", None)
    return env


def first_line(data, limit=160):
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    for line in data.splitlines():
        line = line.strip()
        if line:
            return line[:limit]
    return ""


def last_line(data, limit=160):
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    lines = [l.strip() for l in data.splitlines() if l.strip()]
    return lines[-1][:limit] if lines else ""


def exit_text(rc):
    if rc is not None and rc < 0:
        return "killed by signal %d (not sent by this script)" % -rc
    return "exit %s" % rc


# --------------------------------------------------------------------------- statistics

def p50(values):
    return statistics.median(values)


def p95(values):
    ordered = sorted(values)
    return ordered[max(0, int(math.ceil(0.95 * len(ordered))) - 1)]


def fmt_ms(seconds):
    ms = seconds * 1000.0
    if ms < 1:
        return "%.3f ms" % ms
    if ms < 100:
        return "%.2f ms" % ms
    return "%.0f ms" % ms


# --------------------------------------------------------------------------- the table

class Table:
    def __init__(self):
        self.rows = []
        self.notes = []

    def section(self, title):
        self.rows.append(("section", title))

    def row(self, name, value, target="-", ok=None):
        """ok: True -> ok, False -> MISS, None -> no target ('-')."""
        status = "-" if ok is None else ("ok" if ok else "MISS")
        self.rows.append(("row", name, value, target, status))

    def na(self, name, reason, target="-"):
        self.rows.append(("row", name, "n/a (%s)" % reason, target, "n/a"))

    def note(self, text):
        if text not in self.notes:
            self.notes.append(text)

    def render(self):
        w_name, w_value, w_target = 46, 34, 16
        for r in self.rows:
            if r[0] == "row":
                w_name = max(w_name, len(r[1]))
                w_value = max(w_value, min(len(r[2]), 70))
                w_target = max(w_target, len(r[3]))
        out = []
        header = "%-*s  %-*s  %-*s  %s" % (w_name, "measure", w_value, "value", w_target,
                                           "target", "result")
        out.append(header)
        out.append("-" * len(header))
        for r in self.rows:
            if r[0] == "section":
                out.append("")
                out.append("[%s]" % r[1])
            else:
                out.append("%-*s  %-*s  %-*s  %s" % (w_name, r[1], w_value, r[2], w_target,
                                                     r[3], r[4]))
        if self.notes:
            out.append("")
            for n in self.notes:
                out.append("note: " + n)
        return "\n".join(out)


# --------------------------------------------------------------------------- repositories

def git(repo, *args):
    p = subprocess.run(["git", "-C", repo] + list(args), env=child_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("git %s failed: %s" % (" ".join(args), first_line(p.stderr)))
    return p.stdout.decode("utf-8", "replace")


def copy_skeleton(dst):
    shutil.copytree(SKELETON, dst, symlinks=True)
    for dirpath, dirnames, filenames in os.walk(dst):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | 0o200)
    os.chmod(dst, os.stat(dst).st_mode | 0o200)


def init_commit(repo, message):
    git(repo, "-c", "init.defaultBranch=main", "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-gpg-sign", "-m", message)


def generated_rule(n):
    tag = "group%02d" % (n % 50)
    lines = [
        "---",
        "id: project.gen-%05d" % n,
        "version: 1",
        "title: Generated rule %05d" % n,
        "description: Benchmark rule number %05d, generated to measure a large layer." % n,
        "tags: [generated, bench, %s]" % tag,
        "---",
        "",
        "# Generated rule %05d" % n,
        "",
        "This rule exists so that the index holds ten thousand objects (gen-%05d)." % n,
        "It states nothing a contributor must obey; it is filler with a realistic shape.",
        "",
        "# Required behaviour",
        "",
        "Line six of the body of rule %05d, in group %s." % (n, tag),
        "Line seven: a task reads the rules before it starts and cites the ones it uses.",
        "Line eight: the quick brown fox jumps over the lazy dog.",
        "Line nine: nothing here is enforced by a validator.",
        "",
    ]
    return "\n".join(lines)


def make_repos(tmp):
    skel = os.path.join(tmp, "skeleton")
    copy_skeleton(skel)
    init_commit(skel, "skeleton")
    big = os.path.join(tmp, "rules10k")
    copy_skeleton(big)
    d = os.path.join(big, ".ai", "repo", "rules", "project")
    os.makedirs(d, exist_ok=True)
    for n in range(GEN_RULES):
        with open(os.path.join(d, "gen-%05d.v1.md" % n), "w", encoding="utf-8",
                  newline="\n") as f:
            f.write(generated_rule(n))
    init_commit(big, "skeleton plus %d generated rules" % GEN_RULES)
    return os.path.realpath(skel), os.path.realpath(big)


# --------------------------------------------------------------------------- processes

def track(proc):
    CHILDREN.append(proc)
    return proc


def stop(proc, sig=signal.SIGTERM, timeout=15):
    """Stop one process this script started; returns its exit code."""
    if proc.poll() is None:
        try:
            proc.send_signal(sig)
        except OSError:
            pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass
    return proc.returncode


def cleanup():
    for proc in CHILDREN:
        try:
            if proc.poll() is None:
                stop(proc, signal.SIGTERM, 5)
        except Exception:
            pass


def timed_run(argv, cwd):
    """Spawn, wait, return (seconds, CompletedProcess)."""
    env = child_env()
    t0 = time.perf_counter()
    p = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=SPAWN_TIMEOUT)
    return time.perf_counter() - t0, p


def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_once(argv, cwd):
    """One spawn to completion: (wall seconds, child CPU seconds, CompletedProcess)."""
    c0 = children_cpu()
    t, p = timed_run(argv, cwd)
    return t, children_cpu() - c0, p


class ChildGone(Exception):
    pass


class Pipe:
    """A child spoken to over pipes, read with select (no reader thread, no blocking read)."""

    def __init__(self, argv, cwd):
        self.err = tempfile.TemporaryFile()
        env = child_env()
        self.t_spawn = time.perf_counter()
        self.proc = track(subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                           stdout=subprocess.PIPE, stderr=self.err,
                                           bufsize=0))
        self.in_fd = self.proc.stdin.fileno()
        self.out_fd = self.proc.stdout.fileno()
        os.set_blocking(self.in_fd, False)
        self.buf = bytearray()
        self.scan = 0

    def stderr_text(self):
        try:
            self.err.seek(0)
            return self.err.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def gone_reason(self):
        rc = self.proc.poll()
        if rc is None:
            try:
                rc = self.proc.wait(2)
            except subprocess.TimeoutExpired:
                rc = None
        tail = last_line(self.stderr_text())
        if rc is None:
            return "no answer" + (": " + tail if tail else "")
        return "%s%s" % (exit_text(rc), ": " + tail if tail else "")

    def transact(self, payload, count, timeout=REQUEST_TIMEOUT):
        """Write payload (bytes), return the next `count` answer lines (without newline)."""
        out = memoryview(payload)
        pos = 0
        lines = []
        deadline = time.monotonic() + timeout
        while True:
            while len(lines) < count:
                i = self.buf.find(b"\n", self.scan)
                if i < 0:
                    self.scan = len(self.buf)
                    break
                lines.append(bytes(self.buf[:i]))
                del self.buf[:i + 1]
                self.scan = 0
            if len(lines) >= count and pos >= len(out):
                return lines
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChildGone("no answer within %d s" % timeout)
            wl = [self.in_fd] if pos < len(out) else []
            r, w, _ = select.select([self.out_fd], wl, [], remaining)
            if w:
                try:
                    pos += os.write(self.in_fd, out[pos:pos + 65536])
                except BlockingIOError:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    raise ChildGone(self.gone_reason())
            if r:
                chunk = os.read(self.out_fd, 1 << 20)
                if not chunk:
                    raise ChildGone(self.gone_reason())
                self.buf += chunk

    def close(self, timeout=10):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            rc = "no exit within %d s of stdin closing (stopped)" % timeout
        stop(self.proc)
        self.err.close()
        return rc


def frame(id_, method, params=None):
    msg = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg, separators=(",", ":")).encode("utf-8") + b"\n"


def rpc_error(line):
    """The JSON-RPC error message of an answer line, or None for a result."""
    try:
        msg = json.loads(line.decode("utf-8"))
    except ValueError as e:
        return "answer is not JSON: %s" % e
    if not isinstance(msg, dict):
        return "answer is not a JSON object"
    if "error" in msg:
        err = msg["error"] if isinstance(msg["error"], dict) else {}
        return "%s %s" % (err.get("code"), err.get("message"))
    result = msg.get("result")
    if isinstance(result, dict) and result.get("isError") is True:
        content = result.get("content") or [{}]
        text = content[0].get("text") if isinstance(content[0], dict) else None
        return "tool error: %s" % text
    if "result" not in msg:
        return "answer carries neither result nor error"
    return None


# --------------------------------------------------------------------------- sections

def section_spawn(table, skel, big, runs):
    """Each measured series is interleaved with its own baseline runs (baseline, program,
    baseline, program, ...) so that a ratio compares runs made under the same load."""
    table.section("spawn: median of %d runs after a warm-up; ratio vs python3 -c pass "
                  "runs interleaved with the row's" % runs)
    base_row = len(table.rows)
    table.row("python3 -c pass (baseline)", "?")
    pooled_wall, pooled_cpu = [], []

    def baseline_once():
        t, cpu, _ = run_once([PYTHON, "-c", "pass"], skel)
        return t, cpu

    def series(once):
        """once() -> (wall, cpu); raises NotAvailable. Returns medians and paired base."""
        once()
        baseline_once()
        walls, cpus, bases = [], [], []
        for _ in range(runs):
            b, bcpu = baseline_once()
            bases.append(b)
            pooled_wall.append(b)
            pooled_cpu.append(bcpu)
            t, cpu = once()
            walls.append(t)
            cpus.append(cpu)
        return p50(walls), p50(cpus), p50(bases)

    def inspect_once(repo, label):
        def once():
            try:
                t, cpu, p = run_once([PYTHON, PYZ, "mcp", "--inspect"], repo)
            except subprocess.TimeoutExpired:
                raise NotAvailable("no exit within %d s" % SPAWN_TIMEOUT)
            if p.returncode not in (0, 10):
                raise NotAvailable("%s: %s" % (exit_text(p.returncode), first_line(p.stderr)))
            if p.returncode == 10:
                table.note("mcp --inspect on %s exits 10 (error diagnostics): %s" % (
                    label, first_line(b"\n".join(l for l in p.stdout.splitlines()
                                                 if l.startswith(b"FAIL")))))
            return t, cpu
        return once

    payload = frame(1, "initialize", {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "majordomus-bench", "version": "0"}})

    def initialize_once(repo):
        def once():
            c0 = children_cpu()
            pipe = Pipe([PYTHON, PYZ, "mcp"], repo)
            try:
                lines = pipe.transact(payload, 1, SPAWN_TIMEOUT)
                t = time.perf_counter() - pipe.t_spawn
            except ChildGone as e:
                raise NotAvailable(str(e))
            finally:
                pipe.close()
            err = rpc_error(lines[0])
            if err:
                raise NotAvailable("initialize answered %s" % err)
            return t, children_cpu() - c0
        return once

    def measure(name, once, target, ok_of):
        progress("spawn: %s" % name)
        try:
            wall, cpu, base = series(once)
        except NotAvailable as e:
            table.na(name, str(e), target)
            return
        ratio = wall / base
        table.row(name, "%s (%.2fx); cpu %s" % (fmt_ms(wall), ratio, fmt_ms(cpu)), target,
                  ok_of(wall, ratio))

    measure("majordomus.pyz mcp --inspect, skeleton", inspect_once(skel, "skeleton"),
            "<= 4x", lambda wall, ratio: ratio <= 4.0)
    measure("majordomus.pyz mcp --inspect, 10,000 rules", inspect_once(big, "10,000 rules"),
            "< 1.5 s wall", lambda wall, ratio: wall < 1.5)
    measure("spawn -> initialize answer, skeleton", initialize_once(skel),
            "<= 4x", lambda wall, ratio: ratio <= 4.0)
    measure("spawn -> initialize answer, 10,000 rules", initialize_once(big),
            "-", lambda wall, ratio: None)
    if not pooled_wall:
        for _ in range(runs):
            t, cpu = baseline_once()
            pooled_wall.append(t)
            pooled_cpu.append(cpu)
    table.rows[base_row] = ("row", "python3 -c pass (baseline, n=%d)" % len(pooled_wall),
                            "%s (1.00x); cpu %s" % (fmt_ms(p50(pooled_wall)),
                                                    fmt_ms(p50(pooled_cpu))), "-", "-")


def measure_requests(pipe, make, reps, start_id):
    """Send make(i) one at a time; return (latencies, error or None, next id, first
    measured answer line)."""
    times = []
    id_ = start_id
    sample = None
    for i in range(WARMUP + reps):
        payload = frame(id_, *make(i))
        id_ += 1
        t0 = time.perf_counter()
        line = pipe.transact(payload, 1)[0]
        t = time.perf_counter() - t0
        if i == 0 or i == WARMUP or len(line) < (1 << 20):
            err = rpc_error(line)
            if err:
                return times, err, id_
        if i == WARMUP:
            sample = line
        if i >= WARMUP:
            times.append(t)
    return times, None, id_, sample


def search_count(line):
    try:
        return json.loads(line.decode("utf-8"))["result"]["structuredContent"]["count"]
    except (ValueError, KeyError, TypeError):
        return None


def section_mcp(table, repo, label, reps, heavy_reps, big):
    table.section("MCP over pipes, one session, %s: one request at a time, p50 / p95" % label)
    progress("mcp session on %s" % label)
    pipe = Pipe([PYTHON, PYZ, "mcp"], repo)
    rows = [
        ("ping", lambda i: ("ping", None), reps, None, None),
        ("resources/read %s" % RULE_URI.split("/")[-1],
         lambda i: ("resources/read", {"uri": RULE_URI}), reps, ("p50 <= 0.3 ms", 0.0003),
         None),
        ("resources/list", lambda i: ("resources/list", None),
         heavy_reps if big else reps, ("p50 <= 60 ms", 0.060) if big else None, None),
        ("tools/call majordomus_search, distinct queries",
         lambda i: ("tools/call", {"name": "majordomus_search", "arguments": {
             "query": "gen-%05d" % ((i * 7919 + 17) % GEN_RULES)}}),
         heavy_reps if big else reps, ("p50 <= 150 ms", 0.150) if big else None,
         1 if big else 0),
        ("tools/call majordomus_search, cached repeat",
         lambda i: ("tools/call", {"name": "majordomus_search", "arguments": {
             "query": "gen-04242"}}), reps, None, 1 if big else 0),
    ]
    next_id = 1
    dead = None
    try:
        try:
            pipe.transact(frame(next_id, "initialize", {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "majordomus-bench", "version": "0"}}), 1,
                SPAWN_TIMEOUT)
            next_id += 1
            pipe.transact(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n', 0)
        except ChildGone as e:
            dead = str(e)
        for name, make, n, target, hits in rows:
            tname, limit = target if target else ("-", None)
            if dead:
                table.na(name, dead, tname)
                continue
            progress("mcp %s: %s x%d" % (label, name, n))
            try:
                times, err, next_id, sample = measure_requests(pipe, make, n, next_id)
            except ChildGone as e:
                dead = "server gone: %s" % e
                table.na(name, dead, tname)
                continue
            if err:
                table.na(name, err, tname)
                continue
            value = "%s / %s (n=%d)" % (fmt_ms(p50(times)), fmt_ms(p95(times)), len(times))
            table.row(name, value, tname, None if limit is None else p50(times) <= limit)
            if hits is not None and search_count(sample) != hits:
                table.note("%s on %s: the search answered count=%s, expected %d (each "
                           "query names one generated rule): the row may not measure a "
                           "full scan" % (name, label, search_count(sample), hits))
        # pipelined: the whole batch written at once, all answers read
        for name, method, params in (
                ("ping, pipelined", "ping", None),
                ("resources/read, pipelined", "resources/read", {"uri": RULE_URI})):
            name = "%s x%d (mean per request)" % (name, reps)
            if dead:
                table.na(name, dead)
                continue
            payload = b"".join(frame(next_id + i, method, params) for i in range(reps))
            try:
                t0 = time.perf_counter()
                lines = pipe.transact(payload, reps)
                t = time.perf_counter() - t0
            except ChildGone as e:
                dead = "server gone: %s" % e
                table.na(name, dead)
                continue
            next_id += reps
            err = rpc_error(lines[0]) or rpc_error(lines[-1])
            if err:
                table.na(name, err)
                continue
            table.row(name, "%s (%.0f req/s)" % (fmt_ms(t / reps), reps / t))
    finally:
        rc = pipe.close()
    if not dead and rc not in (0, None):
        table.note("mcp session on %s, after stdin closed: %s" % (
            label, rc if isinstance(rc, str) else exit_text(rc)))


class Server:
    """`majordomus.pyz serve --port 0`; the port is parsed from its stderr log."""

    def __init__(self, repo):
        self.err = tempfile.TemporaryFile()
        self.proc = track(subprocess.Popen([PYTHON, PYZ, "serve", "--port", "0"], cwd=repo,
                                           env=child_env(), stdin=subprocess.DEVNULL,
                                           stdout=subprocess.DEVNULL, stderr=self.err))
        self.host = self.port = None
        deadline = time.monotonic() + SPAWN_TIMEOUT
        pattern = re.compile(r"listening on http://(\S+):(\d+)")
        while time.monotonic() < deadline:
            m = pattern.search(self.stderr_text())
            if m:
                self.host, self.port = m.group(1).strip("[]"), int(m.group(2))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.01)
        rc = self.proc.poll()
        reason = last_line(self.stderr_text())
        self.stop()
        if rc is None:
            raise NotAvailable("no 'listening on' line within %d s" % SPAWN_TIMEOUT)
        raise NotAvailable("%s%s" % (exit_text(rc), ": " + reason if reason else ""))

    def stderr_text(self):
        try:
            self.err.seek(0)
            return self.err.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def connect(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=REQUEST_TIMEOUT)

    def stop(self):
        rc = stop(self.proc)
        try:
            self.err.close()
        except OSError:
            pass
        return rc


def http_get(conn, path):
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read()
    return resp.status, body, resp.will_close


def section_http(table, repo, label, reps, per_client, skeleton):
    table.section("HTTP serve --port 0, %s" % label)
    path = "/api/v1/object?uri=" + urllib.parse.quote(RULE_URI, safe="")
    lat_name = "GET /api/v1/object (rule), one keep-alive conn"
    lat_target = "p50 <= 1 ms" if skeleton else "-"
    rps_name = "GET /api/v1/object, %d clients x %d requests" % (HTTP_CLIENTS, per_client)
    progress("http on %s" % label)
    try:
        server = Server(repo)
    except NotAvailable as e:
        table.na(lat_name, str(e), lat_target)
        table.na(rps_name, str(e))
        return
    try:
        conn = server.connect()
        times = []
        closes = 0
        err = None
        try:
            for i in range(WARMUP + reps):
                t0 = time.perf_counter()
                status, body, will_close = http_get(conn, path)
                t = time.perf_counter() - t0
                if status != 200:
                    err = "HTTP %d: %s" % (status, first_line(body))
                    break
                if i == 0:
                    try:
                        doc = json.loads(body.decode("utf-8"))
                        if not isinstance(doc, dict) or doc.get("uri") != RULE_URI:
                            err = "the answer does not carry uri %s" % RULE_URI
                            break
                    except ValueError as e:
                        err = "the answer is not JSON: %s" % e
                        break
                closes += bool(will_close)
                if i >= WARMUP:
                    times.append(t)
        except (OSError, http.client.HTTPException) as e:
            err = "%s: %s" % (type(e).__name__, e)
        finally:
            conn.close()
        if err:
            table.na(lat_name, err, lat_target)
        else:
            value = "%s / %s (n=%d)" % (fmt_ms(p50(times)), fmt_ms(p95(times)), len(times))
            if closes:
                value += " reconnects=%d" % closes
                table.note("the server closed the connection after %d of %d responses "
                           "(%s): no keep-alive" % (closes, WARMUP + reps, label))
            table.row(lat_name, value, lat_target,
                      p50(times) <= 0.001 if skeleton else None)
            if 0.035 <= p50(times) <= 0.045:
                table.note("HTTP p50 near 40 ms (%s) is the signature of Nagle's algorithm "
                           "meeting delayed ACK: the response head and body leave in separate "
                           "writes; write them at once or set TCP_NODELAY" % label)

        # throughput: HTTP_CLIENTS threads, each with its own keep-alive connection
        progress("http on %s: %d clients x %d" % (label, HTTP_CLIENTS, per_client))
        barrier = threading.Barrier(HTTP_CLIENTS + 1)
        failures = []
        done = [0] * HTTP_CLIENTS

        def client(k):
            c = server.connect()
            try:
                barrier.wait(60)
                for _ in range(per_client):
                    status, body, _ = http_get(c, path)
                    if status != 200:
                        failures.append("HTTP %d: %s" % (status, first_line(body)))
                        return
                    done[k] += 1
            except Exception as e:  # reported in the row, never raised
                failures.append("%s: %s" % (type(e).__name__, e))
            finally:
                c.close()

        threads = [threading.Thread(target=client, args=(k,), daemon=True)
                   for k in range(HTTP_CLIENTS)]
        for th in threads:
            th.start()
        try:
            barrier.wait(60)
        except threading.BrokenBarrierError:
            failures.append("clients did not start")
        t0 = time.perf_counter()
        for th in threads:
            th.join(REQUEST_TIMEOUT * 2)
        t = time.perf_counter() - t0
        if any(th.is_alive() for th in threads):
            failures.append("a client did not finish within %d s" % (REQUEST_TIMEOUT * 2))
        if failures:
            table.na(rps_name, failures[0])
        else:
            table.row(rps_name, "%.0f req/s (%s wall)" % (sum(done) / t, fmt_ms(t)))
    finally:
        rc = server.stop()
    if rc not in (0, None):
        table.note("serve on %s: returncode %s after SIGTERM (expected 0)" % (label, rc))


# --------------------------------------------------------------------------- main

def build():
    """Build majordomus.pyz when missing or older than majordomus.py; None or a reason."""
    if not os.path.exists(PY) and not os.path.exists(PYZ):
        return "majordomus.py is not there yet"
    stale = not os.path.exists(PYZ) or (
        os.path.exists(PY) and os.path.getmtime(PYZ) < os.path.getmtime(PY))
    if stale:
        if not os.path.exists(BUILD):
            return "build_zipapp.py is not there yet"
        progress("building majordomus.pyz")
        p = subprocess.run([PYTHON, BUILD], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=300)
        if p.returncode != 0 or not os.path.exists(PYZ):
            return "build_zipapp.py failed (exit %d): %s" % (
                p.returncode, last_line(p.stderr) or last_line(p.stdout))
    return None


def facts(runs, reps, heavy_reps, per_client):
    lines = ["majordomus benchmark"]
    lines.append("python    %s (%s)" % (platform.python_version(), PYTHON))
    lines.append("cpus      %s (os.cpu_count())" % os.cpu_count())
    lines.append("platform  %s" % platform.platform())
    try:
        lines.append("load      %.2f %.2f %.2f (1/5/15 min average at start)"
                     % os.getloadavg())
    except (AttributeError, OSError):
        pass
    try:
        g = subprocess.run(["git", "--version"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        lines.append("git       %s" % first_line(g.stdout))
    except (OSError, subprocess.TimeoutExpired):
        lines.append("git       unavailable")
    if os.path.exists(PYZ):
        try:
            v = subprocess.run([PYTHON, PYZ, "--version"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
            lines.append("program   %s (%s, %d bytes)" % (
                first_line(v.stdout) or "--version: exit %d" % v.returncode, PYZ,
                os.path.getsize(PYZ)))
        except (OSError, subprocess.TimeoutExpired) as e:
            lines.append("program   %s (%s)" % (PYZ, e))
    lines.append("runs      N=%d per spawn median; %d requests per latency row (%d for "
                 "list/search over 10,000 rules), %d warm-up; HTTP %d clients x %d"
                 % (runs, reps, heavy_reps, WARMUP, HTTP_CLIENTS, per_client))
    return "\n".join(lines)


def repo_facts(repo, label):
    """Objects and state per `mcp --inspect --format json` (informational)."""
    try:
        p = subprocess.run([PYTHON, PYZ, "mcp", "--inspect", "--format", "json"], cwd=repo,
                           env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=SPAWN_TIMEOUT)
        doc = json.loads(p.stdout.decode("utf-8"))
        report = doc.get("repository", {})
        errors = sum(1 for d in report.get("diagnostics", []) if d.get("severity") == "error")
        return "%s: %s objects, %d resources, %d tools, state %s%s" % (
            label, report.get("objects"), len(doc.get("resources", [])),
            len(doc.get("tools", [])), report.get("state"),
            ", %d error diagnostic(s)" % errors if errors else "")
    except Exception:
        return None


def main(argv=None):
    ap = argparse.ArgumentParser(description="majordomus performance benchmark")
    ap.add_argument("--quick", action="store_true",
                    help="3 spawn runs instead of 10, fewer heavy requests")
    args = ap.parse_args(argv)
    runs = 3 if args.quick else 10
    reps = REPS
    heavy_reps = 50 if args.quick else REPS
    per_client = 100 if args.quick else 250

    table = Table()
    reason = build()
    print(facts(runs, reps, heavy_reps, per_client))
    tmp = tempfile.mkdtemp(prefix="mj-bench-")
    try:
        progress("creating scratch repositories under %s (%d generated rules)"
                 % (tmp, GEN_RULES))
        t0 = time.perf_counter()
        skel, big = make_repos(tmp)
        progress("repositories ready in %.1f s" % (time.perf_counter() - t0))
        if reason is None:
            for repo, label in ((skel, "skeleton"), (big, "10,000 rules")):
                info = repo_facts(repo, label)
                if info:
                    print("repo      " + info)
        print("")
        if reason is not None:
            table.section("spawn")
            walls = [run_once([PYTHON, "-c", "pass"], skel)[0] for _ in range(runs + 1)][1:]
            table.row("python3 -c pass (baseline, n=%d)" % runs, "%s (1.00x)" % fmt_ms(p50(walls)))
            for name in ("majordomus.pyz mcp --inspect", "MCP over pipes", "HTTP serve"):
                table.na(name, reason)
        else:
            section_spawn(table, skel, big, runs)
            section_mcp(table, skel, "skeleton", reps, reps, False)
            section_mcp(table, big, "10,000 rules", reps, heavy_reps, True)
            section_http(table, skel, "skeleton", reps, per_client, True)
            section_http(table, big, "10,000 rules", reps, per_client, False)
        print(table.render())
        sys.stdout.flush()
    finally:
        cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        cleanup()
        sys.exit(130)
