"""The hook (SPEC §30): `majordomus hook` spawned as a client spawns it, warm (an owner
live) and cold, beside `python3 -c pass`; the compact brief's size beside the whole one's."""
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time

import support

from bench import common
from bench.common import (CHILDREN, DEBIAN_PYTHON, GIT_ENV, NotAvailable, PYTHON, REAL_LATEST,
                          ROOT, SPAWN_TIMEOUT, child_env, fmt_ms, last_line, p50, progress)


def printed_command(python):
    """The hook command `--print-config claude-code` prints, its python3 this one."""
    p = subprocess.run([python, common.PYZ, "hook", "--print-config", "claude-code"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=SPAWN_TIMEOUT)
    try:
        command = json.loads(p.stdout.decode("utf-8"))["hooks"]["PreToolUse"][0]["hooks"][0][
            "command"]
    except (ValueError, LookupError) as exc:
        raise NotAvailable("--print-config: %s %s" % (exc, last_line(p.stderr)))
    words = shlex.split(command)
    return [python] + words[1:]


def section_hook(table, real, runs):
    """SPEC §30, `majordomus hook` on real-latest, as a client runs it (the command
    `--print-config claude-code` prints, under this interpreter; its JSON on stdin: a Claude Code Edit of a new file in a governed folder,
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
    warm_run, cold_run = (tempfile.mkdtemp(prefix="mj-hook-", dir=common.runtime_parent())
                          for _ in range(2))
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
        owner = subprocess.Popen([python, common.PYZ, "mcp"], cwd=real, env=envs["warm"],
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
        hook = printed_command(python)
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
