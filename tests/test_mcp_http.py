"""Black-box tests of MCP over HTTP, `majordomus serve` at `/mcp` (SPEC §19, with §9,
§10's guard, §15.4 and §18 for the JSON-RPC it carries).

Every test speaks to the real `majordomus serve --port 0` over sockets, in a scratch git
repository holding the committed skeleton fixture: legacy sessions (initialize, then
`Mcp-Session-Id`), their event streams, and the stateless 2026-07-28 era.
"""
import base64
import http.client
import json
import re
import socket
import time
import unittest

from tests import support
from tests.support import (K_CAPS, K_SERVER, K_SUB, K_VERSION, MODERN, PROMPT_URI,
                           REPOSITORY_URI, RULE_URI)

ACCEPT = "application/json, text/event-stream"

UNKNOWN_URI = "majordomus://rule/no.such-rule@9"
SESSION_ID = re.compile(r"[0-9a-f]{32}\Z")
WAIT = 25   # seconds a test waits for a notification of the live layer

SHARED_REQUESTS = [
    ("tools/list", {}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": RULE_URI}),
    ("resources/read", {"uri": REPOSITORY_URI}),
    ("resources/read", {"uri": UNKNOWN_URI}),
    ("prompts/list", {}),
    ("prompts/get", {"name": "continue", "arguments": {"CONTEXT": "x y"}}),
    ("prompts/get", {"name": "nope"}),
    ("tools/call", {"name": "majordomus_get", "arguments": {"uri": RULE_URI}}),
    ("tools/call", {"name": "majordomus_get", "arguments": {"uri": PROMPT_URI}}),
    ("tools/call", {"name": "majordomus_get", "arguments": {"uri": UNKNOWN_URI}}),
    ("tools/call", {"name": "nope"}),
]


def meta(version=MODERN, caps=None):
    return {K_VERSION: version, K_CAPS: {} if caps is None else caps}


def modern(params=None, **meta_args):
    out = dict(params or {})
    out["_meta"] = meta(**meta_args)
    return out


def b64(text):
    return "=?base64?%s?=" % base64.b64encode(text.encode("utf-8")).decode("ascii")


def name_of(method, params):
    key = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(method)
    return params.get(key) if key else None


def modern_headers(method, params=None, version=MODERN, name=None):
    """The standard headers of a 2026-07-28 request (§19)."""
    headers = {"Content-Type": "application/json",
               "MCP-Protocol-Version": version, "Mcp-Method": method}
    name = name if name is not None else name_of(method, params or {})
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def rpc(method, params=None, id=1):
    msg = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg




class EventReader:
    """An open event stream on its own connection: `events()` parses `data:` lines."""

    def __init__(self, conn, sock, resp):
        self.conn, self.sock, self.resp = conn, sock, resp
        self.comments, self.others = [], []   # §19: only `data:` lines and comments

    def next_event(self, timeout=WAIT):
        """The next `data:` event as JSON (skipping comments); AssertionError on timeout
        or when the stream ends."""
        deadline = time.monotonic() + timeout
        data = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("no event within %ss" % timeout)
            self.sock.settimeout(remaining)
            try:
                line = self.resp.readline()
            except socket.timeout:
                raise AssertionError("no event within %ss" % timeout)
            if not line:
                raise AssertionError("the stream ended")
            line = line.rstrip(b"\r\n")
            if line.startswith(b":"):
                self.comments.append(line)
            elif line.startswith(b"data:"):
                data.append(line[5:].lstrip(b" "))
            elif not line and data:
                raw = b"\n".join(data)
                value = json.loads(raw.decode("utf-8"))
                compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
                if raw.decode("utf-8") != compact:
                    self.others.append(b"not compact JSON: " + raw)
                return value
            elif line:
                self.others.append(line)

    def quiet(self, wait=1.0):
        """True when no `data:` line arrives within `wait` seconds (used only to check
        that nothing is sent; the reader is not used afterwards)."""
        deadline = time.monotonic() + wait
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            self.sock.settimeout(remaining)
            try:
                line = self.resp.readline()
            except (socket.timeout, OSError):
                return True
            if not line:
                return True
            if line.startswith(b"data:"):
                return False

    def close(self):
        """Close the stream: the response holds the socket once http.client hands it over."""
        self.resp.close()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.conn.close()


class McpHttpCase(unittest.TestCase):
    maxDiff = None

    @classmethod
    def start(cls, files=None):
        cls.repo = support.class_repo(cls, files)
        cls.srv = support.HttpServer(cls.repo)
        cls.addClassCleanup(cls.srv.stop)

    # --- requests ----------------------------------------------------------------------

    def post(self, message, headers=None, accept=ACCEPT):
        """POST /mcp on a fresh connection: (status, lower-cased headers, body bytes)."""
        body = message if isinstance(message, bytes) else json.dumps(message).encode("utf-8")
        h = {"Content-Type": "application/json"}
        if accept is not None:
            h["Accept"] = accept
        h.update(headers or {})
        return self.srv.request("POST", "/mcp", h, body)

    def jpost(self, message, headers=None, accept=ACCEPT, status=200):
        code, h, body = self.post(message, headers, accept)
        self.assertEqual(code, status, body)
        self.assertEqual(h.get("content-type"), "application/json", h)
        self.assertEqual(int(h.get("content-length", -1)), len(body))
        return json.loads(body.decode("utf-8")), h

    def assertRpcError(self, answer, id, code, message=None):
        self.assertEqual(answer.get("jsonrpc"), "2.0", answer)
        self.assertIn("id", answer, answer)
        self.assertEqual(answer["id"], id, answer)
        self.assertEqual(type(answer["id"]), type(id), answer)
        self.assertNotIn("result", answer, answer)
        self.assertEqual(answer.get("error", {}).get("code"), code, answer)
        self.assertIsInstance(answer["error"].get("message"), str, answer)
        if message is not None:
            self.assertEqual(answer["error"]["message"], message, answer)
        return answer["error"]

    def assertRpcResult(self, answer, id):
        self.assertEqual(answer.get("jsonrpc"), "2.0", answer)
        self.assertEqual(answer.get("id"), id, answer)
        self.assertNotIn("error", answer, answer)
        self.assertIsInstance(answer.get("result"), dict, answer)
        return answer["result"]

    def assert202(self, reply):
        status, headers, body = reply
        self.assertEqual(status, 202, body)
        self.assertEqual(body, b"")

    # --- the two eras ------------------------------------------------------------------

    def initialize(self, version="2025-11-25", initialized=True, id=1):
        """A legacy session: (session id, initialize result)."""
        answer, h = self.jpost(rpc("initialize", {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}, id=id))
        result = self.assertRpcResult(answer, id)
        sid = h.get("mcp-session-id")
        self.assertIsNotNone(sid, h)
        self.assertRegex(sid, SESSION_ID)
        if initialized:
            self.assert202(self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                                     self.session_headers(sid, version)))
        return sid, result

    @staticmethod
    def session_headers(sid, version=None):
        h = {"Mcp-Session-Id": sid}
        if version is not None:
            h["MCP-Protocol-Version"] = version
        return h

    def legacy(self, sid, method, params=None, id=1, version="2025-11-25"):
        answer, _ = self.jpost(rpc(method, params, id), self.session_headers(sid, version))
        return answer

    def refused_header(self, method, params, name, value, id):
        """POST a 2026-07-28 request whose header `name` is value (None: left out), answered
        400: (the answer, the response's headers)."""
        h = modern_headers(method, params)
        if value is None:
            del h[name]
        else:
            h[name] = value
        return self.jpost(rpc(method, params, id), h, status=400)

    def modern_post(self, method, params=None, id=1, headers=None, status=200, **meta_args):
        params = modern(params, **meta_args)
        h = modern_headers(method, params)
        h.update(headers or {})
        answer, rh = self.jpost(rpc(method, params, id), h, status=status)
        self.assertNotIn("mcp-session-id", rh)
        return answer

    # --- event streams -----------------------------------------------------------------

    def open_get(self, sid, accept="text/event-stream", extra=None):
        """GET /mcp on a connection of its own: (status, headers, EventReader or body)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=30)
        h = {}
        if accept is not None:
            h["Accept"] = accept
        if sid is not None:
            h["Mcp-Session-Id"] = sid
        h.update(extra or {})
        conn.request("GET", "/mcp", headers=h)
        return self.stream(conn, lambda headers: True)

    def open_listen(self, id, notifications):
        params = modern({"notifications": notifications})
        conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=30)
        conn.request("POST", "/mcp", body=json.dumps(rpc("subscriptions/listen", params, id)),
                     headers=dict(modern_headers("subscriptions/listen", params),
                                  Accept=ACCEPT))
        return self.stream(conn, lambda headers: headers.get("content-type") ==
                           "text/event-stream")

    def stream(self, conn, is_stream):
        """The answer to the request sent on conn: (status, headers, EventReader) when it is
        200 and is_stream(headers), else (status, headers, body) with conn closed."""
        sock = conn.sock
        resp = conn.getresponse()
        headers = {k.lower(): v for k, v in resp.getheaders()}
        if resp.status != 200 or not is_stream(headers):
            body = resp.read()
            conn.close()
            return resp.status, headers, body
        reader = EventReader(conn, sock, resp)
        self.addCleanup(reader.close)
        return resp.status, headers, reader


# ------------------------------------------------------------------------------------------
# POST, both eras; legacy sessions
# ------------------------------------------------------------------------------------------

class LegacyPostTests(McpHttpCase):
    @classmethod
    def setUpClass(cls):
        cls.start()

    def test_initialize_mints_a_session(self):
        sid, result = self.initialize(initialized=False)
        self.assertEqual(result["protocolVersion"], "2025-11-25")
        self.assertEqual(result["serverInfo"]["name"], "majordomus")
        other, _ = self.initialize(initialized=False)
        self.assertNotEqual(sid, other)
        for version in ("2025-06-18", "2025-03-26", "2024-11-05"):
            with self.subTest(version=version):
                self.assertEqual(self.initialize(version)[1]["protocolVersion"], version)

    def test_requests_of_a_session(self):
        sid, _ = self.initialize()
        for version in (None, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"):
            with self.subTest(version=version):
                answer = self.legacy(sid, "tools/list", id="t-1", version=version)
                self.assertIn("tools", self.assertRpcResult(answer, "t-1"))
                answer = self.legacy(sid, "ping", id=0, version=version)
                self.assertEqual(self.assertRpcResult(answer, 0), {})
        for version in ("1999-01-01", "bogus", ""):
            with self.subTest(unsupported=version):
                status, h, body = self.post(rpc("tools/list", id=41),
                                            self.session_headers(sid, version))
                self.assertEqual(status, 400, body)
                self.assertRpcError(json.loads(body), 41, -32600)
        with self.subTest("the session survives a rejected request"):
            self.assertRpcResult(self.legacy(sid, "ping", id=2), 2)

    def test_session_required_and_known(self):
        for id in (7, "seven"):
            with self.subTest(id=id):
                answer, _ = self.jpost(rpc("tools/list", id=id), status=400)
                self.assertRpcError(answer, id, -32600, "Mcp-Session-Id is required")
                answer, _ = self.jpost(rpc("tools/list", id=id),
                                       self.session_headers("0" * 32), status=404)
                self.assertRpcError(answer, id, -32600, "session not found; initialize again")
                answer, _ = self.jpost(rpc("tools/list", id=id),
                                       self.session_headers("not-a-session"), status=404)
                self.assertRpcError(answer, id, -32600, "session not found; initialize again")

    def test_era_is_judged_by_meta_not_by_headers(self):
        """§19: legacy means no modern `_meta`; an `initialize` creates a session whatever
        MCP-Protocol-Version header it carries (the header is checked on later requests)."""
        for header in (MODERN, "bogus"):
            with self.subTest(header=header):
                answer, h = self.jpost(rpc("initialize", {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}, id=1),
                    {"MCP-Protocol-Version": header})
                self.assertEqual(self.assertRpcResult(answer, 1)["protocolVersion"],
                                 "2025-11-25")
                self.assertRegex(h.get("mcp-session-id", ""), SESSION_ID)
                answer, _ = self.jpost(rpc("tools/list", id=2), {"MCP-Protocol-Version": header},
                                       status=400)
                self.assertRpcError(answer, 2, -32600, "Mcp-Session-Id is required")

    def test_notifications_and_responses_are_202(self):
        sid, _ = self.initialize()
        h = self.session_headers(sid, "2025-11-25")
        for message in ({"jsonrpc": "2.0", "method": "notifications/initialized"},
                        {"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": 3}},
                        {"jsonrpc": "2.0", "method": "notifications/whatever"},
                        {"jsonrpc": "2.0", "id": 5, "result": {}},
                        {"jsonrpc": "2.0", "id": 6, "error": {"code": -1, "message": "no"}}):
            with self.subTest(message=message):
                self.assert202(self.post(message, h))
        with self.subTest("a notification without a session"):
            self.assert202(self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        with self.subTest("a response without a session"):
            self.assert202(self.post({"jsonrpc": "2.0", "id": 5, "result": {}}))

    def test_delete_ends_the_session(self):
        sid, _ = self.initialize()
        status, _, body = self.srv.request("DELETE", "/mcp", self.session_headers(sid))
        self.assertEqual(status, 204, body)
        self.assertEqual(body, b"")
        answer, _ = self.jpost(rpc("tools/list", id=9), self.session_headers(sid), status=404)
        self.assertRpcError(answer, 9, -32600, "session not found; initialize again")
        status, _, body = self.srv.request("DELETE", "/mcp", self.session_headers(sid))
        self.assertEqual(status, 404, body)
        status, _, body = self.srv.request("DELETE", "/mcp", {})
        self.assertEqual(status, 400, body)

    def test_accept(self):
        sid, _ = self.initialize()
        for accept in ("text/event-stream", "text/html", "application/xml", "image/*"):
            with self.subTest(accept=accept):
                status, h, body = self.post(rpc("tools/list", id=3), self.session_headers(sid),
                                            accept=accept)
                self.assertEqual(status, 406, body)
                status, h, body = self.post(rpc("initialize", {"protocolVersion": "2025-11-25"},
                                                id=4), accept=accept)
                self.assertEqual(status, 406, body)
                self.assertNotIn("mcp-session-id", h)
                params = modern()
                status, h, body = self.post(rpc("tools/list", params, 5),
                                            modern_headers("tools/list", params), accept=accept)
                self.assertEqual(status, 406, body)
        for accept in (None, "*/*", "application/*", "application/json",
                       "text/event-stream, application/json;q=0.9", "APPLICATION/JSON"):
            with self.subTest(accept=accept):
                answer, _ = self.jpost(rpc("tools/list", id=3), self.session_headers(sid),
                                       accept=accept)
                self.assertRpcResult(answer, 3)

    def test_not_json(self):
        sid, _ = self.initialize()
        for body in (b"{not json", b"", b"\xff\xfe", b'{"jsonrpc":"2.0","id":1,'):
            for headers in ({}, self.session_headers(sid),
                            modern_headers("tools/list")):
                with self.subTest(body=body, headers=headers):
                    answer, _ = self.jpost(body, headers, status=400)
                    self.assertRpcError(answer, None, -32700)

    def test_batches(self):
        batch = [rpc("tools/list", id=1), {"jsonrpc": "2.0", "method": "notifications/x"},
                 rpc("ping", id="two")]
        with self.subTest("no session"):
            answer, _ = self.jpost(batch, status=400)
            self.assertEqual(answer["error"]["code"], -32600, answer)
        for version in ("2025-11-25", "2025-06-18"):
            with self.subTest(version=version):
                sid, _ = self.initialize(version)
                answer, _ = self.jpost(batch, self.session_headers(sid, version), status=400)
                self.assertEqual(answer["error"]["code"], -32600, answer)
        with self.subTest("2025-03-26"):
            sid, _ = self.initialize("2025-03-26")
            for version in (None, "2025-03-26"):
                answer, _ = self.jpost(batch, self.session_headers(sid, version))
                self.assertIsInstance(answer, list, answer)
                self.assertEqual([a.get("id") for a in answer], [1, "two"])
                self.assertIn("tools", answer[0]["result"])
                self.assertEqual(answer[1]["result"], {})

    def test_guard(self):
        port = self.srv.port
        sid, _ = self.initialize()
        discover = rpc("server/discover", modern(), 1)
        cases = [
            ({"Host": "evil.example.com"}, 403),
            ({"Host": "evil.example.com:%d" % port}, 403),
            ({"Host": "127.0.0.1.evil.example:%d" % port}, 403),
            ({"Host": "localhost.evil.example:%d" % port}, 403),
            ({"Host": "127.0.0.1:%d" % port, "Origin": "http://evil.example.com"}, 403),
            ({"Host": "localhost:%d" % port, "Origin": "http://127.0.0.1:%d" % port}, 403),
            ({"Host": "127.0.0.1:%d" % port, "Origin": "null"}, 403),
            ({"Host": "127.0.0.1:%d" % port}, 200),
            ({"Host": "localhost:%d" % port, "Origin": "http://localhost:%d" % port}, 200),
            ({"Host": "[::1]:%d" % port}, 200),
            ({"Host": "app.localhost:%d" % port}, 200),
        ]
        for headers, status in cases:
            with self.subTest(headers=headers):
                got, _, body = self.post(rpc("initialize", {"protocolVersion": "2025-11-25"}),
                                         headers)
                self.assertEqual(got, status, body)
                got, h, body = self.post(discover, dict(modern_headers("server/discover"),
                                                        **headers))
                self.assertEqual(got, status, body)
                got, h, body = self.post(rpc("tools/list", id=2),
                                         dict(self.session_headers(sid), **headers))
                self.assertEqual(got, status, body)
                if status == 403:
                    self.assertNotIn(b'"result"', body)
        with self.subTest("GET and DELETE are guarded too"):
            status, _, _ = self.open_get(sid, extra={"Host": "evil.example.com"})
            self.assertEqual(status, 403)
            status, _, _ = self.srv.request("DELETE", "/mcp", dict(
                self.session_headers(sid), Host="evil.example.com"))
            self.assertEqual(status, 403)
            self.assertRpcResult(self.legacy(sid, "ping", id=3), 3)   # not ended


class SessionCapTests(McpHttpCase):
    @classmethod
    def setUpClass(cls):
        cls.start()

    def test_at_most_256_sessions_oldest_idle_ended(self):
        sids = [self.initialize(initialized=False, id=i)[0] for i in range(300)]
        self.assertEqual(len(set(sids)), 300)
        alive = []
        for i, sid in enumerate(sids):
            status, _, body = self.post(rpc("ping", id=i), self.session_headers(sid))
            self.assertIn(status, (200, 404), body)
            if status == 404:
                self.assertRpcError(json.loads(body), i, -32600,
                                    "session not found; initialize again")
            alive.append(status == 200)
        self.assertLessEqual(sum(alive), 256)
        self.assertFalse(any(alive[:10]), "the first sessions were not ended")
        self.assertTrue(all(alive[-10:]), "the latest sessions were ended")
        first_alive = alive.index(True)
        self.assertTrue(all(alive[first_alive:]), "the ended ones are not the oldest idle")
        with self.subTest("the server still answers"):
            sid, _ = self.initialize()
            self.assertRpcResult(self.legacy(sid, "tools/list", id=1), 1)
            status, _, _ = self.srv.request("GET", "/")
            self.assertEqual(status, 200)
            self.assertEqual(self.srv.proc.poll(), None)

    def test_idle_order_counts_use_not_creation(self):
        """The longest idle is ended first: a session used lately outlives younger idle
        ones."""
        first, _ = self.initialize(initialized=False)
        for i in range(300):
            self.initialize(initialized=False, id=i)
            if i % 50 == 0:
                self.assertRpcResult(self.legacy(first, "ping", id=i), i)
        self.assertRpcResult(self.legacy(first, "ping", id="last"), "last")


# ------------------------------------------------------------------------------------------
# Legacy event streams (GET)
# ------------------------------------------------------------------------------------------

class LegacyStreamTests(McpHttpCase):
    @classmethod
    def setUpClass(cls):
        cls.start()

    def test_stream_refusals(self):
        sid, _ = self.initialize()
        for accept in (None, "application/json", "text/html"):
            with self.subTest(accept=accept):
                status, _, body = self.open_get(sid, accept=accept)
                self.assertEqual(status, 406, body)
        status, _, body = self.open_get(None)
        self.assertEqual(status, 400, body)
        status, _, body = self.open_get("f" * 32)
        self.assertEqual(status, 404, body)
        status, headers, reader = self.open_get(sid)
        self.assertEqual(status, 200)
        status, _, body = self.open_get(sid)
        self.assertEqual(status, 409, body)
        # another session may have its own
        other, _ = self.initialize()
        status, _, reader2 = self.open_get(other, accept="text/event-stream, */*")
        self.assertEqual(status, 200)
        reader.close()
        reader2.close()

    def test_stream_hears_list_changed(self):
        sid, _ = self.initialize()
        quiet, _ = self.initialize(initialized=False)
        late, _ = self.initialize(initialized=False)
        status, _, late_reader = self.open_get(late)
        self.assertEqual(status, 200)
        # initialized after its stream opened: that session is told from now on
        self.assert202(self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                                 self.session_headers(late, "2025-11-25")))
        status, headers, reader = self.open_get(sid, extra={"MCP-Protocol-Version":
                                                            "2025-11-25"})
        self.assertEqual(status, 200)
        self.assertEqual(headers.get("content-type"), "text/event-stream")
        self.assertEqual(headers.get("x-accel-buffering"), "no")
        self.assertNotEqual(headers.get("transfer-encoding"), "chunked")
        status, _, quiet_reader = self.open_get(quiet)
        self.assertEqual(status, 200)
        path, text, uri = support.staged_rule("streamed")
        support.write(self.repo, path, text)
        support.git(self.repo, "add", path)
        event = reader.next_event()
        self.assertEqual(event, {"jsonrpc": "2.0",
                                 "method": "notifications/resources/list_changed"})
        self.assertEqual(reader.others, [])
        self.assertEqual(late_reader.next_event(), event)
        self.assertTrue(quiet_reader.quiet(1.5),
                        "a session that never sent notifications/initialized was told")
        answer = self.legacy(sid, "resources/list", id=1)
        self.assertIn(uri, [r["uri"] for r in answer["result"]["resources"]])
        # the session still serves requests while its stream is open
        self.assertRpcResult(self.legacy(sid, "ping", id=2), 2)
        # §15.4 subscriptions reach the stream too
        self.assertEqual(self.assertRpcResult(self.legacy(sid, "resources/subscribe",
                                                          {"uri": uri}, id=3), 3), {})
        support.write(self.repo, path, text + "\nEdited.\n")
        deadline = time.monotonic() + WAIT
        while True:
            event = reader.next_event(timeout=max(0.1, deadline - time.monotonic()))
            if event.get("method") != "notifications/resources/list_changed":
                break
        self.assertEqual(event, {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                 "params": {"uri": uri}})


class StreamCapTests(McpHttpCase):
    @classmethod
    def setUpClass(cls):
        cls.start()

    def test_sixteen_streams_in_all(self):
        sids = [self.initialize(id=i)[0] for i in range(20)]
        served, busy, readers = 0, 0, []
        for sid in sids:
            status, headers, got = self.open_get(sid)
            if status == 200:
                served += 1
                readers.append(got)
            else:
                self.assertEqual(status, 503, got)
                self.assertEqual(headers.get("retry-after"), "1", headers)
                busy += 1
        self.assertEqual((served, busy), (16, 4))
        with self.subTest("the server still answers"):
            self.assertRpcResult(self.legacy(sids[0], "tools/list", id=1), 1)
            status, _, _ = self.srv.request("GET", "/")
            self.assertEqual(status, 200)
            answer = self.modern_post("tools/list", id=2)
            self.assertRpcResult(answer, 2)
        with self.subTest("a closed stream makes room"):
            for reader in readers:
                reader.close()
            deadline = time.monotonic() + WAIT
            while True:
                status, _, got = self.open_get(sids[-1])
                if status == 200:
                    break
                self.assertEqual(status, 503)
                self.assertLess(time.monotonic(), deadline, "closed streams never ended")
                time.sleep(0.3)


# ------------------------------------------------------------------------------------------
# The 2026-07-28 era over HTTP
# ------------------------------------------------------------------------------------------

class ModernPostTests(McpHttpCase):
    @classmethod
    def setUpClass(cls):
        cls.start()

    def test_discover(self):
        answer = self.modern_post("server/discover", id=1)
        result = self.assertRpcResult(answer, 1)
        self.assertEqual(result["resultType"], "complete")
        self.assertEqual(result["supportedVersions"], [MODERN, "2025-11-25", "2025-06-18",
                                                       "2025-03-26", "2024-11-05"])
        self.assertEqual(result["ttlMs"], 0)
        self.assertEqual(result["cacheScope"], "private")
        self.assertEqual(result["_meta"][K_SERVER]["name"], "majordomus")

    def test_every_method_with_its_headers(self):
        for method, params in SHARED_REQUESTS + [("server/discover", {})]:
            with self.subTest(method=method, params=params):
                answer = self.modern_post(method, params, id="m")
                self.assertEqual(answer.get("id"), "m")
                if "result" in answer:
                    self.assertEqual(answer["result"]["resultType"], "complete")

    def test_protocol_version_header(self):
        for header, message in ((None, "header mismatch: MCP-Protocol-Version"),
                                ("2025-11-25", "header mismatch: MCP-Protocol-Version"),
                                ("2026-07-29", "header mismatch: MCP-Protocol-Version"),
                                (" 2026-07-27", "header mismatch: MCP-Protocol-Version")):
            for method in ("tools/list", "server/discover"):
                with self.subTest(header=header, method=method):
                    answer, rh = self.refused_header(method, modern(), "MCP-Protocol-Version",
                                                     header, 11)
                    self.assertRpcError(answer, 11, -32020, message)
                    self.assertNotIn("mcp-session-id", rh)

    def test_method_header(self):
        for value in (None, "prompts/list", "TOOLS/LIST", "tools/list/", ""):
            with self.subTest(value=value):
                params = modern()
                h = modern_headers("tools/list", params)
                if value is None:
                    del h["Mcp-Method"]
                else:
                    h["Mcp-Method"] = value
                answer, _ = self.jpost(rpc("tools/list", params, "x"), h, status=400)
                self.assertRpcError(answer, "x", -32020, "header mismatch: Mcp-Method")
        with self.subTest("header names are case-insensitive"):
            params = modern()
            for name in ("mcp-method", "MCP-METHOD"):
                h = modern_headers("tools/list", params)
                del h["Mcp-Method"]
                h[name] = "tools/list"
                h["mcp-protocol-version"] = h.pop("MCP-Protocol-Version")
                answer, _ = self.jpost(rpc("tools/list", params, 3), h)
                self.assertRpcResult(answer, 3)

    def test_name_header(self):
        cases = [
            ("tools/call", {"name": "majordomus_get", "arguments": {"uri": RULE_URI}}),
            ("resources/read", {"uri": RULE_URI}),
            ("prompts/get", {"name": "continue", "arguments": {"CONTEXT": "c"}}),
        ]
        for method, base in cases:
            value = name_of(method, base)
            for label, header in (("missing", None), ("different", "other"),
                                  ("case differs", value.upper()),
                                  ("base64 of another", b64("other")),
                                  ("broken base64", "=?base64?%%%%?=")):
                with self.subTest(method=method, header=label):
                    answer, _ = self.refused_header(method, modern(base), "Mcp-Name", header,
                                                    21)
                    self.assertRpcError(answer, 21, -32020, "header mismatch: Mcp-Name")
            for label, header in (("plain", value), ("base64", b64(value))):
                with self.subTest(method=method, accepted=label):
                    answer = self.modern_post(method, base, id=22, headers={"Mcp-Name": header})
                    self.assertRpcResult(answer, 22)
        with self.subTest("padded base64 names"):
            self.assertTrue(b64("majordomus_get").endswith("=?="))
            self.assertTrue(b64("continue").endswith("=?="))
        with self.subTest("a non-ASCII URI sent as base64"):
            uri = "majordomus://rule/ünïcödé@1"
            answer = self.modern_post("resources/read", {"uri": uri}, id=23,
                                      headers={"Mcp-Name": b64(uri)})
            err = self.assertRpcError(answer, 23, -32602, "resource not found: " + uri)
            self.assertEqual(err.get("data"), {"uri": uri})
        with self.subTest("a non-ASCII tool name sent as base64"):
            answer = self.modern_post("tools/call", {"name": "outil_été"}, id=24,
                                      headers={"Mcp-Name": b64("outil_été")})
            self.assertRpcError(answer, 24, -32602, "unknown tool: outil_été")
        with self.subTest("a name with spaces sent as base64"):
            answer = self.modern_post("prompts/get", {"name": " continue "}, id=25,
                                      headers={"Mcp-Name": b64(" continue ")})
            self.assertRpcError(answer, 25, -32602, "unknown prompt:  continue ")

    def test_malformed_envelope_is_400(self):
        cases = [
            ("no capabilities", "tools/list", {"_meta": {K_VERSION: MODERN}}, -32602),
            ("capabilities not an object", "prompts/list",
             {"_meta": {K_VERSION: MODERN, K_CAPS: []}}, -32602),
            ("discover without _meta", "server/discover", {}, -32602),
            ("discover without params", "server/discover", None, -32602),
            ("discover without the version", "server/discover", {"_meta": {K_CAPS: {}}},
             -32602),
        ]
        for label, method, params, code in cases:
            with self.subTest(label):
                answer, _ = self.jpost(rpc(method, params, 101), modern_headers(method, params),
                                       status=400)
                self.assertRpcError(answer, 101, code)
        for version in ("2025-11-25", "2099-01-01", "v999.0.0"):
            with self.subTest(unsupported=version):
                params = modern(version=version)
                answer, _ = self.jpost(rpc("tools/list", params, 301),
                                       modern_headers("tools/list", params, version=version),
                                       status=400)
                err = self.assertRpcError(answer, 301, -32022, "Unsupported protocol version")
                self.assertEqual(err.get("data"), {"supported": [MODERN], "requested": version})
        with self.subTest("header and _meta disagree, _meta unsupported"):
            params = modern(version="v999.0.0")
            status, _, body = self.post(rpc("tools/list", params, 302),
                                        modern_headers("tools/list", params))
            self.assertEqual(status, 400, body)
            self.assertEqual(json.loads(body).get("id"), 302)

    def test_unknown_methods_are_404(self):
        for method in ("initialize", "ping", "resources/subscribe", "resources/unsubscribe",
                       "logging/setLevel", "completion/complete", "unknown/method"):
            with self.subTest(method=method):
                answer = self.modern_post(method, {"uri": RULE_URI, "level": "info"}, id=500,
                                          status=404)
                self.assertRpcError(answer, 500, -32601)

    def test_method_errors_are_200(self):
        answer = self.modern_post("resources/read", {"uri": UNKNOWN_URI}, id=1)
        err = self.assertRpcError(answer, 1, -32602, "resource not found: " + UNKNOWN_URI)
        self.assertEqual(err["data"], {"uri": UNKNOWN_URI})
        answer = self.modern_post("tools/call", {"name": "nope"}, id=2)
        self.assertRpcError(answer, 2, -32602, "unknown tool: nope")
        answer = self.modern_post("tools/call", {"name": "majordomus_get",
                                                 "arguments": {"uri": UNKNOWN_URI}}, id=3)
        self.assertIs(self.assertRpcResult(answer, 3)["isError"], True)
        answer = self.modern_post("prompts/get", {"name": "continue"}, id=4)
        self.assertRpcError(answer, 4, -32602, "prompt 'continue' needs argument 'CONTEXT'")

    def test_session_id_ignored(self):
        sid, _ = self.initialize()
        for given in (sid, "0" * 32, "junk"):
            with self.subTest(given=given):
                answer = self.modern_post("tools/list", id=1, headers={"Mcp-Session-Id": given})
                self.assertEqual(self.assertRpcResult(answer, 1)["resultType"], "complete")
                answer = self.modern_post("server/discover", id=2,
                                          headers={"Mcp-Session-Id": given})
                self.assertRpcResult(answer, 2)
        self.assertRpcResult(self.legacy(sid, "ping", id=3), 3)   # the session is untouched

    def test_modern_notification_is_202(self):
        params = modern({"requestId": "listen:0"})
        self.assert202(self.post({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                  "params": params},
                                 modern_headers("notifications/cancelled", params)))

    def test_get_and_delete_are_405(self):
        sid, _ = self.initialize()
        for extra in ({}, {"Mcp-Session-Id": sid}):
            with self.subTest(extra=extra):
                status, _, _ = self.open_get(None, extra=dict(extra, **{
                    "MCP-Protocol-Version": MODERN}))
                self.assertEqual(status, 405)
                status, _, _ = self.srv.request("DELETE", "/mcp", dict(extra, **{
                    "MCP-Protocol-Version": MODERN}))
                self.assertEqual(status, 405)
        self.assertRpcResult(self.legacy(sid, "ping", id=3), 3)   # not ended by the DELETE


class ListenStreamTests(McpHttpCase):
    @classmethod
    def setUpClass(cls):
        cls.start()

    def test_listen_stream(self):
        status, headers, reader = self.open_listen_when_free("listen-1", {
            "resourcesListChanged": True, "toolsListChanged": True,
            "resourceSubscriptions": [UNKNOWN_URI]})
        self.assertEqual(status, 200, reader)
        self.assertEqual(headers.get("content-type"), "text/event-stream")
        self.assertNotIn("mcp-session-id", headers)
        ack = reader.next_event()
        self.assertEqual(ack, {"jsonrpc": "2.0",
                               "method": "notifications/subscriptions/acknowledged",
                               "params": {"_meta": {K_SUB: "listen-1"},
                                          "notifications": {"resourcesListChanged": True}}})
        status, _, other = self.open_listen_when_free(8, {"toolsListChanged": True})
        self.assertEqual(other.next_event()["params"], {"_meta": {K_SUB: 8},
                                                        "notifications": {}})
        path, text, uri = support.staged_rule("heard")
        support.write(self.repo, path, text)
        support.git(self.repo, "add", path)
        event = reader.next_event()
        self.assertEqual(event, {"jsonrpc": "2.0",
                                 "method": "notifications/resources/list_changed",
                                 "params": {"_meta": {K_SUB: "listen-1"}}})
        self.assertEqual(reader.others, [])
        self.assertTrue(other.quiet(1.5), "a tools-only subscription was told")
        answer = self.modern_post("resources/list", id=2)
        self.assertIn(uri, [r["uri"] for r in answer["result"]["resources"]])

    def open_listen_when_free(self, id, notifications):
        """open_listen, waiting while the streams closed just before are still being
        noticed by the server (it sees a closed stream within a moment, not at once)."""
        deadline = time.monotonic() + WAIT
        while True:
            status, headers, reader = self.open_listen(id, notifications)
            if status != 503:
                return status, headers, reader
            self.assertLess(time.monotonic(), deadline, "closed streams never ended")
            time.sleep(0.3)

    def test_closing_ends_the_subscription(self):
        """Listens opened and closed one after another never pile up: each closed stream
        ends its subscription (well past the 16 streams a server keeps open at once)."""
        for i in range(24):
            status, _, reader = self.open_listen_when_free(i, {"resourcesListChanged": True})
            self.assertEqual(status, 200, reader)
            self.assertEqual(reader.next_event()["params"]["_meta"], {K_SUB: i})
            reader.close()
        self.assertRpcResult(self.modern_post("tools/list", id=1), 1)


# ------------------------------------------------------------------------------------------
# One answer for one request, whatever the transport
# ------------------------------------------------------------------------------------------

def peers_aside(answer):
    """An answer with the instructions' sentence naming the sessions present set aside
    (§27: it names who else is connected, which is no transport's doing)."""
    result = answer.get("result")
    if isinstance(result, dict) and isinstance(result.get("instructions"), str):
        result["instructions"] = support.without_peers(result["instructions"])
    return answer


class SameAnswersTests(McpHttpCase):
    """The stdio session here is a bridge to `serve` (it owns the repository's lease, §27)."""

    @classmethod
    def setUpClass(cls):
        cls.start()
        cls.stdio = support.McpSession(cls.repo)
        cls.addClassCleanup(cls.stdio.kill)

    def stdio_answer(self, message):
        self.stdio.send(message)
        return self.stdio.recv()

    def test_legacy_answers_equal(self):
        init = rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}}, id=0)
        via_stdio = self.stdio_answer(init)
        via_http, h = self.jpost(init)
        self.assertEqual(peers_aside(via_http), peers_aside(via_stdio))
        sid = h["mcp-session-id"]
        self.stdio.notify("notifications/initialized")
        self.assert202(self.post({"jsonrpc": "2.0", "method": "notifications/initialized"},
                                 self.session_headers(sid, "2025-06-18")))
        for i, (method, params) in enumerate(SHARED_REQUESTS + [("ping", None)]):
            with self.subTest(method=method, params=params):
                message = rpc(method, params, id="r%d" % i)
                via_http, _ = self.jpost(message, self.session_headers(sid, "2025-06-18"))
                self.assertEqual(via_http, self.stdio_answer(message))

    def test_modern_answers_equal(self):
        for i, (method, params) in enumerate(SHARED_REQUESTS + [("server/discover", {})]):
            with self.subTest(method=method, params=params):
                message = rpc(method, modern(params), id=i)
                via_http, _ = self.jpost(message, modern_headers(method, message["params"]))
                self.assertEqual(peers_aside(via_http), peers_aside(self.stdio_answer(message)))


if __name__ == "__main__":
    unittest.main()
