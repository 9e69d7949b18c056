"""Context resolution (SPEC §20): the contract checks of §20.1 each on a small layer of its
own, every refusal and error of §20.2 on MCP, HTTP and the CLI, one answer on all three,
a README edited under a running `mcp`, and `tracks` matching proven against git itself.
(The differential test against the shell tool is tests/context_differential.py.)"""
import json
import os
import random
import time
import unittest
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

from tests import support

import majordomus as mj

# A layer whose folders explain themselves (tests/fixtures/context/, written for these tests
# in the shape of the shell tool's fixture-69): a manifest naming README.md as the context
# documents, a policy and three READMEs (ai.layer final, ai.repo, ai.repo.rules).
CONTEXT_LAYER = os.path.join(support.ROOT, "tests", "fixtures", "context")
SOURCES = support.sources_yaml(("policy", "policy", ":(glob).ai/repo/policy.yaml", True),
                              ("layer", "document", ":(glob).ai/**/*.md"))
SEEDED = ["ai.layer", "ai.repo", "ai.repo.rules"]
A = ".ai/repo/areas"


def cdoc(id, scope="subtree", order=100, *lines, drop=()):
    """A context document's text: the contract's minimal front matter (a line whose key is
    in `drop` left out; `lines` added at the end of the front matter)."""
    fields = [("schema", "context/v1"), ("id", id), ("kind", "context"),
              ("title", "Context %s" % id), ("description", "What %s describes." % id),
              ("status", "active"), ("scope", scope), ("providers", '["*"]'),
              ("composition", "extend"), ("order", str(order))]
    front = ["%s: %s" % (k, v) for k, v in fields if k not in drop] + list(lines)
    return "---\n%s\n---\n\n# %s\n" % ("\n".join(front), id)


def layer_repo(case, files=None):
    """A scratch repository: the context test layer (a manifest with context.documents:
    [README.md], a policy, three READMEs), a sources file that discovers every Markdown
    file under .ai/, and `files`; committed."""
    repo = support.make_repo(case, skeleton=False, commit=False)
    support.copy_tree(CONTEXT_LAYER, repo)
    support.write(repo, ".gitignore", support.LAYER_GITIGNORE)
    support.write(repo, ".ai/repo/knowledge/sources.yaml", SOURCES)
    for rel, data in (files or {}).items():
        support.write(repo, rel, data)
    support.commit_all(repo)
    return repo


def inspect_json(repo):
    p = support.run(["mcp", "--inspect", "--format", "json"], repo)
    return json.loads(p.stdout.decode("utf-8"))["repository"], p.returncode


def cli(repo, *args):
    return support.run(["context"] + list(args), repo)


class ContractMessagesTest(unittest.TestCase):
    """§20.1: each message on its own small layer. The first group excludes the document;
    the second keeps it served and degrades the index."""

    FIRST = [  # (files, path, code, message)
        ({A + "/README.md": cdoc("ai.repo.areas", drop=("title",))}, "lacks title"),
        ({A + "/README.md": cdoc("ai.repo.areas", drop=("order",))}, "lacks order"),
        ({A + "/README.md": cdoc("ai.repo.areas", drop=("providers",))},
         'lacks providers (write providers: ["*"] for every provider)'),
        # the schema makes it one whatever its kind says (the shell tool reads it so)
        ({A + "/README.md": cdoc("ai.repo.areas", drop=("kind",))}, "lacks kind"),
        ({A + "/README.md": cdoc("ai.repo.areas").replace("kind: context", "kind: note")},
         "kind is note, not context"),
        ({A + "/README.md": cdoc("Not-Lower")},
         "id 'Not-Lower' is not a lower-case dotted identifier"),
        ({A + "/README.md": cdoc("ai.repo.areas").replace("status: active", "status: gone")},
         "status 'gone' is neither active nor deprecated"),
        ({A + "/README.md": cdoc("ai.repo.areas", "everywhere")},
         "scope 'everywhere' is not directory, subtree or explicit"),
        ({A + "/README.md": cdoc("ai.repo.areas").replace("composition: extend",
                                                          "composition: merge")},
         "composition 'merge' is not extend, replace or final"),
        ({A + "/README.md": cdoc("ai.repo.areas", "subtree", "first")},
         "order 'first' is not an integer"),
        ({A + "/README.md": cdoc("ai.repo.areas", "explicit")}, "scope explicit names no paths"),
        ({A + "/README.md": cdoc("ai.repo.areas", "subtree", 1, "paths: [.ai]")},
         "paths are for scope explicit only (scope is subtree)"),
        ({A + "/README.md": cdoc("ai.repo.areas").replace("composition: extend",
                                                          "composition: replace")},
         "composition replace names nothing in supersedes"),
        ({A + "/README.md": cdoc("ai.repo.areas", "subtree", 1, "supersedes: [ai.repo]")},
         "supersedes is for composition replace only (composition is extend)"),
        ({A + "/README.md": cdoc("ai.repo.areas", "subtree", 1, "audience: [robot]")},
         "audience 'robot' is neither human nor agent"),
        ({A + "/README.md": "# stray\n"},
         "carries no front matter, and the manifest names README.md as a context document "
         "(context.documents)"),
        ({A + "/README.md": "---\nkind: rule\nid: x\n---\n# x\n"},
         "front matter is not the context contract (kind 'rule'), and the manifest names "
         "README.md as a context document"),
        ({A + "/README.md": "---\ntitle: plain\n---\n# x\n"},
         "front matter is not the context contract (kind 'absent'), and the manifest names "
         "README.md as a context document"),
    ]
    PROVIDER = ({A + "/README.md": cdoc("ai.repo.areas").replace('providers: ["*"]',
                                                                 "providers: [nonesuch]")},
                "unknown_provider", "provider 'nonesuch' is not one the policy projects "
                "(have: agents claude-code gemini )")
    SECOND = [  # (files, path, code, message)
        ({".ai/repo/x/guide.md": cdoc("ai.repo.x", "explicit", 1, "paths: [../up]")},
         ".ai/repo/x/guide.md", "broken_reference",
         "paths entry '../up' is not a repository-relative path"),
        ({".ai/repo/x/guide.md": cdoc("ai.repo.x", "explicit", 1, "paths: [lib]")},
         ".ai/repo/x/guide.md", "broken_reference", "paths entry 'lib' lies outside the tree .ai/"),
        ({".ai/repo/x/guide.md": cdoc("ai.repo.x", "explicit", 1, "paths: [.ai/repo/missing]")},
         ".ai/repo/x/guide.md", "broken_reference",
         "paths entry '.ai/repo/missing' is not a directory in this repository"),
        ({".ai/repo/x/guide.md": cdoc("ai.repo.x", "subtree", 1, "tracks: [nowhere/at/all]")},
         ".ai/repo/x/guide.md", "broken_reference",
         "tracks 'nowhere/at/all', which matches no tracked file"),
        ({".ai/repo/x/guide.md": cdoc("ai.repo.x", "subtree", 1, "composition: replace",
                                      "supersedes: [ai.nothing]", drop=("composition",))},
         ".ai/repo/x/guide.md", "broken_reference", "supersedes 'ai.nothing', which no "
         "document declares"),
        ({".ai/repo/x/guide.md": cdoc("ai.repo.x", "subtree", 1, "composition: replace",
                                      "supersedes: [ai.repo.y]", drop=("composition",)),
          ".ai/repo/y/guide.md": cdoc("ai.repo.y")},
         ".ai/repo/x/guide.md", "broken_reference", "supersedes 'ai.repo.y' at "
         ".ai/repo/y/guide.md, which is not in its ancestor chain; a document may only "
         "supersede what applies above it"),
        ({".ai/repo/x/guide.md": cdoc("ai.repo.x", "subtree", 1, "composition: replace",
                                      "supersedes: [ai.layer]", drop=("composition",))},
         ".ai/repo/x/guide.md", "illegal_override", "supersedes 'ai.layer', which is final; no "
         "descendant may weaken it"),
        ({".ai/repo/x/guide.md": cdoc("ai.repo.x", "subtree", 1, "composition: replace",
                                      "supersedes: [ai.repo.x]", drop=("composition",))},
         ".ai/repo/x/guide.md", "cycle", "supersedes itself"),
    ]

    def check_first(self, files, code, message):
        repo = layer_repo(self, files)
        report, rc = inspect_json(repo)
        self.assertEqual(rc, 10)
        self.assertIn({"severity": "error", "code": code, "path": A + "/README.md",
                       "message": message}, report["diagnostics"])
        self.assertEqual(report["context"], {"documents": 3, "problems": 1})
        p = support.run(["get", "majordomus://context/ai.repo.areas"], repo)
        self.assertEqual(p.returncode, 12, "an invalid document is excluded")

    def test_first_group_excludes_the_document(self):
        cases = [(f, "invalid_context", m) for f, m in self.FIRST] + [self.PROVIDER]
        with ThreadPoolExecutor(4) as pool:
            futures = [(m, pool.submit(self.check_first, f, c, m)) for f, c, m in cases]
            for message, future in futures:
                with self.subTest(message=message):
                    future.result()

    def check_second(self, files, path, code, message):
        repo = layer_repo(self, files)
        report, rc = inspect_json(repo)
        self.assertEqual(rc, 10)
        self.assertEqual(report["state"], "degraded")
        self.assertIn({"severity": "error", "code": code, "path": path, "message": message},
                      report["diagnostics"])
        p = support.run(["get", "majordomus://context/ai.repo.x"], repo)
        self.assertEqual(p.returncode, 0, "a document of the second group stays served")

    def test_second_group_keeps_the_document(self):
        with ThreadPoolExecutor(4) as pool:
            futures = [(c[3], pool.submit(self.check_second, *c)) for c in self.SECOND]
            for message, future in futures:
                with self.subTest(message=message):
                    future.result()

    def test_a_chain_that_returns(self):
        sup = ("composition: replace",)
        repo = layer_repo(self, {
            ".ai/repo/d/x.md": cdoc("ai.repo.d.x", "subtree", 1, *sup,
                                    "supersedes: [ai.repo.d.y]", drop=("composition",)),
            ".ai/repo/d/y.md": cdoc("ai.repo.d.y", "subtree", 1, *sup,
                                    "supersedes: [ai.repo.d.x]", drop=("composition",))})
        report, _ = inspect_json(repo)
        cycles = [(d["path"], d["message"]) for d in report["diagnostics"]
                  if d["code"] == "cycle"]
        self.assertEqual(cycles, [(".ai/repo/d/x.md", "supersedes chain returns to itself"),
                                  (".ai/repo/d/y.md", "supersedes chain returns to itself")])
        self.assertEqual(report["context"], {"documents": 5, "problems": 2})

    def test_duplicate_ids_and_contract_breaks_of_the_index(self):
        repo = layer_repo(self, {".ai/repo/x/a.md": cdoc("ai.twin"),
                                 ".ai/repo/x/b.md": cdoc("ai.twin"),
                                 ".ai/repo/y/c.md": cdoc("ai.y", "subtree", 1, "flavour: mint"),
                                 ".ai/repo/y/d.md": cdoc("ai.z").replace("context/v1",
                                                                         "context/v2")})
        report, _ = inspect_json(repo)
        codes = sorted((d["code"], d["path"]) for d in report["diagnostics"])
        self.assertEqual(codes, [("duplicate_identity", ".ai/repo/x/a.md"),
                                 ("duplicate_identity", ".ai/repo/x/b.md"),
                                 ("unknown_key", ".ai/repo/y/c.md"),
                                 ("unsupported_version", ".ai/repo/y/d.md")])
        self.assertEqual(report["context"], {"documents": 3, "problems": 4})
        p = cli(repo, "resolve", ".ai")
        self.assertEqual(p.returncode, 10)
        self.assertIn(b"duplicate_identity", p.stderr)

    def test_the_claimants_of_one_id_are_still_declared(self):
        """Two documents claiming one id are excluded, but the id is declared: a document
        that supersedes it has no broken_reference (the shell tool checks against the
        first claimant; a 300-tree differential run found the difference), and the
        claimants' own references are still checked."""
        repo = layer_repo(self, {
            ".ai/repo/a.md": cdoc("ai.twin"),
            ".ai/repo/b.md": cdoc("ai.twin", "subtree", 1, "tracks: [nowhere/at/all]"),
            ".ai/repo/x/guide.md": cdoc("ai.repo.x", "subtree", 1, "composition: replace",
                                        "supersedes: [ai.twin]", drop=("composition",))})
        report, _ = inspect_json(repo)
        codes = sorted((d["code"], d["path"], d["message"][:40]) for d in report["diagnostics"])
        self.assertEqual(codes, [
            ("broken_reference", ".ai/repo/b.md", "tracks 'nowhere/at/all', which matches n"),
            ("duplicate_identity", ".ai/repo/a.md", "majordomus://context/ai.twin is claimed "),
            ("duplicate_identity", ".ai/repo/b.md", "majordomus://context/ai.twin is claimed ")])
        self.assertEqual(report["context"], {"documents": 4, "problems": 3})

    def test_an_unrelated_error_is_no_context_problem(self):
        repo = layer_repo(self, {".ai/repo/notes.md": "---\ntitle: [unclosed\n  - x\n---\n"})
        report, rc = inspect_json(repo)
        self.assertEqual(report["state"], "degraded")
        self.assertEqual(report["context"], {"documents": 3, "problems": 0})
        self.assertEqual(cli(repo, "resolve", ".ai").returncode, 0)


class ResolutionTest(unittest.TestCase, support.ToolCalls):
    """§20.2 on every interface: the chain, the filters, and each refusal and error."""

    @classmethod
    def setUpClass(cls):
        files = {
            A + "/guide.md": cdoc("ai.repo.areas"),
            A + "/alpha/guide.md": cdoc("ai.repo.areas.alpha"),
            A + "/alpha/deep/guide.md": cdoc("ai.repo.areas.alpha.deep", "subtree", 100,
                                             "composition: replace",
                                             "supersedes: [ai.repo.areas.alpha]",
                                             drop=("composition",)),
            A + "/beta/guide.md": cdoc("ai.repo.areas.beta", "subtree", 100,
                                       "tracks: [lib/thing.sh]"),
            A + "/beta/claude.md": cdoc("ai.repo.areas.beta.claude", "subtree", 200,
                                        "audience: [agent]").replace('providers: ["*"]',
                                                                     "providers: [claude-code]"),
            A + "/beta/here.md": cdoc("ai.repo.areas.beta.here", "directory"),
            A + "/gamma/only.md": cdoc("ai.repo.areas.gamma", "explicit", 100,
                                       "paths: [.ai/repo/areas/alpha/deep]"),
            "lib/thing.sh": "x\n"}
        cls.repo = layer_repo(support._ClassScope(cls), files)
        cls.s = support.class_session(cls, cls.repo)
        cls.srv = support.class_server(cls, cls.repo)

    def chain(self, value):
        return [d["id"] for d in value["documents"]]

    def via_all(self, arguments):
        """The resolution from the tool, the REST route and the CLI's JSON: one answer."""
        tool = self.tool("majordomus_context", arguments)
        status, route = self.srv.get_json("/api/v1/context?" + urllib.parse.urlencode(arguments))
        self.assertEqual(status, 200, route)
        args = [arguments["path"], "--format", "json"]
        for key in ("provider", "audience"):
            if key in arguments:
                args += ["--" + key, arguments[key]]
        p = cli(self.repo, "resolve", *args)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(tool, route)
        self.assertEqual(tool, json.loads(p.stdout.decode("utf-8")))
        return tool

    def test_chains(self):
        expect = {
            A: SEEDED[:2] + ["ai.repo.areas"],
            A + "/alpha": SEEDED[:2] + ["ai.repo.areas", "ai.repo.areas.alpha"],
            A + "/alpha/deep": SEEDED[:2] + ["ai.repo.areas", "ai.repo.areas.alpha.deep",
                                            "ai.repo.areas.gamma"],
            A + "/alpha/guide.md": SEEDED[:2] + ["ai.repo.areas", "ai.repo.areas.alpha"],
            A + "/beta": SEEDED[:2] + ["ai.repo.areas", "ai.repo.areas.beta",
                                      "ai.repo.areas.beta.here", "ai.repo.areas.beta.claude"],
            A + "/gamma": SEEDED[:2] + ["ai.repo.areas"],
            ".": ["ai.layer"], "lib/thing.sh": ["ai.layer", "ai.repo.areas.beta"],
            "./.ai//repo/rules/": SEEDED,
        }
        for path, ids in expect.items():
            with self.subTest(path=path):
                self.assertEqual(self.chain(self.via_all({"path": path})), ids)

    def test_the_answer(self):
        value = self.via_all({"path": A + "/alpha/deep", "provider": "agents"})
        self.assertEqual(list(value), ["schema", "target", "directory", "provider", "audience",
                                       "fingerprint", "documents", "excluded"])
        self.assertEqual((value["schema"], value["target"], value["provider"], value["audience"]),
                         ("context/v1", A + "/alpha/deep", "agents", None))
        first = value["documents"][0]
        self.assertEqual(list(first), ["index", "id", "uri", "path", "dir", "depth", "scope",
                                       "composition", "order", "status", "title", "providers",
                                       "audience", "supersedes", "tracks", "paths", "sha256",
                                       "reason"])
        self.assertEqual((first["id"], first["uri"], first["composition"], first["reason"]),
                         ("ai.layer", "majordomus://context/ai.layer", "final",
                          "ancestor at depth 0 (scope subtree)"))
        self.assertEqual(value["excluded"], [
            {"id": "ai.repo.areas.alpha", "uri": "majordomus://context/ai.repo.areas.alpha",
             "path": A + "/alpha/guide.md",
             "reason": "superseded by ai.repo.areas.alpha.deep (%s/alpha/deep/guide.md)" % A}])
        gamma = value["documents"][-1]
        self.assertEqual((gamma["id"], gamma["depth"], gamma["reason"]),
                         ("ai.repo.areas.gamma", 3, "declared path .ai/repo/areas/alpha/deep "
                          "(scope explicit)"))
        # no content travels in the answer: a client reads each URI
        self.assertNotIn("content", json.dumps(value))
        body = support.read_bytes(self.repo, first["path"])
        import hashlib
        self.assertEqual(first["sha256"], hashlib.sha256(body).hexdigest())

    def test_filters(self):
        claude = "ai.repo.areas.beta.claude"
        self.assertIn(claude, self.chain(self.via_all({"path": A + "/beta",
                                                       "provider": "claude-code"})))
        value = self.via_all({"path": A + "/beta", "provider": "agents"})
        self.assertNotIn(claude, self.chain(value))
        self.assertIn({"id": claude, "uri": "majordomus://context/" + claude,
                       "path": A + "/beta/claude.md",
                       "reason": "provider agents is not among its providers (claude-code)"},
                      value["excluded"])
        value = self.via_all({"path": A + "/beta", "audience": "human"})
        self.assertEqual(value["excluded"][0]["reason"],
                         "audience human is not among its audience (agent)")

    def test_text_and_explain(self):
        p = cli(self.repo, "explain", "lib/thing.sh")
        self.assertEqual(p.returncode, 0, p.stderr)
        text = p.stdout.decode("utf-8")
        self.assertTrue(text.startswith("# effective context for lib\n01  ai.layer "), text)
        self.assertIn("    applies: tracks lib/thing.sh\n", text)
        self.assertIn("\n# left out\n(nothing: every candidate applies)\n", text)
        fingerprint = self.via_all({"path": "lib/thing.sh"})["fingerprint"]
        self.assertTrue(text.endswith("\nfingerprint %s\n" % fingerprint), text)
        p = cli(self.repo, "resolve", A + "/beta", "--provider", "agents")
        self.assertEqual(p.stdout.decode("utf-8").splitlines()[0],
                         "# effective context for %s/beta \u2014 provider agents" % A)

    def test_errors_on_every_interface(self):
        cases = [  # (arguments, tool text prefix, HTTP status and code, CLI exit, CLI args)
            ({"path": "../x"}, "refused: refused-path '../x' (absolute, or leaves the repository)",
             422, "refused", 15, ["../x"]),
            ({"path": "/etc"}, "refused: refused-path '/etc'", 422, "refused", 15, ["/etc"]),
            ({"path": "no/such/dir"}, "not found: no such path in the repository: no/such/dir",
             404, "not_found", 12, ["no/such/dir"]),
            ({"path": ".", "provider": "nonesuch"}, "invalid input: unknown-provider 'nonesuch'; "
             "the policy projects: agents claude-code gemini", 400, "invalid_input", 2,
             [".", "--provider", "nonesuch"]),
            ({"path": ".", "audience": "robot"}, "invalid input: property 'audience'", 400,
             "invalid_input", 2, [".", "--audience", "robot"]),
            ({}, "invalid input: missing required property 'path'", 400, "invalid_input", 2, []),
        ]
        for arguments, text, status, code, exit_code, args in cases:
            with self.subTest(arguments=arguments):
                self.assertTrue(self.tool_error("majordomus_context", arguments).startswith(text))
                got, body = self.srv.get_json("/api/v1/context?"
                                              + urllib.parse.urlencode(arguments))
                self.assertEqual((got, body["error"]["code"]), (status, code), body)
                self.assertTrue(text.endswith(body["error"]["message"][-20:]) or
                                body["error"]["message"] in text or
                                text.split(": ", 1)[1] in body["error"]["message"], body)
                p = cli(self.repo, "resolve", *args)
                self.assertEqual(p.returncode, exit_code, p.stderr)
                self.assertEqual(p.stdout, b"")
        p = cli(self.repo, "resolve", "")
        self.assertEqual(p.returncode, 2)
        self.assertEqual(self.tool_error("majordomus_context", {"path": ""}),
                         "refused: refused-path '' (absolute, or leaves the repository)")

    def test_a_symlink_leaving_the_repository(self):
        outside = support.tempdir(self)
        link = os.path.join(self.repo, "away")
        os.symlink(outside, link)
        self.addCleanup(os.remove, link)
        text = self.tool_error("majordomus_context", {"path": "away"})
        self.assertEqual(text, "refused: refused-path 'away' resolves outside the repository")
        self.assertEqual(cli(self.repo, "resolve", "away").returncode, 15)

    def test_repository_info_counts_them(self):
        report = self.tool("majordomus_repository", {})
        self.assertEqual(report["context"], {"documents": 10, "problems": 0})


class InvalidTreeTest(unittest.TestCase, support.ToolCalls):
    """§20.2 step 2: an invalid tree refuses every resolution, with the problems listed."""

    def test_refused_everywhere_with_the_problems(self):
        repo = layer_repo(self, {A + "/README.md": "# stray\n",
                                 A + "/x/guide.md": cdoc("ai.x", "subtree", 1, "tracks: [none]")})
        self.s = support.McpSession(repo)
        self.addCleanup(self.s.close)
        srv = support.HttpServer(repo)
        self.addCleanup(srv.stop)
        head = "the context tree does not validate (2 problem(s)); nothing is resolved partially"
        problems = [
            {"severity": "error", "code": "invalid_context", "path": A + "/README.md",
             "message": "carries no front matter, and the manifest names README.md as a "
                        "context document (context.documents)"},
            {"severity": "error", "code": "broken_reference", "path": A + "/x/guide.md",
             "message": "tracks 'none', which matches no tracked file"}]
        detail = "".join("; %s %s: %s" % (p["code"], p["path"], p["message"]) for p in problems)
        self.assertEqual(self.tool_error("majordomus_context", {"path": "."}),
                         "refused: " + head + detail)
        status, body = srv.get_json("/api/v1/context?path=.")
        self.assertEqual(status, 422)
        self.assertEqual(body, {"error": {"code": "refused", "message": head + detail,
                                          "data": {"problems": problems}}})
        p = cli(repo, "resolve", ".ai/repo")
        self.assertEqual(p.returncode, 10)
        self.assertEqual(p.stdout, b"")
        self.assertEqual(p.stderr.decode("utf-8").splitlines(), [
            "FAIL %-22s %s \u2014 %s" % (d["code"], d["path"], d["message"]) for d in problems]
            + ["majordomus: " + head])
        # the tree's own problems are refused before the path is looked at (as the shell
        # tool does): a missing path under an invalid tree is still exit 10
        self.assertEqual(cli(repo, "resolve", "no/such").returncode, 10)


class EmptyChainTest(unittest.TestCase):
    def test_a_repository_without_context_documents(self):
        repo = support.make_repo(self)        # the skeleton: no context document
        for via in ("pyz", "py"):
            with self.subTest(via=via):
                p = support.run(["context", "resolve", ".ai/repo/rules", "--format", "json"],
                                repo, via=via)
                self.assertEqual(p.returncode, 0, p.stderr)
                value = json.loads(p.stdout.decode("utf-8"))
                self.assertEqual((value["documents"], value["excluded"]), ([], []))
                p = support.run(["context", "resolve", "."], repo, via=via)
                self.assertEqual(p.stdout, b"# effective context for .\n(no document applies)\n")

    def test_usage(self):
        repo = support.make_repo(self)
        for args in (["context"], ["context", "nope", "."], ["context", "resolve"],
                     ["context", "explain", ".", "--format", "json"],
                     ["context", "resolve", ".", "--audience", "robot"]):
            with self.subTest(args=args):
                p = support.run(args, repo)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(p.stdout, b"")
        p = support.run(["context", "resolve", "--help"], repo)
        self.assertIn(b"Usage: majordomus context resolve PATH", p.stdout)


class LiveTest(unittest.TestCase, support.ToolCalls):
    """§20.3: a README edited under a running `mcp` changes the next resolution."""

    def test_edits_change_the_next_answer(self):
        repo = layer_repo(self, {A + "/README.md": cdoc("ai.repo.areas"),
                                 A + "/one/README.md": cdoc("ai.repo.areas.one", "subtree", 5),
                                 A + "/one/two.md": cdoc("ai.repo.areas.one.two", "subtree", 9)})
        self.s = support.McpSession(repo)
        self.addCleanup(self.s.close)
        target = {"path": A + "/one"}
        before = self.tool("majordomus_context", target)
        self.assertEqual([d["id"] for d in before["documents"]][-2:],
                         ["ai.repo.areas.one", "ai.repo.areas.one.two"])
        # an order changed: the two documents of one directory swap
        support.write(repo, A + "/one/two.md", cdoc("ai.repo.areas.one.two", "subtree", 1))
        after = self.poll(target, lambda v: v["fingerprint"] != before["fingerprint"])
        self.assertEqual([d["id"] for d in after["documents"]][-2:],
                         ["ai.repo.areas.one.two", "ai.repo.areas.one"])
        # a supersedes added (and staged): the ancestor leaves the chain
        support.write(repo, A + "/one/README.md", cdoc(
            "ai.repo.areas.one", "subtree", 5, "composition: replace",
            "supersedes: [ai.repo.areas]", drop=("composition",)))
        support.git(repo, "add", "-A")
        last = self.poll(target, lambda v: v["fingerprint"] != after["fingerprint"])
        self.assertNotIn("ai.repo.areas", [d["id"] for d in last["documents"]])
        self.assertEqual(last["excluded"][0]["reason"],
                         "superseded by ai.repo.areas.one (%s/one/README.md)" % A)
        # the same state gives the same fingerprint
        self.assertEqual(self.tool("majordomus_context", target)["fingerprint"],
                         last["fingerprint"])

    def poll(self, arguments, done, timeout=10):
        deadline = time.time() + timeout
        while True:
            value = self.tool("majordomus_context", arguments)
            if done(value) or time.time() > deadline:
                self.assertTrue(done(value), value)
                return value
            time.sleep(0.2)


class PathspecTest(unittest.TestCase):
    """`tracks` pathspecs matched as `git ls-files -- SPEC` matches them (§20.1), on
    generated files and pathspecs, against git itself."""

    def test_against_git(self):
        rng = random.Random(20)
        names = ["a", "b", "lib", "x.sh", "y.md", "ab", "a b", "[a]", "é"]
        files = set()
        for _ in range(60):
            depth = rng.randint(1, 3)
            files.add("/".join(rng.choice(names) for _ in range(depth - 1))
                      + ("/" if depth > 1 else "") + rng.choice(names[3:] + ["z.sh", "w"]))
        # a path may not be both a file and a folder
        files = sorted(f for f in files if not any(g.startswith(f + "/") for g in files))
        repo = support.make_repo(self, skeleton=False, commit=False)
        for f in files:
            support.write(repo, f, "x\n")
        support.commit_all(repo)
        listed = sorted(support.git(repo, "ls-files", "-z").split("\0")[:-1])
        specs = set(files[:20])
        pieces = ["a", "b", "lib", "*", "?", "*.sh", "[ab]", "[!a]", "**", "x.sh", "y.*", "é",
                  "a b", "\\[a]", "[[:alpha:]]"]
        while len(specs) < 220:
            depth = rng.randint(1, 3)
            spec = "/".join(rng.choice(pieces) for _ in range(depth))
            spec = rng.choice(["", "./", ""]) + spec + rng.choice(["", "", "/", "/."])
            specs.add(spec)
        specs |= {".", "./", "lib/", "a//b", "a/../b", "..", "a/./b"}
        for spec in sorted(specs):
            with self.subTest(spec=spec):
                out = support.git(repo, "ls-files", "-z", "--", spec, check=False)
                want = sorted(p for p in out.split("\0") if p)
                self.assertEqual(mj.pathspec_files(repo, spec, listed, True), want)


if __name__ == "__main__":
    unittest.main()
