"""One answer per URI (SPEC §0, §8, §10): HTTP, MCP and the CLI resolve a URI, and describe a
capability, identically, each from its own process.

Table-driven: TRANSPORTS says how each interface is asked a question (an Ask: the HTTP route,
the MCP tool and its arguments, the CLI's arguments) and gives the value it answers, under
each entry point (VIAS); every test asks its questions of every transport and compares the
answers byte for byte (key order included), then checks the answer's meaning once."""
import json
import os
import unittest
import urllib.parse

import support
from support import RULE_URI

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
PROMPT_VALUE = "a b {{CONTEXT}} \u00e9"


def q(value):
    return urllib.parse.quote(value, safe="")


def dumps(value):
    """Order-sensitive canonical text of a JSON value (key order is part of the answer)."""
    return json.dumps(value, ensure_ascii=False)


class Ask(object):
    """One question as each interface asks it: `route` (HTTP GET), `tool` and `arguments`
    (MCP tools/call), `cli` (the CLI's arguments for its JSON answer; `cli_json` also with
    `--format json` added, when that is a second spelling of the same)."""

    def __init__(self, route, tool, arguments, cli, cli_json=False):
        self.route, self.tool, self.arguments = route, tool, arguments
        self.cli, self.cli_json = list(cli), cli_json


def get(uri):
    return Ask("/api/v1/object?uri=" + q(uri), "majordomus_get", {"uri": uri}, ["get", uri],
               cli_json=True)


def describe(cid):
    return Ask("/api/v1/capability?id=" + q(cid), "majordomus_capability", {"id": cid},
               ["capabilities", "describe", cid, "--format", "json"])


CAPABILITY_LIST = Ask("/api/v1/capabilities?limit=200", "majordomus_capabilities",
                      {"limit": 200}, ["capabilities", "list", "--format", "json"])
PROMPT = Ask("/api/v1/prompt?name=continue&arguments.CONTEXT=" + q(PROMPT_VALUE),
             "majordomus_prompt", {"name": "continue", "arguments": {"CONTEXT": PROMPT_VALUE}},
             ["prompt", "continue", "--arg", "CONTEXT=" + PROMPT_VALUE, "--format", "json"])


# How each interface answers a question (an Ask): (name, function(test, via, ask) -> a list
# of (label, value)), in the order the answers are compared; the first is the reference.
def by_http(test, via, ask):
    status, doc = test.http_get(via, ask.route)
    test.assertEqual(status, 200, doc)
    return [("http", doc)]


def by_mcp(test, via, ask):
    return [("mcp", test.mcp_ok(via, ask.tool, ask.arguments))]


def by_cli(test, via, ask):
    answers = [("cli", test.cli_json(via, ask.cli))]
    if ask.cli_json:
        answers.append(("cli-json", test.cli_json(via, ask.cli + ["--format", "json"])))
    return answers


TRANSPORTS = (("http", by_http), ("mcp", by_mcp), ("cli", by_cli))


class OneAnswerTest(unittest.TestCase):
    """Two HTTP servers and two MCP sessions (one of each per entry point), plus the CLI."""

    @classmethod
    def setUpClass(cls):
        cls.repo = support.class_repo(cls)
        cls.http = {via: support.class_server(cls, cls.repo, via=via) for via in VIAS}
        cls.mcp = {via: support.class_session(cls, cls.repo, via=via, version="2025-06-18",
                                              name="test_one_answer") for via in VIAS}

    # -- the interfaces -----------------------------------------------------------------

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

    def everywhere(self, ask):
        """The answer every transport gives to ask under every entry point, after checking
        they are one answer (the same value, the same key order)."""
        answers = {}
        for via in VIAS:
            for _, transport in TRANSPORTS:
                for label, value in transport(self, via, ask):
                    answers["%s-%s" % (label, via)] = value
        reference = answers["http-" + VIAS[0]]
        for name, value in answers.items():
            with self.subTest(interface=name):
                self.assertEqual(value, reference)
                self.assertEqual(dumps(value), dumps(reference),
                                 "same value, different key order")
        return reference

    # -- tests --------------------------------------------------------------------------

    def test_same_object_everywhere(self):
        for uri, path in URIS.items():
            with self.subTest(uri=uri):
                reference = self.everywhere(get(uri))
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
                    status, doc = self.http_get(via, get(uri).route)
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
                self.assertEqual(self.everywhere(describe(cid))["id"], cid)

    def test_unknown_capability_everywhere(self):
        for via in VIAS:
            with self.subTest(via=via):
                status, doc = self.http_get(via, describe("nope.x").route)
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
        reference = self.everywhere(PROMPT)
        with open(os.path.join(self.repo, URIS["majordomus://prompt/continue"]), "rb") as f:
            body = f.read().decode("utf-8").split("---\n", 2)[2]
        self.assertEqual(reference["messages"], [{"role": "user", "content": {
            "type": "text", "text": body.replace("{{CONTEXT}}", PROMPT_VALUE)}}])
        self.assertEqual(reference["uri"], "majordomus://prompt/continue")
        for via in VIAS:
            with self.subTest(prompts_get=via):
                answer = self.mcp[via].request("prompts/get", {
                    "name": "continue", "arguments": {"CONTEXT": PROMPT_VALUE}})
                self.assertIn("result", answer, answer)
                self.assertEqual(dumps(answer["result"]), dumps(
                    {"description": reference["description"],
                     "messages": reference["messages"]}))
                p = self.cli(via, ["prompt", "continue", "--arg", "CONTEXT=" + PROMPT_VALUE])
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(p.stdout.decode("utf-8"),
                                 reference["messages"][0]["content"]["text"])

    def test_same_capability_list_everywhere(self):
        reference = self.everywhere(CAPABILITY_LIST)
        # §16: the 27 capabilities on one page of 200; the CLI's list is everything
        self.assertEqual((reference["count"], reference["total"]), (27, 27))
        self.assertNotIn("next_cursor", reference)
        # each descriptor in the list is the one describe gives
        for desc in reference["capabilities"][:3]:
            status, one = self.http_get("py", describe(desc["id"]).route)
            self.assertEqual(dumps(one), dumps(desc))


if __name__ == "__main__":
    unittest.main()
