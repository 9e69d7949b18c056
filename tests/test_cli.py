"""Black-box tests of the CLI projections (SPEC §1, §6, §7, §8, §11, §12)."""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402
from support import RULE_PATH, RULE_URI  # noqa: E402

VIAS = ("pyz", "py")
RULE_ID = "rule.majordomus.scope-integrity@1"
REPO_URI = "majordomus://repository"
STABILITIES = ("implemented", "behaviorally_verified", "experimental", "planned",
               "unsupported")

# id -> (title, tool, resource exposure or None, http path, cli words, input, output, cache)
BUILTINS = {
    "capabilities.describe": ("Describe one capability", "majordomus_capability", None,
                              "/api/v1/capability", ["capabilities", "describe"],
                              "DescribeInput", "Capability", {"policy": "disabled"}),
    "capabilities.list": ("List capabilities", "majordomus_capabilities", None,
                          "/api/v1/capabilities", ["capabilities", "list"],
                          "CapabilitiesInput", "CapabilityList",
                          {"policy": "process", "max_entries": 16}),
    "context.brief": ("Brief me before I work on a path", "majordomus_brief", None,
                      "/api/v1/brief", ["brief"], "BriefInput", "Brief",
                      {"policy": "process", "max_entries": 64}),
    "context.affected": ("What to update before you commit", "majordomus_affected", None,
                         "/api/v1/context/affected", ["context", "affected"], "AffectedInput",
                         "ContextAffected", {"policy": "disabled"}),
    "context.list": ("Every context document", None, None, "/api/v1/context/list",
                     ["context", "list"], "Empty", "ContextList",
                     {"policy": "process", "max_entries": 1}),
    "hook.deliver": ("Deliver the brief at the moment (a client's hook)", None, None,
                     "/api/v1/hook", ["hook"], "HookInput", "HookAnswer", {"policy": "disabled"}),
    "context.sync": ("Are the tree and its projections in sync", None, None,
                     "/api/v1/context/sync", ["context", "check-sync"], "AffectedInput",
                     "ContextSync", {"policy": "disabled"}),
    "context.validate": ("Does the context tree hold its contract", None, None,
                         "/api/v1/context/validate", ["context", "validate"], "Empty",
                         "ContextValidation", {"policy": "process", "max_entries": 1}),
    "context.resolve": ("What governs a path", "majordomus_context", None, "/api/v1/context",
                        ["context", "resolve"], "ContextInput", "ContextResolution",
                        {"policy": "process", "max_entries": 64}),
    "objects.get": ("Get one object", "majordomus_get", None, "/api/v1/object", ["get"],
                    "GetInput", "ResourceView", {"policy": "disabled"}),
    "objects.list": ("List objects", "majordomus_list", None, "/api/v1/objects", None,
                     "ListInput", "ObjectList", {"policy": "disabled"}),
    "objects.search": ("Search objects", "majordomus_search", None, "/api/v1/search", ["search"],
                       "SearchInput", "SearchResult", {"policy": "process", "max_entries": 64}),
    "peers.announce": ("Announce what you will change", "majordomus_announce", None,
                       "/api/v1/peers/announce", None, "AnnounceInput", "Peer",
                       {"policy": "disabled"}),
    "peers.list": ("Who else works here", "majordomus_peers",
                   {"uri": "majordomus://peers", "name": "peers"}, "/api/v1/peers", ["peers"],
                   "PeersInput", "PeerList", {"policy": "disabled"}),
    "peers.tell": ("Tell this checkout of another's announce", None, None,
                   "/api/v1/peers/tell", None, "TellInput", "Told", {"policy": "disabled"}),
    "perf.counters": ("Performance counters", "majordomus_perf", None, "/api/v1/perf", None,
                      "Empty", "CounterSnapshot", {"policy": "disabled"}),
    "prompts.get": ("Get one prompt, filled in", "majordomus_prompt", None, "/api/v1/prompt",
                    ["prompt"], "PromptInput", "PromptResult", {"policy": "disabled"}),
    "repository.info": ("Repository and index state", "majordomus_repository",
                        {"uri": "majordomus://repository", "name": "repository"},
                        "/api/v1/repository", None, "Empty", "RepositoryReport",
                        {"policy": "disabled"}),
}
# (kind, identity, path, source_class, section, title, description, tags)
DECLARATIVES = [
    ("document", ".ai/repo/rules/README.md", ".ai/repo/rules/README.md", "rule", "rules",
     "Rules of this layer", None, None),
    ("document", ".ai/repo/workflows/README.md", ".ai/repo/workflows/README.md", "workflow",
     "workflows", "How work is done here", None, None),
    ("document", ".ai/repo/workflows/plan.md", ".ai/repo/workflows/plan.md", "workflow",
     "workflows", "Working from a plan", None, None),
    ("document", ".ai/repo/workflows/task-lifecycle.md", ".ai/repo/workflows/task-lifecycle.md",
     "workflow", "workflows", "From start to finish", None, None),
    ("document", "README.md", "README.md", "readme", None, "Fixture layer", None, None),
    ("policy", ".ai/repo/policy.yaml", ".ai/repo/policy.yaml", "policy", "policy", None, None,
     None),
    ("profile", "implementation", ".ai/repo/profiles/implementation.yaml", "profile",
     "profiles", "implementation",
     "make a planned change in code whose design is settled", None),
    ("prompt", "continue", ".ai/repo/prompts/continue.md", "prompt", "prompts", "continue",
     "pick up unfinished work from its notes", None),
    ("rule", "majordomus.scope-integrity@1", RULE_PATH, "rule", "rules", "Stay inside the claimed paths",
     "A task changes only the files it said it would change.", ["scope", "review"]),
]
COMMANDS = {"hook.deliver", "peers.announce", "peers.tell"}   # §27, §30, §31: POST, not
                                                              # read-only
WITH_CLI = [i for i in sorted(BUILTINS) if BUILTINS[i][4]]
ALL_IDS = sorted(list(BUILTINS) + ["%s.%s" % (d[0], d[1]) for d in DECLARATIVES])
SUMMARY_LINE = ("capabilities: 27 (18 builtin, 9 declarative); mcp tools 13, mcp resources 11, "
                "http routes 18, cli commands 13")


def kind_of(cid):
    return "command" if cid in COMMANDS else "query" if cid in BUILTINS else "resource"
# kinds that carry `prompt: body` (§4.1, §17): their objects are MCP prompts too
PROMPT_KINDS = ("prompt",)
DESCRIBE_LABELS = ["id", "kind", "stability", "title", "description", "provenance", "mcp",
                   "http", "cli", "input", "output"]


def media_type(path):
    return "application/yaml" if path.endswith(".yaml") else "text/markdown"


def expected_exposure(cid):
    """The exposure object the registry must carry for a skeleton capability."""
    if cid in BUILTINS:
        _, tool, resource, http, cli, _, _, _ = BUILTINS[cid]
        mcp = {"tool": tool} if tool else {}
        if resource:
            mcp["resource"] = resource
        exp = {"mcp": mcp} if mcp else {}
        exp["http"] = {"method": "POST" if cid in COMMANDS else "GET", "path": http}
        if cli:
            exp["cli"] = {"path": cli}
        return exp
    for kind, identity, _, _, _, _, _, _ in DECLARATIVES:
        if "%s.%s" % (kind, identity) == cid:
            mcp = {"resource": {"uri": "majordomus://%s/%s" % (kind, identity),
                                "name": identity}}
            if kind in PROMPT_KINDS:
                mcp["prompt"] = {"name": identity}
            return {"mcp": mcp}
    raise KeyError(cid)


def list_line(cid, kind, stability):
    exp = expected_exposure(cid)
    parts, mcp = [], exp.get("mcp", {})
    if "tool" in mcp:
        parts.append("tool:" + mcp["tool"])
    if "resource" in mcp:
        parts.append("resource:" + mcp["resource"]["uri"])
    if "prompt" in mcp:
        parts.append("prompt:" + mcp["prompt"]["name"])
    mcp = ",".join(parts) or "-"
    http = "%s %s" % (exp["http"]["method"], exp["http"]["path"]) if "http" in exp else "-"
    cli = " ".join(exp["cli"]["path"]) if "cli" in exp else "-"
    return "{:<48} {:<9} {:<22} mcp={} http={} cli={}".format(cid, kind, stability, mcp, http,
                                                             cli)


def strip_lines(text):
    """Lines without trailing spaces: a label whose value is empty may or may not keep its
    padding (the spec does not say); everything else is compared exactly."""
    return [line.rstrip(" ") for line in text.split("\n")]


def describe_text(desc):
    """The §11 text of a descriptor, from its JSON form."""
    prov = desc["provenance"]
    if prov["source"] == "builtin":
        provenance = "builtin majordomus"
    else:
        provenance = "%s (class %s, section %s)" % (prov["path"], prov["source_class"],
                                                    prov.get("section", "-"))
    exp = desc["exposure"]
    values = [
        desc["id"], desc["kind"], desc["stability"], desc["title"], desc["description"],
        provenance,
        json.dumps(exp["mcp"], separators=(",", ":")) if "mcp" in exp else "none",
        "%s %s" % (exp["http"]["method"], exp["http"]["path"]) if "http" in exp else "none",
        "majordomus " + " ".join(exp["cli"]["path"]) if "cli" in exp else "none",
        desc["input"].get("name", "(anonymous)"),
        desc["output"].get("name", "(anonymous)"),
    ]
    return "".join("{:<13}{}\n".format(label, value)
                   for label, value in zip(DESCRIBE_LABELS, values))


class CliAsserts:
    def run_ok(self, args, cwd, via="pyz"):
        p = support.run(args, cwd=cwd, via=via)
        self.assertEqual(p.returncode, 0, p.stderr.decode("utf-8", "replace"))
        self.assertNotIn(b"Traceback", p.stderr)
        return p.stdout

    def run_json(self, args, cwd, via="pyz"):
        return json.loads(self.run_ok(args, cwd, via).decode("utf-8"))

    def run_fail(self, args, cwd, code, via="pyz"):
        p = support.run(args, cwd=cwd, via=via)
        self.assertEqual(p.returncode, code, p.stderr.decode("utf-8", "replace"))
        self.assertEqual(p.stdout, b"")
        self.assertNotIn(b"Traceback", p.stderr)
        return p.stderr.decode("utf-8")

    def check_descriptor(self, desc):
        cid = desc["id"]
        self.assertEqual([k for k in desc if k != "tags"],
                         ["id", "module", "kind", "title", "description", "input", "output",
                          "provenance", "exposure", "stability", "cache"])
        self.assertEqual(desc["exposure"], expected_exposure(cid))
        self.assertIn(desc["stability"], STABILITIES)
        keys = list(desc)
        if "tags" in keys:
            self.assertEqual(keys.index("tags"), keys.index("stability") + 1, keys)
        if cid in BUILTINS:
            title, _, _, _, _, inp, out, cache = BUILTINS[cid]
            self.assertEqual(desc["module"], cid.split(".")[0])
            self.assertEqual(desc["kind"], kind_of(cid))
            self.assertEqual(desc["title"], title)
            self.assertTrue(desc["description"])
            self.assertEqual(desc["input"]["name"], inp)
            self.assertEqual(desc["output"]["name"], out)
            self.assertEqual(desc["input"]["schema"].get("type"), "object")
            self.assertEqual(desc["output"]["schema"].get("type"), "object")
            self.assertEqual(desc["provenance"], {"source": "builtin",
                                                  "module": "majordomus"})
            self.assertEqual(desc["cache"], cache)
            self.assertNotIn("tags", desc)
            return
        for kind, identity, path, klass, section, title, descr, tags in DECLARATIVES:
            if "%s.%s" % (kind, identity) == cid:
                break
        self.assertEqual(desc["module"], kind)
        self.assertEqual(desc["kind"], "resource")
        self.assertEqual(desc["title"], title if title is not None else identity)
        self.assertEqual(desc["description"], descr or "")
        self.assertNotIn("name", desc["input"])
        self.assertEqual(desc["input"]["schema"].get("type"), "object")
        self.assertFalse(desc["input"]["schema"].get("required"))
        self.assertFalse(desc["input"]["schema"].get("properties"))
        self.assertEqual(desc["output"]["name"], "ObjectView")
        prov = {"source": "declarative", "path": path,
                "directory": os.path.dirname(path) or ".", "source_class": klass}
        if section is not None:
            prov["section"] = section
        prov["media_type"] = media_type(path)
        self.assertEqual(desc["provenance"], prov)
        self.assertEqual(list(desc["provenance"]), list(prov))
        self.assertEqual(desc["stability"], "implemented")
        if tags:
            self.assertEqual(desc["tags"], tags)
        else:
            self.assertNotIn("tags", desc)
        self.assertEqual(desc["cache"], {"policy": "disabled"})


class CapabilitiesListTest(support.ClassRepo, CliAsserts, unittest.TestCase):

    def test_list_text(self):
        for via in VIAS:
            with self.subTest(via=via):
                out = self.run_ok(["capabilities", "list"], self.repo, via).decode("utf-8")
                data = self.run_json(["capabilities", "list", "--format", "json"], self.repo,
                                     via)
                stability = {c["id"]: c["stability"] for c in data["capabilities"]}
                self.assertTrue(out.endswith("\n"))
                lines = out[:-1].split("\n")
                expected = [list_line(cid, kind_of(cid), stability.get(cid, "?"))
                            for cid in ALL_IDS]
                self.assertEqual(lines, expected + [SUMMARY_LINE])
                for cid in ALL_IDS:
                    if cid not in BUILTINS:
                        self.assertEqual(stability[cid], "implemented")
                    self.assertIn(stability[cid], STABILITIES)

    def test_list_json(self):
        for via in VIAS:
            with self.subTest(via=via):
                data = self.run_json(["capabilities", "list", "--format", "json"], self.repo,
                                     via)
                # §16: the CLI pages through: one CapabilityList of everything, no next_cursor
                self.assertEqual(list(data), ["count", "total", "summary", "capabilities"])
                self.assertEqual((data["count"], data["total"]), (27, 27))
                summary = data["summary"]
                self.assertEqual(list(summary), ["total", "builtin", "declarative", "by_kind",
                                                 "by_stability", "mcp_tools", "mcp_resources",
                                                 "http_routes", "cli_commands"])
                self.assertEqual(
                    (summary["total"], summary["builtin"], summary["declarative"],
                     summary["mcp_tools"], summary["mcp_resources"], summary["http_routes"],
                     summary["cli_commands"]), (27, 18, 9, 13, 11, 18, 13))
                self.assertEqual({k: v for k, v in summary["by_kind"].items() if v},
                                 {"command": 3, "query": 15, "resource": 9})
                self.assertEqual(sum(summary["by_stability"].values()), 27)
                self.assertEqual([c["id"] for c in data["capabilities"]], ALL_IDS)
                for desc in data["capabilities"]:
                    with self.subTest(id=desc["id"]):
                        self.check_descriptor(desc)

    def test_list_filters(self):
        full = self.run_json(["capabilities", "list", "--format", "json"], self.repo)
        stability = {c["id"]: c["stability"] for c in full["capabilities"]}
        cases = [
            (["--kind", "query"], sorted(set(BUILTINS) - COMMANDS)),
            (["--kind", "resource"], [i for i in ALL_IDS if i not in BUILTINS]),
            (["--kind", "command"], sorted(COMMANDS)),
            (["--exposure", "cli"], WITH_CLI),
            (["--exposure", "http"], sorted(BUILTINS)),
            (["--exposure", "mcp"], [i for i in ALL_IDS if i not in BUILTINS
                                     or BUILTINS[i][1] or BUILTINS[i][2]]),
            (["--kind", "resource", "--exposure", "http"], []),
            (["--kind", "query", "--exposure", "cli"], [i for i in WITH_CLI
                                                        if i not in COMMANDS]),
        ]
        for n, (args, ids) in enumerate(cases):
            with self.subTest(args=args):
                data = self.run_json(["capabilities", "list", "--format", "json"] + args,
                                     self.repo)
                self.assertEqual([c["id"] for c in data["capabilities"]], ids)
                self.assertEqual((data["count"], data["total"]), (len(ids), len(ids)))
                self.assertNotIn("next_cursor", data)
                self.assertEqual(data["summary"], full["summary"])
                if n not in (1, 2, 3, 7):
                    continue  # the text form of a few filters is enough (process start-up)
                out = self.run_ok(["capabilities", "list"] + args, self.repo).decode("utf-8")
                self.assertEqual(out, "".join(
                    list_line(i, kind_of(i), stability[i]) + "\n"
                    for i in ids) + SUMMARY_LINE + "\n")

    def test_list_bad_values(self):
        for via in VIAS:
            with self.subTest(via=via):
                err = self.run_fail(["capabilities", "list", "--kind", "x"], self.repo, 2, via)
                self.assertIn("kind 'x' is not query, command or resource", err)
                err = self.run_fail(["capabilities", "list", "--exposure", "x"], self.repo, 2,
                                    via)
                self.assertIn("exposure 'x' is not mcp, http or cli", err)
        err = self.run_fail(["capabilities", "list", "--kind", "x", "--format", "json"],
                            self.repo, 2)
        self.assertIn("kind 'x' is not query, command or resource", err)
        self.run_fail(["capabilities", "list", "--format", "yaml"], self.repo, 2)
        err = self.run_fail(["capabilities", "list", "--no-such-option"], self.repo, 2)
        self.assertIn("error: unexpected argument '--no-such-option' found", err)


class CapabilitiesDescribeTest(support.ClassRepo, CliAsserts, unittest.TestCase):

    def test_describe_json(self):
        for via in VIAS:
            with self.subTest(via=via):
                desc = self.run_json(["capabilities", "describe", "objects.get", "--format",
                                      "json"], self.repo, via)
                self.assertEqual(desc["output"]["name"], "ResourceView")
                self.assertIn("majordomus://repository", desc["description"])
                self.check_descriptor(desc)
        listing = self.run_json(["capabilities", "list", "--format", "json"], self.repo)
        by_id = {c["id"]: c for c in listing["capabilities"]}
        for cid in ("repository.info", RULE_ID, "document.README.md",
                    "policy..ai/repo/policy.yaml"):
            with self.subTest(id=cid):
                desc = self.run_json(["capabilities", "describe", cid, "--format", "json"],
                                     self.repo)
                self.check_descriptor(desc)
                self.assertEqual(json.dumps(desc), json.dumps(by_id[cid]))

    def test_describe_text(self):
        for via in VIAS:
            with self.subTest(via=via):
                desc = self.run_json(["capabilities", "describe", "objects.get", "--format",
                                      "json"], self.repo, via)
                out = self.run_ok(["capabilities", "describe", "objects.get"], self.repo,
                                  via).decode("utf-8")
                self.assertEqual(strip_lines(out), strip_lines(describe_text(desc)))
                self.assertTrue(out.endswith("\n"))
                lines = out.split("\n")
                self.assertEqual(len(lines), 12)
                self.assertEqual(lines[0], "id           objects.get")
                self.assertEqual(lines[1], "kind         query")
                self.assertEqual(lines[3], "title        Get one object")
                self.assertEqual(lines[5], "provenance   builtin majordomus")
                self.assertEqual(lines[6], 'mcp          {"tool":"majordomus_get"}')
                self.assertEqual(lines[7], "http         GET /api/v1/object")
                self.assertEqual(lines[8], "cli          majordomus get")
                self.assertEqual(lines[9], "input        GetInput")
                self.assertEqual(lines[10], "output       ResourceView")
        expectations = {
            "repository.info": {
                6: 'mcp          {"tool":"majordomus_repository","resource":'
                   '{"uri":"majordomus://repository","name":"repository"}}',
                8: "cli          none", 9: "input        Empty",
                10: "output       RepositoryReport"},
            RULE_ID: {
                5: "provenance   %s (class rule, section rules)" % RULE_PATH,
                6: 'mcp          {"resource":{"uri":"%s","name":'
                   '"majordomus.scope-integrity@1"}}' % RULE_URI,
                7: "http         none", 8: "cli          none",
                9: "input        (anonymous)", 10: "output       ObjectView"},
            "document.README.md": {
                3: "title        Fixture layer", 4: "description",
                5: "provenance   README.md (class readme, section -)"},
            "capabilities.list": {8: "cli          majordomus capabilities list"},
        }
        listing = self.run_json(["capabilities", "list", "--format", "json"], self.repo)
        by_id = {c["id"]: c for c in listing["capabilities"]}
        for cid, lines_expected in expectations.items():
            with self.subTest(id=cid):
                desc = by_id[cid]
                out = self.run_ok(["capabilities", "describe", cid, "--format", "text"],
                                  self.repo).decode("utf-8")
                self.assertEqual(strip_lines(out), strip_lines(describe_text(desc)))
                lines = strip_lines(out)
                for n, line in lines_expected.items():
                    self.assertEqual(lines[n], line)

    def test_describe_unknown(self):
        for via in VIAS:
            for fmt in ([], ["--format", "json"]):
                with self.subTest(via=via, fmt=fmt):
                    err = self.run_fail(["capabilities", "describe", "nope.x"] + fmt,
                                        self.repo, 12, via)
                    self.assertEqual(err, "majordomus: unknown capability: nope.x (run: "
                                          "majordomus capabilities list)\n")

    def test_describe_usage(self):
        self.run_fail(["capabilities", "describe"], self.repo, 2)
        self.run_fail(["capabilities", "describe", "objects.get", "--format", "yaml"],
                      self.repo, 2)


class GetTest(support.ClassRepo, CliAsserts, unittest.TestCase):

    def file_bytes(self, rel):
        with open(os.path.join(self.repo, rel), "rb") as f:
            return f.read()

    def test_get_json(self):
        for via in VIAS:
            with self.subTest(via=via):
                view = self.run_json(["get", RULE_URI], self.repo, via)
                self.assertEqual(list(view), ["source", "uri", "id", "kind", "identity",
                                              "title", "description", "metadata",
                                              "provenance", "media_type", "content"])
                content = self.file_bytes(RULE_PATH)
                self.assertEqual(view["source"], "declarative")
                self.assertEqual(view["uri"], RULE_URI)
                self.assertEqual(view["id"], RULE_ID)
                self.assertEqual(view["identity"], "majordomus.scope-integrity@1")
                self.assertEqual(view["title"], "Stay inside the claimed paths")
                self.assertEqual(view["metadata"]["tags"], ["scope", "review"])
                self.assertEqual(view["metadata"]["version"], 1)
                self.assertEqual(view["provenance"], {
                    "path": RULE_PATH, "directory": os.path.dirname(RULE_PATH),
                    "source_class": "rule", "section": "rules", "bytes": len(content)})
                self.assertEqual(view["media_type"], "text/markdown")
                self.assertEqual(view["content"].encode("utf-8"), content)
        for kind, identity, path, klass, section, title, descr, tags in DECLARATIVES:
            uri = "majordomus://%s/%s" % (kind, identity)
            with self.subTest(uri=uri):
                view = self.run_json(["get", uri, "--format", "json"], self.repo)
                self.assertEqual(view["source"], "declarative")
                self.assertEqual(view["kind"], kind)
                self.assertEqual(view.get("title"), title)
                self.assertEqual(view.get("description"), descr)
                self.assertEqual(view["media_type"], media_type(path))
                self.assertEqual(view["provenance"]["path"], path)
                self.assertEqual(view["content"].encode("utf-8"), self.file_bytes(path))

    def test_get_text(self):
        for via in VIAS:
            for path, uri in ((RULE_PATH, RULE_URI),
                              (".ai/repo/workflows/plan.md",
                               "majordomus://document/.ai/repo/workflows/plan.md"),
                              (".ai/repo/policy.yaml",
                               "majordomus://policy/.ai/repo/policy.yaml"),
                              (".ai/repo/prompts/continue.md", "majordomus://prompt/continue")):
                with self.subTest(via=via, uri=uri):
                    out = self.run_ok(["get", uri, "--format", "text"], self.repo, via)
                    self.assertEqual(out, self.file_bytes(path))

    def test_get_repository(self):
        for via in VIAS:
            with self.subTest(via=via):
                view = self.run_json(["get", REPO_URI], self.repo, via)
                self.assertEqual([k for k in view if k != "description"],
                                 ["source", "uri", "id", "kind", "identity", "title", "answer",
                                  "provenance", "media_type", "content"])
                self.assertEqual((view["source"], view["id"], view["kind"], view["identity"]),
                                 ("builtin", "repository.info", "query", "repository"))
                self.assertEqual(view["title"], "Repository and index state")
                self.assertEqual(view["media_type"], "application/json")
                answer = view["answer"]
                self.assertEqual(answer["repository"]["root"], self.repo)
                self.assertEqual((answer["state"], answer["objects"]), ("ok", 9))
                self.assertEqual(view["content"], json.dumps(answer, indent=2))
                text = self.run_ok(["get", REPO_URI, "--format", "text"], self.repo, via)
                self.assertEqual(text.decode("utf-8"), view["content"])
                self.assertEqual(json.loads(text.decode("utf-8")), answer)

    def test_get_unknown(self):
        uris = ("majordomus://rule/nope@1", "majordomus://document/../../etc/passwd",
                "majordomus://document//etc/passwd", "majordomus://document/%2E%2E/etc/passwd",
                "majordomus://document/" + self.repo + "/README.md",
                "majordomus://document/./README.md", "README.md", "/etc/passwd")
        for via in VIAS:
            for uri in (uris if via == "pyz" else uris[:1]):
                with self.subTest(via=via, uri=uri):
                    err = self.run_fail(["get", uri], self.repo, 12, via)
                    self.assertEqual(len(err.splitlines()), 1, err)
                    self.assertTrue(err.startswith("majordomus: "), err)
                    self.assertIn("unknown resource: " + uri, err)
            with self.subTest(via=via, fmt="text"):
                self.run_fail(["get", "majordomus://rule/nope@1", "--format", "text"],
                              self.repo, 12, via)

    def test_get_usage(self):
        self.run_fail(["get"], self.repo, 2)
        self.run_fail(["get", RULE_URI, "--format", "yaml"], self.repo, 2)

    def test_get_with_repo_option(self):
        d = tempfile.mkdtemp(prefix="mj-test-")
        self.addCleanup(shutil.rmtree, d, True)
        for via in VIAS:
            with self.subTest(via=via):
                out = self.run_ok(["get", RULE_URI, "--format", "text", "--repo", self.repo],
                                  d, via)
                self.assertEqual(out, self.file_bytes(RULE_PATH))
                out = self.run_ok(["get", RULE_URI, "--format", "text", "--repo",
                                   os.path.join(self.repo, ".ai", "repo")], d, via)
                self.assertEqual(out, self.file_bytes(RULE_PATH))
        err = self.run_fail(["get", RULE_URI], d, 12)
        self.assertEqual(err, "majordomus: no Majordomus repository found from %s: no "
                              "ancestor directory carries .ai/manifest.yaml; see 'Start a layer' in the "
                              "README\n"
                         % os.path.realpath(d))
        err = self.run_fail(["capabilities", "list"], d, 12)
        self.assertTrue(err.startswith("majordomus: no Majordomus repository found from "),
                        err)


class PromptTest(support.ClassRepo, CliAsserts, unittest.TestCase):
    """`majordomus prompt NAME [--arg NAME=VALUE]… [--format text|json]` (§1, §8, §17)."""

    PATH = ".ai/repo/prompts/continue.md"

    def body(self):
        with open(os.path.join(self.repo, self.PATH), "rb") as f:
            return f.read().decode("utf-8").split("---\n", 2)[2]

    def test_prompt_text_and_json(self):
        value = "resume {{CONTEXT}} = x"   # inserted as given, never scanned again
        filled = self.body().replace("{{CONTEXT}}", value)
        for via in VIAS:
            with self.subTest(via=via):
                out = self.run_ok(["prompt", "continue", "--arg", "CONTEXT=" + value],
                                  self.repo, via)
                self.assertEqual(out.decode("utf-8"), filled)
                out = self.run_ok(["prompt", "continue", "--arg", "CONTEXT=" + value,
                                   "--format", "text"], self.repo, via)
                self.assertEqual(out.decode("utf-8"), filled)
                doc = self.run_json(["prompt", "continue", "--arg", "CONTEXT=" + value,
                                     "--format", "json"], self.repo, via)
                with open(os.path.join(self.repo, self.PATH), "rb") as f:
                    size = len(f.read())
                self.assertEqual(json.dumps(doc), json.dumps({
                    "name": "continue", "description": "pick up unfinished work from its notes",
                    "messages": [{"role": "user",
                                  "content": {"type": "text", "text": filled}}],
                    "uri": "majordomus://prompt/continue",
                    "provenance": {"path": self.PATH, "directory": ".ai/repo/prompts",
                                   "source_class": "prompt", "section": "prompts",
                                   "bytes": size}}))

    def test_prompt_errors(self):
        for via in VIAS:
            with self.subTest(via=via):
                err = self.run_fail(["prompt", "continue"], self.repo, 2, via)
                self.assertIn("prompt 'continue' needs argument 'CONTEXT'", err)
                err = self.run_fail(["prompt", "continue", "--arg", "CONTEXT=a", "--arg",
                                     "X=b"], self.repo, 2, via)
                self.assertIn("prompt 'continue' has no argument 'X'", err)
                err = self.run_fail(["prompt", "nope"], self.repo, 12, via)
                self.assertEqual(err, "majordomus: unknown prompt: nope\n")
        self.run_fail(["prompt"], self.repo, 2)
        self.run_fail(["prompt", "continue", "--arg", "no-equals-sign"], self.repo, 2)
        self.run_fail(["prompt", "continue", "--arg", "CONTEXT=a", "--format", "yaml"],
                      self.repo, 2)


class ReadOnlyTest(CliAsserts, unittest.TestCase):
    """§12: every CLI command leaves the repository byte-identical."""

    def test_snapshot_unchanged(self):
        repo = support.make_repo(self)
        before = support.snapshot(repo)
        commands = [
            ["capabilities", "list"], ["capabilities", "list", "--format", "json"],
            ["capabilities", "list", "--kind", "query", "--exposure", "http"],
            ["capabilities", "describe", "objects.get"],
            ["capabilities", "describe", RULE_ID, "--format", "json"],
            ["get", RULE_URI], ["get", RULE_URI, "--format", "text"], ["get", REPO_URI],
            ["get", REPO_URI, "--format", "text"],
            ["get", "majordomus://prompt/continue", "--discovery", "filesystem"],
            ["get", "majordomus://rule/nope@1"], ["capabilities", "describe", "nope.x"],
            ["prompt", "continue", "--arg", "CONTEXT=x"], ["prompt", "nope"],
            ["capabilities", "list", "--kind", "x"], ["get", RULE_URI, "--strict"],
            ["--version"], ["--help"],
        ]
        for via in VIAS:
            for args in (commands if via == "pyz" else commands[:2] + commands[5:9]):
                p = support.run(args, cwd=repo, via=via)
                self.assertNotIn(b"Traceback", p.stderr)
        self.assertEqual(support.snapshot(repo), before)


class StrictTest(CliAsserts, unittest.TestCase):
    """--strict refuses on a degraded repository; without it the CLI still serves."""

    @classmethod
    def setUpClass(cls):
        cls.repo = support.class_repo(cls, files={
            ".ai/repo/rules/project/broken.v1.md": "---\nid: broken\nversion: 1\n"})

    def test_strict_refuses(self):
        message = ("majordomus: declarative state carries 1 error(s); refusing to serve under "
                   "--strict (run: majordomus mcp --inspect)\n")
        for via in VIAS:
            for args in (["capabilities", "list", "--strict"],
                         ["capabilities", "describe", "objects.get", "--strict"],
                         ["get", RULE_URI, "--strict"],
                         ["get", REPO_URI, "--format", "text", "--strict"],
                         ["prompt", "continue", "--arg", "CONTEXT=x", "--strict"]):
                with self.subTest(via=via, args=args):
                    err = self.run_fail(args, self.repo, 10, via)
                    self.assertIn(message, err)
                    self.assertTrue(err.endswith(message), err)

    def test_degraded_still_serves(self):
        for via in VIAS:
            with self.subTest(via=via):
                view = self.run_json(["get", REPO_URI], self.repo, via)
                answer = view["answer"]
                self.assertEqual(answer["state"], "degraded")
                self.assertEqual(answer["objects"], 9)
                codes = [(d["severity"], d["code"], d.get("path"))
                         for d in answer["diagnostics"]]
                self.assertEqual(codes, [("error", "malformed_front_matter",
                                          ".ai/repo/rules/project/broken.v1.md")])
                out = self.run_ok(["get", RULE_URI, "--format", "text"], self.repo, via)
                self.assertEqual(len(out) > 0, True)
                data = self.run_json(["capabilities", "list", "--format", "json"], self.repo,
                                     via)
                self.assertEqual((data["count"], data["total"]), (27, 27))


if __name__ == "__main__":
    unittest.main()
