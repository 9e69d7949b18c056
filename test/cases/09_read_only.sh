#!/usr/bin/env bash
# §12: serving writes nothing. Before and after inspect, an MCP session exercising every
# method and tool, serve, capabilities and get: git status, the index entries, every tracked
# file's bytes, the bytes and mtime of .git/index and the list of all files under the root
# are identical. A tracked file is touched first (stat-dirty, same content) so that a
# `git status` run without GIT_OPTIONAL_LOCKS=0 would rewrite .git/index.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"

RULE_URI='majordomus://rule/majordomus.scope-integrity@1'

# a dirty work tree with an untracked file and a stat-dirty tracked file
write_file .ai/repo/rules/project/alpha.v1.md '---\nid: project.alpha\nversion: 1\ntitle: Alpha\ndescription: d\n---\nAlpha.\n'
commit_all "add alpha"
echo "scratch" >untracked.txt
touch -d '2001-02-03 04:05:06' README.md || fail "touch -d failed"

snapshot() {
    # .git/index first: the git commands after it must not refresh it either
    GIT_OPTIONAL_LOCKS=0 "$PYTHON" - <<'PYEOF' || fail "snapshot failed"
import hashlib, os, subprocess
env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")
st = os.stat(".git/index")
with open(".git/index", "rb") as f:
    print("index sha256", hashlib.sha256(f.read()).hexdigest())
print("index mtime_ns", st.st_mtime_ns, "size", st.st_size)
def git(*a):
    return subprocess.run(("git",) + a, env=env, stdout=subprocess.PIPE, check=True).stdout.decode("utf-8", "replace")
print("== git status --porcelain")
print(git("status", "--porcelain"))
print("== git ls-files -s")
print(git("ls-files", "-s"))
print("== tracked file bytes")
for rel in sorted(p for p in git("ls-files", "-z").split("\0") if p):
    if os.path.isfile(rel) and not os.path.islink(rel):
        with open(rel, "rb") as f:
            print(hashlib.sha256(f.read()).hexdigest(), os.stat(rel).st_mtime_ns, rel)
print("== every file under the root")
for dirpath, dirnames, filenames in os.walk("."):
    dirnames.sort()
    for name in sorted(dirnames + filenames):
        print(os.path.join(dirpath, name))
PYEOF
}

snapshot >"$MJ_TMP/before" || exit 1
grep -q '^?? untracked.txt$' "$MJ_TMP/before" || fail "the dirty work tree was not set up"
snapshot >"$MJ_TMP/before2" || exit 1
cmp -s "$MJ_TMP/before" "$MJ_TMP/before2" || fail "the snapshot itself is not stable: $(diff "$MJ_TMP/before" "$MJ_TMP/before2")"

# ---- exercise everything
expect_exit 0 mj --version
expect_exit 0 mj mcp --inspect
expect_grep '^state       ok$'
expect_exit 0 mj mcp --inspect --format json
expect_exit 0 mj mcp --inspect --discovery filesystem

expect_exit 0 bash -c 'printf "%s\n" "$@" | "$PYTHON" "$MAJORDOMUS" mcp' mcp \
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bash","version":"1"}}}' \
    '{"jsonrpc":"2.0","method":"notifications/initialized"}' \
    '{"jsonrpc":"2.0","id":2,"method":"ping"}' \
    '{"jsonrpc":"2.0","id":3,"method":"resources/list"}' \
    '{"jsonrpc":"2.0","id":4,"method":"resources/templates/list"}' \
    '{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"'"$RULE_URI"'"}}' \
    '{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"majordomus://repository"}}' \
    '{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"majordomus://document/../../etc/passwd"}}' \
    '{"jsonrpc":"2.0","id":8,"method":"tools/list"}' \
    '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"majordomus_repository","arguments":{}}}' \
    '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"majordomus_list","arguments":{"kind":"rule"}}}' \
    '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"majordomus_get","arguments":{"uri":"'"$RULE_URI"'"}}}' \
    '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"majordomus_search","arguments":{"query":"scope"}}}' \
    '{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"majordomus_capabilities","arguments":{}}}' \
    '{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"majordomus_capability","arguments":{"id":"objects.get"}}}' \
    '{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"majordomus_perf","arguments":{}}}' \
    '{"jsonrpc":"2.0","id":16,"method":"prompts/list"}' \
    'not json' \
    '{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"majordomus_search","arguments":{"query":" "}}}' \
    '{"jsonrpc":"2.0","id":18,"method":"prompts/get","params":{"name":"continue","arguments":{"CONTEXT":"x"}}}' \
    '{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"majordomus_prompt","arguments":{"name":"continue","arguments":{"CONTEXT":"x"}}}}' \
    '{"jsonrpc":"2.0","id":20,"method":"resources/subscribe","params":{"uri":"'"$RULE_URI"'"}}' \
    '{"jsonrpc":"2.0","id":21,"method":"resources/unsubscribe","params":{"uri":"'"$RULE_URI"'"}}' \
    '{"jsonrpc":"2.0","id":22,"method":"logging/setLevel","params":{"level":"debug"}}' \
    '{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"majordomus_brief","arguments":{"path":"src/new_file.py","intent":"add a module"}}}' \
    '{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"majordomus_context","arguments":{"path":".ai/repo/rules"}}}'
py_check "the MCP session answered all 24 requests and the bad line" '
msgs = [json.loads(l) for l in stdout.decode("utf-8").splitlines()]
assert len(msgs) == 25, len(msgs)
by = dict((m["id"], m) for m in msgs if m.get("id") is not None)
assert sorted(by) == list(range(1, 25)), sorted(by)
for i in (1, 2, 3, 4, 5, 6, 8, 16, 18, 20, 21):
    assert "result" in by[i], by[i]
for i in (9, 10, 11, 12, 13, 14, 15, 19, 23, 24):
    assert by[i]["result"]["isError"] is False, by[i]
assert by[7]["error"]["code"] == -32002, by[7]
assert [p["name"] for p in by[16]["result"]["prompts"]] == ["continue"], by[16]
assert by[17]["result"]["isError"] is True, by[17]
assert by[22]["error"]["code"] == -32601, by[22]
'

if command -v curl >/dev/null 2>&1; then
    start_serve
    for p in / /openapi.json /api/v1/repository /api/v1/objects "/api/v1/object?uri=majordomus%3A%2F%2Frepository" \
        "/api/v1/search?query=scope" /api/v1/capabilities "/api/v1/capability?id=objects.get" /api/v1/perf \
        "/api/v1/prompt?name=continue&arguments.CONTEXT=x"; do
        http GET "$p"
        expect_status 200
    done
    stop_serve TERM
    [ "$SERVE_RC" = 0 ] || fail "serve exited $SERVE_RC on SIGTERM"
else
    fail "curl is not installed; this case needs it"
fi

expect_exit 0 mj capabilities list
expect_exit 0 mj capabilities list --format json
expect_exit 0 mj capabilities describe objects.get
expect_exit 0 mj get "$RULE_URI"
expect_exit 0 mj get "$RULE_URI" --format text
expect_exit 0 mj get majordomus://repository
expect_exit 12 mj get majordomus://rule/nope@1
expect_exit 0 mj prompt continue --arg CONTEXT=x
expect_exit 0 mj prompt continue --arg CONTEXT=x --format json

# ---- compare
snapshot >"$MJ_TMP/after" || exit 1
if ! cmp -s "$MJ_TMP/before" "$MJ_TMP/after"; then
    diff "$MJ_TMP/before" "$MJ_TMP/after" >&2
    fail "the repository changed while majordomus served it (diff above: < before, > after)"
fi
note "read-only: $(grep -c . "$MJ_TMP/before") snapshot lines identical"
