#!/usr/bin/env python3
"""The property-based fuzz suite of SPEC §25 (Hypothesis; runs in the test venv).

Targets, each a property over generated input, run in process against majordomus.py:
  subset-text   arbitrary text and YAML-like lines: the subset reader (and the front-matter
                splitter) answers a mapping or a SubsetError, never anything else;
  subset-tree   structured trees written by this file's emitter read back equal (types
                and order included);
  jsonrpc       JSON-RPC frames (odd ids, methods, params, batches) through the stdio
                dispatcher of a live layer: one strict-JSON answer per request, the id
                echoed (null when JSON cannot carry it back), exactly one of result/error,
                never an internal error or a traceback;
  http-head     request heads, Host values and query strings: the head parser, the body
                length, the Host guard and the query coercion answer or refuse with an
                HTTP error, never anything else, and the guard admits only §25's forms;
  markdown      Markdown-like text: the renderer emits only its own tags and attributes,
                and links only to allowed targets;
  peers         announces and departures of sessions on a board (§27, §25.1): the overlaps
                its path index finds, and whom each announce tells with which paths, are
                what the definition (paths_overlap, pair by pair) says;
  paths         paths as clients send them (§20.2, §25.1): normalised to a repository-
                relative path (no empty or `..` segment) that normalises to itself, or refused as invalid input (over
                4,096 bytes, a NUL) or as leaving the repository, never anything else; an
                announce's scope path (which asks the file system) agrees.

    python tests/fuzz.py              the test command's run: fixed seed, bounded counts
    python tests/fuzz.py --long       a run of 10 minutes, by hand: rounds of the bounded
                                      counts, each with the next seed, until time is up
    python tests/fuzz.py --rate 10    each target for about 10 s: examples per second
    python tests/fuzz.py --seed N --examples N

It prints one line per target (examples, seed, failures) and the falsifying example of
each failure, then `fuzz: N examples over T targets (seed S): F failures`. Every failure it
finds becomes a named regression test in tests/test_hostile.py (FuzzFoundTest).
"""
import argparse
import atexit
import json
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from hypothesis import HealthCheck, given, seed as fixed_seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.errors import HypothesisWarning  # noqa: E402

import majordomus as m  # noqa: E402
from tests import support  # noqa: E402
from tests.test_hostile import LAYER  # noqa: E402
from tests.test_markdown import ATTRIBUTES, STYLES, TAGS, TagAudit  # noqa: E402

SEED = 20251205
EXAMPLES = {"subset-text": 1500, "subset-tree": 500, "jsonrpc": 1500, "http-head": 1500,
            "markdown": 800, "peers": 300, "paths": 800}
LONG_SECONDS = 600


# ------------------------------------------------------------------------------------------
# The subset reader
# ------------------------------------------------------------------------------------------

LINE_PIECES = ["", " ", "  ", "    ", "- ", "-", "- - ", "a", "b_1", "x-y", "1x", "-k", "k:",
               ": ", ":", "key: ", "a: b", "#", " # c", "'", "''", '"', "[", "]", "[a, b]",
               "[]", "&a", "*a", "|", ">", "{a: 1}", "true", "false", "007", "-0",
               "9223372036854775808", "9" * 30, "1" * 4400, "---", "\t", "\r", "é", "\u2028", "\x00",
               "`x`", "%", "@", "!"]
subset_lines = st.lists(st.lists(st.sampled_from(LINE_PIECES), max_size=6).map("".join),
                        max_size=20).map("\n".join)
def deep_text(levels):
    """A mapping `levels` deep, or as many list items (one in 30 examples: they are big)."""
    if levels % 2:
        return "a:\n" + "".join("  " * i + "- n:\n" for i in range(levels // 2)) + "x: 1\n"
    return "a:\n" + "".join("  " * i + "n:\n" for i in range(1, levels)) + \
        "  " * levels + "leaf: " + "9" * 4400 + "\n"


subset_texts = st.integers(0, 30).flatmap(lambda k: st.integers(990, 1300).map(deep_text)
                                          if k == 0 else st.one_of(st.text(max_size=300),
                                                                   subset_lines))


def check_subset_text(text):
    for read in (m.parse_subset, lambda t: m.split_front_matter("---\n" + t + "\n---\nbody")[0]):
        try:
            tree = read(text)
        except m.SubsetError as exc:
            assert str(exc), "an empty message"
            continue
        assert isinstance(tree, dict), type(tree)
        m.key_paths(tree)
        m.json_compact(tree)


KEYS = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,5}", fullmatch=True)
STRINGS = st.text(alphabet=st.characters(blacklist_categories=("Cs",),
                                         blacklist_characters="\n\r\t"), max_size=12)
SCALARS = st.one_of(st.booleans(), st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1),
                    STRINGS)


def _trees(children):
    items = st.one_of(SCALARS, st.just([]), st.dictionaries(KEYS, children, min_size=1,
                                                            max_size=3))
    return st.one_of(st.dictionaries(KEYS, children, min_size=1, max_size=3),
                     st.lists(items, max_size=3))


subset_trees = st.dictionaries(KEYS, st.recursive(SCALARS, _trees, max_leaves=16), max_size=5)


def scalar_text(value):
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("'", "''") + "'"


def emit(tree):
    """The block form of a tree: mappings two columns deeper, list items under their key,
    a mapping item's first key on its dash, every string single-quoted."""
    lines = []
    _emit_map(tree, 0, lines)
    return "\n".join(lines) + "\n"


def _emit_map(mapping, indent, lines):
    for key, value in mapping.items():
        _emit_value(" " * indent + key + ":", value, indent + 2, lines)


def _emit_value(head, value, child, lines):
    if isinstance(value, dict):
        lines.append(head)
        _emit_map(value, child, lines)
    elif isinstance(value, list):
        if not value:
            lines.append(head + " []")
            return
        lines.append(head)
        for item in value:
            _emit_item(item, child, lines)
    else:
        lines.append(head + " " + scalar_text(value))


def _emit_item(item, indent, lines):
    pad = " " * indent
    if isinstance(item, dict):
        pairs = list(item.items())
        _emit_value(pad + "- " + pairs[0][0] + ":", pairs[0][1], indent + 4, lines)
        _emit_map(dict(pairs[1:]), indent + 2, lines)
    elif isinstance(item, list):
        lines.append(pad + "- []")
    else:
        lines.append(pad + "- " + scalar_text(item))


def check_subset_tree(tree):
    text = emit(tree)
    got = m.parse_subset(text)
    assert json.dumps(got) == json.dumps(tree), "read back %r from:\n%s" % (got, text)


# ------------------------------------------------------------------------------------------
# The JSON-RPC dispatcher
# ------------------------------------------------------------------------------------------

class Layer:
    """A small layer in a scratch repository and a live layer over it (no watching)."""
    live = None

    @classmethod
    def get(cls):
        if cls.live is None:
            cls.scratch = tempfile.mkdtemp(prefix="mj-fuzz-")
            repo = os.path.join(cls.scratch, "repo")
            for rel, text in LAYER.items():
                support.write(repo, rel, text)
            support.git(repo, "init", "-q", "-b", "main")
            support.commit_all(repo)
            cls.live = m.Live(repo, "vcs", m.Counters(), watch=False, board=m.Board())
        return cls.live

    @classmethod
    def close(cls):
        if cls.live is not None:
            cls.live.close()
            shutil.rmtree(cls.scratch, ignore_errors=True)
            cls.live = None


FLOATS = st.floats(allow_nan=True, allow_infinity=True)
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(1 << 70),
                                                         max_value=1 << 70),
                   FLOATS, st.text(max_size=12))
VALUES = st.recursive(LEAVES, lambda c: st.lists(c, max_size=3) | st.dictionaries(
    st.text(max_size=6), c, max_size=3), max_leaves=8)
TOOLS = ["majordomus_get", "majordomus_list", "majordomus_search", "majordomus_capabilities",
         "majordomus_capability", "majordomus_context", "majordomus_prompt",
         "majordomus_perf", "majordomus_repository", "majordomus_brief",
         "majordomus_affected", "majordomus_peers", "majordomus_announce", "nope"]
ARGUMENT_NAMES = ["uri", "query", "limit", "cursor", "kind", "offset", "name", "arguments",
                  "path", "mode", "id", "tag", "exposure", "provider", "audience", "intent",
                  "budget_lines", "budget_chars", "base", "staged", "scope", "claim", "handle",
                  "local", "x"]
URIS = st.sampled_from(["majordomus://repository", "majordomus://rule/project.alpha@1",
                        "majordomus://note/plain", "majordomus://x/y", ""]) | st.text(max_size=8)
META = st.fixed_dictionaries({}, optional={
    "io.modelcontextprotocol/protocolVersion": st.sampled_from(
        ["2026-07-28", "2025-11-25", "1"]) | LEAVES,
    "io.modelcontextprotocol/clientCapabilities": st.just({}) | VALUES})
PARAMS = st.one_of(st.none(), VALUES, st.fixed_dictionaries({}, optional={
    "uri": URIS, "name": st.sampled_from(TOOLS) | st.text(max_size=8),
    "arguments": st.dictionaries(st.sampled_from(ARGUMENT_NAMES), VALUES | URIS, max_size=4)
    | VALUES,
    "cursor": VALUES, "protocolVersion": st.sampled_from(["2025-06-18", "x"]) | LEAVES,
    "_meta": META | VALUES, "requestId": VALUES,
    "notifications": st.fixed_dictionaries({}, optional={
        "resourcesListChanged": st.booleans(), "resourceSubscriptions": st.lists(URIS)})
    | VALUES}))
METHODS = st.sampled_from(sorted(m.METHODS) + ["notifications/initialized",
                                               "notifications/cancelled", "logging/setLevel",
                                               "completion/complete"]) | st.text(max_size=10)
IDS = st.one_of(st.none(), st.integers(min_value=-(1 << 70), max_value=1 << 70),
                st.text(max_size=10), FLOATS, st.booleans(), VALUES)
MESSAGES = st.fixed_dictionaries({"jsonrpc": st.just("2.0")}, optional={
    "id": IDS, "method": METHODS, "params": PARAMS})
FRAMES = st.one_of(MESSAGES, st.lists(MESSAGES, max_size=4), VALUES)


def frame_line(value):
    """The frame as a client would write it: a float JSON cannot carry as 1e400 (the json
    module writes Infinity and NaN, which no JSON parser reads: those lines stay as they
    are and must be parse errors)."""
    text = json.dumps(value, allow_nan=True)
    if "Infinity" in text and "NaN" not in text and not isinstance(value, str):
        text = text.replace("-Infinity", "-1e400").replace("Infinity", "1e400")
    return text.encode("utf-8", "surrogatepass") + b"\n"


def finite(value):
    """Can JSON carry `value` back (no NaN, no infinity in it)?"""
    try:
        json.dumps(value, allow_nan=False)
        return True
    except ValueError:
        return False


def strict(data):
    def refuse(name):
        raise AssertionError("%s in an answer" % name)
    return json.loads(data.decode("utf-8"), parse_constant=refuse)


def check_answer(answer, sent):
    assert isinstance(answer, dict) and answer.get("jsonrpc") == "2.0", answer
    assert ("result" in answer) != ("error" in answer), answer
    if "error" in answer:
        error = answer["error"]
        assert isinstance(error.get("code"), int) and isinstance(error.get("message"), str)
        assert error["code"] != -32603, "an internal error: %r" % (answer,)
        assert "Traceback" not in error["message"]
    if isinstance(sent, dict):
        msg_id = sent.get("id")
        if msg_id is not None and finite(msg_id) and "id" in sent and (
                answer.get("error", {}).get("code") not in (-32700,)):
            assert answer["id"] == msg_id and type(answer["id"]) is type(msg_id), (
                answer.get("id"), msg_id)
        elif not finite(msg_id):
            assert answer["id"] is None, answer


def check_jsonrpc(value):
    live = Layer.get()
    written = []
    session = m.Session(live, written.append)
    try:
        line = frame_line(value)
        data = m.answer_line(live, session, line)
    finally:
        session.close()
    for frame in written:
        strict(frame)
    sent = json.loads(line)          # what the server read (1e400 is infinity)
    if data is None:
        requests = [x for x in (sent if isinstance(sent, list) else [sent])
                    if isinstance(x, dict) and x.get("id") is not None
                    and isinstance(x.get("method"), str)
                    and x.get("method") != "subscriptions/listen"]
        assert not requests or not isinstance(sent, (dict, list)), "no answer to %r" % sent
        return
    answer = strict(data)
    if isinstance(answer, dict) and answer.get("error", {}).get("code") == -32700:
        assert answer["id"] is None and not finite(sent), (answer, sent)   # NaN, Infinity
        return
    if isinstance(sent, list) and sent:
        assert isinstance(answer, list), answer
        for item in answer:
            check_answer(item, None)
        return
    check_answer(answer, sent)


# ------------------------------------------------------------------------------------------
# HTTP heads, the Host guard, query strings
# ------------------------------------------------------------------------------------------

HOST_RULE = re.compile(r"(localhost|127\.0\.0\.1|\[::1\]|([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+"
                       r"localhost)(:[0-9]{0,5})?\Z")
HOSTS = st.one_of(
    st.sampled_from(["localhost", "127.0.0.1", "[::1]", "a.localhost", "x-1.y.localhost",
                     "evil.com", "localhost.evil.com", "[::1", "127.0.0.1.", "-a.localhost",
                     "a_b.localhost", "[::ffff:127.0.0.1]", "0x7f.1", "LOCALHOST"]),
    st.text(max_size=20)).flatmap(lambda host: st.sampled_from(
        [host, host + ":", host + ":8741", host + ":99999", host + ":x", host + ":%d" % 65535]))
METHOD_TEXT = st.sampled_from(["GET", "HEAD", "POST", "PUT", "DELETE", "GÉT", "G3T", ""]) | \
    st.text(max_size=6)
HEADER_NAMES = st.sampled_from(["Host", "Content-Length", "Origin", "Accept", "X-A",
                                "Transfer-Encoding", "Sec-Fetch-Site", "Bad Name", "X(y)",
                                "Naïve", ""]) | st.text(max_size=8)
HEADER_VALUES = st.one_of(st.sampled_from(["0", "12", "²", "-1", "7" * 5000, "1e3", " 5",
                                           "http://localhost", "same-origin"]),
                          st.text(max_size=20), HOSTS)
HEADS = st.one_of(
    st.binary(max_size=200),
    st.tuples(METHOD_TEXT, st.sampled_from(["/", "/api/v1/objects?limit=1", "*", ""]) |
              st.text(max_size=10), st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/2", ""]),
              st.lists(st.tuples(HEADER_NAMES, HEADER_VALUES), max_size=5)).map(
        lambda t: ("%s %s %s\r\n" % t[:3] + "".join("%s: %s\r\n" % h for h in t[3]))
        .encode("utf-8", "surrogatepass")))
QUERIES = st.lists(st.tuples(st.sampled_from(["query", "limit", "cursor", "kind", "mode",
                                              "x", "limit", "arguments.a"]) | st.text(max_size=5),
                             st.sampled_from(["1", "-1", "²", "7" * 5000, "%C2%B2", "%FF", "+",
                                              "ranked", "a%20b"]) | st.text(max_size=8)),
                   max_size=4).map(lambda pairs: "&".join("%s=%s" % p for p in pairs))
HTTP_INPUTS = st.tuples(HEADS, HOSTS, QUERIES)


def check_http(case):
    head, host, query = case
    try:
        method, target, version, headers = m._parse_head(head)
    except m.HttpError as exc:
        assert exc.status == 400, exc.status
    else:
        assert method and method.isascii() and method.isalpha(), method
        assert all(name and not name.strip(m._TOKEN_CHARS) for name in headers), headers
        try:
            length = m.body_length(headers)
            assert 0 <= length <= m.BODY_LIMIT
        except m.HttpError as exc:
            assert exc.status in (400, 413), exc.status
        if "host" in headers:
            check_host(headers["host"])
    check_host(host)
    schema = m.TYPES["SearchInput"]
    try:
        m._query_arguments(query, schema)
    except (m.InvalidInput, m.HttpError):
        pass


def check_host(host):
    allowed = m._host_allowed(host)
    assert allowed in (True, False)
    if allowed:
        name = host.strip(" \t").lower()
        assert HOST_RULE.match(name), host
        port = name.rpartition(":")[2] if not name.endswith("]") else ""
        assert not port.isdigit() or int(port) <= 65535, host


# ------------------------------------------------------------------------------------------
# The Markdown renderer
# ------------------------------------------------------------------------------------------

MD_PIECES = ["# ", "## ", "*", "**", "_", "`", "```", "~~~", "> ", "- ", "1. ", "    ", "|",
             "| --- |", "[a](", ")", "](", "<", ">", "<script>", "<img src=x onerror=y>",
             "javascript:", "JaVaScRiPt:", "data:", "http://x", "mailto:a@b", "//evil",
             "\\", "&amp;", "&#58;", "\"", "'", "\n", "\n\n", "text", "![i](", "<http://a>",
             "\t", "\x00", "é", "\u202e"]
MARKDOWN = st.one_of(st.text(max_size=300), st.lists(st.sampled_from(MD_PIECES),
                                                     max_size=40).map("".join))


def check_markdown(text):
    out = m.render_markdown(text)
    audit = TagAudit()
    audit.feed(out)
    audit.close()
    for tag, attrs in audit.tags:
        assert tag in TAGS, (tag, out[:300])
        assert set(attrs) <= ATTRIBUTES, (attrs, out[:300])
        if "style" in attrs:
            assert attrs["style"] in STYLES, attrs
        if "rel" in attrs:
            assert attrs["rel"] == "noopener noreferrer", attrs
        href = attrs.get("href")
        if href is not None:
            head = href.split("/")[0].split("?")[0].split("#")[0]
            if ":" in head:
                assert head.split(":")[0].lower() in ("http", "https", "mailto"), href
            assert not href.replace("\\", "/").startswith("//"), href
            assert href.isprintable() and " " not in href, href


# ------------------------------------------------------------------------------------------
# The peers' board, and paths from outside
# ------------------------------------------------------------------------------------------

SEGMENTS = ["a", "b", "src", "a.py", "é"]
SCOPE_PATHS = st.one_of(st.just("."), st.lists(st.sampled_from(SEGMENTS), min_size=1,
                                               max_size=4).map("/".join))
BOARD_STEPS = st.lists(st.tuples(st.integers(0, 5), st.one_of(
    st.none(), st.lists(SCOPE_PATHS, max_size=5).map(lambda p: list(dict.fromkeys(p))))),
    max_size=25)


class _Process:
    """What a session needs of its process: the board, and nothing to stop listening to."""

    def __init__(self):
        self.board = m.Board()

    def unlisten(self, listener):
        pass


def check_peers(steps):
    process = _Process()
    board = process.board
    sessions = [m.Session(process, lambda frame: None, transport="bridge") for _ in range(6)]
    told = []
    for session in sessions:
        session.told = (lambda announcer, mine, me=session: told.append((me.id, mine)))
    for who, scope in steps:
        session = sessions[who]
        if scope is None:
            session.close()
            continue
        del told[:]
        board.announce(session, "intent", scope)
        if session.id not in board.peers:
            continue
        expected = [(other.id, m.scope_overlap(other.scope, scope)) for other in
                    board.peers.values() if other is not session and other.scope
                    and m.scope_overlap(other.scope, scope)]
        assert told == expected, (told, expected)
    peers = list(board.peers.values())
    for view in board.listing()["peers"]:
        me = board.peers[view["id"]]
        expected = [other.id for other in peers if other is not me and other.scope
                    and m.scope_overlap(me.scope, other.scope)]
        assert view["overlaps"] == expected, (view, expected)


class Repository:
    """One scratch repository for the paths target, made on first use."""
    root = None

    @classmethod
    def get(cls):
        if cls.root is None:
            cls.root = os.path.realpath(tempfile.mkdtemp(prefix="mj-fuzz-paths-"))
            atexit.register(shutil.rmtree, cls.root, True)
            os.makedirs(os.path.join(cls.root, "src", "a"))
        return cls.root


PATH_PIECES = ["a", "src", "..", ".", "", "./", "//", "\\", "\x00", "é", "a" * 700, "x" * 5000,
               "~", " ", "C:", "\u202e"]
PATHS = st.tuples(st.booleans(), st.lists(st.sampled_from(PATH_PIECES), max_size=10).map(
    "/".join))


def check_path(case):
    absolute, given = case
    root = Repository.get()
    if absolute:
        given = root + "/" + given
    try:
        path = m.target_path(root, given)
    except m.InvalidInput as exc:
        assert len(given.encode("utf-8", "surrogatepass")) > m.PATH_BOUND or "\x00" in given, (
            exc, given[:80])
        return
    except m.RefusedPath:
        return
    assert "\x00" not in given and len(given.encode("utf-8")) <= m.PATH_BOUND, given[:80]
    # (a `.` segment inside stays, as the shell tool's normalisation keeps it, §20.2)
    assert path == "." or not [s for s in path.split("/") if s in ("", "..")], path
    assert not path.startswith("/"), path
    # (the shell tool strips one leading ./ of `././a`: normalised again, it loses the next)
    assert path.startswith("./") or m.target_path(root, path) == path, path
    try:
        assert m.scope_path(root, given) == m.target_path(root, given, as_sent=True)
    except m.RefusedPath:
        pass               # (a folder on its way that leaves the repository)


# ------------------------------------------------------------------------------------------
# Running them
# ------------------------------------------------------------------------------------------

TARGETS = [("subset-text", subset_texts, check_subset_text),
           ("subset-tree", subset_trees, check_subset_tree),
           ("jsonrpc", FRAMES, check_jsonrpc),
           ("http-head", HTTP_INPUTS, check_http),
           ("markdown", MARKDOWN, check_markdown),
           ("peers", BOARD_STEPS, check_peers),
           ("paths", PATHS, check_path)]


def run_target(name, strategy, check, examples, seed_value):
    """Run one property: (examples tried, the failure's report or None)."""
    count = [0]

    def body(value):
        count[0] += 1
        check(value)

    test = settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                    print_blob=False, suppress_health_check=list(HealthCheck))(
        fixed_seed(seed_value)(given(strategy)(body)))
    try:
        test()
    except Exception as exc:  # the falsifying example(s), shrunk, each with its error
        lines = [line for line in "".join(traceback.format_exception(
            type(exc), exc, exc.__traceback__)).splitlines()
            if "Falsifying" in line or "value=" in line or "Error" in line
            or "case=" in line or "Failing" in line or line.strip().startswith("assert")]
        return count[0], "\n".join(lines)[-6000:]
    return count[0], None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--long", action="store_true", help="run for 10 minutes")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--examples", type=int, help="examples per target (default: each "
                    "target's own count)")
    ap.add_argument("--rate", type=float, metavar="SECONDS",
                    help="run each target for about SECONDS and print its examples per second")
    ap.add_argument("--only", help="comma-separated target names")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", category=HypothesisWarning)   # a deep text's repr
    targets = [t for t in TARGETS if not args.only or t[0] in args.only.split(",")]
    total = failures = 0
    began = time.monotonic()
    try:
        if args.rate:
            for name, strategy, check in targets:
                done, started, round_seed = 0, time.monotonic(), args.seed
                while time.monotonic() - started < args.rate:
                    n, failure = run_target(name, strategy, check, 100, round_seed)
                    done += n
                    round_seed += 1
                    if failure:
                        print("fuzz: %s FAILED (seed %d):\n%s" % (name, round_seed - 1,
                                                                  failure))
                        failures += 1
                        break
                print("rate %s %d examples in %.2f s" % (name, done,
                                                         time.monotonic() - started))
                sys.stdout.flush()
            return 1 if failures else 0
        deadline = began + (LONG_SECONDS if args.long else 0)
        counts = {name: [0, 0, 0.0] for name, _, _ in targets}   # examples, failures, s
        round_no = 0
        while True:
            seed_value = args.seed + round_no
            for name, strategy, check in targets:
                started = time.monotonic()
                n, failure = run_target(name, strategy, check,
                                        args.examples or EXAMPLES[name], seed_value)
                counts[name][0] += n
                counts[name][2] += time.monotonic() - started
                total += n
                if failure:
                    counts[name][1] += 1
                    failures += 1
                    print("fuzz: %s FAILED (seed %d):\n%s" % (name, seed_value, failure))
                if args.long and time.monotonic() >= deadline:
                    break
            round_no += 1
            if not args.long or time.monotonic() >= deadline:
                break
        for name, _, _ in targets:
            n, failed, seconds = counts[name]
            print("fuzz: %-12s %6d examples (seed %s) in %.1f s: %s" % (
                name, n, args.seed if round_no == 1 else "%d..%d" % (
                    args.seed, args.seed + round_no - 1), seconds,
                "FAILED" if failed else "0 failures"))
        sys.stdout.flush()
    finally:
        Layer.close()
    print("fuzz: %d examples over %d targets (seed %d%s) in %.1f s: %d failures" % (
        total, len(targets), args.seed, ", %d rounds" % round_no if args.long else "",
        time.monotonic() - began, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
