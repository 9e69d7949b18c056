"""HTTP: REST and /mcp on keep-alive connections (SPEC §19), the pages (SPEC §22)."""
import json
import os
import re
import subprocess
import threading
import time
import http.client
import urllib.parse

from bench import common
from bench.common import (Child, GEN_RULES, HTTP_CLIENTS, NotAvailable, PYTHON, REAL_LATEST,
                          REQUEST_TIMEOUT, ROOT, RULE_URI, SPAWN_TIMEOUT, WARMUP, child_env,
                          exit_text, first_line, fmt_ms, in_turns, last_line, lat, p50, p95,
                          progress, stop)
from bench.repos import context_targets
from bench.sessions import INITIALIZE, LEGACY, MODERN, MODERN_META, frame, rpc_error


class Server(Child):
    """`majordomus.pyz serve --port 0`; the port is parsed from its stderr log."""

    def __init__(self, repo, pyz=None, shared=False):
        pyz = pyz or common.PYZ
        self.spawn([PYTHON, pyz, "serve", "--port", "0"], repo, child_env(shared),
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.host = self.port = None
        deadline = time.monotonic() + SPAWN_TIMEOUT
        pattern = re.compile(r"listening on http://(\S+):(\d+)")
        while time.monotonic() < deadline:
            m = pattern.search(self.stderr_text())
            if m:
                self.host, self.port = m.group(1).strip("[]"), int(m.group(2))
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.002)
        rc = self.proc.poll()
        reason = last_line(self.stderr_text())
        self.stop()
        if rc is None:
            raise NotAvailable("no 'listening on' line within %d s" % SPAWN_TIMEOUT)
        raise NotAvailable("%s%s" % (exit_text(rc), ": " + reason if reason else ""))

    def connect(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=REQUEST_TIMEOUT)

    def stop(self):
        rc = stop(self.proc)
        try:
            self.err.close()
        except OSError:
            pass
        return rc


def http_get(conn, path):
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read()
    return resp.status, body, resp.will_close


def http_post(conn, path, body, headers):
    conn.request("POST", path, body=body, headers=headers)
    resp = conn.getresponse()
    data = resp.read()
    return resp.status, data, resp.will_close, resp


MCP_HEADERS = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}


def section_mcp_http(table, server, label, reps):
    """POST /mcp tools/call majordomus_get, legacy session and modern, beside REST GET,
    each on its own keep-alive connection, the three interleaved request by request."""
    rest_path = "/api/v1/object?uri=" + urllib.parse.quote(RULE_URI, safe="")
    names = ["GET /api/v1/object (rule), keep-alive, beside /mcp",
             "POST /mcp tools/call majordomus_get, legacy session",
             "POST /mcp tools/call majordomus_get, modern %s" % MODERN]
    targets = ["-", "<= 1.5x GET", "<= 1.5x GET"]
    progress("http /mcp on %s" % label)
    conns = [server.connect() for _ in names]
    try:
        try:
            status, body, _, resp = http_post(conns[1], "/mcp", frame(1, "initialize",
                                                                      INITIALIZE), MCP_HEADERS)
            sid = resp.getheader("Mcp-Session-Id")
            if status != 200 or not sid:
                raise NotAvailable("initialize over /mcp: HTTP %d%s: %s" % (
                    status, "" if sid else ", no Mcp-Session-Id", first_line(body)))
            legacy_headers = dict(MCP_HEADERS, **{"Mcp-Session-Id": sid,
                                                  "MCP-Protocol-Version": LEGACY})
            status, body, _, _ = http_post(
                conns[1], "/mcp", b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                legacy_headers)
            if status != 202:
                raise NotAvailable("notifications/initialized over /mcp: HTTP %d" % status)
        except (NotAvailable, OSError, http.client.HTTPException) as e:
            for name, target in zip(names, targets):
                table.na(name, str(e), target)
            return
        modern_headers = dict(MCP_HEADERS, **{"MCP-Protocol-Version": MODERN,
                                              "Mcp-Method": "tools/call",
                                              "Mcp-Name": "majordomus_get"})
        arguments = {"uri": RULE_URI}

        def rest(i):
            return http_get(conns[0], rest_path)

        def legacy(i):
            body = frame(2 + i, "tools/call", {"name": "majordomus_get",
                                               "arguments": arguments})
            return http_post(conns[1], "/mcp", body, legacy_headers)[:3]

        def modern(i):
            body = frame(2 + i, "tools/call", {"name": "majordomus_get",
                                               "arguments": arguments,
                                               "_meta": MODERN_META})
            return http_post(conns[2], "/mcp", body, modern_headers)[:3]

        calls = [rest, legacy, modern]
        times = [[] for _ in calls]
        errors = [None] * len(calls)
        closes = [0] * len(calls)
        for i in range(WARMUP + reps):
            order = list(range(len(calls)))
            if i % 2:
                order.reverse()
            for k in order:
                if errors[k]:
                    continue
                try:
                    t0 = time.perf_counter()
                    status, body, will_close = calls[k](i)
                    t = time.perf_counter() - t0
                except (OSError, http.client.HTTPException) as e:
                    errors[k] = "%s: %s" % (type(e).__name__, e)
                    continue
                if status != 200:
                    errors[k] = "HTTP %d: %s" % (status, first_line(body))
                    continue
                if i == 0:
                    if k:
                        err = rpc_error(body)
                        if err:
                            errors[k] = err
                            continue
                    try:
                        doc = json.loads(body.decode("utf-8"))
                        if k:
                            doc = doc["result"]["structuredContent"]
                    except (ValueError, KeyError, TypeError):
                        doc = None
                    if not isinstance(doc, dict) or doc.get("uri") != RULE_URI:
                        errors[k] = "the answer does not carry uri %s" % RULE_URI
                        continue
                closes[k] += bool(will_close)
                if i >= WARMUP:
                    times[k].append(t)
        rest_p50 = None if errors[0] else p50(times[0])
        for k, (name, target) in enumerate(zip(names, targets)):
            if errors[k]:
                table.na(name, errors[k], target)
                continue
            value = lat(times[k])
            if closes[k]:
                value += " reconnects=%d" % closes[k]
            if k == 0 or rest_p50 is None:
                table.row(name, value, target if k else "-")
                continue
            ratio = p50(times[k]) / rest_p50
            table.row(name, value + " %.2fx GET" % ratio, target, ratio <= 1.5)
    finally:
        for conn in conns:
            conn.close()


def section_http(table, repo, label, reps, per_client, skeleton):
    table.section("HTTP serve --port 0, %s" % label)
    path = "/api/v1/object?uri=" + urllib.parse.quote(RULE_URI, safe="")
    lat_name = "GET /api/v1/object (rule), one keep-alive conn"
    lat_target = "p50 <= 1 ms" if skeleton else "-"
    rps_name = "GET /api/v1/object, %d clients x %d requests" % (HTTP_CLIENTS, per_client)
    progress("http on %s" % label)
    try:
        server = Server(repo)
    except NotAvailable as e:
        table.na(lat_name, str(e), lat_target)
        table.na(rps_name, str(e))
        return
    try:
        conn = server.connect()
        times = []
        closes = 0
        err = None
        try:
            for i in range(WARMUP + reps):
                t0 = time.perf_counter()
                status, body, will_close = http_get(conn, path)
                t = time.perf_counter() - t0
                if status != 200:
                    err = "HTTP %d: %s" % (status, first_line(body))
                    break
                if i == 0:
                    try:
                        doc = json.loads(body.decode("utf-8"))
                        if not isinstance(doc, dict) or doc.get("uri") != RULE_URI:
                            err = "the answer does not carry uri %s" % RULE_URI
                            break
                    except ValueError as e:
                        err = "the answer is not JSON: %s" % e
                        break
                closes += bool(will_close)
                if i >= WARMUP:
                    times.append(t)
        except (OSError, http.client.HTTPException) as e:
            err = "%s: %s" % (type(e).__name__, e)
        finally:
            conn.close()
        if err:
            table.na(lat_name, err, lat_target)
        else:
            value = "%s / %s (n=%d)" % (fmt_ms(p50(times)), fmt_ms(p95(times)), len(times))
            if closes:
                value += " reconnects=%d" % closes
                table.note("the server closed the connection after %d of %d responses "
                           "(%s): no keep-alive" % (closes, WARMUP + reps, label))
            table.row(lat_name, value, lat_target,
                      p50(times) <= 0.001 if skeleton else None)
            if 0.035 <= p50(times) <= 0.045:
                table.note("HTTP p50 near 40 ms (%s) is the signature of Nagle's algorithm "
                           "meeting delayed ACK: the response head and body leave in separate "
                           "writes; write them at once or set TCP_NODELAY" % label)

        section_mcp_http(table, server, label, reps)

        # throughput: HTTP_CLIENTS threads, each with its own keep-alive connection
        progress("http on %s: %d clients x %d" % (label, HTTP_CLIENTS, per_client))
        barrier = threading.Barrier(HTTP_CLIENTS + 1)
        failures = []
        done = [0] * HTTP_CLIENTS

        def client(k):
            c = server.connect()
            try:
                barrier.wait(60)
                for _ in range(per_client):
                    status, body, _ = http_get(c, path)
                    if status != 200:
                        failures.append("HTTP %d: %s" % (status, first_line(body)))
                        return
                    done[k] += 1
            except Exception as e:  # reported in the row, never raised
                failures.append("%s: %s" % (type(e).__name__, e))
            finally:
                c.close()

        threads = [threading.Thread(target=client, args=(k,), daemon=True)
                   for k in range(HTTP_CLIENTS)]
        for th in threads:
            th.start()
        try:
            barrier.wait(60)
        except threading.BrokenBarrierError:
            failures.append("clients did not start")
        t0 = time.perf_counter()
        for th in threads:
            th.join(REQUEST_TIMEOUT * 2)
        t = time.perf_counter() - t0
        if any(th.is_alive() for th in threads):
            failures.append("a client did not finish within %d s" % (REQUEST_TIMEOUT * 2))
        if failures:
            table.na(rps_name, failures[0])
        else:
            table.row(rps_name, "%.0f req/s (%s wall)" % (sum(done) / t, fmt_ms(t)))
    finally:
        rc = server.stop()
    if rc not in (0, None):
        table.note("serve on %s: returncode %s after SIGTERM (expected 0)" % (label, rc))


def section_ui(table, big, reps, runs, old_pyz, old_reason):
    """§22: pages on 10,000 rules, and serve's start-up (spawn -> first JSON answer)
    beside the previous version's."""
    table.section("pages (SPEC §22), serve on 10,000 rules: p50 / p95, one keep-alive "
                  "connection")
    progress("pages on 10,000 rules")
    names = [("GET /ui/ (overview)", "/ui/", "p50 <= 5 ms", 0.005),
             ("GET /ui/object?uri=<rule>, distinct rules", None, "p50 <= 3 ms", 0.003),
             ("GET /ui/object?uri=<rule>, one rule repeated",
              "/ui/object?uri=" + urllib.parse.quote(RULE_URI, safe=""), "p50 <= 3 ms", 0.003),
             ("GET /ui/kind/rule (a page of 50)", "/ui/kind/rule", "-", None)]
    try:
        server = Server(big)
    except NotAvailable as e:
        for name, _, target, _ in names:
            table.na(name, str(e), target)
        server = None
    if server is not None:
        conn = server.connect()
        try:
            for name, path, target, limit in names:
                def path_of(i):
                    if path is not None:
                        return path
                    uri = "majordomus://rule/project.gen-%05d@1" % ((i * 7919 + 5) % GEN_RULES)
                    return "/ui/object?uri=" + urllib.parse.quote(uri, safe="")
                times, first, size, err = time_gets(conn, path_of, reps)
                if err:
                    table.na(name, err, target)
                    continue
                table.row(name, "%s after the first (first %s; %d bytes)" % (
                    lat(times), fmt_ms(first), size), target,
                    None if limit is None else p50(times) <= limit)
        except (OSError, http.client.HTTPException) as e:
            table.na("pages", "%s: %s" % (type(e).__name__, e))
        finally:
            conn.close()
            server.stop()
    # serve start-up: spawn -> first /api/v1/repository answer, interleaved with 0436a0f
    n = max(3, runs // 2)
    progress("serve start-up x%d" % n)
    specs = [("serve spawn -> first /api/v1/repository answer, 10,000 rules", common.PYZ, False),
             ("serve spawn -> first /ui/ answer, 10,000 rules", common.PYZ, True)]
    if old_pyz:
        specs.append(("%s serve spawn -> first /api/v1/repository answer (previous)"
                      % common.OLD_COMMIT, old_pyz, False))
    figures = [[] for _ in specs]
    failed = {}
    for i, k in in_turns(len(specs), n + 1, failed):
        _, pyz, ui = specs[k]
        try:
            server = Server(big, pyz)
        except NotAvailable as e:
            failed[k] = str(e)
            continue
        try:
            conn = server.connect()
            status, body, _ = http_get(conn, "/ui/" if ui else "/api/v1/repository")
            t = time.perf_counter() - server.t_spawn
            conn.close()
            if status != 200:
                failed[k] = "HTTP %d: %s" % (status, first_line(body))
            elif i:
                figures[k].append(t)
        except (OSError, http.client.HTTPException) as e:
            failed[k] = "%s: %s" % (type(e).__name__, e)
        finally:
            server.stop()
    medians = []
    for k, (name, _, _) in enumerate(specs):
        if k in failed or not figures[k]:
            table.na(name, failed.get(k, "no run"))
            medians.append(None)
        else:
            medians.append(p50(figures[k]))
            table.row(name, "median %s (n=%d)" % (fmt_ms(medians[k]), len(figures[k])))
    name = "§22 serve start-up (first JSON answer): this build / %s" % common.OLD_COMMIT
    target = "<= 1.05x (pages add nothing)"
    if not old_pyz or medians[0] is None or medians[-1] is None:
        table.na(name, old_reason or "a figure is missing", target)
    else:
        ratio = medians[0] / medians[-1]
        table.row(name, "%.2fx (%s vs %s)" % (ratio, fmt_ms(medians[0]), fmt_ms(medians[-1])),
                  target, ratio <= 1.05)
    table.note("pages: the first request of each page row is shown apart (the page "
               "projection is built on first use); serve start-up is from Popen to the "
               "answer of the first request, sent as soon as the 'listening on' line is "
               "read (stderr polled every 2 ms)")


def time_gets(conn, path_of, reps, is_page=lambda path: True):
    """GET path_of(i) for i in 0..reps on one connection: (the times after the first, the
    first, the last body's size, None), or the error that stopped it (an answer not 200,
    or not a page where `is_page(path)`) in the last place."""
    times, first, size = [], None, 0
    for i in range(1 + reps):
        t0 = time.perf_counter()
        status, body, _ = http_get(conn, path_of(i))
        t = time.perf_counter() - t0
        if status != 200 or (b"<html" not in body[:400].lower() and is_page(path_of(i))):
            return times, first, size, "HTTP %d: %s" % (status, first_line(body))
        if i == 0:
            first = t
        else:
            times.append(t)
        size = len(body)
    return times, first, size, None


def section_pages_real(table, real, reps):
    """Issue 28: every page of §22 on real-latest (its tracks stood in for, so that its
    context tree validates), over one keep-alive connection: p50 / p95 after each page's
    first request (its first request shown apart); the context page (the brief, the
    resolution and their HTML) beside the brief alone (GET /api/v1/brief)."""
    table.section("pages on real-latest (SPEC §22, issue 28): p50 / p95 after the first, one "
                  "keep-alive connection")
    target, limit = "p50 <= 5 ms", 0.005
    if not real:
        table.na("pages, real-latest", "no fixture at %s" % REAL_LATEST, target)
        return
    progress("pages on real-latest")
    questions = []
    try:
        with open(os.path.join(ROOT, "tests", "search_questions.json"), encoding="utf-8") as f:
            questions = [q["q"] for q in json.load(f)["questions"]]
    except (OSError, ValueError, KeyError):
        pass
    questions = questions or ["context documents", "how do I hand over a session"]
    paths = context_targets(real, 60)
    one = ".ai/repo/rules/project/english-only.v2.md"
    q = lambda text: urllib.parse.quote(text, safe="")  # noqa: E731
    try:
        server = Server(real)
    except NotAvailable as e:
        table.na("pages, real-latest", str(e), target)
        return
    conn = server.connect()
    try:
        status, body, _ = http_get(conn, "/api/v1/objects?limit=200")
        objects = [o["uri"] for o in json.loads(body.decode("utf-8"))["objects"]]
        rules = [u for u in objects if u.startswith("majordomus://rule/")]
        # A row asks one path `reps` times after a first (a function of the request's
        # number), or each path of a list once (a page's first render each time).
        created = [p + "/new-file-%d.md" % i for i, p in enumerate(paths * 8)
                   if p.startswith(".ai")][:reps]
        rows = [("GET /ui/ (overview)", lambda i: "/ui/"),
                ("GET /ui/kind/rule (64 rules, a page of 50)", lambda i: "/ui/kind/rule"),
                ("GET /ui/kind/context", lambda i: "/ui/kind/context"),
                ("GET /ui/object?uri=<each object, once>",
                 ["/ui/object?uri=" + q(uri) for uri in objects]),
                ("GET /ui/object?uri=<a rule>, repeated",
                 lambda i: "/ui/object?uri=" + q(rules[0])),
                ("GET /ui/search?q=<%d questions, in turn>" % len(questions),
                 lambda i: "/ui/search?q=" + q(questions[i % len(questions)])),
                ("GET /ui/search?q=<question>&kind=rule",
                 lambda i: "/ui/search?kind=rule&q=" + q(questions[i % len(questions)])),
                ("GET /ui/capabilities (a page of 100)", lambda i: "/ui/capabilities"),
                ("GET /ui/diagnostics", lambda i: "/ui/diagnostics"),
                ("GET /ui/context?path=<each of %d paths, once>" % len(paths),
                 ["/ui/context?path=" + q(p) for p in paths]),
                ("GET /ui/context?path=<each of %d new files, once>" % len(created),
                 ["/ui/context?path=" + q(p) for p in created]),
                ("GET /ui/context?path=<one file>, repeated",
                 lambda i: "/ui/context?path=" + q(one)),
                ("GET /api/v1/brief?path=<each of %d other new files, once> (the brief alone)"
                 % len(created), ["/api/v1/brief?path=" + q(p.replace("new-file", "other"))
                                  for p in created]),
                ("GET /api/v1/brief?path=<one file>, repeated (the brief alone)",
                 lambda i: "/api/v1/brief?path=" + q(one))]
        medians = {}
        for name, path_of in rows:
            if isinstance(path_of, list):
                times, err = [], None
                for path in path_of:
                    t0 = time.perf_counter()
                    status, body, _ = http_get(conn, path)
                    times.append(time.perf_counter() - t0)
                    if status != 200:
                        err = "HTTP %d: %s" % (status, first_line(body))
                        break
                if err:
                    table.na(name, err, target)
                else:
                    medians[name] = p50(times)
                    table.row(name, lat(times), target, p50(times) <= limit)
                continue
            times, first, size, err = time_gets(conn, path_of, reps,
                                                lambda path: "/api/" not in path)
            if err:
                table.na(name, err, target)
                continue
            medians[name] = p50(times)
            table.row(name, "%s after the first (first %s; %d bytes)" % (
                lat(times), fmt_ms(first), size), target, p50(times) <= limit)
        for which in ("new files, once", "one file>, repeated"):
            context, brief = (next((m for n, m in medians.items() if n.startswith(start)
                                    and which in n), None)
                              for start in ("GET /ui/context", "GET /api/v1/brief"))
            name = "context page - the brief alone (%s)" % which.replace(">", "")
            if context is None or brief is None:
                table.na(name, "a row is missing", "<= +2 ms")
            else:
                table.row(name, "%+.2f ms (%s vs %s)" % ((context - brief) * 1e3,
                                                         fmt_ms(context), fmt_ms(brief)),
                          "<= +2 ms", context - brief <= 0.002)
    except (OSError, http.client.HTTPException, ValueError) as e:
        table.na("pages, real-latest", "%s: %s" % (type(e).__name__, e), target)
    finally:
        conn.close()
        server.stop()
