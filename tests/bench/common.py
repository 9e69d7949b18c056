"""What every area of the benchmark shares: the settings, the progress line, statistics,
the table it prints, and the processes it starts and stops."""
import json
import math
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import support

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = os.path.join(ROOT, "majordomus.py")
PYZ = os.path.join(ROOT, "majordomus.pyz")        # --pyz sets it (bench.run.main)
BUILD = os.path.join(ROOT, "build_zipapp.py")
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


def runtime_parent():
    """Where a runtime directory of the bench's own is made: where a login session's
    XDG_RUNTIME_DIR is (systemd makes it a tmpfs, /run/user/<uid>): in this process's own
    XDG_RUNTIME_DIR when it names a folder, else on /dev/shm (a tmpfs) when it can be
    written, else in the temporary folder (the program's fallback, <tempdir>/majordomus-<uid>,
    which may be on disk: there the lease's creation costs about 1 ms more)."""
    for where in (os.environ.get("XDG_RUNTIME_DIR", ""), "/dev/shm"):
        if os.path.isabs(where) and os.path.isdir(where) and os.access(where, os.W_OK):
            return where
    return None


def child_env(shared=False):
    """The environment of every child: each row measures a server alone
    (MAJORDOMUS_STANDALONE=1) but the shared server's rows (SPEC §27, `shared`), whose leases
    go to a runtime directory of this run's own."""
    env = dict(os.environ)
    env.update(GIT_ENV)
    env.pop("MAJORDOMUS_LOG", None)
    if not _RUNTIME:
        _RUNTIME.append(tempfile.mkdtemp(prefix="mj-bench-run-", dir=runtime_parent()))
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

    def na_unprinted(self, names, reason):
        """n/a (reason) for each row of names not printed yet (a section that failed
        midway)."""
        for name in names:
            if not any(r[0] == "row" and r[1] == name for r in self.rows):
                self.na(name, reason)

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


class Child:
    """A process this run starts (stopped by cleanup() if still running), its stderr kept in
    a temporary file; t_spawn, the moment it was spawned."""

    def spawn(self, argv, cwd, env, **streams):
        self.err = tempfile.TemporaryFile()
        self.t_spawn = time.perf_counter()
        self.proc = track(subprocess.Popen(argv, cwd=cwd, env=env, stderr=self.err,
                                           **streams))

    def stderr_text(self):
        try:
            self.err.seek(0)
            return self.err.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""


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


def proc_cpu(pid):
    """utime + stime of a live process, in seconds (Linux /proc)."""
    with open("/proc/%d/stat" % pid, "rb") as f:
        fields = f.read().rpartition(b")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def in_turns(count, rounds, failed):
    """(round, k) for k in 0..count-1, `rounds` times, every other round backwards (so that
    each of the measured programs sees the same machine load), leaving out the k in failed
    (which a caller may add to as it goes)."""
    for i in range(rounds):
        order = list(range(count))
        if i % 2:
            order.reverse()
        for k in order:
            if k not in failed:
                yield i, k


def lat(times):
    return "%s / %s (n=%d)" % (fmt_ms(p50(times)), fmt_ms(p95(times)), len(times))


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


def vm_rss(pid):
    return proc_status_bytes(pid, "VmRSS")
