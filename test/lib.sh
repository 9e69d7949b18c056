# test/lib.sh — the harness of the black-box cases in test/cases/NN_name.sh.
#
# A case is run as `bash test/cases/NN_name.sh` with:
#   cwd          a fresh scratch git repository holding the test layer (tests/fixtures/layer:
#                the skeleton's shape, written for these tests), committed
#   MAJORDOMUS   absolute path of the built majordomus.pyz
#   PYTHON       the interpreter to run it with (default: python3)
#   SKELETON     that layer's path (informational)
#   MJ           the shell tool, when set (cross-check cases use it)
# Exit 0 = pass. A case stops at its first failed expectation with a line
# `FAIL <case>:<line>: <what>` followed by the output that made it fail.
#
# Provided:
#   mj ARGS…                 run "$PYTHON" "$MAJORDOMUS" ARGS… (bounded by MJ_TIMEOUT seconds)
#   expect_exit CODE CMD…    run CMD, capture stdout to $OUT_STDOUT, stderr to $OUT_STDERR,
#                            both (stdout then stderr) to $OUT and into $OUTPUT; fail unless
#                            the exit status is CODE
#   expect_grep PATTERN      extended regex against the last captured output ($OUT)
#   expect_no_grep PATTERN   the opposite
#   expect_stdout_grep / expect_stderr_grep / expect_stdout_empty
#   py_check MESSAGE CODE    run Python CODE (variables: stdout, stderr bytes; out text);
#                            fail with MESSAGE when it raises or exits non-zero
#   commit_all [MSG]         git add -A + commit in the cwd
#   write_file PATH TEXT     printf '%b' TEXT into PATH (creating directories)
#   start_serve ARGS… / stop_serve   a background `majordomus serve --port 0`
#   fail MESSAGE             stop the case
#   note MESSAGE             print an informational line
#
# All scratch files of the harness live in $MJ_TMP, outside the repository (the read-only
# proof lists every file under the root, so the harness itself must add none there).

set -u

CASE_NAME=$(basename "${0:-case}" .sh)
MJ_TIMEOUT=${MJ_TIMEOUT:-120}
PYTHON=${PYTHON:-python3}

# The git identity normally comes from the runner; default it so a hand run works too.
export GIT_AUTHOR_NAME="${GIT_AUTHOR_NAME:-t}" GIT_AUTHOR_EMAIL="${GIT_AUTHOR_EMAIL:-t@t.invalid}"
export GIT_COMMITTER_NAME="${GIT_COMMITTER_NAME:-t}" GIT_COMMITTER_EMAIL="${GIT_COMMITTER_EMAIL:-t@t.invalid}"

_lib_line() {
    # the line of the case file that made the failing call: the top-level line, plus the
    # innermost line of the case file when the call came from a function the case defines
    local i n=${#BASH_SOURCE[@]} inner="" outer
    for ((i = 1; i < n; i++)); do
        if [ "${BASH_SOURCE[$i]}" != "${BASH_SOURCE[0]}" ]; then
            inner=${BASH_LINENO[$((i - 1))]}
            break
        fi
    done
    outer=${BASH_LINENO[$((n - 2))]}
    if [ -z "$inner" ] || [ "$inner" = "$outer" ]; then
        echo "$outer"
    else
        echo "$outer (line $inner, in a function of the case)"
    fi
}

_show_output() {
    # the head of stdout and the tail of stderr (runners keep only the end of a case's output)
    if [ -n "${OUT:-}" ] && [ -f "$OUT" ]; then
        echo "---- last command: ${LAST_CMD:-?} (exit ${LAST_RC:-?})"
        echo "---- stdout ($(wc -c <"$OUT_STDOUT") bytes):"
        head -c 2500 "$OUT_STDOUT"
        echo
        echo "---- stderr ($(wc -c <"$OUT_STDERR") bytes):"
        tail -c 2500 "$OUT_STDERR"
        echo
        echo "----"
    fi
}

fail() {
    local where
    where="$CASE_NAME:$(_lib_line)"
    echo "FAIL $where: $*" >&2
    _show_output >&2
    echo "FAIL $where: $*" >&2
    exit 1
}

note() {
    echo "$CASE_NAME: $*"
}

MJ_TMP=$(mktemp -d "${TMPDIR:-/tmp}/mj-case.XXXXXX") || {
    echo "FAIL $CASE_NAME: cannot make a temporary directory" >&2
    exit 1
}
OUT="$MJ_TMP/out"
OUT_STDOUT="$MJ_TMP/stdout"
OUT_STDERR="$MJ_TMP/stderr"
OUTPUT=""
LAST_CMD=""
LAST_RC=""
: >"$OUT"
: >"$OUT_STDOUT"
: >"$OUT_STDERR"
SERVE_PID=""

_lib_cleanup() {
    if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
        kill -KILL "$SERVE_PID" 2>/dev/null
        wait "$SERVE_PID" 2>/dev/null
    fi
    rm -rf "$MJ_TMP"
}
trap _lib_cleanup EXIT

[ -n "${MAJORDOMUS:-}" ] || fail "MAJORDOMUS is not set (the path of the built majordomus.pyz)"
[ -f "$MAJORDOMUS" ] || fail "MAJORDOMUS=$MAJORDOMUS is not a file"
command -v "$PYTHON" >/dev/null 2>&1 || fail "PYTHON=$PYTHON is not runnable"

# Never mutate the checkout these cases live in: the cwd must be a scratch repository.
_lib_checkout=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
[ "$(pwd -P)" != "$_lib_checkout" ] || fail "refusing to run inside the checkout $_lib_checkout; run in a scratch repository"
[ -f .ai/manifest.yaml ] || fail "the cwd $(pwd -P) holds no .ai/manifest.yaml (expected the skeleton fixture)"
[ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ] || fail "the cwd $(pwd -P) is not the top of a git work tree"
ROOT=$(pwd -P)

if command -v timeout >/dev/null 2>&1; then
    mj() { timeout -k 5 "$MJ_TIMEOUT" "$PYTHON" "$MAJORDOMUS" "$@"; }
else
    mj() { "$PYTHON" "$MAJORDOMUS" "$@"; }
fi

expect_exit() {
    [ $# -ge 2 ] || fail "expect_exit needs CODE and a command"
    local want=$1
    shift
    LAST_CMD="$*"
    "$@" >"$OUT_STDOUT" 2>"$OUT_STDERR"
    LAST_RC=$?
    cat "$OUT_STDOUT" "$OUT_STDERR" >"$OUT"
    OUTPUT=$(cat "$OUT")
    if [ "$LAST_RC" = 124 ] && [ "$want" != 124 ]; then
        fail "expected exit $want from '$LAST_CMD', it timed out after ${MJ_TIMEOUT}s (exit 124)"
    fi
    [ "$LAST_RC" = "$want" ] || fail "expected exit $want from '$LAST_CMD', got $LAST_RC"
}

expect_grep() {
    grep -Eq -- "$1" "$OUT" || fail "expected output matching /$1/"
}

expect_no_grep() {
    if grep -Eq -- "$1" "$OUT"; then
        echo "---- offending line(s):" >&2
        grep -En -- "$1" "$OUT" | head -20 >&2
        fail "expected no output matching /$1/"
    fi
}

expect_stdout_grep() {
    grep -Eq -- "$1" "$OUT_STDOUT" || fail "expected stdout matching /$1/"
}

expect_stderr_grep() {
    grep -Eq -- "$1" "$OUT_STDERR" || fail "expected stderr matching /$1/"
}

expect_stdout_empty() {
    [ ! -s "$OUT_STDOUT" ] || fail "expected an empty stdout"
}

# py_check MESSAGE CODE: run CODE with `stdout`/`stderr` (bytes of the last capture) and
# `out` (stdout decoded), plus json/os/sys imported and ROOT set; fail with MESSAGE (and the
# Python error) when it raises.
py_check() {
    local msg=$1 code=$2 err
    err=$(OUT_STDOUT="$OUT_STDOUT" OUT_STDERR="$OUT_STDERR" ROOT="$ROOT" "$PYTHON" - "$code" 2>&1 <<'PYEOF'
import json, os, sys
ROOT = os.environ["ROOT"]
with open(os.environ["OUT_STDOUT"], "rb") as f:
    stdout = f.read()
with open(os.environ["OUT_STDERR"], "rb") as f:
    stderr = f.read()
out = stdout.decode("utf-8", "replace")
def read_bytes(rel):
    with open(os.path.join(ROOT, rel), "rb") as f:
        return f.read()
code = sys.argv[1]
try:
    exec(compile(code, "<check>", "exec"))
except AssertionError as e:
    print("assertion failed: %s" % (e,))
    sys.exit(1)
except Exception as e:
    print("%s: %s" % (type(e).__name__, e))
    sys.exit(1)
PYEOF
)
    local rc=$?
    [ "$rc" = 0 ] || fail "$msg${err:+ ($err)}"
}

commit_all() {
    git add -A >/dev/null || fail "git add -A failed"
    git commit -q --allow-empty --no-gpg-sign -m "${1:-commit}" >/dev/null || fail "git commit failed"
}

write_file() {
    mkdir -p "$(dirname "$1")" || fail "cannot create the directory of $1"
    printf '%b' "$2" >"$1" || fail "cannot write $1"
}

# start_serve ARGS…: run `majordomus serve --port 0 ARGS…` in the background with its
# stderr in $SERVE_LOG; wait for `listening on http://HOST:PORT`; set SERVE_PID, SERVE_HOST,
# SERVE_PORT, SERVE_URL.
SERVE_LOG="$MJ_TMP/serve.log"
start_serve() {
    : >"$SERVE_LOG"
    ( exec "$PYTHON" "$MAJORDOMUS" serve --port 0 "$@" </dev/null >"$MJ_TMP/serve.stdout" 2>"$SERVE_LOG" ) &
    SERVE_PID=$!
    local i addr=""
    for ((i = 0; i < 300; i++)); do
        addr=$(sed -n 's#.*listening on http://\([^ ]*\).*#\1#p' "$SERVE_LOG" | head -1)
        [ -n "$addr" ] && break
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$addr" ]; then
        echo "---- serve stderr:" >&2
        cat "$SERVE_LOG" >&2
        fail "serve did not log 'listening on http://HOST:PORT' within 30 s"
    fi
    SERVE_HOST=${addr%:*}
    SERVE_PORT=${addr##*:}
    SERVE_URL="http://$addr"
    case "$SERVE_PORT" in
        '' | *[!0-9]*) fail "cannot parse a port from 'listening on http://$addr'" ;;
    esac
}

# stop_serve [SIGNAL]: signal the server (TERM by default), wait; sets SERVE_RC.
stop_serve() {
    local sig=${1:-TERM} i
    [ -n "$SERVE_PID" ] || fail "stop_serve: no server running"
    kill -"$sig" "$SERVE_PID" 2>/dev/null
    for ((i = 0; i < 150; i++)); do
        kill -0 "$SERVE_PID" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$SERVE_PID" 2>/dev/null; then
        kill -KILL "$SERVE_PID" 2>/dev/null
        wait "$SERVE_PID" 2>/dev/null
        SERVE_PID=""
        echo "---- serve stderr:" >&2
        cat "$SERVE_LOG" >&2
        fail "serve did not stop within 15 s of SIG$sig"
    fi
    wait "$SERVE_PID"
    SERVE_RC=$?
    SERVE_PID=""
}

# http METHOD PATH [curl args…]: one request to the server; the body goes to $OUT_STDOUT
# (and $OUT), the headers to $OUT_STDERR; HTTP_STATUS holds the status code.
http() {
    command -v curl >/dev/null 2>&1 || fail "curl is needed by this case and is not installed"
    local method=$1 path=$2
    shift 2
    LAST_CMD="curl -X $method $SERVE_URL$path $*"
    HTTP_STATUS=$(curl -sS -g --max-time 30 -X "$method" -o "$OUT_STDOUT" -D "$OUT_STDERR" \
        -w '%{http_code}' "$@" "$SERVE_URL$path" 2>"$MJ_TMP/curl.err")
    LAST_RC=$?
    cat "$OUT_STDOUT" "$OUT_STDERR" >"$OUT"
    OUTPUT=$(cat "$OUT")
    [ "$LAST_RC" = 0 ] || fail "curl failed (exit $LAST_RC): $(cat "$MJ_TMP/curl.err")"
}

expect_status() {
    [ "${HTTP_STATUS:-}" = "$1" ] || fail "expected HTTP $1 from '$LAST_CMD', got ${HTTP_STATUS:-none}"
}
