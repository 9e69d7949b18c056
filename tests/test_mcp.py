"""Black-box tests of `majordomus mcp` over real pipes (SPEC §5.2, §7, §8, §9, §12).

Every test spawns the real program (`majordomus.pyz` and `majordomus.py`) in a scratch git
repository holding the skeleton fixture, and speaks JSON-RPC to it line by line.
"""
import json
import os
import subprocess
import sys
import threading
import time
import unittest

from tests import support
from tests.support import (LATEST, PEERS_URI, POLICY_PATH, POLICY_URI, PROFILE_URI, PROMPT_PATH,
                           PROMPT_URI, README_URI, REPOSITORY_URI, RULE_PATH, RULE_URI,
                           SUPPORTED_VERSIONS)

VIAS = ("pyz", "py")
VERSION = "0.1.0"


# The skeleton's objects: uri -> (kind, identity, path, source class, section or None)
SKELETON_OBJECTS = {
    POLICY_URI: ("policy", ".ai/repo/policy.yaml", POLICY_PATH, "policy", "policy"),
    PROFILE_URI: ("profile", "implementation", ".ai/repo/profiles/implementation.yaml",
                  "profile", "profiles"),
    PROMPT_URI: ("prompt", "continue", PROMPT_PATH, "prompt", "prompts"),
    RULE_URI: ("rule", "majordomus.scope-integrity@1", RULE_PATH, "rule", "rules"),
    "majordomus://document/.ai/repo/rules/README.md": (
        "document", ".ai/repo/rules/README.md", ".ai/repo/rules/README.md", "rule", "rules"),
    "majordomus://document/.ai/repo/workflows/README.md": (
        "document", ".ai/repo/workflows/README.md", ".ai/repo/workflows/README.md",
        "workflow", "workflows"),
    "majordomus://document/.ai/repo/workflows/plan.md": (
        "document", ".ai/repo/workflows/plan.md", ".ai/repo/workflows/plan.md",
        "workflow", "workflows"),
    "majordomus://document/.ai/repo/workflows/task-lifecycle.md": (
        "document", ".ai/repo/workflows/task-lifecycle.md", ".ai/repo/workflows/task-lifecycle.md",
        "workflow", "workflows"),
    README_URI: ("document", "README.md", "README.md", "readme", None),
}
SKELETON_URIS = sorted(SKELETON_OBJECTS)
SKELETON_KINDS = {"document": 5, "policy": 1, "profile": 1, "prompt": 1, "rule": 1}

TOOL_ORDER = [
    ("majordomus_capability", "capabilities.describe", "Describe one capability"),
    ("majordomus_capabilities", "capabilities.list", "List capabilities"),
    ("majordomus_affected", "context.affected", "What to update before you commit"),
    ("majordomus_brief", "context.brief", "Brief me before I work on a path"),
    ("majordomus_context", "context.resolve", "What governs a path"),
    ("majordomus_get", "objects.get", "Get one object"),
    ("majordomus_list", "objects.list", "List objects"),
    ("majordomus_search", "objects.search", "Search objects"),
    ("majordomus_announce", "peers.announce", "Announce what you will change"),
    ("majordomus_peers", "peers.list", "Who else works here"),
    ("majordomus_perf", "perf.counters", "Performance counters"),
    ("majordomus_prompt", "prompts.get", "Get one prompt, filled in"),
    ("majordomus_repository", "repository.info", "Repository and index state"),
]
ANNOTATIONS = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
               "openWorldHint": False}
# §27: the one command (changes this process's memory): derived from its kind
COMMAND_ANNOTATIONS = dict(ANNOTATIONS, readOnlyHint=False)
BUILTIN_PROVENANCE = {"source": "builtin", "module": "majordomus"}
COUNTERS = ("repository_scans", "index_builds", "registry_builds", "mcp_projection_builds",
            "http_projection_builds", "executions", "handler_invocations", "cache_hits",
            "cache_misses", "cache_evictions", "freshness_checks", "sweeps", "stamp_moves",
            "files_read", "rebuilds_failed", "generation", "phases")
PHASES = ("repository_discovery", "index_build", "registry_build", "handler_execution",
          "cache_lookup", "freshness_check", "sweep")
# §17: the skeleton's one prompt, .ai/repo/prompts/continue.md, as prompts/list gives it
PROMPT_BODY = "\n# Pick up where it stopped\n\n{{CONTEXT}}\n"
PROMPT_ARGUMENTS = [{"name": "CONTEXT", "description": "Replaces {{CONTEXT}} in the prompt.",
                     "required": True}]

TIMEOUT = 30


def compact_variants(value):
    return (json.dumps(value, separators=(",", ":"), ensure_ascii=False),
            json.dumps(value, separators=(",", ":"), ensure_ascii=True))


Session = support.McpSession


class McpTestCase(unittest.TestCase):
    maxDiff = None

    def open(self, repo, via="pyz", args=(), env=None):
        s = Session(repo, via=via, args=args, env=env)
        self.addCleanup(s.kill)
        return s

    # --- frame assertions -------------------------------------------------------------

    def assertResult(self, answer, id):
        self.assertEqual(answer.get("jsonrpc"), "2.0", answer)
        self.assertIn("id", answer)
        self.assertEqual(answer["id"], id)
        self.assertEqual(type(answer["id"]), type(id))
        self.assertNotIn("error", answer, answer)
        self.assertIn("result", answer, answer)
        return answer["result"]

    def assertError(self, answer, id, code, message=None, prefix=None, contains=None):
        self.assertEqual(answer.get("jsonrpc"), "2.0", answer)
        self.assertIn("id", answer, answer)
        if id is None:
            self.assertIsNone(answer["id"], answer)
        else:
            self.assertEqual(answer["id"], id)
            self.assertEqual(type(answer["id"]), type(id))
        self.assertNotIn("result", answer, answer)
        self.assertIn("error", answer, answer)
        err = answer["error"]
        self.assertEqual(err.get("code"), code, answer)
        self.assertIsInstance(err.get("message"), str, answer)
        if message is not None:
            self.assertEqual(err["message"], message)
        if prefix is not None:
            self.assertTrue(err["message"].startswith(prefix), err["message"])
        if contains is not None:
            self.assertIn(contains, err["message"])
        return err

    def assertPing(self, s, id=None):
        """The session is still alive: a ping is answered with {} (and nothing came before)."""
        if id is None:
            id = "ping-%d" % s.new_id()
        s.send({"jsonrpc": "2.0", "id": id, "method": "ping"})
        self.assertEqual(self.assertResult(s.recv(), id), {})

    def call(self, s, name, arguments=None, raw_params=None):
        params = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if raw_params is not None:
            params = raw_params
        id = s.new_id()
        return self.assertResult(s.request("tools/call", params, id=id), id)

    def assertToolOk(self, result):
        self.assertIs(result.get("isError"), False, result)
        self.assertIn("structuredContent", result, result)
        sc = result["structuredContent"]
        self.assertIsInstance(result.get("content"), list)
        self.assertEqual(len(result["content"]), 1, result["content"])
        block = result["content"][0]
        self.assertEqual(block.get("type"), "text")
        self.assertIn(block.get("text"), compact_variants(sc),
                      "content[0].text is not the compact JSON of structuredContent")
        self.assertEqual(json.loads(block["text"]), sc)
        return sc

    def assertToolError(self, result, text=None, prefix=None, contains=()):
        self.assertIs(result.get("isError"), True, result)
        self.assertNotIn("structuredContent", result, result)
        self.assertEqual(len(result.get("content", [])), 1, result)
        block = result["content"][0]
        self.assertEqual(block.get("type"), "text")
        msg = block.get("text")
        self.assertIsInstance(msg, str)
        if text is not None:
            self.assertEqual(msg, text)
        if prefix is not None:
            self.assertTrue(msg.startswith(prefix), msg)
        for part in contains:
            self.assertIn(part, msg)
        return msg

    def tool(self, s, name, arguments=None):
        return self.assertToolOk(self.call(s, name, arguments))

    def initialize(self, s, version=LATEST):
        id = s.new_id()
        return self.assertResult(s.request("initialize", {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}, id=id), id)


# ------------------------------------------------------------------------------------------
# Transport: line count, logs, EOF, broken pipe
# ------------------------------------------------------------------------------------------

class TransportTests(support.ClassRepo, McpTestCase):
    def test_seven_requests_one_notification_seven_lines(self):
        frames = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            {"jsonrpc": "2.0", "id": 3, "method": "resources/list"},
            {"jsonrpc": "2.0", "id": 4, "method": "resources/templates/list"},
            {"jsonrpc": "2.0", "id": 5, "method": "resources/read",
             "params": {"uri": RULE_URI}},
            {"jsonrpc": "2.0", "id": 6, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
             "params": {"name": "majordomus_repository", "arguments": {}}},
        ]
        data = b"".join(json.dumps(f).encode() + b"\n" for f in frames)
        for via in VIAS:
            with self.subTest(via=via):
                p = support.run(["mcp"], self.repo, via=via, input=data, timeout=TIMEOUT)
                err = p.stderr.decode("utf-8", "replace")
                self.assertEqual(p.returncode, 0, err)
                self.assertTrue(p.stdout.endswith(b"\n"))
                lines = p.stdout.split(b"\n")[:-1]
                self.assertEqual(len(lines), 7, p.stdout[:2000])
                for n, line in enumerate(lines, 1):
                    frame = json.loads(line.decode("utf-8"))
                    self.assertIsInstance(frame, dict)
                    self.assertEqual(frame.get("jsonrpc"), "2.0")
                    self.assertEqual(frame.get("id"), n)
                    self.assertIn("result", frame, frame)
                self.assertEqual(json.loads(lines[1])["result"], {})
                self.assertEqual(json.loads(lines[3])["result"], {"resourceTemplates": []})
                self.assertNotIn(b"index built", p.stdout)
                self.assertNotIn(b"input ended", p.stdout)
                built = [l for l in err.splitlines() if "index built" in l]
                self.assertEqual(len(built), 1, err)
                self.assertRegex(built[0], r" INFO index built\b")
                self.assertRegex(built[0], r"\bobjects=9\b")
                self.assertRegex(built[0], r"\bdiagnostics=0\b")
                self.assertRegex(built[0], r"\bstate=ok\b")
                ended = [l for l in err.splitlines() if "input ended; stopping" in l]
                self.assertEqual(len(ended), 1, err)
                self.assertRegex(ended[0], r"\banswered=7\b")
                self.assertNotIn("Traceback", err)

    def session_bytes(self):
        frames = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-03-26"}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "method": "notifications/something-else"},
            {"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
            {"jsonrpc": "2.0", "id": 3, "method": "resources/read",
             "params": {"uri": REPOSITORY_URI}},
            {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
             "params": {"name": "majordomus_search", "arguments": {"query": "scope"}}},
            {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
             "params": {"name": "majordomus_search", "arguments": {"query": "scope"}}},
            {"jsonrpc": "2.0", "id": 6, "method": "prompts/list"},
        ]
        return b"".join(json.dumps(f).encode() + b"\n" for f in frames) + b"{junk\n"

    def test_log_levels_never_touch_stdout(self):
        data = self.session_bytes()
        outputs = {}
        for level in ("trace", "info", "off", "bogus"):
            with self.subTest(level=level):
                p = support.run(["mcp"], self.repo, input=data, timeout=TIMEOUT,
                                env={"MAJORDOMUS_LOG": level})
                err = p.stderr.decode("utf-8", "replace")
                self.assertEqual(p.returncode, 0, err)
                lines = p.stdout.split(b"\n")
                self.assertEqual(lines[-1], b"")
                frames = [json.loads(l) for l in lines[:-1]]
                self.assertEqual([f["id"] for f in frames], [1, 2, 3, 4, 5, 6, None])
                outputs[level] = p.stdout
                if level == "off":
                    self.assertEqual(err, "")
                else:
                    self.assertIn("index built", err)
                    self.assertIn("input ended; stopping", err)
                    for line in err.splitlines():
                        self.assertRegex(line, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[^ ]* "
                                               r"(ERROR|WARN|INFO|DEBUG|TRACE) ")
                if level == "trace":
                    self.assertRegex(err, r" DEBUG .*notifications/something-else")
                if level in ("info", "bogus"):
                    self.assertNotIn(" DEBUG ", err)
                    self.assertNotIn(" TRACE ", err)
        self.assertEqual(len(set(outputs.values())), 1, "stdout depends on the log level")

    def test_no_environment_or_remote_in_any_output(self):
        repo = support.make_repo(self)
        support.git(repo, "remote", "add", "origin",
                    "https://user:s3cr3t-t0ken@example.invalid/remote-marker.git")
        support.git(repo, "config", "user.signingkey", "config-marker-value")
        env = {"MAJORDOMUS_LOG": "trace", "MJ_TEST_SECRET": "env-marker-7f3a",
               "GIT_TRACE": "0"}
        p = support.run(["mcp"], repo, input=self.session_bytes(), env=env, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout + p.stderr
        for marker in (b"s3cr3t-t0ken", b"remote-marker", b"example.invalid",
                       b"config-marker-value", b"env-marker-7f3a", b"MJ_TEST_SECRET"):
            self.assertNotIn(marker, out)

    def test_eof_exits_zero_promptly(self):
        for via in VIAS:
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                self.initialize(s)
                self.assertPing(s)
                s.proc.stdin.close()
                t0 = time.monotonic()
                rc = s.proc.wait(10)
                elapsed = time.monotonic() - t0
                self.assertEqual(rc, 0, s.stderr())
                # §9.2: "well within 100 ms"; generous slack for a loaded CI machine.
                self.assertLess(elapsed, 1.0, "exit took %.3fs after EOF" % elapsed)
                s._te.join(5)
                err = s.stderr()
                line = [l for l in err.splitlines() if "input ended; stopping" in l]
                self.assertEqual(len(line), 1, err)
                self.assertRegex(line[0], r"\banswered=2\b")

    def test_eof_without_any_request(self):
        p = support.run(["mcp"], self.repo, input=b"", timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, b"")
        self.assertRegex(p.stderr.decode(), r"input ended; stopping.*\banswered=0\b")

    def test_eof_after_partial_line_without_newline(self):
        # A last request without its newline is still a line at EOF, or at least never a crash.
        p = support.run(["mcp"], self.repo,
                        input=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0"',
                        timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        first = p.stdout.split(b"\n")[0]
        self.assertEqual(json.loads(first), {"jsonrpc": "2.0", "id": 1, "result": {}})
        self.assertNotIn(b"Traceback", p.stderr)

    def test_client_closing_stdout_stops_with_zero(self):
        for via in VIAS:
            with self.subTest(via=via):
                proc = subprocess.Popen(support.command(via) + ["mcp"], cwd=self.repo,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=support.base_env())
                self.addCleanup(lambda p=proc: p.poll() is None and (p.kill(), p.wait()))
                proc.stdout.close()   # our read end: the server's next write is a broken pipe
                try:
                    for i in range(1, 4):
                        proc.stdin.write(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i)
                        proc.stdin.flush()
                        time.sleep(0.05)
                except (BrokenPipeError, OSError):
                    pass
                try:
                    rc = proc.wait(15)   # stdin stays open: only the broken pipe can end it
                finally:
                    try:
                        proc.stdin.close()
                    except (BrokenPipeError, OSError):
                        pass
                err = proc.stderr.read().decode("utf-8", "replace")
                proc.stderr.close()
                self.assertEqual(rc, 0, err)
                self.assertIn("client closed the output; stopping", err)
                self.assertNotIn("Traceback", err)


# ------------------------------------------------------------------------------------------
# Handshake, listing, reading, tools
# ------------------------------------------------------------------------------------------

class SkeletonTests(support.ClassRepo, McpTestCase):
    # --- initialize -------------------------------------------------------------------

    def test_initialize_versions(self):
        for via in VIAS:
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                for v in SUPPORTED_VERSIONS:
                    self.assertEqual(self.initialize(s, v)["protocolVersion"], v)
                others = [{"capabilities": {}}, {"protocolVersion": "2099-01-01"},
                          {"protocolVersion": "2026-07-28"}, {"protocolVersion": "1.0"},
                          {"protocolVersion": 20250618}, {"protocolVersion": None}]
                for params in others:
                    id = s.new_id()
                    r = self.assertResult(s.request("initialize", params, id=id), id)
                    self.assertEqual(r["protocolVersion"], LATEST, params)
                id = s.new_id()
                r = self.assertResult(s.request("initialize", None, id=id), id)
                self.assertEqual(r["protocolVersion"], LATEST)
                self.assertEqual(s.close(), 0, s.stderr())

    def test_initialize_result(self):
        for via in VIAS:
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                r = self.initialize(s, "2025-06-18")
                self.assertEqual(r["protocolVersion"], "2025-06-18")
                self.assertEqual(r["capabilities"], {
                    "resources": {"subscribe": True, "listChanged": True},
                    "tools": {"listChanged": False},
                    "prompts": {"listChanged": True}})
                for absent in ("logging", "completions"):
                    self.assertNotIn(absent, r["capabilities"])
                self.assertEqual(r["serverInfo"], {"name": "majordomus", "title": "Majordomus",
                                                   "version": VERSION})
                ins = r["instructions"]
                self.assertIsInstance(ins, str)
                self.assertIn("index state ok", ins)
                self.assertNotIn("degraded", ins)
                self.assertIn("9 object(s)", ins)
                self.assertIn("27 capabilities", ins)
                self.assertIn("13 tools", ins)
                self.assertIn("11 resources", ins)
                self.assertIn("majordomus://repository", ins)
                self.assertIn("MCP prompts", ins)
                self.assertNotIn("\n\n", ins)
                # a second initialize is answered too, identically
                r2 = self.initialize(s, "2025-06-18")
                self.assertEqual(r2, r)
                s.notify("notifications/initialized")
                self.assertPing(s)
                self.assertEqual(s.close(), 0, s.stderr())
        with self.subTest("--no-watch"):
            # §9.3, §15.2: a fixed picture announces no change of any kind
            s = self.open(self.repo, args=["--no-watch"])
            r = self.initialize(s, "2025-06-18")
            self.assertEqual(r["capabilities"], {
                "resources": {"subscribe": False, "listChanged": False},
                "tools": {"listChanged": False},
                "prompts": {"listChanged": False}})
            self.assertIn("index state ok", r["instructions"])
            self.assertEqual(s.close(), 0, s.stderr())

    def test_requests_before_initialize_are_served(self):
        s = self.open(self.repo)
        self.assertPing(s)
        r = self.assertResult(s.request("resources/list", id=1), 1)
        self.assertEqual(r["resources"][1]["uri"], REPOSITORY_URI)
        r = self.assertResult(s.request("tools/list", id=2), 2)
        self.assertEqual(len(r["tools"]), 13)
        r = self.assertResult(s.request("prompts/list", id=3), 3)
        self.assertEqual([p["name"] for p in r["prompts"]], ["continue"])

    # --- resources/list ---------------------------------------------------------------

    def test_resources_list(self):
        s = self.open(self.repo)
        self.initialize(s)
        res = self.assertResult(s.request("resources/list", id=10), 10)
        self.assertEqual(list(res), ["resources"])
        items = res["resources"]
        self.assertEqual([r["uri"] for r in items], [PEERS_URI, REPOSITORY_URI] + SKELETON_URIS)
        repo_item = dict(items[1])
        desc = repo_item.pop("description", None)
        self.assertIsInstance(desc, str)
        self.assertTrue(desc.strip())
        self.assertEqual(repo_item, {
            "uri": REPOSITORY_URI, "name": "repository", "title": "Repository and index state",
            "mimeType": "application/json",
            "_meta": {"majordomus": {"id": "repository.info", "kind": "query",
                                     "provenance": BUILTIN_PROVENANCE}}})
        by_uri = {r["uri"]: r for r in items[1:]}
        rule = by_uri[RULE_URI]
        self.assertEqual(rule, {
            "uri": RULE_URI, "name": "majordomus.scope-integrity@1", "title": "Stay inside the claimed paths",
            "description": "A task changes only the files it said it would change.",
            "mimeType": "text/markdown",
            "_meta": {"majordomus": {
                "id": "rule.majordomus.scope-integrity@1", "kind": "rule",
                "identity": "majordomus.scope-integrity@1",
                "provenance": {"path": RULE_PATH,
                               "directory": ".ai/repo/rules/vendor/majordomus/rules",
                               "source_class": "rule", "section": "rules",
                               "bytes": len(support.read_bytes(self.repo, RULE_PATH))}}}})
        self.assertEqual(list(rule["_meta"]["majordomus"]["provenance"]),
                         ["path", "directory", "source_class", "section", "bytes"])
        policy = by_uri[POLICY_URI]
        self.assertEqual(policy, {
            "uri": POLICY_URI, "name": ".ai/repo/policy.yaml", "title": ".ai/repo/policy.yaml",
            "mimeType": "application/yaml",
            "_meta": {"majordomus": {
                "id": "policy..ai/repo/policy.yaml", "kind": "policy",
                "identity": ".ai/repo/policy.yaml",
                "provenance": {"path": POLICY_PATH, "directory": ".ai/repo",
                               "source_class": "policy", "section": "policy",
                               "bytes": len(support.read_bytes(self.repo, POLICY_PATH))}}}})
        readme = by_uri[README_URI]
        self.assertEqual(readme["title"], "Fixture layer")
        self.assertEqual(readme["_meta"]["majordomus"]["provenance"], {
            "path": "README.md", "directory": ".", "source_class": "readme",
            "bytes": len(support.read_bytes(self.repo, "README.md"))})
        self.assertEqual(by_uri[PROMPT_URI]["description"], "pick up unfinished work from its notes")
        for uri, (kind, identity, path, cls, section) in SKELETON_OBJECTS.items():
            item = by_uri[uri]
            self.assertEqual(item["name"], identity)
            self.assertEqual(item["mimeType"],
                             "application/yaml" if path.endswith(".yaml") else "text/markdown")
            meta = item["_meta"]["majordomus"]
            self.assertEqual(meta["id"], "%s.%s" % (kind, identity))
            self.assertEqual(meta["identity"], identity)
            prov = meta["provenance"]
            self.assertEqual(prov["path"], path)
            self.assertEqual(prov["directory"], os.path.dirname(path) or ".")
            self.assertEqual(prov["source_class"], cls)
            self.assertEqual(prov.get("section"), section)
            self.assertEqual(prov["bytes"], len(support.read_bytes(self.repo, path)))
        # nothing under the local half
        self.assertFalse([u for u in by_uri if ".ai/local" in u])

    def test_resources_templates_list(self):
        s = self.open(self.repo)
        self.assertEqual(self.assertResult(s.request("resources/templates/list", id=1), 1),
                         {"resourceTemplates": []})

    # --- prompts/list, prompts/get (§17), resources/subscribe (§15.4) ------------------

    def test_prompts_list(self):
        raw = support.read_bytes(self.repo, PROMPT_PATH)
        s = self.open(self.repo)
        r = self.assertResult(s.request("prompts/list", id=1), 1)
        self.assertEqual(list(r), ["prompts"])
        self.assertEqual(r["prompts"], [{
            "name": "continue", "title": "continue",
            "description": "pick up unfinished work from its notes",
            "arguments": PROMPT_ARGUMENTS,
            "_meta": {"majordomus": {
                "id": "prompt.continue", "uri": PROMPT_URI,
                "provenance": {"path": PROMPT_PATH, "directory": ".ai/repo/prompts",
                               "source_class": "prompt", "section": "prompts",
                               "bytes": len(raw)}}}}])
        self.assertEqual(list(r["prompts"][0]), ["name", "title", "description", "arguments",
                                                 "_meta"])
        # §16: not paged; a cursor that is not null is refused
        self.assertEqual(self.assertResult(s.request("prompts/list", {"cursor": None}, id=2),
                                           2), r)
        self.assertError(s.request("prompts/list", {"cursor": "x"}, id=3), 3, -32602,
                         message="invalid cursor")
        self.assertPing(s)

    def test_prompts_get(self):
        s = self.open(self.repo)
        value = "go on from {{NOT_SCANNED}} \u00e9"
        r = self.assertResult(s.request("prompts/get", {
            "name": "continue", "arguments": {"CONTEXT": value}}, id=1), 1)
        self.assertEqual(r, {"description": "pick up unfinished work from its notes",
                             "messages": [{"role": "user", "content": {
                                 "type": "text",
                                 "text": PROMPT_BODY.replace("{{CONTEXT}}", value)}}]})
        for params, message in (
                ({}, "params.name is required"), ({"name": 5}, "params.name is required"),
                ({"name": "nope"}, "unknown prompt: nope"),
                ({"name": "continue"}, "prompt 'continue' needs argument 'CONTEXT'"),
                ({"name": "continue", "arguments": {"CONTEXT": "a", "X": "b"}},
                 "prompt 'continue' has no argument 'X'"),
                ({"name": "continue", "arguments": {"CONTEXT": 5}},
                 "argument 'CONTEXT' must be a string")):
            id = s.new_id()
            self.assertError(s.request("prompts/get", params, id=id), id, -32602,
                             message=message)
            self.assertPing(s)
        # the same capability through the tool: the whole PromptResult
        sc = self.tool(s, "majordomus_prompt", {"name": "continue",
                                                "arguments": {"CONTEXT": value}})
        self.assertEqual(list(sc), ["name", "description", "messages", "uri", "provenance"])
        self.assertEqual((sc["name"], sc["uri"]), ("continue", PROMPT_URI))
        self.assertEqual(sc["messages"], r["messages"])
        self.assertEqual(sc["provenance"]["path"], PROMPT_PATH)
        self.assertToolError(self.call(s, "majordomus_prompt", {"name": "nope"}),
                             text="not found: unknown prompt: nope")
        self.assertToolError(self.call(s, "majordomus_prompt", {"name": "continue"}),
                             text="invalid input: prompt 'continue' needs argument 'CONTEXT'")

    def test_subscribe(self):
        s = self.open(self.repo)
        for m in ("resources/subscribe", "resources/subscribe", "resources/unsubscribe",
                  "resources/unsubscribe"):
            id = s.new_id()
            self.assertEqual(self.assertResult(s.request(m, {"uri": RULE_URI}, id=id), id), {})
        id = s.new_id()
        self.assertError(s.request("resources/subscribe", {"uri": "majordomus://nope"}, id=id),
                         id, -32002, message="resource not found: majordomus://nope")
        id = s.new_id()
        self.assertError(s.request("resources/subscribe", {}, id=id), id, -32602,
                         message="params.uri is required")
        self.assertPing(s)

    # --- resources/read ---------------------------------------------------------------

    def test_read_rule_byte_for_byte(self):
        raw = support.read_bytes(self.repo, RULE_PATH)
        for via in VIAS:
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                r = self.assertResult(s.request("resources/read", {"uri": RULE_URI}, id=1), 1)
                self.assertEqual(r, {"contents": [{"uri": RULE_URI, "mimeType": "text/markdown",
                                                   "text": raw.decode("utf-8")}]})
                self.assertEqual(r["contents"][0]["text"].encode("utf-8"), raw)
                self.assertTrue(r["contents"][0]["text"].startswith("---\nid: "))
                self.assertEqual(s.close(), 0)

    def test_read_every_object(self):
        s = self.open(self.repo)
        for uri in SKELETON_URIS:
            path = SKELETON_OBJECTS[uri][2]
            r = self.assertResult(s.request("resources/read", {"uri": uri}, id=uri), uri)
            self.assertEqual(len(r["contents"]), 1)
            c = r["contents"][0]
            self.assertEqual(c["uri"], uri)
            self.assertEqual(c["text"].encode("utf-8"), support.read_bytes(self.repo, path))

    def test_read_repository(self):
        for via in VIAS:
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                r = self.assertResult(s.request("resources/read", {"uri": REPOSITORY_URI}, id=1), 1)
                self.assertEqual(len(r["contents"]), 1)
                c = r["contents"][0]
                self.assertEqual(c["uri"], REPOSITORY_URI)
                self.assertEqual(c["mimeType"], "application/json")
                text = c["text"]
                self.assertFalse(text.endswith("\n"))
                report = json.loads(text)
                self.assertIn(text, (json.dumps(report, indent=2, ensure_ascii=False),
                                     json.dumps(report, indent=2, ensure_ascii=True)))
                self.check_report(report)
                self.assertEqual(s.close(), 0)

    def check_report(self, report):
        self.assertEqual(list(report), support.REPORT_KEYS)
        self.assertEqual(report["context"], {"documents": 0, "problems": 0})
        self.assertEqual(report["live"], {"generation": 1, "stale": None})
        self.assertEqual(report["state"], "ok")
        self.assertEqual(report["objects"], 9)
        self.assertEqual(report["kinds"], SKELETON_KINDS)
        self.assertEqual(list(report["kinds"]), sorted(SKELETON_KINDS))
        self.assertEqual(report["diagnostics"], [])
        caps = report["capabilities"]
        self.assertEqual((caps["total"], caps["builtin"], caps["declarative"]), (27, 18, 9))
        rep = report["repository"]
        self.assertEqual(list(rep), ["root", "layer_schema", "sections", "git", "discovery",
                                     "source_classes", "kinds_file"])
        self.assertEqual(rep["root"], self.repo)
        self.assertEqual(rep["layer_schema"], "ai-repository/v1")
        self.assertEqual(list(rep["sections"]), sorted(rep["sections"]))
        self.assertEqual(rep["sections"]["rules"], ".ai/repo/rules")
        self.assertEqual(rep["sections"]["knowledge"], ".ai/repo/knowledge")
        self.assertEqual(rep["discovery"], "vcs")
        self.assertEqual(rep["source_classes"], [
            ["policy", "policy"], ["profile", "profile"], ["rule", "rule"], ["prompt", "prompt"],
            ["workflow", "document"], ["milestone", "milestone"], ["issue", "issue"],
            ["document", "document"], ["readme", "document"]])
        self.assertEqual(rep["git"]["state"], "available")
        self.assertEqual(rep["git"]["toplevel"], self.repo)
        self.assertRegex(rep["git"]["head"], r"^[0-9a-f]{40}$")
        self.assertEqual(rep["git"]["branch"], "main")
        self.assertEqual(rep["git"]["working_tree"], "clean")
        self.assertIsNone(rep["kinds_file"])

    # --- tools/list -------------------------------------------------------------------

    def test_tools_list(self):
        for via in VIAS:
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                r = self.assertResult(s.request("tools/list", id=1), 1)
                self.assertEqual(list(r), ["tools"])
                tools = r["tools"]
                self.assertEqual([t["name"] for t in tools], [n for n, _, _ in TOOL_ORDER])
                for tool, (name, cap_id, title) in zip(tools, TOOL_ORDER):
                    self.assertEqual(set(tool), {"name", "title", "description", "inputSchema",
                                                 "outputSchema", "_meta", "annotations"}, name)
                    self.assertEqual(tool["title"], title)
                    self.assertIsInstance(tool["description"], str)
                    self.assertTrue(tool["description"].strip())
                    self.assertEqual(tool["_meta"], {"majordomus": {"id": cap_id}})
                    self.assertEqual(tool["annotations"], COMMAND_ANNOTATIONS if name ==
                                     "majordomus_announce" else ANNOTATIONS)
                    self.assertEqual(tool["inputSchema"].get("type"), "object", name)
                    self.assertIs(tool["inputSchema"].get("additionalProperties"), False, name)
                    self.assertEqual(tool["outputSchema"].get("type"), "object", name)
                by = {t["name"]: t for t in tools}
                self.assertEqual(by["majordomus_get"]["inputSchema"].get("required"), ["uri"])
                self.assertIn("majordomus://repository", by["majordomus_get"]["description"])
                search = by["majordomus_search"]["inputSchema"]
                self.assertEqual(search.get("required"), ["query"])
                self.assertEqual(set(search["properties"]), {"query", "kind", "limit", "cursor", "mode"})
                self.assertEqual(search["properties"]["limit"].get("minimum"), 1)
                self.assertEqual(search["properties"]["limit"].get("maximum"), 200)
                self.assertEqual(by["majordomus_capability"]["inputSchema"].get("required"), ["id"])
                lst = by["majordomus_list"]["inputSchema"]
                self.assertEqual(set(lst["properties"]), {"kind", "tag", "limit", "cursor"})
                self.assertEqual(lst["properties"]["limit"].get("minimum"), 1)
                self.assertEqual(lst["properties"]["limit"].get("maximum"), 500)
                self.assertFalse(lst.get("required"))
                caps = by["majordomus_capabilities"]["inputSchema"]
                self.assertEqual(set(caps["properties"]), {"kind", "exposure", "limit", "cursor"})
                self.assertEqual(caps["properties"]["limit"].get("maximum"), 200)
                prompt = by["majordomus_prompt"]["inputSchema"]
                self.assertEqual(prompt.get("required"), ["name"])
                self.assertEqual(set(prompt["properties"]), {"name", "arguments"})
                self.assertEqual(prompt["properties"]["arguments"].get("type"), "object")
                for empty in ("majordomus_perf", "majordomus_repository"):
                    self.assertFalse(by[empty]["inputSchema"].get("required"))
                    self.assertFalse(by[empty]["inputSchema"].get("properties"))
                self.assertEqual(s.close(), 0)

    # --- tools/call -------------------------------------------------------------------

    def test_get_prompt(self):
        raw = support.read_bytes(self.repo, PROMPT_PATH)
        for via in VIAS:
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                sc = self.tool(s, "majordomus_get", {"uri": PROMPT_URI})
                self.assertEqual(sc, {
                    "source": "declarative", "uri": PROMPT_URI, "id": "prompt.continue",
                    "kind": "prompt", "identity": "continue", "title": "continue",
                    "description": "pick up unfinished work from its notes",
                    "metadata": {"name": "continue",
                                 "description": "pick up unfinished work from its notes"},
                    "provenance": {"path": PROMPT_PATH, "directory": ".ai/repo/prompts",
                                   "source_class": "prompt", "section": "prompts",
                                   "bytes": len(raw)},
                    "media_type": "text/markdown", "content": raw.decode("utf-8")})
                self.assertEqual(list(sc), ["source", "uri", "id", "kind", "identity", "title",
                                            "description", "metadata", "provenance",
                                            "media_type", "content"])
                self.assertEqual(s.close(), 0)

    def test_get_rule_metadata_and_policy(self):
        s = self.open(self.repo)
        sc = self.tool(s, "majordomus_get", {"uri": RULE_URI})
        self.assertEqual(sc["source"], "declarative")
        self.assertEqual(sc["metadata"]["id"], "majordomus.scope-integrity")
        self.assertEqual(sc["metadata"]["version"], 1)
        self.assertEqual(sc["metadata"]["tags"], ["scope", "review"])
        self.assertEqual(sc["metadata"]["x-majordomus"]["exit_code"], 10)
        self.assertEqual(list(sc["metadata"])[:4], ["id", "version", "kind", "title"])
        self.assertEqual(sc["content"].encode("utf-8"), support.read_bytes(self.repo, RULE_PATH))
        sc = self.tool(s, "majordomus_get", {"uri": POLICY_URI})
        self.assertNotIn("title", sc)
        self.assertNotIn("description", sc)
        self.assertEqual(sc["media_type"], "application/yaml")
        self.assertEqual(sc["metadata"]["version"], 1)
        self.assertEqual(sc["metadata"]["handover"]["required_sections"],
                         ["Goal", "Where it stands", "What comes next"])
        # a markdown document without front matter has {} metadata
        sc = self.tool(s, "majordomus_get", {"uri": README_URI})
        self.assertEqual(sc["metadata"], {})
        self.assertEqual(sc["title"], "Fixture layer")

    def test_get_repository(self):
        for via in VIAS:
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                sc = self.tool(s, "majordomus_get", {"uri": REPOSITORY_URI})
                self.assertEqual(sc["source"], "builtin")
                self.assertEqual(sc["uri"], REPOSITORY_URI)
                self.assertEqual(sc["id"], "repository.info")
                self.assertEqual(sc["kind"], "query")
                self.assertEqual(sc["identity"], "repository")
                self.assertEqual(sc["title"], "Repository and index state")
                self.assertEqual(sc["provenance"], BUILTIN_PROVENANCE)
                self.assertEqual(sc["media_type"], "application/json")
                self.assertEqual(sc["answer"]["state"], "ok")
                keys = [k for k in sc if k != "description"]
                self.assertEqual(keys, ["source", "uri", "id", "kind", "identity", "title",
                                        "answer", "provenance", "media_type", "content"])
                self.assertEqual(json.loads(sc["content"]), sc["answer"])
                direct = self.tool(s, "majordomus_repository", {})
                self.assertEqual(sc["answer"], direct)
                no_args = self.tool(s, "majordomus_repository")
                self.assertEqual(no_args, direct)
                read = self.assertResult(s.request("resources/read", {"uri": REPOSITORY_URI},
                                                   id="r"), "r")
                self.assertEqual(sc["content"], read["contents"][0]["text"])
                self.check_report(direct)
                self.assertEqual(s.close(), 0)

    def test_get_errors(self):
        s = self.open(self.repo)
        for uri in ("majordomus://nope", "majordomus://document/../../etc/passwd",
                    "majordomus://prompt/%63ontinue", "/etc/passwd", ""):
            self.assertToolError(self.call(s, "majordomus_get", {"uri": uri}),
                                 text="not found: unknown resource: " + uri)
        self.assertToolError(self.call(s, "majordomus_get", {}), prefix="invalid input: ",
                             contains=("uri",))
        self.assertToolError(self.call(s, "majordomus_get", {"uri": 5}),
                             prefix="invalid input: ", contains=("uri",))
        self.assertToolError(self.call(s, "majordomus_get", {"uri": PROMPT_URI, "extra": 1}),
                             prefix="invalid input: ", contains=("extra",))
        # objects.get never runs a capability named by id
        self.assertToolError(self.call(s, "majordomus_get", {"uri": "perf.counters"}),
                             text="not found: unknown resource: perf.counters")
        self.assertPing(s)

    def test_list(self):
        s = self.open(self.repo)
        sc = self.tool(s, "majordomus_list", {})
        self.assertEqual(list(sc), ["count", "total", "objects"])
        self.assertEqual((sc["count"], sc["total"]), (9, 9))
        self.assertEqual([o["uri"] for o in sc["objects"]], SKELETON_URIS)
        self.assertEqual(self.tool(s, "majordomus_list"), sc)
        by = {o["uri"]: o for o in sc["objects"]}
        self.assertEqual(by[RULE_URI], {
            "uri": RULE_URI, "id": "rule.majordomus.scope-integrity@1", "kind": "rule",
            "identity": "majordomus.scope-integrity@1", "title": "Stay inside the claimed paths",
            "description": "A task changes only the files it said it would change.",
            "path": RULE_PATH})
        self.assertEqual(by[POLICY_URI], {
            "uri": POLICY_URI, "id": "policy..ai/repo/policy.yaml", "kind": "policy",
            "identity": ".ai/repo/policy.yaml", "path": POLICY_PATH})
        rules = self.tool(s, "majordomus_list", {"kind": "rule"})
        self.assertEqual(rules, {"count": 1, "total": 1, "objects": [by[RULE_URI]]})
        docs = self.tool(s, "majordomus_list", {"kind": "document"})
        self.assertEqual((docs["count"], docs["total"]), (5, 5))
        self.assertEqual([o["uri"] for o in docs["objects"]],
                         [u for u in SKELETON_URIS if u.startswith("majordomus://document/")])
        tagged = self.tool(s, "majordomus_list", {"tag": "review"})
        self.assertEqual(tagged, {"count": 1, "total": 1, "objects": [by[RULE_URI]]})
        both = self.tool(s, "majordomus_list", {"kind": "rule", "tag": "scope"})
        self.assertEqual(both["count"], 1)
        self.assertEqual(self.tool(s, "majordomus_list", {"kind": "document", "tag": "scope"}),
                         {"count": 0, "total": 0, "objects": []})
        self.assertEqual(self.tool(s, "majordomus_list", {"tag": "no-such-tag"}),
                         {"count": 0, "total": 0, "objects": []})
        # §16: pages of 5 in URI order; the second page is the last, without next_cursor
        first = self.tool(s, "majordomus_list", {"limit": 5})
        self.assertEqual(list(first), ["count", "total", "objects", "next_cursor"])
        self.assertEqual((first["count"], first["total"]), (5, 9))
        self.assertEqual(first["objects"], sc["objects"][:5])
        rest = self.tool(s, "majordomus_list", {"limit": 5, "cursor": first["next_cursor"]})
        self.assertEqual(rest, {"count": 4, "total": 9, "objects": sc["objects"][5:]})
        self.assertToolError(self.call(s, "majordomus_list", {"cursor": "not-a-cursor"}),
                             text="invalid input: parameter 'cursor' is not a cursor this "
                                  "server issued")
        for bad in (0, 501):
            self.assertToolError(self.call(s, "majordomus_list", {"limit": bad}),
                                 prefix="invalid input: ", contains=("limit",))
        self.assertToolError(
            self.call(s, "majordomus_list", {"kind": "x"}),
            text="invalid input: kind 'x' is not among the kinds this repository has: "
                 "document, policy, profile, prompt, rule")
        self.assertToolError(
            self.call(s, "majordomus_list", {"kind": "milestone"}),
            text="invalid input: kind 'milestone' is not among the kinds this repository has: "
                 "document, policy, profile, prompt, rule")
        self.assertToolError(self.call(s, "majordomus_list", {"bogus": 1}),
                             prefix="invalid input: ", contains=("bogus",))
        self.assertToolError(self.call(s, "majordomus_list", {"kind": 5}),
                             prefix="invalid input: ", contains=("kind",))
        self.assertPing(s)

    def test_search(self):
        """mode substring: §7.6 and §16 exactly (the ranked default: test_search.py)."""
        s = self.open(self.repo)
        sc = self.tool(s, "majordomus_search", {"mode": "substring", "query": "UNFINISHED"})
        self.assertEqual(list(sc), ["query", "count", "total", "limit", "hits"])
        self.assertEqual(sc["query"], "UNFINISHED")
        self.assertEqual((sc["count"], sc["total"]), (1, 1))
        self.assertEqual(sc["limit"], 20)
        self.assertEqual(sc["hits"], [{
            "uri": PROMPT_URI, "id": "prompt.continue", "kind": "prompt",
            "identity": "continue", "title": "continue",
            "description": "pick up unfinished work from its notes", "path": PROMPT_PATH,
            "snippet": "description: pick up unfinished work from its notes"}])
        # matched by identity only: no content line carries it, so no snippet
        sc = self.tool(s, "majordomus_search", {"mode": "substring", "query": "policy.YAML"})
        self.assertEqual(sc["count"], 1)
        self.assertEqual(sc["hits"][0]["uri"], POLICY_URI)
        self.assertNotIn("snippet", sc["hits"][0])
        # many hits, in URI order, snippet = first matching content line, trimmed
        expected = []
        for uri in SKELETON_URIS:
            text = support.read_bytes(self.repo, SKELETON_OBJECTS[uri][2]).decode("utf-8")
            lines = [l for l in text.split("\n") if "scope" in l.lower()]
            if lines or "scope" in uri.lower():
                expected.append((uri, lines[0].strip()[:200] if lines else None))
        sc = self.tool(s, "majordomus_search", {"mode": "substring", "query": "Scope"})
        self.assertEqual((sc["count"], sc["total"]), (len(expected), len(expected)))
        self.assertNotIn("next_cursor", sc)
        self.assertEqual([(h["uri"], h.get("snippet")) for h in sc["hits"]], expected)
        self.assertGreaterEqual(len(expected), 3)
        sc = self.tool(s, "majordomus_search", {"mode": "substring", "query": "Scope", "limit": 2})
        self.assertEqual((sc["count"], sc["total"], sc["limit"]), (2, len(expected), 2))
        self.assertEqual([h["uri"] for h in sc["hits"]], [u for u, _ in expected[:2]])
        # §16: the rest through next_cursor, two at a time
        uris = [h["uri"] for h in sc["hits"]]
        while "next_cursor" in sc:
            sc = self.tool(s, "majordomus_search", {"mode": "substring", "query": "Scope", "limit": 2,
                                                    "cursor": sc["next_cursor"]})
            self.assertEqual(sc["total"], len(expected))
            uris += [h["uri"] for h in sc["hits"]]
        self.assertEqual(uris, [u for u, _ in expected])
        sc = self.tool(s, "majordomus_search", {"mode": "substring", "query": "scope", "kind": "rule", "limit": 200})
        self.assertEqual([h["uri"] for h in sc["hits"]], [RULE_URI])
        self.assertEqual(sc["limit"], 200)
        sc = self.tool(s, "majordomus_search", {"mode": "substring", "query": "zzz-nothing-matches-this"})
        self.assertEqual((sc["count"], sc["hits"]), (0, []))
        # errors
        for bad in (0, 201, -1, "5", 1.5, True):
            self.assertToolError(self.call(s, "majordomus_search",
                                           {"query": "scope", "limit": bad}),
                                 prefix="invalid input:", contains=("limit",))
        for blank in ("", "   ", "\t\n"):
            self.assertToolError(
                self.call(s, "majordomus_search", {"query": blank}),
                text="refused: argument 'query' is required and must not be blank")
        self.assertToolError(self.call(s, "majordomus_search", {}),
                             prefix="invalid input: ", contains=("query",))
        self.assertToolError(
            self.call(s, "majordomus_search", {"query": "scope", "kind": "x"}),
            text="invalid input: kind 'x' is not among the kinds this repository has: "
                 "document, policy, profile, prompt, rule")
        self.assertToolError(self.call(s, "majordomus_search", {"query": "a", "nope": True}),
                             prefix="invalid input: ", contains=("nope",))
        self.assertPing(s)

    def test_capabilities(self):
        s = self.open(self.repo)
        sc = self.tool(s, "majordomus_capabilities", {})
        # §16: the default page is 20: the skeleton's 25 take two
        self.assertEqual(list(sc), ["count", "total", "summary", "capabilities", "next_cursor"])
        self.assertEqual((sc["count"], sc["total"]), (20, 27))
        summary = sc["summary"]
        self.assertEqual((summary["total"], summary["builtin"], summary["declarative"]),
                         (27, 18, 9))
        self.assertEqual((summary["mcp_tools"], summary["mcp_resources"], summary["http_routes"],
                          summary["cli_commands"]), (13, 11, 18, 13))
        self.assertEqual(summary["by_kind"].get("query"), 15)
        self.assertEqual(summary["by_kind"].get("command"), 3)
        sc = dict(sc, capabilities=sc["capabilities"] + self.tool(
            s, "majordomus_capabilities", {"cursor": sc["next_cursor"]})["capabilities"])
        self.assertEqual(summary["by_kind"].get("resource"), 9)
        ids = [c["id"] for c in sc["capabilities"]]
        self.assertEqual(ids, sorted(ids))
        expected_ids = sorted([c for _, c, _ in TOOL_ORDER] + support.WITHOUT_TOOL + [
            "%s.%s" % (v[0], v[1]) for v in SKELETON_OBJECTS.values()])
        self.assertEqual(ids, expected_ids)
        q = self.tool(s, "majordomus_capabilities", {"kind": "query"})
        self.assertEqual((q["count"], q["total"]), (15, 15))
        self.assertEqual(q["summary"], summary)
        r = self.tool(s, "majordomus_capabilities", {"kind": "resource", "exposure": "mcp"})
        self.assertEqual(r["count"], 9)
        cli = self.tool(s, "majordomus_capabilities", {"exposure": "cli"})
        self.assertEqual([c["id"] for c in cli["capabilities"]],
                         ["capabilities.describe", "capabilities.list", "context.affected",
                          "context.brief", "context.list", "context.resolve", "context.sync",
                          "context.validate", "hook.deliver", "objects.get", "objects.search",
                          "peers.list", "prompts.get"])
        page = self.tool(s, "majordomus_capabilities", {"limit": 10})
        self.assertEqual((page["count"], page["total"]), (10, 27))
        self.assertEqual(page["capabilities"], sc["capabilities"][:10])
        rest = self.tool(s, "majordomus_capabilities", {"cursor": page["next_cursor"]})
        self.assertEqual((rest["count"], rest["total"]), (17, 27))
        self.assertNotIn("next_cursor", rest)
        self.assertEqual(rest["capabilities"], sc["capabilities"][10:])
        self.assertToolError(self.call(s, "majordomus_capabilities", {"kind": "bogus"}),
                             prefix="invalid input: ", contains=("kind",))
        self.assertToolError(self.call(s, "majordomus_capabilities", {"exposure": "ftp"}),
                             prefix="invalid input: ", contains=("exposure",))
        d = self.tool(s, "majordomus_capability", {"id": "objects.get"})
        self.assertEqual(d["id"], "objects.get")
        self.assertEqual(d["module"], "objects")
        self.assertEqual(d["kind"], "query")
        self.assertEqual(d["output"]["name"], "ResourceView")
        self.assertEqual(d["provenance"], BUILTIN_PROVENANCE)
        self.assertEqual(d["exposure"]["mcp"], {"tool": "majordomus_get"})
        self.assertEqual(d["exposure"]["http"], {"method": "GET", "path": "/api/v1/object"})
        self.assertEqual(d["exposure"]["cli"], {"path": ["get"]})
        self.assertEqual(d["cache"], {"policy": "disabled"})
        self.assertEqual([k for k in d if k != "tags"],
                         ["id", "module", "kind", "title", "description", "input", "output",
                          "provenance", "exposure", "stability", "cache"])
        self.assertEqual(d, [c for c in sc["capabilities"] if c["id"] == "objects.get"][0])
        d = self.tool(s, "majordomus_capability", {"id": "objects.search"})
        self.assertEqual(d["cache"], {"policy": "process", "max_entries": 64})
        d = self.tool(s, "majordomus_capability", {"id": "repository.info"})
        self.assertEqual(d["exposure"]["mcp"], {
            "tool": "majordomus_repository",
            "resource": {"uri": REPOSITORY_URI, "name": "repository"}})
        d = self.tool(s, "majordomus_capability", {"id": "prompt.continue"})
        self.assertEqual(d["exposure"], {"mcp": {
            "resource": {"uri": PROMPT_URI, "name": "continue"},
            "prompt": {"name": "continue"}}})
        d = self.tool(s, "majordomus_capability", {"id": "prompts.get"})
        self.assertEqual(d["exposure"], {"mcp": {"tool": "majordomus_prompt"},
                                         "http": {"method": "GET", "path": "/api/v1/prompt"},
                                         "cli": {"path": ["prompt"]}})
        self.assertEqual((d["input"]["name"], d["output"]["name"]),
                         ("PromptInput", "PromptResult"))
        self.assertEqual(d["cache"], {"policy": "disabled"})
        d = self.tool(s, "majordomus_capability", {"id": "rule.majordomus.scope-integrity@1"})
        self.assertEqual(d["kind"], "resource")
        self.assertEqual(d["module"], "rule")
        self.assertEqual(d["title"], "Stay inside the claimed paths")
        self.assertEqual(d["tags"], ["scope", "review"])
        self.assertEqual(d["exposure"], {"mcp": {"resource": {
            "uri": RULE_URI, "name": "majordomus.scope-integrity@1"}}})
        self.assertEqual(d["provenance"]["source"], "declarative")
        self.assertEqual(d["provenance"]["path"], RULE_PATH)
        self.assertEqual(d["provenance"]["media_type"], "text/markdown")
        self.assertToolError(self.call(s, "majordomus_capability", {"id": "x"}),
                             text="not found: unknown capability: x")
        self.assertToolError(self.call(s, "majordomus_capability", {}),
                             prefix="invalid input: ", contains=("id",))
        self.assertPing(s)

    def test_perf(self):
        s = self.open(self.repo)
        sc = self.tool(s, "majordomus_perf", {})
        for name in COUNTERS:
            self.assertIn(name, sc)
        for name in COUNTERS[:-1]:
            self.assertIsInstance(sc[name], int, name)
        for phase in PHASES:
            self.assertIn(phase, sc["phases"])
            self.assertEqual(set(sc["phases"][phase]), {"count", "total_nanos"})
        self.assertEqual(sc["index_builds"], 1)
        self.assertEqual(sc["registry_builds"], 1)
        self.assertEqual(sc["phases"]["index_build"]["count"], 1)
        self.assertEqual(sc["phases"]["registry_build"]["count"], 1)
        self.assertEqual(sc["phases"]["repository_discovery"]["count"], 1)
        self.assertToolError(self.call(s, "majordomus_perf", {"x": 1}),
                             prefix="invalid input: ", contains=("x",))


# ------------------------------------------------------------------------------------------
# Bad frames (§9.2, §9.3)
# ------------------------------------------------------------------------------------------

class FrameErrorTests(support.ClassRepo, McpTestCase):
    def bad(self, s, raw, code, id=None, message=None, prefix=None, contains=None):
        s.send_raw(raw)
        err = self.assertError(s.recv(), id, code, message=message, prefix=prefix,
                               contains=contains)
        self.assertPing(s)
        return err

    def silent(self, s, raw):
        """raw gets no answer: the next answer is the ping's."""
        s.send_raw(raw)
        self.assertPing(s)

    def test_parse_errors(self):
        for via in VIAS:
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                self.bad(s, b"{not json\n", -32700, prefix="parse error: ")
                self.bad(s, b'{"jsonrpc":"2.0","id":1,"method":"ping"\n', -32700,
                         prefix="parse error: ")
                self.bad(s, b"\xff\xfe\n", -32700, message="parse error: input is not UTF-8")
                self.bad(s, b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"\xc3("}\n', -32700,
                         message="parse error: input is not UTF-8")
                self.assertEqual(s.close(), 0, s.stderr())
                self.assertNotIn("Traceback", s.stderr())

    def test_line_over_one_mebibyte(self):
        s = self.open(self.repo)
        head = b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"'
        tail = b'"}}'
        # exactly 1 MiB (newline excluded) is within the bound
        exact = head + b"x" * (1048576 - len(head) - len(tail)) + tail
        self.assertEqual(len(exact), 1048576)
        s.send_raw(exact + b"\n")
        self.assertEqual(self.assertResult(s.recv(), "big"), {})
        # one byte more is over it
        over = head + b"x" * (1048577 - len(head) - len(tail)) + tail
        self.bad(s, over + b"\n", -32700, contains="bound")
        # far over, and not JSON either
        self.bad(s, b"y" * (5 * 1048576) + b"\n", -32700, contains="bound")
        self.assertEqual(s.close(), 0, s.stderr())

    @unittest.skipUnless(sys.platform.startswith("linux"), "peak RSS read from /proc")
    def test_oversized_line_not_held_in_memory(self):
        s = self.open(self.repo)
        self.assertPing(s)

        def peak():
            with open("/proc/%d/status" % s.proc.pid) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
            raise AssertionError("no VmHWM")

        before = peak()
        chunk = b"z" * 1048576
        for _ in range(48):
            s.send_raw(chunk)
        s.send_raw(b"\n")
        self.assertError(s.recv(), None, -32700, contains="bound")
        self.assertPing(s)
        grown = peak() - before
        self.assertLess(grown, 24 * 1048576,
                        "peak RSS grew by %d bytes for a 48 MiB line" % grown)

    def test_not_an_object(self):
        s = self.open(self.repo)
        for raw in (b"42\n", b'"s"\n', b"null\n", b"true\n", b"1.5\n"):
            self.bad(s, raw, -32600, message="a message is a JSON object")

    def test_hostile_json_never_ends_the_session(self):
        s = self.open(self.repo)
        for raw in (b"[" * 200000 + b"]" * 200000 + b"\n",
                    b'{"a":' * 100000 + b"1" + b"}" * 100000 + b"\n"):
            s.send_raw(raw)
            answer = s.recv()
            self.assertIsNone(answer.get("id"), str(answer)[:300])
            self.assertIn(answer["error"]["code"], (-32700, -32600))
            self.assertPing(s)
        self.bad(s, b"NaN\n", -32700, prefix="parse error: ")
        # values a client may legally send inside arguments come back as input errors
        nested = {"query": "x", "kind": [[[[[[[[["deep"]]]]]]]]]}
        self.assertToolError(self.call(s, "majordomus_search", nested),
                             prefix="invalid input: ", contains=("kind",))
        self.assertToolError(self.call(s, "majordomus_get", {"uri": "majordomus://\u0000"}),
                             text="not found: unknown resource: majordomus://\u0000")
        self.assertEqual(s.close(), 0, s.stderr())
        self.assertNotIn("Traceback", s.stderr())

    def test_batches(self):
        for via in ("pyz",):
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                self.bad(s, b"[]\n", -32600, message="empty batch")
                s.send_raw(b'[{"jsonrpc":"2.0","id":11,"method":"ping"},'
                           b'{"jsonrpc":"2.0","method":"notifications/initialized"},42]\n')
                line = s.recv_line()
                answers = json.loads(line)
                self.assertIsInstance(answers, list)
                self.assertEqual(len(answers), 2, answers)
                self.assertEqual(self.assertResult(answers[0], 11), {})
                self.assertError(answers[1], None, -32600, message="a message is a JSON object")
                self.assertPing(s)
                # a batch of requests: answers in order, on one line
                s.send_raw(b'[{"jsonrpc":"2.0","id":"a","method":"ping"},'
                           b'{"jsonrpc":"2.0","id":"b","method":"logging/setLevel"},'
                           b'{"jsonrpc":"2.0","id":"c","method":"resources/read",'
                           b'"params":{"uri":"' + PROMPT_URI.encode() + b'"}},'
                           b'{"jsonrpc":"2.0","id":"d","method":"prompts/list"}]\n')
                answers = json.loads(s.recv_line())
                self.assertEqual([a["id"] for a in answers], ["a", "b", "c", "d"])
                self.assertError(answers[1], "b", -32601,
                                 message="method not found: logging/setLevel")
                self.assertEqual(answers[2]["result"]["contents"][0]["uri"], PROMPT_URI)
                self.assertEqual([p["name"] for p in
                                  self.assertResult(answers[3], "d")["prompts"]], ["continue"])
                self.assertPing(s)
                # only notifications: no answer at all
                self.silent(s, b'[{"jsonrpc":"2.0","method":"notifications/initialized"},'
                               b'{"jsonrpc":"2.0","method":"ping"}]\n')
                self.assertEqual(s.close(), 0, s.stderr())

    def test_missing_method_and_notifications(self):
        s = self.open(self.repo)
        self.bad(s, b'{"jsonrpc":"2.0","id":9}\n', -32600, id=9, message="missing method")
        self.bad(s, b'{"jsonrpc":"2.0","id":"q","method":5}\n', -32600, id="q",
                 message="missing method")
        self.bad(s, b'{"jsonrpc":"2.0","id":0,"params":{}}\n', -32600, id=0,
                 message="missing method")
        # no id and no method: a response or junk, never answered
        self.silent(s, b'{"jsonrpc":"2.0","result":{}}\n')
        self.silent(s, b'{}\n')
        # notifications are never answered, known or not
        self.silent(s, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.silent(s, b'{"jsonrpc":"2.0","method":"notifications/cancelled",'
                       b'"params":{"requestId":1}}\n')
        self.silent(s, b'{"jsonrpc":"2.0","method":"ping"}\n')
        self.silent(s, b'{"jsonrpc":"2.0","method":"tools/list","id":null}\n')
        self.silent(s, b'{"jsonrpc":"2.0","method":"no/such"}\n')
        self.assertEqual(s.pending(0.2), [])

    def test_blank_lines_and_crlf(self):
        s = self.open(self.repo)
        self.silent(s, b"\n\n\n")
        s.send_raw(b'{"jsonrpc":"2.0","id":"crlf","method":"ping"}\r\n')
        self.assertEqual(self.assertResult(s.recv(), "crlf"), {})
        self.assertPing(s)
        self.assertEqual(s.pending(0.2), [])

    def test_unknown_methods(self):
        for via in ("pyz",):
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                # prompts/* (§17) and resources/subscribe (§15.4) are served now
                # (SkeletonTests.test_prompts_*, test_subscribe); server/discover is §18
                for m in ("logging/setLevel", "completion/complete", "sampling/createMessage",
                          "nonsense"):
                    s.send({"jsonrpc": "2.0", "id": m, "method": m})
                    self.assertError(s.recv(), m, -32601, message="method not found: " + m)
                    self.assertPing(s)
                # a modern method without its _meta is -32602 naming the key, never -32601
                s.send({"jsonrpc": "2.0", "id": "sd", "method": "server/discover"})
                self.assertError(s.recv(), "sd", -32602,
                                 contains="io.modelcontextprotocol/protocolVersion")
                self.assertPing(s)

    def test_resources_read_errors(self):
        s = self.open(self.repo)
        for params in (None, {}, {"uri": 5}, {"uri": None}, {"uri": ["x"]}):
            id = s.new_id()
            self.assertError(s.request("resources/read", params, id=id), id, -32602,
                             message="params.uri is required")
            self.assertPing(s)
        for uri in ("majordomus://nope", "majordomus://document/../../etc/passwd",
                    "majordomus://document//etc/passwd", "majordomus://document/%2E%2E/%2E%2E/etc/passwd",
                    "majordomus://document/..%2F..%2Fetc%2Fpasswd",
                    "majordomus://prompt/%63ontinue", "majordomus://document/README%2Emd",
                    "majordomus://document/" + os.path.join(self.repo, "README.md"),
                    "majordomus://document/./README.md", "majordomus://document/README.md/",
                    "MAJORDOMUS://prompt/continue", "majordomus://prompt/continue?x=1",
                    "majordomus://repository/", "file:///etc/passwd", "/etc/passwd",
                    "README.md", "", "majordomus://document/.ai/local/state/open-questions.md"):
            id = s.new_id()
            self.assertError(s.request("resources/read", {"uri": uri}, id=id), id, -32002,
                             message="resource not found: " + uri)
            self.assertPing(s)
        # and the tool gives NotFound for the same URIs
        self.assertToolError(self.call(s, "majordomus_get",
                                       {"uri": "majordomus://document//etc/passwd"}),
                             text="not found: unknown resource: majordomus://document//etc/passwd")

    def test_tools_call_errors(self):
        for via in ("pyz",):
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                for params in (None, {}, {"name": 5}, {"name": None},
                               {"arguments": {}}):
                    id = s.new_id()
                    self.assertError(s.request("tools/call", params, id=id), id, -32602,
                                     message="params.name is required")
                    self.assertPing(s)
                for args in ([], "x", 5, True, ["uri"]):
                    id = s.new_id()
                    self.assertError(s.request("tools/call", {"name": "majordomus_get",
                                                              "arguments": args}, id=id),
                                     id, -32602, message="params.arguments must be an object")
                    self.assertPing(s)
                for name in ("x", "objects.get", "majordomus_GET", ""):
                    id = s.new_id()
                    self.assertError(s.request("tools/call", {"name": name, "arguments": {}},
                                               id=id),
                                     id, -32602, message="unknown tool: " + name)
                    self.assertPing(s)
                self.assertEqual(s.close(), 0, s.stderr())
                self.assertNotIn("Traceback", s.stderr())

    def test_id_echo(self):
        ids = ["7", 0, -1, 9007199254740991, "", "ñandú ✓ 日本語 🎉", "a\"b\\c", "1"]
        for via in ("pyz",):
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                for id in ids:
                    s.send({"jsonrpc": "2.0", "id": id, "method": "ping"})
                    line = s.recv_line()
                    answer = json.loads(line)
                    self.assertEqual(self.assertResult(answer, id), {})
                    if id == 9007199254740991:
                        self.assertIn(b'9007199254740991', line)
                        self.assertNotIn(b"9007199254740991.0", line)
                # errors echo the id too
                s.send({"jsonrpc": "2.0", "id": "ñ-7", "method": "logging/setLevel"})
                self.assertError(s.recv(), "ñ-7", -32601)
                s.send({"jsonrpc": "2.0", "id": 0, "method": "tools/call",
                        "params": {"name": "x"}})
                self.assertError(s.recv(), 0, -32602, message="unknown tool: x")
                self.assertEqual(s.close(), 0)


# ------------------------------------------------------------------------------------------
# Throughput, counters, cache
# ------------------------------------------------------------------------------------------

class LoadTests(support.ClassRepo, McpTestCase):
    def test_thousand_pipelined_requests_in_order(self):
        s = self.open(self.repo)
        methods = []
        chunks = []
        for i in range(1, 1001):
            if i % 3 == 0:
                msg = {"jsonrpc": "2.0", "id": i, "method": "resources/read",
                       "params": {"uri": PROMPT_URI}}
            elif i % 3 == 1:
                msg = {"jsonrpc": "2.0", "id": i, "method": "ping"}
            else:
                msg = {"jsonrpc": "2.0", "id": i, "method": "resources/templates/list"}
            methods.append(msg["method"])
            chunks.append(json.dumps(msg).encode() + b"\n")
        data = b"".join(chunks)
        errors = []

        def writer():
            try:
                s.send_raw(data)
            except Exception as e:  # reported below
                errors.append(e)

        t = threading.Thread(target=writer, daemon=True)
        t0 = time.monotonic()
        t.start()
        answers = [s.recv() for _ in range(1000)]
        t.join(10)
        elapsed = time.monotonic() - t0
        self.assertEqual(errors, [])
        self.assertEqual([a["id"] for a in answers], list(range(1, 1001)))
        for a, m in zip(answers, methods):
            self.assertIn("result", a)
            if m == "ping":
                self.assertEqual(a["result"], {})
            elif m == "resources/templates/list":
                self.assertEqual(a["result"], {"resourceTemplates": []})
            else:
                self.assertEqual(a["result"]["contents"][0]["uri"], PROMPT_URI)
        self.assertLess(elapsed, 20)
        self.assertEqual(s.pending(0.1), [])
        self.assertEqual(s.close(), 0)
        self.assertRegex(s.stderr(), r"\banswered=1000\b")

    def test_counters_after_mixed_requests(self):
        s = self.open(self.repo)
        self.initialize(s)
        s.notify("notifications/initialized")
        mix = [
            ("resources/list", None), ("tools/list", None),
            ("resources/read", {"uri": RULE_URI}), ("resources/read", {"uri": REPOSITORY_URI}),
            ("tools/call", {"name": "majordomus_get", "arguments": {"uri": PROMPT_URI}}),
            ("tools/call", {"name": "majordomus_get", "arguments": {"uri": REPOSITORY_URI}}),
            ("tools/call", {"name": "majordomus_list", "arguments": {"kind": "document"}}),
            ("tools/call", {"name": "majordomus_search", "arguments": {"query": "scope"}}),
            ("tools/call", {"name": "majordomus_capabilities", "arguments": {}}),
            ("tools/call", {"name": "majordomus_capability", "arguments": {"id": "objects.get"}}),
            ("tools/call", {"name": "majordomus_repository", "arguments": {}}),
            ("resources/read", {"uri": "majordomus://nope"}),
            ("ping", None),
        ]
        for i in range(200):
            method, params = mix[i % len(mix)]
            a = s.request(method, params, id=1000 + i)
            self.assertEqual(a["id"], 1000 + i)
        sc = self.tool(s, "majordomus_perf", {})
        self.assertEqual(sc["index_builds"], 1)
        self.assertEqual(sc["registry_builds"], 1)
        self.assertEqual(sc["mcp_projection_builds"], 1)
        self.assertEqual(sc["phases"]["index_build"]["count"], 1)
        self.assertEqual(sc["phases"]["registry_build"]["count"], 1)
        self.assertGreater(sc["executions"], 100)
        self.assertGreater(sc["cache_hits"], 0)

    def test_search_cache_hit(self):
        for via in ("pyz",):
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                args = {"query": "verification", "limit": 3}
                p0 = self.tool(s, "majordomus_perf")
                first = self.tool(s, "majordomus_search", args)
                p1 = self.tool(s, "majordomus_perf")
                second = self.tool(s, "majordomus_search", {"limit": 3, "query": "verification"})
                p2 = self.tool(s, "majordomus_perf")
                self.assertEqual(first, second)
                self.assertEqual(p1["cache_misses"] - p0["cache_misses"], 1)
                self.assertEqual(p1["cache_hits"], p0["cache_hits"])
                self.assertEqual(p2["cache_hits"] - p1["cache_hits"], 1)
                self.assertEqual(p2["cache_misses"], p1["cache_misses"])
                # each step: one search and one perf execution; the cached search runs no handler
                self.assertEqual(p2["executions"] - p1["executions"], 2)
                self.assertEqual(p1["executions"] - p0["executions"], 2)
                self.assertEqual(p2["handler_invocations"] - p1["handler_invocations"], 1)
                self.assertEqual(p1["handler_invocations"] - p0["handler_invocations"], 2)
                # a disabled capability never touches the hit/miss counters
                self.tool(s, "majordomus_get", {"uri": PROMPT_URI})
                self.tool(s, "majordomus_get", {"uri": PROMPT_URI})
                p3 = self.tool(s, "majordomus_perf")
                self.assertEqual((p3["cache_hits"], p3["cache_misses"]),
                                 (p2["cache_hits"], p2["cache_misses"]))
                # errors are never cached
                for _ in range(2):
                    self.assertToolError(self.call(s, "majordomus_search", {"query": "  "}),
                                         text="refused: argument 'query' is required and "
                                              "must not be blank")
                p4 = self.tool(s, "majordomus_perf")
                self.assertEqual(p4["cache_hits"], p3["cache_hits"])
                # a different input is a different key
                self.tool(s, "majordomus_search", {"query": "verification", "limit": 4})
                p5 = self.tool(s, "majordomus_perf")
                self.assertEqual(p5["cache_hits"], p4["cache_hits"])
                self.assertEqual(p5["index_builds"], 1)
                self.assertEqual(s.close(), 0)


# ------------------------------------------------------------------------------------------
# Repositories other than the plain skeleton
# ------------------------------------------------------------------------------------------

BROKEN_RULE = ".ai/repo/rules/project/broken.v1.md"


class DegradedTests(McpTestCase):
    @classmethod
    def setUpClass(cls):
        cls.repo = support.class_repo(cls, files={BROKEN_RULE: "---\nid: broken\nversion: 1\n"})

    def test_degraded_index_still_serves(self):
        for via in VIAS:
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                r = self.initialize(s)
                self.assertIn("index state degraded", r["instructions"])
                self.assertNotIn("index state ok", r["instructions"])
                self.assertIn("9 object(s)", r["instructions"])
                read = self.assertResult(s.request("resources/read", {"uri": REPOSITORY_URI},
                                                   id=2), 2)
                report = json.loads(read["contents"][0]["text"])
                self.assertEqual(report["state"], "degraded")
                self.assertEqual(report["objects"], 9)
                self.assertEqual(report["diagnostics"], [{
                    "severity": "error", "code": "malformed_front_matter", "path": BROKEN_RULE,
                    "message": "front matter opened on line 1 and never closed"}])
                self.assertEqual(self.tool(s, "majordomus_repository"), report)
                rule = self.assertResult(s.request("resources/read", {"uri": RULE_URI}, id=3), 3)
                self.assertEqual(rule["contents"][0]["text"].encode(),
                                 support.read_bytes(self.repo, RULE_PATH))
                lst = self.tool(s, "majordomus_list", {})
                self.assertEqual([o["uri"] for o in lst["objects"]], SKELETON_URIS)
                self.assertFalse([o for o in lst["objects"] if o["path"] == BROKEN_RULE])
                self.assertEqual(s.close(), 0)
                err = s.stderr()
                built = [l for l in err.splitlines() if "index built" in l]
                self.assertEqual(len(built), 1, err)
                self.assertRegex(built[0], r"\bobjects=9\b")
                self.assertRegex(built[0], r"\bdiagnostics=1\b")
                self.assertRegex(built[0], r"\bstate=degraded\b")
                diag = [l for l in err.splitlines() if "malformed_front_matter" in l]
                self.assertEqual(len(diag), 1, err)
                self.assertRegex(diag[0], r" ERROR ")


class ContentFidelityTests(McpTestCase):
    """Odd bytes come back byte for byte; long snippets are cut at 200 characters."""

    CRLF_DOC = "docs/crlf.md"
    CRLF_BYTES = ("# Caf\u00e9 \u2713 \U0001F389\r\n\r\nline two\twith a tab \\ \"quoted\" "
                  "</script>\r\n\u2028 end without newline").encode("utf-8")
    LONG_DOC = "docs/long.md"
    LONG_LINE = "   " + "needle " + "\u00e9" * 400 + "   "

    @classmethod
    def setUpClass(cls):
        cls.repo = support.class_repo(cls, files={
            cls.CRLF_DOC: cls.CRLF_BYTES,
            cls.LONG_DOC: "# Long\n\nnothing here\n" + cls.LONG_LINE + "\nneedle again\n",
        })

    def test_read_and_get_byte_for_byte(self):
        for via in VIAS:
            with self.subTest(via=via):
                s = self.open(self.repo, via=via)
                uri = "majordomus://document/" + self.CRLF_DOC
                r = self.assertResult(s.request("resources/read", {"uri": uri}, id=1), 1)
                self.assertEqual(r["contents"][0]["text"].encode("utf-8"), self.CRLF_BYTES)
                sc = self.tool(s, "majordomus_get", {"uri": uri})
                self.assertEqual(sc["content"].encode("utf-8"), self.CRLF_BYTES)
                self.assertEqual(sc["title"], "Caf\u00e9 \u2713 \U0001F389")
                self.assertEqual(sc["provenance"], {
                    "path": self.CRLF_DOC, "directory": "docs", "source_class": "document",
                    "bytes": len(self.CRLF_BYTES)})
                self.assertEqual(s.close(), 0)

    def test_snippet_bounded(self):
        s = self.open(self.repo)
        sc = self.tool(s, "majordomus_search", {"query": "NEEDLE"})
        self.assertEqual(sc["count"], 1)
        hit = sc["hits"][0]
        self.assertEqual(hit["uri"], "majordomus://document/" + self.LONG_DOC)
        self.assertEqual(hit["snippet"], self.LONG_LINE.strip()[:200])
        self.assertEqual(len(hit["snippet"]), 200)


# ------------------------------------------------------------------------------------------
# §12: a session that calls every method and tool leaves the repository unchanged
# ------------------------------------------------------------------------------------------

class ReadOnlyTests(McpTestCase):
    def exercise(self, s):
        self.initialize(s)
        s.notify("notifications/initialized")
        self.assertPing(s)
        for m in ("resources/list", "resources/templates/list", "tools/list"):
            self.assertResult(s.request(m, id=m), m)
        for uri in [REPOSITORY_URI] + SKELETON_URIS:
            self.assertResult(s.request("resources/read", {"uri": uri}, id=uri), uri)
        self.assertError(s.request("resources/read", {"uri": "majordomus://x"}, id="nf"), "nf",
                         -32002)
        prompts = self.assertResult(s.request("prompts/list", id="pl"), "pl")
        self.assertEqual([p["name"] for p in prompts["prompts"]], ["continue"])
        self.assertResult(s.request("prompts/get", {"name": "continue",
                                                    "arguments": {"CONTEXT": "x"}}, id="pg"),
                          "pg")
        self.assertError(s.request("prompts/get", {"name": "nope"}, id="pn"), "pn", -32602)
        for m in ("resources/subscribe", "resources/unsubscribe"):
            self.assertEqual(self.assertResult(s.request(m, {"uri": RULE_URI}, id=m), m), {})
        self.tool(s, "majordomus_prompt", {"name": "continue", "arguments": {"CONTEXT": "x"}})
        self.tool(s, "majordomus_capability", {"id": "objects.get"})
        self.tool(s, "majordomus_capabilities", {})
        self.tool(s, "majordomus_get", {"uri": RULE_URI})
        self.tool(s, "majordomus_get", {"uri": REPOSITORY_URI})
        self.tool(s, "majordomus_list", {"kind": "rule"})
        self.tool(s, "majordomus_search", {"query": "scope"})
        self.tool(s, "majordomus_search", {"query": "scope"})
        self.tool(s, "majordomus_perf", {})
        self.tool(s, "majordomus_repository", {})
        self.assertToolError(self.call(s, "majordomus_search", {"query": " "}))
        s.send_raw(b"{bad\n")
        self.assertError(s.recv(), None, -32700)

    def test_session_leaves_repository_unchanged(self):
        repo = support.make_repo(self)
        # an untracked file and a dirty tracked file make the snapshot more sensitive
        support.write(repo, "untracked.txt", "u\n")
        with open(os.path.join(repo, "README.md"), "ab") as f:
            f.write(b"\nlocal edit\n")
        before = support.snapshot(repo)
        time.sleep(0.05)
        for via in VIAS:
            with self.subTest(via=via):
                s = self.open(repo, via=via)
                self.exercise(s)
                self.assertEqual(s.close(), 0, s.stderr())
                after = support.snapshot(repo)
                self.assertEqual(after, before)
                self.assertFalse(os.path.exists(os.path.join(repo, ".ai", "local", "cache")))
                self.assertFalse([f for f in after["files"] if "__pycache__" in f])

    def test_git_index_not_refreshed(self):
        """A tracked file whose mtime changed would make a plain `git status` rewrite
        .git/index; the tool must run git with GIT_OPTIONAL_LOCKS=0 (§12)."""
        repo = support.make_repo(self)
        index = os.path.join(repo, ".git", "index")
        for via in VIAS:
            with self.subTest(via=via):
                future = time.time() + 5
                for rel in (RULE_PATH, "README.md"):
                    os.utime(os.path.join(repo, rel), (future, future))
                st = os.stat(index)
                raw = support.read_bytes(repo, ".git/index")
                s = self.open(repo, via=via)
                self.exercise(s)
                self.assertEqual(s.close(), 0, s.stderr())
                st2 = os.stat(index)
                self.assertEqual(st2.st_mtime_ns, st.st_mtime_ns, ".git/index was rewritten")
                self.assertEqual(support.read_bytes(repo, ".git/index"), raw)
                self.assertFalse(os.path.exists(index + ".lock"))


if __name__ == "__main__":
    unittest.main()
