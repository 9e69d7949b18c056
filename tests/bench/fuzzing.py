"""The fuzz suite's throughput (tests/fuzz.py --rate)."""
import os
import re
import subprocess

from bench.common import ROOT, exit_text, last_line, progress


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
