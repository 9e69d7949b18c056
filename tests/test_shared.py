"""One shared server per repository, peers that see each other (SPEC §27).

Every test runs real `mcp` (and `serve`) processes over real pipes and sockets, in scratch
repositories holding a small layer the test writes itself, each test with its own
XDG_RUNTIME_DIR (so no two tests ever share a lease): the owner and its bridges (one
listener, one index), the peers and their announces, kill -9 of the owner and the takeover,
the owner that lingers for its bridges, two repositories, the refusals, --standalone, live
edits through bridges in both protocol eras, the §12 proof around a shared session, and
answers byte for byte alike from a standalone server, an owner and a bridge.
"""
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest

from tests import support
from tests.support import MODERN, PEERS_URI

RULE_PATH = ".ai/repo/rules/project/one.v1.md"
RULE_URI = "majordomus://rule/project.one@1"
LINUX = sys.platform.startswith("linux")
# A bridge holds no index: beside its interpreter with the module loaded (what any start
# costs: 12 MB on Debian's python3), at most this much more. Where the archive holds no
# bytecode for this interpreter, every start compiles the module, and what that leaves
# behind varies by a few MB from one process to the next. (The bench reports the absolute
# figure, <= 15 MB, on Debian's python3.)
BRIDGE_EXTRA = 3 * 1024
COMPILED_EXTRA = 10 * 1024

MANIFEST = support.manifest_yaml("rules", "prompts", "knowledge")
SOURCES = support.sources_yaml(("rule", "rule", ":(glob).ai/repo/rules/**/*.md"),
                              ("prompt", "prompt", ":(glob).ai/repo/prompts/*.md"))


def rule(name, title, body="Body.\n"):
    return ("---\nid: project.%s\nversion: 1\ntitle: %s\ndescription: The rule %s.\n---\n\n# %s"
            "\n\n%s" % (name, title, name, title, body))


def layer(rules=40):
    """The files of the test layer: a manifest, sources, a prompt and `rules` rules (enough
    text that an index is visibly more than a bridge holds)."""
    files = {".ai/manifest.yaml": MANIFEST, ".ai/repo/knowledge/sources.yaml": SOURCES,
             RULE_PATH: rule("one", "One"),
             ".ai/repo/prompts/hand.md": "---\nname: hand\ndescription: Hand over.\n---\n"
                                         "Hand over {{CONTEXT}} to the next session.\n"}
    filler = "".join("Line %d of a rule that exists to be indexed, with words to search.\n"
                     % n for n in range(60))
    for n in range(rules):
        files[".ai/repo/rules/project/r%03d.v1.md" % n] = rule("r%03d" % n, "Rule %d" % n,
                                                                filler)
    return files


def initialize_params(name, version="2025-06-18"):
    return {"protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": name, "version": "1"}}


def modern(params=None, name=None):
    """2026-07-28 params: the `_meta` every request carries (with the client's name, when
    given: §27 names a peer by it)."""
    out = dict(params or {})
    out["_meta"] = {"io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": {}}
    if name is not None:
        out["_meta"]["io.modelcontextprotocol/clientInfo"] = {"name": name, "version": "1"}
    return out


def lease_name(root):
    return hashlib.sha256(os.path.realpath(root).encode("utf-8")).hexdigest()[:16] + ".json"


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for %d" % pid)


def listening_sockets(pid):
    """How many TCP sockets process `pid` listens on (Linux: /proc)."""
    inodes = set()
    for name in ("tcp", "tcp6"):
        try:
            with open("/proc/net/" + name) as handle:
                for line in handle.readlines()[1:]:
                    fields = line.split()
                    if fields[3] == "0A":          # LISTEN
                        inodes.add(fields[9])
        except OSError:
            pass
    count = 0
    folder = "/proc/%d/fd" % pid
    for fd in os.listdir(folder):
        try:
            target = os.readlink(os.path.join(folder, fd))
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            count += 1
    return count


def archive_has_bytecode():
    """Does the archive carry bytecode this interpreter loads (build_zipapp.py's pyc)?"""
    import importlib.util
    import zipfile
    with zipfile.ZipFile(support.PYZ) as archive:
        try:
            return archive.read("majordomus.pyc")[:4] == importlib.util.MAGIC_NUMBER
        except KeyError:
            return False


def module_floor():
    """The RSS of this interpreter with the archive's module loaded, doing nothing."""
    proc = subprocess.Popen([support.PYTHON, "-c", "import sys; sys.path.insert(0, %r); "
                             "import majordomus; sys.stdin.read()" % support.PYZ],
                            stdin=subprocess.PIPE, env=support.base_env())
    try:
        time.sleep(0.3)
        return rss_kb(proc.pid)
    finally:
        proc.stdin.close()
        proc.wait(10)


def http(url, method, path, headers=None, body=None, timeout=10):
    """One request to a lease's URL: (status, headers, body bytes)."""
    import http.client
    host, port = url[len("http://"):].rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


class SharedCase(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.runtime = support.tempdir(self)
        self.env = {"XDG_RUNTIME_DIR": self.runtime}
        self.repo = support.make_repo(self, files=layer(), skeleton=False)
        self.next_id = 1000

    # -- processes ------------------------------------------------------------------------

    def spawn(self, name=None, via="pyz", args=(), env=None, repo=None, version="2025-06-18"):
        """An `mcp` over pipes; with a name, initialized (legacy) as that client."""
        s = support.McpSession(repo or self.repo, via=via, args=args,
                               env=dict(self.env, **(env or {})))
        self.addCleanup(s.kill)
        if name is not None:
            answer = s.request("initialize", initialize_params(name, version))
            self.assertIn("result", answer, answer)
            s.init = answer["result"]
            s.notify("notifications/initialized")
        return s

    def wait_log(self, s, text, timeout=support.READ_TIMEOUT):
        s.wait_stderr(text, timeout)

    def owner(self, name="alpha", **kwargs):
        s = self.spawn(name, **kwargs)
        self.wait_log(s, "sharing this repository's server")
        return s

    def bridge(self, name=None, **kwargs):
        s = self.spawn(name, **kwargs)
        self.wait_log(s, "attached to the shared server")
        self.assertNotIn("index built", s.stderr())
        return s

    # -- requests -------------------------------------------------------------------------

    def call(self, s, method, params=None):
        """(the answer to one request, the notifications written before it)."""
        self.next_id += 1
        msg_id = self.next_id
        message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        s.send(message)
        notes = []
        while True:
            frame = s.recv()
            if frame.get("id") == msg_id and "method" not in frame:
                return frame, notes
            notes.append(frame)

    def ok(self, s, method, params=None):
        answer, notes = self.call(s, method, params)
        self.assertIn("result", answer, answer)
        return answer["result"], notes

    def tool(self, s, name, arguments=None):
        result, _ = self.ok(s, "tools/call", {"name": name, "arguments": arguments or {}})
        self.assertIs(result["isError"], False, result)
        return result["structuredContent"]

    def told(self, s):
        """The notifications this session has been sent so far (a ping's answer comes after
        everything written to it before)."""
        return self.ok(s, "ping")[1]

    # -- the lease ------------------------------------------------------------------------

    def lease_path(self, repo=None):
        return os.path.join(self.runtime, "majordomus", lease_name(repo or self.repo))

    def lease(self, repo=None):
        with open(self.lease_path(repo), encoding="utf-8") as handle:
            return json.load(handle)


class ThreeClientsTest(SharedCase):
    def test_three_clients_one_server(self):
        a = self.owner("alpha", via="py")
        b = self.bridge("beta")
        c = self.bridge("gamma")
        lease = self.lease()
        self.assertEqual(list(lease), ["root", "url", "pid", "token", "version", "started"])
        self.assertEqual((lease["root"], lease["pid"]), (self.repo, a.proc.pid))
        self.assertEqual(len(lease["token"]), 64)
        self.assertTrue(lease["url"].startswith("http://127.0.0.1:"), lease)
        self.assertEqual(oct(os.stat(self.lease_path()).st_mode & 0o777), "0o600")
        self.assertEqual(oct(os.stat(os.path.dirname(self.lease_path())).st_mode & 0o777),
                         "0o700")
        # the bridge's instructions name who was here when it started (§27)
        self.assertIn("Also here: p1 (alpha)", b.init["instructions"])
        self.assertNotIn("Also here", a.init["instructions"])
        self.assertLess(len(c.init["instructions"]), 600)
        if LINUX:
            # one listener, one index
            self.assertEqual([listening_sockets(s.proc.pid) for s in (a, b, c)], [1, 0, 0])
            limit = module_floor() + (BRIDGE_EXTRA if archive_has_bytecode()
                                      else COMPILED_EXTRA)
            for s in (b, c):
                self.assertLessEqual(rss_kb(s.proc.pid), limit)
        self.assertEqual(self.tool(a, "majordomus_perf")["index_builds"], 1)

        listing = self.tool(b, "majordomus_peers")
        self.assertEqual(list(listing), ["count", "caller", "peers", "boards", "complete"])
        self.assertEqual(listing["count"], 3)
        self.assertEqual([(p["id"], p["client"], p["transport"]) for p in listing["peers"]],
                         [("p1", "alpha", "stdio"), ("p2", "beta", "bridge"),
                          ("p3", "gamma", "bridge")])
        self.assertEqual(listing["caller"], "p2")
        for peer in listing["peers"]:
            self.assertEqual(list(peer), ["id", "client", "transport", "since", "scope",
                                          "overlaps", "worktree", "branch", "claim"])
        self.assertEqual(self.tool(c, "majordomus_peers")["caller"], "p3")
        for s in (a, b, c):
            self.ok(s, "resources/subscribe", {"uri": PEERS_URI})

        # an announce that overlaps nobody's scope tells nobody
        mine = self.tool(b, "majordomus_announce", {"intent": "rework the rules",
                                                     "scope": ["./.ai/repo/rules/"]})
        self.assertEqual((mine["id"], mine["intent"], mine["scope"], mine["overlaps"]),
                         ("p2", "rework the rules", [".ai/repo/rules"], []))
        self.assertEqual(list(mine), ["id", "client", "transport", "since", "intent", "scope",
                                      "announced", "overlaps", "worktree", "branch", "claim"])
        self.assertEqual((self.told(a), self.told(c)), ([], []))
        # one that overlaps: the overlapped session hears it, the others do not
        theirs = self.tool(c, "majordomus_announce", {
            "intent": "fix one rule", "scope": [RULE_PATH, "docs/new.md"]})
        self.assertEqual(theirs["overlaps"], ["p2"])
        notes = self.told(b)
        self.assertEqual(notes, [
            {"jsonrpc": "2.0", "method": "notifications/resources/updated",
             "params": {"uri": PEERS_URI}},
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {
                "level": "warning", "logger": "majordomus.peers",
                "data": "p3 (gamma) announced fix one rule on %s, docs/new.md, overlapping "
                        "yours: .ai/repo/rules" % RULE_PATH}}])
        self.assertEqual(self.told(a), [])
        # the owner's own client announces elsewhere: nobody is told
        self.tool(a, "majordomus_announce", {"intent": "write the docs", "scope": ["README.md"]})
        self.assertEqual((self.told(b), self.told(c)), ([], []))
        listing = self.tool(a, "majordomus_peers")
        self.assertEqual({p["id"]: p["overlaps"] for p in listing["peers"]},
                         {"p1": [], "p2": ["p3"], "p3": ["p2"]})
        self.assertEqual(json.loads(self.ok(c, "resources/read", {"uri": PEERS_URI})[0][
            "contents"][0]["text"])["peers"], listing["peers"])
        # every client ends; the owner removes its lease
        for s in (c, b, a):
            self.assertEqual(s.close(), 0, s.stderr())
        self.assertFalse(os.path.exists(self.lease_path()))

    def test_two_repositories_two_owners(self):
        other = support.make_repo(self, files=layer(2), skeleton=False, name="other")
        a = self.owner("alpha")
        b = self.owner("beta", repo=other)
        self.assertNotEqual(self.lease()["url"], self.lease(other)["url"])
        self.assertEqual((self.lease()["pid"], self.lease(other)["pid"]),
                         (a.proc.pid, b.proc.pid))
        for s, name in ((a, "alpha"), (b, "beta")):
            listing = self.tool(s, "majordomus_peers")
            self.assertEqual([p["client"] for p in listing["peers"]], [name])


class TakeoverTest(SharedCase):
    def test_kill_the_owner(self):
        a = self.owner("alpha")
        b = self.bridge("beta")
        c = self.bridge()
        # beta: subscribed to a rule, announced; gamma: a 2026-07-28 client and its listen
        self.ok(b, "resources/subscribe", {"uri": RULE_URI})
        self.tool(b, "majordomus_announce", {"intent": "rework the rules",
                                              "scope": [".ai/repo/rules"]})
        c.send({"jsonrpc": "2.0", "id": "listen-1", "method": "subscriptions/listen",
                "params": modern({"notifications": {"resourcesListChanged": True,
                                                    "resourceSubscriptions": [RULE_URI]}},
                                 "gamma")})
        ack = c.recv()
        self.assertEqual(ack["method"], "notifications/subscriptions/acknowledged")
        os.kill(a.proc.pid, signal.SIGKILL)
        a.proc.wait(10)
        # beta's next request is answered, by the same server to it: its name, its announce
        listing, notes = self.ok(b, "tools/call", {"name": "majordomus_peers", "arguments": {}})
        mine = [p for p in listing["structuredContent"]["peers"]
                if p["id"] == listing["structuredContent"]["caller"]]
        self.assertEqual([(p["client"], p["intent"]) for p in mine],
                         [("beta", "rework the rules")])
        # ... and it sees nothing of the takeover but list_changed
        self.assertEqual({n["method"] for n in notes} - {"notifications/resources/list_changed",
                                                         "notifications/prompts/list_changed"},
                         set(), notes)
        answer, notes = self.call(c, "ping")
        self.assertEqual(answer["result"], {})
        for note in notes:
            self.assertEqual(note["method"], "notifications/resources/list_changed", notes)
            self.assertEqual(note["params"]["_meta"],
                             {"io.modelcontextprotocol/subscriptionId": "listen-1"})
        # one took over, the other attached to it
        support.wait_until("a takeover in a log", lambda: any(
            "took over the shared server" in s.stderr() for s in (b, c)))
        took = [s for s in (b, c) if "took over the shared server" in s.stderr()]
        self.assertEqual(len(took), 1, b.stderr() + c.stderr())
        other = c if took[0] is b else b
        self.wait_log(other, "attached to the new shared server")
        self.assertEqual(self.lease()["pid"], took[0].proc.pid)
        listing = self.tool(b, "majordomus_peers")
        self.assertEqual(sorted((p["client"], p["transport"], p.get("intent"))
                                for p in listing["peers"]),
                         sorted([("beta", "stdio" if took[0] is b else "bridge",
                                  "rework the rules"),
                                 ("gamma", "stdio" if took[0] is c else "bridge", None)]))
        # the subscriptions were replayed: a live edit reaches both clients
        support.write(self.repo, RULE_PATH, rule("one", "One, edited"))
        support.git(self.repo, "add", "-A")
        self.assertEqual(self.wait_note(b, "notifications/resources/updated")["params"],
                         {"uri": RULE_URI})
        note = self.wait_note(c, "notifications/resources/updated")
        self.assertEqual(note["params"]["uri"], RULE_URI)
        self.assertEqual(note["params"]["_meta"],
                         {"io.modelcontextprotocol/subscriptionId": "listen-1"})
        for s in (other, took[0]):     # the new owner's client last: it would linger
            self.assertEqual(s.close(), 0, s.stderr())

    def wait_note(self, s, method, timeout=15):
        deadline = time.time() + timeout
        while time.time() < deadline:
            frame = s.recv(timeout=max(0.1, deadline - time.time()))
            if frame.get("method") == method:
                return frame
        self.fail("no %s within %ss" % (method, timeout))

    def test_the_owner_lingers_for_its_bridges(self):
        a = self.owner("alpha")
        b = self.bridge("beta")
        a.proc.stdin.close()            # the owner's own client is gone
        self.wait_log(a, "input ended; serving the attached bridges until the last leaves")
        self.assertEqual(self.tool(b, "majordomus_peers")["count"], 1)
        self.assertIsNone(a.proc.poll())
        self.assertEqual(b.close(), 0, b.stderr())
        self.assertEqual(a.proc.wait(15), 0, a.stderr())
        self.wait_log(a, "the last bridge left; stopping")
        self.assertFalse(os.path.exists(self.lease_path()))

    def test_an_owner_ends_at_once_and_quietly(self):
        """Input that ends as the shared server starts (right after the first answer, or
        before any): the owner waits for its server's thread, so the interpreter never
        ends under it. Before, one run in ten hung for good on 3.15, and under load 3.12
        printed socketserver's traceback for the wake-up connection."""
        initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                 "params": initialize_params("quick")}).encode() + b"\n"
        log_line = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (ERROR|WARN|INFO|DEBUG|TRACE) "
        for data in (initialize, b"", initialize + b"{junk\n"):
            for run in range(12):
                with self.subTest(input=data[:20], run=run):
                    p = support.run(["mcp"], self.repo, input=data, timeout=20,
                                    env=dict(self.env, MAJORDOMUS_LOG="trace"))
                    err = p.stderr.decode("utf-8", "replace")
                    self.assertEqual(p.returncode, 0, err)
                    for line in err.splitlines():
                        self.assertRegex(line, log_line)
                    self.assertFalse(os.path.exists(self.lease_path()), err)


class LiveThroughBridgesTest(SharedCase):
    def test_a_live_edit_reaches_every_client_in_both_eras(self):
        a = self.owner("alpha")
        b = self.bridge("beta")
        c = self.bridge()                 # a 2026-07-28 client: no initialize
        for s in (a, b):
            self.ok(s, "resources/subscribe", {"uri": RULE_URI})
        c.send({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
                "params": modern({"notifications": {"resourcesListChanged": True,
                                                    "promptsListChanged": True,
                                                    "resourceSubscriptions": [RULE_URI]}})})
        self.assertEqual(c.recv()["params"]["notifications"], {
            "resourcesListChanged": True, "promptsListChanged": True,
            "resourceSubscriptions": [RULE_URI]})
        support.write(self.repo, RULE_PATH, rule("one", "One, edited"))
        support.write(self.repo, ".ai/repo/rules/project/new.v1.md", rule("new", "New"))
        support.git(self.repo, "add", "-A")
        tag = {"io.modelcontextprotocol/subscriptionId": 7}
        for s in (a, b, c):
            got = []
            deadline = time.time() + 15
            while len(got) < 2 and time.time() < deadline:
                frame = s.recv(timeout=max(0.1, deadline - time.time()))
                if frame.get("method") in ("notifications/resources/list_changed",
                                           "notifications/resources/updated"):
                    got.append(frame)
            self.assertEqual(sorted(f["method"] for f in got),
                             ["notifications/resources/list_changed",
                              "notifications/resources/updated"], got)
            updated = [f for f in got if f["method"].endswith("updated")][0]
            self.assertEqual(updated["params"]["uri"], RULE_URI)
            if s is c:
                for frame in got:
                    self.assertEqual(frame["params"]["_meta"], tag)
        read, _ = self.ok(b, "resources/read", {"uri": RULE_URI})
        self.assertIn("One, edited", read["contents"][0]["text"])


class RefusalTest(SharedCase):
    def assert_standalone(self, s, reason):
        self.wait_log(s, "not shared: ")
        self.assertIn(reason, s.stderr())
        self.assertIn("; serving standalone", s.stderr())
        self.assertEqual(self.tool(s, "majordomus_peers")["count"], 1)
        if LINUX:
            self.assertEqual(listening_sockets(s.proc.pid), 0)

    def plant(self, fields=None, mode=0o600):
        folder = os.path.join(self.runtime, "majordomus")
        os.makedirs(folder, 0o700, exist_ok=True)
        fields = fields or {"root": self.repo, "url": "http://127.0.0.1:9", "pid": os.getpid(),
                            "token": "0" * 64, "version": "0.1.0", "started": "x"}
        with open(self.lease_path(), "w") as handle:
            json.dump(fields, handle)
        os.chmod(self.lease_path(), mode)
        return fields

    def test_a_request_without_the_token_is_refused(self):
        self.owner("alpha")
        lease = self.lease()
        url, good = lease["url"], {"Authorization": "Bearer " + lease["token"]}
        for method, path, body in (("GET", "/api/v1/repository", None), ("GET", "/ui/", None),
                                   ("GET", "/", None), ("GET", "/api/v1/peers", None),
                                   ("POST", "/mcp", json.dumps({
                                       "jsonrpc": "2.0", "id": 1, "method": "initialize",
                                       "params": initialize_params("x")}).encode())):
            for headers in ({}, {"Authorization": "Bearer " + "f" * 64},
                            {"Authorization": "Basic eDp5"}):
                with self.subTest(path=path, headers=headers):
                    status, answer_headers, data = http(url, method, path, headers, body)
                    self.assertEqual(status, 401, data)
                    self.assertEqual(answer_headers.get("www-authenticate"), "Bearer")
                    self.assertEqual(json.loads(data)["error"]["code"], "unauthorized")
        status, _, data = http(url, "GET", "/api/v1/repository", good)
        self.assertEqual((status, json.loads(data)["repository"]["root"]), (200, self.repo))
        status, _, data = http(url, "GET", "/api/v1/peers", good)
        self.assertEqual([p["client"] for p in json.loads(data)["peers"]], ["alpha"])
        status, _, data = http(url, "POST", "/api/v1/peers/announce",
                               dict(good, **{"Content-Type": "application/json"}),
                               json.dumps({"intent": "x", "scope": ["."]}).encode())
        self.assertEqual((status, json.loads(data)["error"]), (422, {
            "code": "refused", "message": "announce needs an MCP session"}))

    def test_a_lease_no_process_holds_is_replaced(self):
        # a planted lease naming this (live) process, and one of a dead pid: neither is
        # locked by a server, so each is stale
        dead = subprocess.Popen([support.PYTHON, "-c", "pass"])
        dead.wait()
        for pid in (os.getpid(), dead.pid):
            with self.subTest(pid=pid):
                self.plant(dict(root=self.repo, url="http://127.0.0.1:9", pid=pid, token="0" * 64,
                                version="0.1.0", started="then"))
                s = self.owner("alpha")
                self.assertIn("replacing a stale lease", s.stderr())
                self.assertEqual(self.lease()["pid"], s.proc.pid)
                self.assertEqual(s.close(), 0, s.stderr())

    @unittest.skipUnless(hasattr(os, "geteuid"), "POSIX ownership")
    def test_a_lease_open_to_others_or_not_ours_is_refused(self):
        self.plant(mode=0o644)
        s = self.spawn("alpha")
        self.assert_standalone(s, "is open to others (mode 0644)")
        self.assertEqual(s.close(), 0)
        if os.geteuid() != 0:
            return      # only root can give a file to another user
        os.chmod(self.lease_path(), 0o600)
        os.chown(self.lease_path(), 4242, 4242)
        s = self.spawn("alpha")
        self.assert_standalone(s, "is not this user's (its owner is uid 4242)")

    def test_a_lease_that_is_a_symlink_is_refused(self):
        target = os.path.join(self.runtime, "elsewhere.json")
        folder = os.path.join(self.runtime, "majordomus")
        os.makedirs(folder, 0o700)
        with open(target, "w") as handle:
            json.dump({"root": self.repo}, handle)
        os.symlink(target, self.lease_path())
        s = self.spawn("alpha")
        self.assert_standalone(s, "is a symlink")
        self.assertTrue(os.path.islink(self.lease_path()))
        with open(target) as handle:
            self.assertEqual(json.load(handle), {"root": self.repo})

    @unittest.skipUnless(hasattr(os, "geteuid"), "POSIX ownership")
    def test_an_unsafe_lease_directory_is_refused(self):
        folder = os.path.join(self.runtime, "majordomus")
        cases = [("a symlink", "is a symlink"), ("world-writable", "is writable by others")]
        if os.geteuid() == 0:
            cases.append(("another user's", "is not this user's (its owner is uid 4242)"))
        for what, reason in cases:
            with self.subTest(directory=what):
                real = os.path.join(self.runtime, "real-" + what.replace(" ", "-"))
                os.makedirs(real, 0o700)
                if os.path.lexists(folder):
                    os.remove(folder) if os.path.islink(folder) else os.rmdir(folder)
                if what == "a symlink":
                    os.symlink(real, folder)
                else:
                    os.makedirs(folder, 0o700)
                    if what == "world-writable":
                        os.chmod(folder, 0o777)
                    else:
                        os.chown(folder, 4242, 4242)
                s = self.spawn("alpha")
                self.assert_standalone(s, reason)
                self.assertEqual(s.close(), 0)
                self.assertEqual(os.listdir(real), [])

    @unittest.skipUnless(os.name == "posix", "flock")
    def test_an_owner_that_does_not_answer_is_replaced(self):
        import fcntl
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)               # accepts nothing: a hung server
        self.addCleanup(silent.close)
        self.plant(dict(root=self.repo, url="http://127.0.0.1:%d" % silent.getsockname()[1],
                        pid=os.getpid(), token="0" * 64, version="0.1.0", started="then"))
        held = os.open(self.lease_path(), os.O_RDWR)
        self.addCleanup(os.close, held)
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)     # a live process holds it
        s = self.owner("alpha")
        self.assertIn("the shared server does not answer; replacing its lease", s.stderr())
        self.assertEqual(self.lease()["pid"], s.proc.pid)

    def test_other_options_serve_standalone(self):
        self.owner("alpha")
        s = self.spawn("beta", args=["--no-watch"])
        self.assert_standalone(s, "this server serves with other options "
                                  "(discovery=vcs watch=on strict=off)")
        self.assertEqual(s.init["capabilities"]["resources"]["listChanged"], False)

    def test_standalone_writes_and_binds_nothing(self):
        for args, env in ((["--standalone"], {}), ([], {"MAJORDOMUS_STANDALONE": "1"})):
            with self.subTest(args=args, env=env):
                s = self.spawn("alpha", args=args, env=env)
                self.tool(s, "majordomus_peers")
                if LINUX:
                    self.assertEqual(listening_sockets(s.proc.pid), 0)
                self.assertEqual(s.close(), 0)
                self.assertEqual(os.listdir(self.runtime), [])
                for word in ("sharing", "attached", "not shared"):
                    self.assertNotIn(word, s.stderr())


class PeersTest(SharedCase):
    def test_announce_validates_its_input(self):
        a = self.owner("alpha")
        outside = support.tempdir(self)
        os.symlink(outside, os.path.join(self.repo, "link"))
        cases = [({"intent": "  ", "scope": ["x"]}, "invalid input: property 'intent' must not "
                  "be blank"),
                 ({"intent": "x", "scope": ["../up"]}, "refused: refused-path '../up' "
                  "(absolute, or leaves the repository)"),
                 ({"intent": "x", "scope": ["/etc"]}, "refused: refused-path '/etc' "
                  "(absolute, or leaves the repository)"),
                 ({"intent": "x", "scope": ["link/new.md"]}, "refused: refused-path "
                  "'link/new.md' resolves outside the repository"),
                 ({"intent": "x", "scope": "a"}, "invalid input: property 'scope' must be an "
                  "array"),
                 ({"intent": "x", "scope": [1]}, "invalid input: property 'scope' must be an "
                  "array of strings"),
                 ({"intent": "x"}, "invalid input: missing required property 'scope'")]
        for arguments, text in cases:
            with self.subTest(arguments=arguments):
                result, _ = self.ok(a, "tools/call", {"name": "majordomus_announce",
                                                      "arguments": arguments})
                self.assertIs(result["isError"], True)
                self.assertEqual(result["content"][0]["text"], text)
        mine = self.tool(a, "majordomus_announce", {
            "intent": " two\n words ", "scope": [os.path.join(self.repo, "src", "new.py"), ".",
                                                 "src//new.py", "not/yet/there/"]})
        self.assertEqual((mine["intent"], mine["scope"]),
                         ("two words", ["src/new.py", ".", "not/yet/there"]))

    def test_the_peers_command(self):
        p = support.run(["peers"], self.repo, env=self.env)
        self.assertEqual((p.returncode, p.stdout), (12, b""))
        self.assertEqual(p.stderr, b"majordomus: no shared server for this repository\n")
        a = self.owner("alpha")
        self.tool(a, "majordomus_announce", {"intent": "edit", "scope": ["docs"]})
        p = support.run(["peers", "--format", "json"], self.repo, env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        value = json.loads(p.stdout)
        self.assertEqual(list(value), ["count", "peers", "boards", "complete"])
        self.assertEqual([(x["id"], x["client"], x["scope"]) for x in value["peers"]],
                         [("p1", "alpha", ["docs"])])
        p = support.run(["peers"], os.path.join(self.repo, ".ai"), env=self.env)
        lines = p.stdout.decode("utf-8").splitlines()
        self.assertEqual(lines[-1], "1 peer(s)")
        self.assertTrue(lines[0].startswith("p1   alpha"), lines)
        self.assertIn("intent: edit  scope: docs", lines[0])
        self.assertEqual(a.close(), 0)
        p = support.run(["peers"], self.repo, env=self.env)
        self.assertEqual(p.returncode, 12)


class ServeOwnerTest(SharedCase):
    def test_serve_owns_the_lease_and_shows_the_board(self):
        srv = support.HttpServer(self.repo, env=self.env)
        self.addCleanup(srv.stop)
        lease = self.lease()
        self.assertEqual((lease["pid"], lease["url"]),
                         (srv.proc.pid, "http://127.0.0.1:%d" % srv.port))
        # public: no token is fine, a wrong one is refused
        self.assertEqual(srv.request("GET", "/api/v1/repository")[0], 200)
        self.assertEqual(srv.request("GET", "/api/v1/repository",
                                     {"Authorization": "Bearer nope"})[0], 401)
        b = self.bridge("beta")
        # a URL client of /mcp is a peer too, and may announce through REST with its session
        status, headers, _ = srv.request("POST", "/mcp", {
            "Content-Type": "application/json", "Accept": "application/json"},
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": initialize_params("url-client")}).encode())
        self.assertEqual(status, 200)
        session = headers["mcp-session-id"]
        status, _, body = srv.request("POST", "/api/v1/peers/announce", {
            "Mcp-Session-Id": session, "Content-Type": "application/json"},
            json.dumps({"intent": "edit the rules", "scope": [".ai/repo/rules"]}).encode())
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["transport"], "http")
        self.tool(b, "majordomus_announce", {"intent": "fix one", "scope": [RULE_PATH]})
        status, _, body = srv.request("GET", "/api/v1/peers")
        listing = json.loads(body)
        self.assertEqual([(p["client"], p["transport"], p["overlaps"])
                          for p in listing["peers"]],
                         [("beta", "bridge", ["p2"]), ("url-client", "http", ["p1"])])
        self.assertEqual(srv.request("GET", "/api/v1/peers/announce")[0], 405)
        status, _, page = srv.request("GET", "/ui/")
        text = page.decode("utf-8")
        self.assertEqual(status, 200)
        self.assertIn("Sessions sharing this server (2)", text)
        self.assertIn('<tr class="overlap"><td><code>p1</code></td><td>beta</td>', text)
        self.assertIn("overlaps p2", text)
        self.assertIn("fix one", text)
        # the page follows the board: a `peers` event when it changes
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=15)
        self.addCleanup(conn.close)
        conn.request("GET", "/ui/events", headers={"Accept": "text/event-stream",
                                                   "Sec-Fetch-Site": "same-origin"})
        events = conn.getresponse()
        self.assertEqual(events.status, 200)
        seen = []
        while len(seen) < 2:
            line = events.fp.readline()
            if line.startswith((b"event:", b"data:")):
                seen.append(line.strip())
        self.assertEqual(seen[0], b"data: " + json.dumps(
            {"generation": 1}).replace(" ", "").encode())
        self.assertEqual(seen[1], b"event: peers")
        self.assertEqual(b.close(), 0)
        while True:
            line = events.fp.readline()
            self.assertTrue(line, "the stream ended before the board's change")
            if line.startswith(b"event: peers"):
                break


class ReadOnlyTest(SharedCase):
    def test_a_shared_session_changes_nothing_in_the_repository(self):
        before = support.snapshot(self.repo)
        a = self.owner("alpha")
        b = self.bridge("beta")
        for s in (a, b):
            self.ok(s, "tools/list")
            self.ok(s, "resources/list")
            self.ok(s, "resources/read", {"uri": RULE_URI})
            self.ok(s, "resources/read", {"uri": PEERS_URI})
            self.ok(s, "prompts/get", {"name": "hand", "arguments": {"CONTEXT": "x"}})
            self.tool(s, "majordomus_search", {"query": "rule words"})
            self.tool(s, "majordomus_announce", {"intent": "x", "scope": [RULE_PATH]})
            self.tool(s, "majordomus_peers")
            self.tool(s, "majordomus_repository")
        lease = self.lease()
        status, _, _ = http(lease["url"], "GET", "/ui/",
                            {"Authorization": "Bearer " + lease["token"]})
        self.assertEqual(status, 200)
        for s in (b, a):
            self.assertEqual(s.close(), 0, s.stderr())
        self.assertEqual(support.snapshot(self.repo), before)
        self.assertFalse(self.lease_path().startswith(self.repo))


# The requests every server answers alike (bytes): the same lines go to a standalone server,
# the owner and a bridge (§27: a bridge is indistinguishable from a standalone server).
SAME = [
    b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":"before","method":"tools/list"}',
    None,                                          # initialize, sent by the test
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    b'{"jsonrpc":"2.0","id":2,"method":"resources/list"}',
    b'{"jsonrpc":"2.0","id":3,"method":"resources/templates/list"}',
    b'{"jsonrpc":"2.0","id":4,"method":"prompts/list"}',
    b'{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"hand",'
    b'"arguments":{"CONTEXT":"caf\\u00e9"}}}',
    b'{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"' +
    RULE_URI.encode() + b'"}}',
    b'{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"majordomus://x"}}',
    b'{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"majordomus_search",'
    b'"arguments":{"query":"words to search","limit":3}}}',
    b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"majordomus_list",'
    b'"arguments":{"limit":5}}}',
    b'{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"majordomus_get",'
    b'"arguments":{"uri":"' + RULE_URI.encode() + b'","offset":2,"limit":2}}}',
    b'{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"majordomus_capabilities",'
    b'"arguments":{}}}',
    b'{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"majordomus_repository",'
    b'"arguments":{}}}',
    b'{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"majordomus_context",'
    b'"arguments":{"path":".ai/repo/rules"}}}',
    b'{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"no_such","arguments":{}}}',
    b'{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"majordomus_announce",'
    b'"arguments":{"intent":" ","scope":[]}}}',
    b'{"jsonrpc":"2.0","id":16,"method":"resources/subscribe","params":{"uri":"' +
    RULE_URI.encode() + b'"}}',
    b'{"jsonrpc":"2.0","id":17,"method":"logging/setLevel","params":{"level":"info"}}',
    b'not json',
    b'\xff\xfe',
    b'42',
    b'[]',
    b'[{"jsonrpc":"2.0","id":18,"method":"ping"},{"jsonrpc":"2.0","method":"x"},7]',
    b'{"jsonrpc":"2.0","id":19}',
    b'{"jsonrpc":"2.0","id":20,"method":"initialize","params":{"protocolVersion":"1999"}}',
    b'   ',
    b'{"jsonrpc":"2.0","id":21,"method":"server/discover","params":{}}',
    b'{"jsonrpc":"2.0","id":211,"method":"server/discover","params":{"_meta":{'
    b'"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    b'"io.modelcontextprotocol/clientCapabilities":{}}}}',
    b'{"jsonrpc":"2.0","id":22,"method":"tools/list","params":{"_meta":{'
    b'"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    b'"io.modelcontextprotocol/clientCapabilities":{}}}}',
    b'{"jsonrpc":"2.0","id":23,"method":"resources/read","params":{"uri":"majordomus://x",'
    b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
    b'"io.modelcontextprotocol/clientCapabilities":{}}}}',
    b'{"jsonrpc":"2.0","id":24,"method":"ping","params":{"_meta":{'
    b'"io.modelcontextprotocol/protocolVersion":"2025-01-01",'
    b'"io.modelcontextprotocol/clientCapabilities":{}}}}',
    b'x' * (1048576 + 10),
    b'{"jsonrpc":"2.0","id":25,"method":"ping"}',
]


class SameAnswersTest(SharedCase):
    def test_a_bridge_answers_as_a_standalone_server(self):
        """Byte for byte: a standalone server, the owner and a bridge answer the same lines
        alike, both eras, the framing's refusals included (the bridge's instructions name
        the owner's session: that sentence aside)."""
        import re
        standalone = self.spawn(args=["--standalone"])
        owner = self.spawn()
        init = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                           "params": initialize_params("same")}).encode()
        owner.send_raw(init + b"\n")
        owner.recv()
        self.wait_log(owner, "sharing this repository's server")
        bridge = self.spawn()
        lines = b"".join((init if line is None else line) + b"\n" for line in SAME)
        answers = {}
        # the owner last: its client's end would otherwise keep it for the bridge (§27)
        for name, s in (("standalone", standalone), ("bridge", bridge), ("owner", owner)):
            s.send_raw(lines + b'{"jsonrpc":"2.0","id":"end","method":"ping"}')  # then EOF
            s.proc.stdin.close()
            got = []
            while not got or not got[-1].startswith(b'{"jsonrpc":"2.0","id":"end"'):
                got.append(s.recv_line())
            self.assertEqual(s.proc.wait(15), 0, s.stderr())
            answers[name] = got
        self.wait_log(bridge, "attached to the shared server")
        named = [line for line in answers["bridge"] if b" Also here: p1 (same);" in line]
        self.assertEqual(len(named), 3)       # two initialize answers, server/discover
        answers["bridge"] = [re.sub(rb' Also here: p1 \(same\);[^"]*"', b'"', line)
                             for line in answers["bridge"]]
        self.assertEqual(answers["owner"], answers["standalone"])
        self.assertEqual(answers["bridge"], answers["standalone"])
        self.assertGreater(len(answers["standalone"]), 30)


if __name__ == "__main__":
    unittest.main()
