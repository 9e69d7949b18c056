"""What a client asks: context resolution (SPEC §20), the brief (SPEC §26) and ranked
search (SPEC §21), with the quality scripts' figures."""
import os
import re
import subprocess

from bench import common
from bench.common import (CONTEXT_DOCS, GEN_RULES, NotAvailable, PYTHON, ROOT, WARMUP,
                          child_env, exit_text, fmt_ms, inprocess, last_line, lat, p50,
                          progress)
from bench.repos import context_targets, git, make_real_latest
from bench.sessions import ChildGone, open_session

# In-process (python3 -c, the module imported from the archive): the cost of the §20.1
# checks inside index_build, at start-up and in one rebuild. Every check function (and
# ContextTree, which makes the documents' cross checks and tracks expansions) is wrapped by
# a timer; the wrapper's own cost, calibrated on an empty function, is taken off.
CHECKS = r"""
import sys, time, json, statistics
sys.path.insert(0, sys.argv[1])
import majordomus as m
repo, rounds = sys.argv[2], int(sys.argv[3])
acc = [0, 0]
def timed(f):
    def wrapper(*a, **k):
        t0 = time.perf_counter_ns()
        try:
            return f(*a, **k)
        finally:
            acc[0] += time.perf_counter_ns() - t0
            acc[1] += 1
    return wrapper
noop = timed(lambda *a: None)
for _ in range(200000):
    noop(1)
overhead = acc[0] / acc[1]
names = ("check_context_contract", "context_checks", "policy_providers",
         "is_context_convention", "convention_message", "broken_front_is_context")
for name in names:
    setattr(m, name, timed(getattr(m, name)))
Tree = m.ContextTree
class TimedTree(Tree):
    def __init__(self, *a, **k):
        t0 = time.perf_counter_ns()
        try:
            Tree.__init__(self, *a, **k)
        finally:
            acc[0] += time.perf_counter_ns() - t0
            acc[1] += 1
m.ContextTree = TimedTree
def checks():
    return max(0.0, acc[0] - acc[1] * overhead) / 1e9
acc[:] = [0, 0]
counters = m.Counters()
gen, discovered = m.first_generation(repo, "vcs", counters)
start_build = counters.phases["index_build"][1] / 1e9
start_checks, start_calls = checks(), acc[1]
claims, diagnostics, _, listed = discovered
root = gen.root + "/"
signatures = {path: m._stat(root + path) for path, _ in claims}
edited = [path for path, _ in claims if path.endswith("gen-04242.v1.md")] or [claims[-1][0]]
signatures[edited[0]] = None   # read again, as after an edit
builds, shares = [], []
for _ in range(rounds):
    acc[:] = [0, 0]
    t0 = time.perf_counter_ns()
    with m._Building():
        index = m.build_index(gen.decl, claims, diagnostics, counters, gen.index.results,
                              signatures, listed)
    builds.append((time.perf_counter_ns() - t0) / 1e9)
    shares.append(checks())
print(json.dumps({"documents": len(index.context.docs), "objects": len(index.objects),
                  "problems": len(index.context.problems), "overhead_ns": overhead,
                  "start_build": start_build, "start_checks": start_checks,
                  "start_calls": start_calls,
                  "rebuild": statistics.median(builds), "rebuild_checks": statistics.median(shares),
                  "rebuild_calls": acc[1]}))
"""


# In-process: the term index of a 10,000-rule layer, its build time and its memory
# (tracemalloc), and the bytes of the text it indexes.
TERMS = r"""
import sys, time, json, gc, tracemalloc
sys.path.insert(0, sys.argv[1])
import majordomus as m
gen = m.first_generation(sys.argv[2], "vcs", m.Counters())[0]
objects = gen.index.objects
content = sum(len(o.content.encode("utf-8")) for o in objects)
indexed = sum(len(t.encode("utf-8")) for o in objects for t in m._search_fields(o))
t0 = time.perf_counter_ns()
index = m.TermIndex(objects)   # timed untraced: tracemalloc slows every allocation
built = (time.perf_counter_ns() - t0) / 1e9
del index
gc.collect()
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
index = m.TermIndex(objects)
after_build = tracemalloc.get_traced_memory()[0] - base
for n in range(200):
    index.postings(m.query_terms("gen-%05d rule group%02d line %d"
                                 % (n * 37, n % 50, n))[0])
after_queries = tracemalloc.get_traced_memory()[0] - base
tracemalloc.stop()
print(json.dumps({"objects": len(objects), "content": content, "indexed": indexed,
                  "built": built, "memory": after_build, "memory_queries": after_queries}))
"""


def paths_to_ask(table, repo, names):
    """The paths a context or brief row asks about (context_targets, 400 at most), or None
    once each of the rows `names` is marked n/a with the reason."""
    try:
        return context_targets(repo, 400)
    except RuntimeError as e:
        for name in names:
            table.na(name, str(e))
        return None


def section_context(table, repo, label, reps, firsts):
    """§20: majordomus_context on one session: the first call of the generation (a fresh
    session each, after tools/list), then distinct paths and one repeated path."""
    first_name = "majordomus_context, first of the generation (%s)" % label
    distinct_name = "majordomus_context, distinct paths, p50 / p95 (%s)" % label
    repeat_name = "majordomus_context, one path repeated, p50 / p95 (%s)" % label
    progress("context on %s" % label)
    targets = paths_to_ask(table, repo, (first_name, distinct_name, repeat_name))
    if targets is None:
        return
    deepest = sorted(targets, key=lambda t: (-t.count("/"), t))
    session = None
    try:
        firsts_t, sample, session = first_calls(repo, "majordomus_context", lambda k: {
            "path": deepest[k % len(deepest)]}, firsts)
        table.row(first_name, "median %s, max %s (n=%d; %d documents in the chain)" % (
            fmt_ms(p50(firsts_t)), fmt_ms(max(firsts_t)), len(firsts_t),
            len(sample.get("documents", []))), "<= 20 ms", p50(firsts_t) <= 0.020)
        times, chains = [], 0
        for i in range(WARMUP + reps):
            path = targets[(firsts + i) % len(targets)]
            t, value = session.tool("majordomus_context", {"path": path})
            chains += len(value.get("documents", []))
            if i >= WARMUP:
                times.append(t)
        table.row(distinct_name, "%s (%d paths, mean chain %.1f)" % (
            lat(times), min(len(targets), WARMUP + reps), chains / (WARMUP + reps)),
            "p50 <= 1 ms", p50(times) <= 0.001)
        times = []
        for i in range(WARMUP + reps):
            t, _ = session.tool("majordomus_context", {"path": targets[-1]})
            if i >= WARMUP:
                times.append(t)
        table.row(repeat_name, lat(times), "p50 <= 1 ms", p50(times) <= 0.001)
    except (NotAvailable, ChildGone) as e:
        table.na_unprinted((first_name, distinct_name, repeat_name), str(e))
    finally:
        if session is not None:
            session.close()


def first_calls(repo, tool, arguments_of, count):
    """The first call of `tool` in a generation, `count` times, each in a fresh `mcp`
    session after tools/list (arguments_of(k) the k-th's arguments): (their times, the last
    answer, the last session, still open; every other is closed, also on failure)."""
    times, value, session = [], None, None
    try:
        for k in range(count):
            if session is not None:
                session.close()
            session = open_session([PYTHON, common.PYZ, "mcp"], repo)
            session.call("tools/list")
            t, value = session.tool(tool, arguments_of(k))
            times.append(t)
    except BaseException:
        if session is not None:
            session.close()
        raise
    return times, value, session


BRIEF_INTENTS = ["add a rule about commit messages", "fix a bug in the handover",
                 "write a new test", None, "change the checkpoint interval"]


def section_brief(table, repo, label, reps, firsts, first_goal, goal):
    """§26: majordomus_brief on one session: the first call of the generation (a fresh
    session each, after tools/list), then distinct paths (half of them new files), with
    and without an intent."""
    first_name = "majordomus_brief, first of the generation (%s)" % label
    distinct_name = "majordomus_brief, distinct paths, p50 / p95 (%s)" % label
    progress("brief on %s" % label)
    targets = paths_to_ask(table, repo, (first_name, distinct_name))
    if targets is None:
        return
    targets = [t if k % 2 else t + "/new_file_%d.md" % k for k, t in enumerate(targets)]

    def arguments(k):
        out = {"path": targets[k % len(targets)]}
        intent = BRIEF_INTENTS[k % len(BRIEF_INTENTS)]
        if intent:
            out["intent"] = intent
        return out
    session = None
    try:
        firsts_t, sample, session = first_calls(repo, "majordomus_brief", arguments, firsts)
        text = "median %s, max %s (n=%d; %d of %d lines, %d rules)" % (
            fmt_ms(p50(firsts_t)), fmt_ms(max(firsts_t)), len(firsts_t),
            sample["used_lines"], sample["budget_lines"], len(sample["rules"]))
        if first_goal is None:
            table.row(first_name, text)
        else:
            table.row(first_name, text, "<= %d ms" % (first_goal * 1000),
                      p50(firsts_t) <= first_goal)
        times, lines = [], 0
        for i in range(WARMUP + reps):
            t, value = session.tool("majordomus_brief", arguments(firsts + i))
            lines += value["used_lines"]
            if i >= WARMUP:
                times.append(t)
        table.row(distinct_name, "%s (%d paths, mean %.0f lines)" % (
            lat(times), min(len(targets), WARMUP + reps), lines / (WARMUP + reps)),
            "p50 <= %d ms" % (goal * 1000), p50(times) <= goal)
    except (NotAvailable, ChildGone, KeyError) as e:
        table.na_unprinted((first_name, distinct_name), str(e))
    finally:
        if session is not None:
            session.close()


def section_brief_quality(table):
    """§26, §29: tests/brief_quality.py's figures, its line printed."""
    progress("brief quality")
    script = os.path.join(ROOT, "tests", "brief_quality.py")
    try:
        p = subprocess.run([PYTHON, script], cwd=ROOT, env=child_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        line = p.stdout.decode("utf-8", "replace").strip()
        if line.startswith("brief quality: skipped"):       # no reference data here
            raise NotAvailable(line[len("brief quality: "):])
        m = re.search(r"recall ([\d.]+) .*mean ([\d.]+) lines, mean ([\d.]+) characters", line)
        precision = re.search(r"precision ([\d.]+)", line)
        if p.returncode != 0 or not m:
            raise NotAvailable("%s: %s" % (exit_text(p.returncode), line or last_line(p.stderr)))
    except (OSError, subprocess.TimeoutExpired, NotAvailable) as e:
        table.na("brief quality (tests/brief_quality.py)", str(e), "recall >= 0.95")
        return
    recall = float(m.group(1))
    table.row("brief quality: recall within the default budget", "%.3f (%s)" % (
        recall, line), ">= 0.95", recall >= 0.95)
    if precision:       # §29: of what the text shows in full, the share that must be seen
        table.row("brief quality: precision within the default budget", precision.group(1),
                  ">= 0.5", float(precision.group(1)) >= 0.5)
    table.row("brief quality: mean lines, mean characters", "%s lines, %s characters" % (
        m.group(2), m.group(3)), "<= 6000 characters", float(m.group(3)) <= 6000)


def section_context_checks(table, repo, plain, rounds):
    """§20.1's checks: their share of index_build at start-up and in one rebuild."""
    progress("context checks in-process x%d" % rounds)
    for where, label in ((repo, "10,000 rules + %d context documents" % CONTEXT_DOCS),
                         (plain, "10,000 rules, no context document")):
        start_name = "§20.1 checks at start-up, %s" % label
        build_name = "§20.1 checks in one rebuild, %s" % label
        try:
            r = inprocess(CHECKS, where, rounds)
        except NotAvailable as e:
            table.na(start_name, str(e), "<= 5% of index_build")
            table.na(build_name, str(e), "<= 5% of index_build")
            continue
        share = r["start_checks"] / r["start_build"]
        table.row(start_name, "%s of index_build %s (%.1f %%; %d calls)" % (
            fmt_ms(r["start_checks"]), fmt_ms(r["start_build"]), share * 100,
            r["start_calls"]), "<= 5% of index_build", share <= 0.05)
        share = r["rebuild_checks"] / r["rebuild"]
        table.row(build_name, "%s of index_build %s (%.1f %%; median of %d)" % (
            fmt_ms(r["rebuild_checks"]), fmt_ms(r["rebuild"]), share * 100, rounds),
            "<= 5% of index_build", share <= 0.05)
        if where == repo:
            table.note("§20.1 checks: in-process (python3 -c, the module from the archive): "
                       "check_context_contract, context_checks (context_lists_problem and "
                       "ContextDoc), policy_providers, "
                       "is_context_convention, convention_message, broken_front_is_context "
                       "and ContextTree (documents, cross checks, tracks expansions) timed "
                       "by wrappers, their cost (%.0f ns a call) taken off; the rebuild is "
                       "build_index with the previous results and one file's signature "
                       "changed; the tree: %d documents, %d problems" % (
                           r["overhead_ns"], r["documents"], r["problems"]))


SEARCH_WORDS = ("rule", "group", "quick", "fox", "lazy", "dog", "task", "reads", "cites",
                "validator", "enforced", "contributor", "behaviour", "filler", "shape")


def distinct_query(i):
    """A distinct ranked query each time: a rule's number and two words of the bodies."""
    return "gen-%05d %s %s" % ((i * 7919 + 17) % GEN_RULES,
                               SEARCH_WORDS[i % len(SEARCH_WORDS)],
                               SEARCH_WORDS[(i // len(SEARCH_WORDS) + 3) % len(SEARCH_WORDS)])


def section_search(table, big, reps, firsts):
    table.section("ranked search (SPEC §21), 10,000 rules")
    progress("ranked search on 10,000 rules")
    first_name = "first ranked search (term index built), 10,000 rules"
    distinct_name = "ranked majordomus_search, distinct queries, p50 / p95"
    session = None
    try:
        firsts_t = []
        for k in range(firsts):
            if session is not None:
                session.close()
            session = open_session([PYTHON, common.PYZ, "mcp"], big)
            session.call("tools/list")
            t, value = session.tool("majordomus_search", {"query": "how does a task cite "
                                                                   "the rules %d" % k})
            if value.get("mode") != "ranked":
                raise NotAvailable("the answer is not ranked (mode %r)" % value.get("mode"))
            firsts_t.append(t)
        table.row(first_name, "median %s, max %s (n=%d, a fresh session each)" % (
            fmt_ms(p50(firsts_t)), fmt_ms(max(firsts_t)), len(firsts_t)), "<= 150 ms",
            p50(firsts_t) <= 0.150)
        times, counts = [], []
        for i in range(WARMUP + reps):
            t, value = session.tool("majordomus_search", {"query": distinct_query(i)})
            if i >= WARMUP:
                times.append(t)
                counts.append(value.get("total") or value.get("count") or 0)
        table.row(distinct_name, "%s (median total %d)" % (lat(times), p50(counts)),
                  "p50 <= 10 ms", p50(times) <= 0.010)
    except (NotAvailable, ChildGone) as e:
        table.na_unprinted((first_name, distinct_name), str(e))
    finally:
        if session is not None:
            session.close()
    name = "term index memory / indexed text bytes (tracemalloc)"
    try:
        r = inprocess(TERMS, big)
    except NotAvailable as e:
        table.na(name, str(e), "<= 1.5x")
    else:
        ratio = r["memory"] / r["indexed"]
        table.row(name, "%.2fx (%.1f MB for %.1f MB indexed; %.2fx of content's %.1f MB)" % (
            ratio, r["memory"] / 1e6, r["indexed"] / 1e6, r["memory"] / r["content"],
            r["content"] / 1e6), "<= 1.5x", ratio <= 1.5)
        table.row("  after 200 queries' postings", "%.2fx of indexed (%.1f MB)" % (
            r["memory_queries"] / r["indexed"], r["memory_queries"] / 1e6))
        table.row("  TermIndex build, in-process (untraced)",
                  "%s (%d objects)" % (fmt_ms(r["built"]), r["objects"]))
    table.note("ranked search: the first row is the first majordomus_search of a fresh "
               "session (after initialize and tools/list), the term index made within it; "
               "distinct queries name one generated rule and two words of the bodies "
               "(distinct cache keys); memory is tracemalloc's traced bytes held by "
               "TermIndex(objects) just built, against the UTF-8 bytes of the three "
               "searched fields (identity+title+tags, description, content without front "
               "matter) and of the files' content")
    # quality: tests/search_quality.py's own figures, its lines printed
    progress("search quality")
    script = os.path.join(ROOT, "tests", "search_quality.py")
    try:
        p = subprocess.run([PYTHON, script], cwd=ROOT, env=child_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        lines = [l for l in p.stdout.decode("utf-8", "replace").splitlines() if l.strip()]
        if p.returncode != 0 or not lines:
            raise NotAvailable("%s: %s" % (exit_text(p.returncode), last_line(p.stderr)))
        if lines[0].startswith("search quality: skipped"):     # no reference data here
            raise NotAvailable(lines[0][len("search quality: "):])
    except (OSError, subprocess.TimeoutExpired, NotAvailable) as e:
        table.na("search quality (tests/search_quality.py)", str(e),
                 "MRR@10 >= 0.8, recall@5 >= 0.9")
        return
    pattern = re.compile(r"MRR@10 ([\d.]+), recall@5 ([\d.]+)")
    for line in lines:
        m = pattern.search(line)
        mode, which = (line.split() + ["", ""])[:2]
        if m and mode == "ranked" and which == "all":
            # §21's goal (MRR@10 >= 0.8) raised by §26: the brief's intent is a sentence
            mrr, r5 = float(m.group(1)), float(m.group(2))
            table.row("quality, ranked: MRR@10, every question", "%.3f (%s)" % (
                mrr, line.strip()), ">= 0.9", mrr >= 0.9)
            table.row("quality, ranked: recall@5, every question", "%.3f" % r5, ">= 0.9",
                      r5 >= 0.9)
        elif m and mode == "ranked" and which == "natural":
            mrr = float(m.group(1))
            table.row("quality, ranked: MRR@10, natural questions", "%.3f (%s)" % (
                mrr, line.strip()), ">= 0.85", mrr >= 0.85)
        elif m and mode == "unseen" and line.split()[1:3] == ["ranked", "all"]:
            # §29: questions written before the tuning and never tuned on
            mrr = float(m.group(1))
            table.row("quality, ranked: MRR@10, unseen questions", "%.3f (%s)" % (
                mrr, line.strip()), ">= 0.9", mrr >= 0.9)
        else:
            table.row("quality, %s" % mode, line.strip())


# --------------------------------------------------------------------------- §33 rows
# `context affected` and `check-sync` (SPEC §33): a copy of real-latest with a change set of
# 20 files, the capabilities executed in-process (the module from the archive) beside `git
# diff --name-status` run the same way, interleaved.

CONTEXT_SYNC = r"""
import sys, time, json, statistics
sys.path.insert(0, sys.argv[1])
import majordomus as m
repo, reps = sys.argv[2], int(sys.argv[3])
gen = m.first_generation(repo, "vcs", m.Counters())[0]
def clock(f):
    t0 = time.perf_counter_ns()
    value = f()
    return (time.perf_counter_ns() - t0) / 1e9, value
first_sync, sync = clock(lambda: gen.execute("context.sync", {}))
first_affected, affected = clock(lambda: gen.execute("context.affected", {}))
times = {"diff": [], "diff_m_head": [], "affected": [], "sync": []}
for _ in range(reps):
    times["diff"].append(clock(lambda: m._git(repo, "diff", "--name-status"))[0])
    times["affected"].append(clock(lambda: gen.execute("context.affected", {}))[0])
    times["diff_m_head"].append(clock(lambda: m._git(repo, "diff", "--name-status", "-M",
                                                     "HEAD"))[0])
    times["sync"].append(clock(lambda: gen.execute("context.sync", {}))[0])
changes = m.context_changes(repo, "worktree")[0]
print(json.dumps({"first_sync": first_sync, "first_affected": first_affected,
                  "p50": {k: statistics.median(v) for k, v in times.items()},
                  "changes": len(changes), "findings": len(affected["findings"]),
                  "affected": affected["affected"], "status": sync["status"],
                  "fast": m._status_changes(m._git_lines(m._git(
                      repo, "status", "--porcelain=v2", "--branch", "--renames",
                      "-uall"))) is not None}))
"""


def context_sync_repo(tmp):
    """real-latest with its stand-ins, two provider templates committed, then a change set
    of 20 files: documents modified, moved, added and deleted; the manifest and the policy;
    a projection edited; tracked stand-ins; untracked files. None without the fixture."""
    real = make_real_latest(os.path.join(tmp, "sync"))
    if real is None:
        return None
    for name in ("agents", "claude-code"):
        with open(_mkdirs_for(os.path.join(real, ".ai", "repo", "providers", name + ".tmpl")),
                  "w") as f:
            f.write("# %s\n" % name)
    git(real, "add", "-A")
    git(real, "commit", "-q", "--no-gpg-sign", "-m", "templates")
    appended = [".ai/repo/rules/README.md", ".ai/repo/skills/README.md",
                ".ai/repo/knowledge/curated/README.md", ".ai/manifest.yaml",
                ".ai/repo/policy.yaml", "AGENTS.md", "docs/SHELL.md", "lib/rules.sh",
                "lib/prompt.sh", "lib/doctrine.sh", "lib/check.sh", "share/allow/prompt.txt",
                "docs/claims/adr-propose.md"]
    for rel in appended:
        with open(os.path.join(real, rel), "a") as f:
            f.write("\n# changed for the benchmark\n")
    git(real, "mv", ".ai/repo/prompts/README.md", ".ai/repo/prompts/guide.md")
    git(real, "mv", ".ai/repo/workflows/README.md", ".ai/repo/knowledge/curated/flows.md")
    git(real, "rm", "-q", ".ai/repo/applications/README.md")
    for rel, text in ((".ai/repo/rules/project/notes.md", "---\nschema: context/v1\nid: "
                       "ai.repo.rules.project.notes\nkind: context\ntitle: Notes\ndescription: "
                       "Notes.\nstatus: active\nscope: subtree\nproviders: [\"*\"]\n"
                       "composition: extend\norder: 100\n---\n# Notes\n"),
                      ("docs/new-page.md", "# new\n"), ("lib/new.sh", "echo new\n"),
                      ("share/new.txt", "new\n")):
        _mkdirs_for(os.path.join(real, rel))
        with open(os.path.join(real, rel), "w") as f:
            f.write(text)
    git(real, "add", ".ai/repo/rules/project/notes.md", "docs/new-page.md")
    return real


def _mkdirs_for(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def section_context_sync(table, tmp, reps):
    """§33: `context affected` on real-latest with a 20-file change set, p50 <= 1.2x `git
    diff --name-status` alone; `check-sync` p50 after the first <= 5 ms."""
    table.section("context affected and check-sync (SPEC §33): in-process, real-latest")
    affected_name = "context affected, 20-file change set, p50 vs git diff --name-status"
    sync_name = "context check-sync, p50 after the first"
    progress("context affected and check-sync on real-latest")
    try:
        repo = context_sync_repo(tmp)
        if repo is None:
            raise NotAvailable("no fixture at %s" % common.REAL_LATEST)
        r = inprocess(CONTEXT_SYNC, repo, reps)
    except (NotAvailable, RuntimeError, OSError) as e:
        table.na(affected_name, str(e), "<= 1.2x")
        table.na(sync_name, str(e), "<= 5 ms")
        return
    p = r["p50"]
    ratio = p["affected"] / p["diff"]
    table.row(affected_name, "%s vs %s (%.2fx; -M HEAD alone %s; %d changes, %d findings, "
              "%s)" % (fmt_ms(p["affected"]), fmt_ms(p["diff"]), ratio,
                       fmt_ms(p["diff_m_head"]), r["changes"], r["findings"],
                       "one git status" if r["fast"] else "two git commands"),
              "<= 1.2x", ratio <= 1.2)
    table.row(sync_name, "%s (first %s; %s; n=%d)" % (fmt_ms(p["sync"]),
                                                      fmt_ms(r["first_sync"]), r["status"], reps),
              "<= 5 ms", p["sync"] <= 0.005)
