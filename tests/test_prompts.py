"""Black-box tests of the layer's prompts as MCP prompts (SPEC §17, with §7.1-§7.4, §9.3,
§10 `P.KEY` parameters, §11 and §1 `majordomus prompt`).

One prompt, four interfaces: MCP `prompts/list` and `prompts/get`, the tool
`majordomus_prompt`, `GET /api/v1/prompt` and the CLI `majordomus prompt`; arguments taken
from the placeholders of the body; every error of §17 on each interface; the capability
descriptors and the OpenAPI route.

Every test spawns the real program in a scratch git repository (the skeleton fixture plus
prompt files); processes are shared per class.
"""
import json
import os
import re
import time
import unittest
import urllib.parse

from tests import support

TIMEOUT = 30
PROMPT_DIR = ".ai/repo/prompts"
ARG_DESCRIPTION = "Replaces {{%s}} in the prompt."


def split_front(text):
    """(front matter block, body) of a prompt file written with a front matter."""
    first = text.index("\n") + 1
    rest = text[first:]
    for fence in ("---\n", "---\r\n"):
        at = 0
        while True:
            at = rest.find(fence, at)
            if at < 0:
                break
            if at == 0 or rest[at - 1] == "\n":
                end = first + at + len(fence)
                return text[:end], text[end:]
            at += 1
    raise AssertionError("no closing fence")


with open(os.path.join(support.SKELETON, PROMPT_DIR, "continue.md"), "rb") as _f:
    CONTINUE_FILE = _f.read().decode("utf-8")

# name -> (file text, description or None, argument names in order)
PROMPTS = {
    "continue": (CONTINUE_FILE, "pick up unfinished work from its notes", ["CONTEXT"]),
    "plain": ("---\nname: plain\ndescription: no placeholders at all\n---\n"
              "Just text, with {braces} but no placeholder.\n", "no placeholders at all", []),
    "several": ("---\nname: several\ndescription: three arguments\nprofile: implementation\n"
                "---\n# Several\n\nfirst {{Zeta}}, then {{alpha_2}}, then {{_c}}.\n",
                "three arguments", ["Zeta", "alpha_2", "_c"]),
    "repeat": ("---\nname: repeat\ndescription: repeated placeholders\n---\n"
               "{{X}}-{{Y}}-{{X}}\n{{X}}{{Y}}{{X}}\nend {{Y}}\n", "repeated placeholders",
               ["X", "Y"]),
    "literal": ("---\nname: literal\ndescription: brace text that is not a placeholder\n---\n"
                "{{ X }} {X} {{1A}} {{a-b}} {{}} {{X }} {{ X}} {{A B}} {{A} {A}} "
                "{{\u00c9}} {{a.b}} {{$}} then {{REAL}} and {{ REAL }}.\n",
                "brace text that is not a placeholder", ["REAL"]),
    "nested": ("---\nname: nested\ndescription: values are not rescanned\n---\n"
               "{{A}} and {{B}}\n", "values are not rescanned", ["A", "B"]),
    "crlf": ("---\r\nname: crlf\r\ndescription: a CRLF body\r\n---\r\n"
             "Ligne \u00e9\u00e9n \u2014 {{NAME}} \u2713\r\n\r\nzwei \u65e5\u672c {{NAME}}\r\n",
             "a CRLF body", ["NAME"]),
    "nodesc": ("---\nname: nodesc\n---\nno description, no final newline: {{V}}", None, ["V"]),
    "empty": ("---\nname: empty\ndescription: an empty body\n---\n", "an empty body", []),
    "fmph": ("---\nname: fmph\ndescription: mentions {{HIDDEN}} in its front matter\n---\n"
             "Only {{SHOWN}} counts.\n", "mentions {{HIDDEN}} in its front matter", ["SHOWN"]),
}
EXTRA_FILES = {"%s/%s.md" % (PROMPT_DIR, name): spec[0]
               for name, spec in PROMPTS.items() if name != "continue"}

NO_PROMPT_SOURCES = support.sources_yaml(
    ("policy", "policy", ":(glob).ai/repo/policy.yaml", True),
    ("rule", "rule", ":(glob).ai/repo/rules/**/*.md", True),
    ("readme", "document", ":(glob)*.md"))

NOTE_SOURCE = """
  - id: note
    kind: note
    discovery: vcs
    pathspec: ':(glob).ai/repo/notes/*.md'
    required: false
"""
NOTE_KINDS = """schema: majordomus-kinds/v1
kinds:
  note:
    format: markdown
    front_matter: required
    identity: [name]
    title: title
    description: description
    prompt: body
"""


def fill(body, values):
    """What §17 says the text is: each {{NAME}} (NAME an identifier) replaced, one pass."""
    return re.sub(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}", lambda m: values[m.group(1)], body)


class PromptCase(support.ToolCalls, unittest.TestCase):
    maxDiff = None

    @classmethod
    def start(cls, repo, http=True):
        cls.repo = repo
        cls.s = support.class_session(cls, repo)
        cls.init = cls.s.initialize("2025-11-25", name="test", initialized=False)["result"]
        if http:
            cls.http = support.class_server(cls, repo)

    def http_prompt(self, name=None, values=None, extra=()):
        query = [] if name is None else [("name", name)]
        query += [("arguments." + k, v) for k, v in (values or {}).items()]
        query += list(extra)
        return self.http.get_json("/api/v1/prompt?" + urllib.parse.urlencode(query))

    def cli_prompt(self, name, values, fmt=None):
        args = ["prompt", name]
        for key, value in values.items():
            args += ["--arg", "%s=%s" % (key, value)]
        if fmt:
            args += ["--format", fmt]
        return support.run(args, self.repo, timeout=TIMEOUT)


# ------------------------------------------------------------------------------------------
# The skeleton's prompt and the prompts of a scratch layer
# ------------------------------------------------------------------------------------------

class PromptTests(PromptCase):
    @classmethod
    def setUpClass(cls):
        cls.start(support.class_repo(cls, EXTRA_FILES))

    def provenance(self, name):
        text = PROMPTS[name][0]
        path = "%s/%s.md" % (PROMPT_DIR, name)
        return {"path": path, "directory": PROMPT_DIR, "source_class": "prompt",
                "section": "prompts", "bytes": len(text.encode("utf-8"))}

    def expected_result(self, name, values):
        text, description, _ = PROMPTS[name]
        out = {"name": name}
        if description is not None:
            out["description"] = description
        out["messages"] = [{"role": "user", "content": {
            "type": "text", "text": fill(split_front(text)[1], values)}}]
        out["uri"] = "majordomus://prompt/" + name
        out["provenance"] = self.provenance(name)
        return out

    def four_ways(self, name, values, cli=True):
        """The answer of every interface for one prompt; all equal; the PromptResult."""
        result = self.tool("majordomus_prompt", {"name": name, "arguments": values})
        expected = self.expected_result(name, values)
        self.assertEqual(result, expected)
        self.assertEqual(list(result), list(expected))
        mcp = self.rpc_ok("prompts/get", {"name": name, "arguments": values})
        mcp_expected = {k: result[k] for k in ("description", "messages") if k in result}
        self.assertEqual(mcp, mcp_expected)
        self.assertEqual(list(mcp), list(mcp_expected))
        status, body = self.http_prompt(name, values)
        self.assertEqual(status, 200, body)
        self.assertEqual(body, result)
        self.assertEqual(list(body), list(result))
        if cli:
            p = self.cli_prompt(name, values)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout, result["messages"][0]["content"]["text"].encode("utf-8"))
            p = self.cli_prompt(name, values, "json")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.loads(p.stdout.decode("utf-8")), result)
        return result

    # --- initialize, prompts/list ---------------------------------------------------------

    def test_initialize_declares_prompts(self):
        self.assertEqual(self.init["capabilities"]["prompts"], {"listChanged": True})
        self.assertIn("prompt", self.init["instructions"].lower())
        again = self.rpc_ok("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
        self.assertEqual(again["capabilities"]["prompts"], {"listChanged": True})

    def test_prompts_list(self):
        listed = self.rpc_ok("prompts/list")
        self.assertEqual(list(listed), ["prompts"])
        expected = []
        for name in sorted(PROMPTS):
            _, description, arguments = PROMPTS[name]
            entry = {"name": name, "title": name}
            if description is not None:
                entry["description"] = description
            entry["arguments"] = [{"name": a, "description": ARG_DESCRIPTION % a,
                                   "required": True} for a in arguments]
            entry["_meta"] = {"majordomus": {"id": "prompt." + name,
                                             "uri": "majordomus://prompt/" + name,
                                             "provenance": self.provenance(name)}}
            expected.append(entry)
        self.assertEqual(listed["prompts"], expected)
        for got, want in zip(listed["prompts"], expected):
            self.assertEqual(list(got), list(want))
            self.assertEqual(list(got["_meta"]["majordomus"]), ["id", "uri", "provenance"])
        self.assertEqual(listed["prompts"][0], {
            "name": "continue", "title": "continue",
            "description": "pick up unfinished work from its notes",
            "arguments": [{"name": "CONTEXT", "description": "Replaces {{CONTEXT}} in the prompt.",
                           "required": True}],
            "_meta": {"majordomus": {
                "id": "prompt.continue", "uri": "majordomus://prompt/continue",
                "provenance": {"path": ".ai/repo/prompts/continue.md",
                               "directory": ".ai/repo/prompts", "source_class": "prompt",
                               "section": "prompts", "bytes": len(CONTINUE_FILE.encode())}}}})
        # the provenance is the object's (§5.2), as resources/list gives it
        resources = {r["uri"]: r for r in self.rpc_ok("resources/list")["resources"]}
        for entry in listed["prompts"]:
            meta = entry["_meta"]["majordomus"]
            self.assertEqual(meta["provenance"],
                             resources[meta["uri"]]["_meta"]["majordomus"]["provenance"])
        self.assertEqual(self.rpc_ok("prompts/list", {"cursor": None}), listed)
        self.assertEqual(self.rpc_ok("prompts/list", {}), listed)

    # --- one prompt, four interfaces ------------------------------------------------------

    def test_continue_everywhere(self):
        body = split_front(CONTINUE_FILE)[1]
        self.assertIn("{{CONTEXT}}", body)
        result = self.four_ways("continue", {"CONTEXT": "x"})
        self.assertEqual(result["messages"][0]["content"]["text"],
                         body.replace("{{CONTEXT}}", "x"))
        rich = "caf\u00e9 \u2713 a=b & c+d %20 {{CONTEXT}} \\1 $1\nsecond line"
        result = self.four_ways("continue", {"CONTEXT": rich})
        self.assertEqual(result["messages"][0]["content"]["text"],
                         body.replace("{{CONTEXT}}", rich))
        self.four_ways("continue", {"CONTEXT": ""})

    def test_arguments_of_each_prompt(self):
        listed = {p["name"]: p for p in self.rpc_ok("prompts/list")["prompts"]}
        for name, (_, _, arguments) in PROMPTS.items():
            with self.subTest(prompt=name):
                self.assertEqual([a["name"] for a in listed[name]["arguments"]], arguments)

    def test_no_placeholders(self):
        for name in ("plain", "empty"):
            with self.subTest(prompt=name):
                result = self.four_ways(name, {}, cli=(name == "plain"))
                self.assertEqual(result["messages"][0]["content"]["text"],
                                 split_front(PROMPTS[name][0])[1])
                self.assertEqual(self.rpc_ok("prompts/get", {"name": name}),
                                 {"description": PROMPTS[name][1],
                                  "messages": result["messages"]})
                self.assertEqual(self.tool("majordomus_prompt", {"name": name}), result)
        self.assertEqual(self.rpc_ok("prompts/get", {"name": "empty"})["messages"][0]
                         ["content"]["text"], "")

    def test_several_and_repeated(self):
        result = self.four_ways("several", {"Zeta": "z", "alpha_2": "A2", "_c": "C"}, cli=False)
        self.assertEqual(result["messages"][0]["content"]["text"],
                         "# Several\n\nfirst z, then A2, then C.\n")
        result = self.four_ways("repeat", {"X": "x1", "Y": "<y>"})
        self.assertEqual(result["messages"][0]["content"]["text"],
                         "x1-<y>-x1\nx1<y>x1\nend <y>\n")

    def test_brace_text_stays_literal(self):
        result = self.four_ways("literal", {"REAL": "r"}, cli=False)
        body = split_front(PROMPTS["literal"][0])[1]
        self.assertEqual(result["messages"][0]["content"]["text"],
                         body.replace("{{REAL}}", "r"))
        self.assertIn("{{ X }} {X} {{1A}} {{a-b}} {{}} {{X }}",
                      result["messages"][0]["content"]["text"])
        self.assertIn("and {{ REAL }}.", result["messages"][0]["content"]["text"])
        result = self.four_ways("fmph", {"SHOWN": "s"}, cli=False)
        self.assertEqual(result["messages"][0]["content"]["text"], "Only s counts.\n")
        self.assertEqual(result["description"], "mentions {{HIDDEN}} in its front matter")

    def test_values_are_not_rescanned(self):
        for values, text in (({"A": "{{B}}", "B": "b"}, "{{B}} and b\n"),
                             ({"A": "{{A}}", "B": "{{A}}"}, "{{A}} and {{A}}\n"),
                             ({"A": "{{OTHER}}", "B": "\\g<0> \\1 $&"},
                              "{{OTHER}} and \\g<0> \\1 $&\n")):
            with self.subTest(values=values):
                result = self.four_ways("nested", values, cli=False)
                self.assertEqual(result["messages"][0]["content"]["text"], text)
        self.four_ways("nested", {"A": "{{B}}", "B": "b"})   # the CLI too

    def test_crlf_and_non_ascii_kept(self):
        result = self.four_ways("crlf", {"NAME": "n\u00e4me"})
        self.assertEqual(result["messages"][0]["content"]["text"],
                         "Ligne \u00e9\u00e9n \u2014 n\u00e4me \u2713\r\n\r\n"
                         "zwei \u65e5\u672c n\u00e4me\r\n")
        p = self.cli_prompt("crlf", {"NAME": "n\u00e4me"})
        self.assertEqual(p.stdout, ("Ligne \u00e9\u00e9n \u2014 n\u00e4me \u2713\r\n\r\n"
                                    "zwei \u65e5\u672c n\u00e4me\r\n").encode("utf-8"))

    def test_prompt_without_description(self):
        result = self.four_ways("nodesc", {"V": "v"})
        self.assertNotIn("description", result)
        self.assertEqual(result["messages"][0]["content"]["text"],
                         "no description, no final newline: v")
        self.assertEqual(list(self.rpc_ok("prompts/get", {"name": "nodesc",
                                                          "arguments": {"V": "v"}})),
                         ["messages"])

    def test_resource_read_keeps_placeholders(self):
        read = self.rpc_ok("resources/read", {"uri": "majordomus://prompt/continue"})
        self.assertEqual(read["contents"][0]["text"], CONTINUE_FILE)
        view = self.tool("majordomus_get", {"uri": "majordomus://prompt/crlf"})
        self.assertEqual(view["content"], PROMPTS["crlf"][0])

    # --- errors -----------------------------------------------------------------------------

    def test_mcp_errors(self):
        for params in (None, {}, {"name": 5}, {"name": None}, {"name": ["continue"]},
                       {"name": {"x": 1}}, {"arguments": {"CONTEXT": "x"}}):
            with self.subTest(params=params):
                self.rpc_error("prompts/get", params, -32602, "params.name is required")
        cases = [
            ({"name": "nope"}, "unknown prompt: nope"),
            ({"name": "Continue", "arguments": {"CONTEXT": "x"}}, "unknown prompt: Continue"),
            ({"name": "majordomus://prompt/continue"},
             "unknown prompt: majordomus://prompt/continue"),
            ({"name": ""}, "unknown prompt: "),
            ({"name": "continue"}, "prompt 'continue' needs argument 'CONTEXT'"),
            ({"name": "continue", "arguments": {}}, "prompt 'continue' needs argument 'CONTEXT'"),
            ({"name": "several", "arguments": {"Zeta": "z", "_c": "c"}},
             "prompt 'several' needs argument 'alpha_2'"),
            ({"name": "continue", "arguments": {"CONTEXT": "x", "X": "y"}},
             "prompt 'continue' has no argument 'X'"),
            ({"name": "plain", "arguments": {"X": "y"}}, "prompt 'plain' has no argument 'X'"),
            ({"name": "literal", "arguments": {"REAL": "r", "1A": "y"}},
             "prompt 'literal' has no argument '1A'"),
            ({"name": "fmph", "arguments": {"SHOWN": "s", "HIDDEN": "h"}},
             "prompt 'fmph' has no argument 'HIDDEN'"),
        ]
        for value in (5, None, True, ["x"], {"a": "b"}, 1.5):
            cases.append(({"name": "continue", "arguments": {"CONTEXT": value}},
                          "argument 'CONTEXT' must be a string"))
        for params, message in cases:
            with self.subTest(params=params):
                self.rpc_error("prompts/get", params, -32602, message)
        for arguments in ("x", 5, ["CONTEXT"]):
            with self.subTest(arguments=arguments):
                self.rpc_error("prompts/get", {"name": "continue", "arguments": arguments},
                               -32602)
        self.assertEqual(self.rpc_ok("ping"), {})

    def test_tool_errors(self):
        for arguments, text in (
                ({"name": "nope"}, "not found: unknown prompt: nope"),
                ({"name": "continue"}, "invalid input: prompt 'continue' needs argument 'CONTEXT'"),
                ({"name": "continue", "arguments": {}},
                 "invalid input: prompt 'continue' needs argument 'CONTEXT'"),
                ({"name": "continue", "arguments": {"CONTEXT": "x", "X": "y"}},
                 "invalid input: prompt 'continue' has no argument 'X'"),
                ({"name": "plain", "arguments": {"X": "y"}},
                 "invalid input: prompt 'plain' has no argument 'X'"),
                ({"name": "continue", "arguments": {"CONTEXT": 5}},
                 "invalid input: argument 'CONTEXT' must be a string"),
                ({"name": "continue", "arguments": {"CONTEXT": None}},
                 "invalid input: argument 'CONTEXT' must be a string")):
            with self.subTest(arguments=arguments):
                self.assertEqual(self.tool_error("majordomus_prompt", arguments), text)
        for arguments, names in (({}, "name"), ({"name": 5}, "name"),
                                 ({"name": "continue", "arguments": "x"}, "arguments"),
                                 ({"name": "continue", "arguments": {"CONTEXT": "x"},
                                   "extra": 1}, "extra")):
            with self.subTest(arguments=arguments):
                text = self.tool_error("majordomus_prompt", arguments)
                self.assertTrue(text.startswith("invalid input: "), text)
                self.assertIn(names, text)

    def test_http_errors(self):
        for name, values, extra, status, code, message in (
                ("nope", {}, (), 404, "not_found", "unknown prompt: nope"),
                ("continue", {}, (), 400, "invalid_input",
                 "prompt 'continue' needs argument 'CONTEXT'"),
                ("continue", {"CONTEXT": "x", "X": "y"}, (), 400, "invalid_input",
                 "prompt 'continue' has no argument 'X'"),
                ("plain", {"X": "y"}, (), 400, "invalid_input",
                 "prompt 'plain' has no argument 'X'"),
                ("several", {"Zeta": "z", "_c": "c"}, (), 400, "invalid_input",
                 "prompt 'several' needs argument 'alpha_2'")):
            with self.subTest(name=name, values=values):
                got, body = self.http_prompt(name, values, extra)
                self.assertEqual(got, status, body)
                self.assertEqual(body, {"error": {"code": code, "message": message}})
        for name, values, extra, names in (
                (None, {}, (), "name"),
                (None, {"CONTEXT": "x"}, (), "name"),
                ("continue", {"CONTEXT": "x"}, (("arguments.CONTEXT", "y"),), "arguments"),
                ("continue", {"CONTEXT": "x"}, (("name", "continue"),), "name"),
                ("continue", {"CONTEXT": "x"}, (("bogus", "1"),), "bogus")):
            with self.subTest(name=name, values=values, extra=extra):
                got, body = self.http_prompt(name, values, extra)
                self.assertEqual(got, 400, body)
                self.assertEqual(body["error"]["code"], "invalid_input")
                self.assertIn(names, body["error"]["message"])
                self.assertFalse(body["error"]["message"].startswith("invalid input"))

    def test_cli_errors(self):
        for name, values, code, message in (
                ("continue", {}, 2, "prompt 'continue' needs argument 'CONTEXT'"),
                ("nope", {}, 12, "unknown prompt: nope"),
                ("continue", {"CONTEXT": "x", "X": "y"}, 2,
                 "prompt 'continue' has no argument 'X'")):
            for fmt in (None, "json"):
                with self.subTest(name=name, values=values, fmt=fmt):
                    p = self.cli_prompt(name, values, fmt)
                    self.assertEqual(p.returncode, code, p.stderr)
                    self.assertEqual(p.stdout, b"")
                    self.assertIn("majordomus: " + message,
                                  p.stderr.decode("utf-8").splitlines())
        for args in (["prompt"], ["prompt", "continue", "--arg", "CONTEXT"]):
            with self.subTest(args=args):
                p = support.run(args, self.repo, timeout=TIMEOUT)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(p.stdout, b"")
        p = self.cli_prompt("continue", {"CONTEXT": "a=b=c"})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, fill(split_front(CONTINUE_FILE)[1],
                                        {"CONTEXT": "a=b=c"}).encode("utf-8"))

    # --- the registry -----------------------------------------------------------------------

    def test_prompt_object_descriptor(self):
        desc = self.tool("majordomus_capability", {"id": "prompt.continue"})
        self.assertEqual(desc["kind"], "resource")
        self.assertEqual(desc["exposure"], {"mcp": {
            "resource": {"uri": "majordomus://prompt/continue", "name": "continue"},
            "prompt": {"name": "continue"}}})
        self.assertEqual(list(desc["exposure"]["mcp"]), ["resource", "prompt"])
        rule = self.tool("majordomus_capability",
                         {"id": "rule.majordomus.scope-integrity@1"})
        self.assertNotIn("prompt", rule["exposure"]["mcp"])
        for name in PROMPTS:
            with self.subTest(prompt=name):
                desc = self.tool("majordomus_capability", {"id": "prompt." + name})
                self.assertEqual(desc["exposure"]["mcp"]["prompt"], {"name": name})

    def test_prompts_get_descriptor(self):
        desc = self.tool("majordomus_capability", {"id": "prompts.get"})
        self.assertEqual(desc["title"], "Get one prompt, filled in")
        self.assertEqual(desc["kind"], "query")
        self.assertEqual(desc["module"], "prompts")
        self.assertEqual(desc["input"]["name"], "PromptInput")
        self.assertEqual(desc["output"]["name"], "PromptResult")
        self.assertEqual(desc["exposure"], {"mcp": {"tool": "majordomus_prompt"},
                                            "http": {"method": "GET",
                                                     "path": "/api/v1/prompt"},
                                            "cli": {"path": ["prompt"]}})
        self.assertEqual(desc["cache"], {"policy": "disabled"})
        schema = desc["input"]["schema"]
        self.assertEqual(schema["type"], "object")
        self.assertEqual(sorted(schema["properties"]), ["arguments", "name"])
        self.assertEqual(schema["required"], ["name"])
        self.assertEqual(schema["properties"]["name"]["type"], "string")
        self.assertEqual(schema["properties"]["arguments"]["type"], "object")
        self.assertEqual(schema["properties"]["arguments"]["additionalProperties"],
                         {"type": "string"})
        self.assertIs(schema["additionalProperties"], False)
        out = desc["output"]["schema"]
        self.assertEqual(set(out["required"]), {"name", "messages", "uri", "provenance"})
        self.assertEqual(list(out["properties"]),
                         ["name", "description", "messages", "uri", "provenance"])
        tools = {t["name"]: t for t in self.rpc_ok("tools/list")["tools"]}
        tool = tools["majordomus_prompt"]
        self.assertEqual(tool["_meta"], {"majordomus": {"id": "prompts.get"}})
        self.assertEqual(tool["title"], "Get one prompt, filled in")
        self.assertEqual(tool["inputSchema"], schema)
        self.assertEqual(tool["outputSchema"], out)
        p = support.run(["capabilities", "describe", "prompts.get", "--format", "json"],
                        self.repo, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout.decode("utf-8")), desc)

    def test_cli_capabilities_list_lines(self):
        p = support.run(["capabilities", "list"], self.repo, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = {line.split(" ", 1)[0]: line for line in p.stdout.decode("utf-8").splitlines()}
        self.assertIn(" mcp=resource:majordomus://prompt/continue,prompt:continue http=- cli=-",
                      lines["prompt.continue"])
        self.assertIn(" mcp=tool:majordomus_prompt http=GET /api/v1/prompt cli=prompt",
                      lines["prompts.get"])

    def test_openapi_route(self):
        status, doc = self.http.get_json("/openapi.json")
        self.assertEqual(status, 200)
        route = doc["paths"]["/api/v1/prompt"]
        self.assertEqual(list(route), ["get"])
        self.assertEqual(route["get"]["operationId"], "prompts.get")
        params = {p["name"]: p for p in route["get"]["parameters"]}
        self.assertIn("name", params)
        self.assertIs(params["name"].get("required"), True)
        self.assertIn("arguments", params)
        self.assertFalse(params["arguments"].get("required", False))


# ------------------------------------------------------------------------------------------
# A layer with no prompt kind object
# ------------------------------------------------------------------------------------------

class NoPromptTests(PromptCase):
    @classmethod
    def setUpClass(cls):
        cls.start(support.class_repo(cls, {
            ".ai/repo/knowledge/sources.yaml": NO_PROMPT_SOURCES}), http=False)

    def test_empty_prompt_list(self):
        self.assertEqual(self.rpc_ok("prompts/list"), {"prompts": []})
        self.assertEqual(self.init["capabilities"]["prompts"], {"listChanged": True})
        self.rpc_error("prompts/get", {"name": "continue", "arguments": {"CONTEXT": "x"}},
                       -32602, "unknown prompt: continue")
        self.assertEqual(self.tool_error("majordomus_prompt", {"name": "continue"}),
                         "not found: unknown prompt: continue")
        kinds = self.tool("majordomus_repository", {})["kinds"]
        self.assertNotIn("prompt", kinds)
        self.assertEqual(self.tool("majordomus_repository", {})["state"], "ok")


# ------------------------------------------------------------------------------------------
# A repository kind with `prompt: body` (§4.4, §17 Data), and a prompt name claimed twice
# ------------------------------------------------------------------------------------------

def note_files(extra=None):
    with open(os.path.join(support.SKELETON, ".ai/repo/knowledge/sources.yaml")) as handle:
        sources = handle.read()
    files = {".ai/repo/knowledge/sources.yaml": sources.rstrip("\n") + "\n" + NOTE_SOURCE,
             ".ai/repo/knowledge/kinds.yaml": NOTE_KINDS,
             ".ai/repo/notes/jot.md": "---\nname: jot\ntitle: A jot\n---\nJot {{WHAT}} down.\n"}
    files.update(extra or {})
    return files


class RepositoryKindPromptTests(PromptCase):
    @classmethod
    def setUpClass(cls):
        cls.start(support.class_repo(cls, note_files()), http=False)

    def test_repository_kind_objects_are_prompts(self):
        listed = self.rpc_ok("prompts/list")["prompts"]
        self.assertEqual([p["name"] for p in listed], ["continue", "jot"])
        jot = listed[1]
        self.assertEqual(jot["title"], "A jot")
        self.assertNotIn("description", jot)
        self.assertEqual(jot["arguments"], [{"name": "WHAT",
                                             "description": "Replaces {{WHAT}} in the prompt.",
                                             "required": True}])
        self.assertEqual(jot["_meta"]["majordomus"]["id"], "note.jot")
        self.assertEqual(jot["_meta"]["majordomus"]["uri"], "majordomus://note/jot")
        self.assertEqual(self.rpc_ok("prompts/get", {"name": "jot", "arguments": {"WHAT": "it"}}),
                         {"messages": [{"role": "user", "content": {
                             "type": "text", "text": "Jot it down.\n"}}]})
        desc = self.tool("majordomus_capability", {"id": "note.jot"})
        self.assertEqual(desc["exposure"]["mcp"]["prompt"], {"name": "jot"})

    def test_one_prompt_name_claimed_twice(self):
        repo = support.make_repo(self, note_files({
            ".ai/repo/notes/continue.md": "---\nname: continue\n---\nclash {{A}}\n"}))
        p = support.run(["mcp", "--inspect"], repo, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 13, p.stderr)
        self.assertEqual(p.stdout, b"")
        err = p.stderr.decode("utf-8")
        self.assertRegex(err, r"(?m)^majordomus: .*'continue'")
        self.assertNotIn("Traceback", err)


# ------------------------------------------------------------------------------------------
# The prompt list follows the layer (§15.4: listChanged is honoured)
# ------------------------------------------------------------------------------------------

class LivePromptListTests(PromptCase):
    @classmethod
    def setUpClass(cls):
        cls.start(support.class_repo(cls), http=False)
        cls.s.notify("notifications/initialized")

    def frames_until_answer(self):
        """Two pings; every notification that came before the second answer."""
        notes = []
        for _ in range(2):
            id = "ping-%d" % self.s.new_id()
            self.s.send({"jsonrpc": "2.0", "id": id, "method": "ping"})
            while True:
                frame = self.s.recv()
                if frame.get("id") == id:
                    self.assertEqual(frame.get("result"), {}, frame)
                    break
                self.assertNotIn("id", frame, frame)
                notes.append(frame["method"])
        return notes

    def test_prompts_list_changed(self):
        self.assertEqual([p["name"] for p in self.rpc_ok("prompts/list")["prompts"]],
                         ["continue"])
        self.assertEqual(self.frames_until_answer(), [])
        support.write(self.repo, PROMPT_DIR + "/fresh.md",
                      "---\nname: fresh\ndescription: new\n---\nFresh {{ONE}}.\n")
        support.git(self.repo, "add", PROMPT_DIR + "/fresh.md")
        time.sleep(1.6)   # §15.2: a change complete one second before a request is seen
        notes = self.frames_until_answer()
        self.assertEqual(notes.count("notifications/prompts/list_changed"), 1, notes)
        self.assertEqual(notes.count("notifications/resources/list_changed"), 1, notes)
        listed = self.rpc_ok("prompts/list")["prompts"]
        self.assertEqual([p["name"] for p in listed], ["continue", "fresh"])
        self.assertEqual(listed[1]["arguments"][0]["name"], "ONE")
        self.assertEqual(self.rpc_ok("prompts/get", {"name": "fresh",
                                                     "arguments": {"ONE": "1"}})["messages"]
                         [0]["content"]["text"], "Fresh 1.\n")
        # a change that leaves every prompt as it was: no prompts/list_changed
        rule = ".ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md"
        with open(os.path.join(self.repo, rule), "a") as handle:
            handle.write("\nOne more line.\n")
        support.git(self.repo, "add", rule)
        time.sleep(1.6)
        notes = self.frames_until_answer()
        self.assertEqual(notes.count("notifications/resources/list_changed"), 1, notes)
        self.assertNotIn("notifications/prompts/list_changed", notes)


if __name__ == "__main__":
    unittest.main()
