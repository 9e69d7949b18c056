#!/usr/bin/env bash
# §5.3: two files claiming one URI are both excluded, each with duplicate_identity on its
# own path; the URI is no longer served.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"

VENDORED=.ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md
COPY=.ai/repo/rules/project/scope-integrity.v1.md
cp "$VENDORED" "$COPY" || fail "cannot copy the vendored rule"
chmod u+w "$COPY"
commit_all "duplicate the vendored rule"

MSG='majordomus://rule/majordomus\.scope-integrity@1 is claimed by \.ai/repo/rules/project/scope-integrity\.v1\.md and \.ai/repo/rules/vendor/majordomus/rules/scope-integrity\.v1\.md; every claimant is excluded'
expect_exit 10 mj mcp --inspect
expect_grep '^state       degraded$'
expect_grep "^FAIL duplicate_identity +\\.ai/repo/rules/project/scope-integrity\\.v1\\.md — $MSG\$"
expect_grep "^FAIL duplicate_identity +\\.ai/repo/rules/vendor/majordomus/rules/scope-integrity\\.v1\\.md — $MSG\$"
expect_grep '^FAIL duplicate_identity {5}\.ai/'
expect_no_grep '^resource    majordomus://rule/'
expect_no_grep '^kind        rule '
expect_grep '^resource    majordomus://prompt/continue$'

expect_exit 10 mj mcp --inspect --format json
py_check "both claimants carry duplicate_identity, in discovery order" '
rep = json.loads(stdout.decode("utf-8"))["repository"]
d = [(x["severity"], x["code"], x.get("path")) for x in rep["diagnostics"]]
assert d == [("error", "duplicate_identity", ".ai/repo/rules/project/scope-integrity.v1.md"),
             ("error", "duplicate_identity", ".ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md")], d
assert "rule" not in rep["kinds"], rep["kinds"]
'

# the URI is not readable either (CLI get: NotFound → exit 12)
expect_exit 12 mj get 'majordomus://rule/majordomus.scope-integrity@1'
expect_stdout_empty
expect_grep 'unknown resource: majordomus://rule/majordomus\.scope-integrity@1'

git rm -q "$COPY" || fail "git rm failed"
commit_all "remove the copy"
expect_exit 0 mj mcp --inspect
expect_grep '^state       ok$'
expect_grep '^resource    majordomus://rule/majordomus\.scope-integrity@1$'
note "both claimants of one URI excluded with duplicate_identity"
