"""Hostile input and hostile changes (SPEC §25): black-box regression tests against the real
program (majordomus.pyz and majordomus.py), one group per bullet of §25, plus the named
regression tests of what the fuzz suite (tests/fuzz.py) found.

Every layer these tests read is written here (no reference data): a small manifest, a
sources file, a kinds file with a yaml kind that has no allow-list (so that a deep or odd
tree is served as it is read), and a rule. No assertion is timed: a bounded wait proves
that nothing hangs, and the time it took is printed.
"""
import json
import os
import socket
import sys
import time
import unittest
import urllib.parse

from tests import support
from tests.support import REPOSITORY_URI
from tests.test_http import raw_exchange
from tests.test_live import Client, poll

POLL = 10.0
MANIFEST = ".ai/manifest.yaml"
SOURCES = ".ai/repo/knowledge/sources.yaml"
KINDS = ".ai/repo/knowledge/kinds.yaml"
ALLOW = ".ai/repo/knowledge/allow/note.txt"
RULE = ".ai/repo/rules/alpha.md"
RULE_URI = "majordomus://rule/project.alpha@1"
NOTE_URI = "majordomus://note/plain"

GOOD_MANIFEST = support.manifest_yaml("rules", "knowledge")
LAYER = {
    MANIFEST: GOOD_MANIFEST,
    SOURCES: support.sources_yaml(
        ("rule", "rule", ":(glob).ai/repo/rules/*.md"),
        ("note", "note", ":(glob).ai/repo/notes/*.yaml"),
        ("deep", "deep", ":(glob).ai/repo/notes/deep/*.yaml"),
        ("versioned", "versioned", ":(glob).ai/repo/versioned/*.yaml")),
    KINDS: """schema: majordomus-kinds/v1
kinds:
  note:
    format: yaml
    allow: note
    identity: [name]
    title: name
  deep:
    format: yaml
    identity: [name]
    title: name
  versioned:
    format: yaml
    identity: [name]
    schema_version:
      field: version
      supported: [1]
""",
    ALLOW: "^name$\n^text$\n^big$\n",
    RULE: ("---\nid: project.alpha\nversion: 1\ntitle: Alpha\ndescription: The alpha rule.\n"
           "---\n\n# Alpha\n\nBody of the alpha rule.\n"),
    ".ai/repo/notes/plain.yaml": "name: plain\ntext: a plain note\n",
}
# What a secret file holds: a line /etc/passwd would hold, and one that reads as a key line.
SECRET_TEXT = "root:x:0:0:SECRET-4242:/root:/bin/bash\nmj_secret_key: SECRET-4243\n"
SECRETS = ("SECRET-4242", "SECRET-4243", "mj_secret_key", "root:x:0:0", "/bin/bash")


def note(text):
    sys.stderr.write("  [hostile] %s\n" % text)
    sys.stderr.flush()


def layer_repo(testcase, extra=None, drop=()):
    files = dict(LAYER)
    files.update(extra or {})
    for rel in drop:
        files.pop(rel, None)
    return support.make_repo(testcase, files=files, skeleton=False)


def secret_file(testcase):
    """A file outside the repository holding SECRET_TEXT: what a link points at."""
    path = os.path.join(support.tempdir(testcase), "secret.txt")
    with open(path, "w") as handle:
        handle.write(SECRET_TEXT)
    return path


def replace_with_link(repo, rel, target):
    path = os.path.join(repo, rel)
    os.remove(path)
    os.symlink(target, path)


def replace_with_fifo(repo, rel):
    path = os.path.join(repo, rel)
    os.remove(path)
    os.mkfifo(path)


def restore(repo, rel, text):
    path = os.path.join(repo, rel)
    if os.path.lexists(path):
        os.remove(path)
    support.write(repo, rel, text)


def assert_no_secret(testcase, text, where):
    for secret in SECRETS:
        testcase.assertNotIn(secret, text, "%s carries a byte of the link's target" % where)


def strict_json(line):
    """A frame parsed as strict JSON: NaN and Infinity are not JSON."""
    def refuse(name):
        raise ValueError("%s in a frame" % name)
    return json.loads(line.decode("utf-8") if isinstance(line, bytes) else line,
                      parse_constant=refuse)


def http(srv, path, headers=None, method="GET"):
    status, hdrs, body = srv.request(method, path, headers=headers)
    return status, hdrs, body.decode("utf-8", "replace")


def pages(srv):
    """Every kind of page of serve: (path, status, text)."""
    out = []
    for path in ("/ui/", "/ui/diagnostics", "/ui/capabilities", "/ui/kind/rule",
                 "/ui/object?uri=" + urllib.parse.quote(RULE_URI, safe=""),
                 "/ui/search?q=alpha", "/ui/nowhere"):
        status, _, text = http(srv, path)
        out.append((path, status, text))
    return out


def mcp_answers(c):
    """The text of what an MCP session answers about the layer (its report included)."""
    texts = [json.dumps(c.result("resources/list")), c.read(REPOSITORY_URI)
             if not isinstance(c.read(REPOSITORY_URI), int) else "",
             json.dumps(c.result("tools/call", {"name": "majordomus_repository",
                                                "arguments": {}}))]
    return "\n".join(texts)


# ------------------------------------------------------------------------------------------
# A symlink is never followed, at any time (§25 bullet 1)
# ------------------------------------------------------------------------------------------

class LiveSymlinkTest(unittest.TestCase):
    VIA = "pyz"

    def test_a_declaration_replaced_by_a_link_leaks_nothing(self):
        """The manifest, the sources file, the kinds file and an allow-list, each replaced by
        a symlink to a secret file while `mcp` and `serve` run: each is refused as a
        symlink by its path, and no byte of the target reaches an MCP answer, a REST
        answer, a page or a log line; restored, the layer is served again."""
        repo = layer_repo(self)
        secret = secret_file(self)
        c = Client(self, repo, via=self.VIA)
        srv = support.HttpServer(repo, via=self.VIA)
        self.addCleanup(srv.stop)
        for rel in (MANIFEST, SOURCES, KINDS, ALLOW):
            with self.subTest(declaration=rel):
                good = support.read_bytes(repo, rel).decode("utf-8")
                replace_with_link(repo, rel, secret)
                report, waited, _ = poll(c.report, lambda r: r["live"]["stale"] is not None,
                                         "%s: the stale report" % rel)
                note("%s -> a link: stale after %.2fs: %s" % (rel, waited,
                                                              report["live"]["stale"]))
                stale = report["live"]["stale"]
                self.assertIn(rel, stale)
                self.assertIn("symlink", stale)
                assert_no_secret(self, stale, "live.stale")
                assert_no_secret(self, mcp_answers(c), "an MCP answer")
                status, rest = srv.get_json("/api/v1/repository")
                poll(lambda: srv.get_json("/api/v1/repository")[1]["live"]["stale"],
                     lambda s: s is not None, "%s: serve's stale report" % rel)
                status, _, text = http(srv, "/api/v1/repository")
                self.assertEqual(status, 200)
                assert_no_secret(self, text, "the REST report")
                for path, status, text in pages(srv):
                    assert_no_secret(self, text, "the page %s" % path)
                restore(repo, rel, good)
                poll(c.report, lambda r: r["live"]["stale"] is None, "%s: recovered" % rel)
                poll(lambda: srv.get_json("/api/v1/repository")[1]["live"]["stale"],
                     lambda s: s is None, "%s: serve recovered" % rel)
        self.assertIn(RULE_URI, c.uris())
        assert_no_secret(self, c.s.stderr(), "mcp's log")
        assert_no_secret(self, srv.stderr(), "serve's log")

    def test_a_link_at_start_is_refused_by_name(self):
        """A sources file that is a symlink at start: every one-shot command refuses it as
        a symlink (exit 10) and prints no byte of the target."""
        repo = layer_repo(self)
        replace_with_link(repo, SOURCES, secret_file(self))
        for args in (["get", REPOSITORY_URI], ["mcp", "--inspect"]):
            with self.subTest(args=args):
                p = support.run(args, repo, via=self.VIA, timeout=30)
                err = p.stderr.decode("utf-8", "replace")
                self.assertEqual(p.returncode, 10, err)
                self.assertIn(SOURCES, err)
                self.assertIn("symlink", err)
                assert_no_secret(self, err + p.stdout.decode("utf-8", "replace"), "the output")


    def test_a_folder_replaced_by_a_link_leaks_nothing(self):
        """The rules' folder and the allow-lists' folder, each replaced by a symlink to a
        folder holding files of the same names whose text is secret: nothing is read
        through either; each is named by the folder."""
        repo = layer_repo(self)
        elsewhere = support.tempdir(self)
        support.write(elsewhere, "rules/alpha.md", "---\n" + SECRET_TEXT + "---\n")
        support.write(elsewhere, "allow/note.txt", "^" + SECRET_TEXT.replace("\n", "(\n"))
        c = Client(self, repo, via=self.VIA)
        srv = support.HttpServer(repo, via=self.VIA)
        self.addCleanup(srv.stop)
        for folder, target in ((".ai/repo/rules", "rules"),
                               (".ai/repo/knowledge/allow", "allow")):
            with self.subTest(folder=folder):
                moved = os.path.join(repo, folder + ".moved")
                os.rename(os.path.join(repo, folder), moved)
                os.symlink(os.path.join(elsewhere, target), os.path.join(repo, folder))
                if target == "rules":
                    report, _, _ = poll(c.report, lambda r: any(
                        d["code"] == "symlink" for d in r["diagnostics"]), "the rule refused")
                    self.assertIn({"severity": "error", "code": "symlink", "path": RULE,
                                   "message": "a symlink is not read; the folder "
                                   ".ai/repo/rules on its path is one"}, report["diagnostics"])
                else:
                    report, _, _ = poll(c.report, lambda r: r["live"]["stale"] is not None,
                                        "the stale report")
                    self.assertEqual(report["live"]["stale"], ".ai/repo/knowledge/allow: a "
                                     "symlink is not read; the folder .ai/repo/knowledge/"
                                     "allow on its path is one")
                assert_no_secret(self, mcp_answers(c), "an MCP answer")
                for path, status, text in pages(srv):
                    assert_no_secret(self, text, "the page %s" % path)
                os.remove(os.path.join(repo, folder))
                os.rename(moved, os.path.join(repo, folder))
                poll(c.report, lambda r: r["state"] == "ok" and r["live"]["stale"] is None,
                     "%s: restored" % folder)
        assert_no_secret(self, c.s.stderr() + srv.stderr(), "a log")


class LiveSymlinkPyTest(LiveSymlinkTest):
    VIA = "py"


# ------------------------------------------------------------------------------------------
# A FIFO where a file is expected: never a hang (§25 bullet 2)
# ------------------------------------------------------------------------------------------

class FifoTest(unittest.TestCase):
    VIA = "pyz"

    def timed(self, what, call):
        began = time.monotonic()
        value = call()
        note("%s answered %.3fs after" % (what, time.monotonic() - began))
        return value

    def test_a_fifo_manifest_never_hangs_mcp_or_serve(self):
        repo = layer_repo(self)
        c = Client(self, repo, via=self.VIA)
        srv = support.HttpServer(repo, via=self.VIA)
        self.addCleanup(srv.stop)
        self.assertEqual(c.report()["live"]["generation"], 1)
        replace_with_fifo(repo, MANIFEST)
        # the next request: answered (a hang would leave the read without an answer)
        c.s.send({"jsonrpc": "2.0", "id": 900, "method": "ping"})
        line = self.timed("ping after the FIFO", lambda: c.s.recv_line(timeout=POLL))
        self.assertEqual(strict_json(line)["id"], 900)
        report, _, _ = poll(c.report, lambda r: r["live"]["stale"] is not None, "stale")
        self.assertIn(MANIFEST, report["live"]["stale"])
        self.assertIn("not a regular file", report["live"]["stale"])
        status, doc = self.timed("serve after the FIFO",
                                 lambda: srv.get_json("/api/v1/repository"))
        self.assertEqual(status, 200)
        poll(lambda: srv.get_json("/api/v1/repository")[1]["live"]["stale"],
             lambda s: s is not None, "serve's stale report")
        self.assertEqual(http(srv, "/ui/")[0], 200)
        # the FIFO removed, the manifest back and a new note: served
        restore(repo, MANIFEST, GOOD_MANIFEST)
        support.write(repo, ".ai/repo/notes/later.yaml", "name: later\ntext: after the FIFO\n")
        support.git(repo, "add", ".ai/repo/notes/later.yaml")
        poll(c.uris, lambda uris: "majordomus://note/later" in uris, "the later note (mcp)")
        poll(lambda: srv.get_json("/api/v1/object?uri=majordomus://note/later")[0],
             lambda status: status == 200, "the later note (serve)")
        self.assertIsNone(c.report()["live"]["stale"])

    def test_a_fifo_layer_file_or_declaration_at_start_never_hangs(self):
        """A FIFO rule file is excluded as not a file; a FIFO sources file refuses the
        one-shot commands (exit 10) at once, and never blocks a read."""
        repo = layer_repo(self)
        replace_with_fifo(repo, RULE)
        p = support.run(["get", NOTE_URI], repo, via=self.VIA, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        report = json.loads(support.run(["get", REPOSITORY_URI], repo, via=self.VIA,
                                        timeout=30).stdout)["answer"]
        self.assertIn({"severity": "error", "code": "not_a_file", "path": RULE,
                       "message": "not a regular file"}, report["diagnostics"])
        restore(repo, RULE, LAYER[RULE])
        replace_with_fifo(repo, SOURCES)
        p = support.run(["get", NOTE_URI], repo, via=self.VIA, timeout=30)
        self.assertEqual(p.returncode, 10, p.stderr)
        self.assertIn("%s: not a regular file" % SOURCES, p.stderr.decode())


class FifoPyTest(FifoTest):
    VIA = "py"


# ------------------------------------------------------------------------------------------
# Depth and size in the subset (§25 bullet 3)
# ------------------------------------------------------------------------------------------

def deep_mappings(levels):
    """`name: deep` and a key nested `levels` mappings deep, a scalar at the bottom."""
    lines = ["name: deep", "n:"]
    for level in range(1, levels):
        lines.append("  " * level + "n:")
    lines.append("  " * levels + "leaf: bottom")
    return "\n".join(lines) + "\n"


def deep_items(levels, limit=None):
    """`levels` levels of list items (each a mapping whose one key holds the next list); with
    `limit`, its first `limit` characters only, and the text is built no further than that
    (a hundred thousand levels would be gigabytes)."""
    lines = ["name: deep", "l:"]
    size = len("name: deep\nl:\n")
    for level in range(levels // 2):
        if limit is not None and size > limit:
            break
        lines.append("  " * level + "- n:")
        size += len(lines[-1]) + 1
    else:
        lines.append("  " * (levels // 2) + "- bottom")
    text = "\n".join(lines) + "\n"
    return text if limit is None else text[:limit]


class DepthTest(unittest.TestCase):
    VIA = "pyz"

    def served(self, repo, uri, depth_marker):
        """Over MCP (tools/call and resources/read), REST and the page: the deep object is
        served, and so is every other file."""
        c = Client(self, repo, via=self.VIA)
        self.assertIn(uri, c.uris())
        self.assertIn(RULE_URI, c.uris())
        self.assertIn(NOTE_URI, c.uris())
        c.s.send({"jsonrpc": "2.0", "id": 77, "method": "tools/call",
                  "params": {"name": "majordomus_get", "arguments": {"uri": uri}}})
        line = c.s.recv_line()
        self.assertTrue(line.startswith(b'{"jsonrpc":"2.0","id":77,"result":{"content":'),
                        line[:300])
        self.assertIn(b'"isError":false', line)
        self.assertGreaterEqual(line.count(depth_marker), 1000)
        report = c.report()
        self.assertEqual(report["state"], "ok", report["diagnostics"])
        for mode in ("ranked", "substring"):     # the term index and the search table
            hits = c.tool("majordomus_search", {"query": "deep bottom", "mode": mode})
            self.assertIsInstance(hits["hits"], list)
        self.assertEqual(c.tool("majordomus_context", {"path": "."})["documents"], [])
        srv = support.HttpServer(repo, via=self.VIA)
        self.addCleanup(srv.stop)
        status, _, text = http(srv, "/api/v1/object?uri=" + urllib.parse.quote(uri, safe=""))
        self.assertEqual(status, 200, text[:300])
        status, _, text = http(srv, "/ui/object?uri=" + urllib.parse.quote(uri, safe=""))
        self.assertEqual(status, 200, text[:300])
        status, _, text = http(srv, "/ui/search?q=bottom")
        self.assertEqual(status, 200, text[:300])
        self.assertNotIn("Traceback", c.s.stderr() + srv.stderr())

    def test_a_thousand_mappings_deep(self):
        repo = layer_repo(self, {".ai/repo/notes/deep/maps.yaml":
                                 deep_mappings(1000).replace("name: deep", "name: maps")})
        self.served(repo, "majordomus://deep/maps", b'"n":')

    def test_a_thousand_list_items_deep(self):
        repo = layer_repo(self, {".ai/repo/notes/deep/items.yaml":
                                 deep_items(2000).replace("name: deep", "name: items")})
        self.served(repo, "majordomus://deep/items", b'[{"n":')

    def test_as_deep_as_the_file_limit_allows(self):
        """100,000 levels cannot be written in 4 MiB (the file would be gigabytes): the
        deepest file under the limit (2,800 levels of list items) is served, and a file
        that tries 100,000 levels is refused by its size, never by an internal error."""
        text = deep_items(2800).replace("name: deep", "name: deepest")
        self.assertLess(len(text), 4194304)
        attempt = deep_items(100000, 4194304 + 100)
        repo = layer_repo(self, {".ai/repo/notes/deep/deepest.yaml": text,
                                 ".ai/repo/notes/deep/attempt.yaml": attempt})
        p = support.run(["get", "majordomus://deep/deepest"], repo, via=self.VIA, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertGreaterEqual(p.stdout.count(b'"n": ['), 1399)
        p = support.run(["get", REPOSITORY_URI], repo, via=self.VIA, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        diagnostics = json.loads(p.stdout)["answer"]["diagnostics"]
        self.assertEqual([(d["code"], d["path"]) for d in diagnostics],
                         [("oversized", ".ai/repo/notes/deep/attempt.yaml")])

    def test_deep_front_matter(self):
        """Front matter nested as deep as its 64 KiB allows, in a document: served."""
        levels = 250
        front = deep_mappings(levels).replace("name: deep\n", "")
        repo = layer_repo(self, {"docs/deep.md": "---\n" + front + "---\n\n# Deep\n"},)
        support.write(repo, SOURCES, LAYER[SOURCES] + "  - id: doc\n    kind: document\n"
                      "    discovery: vcs\n    pathspec: ':(glob)docs/*.md'\n"
                      "    required: false\n")
        support.commit_all(repo)
        p = support.run(["get", "majordomus://document/docs/deep.md"], repo, via=self.VIA)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertEqual(p.stdout.count(b'"n": {'), levels)

    def test_a_scalar_of_five_thousand_digits_is_a_string(self):
        """A `version:` of 5,000 digits is a string (§3.3): a rule's identity carries it as
        text, a kind whose version must be an integer refuses the file by name, and every
        other file is served."""
        digits = "9" * 5000
        repo = layer_repo(self, {
            ".ai/repo/notes/big.yaml": "name: big\nbig: %s\n" % digits,
            ".ai/repo/versioned/v.yaml": "name: v\nversion: %s\n" % digits,
            ".ai/repo/rules/huge.md": LAYER[RULE].replace("alpha", "huge").replace(
                "version: 1", "version: " + digits)})
        p = support.run(["get", "majordomus://note/big"], repo, via=self.VIA)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertEqual(json.loads(p.stdout)["metadata"]["big"], digits)
        p = support.run(["get", REPOSITORY_URI], repo, via=self.VIA)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        report = json.loads(p.stdout)["answer"]
        self.assertEqual(report["diagnostics"], [
            {"severity": "error", "code": "missing_field", "path": ".ai/repo/versioned/v.yaml",
             "message": "no integer 'version'"}])
        self.assertEqual(report["objects"], 4)
        c = Client(self, repo, via=self.VIA)
        self.assertIn(RULE_URI, c.uris())
        self.assertIn("majordomus://rule/project.huge@" + digits, c.uris())


class DepthPyTest(DepthTest):
    VIA = "py"


class DeepTreeInProcessTest(unittest.TestCase):
    """What a deep tree meets after the reader, 100,000 levels deep (built directly: no
    file of the subset that deep fits the 4 MiB limit): the key-path view, both JSON
    encoders, the page's metadata cell; and the reader itself on the deepest texts."""

    @classmethod
    def setUpClass(cls):
        import majordomus
        cls.m = majordomus

    def tree(self, levels, kind):
        node = "bottom"
        for _ in range(levels):
            node = {"n": node} if kind == "map" else [{"n": node}]
        return {"name": "deep", "n": node}

    def test_a_hundred_thousand_levels(self):
        m = self.m
        for kind in ("map", "list"):
            with self.subTest(kind=kind):
                tree = self.tree(100000, kind)
                paths = m.key_paths(tree)
                self.assertEqual(len(paths), 2)
                self.assertTrue(paths[1].endswith(".n"))
                compact = m.json_compact(tree)
                self.assertEqual(compact.count('"n":'), 100001)
                self.assertTrue(compact.startswith('{"name":"deep","n":'))
                # indented, a level costs its depth in spaces: 3,000 levels (9 MB), not
                # 100,000 (the text would be tens of gigabytes whoever wrote it)
                pretty = m.json_pretty(self.tree(3000, kind))
                self.assertEqual(pretty.count('"n": '), 3001)
                self.assertTrue(m._metadata_value(tree["n"]).startswith(
                    ('<code>{&quot;n&quot;:', '<code>[{&quot;n&quot;:')))
                self.assertEqual(m._json_bytes({"id": 1, "t": tree}).count(b'"n":'), 100001)

    def test_the_reader_on_deep_texts(self):
        m = self.m
        tree = m.parse_subset(deep_mappings(2000))
        self.assertEqual(len(m.key_paths(tree)), 2)
        tree = m.parse_subset(deep_items(2800))
        node, depth = tree["l"], 0
        while isinstance(node, list):
            node, depth = node[0], depth + 1
            node = node.get("n", node) if isinstance(node, dict) else node
        self.assertEqual(depth, 1401)

    def test_integer_scalars(self):
        m = self.m
        self.assertEqual(m.parse_subset("a: %s\n" % ("9" * 5000)), {"a": "9" * 5000})
        self.assertEqual(m.parse_subset("a: -%s\n" % ("9" * 5000)), {"a": "-" + "9" * 5000})
        self.assertEqual(m.parse_subset("a: [%s, 1]\n" % ("9" * 5000)), {"a": ["9" * 5000, 1]})
        self.assertEqual(m.parse_subset("a: 0000000000000000000000001\n"), {"a": 1})
        self.assertEqual(m.parse_subset("a: 9223372036854775807\n"), {"a": 9223372036854775807})
        self.assertEqual(m.parse_subset("a: 9223372036854775808\n"), {"a": "9223372036854775808"})
        self.assertEqual(m.parse_subset("a: -9223372036854775808\n"), {"a": -9223372036854775808})
        self.assertEqual(m.parse_subset("a: -%s\n" % ("0" * 5000)), {"a": 0})
        self.assertEqual(m.parse_subset("a: ²\n"), {"a": "²"})


# ------------------------------------------------------------------------------------------
# Numbers from outside (§25 bullet 4)
# ------------------------------------------------------------------------------------------

FIVE_THOUSAND = "7" * 5000


class ServerCase(unittest.TestCase):
    """One `serve --port 0` on the layer above, for the whole class."""

    @classmethod
    def setUpClass(cls):
        cls.repo = support.make_repo(support._ClassScope(cls), files=LAYER, skeleton=False)
        cls.srv = support.HttpServer(cls.repo)
        cls.addClassCleanup(cls.srv.stop)


class HttpNumbersTest(ServerCase):
    def raw(self, data):
        return raw_exchange(self.srv.port, data)

    def test_content_length(self):
        port = self.srv.port
        for value, status in ((b"\xb2", 400), ("²".encode("utf-8"), 400), (b"-1", 400),
                              (b"1e3", 400), (b" ", 200), (b"+5", 400), (b"0x10", 400),
                              (FIVE_THOUSAND.encode(), 413), (b"0" * 5000, 413),
                              (b"99999999999999999999", 413)):
            with self.subTest(value=value[:20]):
                request = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %s\r\n"
                           b"Content-Type: application/json\r\n\r\n" % (port, value))
                got, headers, body = self.raw(request)
                if value == b" ":
                    continue    # an empty value is no length: the request has no body
                self.assertEqual(got, status, body[:300])
                error = json.loads(body.decode("utf-8"))["error"]
                self.assertEqual(error["code"], "bad_request" if status == 400 else "too_large")

    def test_query_numbers(self):
        quoted = urllib.parse.quote(RULE_URI, safe="")
        for path in ("/api/v1/objects?limit=" + FIVE_THOUSAND,
                     "/api/v1/objects?limit=%C2%B2",
                     "/api/v1/objects?limit=-" + FIVE_THOUSAND,
                     "/api/v1/search?query=alpha&limit=" + FIVE_THOUSAND,
                     "/api/v1/object?uri=%s&offset=%s" % (quoted, FIVE_THOUSAND),
                     "/api/v1/object?uri=%s&limit=%s" % (quoted, FIVE_THOUSAND),
                     "/api/v1/object?uri=%s&offset=%%C2%%B2" % quoted,
                     "/api/v1/capabilities?limit=" + FIVE_THOUSAND):
            with self.subTest(path=path[:80]):
                status, doc = self.srv.get_json(path)
                self.assertEqual(status, 400, doc)
                self.assertEqual(doc["error"]["code"], "invalid_input", doc)
                self.assertIn("parameter '", doc["error"]["message"])
        status, doc = self.srv.get_json("/api/v1/objects?limit=1")
        self.assertEqual((status, doc["count"]), (200, 1))

    def test_cursors(self):
        import base64
        for key in ("1e400\t" + RULE_URI, "nan\t" + RULE_URI, FIVE_THOUSAND + "\t" + RULE_URI,
                    "-1e400\tx"):
            raw = ("rank:" + key).encode()
            cursor = "mj1." + base64.urlsafe_b64encode(raw).decode().rstrip("=")
            with self.subTest(key=key[:20]):
                status, doc = self.srv.get_json("/api/v1/search?query=alpha&cursor=" + cursor)
                self.assertEqual(status, 400, doc)
                self.assertEqual(doc["error"]["message"],
                                 "parameter 'cursor' is not a cursor this server issued")


class CliNumbersTest(unittest.TestCase):
    VIA = "pyz"

    def test_cli_numbers(self):
        repo = layer_repo(self)
        for args in (["get", RULE_URI, "--offset", FIVE_THOUSAND],
                     ["get", RULE_URI, "--limit", FIVE_THOUSAND],
                     ["get", RULE_URI, "--limit", "²"],
                     ["get", RULE_URI, "--offset", "\u0663"],
                     ["search", "alpha", "--limit", FIVE_THOUSAND],
                     ["search", "alpha", "--limit", "²"],
                     ["serve", "--port", "²"],
                     ["serve", "--port", FIVE_THOUSAND]):
            with self.subTest(args=[a[:12] for a in args]):
                p = support.run(args, repo, via=self.VIA, timeout=30)
                err = p.stderr.decode("utf-8", "replace")
                self.assertEqual(p.returncode, 2, err)
                self.assertEqual(p.stdout, b"")
                self.assertNotIn("internal", err)
                self.assertLess(len(err), 2000, "the message quotes the whole number")
        p = support.run(["get", RULE_URI, "--offset", FIVE_THOUSAND], repo, via=self.VIA)
        self.assertIn("majordomus: invalid input:", p.stderr.decode())


class CliNumbersPyTest(CliNumbersTest):
    VIA = "py"


# ------------------------------------------------------------------------------------------
# JSON-RPC ids JSON cannot carry back; no frame holds NaN or Infinity (§25 bullet 4)
# ------------------------------------------------------------------------------------------

ODD_IDS = ((b"1e400", -32600), (b"-1e400", -32600), (b"NaN", -32700), (b"Infinity", -32700),
           (b"-Infinity", -32700), (b"1E999", -32600))


class IdTest(unittest.TestCase):
    VIA = "pyz"

    def test_ids_json_cannot_carry(self):
        repo = layer_repo(self)
        s = support.McpSession(repo, via=self.VIA)
        self.addCleanup(s.kill)
        for text, code in ODD_IDS:
            for method in (b"ping", b"initialize", b"tools/list"):
                with self.subTest(id=text, method=method):
                    s.send_raw(b'{"jsonrpc":"2.0","id":%s,"method":"%s"}\n' % (text, method))
                    answer = strict_json(s.recv_line())
                    self.assertIsNone(answer["id"])
                    self.assertEqual(answer["error"]["code"], code, answer)
                    self.assertNotIn("result", answer)
        s.send_raw(b'[{"jsonrpc":"2.0","id":1e400,"method":"ping"},'
                   b'{"jsonrpc":"2.0","id":2,"method":"ping"}]\n')
        batch = strict_json(s.recv_line())
        self.assertEqual([(a["id"], "error" in a) for a in batch], [(None, True), (2, False)])
        # a 1e400 inside params is no id: the request is answered, and nothing echoes it
        s.send_raw(b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":'
                   b'"majordomus_list","arguments":{"limit":1e400}}}\n')
        answer = strict_json(s.recv_line())
        self.assertEqual(answer["id"], 3)
        self.assertTrue(answer["result"]["isError"])
        s.send_raw(b'{"jsonrpc":"2.0","id":4,"method":"resources/list","params":{"_meta":'
                   b'{"io.modelcontextprotocol/protocolVersion":1e400,'
                   b'"io.modelcontextprotocol/clientCapabilities":{}}}}\n')
        answer = strict_json(s.recv_line())
        self.assertEqual(answer["id"], 4)
        self.assertIn("error", answer)
        s.send({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        self.assertEqual(strict_json(s.recv_line())["id"], 5)
        self.assertEqual(s.close(), 0)
        self.assertNotIn("Traceback", s.stderr())

    def test_ids_over_http(self):
        repo = layer_repo(self)
        srv = support.HttpServer(repo, via=self.VIA)
        self.addCleanup(srv.stop)
        for text, code in ODD_IDS:
            with self.subTest(id=text):
                status, _, body = srv.request(
                    "POST", "/mcp", body=b'{"jsonrpc":"2.0","id":%s,"method":"initialize",'
                    b'"params":{"protocolVersion":"2025-06-18"}}' % text,
                    headers={"Content-Type": "application/json",
                             "Accept": "application/json, text/event-stream"})
                answer = strict_json(body)
                self.assertIsNone(answer["id"])
                self.assertEqual(answer["error"]["code"], code, answer)
                self.assertIn(status, (200, 400))

    def test_deep_frames(self):
        """A frame 100,000 levels deep (arrays, objects) is a parse error, and the session
        goes on."""
        repo = layer_repo(self)
        s = support.McpSession(repo, via=self.VIA)
        self.addCleanup(s.kill)
        for frame in (b"[" * 100000 + b"]" * 100000, b'{"a":' * 100000 + b"1" + b"}" * 100000,
                      b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + b"[" * 100000
                      + b"]" * 100000 + b"}"):
            s.send_raw(frame + b"\n")
            answer = strict_json(s.recv_line())
            self.assertIn(answer["error"]["code"], (-32700, -32600), answer)
        s.send({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        self.assertEqual(strict_json(s.recv_line())["id"], 5)
        self.assertNotIn("Traceback", s.stderr())


class IdPyTest(IdTest):
    VIA = "py"


# ------------------------------------------------------------------------------------------
# HTTP heads (§25 bullet 5)
# ------------------------------------------------------------------------------------------

class HeadTest(ServerCase):

    def test_methods(self):
        port = self.srv.port
        for method in ("G\xc9T".encode("latin-1"), "GÉT".encode("utf-8"), b"G3T", b"GE_T",
                       b"G-ET", "ＧＥＴ".encode("utf-8"), b"\xff"):
            with self.subTest(method=method):
                got, _, body = raw_exchange(port, method + b" / HTTP/1.1\r\nHost: 127.0.0.1:%d"
                                            b"\r\n\r\n" % port)
                self.assertEqual(got, 400, body)

    def test_header_names(self):
        port = self.srv.port
        for name in ("X-Na\xefve".encode("latin-1"), "X-Naïve".encode("utf-8"), b"Bad Name",
                     b"X(y)", b"X\"y", b"X/y", b"[x]", b"a{b}", b"X@y", b"\x7fX", b"X\x01"):
            with self.subTest(name=name):
                got, _, body = raw_exchange(port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                                            b"%s: 1\r\n\r\n" % (port, name))
                self.assertEqual(got, 400, body)
        got, _, body = raw_exchange(port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                                    b"X-Fine_!#$%%&'*+.^`|~9: 1\r\n\r\n" % port)
        self.assertEqual(got, 200, body)

    def test_host_forms(self):
        port = self.srv.port
        accepted = ["localhost", "localhost:%d" % port, "LOCALHOST:%d" % port, "a.localhost",
                    "a-b.c9.localhost:%d" % port, "x1.localhost", "127.0.0.1",
                    "127.0.0.1:%d" % port, "[::1]", "[::1]:%d" % port, "localhost:"]
        refused = ["evil.com", "localhost.evil.com", "-a.localhost", "a-.localhost",
                   "a..localhost", ".localhost", "a_b.localhost", "a b.localhost",
                   "é.localhost", "127.0.0.2", "127.1", "0x7f.0.0.1", "127.000.000.001",
                   "[::2]", "[::ffff:127.0.0.1]", "[0:0:0:0:0:0:0:1]x", "localhost:abc",
                   "localhost:%d:1" % port, "localhost:123456", "::1", "[::1",
                   "%s.localhost" % ("a" * 64), "localhost.", ""]
        for host in accepted:
            with self.subTest(host=host):
                got, _, body = raw_exchange(port, b"GET / HTTP/1.1\r\nHost: %s\r\n\r\n"
                                            % host.encode("utf-8"))
                self.assertEqual(got, 200, body)
        for host in refused:
            with self.subTest(host=host):
                got, _, body = raw_exchange(port, b"GET / HTTP/1.1\r\nHost: %s\r\n\r\n"
                                            % host.encode("utf-8"))
                self.assertIn(got, (400, 403), body)


# ------------------------------------------------------------------------------------------
# The shared event-stream slots (§25 bullet 5)
# ------------------------------------------------------------------------------------------

def open_stream(port, host, headers):
    """GET /ui/events on a socket of its own: (status, the socket, left open while 200)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    lines = [b"GET /ui/events HTTP/1.1", b"Host: " + host.encode()]
    lines += [("%s: %s" % pair).encode() for pair in headers.items()]
    s.sendall(b"\r\n".join(lines) + b"\r\n\r\n")
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    status = int(buf.split(b" ", 2)[1]) if buf.startswith(b"HTTP/1.1 ") else 0
    if status != 200:
        s.close()
    return status, s


CROSS_SITE = {"Accept": "image/avif,image/webp,image/apng,*/*;q=0.8",
              "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors",
              "Sec-Fetch-Dest": "image"}
SAME_ORIGIN = {"Accept": "text/event-stream", "Sec-Fetch-Site": "same-origin",
               "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}


class EventSlotsTest(unittest.TestCase):
    """Each test on a `serve` of its own (its slots counted from none), the streams it
    opened (`held`) closed after it."""

    def setUp(self):
        srv = support.HttpServer(layer_repo(self))
        self.addCleanup(srv.stop)
        self.port, self.held = srv.port, []
        self.addCleanup(lambda: [s.close() for s in self.held])

    def test_a_cross_site_page_cannot_take_the_slots(self):
        port, held = self.port, self.held
        # <img src="http://xN.localhost:PORT/ui/events"> on a hostile page, 20 times
        for n in range(20):
            host = "x%d.localhost:%d" % (n, port)
            for headers in (CROSS_SITE, {"Accept": "*/*", "Sec-Fetch-Site": "same-site"},
                            {"Accept": "text/event-stream", "Origin": "http://evil.example"},
                            {"Accept": "text/event-stream"}):
                status, s = open_stream(port, host, headers)
                if status == 200:
                    held.append(s)
                self.assertEqual(status, 403, (n, headers))
        # the page's own EventSource still has a slot
        status, s = open_stream(port, "127.0.0.1:%d" % port, SAME_ORIGIN)
        self.assertEqual(status, 200)
        held.append(s)
        status, s = open_stream(port, "localhost:%d" % port,
                                {"Accept": "text/event-stream",
                                 "Origin": "http://localhost:%d" % port})
        self.assertEqual(status, 200)
        held.append(s)

    def test_slots_are_counted_per_client_and_host(self):
        port, held = self.port, self.held
        host = "x1.localhost:%d" % port
        statuses = []
        for _ in range(18):
            status, s = open_stream(port, host, SAME_ORIGIN)
            statuses.append(status)
            if status == 200:
                held.append(s)
        self.assertEqual((statuses.count(200), statuses.count(503)), (16, 2))
        status, s = open_stream(port, "127.0.0.1:%d" % port, SAME_ORIGIN)
        self.assertEqual(status, 200, "another Host has slots of its own")
        held.append(s)


# ------------------------------------------------------------------------------------------
# A layer that cannot be read at start (§25 bullet 6)
# ------------------------------------------------------------------------------------------

BROKEN_MANIFEST = GOOD_MANIFEST.replace("sections:", "sectoins:")
BROKEN_REASON = ".ai/manifest.yaml: unknown key(s): sectoins.rules, sectoins.knowledge"


class BrokenStartTest(unittest.TestCase):
    VIA = "pyz"

    def test_mcp_starts_explains_and_recovers(self):
        repo = layer_repo(self, {MANIFEST: BROKEN_MANIFEST})
        c = Client(self, repo, via=self.VIA)
        self.assertEqual(c.init["instructions"].split(". ")[0],
                         "the layer cannot be read: " + BROKEN_REASON)
        self.assertEqual(c.init["serverInfo"]["name"], "majordomus")
        report = c.report()
        self.assertEqual(report["state"], "broken")
        self.assertEqual(report["objects"], 0)
        self.assertEqual(report["diagnostics"], [{"severity": "error", "code": "broken_layer",
                                                  "message": BROKEN_REASON}])
        self.assertEqual(report["live"], {"generation": 0, "stale": None})
        self.assertEqual(list(report), support.REPORT_KEYS)
        self.assertEqual(c.tool("majordomus_repository")["state"], "broken")
        self.assertEqual(c.uris(), support.QUERY_URIS)     # the peers, the repository (§27)
        refusal = "refused: the layer cannot be read: " + BROKEN_REASON
        for name, arguments in (("majordomus_list", {}), ("majordomus_search", {"query": "x"}),
                                ("majordomus_get", {"uri": RULE_URI}),
                                ("majordomus_capabilities", {}), ("majordomus_perf", {}),
                                ("majordomus_brief", {"path": "."}),
                                ("majordomus_context", {"path": "."})):
            with self.subTest(tool=name):
                result = c.result("tools/call", {"name": name, "arguments": arguments})
                self.assertIs(result["isError"], True, result)
                self.assertEqual(result["content"][0]["text"], refusal)
        self.assertEqual(c.result("prompts/list"), {"prompts": []})
        c.s.wait_stderr("the layer cannot be read")
        # fixed: generation 1 is built, and the client is told
        mark = c.mark()
        support.write(repo, MANIFEST, GOOD_MANIFEST)
        msg, at = c.wait_note(lambda m: m.get("method") ==
                              "notifications/resources/list_changed", mark)
        self.assertIn(RULE_URI, c.uris())
        report = c.report()
        self.assertEqual((report["state"], report["live"]), ("ok", {"generation": 1,
                                                                     "stale": None}))
        self.assertEqual(c.tool("majordomus_list")["total"], 2)
        self.assertNotIn("Traceback", c.s.stderr())

    def test_one_shot_commands_keep_exit_ten(self):
        repo = layer_repo(self, {MANIFEST: BROKEN_MANIFEST})
        for args in (["mcp", "--inspect"], ["mcp", "--strict"], ["serve", "--strict",
                                                                 "--port", "0"],
                     ["get", REPOSITORY_URI], ["capabilities", "list"]):
            with self.subTest(args=args):
                p = support.run(args, repo, via=self.VIA, input=b"", timeout=30)
                self.assertEqual(p.returncode, 10, p.stderr)
                self.assertEqual(p.stderr.decode().strip(), "majordomus: " + BROKEN_REASON)

    def test_a_broken_sources_file(self):
        repo = layer_repo(self, {SOURCES: LAYER[SOURCES] + "bogus: 1\n"})
        c = Client(self, repo, via=self.VIA)
        reason = "%s: unknown key 'bogus'" % SOURCES
        self.assertTrue(c.init["instructions"].startswith("the layer cannot be read: " +
                                                          reason))
        self.assertEqual(c.report()["diagnostics"][0]["message"], reason)
        support.write(repo, SOURCES, LAYER[SOURCES])
        poll(c.uris, lambda uris: RULE_URI in uris, "the layer once the sources are fixed")

    def test_serve_starts_explains_and_recovers(self):
        repo = layer_repo(self, {MANIFEST: BROKEN_MANIFEST})
        srv = support.HttpServer(repo, via=self.VIA)
        self.addCleanup(srv.stop)
        status, report = srv.get_json("/api/v1/repository")
        self.assertEqual((status, report["state"]), (200, "broken"))
        status, doc = srv.get_json("/api/v1/objects")
        self.assertEqual(status, 422)
        self.assertEqual(doc["error"], {"code": "refused", "message":
                                        "the layer cannot be read: " + BROKEN_REASON})
        escaped = BROKEN_REASON.replace("'", "&#39;")
        for path, status, text in pages(srv):
            with self.subTest(page=path):
                self.assertTrue(BANNER in text, text[-1500:])
                banner = text[text.index(BANNER):].split("</section>")[0]
                self.assertIn(escaped, banner)
                self.assertIn("The layer cannot be read", banner)
                self.assertIn('<span class="badge state-broken">broken</span>', text)
        support.write(repo, MANIFEST, GOOD_MANIFEST)
        poll(lambda: srv.get_json("/api/v1/repository")[1]["state"], lambda s: s == "ok",
             "serve once the manifest is fixed")
        status, text = http(srv, "/ui/")[0], http(srv, "/ui/")[2]
        self.assertEqual(status, 200)
        self.assertFalse(escaped in text or BANNER in text)
        self.assertIn("/ui/kind/rule", text)
        self.assertEqual(srv.get_json("/api/v1/objects")[1]["total"], 2)


class BrokenStartPyTest(BrokenStartTest):
    VIA = "py"


# ------------------------------------------------------------------------------------------
# A stale layer is visible (§25 bullet 7)
# ------------------------------------------------------------------------------------------

BANNER = '<section class="alert banner" role="alert">'


class StaleBannerTest(unittest.TestCase):
    def test_every_page_carries_the_banner(self):
        repo = layer_repo(self)
        srv = support.HttpServer(repo)
        self.addCleanup(srv.stop)
        before = pages(srv)          # rendered (and memoised) before the layer breaks
        for path, status, text in before:
            self.assertFalse(BANNER in text, path)
        support.write(repo, MANIFEST, GOOD_MANIFEST + "bogus: 1\n")
        reason = ".ai/manifest.yaml: unknown key(s): bogus"
        poll(lambda: srv.get_json("/api/v1/repository")[1]["live"]["stale"],
             lambda s: s == reason, "the stale report")
        for path, status, text in pages(srv):
            with self.subTest(page=path):
                self.assertTrue(BANNER in text, text[-1500:])
                banner = text[text.index(BANNER):].split("</section>")[0]
                self.assertIn(reason.replace("'", "&#39;"), banner)
                self.assertIn(" since ", banner)
                self.assertIn("generation 1", banner)
                self.assertIn('<span class="badge state-stale">stale</span>', text)
        overview = http(srv, "/ui/")[2]
        self.assertIn("Still serving generation 1", overview)
        support.write(repo, MANIFEST, GOOD_MANIFEST)
        poll(lambda: srv.get_json("/api/v1/repository")[1]["live"]["stale"],
             lambda s: s is None, "recovered")
        for path, status, text in pages(srv):
            self.assertFalse(BANNER in text, path)


# ------------------------------------------------------------------------------------------
# Names that end in other digits (found in review: the pages' linker read them with int())
# ------------------------------------------------------------------------------------------

class DigitNamesTest(unittest.TestCase):
    """A file named `notes/a@²` (its path its identity) or an ADR numbered `٣` (str.isdigit()
    takes those digits, int() refuses them) is no version and no ADR number: every page
    answers, the object's own too (each page that links was 500 before)."""

    def test_pages_of_names_ending_in_other_digits(self):
        manifest = support.manifest_yaml("knowledge", "adrs")
        sources = support.sources_yaml(("notes", "document", ":(glob)notes/*"),
                                       ("adrs", "document", ":(glob).ai/repo/adrs/*.md"))
        repo = support.make_repo(self, files={
            MANIFEST: manifest, SOURCES: sources, "notes/a@\u00b2": "# Sup\n\nsup\n",
            ".ai/repo/adrs/\u0663-ind.md": "# Ind\n\nind\n"}, skeleton=False)
        srv = support.HttpServer(repo)
        self.addCleanup(srv.stop)
        for identity in ("notes/a@\u00b2", ".ai/repo/adrs/\u0663-ind.md"):
            uri = "majordomus://document/" + identity
            for path in ("/ui/", "/ui/kind/document", "/ui/search?q=sup+ind",
                         "/ui/object?uri=" + urllib.parse.quote(uri, safe="")):
                with self.subTest(path=path):
                    status, _, text = http(srv, path)
                    self.assertEqual(status, 200, text[:300])
                    if path.startswith("/ui/object"):
                        self.assertIn(identity, text)


# ------------------------------------------------------------------------------------------
# What the fuzz suite (tests/fuzz.py) found, each a named regression test
# ------------------------------------------------------------------------------------------

class FuzzFoundTest(unittest.TestCase):
    """Each falsifying example tests/fuzz.py reported (against the build before §25),
    shrunk as Hypothesis gave it, in process."""

    @classmethod
    def setUpClass(cls):
        import majordomus
        cls.m = majordomus

    def test_subset_text_deep_text_990_with_a_long_leaf(self):
        """subset-text: `deep_text(990)`, a mapping 990 levels deep whose leaf is 4,400
        digits: ValueError out of int() (and past 1,000 levels, RecursionError)."""
        m = self.m
        text = "a:\n" + "".join("  " * i + "n:\n" for i in range(1, 990)) + \
            "  " * 990 + "leaf: " + "9" * 4400 + "\n"
        tree = m.parse_subset(text)
        node = tree["a"]
        while "n" in node:
            node = node["n"]
        self.assertEqual(node, {"leaf": "9" * 4400})
        self.assertEqual(len(m.key_paths(tree)), 1)

    def test_jsonrpc_id_inf(self):
        """jsonrpc: `{"jsonrpc": "2.0", "id": inf}` (sent as 1e400): the answer held
        Infinity, which is not JSON."""
        m = self.m
        frame = m._frame(None, error=m.BAD_ID)
        self.assertEqual(json.loads(frame), {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "invalid id: a number JSON cannot carry back (not "
                                       "finite)"}})
        for line in (b'{"jsonrpc":"2.0","id":1e400}', b'{"jsonrpc":"2.0","id":-1e400,'
                     b'"method":"ping"}', b'{"jsonrpc":"2.0","id":[1e400],"method":"ping"}'):
            with self.subTest(line=line):
                answer = self.m.dispatch(None, None, self.m.json_loads(line.decode()))
                self.assertEqual(strict_json(answer)["id"], None)

    def test_http_head_host_leading_hyphen(self):
        """http-head: Host `-a.localhost` was admitted (a DNS label starts with a letter or
        a digit)."""
        self.assertFalse(self.m._host_allowed("-a.localhost"))
        self.assertFalse(self.m._host_allowed("a-.localhost:8741"))
        self.assertTrue(self.m._host_allowed("a-b.localhost:8741"))

    def test_http_head_host_port_99999(self):
        """http-head: Host `localhost:99999` was admitted (a port is at most 65535)."""
        self.assertFalse(self.m._host_allowed("localhost:99999"))
        self.assertTrue(self.m._host_allowed("localhost:65535"))


if __name__ == "__main__":
    unittest.main()
