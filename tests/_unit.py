"""Run unittest modules under this interpreter; the last stdout line is a JSON summary.

Usage: python tests/_unit.py [MODULE ...]   (default: discover tests/test_*.py)

MAJORDOMUS_TEST_EXCLUDE (a comma list of module.Class) leaves those classes out: the test
command runs them under its first interpreter only (run_all.ONCE).

MAJORDOMUS_TEST_OWN_BUILD=1: the tests run an archive this interpreter builds first, into a
temporary folder (support.PYZ reads MAJORDOMUS_TEST_PYZ), not the checkout's majordomus.pyz:
the test command sets it for every interpreter but the one that built the checkout's, whose
bytecode the archive carries (started by another interpreter, the archive compiles the
module at every start: about 0.2 s of CPU). test_platform.CheckoutArchiveTest compares the
two archives' answers under this interpreter.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))


def without(suite, excluded):
    """suite without the tests of the classes named in excluded (module.Class)."""
    kept = unittest.TestSuite()
    for test in suite:
        if isinstance(test, unittest.TestSuite):
            kept.addTest(without(test, excluded))
        elif "%s.%s" % (type(test).__module__, type(test).__name__) not in excluded:
            kept.addTest(test)
    return kept


def own_build(folder):
    """This interpreter's build of the archive in folder, as MAJORDOMUS_TEST_PYZ; None, or
    why it could not be built."""
    target = os.path.join(folder, "majordomus.pyz")
    proc = subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "build_zipapp.py"),
                           target], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        return "this interpreter's build failed: " + proc.stdout.decode("utf-8", "replace")
    os.environ["MAJORDOMUS_TEST_PYZ"] = target
    return None


def main(names):
    if not os.environ.get("MAJORDOMUS_TEST_OWN_BUILD"):
        return run(names)
    folder = tempfile.mkdtemp(prefix="mj-own-build-")
    try:
        why = own_build(folder)
        if why is None:
            return run(names)
        sys.stdout.write(why + "\n")
        sys.stdout.write("RESULT " + json.dumps({
            "python": sys.version.split()[0], "run": 0, "passed": 0, "failed": 1, "skipped": 0,
            "failures": [why.splitlines()[0]], "skips": {}}) + "\n")
        return 1
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(names):
    """Run the tests named (every test_*.py when none); write the summary line."""
    loader = unittest.TestLoader()
    if names:
        suite = unittest.TestSuite(loader.loadTestsFromName(n) for n in names)
    else:
        suite = loader.discover(HERE, pattern="test_*.py", top_level_dir=HERE)
    excluded = set(filter(None, os.environ.get("MAJORDOMUS_TEST_EXCLUDE", "").split(",")))
    if excluded:
        suite = without(suite, excluded)
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=1).run(suite)
    # A test counts once however many of its subtests fail, so the counts add up to `run`.
    failing = []
    for test, _ in result.failures + result.errors + [(t, None) for t in
                                                      result.unexpectedSuccesses]:
        name = str(getattr(test, "test_case", test))
        if name not in failing:
            failing.append(name)
    failed = len(failing)
    skipped = len({str(test) for test, _ in result.skipped})
    # Why tests were skipped, and how many each reason: the test command prints one line
    # a reason (`skipped (no reference data at PATH): N tests`).
    reasons = {}
    for test, reason in {str(test): reason for test, reason in result.skipped}.items():
        reasons[reason] = reasons.get(reason, 0) + 1
    summary = {"python": sys.version.split()[0], "run": result.testsRun,
               "passed": max(result.testsRun - failed - skipped, 0), "failed": failed,
               "skipped": skipped, "failures": failing, "skips": reasons}
    sys.stdout.write("RESULT " + json.dumps(summary) + "\n")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
