"""Start-up (SPEC §23, §24): spawn -> first answer, peak memory, the shipped kinds."""
import json
import os
import subprocess
import time

from bench import common
from bench.common import (BIG_RULES, DEBIAN_PYTHON, NotAvailable, PYTHON, REAL_LATEST,
                          SPAWN_TIMEOUT, child_env, children_cpu, exit_text, first_line,
                          fmt_ms, in_turns, last_line, p50, p95, progress, run_once,
                          timed_run, vm_hwm)
from bench.repos import tree_bytes
from bench.sessions import (ChildGone, INITIALIZE, MODERN, MODERN_META, Pipe, Session, frame,
                            rpc_error)

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

    def first_answer_once(repo, payload, what, pyz=common.PYZ, python=PYTHON, shared=False):
        def once():
            c0 = children_cpu()
            pipe = Pipe([python, pyz, "mcp"], repo, shared)
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

    def versus(name, new, old, target, limit, what=common.OLD_COMMIT):
        """A row comparing one median with another (by default the previous version's)."""
        if new is None or old is None:
            table.na(name, old_reason if old is None and old_reason and what == common.OLD_COMMIT
                     else "a figure is missing", target)
            return
        table.row(name, "%.2fx (%s vs %s)" % (new / old, fmt_ms(new), fmt_ms(old)), target,
                  new / old <= limit)

    initialize = frame(1, "initialize", INITIALIZE)
    discover = frame(1, "server/discover", {"_meta": MODERN_META})
    no_target = lambda wall, ratio, walls: None
    lean = lambda wall, ratio, walls: ratio <= 2.5

    group([("majordomus.pyz mcp --inspect, skeleton",
            inspect_once(common.PYZ, skel, "skeleton"), "<= 4x",
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
            # as a client starts it (§27: the owner), the trees its last start kept (the
            # warm-up's) read instead of parsed
            entries.append(("spawn -> initialize answer, real-latest, an owner%s" % tag,
                            first_answer_once(real, initialize, "initialize", python=python,
                                              shared=True),
                            "<= 2.8x (issue 31)", lambda wall, ratio, walls: ratio <= 2.8))
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
                inspect_once(common.PYZ, big, "10,000 rules"), "< 1.5 s wall",
                lambda wall, ratio, walls: wall < 1.5),
               ("spawn -> initialize answer, 10,000 rules",
                first_answer_once(big, initialize, "initialize"), "-", no_target),
               ("spawn -> server/discover answer (%s), 10,000 rules" % MODERN,
                first_answer_once(big, discover, "server/discover"),
                "<= initialize row (+5 %)", lambda wall, ratio, walls: None
                if walls[1] is None else wall <= walls[1] * DISCOVER_SLACK)]
    if old_pyz:
        entries += [("%s mcp --inspect, 10,000 rules (previous)" % common.OLD_COMMIT,
                     inspect_once(old_pyz, big, "10,000 rules (%s)" % common.OLD_COMMIT), "-",
                     no_target),
                    ("%s spawn -> initialize answer, 10,000 rules (previous)" % common.OLD_COMMIT,
                     first_answer_once(big, initialize, "initialize", pyz=old_pyz), "-",
                     no_target)]
    if floor[0]:
        entries.append(("  floor: module, git, every file read and parsed, 10,000 rules",
                        first_answer_once(big, initialize, "initialize", pyz=floor[0]), "-",
                        no_target))
    medians = group(entries)
    old_inspect = medians[3] if old_pyz else None
    old_init = medians[4] if old_pyz else None
    versus("§23 mcp --inspect, 10,000 rules: this build / %s" % common.OLD_COMMIT, medians[0],
           old_inspect, "<= 0.6x", 0.6)
    if floor[0]:
        if medians[-1] is not None and old_inspect is not None:
            table.row("  the floor / %s's --inspect, 10,000 rules" % common.OLD_COMMIT, "%.2fx" % (
                medians[-1] / old_inspect))
    else:
        table.na("§23 floor (module, git, files read and parsed)", floor[1])
    versus("§23 spawn -> initialize / its --inspect, 10,000 rules", medians[1], medians[0],
           "<= 1.1x", 1.1, what="inspect")
    versus("§24 spawn -> initialize, 10,000 files: this build / %s" % common.OLD_COMMIT,
           medians[1], old_init, "<= 1.05x (unchanged)", 1.05)
    table.rows[base_row] = ("row", "python3 -c pass (baseline, n=%d)" % len(pooled_wall),
                            "%s (1.00x); cpu %s" % (fmt_ms(p50(pooled_wall)),
                                                    fmt_ms(p50(pooled_cpu))), "-", "-")


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
    specs = [("this build, %d rules" % BIG_RULES, common.PYZ, huge),
             ("this build, 10,000 rules", common.PYZ, big)]
    if old_pyz:
        specs += [("%s, 10,000 rules (previous)" % common.OLD_COMMIT, old_pyz, big),
                  ("%s, %d rules (previous)" % (common.OLD_COMMIT, BIG_RULES), old_pyz, huge)]
    figures = [[] for _ in specs]
    failed = {}
    for _, k in in_turns(len(specs), n, failed):
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
    name = "§23 peak RSS, 10,000 rules: this build / %s" % common.OLD_COMMIT
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
    old_name = "%s: shipped_kinds() + the skeleton's lists" % common.OLD_COMMIT
    added_name = "added to start-up by the shipped kinds"
    progress("kinds at start-up x%d" % n)
    try:
        p = subprocess.run([PYTHON, common.PYZ, "mcp", "--inspect", "--format", "json"], cwd=skel,
                           env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=SPAWN_TIMEOUT)
        used = sorted(json.loads(p.stdout.decode("utf-8"))["repository"]["kinds"])
    except Exception as e:
        for name in (new_name, old_name, added_name):
            table.na(name, "the skeleton's kinds: %s: %s" % (type(e).__name__, e))
        return
    programs = [(new_name, [PYTHON, "-c", KINDS_NEW, common.PYZ, ",".join(used)])]
    if old_pyz:
        programs.append((old_name, [PYTHON, "-c", KINDS_NEW, old_pyz, ",".join(used)]))
    figures = [[] for _ in programs]
    info = [None] * len(programs)
    failed = {}
    for i, k in in_turns(len(programs), n + 1, failed):
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
        table.row(added_name, "%+.2f ms (this build - %s)" % (added * 1000, common.OLD_COMMIT),
                  "<= +2 ms", added <= 0.002)
    table.note("kinds at start-up: each figure is measured inside a fresh python3 -c that "
               "imported the module from the archive; the import itself is not included. "
               "The skeleton uses kinds %s; this build compiles a shipped list on first use "
               "(here %s); %s the same way (%s)." % (
                   ", ".join(used), lists_of[0], common.OLD_COMMIT, lists_of[1]))
