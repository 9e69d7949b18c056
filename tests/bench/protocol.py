"""MCP over pipes: request latency and pipelining, paged lists and search (SPEC §16)."""
import json
import time

from bench import common
from bench.common import (GEN_RULES, NotAvailable, PYTHON, RULE_URI, SPAWN_TIMEOUT, WARMUP,
                          exit_text, fmt_ms, lat, p50, p95, progress)
from bench.sessions import (ChildGone, Pipe, case_variant, frame, open_session, rpc_error,
                            structured)


def measure_requests(pipe, make, reps, start_id):
    """Send make(i) one at a time; return (latencies, error or None, next id, first
    measured answer line)."""
    times = []
    id_ = start_id
    sample = None
    for i in range(WARMUP + reps):
        payload = frame(id_, *make(i))
        id_ += 1
        t0 = time.perf_counter()
        line = pipe.transact(payload, 1)[0]
        t = time.perf_counter() - t0
        if i == 0 or i == WARMUP or len(line) < (1 << 20):
            err = rpc_error(line)
            if err:
                return times, err, id_, None
        if i == WARMUP:
            sample = line
        if i >= WARMUP:
            times.append(t)
    return times, None, id_, sample


def search_count(line):
    try:
        return json.loads(line.decode("utf-8"))["result"]["structuredContent"]["count"]
    except (ValueError, KeyError, TypeError):
        return None


def section_mcp(table, repo, label, reps, heavy_reps, big):
    table.section("MCP over pipes, one session, %s: one request at a time, p50 / p95" % label)
    progress("mcp session on %s" % label)
    pipe = Pipe([PYTHON, common.PYZ, "mcp"], repo)
    rows = [
        ("ping", lambda i: ("ping", None), reps, None, None),
        ("resources/read %s" % RULE_URI.split("/")[-1],
         lambda i: ("resources/read", {"uri": RULE_URI}), reps, ("p50 <= 0.3 ms", 0.0003),
         None),
        ("resources/list", lambda i: ("resources/list", None),
         heavy_reps if big else reps, ("p50 <= 60 ms", 0.060) if big else None, None),
        ("tools/call majordomus_search, distinct queries",
         lambda i: ("tools/call", {"name": "majordomus_search", "arguments": {
             "query": "gen-%05d" % ((i * 7919 + 17) % GEN_RULES)}}),
         heavy_reps if big else reps, ("p50 <= 150 ms", 0.150) if big else None,
         1 if big else 0),
        ("tools/call majordomus_search, cached repeat",
         lambda i: ("tools/call", {"name": "majordomus_search", "arguments": {
             "query": "gen-04242"}}), reps, None, 1 if big else 0),
    ]
    next_id = 1
    dead = None
    try:
        try:
            pipe.transact(frame(next_id, "initialize", {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "majordomus-bench", "version": "0"}}), 1,
                SPAWN_TIMEOUT)
            next_id += 1
            pipe.transact(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n', 0)
        except ChildGone as e:
            dead = str(e)
        for name, make, n, target, hits in rows:
            tname, limit = target if target else ("-", None)
            if dead:
                table.na(name, dead, tname)
                continue
            progress("mcp %s: %s x%d" % (label, name, n))
            try:
                times, err, next_id, sample = measure_requests(pipe, make, n, next_id)
            except ChildGone as e:
                dead = "server gone: %s" % e
                table.na(name, dead, tname)
                continue
            if err:
                table.na(name, err, tname)
                continue
            value = "%s / %s (n=%d)" % (fmt_ms(p50(times)), fmt_ms(p95(times)), len(times))
            table.row(name, value, tname, None if limit is None else p50(times) <= limit)
            if hits is not None and search_count(sample) != hits:
                table.note("%s on %s: the search answered count=%s, expected %d (each "
                           "query names one generated rule): the row may not measure a "
                           "full scan" % (name, label, search_count(sample), hits))
        # pipelined: the whole batch written at once, all answers read
        for name, method, params in (
                ("ping, pipelined", "ping", None),
                ("resources/read, pipelined", "resources/read", {"uri": RULE_URI})):
            name = "%s x%d (mean per request)" % (name, reps)
            if dead:
                table.na(name, dead)
                continue
            payload = b"".join(frame(next_id + i, method, params) for i in range(reps))
            try:
                t0 = time.perf_counter()
                lines = pipe.transact(payload, reps)
                t = time.perf_counter() - t0
            except ChildGone as e:
                dead = "server gone: %s" % e
                table.na(name, dead)
                continue
            next_id += reps
            err = rpc_error(lines[0]) or rpc_error(lines[-1])
            if err:
                table.na(name, err)
                continue
            table.row(name, "%s (%.0f req/s)" % (fmt_ms(t / reps), reps / t))
    finally:
        rc = pipe.close()
    if not dead and rc not in (0, None):
        table.note("mcp session on %s, after stdin closed: %s" % (
            label, rc if isinstance(rc, str) else exit_text(rc)))


BROAD = "quick brown fox"   # a line of every generated rule, of nothing else


def interleave(specs, n):
    """specs: [(session, tool, make_arguments(i))]; WARMUP + n rounds, one request of each
    spec per round (the order reversed every other round). Returns per spec (times, first
    measured structuredContent or None, error or None)."""
    out = [[[], None, None] for _ in specs]
    for i in range(WARMUP + n):
        order = list(range(len(specs)))
        if i % 2:
            order.reverse()
        for k in order:
            if out[k][2] is not None:
                continue
            session, tool, make = specs[k]
            try:
                t, line = session.call("tools/call", {"name": tool, "arguments": make(i)})
            except ChildGone as e:
                out[k][2] = "server gone: %s" % e
                continue
            if i == 0 or i == WARMUP:
                try:
                    value = structured(line)
                except NotAvailable as e:
                    out[k][2] = str(e)
                    continue
                if i == WARMUP:
                    out[k][1] = value
            if i >= WARMUP:
                out[k][0].append(t)
    return out


def last_page_cursor(session, tool, arguments, big_limit, limit):
    """Page once through (big_limit per page, then `limit` per page over the last big
    page): (the cursor whose page at `limit` is the last one, pages asked). The cursors
    are keysets, so one found at big_limit pages on at any limit."""
    asked, start = 0, None
    for size in (big_limit, limit):
        cursor = start
        while True:
            if asked >= 2000:
                raise NotAvailable("more than 2000 pages")
            args = dict(arguments, limit=size)
            if cursor is not None:
                args["cursor"] = cursor
            value = session.tool(tool, args)[1]
            asked += 1
            if value.get("next_cursor") is None:
                break
            cursor = value["next_cursor"]
        start = cursor   # its page, at this size, is the last one
    if start is None:
        raise NotAvailable("everything fits on the first page: no last page to ask for")
    return start, asked


def section_paging(table, big, reps, list_reps, old_pyz, old_reason):
    """Every paged request beside the same request to 0436a0f, which already paged (§16): the
    issue that brought paging compared each page with the unpaged list of its day, a build
    that is no longer the baseline; what must hold now is that no page got slower (§23)."""
    table.section("paged answers (SPEC §16), 10,000 rules: p50 / p95 of tools/call, this "
                  "build's session interleaved with %s's answering the same request"
                  % common.OLD_COMMIT)
    progress("paging on 10,000 rules")
    names = ["majordomus_list first page (default limit 50)",
             "majordomus_list last page (default limit, cursor)",
             "majordomus_list first page, limit 500 (max)",
             "majordomus_search substring, distinct 1-hit queries (one page)",
             "majordomus_search substring '%s', first page" % BROAD,
             "majordomus_search substring '%s', last page (cursor)" % BROAD]
    target = "<= 1.05x %s (unchanged)" % common.OLD_COMMIT
    sessions = []
    try:
        try:
            new = open_session([PYTHON, common.PYZ, "mcp"], big)
            sessions.append(new)
            old = None
            if old_pyz:
                old = open_session([PYTHON, old_pyz, "mcp"], big)
                sessions.append(old)
            list_cursor, list_pages = last_page_cursor(new, "majordomus_list", {}, 500, 50)
            search_cursor, search_pages = last_page_cursor(
                new, "majordomus_search", {"query": BROAD, "mode": "substring"}, 200, 20)
        except (NotAvailable, ChildGone) as e:
            for name in names:
                table.na(name, str(e), target)
            return
        table.note("paging: the last pages' cursors were found by paging once (%d list "
                   "pages, %d search pages, at the maximum limit and then the default), and "
                   "both builds are asked for the same page (the cursor's format is the "
                   "same); objects.list has no cache; objects.search has a process cache (64 "
                   "entries per generation), so every search row varies its key: 'gen-NNNNN' "
                   "with distinct numbers, and '%s' with a distinct letter case per request "
                   "(the needle is lower-cased, the cache key is not); '%s' matches the "
                   "10,000 generated rules and nothing else, at the default limit 20; "
                   "%s's search is the substring search, so it is not told the mode" % (
                       list_pages, search_pages, BROAD, BROAD, common.OLD_COMMIT))

        def one_hit(i):
            return {"query": "gen-%05d" % ((i * 7919 + 17) % GEN_RULES)}

        def broad(i):
            return {"query": case_variant(BROAD, i)}

        def substring(make, **more):
            return lambda i: dict(make(i), mode="substring", **more)

        def cursor_at(make, cursor):
            return lambda i: dict(make(i), cursor=cursor)

        nothing = lambda i: {}  # noqa: E731
        rows = [("majordomus_list", nothing, nothing, list_reps),
                ("majordomus_list", cursor_at(nothing, list_cursor),
                 cursor_at(nothing, list_cursor), list_reps),
                ("majordomus_list", lambda i: {"limit": 500}, lambda i: {"limit": 500},
                 list_reps),
                ("majordomus_search", substring(one_hit), one_hit, reps),
                ("majordomus_search", substring(broad), broad, reps),
                ("majordomus_search", substring(broad, cursor=search_cursor),
                 cursor_at(broad, search_cursor), reps)]
        for name, (tool, make_new, make_old, n) in zip(names, rows):
            specs = [(new, tool, make_new)] + ([(old, tool, make_old)] if old else [])
            results = interleave(specs, n)
            times, sample, err = results[0]
            if err:
                table.na(name, err, target)
                continue
            value = lat(times)
            if isinstance(sample, dict) and sample.get("count") is not None:
                value += " count=%s total=%s" % (sample.get("count"), sample.get("total"))
            if old is None:
                table.na(name, "%s; %s" % (value, old_reason or "no previous build"), target)
                continue
            old_times, old_sample, old_err = results[1]
            if old_err:
                table.na(name, "%s; %s: %s" % (value, common.OLD_COMMIT, old_err), target)
                continue
            if (isinstance(sample, dict) and isinstance(old_sample, dict)
                    and sample.get("count") != old_sample.get("count")):
                value += " (%s: count=%s)" % (common.OLD_COMMIT, old_sample.get("count"))
            ratio = p50(times) / p50(old_times)
            table.row(name, "%s; %.2fx %s's %s" % (value, ratio, common.OLD_COMMIT,
                                                    fmt_ms(p50(old_times))),
                      target, ratio <= 1.05)
    finally:
        for session in sessions:
            session.close()
