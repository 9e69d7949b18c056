#!/usr/bin/env bash
# §10: `majordomus serve --port 0` answered with curl: the index, the OpenAPI document, the
# registry's routes, the error bodies, the DNS-rebinding guard; SIGTERM stops it with 0.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"

command -v curl >/dev/null 2>&1 || fail "curl is not installed; this case needs it"
RULE_URI='majordomus://rule/majordomus.scope-integrity@1'
RULE_Q='majordomus%3A%2F%2Frule%2Fmajordomus.scope-integrity%401'
VENDORED=.ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md

start_serve
[ "$SERVE_HOST" = 127.0.0.1 ] || fail "default host is 127.0.0.1, the log says $SERVE_HOST"
[ "$SERVE_PORT" -gt 0 ] || fail "port 0 must bind a real port, got $SERVE_PORT"

json_ok() {
    py_check "$1" "doc = json.loads(stdout.decode('utf-8'))
$2"
}

http GET /
expect_status 200
expect_stderr_grep '^[Cc]ontent-[Tt]ype: application/json'
expect_stderr_grep '^[Cc]ache-[Cc]ontrol: no-store'
expect_stderr_grep '^[Cc]ontent-[Ll]ength: [0-9]+'
expect_no_grep '^[Tt]ransfer-[Ee]ncoding: chunked'
expect_no_grep '^[Aa]ccess-[Cc]ontrol-'
json_ok "GET / names the server and the root" '
assert list(doc) == ["name", "version", "root", "openapi", "capabilities"], list(doc)
assert doc["name"] == "majordomus" and doc["root"] == ROOT, doc
assert doc["openapi"] == "/openapi.json" and doc["capabilities"] == "/api/v1/capabilities", doc
'

http GET /openapi.json
expect_status 200
json_ok "/openapi.json is OpenAPI 3.1 with one operation per HTTP route, without the checkout path" '
assert str(doc["openapi"]).startswith("3.1"), doc.get("openapi")
ops = {}
for path, item in doc["paths"].items():
    for method, op in item.items():
        ops[op["operationId"]] = (method.upper(), path)
want = {"repository.info": ("GET", "/api/v1/repository"), "objects.list": ("GET", "/api/v1/objects"),
        "objects.get": ("GET", "/api/v1/object"), "objects.search": ("GET", "/api/v1/search"),
        "capabilities.list": ("GET", "/api/v1/capabilities"),
        "capabilities.describe": ("GET", "/api/v1/capability"), "perf.counters": ("GET", "/api/v1/perf"),
        "prompts.get": ("GET", "/api/v1/prompt"), "context.resolve": ("GET", "/api/v1/context"),
        "context.brief": ("GET", "/api/v1/brief"), "peers.list": ("GET", "/api/v1/peers"),
        "peers.announce": ("POST", "/api/v1/peers/announce"),
        "peers.tell": ("POST", "/api/v1/peers/tell"),
        "hook.deliver": ("POST", "/api/v1/hook"),
        "context.list": ("GET", "/api/v1/context/list"),
        "context.validate": ("GET", "/api/v1/context/validate"),
        "context.affected": ("GET", "/api/v1/context/affected"),
        "context.sync": ("GET", "/api/v1/context/sync")}
assert ops == want, ops
assert ROOT not in stdout.decode("utf-8"), "the OpenAPI document carries the checkout path"
'

http GET /api/v1/repository
expect_status 200
json_ok "/api/v1/repository is the repository report, state ok" '
assert list(doc)[:4] == ["repository", "state", "objects", "kinds"], list(doc)
assert doc["state"] == "ok" and doc["objects"] == 9, doc
assert doc["repository"]["root"] == ROOT, doc["repository"]
assert list(doc)[-1] == "live" and doc["live"] == {"generation": 1, "stale": None}, doc.get("live")
'

http GET /api/v1/objects
expect_status 200
json_ok "/api/v1/objects lists the 9 objects in URI order" '
uris = [o["uri"] for o in doc["objects"]]
assert doc["count"] == 9 == doc["total"] == len(uris), doc
assert "next_cursor" not in doc, doc
assert uris == sorted(uris), uris
assert "'"$RULE_URI"'" in uris, uris
'

http GET "/api/v1/objects?kind=rule"
expect_status 200
json_ok "/api/v1/objects?kind=rule lists the one rule" '
assert [o["uri"] for o in doc["objects"]] == ["'"$RULE_URI"'"], doc
o = doc["objects"][0]
assert o["path"] == "'"$VENDORED"'" and o["title"] == "Stay inside the claimed paths", o
'

http GET "/api/v1/object?uri=$RULE_Q"
expect_status 200
json_ok "/api/v1/object?uri=… is the ObjectView of the rule, content byte for byte" '
assert doc["source"] == "declarative" and doc["uri"] == "'"$RULE_URI"'", doc
assert doc["kind"] == "rule" and doc["identity"] == "majordomus.scope-integrity@1", doc
assert doc["content"].encode("utf-8") == read_bytes("'"$VENDORED"'"), "content differs from the file"
assert doc["media_type"] == "text/markdown", doc["media_type"]
'

http GET "/api/v1/object?uri=majordomus%3A%2F%2Frule%2Fnope%401"
expect_status 404
json_ok "an unknown URI is 404 not_found" '
assert doc == {"error": {"code": "not_found", "message": "unknown resource: majordomus://rule/nope@1"}}, doc
'

http GET "/api/v1/object?uri=majordomus://document/../../etc/passwd"
expect_status 404
expect_grep '"not_found"'

http GET "/api/v1/objects?kind=nosuchkind"
expect_status 400
expect_grep '"invalid_input"'

http GET /nope
expect_status 404
json_ok "an unknown path is 404 naming the OpenAPI document" '
assert doc == {"error": {"code": "not_found", "message": "no route GET /nope; the routes are listed at /openapi.json"}}, doc
'

http POST /api/v1/repository -d ''
expect_status 405
json_ok "POST on a GET route is 405 method_not_allowed" '
assert doc == {"error": {"code": "method_not_allowed", "message": "POST /api/v1/repository is not a route; another method is"}}, doc
'

http GET /api/v1/repository -H 'Host: evil.example'
expect_status 403
expect_grep '"forbidden"'

http GET /api/v1/repository -H "Host: localhost:$SERVE_PORT"
expect_status 200

http GET /api/v1/repository -H 'Origin: http://evil.example'
expect_status 403
expect_grep '"forbidden"'

kill -0 "$SERVE_PID" 2>/dev/null || fail "the server died during the requests: $(cat "$SERVE_LOG")"
stop_serve TERM
[ "$SERVE_RC" = 0 ] || { cat "$SERVE_LOG" >&2; fail "serve exited $SERVE_RC on SIGTERM, expected 0"; }
[ ! -s "$MJ_TMP/serve.stdout" ] || fail "serve wrote to stdout: $(head -c 500 "$MJ_TMP/serve.stdout")"
if grep -q 'Traceback' "$SERVE_LOG"; then
    cat "$SERVE_LOG" >&2
    fail "a Python traceback reached serve's stderr"
fi
note "serve answered every route, error and guard; SIGTERM exited 0"
