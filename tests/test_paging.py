"""Black-box tests of answers a client can hold (SPEC §16, with §7.2, §7.6, §10, §11, §15).

Paging by keyset cursor through `majordomus_list`, `majordomus_search` and
`majordomus_capabilities` on a layer of more than 500 objects, windows of lines through
`majordomus_get`, the unpaged MCP lists, a cursor held across generations, the size budget
of every tool's text block, and the tools' output schemas (each a real schema, and every
structuredContent seen here valid against it).

Every test spawns the real program in a scratch git repository (the skeleton fixture plus
generated files); processes are shared per class.
"""
import base64
import json
import time
import unittest
import urllib.parse

from tests import support
from tests.support import REPOSITORY_URI, RULE_URI

TIMEOUT = 30
N_GEN = 520
SKELETON_URIS = support.SKELETON_URIS
BUILTIN_IDS = ["capabilities.describe", "capabilities.list", "context.affected",
               "context.brief", "context.list", "context.resolve", "context.sync",
               "context.validate", "hook.deliver", "objects.get", "objects.list",
               "objects.search",
               "peers.announce", "peers.list", "peers.tell", "perf.counters", "prompts.get",
               "repository.info"]
COMMANDS = ("hook.deliver", "peers.announce", "peers.tell")
TOOLS = list(support.TOOLS)
FOREIGN = "parameter 'cursor' is not a cursor this server issued"
BUDGET = 40000

ALL_MARK = "gen-body-marker"          # in the body of every generated rule
SUBSET_MARK = "zebra-subset-marker"   # in the body of every seventh generated rule


def gen_rule(i):
    tags = "tags: [even]\n" if i % 2 == 0 else "tags: [odd]\n"
    extra = "\nAlso carries the %s.\n" % SUBSET_MARK if i % 7 == 0 else ""
    return ("---\nid: gen.r%04d\nversion: 1\ntitle: Generated rule %d\n"
            "description: The generated rule number %d.\n%s---\n\n# Rule %d\n\n"
            "Body of generated rule %d, with the %s.\n%s" % (i, i, i, tags, i, i, ALL_MARK, extra))


def gen_uri(i):
    return "majordomus://rule/gen.r%04d@1" % i


def gen_files(n):
    return {".ai/repo/rules/gen/r%04d.md" % i: gen_rule(i) for i in range(n)}


LONG_LINES = ["# Long document\n"] + ["line %03d of the long document\n" % n
                                      for n in range(2, 301)]
WINDOW_FILES = {
    "docs/long.md": "".join(LONG_LINES),
    "docs/empty.md": "",
    "docs/nonl.md": "a\nb\nc",
    "docs/crlf.md": "# CRLF\r\nsecond\r\nthird\r\n",
}
LONG_URI = "majordomus://document/docs/long.md"
EMPTY_URI = "majordomus://document/docs/empty.md"
NONL_URI = "majordomus://document/docs/nonl.md"
CRLF_URI = "majordomus://document/docs/crlf.md"

# --- a small JSON Schema walker and validator ----------------------------------------------

ANNOTATION_KEYWORDS = {"description", "title", "default", "examples", "$schema", "$id",
                       "$comment", "deprecated", "readOnly", "writeOnly"}
VALIDATION_KEYWORDS = {
    "type", "enum", "const", "properties", "items", "required", "$ref", "anyOf", "oneOf",
    "allOf", "not", "additionalProperties", "patternProperties", "prefixItems",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
    "pattern", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    "propertyNames", "contains", "dependentRequired", "dependentSchemas", "if", "then",
    "else", "unevaluatedProperties", "unevaluatedItems", "format"}
SUPPORTED_KEYWORDS = {"type", "enum", "const", "properties", "items", "required",
                      "additionalProperties", "minimum", "maximum", "anyOf"}


def schema_nodes(schema, path="#"):
    """Every subschema of `schema`: (path, node)."""
    yield path, schema
    if not isinstance(schema, dict):
        return
    for key in ("properties", "patternProperties", "$defs", "definitions",
                "dependentSchemas"):
        for name, sub in (schema.get(key) or {}).items():
            for found in schema_nodes(sub, "%s/%s/%s" % (path, key, name)):
                yield found
    items = schema.get("items")
    if isinstance(items, dict):
        for found in schema_nodes(items, path + "/items"):
            yield found
    elif isinstance(items, list):
        for n, sub in enumerate(items):
            for found in schema_nodes(sub, "%s/items/%d" % (path, n)):
                yield found
    for key in ("additionalProperties", "not", "if", "then", "else", "contains",
                "propertyNames", "unevaluatedProperties", "unevaluatedItems"):
        if isinstance(schema.get(key), dict):
            for found in schema_nodes(schema[key], "%s/%s" % (path, key)):
                yield found
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for n, sub in enumerate(schema.get(key) or []):
            for found in schema_nodes(sub, "%s/%s/%d" % (path, key, n)):
                yield found


def type_matches(value, name):
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    raise AssertionError("unknown JSON Schema type %r" % name)


def validate(value, schema, path="$"):
    """The list of violations of `schema` by `value` (empty when valid). A keyword this
    validator does not implement is itself reported, so that nothing passes unchecked."""
    if schema is True or schema == {}:
        return []
    if schema is False:
        return ["%s: no value is allowed here" % path]
    errors = []
    unknown = set(schema) - SUPPORTED_KEYWORDS - ANNOTATION_KEYWORDS
    if unknown:
        return ["%s: the test validator does not implement %s" % (path, sorted(unknown))]
    if "anyOf" in schema and all(validate(value, sub, path) for sub in schema["anyOf"]):
        return ["%s: %r matches none of anyOf %r" % (path, value, schema["anyOf"])]
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(type_matches(value, t) for t in types):
            return ["%s: %r is not of type %s" % (path, value, types)]
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s: %r is not in %r" % (path, value, schema["enum"]))
    if "const" in schema and value != schema["const"]:
        errors.append("%s: %r is not %r" % (path, value, schema["const"]))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append("%s: %r < minimum %r" % (path, value, schema["minimum"]))
        if "maximum" in schema and value > schema["maximum"]:
            errors.append("%s: %r > maximum %r" % (path, value, schema["maximum"]))
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errors.append("%s: missing required property %r" % (path, name))
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            where = "%s.%s" % (path, name)
            if name in props:
                errors.extend(validate(item, props[name], where))
            elif extra is False:
                errors.append("%s: property not allowed" % where)
            elif isinstance(extra, dict):
                errors.extend(validate(item, extra, where))
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for n, item in enumerate(value):
            errors.extend(validate(item, schema["items"], "%s[%d]" % (path, n)))
    return errors


# --- helpers ---------------------------------------------------------------------------------

class PagingCase(support.ToolCalls, unittest.TestCase):
    maxDiff = None

    @classmethod
    def start_mcp(cls, repo):
        return support.class_session(cls, repo, version="2025-11-25", name="test",
                                     initialized=False)

    def assertInvalid(self, text, names):
        self.assertTrue(text.startswith("invalid input: "), text)
        self.assertIn(names, text)


# ------------------------------------------------------------------------------------------
# Paging on a layer of more than 500 objects: MCP, HTTP, CLI, size budget, schemas
# ------------------------------------------------------------------------------------------

class LargeLayerTests(PagingCase):
    @classmethod
    def setUpClass(cls):
        cls.repo = support.class_repo(cls, gen_files(N_GEN))
        cls.s = cls.start_mcp(cls.repo)
        cls.http = support.HttpServer(cls.repo)
        cls.addClassCleanup(cls.http.stop)
        cls.seen = {}
        cls.uris = sorted(SKELETON_URIS + [gen_uri(i) for i in range(N_GEN)])
        cls.all_ids = None

    # --- helpers ------------------------------------------------------------------------

    def page_through(self, tool, arguments, items_key, key, default_limit):
        """Every page of a tool, from the first to the one without next_cursor."""
        fields = {"majordomus_list": ["count", "total", "objects"],
                  "majordomus_search": ["query", "count", "total", "limit", "hits"],
                  "majordomus_capabilities": ["count", "total", "summary", "capabilities"]}
        limit = arguments.get("limit", default_limit)
        pages, cursor, keys = [], None, []
        total = None
        for _ in range(2000):
            args = dict(arguments)
            if cursor is not None:
                args["cursor"] = cursor
            sc = self.tool(tool, args)
            pages.append(sc)
            order = list(sc)
            more = "next_cursor" in sc
            want = list(fields[tool])
            if tool == "majordomus_search" and arguments.get("mode") != "substring":
                want.insert(1, "mode")       # §21: a ranked answer names its mode
            self.assertEqual(order, want + (["next_cursor"] if more else []), order)
            self.assertEqual(sc["count"], len(sc[items_key]))
            if total is None:
                total = sc["total"]
            self.assertEqual(sc["total"], total, "total changed between pages")
            if tool == "majordomus_search":
                self.assertEqual(sc["limit"], limit)
                self.assertEqual(sc["query"], arguments["query"])
            keys.extend(item[key] for item in sc[items_key])
            if more:
                self.assertIsInstance(sc["next_cursor"], str)
                self.assertEqual(sc["count"], limit, "a page before the last one is full")
                self.assertLess(len(keys), total, "next_cursor although nothing remains")
                cursor = sc["next_cursor"]
            else:
                self.assertEqual(len(keys), total, "no next_cursor although more remain")
                break
        else:
            self.fail("paging never ended")
        self.assertEqual(len(keys), len(set(keys)), "an item came twice")
        if tool != "majordomus_search" or arguments.get("mode") == "substring":
            self.assertEqual(keys, sorted(keys), "not in %s order" % key)
        self.assertEqual(len(pages), max(1, -(-total // limit)))
        return keys, pages

    def list_all(self, **arguments):
        return self.page_through("majordomus_list", dict(arguments, limit=500), "objects",
                                 "uri", 50)[0]

    def capability_ids(self):
        if LargeLayerTests.all_ids is None:
            LargeLayerTests.all_ids = self.page_through(
                "majordomus_capabilities", {"limit": 200}, "capabilities", "id", 20)[0]
        return LargeLayerTests.all_ids

    # --- objects.list ---------------------------------------------------------------------

    def test_list_pages_every_object_once(self):
        for limit in (None, 1, 7, 500):
            with self.subTest(limit=limit):
                arguments = {} if limit is None else {"limit": limit}
                uris, pages = self.page_through("majordomus_list", arguments, "objects",
                                                "uri", 50)
                self.assertEqual(uris, self.uris)
                self.assertEqual(pages[0]["total"], len(self.uris))
                if limit is None:
                    self.assertEqual(pages[0]["count"], 50)
                    self.assertEqual(len(pages), 11)
        # the same set as resources/list (less the queries' resources)
        listed = [r["uri"] for r in self.rpc_ok("resources/list")["resources"]]
        self.assertEqual(listed[:2], support.QUERY_URIS)
        self.assertEqual(listed[2:], self.uris)

    def test_list_summaries(self):
        first = self.tool("majordomus_list", {"limit": 3, "cursor": self.tool(
            "majordomus_list", {"limit": 8})["next_cursor"]})
        self.assertEqual(first["objects"][0], {
            "uri": gen_uri(0), "id": "rule.gen.r0000@1", "kind": "rule",
            "identity": "gen.r0000@1", "title": "Generated rule 0",
            "description": "The generated rule number 0.",
            "path": ".ai/repo/rules/gen/r0000.md"})

    def test_list_filtered_pages(self):
        even = [gen_uri(i) for i in range(0, N_GEN, 2)]
        for limit in (None, 20, 33):
            with self.subTest(limit=limit):
                arguments = {"tag": "even"} if limit is None else {"tag": "even", "limit": limit}
                uris, pages = self.page_through("majordomus_list", arguments, "objects",
                                                "uri", 50)
                self.assertEqual(uris, even)
        uris, _ = self.page_through("majordomus_list", {"kind": "rule", "limit": 100},
                                    "objects", "uri", 50)
        self.assertEqual(uris, [u for u in self.uris if u.startswith("majordomus://rule/")])

    def test_list_limit_bounds(self):
        for limit in (0, -1, 501, 10 ** 6):
            with self.subTest(limit=limit):
                self.assertInvalid(self.tool_error("majordomus_list", {"limit": limit}),
                                   "limit")
        self.assertInvalid(self.tool_error("majordomus_list", {"limit": "5"}), "limit")
        self.assertEqual(self.tool("majordomus_list", {"limit": 500})["count"], 500)
        self.assertEqual(self.tool("majordomus_list", {"limit": 1})["count"], 1)

    # --- objects.search -------------------------------------------------------------------

    def test_search_pages_matching_all(self):
        expected = [gen_uri(i) for i in range(N_GEN)]
        for limit in (None, 1, 200):
            with self.subTest(limit=limit):
                arguments = {"mode": "substring", "query": ALL_MARK.upper()}
                if limit is not None:
                    arguments["limit"] = limit
                uris, pages = self.page_through("majordomus_search", arguments, "hits", "uri",
                                                20)
                self.assertEqual(uris, expected)
                if limit is None:
                    self.assertEqual(pages[0]["count"], 20)
                    self.assertEqual(pages[0]["limit"], 20)
                    self.assertEqual(len(pages), 26)
                for page in pages:
                    for hit in page["hits"]:
                        self.assertIn(ALL_MARK, hit["snippet"])

    def test_ranked_search_pages_every_hit_once(self):
        """§21: paging through a ranked answer returns every hit once, in score order
        then URI, whatever the page size."""
        arguments = {"query": "generated rule zebra subset marker even"}
        whole = self.tool("majordomus_search", dict(arguments, limit=200))
        self.assertEqual(whole["mode"], "ranked")
        # the subset's rules carry more of the query's words: they come first
        subset = set(gen_uri(i) for i in range(0, N_GEN, 7))
        first = [h["uri"] for h in whole["hits"][:len(subset)]]
        self.assertEqual(set(first), subset)
        for limit in (None, 7, 60):
            with self.subTest(limit=limit):
                args = dict(arguments) if limit is None else dict(arguments, limit=limit)
                uris, pages = self.page_through("majordomus_search", args, "hits", "uri", 20)
                self.assertEqual(len(uris), len(set(uris)), "a hit was repeated")
                self.assertEqual(len(uris), pages[0]["total"])
                self.assertEqual(set(uris), set(self.uris) & set(uris))
                ranked = [(-h["score"], h["uri"]) for p in pages for h in p["hits"]]
                self.assertEqual(ranked, sorted(ranked))
                self.assertGreater(len(uris), len(subset))

    def test_search_pages_a_subset(self):
        expected = [gen_uri(i) for i in range(0, N_GEN, 7)]
        for limit in (None, 4, 75):
            with self.subTest(limit=limit):
                arguments = {"mode": "substring", "query": SUBSET_MARK}
                if limit is not None:
                    arguments["limit"] = limit
                uris, pages = self.page_through("majordomus_search", arguments, "hits", "uri",
                                                20)
                self.assertEqual(uris, expected)
                self.assertEqual(pages[0]["total"], len(expected))
        one = self.tool("majordomus_search", {"query": "generated rule number 123."})
        self.assertEqual([h["uri"] for h in one["hits"]], [gen_uri(123)])
        self.assertEqual((one["count"], one["total"]), (1, 1))
        self.assertNotIn("next_cursor", one)

    def test_search_limit_bounds(self):
        for limit in (0, 201):
            with self.subTest(limit=limit):
                self.assertInvalid(
                    self.tool_error("majordomus_search", {"query": ALL_MARK, "limit": limit}),
                    "limit")
        self.assertEqual(self.tool("majordomus_search", {"query": ALL_MARK,
                                                         "limit": 200})["count"], 200)

    # --- capabilities.list ----------------------------------------------------------------

    def test_capabilities_pages(self):
        expected = sorted(BUILTIN_IDS + ["%s.%s" % tuple(u[len("majordomus://"):].split("/", 1))
                                         for u in self.uris])
        for limit in (None, 1, 13, 200):
            with self.subTest(limit=limit):
                arguments = {} if limit is None else {"limit": limit}
                ids, pages = self.page_through("majordomus_capabilities", arguments,
                                               "capabilities", "id", 20)
                self.assertEqual(ids, expected)
                for page in pages:
                    self.assertEqual(page["summary"]["total"], len(expected))
                    self.assertEqual(page["total"], len(expected))
                if limit is None:
                    self.assertEqual(pages[0]["count"], 20)
        ids, _ = self.page_through("majordomus_capabilities", {"kind": "query", "limit": 3},
                                   "capabilities", "id", 20)
        self.assertEqual(ids, [i for i in BUILTIN_IDS if i not in COMMANDS])

    def test_capabilities_limit_bounds(self):
        for limit in (0, 201):
            with self.subTest(limit=limit):
                self.assertInvalid(self.tool_error("majordomus_capabilities",
                                                   {"limit": limit}), "limit")

    # --- forged and foreign cursors -------------------------------------------------------

    def forged_cursors(self, real):
        """Cursors this server never wrote, made without reading its format; plus forms
        made by changing a real one's tag (the text before its first '.')."""
        junk = base64.urlsafe_b64encode(b"\x00\xffjunk\x80 not a cursor").decode()
        forged = ["", "not-a-cursor", "random text !", junk, junk.rstrip("="),
                  base64.b64encode(b"uri:" + b"\xff\xfe").decode(), "." + junk, "%%%", "\u00e9"]
        tag, dot, data = real.partition(".")
        if dot:
            forged += ["zz9" + dot + data, tag + "x" + dot + data, tag + dot + "!" + data,
                       tag + dot + junk.rstrip("=")]
        else:
            forged += ["zz9." + real]
        return forged

    def test_forged_cursors_are_refused(self):
        real = {tool: self.tool(tool, args)["next_cursor"] for tool, args in (
            ("majordomus_list", {"limit": 2}),
            ("majordomus_search", {"query": ALL_MARK, "limit": 2}),
            ("majordomus_capabilities", {"limit": 2}))}
        bases = {"majordomus_list": {}, "majordomus_search": {"query": ALL_MARK},
                 "majordomus_capabilities": {}}
        for tool, base in bases.items():
            for cursor in self.forged_cursors(real[tool]):
                with self.subTest(tool=tool, cursor=cursor):
                    text = self.tool_error(tool, dict(base, cursor=cursor))
                    self.assertEqual(text, "invalid input: " + FOREIGN)
            with self.subTest(tool=tool, cursor="not a string"):
                self.assertInvalid(self.tool_error(tool, dict(base, cursor=5)), "cursor")
        # a cursor of the object list names a URI, not a capability id
        with self.subTest("object cursor given to capabilities"):
            text = self.tool_error("majordomus_capabilities",
                                   {"cursor": real["majordomus_list"]})
            self.assertEqual(text, "invalid input: " + FOREIGN)
        # the real ones are accepted
        for tool, base in bases.items():
            self.assertIn("count", self.tool(tool, dict(base, cursor=real[tool])))

    def test_cursor_is_opaque(self):
        """The answer never explains the cursor: it does not show the URI it names."""
        sc = self.tool("majordomus_list", {"limit": 5})
        self.assertNotIn(sc["objects"][-1]["uri"], sc["next_cursor"])
        self.assertNotIn(sc["objects"][-1]["identity"], sc["next_cursor"])

    # --- the unpaged MCP lists ------------------------------------------------------------

    def test_unpaged_lists_refuse_a_cursor(self):
        for method in ("resources/list", "prompts/list", "tools/list"):
            for cursor in ("x", "", 0, {"a": 1}, False):
                with self.subTest(method=method, cursor=cursor):
                    answer = self.rpc(method, {"cursor": cursor})
                    self.assertNotIn("result", answer, answer)
                    self.assertEqual(answer["error"]["code"], -32602, answer)
                    self.assertEqual(answer["error"]["message"], "invalid cursor")
            for params in ({"cursor": None}, {}, None):
                with self.subTest(method=method, params=params):
                    result = self.rpc_ok(method, params)
                    self.assertNotIn("nextCursor", result)
        tools = self.rpc_ok("tools/list")["tools"]
        self.assertEqual([t["name"] for t in tools], TOOLS)
        get = tools[TOOLS.index("majordomus_get")]
        for word in ("window", "offset", "limit", "large"):
            self.assertIn(word, get["description"])
        self.assertEqual(sorted(get["inputSchema"]["properties"]), ["limit", "offset", "uri"])
        self.assertEqual(len(self.rpc_ok("resources/list")["resources"]),
                         len(self.uris) + len(support.QUERY_URIS))

    # --- HTTP ---------------------------------------------------------------------------------

    def http_json(self, path, status=200):
        code, body = self.http.get_json(path)
        self.assertEqual(code, status, body)
        return body

    def test_http_paging(self):
        for limit in (None, 7, 500):
            with self.subTest(limit=limit):
                uris, cursor, n = [], None, 0
                while True:
                    query = {}
                    if limit is not None:
                        query["limit"] = str(limit)
                    if cursor is not None:
                        query["cursor"] = cursor
                    body = self.http_json("/api/v1/objects?" + urllib.parse.urlencode(query))
                    more = "next_cursor" in body
                    self.assertEqual(list(body), ["count", "total", "objects"] +
                                     (["next_cursor"] if more else []))
                    uris.extend(o["uri"] for o in body["objects"])
                    n += 1
                    if not more:
                        break
                    cursor = body["next_cursor"]
                self.assertEqual(uris, self.uris)
                self.assertEqual(n, -(-len(self.uris) // (limit or 50)))
        # an HTTP page is the MCP page
        page = self.tool("majordomus_list", {"limit": 7})
        self.assertEqual(self.http_json("/api/v1/objects?limit=7"), page)
        cursor = urllib.parse.quote(page["next_cursor"], safe="")
        self.assertEqual(self.http_json("/api/v1/objects?limit=7&cursor=" + cursor),
                         self.tool("majordomus_list", {"limit": 7,
                                                       "cursor": page["next_cursor"]}))
        search = "/api/v1/search?query=%s&limit=3" % SUBSET_MARK
        self.assertEqual(self.http_json(search),
                         self.tool("majordomus_search", {"query": SUBSET_MARK, "limit": 3}))
        caps = self.http_json("/api/v1/capabilities?limit=4")
        self.assertEqual([c["id"] for c in caps["capabilities"]], self.capability_ids()[:4])

    def test_http_refusals(self):
        for path, names in (("/api/v1/objects?limit=0", "limit"),
                            ("/api/v1/objects?limit=501", "limit"),
                            ("/api/v1/objects?limit=abc", "limit"),
                            ("/api/v1/search?query=x&limit=0", "limit"),
                            ("/api/v1/search?query=x&limit=201", "limit"),
                            ("/api/v1/capabilities?limit=0", "limit"),
                            ("/api/v1/capabilities?limit=201", "limit")):
            with self.subTest(path=path):
                body = self.http_json(path, 400)
                self.assertEqual(body["error"]["code"], "invalid_input")
                self.assertIn(names, body["error"]["message"])
                self.assertFalse(body["error"]["message"].startswith("invalid input"))
        self.assertEqual(self.http_json("/api/v1/objects?limit=abc", 400)["error"]["message"],
                         "parameter 'limit': 'abc' is not an integer")
        for route in ("/api/v1/objects?", "/api/v1/search?query=x&",
                      "/api/v1/capabilities?"):
            for cursor in ("junk", "zz9.AAAA", base64.b64encode(b"\x00junk\xff").decode()):
                with self.subTest(route=route, cursor=cursor):
                    body = self.http_json(route + "cursor=" + urllib.parse.quote(cursor, safe=""),
                                          400)
                    self.assertEqual(body, {"error": {"code": "invalid_input",
                                                      "message": FOREIGN}})

    # --- CLI ----------------------------------------------------------------------------------

    def test_cli_capabilities_list_prints_everything(self):
        ids = self.capability_ids()
        p = support.run(["capabilities", "list"], self.repo, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.decode("utf-8").splitlines()
        self.assertEqual(len(lines), len(ids) + 1)
        self.assertEqual([line.split(" ", 1)[0] for line in lines[:-1]], ids)
        self.assertTrue(lines[-1].startswith("capabilities: %d (%d builtin, %d declarative)"
                                             % (len(ids), len(BUILTIN_IDS),
                                                len(ids) - len(BUILTIN_IDS))), lines[-1])
        p = support.run(["capabilities", "list", "--format", "json"], self.repo,
                        timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout.decode("utf-8"))
        self.assertEqual(list(doc), ["count", "total", "summary", "capabilities"])
        self.assertEqual(doc["count"], len(ids))
        self.assertEqual(doc["total"], len(ids))
        self.assertEqual([c["id"] for c in doc["capabilities"]], ids)
        self.assertEqual(doc["summary"], self.tool("majordomus_capabilities", {})["summary"])
        described = self.tool("majordomus_capability", {"id": ids[-1]})
        self.assertEqual(doc["capabilities"][-1], described)

    # --- the size budget and the output schemas --------------------------------------------

    def default_calls(self):
        some_rule = gen_uri(N_GEN // 2)
        return [("majordomus_list", {}), ("majordomus_search", {"query": "e", "mode": "substring"}),
                ("majordomus_search", {"query": ALL_MARK, "mode": "substring"}),
                ("majordomus_search", {"query": ALL_MARK}),
                ("majordomus_search", {"query": "generated rules with the marker"}),
                ("majordomus_capabilities", {}),
                ("majordomus_capability", {"id": "capabilities.list"}),
                ("majordomus_capability", {"id": "objects.get"}),
                ("majordomus_capability", {"id": "rule.gen.r0001@1"}),
                ("majordomus_get", {"uri": some_rule}), ("majordomus_get", {"uri": RULE_URI}),
                ("majordomus_get", {"uri": some_rule, "offset": 2, "limit": 3}),
                ("majordomus_get", {"uri": REPOSITORY_URI}), ("majordomus_repository", {}),
                ("majordomus_perf", {}), ("majordomus_context", {"path": ".ai/repo/rules"}),
                ("majordomus_brief", {"path": ".ai/repo/rules/project/new.v1.md",
                                      "intent": "add a generated rule"}),
                ("majordomus_prompt", {"name": "continue", "arguments": {"CONTEXT": "x"}}),
                ("majordomus_announce", {"intent": "edit the generated rules",
                                         "scope": [".ai/repo/rules"]}),
                ("majordomus_peers", {}), ("majordomus_affected", {})]

    def test_size_budget(self):
        everything = self.tool("majordomus_search", {"query": "e", "mode": "substring"})
        self.assertEqual(everything["total"], len(self.uris), "'e' no longer matches all")
        for name, arguments in self.default_calls():
            with self.subTest(tool=name, arguments=arguments):
                result = self.call(name, arguments)
                self.assertIs(result.get("isError"), False, result)
                self.seen.setdefault(name, []).append(result["structuredContent"])
                text = result["content"][0]["text"]
                self.assertLessEqual(len(text), BUDGET, "%s: %d characters" % (name, len(text)))

    def test_output_schemas_are_real(self):
        tools = self.rpc_ok("tools/list")["tools"]
        for tool in tools:
            schema = tool["outputSchema"]
            self.assertEqual(schema.get("type"), "object", tool["name"])
            for path, node in schema_nodes(schema):
                with self.subTest(tool=tool["name"], node=path):
                    self.assertIsInstance(node, dict)
                    self.assertTrue(VALIDATION_KEYWORDS & set(node),
                                    "%s %s carries no validation keyword: %r"
                                    % (tool["name"], path, node))

    def test_structured_content_validates(self):
        for name, arguments in self.default_calls():
            self.tool(name, arguments)
        self.page_through("majordomus_list", {"limit": 250}, "objects", "uri", 50)
        self.page_through("majordomus_search", {"query": SUBSET_MARK, "limit": 30}, "hits",
                          "uri", 20)
        self.page_through("majordomus_capabilities", {"limit": 200}, "capabilities", "id", 20)
        schemas = {t["name"]: t["outputSchema"] for t in self.rpc_ok("tools/list")["tools"]}
        self.assertEqual(sorted(self.seen), sorted(TOOLS))
        for name, values in sorted(self.seen.items()):
            for n, value in enumerate(values):
                with self.subTest(tool=name, answer=n):
                    self.assertEqual(validate(value, schemas[name]), [])
        # the validator itself refuses what it should
        self.assertNotEqual(validate({"count": "1"}, schemas["majordomus_list"]), [])
        self.assertNotEqual(validate({"count": 1, "total": 1}, schemas["majordomus_list"]), [])


# ------------------------------------------------------------------------------------------
# Windows of lines through objects.get
# ------------------------------------------------------------------------------------------

class WindowTests(PagingCase):
    @classmethod
    def setUpClass(cls):
        cls.repo = support.class_repo(cls, WINDOW_FILES)
        cls.s = cls.start_mcp(cls.repo)
        cls.http = support.HttpServer(cls.repo)
        cls.addClassCleanup(cls.http.stop)

    def whole(self, uri):
        view = self.tool("majordomus_get", {"uri": uri})
        self.assertNotIn("window", view)
        return view

    def check_window(self, uri, offset, limit, lines, arguments=None):
        if arguments is None:
            arguments = {"uri": uri, "offset": offset, "limit": limit}
        view = self.tool("majordomus_get", arguments)
        whole = self.whole(uri)
        keys = list(view)
        self.assertEqual(keys, list(whole) + ["window"], keys)
        self.assertEqual(keys.index("window"), keys.index("content") + 1)
        for key in whole:
            if key != "content":
                self.assertEqual(view[key], whole[key], key)
        chosen = lines[offset - 1:offset - 1 + limit]
        self.assertEqual(view["content"], "".join(chosen))
        expected = {"offset": offset, "limit": limit, "lines": len(chosen),
                    "total_lines": len(lines)}
        if offset - 1 + len(chosen) < len(lines):
            expected["next_offset"] = offset + len(chosen)
        self.assertEqual(view["window"], expected)
        self.assertEqual(list(view["window"]), list(expected))
        return view

    def test_windows_of_a_long_file(self):
        self.assertEqual(self.whole(LONG_URI)["content"], "".join(LONG_LINES))
        self.assertEqual(len(LONG_LINES), 300)
        for offset, limit in ((1, 1), (1, 100), (2, 3), (150, 151), (299, 2), (300, 1),
                              (300, 10000), (1, 300), (1, 10000), (17, 299)):
            with self.subTest(offset=offset, limit=limit):
                self.check_window(LONG_URI, offset, limit, LONG_LINES)
        last = self.tool("majordomus_get", {"uri": LONG_URI, "offset": 1, "limit": 300})
        self.assertNotIn("next_offset", last["window"])

    def test_window_walk_to_the_end(self):
        offset, text, n = 1, "", 0
        while True:
            view = self.tool("majordomus_get", {"uri": LONG_URI, "offset": offset, "limit": 70})
            text += view["content"]
            n += 1
            if "next_offset" not in view["window"]:
                break
            self.assertEqual(view["window"]["lines"], 70)
            offset = view["window"]["next_offset"]
        self.assertEqual(text, "".join(LONG_LINES))
        self.assertEqual(n, 5)
        self.assertEqual(view["window"], {"offset": 281, "limit": 70, "lines": 20,
                                          "total_lines": 300})

    def test_limit_without_offset_starts_at_one(self):
        view = self.check_window(LONG_URI, 1, 5, LONG_LINES,
                                 arguments={"uri": LONG_URI, "limit": 5})
        self.assertEqual(view["window"]["next_offset"], 6)

    def test_offset_without_limit(self):
        view = self.tool("majordomus_get", {"uri": LONG_URI, "offset": 290})
        self.assertEqual(view["content"], "".join(LONG_LINES[289:]))
        self.assertEqual(view["window"]["offset"], 290)
        self.assertEqual(view["window"]["lines"], 11)
        self.assertEqual(view["window"]["total_lines"], 300)
        self.assertNotIn("next_offset", view["window"])

    def test_other_line_endings(self):
        self.check_window(NONL_URI, 3, 1, ["a\n", "b\n", "c"])
        self.check_window(NONL_URI, 1, 2, ["a\n", "b\n", "c"])
        crlf = ["# CRLF\r\n", "second\r\n", "third\r\n"]
        self.check_window(CRLF_URI, 2, 1, crlf)
        self.check_window(CRLF_URI, 1, 3, crlf)
        self.check_window(RULE_URI, 1, 4, self.whole(RULE_URI)["content"].splitlines(True))

    def test_empty_file(self):
        view = self.tool("majordomus_get", {"uri": EMPTY_URI, "offset": 1, "limit": 10})
        self.assertEqual(view["content"], "")
        self.assertEqual(view["window"], {"offset": 1, "limit": 10, "lines": 0,
                                          "total_lines": 0})
        self.assertInvalid(self.tool_error("majordomus_get",
                                           {"uri": EMPTY_URI, "offset": 2, "limit": 1}),
                           "offset")

    def test_refused_windows(self):
        for arguments, names in (
                ({"uri": LONG_URI, "offset": 301, "limit": 1}, "offset"),
                ({"uri": LONG_URI, "offset": 301}, "offset"),
                ({"uri": LONG_URI, "offset": 10 ** 6, "limit": 5}, "offset"),
                ({"uri": NONL_URI, "offset": 4, "limit": 1}, "offset"),
                ({"uri": LONG_URI, "offset": 0, "limit": 1}, "offset"),
                ({"uri": LONG_URI, "offset": -3, "limit": 1}, "offset"),
                ({"uri": LONG_URI, "offset": "1", "limit": 1}, "offset"),
                ({"uri": LONG_URI, "offset": 1, "limit": 0}, "limit"),
                ({"uri": LONG_URI, "offset": 1, "limit": 10001}, "limit"),
                ({"uri": LONG_URI, "limit": 1.5}, "limit"),
                ({"uri": REPOSITORY_URI, "offset": 1, "limit": 10}, "offset"),
                ({"uri": REPOSITORY_URI, "offset": 1}, "offset"),
                ({"uri": REPOSITORY_URI, "limit": 10}, "offset")):
            with self.subTest(arguments=arguments):
                self.assertInvalid(self.tool_error("majordomus_get", arguments), names)
        # the repository without a window is still the report
        self.assertEqual(self.tool("majordomus_get", {"uri": REPOSITORY_URI})["source"],
                         "builtin")
        text = self.tool_error("majordomus_get", {"uri": "majordomus://document/nope.md",
                                                  "offset": 1, "limit": 1})
        self.assertTrue(text.startswith("not found: "), text)

    def test_http_windows(self):
        for offset, limit in ((1, 10), (295, 10), (300, 1)):
            with self.subTest(offset=offset, limit=limit):
                query = urllib.parse.urlencode({"uri": LONG_URI, "offset": offset,
                                                "limit": limit})
                status, body = self.http.get_json("/api/v1/object?" + query)
                self.assertEqual(status, 200, body)
                self.assertEqual(body, self.tool("majordomus_get", {
                    "uri": LONG_URI, "offset": offset, "limit": limit}))
        status, body = self.http.get_json("/api/v1/object?" + urllib.parse.urlencode(
            {"uri": LONG_URI, "limit": 4}))
        self.assertEqual(status, 200, body)
        self.assertEqual(body["window"], {"offset": 1, "limit": 4, "lines": 4,
                                          "total_lines": 300, "next_offset": 5})
        for query, names in (({"uri": LONG_URI, "offset": 301, "limit": 1}, "offset"),
                             ({"uri": LONG_URI, "offset": "abc", "limit": 1}, "offset"),
                             ({"uri": LONG_URI, "offset": 1, "limit": 0}, "limit"),
                             ({"uri": REPOSITORY_URI, "offset": 1, "limit": 1}, "offset")):
            with self.subTest(query=query):
                status, body = self.http.get_json("/api/v1/object?" +
                                                  urllib.parse.urlencode(query))
                self.assertEqual(status, 400, body)
                self.assertEqual(body["error"]["code"], "invalid_input")
                self.assertIn(names, body["error"]["message"])
                self.assertFalse(body["error"]["message"].startswith("invalid input"))
        status, body = self.http.get_json("/api/v1/object?" + urllib.parse.urlencode(
            {"uri": EMPTY_URI, "offset": 1, "limit": 3}))
        self.assertEqual(status, 200, body)
        self.assertEqual(body["content"], "")

    def test_cli_windows(self):
        p = support.run(["get", LONG_URI, "--offset", "11", "--limit", "5", "--format", "text"],
                        self.repo, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "".join(LONG_LINES[10:15]).encode("utf-8"))
        p = support.run(["get", CRLF_URI, "--offset", "2", "--limit", "2", "--format", "text"],
                        self.repo, timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, b"second\r\nthird\r\n")
        p = support.run(["get", LONG_URI, "--offset", "298", "--limit", "5"], self.repo,
                        timeout=TIMEOUT)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout.decode("utf-8")), self.tool(
            "majordomus_get", {"uri": LONG_URI, "offset": 298, "limit": 5}))
        for args in (["--offset", "x", "--limit", "5"], ["--offset", "1", "--limit", "many"],
                     ["--offset", "1.5", "--limit", "5"]):
            with self.subTest(args=args):
                p = support.run(["get", LONG_URI] + args, self.repo, timeout=TIMEOUT)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(p.stdout, b"")
        p = support.run(["get", LONG_URI, "--offset", "301", "--limit", "5"], self.repo,
                        timeout=TIMEOUT)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stdout, b"")
        self.assertRegex(p.stderr.decode("utf-8"), r"(?m)^majordomus: .*offset")
        p = support.run(["get", LONG_URI, "--offset", "0", "--limit", "5"], self.repo,
                        timeout=TIMEOUT)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stdout, b"")
        self.assertIn("offset", p.stderr.decode("utf-8"))
        p = support.run(["get", REPOSITORY_URI, "--offset", "1", "--limit", "5"], self.repo,
                        timeout=TIMEOUT)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertRegex(p.stderr.decode("utf-8"), r"(?m)^majordomus: .*offset")


# ------------------------------------------------------------------------------------------
# A cursor held across generations (§15, §16: keyset paging)
# ------------------------------------------------------------------------------------------

class GenerationTests(PagingCase):
    @classmethod
    def setUpClass(cls):
        cls.repo = support.class_repo(cls, gen_files(40))
        cls.s = cls.start_mcp(cls.repo)

    def test_cursor_survives_a_new_generation(self):
        page1 = self.tool("majordomus_list", {"limit": 10})
        seen = [o["uri"] for o in page1["objects"]]
        self.assertEqual(len(seen), 10)
        last = seen[-1]
        self.assertEqual(last, gen_uri(1))
        before = "majordomus://rule/aaa.early@1"
        right_after = "majordomus://rule/gen.r0001a@1"
        removed = gen_uri(3)
        self.assertTrue(seen[0] < before < last < right_after < gen_uri(2))
        support.write(self.repo, ".ai/repo/rules/extra/early.md",
                      "---\nid: aaa.early\nversion: 1\ntitle: Early\n---\nearly\n")
        support.write(self.repo, ".ai/repo/rules/extra/late.md",
                      "---\nid: gen.r0001a\nversion: 1\ntitle: Right after\n---\nlate\n")
        support.git(self.repo, "add", ".ai/repo/rules/extra")
        support.git(self.repo, "rm", "-q", "--cached", ".ai/repo/rules/gen/r0003.md")
        time.sleep(1.6)   # §15.2: a change complete one second before a request is seen
        page2 = self.tool("majordomus_list", {"limit": 10, "cursor": page1["next_cursor"]})
        now = [o["uri"] for o in self.tool("majordomus_list", {"limit": 500})["objects"]]
        self.assertIn(before, now)
        self.assertIn(right_after, now)
        self.assertNotIn(removed, now)
        self.assertEqual(page2["total"], len(now))
        self.assertEqual(page2["total"], page1["total"] + 1)
        after = [u for u in now if u > last]
        got = [o["uri"] for o in page2["objects"]]
        self.assertEqual(got, after[:10])
        self.assertEqual(got[0], right_after)
        self.assertFalse(set(got) & set(seen), "a URI came twice")
        rest, cursor = got, page2.get("next_cursor")
        while cursor is not None:
            page = self.tool("majordomus_list", {"limit": 10, "cursor": cursor})
            rest += [o["uri"] for o in page["objects"]]
            cursor = page.get("next_cursor")
        self.assertEqual(rest, after)
        self.assertEqual([u for u in now if u <= last], sorted(seen + [before]))


if __name__ == "__main__":
    unittest.main()
