#!/usr/bin/env bash
# §5.1, §6: a rule whose front matter never closes is excluded with malformed_front_matter;
# the index is degraded (inspect exits 10) and the rest still serves; --strict refuses.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"

BROKEN=.ai/repo/rules/project/broken.v1.md
write_file "$BROKEN" '---\nid: project.broken\nversion: 1\n'
commit_all "add a broken rule"

expect_exit 10 mj mcp --inspect
expect_grep '^state       degraded$'
expect_grep '^FAIL malformed_front_matter +\.ai/repo/rules/project/broken\.v1\.md — front matter opened on line 1 and never closed$'
expect_grep '^resource    majordomus://rule/majordomus\.scope-integrity@1$'
expect_grep '^resource    majordomus://prompt/continue$'
expect_no_grep '^resource .*broken'
expect_no_grep '^resource .*project\.broken'

expect_exit 10 mj mcp --inspect --format json
py_check "the JSON report carries the diagnostic and state degraded" '
doc = json.loads(stdout.decode("utf-8"))
rep = doc["repository"]
assert rep["state"] == "degraded", rep["state"]
assert rep["diagnostics"] == [{"severity": "error", "code": "malformed_front_matter",
    "path": ".ai/repo/rules/project/broken.v1.md",
    "message": "front matter opened on line 1 and never closed"}], rep["diagnostics"]
uris = [r["uri"] for r in doc["resources"]]
assert "majordomus://rule/majordomus.scope-integrity@1" in uris, uris
assert not any("broken" in u for u in uris), uris
'

# §6: --strict refuses before anything else, nothing on stdout
expect_exit 10 mj mcp --strict --inspect
expect_stdout_empty
expect_grep '^(majordomus: )?declarative state carries 1 error\(s\); refusing to serve under --strict \(run: majordomus mcp --inspect\)$'
expect_exit 10 mj mcp --strict </dev/null
expect_stdout_empty
expect_grep 'declarative state carries 1 error\(s\); refusing to serve under --strict'

# mending the rule restores state ok
write_file "$BROKEN" '---\nid: project.broken\nversion: 1\n---\n'
commit_all "mend"
expect_exit 0 mj mcp --inspect
expect_grep '^state       ok$'
expect_grep '^resource    majordomus://rule/project\.broken@1$'
note "an unclosed front matter degrades the index, the rest still serves, --strict refuses"
