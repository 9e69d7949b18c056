"""The benchmark's entry: its options, the facts it prints first, the sections in order."""
import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

from bench import common
from bench.common import (BIG_RULES, CONTEXT_DOCS, GEN_RULES, HTTP_CLIENTS, PYTHON,
                          REAL_LATEST, REPS, SPAWN_TIMEOUT, Table, WARMUP, child_env, cleanup,
                          first_line, fmt_ms, p50, progress, run_once)
from bench.repos import make_context_repo, make_real_latest, make_repos, make_rules_repo
from bench.builds import build, build_bare, build_floor, build_old
from bench.startup import section_kinds, section_memory, section_spawn
from bench.protocol import section_mcp, section_paging
from bench.web import section_http, section_pages_real, section_ui
from bench.live import section_live
from bench.answers import (section_brief, section_brief_quality, section_context,
                           section_context_checks, section_search, section_context_sync)
from bench.shared import section_peers, section_shared
from bench.hook import section_hook
from bench.fuzzing import section_fuzz


def facts(runs, reps, heavy_reps, per_client):
    lines = ["majordomus benchmark"]
    lines.append("python    %s (%s)" % (platform.python_version(), PYTHON))
    lines.append("cpus      %s (os.cpu_count())" % os.cpu_count())
    lines.append("platform  %s" % platform.platform())
    try:
        lines.append("load      %.2f %.2f %.2f (1/5/15 min average at start)"
                     % os.getloadavg())
    except (AttributeError, OSError):
        pass
    try:
        g = subprocess.run(["git", "--version"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        lines.append("git       %s" % first_line(g.stdout))
    except (OSError, subprocess.TimeoutExpired):
        lines.append("git       unavailable")
    if os.path.exists(common.PYZ):
        try:
            v = subprocess.run([PYTHON, common.PYZ, "--version"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
            lines.append("program   %s (%s, %d bytes)" % (
                first_line(v.stdout) or "--version: exit %d" % v.returncode, common.PYZ,
                os.path.getsize(common.PYZ)))
        except (OSError, subprocess.TimeoutExpired) as e:
            lines.append("program   %s (%s)" % (common.PYZ, e))
    lines.append("runs      N=%d per spawn median; %d requests per latency row (%d for "
                 "list/search over 10,000 rules), %d warm-up; HTTP %d clients x %d"
                 % (runs, reps, heavy_reps, WARMUP, HTTP_CLIENTS, per_client))
    return "\n".join(lines)


def repo_facts(repo, label):
    """Objects and state per `mcp --inspect --format json` (informational)."""
    try:
        p = subprocess.run([PYTHON, common.PYZ, "mcp", "--inspect", "--format", "json"], cwd=repo,
                           env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=SPAWN_TIMEOUT)
        doc = json.loads(p.stdout.decode("utf-8"))
        report = doc.get("repository", {})
        errors = sum(1 for d in report.get("diagnostics", []) if d.get("severity") == "error")
        return "%s: %s objects, %d resources, %d tools, state %s%s" % (
            label, report.get("objects"), len(doc.get("resources", [])),
            len(doc.get("tools", [])), report.get("state"),
            ", %d error diagnostic(s)" % errors if errors else "")
    except Exception:
        return None


SECTIONS = ("spawn", "memory", "kinds", "context", "brief", "search", "ui", "pages", "mcp",
            "paging", "http", "fuzz", "shared", "sync", "peers", "hook", "live")


def main(argv=None):
    ap = argparse.ArgumentParser(description="majordomus performance benchmark")
    ap.add_argument("--quick", action="store_true",
                    help="3 spawn runs instead of 10, fewer heavy requests, a 10 s idle "
                    "window instead of 60 s, fewer live rounds")
    ap.add_argument("--only", metavar="SECTIONS",
                    help="only these sections, comma-separated: " + ", ".join(SECTIONS))
    ap.add_argument("--pyz", metavar="PATH",
                    help="measure this archive instead of the checkout's majordomus.pyz")
    ap.add_argument("--old", metavar="COMMIT", default=common.OLD_COMMIT,
                    help="the earlier commit measured beside this build (default %s)"
                    % common.OLD_COMMIT)
    args = ap.parse_args(argv)
    wanted = set(SECTIONS if not args.only else args.only.split(","))
    unknown = wanted - set(SECTIONS)
    if unknown:
        ap.error("unknown section(s): %s (the sections: %s)" % (
            ", ".join(sorted(unknown)), ", ".join(SECTIONS)))
    if args.pyz:
        common.PYZ = os.path.abspath(args.pyz)
    common.OLD_COMMIT = args.old
    runs = 3 if args.quick else 10
    reps = REPS
    heavy_reps = 50 if args.quick else REPS
    list_reps = 10 if args.quick else 40
    per_client = 100 if args.quick else 250

    table = Table()
    reason = build() if not args.pyz else None
    print(facts(runs, reps, heavy_reps, per_client))
    tmp = tempfile.mkdtemp(prefix="mj-bench-")
    whole = wanted == set(SECTIONS)
    try:
        progress("creating scratch repositories under %s (%d generated rules)"
                 % (tmp, GEN_RULES))
        t0 = time.perf_counter()
        skel, big = make_repos(tmp)
        needs = lambda *names: any(name in wanted for name in names)  # noqa: E731
        real = (make_real_latest(tmp) if needs("spawn", "context", "brief", "pages", "shared",
                                             "hook")
                else None)
        ctx = make_context_repo(tmp) if needs("context", "brief") else None
        huge = make_rules_repo(tmp, BIG_RULES) if needs("memory", "shared") else None
        progress("scratch repositories made in %.1f s" % (time.perf_counter() - t0))
        old_pyz, old_reason = (build_old(tmp) if needs("spawn", "memory", "kinds", "ui",
                                                       "paging", "live")
                               else (None, "not measured (--only)"))
        if old_pyz:
            print("previous  %s (%s, %d bytes, built from git archive %s)" % (
                common.OLD_COMMIT, os.path.basename(old_pyz), os.path.getsize(old_pyz),
                common.OLD_COMMIT))
        else:
            print("previous  %s unavailable: %s" % (common.OLD_COMMIT, old_reason))
        if not whole:
            print("sections  %s (--only)" % ", ".join(s for s in SECTIONS if s in wanted))
        if reason is None and whole:
            for repo, label in ((skel, "skeleton"), (big, "10,000 rules"),
                                (real, "real-latest (tracks stand-ins)"),
                                (ctx, "10,000 rules + %d context documents" % CONTEXT_DOCS),
                                (huge, "%d rules" % BIG_RULES)):
                info = repo and repo_facts(repo, label)
                if info:
                    print("repo      " + info)
        print("")
        if reason is not None:
            table.section("spawn")
            walls = [run_once([PYTHON, "-c", "pass"], skel)[0] for _ in range(runs + 1)][1:]
            table.row("python3 -c pass (baseline, n=%d)" % runs, "%s (1.00x)" % fmt_ms(p50(walls)))
            for name in ("majordomus.pyz mcp --inspect", "MCP over pipes", "HTTP serve"):
                table.na(name, reason)
        else:
            if "spawn" in wanted:
                section_spawn(table, skel, big, real, runs, old_pyz, old_reason,
                              build_floor(tmp), build_bare(tmp))
            if "memory" in wanted:
                section_memory(table, big, huge, runs, old_pyz, old_reason)
            if "kinds" in wanted:
                section_kinds(table, skel, runs, old_pyz, old_reason)
            if "context" in wanted:
                table.section("context resolution (SPEC §20): majordomus_context over pipes")
                if real:
                    section_context(table, real, "real-latest", reps, 3)
                else:
                    table.na("majordomus_context, real-latest", "no fixture at %s"
                             % REAL_LATEST)
                section_context(table, ctx, "10,000 rules + %d documents" % CONTEXT_DOCS,
                                reps, 3)
                section_context_checks(table, ctx, big, 3 if args.quick else 7)
            if "brief" in wanted:
                table.section("the brief (SPEC §26): majordomus_brief over pipes")
                if real:
                    section_brief(table, real, "real-latest", reps, 3, 0.050, 0.005)
                else:
                    table.na("majordomus_brief, real-latest", "no fixture at %s"
                             % REAL_LATEST)
                section_brief(table, ctx, "10,000 rules + %d documents" % CONTEXT_DOCS,
                              reps, 3, None, 0.020)
                section_brief_quality(table)
            if "search" in wanted:
                section_search(table, big, reps, 3)
            if "ui" in wanted:
                section_ui(table, big, 50 if args.quick else reps, runs, old_pyz, old_reason)
            if "pages" in wanted:
                section_pages_real(table, real, 50 if args.quick else reps)
            if "mcp" in wanted:
                section_mcp(table, skel, "skeleton", reps, reps, False)
                section_mcp(table, big, "10,000 rules", reps, heavy_reps, True)
            if "paging" in wanted:
                section_paging(table, big, heavy_reps, list_reps, old_pyz, old_reason)
            if "http" in wanted:
                section_http(table, skel, "skeleton", reps, per_client, True)
                section_http(table, big, "10,000 rules", reps, per_client, False)
            if "fuzz" in wanted:
                section_fuzz(table, 3 if args.quick else 10)
            if "shared" in wanted:
                section_shared(table, skel, real, big, huge, runs, reps)
            if "sync" in wanted:
                section_context_sync(table, tmp, reps)
            if "peers" in wanted:
                section_peers(table, skel, tmp, reps)
            if "hook" in wanted:
                section_hook(table, real, runs)
            # last: these sections edit and stage files in the scratch repositories
            if "live" in wanted:
                section_live(table, skel, "skeleton", reps, False, args.quick)
                section_live(table, big, "10,000 rules", reps, True, args.quick, old_pyz,
                             old_reason)
        print(table.render())
        sys.stdout.flush()
    finally:
        cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0
