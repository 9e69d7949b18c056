#!/usr/bin/env bash
# §13: the rule ids the shell tool lists ($MJ rules list) are exactly the
# majordomus://rule/… resources.
#
# MJ set (the test command points it at $MAJORDOMUS_REFERENCE/oracle/shell/bin/majordomus): the
# comparison runs in a repository the shell tool's own `init` wrote, in $MJ_TMP (our
# fixture's cut-down rule package does not resolve for the real tool): `git init`, then
# `"$MJ" init` (it needs a git work tree, no commit and no flag; it refuses when .ai/
# exists), then one commit of what it wrote. That repository must also serve `state ok`.
# MJ unset: the expectation is the fixture's declared rules, the `rules:` entries (id +
# version) of the vendored package manifest, in the scratch repository of the runner.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"

# the first id@version token of each line, or the "<dotted.id> v<N>" columns the shell
# tool prints (later tokens may be dependencies, e.g. majordomus.one-worker-one-scope@1)
rule_ids() {
    awk 'match($0, /[A-Za-z0-9_][A-Za-z0-9_.-]*@[0-9]+/) { print substr($0, RSTART, RLENGTH) }' \
        "$1" | LC_ALL=C sort -u >"$2"
    if [ ! -s "$2" ]; then
        sed -nE 's/^[[:space:]]*([A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+)[[:space:]]+v?([0-9]+)([[:space:]].*)?$/\1@\3/p' \
            "$1" | LC_ALL=C sort -u >"$2"
    fi
}

served_rules() {
    sed -n 's#^resource    majordomus://rule/\(.*\)$#\1#p' "$OUT_STDOUT" | LC_ALL=C sort -u >"$1"
}

if [ -n "${MJ:-}" ]; then
    # MJ is a path (absolute, or relative to the checkout as the test command sets it, or
    # to the cwd) or a command line such as "bash /path/to/majordomus".
    CHECKOUT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
    case "$MJ" in
        /*) MJ_PATH=$MJ ;;
        *) if [ -e "$CHECKOUT/$MJ" ]; then MJ_PATH="$CHECKOUT/$MJ"; else MJ_PATH="$ROOT/$MJ"; fi ;;
    esac
    if [ -f "$MJ_PATH" ]; then
        MJ_CMD=(bash "$MJ_PATH")
    else
        read -r -a MJ_CMD <<<"$MJ"
    fi
    MJ_SHOW="${MJ_CMD[*]}"
    # its scratch files (`rules list` leaves two mktemp files behind) go where lib.sh cleans
    MJ_CMD=(env "TMPDIR=$MJ_TMP" "${MJ_CMD[@]}")
    MODE="MJ set: $MJ, a repository its init wrote"
    REPO="$MJ_TMP/shell-init"
    mkdir -p "$REPO" || fail "cannot create $REPO"
    cd "$REPO" || fail "cannot enter $REPO"
    git init -q -b main >/dev/null 2>&1 || git init -q >/dev/null || fail "git init failed in $REPO"
    expect_exit 0 "${MJ_CMD[@]}" init
    expect_grep '^created'
    [ -f .ai/manifest.yaml ] || fail "'$MJ_SHOW init' wrote no .ai/manifest.yaml"
    commit_all "the layer $MJ_SHOW init wrote"
    note "MJ set: comparing '$MJ_SHOW rules list' with majordomus://rule/… in a repository its init wrote ($(git ls-files | wc -l | tr -d ' ') files committed)"

    expect_exit 0 "${MJ_CMD[@]}" rules list
    rule_ids "$OUT_STDOUT" "$MJ_TMP/expected"
    [ -s "$MJ_TMP/expected" ] || fail "no rule id (id@version or 'id vN') found in the output of '$MJ_SHOW rules list'"

    mj mcp --inspect >"$MJ_TMP/inspect.out" 2>"$MJ_TMP/inspect.err"
    rc=$?
    if [ "$rc" != 0 ] || ! grep -q '^state       ok$' "$MJ_TMP/inspect.out"; then
        echo "---- mcp --inspect in the init-written repository (exit $rc):" >&2
        grep -v '^resource \|^tool \|^capabilit' "$MJ_TMP/inspect.out" >&2
        cat "$MJ_TMP/inspect.err" >&2
    fi
    expect_exit 0 mj mcp --inspect
    expect_grep '^state       ok$'
    served_rules "$MJ_TMP/served"
    cd "$ROOT" || fail "cannot return to $ROOT"
else
    MODE="MJ unset: the fixture's declared rules"
    note "MJ unset: compared against the fixture's declared rules"
    expect_exit 0 mj mcp --inspect
    expect_grep '^state       ok$'
    served_rules "$MJ_TMP/served"
    MANIFEST=.ai/repo/rules/vendor/majordomus/manifest.yaml
    [ -f "$MANIFEST" ] || fail "the fixture has no $MANIFEST"
    # the `rules:` list: each item opens with `- id: X`; its `version: N` follows
    awk '
        /^[^ #-]/ { inrules = ($0 ~ /^rules:[[:space:]]*$/); next }
        !inrules { next }
        /^[[:space:]]*- id:/ { if (id != "" && ver != "") print id "@" ver; id = $0; sub(/^[[:space:]]*- id:[[:space:]]*/, "", id); sub(/[[:space:]]+#.*$/, "", id); ver = ""; next }
        /^[[:space:]]+version:/ { ver = $0; sub(/^[[:space:]]*version:[[:space:]]*/, "", ver); sub(/[[:space:]]+#.*$/, "", ver); next }
        END { if (id != "" && ver != "") print id "@" ver }
    ' "$MANIFEST" | tr -d "\"'\r" | LC_ALL=C sort -u >"$MJ_TMP/expected"
    [ -s "$MJ_TMP/expected" ] || fail "no rule declared in $MANIFEST could be parsed"
fi

if ! cmp -s "$MJ_TMP/expected" "$MJ_TMP/served"; then
    echo "---- expected rule ids:" >&2
    cat "$MJ_TMP/expected" >&2
    echo "---- served majordomus://rule/ resources:" >&2
    cat "$MJ_TMP/served" >&2
    echo "---- diff (expected → served):" >&2
    diff "$MJ_TMP/expected" "$MJ_TMP/served" >&2
    fail "the served rule resources differ from the expected rule ids"
fi
note "rules agree ($MODE, $(wc -l <"$MJ_TMP/expected" | tr -d ' ') ids): $(tr '\n' ' ' <"$MJ_TMP/served")"
