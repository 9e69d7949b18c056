"""The brief (SPEC §26): one answer on MCP (both eras), HTTP and the CLI for every kind of
path (a new file in a governed folder and in a new folder, an existing file, a folder, a
path outside .ai/, a refused path); a layer in any state (a broken `tracks`, a cycle: an
answer, degraded, with the problems); what is left out and why (deprecated, superseded,
the budget); the rules in force and their order; the line budget, never exceeded (a
property checked on generated briefs too); --strict; the instructions; a live edit.

Every layer here is written by the test (plain-clone safe)."""
import json
import os
import random
import re
import time
import unittest
import urllib.parse

from tests import support
from tests.test_mcp_modern import modern

import majordomus as mj

MANIFEST = support.manifest_yaml("policy", "profiles", "rules", "knowledge",
                                documents="README.md")
SOURCES = support.sources_yaml(
    ("policy", "policy", ":(glob).ai/repo/policy.yaml", True),
    ("profile", "profile", ":(glob).ai/repo/profiles/*.yaml"),
    ("rule", "rule", ":(glob).ai/repo/rules/**/*.md"),
    ("root", "document", ":(glob).ai/*.md"),
    ("repo", "document", ":(glob).ai/repo/*.md"),
    ("areas", "document", ":(glob).ai/repo/areas/**/*.md"))
POLICY = """version: 1
context:
  builder_budget_lines: %d
profiles:
  default: implementation
projections:
  - provider: agents
    target: AGENTS.md
"""
PROFILE = "name: implementation\ndescription: build a described feature\n"


def cdoc(id, scope="subtree", *lines, body=None, status="active", composition="extend"):
    front = ["schema: context/v1", "id: %s" % id, "kind: context", "title: Context %s" % id,
             "description: What %s describes." % id, "status: %s" % status,
             "scope: %s" % scope, 'providers: ["*"]', "composition: %s" % composition,
             "order: 100"] + list(lines)
    return "---\n%s\n---\n\n%s" % ("\n".join(front), body or "# %s\n\nThe text of %s.\n" % (id, id))


def rule(id, version, status="active", klass=None, statement=None):
    front = ["id: %s" % id, "version: %d" % version, "kind: rule", "title: Rule %s v%d" % (
        id, version), "description: What %s v%d asks." % (id, version)]
    if statement is not None:
        front.append("statement: %s" % statement)
    if status is not None:
        front.append("status: %s" % status)
    if klass is not None:
        front.append("class: %s" % klass)
    return "---\n%s\n---\n\n# Rule %s\n\nBody of %s v%d.\n" % ("\n".join(front), id, id, version)


R = ".ai/repo/rules/"


def layer(budget=300, extra=None):
    """The files of a small layer: four nested context documents over the rules, a tree of
    areas with a replace, a deprecated document, a tracked folder outside .ai/, and rules
    of every status and class."""
    files = {
        ".ai/manifest.yaml": MANIFEST,
        ".ai/repo/knowledge/sources.yaml": SOURCES,
        ".ai/repo/policy.yaml": POLICY % budget,
        ".ai/repo/profiles/implementation.yaml": PROFILE,
        ".ai/README.md": cdoc("ai.layer"),
        ".ai/repo/README.md": cdoc("ai.repo"),
        R + "README.md": cdoc("ai.repo.rules", "subtree", "tracks: [src/governed]", body=(
            "# Rules\n\nEvery rule here follows project.alpha@1 and, where it applies, "
            "project.delta.\nNot a name: project.alphabet or xproject.gamma.\n")),
        R + "project/README.md": cdoc("ai.repo.rules.project"),
        ".ai/repo/areas/README.md": cdoc("ai.repo.areas"),
        ".ai/repo/areas/sub/README.md": cdoc("ai.repo.areas.sub", "subtree",
                                             "supersedes: [ai.repo.areas]",
                                             composition="replace"),
        ".ai/repo/areas/sub/legacy.md": cdoc("ai.repo.areas.sub.legacy", "directory",
                                             status="deprecated"),
        R + "project/alpha.v1.md": rule("project.alpha", 1, klass="blocking"),
        R + "project/alpha.v2.md": rule("project.alpha", 2, klass="blocking",
                                        statement="Alpha, second version."),
        R + "project/beta.v1.md": rule("project.beta", 1, status="deprecated", klass="blocking"),
        R + "project/gamma.v1.md": rule("project.gamma", 1, status=None),
        R + "project/delta.v1.md": rule("project.delta", 1, klass="advisory"),
        R + "project/epsilon.v1.md": rule("project.epsilon", 1, klass="blocking"),
        R + "project/zeta.v1.md": rule("project.zeta", 1, status="proposed", klass="blocking"),
        "src/governed/existing.py": "x = 1\n",
        "src/other/existing.py": "y = 2\n",
    }
    files.update(extra or {})
    return files


def make(case, budget=300, extra=None):
    return support.make_repo(case, files=layer(budget, extra), skeleton=False)


def uri(kind, identity):
    return "majordomus://%s/%s" % (kind, identity)


CHAIN_RULES = ["ai.layer", "ai.repo", "ai.repo.rules", "ai.repo.rules.project"]
# (path, exists, directory, chain ids)
PATHS = [
    (R + "project/new-rule.v1.md", False, R + "project", CHAIN_RULES),       # new, governed
    (R + "project/sub/deeper/x.md", False, R + "project/sub/deeper", CHAIN_RULES),  # new folder
    (R + "project/alpha.v1.md", True, R + "project", CHAIN_RULES),            # existing file
    (".ai/repo/rules", True, ".ai/repo/rules", CHAIN_RULES[:3]),              # a folder
    ("src/governed/new.py", False, "src/governed", ["ai.layer", "ai.repo.rules"]),  # outside
    ("src/other/existing.py", True, "src/other", ["ai.layer"]),
]
REFUSED = ["../outside.py", "/etc/passwd", "src/../../x"]


def cli_brief(repo, path, *args, via="pyz"):
    return support.run(["brief", path] + list(args), repo, via=via)


def cli_json(case, repo, path, *args):
    p = cli_brief(repo, path, "--format", "json", *args)
    case.assertEqual(p.returncode, 0, p.stderr)
    return json.loads(p.stdout.decode("utf-8"))


def check_budget(case, value, text):
    """used_lines is the text's line count, within the budget; a cut body ends with the
    pointer to the rest."""
    case.assertEqual(text.count("\n"), value["used_lines"], text)
    case.assertTrue(text.endswith("\n"))
    case.assertLessEqual(value["used_lines"], value["budget_lines"])
    for doc in value["documents"]:
        last = doc["body"].split("\n")[-1]
        if last.startswith("\u2026 ("):
            case.assertRegex(last, r"^\u2026 \(\d+ more lines: majordomus_get %s\)$"
                             % re.escape(doc["uri"]))
            case.assertIn(last, text)


class OneAnswerTest(unittest.TestCase, support.ToolCalls):
    """Every kind of path, the same answer on MCP (legacy and 2026-07-28), HTTP and the CLI;
    the MCP text is the CLI's Markdown."""

    @classmethod
    def setUpClass(cls):
        scope = support._ClassScope(cls)
        cls.repo = support.make_repo(scope, files=layer(), skeleton=False)
        cls.s = support.class_session(cls, cls.repo, version="2025-06-18")
        cls.http = support.class_server(cls, cls.repo)

    def brief_everywhere(self, arguments):
        """(structuredContent, text) after checking the four interfaces give one answer."""
        legacy = self.call("majordomus_brief", arguments)
        self.assertIs(legacy["isError"], False, legacy)
        value, text = legacy["structuredContent"], legacy["content"][0]["text"]
        now = self.rpc_ok("tools/call", modern({"name": "majordomus_brief",
                                                "arguments": arguments}))
        self.assertEqual(now["structuredContent"], value)
        self.assertEqual(now["content"][0]["text"], text)
        query = urllib.parse.urlencode(arguments)
        status, body = self.http.get_json("/api/v1/brief?" + query)
        self.assertEqual(status, 200, body)
        self.assertEqual(body, value)
        args = []
        for key, option in (("intent", "--intent"), ("budget_lines", "--budget-lines")):
            if key in arguments:
                args += [option, str(arguments[key])]
        self.assertEqual(cli_json(self, self.repo, arguments["path"], *args), value)
        p = cli_brief(self.repo, arguments["path"], *args)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.decode("utf-8"), text)
        check_budget(self, value, text)
        return value, text

    def test_every_kind_of_path(self):
        for path, exists, directory, chain in PATHS:
            with self.subTest(path=path):
                value, text = self.brief_everywhere({"path": path})
                self.assertEqual(list(value), [
                    "schema", "target", "directory", "exists", "degraded", "problems",
                    "fingerprint", "budget_lines", "used_lines", "documents", "rules",
                    "profile", "related", "left_out"])
                self.assertEqual((value["schema"], value["target"], value["directory"],
                                  value["exists"], value["degraded"], value["problems"]),
                                 ("brief/v1", path, directory, exists, False, []))
                self.assertEqual([d["id"] for d in value["documents"]], chain)
                self.assertEqual(value["profile"], {"uri": uri("profile", "implementation"),
                                                    "title": "implementation"})
                self.assertEqual(value["budget_lines"], 300)
                self.assertTrue(text.startswith("# Brief: `%s`\n" % path), text)
                for doc in value["documents"]:
                    if doc["id"] != "ai.repo.rules":
                        self.assertIn("The text of %s." % doc["id"], doc["body"])
                    self.assertIn(doc["uri"], text)
                if exists:
                    # an existing path on a valid tree: the chain is context.resolve's
                    resolved = self.tool("majordomus_context", {"path": path})
                    self.assertEqual([{k: v for k, v in d.items() if k != "body"}
                                      for d in value["documents"]], resolved["documents"])
                    self.assertEqual(value["fingerprint"], resolved["fingerprint"])

    def test_refused_paths(self):
        for path in REFUSED:
            with self.subTest(path=path):
                message = self.tool_error("majordomus_brief", {"path": path})
                self.assertTrue(message.startswith("refused: refused-path "), message)
                self.assertEqual(self.tool_error("majordomus_context", {"path": path}), message)
                status, body = self.http.get_json("/api/v1/brief?" + urllib.parse.urlencode(
                    {"path": path}))
                self.assertEqual((status, body["error"]["code"]), (422, "refused"), body)
                p = cli_brief(self.repo, path)
                self.assertEqual((p.returncode, p.stdout), (15, b""), p.stderr)
                self.assertEqual(p.stderr.decode("utf-8"), "majordomus: %s\n"
                                 % message[len("refused: "):])
        # a folder whose real place is outside the repository: refused, even for a new file
        outside = support.tempdir(self)
        os.symlink(outside, os.path.join(self.repo, "link"))
        message = self.tool_error("majordomus_brief", {"path": "link/new/file.py"})
        self.assertEqual(message, "refused: refused-path 'link/new/file.py' resolves outside "
                         "the repository")
        self.assertEqual(cli_brief(self.repo, "link/new/file.py").returncode, 15)
        p = support.run(["brief", ""], self.repo)
        self.assertEqual(p.returncode, 2, p.stderr)

    def test_rules_in_force(self):
        value, text = self.brief_everywhere({"path": R + "project/new.v1.md"})
        rules = value["rules"]
        # only active (or no status), only the highest version, blocking first, then by id
        self.assertEqual([r["uri"] for r in rules], [
            uri("rule", "project.alpha@2"), uri("rule", "project.epsilon@1"),
            uri("rule", "project.delta@1"), uri("rule", "project.gamma@1")])
        self.assertEqual(rules[0], {"uri": uri("rule", "project.alpha@2"), "id": "project.alpha",
                                    "version": 2, "title": "Rule project.alpha v2",
                                    "class": "blocking", "statement": "Alpha, second version.",
                                    "named_by": ["ai.repo.rules"]})
        self.assertEqual([r["named_by"] for r in rules],
                         [["ai.repo.rules"], [], ["ai.repo.rules"], []])
        self.assertEqual(rules[3]["statement"], "What project.gamma v1 asks.")
        self.assertIsNone(rules[3]["class"])
        # the text: named by the chain first, then blocking, then the rest
        order = [text.index(u) for u in (uri("rule", "project.alpha@2"),
                                         uri("rule", "project.delta@1"),
                                         uri("rule", "project.epsilon@1"),
                                         uri("rule", "project.gamma@1"))]
        self.assertEqual(order, sorted(order))
        self.assertLess(order[-1], text.index("## Documents"))
        # documents from the most specific to the least
        docs = [text.index("### Context %s " % i) for i in CHAIN_RULES[::-1]]
        self.assertEqual(docs, sorted(docs))

    def test_left_out_deprecated_and_superseded(self):
        value, text = self.brief_everywhere({"path": ".ai/repo/areas/sub/new.md"})
        self.assertEqual([d["id"] for d in value["documents"]],
                         ["ai.layer", "ai.repo", "ai.repo.areas.sub"])
        self.assertEqual(value["left_out"], [
            {"uri": uri("context", "ai.repo.areas.sub.legacy"),
             "reason": "deprecated; discovered and never applied"},
            {"uri": uri("context", "ai.repo.areas"),
             "reason": "superseded by ai.repo.areas.sub (.ai/repo/areas/sub/README.md)"}])
        resolved = self.tool("majordomus_context", {"path": ".ai/repo/areas/sub"})
        self.assertEqual([(e["uri"], e["reason"]) for e in resolved["excluded"]],
                         [(e["uri"], e["reason"]) for e in value["left_out"]])
        self.assertIn("## Left out\n- %s: deprecated" % uri("context", "ai.repo.areas.sub.legacy"),
                      text)

    def test_intent_related(self):
        value, text = self.brief_everywhere({"path": "src/other/new.py",
                                             "intent": "the text of ai.repo.areas.sub"})
        related = [hit["uri"] for hit in value["related"]]
        self.assertTrue(related, value)
        self.assertLessEqual(len(related), 5)
        held = {d["uri"] for d in value["documents"]} | {r["uri"] for r in value["rules"]}
        self.assertFalse(held & set(related))
        self.assertTrue(all(not u.startswith("majordomus://rule/") for u in related))
        self.assertEqual(related[0], uri("context", "ai.repo.areas.sub"))
        self.assertEqual(list(value["related"][0]), ["uri", "kind", "title", "snippet"])
        self.assertIn("## Related to the intent\n- [Context ai.repo.areas.sub](%s)"
                      % related[0], text)
        without = self.call("majordomus_brief", {"path": "src/other/new.py"})
        self.assertEqual(without["structuredContent"]["related"], [])


class BudgetTest(unittest.TestCase):
    """Budgets of 20, 300 and 5,000 lines over a layer of many rules and a long document:
    used_lines within the budget, cut bodies with the pointer, everything dropped in
    left_out; the policy's default."""

    @classmethod
    def setUpClass(cls):
        extra = {R + "project/gen-%03d.v1.md" % n: rule("project.gen-%03d" % n, 1,
                                                        klass="blocking" if n % 3 else None)
                 for n in range(150)}
        extra[R + "project/README.md"] = cdoc("ai.repo.rules.project", body="# Project\n\n" + "".join(
            "Line %d of a long document.\n" % n for n in range(400)))
        cls.repo = support.make_repo(support._ClassScope(cls), files=layer(120, extra),
                                     skeleton=False)

    def test_budgets(self):
        chain_uris = {uri("context", i) for i in CHAIN_RULES}
        for budget in (20, 300, 5000, None):
            with self.subTest(budget=budget):
                args = [] if budget is None else ["--budget-lines", str(budget)]
                value = cli_json(self, self.repo, R + "project/x.md", *args)
                text = cli_brief(self.repo, R + "project/x.md", *args).stdout.decode("utf-8")
                self.assertEqual(value["budget_lines"], budget or 120)   # the policy's
                check_budget(self, value, text)
                budgeted = [e["uri"] for e in value["left_out"] if e["reason"] == "budget"]
                self.assertEqual(len(budgeted), len(set(budgeted)))
                shown_rules = {r["uri"] for r in value["rules"]}
                self.assertEqual(len(shown_rules | set(budgeted) - chain_uris), 154)
                self.assertFalse(shown_rules & set(budgeted))
                docs = {d["uri"] for d in value["documents"]}
                self.assertEqual(docs | (set(budgeted) & chain_uris), chain_uris)
                cut = [d for d in value["documents"] if "more lines: majordomus_get" in d["body"]]
                if budget == 5000:
                    self.assertEqual((budgeted, cut), ([], []))
                    self.assertNotIn("## Left out", text)
                else:
                    self.assertTrue(budgeted)
                    self.assertIn("## Left out", text)
                if budget in (20, 300):
                    self.assertEqual(value["used_lines"], budget)
                if budget == 300:
                    # the long body is the most specific: cut, pointer and count exact
                    doc = next(d for d in value["documents"] if d["id"] == "ai.repo.rules.project")
                    shown = doc["body"].split("\n")
                    self.assertEqual(shown[-1], "\u2026 (%d more lines: majordomus_get %s)"
                                     % (402 - (len(shown) - 1), doc["uri"]))

    def test_out_of_bounds(self):
        for bad in ("19", "5001"):
            p = cli_brief(self.repo, "x", "--budget-lines", bad)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(b"budget_lines", p.stderr)


def synthetic(rnd):
    """A brief's parts drawn at random (rnd): problems, a chain with bodies, rules, related
    and excluded documents, of any size, for the property below."""
    problems = [{"code": "broken_reference", "path": rnd.choice([None, "p/%d" % n]),
                 "message": "m\n%d" % n} for n in range(rnd.choice([0, 0, 1, 5, 11, 40]))]
    docs = []
    for n in range(rnd.choice([0, 1, 3, 8, 30])):
        body = ["l%d %s" % (k, "x" * rnd.randint(0, 90)) for k in range(rnd.choice(
            [0, 1, 2, 5, 40, 400]))]
        docs.append({"index": n + 1, "id": "d%d" % n, "uri": "majordomus://context/d%d" % n,
                     "path": ".ai/d%d/README.md" % n, "title": "T\n%d" % n, "reason": "r",
                     "body": body})
    rules = [{"uri": "majordomus://rule/r%d@1" % n, "id": "r%d" % n, "version": 1,
              "title": "Rule\n%d" % n, "class": rnd.choice(["blocking", None, "advisory"]),
              "statement": rnd.choice([None, "s " * rnd.randint(1, 300)]),
              "named_by": rnd.choice([[], [], ["d0"]])}
             for n in range(rnd.choice([0, 1, 10, 64, 500, 3000]))]
    rules.sort(key=lambda r: (r["class"] != "blocking", r["id"]))
    related = [{"uri": "majordomus://document/x%d" % n, "kind": "document", "title": "X",
                "snippet": "s"} for n in range(rnd.choice([0, 5]))]
    excluded = [{"uri": "majordomus://context/e%d" % n, "reason": "deprecated"}
                for n in range(rnd.choice([0, 0, 2, 50]))]
    return problems, docs, rules, related, excluded


class BudgetPropertyTest(unittest.TestCase):
    """The property the budget holds whatever the brief holds: the text is never longer
    than the budget, its line count is used_lines, and every rule, document and related
    hit is either in the brief or in left_out (seeded; in process, over the two functions
    that fill and render the brief)."""

    def test_never_over_budget(self):
        rnd = random.Random(26)
        for case in range(400):
            problems, docs, rules, related, excluded = synthetic(rnd)
            budget = rnd.choice([20, 21, 22, 25, 30, 40, 77, 300, rnd.randint(20, 5000), 5000])
            value = {"schema": "brief/v1", "target": "t\nx", "directory": ".",
                     "exists": rnd.random() < 0.5, "degraded": bool(problems),
                     "problems": problems, "fingerprint": "0" * 64, "budget_lines": budget,
                     "used_lines": 0, "documents": [], "rules": [],
                     "profile": rnd.choice([None, {"uri": "majordomus://profile/p",
                                                   "title": "p"}]),
                     "related": [], "left_out": list(excluded)}
            named = {r["id"]: r["named_by"] for r in rules if r["named_by"]}
            plain = [{k: v for k, v in r.items() if k != "named_by"} for r in rules]
            mj._fit(value, [dict(d) for d in docs], plain, named, related)
            text = mj.brief_text(value)
            used = text.count("\n")
            self.assertLessEqual(used, budget, (case, budget))
            listed = {r["uri"] for r in value["rules"]} | {d["uri"] for d in value[
                "documents"]} | {h["uri"] for h in value["related"]}
            dropped = {e["uri"] for e in value["left_out"][len(excluded):]}
            self.assertFalse(listed & dropped, case)
            self.assertEqual(listed | dropped, {r["uri"] for r in rules} | {
                d["uri"] for d in docs} | {h["uri"] for h in related}, case)
            self.assertTrue(all(e["reason"] == "budget" for e in value["left_out"][
                len(excluded):]))
            for doc in value["documents"]:
                whole = [d for d in docs if d["uri"] == doc["uri"]][0]["body"]
                shown = doc["body"].split("\n") if doc["body"] else []
                if shown != whole:
                    self.assertEqual(shown[-1], "\u2026 (%d more lines: majordomus_get %s)"
                                     % (len(whole) - len(shown) + 1, doc["uri"]))
                    self.assertEqual(shown[:-1], whole[:len(shown) - 1])
            if not value["left_out"]:
                self.assertNotIn("## Left out", text)


class StateTest(unittest.TestCase):
    """A layer in any state: a broken `tracks` and a cycle answer degraded, with the
    problems, where context.resolve refuses; --strict refuses as context resolve does;
    --inspect and the overview say so."""

    def test_broken_tracks_and_cycle(self):
        broken = {R + "README.md": cdoc("ai.repo.rules", "subtree",
                                        "tracks: [src/governed, lib/gone.sh]")}
        cycle = {".ai/repo/areas/sub/README.md": cdoc(
            "ai.repo.areas.sub", "subtree", "supersedes: [ai.repo.areas.sub]",
            composition="replace")}
        for label, extra, problem in (
                ("broken tracks", broken, {"code": "broken_reference", "path": R + "README.md",
                                           "message": "tracks 'lib/gone.sh', which matches no "
                                                      "tracked file"}),
                ("cycle", cycle, {"code": "cycle", "path": ".ai/repo/areas/sub/README.md",
                                  "message": "supersedes itself"})):
            with self.subTest(label):
                repo = make(self, extra=extra)
                for path in (R + "project/new.md", "src/governed/new.py", ".ai/repo/areas/sub"):
                    value = cli_json(self, repo, path)
                    self.assertIs(value["degraded"], True)
                    self.assertIn(problem, value["problems"])
                    self.assertTrue(value["documents"], value)
                    text = cli_brief(repo, path).stdout.decode("utf-8")
                    self.assertIn("**Degraded**: the context tree does not validate (%d "
                                  "problem(s))" % len(value["problems"]), text)
                    self.assertIn(problem["message"], text)
                p = support.run(["context", "resolve", R + "project"], repo)
                self.assertEqual(p.returncode, 10, p.stderr)
                # --strict refuses the brief exactly as it refuses context resolve
                strict = cli_brief(repo, R + "project/new.md", "--strict")
                resolve = support.run(["context", "resolve", R + "project", "--strict"], repo)
                self.assertEqual((strict.returncode, strict.stdout, strict.stderr),
                                 (resolve.returncode, b"", resolve.stderr))
                self.assertEqual(strict.returncode, 10)
                inspect = support.run(["mcp", "--inspect"], repo).stdout.decode("utf-8")
                self.assertIn("\ncontext: %d problem(s); resolve refuses, brief answers "
                              "degraded\n" % len(value["problems"]), inspect)
        valid = make(self)
        self.assertNotIn("context:", support.run(["mcp", "--inspect"], valid).stdout.decode())
        self.assertEqual(cli_brief(valid, "x", "--strict").returncode, 0)

    def test_overview_and_page(self):
        repo = make(self, extra={R + "README.md": cdoc("ai.repo.rules", "subtree",
                                                        "tracks: [lib/gone.sh]")})
        server = support.HttpServer(repo)
        self.addCleanup(server.stop)
        status, _, body = server.request("GET", "/ui/")
        page = body.decode("utf-8")
        self.assertIn("context: 1 problem(s); resolve refuses, brief answers degraded", page)
        self.assertIn('action="/ui/context"', page)   # the page of the brief and the explain
        status, headers, body = server.request(
            "GET", "/ui/brief?path=" + urllib.parse.quote(R + "project/new.md"))
        page = body.decode("utf-8")
        self.assertEqual(status, 200)
        self.assertIn("default-src 'none'", headers["content-security-policy"])
        self.assertNotIn("<script>", page)
        self.assertIn('href="/ui/object?uri=%s"' % urllib.parse.quote(
            uri("rule", "project.alpha@2"), safe=""), page)
        # the body rendered, the ids it names linked (as on every page)
        self.assertIn("The text of ai.repo.rules.project.", re.sub(r"<[^>]+>", "", page))
        self.assertIn("Degraded: 1 problem(s)", page)
        status, _, body = server.request("GET", "/ui/brief?path=..%2Fx")
        self.assertEqual(status, 422)
        self.assertIn("refused-path", body.decode("utf-8"))
        status, _, body = server.request("GET", "/ui/object?uri=" + urllib.parse.quote(
            uri("context", "ai.repo.rules.project"), safe=""))
        self.assertIn('href="/ui/context?path=.ai%2Frepo%2Frules%2Fproject"', body.decode())
        status, _, body = server.request("GET", "/ui/object?uri=" + urllib.parse.quote(
            uri("rule", "project.alpha@2"), safe=""))
        self.assertNotIn("/ui/context?path=", body.decode())


class InstructionsTest(unittest.TestCase):
    def test_one_sentence_under_600_characters(self):
        for counts in ((0, 0, 0, 0, "ok", 0), (99999, 99999, 99, 99999, "degraded", 9999)):
            text = mj.instructions(*counts)
            self.assertLess(len(text), 600, text)
            self.assertEqual(text.count("majordomus_brief"), 1)
            self.assertIn(" call majordomus_brief with its path and your intent.", text)
        repo = make(self)
        s = support.McpSession(repo)
        self.addCleanup(s.kill)
        answer = s.initialize(initialized=False)
        self.assertIn("majordomus_brief", answer["result"]["instructions"])
        self.assertLess(len(answer["result"]["instructions"]), 600)
        tools = {t["name"]: t for t in s.request("tools/list")["result"]["tools"]}
        brief = tools["majordomus_brief"]
        self.assertEqual(brief["title"], "Brief me before I work on a path")
        self.assertIn("before you create or change a file", brief["description"])
        self.assertEqual(brief["inputSchema"]["required"], ["path"])
        self.assertEqual(sorted(brief["inputSchema"]["properties"]),
                         ["audience", "budget_lines", "intent", "path", "provider"])


class LiveTest(unittest.TestCase, support.ToolCalls):
    """A README and a rule edited under a running server: the next brief shows them."""

    def test_edits_change_the_next_brief(self):
        repo = make(self)
        self.s = support.McpSession(repo)
        self.addCleanup(self.s.kill)
        self.s.initialize(initialized=False)
        path = R + "project/new.md"
        before = self.call("majordomus_brief", {"path": path})["structuredContent"]
        support.write(repo, R + "project/README.md", cdoc(
            "ai.repo.rules.project", body="# Project\n\nEdited while the server runs.\n"))
        support.write(repo, R + "project/epsilon.v1.md", rule(
            "project.epsilon", 1, klass="blocking", statement="Epsilon, edited live."))
        deadline = time.time() + 20     # the sweep runs at most once a second (§15.2)
        while True:
            after = self.call("majordomus_brief", {"path": path})
            value, text = after["structuredContent"], after["content"][0]["text"]
            doc = [d for d in value["documents"] if d["id"] == "ai.repo.rules.project"][0]
            epsilon = [r for r in value["rules"] if r["id"] == "project.epsilon"][0]
            if ("Edited while" in doc["body"] and "edited live" in epsilon["statement"]
                    or time.time() > deadline):
                break
            time.sleep(0.1)
        self.assertIn("Edited while the server runs.", doc["body"])
        self.assertNotEqual(value["fingerprint"], before["fingerprint"])
        self.assertEqual(epsilon["statement"], "Epsilon, edited live.")
        self.assertIn("Epsilon, edited live.", text)


if __name__ == "__main__":
    unittest.main()
