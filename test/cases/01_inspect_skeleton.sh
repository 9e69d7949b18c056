#!/usr/bin/env bash
# §6, §14: the test layer (the skeleton's shape), committed, is served with state ok and
# lists the four objects §14 names, and nothing under .ai/local/.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"

expect_exit 0 mj mcp --inspect
expect_grep "^repository  $(printf '%s' "$ROOT" | sed 's/[].[^$*+?(){}|\\]/\\&/g')\$"
expect_grep '^discovery   vcs$'
expect_grep '^state       ok$'
expect_grep '^resource    majordomus://repository$'
expect_grep '^resource    majordomus://policy/\.ai/repo/policy\.yaml$'
expect_grep '^resource    majordomus://profile/implementation$'
expect_grep '^resource    majordomus://prompt/continue$'
expect_grep '^resource    majordomus://rule/majordomus\.scope-integrity@1$'
expect_grep '^resource    majordomus://document/README\.md$'
# a rule-class file with no front matter is read as a document (§4.1 without_front_matter)
expect_grep '^resource    majordomus://document/\.ai/repo/rules/README\.md$'
expect_grep '^kind        rule         1$'
expect_grep '^kind        document     5$'
expect_grep '^capabilities 27 \(18 builtin, 9 declarative\)$'
expect_grep '^tool        majordomus_get$'
expect_grep '^tool        majordomus_prompt$'
expect_no_grep '\.ai/local'
expect_no_grep '^(FAIL|WARN) '
expect_stdout_grep '^state       ok$'

# the text resource lines are in resources/list order: the queries' (the peers, the
# repository), then the objects in URI order
py_check "resource lines: majordomus://peers and majordomus://repository first, then the objects in URI order" '
res = [l[12:] for l in out.splitlines() if l.startswith("resource    ")]
assert res[:2] == ["majordomus://peers", "majordomus://repository"], res
assert res[2:] == sorted(res[2:]), res
assert len(res) == 11, res
tools = [l[12:] for l in out.splitlines() if l.startswith("tool        ")]
assert tools == ["majordomus_capability", "majordomus_capabilities", "majordomus_affected",
                 "majordomus_brief",
                 "majordomus_context",
                 "majordomus_get",
                 "majordomus_list", "majordomus_search", "majordomus_announce",
                 "majordomus_peers", "majordomus_perf",
                 "majordomus_prompt", "majordomus_repository"], tools
'

expect_exit 0 mj mcp --inspect --format json
expect_no_grep '\.ai/local'
py_check "--inspect --format json is one JSON document {repository, resources, tools}" '
doc = json.loads(stdout.decode("utf-8"))
assert list(doc) == ["repository", "resources", "tools"], list(doc)
rep = doc["repository"]
assert rep["state"] == "ok", rep["state"]
assert rep["objects"] == 9, rep["objects"]
assert rep["diagnostics"] == [], rep["diagnostics"]
assert rep["kinds"] == {"document": 5, "policy": 1, "profile": 1, "prompt": 1, "rule": 1}, rep["kinds"]
assert rep["repository"]["root"] == ROOT, rep["repository"]["root"]
assert rep["repository"]["discovery"] == "vcs"
assert rep["repository"]["layer_schema"] == "ai-repository/v1"
assert rep["repository"]["kinds_file"] is None, rep["repository"]["kinds_file"]
assert list(rep)[-1] == "live", list(rep)
assert rep["live"] == {"generation": 1, "stale": None}, rep["live"]
assert rep["capabilities"]["total"] == 27, rep["capabilities"]
uris = [r["uri"] for r in doc["resources"]]
for u in ("majordomus://repository", "majordomus://policy/.ai/repo/policy.yaml",
          "majordomus://profile/implementation", "majordomus://prompt/continue",
          "majordomus://rule/majordomus.scope-integrity@1"):
    assert u in uris, (u, uris)
assert uris[:2] == ["majordomus://peers", "majordomus://repository"], uris
assert not any(".ai/local" in u for u in uris), uris
assert len(doc["tools"]) == 13, [t.get("name") for t in doc["tools"]]
'
note "state ok, 9 objects, 27 capabilities, nothing under .ai/local"
