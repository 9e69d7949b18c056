"""Black-box tests of the 2026-07-28 protocol on stdio, next to the legacy one (SPEC §18,
with §9, §15.4 and §17 for what the two eras share).

Every test speaks to the real `majordomus mcp` over pipes, in a scratch git repository
holding the committed skeleton fixture. A request is modern when its `params._meta` names
`io.modelcontextprotocol/protocolVersion`; both eras are judged request by request in one
process.
"""
import json
import unittest

from tests import support
from tests.support import (K_CAPS, K_INFO, K_SERVER, K_SUB, K_VERSION, MODERN, PROMPT_URI,
                           REPOSITORY_URI, RULE_PATH, RULE_URI, SUPPORTED_VERSIONS)

LEGACY_VERSIONS = list(SUPPORTED_VERSIONS)

UNKNOWN_URI = "majordomus://rule/no.such-rule@9"

CACHEABLE = ("server/discover", "tools/list", "resources/list", "resources/templates/list",
             "resources/read", "prompts/list")
REMOVED = ("initialize", "ping", "resources/subscribe", "resources/unsubscribe",
           "logging/setLevel")
WAIT = 25   # seconds a test waits for a notification of the live layer (§15.4: within 2 s)


def meta(version=MODERN, caps=None, **extra):
    out = {K_VERSION: version, K_CAPS: {} if caps is None else caps}
    out.update(extra)
    return out


def modern(params=None, **meta_args):
    """params with a valid 2026-07-28 `_meta` added."""
    out = dict(params or {})
    out["_meta"] = meta(**meta_args)
    return out


# The requests whose answers both eras share (§18: "everything of §9 applies"), as
# (label, method, params without `_meta`).
SHARED_REQUESTS = [
    ("tools/list", "tools/list", {}),
    ("resources/list", "resources/list", {}),
    ("resources/templates/list", "resources/templates/list", {}),
    ("resources/read rule", "resources/read", {"uri": RULE_URI}),
    ("resources/read repository", "resources/read", {"uri": REPOSITORY_URI}),
    ("prompts/list", "prompts/list", {}),
    ("prompts/get", "prompts/get", {"name": "continue", "arguments": {"CONTEXT": "x y"}}),
    ("tools/call majordomus_get", "tools/call",
     {"name": "majordomus_get", "arguments": {"uri": RULE_URI}}),
    ("tools/call majordomus_get prompt", "tools/call",
     {"name": "majordomus_get", "arguments": {"uri": PROMPT_URI}}),
    ("tools/call majordomus_get unknown (isError)", "tools/call",
     {"name": "majordomus_get", "arguments": {"uri": UNKNOWN_URI}}),
]


def strip_modern(result):
    """A modern result without the decorations §18 adds: what a legacy answer holds."""
    out = dict(result)
    for key in ("resultType", "ttlMs", "cacheScope"):
        out.pop(key, None)
    if isinstance(out.get("_meta"), dict):
        rest = dict(out["_meta"])
        rest.pop(K_SERVER, None)
        if rest:
            out["_meta"] = rest
        else:
            del out["_meta"]
    return out




class ModernCase(unittest.TestCase):
    maxDiff = None

    def open(self, repo, via="pyz", args=()):
        s = support.McpSession(repo, via=via, args=args)
        self.addCleanup(s.kill)
        return s

    # --- frames ------------------------------------------------------------------------

    def answer(self, s, method, params=None, id=None):
        """Send one request; the next frame must be its answer (id echoed exactly)."""
        id = s.send_request(method, params, id)
        frame = s.recv()
        self.assertEqual(frame.get("jsonrpc"), "2.0", frame)
        self.assertIn("id", frame, "expected the answer to %s, got %r" % (method, frame))
        self.assertEqual(frame["id"], id, frame)
        self.assertEqual(type(frame["id"]), type(id), frame)
        return frame

    def result(self, s, method, params=None, id=None):
        frame = self.answer(s, method, params, id)
        self.assertNotIn("error", frame, frame)
        self.assertIsInstance(frame.get("result"), dict, frame)
        return frame["result"]

    def error(self, s, method, params=None, code=None, message=None, id=None):
        frame = self.answer(s, method, params, id)
        self.assertNotIn("result", frame, frame)
        err = frame.get("error")
        self.assertIsInstance(err, dict, frame)
        self.assertIsInstance(err.get("message"), str, frame)
        if code is not None:
            self.assertEqual(err.get("code"), code, frame)
        if message is not None:
            self.assertEqual(err["message"], message, frame)
        return err

    def initialize(self, s, version="2025-11-25"):
        return self.result(s, "initialize", {"protocolVersion": version, "capabilities": {},
                                             "clientInfo": {"name": "t", "version": "1"}})

    def assertDecorated(self, method, result, server_info):
        """§18: resultType, the server's identity in `_meta`, and for the six cacheable
        results a zero time to live."""
        self.assertEqual(result.get("resultType"), "complete", (method, result))
        self.assertIsInstance(result.get("_meta"), dict, (method, result))
        self.assertEqual(result["_meta"].get(K_SERVER), server_info, (method, result))
        self.assertEqual(sorted(result["_meta"][K_SERVER]), ["name", "title", "version"])
        if method in CACHEABLE:
            self.assertIs(type(result.get("ttlMs")), int, (method, result))
            self.assertEqual(result["ttlMs"], 0, method)
            self.assertEqual(result.get("cacheScope"), "private", method)
        else:
            self.assertNotIn("ttlMs", result, method)
            self.assertNotIn("cacheScope", result, method)

    # --- notifications -----------------------------------------------------------------

    def sync(self, s):
        """Frames written before the answer to a fresh (legacy) ping, which is read too."""
        id = "sync-%d" % s.new_id()
        s.send({"jsonrpc": "2.0", "id": id, "method": "ping"})
        seen = []
        while True:
            frame = s.recv()
            if frame.get("id") == id and "method" not in frame:
                self.assertEqual(frame.get("result"), {}, frame)
                return seen
            seen.append(frame)

    def wait_for(self, s, wanted, timeout=WAIT):
        """Read frames until every (method, subscription id) in `wanted` has been seen;
        returns every frame read. A subscription id of None means an untagged frame."""
        import time
        seen, missing = [], set(wanted)
        deadline = time.monotonic() + timeout
        while missing:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.fail("still waiting for %r after %ss; frames: %r"
                          % (sorted(missing, key=repr), timeout, seen))
            frame = s.recv(timeout=remaining)
            seen.append(frame)
            missing.discard(notification_key(frame))
        return seen

    def listen(self, s, id, notifications):
        """Open a subscription; the very next frame is its acknowledgment, returned."""
        params = modern({"notifications": notifications})
        s.send({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
                "params": params})
        ack = s.recv()
        self.assertEqual(ack.get("jsonrpc"), "2.0", ack)
        self.assertNotIn("id", ack, "the listen request was answered: %r" % ack)
        self.assertEqual(ack.get("method"), "notifications/subscriptions/acknowledged", ack)
        self.assertEqual(sorted(ack.get("params", {})), ["_meta", "notifications"], ack)
        self.assertEqual(ack["params"]["_meta"], {K_SUB: id}, ack)
        self.assertEqual(type(ack["params"]["_meta"][K_SUB]), type(id), ack)
        self.assertIsInstance(ack["params"]["notifications"], dict, ack)
        return ack["params"]["notifications"]

    def cancel(self, s, id):
        s.notify("notifications/cancelled", {"requestId": id})


def notification_key(frame):
    """(method, subscription id or None) of a notification frame; None for answers."""
    if "method" not in frame or "id" in frame:
        return None
    params = frame.get("params") or {}
    tag = params.get("_meta", {}).get(K_SUB) if isinstance(params.get("_meta"), dict) else None
    return (frame["method"], tag)


def tagged(frames, sub_id):
    return [f for f in frames if "method" in f and "id" not in f
            and isinstance((f.get("params") or {}).get("_meta"), dict)
            and f["params"]["_meta"].get(K_SUB) == sub_id
            and type(f["params"]["_meta"].get(K_SUB)) is type(sub_id)]


# ------------------------------------------------------------------------------------------
# The envelope: what makes a request modern, and what a modern request must carry
# ------------------------------------------------------------------------------------------

class EnvelopeTests(ModernCase):
    @classmethod
    def setUpClass(cls):
        cls.repo = support.class_repo(cls)
        cls.s = support.McpSession(cls.repo)
        cls.addClassCleanup(cls.s.kill)

    def test_missing_client_capabilities(self):
        s = self.s
        methods = ("server/discover", "tools/list", "resources/list", "resources/read",
                   "prompts/list", "prompts/get", "tools/call", "subscriptions/listen",
                   "resources/templates/list")
        for method in methods:
            with self.subTest(method=method):
                err = self.error(s, method, {"_meta": {K_VERSION: MODERN}, "uri": RULE_URI,
                                             "name": "continue"}, code=-32602)
                self.assertIn(K_CAPS, err["message"])
        for bad in (None, [], "x", 1, True, [{}]):
            with self.subTest(clientCapabilities=bad):
                err = self.error(s, "tools/list", {"_meta": {K_VERSION: MODERN, K_CAPS: bad}},
                                 code=-32602)
                self.assertIn(K_CAPS, err["message"])
        with self.subTest("clientInfo is not required"):
            self.result(s, "tools/list", {"_meta": {K_VERSION: MODERN, K_CAPS: {}}})
        with self.subTest("capabilities with content are fine"):
            self.result(s, "tools/list", modern(caps={"roots": {"listChanged": True},
                                                      "sampling": {}}))

    def test_unsupported_version(self):
        s = self.s
        for version in LEGACY_VERSIONS + ["2026-07-29", "2099-01-01", "", "v999.0.0", 20260728,
                                          None]:
            for method in ("tools/list", "server/discover", "resources/read"):
                with self.subTest(version=version, method=method):
                    err = self.error(s, method, modern({"uri": RULE_URI}, version=version),
                                     code=-32022, message="Unsupported protocol version")
                    self.assertEqual(err.get("data"),
                                     {"supported": [MODERN], "requested": version})
                    self.assertIs(type(err["data"]["requested"]), type(version))

    def test_meta_without_a_version_is_legacy(self):
        """§18: modern means `_meta` names the protocol version; any other `_meta` leaves
        the request legacy, answered as §9 says (no decorations)."""
        s = self.s
        plain = self.result(s, "tools/list")
        for other in ({}, {"progressToken": 5}, {K_CAPS: {}}, {K_INFO: {"name": "c",
                                                                      "version": "1"}}):
            with self.subTest(_meta=other):
                self.assertEqual(self.result(s, "tools/list", {"_meta": other}), plain)
                self.error(s, "resources/read", {"uri": UNKNOWN_URI, "_meta": other},
                           code=-32002, message="resource not found: " + UNKNOWN_URI)
                self.assertEqual(self.result(s, "ping", {"_meta": other}), {})
        self.assertNotIn("resultType", plain)

    def test_modern_method_table(self):
        s = self.s
        for method in REMOVED + ("completion/complete", "notifications/initialized",
                                 "unknown/method", "tasks/list", "resources/templates/read"):
            with self.subTest(method=method):
                params = modern({"uri": RULE_URI, "level": "info",
                                 "protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "1"}})
                self.error(s, method, params, code=-32601)
        # The removed methods keep working in the legacy era, in the same session.
        self.assertEqual(self.initialize(s)["protocolVersion"], "2025-11-25")
        self.assertEqual(self.result(s, "ping"), {})
        self.assertEqual(self.result(s, "resources/subscribe", {"uri": RULE_URI}), {})
        self.assertEqual(self.result(s, "resources/unsubscribe", {"uri": RULE_URI}), {})
        self.error(s, "logging/setLevel", {"level": "info"}, code=-32601,
                   message="method not found: logging/setLevel")
        # ... and the modern era does not learn them from an initialize.
        for method in REMOVED:
            with self.subTest("after initialize", method=method):
                self.error(s, method, modern({"uri": RULE_URI, "level": "info"}), code=-32601)

    def test_modern_answers_are_decorated(self):
        s = self.s
        server_info = self.initialize(s)["serverInfo"]
        self.assertEqual(server_info, {"name": "majordomus", "title": "Majordomus",
                                       "version": server_info["version"]})
        cases = [("server/discover", {})] + [(m, p) for _, m, p in SHARED_REQUESTS]
        cases.append(("tools/call", {"name": "majordomus_repository", "arguments": {}}))
        cases.append(("prompts/get", {"name": "continue", "arguments": {"CONTEXT": ""}}))
        for method, params in cases:
            with self.subTest(method=method, params=params):
                self.assertDecorated(method, self.result(s, method, modern(params)),
                                     server_info)

    def test_modern_errors(self):
        """Errors of the methods themselves: the legacy wording, except resources/read."""
        s = self.s
        with self.subTest("resources/read of an unknown URI"):
            for uri in (UNKNOWN_URI, "majordomus://nothing", "file:///etc/passwd", "", "é"):
                err = self.error(s, "resources/read", modern({"uri": uri}), code=-32602,
                                 message="resource not found: %s" % uri)
                self.assertEqual(err.get("data"), {"uri": uri})
                legacy = self.error(s, "resources/read", {"uri": uri}, code=-32002,
                                    message="resource not found: %s" % uri)
                self.assertNotEqual(legacy.get("code"), -32602)
        cases = [
            ("resources/read", {}, "params.uri is required"),
            ("tools/call", {}, "params.name is required"),
            ("tools/call", {"name": "nope"}, "unknown tool: nope"),
            ("tools/call", {"name": "majordomus_get", "arguments": []},
             "params.arguments must be an object"),
            ("prompts/get", {}, "params.name is required"),
            ("prompts/get", {"name": "nope"}, "unknown prompt: nope"),
            ("prompts/get", {"name": "continue"}, "prompt 'continue' needs argument 'CONTEXT'"),
            ("prompts/get", {"name": "continue", "arguments": {"CONTEXT": "x", "X": "y"}},
             "prompt 'continue' has no argument 'X'"),
            ("prompts/get", {"name": "continue", "arguments": {"CONTEXT": 1}},
             "argument 'CONTEXT' must be a string"),
            ("tools/list", {"cursor": "abc"}, "invalid cursor"),
            ("resources/list", {"cursor": "abc"}, "invalid cursor"),
            ("prompts/list", {"cursor": "abc"}, "invalid cursor"),
        ]
        for method, params, message in cases:
            with self.subTest(method=method, params=params):
                self.error(s, method, modern(params), code=-32602, message=message)
                self.error(s, method, params, code=-32602, message=message)

    def test_ids_echoed_exactly(self):
        s = self.s
        for id in (0, -1, 2 ** 53 - 1, "", "é-ü", "listen-1", 7):
            with self.subTest(id=id):
                self.result(s, "tools/list", modern(), id=id)
                self.error(s, "ping", modern(), code=-32601, id=id)
                self.error(s, "tools/list", {"_meta": {K_VERSION: "x", K_CAPS: {}}},
                           code=-32022, id=id)


class DiscoverTests(support.ClassRepo, ModernCase):
    MALFORMED = [
        ("no params", None, K_VERSION),
        ("empty params", {}, K_VERSION),
        ("_meta not an object", {"_meta": "x"}, K_VERSION),
        ("empty _meta", {"_meta": {}}, K_VERSION),
        ("_meta without the version", {"_meta": {K_CAPS: {}, K_INFO: {"name": "c",
                                                                      "version": "1"}}},
         K_VERSION),
        ("_meta without capabilities", {"_meta": {K_VERSION: MODERN}}, K_CAPS),
        ("capabilities not an object", {"_meta": {K_VERSION: MODERN, K_CAPS: "all"}}, K_CAPS),
    ]

    def assertMalformedDiscovers(self, s):
        for label, params, key in self.MALFORMED:
            with self.subTest(label):
                err = self.error(s, "server/discover", params, code=-32602)
                self.assertNotEqual(err["code"], -32601)
                self.assertIn(key, err["message"])

    def test_discover_without_meta_before_and_after_initialize(self):
        s = self.open(self.repo)
        with self.subTest("before any initialize"):
            self.assertMalformedDiscovers(s)
        self.initialize(s)
        s.notify("notifications/initialized")
        with self.subTest("after initialize"):
            self.assertMalformedDiscovers(s)
        with self.subTest("the session still serves both eras"):
            self.assertEqual(self.result(s, "ping"), {})
            self.result(s, "server/discover", modern())
        self.assertEqual(s.close(), 0, s.stderr())

    def test_discover_result(self):
        for via in ("pyz", "py"):
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                found = self.result(s, "server/discover", modern(clientInfo={
                    "name": "c", "version": "1"}))
                init = self.initialize(s)
                self.assertEqual(sorted(found), sorted([
                    "resultType", "supportedVersions", "capabilities", "serverInfo",
                    "instructions", "ttlMs", "cacheScope", "_meta"]))
                self.assertEqual(found["resultType"], "complete")
                self.assertEqual(found["supportedVersions"], [MODERN] + LEGACY_VERSIONS)
                self.assertEqual(found["capabilities"], init["capabilities"])
                self.assertEqual(found["capabilities"], {
                    "resources": {"subscribe": True, "listChanged": True},
                    "tools": {"listChanged": False}, "prompts": {"listChanged": True}})
                self.assertEqual(found["serverInfo"], init["serverInfo"])
                self.assertEqual(found["instructions"], init["instructions"])
                self.assertIs(type(found["ttlMs"]), int)
                self.assertEqual(found["ttlMs"], 0)
                self.assertEqual(found["cacheScope"], "private")
                self.assertEqual(found["_meta"], {K_SERVER: init["serverInfo"]})
                self.assertEqual(init["serverInfo"]["name"], "majordomus")
                self.assertEqual(init["serverInfo"]["title"], "Majordomus")
                # discover again after initialize: the same answer
                self.assertEqual(self.result(s, "server/discover", modern()), found)
                self.assertEqual(s.close(), 0, s.stderr())

    def test_discover_under_no_watch(self):
        """§9.3: under --no-watch nothing is announced; discover says what initialize says."""
        s = self.open(self.repo, args=["--no-watch"])
        found = self.result(s, "server/discover", modern())
        init = self.initialize(s)
        self.assertEqual(found["capabilities"], init["capabilities"])
        self.assertEqual(found["capabilities"]["resources"], {"subscribe": False,
                                                              "listChanged": False})
        self.assertEqual(found["capabilities"]["prompts"], {"listChanged": False})


# ------------------------------------------------------------------------------------------
# Both eras in one session, one set of answers
# ------------------------------------------------------------------------------------------

class DualEraTests(support.ClassRepo, ModernCase):
    def test_interleaved_in_one_session(self):
        s = self.open(self.repo)
        legacy_tools = self.result(s, "tools/list")               # before any initialize
        modern_tools = self.result(s, "tools/list", modern())
        self.assertEqual(strip_modern(modern_tools), legacy_tools)
        init = self.initialize(s, "2025-06-18")
        self.assertEqual(init["protocolVersion"], "2025-06-18")
        s.notify("notifications/initialized")
        self.assertEqual(self.result(s, "tools/list"), legacy_tools)
        self.assertEqual(self.result(s, "server/discover", modern())["serverInfo"],
                         init["serverInfo"])
        self.assertEqual(self.result(s, "ping"), {})
        self.error(s, "ping", modern(), code=-32601)
        self.error(s, "resources/read", modern({"uri": UNKNOWN_URI}), code=-32602)
        self.error(s, "resources/read", {"uri": UNKNOWN_URI}, code=-32002)
        self.assertEqual(self.result(s, "tools/list", modern()), modern_tools)
        self.assertEqual(self.initialize(s)["protocolVersion"], "2025-11-25")  # again
        # pipelined: answers in order, one per request, each era its own shape
        frames = []
        for i in range(20):
            if i % 2:
                frames.append({"jsonrpc": "2.0", "id": i, "method": "prompts/list",
                               "params": modern()})
            else:
                frames.append({"jsonrpc": "2.0", "id": i, "method": "prompts/list"})
        s.send_raw(b"".join(json.dumps(f).encode() + b"\n" for f in frames))
        for i in range(20):
            answer = s.recv()
            self.assertEqual(answer.get("id"), i, answer)
            self.assertEqual("resultType" in answer["result"], bool(i % 2), answer)
        self.assertEqual(s.pending(), [])
        self.assertEqual(s.close(), 0, s.stderr())

    def test_answers_equal_but_for_the_decorations(self):
        for via in ("pyz", "py"):
            s = self.open(self.repo, via=via)
            self.initialize(s)
            s.notify("notifications/initialized")
            for label, method, params in SHARED_REQUESTS:
                with self.subTest(label, via=via):
                    legacy = self.result(s, method, params)
                    new = self.result(s, method, modern(params))
                    self.assertEqual(strip_modern(new), legacy)
                    self.assertNotIn("resultType", legacy)
            self.assertEqual(s.close(), 0, s.stderr())

    def test_modern_without_any_handshake(self):
        """Stateless: a process that never saw initialize serves every modern method."""
        s = self.open(self.repo)
        listed = self.result(s, "resources/list", modern())
        uris = [r["uri"] for r in listed["resources"]]
        self.assertEqual(uris[:2], support.QUERY_URIS)
        self.assertIn(RULE_URI, uris)
        read = self.result(s, "resources/read", modern({"uri": RULE_URI}))
        self.assertEqual(read["contents"][0]["text"].encode("utf-8"),
                         support.read_bytes(self.repo, RULE_PATH))
        got = self.result(s, "prompts/get", modern({"name": "continue",
                                                    "arguments": {"CONTEXT": "now"}}))
        self.assertIn("now", got["messages"][0]["content"]["text"])
        called = self.result(s, "tools/call", modern({"name": "majordomus_get",
                                                      "arguments": {"uri": RULE_URI}}))
        self.assertIs(called["isError"], False)
        self.assertEqual(called["structuredContent"]["uri"], RULE_URI)
        self.assertEqual(s.close(), 0, s.stderr())


# ------------------------------------------------------------------------------------------
# subscriptions/listen
# ------------------------------------------------------------------------------------------

class ListenAckTests(support.ClassRepo, ModernCase):
    def test_acknowledgment_is_the_honoured_subset(self):
        s = self.open(self.repo)
        cases = [
            ("tools only", {"toolsListChanged": True}, {}),
            ("nothing asked", {}, {}),
            ("all flags", {"toolsListChanged": True, "promptsListChanged": True,
                           "resourcesListChanged": True},
             {"promptsListChanged": True, "resourcesListChanged": True}),
            ("resources", {"resourcesListChanged": True}, {"resourcesListChanged": True}),
            ("prompts", {"promptsListChanged": True}, {"promptsListChanged": True}),
            ("flags false", {"promptsListChanged": False, "resourcesListChanged": False}, {}),
            ("unknown URIs only", {"resourceSubscriptions": [UNKNOWN_URI, "majordomus://x"]},
             {}),
            ("empty URI list", {"resourceSubscriptions": []}, {}),
            ("known and unknown URIs",
             {"resourceSubscriptions": [RULE_URI, UNKNOWN_URI, REPOSITORY_URI],
              "toolsListChanged": True},
             {"resourceSubscriptions": [RULE_URI, REPOSITORY_URI]}),
        ]
        for n, (label, asked, honoured) in enumerate(cases):
            for id in ("listen-%d" % n, 1000 + n):
                with self.subTest(label, id=id):
                    self.assertEqual(self.listen(s, id, asked), honoured)
                    # the listen request stays open: the next frame answers the next request
                    self.assertEqual(self.sync(s), [])
                    self.cancel(s, id)
        self.assertEqual(self.sync(s), [])
        self.assertEqual(s.close(), 0, s.stderr())

    def test_listen_never_answered_even_at_eof(self):
        s = self.open(self.repo)
        self.listen(s, "listen-eof", {"resourcesListChanged": True})
        self.listen(s, 99, {"promptsListChanged": True})
        self.cancel(s, 99)
        self.assertEqual(self.sync(s), [])
        s.proc.stdin.close()
        rest = []
        while True:
            try:
                rest.append(s.recv())
            except AssertionError:   # stdout closed
                break
        self.assertEqual([f for f in rest if "id" in f], [], rest)
        self.assertEqual(s.proc.wait(20), 0, s.stderr())


class ListenLiveTests(support.ClassRepo, ModernCase):
    """Notifications of the live layer (§15.4) through subscriptions (§18). The scratch
    repository is shared by the class; each test stages rules of its own."""

    def stage(self, name):
        path, text, uri = support.staged_rule(name)
        support.write(self.repo, path, text)
        support.git(self.repo, "add", path)
        return uri

    def test_list_changed_for_each_subscription(self):
        s = self.open(self.repo)                 # never initialized: no legacy notifications
        self.assertEqual(self.listen(s, "sub-a", {"resourcesListChanged": True}),
                         {"resourcesListChanged": True})
        self.assertEqual(self.listen(s, 77, {"resourcesListChanged": True,
                                             "promptsListChanged": True}),
                         {"resourcesListChanged": True, "promptsListChanged": True})
        self.assertEqual(self.listen(s, "sub-c", {"toolsListChanged": True}), {})
        self.assertEqual(self.listen(s, "sub-p", {"promptsListChanged": True}),
                         {"promptsListChanged": True})
        self.assertEqual(self.sync(s), [])
        uri = self.stage("alpha")
        seen = self.wait_for(s, {("notifications/resources/list_changed", "sub-a"),
                                 ("notifications/resources/list_changed", 77)})
        seen += self.sync(s)
        for sub_id in ("sub-a", 77):
            with self.subTest(sub_id=sub_id):
                frames = tagged(seen, sub_id)
                self.assertEqual(frames, [{"jsonrpc": "2.0",
                                           "method": "notifications/resources/list_changed",
                                           "params": {"_meta": {K_SUB: sub_id}}}])
        self.assertEqual(tagged(seen, "sub-c"), [])
        self.assertEqual(tagged(seen, "sub-p"), [])     # no prompt changed
        self.assertEqual([f for f in seen if notification_key(f) not in (
            ("notifications/resources/list_changed", "sub-a"),
            ("notifications/resources/list_changed", 77))], [], seen)
        listed = self.result(s, "resources/list", modern())
        self.assertIn(uri, [r["uri"] for r in listed["resources"]])
        # a new prompt changes both lists
        support.write(self.repo, ".ai/repo/prompts/later.md",
                      "---\nname: later\ndescription: staged later\n---\n\nLater {{WHAT}}\n")
        support.git(self.repo, "add", ".ai/repo/prompts/later.md")
        seen = self.wait_for(s, {("notifications/resources/list_changed", "sub-a"),
                                 ("notifications/resources/list_changed", 77),
                                 ("notifications/prompts/list_changed", 77),
                                 ("notifications/prompts/list_changed", "sub-p")})
        seen += self.sync(s)
        self.assertEqual(sorted(f["method"] for f in tagged(seen, 77)),
                         ["notifications/prompts/list_changed",
                          "notifications/resources/list_changed"])
        self.assertEqual([f["method"] for f in tagged(seen, "sub-a")],
                         ["notifications/resources/list_changed"])
        self.assertEqual(tagged(seen, "sub-p"), [{
            "jsonrpc": "2.0", "method": "notifications/prompts/list_changed",
            "params": {"_meta": {K_SUB: "sub-p"}}}])
        self.assertEqual(tagged(seen, "sub-c"), [])
        self.assertEqual([f for f in seen if notification_key(f) is None
                          or notification_key(f)[1] is None], [],
                         "an uninitialized session got untagged notifications")
        self.assertEqual(s.close(), 0, s.stderr())

    def test_legacy_and_modern_listeners_in_one_session(self):
        s = self.open(self.repo)
        self.initialize(s)
        s.notify("notifications/initialized")
        self.listen(s, "both", {"resourcesListChanged": True})
        self.assertEqual(self.sync(s), [])
        self.stage("beta")
        seen = self.wait_for(s, {("notifications/resources/list_changed", "both"),
                                 ("notifications/resources/list_changed", None)})
        seen += self.sync(s)
        self.assertIn({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"},
                      seen)
        self.assertEqual(len(tagged(seen, "both")), 1, seen)
        self.assertEqual(len(seen), 2, seen)
        self.assertEqual(s.close(), 0, s.stderr())

    def test_resource_updated(self):
        s = self.open(self.repo)
        target = ".ai/repo/rules/project/gamma.v1.md"
        path, text, uri = support.staged_rule("gamma")
        self.assertEqual(path, target)
        support.write(self.repo, path, text)
        support.git(self.repo, "add", path)
        # the new rule is served first (a request checks the stamp; poll generously)
        import time
        deadline = time.monotonic() + WAIT
        while True:
            listed = self.result(s, "resources/list", modern())
            if uri in [r["uri"] for r in listed["resources"]]:
                break
            self.assertLess(time.monotonic(), deadline, "the staged rule was never served")
            time.sleep(0.3)
        self.assertEqual(self.listen(s, "upd", {"resourceSubscriptions": [uri, UNKNOWN_URI]}),
                         {"resourceSubscriptions": [uri]})
        self.assertEqual(self.listen(s, "other", {"resourceSubscriptions": [RULE_URI]}),
                         {"resourceSubscriptions": [RULE_URI]})
        self.assertEqual(self.sync(s), [])
        support.write(self.repo, path, text + "\nEdited while served.\n")    # not staged
        seen = self.wait_for(s, {("notifications/resources/updated", "upd")})
        seen += self.sync(s)
        self.assertEqual(tagged(seen, "upd"), [{
            "jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"uri": uri, "_meta": {K_SUB: "upd"}}}])
        self.assertEqual(tagged(seen, "other"), [])
        self.assertEqual(len(seen), 1, "nothing else was asked for: %r" % seen)
        read = self.result(s, "resources/read", modern({"uri": uri}))
        self.assertIn("Edited while served.", read["contents"][0]["text"])
        self.assertEqual(s.close(), 0, s.stderr())

    def test_cancelled_ends_one_subscription(self):
        s = self.open(self.repo)
        self.listen(s, "keep", {"resourcesListChanged": True})
        self.listen(s, "drop", {"resourcesListChanged": True})
        self.listen(s, 5, {"resourcesListChanged": True})
        # a client of 2026-07-28 sends its cancellation with the modern `_meta`
        s.notify("notifications/cancelled", modern({"requestId": "drop",
                                                     "reason": "done"}))
        self.cancel(s, "5")          # a string is not the integer id 5: nothing ends
        self.cancel(s, "never-opened")
        self.assertEqual(self.sync(s), [])
        self.stage("delta")
        seen = self.wait_for(s, {("notifications/resources/list_changed", "keep"),
                                 ("notifications/resources/list_changed", 5)})
        seen += self.sync(s)
        self.assertEqual(tagged(seen, "drop"), [])
        self.assertEqual([f for f in seen if "id" in f], [], "a listen was answered")
        self.assertEqual(len(seen), 2, seen)
        self.cancel(s, 5)
        self.cancel(s, "keep")
        self.assertEqual(self.sync(s), [])
        self.stage("epsilon")
        # nobody listens any more; a request still sees the new rule, and nothing is sent
        import time
        deadline = time.monotonic() + WAIT
        while True:
            seen = self.sync(s)
            self.assertEqual(seen, [], "a cancelled subscription was served")
            listed = self.result(s, "resources/list", modern())
            if "majordomus://rule/project.epsilon@1" in [r["uri"] for r in
                                                           listed["resources"]]:
                break
            self.assertLess(time.monotonic(), deadline, "the staged rule was never served")
            time.sleep(0.3)
        self.assertEqual(self.sync(s), [])
        self.assertEqual(s.close(), 0, s.stderr())


if __name__ == "__main__":
    unittest.main()
