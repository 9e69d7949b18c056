"""Run unittest modules under this interpreter; the last stdout line is a JSON summary.

Usage: python tests/_unit.py [MODULE ...]   (default: discover tests/test_*.py)

MAJORDOMUS_TEST_EXCLUDE (a comma list of module.Class) leaves those classes out: the test
command runs them under its first interpreter only (run_all.ONCE).
"""
import json
import os
import sys
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


def main(names):
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
