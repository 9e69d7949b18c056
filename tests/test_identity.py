"""Every answer stays byte-identical to what main answered at 0436a0f (SPEC §23), what
§20-§22 add or change aside.

The test builds commit 0436a0f (main before §20-§23) from `git archive` into a temporary
directory, once per process, then spawns that build and this one (support.PYZ) in the same
scratch repositories: the test layer (tests/fixtures/layer), the reference data's real layer
(fixtures/real-latest/; skipped by name where it is absent), a generated layer of 2,000
rules, and a small layer of edge cases (EDGE_FILES). On each it compares
`mcp --inspect` (text, `--format json`, and JSON under `--discovery filesystem`) and, over
one real MCP session per program (pipes), initialize, ping, tools/list, resources/list,
resources/templates/list, prompts/list, every resources/read and prompts/get, and every
tool's calls: majordomus_perf, majordomus_repository, majordomus_capabilities (its default
page and every page), majordomus_capability for every capability, majordomus_list (its
default page and every page), majordomus_get for every resource, majordomus_search (the old
default call against `mode: "substring"`), majordomus_prompt for every prompt, and a few
refusals of each (errors are answers too).

The comparison is of bytes. Where §20-§22 change an answer, the new build's answer is
parsed, the change undone (each exclusion below names its §), and the answer written again
with the encoder that reproduces the new build's bytes exactly; that text must then equal
the old build's bytes. Nothing else is masked but majordomus_perf's timings.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import unittest

from tests import support

BASELINE = "0436a0f"      # main before §20-§23
GENERATED_RULES = 2000    # support.generated_rule's; every seventh carries NON_ASCII
NON_ASCII = " \u2014 r\u00e8gle \u00e9crite \U0001f600"
PAGE = 200                # the largest page (§16), for the walks
EXCERPT = 240             # characters shown on each side of a first difference

# real-latest's context documents name in `tracks` files of the shell tool's repository that
# the fixture does not carry: §20.1 reports each as broken_reference. As §20.3's own proof
# does, empty stand-ins are committed at those paths, so that the context tree validates
# and no §20.1 diagnostic enters the answers (no source of the layer covers them: both
# builds serve the same 112 objects).
REAL_STAND_INS = ["lib/prompt.sh", "share/allow/prompt.txt", "lib/rules.sh", "lib/doctrine.sh",
                  "share/standard/majordomus", "share/allow/rule.txt", "lib/start.sh",
                  "lib/check.sh", "lib/finish.sh", "lib/handover.sh", "lib/plan.sh"]

# §20.2: one more builtin capability, context.resolve (a query, behaviorally verified like
# every builtin) with an MCP tool, an HTTP route and a CLI command (`context resolve`);
# §21: objects.search gains the CLI exposure `search`; §26: context.brief, likewise (CLI
# `brief`); §27: peers.list (a query with an MCP tool, the resource majordomus://peers, an
# HTTP route and the CLI command `peers`) and peers.announce (the first command: an MCP
# tool and a POST route); §33: context.list, context.validate, context.affected and
# context.sync (queries, each with an HTTP route and a CLI command; one MCP tool,
# majordomus_affected); §31: peers.tell (a command with a POST route alone); §30:
# hook.deliver (a command with a POST route and the CLI command `hook`). The registry's
# summary counts them.
SUMMARY_DELTA = [(("total",), 10), (("builtin",), 10), (("by_kind", "query"), 7),
                 (("by_kind", "command"), 3),
                 (("by_stability", "behaviorally_verified"), 10), (("mcp_tools",), 5),
                 (("mcp_resources",), 1), (("http_routes",), 10), (("cli_commands",), 9)]
NEW_CAPABILITIES = ["context.affected", "context.brief", "context.list",      # §33, §26
                    "context.resolve", "context.sync", "context.validate",    # §20.2, §33
                    "hook.deliver",                                           # §30
                    "peers.announce", "peers.list", "peers.tell"]             # §27, §31
NEW_TOOLS = ["majordomus_affected", "majordomus_brief", "majordomus_context",
             "majordomus_announce", "majordomus_peers"]               # §33, §26, §20.2, §27
NEW_RESOURCES = ["majordomus://peers"]   # §27
# §26: initialize's instructions send a model to the brief, in this sentence.
BRIEF_SENTENCE = (" Before you create or change a file, call majordomus_brief with its path "
                  "and your intent.")
# §27: the instructions make room for the peers present (600 characters in all); the
# objects' parenthetical went for it.
OLD_SCHEME = "majordomus://<kind>/<identity> (rules, prompts, profiles, the policy, plans, " \
    "documents);"
NEW_SCHEME = "majordomus://<kind>/<identity>;"
SEARCH_QUERIES = ["scope", "Scope", "rule", "policy.YAML", "e", "hand over", "Generated rule 01",
                  "\u2014", "zzz-none"]


# A small layer of edge cases beside the three named ones: the §3 subset reader's scalars,
# quotes, comments, nesting and each of its refusals, front matter opened and never closed,
# absent or empty, a BOM, CRLF, non-UTF-8 bytes, invalid and duplicate ids, and keys the
# allow-lists (§3.5) refuse at every depth; each answers as 0436a0f answered it.
_RULES = ".ai/repo/rules/project/"


def _rule(name, front_matter, body="# T\n\nBody.\n"):
    return (_RULES + name + ".v1.md", "---\n" + front_matter + "---\n\n" + body)


def _head(name):
    return "id: project.%s\nversion: 1\ntitle: %s\ndescription: d\n" % (name, name.title())


EDGE_FILES = dict([
    _rule("unknown", _head("unknown") + "foo: 1\nx-majordomus:\n  validator: a\n  bogus: b\n"
          "  claims:\n    - a: 1\n      b: [x, y]\ndepends_on:\n  a: 1\n"),
    _rule("scalars", "id: project.scalars\nversion: 1\ntitle: 'it''s \"q\" # not'\n"
          "description: \"tab\\there \\u00e9 \\\\ back\" # comment\nstatus: yes\nclass: ~\n"
          "tags: [1, 1.50, -0, .5, 1e3, 0x1F, true, null, \"a, b\", 'c', '']\n"
          "statement:\ndepends_on:\n  - one   # a comment\n  - 'two: 2'\n  - \"\"\n"),
    _rule("nested", _head("nested") + "x-majordomus:\n  validator: v\n  exit_code: 3\n"
          "  claims:\n    - c1\n    - c2\n  tests: []\n  enforced_by: [a]\n"),
    _rule("folded", _head("folded") + "statement: >\n  folded\n  text\n"),
    _rule("crlf", _head("crlf").replace("\n", "\r\n"), "# CRLF\r\n\r\nBody.\r\n"),
    (_RULES + "crlf-all.v1.md",
     ("---\n" + _head("crlf-all") + "---\n\n# T\n").replace("\n", "\r\n")),
    _rule("tab", _head("tab") + "x-majordomus:\n\tvalidator: a\n"),
    _rule("badindent", _head("badindent") + "x-majordomus:\n    validator: a\n  category: b\n"),
    _rule("dup", _head("dup") + "title: Again\n"),
    _rule("nocolon", _head("nocolon") + "status active\n"),
    _rule("unterminated", _head("unterminated") + "status: \"open\ntags: [a, b\n"),
    _rule("flow", _head("flow") + "tags: [a, b\n"),
    _rule("anchor", _head("anchor") + "status: &a A\nclass: *a\n"),
    _rule("badid", "id: Project.Bad_ID\nversion: one\ntitle: X\ndescription: d\n"),
    _rule("dupid", "id: project.unknown\nversion: 1\ntitle: Dup id\ndescription: d\n"),
    _rule("unicode", "id: project.unicode\nversion: 1\n"
          "title: \u00dcn\u00efc\u00f6d\u00e9 \u2014 \u201cquotes\u201d \U0001f600\n"
          "description: \u043a\u043b\u044e\u0447 \u2028 sep\n", "# \u00c9t\u00e9\n\nCaf\u00e9.\n"),
    _rule("unicode-key", _head("unicode-key") + "\u043a\u043b\u044e\u0447: 1\n"),
    (_RULES + "noclose.v1.md", "---\nid: project.noclose\nversion: 1\ntitle: T\n"),
    (_RULES + "nofm.v1.md", "# Just a body\n"),
    (_RULES + "empty.v1.md", ""),
    (_RULES + "bom.v1.md", "\ufeff---\n" + _head("bom") + "---\nbody\n"),
    (_RULES + "latin1.v1.md", b"---\nid: project.latin1\nversion: 1\ntitle: caf\xe9\n---\n"),
    (".ai/repo/profiles/weird.yaml", "name: weird\ndescription: a profile\ncontext:\n  task: true\n"
     "  other: 1\n  deeper:\n    x: 1\neffort_escalation:\n  after_blocked_attempts: 2\n"
     "  to: high\n  extra: [1, 2]\noutput_contract:\n  - a\n  - b: c\n"
     "unknown_top: \"v\"\nchecks:\n  - name: one\n    run: two\n"),
    (".ai/repo/profiles/fine.yaml", "name: fine\ndescription: \"a profile: quoted\"\n"
     "capability: high\neffort: low\ncontext:\n  task: true\n  recent_history_depth: 3\n"
     "output_contract: []\ncheckpoint_interval: 15m\n"),
    (".ai/repo/profiles/bare-dash.yaml", "name: bare\noutput_contract:\n  -\n    - nested\n"),
    (".ai/repo/profiles/broken.yaml", "name: broken\n  description: over-indented\n"),
    (".ai/repo/profiles/empty-key.yaml", "name: e\n: empty key\n"),
    (".ai/repo/profiles/list.yaml", "- a\n- b\n"),
    (".ai/repo/profiles/scalar.yaml", "just a scalar\n"),
    (".ai/repo/prompts/weird.md", "---\nname: weird\ndescription: a prompt with {{A}}\n---\n"
     "Use {{A}} then {{B_2}} and {{A}} and {{ spaced }} and {{not valid}}.\n"),
    (".ai/repo/prompts/extra.md", "---\nname: extra\ndescription: d\nextra: 1\n---\nText.\n"),
])

class Excluded(AssertionError):
    """An exclusion that did not find what §20-§22 are said to change."""


# The encoders an answer may have been written with: compact (frames, tool text blocks,
# json_compact), indented by 2 (json_pretty: --format json, the report as a resource) and
# the json module's defaults; each with and without ASCII escapes.
ENCODERS = [
    ("compact", lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=False)),
    ("compact-ascii", lambda v: json.dumps(v, separators=(",", ":"), ensure_ascii=True)),
    ("indent-2", lambda v: json.dumps(v, indent=2, ensure_ascii=False)),
    ("indent-2-ascii", lambda v: json.dumps(v, indent=2, ensure_ascii=True)),
    ("default", lambda v: json.dumps(v)),
]


def rewrite_json(text, change, value=None):
    """text is JSON (and maybe one final newline) as some encoder writes it: return it
    written again by that encoder after change(value) (which may change value in place or
    return a new one). value: text parsed, when the caller has it (it is changed)."""
    body, tail = (text[:-1], "\n") if text.endswith("\n") else (text, "")
    if value is None:
        value = json.loads(body)
    for name, encode in ENCODERS:
        if encode(value) == body:
            changed = change(value)
            return encode(value if changed is None else changed) + tail
    raise Excluded("the new build's answer is JSON no known encoder writes: %r" % body[:200])


def at(value, *path):
    for key in path:
        try:
            value = value[key]
        except (KeyError, IndexError, TypeError):
            raise Excluded("no %s in the new build's answer" % "/".join(map(str, path)))
    return value


def drop(mapping, key):
    if not isinstance(mapping, dict) or key not in mapping:
        raise Excluded("no key %r to exclude in the new build's answer" % key)
    del mapping[key]


def summary_as_before(summary):
    """§20.2, §26, §21, §27: the registry's summary without the new capabilities and
    exposures (a kind none has any more, `command`, leaves by_kind)."""
    for path, delta in SUMMARY_DELTA:
        holder = at(summary, *path[:-1]) if path[:-1] else summary
        if not isinstance(holder.get(path[-1]), int) or holder[path[-1]] < delta:
            raise Excluded("summary %s is not at least %d: %r" % (path, delta, summary))
        holder[path[-1]] -= delta
        if path[0] == "by_kind" and not holder[path[-1]]:
            del holder[path[-1]]


def report_as_before(report):
    """§20.3: repository.info gains `context` (deleted); §20.2/§21: the summary's counts."""
    drop(report, "context")
    summary_as_before(at(report, "capabilities"))


def report_schema_as_before(schema):
    """§20.3: the RepositoryReport schema gains the property `context`, required. §25: a
    layer that cannot be read is reported with `state` broken and no layer schema (null)."""
    drop(at(schema, "properties"), "context")
    required = at(schema, "required")
    if "context" not in required:
        raise Excluded("`context` is not required in the report's schema")
    required.remove("context")
    states = at(schema, "properties", "state", "enum")
    if "broken" not in states:
        raise Excluded("the report's state cannot be broken")
    states.remove("broken")
    layer = at(schema, "properties", "repository", "properties")
    if layer.get("layer_schema") != {"anyOf": [{"type": "string"}, {"type": "null"}]}:
        raise Excluded("the report's layer_schema is not a string or null")
    layer["layer_schema"] = {"type": "string"}


def search_input_as_before(schema, old):
    """§21: SearchInput gains `mode` (ranked by default); its `query` is now words to rank
    by or the exact text (substring), so its description says so (the old one kept)."""
    drop(at(schema, "properties"), "mode")
    at(schema, "properties", "query")["description"] = at(old, "properties", "query",
                                                          "description")


def search_output_as_before(schema):
    """§21: a ranked SearchResult adds `mode` after `query` and each hit a `score`."""
    drop(at(schema, "properties"), "mode")
    drop(at(schema, "properties", "hits", "items", "properties"), "score")


def tool_as_before(tool, old):
    """One tools/list entry (or inspect's) as 0436a0f listed it."""
    name = tool.get("name")
    if name == "majordomus_search":
        # §21: the tool ranks by default; its description says how to ask (the old kept).
        tool["description"] = old["description"]
        search_input_as_before(at(tool, "inputSchema"), old["inputSchema"])
        search_output_as_before(at(tool, "outputSchema"))
    elif name == "majordomus_repository":
        report_schema_as_before(at(tool, "outputSchema"))                  # §20.3
    elif name == "majordomus_get":
        report_schema_as_before(at(tool, "outputSchema", "properties", "answer"))  # §20.3


def tools_as_before(tools, old_tools):
    """§20.2, §27: the new tools (removed); the others as tool_as_before."""
    for new in NEW_TOOLS:
        names = [t.get("name") for t in tools]
        if names.count(new) != 1:
            raise Excluded("the new build lists %s %d times" % (new, names.count(new)))
        del tools[names.index(new)]
    old_by_name = {t.get("name"): t for t in old_tools}
    for tool in tools:
        if tool.get("name") in old_by_name:
            tool_as_before(tool, old_by_name[tool["name"]])


def capability_as_before(descriptor, old):
    """One capability descriptor as 0436a0f described it."""
    cid = descriptor.get("id")
    if cid == "objects.search":
        descriptor["description"] = old["description"]                        # §21, as above
        search_input_as_before(at(descriptor, "input", "schema"), old["input"]["schema"])
        search_output_as_before(at(descriptor, "output", "schema"))
        drop(at(descriptor, "exposure"), "cli")   # §21: the CLI exposure `search`
    elif cid == "repository.info":
        report_schema_as_before(at(descriptor, "output", "schema"))          # §20.3
    elif cid == "objects.get":
        report_schema_as_before(at(descriptor, "output", "schema", "properties", "answer"))


def capabilities_page_as_before(page, old, following=None, total_new=None):
    """A majordomus_capabilities page: the new descriptors of §20.2 and §27 it holds removed
    (count less them, total less the `total_new` of them the whole filtered list holds:
    by default as many as this page holds), the summary as before, every other descriptor
    as before. A full page that held k of them ends k descriptors earlier than the old one
    did: `following` (the new build's next descriptors, asked with the page's cursor and
    limit k) completes it, and its cursor is the one the old page gave."""
    summary_as_before(at(page, "summary"))
    items = at(page, "capabilities")
    ids = [c.get("id") for c in items]
    held = [i for i in ids if i in NEW_CAPABILITIES]
    if not held:
        raise Excluded("none of %s is on the new build's page" % ", ".join(NEW_CAPABILITIES))
    items[:] = [c for c in items if c.get("id") not in NEW_CAPABILITIES]
    if following is not None:     # a copy each time: the text block is changed after
        items.extend(json.loads(json.dumps(following["capabilities"])))   # the structure
        if "next_cursor" in following:
            page["next_cursor"] = following["next_cursor"]
        else:
            page.pop("next_cursor", None)
    page["count"] = len(items)
    page["total"] = at(page, "total") - (len(held) if total_new is None else total_new)
    old_by_id = {c.get("id"): c for c in at(old, "capabilities")}
    for descriptor in items:
        if descriptor.get("id") in old_by_id:
            capability_as_before(descriptor, old_by_id[descriptor["id"]])


def structured(change):
    """A tools/call frame's change: change(structuredContent, old structuredContent) applied
    to structuredContent and to the text block that carries it as JSON."""
    def frame_change(frame, old_frame):
        result = at(frame, "result")
        old_sc = at(old_frame, "result", "structuredContent")
        change(at(result, "structuredContent"), old_sc)
        block = at(result, "content", 0)
        block["text"] = rewrite_json(block["text"], lambda v: change(v, old_sc))
    return frame_change


def instructions_as_before(text):
    """§20.2, §26, §27: initialize's instructions count the capabilities, the tools and the
    resources (eight, five and one more), send a model to the brief in one sentence
    (removed), and (§27) say the URI scheme more briefly."""
    found = re.findall(r"\b(\d+) capabilities \((\d+) tools, (\d+) resources\)", text)
    if len(found) != 1 or text.count(NEW_SCHEME) != 1:
        raise Excluded("the instructions do not count capabilities and tools once, or do "
                       "not name the scheme once: %r" % text)
    if text.count(BRIEF_SENTENCE) != 1:
        raise Excluded("the instructions do not name the brief once: %r" % text)
    text = text.replace(BRIEF_SENTENCE, "", 1)
    capabilities, tools, resources = (int(n) for n in found[0])
    new = len(NEW_CAPABILITIES)
    return text.replace("%d capabilities (%d tools, %d resources)" % (
        capabilities, tools, resources), "%d capabilities (%d tools, %d resources)" % (
        capabilities - new, tools - len(NEW_TOOLS), resources - len(NEW_RESOURCES)),
        1).replace(
        NEW_SCHEME, OLD_SCHEME, 1)


def inspect_text_as_before(text):
    """§20.2, §26, §27: `mcp --inspect` lists the new tools and resource, and counts the new
    builtin capabilities; §26: it says when the context tree does not validate."""
    # §26: when the context tree does not validate, a line after `state` says so
    text = re.sub(r"(?m)^context: \d+ problem\(s\); resolve refuses, brief answers "
                  r"degraded\n", "", text, count=1)
    # §32: `note` lines after the tools (a section path naming nothing, files not staged)
    text = re.sub(r"(?m)^note        .*\n", "", text)
    for line in ["tool        %s\n" % t for t in NEW_TOOLS] + [
            "resource    %s\n" % u for u in NEW_RESOURCES]:
        if text.count(line) != 1:
            raise Excluded("inspect does not list %r once" % line)
        text = text.replace(line, "", 1)
    found = re.findall(r"^capabilities (\d+) \((\d+) builtin, ", text, re.M)
    if len(found) != 1:
        raise Excluded("inspect does not count the capabilities once")
    total, builtin = (int(n) for n in found[0])
    new = len(NEW_CAPABILITIES)
    return text.replace("capabilities %d (%d builtin, " % (total, builtin),
                        "capabilities %d (%d builtin, " % (total - new, builtin - new), 1)


def resources_as_before(resources):
    """§27: resources/list (and inspect's resources) list majordomus://peers (removed)."""
    for uri in NEW_RESOURCES:
        uris = [r.get("uri") for r in resources]
        if uris.count(uri) != 1:
            raise Excluded("the new build lists %s %d times" % (uri, uris.count(uri)))
        del resources[uris.index(uri)]


def inspect_json_as_before(value, old):
    report_as_before(at(value, "repository"))                               # §20.3, §20.2
    resources_as_before(at(value, "resources"))                             # §27
    tools_as_before(at(value, "tools"), at(old, "tools"))                    # §20.2, §20.3, §21


def repository_get_as_before(answer, old):
    """majordomus_get of majordomus://repository: the report as `answer` and as `content`
    (its JSON text), each as report_as_before (§20.3, §20.2)."""
    report_as_before(at(answer, "answer"))
    answer["content"] = rewrite_json(at(answer, "content"), report_as_before)


def perf_masked(snapshot):
    """majordomus_perf: the phases' times are the machine's, not the program's answer."""
    for phase in at(snapshot, "phases").values():
        phase["total_nanos"] = 0


def first_difference(a, b):
    n = 0
    for n, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return n
    return min(len(a), len(b))


def excerpt(text, offset):
    start = max(0, offset - EXCERPT)
    return "%s%s%s" % ("…" if start else "", text[start:offset + EXCERPT],
                       "…" if offset + EXCERPT < len(text) else "")


class Pair(object):
    """One MCP session per program in one repository."""

    def __init__(self, case, repo):
        self.case = case
        self.old = support.McpSession(repo, via="baseline")
        case.addCleanup(self.old.kill)
        # --standalone (§27): today's behaviour, no lease and no port; test_shared proves
        # that an owner and a bridge answer as a standalone server does.
        self.new = support.McpSession(repo, args=["--standalone"])
        case.addCleanup(self.new.kill)
        self.next_id = 1

    def frames(self, requests):
        """The request lines of (method, params), numbered from next_id."""
        out = []
        for n, (method, params) in enumerate(requests):
            message = {"jsonrpc": "2.0", "id": self.next_id + n, "method": method}
            if params is not None:
                message["params"] = params
            out.append(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")
        return b"".join(out)

    def exchange(self, old_requests, new_requests=None, only=None):
        """Send old_requests to the old build and new_requests (the same by default) to
        this one, with the same ids, both at once; return [(old line, new line)] as text.
        only="new": send new_requests to this build alone and return its lines."""
        if new_requests is None:
            new_requests = old_requests
        sends = [] if only == "new" else [(self.old, old_requests)]
        sends += [(self.new, new_requests)]
        if len(sends) == 2 and len(old_requests) != len(new_requests):
            raise AssertionError("one request each")
        writers = [threading.Thread(target=s.send_raw, args=(self.frames(r),))
                   for s, r in sends]
        for w in writers:
            w.start()
        answers = [[s.recv_line().decode("utf-8") for _ in r] for s, r in sends]
        for w in writers:
            w.join()
        self.next_id += len(sends[-1][1])
        return answers[0] if only else list(zip(*answers))

    def close(self):
        self.case.assertEqual(self.old.close(), 0, self.old.stderr())
        self.case.assertEqual(self.new.close(), 0, self.new.stderr())


class IdentityTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        known = subprocess.run(["git", "-C", support.ROOT, "rev-parse", "--verify", "--quiet",
                                BASELINE + "^{commit}"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        if known.returncode != 0:
            raise AssertionError(
                "commit %s is not in this checkout's history (a shallow clone?): the identity "
                "test builds it to compare every answer; clone with the full history "
                "(git fetch --unshallow)" % BASELINE)
        work = tempfile.mkdtemp(prefix="mj-identity-")
        cls.addClassCleanup(shutil.rmtree, work, True)
        old = os.path.join(work, "baseline")
        os.makedirs(old)
        archive = subprocess.Popen(["git", "-C", support.ROOT, "archive", BASELINE],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        untar = subprocess.run(["tar", "-x", "-C", old], stdin=archive.stdout,
                               stderr=subprocess.PIPE)
        archive.stdout.close()
        err = archive.stderr.read()
        archive.stderr.close()
        if archive.wait() != 0 or untar.returncode != 0:
            raise AssertionError("git archive %s | tar -x failed: %s %s" % (
                BASELINE, err.decode("utf-8", "replace"),
                untar.stderr.decode("utf-8", "replace")))
        built = subprocess.run([support.PYTHON, "build_zipapp.py"], cwd=old,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if built.returncode != 0:
            raise AssertionError("building %s failed: %s" % (
                BASELINE, built.stderr.decode("utf-8", "replace")))
        support.ENTRIES["baseline"] = os.path.join(old, "majordomus.pyz")
        cls.addClassCleanup(support.ENTRIES.pop, "baseline", None)

    # ------------------------------------------------------------------ the layers

    def test_fixture_layer(self):
        self.compare_layer(support.make_repo(self, name="layer"))

    def test_real_latest(self):
        repo = support.real_latest_repo(self, stand_ins=REAL_STAND_INS)
        self.compare_layer(repo)

    def test_generated_rules(self):
        repo = support.make_repo(self, commit=False, name="rules")
        folder = os.path.join(repo, ".ai", "repo", "rules", "project")
        os.makedirs(folder, exist_ok=True)
        for n in range(GENERATED_RULES):
            with open(os.path.join(folder, "gen-%05d.v1.md" % n), "w", encoding="utf-8",
                      newline="\n") as handle:
                handle.write(support.generated_rule(n, NON_ASCII if n % 7 == 0 else ""))
        support.commit_all(repo)
        self.compare_layer(repo)

    def test_edge_cases(self):
        self.compare_layer(support.make_repo(self, files=EDGE_FILES, name="edges"))

    # ------------------------------------------------------------------ the comparison

    def compare_layer(self, repo):
        self.differences = []
        self.compared = 0
        self.compare_inspect(repo)
        pair = Pair(self, repo)
        self.compare_session(pair)
        pair.close()
        self.report()

    def check(self, label, old, new, change=None, text=False, old_value=None,
              new_value=None):
        """old and new answers (text); change(new value, old value) undoes what §20-§22
        change in a JSON answer, change(new text) in a text one (text=True). old_value
        and new_value, when given, are the answers parsed."""
        self.compared += 1
        if change is not None:
            try:
                if text:
                    new = change(new)
                else:
                    if old_value is None:
                        old_value = json.loads(old)
                    new = rewrite_json(new, lambda value: change(value, old_value), new_value)
            except Excluded as error:
                self.differences.append((label, old, new, "exclusion: %s" % error))
                return
            except ValueError as error:     # the old answer is no JSON
                self.differences.append((label, old, new, "not JSON: %s" % error))
                return
        if old != new:
            self.differences.append((label, old, new, None))

    def report(self):
        if not self.differences:
            return
        label, old, new, why = self.differences[0]
        offset = first_difference(old, new)
        lines = ["%d of %d answers differ from %s's; the first: %s"
                 % (len(self.differences), self.compared, BASELINE, label)]
        if why:
            lines.append(why)
        lines += ["at character %d (old %d, new %d characters long)" % (offset, len(old),
                                                                          len(new)),
                  "old: " + excerpt(old, offset), "new: " + excerpt(new, offset)]
        others = [d[0] for d in self.differences[1:]]
        if others:
            lines.append("and: " + "; ".join(others[:12]) + (" …" if len(others) > 12 else ""))
        self.fail("\n".join(lines))

    def compare_inspect(self, repo):
        """`mcp --inspect`, text and --format json, both builds at once."""
        runs = []
        for args in (["mcp", "--inspect"], ["mcp", "--inspect", "--format", "json"],
                     ["mcp", "--inspect", "--format", "json", "--discovery", "filesystem"]):
            for via in ("baseline", "pyz"):
                runs.append(subprocess.Popen(support.command(via) + args, cwd=repo,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                             env=support.base_env()))
        outs = [p.communicate(timeout=120) + (p.returncode,) for p in runs]
        for n, (label, change) in enumerate((("mcp --inspect", inspect_text_as_before),
                                             ("mcp --inspect --format json",
                                              inspect_json_as_before),
                                             ("mcp --inspect --format json --discovery "
                                              "filesystem", inspect_json_as_before))):
            (old, _, old_rc), (new, _, new_rc) = outs[2 * n], outs[2 * n + 1]
            self.check(label + " (exit code)", str(old_rc), str(new_rc))
            self.check(label, old.decode("utf-8"), new.decode("utf-8"), change,
                       text=change is inspect_text_as_before)

    def compare_session(self, pair):
        # Start-up, and majordomus_perf first (its counters then count the same requests).
        lists = [("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "identity", "version": "1"}}),
                 ("tools/call", {"name": "majordomus_perf", "arguments": {}}),
                 ("ping", None), ("tools/list", None), ("resources/list", None),
                 ("resources/templates/list", None), ("prompts/list", None),
                 ("tools/call", {"name": "majordomus_repository", "arguments": {}})]
        answers = pair.exchange(lists)
        changes = [
            # §20.2, §27: the instructions count the new capabilities and tools
            lambda frame, old: at(frame, "result").update(
                instructions=instructions_as_before(at(frame, "result", "instructions"))),
            structured(lambda sc, old: perf_masked(sc)),
            None,
            lambda frame, old: tools_as_before(at(frame, "result", "tools"),
                                               at(old, "result", "tools")),
            lambda frame, old: resources_as_before(at(frame, "result", "resources")),   # §27
            None, None,
            structured(lambda sc, old: report_as_before(sc)),
        ]
        # the old build's perf answer masked like the new one's (written again by the
        # encoder that reproduces it)
        answers[1] = (rewrite_json(answers[1][0], lambda frame: structured(
            lambda sc, old: perf_masked(sc))(frame, json.loads(answers[1][0]))), answers[1][1])
        for (method, params), (old, new), change in zip(lists, answers, changes):
            label = method if method != "tools/call" else "tools/call " + params["name"]
            self.check(label, old, new, change)
        old_answers = [json.loads(old) for old, _ in answers]
        resources = [r["uri"] for r in old_answers[4]["result"]["resources"]]
        prompts = old_answers[6]["result"]["prompts"]
        tool_names = [t["name"] for t in old_answers[3]["result"]["tools"]]

        # Every resource read, as a resource and through majordomus_get; every prompt.
        requests, labels, changes = [], [], []
        for uri in resources:
            report = uri == "majordomus://repository"
            requests.append(("resources/read", {"uri": uri}))
            labels.append("resources/read " + uri)
            changes.append(self.report_resource_change() if report else None)
            requests.append(("tools/call", {"name": "majordomus_get", "arguments": {"uri": uri}}))
            labels.append("majordomus_get " + uri)
            changes.append(structured(repository_get_as_before) if report else None)
        for prompt in prompts:
            arguments = {a["name"]: "value of %s \u00e9" % a["name"]
                         for a in prompt.get("arguments", [])}
            requests.append(("prompts/get", {"name": prompt["name"], "arguments": arguments}))
            labels.append("prompts/get " + prompt["name"])
            changes.append(None)
            requests.append(("tools/call", {"name": "majordomus_prompt", "arguments": {
                "name": prompt["name"], "arguments": arguments}}))
            labels.append("majordomus_prompt " + prompt["name"])
            changes.append(None)
        # Search: the old default call is the new `mode: "substring"` (§21: ranked is now
        # the default; substring must answer exactly as §7.6 did).
        for query in SEARCH_QUERIES:
            for extra in ({}, {"kind": "rule"}, {"limit": 3}):
                arguments = dict(extra, query=query)
                requests.append(("tools/call", {"name": "majordomus_search",
                                                "arguments": arguments}))
                labels.append("majordomus_search %s" % json.dumps(arguments, ensure_ascii=False))
                changes.append("substring")
        # A window, filters, and the refusals (errors are answers too).
        first = next((u for u in resources if u != "majordomus://repository"), None)
        calls = [("majordomus_get", {"uri": first, "offset": 1, "limit": 2}),
                 ("majordomus_get", {}), ("majordomus_get", {"uri": "majordomus://rule/no@1"}),
                 ("majordomus_get", {"uri": first, "offset": -1}),
                 ("majordomus_list", {"kind": "rule", "limit": 2}),
                 ("majordomus_list", {"limit": 0}),
                 ("majordomus_list", {"bogus": 1}), ("majordomus_list", {"cursor": "nonsense"}),
                 ("majordomus_capability", {"id": "no.such"}), ("majordomus_capability", {}),
                 ("majordomus_capabilities", {"kind": "nothing"}),
                 ("majordomus_prompt", {"name": "no-such"}), ("majordomus_repository", {"x": 1}),
                 ("no_such_tool", {})]
        for name, arguments in calls:
            requests.append(("tools/call", {"name": name, "arguments": arguments}))
            labels.append("%s %s" % (name, json.dumps(arguments)))
            changes.append(None)
        for arguments in ({"query": 5}, {"query": "e", "limit": 500}, {"query": "e", "x": 1},
                          {"query": "e", "cursor": "nonsense"}):
            requests.append(("tools/call", {"name": "majordomus_search", "arguments": arguments}))
            labels.append("majordomus_search %s" % json.dumps(arguments))
            changes.append("substring")
        for method, params in (("resources/read", {"uri": "majordomus://rule/no@1"}),
                               ("resources/read", {}), ("prompts/get", {"name": "no-such"}),
                               ("tools/call", {"arguments": {}}), ("no/such", None)):
            requests.append((method, params))
            labels.append("%s %s" % (method, json.dumps(params)))
            changes.append(None)
        self.exchange_checked(pair, requests, labels, changes)

        self.compare_walk(pair, "majordomus_list", {})
        self.compare_walk(pair, "majordomus_list", {"limit": PAGE})
        self.compare_walk(pair, "majordomus_search", {"query": "e", "limit": PAGE}, "substring")
        self.compare_capabilities(pair)
        self.assertEqual(set(tool_names) - {"majordomus_search", "majordomus_perf",
                                             "majordomus_repository", "majordomus_capabilities",
                                             "majordomus_capability", "majordomus_list",
                                             "majordomus_get", "majordomus_prompt"}, set(),
                         "a tool of %s this test does not call" % BASELINE)

    def report_resource_change(self):
        def change(frame, old):
            block = at(frame, "result", "contents", 0)
            block["text"] = rewrite_json(block["text"], report_as_before)   # §20.3, §20.2
        return change

    def exchange_checked(self, pair, requests, labels, changes):
        """Send requests to both and check each answer; a change "substring" sends this
        build the same tool call with mode substring (§21)."""
        new_requests = []
        for (method, params), change in zip(requests, changes):
            if change == "substring":
                params = dict(params, arguments=dict(params["arguments"], mode="substring"))
            new_requests.append((method, params))
        answers = pair.exchange(requests, new_requests)
        for label, (old, new), change in zip(labels, answers, changes):
            self.check(label, old, new, None if change == "substring" else change)
        return answers

    def compare_walk(self, pair, name, arguments, mode=None, change=None, limit=100):
        """Every page of a paged tool, each build following its own cursor."""
        cursors = None
        for page in range(limit):
            old_args, new_args = dict(arguments), dict(arguments)
            if cursors:
                old_args["cursor"], new_args["cursor"] = cursors
            if mode:
                new_args["mode"] = mode
            label = "%s %s page %d" % (name, json.dumps(arguments), page + 1)
            (old, new), = pair.exchange([("tools/call", {"name": name, "arguments": old_args})],
                                        [("tools/call", {"name": name, "arguments": new_args})])
            old_value, new_value = json.loads(old), json.loads(new)
            self.check(label, old, new, change, old_value=old_value, new_value=new_value)
            cursors = [v["result"].get("structuredContent", {}).get("next_cursor")
                       for v in (old_value, new_value)]
            if not all(cursors):
                self.check(label + " (the last page)", str(any(cursors)), "False")
                return
        self.fail("%s did not end within %d pages" % (name, limit))

    def compare_capabilities(self, pair):
        call = ("tools/call", {"name": "majordomus_capabilities", "arguments": {}})
        (old, new), = pair.exchange([call])
        # The default page, with new capabilities on it (§20.2, §26, §27): see
        # capabilities_page_as_before; the descriptors after the new page come from this build.
        following = None
        page = json.loads(new)["result"].get("structuredContent", {})
        cursor = page.get("next_cursor")
        held = len([c for c in page.get("capabilities", ()) if c.get("id") in NEW_CAPABILITIES])
        if cursor and held:
            # the next `held` descriptors that are not new, one at a time (new ones may
            # follow too), and the cursor after the last of them
            following = {"capabilities": []}
            while cursor and len(following["capabilities"]) < held:
                step = json.loads(pair.exchange(None, [(
                    "tools/call", {"name": "majordomus_capabilities",
                                   "arguments": {"cursor": cursor, "limit": 1}})],
                    only="new")[0])["result"]["structuredContent"]
                cursor = step.get("next_cursor")
                following["capabilities"] += [c for c in step["capabilities"]
                                               if c.get("id") not in NEW_CAPABILITIES]
            if cursor:
                following["next_cursor"] = cursor
        self.check("majordomus_capabilities {}", old, new, structured(
            lambda sc, o: capabilities_page_as_before(sc, o, following, len(NEW_CAPABILITIES))))
        # Every page of the declarative capabilities (no builtin among them: the pages and
        # cursors as before, the summary aside, §20.2), and the builtins' one page.
        self.compare_walk(pair, "majordomus_capabilities", {"kind": "resource", "limit": PAGE},
                          change=structured(lambda sc, o: summary_as_before(at(sc, "summary"))))
        self.compare_walk(pair, "majordomus_capabilities", {"kind": "query"},
                          change=structured(capabilities_page_as_before))
        # majordomus_capability for every capability of the old registry (its pages by kind).
        ids = []
        for kind in ("query", "resource"):
            arguments = {"kind": kind, "limit": PAGE}
            while True:
                (old, _), = pair.exchange([("tools/call", {"name": "majordomus_capabilities",
                                                          "arguments": arguments})])
                page = json.loads(old)["result"]["structuredContent"]
                ids += [c["id"] for c in page["capabilities"]]
                if not page.get("next_cursor"):
                    break
                arguments = {"kind": kind, "limit": PAGE, "cursor": page["next_cursor"]}
        ids.sort()
        self.exchange_checked(pair, [("tools/call", {"name": "majordomus_capability",
                                                     "arguments": {"id": i}}) for i in ids],
                              ["majordomus_capability " + i for i in ids],
                              [structured(capability_as_before)] * len(ids))


if __name__ == "__main__":
    unittest.main()
