#!/usr/bin/env bash
# §9: the test layer served over real pipes (printf | majordomus mcp): initialize,
# resources/list, resources/read (byte for byte), tools/call majordomus_get; then, after a
# rule is added and the vendored one broken (committed), a new session sees the change and
# the repository report is degraded with the diagnostic.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"

RULE_URI='majordomus://rule/majordomus.scope-integrity@1'
VENDORED=.ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md

mcp_pipe() {
    printf '%s\n' "$@" | mj mcp
}

expect_exit 0 mcp_pipe \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bash","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"resources/list"}' \
    '{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"'"$RULE_URI"'"}}' \
    '{"jsonrpc":"2.0","id":"four","method":"tools/call","params":{"name":"majordomus_get","arguments":{"uri":"'"$RULE_URI"'"}}}' \
    '{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"majordomus://rule/nope@1"}}' \
    '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"majordomus_repository","arguments":{}}}'
expect_stderr_grep 'input ended; stopping'
py_check "session 1 (test layer) answers as §9 says" '
lines = stdout.split(b"\n")
assert lines[-1] == b"", "stdout does not end with a newline"
msgs = [json.loads(l.decode("utf-8")) for l in lines[:-1]]
assert len(msgs) == 6, "expected 6 answers (the notification gets none), got %d" % len(msgs)
ids = [m.get("id") for m in msgs]
assert ids == [1, 2, 3, "four", 5, 6], ids
by = dict((m["id"], m) for m in msgs)
for m in msgs:
    assert m.get("jsonrpc") == "2.0", m
init = by[1]["result"]
assert init["protocolVersion"] == "2025-06-18", init
assert init["serverInfo"]["name"] == "majordomus", init
assert init["capabilities"] == {"resources": {"subscribe": True, "listChanged": True},
                                "tools": {"listChanged": False},
                                "prompts": {"listChanged": True}}, init["capabilities"]
assert "index state ok" in init["instructions"], init["instructions"]
uris = [r["uri"] for r in by[2]["result"]["resources"]]
for u in ("majordomus://repository", "majordomus://policy/.ai/repo/policy.yaml",
          "majordomus://profile/implementation", "majordomus://prompt/continue", "'"$RULE_URI"'"):
    assert u in uris, (u, uris)
assert uris[:2] == ["majordomus://peers", "majordomus://repository"] and uris[2:] == sorted(uris[2:]), uris
rule = [r for r in by[2]["result"]["resources"] if r["uri"] == "'"$RULE_URI"'"][0]
assert rule["name"] == "majordomus.scope-integrity@1", rule
assert rule["title"] == "Stay inside the claimed paths", rule
assert rule["mimeType"] == "text/markdown", rule
assert rule["_meta"]["majordomus"]["kind"] == "rule", rule
want = read_bytes("'"$VENDORED"'")
c = by[3]["result"]["contents"]
assert len(c) == 1 and c[0]["uri"] == "'"$RULE_URI"'" and c[0]["mimeType"] == "text/markdown", c
assert c[0]["text"].encode("utf-8") == want, "resources/read text differs from the file"
r = by["four"]["result"]
assert r["isError"] is False, r
sc = r["structuredContent"]
assert sc["source"] == "declarative" and sc["uri"] == "'"$RULE_URI"'", sc
assert sc["id"] == "rule.majordomus.scope-integrity@1" and sc["kind"] == "rule", sc
assert sc["identity"] == "majordomus.scope-integrity@1", sc
assert sc["content"].encode("utf-8") == want, "majordomus_get content differs from the file"
assert sc["provenance"]["path"] == "'"$VENDORED"'", sc["provenance"]
assert sc["provenance"]["bytes"] == len(want), sc["provenance"]
assert r["content"][0]["type"] == "text" and json.loads(r["content"][0]["text"]) == sc, r["content"]
e = by[5]["error"]
assert e["code"] == -32002 and e["message"] == "resource not found: majordomus://rule/nope@1", e
rep = by[6]["result"]["structuredContent"]
assert rep["state"] == "ok" and rep["diagnostics"] == [], rep
'

# add a rule, break the vendored one, commit
write_file .ai/repo/rules/project/alpha.v1.md '---\nid: project.alpha\nversion: 1\ntitle: Alpha\ndescription: A rule added during the case.\n---\n\nAlpha.\n'
chmod u+w "$VENDORED"
write_file "$VENDORED" '---\nid: majordomus.scope-integrity\nversion: 1\ntitle: Stay inside the claimed paths\n'
commit_all "add alpha, break the vendored rule"

expect_exit 0 mcp_pipe \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bash","version":"1"}}}' \
    '{"jsonrpc":"2.0","id":2,"method":"resources/list"}' \
    '{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"majordomus://rule/project.alpha@1"}}' \
    '{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"'"$RULE_URI"'"}}' \
    '{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"majordomus://repository"}}' \
    '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"majordomus_get","arguments":{"uri":"'"$RULE_URI"'"}}}'
expect_stderr_grep 'index built'
expect_stderr_grep 'state=degraded'
py_check "session 2 (alpha added, vendored rule broken) sees the change" '
msgs = [json.loads(l) for l in stdout.decode("utf-8").splitlines()]
assert [m.get("id") for m in msgs] == [1, 2, 3, 4, 5, 6], msgs
by = dict((m["id"], m) for m in msgs)
assert "index state degraded" in by[1]["result"]["instructions"], by[1]["result"]["instructions"]
uris = [r["uri"] for r in by[2]["result"]["resources"]]
assert "majordomus://rule/project.alpha@1" in uris, uris
assert "'"$RULE_URI"'" not in uris, uris
assert by[3]["result"]["contents"][0]["text"].encode("utf-8") == read_bytes(".ai/repo/rules/project/alpha.v1.md")
assert by[4]["error"]["code"] == -32002, by[4]
text = by[5]["result"]["contents"][0]["text"]
rep = json.loads(text)
assert rep["state"] == "degraded", rep["state"]
diag = {"severity": "error", "code": "malformed_front_matter", "path": "'"$VENDORED"'",
        "message": "front matter opened on line 1 and never closed"}
assert diag in rep["diagnostics"], rep["diagnostics"]
r = by[6]["result"]
assert r["isError"] is True and "structuredContent" not in r, r
assert r["content"][0]["text"] == "not found: unknown resource: '"$RULE_URI"'", r["content"]
'
note "two MCP sessions over pipes answered as §9 says, the second one degraded"
