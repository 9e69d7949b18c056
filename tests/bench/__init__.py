"""Performance benchmark of majordomus (standard library only, Python 3.9+).

Run from the checkout (tests/bench.py is the one entry point; this package holds its areas):

    python3 tests/bench.py [--quick] [--only SECTIONS] [--pyz PATH] [--old COMMIT]

It builds majordomus.pyz first (build_zipapp.py, same interpreter) when the archive is
missing or older than majordomus.py, creates two scratch repositories under a temporary
directory (the skeleton fixture, the skeleton plus 10,000 generated rules, and the three
below), measures,
prints one table to stdout (progress goes to stderr), stops every process it started and
removes the scratch directory.

Every spawn figure is the median of N runs (N=10, 3 with --quick) after one discarded
warm-up run; ratios are against `python3 -c pass` spawned by the same interpreter
(sys.executable), its runs interleaved with the measured row's runs so that both see the
same machine load (the baseline row pools all of them). Spawn rows also show the child's
CPU time (user + system, median; the mcp session's includes its exit after stdin closes),
which tells a slow program from a busy machine; the targets apply to wall time. Latency
rows are p50/p95 over single requests sent one at a time on one long-lived session (each
request is written, then its answer line is awaited). Pipelined rows write a whole batch
of requests at once and read all answers, and report the mean time per request. Everything
runs on loopback; every loop is bounded by a count and a deadline.

Beside this build it measures main before the §20-§24 work, commit 0436a0f (OLD_COMMIT),
built into the scratch directory from `git archive` with that commit's build_zipapp.py, in
the same run and interleaved with this build's figures. Three more scratch repositories:
the reference data's fixtures/real-latest/ (with an empty stand-in committed at each path
its `tracks` name, so that its context tree validates), 10,000 rules plus 200 context documents in a
deep tree (§20), and 20,000 rules (§23's peak RSS).

Rows, by the issue they measure (each printed with its goal and "met" / "not met"):
- §23 lean start-up: spawn -> initialize on the skeleton and real-latest as a ratio to
  `-c pass` (<= 2.5x), on this interpreter and on Debian's /usr/bin/python3 when present
  (its own `-c pass` as baseline); `mcp --inspect` on 10,000 rules vs 0436a0f (<= 0.6x);
  spawn -> initialize vs its --inspect (<= 1.1x); peak RSS (VmHWM of a session after its
  initialize answer) at 20,000 rules (<= 3 x file bytes + 40 MB) and at 10,000 rules vs
  0436a0f (<= 0.6x); one edited rule -> new generation vs 0436a0f. Beside them, the
  floor (FLOOR_BODY): the archive's module loaded, one git listing, every claimed file
  read and parsed by the module's reader and nothing else, on real-latest and on 10,000
  rules: what any start-up doing its whole work must exceed. Beside real-latest's rows, a
  bare archive (BARE_MAIN) that answers one line: what running any .pyz costs.
- §20 context: majordomus_context first of a generation (<= 20 ms), distinct paths and a
  repeated path (p50 <= 1 ms) on real-latest and on the 200-document tree; the §20.1
  checks' share of index_build at start-up and in one rebuild (<= 5 %), in-process with
  the check functions timed by wrappers.
- §21 ranked search: the first search of a fresh session (term index made) <= 150 ms,
  distinct queries p50 <= 10 ms, the term index's memory (tracemalloc) <= 1.5x the text it
  indexes; tests/search_quality.py's figures (MRR@10 >= 0.9 on every question and >= 0.85
  on the natural ones, §26; recall@5 >= 0.9).
- §22 pages: /ui/, object pages and a kind page of 50 on 10,000 rules (first request apart),
  serve spawn -> first /api/v1/repository answer vs 0436a0f; and every page on real-latest
  (p50 after the first <= 5 ms; the context page <= the brief alone + 2 ms), alone with
  `--only pages`.
- §24: spawn -> initialize and one sweep at 10,000 unchanged files beside 0436a0f's.
Also the earlier rows: the shipped kinds' load in-process; `server/discover` (2026-07-28)
beside `initialize` at spawn; MCP over pipes; paged list and substring search beside
0436a0f (SPEC §16); POST /mcp tools/call, legacy session and modern, beside REST GET on
keep-alive connections (§19); and the live layer's costs (§15.5): request p50 watching vs
--no-watch, one sweep and one rebuild read from majordomus_perf's phases, idle CPU from
/proc/<pid>/stat (60 s; 10 s with --quick), and the latency of
notifications/resources/list_changed after `git add`. The live sections run last, because
they edit and stage files in the scratch repositories.

The package, by area (each section's rows come from one module; bench.run prints them in
the order of SECTIONS):
  common    the settings, statistics, the table, the processes it starts and stops
  repos     the scratch repositories (skeleton, generated rules, real-latest, context tree)
  sessions  an `mcp` child over pipes, read with select: frames, answers, sessions
  builds    this build, the earlier commit's, the floor and a bare archive
  startup   spawn, memory, kinds (§23, §24)
  protocol  mcp, paging (MCP over pipes, §16)
  web       http, ui, pages (REST and /mcp over HTTP, the pages: §19, §22)
  answers   context, brief, search (§20, §26, §21)
  shared    shared (§27)
  live      live (§15.5)
  fuzzing   fuzz (tests/fuzz.py --rate)
  run       the options, the facts printed first, the sections in order
"""
