"""One answer per URI (SPEC §0, §8, §10): HTTP, MCP and the CLI resolve a URI, and describe a
capability, identically, each from its own process."""
import json
import os
import shutil
import sys
import tempfile
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402

RULE_URI = "majordomus://rule/majordomus.scope-integrity@1"
URIS = {
    RULE_URI: ".ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md",
    "majordomus://prompt/continue": ".ai/repo/prompts/continue.md",
    "majordomus://document/.ai/repo/workflows/plan.md": ".ai/repo/workflows/plan.md",
    "majordomus://document/README.md": "README.md",
    "majordomus://profile/implementation": ".ai/repo/profiles/implementation.yaml",
    "majordomus://repository": None,
}
UNKNOWN_URIS = ("majordomus://rule/nope@1", "majordomus://document/../../etc/passwd",
                "majordomus://document/%2E%2E/README.md")
CAPABILITY_IDS = ("objects.get", "repository.info", "capabilities.describe",
                  "rule.majordomus.scope-integrity@1", "document.README.md",
                  "prompt.continue", "prompts.get")
VIAS = ("pyz", "py")


def q(value):
    return urllib.parse.quote(value, safe="")


def dumps(value):
    """Order-sensitive canonical text of a JSON value (key order is part of the answer)."""
    return json.dumps(value, ensure_ascii=False)


def stop_server(srv):
    try:
        return srv.stop()
    finally:
        srv.proc.stderr.close()


def close_session(sess):
    try:
        return sess.close()
    finally:
        sess.proc.stderr.close()


class OneAnswerTest(unittest.TestCase):
    """Two HTTP servers and two MCP sessions (one of each per entry point), plus the CLI."""

    @classmethod
    def setUpClass(cls):
        d = tempfile.mkdtemp(prefix="mj-test-")
        cls.addClassCleanup(shutil.rmtree, d, True)
        repo = os.path.join(d, "repo")
        os.makedirs(repo)
        support.copy_layer(repo)
        support.git(repo, "init", "-q", "-b", "main")
        support.commit_all(repo)
        cls.repo = os.path.realpath(repo)
        cls.http = {}
        cls.mcp = {}
        for via in VIAS:
            srv = support.HttpServer(cls.repo, via=via)
            cls.addClassCleanup(stop_server, srv)
            cls.http[via] = srv
            sess = support.McpSession(cls.repo, via=via)
            cls.addClassCleanup(close_session, sess)
            answer = sess.request("initialize", {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test_one_answer", "version": "0"}})
            assert "result" in answer, answer
            sess.notify("notifications/initialized")
            cls.mcp[via] = sess

    # -- the four interfaces ------------------------------------------------------------

    def http_get(self, via, path):
        status, headers, body = self.http[via].request("GET", path)
        return status, json.loads(body.decode("utf-8"))

    def mcp_tool(self, via, name, arguments):
        answer = self.mcp[via].request("tools/call", {"name": name, "arguments": arguments})
        self.assertIn("result", answer, answer)
        return answer["result"]

    def mcp_ok(self, via, name, arguments):
        result = self.mcp_tool(via, name, arguments)
        self.assertIs(result.get("isError"), False, result)
        self.assertEqual(len(result["content"]), 1)
        self.assertEqual(result["content"][0]["type"], "text")
        structured = result["structuredContent"]
        self.assertEqual(dumps(json.loads(result["content"][0]["text"])), dumps(structured))
        return structured

    def cli(self, via, args):
        return support.run(args, cwd=self.repo, via=via)

    def cli_json(self, via, args):
        p = self.cli(via, args)
        self.assertEqual(p.returncode, 0, p.stderr.decode("utf-8", "replace"))
        return json.loads(p.stdout.decode("utf-8"))

    # -- tests --------------------------------------------------------------------------

    def test_same_object_everywhere(self):
        for uri, path in URIS.items():
            with self.subTest(uri=uri):
                answers = {}
                for via in VIAS:
                    status, doc = self.http_get(via, "/api/v1/object?uri=" + q(uri))
                    self.assertEqual(status, 200, doc)
                    answers["http-" + via] = doc
                    answers["mcp-" + via] = self.mcp_ok(via, "majordomus_get", {"uri": uri})
                    answers["cli-" + via] = self.cli_json(via, ["get", uri])
                    answers["cli-json-" + via] = self.cli_json(via, ["get", uri, "--format",
                                                                     "json"])
                reference = answers["http-pyz"]
                for name, value in answers.items():
                    with self.subTest(interface=name):
                        self.assertEqual(value, reference)
                        self.assertEqual(dumps(value), dumps(reference),
                                         "same value, different key order")
                self.assertEqual(reference["uri"], uri)
                if path is not None:
                    with open(os.path.join(self.repo, path), "rb") as f:
                        self.assertEqual(reference["content"].encode("utf-8"), f.read())
                    self.assertEqual(reference["source"], "declarative")
                else:
                    self.assertEqual(reference["source"], "builtin")
                    self.assertEqual(json.loads(reference["content"]), reference["answer"])
                # resources/read returns the same content, byte for byte
                for via in VIAS:
                    with self.subTest(read=via):
                        answer = self.mcp[via].request("resources/read", {"uri": uri})
                        self.assertIn("result", answer, answer)
                        contents = answer["result"]["contents"]
                        self.assertEqual(len(contents), 1)
                        self.assertEqual(contents[0]["uri"], uri)
                        self.assertEqual(contents[0]["mimeType"], reference["media_type"])
                        self.assertEqual(contents[0]["text"], reference["content"])
                # the CLI's text form is that content too
                for via in VIAS:
                    with self.subTest(text=via):
                        p = self.cli(via, ["get", uri, "--format", "text"])
                        self.assertEqual(p.returncode, 0, p.stderr)
                        self.assertEqual(p.stdout, reference["content"].encode("utf-8"))

    def test_repository_answer_equals_the_query(self):
        for via in VIAS:
            with self.subTest(via=via):
                status, view = self.http_get(via, "/api/v1/object?uri=" + q(
                    "majordomus://repository"))
                status, report = self.http_get(via, "/api/v1/repository")
                self.assertEqual(status, 200)
                tool = self.mcp_ok(via, "majordomus_repository", {})
                self.assertEqual(dumps(view["answer"]), dumps(report))
                self.assertEqual(dumps(tool), dumps(report))

    def test_unknown_uri_everywhere(self):
        for uri in UNKNOWN_URIS:
            for via in VIAS:
                with self.subTest(uri=uri, via=via):
                    status, doc = self.http_get(via, "/api/v1/object?uri=" + q(uri))
                    self.assertEqual(status, 404)
                    self.assertEqual(doc, {"error": {"code": "not_found",
                                                     "message": "unknown resource: " + uri}})
                    result = self.mcp_tool(via, "majordomus_get", {"uri": uri})
                    self.assertIs(result.get("isError"), True, result)
                    self.assertNotIn("structuredContent", result)
                    self.assertEqual(result["content"],
                                     [{"type": "text",
                                       "text": "not found: unknown resource: " + uri}])
                    answer = self.mcp[via].request("resources/read", {"uri": uri})
                    self.assertNotIn("result", answer, answer)
                    self.assertEqual(answer["error"]["code"], -32002)
                    self.assertEqual(answer["error"]["message"], "resource not found: " + uri)
                    p = self.cli(via, ["get", uri])
                    self.assertEqual(p.returncode, 12, p.stderr)
                    self.assertEqual(p.stdout, b"")
                    self.assertIn("unknown resource: " + uri, p.stderr.decode("utf-8"))

    def test_same_descriptor_everywhere(self):
        for cid in CAPABILITY_IDS:
            with self.subTest(id=cid):
                answers = {}
                for via in VIAS:
                    status, doc = self.http_get(via, "/api/v1/capability?id=" + q(cid))
                    self.assertEqual(status, 200, doc)
                    answers["http-" + via] = doc
                    answers["mcp-" + via] = self.mcp_ok(via, "majordomus_capability",
                                                        {"id": cid})
                    answers["cli-" + via] = self.cli_json(
                        via, ["capabilities", "describe", cid, "--format", "json"])
                reference = answers["http-pyz"]
                self.assertEqual(reference["id"], cid)
                for name, value in answers.items():
                    with self.subTest(interface=name):
                        self.assertEqual(value, reference)
                        self.assertEqual(dumps(value), dumps(reference),
                                         "same value, different key order")

    def test_unknown_capability_everywhere(self):
        for via in VIAS:
            with self.subTest(via=via):
                status, doc = self.http_get(via, "/api/v1/capability?id=nope.x")
                self.assertEqual(status, 404)
                self.assertEqual(doc, {"error": {"code": "not_found",
                                                 "message": "unknown capability: nope.x"}})
                result = self.mcp_tool(via, "majordomus_capability", {"id": "nope.x"})
                self.assertIs(result.get("isError"), True, result)
                self.assertNotIn("structuredContent", result)
                self.assertEqual(result["content"], [{"type": "text",
                                                      "text": "not found: unknown capability: "
                                                              "nope.x"}])
                p = self.cli(via, ["capabilities", "describe", "nope.x"])
                self.assertEqual(p.returncode, 12)
                self.assertEqual(p.stdout, b"")
                self.assertEqual(p.stderr.decode("utf-8"),
                                 "majordomus: unknown capability: nope.x (run: majordomus "
                                 "capabilities list)\n")

    def test_same_prompt_everywhere(self):
        """§0, §17: prompts.get answers alike through HTTP, the tool, the CLI and
        prompts/get (which carries the PromptResult's MCP fields)."""
        value = "a b {{CONTEXT}} \u00e9"
        answers = {}
        for via in VIAS:
            status, doc = self.http_get(via, "/api/v1/prompt?name=continue&arguments.CONTEXT="
                                        + q(value))
            self.assertEqual(status, 200, doc)
            answers["http-" + via] = doc
            answers["mcp-" + via] = self.mcp_ok(via, "majordomus_prompt", {
                "name": "continue", "arguments": {"CONTEXT": value}})
            answers["cli-" + via] = self.cli_json(via, ["prompt", "continue", "--arg",
                                                        "CONTEXT=" + value, "--format", "json"])
        reference = answers["http-pyz"]
        for name, answer in answers.items():
            with self.subTest(interface=name):
                self.assertEqual(dumps(answer), dumps(reference))
        with open(os.path.join(self.repo, URIS["majordomus://prompt/continue"]), "rb") as f:
            body = f.read().decode("utf-8").split("---\n", 2)[2]
        self.assertEqual(reference["messages"], [{"role": "user", "content": {
            "type": "text", "text": body.replace("{{CONTEXT}}", value)}}])
        self.assertEqual(reference["uri"], "majordomus://prompt/continue")
        for via in VIAS:
            with self.subTest(prompts_get=via):
                answer = self.mcp[via].request("prompts/get", {
                    "name": "continue", "arguments": {"CONTEXT": value}})
                self.assertIn("result", answer, answer)
                self.assertEqual(dumps(answer["result"]), dumps(
                    {"description": reference["description"],
                     "messages": reference["messages"]}))
                p = self.cli(via, ["prompt", "continue", "--arg", "CONTEXT=" + value])
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stdout.decode("utf-8"),
                                 reference["messages"][0]["content"]["text"])

    def test_same_capability_list_everywhere(self):
        answers = {}
        for via in VIAS:
            status, doc = self.http_get(via, "/api/v1/capabilities?limit=200")
            self.assertEqual(status, 200)
            answers["http-" + via] = doc
            answers["mcp-" + via] = self.mcp_ok(via, "majordomus_capabilities", {"limit": 200})
            answers["cli-" + via] = self.cli_json(via, ["capabilities", "list", "--format",
                                                        "json"])
        reference = answers["http-pyz"]
        # §16: the 27 capabilities on one page of 200; the CLI's list is everything
        self.assertEqual((reference["count"], reference["total"]), (27, 27))
        self.assertNotIn("next_cursor", reference)
        for name, value in answers.items():
            with self.subTest(interface=name):
                self.assertEqual(dumps(value), dumps(reference))
        # each descriptor in the list is the one describe gives
        for desc in reference["capabilities"][:3]:
            status, one = self.http_get("py", "/api/v1/capability?id=" + q(desc["id"]))
            self.assertEqual(dumps(one), dumps(desc))


if __name__ == "__main__":
    unittest.main()
