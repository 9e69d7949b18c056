#!/usr/bin/env python3
"""Performance benchmark of majordomus (standard library only, Python 3.9+).

Run from the checkout:

    python3 tests/bench.py [--quick]

It builds majordomus.pyz first (build_zipapp.py, same interpreter) when the archive is
missing or older than majordomus.py, creates two scratch repositories under a temporary
directory (the skeleton fixture, the skeleton plus 10,000 generated rules, and the three
below), measures,
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

Beside this build it measures main before the §20-§24 work, commit 0436a0f (OLD_COMMIT),
built into the scratch directory from `git archive` with that commit's build_zipapp.py, in
the same run and interleaved with this build's figures. Three more scratch repositories:
the reference data's fixtures/real-latest/ (with an empty stand-in committed at each path
its `tracks` name, so that its context tree validates), 10,000 rules plus 200 context documents in a
deep tree (§20), and 20,000 rules (§23's peak RSS).

Rows, by the issue they measure (each printed with its goal and "met" / "not met"):
- §23 lean start-up: spawn -> initialize on the skeleton and real-latest as a ratio to
  `-c pass` (<= 2.5x), on this interpreter and on Debian's /usr/bin/python3 when present
  (its own `-c pass` as baseline); `mcp --inspect` on 10,000 rules vs 0436a0f (<= 0.6x);
  spawn -> initialize vs its --inspect (<= 1.1x); peak RSS (VmHWM of a session after its
  initialize answer) at 20,000 rules (<= 3 x file bytes + 40 MB) and at 10,000 rules vs
  0436a0f (<= 0.6x); one edited rule -> new generation vs 0436a0f. Beside them, the
  floor (FLOOR_BODY): the archive's module loaded, one git listing, every claimed file
  read and parsed by the module's reader and nothing else, on real-latest and on 10,000
  rules: what any start-up doing its whole work must exceed. Beside real-latest's rows, a
  bare archive (BARE_MAIN) that answers one line: what running any .pyz costs.
- §20 context: majordomus_context first of a generation (<= 20 ms), distinct paths and a
  repeated path (p50 <= 1 ms) on real-latest and on the 200-document tree; the §20.1
  checks' share of index_build at start-up and in one rebuild (<= 5 %), in-process with
  the check functions timed by wrappers.
- §21 ranked search: the first search of a fresh session (term index made) <= 150 ms,
  distinct queries p50 <= 10 ms, the term index's memory (tracemalloc) <= 1.5x the text it
  indexes; tests/search_quality.py's figures (MRR@10 >= 0.9 on every question and >= 0.85
  on the natural ones, §26; recall@5 >= 0.9).
- §22 pages: /ui/, object pages and a kind page of 50 on 10,000 rules (first request apart),
  serve spawn -> first /api/v1/repository answer vs 0436a0f; and every page on real-latest
  (p50 after the first <= 5 ms; the context page <= the brief alone + 2 ms), alone with
  `--only pages`.
- §24: spawn -> initialize and one sweep at 10,000 unchanged files beside 0436a0f's.
Also the earlier rows: the shipped kinds' load in-process; `server/discover` (2026-07-28)
beside `initialize` at spawn; MCP over pipes; paged list and substring search beside
0436a0f (SPEC §16); POST /mcp tools/call, legacy session and modern, beside REST GET on
keep-alive connections (§19); and the live layer's costs (§15.5): request p50 watching vs
--no-watch, one sweep and one rebuild read from majordomus_perf's phases, idle CPU from
/proc/<pid>/stat (60 s; 10 s with --quick), and the latency of
notifications/resources/list_changed after `git add`. The live sections run last, because
they edit and stage files in the scratch repositories.
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
sys.path.insert(0, os.path.join(ROOT, "tests"))
import support  # noqa: E402  (where the reference data is: support.REFERENCE)
# The skeleton rows run on the reference data's skeleton where it is, else on the test
# layer of the same shape (tests/fixtures/layer), so that a plain clone measures too.
SKELETON = support.reference("fixtures", "skeleton")
if not os.path.isdir(SKELETON):
    SKELETON = support.LAYER
PYTHON = sys.executable

GEN_RULES = 10000
RULE_URI = "majordomus://rule/majordomus.scope-integrity@1"
OLD_COMMIT = "0436a0f"   # main before the §20-§24 work, measured beside this build
DEBIAN_PYTHON = "/usr/bin/python3"   # §23's interpreter, measured when present
REAL_LATEST = os.environ.get("MAJORDOMUS_REAL_LATEST") or support.reference(
    "fixtures", "real-latest")
BIG_RULES = 20000     # the peak-RSS row of §23
CONTEXT_DOCS = 200    # context documents of the §20 repository (beside 10,000 rules)
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


_RUNTIME = []


def child_env(shared=False):
    """The environment of every child: each row measures a server alone
    (MAJORDOMUS_STANDALONE=1) but the shared server's rows (SPEC §27, `shared`), whose leases
    go to a runtime directory of this run's own."""
    env = dict(os.environ)
    env.update(GIT_ENV)
    env.pop("MAJORDOMUS_LOG", None)
    if not _RUNTIME:
        _RUNTIME.append(tempfile.mkdtemp(prefix="mj-bench-run-"))
    env["XDG_RUNTIME_DIR"] = _RUNTIME[0]
    if shared:
        env.pop("MAJORDOMUS_STANDALONE", None)
    else:
        env["MAJORDOMUS_STANDALONE"] = "1"
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
        """ok: True -> met, False -> not met, None -> no target ('-')."""
        status = "-" if ok is None else ("met" if ok else "not met")
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
    if SKELETON == support.LAYER:
        with open(os.path.join(dst, ".gitignore"), "w") as handle:
            handle.write(support.LAYER_GITIGNORE)
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


def write_rules(repo, count):
    d = os.path.join(repo, ".ai", "repo", "rules", "project")
    os.makedirs(d, exist_ok=True)
    for n in range(count):
        with open(os.path.join(d, "gen-%05d.v1.md" % n), "w", encoding="utf-8",
                  newline="\n") as f:
            f.write(generated_rule(n))


def make_repos(tmp):
    skel = os.path.join(tmp, "skeleton")
    copy_skeleton(skel)
    init_commit(skel, "skeleton")
    big = os.path.join(tmp, "rules10k")
    copy_skeleton(big)
    write_rules(big, GEN_RULES)
    init_commit(big, "skeleton plus %d generated rules" % GEN_RULES)
    return os.path.realpath(skel), os.path.realpath(big)


def make_real_latest(tmp):
    """real-latest committed into a scratch repository, with an empty stand-in committed
    at each path its context documents' `tracks` name (SPEC §20.3), so that its context
    tree validates; None when the fixture is not there."""
    if not os.path.isdir(REAL_LATEST):
        return None
    repo = os.path.join(tmp, "real-latest")
    copy_skeleton_from(REAL_LATEST, repo)
    pattern = re.compile(r"^tracks: \[(.*)\]\s*$", re.M)
    for dirpath, _, filenames in os.walk(os.path.join(repo, ".ai")):
        for name in filenames:
            if name != "README.md":
                continue
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                m = pattern.search(f.read().split("\n---", 1)[0])
            for entry in (m.group(1).split(",") if m else ()):
                entry = entry.strip().strip("'\"")
                target = os.path.join(repo, entry)
                if entry and not os.path.exists(target):
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    open(target, "w").close()
    init_commit(repo, "real-latest with stand-ins for its tracks")
    return os.path.realpath(repo)


def copy_skeleton_from(src, dst):
    shutil.copytree(src, dst, symlinks=True)
    for dirpath, dirnames, filenames in os.walk(dst):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | 0o200)
    os.chmod(dst, os.stat(dst).st_mode | 0o200)


CONTEXT_SOURCE = """
  - id: area_context
    kind: context
    discovery: vcs
    pathspec: ':(glob).ai/repo/areas/**/README.md'
    required: false
"""


def context_dirs():
    """The directories of the §20 repository's CONTEXT_DOCS documents, a deep tree under
    .ai/repo/areas: 4 at depth 3, 20 at depth 4, the rest at depth 5."""
    out = []
    for a in range(4):
        out.append("a%d" % a)
    for a in range(4):
        for b in range(5):
            out.append("a%d/b%d" % (a, b))
    for c in range(10):
        for a in range(4):
            for b in range(5):
                if len(out) < CONTEXT_DOCS:
                    out.append("a%d/b%d/c%d" % (a, b, c))
    return [".ai/repo/areas/" + d for d in out]


def context_document(directory, n, parent_id):
    ident = "bench." + directory[len(".ai/repo/areas/"):].replace("/", ".")
    lines = ["---", "schema: context/v1", "id: %s" % ident, "kind: context",
             "title: Benchmark context %s" % directory,
             "description: Context document %d of the benchmark's deep tree." % n,
             "status: %s" % ("deprecated" if n % 37 == 36 else "active"),
             "scope: %s" % ("directory" if n % 5 == 4 else "subtree"),
             'providers: ["*"]', "audience: [human, agent]"]
    if parent_id and n % 10 == 7:
        lines += ["composition: replace", "supersedes: [%s]" % parent_id]
    else:
        lines.append("composition: extend")
    lines.append("order: %d" % (10 + n % 3 * 10))
    if n % 20 == 3:
        lines.append("tracks: [README.md, .ai/repo/rules/project/gen-%05d.v1.md]"
                     % (n * 31 % GEN_RULES))
    lines += ["---", "", "# Benchmark context %s" % directory, "",
              "What governs %s in the benchmark's tree; it states nothing." % directory, ""]
    return "\n".join(lines)


def make_context_repo(tmp):
    """The skeleton, 10,000 generated rules and CONTEXT_DOCS context documents."""
    repo = os.path.join(tmp, "context10k")
    copy_skeleton(repo)
    write_rules(repo, GEN_RULES)
    with open(os.path.join(repo, ".ai", "repo", "knowledge", "sources.yaml"), "a",
              encoding="utf-8", newline="\n") as f:
        f.write(CONTEXT_SOURCE)
    ids = {}
    for n, directory in enumerate(context_dirs()):
        parent = directory.rpartition("/")[0]
        os.makedirs(os.path.join(repo, directory), exist_ok=True)
        with open(os.path.join(repo, directory, "README.md"), "w", encoding="utf-8",
                  newline="\n") as f:
            f.write(context_document(directory, n, ids.get(parent)))
        ids[directory] = "bench." + directory[len(".ai/repo/areas/"):].replace("/", ".")
    init_commit(repo, "skeleton, %d rules, %d context documents" % (GEN_RULES, CONTEXT_DOCS))
    return os.path.realpath(repo)


def make_rules_repo(tmp, count):
    repo = os.path.join(tmp, "rules%dk" % (count // 1000))
    copy_skeleton(repo)
    write_rules(repo, count)
    init_commit(repo, "skeleton plus %d generated rules" % count)
    return os.path.realpath(repo)


def tree_bytes(repo):
    """Bytes of every file of the work tree outside .git."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(repo):
        if ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames:
            total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


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
    for folder in _RUNTIME:
        shutil.rmtree(folder, ignore_errors=True)


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

    def __init__(self, argv, cwd, shared=False):
        self.err = tempfile.TemporaryFile()
        env = child_env(shared)
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

    def next_line(self, timeout):
        """The next line the child writes (without newline), or None after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            i = self.buf.find(b"\n", self.scan)
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 1]
                self.scan = 0
                return line
            self.scan = len(self.buf)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            r, _, _ = select.select([self.out_fd], [], [], remaining)
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


MODERN = "2026-07-28"
MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN,
               "io.modelcontextprotocol/clientCapabilities": {}}
LEGACY = "2025-06-18"
INITIALIZE = {"protocolVersion": LEGACY, "capabilities": {},
              "clientInfo": {"name": "majordomus-bench", "version": "0"}}
_ID = re.compile(rb'"id"\s*:\s*(-?\d+)')


def answer_id(line):
    """The id of an answer line; None for a notification (or anything without an id)."""
    if len(line) < (1 << 16):
        try:
            msg = json.loads(line.decode("utf-8"))
        except ValueError:
            return None
        if not isinstance(msg, dict) or "method" in msg:
            return None
        return msg.get("id")
    m = _ID.search(line[:256])   # a large line is an answer: its id comes first
    return int(m.group(1)) if m else None


def notice_method(line):
    try:
        msg = json.loads(line.decode("utf-8"))
    except ValueError:
        return None
    return msg.get("method") if isinstance(msg, dict) and "id" not in msg else None


def structured(line):
    """structuredContent of a tools/call answer line; NotAvailable on any error."""
    err = rpc_error(line)
    if err:
        raise NotAvailable(err)
    try:
        return json.loads(line.decode("utf-8"))["result"]["structuredContent"]
    except (ValueError, KeyError, TypeError):
        raise NotAvailable("the tool answer carries no structuredContent")


class Session:
    """One `mcp` child spoken to by request id: notifications that arrive meanwhile are
    kept with their arrival time (perf_counter) for wait_notice()."""

    def __init__(self, argv, cwd, shared=False):
        self.pipe = Pipe(argv, cwd, shared)
        self.pid = self.pipe.proc.pid
        self.next_id = 1
        self.notices = []

    def send(self, payload):
        self.pipe.transact(payload, 0)

    def call(self, method, params=None, timeout=REQUEST_TIMEOUT):
        """(seconds from the write to the answer line, the answer line)."""
        id_ = self.next_id
        self.next_id += 1
        t0 = time.perf_counter()
        self.send(frame(id_, method, params))
        deadline = time.monotonic() + timeout
        while True:
            line = self.pipe.next_line(max(0.0, deadline - time.monotonic()))
            if line is None:
                raise ChildGone("no answer to %s within %d s" % (method, timeout))
            t = time.perf_counter() - t0
            got = answer_id(line)
            if got == id_:
                return t, line
            if got is None:
                self.notices.append((time.perf_counter(), line))

    def tool(self, name, arguments, timeout=REQUEST_TIMEOUT):
        t, line = self.call("tools/call", {"name": name, "arguments": arguments}, timeout)
        return t, structured(line)

    def perf(self):
        return self.tool("majordomus_perf", {})[1]

    def initialize(self, initialized=True):
        """Legacy initialize; `initialized` also sends notifications/initialized, which
        makes the session a listener (under watching, the idle timer runs)."""
        _, line = self.call("initialize", INITIALIZE, SPAWN_TIMEOUT)
        err = rpc_error(line)
        if err:
            raise NotAvailable("initialize answered %s" % err)
        if initialized:
            self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def wait_notice(self, method, timeout):
        """Arrival time (perf_counter) of the next notification `method`, or None."""
        deadline = time.monotonic() + timeout
        while True:
            for k, (at, line) in enumerate(self.notices):
                if notice_method(line) == method:
                    del self.notices[:k + 1]
                    return at
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            line = self.pipe.next_line(remaining)
            if line is None:
                return None
            if answer_id(line) is None:
                self.notices.append((time.perf_counter(), line))

    def drain(self, seconds):
        """Keep every notification that arrives within `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            line = self.pipe.next_line(remaining)
            if line is None:
                return
            if answer_id(line) is None:
                self.notices.append((time.perf_counter(), line))

    def close(self):
        return self.pipe.close()


def open_session(argv, cwd, initialized=True, shared=False):
    """A started and initialized Session; NotAvailable (the session stopped) otherwise."""
    session = Session(argv, cwd, shared)
    try:
        session.initialize(initialized)
    except (ChildGone, NotAvailable) as e:
        session.close()
        raise NotAvailable(str(e))
    return session


def proc_cpu(pid):
    """utime + stime of a live process, in seconds (Linux /proc)."""
    with open("/proc/%d/stat" % pid, "rb") as f:
        fields = f.read().rpartition(b")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def phase_delta(before, after, name):
    """(count, seconds) spent in one majordomus_perf phase between two snapshots."""
    b, a = before["phases"][name], after["phases"][name]
    return a["count"] - b["count"], (a["total_nanos"] - b["total_nanos"]) / 1e9


def case_variant(text, i):
    """`text` with its letters' case set by the bits of i: distinct cache keys, one needle."""
    out, bit = [], 0
    for ch in text:
        if ch.isalpha():
            out.append(ch.upper() if (i >> bit) & 1 else ch)
            bit += 1
        else:
            out.append(ch)
    return "".join(out)


def lat(times):
    return "%s / %s (n=%d)" % (fmt_ms(p50(times)), fmt_ms(p95(times)), len(times))



# --------------------------------------------------------------------------- sections

# server/discover and initialize do the same work at spawn: two medians of equal work
# differ by noise either way, so the row allows that much.
DISCOVER_SLACK = 1.05


def section_spawn(table, skel, big, real, runs, old_pyz, old_reason, floor=(None, None),
                  bare=None):
    """Each measured group is interleaved with its own baseline runs (baseline, program(s),
    baseline, program(s), ...) so that a ratio compares runs made under the same load; a
    group of several programs alternates their order from one round to the next. A group
    run under another interpreter (Debian's) takes that interpreter's `-c pass` as its
    baseline."""
    table.section("spawn (SPEC §23, §24): median of %d runs after a warm-up; ratio vs "
                  "python3 -c pass runs interleaved with the row's" % runs)
    base_row = len(table.rows)
    table.row("python3 -c pass (baseline)", "?")
    pooled_wall, pooled_cpu = [], []

    def baseline_once(python):
        t, cpu, _ = run_once([python, "-c", "pass"], skel)
        return t, cpu

    def inspect_once(pyz, repo, label, python=PYTHON):
        def once():
            try:
                t, cpu, p = run_once([python, pyz, "mcp", "--inspect"], repo)
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

    def first_answer_once(repo, payload, what, pyz=PYZ, python=PYTHON):
        def once():
            c0 = children_cpu()
            pipe = Pipe([python, pyz, "mcp"], repo)
            try:
                lines = pipe.transact(payload, 1, SPAWN_TIMEOUT)
                t = time.perf_counter() - pipe.t_spawn
            except ChildGone as e:
                raise NotAvailable(str(e))
            finally:
                pipe.close()
            err = rpc_error(lines[0])
            if err:
                raise NotAvailable("%s answered %s" % (what, err))
            return t, children_cpu() - c0
        return once

    def group(entries, python=PYTHON):
        """entries: [(name, once, target, ok_of(wall, ratio, walls))], measured interleaved;
        a row each; returns the medians (None where a program failed)."""
        progress("spawn: %s" % "; ".join(e[0] for e in entries))
        failed = {}
        walls = [[] for _ in entries]
        cpus = [[] for _ in entries]
        bases = []

        def call(k):
            if k in failed:
                return None
            try:
                return entries[k][1]()
            except NotAvailable as e:
                failed[k] = str(e)
                return None

        for k in range(len(entries)):
            call(k)   # the discarded warm-up
        baseline_once(python)
        for i in range(runs):
            b, bcpu = baseline_once(python)
            bases.append(b)
            if python == PYTHON:
                pooled_wall.append(b)
                pooled_cpu.append(bcpu)
            order = list(range(len(entries)))
            if i % 2:
                order.reverse()
            for k in order:
                r = call(k)
                if r is not None:
                    walls[k].append(r[0])
                    cpus[k].append(r[1])
        base = p50(bases)
        medians = [None if k in failed or not walls[k] else p50(walls[k])
                   for k in range(len(entries))]
        if python != PYTHON:
            table.row("%s -c pass (this group's baseline, n=%d)" % (python, len(bases)),
                      "%s (1.00x)" % fmt_ms(base))
        for k, (name, _, target, ok_of) in enumerate(entries):
            if medians[k] is None:
                table.na(name, failed.get(k, "no run"), target)
                continue
            ratio = medians[k] / base
            table.row(name, "%s (%.2fx); cpu %s" % (fmt_ms(medians[k]), ratio,
                                                   fmt_ms(p50(cpus[k]))),
                      target, ok_of(medians[k], ratio, medians))
        return medians

    def versus(name, new, old, target, limit, what=OLD_COMMIT):
        """A row comparing one median with another (by default the previous version's)."""
        if new is None or old is None:
            table.na(name, old_reason if old is None and old_reason and what == OLD_COMMIT
                     else "a figure is missing", target)
            return
        table.row(name, "%.2fx (%s vs %s)" % (new / old, fmt_ms(new), fmt_ms(old)), target,
                  new / old <= limit)

    initialize = frame(1, "initialize", INITIALIZE)
    discover = frame(1, "server/discover", {"_meta": MODERN_META})
    no_target = lambda wall, ratio, walls: None
    lean = lambda wall, ratio, walls: ratio <= 2.5

    group([("majordomus.pyz mcp --inspect, skeleton",
            inspect_once(PYZ, skel, "skeleton"), "<= 4x",
            lambda wall, ratio, walls: ratio <= 4.0)])

    # §23: spawn -> initialize on the skeleton and on real-latest, <= 2.5x -c pass, on the
    # current interpreter and on Debian's /usr/bin/python3
    pythons = [PYTHON]
    if os.path.exists(DEBIAN_PYTHON):
        pythons.append(DEBIAN_PYTHON)
    else:
        table.note("%s is not there: the Debian rows of §23 are not measured" % DEBIAN_PYTHON)
    for python in pythons:
        tag = "" if python == PYTHON else " [%s]" % python
        entries = [("spawn -> initialize answer, skeleton%s" % tag,
                    first_answer_once(skel, initialize, "initialize", python=python),
                    "<= 2.5x (§23)", lean)]
        if real:
            entries.append(("spawn -> initialize answer, real-latest%s" % tag,
                            first_answer_once(real, initialize, "initialize", python=python),
                            "<= 2.5x (§23)", lean))
            if floor[0]:
                entries.append(("  its floor: module, git, every file read and parsed%s"
                                % tag, first_answer_once(real, initialize, "initialize",
                                                         pyz=floor[0], python=python),
                                "-", no_target))
            if bare:
                entries.append(("  a bare archive answering one line (runpy, zipimport)%s"
                                % tag, first_answer_once(real, initialize, "initialize",
                                                         pyz=bare, python=python),
                                "-", no_target))
        elif python == PYTHON:
            table.na("spawn -> initialize answer, real-latest", "no fixture at %s"
                     % REAL_LATEST, "<= 2.5x (§23)")
        if python == PYTHON:
            entries.append(("spawn -> server/discover answer (%s), skeleton" % MODERN,
                            first_answer_once(skel, discover, "server/discover"),
                            "<= initialize row (+5 %)",
                            lambda wall, ratio, walls: None if walls[0] is None
                            else wall <= walls[0] * DISCOVER_SLACK))
        group(entries, python)

    # §23: --inspect on 10,000 rules vs 0436a0f; spawn -> initialize vs its --inspect;
    # §24: spawn -> initialize at 10,000 files beside 0436a0f's
    entries = [("majordomus.pyz mcp --inspect, 10,000 rules",
                inspect_once(PYZ, big, "10,000 rules"), "< 1.5 s wall",
                lambda wall, ratio, walls: wall < 1.5),
               ("spawn -> initialize answer, 10,000 rules",
                first_answer_once(big, initialize, "initialize"), "-", no_target),
               ("spawn -> server/discover answer (%s), 10,000 rules" % MODERN,
                first_answer_once(big, discover, "server/discover"),
                "<= initialize row (+5 %)", lambda wall, ratio, walls: None
                if walls[1] is None else wall <= walls[1] * DISCOVER_SLACK)]
    if old_pyz:
        entries += [("%s mcp --inspect, 10,000 rules (previous)" % OLD_COMMIT,
                     inspect_once(old_pyz, big, "10,000 rules (%s)" % OLD_COMMIT), "-",
                     no_target),
                    ("%s spawn -> initialize answer, 10,000 rules (previous)" % OLD_COMMIT,
                     first_answer_once(big, initialize, "initialize", pyz=old_pyz), "-",
                     no_target)]
    if floor[0]:
        entries.append(("  floor: module, git, every file read and parsed, 10,000 rules",
                        first_answer_once(big, initialize, "initialize", pyz=floor[0]), "-",
                        no_target))
    medians = group(entries)
    old_inspect = medians[3] if old_pyz else None
    old_init = medians[4] if old_pyz else None
    versus("§23 mcp --inspect, 10,000 rules: this build / %s" % OLD_COMMIT, medians[0],
           old_inspect, "<= 0.6x", 0.6)
    if floor[0]:
        if medians[-1] is not None and old_inspect is not None:
            table.row("  the floor / %s's --inspect, 10,000 rules" % OLD_COMMIT, "%.2fx" % (
                medians[-1] / old_inspect))
    else:
        table.na("§23 floor (module, git, files read and parsed)", floor[1])
    versus("§23 spawn -> initialize / its --inspect, 10,000 rules", medians[1], medians[0],
           "<= 1.1x", 1.1, what="inspect")
    versus("§24 spawn -> initialize, 10,000 files: this build / %s" % OLD_COMMIT,
           medians[1], old_init, "<= 1.05x (unchanged)", 1.05)
    table.rows[base_row] = ("row", "python3 -c pass (baseline, n=%d)" % len(pooled_wall),
                            "%s (1.00x); cpu %s" % (fmt_ms(p50(pooled_wall)),
                                                    fmt_ms(p50(pooled_cpu))), "-", "-")


def proc_status_bytes(pid, field):
    """A size line of /proc/<pid>/status (VmHWM: the peak resident set; VmRSS: the
    current one), in bytes."""
    key = field.encode("ascii") + b":"
    with open("/proc/%d/status" % pid, "rb") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise ValueError("no %s line" % field)


def vm_hwm(pid):
    return proc_status_bytes(pid, "VmHWM")


def session_peak(pyz, repo):
    """Peak RSS of an `mcp` session after its initialize answer (the index built)."""
    session = Session([PYTHON, pyz, "mcp"], repo)
    try:
        session.initialize(False)
        return vm_hwm(session.pid)
    except ChildGone as e:
        raise NotAvailable(str(e))
    finally:
        session.close()


def section_memory(table, big, huge, runs, old_pyz, old_reason):
    """§23's peak RSS rows: VmHWM of an mcp session read after its initialize answer."""
    n = max(3, runs // 2)
    table.section("peak RSS (SPEC §23): VmHWM of an mcp session after its initialize "
                  "answer, median of %d" % n)
    progress("peak RSS x%d" % n)
    specs = [("this build, %d rules" % BIG_RULES, PYZ, huge),
             ("this build, 10,000 rules", PYZ, big)]
    if old_pyz:
        specs += [("%s, 10,000 rules (previous)" % OLD_COMMIT, old_pyz, big),
                  ("%s, %d rules (previous)" % (OLD_COMMIT, BIG_RULES), old_pyz, huge)]
    figures = [[] for _ in specs]
    failed = {}
    for i in range(n):
        order = list(range(len(specs)))
        if i % 2:
            order.reverse()
        for k in order:
            if k in failed:
                continue
            try:
                figures[k].append(session_peak(specs[k][1], specs[k][2]))
            except (NotAvailable, OSError, ValueError) as e:
                failed[k] = str(e)
    medians = [None if k in failed else p50(figures[k]) for k in range(len(specs))]
    for k, (name, _, _) in enumerate(specs):
        if medians[k] is None:
            table.na(name, failed[k])
        else:
            table.row(name, "%.1f MB (max %.1f MB, n=%d)" % (
                medians[k] / 1e6, max(figures[k]) / 1e6, len(figures[k])))
    files = tree_bytes(huge)
    goal = 3 * files + 40e6
    name = "§23 peak RSS, %d rules (%.1f MB of files)" % (BIG_RULES, files / 1e6)
    target = "<= 3 x files + 40 MB (%.0f MB)" % (goal / 1e6)
    if medians[0] is None:
        table.na(name, failed[0], target)
    else:
        table.row(name, "%.1f MB" % (medians[0] / 1e6), target, medians[0] <= goal)
    name = "§23 peak RSS, 10,000 rules: this build / %s" % OLD_COMMIT
    if medians[1] is None or not old_pyz or medians[2] is None:
        table.na(name, old_reason or "a figure is missing", "<= 0.6x")
    else:
        ratio = medians[1] / medians[2]
        table.row(name, "%.2fx (%.1f MB vs %.1f MB)" % (ratio, medians[1] / 1e6,
                                                        medians[2] / 1e6), "<= 0.6x",
                  ratio <= 0.6)
    table.note("peak RSS: VmHWM from /proc/<pid>/status of a session that answered "
               "initialize (index and registry built), read before its stdin closes; file "
               "bytes are every work-tree file outside .git")


# In-process cost of the shipped kinds, from the archive (python3 -c, module imported from
# the .pyz via sys.path): argv = archive, comma-separated kinds the layer uses.
KINDS_NEW = r'''
import sys, time
sys.path.insert(0, sys.argv[1])
import majordomus as m
used = [k for k in sys.argv[2].split(",") if k]
t0 = time.perf_counter_ns()
kinds = m.shipped_kinds()
lists = {}
for name in used:
    kind = kinds.get(name)
    if kind is not None and kind.allow is not None:
        lists[kind.allow.name] = kind.allow
for allow in lists.values():
    allow.compile()
m.AllowList.shipped("manifest").compile()
t1 = time.perf_counter_ns()
print(t1 - t0, len(kinds.by_name), ",".join(sorted(lists) + ["manifest"]))
'''


def section_kinds(table, skel, runs, old_pyz, old_reason):
    n = max(5, 2 * runs)
    table.section("shipped kinds at start-up, in-process from the archive (python3 -c, "
                  "median of %d, interleaved)" % n)
    new_name = "this build: shipped_kinds() + the skeleton's lists"
    old_name = "%s: shipped_kinds() + the skeleton's lists" % OLD_COMMIT
    added_name = "added to start-up by the shipped kinds"
    progress("kinds at start-up x%d" % n)
    try:
        p = subprocess.run([PYTHON, PYZ, "mcp", "--inspect", "--format", "json"], cwd=skel,
                           env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=SPAWN_TIMEOUT)
        used = sorted(json.loads(p.stdout.decode("utf-8"))["repository"]["kinds"])
    except Exception as e:
        for name in (new_name, old_name, added_name):
            table.na(name, "the skeleton's kinds: %s: %s" % (type(e).__name__, e))
        return
    programs = [(new_name, [PYTHON, "-c", KINDS_NEW, PYZ, ",".join(used)])]
    if old_pyz:
        programs.append((old_name, [PYTHON, "-c", KINDS_NEW, old_pyz, ",".join(used)]))
    figures = [[] for _ in programs]
    info = [None] * len(programs)
    failed = {}
    for i in range(n + 1):
        order = list(range(len(programs)))
        if i % 2:
            order.reverse()
        for k in order:
            if k in failed:
                continue
            try:
                _, p = timed_run(programs[k][1], skel)
                fields = p.stdout.decode("utf-8").split()
                if p.returncode != 0 or len(fields) != 3:
                    raise ValueError("%s: %s" % (exit_text(p.returncode),
                                                 last_line(p.stderr) or "no figure"))
            except (ValueError, OSError, subprocess.TimeoutExpired) as e:
                failed[k] = str(e)
                continue
            if i:   # the first round is a warm-up
                figures[k].append(int(fields[0]) / 1e9)
            info[k] = fields[1:]
    medians = []
    lists_of = ["?", "?"]
    for k, (name, _) in enumerate(programs):
        if k in failed:
            table.na(name, failed[k])
            medians.append(None)
            continue
        medians.append(p50(figures[k]))
        table.row(name, "%s / %s p95 (n=%d; %s kinds, %d lists compiled)" % (
            fmt_ms(medians[k]), fmt_ms(p95(figures[k])), len(figures[k]), info[k][0],
            len(info[k][1].split(","))))
        lists_of[k] = info[k][1]
    if not old_pyz:
        table.na(old_name, old_reason or "no previous build")
        medians.append(None)
    if medians[0] is None or medians[1] is None:
        table.na(added_name, "a figure is missing", "<= +2 ms")
    else:
        added = medians[0] - medians[1]
        table.row(added_name, "%+.2f ms (this build - %s)" % (added * 1000, OLD_COMMIT),
                  "<= +2 ms", added <= 0.002)
    table.note("kinds at start-up: each figure is measured inside a fresh python3 -c that "
               "imported the module from the archive; the import itself is not included. "
               "The skeleton uses kinds %s; this build compiles a shipped list on first use "
               "(here %s); %s the same way (%s)." % (
                   ", ".join(used), lists_of[0], OLD_COMMIT, lists_of[1]))


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
                return times, err, id_, None
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


BROAD = "quick brown fox"   # a line of every generated rule, of nothing else


def interleave(specs, n):
    """specs: [(session, tool, make_arguments(i))]; WARMUP + n rounds, one request of each
    spec per round (the order reversed every other round). Returns per spec (times, first
    measured structuredContent or None, error or None)."""
    out = [[[], None, None] for _ in specs]
    for i in range(WARMUP + n):
        order = list(range(len(specs)))
        if i % 2:
            order.reverse()
        for k in order:
            if out[k][2] is not None:
                continue
            session, tool, make = specs[k]
            try:
                t, line = session.call("tools/call", {"name": tool, "arguments": make(i)})
            except ChildGone as e:
                out[k][2] = "server gone: %s" % e
                continue
            if i == 0 or i == WARMUP:
                try:
                    value = structured(line)
                except NotAvailable as e:
                    out[k][2] = str(e)
                    continue
                if i == WARMUP:
                    out[k][1] = value
            if i >= WARMUP:
                out[k][0].append(t)
    return out


def last_page_cursor(session, tool, arguments, big_limit, limit):
    """Page once through (big_limit per page, then `limit` per page over the last big
    page): (the cursor whose page at `limit` is the last one, pages asked). The cursors
    are keysets, so one found at big_limit pages on at any limit."""
    asked, start = 0, None
    for size in (big_limit, limit):
        cursor = start
        while True:
            if asked >= 2000:
                raise NotAvailable("more than 2000 pages")
            args = dict(arguments, limit=size)
            if cursor is not None:
                args["cursor"] = cursor
            value = session.tool(tool, args)[1]
            asked += 1
            if value.get("next_cursor") is None:
                break
            cursor = value["next_cursor"]
        start = cursor   # its page, at this size, is the last one
    if start is None:
        raise NotAvailable("everything fits on the first page: no last page to ask for")
    return start, asked


def section_paging(table, big, reps, list_reps, old_pyz, old_reason):
    """Every paged request beside the same request to 0436a0f, which already paged (§16): the
    issue that brought paging compared each page with the unpaged list of its day, a build
    that is no longer the baseline; what must hold now is that no page got slower (§23)."""
    table.section("paged answers (SPEC §16), 10,000 rules: p50 / p95 of tools/call, this "
                  "build's session interleaved with %s's answering the same request"
                  % OLD_COMMIT)
    progress("paging on 10,000 rules")
    names = ["majordomus_list first page (default limit 50)",
             "majordomus_list last page (default limit, cursor)",
             "majordomus_list first page, limit 500 (max)",
             "majordomus_search substring, distinct 1-hit queries (one page)",
             "majordomus_search substring '%s', first page" % BROAD,
             "majordomus_search substring '%s', last page (cursor)" % BROAD]
    target = "<= 1.05x %s (unchanged)" % OLD_COMMIT
    sessions = []
    try:
        try:
            new = open_session([PYTHON, PYZ, "mcp"], big)
            sessions.append(new)
            old = None
            if old_pyz:
                old = open_session([PYTHON, old_pyz, "mcp"], big)
                sessions.append(old)
            list_cursor, list_pages = last_page_cursor(new, "majordomus_list", {}, 500, 50)
            search_cursor, search_pages = last_page_cursor(
                new, "majordomus_search", {"query": BROAD, "mode": "substring"}, 200, 20)
        except (NotAvailable, ChildGone) as e:
            for name in names:
                table.na(name, str(e), target)
            return
        table.note("paging: the last pages' cursors were found by paging once (%d list "
                   "pages, %d search pages, at the maximum limit and then the default), and "
                   "both builds are asked for the same page (the cursor's format is the "
                   "same); objects.list has no cache; objects.search has a process cache (64 "
                   "entries per generation), so every search row varies its key: 'gen-NNNNN' "
                   "with distinct numbers, and '%s' with a distinct letter case per request "
                   "(the needle is lower-cased, the cache key is not); '%s' matches the "
                   "10,000 generated rules and nothing else, at the default limit 20; "
                   "%s's search is the substring search, so it is not told the mode" % (
                       list_pages, search_pages, BROAD, BROAD, OLD_COMMIT))

        def one_hit(i):
            return {"query": "gen-%05d" % ((i * 7919 + 17) % GEN_RULES)}

        def broad(i):
            return {"query": case_variant(BROAD, i)}

        def substring(make, **more):
            return lambda i: dict(make(i), mode="substring", **more)

        def cursor_at(make, cursor):
            return lambda i: dict(make(i), cursor=cursor)

        nothing = lambda i: {}  # noqa: E731
        rows = [("majordomus_list", nothing, nothing, list_reps),
                ("majordomus_list", cursor_at(nothing, list_cursor),
                 cursor_at(nothing, list_cursor), list_reps),
                ("majordomus_list", lambda i: {"limit": 500}, lambda i: {"limit": 500},
                 list_reps),
                ("majordomus_search", substring(one_hit), one_hit, reps),
                ("majordomus_search", substring(broad), broad, reps),
                ("majordomus_search", substring(broad, cursor=search_cursor),
                 cursor_at(broad, search_cursor), reps)]
        for name, (tool, make_new, make_old, n) in zip(names, rows):
            specs = [(new, tool, make_new)] + ([(old, tool, make_old)] if old else [])
            results = interleave(specs, n)
            times, sample, err = results[0]
            if err:
                table.na(name, err, target)
                continue
            value = lat(times)
            if isinstance(sample, dict) and sample.get("count") is not None:
                value += " count=%s total=%s" % (sample.get("count"), sample.get("total"))
            if old is None:
                table.na(name, "%s; %s" % (value, old_reason or "no previous build"), target)
                continue
            old_times, old_sample, old_err = results[1]
            if old_err:
                table.na(name, "%s; %s: %s" % (value, OLD_COMMIT, old_err), target)
                continue
            if (isinstance(sample, dict) and isinstance(old_sample, dict)
                    and sample.get("count") != old_sample.get("count")):
                value += " (%s: count=%s)" % (OLD_COMMIT, old_sample.get("count"))
            ratio = p50(times) / p50(old_times)
            table.row(name, "%s; %.2fx %s's %s" % (value, ratio, OLD_COMMIT,
                                                    fmt_ms(p50(old_times))),
                      target, ratio <= 1.05)
    finally:
        for session in sessions:
            session.close()


class Server:
    """`majordomus.pyz serve --port 0`; the port is parsed from its stderr log."""

    def __init__(self, repo, pyz=None):
        pyz = pyz or PYZ
        self.err = tempfile.TemporaryFile()
        self.t_spawn = time.perf_counter()
        self.proc = track(subprocess.Popen([PYTHON, pyz, "serve", "--port", "0"], cwd=repo,
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
            time.sleep(0.002)
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


def http_post(conn, path, body, headers):
    conn.request("POST", path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    return resp.status, data, resp.will_close, resp


MCP_HEADERS = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}


def section_mcp_http(table, server, label, reps):
    """POST /mcp tools/call majordomus_get, legacy session and modern, beside REST GET,
    each on its own keep-alive connection, the three interleaved request by request."""
    rest_path = "/api/v1/object?uri=" + urllib.parse.quote(RULE_URI, safe="")
    names = ["GET /api/v1/object (rule), keep-alive, beside /mcp",
             "POST /mcp tools/call majordomus_get, legacy session",
             "POST /mcp tools/call majordomus_get, modern %s" % MODERN]
    targets = ["-", "<= 1.5x GET", "<= 1.5x GET"]
    progress("http /mcp on %s" % label)
    conns = [server.connect() for _ in names]
    try:
        try:
            status, body, _, resp = http_post(conns[1], "/mcp", frame(1, "initialize",
                                                                      INITIALIZE), MCP_HEADERS)
            sid = resp.getheader("Mcp-Session-Id")
            if status != 200 or not sid:
                raise NotAvailable("initialize over /mcp: HTTP %d%s: %s" % (
                    status, "" if sid else ", no Mcp-Session-Id", first_line(body)))
            legacy_headers = dict(MCP_HEADERS, **{"Mcp-Session-Id": sid,
                                                  "MCP-Protocol-Version": LEGACY})
            status, body, _, _ = http_post(
                conns[1], "/mcp", b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                legacy_headers)
            if status != 202:
                raise NotAvailable("notifications/initialized over /mcp: HTTP %d" % status)
        except (NotAvailable, OSError, http.client.HTTPException) as e:
            for name, target in zip(names, targets):
                table.na(name, str(e), target)
            return
        modern_headers = dict(MCP_HEADERS, **{"MCP-Protocol-Version": MODERN,
                                              "Mcp-Method": "tools/call",
                                              "Mcp-Name": "majordomus_get"})
        arguments = {"uri": RULE_URI}

        def rest(i):
            return http_get(conns[0], rest_path)

        def legacy(i):
            body = frame(2 + i, "tools/call", {"name": "majordomus_get",
                                               "arguments": arguments})
            return http_post(conns[1], "/mcp", body, legacy_headers)[:3]

        def modern(i):
            body = frame(2 + i, "tools/call", {"name": "majordomus_get",
                                               "arguments": arguments,
                                               "_meta": MODERN_META})
            return http_post(conns[2], "/mcp", body, modern_headers)[:3]

        calls = [rest, legacy, modern]
        times = [[] for _ in calls]
        errors = [None] * len(calls)
        closes = [0] * len(calls)
        for i in range(WARMUP + reps):
            order = list(range(len(calls)))
            if i % 2:
                order.reverse()
            for k in order:
                if errors[k]:
                    continue
                try:
                    t0 = time.perf_counter()
                    status, body, will_close = calls[k](i)
                    t = time.perf_counter() - t0
                except (OSError, http.client.HTTPException) as e:
                    errors[k] = "%s: %s" % (type(e).__name__, e)
                    continue
                if status != 200:
                    errors[k] = "HTTP %d: %s" % (status, first_line(body))
                    continue
                if i == 0:
                    if k:
                        err = rpc_error(body)
                        if err:
                            errors[k] = err
                            continue
                    try:
                        doc = json.loads(body.decode("utf-8"))
                        if k:
                            doc = doc["result"]["structuredContent"]
                    except (ValueError, KeyError, TypeError):
                        doc = None
                    if not isinstance(doc, dict) or doc.get("uri") != RULE_URI:
                        errors[k] = "the answer does not carry uri %s" % RULE_URI
                        continue
                closes[k] += bool(will_close)
                if i >= WARMUP:
                    times[k].append(t)
        rest_p50 = None if errors[0] else p50(times[0])
        for k, (name, target) in enumerate(zip(names, targets)):
            if errors[k]:
                table.na(name, errors[k], target)
                continue
            value = lat(times[k])
            if closes[k]:
                value += " reconnects=%d" % closes[k]
            if k == 0 or rest_p50 is None:
                table.row(name, value, target if k else "-")
                continue
            ratio = p50(times[k]) / rest_p50
            table.row(name, value + " %.2fx GET" % ratio, target, ratio <= 1.5)
    finally:
        for conn in conns:
            conn.close()


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

        section_mcp_http(table, server, label, reps)

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


SWEEP_GAP = 1.1   # seconds between requests that must each sweep (a request sweeps <= 1/s)


def live_rule(name):
    return "\n".join([
        "---", "id: project.%s" % name, "version: 1", "title: Benchmark live rule %s" % name,
        "description: Added by the benchmark while a session was idle.",
        "tags: [generated, bench]", "---", "", "# Benchmark live rule %s" % name, "",
        "It was written, then staged, to time the notification that follows.", ""])


class one_cpu:
    """This process and the given sessions (every thread of each) on one CPU while the
    block runs. On a virtual machine a request that wakes a process on the other CPU pays
    a cross-CPU wake-up (about 0.06 ms on the 2-core machine of the issues) that the
    scheduler hands to one session or the other by where it placed them, not by what they
    do; two sessions compared side by side must not differ by it. No-op where the platform
    cannot pin."""

    def __init__(self, sessions):
        self.sessions, self.before = sessions, None

    def __enter__(self):
        if not hasattr(os, "sched_setaffinity"):
            return False
        try:
            self.before = os.sched_getaffinity(0)
            cpu = {min(self.before)}
            os.sched_setaffinity(0, cpu)
            for session in self.sessions:
                for task in os.listdir("/proc/%d/task" % session.pid):
                    os.sched_setaffinity(int(task), cpu)
        except OSError:
            self.__exit__()
            return False
        return True

    def __exit__(self, *exc):
        if self.before is not None:
            try:
                os.sched_setaffinity(0, self.before)
            except OSError:
                pass


def interleave_calls(specs, n):
    """specs: [(session, method, params)]; WARMUP + n rounds of one request each (the order
    reversed every other round). Returns per spec its latencies; NotAvailable on an error."""
    times = [[] for _ in specs]
    for i in range(WARMUP + n):
        order = list(range(len(specs)))
        if i % 2:
            order.reverse()
        for k in order:
            session, method, params = specs[k]
            t, line = session.call(method, params)
            if i == 0:
                err = rpc_error(line)
                if err:
                    raise NotAvailable("%s answered %s" % (method, err))
            if i >= WARMUP:
                times[k].append(t)
    return times


def section_live(table, repo, label, reps, big, quick, old_pyz=None, old_reason=None):
    rounds = 3 if quick else 5
    notices = 2 if quick else 5
    window = 10.0 if quick else 60.0
    table.section("live layer (SPEC §15.5), %s" % label)
    progress("live layer on %s" % label)
    sessions = []

    def stop_session(session):
        sessions.remove(session)
        rc = session.close()
        if rc not in (0, None):
            table.note("mcp session on %s (live section), after stdin closed: %s" % (
                label, rc if isinstance(rc, str) else exit_text(rc)))

    try:
        # -- request p50, watching vs --no-watch, both sessions initialized, interleaved
        names = ["%s p50, watching vs --no-watch" % m for m in ("ping", "resources/read")]
        try:
            watch = open_session([PYTHON, PYZ, "mcp"], repo)
            sessions.append(watch)
            fixed = open_session([PYTHON, PYZ, "mcp", "--no-watch"], repo)
            sessions.append(fixed)
        except NotAvailable as e:
            for name in names:
                table.na(name, str(e), "<= +0.05 ms")
            return
        for name, method, params in ((names[0], "ping", None),
                                     (names[1], "resources/read", {"uri": RULE_URI})):
            progress("live on %s: %s x%d" % (label, name, reps))
            try:
                with one_cpu([watch, fixed]) as pinned:
                    times = interleave_calls([(watch, method, params),
                                              (fixed, method, params)], reps)
            except (ChildGone, NotAvailable) as e:
                table.na(name, str(e), "<= +0.05 ms")
                continue
            w, f = p50(times[0]), p50(times[1])
            table.row(name, "%s vs %s: %+.3f ms (p95 %s vs %s, n=%d)" % (
                fmt_ms(w), fmt_ms(f), (w - f) * 1000, fmt_ms(p95(times[0])),
                fmt_ms(p95(times[1])), len(times[0])), "<= +0.05 ms", w - f <= 0.00005)
        stop_session(fixed)
        table.note("watching vs --no-watch: two sessions on one repository, both initialized "
                   "(the watching one runs its idle timer), their requests interleaved%s" % (
                       "; the benchmark and both sessions pinned to one CPU while they run, so "
                       "that neither pays a cross-CPU wake-up the other does not" if pinned
                       else "; not pinned to one CPU (this platform cannot)"))

        # -- idle CPU of the initialized (listening) session: no requests in the window
        if big:
            name = "idle CPU, initialized session, no requests, %.0f s" % window
            if quick:
                table.note("idle CPU: --quick watches the idle session for %.0f s, the full "
                           "run for 60 s" % window)
            progress("live on %s: idle for %.0f s" % (label, window))
            try:
                before = watch.perf()
                watch.drain(1.0)
                c0, t0 = proc_cpu(watch.pid), time.monotonic()
                watch.drain(window)
                c1, t1 = proc_cpu(watch.pid), time.monotonic()
                after = watch.perf()
            except (OSError, ValueError, IndexError) as e:
                table.na(name, "no /proc/<pid>/stat: %s" % e, "<= 1 %")
            except (ChildGone, NotAvailable) as e:
                table.na(name, str(e), "<= 1 %")
            else:
                share = (c1 - c0) / (t1 - t0)
                table.row(name, "%.2f %% of one core (cpu %s in %.1f s)" % (
                    share * 100, fmt_ms(c1 - c0), t1 - t0), "<= 1 %", share <= 0.01)
                n, total = phase_delta(before, after, "sweep")
                sweeps = "  sweeps in that window (and the closing perf request's)"
                if n:
                    table.row(sweeps, "%s mean of %d (phases.sweep)" % (fmt_ms(total / n), n))
                else:
                    table.row(sweeps, "none in %.0f s" % (t1 - t0))

        # -- a staged new rule -> notifications/resources/list_changed on the idle session
        goal = 5.0 if big else 2.0
        name = "git add of a new rule -> resources/list_changed (idle)"
        target = "<= %.0f s" % goal
        progress("live on %s: %d notifications" % (label, notices))
        waits, missing = [], 0
        folder = os.path.join(repo, ".ai", "repo", "rules", "project")
        try:
            os.makedirs(folder, exist_ok=True)
            for r in range(notices):
                rule = "bench-live-%02d" % r
                relative = ".ai/repo/rules/project/%s.v1.md" % rule
                with open(os.path.join(repo, relative), "w", encoding="utf-8",
                          newline="\n") as f:
                    f.write(live_rule(rule))
                watch.drain(0.3)
                watch.notices = []
                t0 = time.perf_counter()
                git(repo, "add", "--", relative)
                at = watch.wait_notice("notifications/resources/list_changed", goal * 3)
                if at is None:
                    missing += 1
                else:
                    waits.append(at - t0)
        except (ChildGone, OSError, RuntimeError) as e:
            table.na(name, str(e), target)
        else:
            if not waits:
                table.row(name, "none arrived within %.0f s (n=%d)" % (goal * 3, notices),
                          target, False)
            else:
                value = "median %s, max %s (n=%d)" % (fmt_ms(p50(waits)),
                                                       fmt_ms(max(waits)), len(waits))
                if missing:
                    value += "; %d never arrived within %.0f s" % (missing, goal * 3)
                table.row(name, value, target, not missing and max(waits) <= goal)
            table.note("notification latency: from just before `git add` of a new rule "
                       "file (written just before) to the notification line read on an "
                       "initialized session that sends no requests")
        stop_session(watch)
        if not big:
            return

        # -- sessions that are not listeners (no notifications/initialized: no idle
        #    timer), so that every sweep and rebuild below is a request's; this build's
        #    and the previous version's, on the same repository, the same edits
        sweep_name = "one sweep, 10,000 files (requests %.1f s apart)" % SWEEP_GAP
        build_name = "one edited rule among 10,000 -> new generation built"
        found_name = "  the request that found the edit (sweep+rebuild+answer)"
        old_sweep_name = "%s one sweep, 10,000 files (previous)" % OLD_COMMIT
        old_build_name = "%s one edited rule -> new generation (previous)" % OLD_COMMIT
        vs_sweep = "§24 one sweep, 10,000 files unchanged: this build / %s" % OLD_COMMIT
        vs_build = "§23 one edited rule -> new generation: this build / %s" % OLD_COMMIT
        vs_target = "<= 1.05x (unchanged or better)"
        try:
            quiet = open_session([PYTHON, PYZ, "mcp"], repo, initialized=False)
            sessions.append(quiet)
        except NotAvailable as e:
            for n, t in ((sweep_name, "<= 30 ms"), (build_name, "<= 150 ms"), (found_name, "-")):
                table.na(n, str(e), t)
            return
        old = None
        if old_pyz:
            try:
                old = open_session([PYTHON, old_pyz, "mcp"], repo, initialized=False)
                sessions.append(old)
            except NotAvailable as e:
                old_reason = "%s session: %s" % (OLD_COMMIT, e)
        pair = [("new", quiet)] + ([("old", old)] if old else [])
        progress("live on %s: %d sweeps, %d edits (%s)" % (label, rounds, rounds,
                                                            "both builds" if old else "this build"))
        sweeps = {}
        try:
            befores = {tag: session.perf() for tag, session in pair}
            walls = []
            for r in range(rounds):
                time.sleep(SWEEP_GAP)
                for tag, session in (pair if r % 2 == 0 else pair[::-1]):
                    t = session.call("ping")[0]
                    if tag == "new":
                        walls.append(t)
            for tag, session in pair:
                sweeps[tag] = phase_delta(befores[tag], session.perf(), "sweep")
        except (ChildGone, NotAvailable) as e:
            table.na(sweep_name, str(e), "<= 30 ms")
        else:
            n, total = sweeps["new"]
            if not n:
                table.row(sweep_name, "no sweep counted (n=%d requests)" % rounds,
                          "<= 30 ms", False)
            else:
                table.row(sweep_name, "%s mean of %d (phases.sweep); those pings %s p50" % (
                    fmt_ms(total / n), n, fmt_ms(p50(walls))), "<= 30 ms", total / n <= 0.030)
            if "old" in sweeps and sweeps["old"][0]:
                on, ot = sweeps["old"]
                table.row(old_sweep_name, "%s mean of %d (phases.sweep)" % (fmt_ms(ot / on), on))
                if n:
                    ratio = (total / n) / (ot / on)
                    table.row(vs_sweep, "%.2fx (%s vs %s)" % (ratio, fmt_ms(total / n),
                                                              fmt_ms(ot / on)),
                              vs_target, ratio <= 1.05)
            else:
                table.na(vs_sweep, old_reason or "no sweep of the previous build", vs_target)

        measured = {tag: {"builds": [], "parts": [], "found": [], "files": []}
                    for tag, _ in pair}
        problems = []
        try:
            for r in range(rounds):
                number = (4242 + 997 * r) % GEN_RULES
                path = os.path.join(folder, "gen-%05d.v1.md" % number)
                uri = "majordomus://rule/project.gen-%05d@1" % number
                marker = "Edited by the benchmark, round %d." % r
                befores = {tag: session.perf() for tag, session in pair}
                with open(path, "a", encoding="utf-8", newline="\n") as f:
                    f.write(marker + "\n")
                time.sleep(SWEEP_GAP)
                for tag, session in (pair if r % 2 == 0 else pair[::-1]):
                    t, line = session.call("resources/read", {"uri": uri})
                    after = session.perf()
                    before = befores[tag]
                    if marker.encode("utf-8") not in line:
                        problems.append("%s round %d: the read did not show the edit" % (tag, r))
                    if after["generation"] - before["generation"] != 1:
                        problems.append("%s round %d: generation %d -> %d" % (
                            tag, r, before["generation"], after["generation"]))
                    ni, ti = phase_delta(before, after, "index_build")
                    nr, tr = phase_delta(before, after, "registry_build")
                    nd, _ = phase_delta(before, after, "repository_discovery")
                    if nd:
                        problems.append("%s round %d: discovery ran %d time(s)" % (tag, r, nd))
                    m = measured[tag]
                    m["builds"].append(ti + tr)
                    m["parts"].append((ti, tr))
                    m["found"].append(t)
                    m["files"].append(after["files_read"] - before["files_read"])
        except (ChildGone, NotAvailable, OSError) as e:
            table.na(build_name, str(e), "<= 150 ms")
            table.na(found_name, str(e))
        else:
            for tag, name, target in (("new", build_name, "<= 150 ms"),
                                      ("old", old_build_name, "-")):
                if tag not in measured:
                    continue
                m = measured[tag]
                builds, parts = m["builds"], m["parts"]
                k = builds.index(sorted(builds)[(len(builds) - 1) // 2])
                table.row(name, "%s median (index %s + registry %s; files_read +%d; "
                          "n=%d)" % (fmt_ms(p50(builds)), fmt_ms(parts[k][0]),
                                     fmt_ms(parts[k][1]), m["files"][k], len(builds)),
                          target, p50(builds) <= 0.150 if tag == "new" else None)
                if tag == "new":
                    table.row(found_name, "median %s, max %s wall (n=%d)" % (
                        fmt_ms(p50(m["found"])), fmt_ms(max(m["found"])), len(m["found"])))
            if "old" in measured:
                new_b, old_b = p50(measured["new"]["builds"]), p50(measured["old"]["builds"])
                table.row(vs_build, "%.2fx (%s vs %s)" % (new_b / old_b, fmt_ms(new_b),
                                                          fmt_ms(old_b)),
                          vs_target, new_b / old_b <= 1.05)
            else:
                table.na(vs_build, old_reason or "no previous build", vs_target)
            for problem in problems:
                table.note("edited rule on %s: %s" % (label, problem))
            table.note("sweep and rebuild rows: sessions that sent initialize but not "
                       "notifications/initialized (no listener, so no idle timer): every "
                       "sweep and rebuild is a request's. The rebuild is the index_build + "
                       "registry_build phase deltas of majordomus_perf around the first "
                       "request %.1f s after appending a line to one rule's file; that "
                       "request's wall time also holds its sweep, the stat of every kept "
                       "file and the answer. This build's session and %s's see the same "
                       "edits, their requests alternating in order" % (SWEEP_GAP, OLD_COMMIT))
        stop_session(quiet)
        if old:
            stop_session(old)
    finally:
        for session in list(sessions):
            session.close()


# --------------------------------------------------------------------------- §20-§22

# In-process (python3 -c, the module imported from the archive): the cost of the §20.1
# checks inside index_build, at start-up and in one rebuild. Every check function (and
# ContextTree, which makes the documents' cross checks and tracks expansions) is wrapped by
# a timer; the wrapper's own cost, calibrated on an empty function, is taken off.
CHECKS = r"""
import sys, time, json, statistics
sys.path.insert(0, sys.argv[1])
import majordomus as m
repo, rounds = sys.argv[2], int(sys.argv[3])
acc = [0, 0]
def timed(f):
    def wrapper(*a, **k):
        t0 = time.perf_counter_ns()
        try:
            return f(*a, **k)
        finally:
            acc[0] += time.perf_counter_ns() - t0
            acc[1] += 1
    return wrapper
noop = timed(lambda *a: None)
for _ in range(200000):
    noop(1)
overhead = acc[0] / acc[1]
names = ("check_context_contract", "context_checks", "policy_providers",
         "is_context_convention", "convention_message", "broken_front_is_context")
for name in names:
    setattr(m, name, timed(getattr(m, name)))
Tree = m.ContextTree
class TimedTree(Tree):
    def __init__(self, *a, **k):
        t0 = time.perf_counter_ns()
        try:
            Tree.__init__(self, *a, **k)
        finally:
            acc[0] += time.perf_counter_ns() - t0
            acc[1] += 1
m.ContextTree = TimedTree
def checks():
    return max(0.0, acc[0] - acc[1] * overhead) / 1e9
acc[:] = [0, 0]
counters = m.Counters()
gen, discovered = m.first_generation(repo, "vcs", counters)
start_build = counters.phases["index_build"][1] / 1e9
start_checks, start_calls = checks(), acc[1]
claims, diagnostics, _, listed = discovered
root = gen.root + "/"
signatures = {path: m._stat(root + path) for path, _ in claims}
edited = [path for path, _ in claims if path.endswith("gen-04242.v1.md")] or [claims[-1][0]]
signatures[edited[0]] = None   # read again, as after an edit
builds, shares = [], []
for _ in range(rounds):
    acc[:] = [0, 0]
    t0 = time.perf_counter_ns()
    with m._Building():
        index = m.build_index(gen.decl, claims, diagnostics, counters, gen.index.results,
                              signatures, listed)
    builds.append((time.perf_counter_ns() - t0) / 1e9)
    shares.append(checks())
print(json.dumps({"documents": len(index.context.docs), "objects": len(index.objects),
                  "problems": len(index.context.problems), "overhead_ns": overhead,
                  "start_build": start_build, "start_checks": start_checks,
                  "start_calls": start_calls,
                  "rebuild": statistics.median(builds), "rebuild_checks": statistics.median(shares),
                  "rebuild_calls": acc[1]}))
"""

# In-process: the term index of a 10,000-rule layer, its build time and its memory
# (tracemalloc), and the bytes of the text it indexes.
TERMS = r"""
import sys, time, json, gc, tracemalloc
sys.path.insert(0, sys.argv[1])
import majordomus as m
gen = m.first_generation(sys.argv[2], "vcs", m.Counters())[0]
objects = gen.index.objects
content = sum(len(o.content.encode("utf-8")) for o in objects)
indexed = sum(len(t.encode("utf-8")) for o in objects for t in m._search_fields(o))
t0 = time.perf_counter_ns()
index = m.TermIndex(objects)   # timed untraced: tracemalloc slows every allocation
built = (time.perf_counter_ns() - t0) / 1e9
del index
gc.collect()
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
index = m.TermIndex(objects)
after_build = tracemalloc.get_traced_memory()[0] - base
for n in range(200):
    index.postings(m.query_terms("gen-%05d rule group%02d line %d"
                                 % (n * 37, n % 50, n))[0])
after_queries = tracemalloc.get_traced_memory()[0] - base
tracemalloc.stop()
print(json.dumps({"objects": len(objects), "content": content, "indexed": indexed,
                  "built": built, "memory": after_build, "memory_queries": after_queries}))
"""


# --------------------------------------------------------------------------- §33 rows
# `context affected` and `check-sync` (SPEC §33), in one function of their own: a copy of
# real-latest with a change set of 20 files, the capabilities executed in-process (the
# module from the archive) beside `git diff --name-status` run the same way, interleaved.

CONTEXT_SYNC = r"""
import sys, time, json, statistics
sys.path.insert(0, sys.argv[1])
import majordomus as m
repo, reps = sys.argv[2], int(sys.argv[3])
gen = m.first_generation(repo, "vcs", m.Counters())[0]
def clock(f):
    t0 = time.perf_counter_ns()
    value = f()
    return (time.perf_counter_ns() - t0) / 1e9, value
first_sync, sync = clock(lambda: gen.execute("context.sync", {}))
first_affected, affected = clock(lambda: gen.execute("context.affected", {}))
times = {"diff": [], "diff_m_head": [], "affected": [], "sync": []}
for _ in range(reps):
    times["diff"].append(clock(lambda: m._git(repo, "diff", "--name-status"))[0])
    times["affected"].append(clock(lambda: gen.execute("context.affected", {}))[0])
    times["diff_m_head"].append(clock(lambda: m._git(repo, "diff", "--name-status", "-M",
                                                     "HEAD"))[0])
    times["sync"].append(clock(lambda: gen.execute("context.sync", {}))[0])
changes = m.context_changes(repo, "worktree")[0]
print(json.dumps({"first_sync": first_sync, "first_affected": first_affected,
                  "p50": {k: statistics.median(v) for k, v in times.items()},
                  "changes": len(changes), "findings": len(affected["findings"]),
                  "affected": affected["affected"], "status": sync["status"],
                  "fast": m._status_changes(m._git_lines(m._git(
                      repo, "status", "--porcelain=v2", "--branch", "--renames",
                      "-uall"))) is not None}))
"""


def context_sync_repo(tmp):
    """real-latest with its stand-ins, two provider templates committed, then a change set
    of 20 files: documents modified, moved, added and deleted; the manifest and the policy;
    a projection edited; tracked stand-ins; untracked files. None without the fixture."""
    real = make_real_latest(os.path.join(tmp, "sync"))
    if real is None:
        return None
    for name in ("agents", "claude-code"):
        with open(_mkdirs_for(os.path.join(real, ".ai", "repo", "providers", name + ".tmpl")),
                  "w") as f:
            f.write("# %s\n" % name)
    git(real, "add", "-A")
    git(real, "commit", "-q", "--no-gpg-sign", "-m", "templates")
    appended = [".ai/repo/rules/README.md", ".ai/repo/skills/README.md",
                ".ai/repo/knowledge/curated/README.md", ".ai/manifest.yaml",
                ".ai/repo/policy.yaml", "AGENTS.md", "docs/SHELL.md", "lib/rules.sh",
                "lib/prompt.sh", "lib/doctrine.sh", "lib/check.sh", "share/allow/prompt.txt",
                "docs/claims/adr-propose.md"]
    for rel in appended:
        with open(os.path.join(real, rel), "a") as f:
            f.write("\n# changed for the benchmark\n")
    git(real, "mv", ".ai/repo/prompts/README.md", ".ai/repo/prompts/guide.md")
    git(real, "mv", ".ai/repo/workflows/README.md", ".ai/repo/knowledge/curated/flows.md")
    git(real, "rm", "-q", ".ai/repo/applications/README.md")
    for rel, text in ((".ai/repo/rules/project/notes.md", "---\nschema: context/v1\nid: "
                       "ai.repo.rules.project.notes\nkind: context\ntitle: Notes\ndescription: "
                       "Notes.\nstatus: active\nscope: subtree\nproviders: [\"*\"]\n"
                       "composition: extend\norder: 100\n---\n# Notes\n"),
                      ("docs/new-page.md", "# new\n"), ("lib/new.sh", "echo new\n"),
                      ("share/new.txt", "new\n")):
        _mkdirs_for(os.path.join(real, rel))
        with open(os.path.join(real, rel), "w") as f:
            f.write(text)
    git(real, "add", ".ai/repo/rules/project/notes.md", "docs/new-page.md")
    return real


def _mkdirs_for(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def section_context_sync(table, tmp, reps):
    """§33: `context affected` on real-latest with a 20-file change set, p50 <= 1.2x `git
    diff --name-status` alone; `check-sync` p50 after the first <= 5 ms."""
    table.section("context affected and check-sync (SPEC §33): in-process, real-latest")
    affected_name = "context affected, 20-file change set, p50 vs git diff --name-status"
    sync_name = "context check-sync, p50 after the first"
    progress("context affected and check-sync on real-latest")
    try:
        repo = context_sync_repo(tmp)
        if repo is None:
            raise NotAvailable("no fixture at %s" % REAL_LATEST)
        r = inprocess(CONTEXT_SYNC, repo, reps)
    except (NotAvailable, RuntimeError, OSError) as e:
        table.na(affected_name, str(e), "<= 1.2x")
        table.na(sync_name, str(e), "<= 5 ms")
        return
    p = r["p50"]
    ratio = p["affected"] / p["diff"]
    table.row(affected_name, "%s vs %s (%.2fx; -M HEAD alone %s; %d changes, %d findings, "
              "%s)" % (fmt_ms(p["affected"]), fmt_ms(p["diff"]), ratio,
                       fmt_ms(p["diff_m_head"]), r["changes"], r["findings"],
                       "one git status" if r["fast"] else "two git commands"),
              "<= 1.2x", ratio <= 1.2)
    table.row(sync_name, "%s (first %s; %s; n=%d)" % (fmt_ms(p["sync"]),
                                                      fmt_ms(r["first_sync"]), r["status"], reps),
              "<= 5 ms", p["sync"] <= 0.005)


def inprocess(script, *args):
    """Run an in-process script (python3 -c, module from the archive): its JSON line."""
    p = subprocess.run([PYTHON, "-c", script, PYZ] + [str(a) for a in args],
                       env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=SPAWN_TIMEOUT * 3)
    if p.returncode != 0:
        raise NotAvailable("%s: %s" % (exit_text(p.returncode), last_line(p.stderr)))
    try:
        return json.loads(last_line(p.stdout, 100000))
    except ValueError:
        raise NotAvailable("no JSON line: %s" % last_line(p.stdout))


def context_targets(repo, limit):
    """Paths to resolve: every directory under .ai/ and the tracked files outside it,
    interleaved, at most `limit` (sorted, so the same in every run)."""
    listed = git(repo, "ls-files").splitlines()
    dirs, outside = set(), []
    for path in listed:
        if path.startswith(".ai/"):
            parts = path.split("/")[:-1]
            for k in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:k]))
        else:
            outside.append(path)
    dirs = sorted(dirs)
    out = []
    for k in range(max(len(dirs), len(outside))):
        if k < len(dirs):
            out.append(dirs[k])
        if k < len(outside) and k % 4 == 0:
            out.append(outside[k])
    return out[:limit]


def section_context(table, repo, label, reps, firsts):
    """§20: majordomus_context on one session: the first call of the generation (a fresh
    session each, after tools/list), then distinct paths and one repeated path."""
    first_name = "majordomus_context, first of the generation (%s)" % label
    distinct_name = "majordomus_context, distinct paths, p50 / p95 (%s)" % label
    repeat_name = "majordomus_context, one path repeated, p50 / p95 (%s)" % label
    progress("context on %s" % label)
    try:
        targets = context_targets(repo, 400)
    except RuntimeError as e:
        for name in (first_name, distinct_name, repeat_name):
            table.na(name, str(e))
        return
    deepest = sorted(targets, key=lambda t: (-t.count("/"), t))
    session = None
    try:
        firsts_t, sample, session = first_calls(repo, "majordomus_context", lambda k: {
            "path": deepest[k % len(deepest)]}, firsts)
        table.row(first_name, "median %s, max %s (n=%d; %d documents in the chain)" % (
            fmt_ms(p50(firsts_t)), fmt_ms(max(firsts_t)), len(firsts_t),
            len(sample.get("documents", []))), "<= 20 ms", p50(firsts_t) <= 0.020)
        times, chains = [], 0
        for i in range(WARMUP + reps):
            path = targets[(firsts + i) % len(targets)]
            t, value = session.tool("majordomus_context", {"path": path})
            chains += len(value.get("documents", []))
            if i >= WARMUP:
                times.append(t)
        table.row(distinct_name, "%s (%d paths, mean chain %.1f)" % (
            lat(times), min(len(targets), WARMUP + reps), chains / (WARMUP + reps)),
            "p50 <= 1 ms", p50(times) <= 0.001)
        times = []
        for i in range(WARMUP + reps):
            t, _ = session.tool("majordomus_context", {"path": targets[-1]})
            if i >= WARMUP:
                times.append(t)
        table.row(repeat_name, lat(times), "p50 <= 1 ms", p50(times) <= 0.001)
    except (NotAvailable, ChildGone) as e:
        for name in (first_name, distinct_name, repeat_name):
            if not any(r[0] == "row" and r[1] == name for r in table.rows):
                table.na(name, str(e))
    finally:
        if session is not None:
            session.close()


def first_calls(repo, tool, arguments_of, count):
    """The first call of `tool` in a generation, `count` times, each in a fresh `mcp`
    session after tools/list (arguments_of(k) the k-th's arguments): (their times, the last
    answer, the last session, still open; every other is closed, also on failure)."""
    times, value, session = [], None, None
    try:
        for k in range(count):
            if session is not None:
                session.close()
            session = open_session([PYTHON, PYZ, "mcp"], repo)
            session.call("tools/list")
            t, value = session.tool(tool, arguments_of(k))
            times.append(t)
    except BaseException:
        if session is not None:
            session.close()
        raise
    return times, value, session


BRIEF_INTENTS = ["add a rule about commit messages", "fix a bug in the handover",
                 "write a new test", None, "change the checkpoint interval"]


def section_brief(table, repo, label, reps, firsts, first_goal, goal):
    """§26: majordomus_brief on one session: the first call of the generation (a fresh
    session each, after tools/list), then distinct paths (half of them new files), with
    and without an intent."""
    first_name = "majordomus_brief, first of the generation (%s)" % label
    distinct_name = "majordomus_brief, distinct paths, p50 / p95 (%s)" % label
    progress("brief on %s" % label)
    try:
        targets = context_targets(repo, 400)
    except RuntimeError as e:
        table.na(first_name, str(e))
        table.na(distinct_name, str(e))
        return
    targets = [t if k % 2 else t + "/new_file_%d.md" % k for k, t in enumerate(targets)]

    def arguments(k):
        out = {"path": targets[k % len(targets)]}
        intent = BRIEF_INTENTS[k % len(BRIEF_INTENTS)]
        if intent:
            out["intent"] = intent
        return out
    session = None
    try:
        firsts_t, sample, session = first_calls(repo, "majordomus_brief", arguments, firsts)
        text = "median %s, max %s (n=%d; %d of %d lines, %d rules)" % (
            fmt_ms(p50(firsts_t)), fmt_ms(max(firsts_t)), len(firsts_t),
            sample["used_lines"], sample["budget_lines"], len(sample["rules"]))
        if first_goal is None:
            table.row(first_name, text)
        else:
            table.row(first_name, text, "<= %d ms" % (first_goal * 1000),
                      p50(firsts_t) <= first_goal)
        times, lines = [], 0
        for i in range(WARMUP + reps):
            t, value = session.tool("majordomus_brief", arguments(firsts + i))
            lines += value["used_lines"]
            if i >= WARMUP:
                times.append(t)
        table.row(distinct_name, "%s (%d paths, mean %.0f lines)" % (
            lat(times), min(len(targets), WARMUP + reps), lines / (WARMUP + reps)),
            "p50 <= %d ms" % (goal * 1000), p50(times) <= goal)
    except (NotAvailable, ChildGone, KeyError) as e:
        for name in (first_name, distinct_name):
            if not any(r[0] == "row" and r[1] == name for r in table.rows):
                table.na(name, str(e))
    finally:
        if session is not None:
            session.close()


def section_brief_quality(table):
    """§26, §29: tests/brief_quality.py's figures, its line printed."""
    progress("brief quality")
    script = os.path.join(ROOT, "tests", "brief_quality.py")
    try:
        p = subprocess.run([PYTHON, script], cwd=ROOT, env=child_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        line = p.stdout.decode("utf-8", "replace").strip()
        if line.startswith("brief quality: skipped"):       # no reference data here
            raise NotAvailable(line[len("brief quality: "):])
        m = re.search(r"recall ([\d.]+) .*mean ([\d.]+) lines, mean ([\d.]+) characters", line)
        precision = re.search(r"precision ([\d.]+)", line)
        if p.returncode != 0 or not m:
            raise NotAvailable("%s: %s" % (exit_text(p.returncode), line or last_line(p.stderr)))
    except (OSError, subprocess.TimeoutExpired, NotAvailable) as e:
        table.na("brief quality (tests/brief_quality.py)", str(e), "recall >= 0.95")
        return
    recall = float(m.group(1))
    table.row("brief quality: recall within the default budget", "%.3f (%s)" % (
        recall, line), ">= 0.95", recall >= 0.95)
    if precision:       # §29: of what the text shows in full, the share that must be seen
        table.row("brief quality: precision within the default budget", precision.group(1),
                  ">= 0.5", float(precision.group(1)) >= 0.5)
    table.row("brief quality: mean lines, mean characters", "%s lines, %s characters" % (
        m.group(2), m.group(3)), "<= 6000 characters", float(m.group(3)) <= 6000)


def section_context_checks(table, repo, plain, rounds):
    """§20.1's checks: their share of index_build at start-up and in one rebuild."""
    progress("context checks in-process x%d" % rounds)
    for where, label in ((repo, "10,000 rules + %d context documents" % CONTEXT_DOCS),
                         (plain, "10,000 rules, no context document")):
        start_name = "§20.1 checks at start-up, %s" % label
        build_name = "§20.1 checks in one rebuild, %s" % label
        try:
            r = inprocess(CHECKS, where, rounds)
        except NotAvailable as e:
            table.na(start_name, str(e), "<= 5% of index_build")
            table.na(build_name, str(e), "<= 5% of index_build")
            continue
        share = r["start_checks"] / r["start_build"]
        table.row(start_name, "%s of index_build %s (%.1f %%; %d calls)" % (
            fmt_ms(r["start_checks"]), fmt_ms(r["start_build"]), share * 100,
            r["start_calls"]), "<= 5% of index_build", share <= 0.05)
        share = r["rebuild_checks"] / r["rebuild"]
        table.row(build_name, "%s of index_build %s (%.1f %%; median of %d)" % (
            fmt_ms(r["rebuild_checks"]), fmt_ms(r["rebuild"]), share * 100, rounds),
            "<= 5% of index_build", share <= 0.05)
        if where == repo:
            table.note("§20.1 checks: in-process (python3 -c, the module from the archive): "
                       "check_context_contract, context_checks (context_lists_problem and "
                       "ContextDoc), policy_providers, "
                       "is_context_convention, convention_message, broken_front_is_context "
                       "and ContextTree (documents, cross checks, tracks expansions) timed "
                       "by wrappers, their cost (%.0f ns a call) taken off; the rebuild is "
                       "build_index with the previous results and one file's signature "
                       "changed; the tree: %d documents, %d problems" % (
                           r["overhead_ns"], r["documents"], r["problems"]))


SEARCH_WORDS = ("rule", "group", "quick", "fox", "lazy", "dog", "task", "reads", "cites",
                "validator", "enforced", "contributor", "behaviour", "filler", "shape")


def distinct_query(i):
    """A distinct ranked query each time: a rule's number and two words of the bodies."""
    return "gen-%05d %s %s" % ((i * 7919 + 17) % GEN_RULES,
                               SEARCH_WORDS[i % len(SEARCH_WORDS)],
                               SEARCH_WORDS[(i // len(SEARCH_WORDS) + 3) % len(SEARCH_WORDS)])


def section_search(table, big, reps, firsts):
    table.section("ranked search (SPEC §21), 10,000 rules")
    progress("ranked search on 10,000 rules")
    first_name = "first ranked search (term index built), 10,000 rules"
    distinct_name = "ranked majordomus_search, distinct queries, p50 / p95"
    session = None
    try:
        firsts_t = []
        for k in range(firsts):
            if session is not None:
                session.close()
            session = open_session([PYTHON, PYZ, "mcp"], big)
            session.call("tools/list")
            t, value = session.tool("majordomus_search", {"query": "how does a task cite "
                                                                   "the rules %d" % k})
            if value.get("mode") != "ranked":
                raise NotAvailable("the answer is not ranked (mode %r)" % value.get("mode"))
            firsts_t.append(t)
        table.row(first_name, "median %s, max %s (n=%d, a fresh session each)" % (
            fmt_ms(p50(firsts_t)), fmt_ms(max(firsts_t)), len(firsts_t)), "<= 150 ms",
            p50(firsts_t) <= 0.150)
        times, counts = [], []
        for i in range(WARMUP + reps):
            t, value = session.tool("majordomus_search", {"query": distinct_query(i)})
            if i >= WARMUP:
                times.append(t)
                counts.append(value.get("total") or value.get("count") or 0)
        table.row(distinct_name, "%s (median total %d)" % (lat(times), p50(counts)),
                  "p50 <= 10 ms", p50(times) <= 0.010)
    except (NotAvailable, ChildGone) as e:
        for name in (first_name, distinct_name):
            if not any(r[0] == "row" and r[1] == name for r in table.rows):
                table.na(name, str(e))
    finally:
        if session is not None:
            session.close()
    name = "term index memory / indexed text bytes (tracemalloc)"
    try:
        r = inprocess(TERMS, big)
    except NotAvailable as e:
        table.na(name, str(e), "<= 1.5x")
    else:
        ratio = r["memory"] / r["indexed"]
        table.row(name, "%.2fx (%.1f MB for %.1f MB indexed; %.2fx of content's %.1f MB)" % (
            ratio, r["memory"] / 1e6, r["indexed"] / 1e6, r["memory"] / r["content"],
            r["content"] / 1e6), "<= 1.5x", ratio <= 1.5)
        table.row("  after 200 queries' postings", "%.2fx of indexed (%.1f MB)" % (
            r["memory_queries"] / r["indexed"], r["memory_queries"] / 1e6))
        table.row("  TermIndex build, in-process (untraced)", "%s (%d objects)" % (fmt_ms(r["built"]),
                                                                     r["objects"]))
    table.note("ranked search: the first row is the first majordomus_search of a fresh "
               "session (after initialize and tools/list), the term index made within it; "
               "distinct queries name one generated rule and two words of the bodies "
               "(distinct cache keys); memory is tracemalloc's traced bytes held by "
               "TermIndex(objects) just built, against the UTF-8 bytes of the three "
               "searched fields (identity+title+tags, description, content without front "
               "matter) and of the files' content")
    # quality: tests/search_quality.py's own figures, its lines printed
    progress("search quality")
    script = os.path.join(ROOT, "tests", "search_quality.py")
    try:
        p = subprocess.run([PYTHON, script], cwd=ROOT, env=child_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        lines = [l for l in p.stdout.decode("utf-8", "replace").splitlines() if l.strip()]
        if p.returncode != 0 or not lines:
            raise NotAvailable("%s: %s" % (exit_text(p.returncode), last_line(p.stderr)))
        if lines[0].startswith("search quality: skipped"):     # no reference data here
            raise NotAvailable(lines[0][len("search quality: "):])
    except (OSError, subprocess.TimeoutExpired, NotAvailable) as e:
        table.na("search quality (tests/search_quality.py)", str(e),
                 "MRR@10 >= 0.8, recall@5 >= 0.9")
        return
    pattern = re.compile(r"MRR@10 ([\d.]+), recall@5 ([\d.]+)")
    for line in lines:
        m = pattern.search(line)
        mode, which = (line.split() + ["", ""])[:2]
        if m and mode == "ranked" and which == "all":
            # §21's goal (MRR@10 >= 0.8) raised by §26: the brief's intent is a sentence
            mrr, r5 = float(m.group(1)), float(m.group(2))
            table.row("quality, ranked: MRR@10, every question", "%.3f (%s)" % (
                mrr, line.strip()), ">= 0.9", mrr >= 0.9)
            table.row("quality, ranked: recall@5, every question", "%.3f" % r5, ">= 0.9",
                      r5 >= 0.9)
        elif m and mode == "ranked" and which == "natural":
            mrr = float(m.group(1))
            table.row("quality, ranked: MRR@10, natural questions", "%.3f (%s)" % (
                mrr, line.strip()), ">= 0.85", mrr >= 0.85)
        elif m and mode == "unseen" and line.split()[1:3] == ["ranked", "all"]:
            # §29: questions written before the tuning and never tuned on
            mrr = float(m.group(1))
            table.row("quality, ranked: MRR@10, unseen questions", "%.3f (%s)" % (
                mrr, line.strip()), ">= 0.9", mrr >= 0.9)
        else:
            table.row("quality, %s" % mode, line.strip())


def section_ui(table, big, reps, runs, old_pyz, old_reason):
    """§22: pages on 10,000 rules, and serve's start-up (spawn -> first JSON answer)
    beside the previous version's."""
    table.section("pages (SPEC §22), serve on 10,000 rules: p50 / p95, one keep-alive "
                  "connection")
    progress("pages on 10,000 rules")
    names = [("GET /ui/ (overview)", "/ui/", "p50 <= 5 ms", 0.005),
             ("GET /ui/object?uri=<rule>, distinct rules", None, "p50 <= 3 ms", 0.003),
             ("GET /ui/object?uri=<rule>, one rule repeated",
              "/ui/object?uri=" + urllib.parse.quote(RULE_URI, safe=""), "p50 <= 3 ms", 0.003),
             ("GET /ui/kind/rule (a page of 50)", "/ui/kind/rule", "-", None)]
    try:
        server = Server(big)
    except NotAvailable as e:
        for name, _, target, _ in names:
            table.na(name, str(e), target)
        server = None
    if server is not None:
        conn = server.connect()
        try:
            for name, path, target, limit in names:
                def path_of(i):
                    if path is not None:
                        return path
                    uri = "majordomus://rule/project.gen-%05d@1" % ((i * 7919 + 5) % GEN_RULES)
                    return "/ui/object?uri=" + urllib.parse.quote(uri, safe="")
                times, first, size, err = time_gets(conn, path_of, reps)
                if err:
                    table.na(name, err, target)
                    continue
                table.row(name, "%s after the first (first %s; %d bytes)" % (
                    lat(times), fmt_ms(first), size), target,
                    None if limit is None else p50(times) <= limit)
        except (OSError, http.client.HTTPException) as e:
            table.na("pages", "%s: %s" % (type(e).__name__, e))
        finally:
            conn.close()
            server.stop()
    # serve start-up: spawn -> first /api/v1/repository answer, interleaved with 0436a0f
    n = max(3, runs // 2)
    progress("serve start-up x%d" % n)
    specs = [("serve spawn -> first /api/v1/repository answer, 10,000 rules", PYZ, False),
             ("serve spawn -> first /ui/ answer, 10,000 rules", PYZ, True)]
    if old_pyz:
        specs.append(("%s serve spawn -> first /api/v1/repository answer (previous)"
                      % OLD_COMMIT, old_pyz, False))
    figures = [[] for _ in specs]
    failed = {}
    for i in range(n + 1):
        order = list(range(len(specs)))
        if i % 2:
            order.reverse()
        for k in order:
            if k in failed:
                continue
            _, pyz, ui = specs[k]
            try:
                server = Server(big, pyz)
            except NotAvailable as e:
                failed[k] = str(e)
                continue
            try:
                conn = server.connect()
                status, body, _ = http_get(conn, "/ui/" if ui else "/api/v1/repository")
                t = time.perf_counter() - server.t_spawn
                conn.close()
                if status != 200:
                    failed[k] = "HTTP %d: %s" % (status, first_line(body))
                elif i:
                    figures[k].append(t)
            except (OSError, http.client.HTTPException) as e:
                failed[k] = "%s: %s" % (type(e).__name__, e)
            finally:
                server.stop()
    medians = []
    for k, (name, _, _) in enumerate(specs):
        if k in failed or not figures[k]:
            table.na(name, failed.get(k, "no run"))
            medians.append(None)
        else:
            medians.append(p50(figures[k]))
            table.row(name, "median %s (n=%d)" % (fmt_ms(medians[k]), len(figures[k])))
    name = "§22 serve start-up (first JSON answer): this build / %s" % OLD_COMMIT
    target = "<= 1.05x (pages add nothing)"
    if not old_pyz or medians[0] is None or medians[-1] is None:
        table.na(name, old_reason or "a figure is missing", target)
    else:
        ratio = medians[0] / medians[-1]
        table.row(name, "%.2fx (%s vs %s)" % (ratio, fmt_ms(medians[0]), fmt_ms(medians[-1])),
                  target, ratio <= 1.05)
    table.note("pages: the first request of each page row is shown apart (the page "
               "projection is built on first use); serve start-up is from Popen to the "
               "answer of the first request, sent as soon as the 'listening on' line is "
               "read (stderr polled every 2 ms)")


def time_gets(conn, path_of, reps, is_page=lambda path: True):
    """GET path_of(i) for i in 0..reps on one connection: (the times after the first, the
    first, the last body's size, None), or the error that stopped it (an answer not 200,
    or not a page where `is_page(path)`) in the last place."""
    times, first, size = [], None, 0
    for i in range(1 + reps):
        t0 = time.perf_counter()
        status, body, _ = http_get(conn, path_of(i))
        t = time.perf_counter() - t0
        if status != 200 or (b"<html" not in body[:400].lower() and is_page(path_of(i))):
            return times, first, size, "HTTP %d: %s" % (status, first_line(body))
        if i == 0:
            first = t
        else:
            times.append(t)
        size = len(body)
    return times, first, size, None


def section_pages_real(table, real, reps):
    """Issue 28: every page of §22 on real-latest (its tracks stood in for, so that its
    context tree validates), over one keep-alive connection: p50 / p95 after each page's
    first request (its first request shown apart); the context page (the brief, the
    resolution and their HTML) beside the brief alone (GET /api/v1/brief)."""
    table.section("pages on real-latest (SPEC §22, issue 28): p50 / p95 after the first, one "
                  "keep-alive connection")
    target, limit = "p50 <= 5 ms", 0.005
    if not real:
        table.na("pages, real-latest", "no fixture at %s" % REAL_LATEST, target)
        return
    progress("pages on real-latest")
    questions = []
    try:
        with open(os.path.join(ROOT, "tests", "search_questions.json"), encoding="utf-8") as f:
            questions = [q["q"] for q in json.load(f)["questions"]]
    except (OSError, ValueError, KeyError):
        pass
    questions = questions or ["context documents", "how do I hand over a session"]
    paths = context_targets(real, 60)
    one = ".ai/repo/rules/project/english-only.v2.md"
    q = lambda text: urllib.parse.quote(text, safe="")  # noqa: E731
    try:
        server = Server(real)
    except NotAvailable as e:
        table.na("pages, real-latest", str(e), target)
        return
    conn = server.connect()
    try:
        status, body, _ = http_get(conn, "/api/v1/objects?limit=200")
        objects = [o["uri"] for o in json.loads(body.decode("utf-8"))["objects"]]
        rules = [u for u in objects if u.startswith("majordomus://rule/")]
        # A row asks one path `reps` times after a first (a function of the request's
        # number), or each path of a list once (a page's first render each time).
        created = [p + "/new-file-%d.md" % i for i, p in enumerate(paths * 8)
                   if p.startswith(".ai")][:reps]
        rows = [("GET /ui/ (overview)", lambda i: "/ui/"),
                ("GET /ui/kind/rule (64 rules, a page of 50)", lambda i: "/ui/kind/rule"),
                ("GET /ui/kind/context", lambda i: "/ui/kind/context"),
                ("GET /ui/object?uri=<each object, once>",
                 ["/ui/object?uri=" + q(uri) for uri in objects]),
                ("GET /ui/object?uri=<a rule>, repeated",
                 lambda i: "/ui/object?uri=" + q(rules[0])),
                ("GET /ui/search?q=<%d questions, in turn>" % len(questions),
                 lambda i: "/ui/search?q=" + q(questions[i % len(questions)])),
                ("GET /ui/search?q=<question>&kind=rule",
                 lambda i: "/ui/search?kind=rule&q=" + q(questions[i % len(questions)])),
                ("GET /ui/capabilities (a page of 100)", lambda i: "/ui/capabilities"),
                ("GET /ui/diagnostics", lambda i: "/ui/diagnostics"),
                ("GET /ui/context?path=<each of %d paths, once>" % len(paths),
                 ["/ui/context?path=" + q(p) for p in paths]),
                ("GET /ui/context?path=<each of %d new files, once>" % len(created),
                 ["/ui/context?path=" + q(p) for p in created]),
                ("GET /ui/context?path=<one file>, repeated",
                 lambda i: "/ui/context?path=" + q(one)),
                ("GET /api/v1/brief?path=<each of %d other new files, once> (the brief alone)"
                 % len(created), ["/api/v1/brief?path=" + q(p.replace("new-file", "other"))
                                  for p in created]),
                ("GET /api/v1/brief?path=<one file>, repeated (the brief alone)",
                 lambda i: "/api/v1/brief?path=" + q(one))]
        medians = {}
        for name, path_of in rows:
            if isinstance(path_of, list):
                times, err = [], None
                for path in path_of:
                    t0 = time.perf_counter()
                    status, body, _ = http_get(conn, path)
                    times.append(time.perf_counter() - t0)
                    if status != 200:
                        err = "HTTP %d: %s" % (status, first_line(body))
                        break
                if err:
                    table.na(name, err, target)
                else:
                    medians[name] = p50(times)
                    table.row(name, lat(times), target, p50(times) <= limit)
                continue
            times, first, size, err = time_gets(conn, path_of, reps,
                                                lambda path: "/api/" not in path)
            if err:
                table.na(name, err, target)
                continue
            medians[name] = p50(times)
            table.row(name, "%s after the first (first %s; %d bytes)" % (
                lat(times), fmt_ms(first), size), target, p50(times) <= limit)
        for which in ("new files, once", "one file>, repeated"):
            context, brief = (next((m for n, m in medians.items() if n.startswith(start)
                                    and which in n), None)
                              for start in ("GET /ui/context", "GET /api/v1/brief"))
            name = "context page - the brief alone (%s)" % which.replace(">", "")
            if context is None or brief is None:
                table.na(name, "a row is missing", "<= +2 ms")
            else:
                table.row(name, "%+.2f ms (%s vs %s)" % ((context - brief) * 1e3,
                                                         fmt_ms(context), fmt_ms(brief)),
                          "<= +2 ms", context - brief <= 0.002)
    except (OSError, http.client.HTTPException, ValueError) as e:
        table.na("pages, real-latest", "%s: %s" % (type(e).__name__, e), target)
    finally:
        conn.close()
        server.stop()


# --------------------------------------------------------------------------- main

# --------------------------------------------------------------------------- §27

def lease_of(repo, timeout=SPAWN_TIMEOUT):
    """The lease the owner of `repo` has written (SPEC §27), once it has."""
    import hashlib
    path = os.path.join(_RUNTIME[0], "majordomus", hashlib.sha256(
        os.path.realpath(repo).encode("utf-8")).hexdigest()[:16] + ".json")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError):
            time.sleep(0.005)
    raise NotAvailable("no lease written for %s within %d s" % (repo, timeout))


def vm_rss(pid):
    return proc_status_bytes(pid, "VmRSS")


def shared_owner(repo, python=PYTHON):
    """An owner of `repo`'s shared server, initialized, its lease written."""
    owner = open_session([python, PYZ, "mcp"], repo, shared=True)
    lease_of(repo)
    return owner


def shared_bridge(repo, python=PYTHON):
    bridge = open_session([python, PYZ, "mcp"], repo, shared=True)
    if "attached to the shared server" not in bridge.pipe.stderr_text():
        bridge.close()
        raise NotAvailable("the second mcp did not attach: %s"
                           % last_line(bridge.pipe.stderr_text()))
    return bridge


def section_shared(table, skel, real, big, huge, runs, reps):
    """SPEC §27: a read through a bridge beside a standalone server's; spawn -> initialize
    of a bridge, and of an owner, beside a standalone server's; the RSS of three clients
    beside one standalone (real-latest, whose index is small beside an interpreter, and
    10,000 and 20,000 rules, whose index is what sharing saves); kill -9 of the owner -> the
    bridge's next answer."""
    table.section("shared server (SPEC §27): owner, bridges, takeover")
    progress("shared: reads through a bridge")
    read = {"uri": RULE_URI}
    sessions = []
    try:
        alone = open_session([PYTHON, PYZ, "mcp", "--standalone"], skel)
        sessions.append(alone)
        owner = shared_owner(skel)
        sessions.append(owner)
        bridge = shared_bridge(skel)
        sessions.append(bridge)
        times = {"alone": [], "owner": [], "bridge": []}
        for s in (alone, owner, bridge):
            for _ in range(WARMUP):
                s.call("resources/read", read)
        for i in range(reps):
            order = [("alone", alone), ("owner", owner), ("bridge", bridge)]
            for name, s in (order if i % 2 else order[::-1]):
                times[name].append(s.call("resources/read", read)[0])
        extra = p50(times["bridge"]) - p50(times["alone"])
        table.row("resources/read p50, skeleton: standalone", lat(times["alone"]))
        table.row("  the owner's own client", lat(times["owner"]))
        table.row("  through a bridge", "%s; %+.3f ms vs standalone" % (
            lat(times["bridge"]), extra * 1000), "<= +0.5 ms", extra <= 0.0005)
    except (NotAvailable, ChildGone) as e:
        table.na("resources/read through a bridge vs standalone", str(e), "<= +0.5 ms")
    finally:
        for s in reversed(sessions):
            s.close()

    repo, label = (real, "real-latest") if real else (skel, "skeleton")
    initialize = frame(1, "initialize", INITIALIZE)

    def first_answer(argv, shared):
        pipe = Pipe(argv, repo, shared)
        try:
            lines = pipe.transact(initialize, 1, SPAWN_TIMEOUT)
            t = time.perf_counter() - pipe.t_spawn
        finally:
            pipe.close()
        if rpc_error(lines[0]):
            raise NotAvailable("initialize answered %s" % rpc_error(lines[0]))
        return t

    progress("shared: spawn -> initialize of bridges, owners and standalone servers")
    if not real:
        table.na("spawn -> initialize of a bridge vs standalone, real-latest",
                 "no fixture at %s" % REAL_LATEST, "<= 1.0x")
    else:
        try:
            owner = shared_owner(real)
            try:
                walls = {"bridge": [], "alone": []}
                first_answer([PYTHON, PYZ, "mcp"], True)
                first_answer([PYTHON, PYZ, "mcp", "--standalone"], False)
                for i in range(runs):
                    pairs = [("bridge", [PYTHON, PYZ, "mcp"], True),
                             ("alone", [PYTHON, PYZ, "mcp", "--standalone"], False)]
                    for name, argv, shared in (pairs if i % 2 else pairs[::-1]):
                        walls[name].append(first_answer(argv, shared))
            finally:
                owner.close()
            ratio = p50(walls["bridge"]) / p50(walls["alone"])
            table.row("spawn -> initialize, real-latest: a bridge / standalone (n=%d)" % runs,
                      "%.2fx (%s vs %s)" % (ratio, fmt_ms(p50(walls["bridge"])),
                                            fmt_ms(p50(walls["alone"]))), "<= 1.0x",
                      ratio <= 1.0)
        except (NotAvailable, ChildGone) as e:
            table.na("spawn -> initialize of a bridge vs standalone, real-latest", str(e),
                     "<= 1.0x")
    try:
        walls = {"owner": [], "alone": []}
        for i in range(runs + 1):
            pairs = [("owner", [PYTHON, PYZ, "mcp"], True),
                     ("alone", [PYTHON, PYZ, "mcp", "--standalone"], False)]
            for name, argv, shared in (pairs if i % 2 else pairs[::-1]):
                t = first_answer(argv, shared)
                if i:                      # the first round is the warm-up
                    walls[name].append(t)
        ratio = p50(walls["owner"]) / p50(walls["alone"])
        table.row("spawn -> initialize, %s: the owner / standalone (n=%d)" % (label, runs),
                  "%.2fx (%s vs %s)" % (ratio, fmt_ms(p50(walls["owner"])),
                                        fmt_ms(p50(walls["alone"]))),
                  "<= 1.05x (noise)", ratio <= 1.05)
    except (NotAvailable, ChildGone) as e:
        table.na("spawn -> initialize of an owner vs standalone", str(e), "<= 1.05x")

    progress("shared: memory of three clients")
    pythons = [PYTHON] + ([DEBIAN_PYTHON] if os.path.exists(DEBIAN_PYTHON) else [])
    layers = [(repo, label)] + ([(big, "10,000 rules")] if big else []) + (
        [(huge, "%d rules" % BIG_RULES)] if huge else [])
    for python, (where, what) in [(p, l) for l in layers for p in pythons]:
        tag = "" if python == PYTHON else " [%s]" % python
        sessions = []
        try:
            alone = open_session([python, PYZ, "mcp", "--standalone"], where)
            sessions.append(alone)
            one = vm_rss(alone.pid)
            alone.close()
            sessions.remove(alone)
            owner = shared_owner(where, python)
            sessions.append(owner)
            bridges = [shared_bridge(where, python), shared_bridge(where, python)]
            sessions += bridges
            total = sum(vm_rss(s.pid) for s in sessions)
            biggest = max(vm_rss(b.pid) for b in bridges)
            table.row("RSS of three clients (owner + 2 bridges) / one standalone, %s%s"
                      % (what, tag), "%.2fx (%.1f MB vs %.1f MB)" % (
                          total / one, total / 1e6, one / 1e6), "<= 1.5x", total / one <= 1.5)
            table.row("  each bridge's RSS%s" % tag, "%.1f MB" % (biggest / 1e6), "<= 15 MB",
                      biggest <= 15e6)
        except (NotAvailable, ChildGone, ValueError, OSError) as e:
            table.na("RSS of three clients%s" % tag, str(e), "<= 1.5x")
        finally:
            for s in reversed(sessions):
                s.close()

    progress("shared: takeovers")
    takes = []
    try:
        for _ in range(max(3, runs // 2)):
            owner = shared_owner(repo)
            bridge = shared_bridge(repo)
            try:
                t0 = time.perf_counter()
                owner.pipe.proc.kill()
                _, line = bridge.call("tools/call", {"name": "majordomus_peers",
                                                     "arguments": {}})
                takes.append(time.perf_counter() - t0)
                if rpc_error(line):
                    raise NotAvailable("after the takeover: %s" % rpc_error(line))
            finally:
                bridge.close()
                owner.close()
        table.row("kill -9 of the owner -> the bridge's next answer, %s" % label,
                  "%s median, %s max (n=%d)" % (fmt_ms(p50(takes)), fmt_ms(max(takes)),
                                                len(takes)), "<= 2 s", max(takes) <= 2.0)
    except (NotAvailable, ChildGone) as e:
        table.na("kill -9 of the owner -> the bridge's next answer", str(e), "<= 2 s")


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


def build_old(tmp):
    """majordomus.pyz of OLD_COMMIT, the last landed version, built under tmp from
    `git archive`: (path, None) or (None, the reason it could not be built)."""
    src = os.path.join(tmp, "old-src")
    out = os.path.join(tmp, "old.pyz")
    progress("building %s's majordomus.pyz" % OLD_COMMIT)
    try:
        os.makedirs(src)
        err = tempfile.TemporaryFile()
        try:
            archive = track(subprocess.Popen(["git", "-C", ROOT, "archive", OLD_COMMIT],
                                             stdout=subprocess.PIPE, stderr=err,
                                             env=child_env()))
            try:
                tar = subprocess.run(["tar", "-x", "-C", src], stdin=archive.stdout,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     timeout=120)
            finally:
                archive.stdout.close()
                rc = archive.wait(60)
            err.seek(0)
            if rc != 0:
                return None, "git archive %s: %s" % (OLD_COMMIT, last_line(err.read()))
        finally:
            err.close()
        if tar.returncode != 0:
            return None, "tar -x: %s" % last_line(tar.stderr)
        p = subprocess.run([PYTHON, os.path.join(src, "build_zipapp.py"), out], cwd=src,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        if p.returncode != 0 or not os.path.exists(out):
            return None, "%s build_zipapp.py: %s: %s" % (
                OLD_COMMIT, exit_text(p.returncode), last_line(p.stderr))
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "%s: %s" % (type(e).__name__, e)
    return out, None


# §23's floor: what no start-up can avoid. The archive's own entry point loads the module
# (build_zipapp.MAIN, its last line swapped), then one `git ls-files` is started before the
# declarations are read, every claimed file is read and parsed by the module's subset
# reader, and the first line read is answered. Nothing is checked, built, indexed or
# registered: a start that does its whole work takes longer.
FLOOR_BODY = r"""import os
m = _load()
root = m.find_root(".")
listing = m.git_started(root, *m.LS_FILES)
decl = m.read_declarations(root, "vcs")
claims = m.discover_files(decl, m.Counters(), listing)[0]
for path, source in claims:
    handle = os.open(decl.full(path), os.O_RDONLY)
    try:
        text = os.read(handle, os.fstat(handle).st_size + 1).decode("utf-8")
    finally:
        os.close(handle)
    try:
        if path.endswith(".md"):
            m.split_front_matter(text)
        elif path.endswith((".yaml", ".yml")):
            m.parse_subset(text)
    except m.SubsetError:
        pass
sys.stdin.buffer.readline()
sys.stdout.write('{"jsonrpc":"2.0","id":1,"result":{}}\n')
sys.stdout.flush()
sys.stdin.buffer.read()
"""
FLOOR_LAST = b"sys.exit(_load().main())\n"


def build_floor(tmp):
    """The built archive with its entry point ending in FLOOR_BODY: (path, None), or (None,
    why)."""
    import zipfile
    out = os.path.join(tmp, "floor.pyz")
    try:
        with zipfile.ZipFile(PYZ) as src, zipfile.ZipFile(out, "w") as dst:
            main = src.read("__main__.py")
            if "majordomus.pyc" not in src.namelist() or not main.endswith(FLOOR_LAST):
                return None, "the archive's entry point is not the one this floor extends"
            main = main[:-len(FLOOR_LAST)] + FLOOR_BODY.encode()
            for info in src.infolist():
                dst.writestr(info, main if info.filename == "__main__.py"
                             else src.read(info))
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        return None, "%s: %s" % (type(e).__name__, e)
    return out, None


# What `python3 an-archive.pyz` costs before the archive's first line runs: CPython runs a
# zip through runpy (importlib.util, contextlib, functools, collections) and zipimport,
# which `-c pass` never loads. The bare archive answers the first line and nothing else.
BARE_MAIN = r"""import sys
sys.stdin.buffer.readline()
sys.stdout.write('{"jsonrpc":"2.0","id":1,"result":{}}\n')
sys.stdout.flush()
sys.stdin.buffer.read()
"""


def build_bare(tmp):
    """An archive holding only BARE_MAIN as its __main__.py: its path, or None."""
    import zipfile
    out = os.path.join(tmp, "bare.pyz")
    try:
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
            dst.writestr("__main__.py", BARE_MAIN)
    except OSError:
        return None
    return out


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


SECTIONS = ("spawn", "memory", "kinds", "context", "brief", "search", "ui", "pages", "mcp",
            "paging", "http", "fuzz", "shared", "sync", "hook", "live")


def section_hook(table, real, runs):
    """SPEC §30, `majordomus hook` on real-latest, as a client runs it (`python3 -S
    archive hook`, its JSON on stdin: a Claude Code Edit of a new file in a governed folder,
    a session id of its own each run): warm (an `mcp` owner live for the root: the
    archive's door asks it) and cold (no owner: an index of the hook's own), interleaved
    with `python3 -c pass` in one run, p50 and the ratios (warm <= 1.5x, cold <= 3x); and
    the compact brief's mean size over the brief quality set (tests/brief_cases.json, the
    real layer as it is, in process) beside the whole brief's. Self-contained (its own
    runtime directories, owner and scratch copy): movable as it is."""
    table.section("the hook (SPEC §30): majordomus hook on real-latest, spawned as a client "
                  "spawns it")
    names = ("hook p50, warm (an owner live)", "hook p50, cold (no owner)",
             "compact brief vs the whole brief (brief quality set)")
    if real is None:
        for name in names:
            table.na(name, "no fixture at %s" % REAL_LATEST)
        return
    python = DEBIAN_PYTHON if os.path.exists(DEBIAN_PYTHON) else PYTHON
    warm_run, cold_run = tempfile.mkdtemp(prefix="mj-hook-"), tempfile.mkdtemp(prefix="mj-hook-")
    for folder in (warm_run, cold_run):
        os.chmod(folder, 0o700)
    base = dict(os.environ, **GIT_ENV)
    for key in ("MAJORDOMUS_LOG", "MAJORDOMUS_STANDALONE"):
        base.pop(key, None)
    envs = {"warm": dict(base, XDG_RUNTIME_DIR=warm_run),
            "cold": dict(base, XDG_RUNTIME_DIR=cold_run)}
    path = os.path.join(real, ".ai", "repo", "rules", "project", "new-rule.v1.md")

    def hook_input(n):
        return json.dumps({
            "session_id": "bench-%d-%d" % (os.getpid(), n), "transcript_path": "/dev/null",
            "cwd": real, "permission_mode": "default", "hook_event_name": "PreToolUse",
            "tool_name": "Edit", "tool_use_id": "toolu_%d" % n,
            "tool_input": {"file_path": path, "old_string": "a", "new_string": "b"}}).encode()

    def once(argv, env, data=None):
        began = time.perf_counter()
        p = subprocess.run(argv, cwd=real, input=data, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=SPAWN_TIMEOUT)
        elapsed = time.perf_counter() - began
        if data is not None and b"hookSpecificOutput" not in p.stdout:
            raise NotAvailable("no answer: %s" % last_line(p.stderr))
        return elapsed
    owner = None
    try:
        progress("hook: an owner for real-latest, then %d runs of each row" % (runs * 3))
        owner = subprocess.Popen([python, PYZ, "mcp"], cwd=real, env=envs["warm"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL)
        CHILDREN.append(owner)
        owner.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                      "params": {"protocolVersion": "2025-06-18",
                                                 "capabilities": {}, "clientInfo": {
                                                     "name": "bench", "version": "1"}}})
                          .encode() + b"\n")
        owner.stdin.flush()
        if not owner.stdout.readline():
            raise NotAvailable("the owner did not answer initialize")
        lease = os.path.join(warm_run, "majordomus")
        deadline = time.monotonic() + SPAWN_TIMEOUT
        while not any(n.endswith(".json") and not n.startswith("hook-")
                      for n in (os.listdir(lease) if os.path.isdir(lease) else ())):
            if time.monotonic() > deadline:
                raise NotAvailable("no lease within %d s" % SPAWN_TIMEOUT)
            time.sleep(0.01)
        hook = [python, "-S", PYZ, "hook"]
        times = {"pass": [], "warm": [], "cold": []}
        once(hook, envs["warm"], hook_input(-1))         # warm-up: the owner's first brief
        once(hook, envs["cold"], hook_input(-2))
        for n in range(runs * 3):
            times["pass"].append(once([python, "-c", "pass"], base))
            times["warm"].append(once(hook, envs["warm"], hook_input(2 * n)))
            times["cold"].append(once(hook, envs["cold"], hook_input(2 * n + 1)))
        floor = p50(times["pass"])
        table.row("python3 -c pass (%s, n=%d)" % (python, runs * 3), fmt_ms(floor))
        for key, name, goal in (("warm", names[0], 1.5), ("cold", names[1], 3.0)):
            ratio = p50(times[key]) / floor
            table.row(name, "%s (%.2fx)" % (fmt_ms(p50(times[key])), ratio),
                      "<= %.1fx -c pass" % goal, ratio <= goal)
    except (OSError, subprocess.SubprocessError, NotAvailable) as exc:
        for name in names[:2]:
            if not any(r[0] == "row" and r[1] == name for r in table.rows):
                table.na(name, str(exc))
    finally:
        if owner is not None:
            owner.stdin.close()
            try:
                owner.wait(15)
            except subprocess.TimeoutExpired:
                owner.kill()
        shutil.rmtree(warm_run, ignore_errors=True)
        shutil.rmtree(cold_run, ignore_errors=True)
    missing = support.reference_missing("fixtures", "real-latest")
    if missing:
        table.na(names[2], missing)
        return
    # the brief quality set's briefs, compact and whole, in a child (argv: the checkout,
    # the repository): mean characters and lines of each, and what the compact one shows
    sizes_script = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import majordomus as m
with open(os.path.join(sys.argv[1], "tests", "brief_cases.json"), encoding="utf-8") as f:
    cases = json.load(f)["cases"]
gen = m.first_generation(sys.argv[2], "vcs", m.Counters())[0]
rows = []
for case in cases:
    arguments = {"path": case["path"]}
    if case.get("intent"):
        arguments["intent"] = case["intent"]
    full = m.brief_text(gen.execute("context.brief", arguments))
    compact = m.hook_brief(gen, [m.target_path(gen.root, case["path"], True)], {},
                           (m.HOOK_LINES, m.HOOK_CHARS))[0]
    seen = sum(1 for uri in case["must_see"] if uri in compact)
    rows.append((len(full), full.count("\n"), len(compact), compact.count("\n"),
                 seen / len(case["must_see"])))
n = len(rows)
print(json.dumps({"cases": n, "full_chars": sum(r[0] for r in rows) / n,
                  "full_lines": sum(r[1] for r in rows) / n,
                  "compact_chars": sum(r[2] for r in rows) / n,
                  "compact_lines": sum(r[3] for r in rows) / n,
                  "compact_recall": sum(r[4] for r in rows) / n}))
"""
    try:
        from search_quality import corpus_repo
        scratch = tempfile.mkdtemp(prefix="mj-hook-sizes-")
        try:
            p = subprocess.run([PYTHON, "-c", sizes_script, ROOT, corpus_repo(scratch)],
                               env=child_env(), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=SPAWN_TIMEOUT * 3)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        sizes = json.loads(last_line(p.stdout, 100000))
    except (OSError, ValueError, subprocess.SubprocessError) as exc:
        table.na(names[2], str(exc))
        return
    table.row(names[2], "mean %.0f characters, %.1f lines, beside %.0f characters, %.1f "
              "lines (%d cases; %.3f of must_see in the compact text)" % (
                  sizes["compact_chars"], sizes["compact_lines"], sizes["full_chars"],
                  sizes["full_lines"], sizes["cases"], sizes["compact_recall"]))


def section_fuzz(table, seconds):
    """The fuzz suite's throughput (tests/fuzz.py --rate, in the test venv, which has
    Hypothesis): examples per second per target."""
    table.section("fuzz suite (SPEC §25): examples per second per target")
    python = os.path.join(ROOT, ".venv", "bin", "python")
    if not os.path.exists(python):
        table.na("fuzz targets", "no test venv at .venv (run python3 tests/run_all.py "
                 "--fast once)")
        return
    progress("fuzz suite: %d s per target" % seconds)
    try:
        p = subprocess.run([python, os.path.join(ROOT, "tests", "fuzz.py"), "--rate",
                            str(seconds)], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60 + 20 * seconds)
    except (OSError, subprocess.TimeoutExpired) as e:
        table.na("fuzz targets", "%s: %s" % (type(e).__name__, e))
        return
    rows = 0
    for line in p.stdout.decode("utf-8", "replace").splitlines():
        m = re.match(r"rate (\S+) (\d+) examples in ([0-9.]+) s", line)
        if m:
            rows += 1
            n, t = int(m.group(2)), float(m.group(3))
            table.row("fuzz %s" % m.group(1), "%.0f examples/s (%d in %.1f s)" % (
                n / t if t else 0, n, t))
    if not rows or p.returncode != 0:
        table.na("fuzz targets", "tests/fuzz.py --rate: %s: %s" % (
            exit_text(p.returncode), last_line(p.stdout) or last_line(p.stderr)))


def main(argv=None):
    global PYZ, OLD_COMMIT
    ap = argparse.ArgumentParser(description="majordomus performance benchmark")
    ap.add_argument("--quick", action="store_true",
                    help="3 spawn runs instead of 10, fewer heavy requests, a 10 s idle "
                    "window instead of 60 s, fewer live rounds")
    ap.add_argument("--only", metavar="SECTIONS",
                    help="only these sections, comma-separated: " + ", ".join(SECTIONS))
    ap.add_argument("--pyz", metavar="PATH",
                    help="measure this archive instead of the checkout's majordomus.pyz")
    ap.add_argument("--old", metavar="COMMIT", default=OLD_COMMIT,
                    help="the earlier commit measured beside this build (default %s)"
                    % OLD_COMMIT)
    args = ap.parse_args(argv)
    wanted = set(SECTIONS if not args.only else args.only.split(","))
    unknown = wanted - set(SECTIONS)
    if unknown:
        ap.error("unknown section(s): %s (the sections: %s)" % (
            ", ".join(sorted(unknown)), ", ".join(SECTIONS)))
    if args.pyz:
        PYZ = os.path.abspath(args.pyz)
    OLD_COMMIT = args.old
    runs = 3 if args.quick else 10
    reps = REPS
    heavy_reps = 50 if args.quick else REPS
    list_reps = 10 if args.quick else 40
    per_client = 100 if args.quick else 250

    table = Table()
    reason = build() if not args.pyz else None
    print(facts(runs, reps, heavy_reps, per_client))
    tmp = tempfile.mkdtemp(prefix="mj-bench-")
    whole = wanted == set(SECTIONS)
    try:
        progress("creating scratch repositories under %s (%d generated rules)"
                 % (tmp, GEN_RULES))
        t0 = time.perf_counter()
        skel, big = make_repos(tmp)
        needs = lambda *names: any(name in wanted for name in names)  # noqa: E731
        real = (make_real_latest(tmp) if needs("spawn", "context", "brief", "pages", "shared",
                                               "hook")
                else None)
        ctx = make_context_repo(tmp) if needs("context", "brief") else None
        huge = make_rules_repo(tmp, BIG_RULES) if needs("memory", "shared") else None
        progress("scratch repositories made in %.1f s" % (time.perf_counter() - t0))
        old_pyz, old_reason = (build_old(tmp) if needs("spawn", "memory", "kinds", "ui",
                                                       "paging", "live")
                               else (None, "not measured (--only)"))
        if old_pyz:
            print("previous  %s (%s, %d bytes, built from git archive %s)" % (
                OLD_COMMIT, os.path.basename(old_pyz), os.path.getsize(old_pyz),
                OLD_COMMIT))
        else:
            print("previous  %s unavailable: %s" % (OLD_COMMIT, old_reason))
        if not whole:
            print("sections  %s (--only)" % ", ".join(s for s in SECTIONS if s in wanted))
        if reason is None and whole:
            for repo, label in ((skel, "skeleton"), (big, "10,000 rules"),
                                (real, "real-latest (tracks stand-ins)"),
                                (ctx, "10,000 rules + %d context documents" % CONTEXT_DOCS),
                                (huge, "%d rules" % BIG_RULES)):
                info = repo and repo_facts(repo, label)
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
            if "spawn" in wanted:
                section_spawn(table, skel, big, real, runs, old_pyz, old_reason,
                              build_floor(tmp), build_bare(tmp))
            if "memory" in wanted:
                section_memory(table, big, huge, runs, old_pyz, old_reason)
            if "kinds" in wanted:
                section_kinds(table, skel, runs, old_pyz, old_reason)
            if "context" in wanted:
                table.section("context resolution (SPEC §20): majordomus_context over pipes")
                if real:
                    section_context(table, real, "real-latest", reps, 3)
                else:
                    table.na("majordomus_context, real-latest", "no fixture at %s"
                             % REAL_LATEST)
                section_context(table, ctx, "10,000 rules + %d documents" % CONTEXT_DOCS,
                                reps, 3)
                section_context_checks(table, ctx, big, 3 if args.quick else 7)
            if "brief" in wanted:
                table.section("the brief (SPEC §26): majordomus_brief over pipes")
                if real:
                    section_brief(table, real, "real-latest", reps, 3, 0.050, 0.005)
                else:
                    table.na("majordomus_brief, real-latest", "no fixture at %s"
                             % REAL_LATEST)
                section_brief(table, ctx, "10,000 rules + %d documents" % CONTEXT_DOCS,
                              reps, 3, None, 0.020)
                section_brief_quality(table)
            if "search" in wanted:
                section_search(table, big, reps, 3)
            if "ui" in wanted:
                section_ui(table, big, 50 if args.quick else reps, runs, old_pyz, old_reason)
            if "pages" in wanted:
                section_pages_real(table, real, 50 if args.quick else reps)
            if "mcp" in wanted:
                section_mcp(table, skel, "skeleton", reps, reps, False)
                section_mcp(table, big, "10,000 rules", reps, heavy_reps, True)
            if "paging" in wanted:
                section_paging(table, big, heavy_reps, list_reps, old_pyz, old_reason)
            if "http" in wanted:
                section_http(table, skel, "skeleton", reps, per_client, True)
                section_http(table, big, "10,000 rules", reps, per_client, False)
            if "fuzz" in wanted:
                section_fuzz(table, 3 if args.quick else 10)
            if "shared" in wanted:
                section_shared(table, skel, real, big, huge, runs, reps)
            if "sync" in wanted:
                section_context_sync(table, tmp, reps)
            if "hook" in wanted:
                section_hook(table, real, runs)
            # last: these sections edit and stage files in the scratch repositories
            if "live" in wanted:
                section_live(table, skel, "skeleton", reps, False, args.quick)
                section_live(table, big, "10,000 rules", reps, True, args.quick, old_pyz,
                             old_reason)
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
