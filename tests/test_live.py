"""Black-box tests of the live layer (SPEC §15, with §1 `--no-watch`, §7.5 counters, §9.1
`live`, §9.3, §12): a long-lived `majordomus mcp` / `serve` follows a repository that
changes under it, tells its clients, and writes nothing.

Every test spawns the real program over real pipes (or a real `serve --port 0`) in a
scratch git repository, changes the repository while the process stays alive, and waits
with a generous bound for what the SPEC says must follow. No assertion is timed: a wait
that the SPEC bounds (the 1-second sweep, the idle timer's 2 s) is a poll up to POLL
seconds, and the measured latencies are printed to stderr.
"""
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse

from tests import support
from tests.support import LATEST, REPOSITORY_URI

POLL = 10.0        # seconds: the generous bound of every wait for an expected outcome
SETTLE = 1.2       # seconds: more than the SPEC's 1-second sweep
QUIET = 2.5        # seconds: longer than the SPEC's 2 s idle latency (skeleton)
RULES_DIR = ".ai/repo/rules/project/"


def note(text):
    sys.stderr.write("  [live] %s\n" % text)
    sys.stderr.flush()


def rule_text(name, body="Body of the rule.", title=None):
    return ("---\nid: project.%s\nversion: 1\nkind: rule\ntitle: %s\n"
            "description: the rule %s\n---\n\n%s\n" % (name, title or "Rule " + name, name,
                                                         body))


def rule_path(name):
    return RULES_DIR + name + ".md"


def rule_uri(name):
    return "majordomus://rule/project.%s@1" % name


def bump_mtime(repo, rel, seconds=2):
    """Move a file's mtime later than anything a write in this second could give it."""
    path = os.path.join(repo, rel)
    st = os.stat(path)
    target = max(st.st_mtime_ns, time.time_ns()) + int(seconds * 1e9)
    os.utime(path, ns=(st.st_atime_ns, target))


def same_size_edit(repo, rel, old, new):
    """Replace `old` by `new` (same length) in place: same size, same inode; then move the
    mtime so that the edit cannot hide inside one mtime tick (§15.2's only blind spot)."""
    assert len(old.encode()) == len(new.encode())
    path = os.path.join(repo, rel)
    before = os.stat(path)
    data = support.read_bytes(repo, rel)
    assert data.count(old.encode()) == 1, (rel, old)
    with open(path, "r+b") as handle:
        handle.write(data.replace(old.encode(), new.encode()))
    bump_mtime(repo, rel)
    after = os.stat(path)
    assert (after.st_size, after.st_ino) == (before.st_size, before.st_ino)
    return support.read_bytes(repo, rel)


def index_state(repo):
    """(size, mtime_ns, inode, sha256) of .git/index."""
    path = os.path.join(repo, ".git", "index")
    st = os.stat(path)
    with open(path, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    return (st.st_size, st.st_mtime_ns, st.st_ino, digest)


def plain_git_status(repo):
    """`git status` as another program runs it: optional locks on, so that it refreshes
    and rewrites .git/index."""
    env = support.base_env()
    env.pop("GIT_OPTIONAL_LOCKS", None)
    subprocess.run(["git", "-C", repo, "status"], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def quoted(uri):
    return urllib.parse.quote(uri, safe="")


def poll(fetch, accept, what, timeout=POLL, every=0.2):
    """Call fetch() until accept(value); return (value, seconds waited, tries)."""
    began = time.monotonic()
    tries = 0
    while True:
        tries += 1
        value = fetch()
        if accept(value):
            return value, time.monotonic() - began, tries
        if time.monotonic() - began > timeout:
            raise AssertionError("%s: not seen within %ss; last value: %r"
                                 % (what, timeout, value if len(repr(value)) < 3000
                                    else repr(value)[:3000]))
        time.sleep(every)


def is_notification(msg):
    return isinstance(msg, dict) and "method" in msg and "id" not in msg


class Client(object):
    """A real `majordomus mcp` session that keeps the notifications it hears apart from the
    answers: `rpc` returns (answer, notifications written before it)."""

    def __init__(self, scope, repo, via="pyz", args=(), env=None, initialized=True):
        self.s = support.McpSession(repo, via=via, args=args, env=env)
        scope.addCleanup(self.s.kill)
        self.notes = []          # [(monotonic time received, notification)]
        answer, _ = self.rpc("initialize", {"protocolVersion": LATEST, "capabilities": {},
                                            "clientInfo": {"name": "t", "version": "1"}})
        self.init = answer["result"]
        if initialized:
            self.initialized()

    def initialized(self):
        self.s.notify("notifications/initialized")

    def _take(self, line):
        msg = json.loads(line[:-1].decode("utf-8"))
        if is_notification(msg):
            self.notes.append((time.monotonic(), msg))
        return msg

    def rpc(self, method, params=None):
        msg_id = self.s.new_id()
        frame = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            frame["params"] = params
        self.s.send(frame)
        before = []
        while True:
            msg = self._take(self.s.recv_line())
            if is_notification(msg):
                before.append(msg)
                continue
            if msg.get("id") != msg_id:
                raise AssertionError("a frame that answers nothing asked: %r" % (msg,))
            return msg, before

    def result(self, method, params=None):
        answer, _ = self.rpc(method, params)
        if "result" not in answer:
            raise AssertionError("%s failed: %r" % (method, answer))
        return answer["result"]

    def tool(self, name, arguments=None):
        result = self.result("tools/call", {"name": name, "arguments": arguments or {}})
        if result.get("isError") is not False:
            raise AssertionError("%s failed: %r" % (name, result))
        return result["structuredContent"]

    def uris(self):
        return [r["uri"] for r in self.result("resources/list")["resources"]]

    def read(self, uri):
        """The text resources/read gives for uri, or the JSON-RPC error code."""
        answer, _ = self.rpc("resources/read", {"uri": uri})
        if "error" in answer:
            return answer["error"]["code"]
        return answer["result"]["contents"][0]["text"]

    def report(self):
        return json.loads(self.read(REPOSITORY_URI))

    def perf(self):
        return self.tool("majordomus_perf")

    def mark(self):
        return len(self.notes)

    def since(self, mark):
        return [msg for _, msg in self.notes[mark:]]

    def drain(self, wait=0.0):
        """Take every line already written (after waiting `wait` s); all must be
        notifications, since no request is outstanding."""
        for line in self.s.pending(wait):
            msg = self._take(line)
            if not is_notification(msg):
                raise AssertionError("an answer nobody asked for: %r" % (msg,))

    def wait_note(self, accept, mark, timeout=POLL):
        """The first notification from `mark` on that accept()s, waiting (with no request
        sent) up to `timeout`: (notification, monotonic time it was received)."""
        deadline = time.monotonic() + timeout
        seen = mark
        while True:
            for when, msg in self.notes[seen:]:
                if accept(msg):
                    return msg, when
            seen = len(self.notes)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no such notification within %ss; heard: %r; stderr:\n%s"
                                     % (timeout, self.since(mark), self.s.stderr()))
            try:
                line = self.s.recv_line(timeout=left)
            except AssertionError:
                if self.s.proc.poll() is not None:
                    raise
                continue
            msg = self._take(line)
            if not is_notification(msg):
                raise AssertionError("an answer nobody asked for: %r" % (msg,))


def list_changed(msg):
    return msg.get("method") == "notifications/resources/list_changed"


def updated(uri):
    return lambda msg: (msg.get("method") == "notifications/resources/updated"
                        and msg.get("params") == {"uri": uri})


def http_object(srv, uri):
    status, body = srv.get_json("/api/v1/object?uri=" + quoted(uri))
    return status, body


def start_server(scope, repo, via="pyz", args=()):
    srv = support.HttpServer(repo, via=via, args=args)
    scope.addCleanup(srv.stop)
    return srv


# ------------------------------------------------------------------------------------------
# Following the repository: pipes and HTTP agree (§15.2)
# ------------------------------------------------------------------------------------------

class FollowTest(unittest.TestCase):
    """One long-lived `mcp` (vcs, initialized), one `mcp --discovery filesystem` and one
    `serve --port 0` on one repository, for the whole class."""
    VIA = "pyz"
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.repo = support.class_repo(cls, {
            rule_path("edited"): rule_text("edited", "The first body."),
            rule_path("removed"): rule_text("removed"),
        })
        scope = support._ClassScope(cls)
        cls.mcp = Client(scope, cls.repo, via=cls.VIA)
        cls.fs = Client(scope, cls.repo, via=cls.VIA, args=["--discovery", "filesystem"])
        cls.srv = start_server(scope, cls.repo, via=cls.VIA)

    def agree(self, uri, expected):
        """resources/read, majordomus_get's structuredContent and GET /api/v1/object all
        give `expected` (bytes) for uri, on every process."""
        text = expected.decode("utf-8")
        self.assertEqual(self.mcp.read(uri), text)
        view = self.mcp.tool("majordomus_get", {"uri": uri})
        self.assertEqual(view["content"], text)
        self.assertEqual(view["provenance"]["bytes"], len(expected))
        status, body = http_object(self.srv, uri)
        self.assertEqual(status, 200, body)
        self.assertEqual(body, view, "GET /api/v1/object differs from majordomus_get")
        self.assertEqual(self.fs.read(uri), text)

    def wait_served(self, uri, expected, what):
        """Wait for `expected` to be served by the vcs and the filesystem session (SETTLE,
        then poll); say how long it took."""
        began = time.monotonic()
        time.sleep(SETTLE)
        for client, how in ((self.mcp, "vcs"), (self.fs, "filesystem")):
            _, _, tries = poll(lambda: client.read(uri), lambda v: v == expected, what)
            note("%s (%s, %s): served %.2fs after the change, request %d after the 1.2 s "
                 "wait" % (what, self.VIA, how, time.monotonic() - began, tries))
            if tries > 1:
                note("NOTE %s: the first request more than 1 s after the change did not "
                     "see it (SPEC §15.2 guarantee)" % what)

    def test_edit_unstaged_is_read_back_everywhere(self):
        rel, uri = rule_path("edited"), rule_uri("edited")
        self.agree(uri, support.read_bytes(self.repo, rel))
        # a saved edit that changes the size, not staged
        new = rule_text("edited", "A second, longer body, saved and not staged.").encode()
        support.write(self.repo, rel, new)
        self.wait_served(uri, new.decode(), "unstaged edit")
        self.assertIn(rel, support.git(self.repo, "diff", "--name-only"))
        self.assertEqual(support.git(self.repo, "diff", "--cached", "--name-only"), "")
        self.agree(uri, new)
        # a same-size edit in place (same inode), its mtime moved later
        new = same_size_edit(self.repo, rel, "longer", "LONGER")
        self.wait_served(uri, new.decode(), "same-size edit")
        self.agree(uri, new)

    def test_the_sweep_sees_a_lone_file_and_a_folder_gone_and_back(self):
        """The sweep stats a folder's files by name in the open folder, and a folder's only
        file by its whole path (§15.2): an edit to a file alone in its folder is seen, and
        so is a folder of several kept files moved out of the work tree (nothing staged,
        so only the sweep can tell) and moved back."""
        lone = ".ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md"
        lone_uri = "majordomus://rule/majordomus.scope-integrity@1"
        self.assertEqual(os.listdir(os.path.dirname(os.path.join(self.repo, lone))),
                         [os.path.basename(lone)])
        new = same_size_edit(self.repo, lone, "# Why", "# WHY")
        self.wait_served(lone_uri, new.decode(), "an edit to a file alone in its folder")
        uri, text = rule_uri("edited"), self.mcp.read(rule_uri("edited"))
        self.assertIsInstance(text, str)
        folder = os.path.join(self.repo, RULES_DIR)
        away = os.path.join(os.path.dirname(self.repo), "away-%d" % os.getpid())
        os.rename(folder, away)
        try:
            for client, how in ((self.mcp, "vcs"), (self.fs, "filesystem")):
                _, waited, _ = poll(lambda: client.read(uri), lambda v: v == -32002,
                                    "the rules of a folder moved away (%s)" % how)
                note("folder moved away: its rules gone (%s) %.2fs after" % (how, waited))
            self.assertIn("unreadable", [d["code"] for d in
                                         self.mcp.report()["diagnostics"]])
        finally:
            os.rename(away, folder)
        self.wait_served(uri, text, "the folder moved back")

    def test_same_size_same_mtime_new_inode_is_seen(self):
        """An editor's atomic save: a new file renamed over the old one, same size and
        (here, on purpose) the same mtime; only the inode tells them apart."""
        name = "renamed"
        rel, uri = rule_path(name), rule_uri(name)
        support.write(self.repo, rel, rule_text(name, "Saved by rename: abc."))
        support.git(self.repo, "add", rel)
        poll(lambda: self.mcp.read(uri), lambda v: v == rule_text(name, "Saved by rename: abc."),
             "the staged rule")
        path = os.path.join(self.repo, rel)
        old = os.stat(path)
        new = rule_text(name, "Saved by rename: xyz.").encode()
        support.write(self.repo, rel + ".tmp", new)
        os.utime(path + ".tmp", ns=(old.st_atime_ns, old.st_mtime_ns))
        os.rename(path + ".tmp", path)
        now = os.stat(path)
        self.assertEqual((now.st_size, now.st_mtime_ns), (old.st_size, old.st_mtime_ns))
        self.assertNotEqual(now.st_ino, old.st_ino)
        self.wait_served(uri, new.decode(), "same size and mtime, new inode")
        self.agree(uri, new)

    def test_staged_rule_appears_untracked_only_under_filesystem(self):
        staged, untracked = "staged", "untracked"
        support.write(self.repo, rule_path(staged), rule_text(staged))
        support.write(self.repo, rule_path(untracked), rule_text(untracked))
        support.git(self.repo, "add", rule_path(staged))
        began = time.monotonic()
        uris, waited, _ = poll(self.mcp.uris, lambda u: rule_uri(staged) in u,
                               "the staged rule under vcs")
        note("staged rule listed %.2fs after `git add`" % waited)
        # the same answer that lists the staged rule does not list the untracked one
        self.assertNotIn(rule_uri(untracked), uris)
        self.assertEqual(self.mcp.read(rule_uri(untracked)), -32002)
        self.assertEqual(self.mcp.read(rule_uri(staged)), rule_text(staged))
        status, body = http_object(self.srv, rule_uri(staged))
        self.assertEqual(status, 200, body)
        self.assertEqual(body, self.mcp.tool("majordomus_get", {"uri": rule_uri(staged)}))
        self.assertEqual(http_object(self.srv, rule_uri(untracked))[0], 404)
        # --discovery filesystem walks the work tree: both are served
        uris, waited, _ = poll(self.fs.uris, lambda u: rule_uri(untracked) in u
                               and rule_uri(staged) in u, "both rules under filesystem")
        note("untracked rule listed under filesystem %.2fs after it was written"
             % (time.monotonic() - began))
        self.assertEqual(self.fs.read(rule_uri(untracked)), rule_text(untracked))
        # vcs still does not serve it
        time.sleep(SETTLE)
        self.assertNotIn(rule_uri(untracked), self.mcp.uris())
        self.assertEqual(http_object(self.srv, rule_uri(untracked))[0], 404)

    def test_git_rm_removes_the_rule(self):
        uri = rule_uri("removed")
        self.assertIn(uri, self.mcp.uris())
        self.assertEqual(http_object(self.srv, uri)[0], 200)
        support.git(self.repo, "rm", "-q", rule_path("removed"))
        _, waited, _ = poll(self.mcp.uris, lambda u: uri not in u, "the removed rule gone")
        note("git rm: rule gone %.2fs after" % waited)
        self.assertEqual(self.mcp.read(uri), -32002)
        result = self.mcp.result("tools/call", {"name": "majordomus_get",
                                                "arguments": {"uri": uri}})
        self.assertIs(result["isError"], True, result)
        poll(lambda: http_object(self.srv, uri)[0], lambda st: st == 404,
             "GET /api/v1/object 404 after git rm")

    def test_commit_and_checkout_show_in_the_report(self):
        def heads():
            over_resource = self.mcp.report()["repository"]["git"]
            over_tool = self.mcp.tool("majordomus_repository")["repository"]["git"]
            status, over_http = self.srv.get_json("/api/v1/repository")
            self.assertEqual(status, 200)
            return [(g["head"], g["branch"]) for g in
                    (over_resource, over_tool, over_http["repository"]["git"])]

        rev0 = support.git(self.repo, "rev-parse", "HEAD").strip()
        self.assertEqual(heads(), [(rev0, "main")] * 3)
        generation = self.mcp.report()["live"]["generation"]
        # a commit that changes no served file moves only HEAD: the report shows it
        support.git(self.repo, "commit", "-q", "--allow-empty", "--no-gpg-sign", "-m", "next")
        rev1 = support.git(self.repo, "rev-parse", "HEAD").strip()
        self.assertNotEqual(rev0, rev1)
        _, waited, _ = poll(heads, lambda h: h == [(rev1, "main")] * 3, "the new HEAD")
        note("commit: new HEAD reported %.2fs after" % waited)
        self.assertGreater(self.mcp.report()["live"]["generation"], generation)
        support.git(self.repo, "checkout", "-q", "-b", "other")
        _, waited, _ = poll(heads, lambda h: h == [(rev1, "other")] * 3, "the new branch")
        note("checkout -b: new branch reported %.2fs after" % waited)
        # a checkout that changes the work tree: a rule committed on `other` only
        name = "branch-only"
        support.write(self.repo, rule_path(name), rule_text(name))
        support.git(self.repo, "add", rule_path(name))
        support.git(self.repo, "commit", "-q", "--no-gpg-sign", "-m", "b", "--",
                    rule_path(name))
        rev2 = support.git(self.repo, "rev-parse", "HEAD").strip()
        poll(heads, lambda h: h == [(rev2, "other")] * 3, "the commit on other")
        self.assertIn(rule_uri(name), self.mcp.uris())
        support.git(self.repo, "checkout", "-q", "main")
        _, waited, _ = poll(heads, lambda h: h == [(rev1, "main")] * 3, "back on main")
        note("checkout main: reported %.2fs after" % waited)
        poll(self.mcp.uris, lambda u: rule_uri(name) not in u, "the other branch's rule gone")
        self.assertEqual(http_object(self.srv, rule_uri(name))[0], 404)
        report = self.mcp.report()
        self.assertEqual(report["live"]["stale"], None)
        self.assertEqual(list(report)[-1], "live")


class FollowPyTest(FollowTest):
    """The same edit, read back through `majordomus.py`."""
    VIA = "py"

    test_staged_rule_appears_untracked_only_under_filesystem = None
    test_same_size_same_mtime_new_inode_is_seen = None
    test_git_rm_removes_the_rule = None
    test_commit_and_checkout_show_in_the_report = None


# ------------------------------------------------------------------------------------------
# Counters: an unchanged repository builds nothing; a plain `git status` builds nothing
# ------------------------------------------------------------------------------------------

class CountersTest(unittest.TestCase):
    def test_unchanged_repository_and_plain_git_status_build_nothing(self):
        repo = support.make_repo(self)
        # not initialized: no client can hear notifications, so no idle timer runs and
        # every stamp comparison is one request's
        c = Client(self, repo, initialized=False)
        first = c.perf()
        self.assertEqual((first["index_builds"], first["generation"]), (1, 1), first)
        kinds = [("ping", None), ("resources/list", None),
                 ("resources/read", {"uri": REPOSITORY_URI}),
                 ("tools/call", {"name": "majordomus_list", "arguments": {}}),
                 ("tools/list", None)]
        for n in range(50):
            method, params = kinds[n % len(kinds)]
            c.result(method, params)
        second = c.perf()
        self.assertEqual((second["index_builds"], second["generation"]), (1, 1), second)
        self.assertEqual(second["rebuilds_failed"], 0)
        # the 50 requests and the perf call itself each compared the stamp once
        self.assertEqual(second["freshness_checks"] - first["freshness_checks"], 51,
                         (first["freshness_checks"], second["freshness_checks"]))
        self.assertEqual(second["stamp_moves"], 0)
        self.assertEqual(c.since(0), [])

        # an mtime-only touch of a tracked file, absorbed (it may build a generation) ...
        rel = ".ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md"
        bump_mtime(repo, rel)
        time.sleep(SETTLE)
        c.result("ping")
        touched = c.perf()
        note("mtime-only touch: index_builds %d -> %d" % (second["index_builds"],
                                                           touched["index_builds"]))
        settled = c.perf()
        self.assertEqual((settled["index_builds"], settled["generation"]),
                         (touched["index_builds"], touched["generation"]))
        # ... then another program runs a plain `git status`, which rewrites .git/index
        before, entries = index_state(repo), support.git(repo, "ls-files", "-s")
        plain_git_status(repo)
        after = index_state(repo)
        self.assertNotEqual(before, after, "git status did not rewrite .git/index; "
                            "the test proves nothing")
        self.assertEqual(support.git(repo, "ls-files", "-s"), entries,
                         "git status changed what the index holds")
        c.result("ping")
        time.sleep(SETTLE)
        c.result("resources/list")
        last = c.perf()
        self.assertEqual((last["index_builds"], last["generation"]),
                         (settled["index_builds"], settled["generation"]), last)
        self.assertEqual(c.report()["live"], {"generation": settled["generation"],
                                              "stale": None})
        self.assertGreater(last["stamp_moves"], settled["stamp_moves"])
        self.assertEqual(last["rebuilds_failed"], 0)
        note("plain git status: stamp_moves %d -> %d, index_builds stays %d"
             % (settled["stamp_moves"], last["stamp_moves"], last["index_builds"]))
        self.assertEqual(index_state(repo), after, "the program rewrote .git/index")


# ------------------------------------------------------------------------------------------
# A failed rebuild (§15.3)
# ------------------------------------------------------------------------------------------

class StaleTest(unittest.TestCase):
    VIA = "pyz"

    def test_broken_manifest_keeps_the_last_good_generation(self):
        rel = ".ai/manifest.yaml"
        repo = support.make_repo(self, {rule_path("kept"): rule_text("kept")})
        good = support.read_bytes(repo, rel)
        c = Client(self, repo, via=self.VIA)
        self.assertEqual(c.report()["live"], {"generation": 1, "stale": None})
        uris = c.uris()
        # a half-written manifest: the fatal message is what a one-shot command prints
        broken = good[:good.index(b"local:")] + b"local:\n"
        support.write(repo, rel, broken)
        oneshot = support.run(["get", REPOSITORY_URI], repo, via=self.VIA)
        self.assertNotEqual(oneshot.returncode, 0)
        fatal = oneshot.stderr.decode().strip()
        self.assertTrue(fatal.startswith("majordomus: "), fatal)
        message = fatal[len("majordomus: "):]
        report, waited, _ = poll(c.report, lambda r: r["live"]["stale"] is not None,
                                 "the stale report")
        note("broken manifest: stale reported %.2fs after" % waited)
        self.assertEqual(report["live"], {"generation": 1, "stale": message})
        self.assertEqual(c.uris(), uris, "the last good generation is still served")
        self.assertEqual(c.read(rule_uri("kept")), rule_text("kept"))
        warning = "the layer could not be read again; still serving generation 1"
        poll(c.s.stderr, lambda e: warning in e, "the warning on stderr")
        # more requests, sweeps included, do not retry an unchanged broken layer
        time.sleep(SETTLE)
        c.result("ping")
        c.result("resources/list")
        time.sleep(SETTLE)
        self.assertEqual(c.report()["live"], {"generation": 1, "stale": message})
        counters = c.perf()
        self.assertEqual(counters["rebuilds_failed"], 1, counters)
        self.assertEqual(counters["index_builds"], 1, counters)
        lines = [l for l in c.s.wait_stderr(warning).splitlines() if warning in l]
        self.assertEqual(len(lines), 1, c.s.stderr())
        self.assertRegex(lines[0], r" WARN ")
        self.assertIn("reason=", lines[0])
        self.assertIn(message, lines[0])
        # fixed: the next check builds a new generation
        support.write(repo, rel, good)
        report, waited, _ = poll(c.report, lambda r: r["live"]["stale"] is None,
                                 "the recovered report")
        note("manifest fixed: recovered %.2fs after" % waited)
        self.assertEqual(report["live"], {"generation": 2, "stale": None})
        self.assertEqual(c.uris(), uris)
        counters = c.perf()
        self.assertEqual((counters["index_builds"], counters["generation"]), (2, 2))
        self.assertEqual(len([l for l in c.s.stderr().splitlines() if warning in l]), 1)
        self.assertNotIn("Traceback", c.s.stderr())

    def test_a_change_while_unreadable_is_no_recovery(self):
        """While the layer still cannot be read, a later change (a served file edited: the
        sweep moves; or a rule staged: the stamp moves) retries and fails again: the last
        good generation stays served and `stale` stays set, for a broken manifest and for
        a generation refused under --strict. One process per (case, change), side by side."""
        kept = rule_text("kept", "The kept body.")
        processes = {}
        for case, args in (("manifest", []), ("strict", ["--strict"])):
            for change in ("edit", "stage"):
                repo = support.make_repo(self, {rule_path("kept"): kept})
                processes[case, change] = (repo, Client(self, repo, via=self.VIA, args=args,
                                                        initialized=False))
        for (case, change), (repo, c) in processes.items():
            if case == "manifest":
                support.write(repo, ".ai/manifest.yaml",
                              support.read_bytes(repo, ".ai/manifest.yaml") + b"bogus: 1\n")
            else:
                support.write(repo, rule_path("bad"), rule_text("bad").replace(
                    "kind: rule\n", "kind: rule\nnonsense_key: 1\n"))
                support.git(repo, "add", rule_path("bad"))
        messages = {}
        for key, (repo, c) in processes.items():
            report, _, _ = poll(c.report, lambda r: r["live"]["stale"] is not None,
                                "%s: the stale report" % (key,))
            messages[key] = report["live"]["stale"]
            self.assertEqual(report["live"]["generation"], 1)
        self.assertEqual(messages["strict", "edit"], "declarative state carries 1 error(s); "
                         "refusing to serve under --strict")
        for (case, change), (repo, c) in processes.items():
            if change == "edit":
                support.write(repo, rule_path("kept"), rule_text("kept", "Edited meanwhile."))
            else:
                support.write(repo, rule_path("later"), rule_text("later"))
                support.git(repo, "add", rule_path("later"))
        time.sleep(SETTLE)
        for key, (repo, c) in sorted(processes.items()):
            with self.subTest(case=key[0], change=key[1]):
                c.result("ping")
                report = c.report()
                self.assertEqual(report["live"], {"generation": 1, "stale": messages[key]},
                                 "%s: a change while the layer cannot be read was served as "
                                 "a recovery; stderr:\n%s" % (key, c.s.stderr()))
                self.assertEqual(c.read(rule_uri("kept")), kept)
                self.assertNotIn(rule_uri("later"), c.uris())
                self.assertNotIn("the layer is readable again", c.s.stderr())


# ------------------------------------------------------------------------------------------
# --no-watch (§1, §15.2)
# ------------------------------------------------------------------------------------------

class NoWatchTest(unittest.TestCase):
    def test_no_watch_serves_generation_one_for_ever(self):
        rel, uri = rule_path("fixed"), rule_uri("fixed")
        repo = support.make_repo(self, {rel: rule_text("fixed", "Before.")})
        frozen = Client(self, repo, args=["--no-watch"])
        control = Client(self, repo, initialized=False)
        srv = start_server(self, repo, args=["--no-watch"])
        self.assertEqual(frozen.init["capabilities"]["resources"],
                         {"subscribe": False, "listChanged": False})
        self.assertIs(frozen.init["capabilities"]["prompts"]["listChanged"], False)
        self.assertEqual(control.init["capabilities"]["resources"],
                         {"subscribe": True, "listChanged": True})
        before_list, before_text = frozen.uris(), frozen.read(uri)
        before_http = http_object(srv, uri)
        head = frozen.report()["repository"]["git"]["head"]
        # an edit, a staged new rule and a commit: the watching control sees all of them
        support.write(repo, rel, rule_text("fixed", "After, and longer than before."))
        support.write(repo, rule_path("added"), rule_text("added"))
        support.git(repo, "add", rule_path("added"))
        support.git(repo, "commit", "-q", "--no-gpg-sign", "-m", "added")
        time.sleep(SETTLE)
        poll(lambda: (control.uris(), control.read(uri)),
             lambda v: rule_uri("added") in v[0] and "After" in v[1], "the control")
        time.sleep(SETTLE)
        self.assertEqual(frozen.uris(), before_list)
        self.assertEqual(frozen.read(uri), before_text)
        self.assertEqual(frozen.read(rule_uri("added")), -32002)
        report = frozen.report()
        self.assertEqual(report["repository"]["git"]["head"], head)
        self.assertEqual(report["live"], {"generation": 1, "stale": None})
        counters = frozen.perf()
        self.assertEqual((counters["index_builds"], counters["generation"]), (1, 1), counters)
        self.assertEqual(http_object(srv, uri), before_http)
        self.assertEqual(http_object(srv, rule_uri("added"))[0], 404)
        status, counters = srv.get_json("/api/v1/perf")
        self.assertEqual((counters["index_builds"], counters["generation"]), (1, 1), counters)
        frozen.drain(0.2)
        self.assertEqual(frozen.since(0), [], "a --no-watch session was told of a change")
        note("--no-watch: freshness_checks=%d sweeps=%d (stdio)"
             % (frozen.perf()["freshness_checks"], frozen.perf()["sweeps"]))


# ------------------------------------------------------------------------------------------
# Telling the client (§15.4)
# ------------------------------------------------------------------------------------------

class NotifyTest(unittest.TestCase):
    VIA = "pyz"

    def setUp(self):
        self.repo = support.make_repo(self, {
            rule_path("one"): rule_text("one", "Body alpha of one."),
            rule_path("two"): rule_text("two", "Body alpha of two."),
        })

    def test_idle_session_hears_of_a_staged_rule_without_asking(self):
        c = Client(self, self.repo, via=self.VIA)
        c.result("ping")            # the handshake is over: the session listens
        c.drain(0.1)
        mark = c.mark()
        support.write(self.repo, rule_path("new"), rule_text("new"))
        support.git(self.repo, "add", rule_path("new"))
        changed = time.monotonic()
        _, heard = c.wait_note(list_changed, mark)
        note("idle list_changed latency (%s): %.3fs (SPEC: within 2 s)"
             % (self.VIA, heard - changed))
        # nothing was asked: the notification came from the idle timer, once
        c.drain(0.3)
        self.assertEqual([m for m in c.since(mark) if list_changed(m)],
                         [{"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}])
        self.assertIn(rule_uri("new"), c.uris())

    def test_same_size_body_edit_updates_subscribers_only(self):
        c = Client(self, self.repo, via=self.VIA)
        one, two = rule_uri("one"), rule_uri("two")
        self.assertEqual(c.rpc("resources/subscribe", {"uri": "majordomus://rule/nope@1"})[0]
                         ["error"]["code"], -32002)
        self.assertEqual(c.result("resources/subscribe", {"uri": one}), {})
        self.assertEqual(c.result("resources/subscribe", {"uri": one}), {})  # still one
        self.assertEqual(c.result("resources/subscribe", {"uri": two}), {})
        listing = c.result("resources/list")
        c.drain(0.1)
        mark = c.mark()
        new = same_size_edit(self.repo, rule_path("one"), "alpha", "gamma")
        changed = time.monotonic()
        _, heard = c.wait_note(updated(one), mark)
        note("idle resources/updated latency (%s): %.3fs" % (self.VIA, heard - changed))
        c.drain(0.3)
        self.assertEqual(c.result("resources/list"), listing,
                         "a same-size body edit changed the resources/list answer")
        self.assertEqual(c.read(one), new.decode())
        heard = c.since(mark)
        self.assertEqual(heard, [{"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                  "params": {"uri": one}}], heard)
        # unsubscribed: told of `two` (still subscribed), never of `one`
        self.assertEqual(c.result("resources/unsubscribe", {"uri": one}), {})
        self.assertEqual(c.result("resources/unsubscribe", {"uri": one}), {})
        self.assertEqual(c.result("resources/unsubscribe",
                                  {"uri": "majordomus://rule/project.never@1"}), {})
        mark = c.mark()
        same_size_edit(self.repo, rule_path("one"), "gamma", "delta")
        same_size_edit(self.repo, rule_path("two"), "alpha", "delta")
        c.wait_note(updated(two), mark)
        # `one` was edited before `two`: the generation that told of `two` holds it too
        c.drain(0.3)
        self.assertIn("delta", c.read(one))
        c.drain(0.2)
        self.assertEqual(c.since(mark), [{"jsonrpc": "2.0",
                                          "method": "notifications/resources/updated",
                                          "params": {"uri": two}}])

    def test_nothing_before_notifications_initialized(self):
        c = Client(self, self.repo, via=self.VIA, initialized=False)
        c.result("resources/subscribe", {"uri": rule_uri("one")})
        support.write(self.repo, rule_path("early"), rule_text("early", "Longer body now."))
        support.git(self.repo, "add", rule_path("early"))
        support.write(self.repo, rule_path("one"), rule_text("one", "Changed, longer body."))
        time.sleep(QUIET)            # longer than an idle session's latency
        c.drain()
        self.assertEqual(c.since(0), [])
        answer, before = c.rpc("resources/list")
        self.assertIn(rule_uri("early"), [r["uri"] for r in answer["result"]["resources"]])
        self.assertEqual(before, [])
        self.assertIn("Changed", c.read(rule_uri("one")))
        c.drain(0.3)
        self.assertEqual(c.since(0), [], "a session that did not send "
                         "notifications/initialized was told of a change")
        # the same session, once initialized, hears the next change
        c.initialized()
        c.result("ping")
        mark = c.mark()
        support.write(self.repo, rule_path("later"), rule_text("later"))
        support.git(self.repo, "add", rule_path("later"))
        c.wait_note(list_changed, mark)

    def test_notification_from_a_requests_check_precedes_its_answer(self):
        c = Client(self, self.repo, via=self.VIA)
        c.result("ping")
        c.drain(0.1)
        for attempt in range(1, 5):
            name = "asked%d" % attempt
            support.write(self.repo, rule_path(name), rule_text(name))
            support.git(self.repo, "add", rule_path(name))
            answer, before = c.rpc("resources/list")      # sent right after `git add`
            listed = rule_uri(name) in [r["uri"] for r in answer["result"]["resources"]]
            if listed and any(list_changed(m) for m in before):
                note("request-caused list_changed before the answer (%s), attempt %d"
                     % (self.VIA, attempt))
                break
            # the idle timer may have found the change first (then its notification is
            # written when found): try again with a new rule
            note("attempt %d (%s): listed=%s, notifications before the answer=%r"
                 % (attempt, self.VIA, listed, before))
            c.drain(SETTLE)
        else:
            self.fail("no request's own check wrote its list_changed before its answer")


class NotifyPyTest(NotifyTest):
    VIA = "py"

    # the two tests below are proved once, through the pyz
    test_same_size_body_edit_updates_subscribers_only = None
    test_nothing_before_notifications_initialized = None


# ------------------------------------------------------------------------------------------
# Whole frames under a burst, a stalled client and changes (§9.2, §15.4)
# ------------------------------------------------------------------------------------------

class BurstTest(unittest.TestCase):
    RULES = 300
    REQUESTS = 240
    STALL = 2.2

    def test_whole_frames_every_id_once(self):
        files = {rule_path("r%03d" % n): rule_text("r%03d" % n, "Body %d. " % n * 3)
                 for n in range(self.RULES)}
        repo = support.make_repo(self, files)
        proc = subprocess.Popen(support.command("pyz") + ["mcp"], cwd=repo,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                env=support.base_env({"PYTHONUNBUFFERED": "1"}))

        def end():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                try:
                    stream.close()
                except (OSError, ValueError):
                    pass
        self.addCleanup(end)
        errors = []
        err_thread = threading.Thread(target=lambda: errors.append(proc.stderr.read()),
                                      daemon=True)
        err_thread.start()
        out_fd = proc.stdout.fileno()
        buffered = bytearray()
        lines = []

        def send(frame):
            proc.stdin.write(json.dumps(frame).encode() + b"\n")
            proc.stdin.flush()

        def read_until(accept):
            deadline = time.monotonic() + 60
            while True:
                while b"\n" in buffered:
                    at = buffered.index(b"\n")
                    line = bytes(buffered[:at + 1])
                    del buffered[:at + 1]
                    lines.append(line)
                    if accept(line):
                        return
                if time.monotonic() > deadline:
                    raise AssertionError("no answer; stderr so far: %r" % errors)
                chunk = os.read(out_fd, 1 << 16)
                if not chunk:
                    raise AssertionError("stdout ended")
                buffered.extend(chunk)

        def answers(msg_id):
            return lambda line: json.loads(line).get("id") == msg_id

        send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
              "params": {"protocolVersion": LATEST, "capabilities": {}}})
        read_until(answers("init"))
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        subscribed = [rule_uri("r%03d" % n) for n in range(5)]
        for uri in subscribed:
            send({"jsonrpc": "2.0", "id": "sub " + uri, "method": "resources/subscribe",
                  "params": {"uri": uri}})
            read_until(answers("sub " + uri))

        requests = []
        for n in range(self.REQUESTS):
            uri = rule_uri("r%03d" % (n % self.RULES))
            choice = n % 6
            if choice == 0:
                requests.append(("resources/list", None))
            elif choice == 1:
                requests.append(("tools/call", {"name": "majordomus_list",
                                                "arguments": {"limit": 500}}))
            elif choice == 2:
                requests.append(("resources/read", {"uri": uri}))
            elif choice == 3:
                requests.append(("tools/call", {"name": "majordomus_get",
                                                "arguments": {"uri": uri}}))
            elif choice == 4:
                requests.append(("ping", None))
            else:
                requests.append(("tools/call", {"name": "majordomus_search",
                                                "arguments": {"query": "body 1", "limit": 200}}))
        ids = list(range(1000, 1000 + len(requests)))
        half = len(requests) // 2
        go_on = threading.Event()
        write_errors = []

        def writer():
            try:
                frames = []
                for i, (m, p) in zip(ids, requests):
                    frame = {"jsonrpc": "2.0", "id": i, "method": m}
                    if p is not None:
                        frame["params"] = p
                    frames.append(json.dumps(frame).encode() + b"\n")
                proc.stdin.write(b"".join(frames[:half]))
                proc.stdin.flush()
                go_on.wait(30)
                proc.stdin.write(b"".join(frames[half:]))
                proc.stdin.flush()
            except (OSError, ValueError) as exc:
                write_errors.append(exc)

        stalled = time.monotonic()
        thread = threading.Thread(target=writer, daemon=True)
        thread.start()
        # the client reads nothing for a while; the layer changes meanwhile
        time.sleep(0.3)
        support.write(repo, rule_path("r000"), rule_text("r000", "A longer edited body."))
        support.write(repo, rule_path("extra1"), rule_text("extra1"))
        support.git(repo, "add", rule_path("extra1"))
        time.sleep(SETTLE)
        go_on.set()
        support.write(repo, rule_path("r001"), rule_text("r001", "Another edited body."))
        support.write(repo, rule_path("extra2"), rule_text("extra2"))
        support.git(repo, "add", rule_path("extra2"))
        time.sleep(max(0.0, self.STALL - (time.monotonic() - stalled)))
        note("burst: the client read nothing for %.2fs" % (time.monotonic() - stalled))
        # reading again; a third change while the burst is still being answered
        read_until(answers(ids[100]))
        changed_at = len(lines)
        support.write(repo, rule_path("r002"), rule_text("r002", "A third, edited body."))
        support.write(repo, rule_path("extra3"), rule_text("extra3"))
        support.git(repo, "add", rule_path("extra3"))
        read_until(answers(ids[-1]))
        thread.join(30)
        self.assertEqual(write_errors, [])
        # a last request after the sweep interval: every change has been seen by then
        time.sleep(SETTLE)
        send({"jsonrpc": "2.0", "id": "last", "method": "resources/list"})
        read_until(answers("last"))
        proc.stdin.close()
        rc = proc.wait(30)
        while True:
            chunk = os.read(out_fd, 1 << 16)
            if not chunk:
                break
            buffered.extend(chunk)
        err_thread.join(10)
        stderr = b"".join(errors).decode("utf-8", "replace")
        self.assertEqual(rc, 0, stderr)
        self.assertEqual(bytes(buffered), b"", "output not ended by a newline")

        answered, notifications, where = [], [], []
        for n, line in enumerate(lines):
            self.assertTrue(line.endswith(b"\n"))
            try:
                frame = json.loads(line[:-1].decode("utf-8"))
            except ValueError as exc:
                self.fail("line %d is not one whole JSON frame (%s): %r..."
                          % (n, exc, line[:200]))
            self.assertIsInstance(frame, dict, line[:200])
            self.assertEqual(frame.get("jsonrpc"), "2.0")
            if is_notification(frame):
                notifications.append(frame)
                where.append(n)
                continue
            self.assertIn("result", frame, line[:300])
            answered.append(frame["id"])
            if isinstance(frame["id"], int):
                method, params = requests[frame["id"] - 1000]
                result = frame["result"]
                if method == "resources/list":
                    self.assertGreaterEqual(len(result["resources"]), self.RULES)
                elif method == "tools/call":
                    self.assertIs(result["isError"], False, line[:300])
        expected = (["init"] + ["sub " + uri for uri in subscribed] + ids + ["last"])
        self.assertEqual(sorted(map(str, answered)), sorted(map(str, expected)),
                         "some request was not answered exactly once")
        self.assertEqual(answered, expected, "requests not answered in order")
        methods = [f["method"] for f in notifications]
        note("burst: %d lines, %d bytes, %d answers; notifications at lines %r (the third "
             "change made after line %d): %r" % (len(lines), sum(map(len, lines)),
                                                 len(answered), where, changed_at, methods))
        self.assertIn("notifications/resources/list_changed", methods)
        for uri in subscribed[:3]:
            self.assertIn({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                           "params": {"uri": uri}}, notifications)
        for uri in subscribed[3:]:
            self.assertNotIn({"jsonrpc": "2.0", "method": "notifications/resources/updated",
                              "params": {"uri": uri}}, notifications)
        self.assertNotIn("Traceback", stderr)


# ------------------------------------------------------------------------------------------
# Read-only (§12) across edits and rebuilds
# ------------------------------------------------------------------------------------------

class ReadOnlyTest(unittest.TestCase):
    VIA = "py"
    maxDiff = None

    def exercise(self, c, srv):
        """Every method and tool once over stdio, and every route over HTTP."""
        rule = "majordomus://rule/majordomus.scope-integrity@1"
        c.result("ping")
        c.result("resources/list")
        c.result("resources/templates/list")
        c.read(REPOSITORY_URI)
        c.read(rule)
        c.result("tools/list")
        c.result("prompts/list")
        c.result("prompts/get", {"name": "continue", "arguments": {"CONTEXT": "x"}})
        c.result("resources/subscribe", {"uri": rule})
        c.result("resources/unsubscribe", {"uri": rule})
        c.rpc("logging/setLevel", {"level": "debug"})
        for name, arguments in (("majordomus_capability", {"id": "objects.get"}),
                                ("majordomus_capabilities", {}),
                                ("majordomus_get", {"uri": rule}),
                                ("majordomus_list", {}),
                                ("majordomus_search", {"query": "rule"}),
                                ("majordomus_perf", {}),
                                ("majordomus_prompt", {"name": "continue",
                                                       "arguments": {"CONTEXT": "x"}}),
                                ("majordomus_repository", {})):
            c.result("tools/call", {"name": name, "arguments": arguments})
        for path in ("/", "/openapi.json", "/api/v1/repository", "/api/v1/objects",
                     "/api/v1/object?uri=" + quoted(rule), "/api/v1/search?query=rule",
                     "/api/v1/capabilities", "/api/v1/capability?id=objects.get",
                     "/api/v1/perf"):
            status, _, _ = srv.request("GET", path)
            self.assertEqual(status, 200, path)
        return c.report()["live"]

    def test_edits_and_rebuilds_leave_only_what_the_test_wrote(self):
        repo = support.make_repo(self, {rule_path("edited"): rule_text("edited"),
                                        rule_path("removed"): rule_text("removed")})
        untouched = support.snapshot(repo)
        c = Client(self, repo, via=self.VIA)
        srv = start_server(self, repo, via=self.VIA)
        self.assertEqual(self.exercise(c, srv), {"generation": 1, "stale": None})
        self.assertEqual(support.snapshot(repo), untouched, "start-up or a request wrote")
        manifest = support.read_bytes(repo, ".ai/manifest.yaml")

        seen = {"generation": 1}

        def step(what, change, served):
            """Make the test's own change, snapshot it, let both processes rebuild (and
            prove they served it), then the snapshot must be the same."""
            change()
            ours = support.snapshot(repo)              # everything the test itself wrote
            ours_index = index_state(repo)

            def fetch():
                live = self.exercise(c, srv)
                status, doc = srv.get_json("/api/v1/repository")
                return live, doc["live"], served()
            (live, over_http, _), waited, _ = poll(
                fetch, lambda v: v[2] and v[0]["stale"] is None
                and v[0]["generation"] > seen["generation"] if what != "break the manifest"
                else v[2] and v[0]["stale"] is not None and v[1]["stale"] is not None, what)
            seen["generation"] = live["generation"]
            note("read-only step %r: served %.2fs after the change (stdio %r, http %r)"
                 % (what, waited, live, over_http))
            self.assertEqual(support.snapshot(repo), ours, what + ": the program wrote")
            self.assertEqual(index_state(repo), ours_index,
                             what + ": the program rewrote .git/index")
            return ours

        def edits():
            support.write(repo, rule_path("edited"), rule_text("edited", "Edited, unstaged."))
            support.write(repo, rule_path("added"), rule_text("added"))
            support.git(repo, "add", rule_path("added"))
            support.git(repo, "rm", "-q", rule_path("removed"))

        def edits_served():
            uris = c.uris()
            status, _ = http_object(srv, rule_uri("added"))
            return (rule_uri("added") in uris and rule_uri("removed") not in uris
                    and "Edited" in c.read(rule_uri("edited")) and status == 200)

        def head_served():
            head = support.git(repo, "rev-parse", "HEAD").strip()
            status, doc = srv.get_json("/api/v1/repository")
            return (c.report()["repository"]["git"]["head"] == head
                    and doc["repository"]["git"]["head"] == head)

        step("edit, stage, git rm", edits, edits_served)
        step("commit", lambda: support.git(repo, "commit", "-q", "--no-gpg-sign", "-m", "x"),
             head_served)
        step("break the manifest",
             lambda: support.write(repo, ".ai/manifest.yaml", manifest + b"bogus: 1\n"),
             lambda: True)
        last = step("fix the manifest",
                    lambda: support.write(repo, ".ai/manifest.yaml", manifest), lambda: True)
        self.assertEqual(c.s.close(), 0, c.s.stderr())
        self.assertEqual(srv.stop(), 0)
        self.assertEqual(support.snapshot(repo), last, "ending the session wrote")
        self.assertNotIn("Traceback", c.s.stderr() + srv.stderr())


# ------------------------------------------------------------------------------------------
# Where no layer is found (§32): `mcp` answers, explains, follows the folder
# ------------------------------------------------------------------------------------------

NO_LAYER = 'no AI layer here: see "Start a layer" in the README'
NO_LAYER_FILES = {
    ".ai/manifest.yaml": support.manifest_yaml("rules", "prompts", "knowledge"),
    ".ai/repo/knowledge/sources.yaml": support.sources_yaml(
        ("rule", "rule", ":(glob).ai/repo/rules/**/*.md", True),
        ("prompt", "prompt", ":(glob).ai/repo/prompts/*.md")),
    rule_path("appeared"): rule_text("appeared"),
    ".ai/repo/prompts/hello.md": ("---\nname: hello\ndescription: Say hello.\n---\n\n"
                                  "Hello {{NAME}}.\n"),
}


def cpu_seconds(pid):
    """User and system CPU time of a process (Linux /proc), or None elsewhere."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class NoLayerTest(unittest.TestCase):
    """`mcp` started in a git repository that has no layer (and in a folder below its top,
    so that the layer appears in an ancestor): initialize, tools/list and every call answer
    with the refusal; the layer written, staged and committed while it runs is served after
    list_changed; `--inspect` there still exits 12."""
    VIA = "pyz"

    def test_answers_explains_and_serves_the_layer_once_it_appears(self):
        repo = support.make_repo(self, {"README.md": "# A project\n", "src/main.c": "int x;\n"},
                                 skeleton=False)
        start = os.path.join(repo, "src")
        p = support.run(["mcp", "--inspect"], start, via=self.VIA)
        self.assertEqual(p.returncode, 12, p.stderr)
        self.assertEqual(p.stdout, b"")
        c = Client(self, start, via=self.VIA)
        self.assertEqual(c.init["instructions"], NO_LAYER)
        self.assertEqual(c.init["serverInfo"]["name"], "majordomus")
        self.assertEqual(c.init["capabilities"]["resources"],
                         {"subscribe": True, "listChanged": True})
        tools = [t["name"] for t in c.result("tools/list")["tools"]]
        self.assertEqual(tools, support.TOOLS)
        refusal = "refused: " + NO_LAYER
        for name, arguments in (("majordomus_repository", {}), ("majordomus_list", {}),
                                ("majordomus_brief", {"path": "src/main.c"}),
                                ("majordomus_search", {"query": "x"}), ("majordomus_perf", {})):
            with self.subTest(tool=name):
                result = c.result("tools/call", {"name": name, "arguments": arguments})
                self.assertIs(result["isError"], True, result)
                self.assertEqual(result["content"], [{"type": "text", "text": refusal}])
        answer, _ = c.rpc("resources/read", {"uri": REPOSITORY_URI})
        self.assertEqual(answer["error"]["message"], refusal)
        self.assertEqual(c.result("prompts/list"), {"prompts": []})
        err = c.s.wait_stderr("not shared: no AI layer here")  # alone, said at info (§27)
        self.assertNotIn("Traceback", err)
        # idle, it costs next to nothing: a stat a folder a second
        before = cpu_seconds(c.s.proc.pid)
        time.sleep(QUIET)
        after = cpu_seconds(c.s.proc.pid)
        if before is not None:
            note("no layer, idle %.1f s: %.2f s of CPU" % (QUIET, after - before))
            self.assertLess(after - before, 0.5)
        c.drain()
        self.assertEqual(c.since(0), [], "told of a change while nothing changed")
        # the layer, written at the repository's top (an ancestor of the start), staged and
        # committed while the server runs: served, and the client told
        mark = c.mark()
        for rel, text in NO_LAYER_FILES.items():
            support.write(repo, rel, text)
        support.commit_all(repo, "a layer")
        c.wait_note(list_changed, mark)
        poll(c.uris, lambda uris: rule_uri("appeared") in uris, "the layer once it appears")
        report = c.report()
        self.assertEqual((report["state"], report["repository"]["root"]), ("ok", repo))
        self.assertEqual(c.tool("majordomus_list")["total"], 2)
        prompts = c.result("prompts/list")["prompts"]
        self.assertEqual([p["name"] for p in prompts], ["hello"])
        c.wait_note(lambda m: m.get("method") == "notifications/prompts/list_changed", mark)
        self.assertNotIn("Traceback", c.s.stderr())
        self.assertEqual(c.s.close(), 0, c.s.stderr())

    def test_what_is_no_layer_changes_nothing(self):
        outside = support.tempdir(self)
        c = Client(self, outside, via=self.VIA)
        self.assertEqual(c.init["instructions"], NO_LAYER)
        # something that is no layer: an empty .ai folder, a manifest that is a folder
        os.makedirs(os.path.join(outside, ".ai", "manifest.yaml"))
        time.sleep(SETTLE)
        self.assertEqual(c.init["instructions"], c.result("initialize", {
            "protocolVersion": LATEST, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}})["instructions"])
        c.drain(0.2)
        self.assertEqual(c.since(0), [])
        self.assertEqual(c.s.close(), 0, c.s.stderr())

    def test_strict_and_serve_keep_exit_twelve(self):
        outside = support.tempdir(self)
        for args in (["mcp", "--strict"], ["serve", "--port", "0"], ["capabilities", "list"]):
            with self.subTest(args=args):
                p = support.run(args, outside, via=self.VIA, input=b"", timeout=30)
                self.assertEqual(p.returncode, 12, p.stderr)
                self.assertEqual(p.stdout, b"")


class NoLayerPyTest(NoLayerTest):
    VIA = "py"


if __name__ == "__main__":
    unittest.main()
