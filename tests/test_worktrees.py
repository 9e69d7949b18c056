"""Worktrees and claims (SPEC §31): one board across the checkouts of a repository, and
claims that refuse. Real `mcp` (and `serve`) processes in a scratch repository and a linked
worktree of it (`git worktree add`, another branch), each test with its own
XDG_RUNTIME_DIR (tests/test_shared.py's SharedCase): two owners whose boards list both
checkouts, overlap notices across them naming the other branch, a claim refusing an
overlapping one in the other checkout and in the same one and allowing a disjoint one, only
the holder releasing, kill -9 of a holder (a bridge, an owner) releasing its claims, a
checkout's server that does not answer (complete: false, no hang), the 2026-07-28 handle,
and around all of it the §12 proof: nothing in either checkout changes."""
import hashlib
import json
import os
import signal
import time
import unittest

from tests import support
from tests.test_shared import SharedCase, http, modern

POSIX = os.name == "posix"


def checkout_tag(root):
    return hashlib.sha256(os.path.realpath(root).encode("utf-8")).hexdigest()[:8]


def snapshot(checkout):
    """What §12 says must stay byte-identical in one checkout (a linked worktree's index
    lives in the common git dir)."""
    index = support.git(checkout, "rev-parse", "--git-path", "index").strip()
    index = index if os.path.isabs(index) else os.path.join(checkout, index)
    files = []
    for folder, names, files_here in os.walk(checkout):
        files += sorted(os.path.relpath(os.path.join(folder, name), checkout)
                        for name in names + files_here)
    digest = hashlib.sha256()
    for rel in sorted(filter(None, support.git(checkout, "ls-files", "-z").split("\0"))):
        with open(os.path.join(checkout, rel), "rb") as handle:
            digest.update(rel.encode() + b"\0" + handle.read())
    with open(index, "rb") as handle:
        index_bytes = hashlib.sha256(handle.read()).hexdigest()
    return {"status": support.git(checkout, "status", "--porcelain",
                                  env={"GIT_OPTIONAL_LOCKS": "0"}),
            "tracked": digest.hexdigest(), "index": (index_bytes, os.stat(index).st_mtime_ns),
            "files": sorted(files)}


class WorktreeCase(SharedCase):
    def setUp(self):
        SharedCase.setUp(self)
        self.other = os.path.join(os.path.dirname(self.repo), "feature-checkout")
        support.git(self.repo, "worktree", "add", "-q", "-b", "feature", self.other)
        self.other = os.path.realpath(self.other)
        self.main_branch = support.git(self.repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
        self.before = (snapshot(self.repo), snapshot(self.other))

    def tearDown(self):
        # §12: whatever the sessions did, neither checkout changed (checked before the
        # cleanups end the processes: a server writes nothing while it runs, or after)
        self.assertEqual((snapshot(self.repo), snapshot(self.other)), self.before)

    def announce(self, s, scope, claim=None, intent="work"):
        arguments = {"intent": intent, "scope": scope}
        if claim is not None:
            arguments["claim"] = claim
        result, _ = self.ok(s, "tools/call", {"name": "majordomus_announce",
                                              "arguments": arguments})
        return result

    def peers(self, s):
        return self.tool(s, "majordomus_peers")

    def wait_until(self, what, check, timeout=10):
        return support.wait_until(what, check, timeout)


class OneBoardTest(WorktreeCase):
    def test_each_board_lists_both_checkouts(self):
        a = self.owner("alpha")
        w = self.owner("omega", repo=self.other)
        self.assertIn("sharing this repository's server", w.stderr())
        for s, mine, theirs in ((a, self.repo, self.other), (w, self.other, self.repo)):
            listing = self.peers(s)
            self.assertEqual((listing["count"], listing["boards"], listing["complete"]),
                             (2, 2, True), listing)
            here, there = listing["peers"]
            self.assertEqual((here["id"], here["worktree"], here["claim"]), ("p1", mine, False))
            self.assertEqual(there["id"], "p1@" + checkout_tag(theirs))
            self.assertEqual(there["worktree"], theirs)
        by_client = {p["client"]: p for p in self.peers(a)["peers"]}
        self.assertEqual((by_client["alpha"]["branch"], by_client["omega"]["branch"]),
                         (self.main_branch, "feature"))
        # this checkout's board alone, as one checkout's server asks another's
        local = self.tool(a, "majordomus_peers", {"local": True})
        self.assertEqual(([p["client"] for p in local["peers"]], local["boards"]),
                         (["alpha"], 1))
        # the command line shows both, where each works
        proc = support.run(["peers"], self.repo, env=self.env)
        out = proc.stdout.decode()
        self.assertIn("in %s  on feature" % self.other, out)
        self.assertIn("2 peer(s) on 2 checkouts", out)

    def test_overlaps_across_checkouts_name_the_other_branch(self):
        a = self.owner("alpha")
        w = self.owner("omega", repo=self.other)
        self.announce(a, ["src"], intent="rework the sources")
        mine = self.announce(w, ["src/app.py", "docs"], intent="fix the app")
        self.assertEqual(mine["structuredContent"]["overlaps"], ["p1@" + checkout_tag(self.repo)])
        warning = self.wait_until("a told", lambda: [
            n for n in self.told(a) if n.get("method") == "notifications/message"])
        self.assertEqual(warning[0]["params"]["data"],
                         "p1@%s (omega) on branch feature in %s announced fix the app on "
                         "src/app.py, docs, overlapping yours: src"
                         % (checkout_tag(self.other), self.other))
        listing = self.peers(a)
        self.assertEqual([p["overlaps"] for p in listing["peers"]],
                         [["p1@" + checkout_tag(self.other)], ["p1"]])


class ClaimTest(WorktreeCase):
    def refused(self, result):
        self.assertIs(result["isError"], True, result)
        text = result["content"][0]["text"]
        self.assertTrue(text.startswith("refused: claim_conflict: "), text)
        return text

    def test_claims_refuse_overlaps_anywhere_and_only_the_holder_releases(self):
        a = self.owner("alpha")
        b = self.bridge("beta")
        w = self.owner("omega", repo=self.other)
        held = self.announce(a, ["src"], claim=True)
        self.assertIs(held["structuredContent"]["claim"], True, held)
        # the other checkout, then the same one: refused, the holder, its branch and the
        # overlapping paths named, and nothing changed
        text = self.refused(self.announce(w, ["src/app.py", "lib"], claim=True))
        self.assertEqual(text, "refused: claim_conflict: src claimed by p1@%s (alpha) on "
                         "branch %s in %s" % (checkout_tag(self.repo), self.main_branch,
                                              self.repo))
        self.refused(self.announce(b, ["src/deep/x.py"], claim=True))
        self.assertEqual([p.get("intent") for p in self.peers(a)["peers"]],
                         ["work", None, None])
        # disjoint claims are held beside it
        self.assertIs(self.announce(b, ["docs"], claim=True)["isError"], False)
        self.assertIs(self.announce(w, ["lib"], claim=True)["isError"], False)
        # an announce that is no claim overlaps freely (and is told)
        self.assertIs(self.announce(w, ["src/app.py"])["isError"], False)
        # nobody but the holder releases: only its own announce changes its claim
        self.refused(self.announce(w, ["src"], claim=True))
        self.assertIs(self.announce(a, ["src"], claim=False)["isError"], False)
        self.assertIs(self.announce(w, ["src/app.py"], claim=True)["isError"], False)
        self.refused(self.announce(a, ["src"], claim=True))
        self.assertIs(self.announce(w, [], claim=True)["isError"], False)   # released
        self.assertIs(self.announce(a, ["src"], claim=True)["isError"], False)
        claims = {p["id"]: p["scope"] for p in self.peers(w)["peers"] if p["claim"]}
        self.assertEqual(claims, {"p1@" + checkout_tag(self.repo): ["src"],
                                  "p2@" + checkout_tag(self.repo): ["docs"]})

    @unittest.skipUnless(POSIX, "kill -9")
    def test_kill_9_of_a_holder_releases_its_claims(self):
        a = self.owner("alpha")
        b = self.bridge("beta")
        c = self.bridge("gamma")
        w = self.owner("omega", repo=self.other)
        self.assertIs(self.announce(b, ["src"], claim=True)["isError"], False)
        self.assertIs(self.announce(a, ["lib"], claim=True)["isError"], False)
        self.refused(self.announce(w, ["src/x.py"], claim=True))
        os.kill(b.proc.pid, signal.SIGKILL)             # a bridge holder
        self.wait_until("the bridge's claim released", lambda: self.announce(
            w, ["src/x.py"], claim=True)["isError"] is False, timeout=2)
        self.refused(self.announce(w, ["lib/y.py"], claim=True))
        os.kill(a.proc.pid, signal.SIGKILL)             # the owner holder
        self.wait_log(c, "took over the shared server")
        self.wait_until("the owner's claim released", lambda: self.announce(
            w, ["lib/y.py"], claim=True)["isError"] is False, timeout=2)

    @unittest.skipUnless(POSIX, "SIGSTOP")
    def test_a_checkout_whose_server_does_not_answer(self):
        a = self.owner("alpha")
        w = self.owner("omega", repo=self.other)
        os.kill(w.proc.pid, signal.SIGSTOP)
        self.addCleanup(os.kill, w.proc.pid, signal.SIGCONT)
        started = time.time()
        listing = self.peers(a)
        self.assertLess(time.time() - started, 5)
        self.assertEqual((listing["count"], listing["boards"], listing["complete"]),
                         (1, 1, False))
        self.assertIs(self.announce(a, ["src"], claim=True)["isError"], False)

    def test_a_handle_stands_for_a_2026_07_28_session(self):
        srv = support.HttpServer(self.repo, env=self.env)
        self.addCleanup(srv.stop)
        w = self.owner("omega", repo=self.other)

        def announce(arguments):
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": modern(
                {"name": "majordomus_announce", "arguments": arguments}, name="modern")}
            status, _, data = srv.request("POST", "/mcp", {
                "Content-Type": "application/json", "Accept": "application/json",
                "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
                "Mcp-Name": "majordomus_announce"}, json.dumps(body).encode())
            self.assertEqual(status, 200, data)
            return json.loads(data)["result"]

        first = announce({"intent": "edit", "scope": ["src"], "claim": True})
        self.assertIs(first["isError"], False, first)
        handle = first["structuredContent"]["handle"]
        self.refused(self.announce(w, ["src/app.py"], claim=True))
        again = announce({"intent": "edit", "scope": [], "claim": True, "handle": handle})
        self.assertEqual(again["structuredContent"]["id"], first["structuredContent"]["id"])
        self.assertNotIn("handle", json.dumps(self.peers(w)))     # never shown to others
        self.assertIs(self.announce(w, ["src/app.py"], claim=True)["isError"], False)
        unknown = announce({"intent": "edit", "scope": ["docs"], "handle": "f" * 32})
        self.assertTrue(unknown["content"][0]["text"].startswith(
            "invalid input: the handle ffff"), unknown)
        status, _, data = http("http://127.0.0.1:%d" % srv.port, "GET", "/api/v1/peers")
        self.assertEqual([p["client"] for p in json.loads(data)["peers"]],
                         ["modern", "omega"])


if __name__ == "__main__":
    unittest.main()
