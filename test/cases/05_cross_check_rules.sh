#!/usr/bin/env bash
# §13: the rule ids the shell tool lists ($MJ rules list) are exactly the
# majordomus://rule/… resources. Without $MJ, the expectation is the fixture's declared
# rules: the `rules:` entries (id + version) of the vendored package manifest.
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../lib.sh"

expect_exit 0 mj mcp --inspect
expect_grep '^state       ok$'
sed -n 's#^resource    majordomus://rule/\(.*\)$#\1#p' "$OUT_STDOUT" | LC_ALL=C sort -u >"$MJ_TMP/served"

if [ -n "${MJ:-}" ]; then
    if [ -x "$MJ" ]; then
        MJ_CMD=("$MJ")
    else
        read -r -a MJ_CMD <<<"$MJ"
    fi
    note "MJ set: comparing against '${MJ_CMD[*]} rules list'"
    expect_exit 0 "${MJ_CMD[@]}" rules list
    # the first id@version token of each line, whatever the layout around it (later tokens
    # on a line may be dependencies, e.g. depends_on: majordomus.one-worker-one-scope@1)
    awk 'match($0, /[A-Za-z0-9_][A-Za-z0-9_.-]*@[0-9]+/) { print substr($0, RSTART, RLENGTH) }' \
        "$OUT_STDOUT" | LC_ALL=C sort -u >"$MJ_TMP/expected"
    if [ ! -s "$MJ_TMP/expected" ]; then
        # fall back to "<dotted.id> <version>" columns (optionally "v1")
        sed -nE 's/^[[:space:]]*([A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+)[[:space:]]+v?([0-9]+)([[:space:]].*)?$/\1@\3/p' \
            "$OUT_STDOUT" | LC_ALL=C sort -u >"$MJ_TMP/expected"
    fi
    [ -s "$MJ_TMP/expected" ] || fail "no rule id (id@version or 'id version') found in the output of '${MJ_CMD[*]} rules list'"
else
    note "MJ unset: compared against the fixture's declared rules"
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
note "rules agree: $(tr '\n' ' ' <"$MJ_TMP/served")"
