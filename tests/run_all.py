#!/usr/bin/env python3
"""The one test command: build the zipapp, then run every test and print `N passed, N failed`.

  1. python3 build_zipapp.py (twice, and the two archives must be byte-identical);
  2. a virtual environment .venv/ (gitignored) with the official MCP SDK and an OpenAPI
     validator, for the tests that need a real client;
  3. the unittest suite (tests/test_*.py) under every CPython 3.9-3.15 found on the machine
     (pyenv versions, or python3.X on PATH) and under 3.14 and 3.15 with the newest git in a
     Debian unstable root (tests/toolchain.py: made once with debootstrap, kept outside the
     checkout; where it cannot be made the command says why and goes on), two at a time;
  4. the SDK client test, the OpenAPI validation and pyflakes under the virtual environment;
  5. the bash cases test/cases/*.sh against the built majordomus.pyz (with MJ naming the
     shell tool ../shared/oracle/shell/bin/majordomus when it is there).
Usage: python3 tests/run_all.py [--fast]   (--fast: only the interpreter running this script)
"""
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import support  # noqa: E402
import toolchain  # noqa: E402

VENV = os.path.join(ROOT, ".venv")
VENV_PACKAGES = ["mcp", "openapi-spec-validator", "pyflakes"]
LINTED = ["majordomus.py", "build_zipapp.py", "tests"]
MINORS = range(9, 16)
SHELL_TOOL = os.path.join(os.path.dirname(ROOT), "shared", "oracle", "shell", "bin", "majordomus")


def say(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class Tally:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0
        self.notes = []

    def add(self, passed, failed, skipped=0, note=None):
        self.passed += passed
        self.failed += failed
        self.skipped += skipped
        if note:
            self.notes.append(note)


def build(tally):
    """Two builds must be byte-identical; the second one is the artifact under test."""
    digests = []
    for target in (os.path.join(tempfile.mkdtemp(prefix="mj-build-"), "a.pyz"),
                   os.path.join(ROOT, "majordomus.pyz")):
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "build_zipapp.py"), target],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            say(proc.stdout.decode("utf-8", "replace"))
            tally.add(0, 1, note="build failed")
            return False
        with open(target, "rb") as handle:
            digests.append(hashlib.sha256(handle.read()).hexdigest())
    same = digests[0] == digests[1]
    say("build: majordomus.pyz %s (reproducible: %s)" % (digests[1][:12], "yes" if same else "NO"))
    tally.add(int(same), int(not same), note=None if same else "the build is not reproducible")
    return True


class Interpreter:
    """One CPython to run the unit suite under: argv (a prefix to which the script and its
    arguments are appended), and how its environment is made from the host's."""

    def __init__(self, version, argv, where, environ=None):
        self.version, self.argv, self.where = version, list(argv), where
        self.in_root = environ is not None
        self.environ = environ or (lambda env: env)

    @property
    def label(self):
        return "python %s (%s)" % (self.version, self.where) if self.where else \
            "python %s" % self.version


def git_version():
    try:
        out = subprocess.run(["git", "--version"], stdout=subprocess.PIPE).stdout.decode()
    except OSError:
        return "none"
    return out.strip().split()[-1] if out.strip() else "none"


def host_interpreters():
    """([Interpreter], missing minors) for the CPython 3.9-3.15 of pyenv or PATH."""
    roots = []
    try:
        roots.append(subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL).stdout.decode().strip())
    except OSError:
        pass
    found, missing = [], []
    for minor in MINORS:
        path = None
        for root in filter(None, roots):
            candidates = sorted(glob.glob(os.path.join(root, "versions", "3.%d.*" % minor,
                                                       "bin", "python3.%d" % minor)))
            if candidates:
                path = candidates[-1]
        path = path or shutil.which("python3.%d" % minor)
        if path:
            version = subprocess.run([path, "-c", "import sys; print(sys.version.split()[0])"],
                                     stdout=subprocess.PIPE).stdout.decode().strip()
            found.append(Interpreter(version, [path], ""))
        else:
            missing.append("3.%d" % minor)
    return found, missing


def interpreters():
    """([Interpreter], [missing minors]): the host's CPython 3.9-3.15, and 3.14 and 3.15 from
    the Debian unstable root (made on first use, then reused; a host 3.14 or 3.15 runs too)."""
    found, missing = host_interpreters()
    host_git = git_version()
    for interp in found:
        interp.where = "git %s" % host_git
    started = time.time()
    marker, why = toolchain.sid_root(say)
    if marker:
        say("sid root: %s %s (%.1fs; python %s, git %s)" % (
            "made" if marker["fresh"] else "reused", toolchain.SID, time.time() - started,
            ", ".join(marker["interpreters"].values()), marker["git"]))
        for version, argv in toolchain.sid_interpreters(marker):
            found.append(Interpreter(version, argv, "debian sid, git %s" % marker["git"],
                                     toolchain.root_environ))
    else:
        say("sid root: cannot be made here (%s); going on without it" % why)
    have = {interp.version.rsplit(".", 1)[0] for interp in found}
    missing = [minor for minor in missing if minor not in have]
    if not found:
        found.append(Interpreter(sys.version.split()[0], [sys.executable], ""))
    # This interpreter's suite first: it is usually the slowest to spawn (site packages),
    # and two run at a time.
    mine = sys.version.split()[0]
    found.sort(key=lambda interp: interp.version != mine or interp.in_root)
    return found, missing


UNIT_TIMEOUT = 900


def run_unit(python, modules=(), env=None):
    """Run tests/_unit.py under `python` (a path or an Interpreter); (summary dict, full
    output). A run that hangs is killed with its whole process group after UNIT_TIMEOUT
    seconds and counts as failed."""
    if not isinstance(python, Interpreter):
        python = Interpreter("", [python], "")
    proc = subprocess.Popen(python.argv + [os.path.join(ROOT, "tests", "_unit.py")]
                            + list(modules), cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            env=python.environ(dict(os.environ, **(env or {}))))
    try:
        data, _ = proc.communicate(timeout=UNIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        data, _ = proc.communicate()
        data += b"\nkilled after %d s\n" % UNIT_TIMEOUT
    output = data.decode("utf-8", "replace")
    for line in reversed(output.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):]), output
    return {"python": " ".join(python.argv), "passed": 0, "failed": 1, "skipped": 0,
            "failures": ["the test process died (exit %s)" % proc.returncode]}, output


def report_unit(tally, label, summary, output, started):
    say("%s: %d passed, %d failed, %d skipped (%.1fs)" % (
        label, summary["passed"], summary["failed"], summary["skipped"], time.time() - started))
    if summary["failed"]:
        say(output[-20000:])
    tally.add(summary["passed"], summary["failed"], summary["skipped"])


def venv_python(tally):
    """The virtual environment's interpreter, with the test-only packages installed."""
    python = os.path.join(VENV, "bin", "python")
    stamp = os.path.join(VENV, ".majordomus-packages")
    wanted = " ".join(VENV_PACKAGES)
    try:
        with open(stamp) as handle:
            if handle.read() == wanted and os.path.exists(python):
                return python
    except OSError:
        pass
    steps = [[sys.executable, "-m", "venv", "--clear", VENV],
             [python, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
             + VENV_PACKAGES]
    for step in steps:
        proc = subprocess.run(step, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            say("venv: `%s` failed:\n%s" % (" ".join(step[:4]),
                                             proc.stdout.decode("utf-8", "replace")[-3000:]))
            tally.add(0, 1, note="the test virtual environment could not be set up")
            return None
    with open(stamp, "w") as handle:
        handle.write(wanted)
    return python


def lint(tally, python):
    """pyflakes over the product and the tests: unused imports, undefined names."""
    proc = subprocess.run([python, "-m", "pyflakes"] + LINTED, cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    clean = proc.returncode == 0
    say("lint (pyflakes): %s" % ("clean" if clean else "FAILED\n"
                                 + proc.stdout.decode("utf-8", "replace")))
    tally.add(int(clean), int(not clean))


def run_cases(tally, python):
    """Each test/cases/*.sh in a fresh scratch repository holding the committed skeleton."""
    cases = sorted(glob.glob(os.path.join(ROOT, "test", "cases", "*.sh")))
    say("cases: MJ=%s" % (SHELL_TOOL if os.path.isfile(SHELL_TOOL)
                          else "(unset: %s is not there)" % SHELL_TOOL))
    passed = failed = 0
    started = time.time()
    for case in cases:
        scratch = tempfile.mkdtemp(prefix="mj-case-")
        try:
            repo = os.path.join(scratch, "repo")
            support.copy_tree(support.SKELETON, repo)
            support.git(repo, "init", "-q", "-b", "main")
            support.commit_all(repo, "skeleton")
            env = support.base_env({"MAJORDOMUS": os.path.join(ROOT, "majordomus.pyz"),
                                    "PYTHON": python, "SKELETON": support.SKELETON})
            if os.path.isfile(SHELL_TOOL):
                env["MJ"] = SHELL_TOOL
            try:
                proc = subprocess.run(["bash", case], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      timeout=300)
                code, output = proc.returncode, proc.stdout.decode("utf-8", "replace")
            except subprocess.TimeoutExpired as exc:
                code, output = -1, "timed out after 300 s\n" + (exc.output or b"").decode(
                    "utf-8", "replace")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        name = os.path.basename(case)
        if code == 0:
            passed += 1
            last = output.strip().splitlines()[-1:] or [""]
            say("  case %s: ok %s" % (name, last[0][:100]))
        else:
            failed += 1
            say("  case %s: FAILED (exit %d)\n%s" % (name, code, output[-6000:]))
    say("cases: %d passed, %d failed (%.1fs)" % (passed, failed, time.time() - started))
    tally.add(passed, failed)


def main():
    fast = "--fast" in sys.argv[1:]
    tally = Tally()
    began = time.time()
    if not build(tally):
        say("%d passed, %d failed" % (tally.passed, tally.failed))
        return 1
    if fast:
        found, missing = [Interpreter(sys.version.split()[0], [sys.executable], "")], []
    else:
        found, missing = interpreters()
    say("interpreters: %s%s" % (", ".join(i.label for i in found),
                                "; not on this machine: " + ", ".join(missing) if missing else ""))
    with ThreadPoolExecutor(max_workers=2) as pool:
        started = time.time()
        futures = [(interp, pool.submit(run_unit, interp)) for interp in found]
        venv = venv_python(tally)
        for interp, future in futures:
            summary, output = future.result()
            report_unit(tally, "unittest " + interp.label, summary, output, started)
    if venv:
        started = time.time()
        summary, output = run_unit(venv, ["sdk_client_test", "test_http.HttpRoutesTest.test_openapi"],
                                   {"MAJORDOMUS_REQUIRE_VALIDATOR": "1"})
        report_unit(tally, "venv (mcp SDK, openapi-spec-validator)", summary, output, started)
    if venv:
        lint(tally, venv)
    run_cases(tally, sys.executable)
    for note in tally.notes:
        say("note: " + note)
    say("total time %.1fs" % (time.time() - began))
    tail = ", %d skipped" % tally.skipped if tally.skipped else ""
    say("%d passed, %d failed%s" % (tally.passed, tally.failed, tail))
    return 0 if tally.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
