#!/usr/bin/env bash
# §4.3, §6: a rule file is served once it is in the git index (staged or committed), not
# while it is only in the work tree, and disappears when it is removed from the index.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"

RULE=.ai/repo/rules/project/alpha.v1.md
ALPHA='^resource    majordomus://rule/project\.alpha@1$'
VENDORED='^resource    majordomus://rule/majordomus\.scope-integrity@1$'

write_file "$RULE" '---\nid: project.alpha\nversion: 1\ntitle: Alpha\ndescription: The first project rule of this case.\n---\n\n# Alpha\n\nAlpha applies.\n'

# untracked: vcs discovery does not see it
expect_exit 0 mj mcp --inspect
expect_grep '^state       ok$'
expect_no_grep 'project\.alpha'
expect_no_grep 'alpha\.v1\.md'

# staged: the git index holds it
git add "$RULE" || fail "git add failed"
expect_exit 0 mj mcp --inspect
expect_grep "$ALPHA"

commit_all "add alpha"
expect_exit 0 mj mcp --inspect
expect_grep '^state       ok$'
expect_grep "$ALPHA"
expect_grep "$VENDORED"
expect_grep '^kind        rule         2$'
expect_grep '^capabilities 28 \(18 builtin, 10 declarative\)$'
expect_no_grep '^resource    majordomus://document/\.ai/repo/rules/project/alpha'

git rm -q "$RULE" || fail "git rm failed"
commit_all "remove alpha"
expect_exit 0 mj mcp --inspect
expect_grep '^state       ok$'
expect_no_grep 'project\.alpha'
expect_grep "$VENDORED"
expect_grep '^kind        rule         1$'
expect_grep '^capabilities 27 \(18 builtin, 9 declarative\)$'
note "a rule is served once in the git index and gone once removed from it"
