"""The test command's own options (SPEC §32): `tests/run_all.py --help` prints the usage and
its steps and starts and writes nothing; an unknown flag or step exits 2 with the usage.

Each run is in a scratch copy of tests/ (run_all finds the checkout as the parent of its
folder): a run started by mistake could not touch this checkout, and would end at once
(there is no build_zipapp.py beside the copy). The copy runs with bytecode writing on, so
that importing anything from tests/ would leave a __pycache__ behind."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import support

RUN_ALL = os.path.join(support.ROOT, "tests", "run_all.py")
# What a run writes into the checkout: none of it may appear after --help or a refusal.
RUN_WRITES = (".venv", ".tools", ".hypothesis", "majordomus.pyz", "majordomus.mcpb",
              os.path.join("tests", "__pycache__"))


def declared(name, pattern):
    """The names run_all declares in its block `name` (read from its source: the test must
    not need to import it), by pattern."""
    with open(RUN_ALL, encoding="utf-8") as handle:
        text = handle.read()
    start = text.index("\n%s = " % name)
    return re.findall(pattern, text[start:text.index("\n}", start) if name == "ONCE" else
                                    text.index("\n]\n", start)], re.M)


def steps():
    """The steps of run_all, in their order."""
    return declared("STEPS", r'^    \("([a-z-]+)", ')


def once():
    """The modules run_all runs under one interpreter only."""
    return declared("ONCE", r'^    "(test_[\w.]+)": ')


def tree(root):
    """Every path under root with its size and modification time."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            info = os.lstat(path)
            found[os.path.relpath(path, root)] = (info.st_size, info.st_mtime_ns)
    return found


class RunAllOptionsTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.checkout = tempfile.mkdtemp(prefix="mj-test-")
        cls.addClassCleanup(shutil.rmtree, cls.checkout, True)
        shutil.copytree(os.path.join(support.ROOT, "tests"),
                        os.path.join(cls.checkout, "tests"),
                        ignore=shutil.ignore_patterns("__pycache__", ".bench", "fixtures"))
        cls.steps = steps()

    def run_all(self, *args):
        """(exit code, stdout, stderr, seconds) of the copy's run_all.py with args."""
        env = support.base_env()
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        before = tree(self.checkout)
        began = time.monotonic()
        proc = subprocess.run([sys.executable, os.path.join("tests", "run_all.py")]
                              + list(args), cwd=self.checkout, env=env, timeout=60,
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        seconds = time.monotonic() - began
        after = tree(self.checkout)
        self.assertEqual(sorted(set(after) ^ set(before)), [], "run_all %s wrote" % (args,))
        self.assertEqual(after, before, "run_all %s changed files" % (args,))
        for rel in RUN_WRITES:
            self.assertFalse(os.path.lexists(os.path.join(self.checkout, rel)), rel)
        return (proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8"),
                seconds)

    def test_the_steps_are_known(self):
        self.assertEqual(self.steps, ["build", "unit", "venv", "judges", "fuzz", "lint",
                                      "cases", "autocrlf", "context-oracle", "plain-clone"])

    def test_help_prints_the_usage_and_every_step(self):
        for flag in ("--help", "-h"):
            with self.subTest(flag=flag):
                code, out, err, seconds = self.run_all(flag)
                self.assertEqual((code, err), (0, ""), out)
                self.assertTrue(out.startswith("usage: python3 tests/run_all.py [-h] [--fast] "
                                               "[--only STEP]\n"), out)
                for option in ("--fast", "--only STEP"):
                    self.assertIn(option, out)
                listed = out[out.index("steps, in the order they run:"):]
                for step in self.steps:
                    self.assertRegex(listed, r"\n  %s +\S" % re.escape(step))
                # no run: no build line, no count
                self.assertNotRegex(out, r"(?m)^(build: |\d+ passed, \d+ failed)")
                self.assertLess(seconds, 30, "--help took %.1f s" % seconds)

    def test_help_wins_over_the_other_options(self):
        code, out, err, _ = self.run_all("--fast", "--only", "build", "--help")
        self.assertEqual((code, err), (0, ""))
        self.assertTrue(out.startswith("usage: "), out)

    def test_an_unknown_flag_exits_two_with_the_usage(self):
        for args in (["--bogus"], ["--fast", "--bogus"], ["fast"], ["--only"]):
            with self.subTest(args=args):
                code, out, err, _ = self.run_all(*args)
                self.assertEqual((code, out), (2, ""), err)
                self.assertTrue(err.startswith("usage: python3 tests/run_all.py "), err)
                self.assertIn("error: ", err)
        self.assertIn("unrecognized arguments: --bogus", self.run_all("--bogus")[2])

    def test_an_unknown_step_exits_two_naming_the_steps(self):
        for value in ("nope", "build,nope", ""):
            with self.subTest(only=value):
                code, out, err, _ = self.run_all("--only", value)
                self.assertEqual((code, out), (2, ""), err)
                self.assertIn("unknown step", err)
                self.assertIn(", ".join(self.steps), err)


class RunAllReadmeTest(unittest.TestCase):
    """The README's maintainers' part names every step and says what runs once."""

    def test_the_readme_names_every_step_and_the_once_modules(self):
        with open(os.path.join(support.ROOT, "README.md"), encoding="utf-8") as handle:
            readme = handle.read()
        test = readme[readme.index("\n### Test\n"):]
        test = test[:test.index("\n### ", 1)]
        for name in ["`%s`" % step for step in steps()] + once() + ["--only", "--help"]:
            self.assertTrue(name in test, "the README's Test section does not name " + name)
        self.assertTrue(once())


if __name__ == "__main__":
    unittest.main()
