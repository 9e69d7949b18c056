"""Hostile peers and slow clients (SPEC §25.1): no session can stall another, and every
request is bounded. Real `mcp` and `serve` processes in scratch repositories, each test
with its own XDG_RUNTIME_DIR (tests/test_shared.py's SharedCase): a bridge stopped with
SIGSTOP while another session announces and the layer changes, a stopped owner, 256 /mcp
sessions announcing 64 paths each, paths of 100 KB and with a NUL on every interface, what
a peer said shown by `majordomus peers`, and the leases that used to be waited on for 30 s.
Each test failed before its fix (the stopped bridge and owner hung the other sessions, the
sessions' announces took minutes, the paths were briefed, the escapes reached the terminal,
the leases were waited on until the read timed out)."""
import json
import os
import signal
import socket
import subprocess
import time
import unittest
import urllib.parse

from tests import support
from tests.test_shared import RULE_PATH, RULE_URI, SharedCase, http, lease_name, rule

POSIX = os.name == "posix"
LONG = "a/" * 50000 + "x.md"            # 100 KB: over the 4,096-byte bound
NUL = "src/a\x00b.md"
PATH_BOUND = "the path is over the 4096 byte bound"


def stop(test, proc):
    """SIGSTOP `proc` until the test ends (then it is resumed and killed), returning once
    every thread of it has stopped: the kernel wakes one thread to take the signal, and on
    a loaded machine another may answer a request before that one runs and stops them all."""
    os.kill(proc.pid, signal.SIGSTOP)
    tasks = "/proc/%d/task" % proc.pid
    if os.path.isdir(tasks):
        support.wait_until("every thread of pid %d stopped" % proc.pid,
                           lambda: all(stopped(os.path.join(tasks, t, "stat"))
                                       for t in os.listdir(tasks)), 10, 0.005)

    def resume():
        try:
            os.kill(proc.pid, signal.SIGCONT)
        except OSError:
            pass
    test.addCleanup(resume)


def stopped(stat):
    """Whether /proc's stat line says the thread is stopped (state T)."""
    try:
        with open(stat) as handle:
            return handle.read().rpartition(")")[2].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return True            # (a thread that ended stops nothing)


@unittest.skipUnless(POSIX, "SIGSTOP")
class StoppedPeerTest(SharedCase):
    def wait_until(self, what, check, timeout=15):
        return support.wait_until(what, check, timeout, 0.1)

    def call_within(self, s, method, params, timeout):
        """One request whose answer must come within `timeout` seconds."""
        self.next_id += 1
        s.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            frame = s.recv(timeout)
            if frame.get("id") == self.next_id and "method" not in frame:
                return frame

    def test_a_stopped_bridge_stalls_nobody(self):
        a, b, c = self.owner("alpha"), self.bridge("beta"), self.bridge("gamma")
        self.tool(b, "majordomus_announce", {"intent": "edit the sources", "scope": ["src"]})
        stop(self, b.proc)
        scope = ["src/%02d/%s.py" % (n, "x" * 3000) for n in range(64)]
        # Each announce tells the stopped bridge (a warning of some 200 KB): the sockets
        # between them fill within a few, and before the fix the next announce was never
        # answered.
        for n in range(40):
            answer = self.call_within(c, "tools/call", {"name": "majordomus_announce",
                                      "arguments": {"intent": "edit %d" % n, "scope": scope}},
                                      timeout=10)
            self.assertIs(answer["result"]["isError"], False, answer)
        self.wait_until("the stopped bridge dropped from the board", lambda: [
            p["client"] for p in self.tool(c, "majordomus_peers")["peers"]] == [
            "alpha", "gamma"])
        a.wait_stderr("a session missed the write deadline; dropped")
        # The layer changes: the owner's own client and the other bridge see it.
        with open(os.path.join(self.repo, RULE_PATH), "w", encoding="utf-8") as handle:
            handle.write(rule("one", "One, edited"))
        support.commit_all(self.repo, "edit the rule")
        for s in (a, c):
            self.wait_until("the edit served", lambda: "One, edited" in self.call_within(
                s, "resources/read", {"uri": RULE_URI}, timeout=10)["result"][
                "contents"][0]["text"])

    def test_a_stopped_owner_makes_its_bridge_elect_again(self):
        a, b = self.owner("alpha"), self.bridge("beta")
        stop(self, a.proc)
        started = time.time()
        answer = self.call_within(b, "tools/call", {"name": "majordomus_peers",
                                                    "arguments": {}}, timeout=25)
        self.assertIn("did not answer within 10 s", answer.get("error", {}).get("message", ""),
                      (answer, a.proc.poll(), a.stderr(), b.stderr()))
        self.assertLess(time.time() - started, 25)
        answer = self.call_within(b, "tools/call", {"name": "majordomus_peers",
                                                    "arguments": {}}, timeout=20)
        self.assertEqual([p["client"] for p in answer["result"]["structuredContent"]["peers"]],
                         ["beta"])
        # (logged after the lines waiting for the new server are answered)
        self.wait_log(b, "took over the shared server")


class BoundedWorkTest(SharedCase):
    def test_256_sessions_of_64_paths_are_listed(self):
        srv = support.HttpServer(self.repo, env=self.env)
        self.addCleanup(srv.stop)
        base = "http://127.0.0.1:%d" % srv.port

        def post(body, session=None):
            headers = {"Content-Type": "application/json",
                       "Accept": "application/json, text/event-stream"}
            if session:
                headers.update({"Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"})
            status, answer_headers, data = http(base, "POST", "/mcp", headers,
                                                json.dumps(body).encode(), timeout=30)
            self.assertEqual(status, 200, data)
            return answer_headers, json.loads(data)

        for n in range(256):
            headers, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "client-%d" % n, "version": "1"}}})
            session = headers["mcp-session-id"]
            # every session's paths overlap those of the sessions of the same folder
            scope = ["area%02d/sub%d/file%02d.py" % (n % 32, n % 4, k) for k in range(64)]
            _, answer = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "majordomus_announce", "arguments": {"intent": "n%d" % n,
                                                             "scope": scope}}}, session)
            self.assertIs(answer["result"]["isError"], False, answer)
        status, _, data = http(base, "GET", "/api/v1/peers", timeout=30)
        listing = json.loads(data)
        self.assertEqual((status, listing["count"]), (200, 256))
        first = listing["peers"][0]
        self.assertEqual(first["overlaps"], ["p%d" % (1 + n) for n in range(32, 256, 32)])

    def test_long_paths_and_a_nul_are_invalid_input_everywhere(self):
        a = self.owner("alpha")
        for name, arguments in (("majordomus_brief", {"path": LONG}),
                                ("majordomus_brief", {"path": NUL}),
                                ("majordomus_context", {"path": LONG}),
                                ("majordomus_context", {"path": NUL}),
                                ("majordomus_announce", {"intent": "x", "scope": ["src", LONG]}),
                                ("majordomus_announce", {"intent": "x", "scope": [NUL]})):
            with self.subTest(tool=name, path=arguments.get("path", "scope")[:20]):
                result, _ = self.ok(a, "tools/call", {"name": name, "arguments": arguments})
                self.assertIs(result["isError"], True, result)
                text = result["content"][0]["text"]
                self.assertTrue(text.startswith("invalid input: "), text)
                self.assertTrue(PATH_BOUND in text or "holds a NUL" in text, text)
        srv = support.HttpServer(self.repo, env=dict(self.env, MAJORDOMUS_STANDALONE="1"))
        self.addCleanup(srv.stop)
        for route in ("/api/v1/brief", "/api/v1/context"):
            for path in ("a/" * 3000, NUL):
                with self.subTest(route=route, path=path[:10]):
                    status, _, data = srv.request("GET", route + "?path=" + urllib.parse.quote(
                        path))
                    self.assertEqual((status, json.loads(data)["error"]["code"]),
                                     (400, "invalid_input"), data)
        for words in (["brief"], ["context", "resolve"]):
            with self.subTest(cli=words):
                proc = support.run(words + [LONG], self.repo, env=self.env)
                self.assertEqual(proc.returncode, 2, proc.stderr)
                self.assertIn(PATH_BOUND, proc.stderr.decode())


class PeersTextTest(SharedCase):
    def test_what_a_peer_said_is_escaped_on_the_terminal(self):
        a = self.owner("evil\x1b[2J\x1b[31mname")
        self.tool(a, "majordomus_announce", {"intent": "do \x1b]0;title\x07 this",
                                            "scope": ["src/a\nforged line", "src/b\x9b2J"]})
        proc = support.run(["peers"], self.repo, env=self.env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        out = proc.stdout.decode("utf-8")
        self.assertNotIn("\x1b", out)
        self.assertNotIn("\x9b", out)
        self.assertNotIn("\x07", out)
        self.assertEqual(out.count("\n"), 2, out)     # the peer's line and the count
        self.assertIn("evil\\x1b[2J\\x1b[31mname", out)
        self.assertIn("do \\x1b]0;title\\x07 this", out)
        self.assertIn("src/a\\nforged line, src/b\\x9b2J", out)


@unittest.skipUnless(POSIX, "flock")
class HeldLeaseTest(SharedCase):
    """Leases held by a process that is no owner (§25.1): answered within seconds, not 30."""

    def hold(self, content):
        """A lease for this repository, written with `content` and locked by a process of
        its own until the test ends."""
        folder = os.path.join(self.runtime, "majordomus")
        os.makedirs(folder, 0o700, exist_ok=True)
        path = os.path.join(folder, lease_name(self.repo))
        holder = subprocess.Popen([support.PYTHON, "-c", (
            "import fcntl, os, sys\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
            "os.write(fd, sys.argv[2].encode())\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n"), path, content], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

        def release():
            holder.stdin.close()
            holder.wait(10)
        self.addCleanup(release)
        self.assertEqual(holder.stdout.readline(), b"locked\n")
        return holder

    def fields(self, **changes):
        fields = {"root": self.repo, "url": "http://127.0.0.1:9", "pid": os.getpid(),
                  "token": "0" * 64, "version": "0.1.0", "started": "x"}
        fields.update(changes)
        return json.dumps(fields)

    def initialize_within(self, s, timeout):
        s.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "late", "version": "1"}}})
        answer = s.recv(timeout)
        self.assertIn("result", answer, answer)

    def dead_pid(self):
        gone = subprocess.Popen([support.PYTHON, "-c", "pass"])
        gone.wait()
        return gone.pid

    def test_an_empty_locked_lease_is_stale_after_a_second(self):
        self.hold("")
        s = self.spawn()
        self.initialize_within(s, 10)
        self.wait_log(s, "replacing a lease that names no live owner")
        self.wait_log(s, "sharing this repository's server")

    def test_a_starting_lease_of_a_pid_not_seen_here_is_stale(self):
        self.hold(self.fields(url="", pid=self.dead_pid()))
        s = self.spawn()
        self.initialize_within(s, 10)
        self.wait_log(s, "replacing a lease that names no live owner")

    def test_a_lease_of_a_pid_not_seen_here_is_probed(self):
        self.hold(self.fields(pid=self.dead_pid()))
        s = self.spawn()
        self.initialize_within(s, 10)
        self.wait_log(s, "the shared server does not answer; replacing its lease")
        self.wait_log(s, "sharing this repository's server")

    def test_a_lease_on_another_loopback_address_is_refused(self):
        listener = socket.socket()
        try:
            listener.bind(("127.0.0.2", 0))
        except OSError as exc:
            self.skipTest("127.0.0.2 cannot be bound here: %s" % exc)
        listener.listen(4)
        listener.settimeout(0.2)
        self.addCleanup(listener.close)
        url = "http://127.0.0.2:%d" % listener.getsockname()[1]
        self.hold(self.fields(url=url))
        s = self.spawn()
        self.initialize_within(s, 10)
        self.wait_log(s, "not shared: the lease names %r, not a loopback HTTP address" % url)
        with self.assertRaises(socket.timeout):
            listener.accept()[0].close()      # nobody connected to it


if __name__ == "__main__":
    unittest.main()
