#!/usr/bin/env bash
# §11: the CLI projections: capabilities list / describe, get.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"

RULE_URI='majordomus://rule/majordomus.scope-integrity@1'
VENDORED=.ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md
SUMMARY='^capabilities: 27 \(18 builtin, 9 declarative\); mcp tools 13, mcp resources 11, http routes 18, cli commands 13$'

# ---- capabilities list
expect_exit 0 mj capabilities list --format json
cp "$OUT_STDOUT" "$MJ_TMP/list.json"
py_check "capabilities list --format json is the CapabilityList" '
doc = json.loads(stdout.decode("utf-8"))
# §16: the CLI pages through: one CapabilityList of everything, no next_cursor
assert list(doc) == ["count", "total", "summary", "capabilities"], list(doc)
assert doc["count"] == 27 == doc["total"] == len(doc["capabilities"]), doc["count"]
ids = [c["id"] for c in doc["capabilities"]]
assert ids == sorted(ids), ids
s = doc["summary"]
assert (s["total"], s["builtin"], s["declarative"]) == (27, 18, 9), s
assert (s["mcp_tools"], s["mcp_resources"], s["http_routes"], s["cli_commands"]) == (13, 11, 18, 13), s
assert "rule.majordomus.scope-integrity@1" in ids, ids
'

expect_exit 0 mj capabilities list
expect_stdout_grep "$SUMMARY"
[ "$(tail -n 1 "$OUT_STDOUT")" = 'capabilities: 27 (18 builtin, 9 declarative); mcp tools 13, mcp resources 11, http routes 18, cli commands 13' ] \
    || fail "the last line of 'capabilities list' is not the summary line"
expect_stdout_grep '^objects\.get {38}query {5}[a-z_]+ +mcp=tool:majordomus_get http=GET /api/v1/object cli=get$'
expect_stdout_grep '^repository\.info {34}query {5}[a-z_]+ +mcp=tool:majordomus_repository,resource:majordomus://repository http=GET /api/v1/repository cli=-$'
expect_stdout_grep '^capabilities\.describe {28}query {5}[a-z_]+ +mcp=tool:majordomus_capability http=GET /api/v1/capability cli=capabilities describe$'
expect_stdout_grep '^rule\.majordomus\.scope-integrity@1 {16}resource  implemented {12}mcp=resource:majordomus://rule/majordomus\.scope-integrity@1 http=- cli=-$'
expect_stdout_grep '^prompts\.get {38}query {5}[a-z_]+ +mcp=tool:majordomus_prompt http=GET /api/v1/prompt cli=prompt$'
expect_stdout_grep '^prompt\.continue {34}resource  implemented {12}mcp=resource:majordomus://prompt/continue,prompt:continue http=- cli=-$'
# every line agrees with the JSON, column by column
LIST_JSON="$MJ_TMP/list.json" py_check "each text line is {id:<48} {kind:<9} {stability:<22} mcp=… http=… cli=… of the JSON" '
caps = json.load(open(os.environ["LIST_JSON"]))["capabilities"]
lines = out.splitlines()
assert len(lines) == len(caps) + 1, (len(lines), len(caps))
for line, c in zip(lines, caps):
    ex = c["exposure"]
    m = []
    if "tool" in ex.get("mcp", {}):
        m.append("tool:" + ex["mcp"]["tool"])
    if "resource" in ex.get("mcp", {}):
        m.append("resource:" + ex["mcp"]["resource"]["uri"])
    if "prompt" in ex.get("mcp", {}):
        m.append("prompt:" + ex["mcp"]["prompt"]["name"])
    h = ex["http"]["method"] + " " + ex["http"]["path"] if "http" in ex else "-"
    cl = " ".join(ex["cli"]["path"]) if "cli" in ex else "-"
    want = "%-48s %-9s %-22s mcp=%s http=%s cli=%s" % (c["id"], c["kind"], c["stability"], ",".join(m) or "-", h, cl)
    assert line == want, (line, want)
'

expect_exit 0 mj capabilities list --kind resource
py_check "--kind resource lists the 9 resources; the summary stays the whole registry" '
lines = out.splitlines()
assert len(lines) == 10, lines
assert all(l[49:58].rstrip() == "resource" for l in lines[:-1]), lines
'
expect_stdout_grep "$SUMMARY"
expect_exit 0 mj capabilities list --kind resource --format json
py_check "--kind resource --format json: count 9, summary total 27" '
doc = json.loads(stdout.decode("utf-8"))
assert doc["count"] == 9 == doc["total"] and all(c["kind"] == "resource" for c in doc["capabilities"]), doc["count"]
assert doc["summary"]["total"] == 27, doc["summary"]
'
expect_exit 0 mj capabilities list --exposure cli --format json
py_check "--exposure cli: the thirteen CLI commands" '
doc = json.loads(stdout.decode("utf-8"))
assert [c["id"] for c in doc["capabilities"]] == ["capabilities.describe", "capabilities.list", "context.affected", "context.brief", "context.list", "context.resolve", "context.sync", "context.validate", "hook.deliver", "objects.get", "objects.search", "peers.list", "prompts.get"], doc
'

expect_exit 2 mj capabilities list --kind x
expect_stdout_empty
expect_stderr_grep "kind 'x' is not query, command or resource"
expect_exit 2 mj capabilities list --exposure x
expect_stdout_empty
expect_stderr_grep "exposure 'x' is not mcp, http or cli"

# ---- capabilities describe
expect_exit 0 mj capabilities describe objects.get --format json
py_check "describe objects.get --format json: .output.name is ResourceView" '
d = json.loads(stdout.decode("utf-8"))
assert d["output"]["name"] == "ResourceView", d["output"]
assert d["input"]["name"] == "GetInput", d["input"]
assert d["id"] == "objects.get" and d["kind"] == "query" and d["module"] == "objects", d
assert list(d)[:4] == ["id", "module", "kind", "title"], list(d)
assert d["exposure"]["cli"] == {"path": ["get"]}, d["exposure"]
assert "majordomus://repository" in d["description"], d["description"]
'

expect_exit 0 mj capabilities describe objects.get
expect_stdout_grep '^id {11}objects\.get$'
expect_stdout_grep '^kind {9}query$'
expect_stdout_grep '^stability {4}[a-z_]+$'
expect_stdout_grep '^title {8}Get one object$'
expect_stdout_grep '^description {2}.+'
expect_stdout_grep '^provenance {3}builtin majordomus$'
expect_stdout_grep '^mcp {10}\{"tool":"majordomus_get"\}$'
expect_stdout_grep '^http {9}GET /api/v1/object$'
expect_stdout_grep '^cli {10}majordomus get$'
expect_stdout_grep '^input {8}GetInput$'
expect_stdout_grep '^output {7}ResourceView$'

expect_exit 0 mj capabilities describe 'rule.majordomus.scope-integrity@1'
expect_stdout_grep '^kind {9}resource$'
expect_stdout_grep '^title {8}Stay inside the claimed paths$'
expect_stdout_grep '^provenance {3}\.ai/repo/rules/vendor/majordomus/rules/scope-integrity\.v1\.md \(class rule, section rules\)$'
expect_stdout_grep '^mcp {10}\{"resource":\{"uri":"majordomus://rule/majordomus\.scope-integrity@1","name":"majordomus\.scope-integrity@1"\}\}$'
expect_stdout_grep '^http {9}none$'
expect_stdout_grep '^cli {10}none$'
expect_stdout_grep '^input {8}\(anonymous\)$'
expect_stdout_grep '^output {7}ObjectView$'

expect_exit 12 mj capabilities describe no.such-capability
expect_stdout_empty
expect_stderr_grep '^majordomus: unknown capability: no\.such-capability \(run: majordomus capabilities list\)$'

# ---- get
expect_exit 0 mj get "$RULE_URI" --format text
cmp -s "$OUT_STDOUT" "$VENDORED" || fail "get --format text is not byte-identical to $VENDORED"

expect_exit 0 mj get "$RULE_URI"
py_check "get (JSON) is the ObjectView of the rule" '
d = json.loads(stdout.decode("utf-8"))
assert list(d) == ["source", "uri", "id", "kind", "identity", "title", "description",
                   "metadata", "provenance", "media_type", "content"], list(d)
assert d["source"] == "declarative" and d["uri"] == "'"$RULE_URI"'", d
assert d["id"] == "rule.majordomus.scope-integrity@1" and d["kind"] == "rule", d
assert d["identity"] == "majordomus.scope-integrity@1" and d["title"] == "Stay inside the claimed paths", d
want = read_bytes("'"$VENDORED"'")
assert d["content"].encode("utf-8") == want
assert d["metadata"]["id"] == "majordomus.scope-integrity" and d["metadata"]["version"] == 1, d["metadata"]
assert d["metadata"]["tags"] == ["scope", "review"], d["metadata"]
assert d["provenance"] == {"path": "'"$VENDORED"'", "directory": ".ai/repo/rules/vendor/majordomus/rules",
    "source_class": "rule", "section": "rules", "bytes": len(want)}, d["provenance"]
assert d["media_type"] == "text/markdown"
'

expect_exit 0 mj get majordomus://repository
py_check "get majordomus://repository is the AnswerView; content parses to answer" '
d = json.loads(stdout.decode("utf-8"))
assert d["source"] == "builtin" and d["id"] == "repository.info" and d["kind"] == "query", d
assert d["identity"] == "repository" and d["media_type"] == "application/json", d
assert d["provenance"] == {"source": "builtin", "module": "majordomus"}, d["provenance"]
assert json.loads(d["content"]) == d["answer"], "content does not parse to answer"
assert d["answer"]["state"] == "ok", d["answer"]["state"]
'

expect_exit 12 mj get 'majordomus://rule/nope@1'
expect_stdout_empty
expect_stderr_grep '^majordomus: .*unknown resource: majordomus://rule/nope@1$'
expect_exit 12 mj get 'majordomus://document/../../etc/passwd'
expect_stdout_empty
expect_exit 12 mj get 'majordomus://document//etc/passwd'
expect_stdout_empty
# ---- prompt (§17)
expect_exit 0 mj prompt continue --arg 'CONTEXT=picked up again'
py_check "prompt continue prints the body with the placeholder filled in" '
body = read_bytes(".ai/repo/prompts/continue.md").decode("utf-8").split("---\n", 2)[2]
assert out == body.replace("{{CONTEXT}}", "picked up again"), out
'
expect_exit 0 mj prompt continue --arg 'CONTEXT=x' --format json
py_check "prompt --format json is the PromptResult" '
d = json.loads(stdout.decode("utf-8"))
assert list(d) == ["name", "description", "messages", "uri", "provenance"], list(d)
assert d["uri"] == "majordomus://prompt/continue" and d["messages"][0]["role"] == "user", d
'
expect_exit 2 mj prompt continue
expect_stdout_empty
expect_stderr_grep "prompt 'continue' needs argument 'CONTEXT'"
expect_exit 12 mj prompt nope
expect_stdout_empty
expect_stderr_grep '^majordomus: unknown prompt: nope$'
note "capabilities list/describe, get and prompt projected as §11 and §17 say"
