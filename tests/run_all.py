#!/usr/bin/env python3
"""The one test command: build the zipapp, then run every test and print `N passed, N failed`.

With no argument it runs every step below (what `.ci/run` runs); `--fast` runs the steps build
and unit under this interpreter only; `--only STEP` runs the steps named (the option may be
repeated, and takes a comma list); `--help` prints the usage and the steps and starts
nothing. The steps, in the order they run:

  build           python3 build_zipapp.py twice: the two archives must be byte-identical (the
                  second, majordomus.pyz, is the archive under test; a step that needs it
                  builds it first);
  unit            the unittest suite (tests/test_*.py) under every CPython 3.9-3.15 found on
                  the machine (pyenv versions, or python3.X on PATH) and under 3.14 and 3.15
                  with the newest git in a Debian unstable root (tests/toolchain.py: made once
                  with debootstrap, kept outside the checkout; where it cannot be made the
                  command says why and goes on). The modules in ONCE (differentials that no
                  interpreter changes, and a fixed wait on the product's own clock) run under
                  the first interpreter only; every other module under each. Each
                  interpreter's modules in SHARDS processes, JOBS processes at a time;
  beside it, one after another:
  venv            a virtual environment .venv/ (gitignored) with the official MCP Python SDK,
                  jsonschema, an OpenAPI validator, pyflakes and selenium, and the tests that
                  need them (VENV_MODULES), the browser tests in Debian's headless Chromium
                  with axe-core (tests/toolchain.py);
  judges          tests/judges.py: the official MCP conformance suite against serve's /mcp,
                  the MCP Inspector CLI over stdio and HTTP, and the MCP Bundle CLI (`mcpb
                  validate`) on the bundle of build_zipapp.py --mcpb, installed with Node 22
                  into .tools/;
  fuzz            tests/fuzz.py (Hypothesis in the venv): a fixed seed, bounded counts;
  lint            pyflakes (in the venv) over the product and the tests;
  cases           the bash cases test/cases/*.sh against the built majordomus.pyz (with MJ
                  naming the shell tool $MAJORDOMUS_REFERENCE/oracle/shell/bin/majordomus
                  when it is there);
  autocrlf        HEAD cloned with core.autocrlf=true (Git for Windows' default): its build
                  must be a plain clone's archive, answer the test layer byte for byte alike
                  and pass the cases;
  context-oracle  the differential tests of context against the later shell tool: resolution
                  (tests/context_differential.py) and list, validate, affected and check-sync
                  (tests/context_sync_differential.py), each once;
  and in the unit suites' pool, first:
  plain-clone     HEAD cloned into an empty temporary folder with no reference data beside it
                  (MAJORDOMUS_REFERENCE pointing nowhere), and `tests/run_all.py --fast` run
                  there under this interpreter, one process at a time: 0 failed, its skipped
                  groups named, its wall time printed at the end beside the whole command's.
Tests that compare with reference data (support.REFERENCE: $MAJORDOMUS_REFERENCE, default
../shared) are skipped by name where it is absent; each reason is one line
`skipped (no reference data at PATH): N tests`.

Nothing is imported from tests/ before the arguments are read: support makes a runtime
folder when imported, and --help (or a refused argument) must start and write nothing.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
support = toolchain = None      # tests/support.py and tests/toolchain.py, once a run starts

# What runs under one interpreter only (the first: this one), and why: what it judges no
# interpreter changes. A module, or a class (module.Class) the other interpreters leave out
# (tests/_unit.py's MAJORDOMUS_TEST_EXCLUDE). Everything else runs under each interpreter:
# the program's own code paths, its threads, sockets, subprocesses and encodings.
PY_TWIN = ("a class run again through majordomus.py instead of the archive: every interpreter "
           "runs it through the archive, and the source entry itself under test_cli, "
           "test_layer, test_mcp and test_one_answer")
ONCE = {
    "test_identity": "every answer compared byte for byte with a build of an old commit, "
                     "both run by one interpreter",
    "test_oracle": "the reader judged against the shell tool's, document by document",
    "test_http_deadline": "a fixed 30 s wait on the server's own head deadline",
    "test_hostile.LiveSymlinkPyTest": PY_TWIN,
    "test_hostile.FifoPyTest": PY_TWIN,
    "test_hostile.DepthPyTest": PY_TWIN,
    "test_hostile.CliNumbersPyTest": PY_TWIN,
    "test_hostile.IdPyTest": PY_TWIN,
    "test_hostile.BrokenStartPyTest": PY_TWIN,
    "test_live.FollowPyTest": PY_TWIN,
    "test_live.NotifyPyTest": PY_TWIN,
}
ONCE_MODULES = [name for name in ONCE if "." not in name]
ONCE_CLASSES = [name for name in ONCE if "." in name]
# (name, what it does): the steps of the full run, in their order; --only names them.
STEPS = [
    ("build", "two builds of majordomus.pyz, byte-identical"),
    ("unit", "the unittest suite under every CPython 3.9-3.15 found or made (--fast: this "
             "interpreter only), but for %s and %d classes run again through majordomus.py: "
             "under the first one only" % (", ".join(ONCE_MODULES), len(ONCE_CLASSES))),
    ("venv", "the tests that need .venv: the MCP SDK, jsonschema, OpenAPI, the browser"),
    ("judges", "the MCP conformance suite, the MCP Inspector CLI, mcpb validate (.tools/)"),
    ("fuzz", "tests/fuzz.py, Hypothesis in .venv: a fixed seed, bounded counts"),
    ("lint", "pyflakes in .venv over the product and the tests"),
    ("cases", "the bash cases test/cases/*.sh against majordomus.pyz"),
    ("autocrlf", "HEAD cloned with core.autocrlf=true: the same archive, answers, cases"),
    ("context-oracle", "tests/context_differential.py and tests/context_sync_differential.py "
                       "against the later shell tool"),
    ("plain-clone", "HEAD cloned with no reference data beside it, and --fast run there"),
]
STEP_NAMES = [name for name, _ in STEPS]
FAST_STEPS = ("build", "unit")
# The steps that test majordomus.pyz: the build runs before them (once) when not chosen.
NEEDS_ARCHIVE = ("unit", "venv", "judges", "cases", "context-oracle")


def parse_args(argv):
    """The run's options: (the steps to run, in STEPS order; fast). An unknown flag or step
    exits 2 with the usage (argparse), before anything has started."""
    parser = argparse.ArgumentParser(
        prog="python3 tests/run_all.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The one test command: builds the zipapp and runs every test, then prints "
                    "`N passed, N failed`\n(`, N skipped` after it where tests were skipped). "
                    "With no option it runs every step\n(about 25 minutes on two cores; "
                    "`.ci/run` runs exactly that).",
        epilog="steps, in the order they run:\n" + "".join(
            textwrap.fill(text, 88, initial_indent="  %-16s" % name, subsequent_indent=" " * 18)
            + "\n" for name, text in STEPS) +
        "\n--only may be repeated and takes a comma list (--only cases,lint). A step that "
        "tests\nmajordomus.pyz builds it first. --help starts nothing and writes nothing.")
    parser.add_argument("--fast", action="store_true",
                        help="the steps build and unit, under this interpreter only (a few "
                             "minutes); with --only, the steps named, under this interpreter")
    parser.add_argument("--only", metavar="STEP", action="append", default=[],
                        help="only this step (repeat the option, or give a comma list; the "
                             "steps are below)")
    args = parser.parse_args(argv)
    chosen = [name.strip() for value in args.only for name in value.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in STEP_NAMES]
    if unknown or (args.only and not chosen):
        parser.error("unknown step %s (the steps: %s)" % (", ".join(map(repr, unknown)) or "''",
                                                           ", ".join(STEP_NAMES)))
    if not chosen:
        chosen = list(FAST_STEPS) if args.fast else list(STEP_NAMES)
    if any(name in NEEDS_ARCHIVE for name in chosen) and "build" not in chosen:
        chosen.append("build")
    return [name for name in STEP_NAMES if name in chosen], args.fast


def load_helpers():
    """tests/support.py and tests/toolchain.py, imported when a run starts (support makes
    the tests' runtime folder as it is imported)."""
    global support, toolchain, SHELL_TOOL
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    import support as support_module
    import toolchain as toolchain_module
    support, toolchain = support_module, toolchain_module
    SHELL_TOOL = support.reference("oracle", "shell", "bin", "majordomus")


VENV = os.path.join(ROOT, ".venv")
# mcp 2.x has the 2026-07-28 Client; the stamp holds this list, so a change rebuilds .venv.
VENV_PACKAGES = ["mcp>=2.3.0", "openapi-spec-validator", "jsonschema", "pyflakes",
                 "selenium>=4.20,<5", "hypothesis>=6.100,<7"]
LINTED = ["majordomus.py", "build_zipapp.py", "tests"]
MINORS = range(9, 16)
SHELL_TOOL = None       # the shell tool of the era, under the reference data (load_helpers)


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
    scratch = tempfile.mkdtemp(prefix="mj-build-")
    try:
        for target in (os.path.join(scratch, "a.pyz"), os.path.join(ROOT, "majordomus.pyz")):
            proc = subprocess.run([sys.executable, os.path.join(ROOT, "build_zipapp.py"),
                                   target], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if proc.returncode != 0:
                say(proc.stdout.decode("utf-8", "replace"))
                tally.add(0, 1, note="build failed")
                return False
            with open(target, "rb") as handle:
                digests.append(hashlib.sha256(handle.read()).hexdigest())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)     # (1.5 MB a run, left in /tmp before)
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


# Seconds each module takes under one interpreter on a quiet machine, roughly (the first
# interpreter, every test): the modules are dealt into SHARDS groups of about equal time
# (unknown modules count 5 s), so that the long waits (the 30 s head deadline, the live
# layer's sweeps) run beside the rest.
MODULE_SECONDS = {"test_live": 40, "test_hostile": 34, "test_http_deadline": 30,
                  "test_context": 19, "test_platform": 17, "test_cli": 14, "test_brief": 14,
                  "test_layer": 13, "test_shared": 13, "test_identity": 11, "test_search": 9,
                  "test_mcp_http": 9, "test_http": 8, "test_one_answer": 8, "test_mcp": 8,
                  "test_oracle": 7, "test_mcp_modern": 7, "test_paging": 6, "test_prompts": 6,
                  "test_markdown": 5, "test_kinds": 4, "test_glob": 4, "test_lean": 3,
                  "test_registry": 3, "test_bundle": 2, "test_allow_lists": 1,
                  "test_warnings": 2, "test_pages": 2, "test_runner": 1, "test_readme": 1,
                  "test_subset": 1, "test_context_sync": 6, "test_hostile_peers": 35,
                  "test_worktrees": 20, "test_install": 8, "test_sections": 1,
                  "test_hook": 12}
SHARDS = 3
JOBS = int(os.environ.get("MAJORDOMUS_TEST_JOBS", "3"))
RECORDED = ("oracle: ",)   # lines a test prints to say what it judged, shown every run
VENV_MODULES = ["sdk_client_test", "venv_sdk_test", "venv_allow_test",
                "test_http.HttpRoutesTest.test_openapi", "venv_browser_selftest", "venv_ui_test",
                "venv_pages_test", "venv_hook_test"]


def unit_modules():
    """Every unit module, by name (tests/test_*.py)."""
    return sorted(os.path.basename(p)[:-3]
                  for p in glob.glob(os.path.join(ROOT, "tests", "test_*.py")))


def shards(modules):
    """`modules` dealt into SHARDS lists of about equal time, heaviest first."""
    groups = [[0, []] for _ in range(SHARDS)]
    for module in sorted(modules, key=lambda m: -MODULE_SECONDS.get(m, 5)):
        group = min(groups, key=lambda g: g[0])
        group[0] += MODULE_SECONDS.get(module, 5)
        group[1].append(module)
    return [names for _, names in sorted(groups, key=lambda g: -g[0]) if names]


def suite_plan(found):
    """{label: ([shard, …], environment)}: every test under the first interpreter, on the
    checkout's archive; under the others, the modules but ONCE's, without ONCE's classes,
    each process on an archive its interpreter builds first (tests/_unit.py: the checkout's
    carries the first interpreter's bytecode, and another interpreter compiles the module
    at every start of it; test_platform.CheckoutArchiveTest compares the two). Under one
    interpreter there is no other: --fast runs every test."""
    every = unit_modules()
    per_interpreter = [module for module in every if module not in ONCE_MODULES]
    others = {"MAJORDOMUS_TEST_EXCLUDE": ",".join(ONCE_CLASSES),
              "MAJORDOMUS_TEST_OWN_BUILD": "1"}
    return {interp.label: (shards(every), {}) if n == 0 else (shards(per_interpreter), others)
            for n, interp in enumerate(found)}


def plan_lines(found):
    """What runs once and what under each interpreter, as the run prints it."""
    every = unit_modules()
    lines = ["unit suite: %d processes at a time, each interpreter's modules in up to %d shards"
             % (JOBS, SHARDS)]
    if len(found) > 1:
        lines.append("  under each of the %d interpreters: %d modules, but %d classes; once, "
                     "under %s only:" % (len(found), len(every) - len(ONCE_MODULES),
                                        len(ONCE_CLASSES), found[0].label))
        reasons = []
        for name, reason in ONCE.items():
            if reason not in reasons:
                reasons.append(reason)
        for reason in reasons:
            names = [name for name in ONCE if ONCE[name] == reason]
            lines.append("    %s: %s" % (", ".join(names), reason))
        lines.append("  the interpreters after the first run the suite on an archive each "
                     "builds itself; test_platform.CheckoutArchiveTest compares its answers "
                     "with the checkout's archive's")
    else:
        lines.append("  one interpreter: every test (%d modules)" % len(every))
    return lines


def run_suite(pool, found):
    """Every interpreter's suite, each in its shards: {label: [future, …]}, the first
    shard of each interpreter submitted before the second of any."""
    plan = suite_plan(found)
    jobs = {interp.label: [] for interp in found}
    for index in range(max(len(groups) for groups, _ in plan.values())):
        for interp in found:
            groups, env = plan[interp.label]
            if index < len(groups):
                jobs[interp.label].append(pool.submit(run_unit, interp, groups[index], env))
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


def extras(tally, steps):
    """The chosen steps that run beside the unit suites, one after another; their lines are
    printed at the end: the venv tests (the SDK, the allow-list proof, OpenAPI, the
    browser), the judges, fuzz, lint, the cases, the autocrlf clone, the context oracle."""
    lines = []
    venv = venv_python(tally) if {"venv", "fuzz", "lint"} & set(steps) else None
    if venv and "venv" in steps:
        env = dict(browser_env(tally, lines), MAJORDOMUS_REQUIRE_VALIDATOR="1")
        started = time.time()
        summary, output = run_unit(venv, VENV_MODULES, env)
        lines.append(unit_line("venv (mcp SDK, jsonschema, openapi-spec-validator, selenium)",
                               summary, output, started))
        tally.add(summary["passed"], summary["failed"], summary["skipped"])
    if "judges" in steps:
        lines += run_judges(tally)
    if venv and "fuzz" in steps:
        lines += fuzz(tally, venv)
    if venv and "lint" in steps:
        lines.append(lint(tally, venv))
    if "cases" in steps:
        lines += run_cases(tally, sys.executable)
    if "autocrlf" in steps:
        lines.append(autocrlf_checkout(tally))
    if "context-oracle" in steps:
        lines += run_context_oracle(tally)
        lines += run_context_oracle(tally, "context_sync_differential.py", "context sync oracle")
    return lines


def run_judges(tally):
    """tests/judges.py: its lines, and one line with its counts."""
    started = time.time()
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "judges.py")], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    output = proc.stdout.decode("utf-8", "replace").rstrip("\n").splitlines()
    counts = re.match(r"judges: (\d+) checks ok, (\d+) failing\Z", output[-1] if output else "")
    passed, failed = (int(counts.group(1)), int(counts.group(2))) if counts else (0, 1)
    tally.add(passed, failed)
    return output[:-1] + ["judges (conformance suite, MCP Inspector, mcpb): %d checks ok, "
                          "%d failing (%.1fs)" % (passed, failed, time.time() - started)]


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


def main(argv=None):
    steps, fast = parse_args(sys.argv[1:] if argv is None else argv)
    load_helpers()
    tally = Tally()
    began = time.time()
    if len(steps) < len(STEP_NAMES):
        say("steps: %s%s" % (", ".join(steps), " (this interpreter only)" if fast else ""))
    if "build" in steps and not build(tally):
        say("%d passed, %d failed" % (tally.passed, tally.failed))
        return 1
    found = []
    if "unit" in steps:
        if fast:
            found = [Interpreter(sys.version.split()[0], [sys.executable], "")]
            missing = []
        else:
            found, missing = interpreters()
        say("interpreters: %s%s" % (", ".join(i.label for i in found), "; not on this "
                                    "machine: " + ", ".join(missing) if missing else ""))
        for line in plan_lines(found):
            say(line)
    side_steps = [step for step in steps if step not in ("build", "unit", "plain-clone")]
    started = time.time()
    with ThreadPoolExecutor(max_workers=JOBS) as pool, ThreadPoolExecutor(max_workers=1) as side:
        # The plain clone's --fast takes one of the pool's places first (one process at a
        # time, like one more interpreter's suite), while the other steps run one after
        # another beside.
        plain = pool.submit(plain_clone, tally) if "plain-clone" in steps else None
        jobs = run_suite(pool, found) if found else {}
        beside = side.submit(extras, tally, side_steps) if side_steps else None
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
