#!/usr/bin/env python3
"""The one test command: build the zipapp, then run every test and print `N passed, N failed`.

  1. python3 build_zipapp.py (twice, and the two archives must be byte-identical);
  2. the unittest suite (tests/test_*.py) under every CPython 3.9-3.15 found on the machine
     (pyenv versions, or python3.X on PATH) and under 3.14 and 3.15 with the newest git in a
     Debian unstable root (tests/toolchain.py: made once with debootstrap, kept outside the
     checkout; where it cannot be made the command says why and goes on); each
     interpreter's modules in SHARDS processes, JOBS processes at a time;
  beside it, one after another:
  3. a virtual environment .venv/ (gitignored) with the official MCP Python SDK, jsonschema,
     an OpenAPI validator, pyflakes and selenium, and the tests that need them (VENV_MODULES),
     the browser tests in Debian's headless Chromium with axe-core (tests/toolchain.py);
  4. the judges (tests/judges.py): the official MCP conformance suite against serve's /mcp,
     the MCP Inspector CLI over stdio and HTTP, and the MCP Bundle CLI (`mcpb validate`) on
     the bundle of build_zipapp.py --mcpb, installed with Node 22 into .tools/;
  5. the fuzz suite (tests/fuzz.py, Hypothesis in the venv: a fixed seed, bounded counts)
     and pyflakes over the product and the tests;
  6. the bash cases test/cases/*.sh against the built majordomus.pyz (with MJ naming the
     shell tool $MAJORDOMUS_REFERENCE/oracle/shell/bin/majordomus when it is there);
  7. HEAD cloned with core.autocrlf=true (Git for Windows' default): its build must be a
     plain clone's archive, answer the test layer byte for byte alike and pass the cases;
  8. the differential tests of context against the later shell tool: resolution
     (tests/context_differential.py) and list, validate, affected, check-sync
     (tests/context_sync_differential.py), each once;
  and in the unit suites' pool, first:
  9. HEAD cloned into an empty temporary folder with no reference data beside it
     (MAJORDOMUS_REFERENCE pointing nowhere), and `tests/run_all.py --fast` run there under
     this interpreter, one process at a time: 0 failed, its skipped groups named, its wall
     time printed at the end beside the whole command's.
Tests that compare with reference data (support.REFERENCE: $MAJORDOMUS_REFERENCE, default
../shared) are skipped by name where it is absent; each reason is one line
`skipped (no reference data at PATH): N tests`.
Usage: python3 tests/run_all.py [--fast]   (--fast: steps 1 and 2 under the interpreter
running this script only)
"""
import glob
import hashlib
import json
import os
import re
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
# mcp 2.x has the 2026-07-28 Client; the stamp holds this list, so a change rebuilds .venv.
VENV_PACKAGES = ["mcp>=2.3.0", "openapi-spec-validator", "jsonschema", "pyflakes",
                 "selenium>=4.20,<5", "hypothesis>=6.100,<7"]
LINTED = ["majordomus.py", "build_zipapp.py", "tests"]
MINORS = range(9, 16)
SHELL_TOOL = support.reference("oracle", "shell", "bin", "majordomus")


def say(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class Tally:
    def __init__(self):
        import threading
        self.lock = threading.Lock()     # the unit suites and the extras add from two threads
        self.passed = self.failed = self.skipped = 0
        self.notes = []

    def add(self, passed, failed, skipped=0, note=None):
        with self.lock:
            self.passed += passed
            self.failed += failed
            self.skipped += skipped
            if note:
                self.notes.append(note)


def skip_lines(reasons):
    """One line a reason tests were skipped for, in the reasons' order."""
    return ["skipped (%s): %d test%s" % (reason, count, "" if count == 1 else "s")
            for reason, count in sorted(reasons.items())]


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


def unit_line(label, summary, output, started):
    line = "%s: %d passed, %d failed, %d skipped (%.1fs)" % (
        label, summary["passed"], summary["failed"], summary["skipped"], time.time() - started)
    return line + ("\n" + output[-20000:] if summary["failed"] else "")


def report_unit(tally, label, summary, output, started):
    say(unit_line(label, summary, output, started))
    for line in skip_lines(summary.get("skips", {})):
        say("  " + line)
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
    tally.add(int(clean), int(not clean))
    return "lint (pyflakes): %s" % ("clean" if clean else "FAILED\n"
                                    + proc.stdout.decode("utf-8", "replace"))


def fuzz(tally, python):
    """tests/fuzz.py (SPEC §25) in the venv, which has Hypothesis: its fixed seed and bounded
    counts; its lines (examples per target, the seed, each failure); one check a target."""
    started = time.time()
    try:
        proc = subprocess.run([python, os.path.join(ROOT, "tests", "fuzz.py")], cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        output = proc.stdout.decode("utf-8", "replace").rstrip("\n").splitlines()
    except subprocess.TimeoutExpired:
        output = ["fuzz: timed out after 600 s"]
    targets = [line for line in output if re.match(r"fuzz: \S+ +\d+ examples", line)]
    failed = sum(1 for line in targets if line.endswith("FAILED"))
    last = re.match(r"fuzz: \d+ examples over \d+ targets .*: 0 failures\Z",
                    output[-1] if output else "")
    ok = len(targets) - failed if last else 0
    tally.add(ok, failed + (0 if last and targets else 1))
    return output + ["fuzz (Hypothesis): %d targets ok, %d failing (%.1fs)"
                     % (ok, len(targets) - ok, time.time() - started)]


def run_cases(tally, python, archive=os.path.join(ROOT, "majordomus.pyz")):
    """Each test/cases/*.sh in a fresh scratch repository holding the committed test layer
    (tests/fixtures/layer), against `archive`; the lines to print."""
    cases = sorted(glob.glob(os.path.join(ROOT, "test", "cases", "*.sh")))
    lines = ["cases: MJ=%s" % (SHELL_TOOL if os.path.isfile(SHELL_TOOL)
                               else "(unset: %s is not there)" % SHELL_TOOL)]
    passed = failed = 0
    started = time.time()
    for case in cases:
        scratch = tempfile.mkdtemp(prefix="mj-case-")
        try:
            repo = os.path.join(scratch, "repo")
            support.copy_layer(repo)
            support.git(repo, "init", "-q", "-b", "main")
            support.commit_all(repo, "test layer")
            env = support.base_env({"MAJORDOMUS": archive,
                                    "PYTHON": python, "SKELETON": support.LAYER})
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
            lines.append("  case %s: ok %s" % (name, last[0][:100]))
        else:
            failed += 1
            lines.append("  case %s: FAILED (exit %d)\n%s" % (name, code, output[-6000:]))
    lines.append("cases: %d passed, %d failed (%.1fs)" % (passed, failed, time.time() - started))
    tally.add(passed, failed)
    return lines


# Seconds each module takes under one interpreter on an idle machine, roughly: the modules
# are dealt into SHARDS groups of about equal time (unknown modules count 5 s), so that the
# long waits (the 30 s head deadline, the live layer's sweeps) run beside the rest.
MODULE_SECONDS = {"test_hostile": 45, "test_live": 32, "test_http_deadline": 30, "test_cli": 11, "test_layer": 9,
                  "test_mcp_http": 8, "test_oracle": 7, "test_mcp_modern": 7, "test_mcp": 6,
                  "test_paging": 6, "test_prompts": 6, "test_one_answer": 6, "test_http": 5,
                  "test_kinds": 3, "test_context": 12, "test_search": 10, "test_lean": 4, "test_markdown": 8,
                  "test_shared": 12, "test_context_sync": 6, "test_hook": 12}
SHARDS = 3
JOBS = int(os.environ.get("MAJORDOMUS_TEST_JOBS", "3"))
RECORDED = ("oracle: ",)   # lines a test prints to say what it judged, shown every run
VENV_MODULES = ["sdk_client_test", "venv_sdk_test", "venv_allow_test",
                "test_http.HttpRoutesTest.test_openapi", "venv_browser_selftest", "venv_ui_test",
                "venv_pages_test", "venv_hook_test"]


def shards():
    """The unit modules, dealt into SHARDS lists of about equal time, heaviest first."""
    modules = sorted(os.path.basename(p)[:-3]
                     for p in glob.glob(os.path.join(ROOT, "tests", "test_*.py")))
    groups = [[0, []] for _ in range(SHARDS)]
    for module in sorted(modules, key=lambda m: -MODULE_SECONDS.get(m, 5)):
        group = min(groups, key=lambda g: g[0])
        group[0] += MODULE_SECONDS.get(module, 5)
        group[1].append(module)
    return [names for _, names in sorted(groups, key=lambda g: -g[0]) if names]


def run_suite(pool, found):
    """Every interpreter's suite, each in SHARDS processes: {label: [future, …]}."""
    jobs = {interp.label: [] for interp in found}
    for modules in shards():
        for interp in found:
            jobs[interp.label].append(pool.submit(run_unit, interp, modules))
    return jobs


def merged(futures):
    """One summary (and the output of every failing shard) for one interpreter's shards,
    and the lines its tests printed for the record (the differential oracle's counts)."""
    total = {"passed": 0, "failed": 0, "skipped": 0, "skips": {}}
    outputs, record = [], []
    for future in futures:
        summary, output = future.result()
        for key in ("passed", "failed", "skipped"):
            total[key] += summary.get(key, 0)
        for reason, count in summary.get("skips", {}).items():
            total["skips"][reason] = total["skips"].get(reason, 0) + count
        if summary.get("failed"):
            outputs.append(output)
        record += [line for line in output.splitlines() if line.startswith(RECORDED)]
    return total, "\n".join(outputs), record


def browser_env(tally, lines):
    """Chromium, chromedriver and axe-core (installed when missing), as the variables the
    browser tests read; a tool that cannot be had is a failed check, with its reason."""
    chromium, why = toolchain.chromium(say)
    axe, why_axe = toolchain.axe_core(say)
    if not chromium or not axe:
        lines.append("browser: cannot be had (%s)" % (why or why_axe))
        tally.add(0, 1, note="the browser tests have no browser: %s" % (why or why_axe))
        return {}
    lines.append("browser: %s, chromedriver %s, %s" % (
        chromium["version"], chromium["driver_version"], toolchain.AXE_CORE.replace("@", " ")))
    return {"MAJORDOMUS_CHROMIUM": chromium["chromium"],
            "MAJORDOMUS_CHROMEDRIVER": chromium["chromedriver"], "MAJORDOMUS_AXE": axe}


def extras(tally, venv_ready):
    """What runs beside the unit suites, one after another; its lines are printed at the
    end: the venv tests (the SDK, the allow-list proof, OpenAPI), the judges, lint, cases."""
    lines = []
    venv = venv_ready()
    if venv:
        env = dict(browser_env(tally, lines), MAJORDOMUS_REQUIRE_VALIDATOR="1")
        started = time.time()
        summary, output = run_unit(venv, VENV_MODULES, env)
        lines.append(unit_line("venv (mcp SDK, jsonschema, openapi-spec-validator, selenium)",
                               summary, output, started))
        tally.add(summary["passed"], summary["failed"], summary["skipped"])
    started = time.time()
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "judges.py")], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    output = proc.stdout.decode("utf-8", "replace").rstrip("\n").splitlines()
    counts = re.match(r"judges: (\d+) checks ok, (\d+) failing\Z", output[-1] if output else "")
    lines += output[:-1]
    passed, failed = (int(counts.group(1)), int(counts.group(2))) if counts else (0, 1)
    lines.append("judges (conformance suite, MCP Inspector, mcpb): %d checks ok, %d failing "
                 "(%.1fs)" % (passed, failed, time.time() - started))
    tally.add(passed, failed)
    if venv:
        lines += fuzz(tally, venv)
        lines.append(lint(tally, venv))
    lines += run_cases(tally, sys.executable)
    lines.append(autocrlf_checkout(tally))
    lines += run_context_oracle(tally)
    lines += run_context_oracle(tally, "context_sync_differential.py", "context sync oracle")
    return lines


def autocrlf_checkout(tally):
    """§24: the checkout cloned with core.autocrlf=true (Git for Windows' default) builds
    the archive a plain clone builds, answers the test layer byte for byte like it, and passes
    the bash cases; one line, one count. Both clones are of HEAD."""
    import test_platform
    started = time.time()
    scratch = tempfile.mkdtemp(prefix="mj-autocrlf-")
    try:
        builds = {}
        for name, value in (("lf", "false"), ("autocrlf", "true")):
            clone = os.path.join(scratch, name)
            support.git(scratch, "-c", "core.autocrlf=" + value, "clone", "-q", ROOT, clone)
            builds[name] = test_platform.build_in(clone)
        with open(builds["lf"], "rb") as lf, open(builds["autocrlf"], "rb") as other:
            same = lf.read() == other.read()
        repo = os.path.join(scratch, "layer")
        support.copy_layer(repo)
        support.git(repo, "init", "-q", "-b", "main")
        support.commit_all(repo, "test layer")
        expected = test_platform.skeleton_answers(builds["lf"], repo)
        difference = test_platform.first_difference(
            expected, test_platform.skeleton_answers(builds["autocrlf"], repo))
        cases = Tally()
        case_lines = run_cases(cases, sys.executable, builds["autocrlf"])
    except Exception as exc:  # a step that cannot run is a failed step, said in one line
        tally.add(0, 1, note="the autocrlf checkout could not be tried")
        return "autocrlf checkout: FAILED: %s: %s (%.1fs)" % (type(exc).__name__, exc,
                                                              time.time() - started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    ok = same and difference is None and cases.failed == 0 and cases.passed > 0
    tally.add(int(ok), int(not ok))
    line = ("autocrlf checkout: %s (archive %s, %d test layer answers %s, cases %d passed, "
            "%d failed) (%.1fs)" % ("ok" if ok else "FAILED", "identical" if same else "DIFFERS",
                                   len(expected), "identical" if difference is None else
                                   "DIFFER", cases.passed, cases.failed, time.time() - started))
    if difference is not None:
        line += "\n  " + difference
    if cases.failed:
        line += "\n" + "\n".join(case_lines)
    return line


PLAIN_TIMEOUT = 1800


def plain_clone(tally):
    """§28: HEAD cloned into an empty temporary folder with nothing beside it and
    MAJORDOMUS_REFERENCE pointing nowhere, and `tests/run_all.py --fast` run there under
    this interpreter, its shards one at a time (it runs beside the other interpreters'
    suites, in one place of the pool): one count, ok when it ends `N passed, 0 failed`.
    (lines, seconds)."""
    started = time.time()
    scratch = tempfile.mkdtemp(prefix="mj-plain-")
    try:
        clone = os.path.join(scratch, "majordomus")
        support.git(scratch, "clone", "-q", ROOT, clone)
        env = dict(os.environ, MAJORDOMUS_REFERENCE=os.path.join(scratch, "shared"),
                   MAJORDOMUS_TEST_JOBS="1")
        proc = subprocess.run([sys.executable, os.path.join("tests", "run_all.py"), "--fast"],
                              cwd=clone, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=PLAIN_TIMEOUT)
        output = proc.stdout.decode("utf-8", "replace").rstrip("\n").splitlines()
    except (subprocess.TimeoutExpired, AssertionError, OSError) as exc:
        output, proc = ["%s: %s" % (type(exc).__name__, exc)], None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    seconds = time.time() - started
    last = output[-1] if output else ""
    counts = re.match(r"(\d+) passed, (\d+) failed", last)
    ok = bool(proc and proc.returncode == 0 and counts and counts.group(2) == "0"
              and int(counts.group(1)) > 0)
    tally.add(int(ok), int(not ok), note=None if ok else "the plain clone's --fast failed")
    lines = ["plain clone (no reference data; --fast, python %s): %s: %s (%.1fs)" % (
        sys.version.split()[0], "ok" if ok else "FAILED", last, seconds)]
    lines += ["  " + line.strip() for line in output if line.strip().startswith("skipped (")]
    if not ok:
        lines += output[-200:]
    return lines, seconds


def run_context_oracle(tally, script="context_differential.py", label="context oracle"):
    """A differential test against the later shell tool: tests/context_differential.py
    (§20.3), or `script` printing its last line the same way under `label`
    (tests/context_sync_differential.py, §33): its lines; its agree and disagree counts."""
    try:
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", script)],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=900)
        output = proc.stdout.decode("utf-8", "replace").rstrip("\n").splitlines()
    except subprocess.TimeoutExpired:
        output = ["%s: timed out after 900 s" % label]
    last = output[-1] if output else ""
    skipped = re.match(re.escape(label) + r": skipped \((.*)\)\Z", last)
    if skipped:                 # no reference data here: one skipped check, said as such
        tally.add(0, 0, 1)
        return ["%s: %s" % (label, skip_lines({skipped.group(1): 1})[0])]
    counts = re.match(re.escape(label) + r": \d+ answers \(.*\): (\d+) agree, (\d+) "
                      r"disagree \(", last)
    passed, failed = (int(counts.group(1)), int(counts.group(2))) if counts else (0, 1)
    tally.add(passed, failed)
    return output


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
    say("unit suite: %d processes at a time, each interpreter's modules in %d shards"
        % (JOBS, len(shards())))
    started = time.time()
    with ThreadPoolExecutor(max_workers=JOBS) as pool, ThreadPoolExecutor(max_workers=1) as side:
        # --fast is the build and the unit suite alone (the README says so). The plain
        # clone's --fast takes one of the pool's places first (one process at a time, like
        # one more interpreter's suite), while the extras run one after another beside.
        plain = None if fast else pool.submit(plain_clone, tally)
        jobs = run_suite(pool, found)
        beside = None if fast else side.submit(extras, tally, lambda: venv_python(tally))
        for interp in found:
            summary, output, record = merged(jobs[interp.label])
            report_unit(tally, "unittest " + interp.label, summary, output, started)
            for line in record:
                say("  " + line)
        for line in beside.result() if beside else ():
            say(line)
        plain_lines, plain_seconds = plain.result() if plain else ([], None)
        for line in plain_lines:
            say(line)
    for note in tally.notes:
        say("note: " + note)
    say("total time %.1fs%s" % (time.time() - began, "" if plain_seconds is None else
                                 " (the plain clone's --fast: %.1fs)" % plain_seconds))
    tail = ", %d skipped" % tally.skipped if tally.skipped else ""
    say("%d passed, %d failed%s" % (tally.passed, tally.failed, tail))
    return 0 if tally.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
