"""Unit vectors for SPEC §3: the YAML subset (§3.1-§3.4), allow-lists (§3.5), front matter (§3.6).

API under test (module `majordomus`, imported from the checkout root):
  parse_subset(text) -> dict           raises SubsetError, str(err) is the spec's message
  key_paths(tree) -> [str]             document order
  split_front_matter(text) -> (dict or None, body)
  AllowList.from_text(name, text).unknown(paths) -> [str]

Every vector is data (tables below) so that the same tables are also run against the copy of
`majordomus.py` inside the built `majordomus.pyz` (class PyzCopyTest).
"""
import os
import re
import sys
import unittest
import zipfile
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402  (puts the checkout root on sys.path)
import majordomus  # noqa: E402

ROOT = support.ROOT
SKELETON = support.SKELETON      # the project's test layer (tests/fixtures/layer)
SHIPPED_ALLOW = os.path.join(ROOT, "share", "allow")
REFERENCE_ALLOW = os.environ.get("MAJORDOMUS_REFERENCE_ALLOW") or support.reference(
    "reference", "allow")
ALLOW_NAMES = ("manifest", "rule", "prompt", "profile", "policy", "milestone", "issue", "project")



def reference_skeleton(testcase, rel):
    """A file of the skeleton of the reference data, or skip testcase by name."""
    return support.reference_or_skip(testcase, "fixtures", "skeleton", rel)


INT64_MAX = "9223372036854775807"
INT64_MIN = "-9223372036854775808"


# --------------------------------------------------------------------------------------------
# strict comparison: types (bool vs int, list vs dict) and mapping order both matter
# --------------------------------------------------------------------------------------------

def canon(value):
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, list):
        return ("list", [canon(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(k, canon(v)) for k, v in value.items()])
    return ("UNEXPECTED-TYPE", type(value).__name__, repr(value))


# --------------------------------------------------------------------------------------------
# §3.1 lines
# --------------------------------------------------------------------------------------------

# (name, text, expected message)
TAB_ERRORS = [
    ("tab in a value", "a: 1\nb:\tx\n", "tab character on line 2"),
    ("tab in an otherwise blank line", "a: 1\n\t\nb: 2\n", "tab character on line 2"),
    ("tab between spaces of a blank line", "\n\n  \t  \n", "tab character on line 3"),
    ("tab in a comment line", "# comment\twith a tab\n", "tab character on line 1"),
    ("tab in an indented comment", "a: 1\n  #\tx\n", "tab character on line 2"),
    ("tab inside a quoted value", "a: 'x\ty'\n", "tab character on line 1"),
    ("tab as indentation", "a:\n\tb: 1\n", "tab character on line 2"),
    ("tab after a trailing comment", "a: 1\nb: 2 # c\t\n", "tab character on line 2"),
    ("tab beats odd indentation", "a:\n   b:\tc\n", "tab character on line 2"),
    ("tab on a --- line is not skipped", "---\t\na: 1\n", "tab character on line 1"),
    ("tab in a list item", "a:\n  - x\ty\n", "tab character on line 2"),
    ("tab on a CRLF line", "a: 1\r\nb: \tx\r\n", "tab character on line 2"),
    ("line numbers count comments and blanks", "# c\n\n\na: 1\n# d\n\tb\n", "tab character on line 6"),
]

# (name, text, expected tree)
SKIPPED_LINES = [
    ("empty document", "", {}),
    ("only a newline", "\n", {}),
    ("only comments", "# one\n# two\n", {}),
    ("only blank lines of spaces", "   \n  \n\n", {}),
    ("only a document marker", "---\n", {}),
    ("two document markers", "---\n---\n", {}),
    ("comment without space", "#a: 1\nb: 2\n", {"b": 2}),
    ("indented comment at odd indentation is skipped", "   # odd comment\na: 1\n", {"a": 1}),
    ("odd comment inside a mapping", "a:\n  b: 1\n     # odd comment\n  c: 2\n",
     {"a": {"b": 1, "c": 2}}),
    ("blank lines inside a mapping", "a:\n\n  b: 1\n   \n  c: 2\n", {"a": {"b": 1, "c": 2}}),
    ("--- with trailing spaces is skipped", "---   \na: 1\n", {"a": 1}),
    ("--- at column 0 between keys, trailing spaces", "a: 1\n---  \nb: 2\n", {"a": 1, "b": 2}),
    ("documents merge into one mapping", "a: 1\n---\nb: 2\n---\nc: 3\n", {"a": 1, "b": 2, "c": 3}),
    ("leading --- then keys", "---\nname: x\n", {"name": "x"}),
    ("a skipped --- does not reset nesting", "a:\n  b: 1\n---\n  c: 2\n", {"a": {"b": 1, "c": 2}}),
    ("no trailing newline", "a: 1", {"a": 1}),
    ("CRLF lines", "a: 1\r\nb:\r\n  c: x\r\n  d:\r\n    - y\r\n", {"a": 1, "b": {"c": "x", "d": ["y"]}}),
    ("CRLF blank and comment lines", "\r\n# c\r\na: 1\r\n---\r\n", {"a": 1}),
]

ODD_INDENTATION = [
    ("odd child", "a:\n   b: 1\n", "odd indentation on line 2"),
    ("odd first line", " a: 1\n", "odd indentation on line 1"),
    ("odd list item", "a:\n - x\n", "odd indentation on line 2"),
    ("odd beats cannot-parse", "a:\n   ???\n", "odd indentation on line 2"),
    ("odd beats unexpected indentation", "a: 1\n     b: 2\n", "odd indentation on line 2"),
    ("odd after blank lines", "a: 1\n\n\n b: 2\n", "odd indentation on line 4"),
    ("' ---' is no separator (§3.1 rule 2)", " ---\na: 1\n", "odd indentation on line 1"),
    ("'   ---  ' is no separator", "a: 1\n   ---  \n", "odd indentation on line 2"),
]

CANNOT_PARSE = [
    ("a bare word", "foo\n", "cannot parse line 1: foo"),
    ("key:value without space is not a key line", "key:value\n", "cannot parse line 1: key:value"),
    ("first colon must be followed by space or end", "a:b: c\n", "cannot parse line 1: a:b: c"),
    ("space before the colon", "a :x\n", "cannot parse line 1: a :x"),
    ("key starting with a digit", "1a: x\n", "cannot parse line 1: 1a: x"),
    ("dotted key", "a.b: x\n", "cannot parse line 1: a.b: x"),
    ("quoted key", "\"a\": x\n", "cannot parse line 1: \"a\": x"),
    ("key with a space", "a b: x\n", "cannot parse line 1: a b: x"),
    ("key starting with a dash", "-a: x\n", "cannot parse line 1: -a: x"),
    ("non-ASCII key", "\u00e9t\u00e9: 1\n", "cannot parse line 1: \u00e9t\u00e9: 1"),
    ("flow map line", "{a: 1}\n", "cannot parse line 1: {a: 1}"),
    ("complex key marker", "? a\n", "cannot parse line 1: ? a"),
    ("bare inline list", "[a, b]\n", "cannot parse line 1: [a, b]"),
    ("... is not special", "a: 1\n...\n", "cannot parse line 2: ..."),
    ("---- is not a document marker", "----\n", "cannot parse line 1: ----"),
    ("--- followed by text is not a marker", "--- a\n", "cannot parse line 1: --- a"),
    ("dash-led word is not a list item", "a:\n  -x\n", "cannot parse line 2: -x"),
    ("'  ---' is no separator: it cannot parse", "  ---\n", "cannot parse line 1: ---"),
    ("indented --- under a parent cannot parse", "a:\n  ---\n", "cannot parse line 2: ---"),
    ("a bare - is no list item (§3.1 rule 4)", "l:\n  -\n  - x\n", "cannot parse line 2: -"),
    ("a bare - at the key's indentation", "l:\n-\n", "cannot parse line 2: -"),
    ("message drops the leading spaces", "a:\n  just text\n", "cannot parse line 2: just text"),
    ("parse is checked before nesting", "a: 1\n  foo\n", "cannot parse line 2: foo"),
    ("message carries no CR", "a: 1\r\nfoo bar\r\n", "cannot parse line 2: foo bar"),
    ("first failing line wins", "foo\n\tbar\n", "cannot parse line 1: foo"),
    ("line numbers count comments and blanks", "# c\n\na: 1\n\nwhat\n", "cannot parse line 5: what"),
]

KEY_LINES = [
    ("key name characters", "_a: 1\nA_b-c9: 2\nx-majordomus: y\n",
     {"_a": 1, "A_b-c9": 2, "x-majordomus": "y"}),
    ("split at the first colon", "title: bench: targets\n", {"title": "bench: targets"}),
    ("colons later in the value", "url: http://x/a:b\n", {"url": "http://x/a:b"}),
    ("value is trimmed", "a:   x  \n", {"a": "x"}),
    ("key: followed by spaces is a parent that vanishes", "a:   \nb: 1\n", {"b": 1}),
    ("keys keep file order", "z: 1\na: 2\nm: 3\n", {"z": 1, "a": 2, "m": 3}),
]

# --------------------------------------------------------------------------------------------
# §3.2 nesting
# --------------------------------------------------------------------------------------------

ENFORCEMENT_EXAMPLE = (
    "enforcement:\n"
    "  - name: first\n"
    "    path: bin/x\n"
    "    args: [doctor, --strict]\n"
    "    nested:\n"
    "      - deep\n"
    "  - name: second\n"
    "    args: []\n"
)
ENFORCEMENT_TREE = {"enforcement": [
    {"name": "first", "path": "bin/x", "args": ["doctor", "--strict"], "nested": ["deep"]},
    {"name": "second", "args": []},
]}
ENFORCEMENT_PATHS = [
    "enforcement.0.name", "enforcement.0.path", "enforcement.0.args.0", "enforcement.0.args.1",
    "enforcement.0.nested.0", "enforcement.1.name", "enforcement.1.args",
]

NESTING = [
    ("the §3.2 enforcement example", ENFORCEMENT_EXAMPLE, ENFORCEMENT_TREE),
    ("nested mappings", "a:\n  b: 1\n  c:\n    d: x\ne: true\n",
     {"a": {"b": 1, "c": {"d": "x"}}, "e": True}),
    ("dedent several levels", "a:\n  b:\n    c:\n      d: 1\ne: 2\n",
     {"a": {"b": {"c": {"d": 1}}}, "e": 2}),
    ("dedent to a middle level", "a:\n  b:\n    c: 1\n  d: 2\n", {"a": {"b": {"c": 1}, "d": 2}}),
    ("list two spaces deeper", "a:\n  - x\n  - y\n", {"a": ["x", "y"]}),
    ("list at the key's own indentation", "a:\n- x\n- y\nb: 1\n", {"a": ["x", "y"], "b": 1}),
    ("nested list at the key's own indentation", "a:\n  b:\n  - x\n  - y\n  c: 1\n",
     {"a": {"b": ["x", "y"], "c": 1}}),
    ("list items numbered per parent", "a:\n  - x\nb:\n  - y\n  - z\n", {"a": ["x"], "b": ["y", "z"]}),
    ("mapping items", "l:\n  - name: a\n    v: 1\n  - name: b\n",
     {"l": [{"name": "a", "v": 1}, {"name": "b"}]}),
    ("mapping items at the key's own indentation", "l:\n- name: a\n  v: 1\n- name: b\n",
     {"l": [{"name": "a", "v": 1}, {"name": "b"}]}),
    ("item key as parent of a list at its own indentation",
     "l:\n  - a:\n    - x\n    - y\n    b: 2\n  - c: 3\n",
     {"l": [{"a": ["x", "y"], "b": 2}, {"c": 3}]}),
    ("item key as parent of a list two deeper", "l:\n  - a:\n      - x\n", {"l": [{"a": ["x"]}]}),
    ("item key as parent of a mapping", "l:\n  - a:\n      k: v\n    b: 1\n",
     {"l": [{"a": {"k": "v"}, "b": 1}]}),
    ("scalar and mapping items in one list", "l:\n  - x\n  - k: v\n", {"l": ["x", {"k": "v"}]}),
    ("scalar items", "l:\n  - lib/auth\n  - Every surface agrees: the CLI\n  - key:value\n"
                     "  - http://x/#f\n  - a:b: c\n",
     {"l": ["lib/auth", "Every surface agrees: the CLI", "key:value", "http://x/#f", "a:b: c"]}),
    ("- - a is the scalar '- a'", "l:\n  - - a\n", {"l": ["- a"]}),
    ("'- ' with nothing after it is the empty string", "l:\n  - \n  -   \n", {"l": ["", ""]}),
    ("- - alone is the string '-'", "l:\n  - -\n", {"l": ["-"]}),
    ("item values are scalars (typed, quoted, commented)",
     "l:\n  - 007\n  - -5\n  - true\n  - '1'\n  - x # c\n  - #x\n  - 'a: b'\n  - \"it''s\"\n",
     {"l": [7, -5, True, "1", "x", "#x", "a: b", "it''s"]}),
    ("an item that is an inline list", "l:\n  - [a, 1]\n  - []\n", {"l": [["a", 1], []]}),
    ("first colon of an item key", "l:\n  - a: b: c\n", {"l": [{"a": "b: c"}]}),
    ("vanishing item key is an empty mapping that keeps its index", "l:\n  - a:\n  - b: 1\n",
     {"l": [{}, {"b": 1}]}),
    ("only item is a vanishing key", "l:\n  - a:\n", {"l": [{}]}),
    ("parent key without child vanishes", "a:\nb: 1\n", {"b": 1}),
    ("last key vanishes", "x: 1\na:\n", {"x": 1}),
    ("parent key before comments only vanishes", "a:\n\n# c\n", {}),
    ("vanished sibling inside a mapping", "a:\n  b:\n  c: 1\n", {"a": {"c": 1}}),
    # Derived from the ctx/pend tables: `b:` at 2 sets pend[2] = a.b, and a list may sit at the
    # key's own indentation, so `- y` at 2 continues the list of a.b.
    ("list resumed at the key's own indentation", "a:\n  b:\n    - x\n  - y\n",
     {"a": {"b": ["x", "y"]}}),
    # §3.2: neither kind of item touches pend, so `- x` at level 1 after a mapping item
    # is still an item of `p` (pend[2] was set by `p:` on line 1).
    ("a mapping item leaves pend alone", "p:\n- k: v\n  - x\n", {"p": [{"k": "v"}, "x"]}),
    ("pend kept after several mapping items", "p:\n- a: 1\n- b: 2\n  - c\n  - d\n",
     {"p": [{"a": 1}, {"b": 2}, "c", "d"]}),
    ("nested item mappings", "l:\n  - k:\n      - m: 1\n        n: [x]\n    j: 2\n",
     {"l": [{"k": [{"m": 1, "n": ["x"]}], "j": 2}]}),
]

UNEXPECTED_INDENTATION = [
    ("child of a leaf", "a: 1\n  b: 2\n", "unexpected indentation on line 2"),
    ("indented first line", "  a: 1\n", "unexpected indentation on line 1"),
    ("four spaces deeper than the parent", "a:\n    b: 1\n", "unexpected indentation on line 2"),
    ("deeper than a sibling leaf", "a:\n  b: 1\n      c: 2\n", "unexpected indentation on line 3"),
    ("child of a leaf inside an item", "l:\n  - a: 1\n      b: 2\n", "unexpected indentation on line 3"),
    ("key under a scalar item", "l:\n  - x\n    b: 1\n", "unexpected indentation on line 3"),
    ("child of an inline list", "a: [x]\n  b: 1\n", "unexpected indentation on line 2"),
    ("child of a '# ...' value (a leaf, not a parent)", "a: # c\n  b: 1\n",
     "unexpected indentation on line 2"),
]

LIST_WITHOUT_PARENT = [
    ("list at the top", "- x\n", "list item without a parent key on line 1"),
    ("list after a leaf", "a: 1\n- x\n", "list item without a parent key on line 2"),
    ("list under a leaf", "a: 1\n  - x\n", "list item without a parent key on line 2"),
    ("list four deeper", "a:\n    - x\n", "list item without a parent key on line 2"),
    ("list after a sibling key at its indentation", "a:\n  b: 1\n  - x\n",
     "list item without a parent key on line 3"),
    ("a root key drops every pending list", "a:\n  - x\nb: 1\n- y\n",
     "list item without a parent key on line 4"),
    ("after comments", "# c\n\n  - x\n", "list item without a parent key on line 3"),
    ("a key of the item drops the pending list", "p:\n- k: v\n  j: w\n  - x\n",
     "list item without a parent key on line 4"),
]

GIVEN_TWICE = [
    ("leaf twice", "a: 1\na: 2\n", "'a' is given twice, on line 2"),
    ("same value twice", "a: x\na: x\n", "'a' is given twice, on line 2"),
    ("leaf then parent (the spec's example)", "a: 1\na:\n  b: 2\n", "'a' is given twice, on line 2"),
    ("parent then leaf", "a:\n  b: 1\na: 2\n", "'a' is given twice, on line 3"),
    ("parent key written twice", "a:\n  b: 1\na:\n  c: 2\n", "'a' is given twice, on line 3"),
    ("parent key written twice, nothing after", "a:\n  b: 1\na:\n", "'a' is given twice, on line 3"),
    ("nested leaf twice", "a:\n  b:\n    c: 1\n    c: 2\n", "'a.b.c' is given twice, on line 4"),
    ("item key twice", "l:\n  - n: 1\n    n: 2\n", "'l.0.n' is given twice, on line 3"),
    ("across merged documents", "a: 1\n---\na: 2\n", "'a' is given twice, on line 3"),
    ("inline list then block list", "a: [x]\na:\n  - y\n", "'a' is given twice, on line 2"),
    ("empty list then block list", "a: []\na:\n  - x\n", "'a' is given twice, on line 2"),
    ("block list then leaf", "a:\n  - x\na: 1\n", "'a' is given twice, on line 3"),
    ("second item key twice", "l:\n  - n: 1\n  - n: 2\n    m: 1\n    n: 3\n",
     "'l.1.n' is given twice, on line 5"),
]

MIXES = [
    ("list item under a mapping", "a:\n  b: 1\n- x\n", "'a.0' mixes a list with a mapping, on line 3"),
    ("key under a list (own indentation)", "a:\n- x\n  b: 1\n",
     "'a.b' mixes a mapping with a scalar or list, on line 3"),
    ("key under a list (two deeper)", "a:\n  - x\n  b: 1\n",
     "'a.b' mixes a mapping with a scalar or list, on line 3"),
    ("deep list item under an item's mapping", "l:\n  - k:\n      x: 1\n    - y\n",
     "'l.0.k.0' mixes a list with a mapping, on line 4"),
    ("item mapping under a mapping", "a:\n  b: 1\n- c: 2\n", "'a.0' mixes a list with a mapping, on line 3"),
]


def deep_mapping(depth):
    lines = ["%sk%d:" % ("  " * i, i) for i in range(depth)]
    lines.append("%sleaf: v" % ("  " * depth))
    expected = {"leaf": "v"}
    for i in reversed(range(depth)):
        expected = {"k%d" % i: expected}
    path = ".".join(["k%d" % i for i in range(depth)] + ["leaf"])
    return "\n".join(lines) + "\n", expected, path


def deep_lists(depth):
    # k0:\n  - k1:\n      - k2:\n          - ... - v
    lines = ["k0:"]
    for i in range(1, depth):
        lines.append("%s- k%d:" % (" " * (2 + 4 * (i - 1)), i))
    lines.append("%s- v" % (" " * (2 + 4 * (depth - 1))))
    expected = ["v"]
    for i in reversed(range(1, depth)):
        expected = [{"k%d" % i: expected}]
    expected = {"k0": expected}
    path = ".".join("k%d.0" % i for i in range(depth))
    return "\n".join(lines) + "\n", expected, path


# --------------------------------------------------------------------------------------------
# §3.3 scalars: (value text as written after "k: ", expected value)
# --------------------------------------------------------------------------------------------

REFUSED = ["&a", "*a", "|", "|-", ">", ">-", "&anchor value", "*ref", "|+", ">2"]

NOT_REFUSED = [
    ("'&a'", "&a"), ("\"*\"", "*"), ("'|'", "|"), ("\">\"", ">"),
    ("[&a, *b, |, >]", ["&a", "*b", "|", ">"]),
    ("a&b", "a&b"), ("x | y", "x | y"), ("a > b", "a > b"), ("-> x", "-> x"),
]

INLINE_LISTS = [
    ("[]", []),
    ("[ ]", []),
    ("[   ]", []),
    ("[a, b]", ["a", "b"]),
    ("[a,b]", ["a", "b"]),
    ("[ a ,  b ]", ["a", "b"]),
    ("[a]", ["a"]),
    ("[1, -2, 007, true, false, x]", [1, -2, 7, True, False, "x"]),
    ("['1', \"true\", '']", ["1", "true", ""]),
    ("[\"a, b\", c]", ["\"a", "b\"", "c"]),
    ("[a,,b]", ["a", "", "b"]),
    ("[a, b,]", ["a", "b", ""]),
    ("[#x, a #y]", ["#x", "a #y"]),
    ("[[a], b]", ["[a]", "b"]),
    ("['it''s', x]", ["it's", "x"]),
    ("[{a: 1}]", ["{a: 1}"]),
    ("[x@1, y@2]", ["x@1", "y@2"]),
    ("[yes, ~, 1.5, null]", ["yes", "~", "1.5", "null"]),
    ("[%s, %s]" % (INT64_MAX, "9223372036854775808"), [int(INT64_MAX), "9223372036854775808"]),
    ("[Objective, Current State, Next Action]", ["Objective", "Current State", "Next Action"]),
    ("[a, b]  # note", "[a, b]"),
    ("[a, b] # note", "[a, b]"),
    ("[a] #", "[a]"),
    ("[a", "[a"),
    ("a]", "a]"),
]

QUOTED = [
    ("\"x\"", "x"), ("'x'", "x"), ("''", ""), ("\"\"", ""),
    ("'it''s'", "it's"), ("'a''''b'", "a''b"), ("\"it''s\"", "it''s"),
    ("\"a\\nb\"", "a\\nb"), ("'a\\'", "a\\"),
    ("'1'", "1"), ("\"-5\"", "-5"), ("\"true\"", "true"), ("'false'", "false"),
    ("'a # b'", "a # b"), ("\"#x\"", "#x"), ("'x: y'", "x: y"),
    ("'[a, b]'", "[a, b]"), ("'  padded  '", "  padded  "), ("\"a\"b\"", "a\"b"),
    ("\"a\" # c", "\"a\""), ("'a' # c", "'a'"),
    ("\"x'", "\"x'"), ("\"", "\""), ("'", "'"), ("'a\"", "'a\""),
]

COMMENTS = [
    ("b # c", "b"), ("b   # c", "b"), ("b #c", "b"), ("a#b", "a#b"),
    ("http://x/#frag", "http://x/#frag"), ("#x", "#x"), ("# c", "# c"), ("#", "#"),
    ("x # y # z", "x"), ("a#b # c", "a#b"), ("x #", "x"),
    ("1 # c", 1), ("true # c", True), ("007 #c", 7), ("1.5 # c", "1.5"),
]

TYPING = [
    ("true", True), ("false", False),
    ("True", "True"), ("FALSE", "FALSE"), ("yes", "yes"), ("no", "no"), ("on", "on"),
    ("null", "null"), ("~", "~"), ("1.5", "1.5"), ("0.5", "0.5"), ("0x10", "0x10"),
    ("1e3", "1e3"), ("15m", "15m"), ("-", "-"), ("--5", "--5"), ("5-", "5-"), ("+5", "+5"),
    ("1_000", "1_000"), ("\u0663", "\u0663"), ("1\u0663", "1\u0663"), ("\u00b2", "\u00b2"),
    ("0", 0), ("-0", 0), ("007", 7), ("-5", -5), ("42", 42), ("00000000000000000001", 1),
    (INT64_MAX, int(INT64_MAX)), ("9223372036854775808", "9223372036854775808"),
    (INT64_MIN, int(INT64_MIN)), ("-9223372036854775809", "-9223372036854775809"),
    ("99999999999999999999999", "99999999999999999999999"),
    ("{a: 1}", "{a: 1}"), ("`cmd --x`", "`cmd --x`"), ("%x", "%x"), ("@x", "@x"),
    ("!tag x", "!tag x"), ("- 5", "- 5"),
]


# --------------------------------------------------------------------------------------------
# §3.4 key paths: (name, text, expected paths)
# --------------------------------------------------------------------------------------------

SPEC_34_EXAMPLE = ("id: a\nversion: 1\ndepends_on: [x@1, y@2]\ntags: []\nx-majordomus:\n"
                   "  validator: v\n  tests: [t]\n")
SPEC_34_PATHS = ["id", "version", "depends_on.0", "depends_on.1", "tags",
                 "x-majordomus.validator", "x-majordomus.tests.0"]

KEY_PATHS = [
    ("the §3.4 example", SPEC_34_EXAMPLE, SPEC_34_PATHS),
    ("the §3.2 enforcement example", ENFORCEMENT_EXAMPLE, ENFORCEMENT_PATHS),
    ("vanishing item key is an empty-mapping path", "l:\n  - a:\n  - b: 1\n", ["l.0", "l.1.b"]),
    ("empty list item", "l:\n  - []\n  - [x]\n", ["l.0", "l.1.0"]),
    ("decimal indices in document order", "l:\n" + "".join("  - i%d\n" % i for i in range(12)),
     ["l.%d" % i for i in range(12)]),
    ("merged documents keep document order", "b: 1\n---\na:\n  z: 1\n  y: 2\n",
     ["b", "a.z", "a.y"]),
    ("vanished keys have no path", "a:\nb: 1\nc:\n", ["b"]),
    ("empty document", "# nothing\n", []),
    ("false, zero and empty string are leaves", "a: false\nb: 0\nc: ''\n", ["a", "b", "c"]),
]

KEY_PATHS_OF_TREES = [
    ("empty containers are paths", {"a": {}, "b": [], "c": [{}, []], "d": {"e": False, "f": 0, "g": ""}},
     ["a", "b", "c.0", "c.1", "d.e", "d.f", "d.g"]),
    ("insertion order, not sorted", {"z": 1, "a": {"y": [1, 2], "b": "x"}},
     ["z", "a.y.0", "a.y.1", "a.b"]),
    ("empty tree", {}, []),
]


# --------------------------------------------------------------------------------------------
# §3.6 front matter
# --------------------------------------------------------------------------------------------

PROMPT_TEXT = ("---\nname: continue\ndescription: resume a task from durable state\n---\n\n"
               "# Resume\n\n{{CONTEXT}}\n")

# (name, text, expected metadata or None, expected body)
FRONT_MATTER = [
    ("LF fences", "---\na: 1\n---\nbody\n", {"a": 1}, "body\n"),
    ("CRLF fences and lines", "---\r\na: 1\r\nb: x\r\n---\r\nbody\r\nmore", {"a": 1, "b": "x"},
     "body\r\nmore"),
    ("closing fence with CR after an LF opening", "---\na: 1\n---\r\nbody", {"a": 1}, "body"),
    ("CRLF opening, LF closing", "---\r\na: 1\n---\nbody", {"a": 1}, "body"),
    ("---\\n---\\n is an empty mapping", "---\n---\n", {}, ""),
    ("empty front matter, closing fence at EOF", "---\n---", {}, ""),
    ("empty front matter with a body", "---\n---\nbody", {}, "body"),
    ("CRLF empty front matter", "---\r\n---\r\n", {}, ""),
    ("comment-only front matter", "---\n# only a comment\n\n---\nx", {}, "x"),
    ("closing fence at EOF", "---\na: 1\n---", {"a": 1}, ""),
    ("body keeps its leading blank line", "---\na: 1\n---\n\n# T\n", {"a": 1}, "\n# T\n"),
    ("body keeps later --- lines", "---\na: 1\n---\nx\n---\ny\n", {"a": 1}, "x\n---\ny\n"),
    ("'--- ' is not a fence (skipped inside)", "---\na: 1\n--- \n---\nbody", {"a": 1}, "body"),
    ("tabs in the body are not front matter", "---\na: 1\n---\n\tbody\n", {"a": 1}, "\tbody\n"),
    ("nested front matter", "---\na:\n  - x\nb:\n  c: 1\n---\n", {"a": ["x"], "b": {"c": 1}}, ""),
    ("the skeleton's prompt", PROMPT_TEXT,
     {"name": "continue", "description": "resume a task from durable state"},
     "\n# Resume\n\n{{CONTEXT}}\n"),
    # no front matter
    ("empty text", "", None, ""),
    ("plain YAML text", "a: 1\n", None, "a: 1\n"),
    ("markdown without front matter", "# Title\n\ntext\n", None, "# Title\n\ntext\n"),
    ("BOM before the fence", "\ufeff---\na: 1\n---\nbody\n", None, "\ufeff---\na: 1\n---\nbody\n"),
    ("blank line before the fence", "\n---\na: 1\n---\n", None, "\n---\na: 1\n---\n"),
    ("indented opening fence", " ---\na: 1\n---\n", None, " ---\na: 1\n---\n"),
    ("'--- ' does not open", "--- \na: 1\n---\n", None, "--- \na: 1\n---\n"),
    ("'----' does not open", "----\na: 1\n----\n", None, "----\na: 1\n----\n"),
    ("'---a' does not open", "---a\n", None, "---a\n"),
    ("fence later in the text", "text\n---\na: 1\n---\n", None, "text\n---\na: 1\n---\n"),
]

NEVER_CLOSED = "front matter opened on line 1 and never closed"

FRONT_MATTER_ERRORS = [
    ("no closing fence", "---\na: 1\n", NEVER_CLOSED),
    ("only an opening fence", "---\n", NEVER_CLOSED),
    ("a file that is just ---", "---", NEVER_CLOSED),
    ("only a CRLF opening fence", "---\r\n", NEVER_CLOSED),
    ("closing '--- ' is not a fence", "---\na: 1\n--- \n", NEVER_CLOSED),
    ("closing '----' is not a fence", "---\na: 1\n----\nbody\n", NEVER_CLOSED),
    ("closing '...' is not a fence", "---\na: 1\n...\n", NEVER_CLOSED),
    ("closing ' ---' is not a fence", "---\na: 1\n ---\n", NEVER_CLOSED),
    ("unclosed and large: never closed", "---\n" + "#" + "x" * 70000 + "\n", NEVER_CLOSED),
    # subset errors, line numbers relative to the front matter text
    ("tab inside", "---\na: 1\n\tb: 2\n---\n", "tab character on line 2"),
    ("cannot parse inside", "---\n\n# c\nfoo\n---\nbody\n", "cannot parse line 3: foo"),
    ("CRLF unexpected indentation", "---\r\na: 1\r\n  b: 2\r\n---\r\n", "unexpected indentation on line 2"),
    ("given twice inside", "---\na: 1\na: 2\n---\n", "'a' is given twice, on line 2"),
    ("'----' inside is a subset line", "---\na: 1\n----\nb: 2\n---\n", "cannot parse line 2: ----"),
    ("list item without parent inside", "---\n- x\n---\n", "list item without a parent key on line 1"),
    ("refused construct inside", "---\nk: |\n  text\n---\n", "unsupported YAML construct on line 1: |"),
    ("odd indentation inside", "---\na:\n   b: 1\n---\n", "odd indentation on line 2"),
    ("'  ---' is not a fence, and cannot parse inside", "---\na: 1\n  ---\n---\nbody",
     "cannot parse line 2: ---"),
    ("mixes inside", "---\na:\n  b: 1\n- x\n---\n", "'a.0' mixes a list with a mapping, on line 3"),
]


def front_matter_of_bytes(n, eol="\n"):
    """A valid front-matter text of exactly n UTF-8 bytes with far fewer characters."""
    head = "a: " + "\u00e9" * 20000 + eol          # 20000 two-byte characters
    rest = n - len(head.encode("utf-8")) - 1 - len(eol)
    assert rest > 0
    text = head + "#" + "x" * rest + eol
    assert len(text.encode("utf-8")) == n and len(text) == n - 20000
    return text


def limit_vectors():
    ok, err = [], []
    for eol, label in (("\n", "LF"), ("\r\n", "CRLF")):
        fence = "---" + eol
        for n in (65535, 65536):
            ok.append(("%s front matter of %d bytes" % (label, n),
                       fence + front_matter_of_bytes(n, eol) + fence + "body",
                       {"a": "\u00e9" * 20000}, "body"))
        for n in (65537, 70000):
            err.append(("%s front matter of %d bytes" % (label, n),
                        fence + front_matter_of_bytes(n, eol) + fence + "body",
                        "front matter is %d bytes, over the 65536 byte limit" % n))
    return ok, err


# --------------------------------------------------------------------------------------------
# §3.5 reference allow-lists: the patterns of shared/reference/allow/, copied into
# tests/fixtures/reference-allow/ (checked against that directory when it is present so
# that the copy cannot drift)
# --------------------------------------------------------------------------------------------

REFERENCE_PATTERNS_DIR = os.path.join(ROOT, "tests", "fixtures", "reference-allow")


def reference_patterns():
    """{kind: the text of its copied reference allow-list}."""
    patterns = {}
    for name in sorted(os.listdir(REFERENCE_PATTERNS_DIR)):
        with open(os.path.join(REFERENCE_PATTERNS_DIR, name), "rb") as handle:
            patterns[name[:-len(".txt")]] = handle.read().decode("utf-8")
    return patterns


REFERENCE_PATTERNS = reference_patterns()


def pattern_lines(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def _expand(s, i):
    """Expand the tiny regex dialect of the allow-lists into sample strings; returns (samples, i)."""
    options, current = [], [""]
    while i < len(s) and s[i] != ")":
        c = s[i]
        if c == "|":
            options.extend(current)
            current = [""]
            i += 1
            continue
        if c == "(":
            piece, i = _expand(s, i + 1)
            if i >= len(s) or s[i] != ")":
                raise ValueError("unbalanced group in %r" % s)
            i += 1
        elif c == "\\" and i + 1 < len(s) and s[i + 1] == ".":
            piece, i = ["."], i + 2
        elif s.startswith("[0-9]+", i):
            piece, i = ["0", "7", "12"], i + 6
        elif c.isalnum() or c in "_-":
            piece, i = [c], i + 1
        else:
            raise ValueError("sample generator cannot read %r in %r" % (c, s))
        if i < len(s) and s[i] == "?":
            piece = [""] + piece
            i += 1
        current = [a + b for a in current for b in piece]
    options.extend(current)
    return options, i


def samples_for(pattern):
    if not (pattern.startswith("^") and pattern.endswith("$")):
        raise ValueError("reference pattern not anchored: %r" % pattern)
    body = pattern[1:-1]
    samples, i = _expand(body, 0)
    if i != len(body):
        raise ValueError("sample generator stopped early in %r" % pattern)
    return samples


def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


# --------------------------------------------------------------------------------------------
# runners shared by the checkout module and the .pyz copy
# --------------------------------------------------------------------------------------------

class Checks(object):
    mod = None  # the module under test, set per class

    def assertTree(self, actual, expected, msg=None):
        self.assertEqual(canon(actual), canon(expected), msg)

    def parse_ok(self, vectors):
        for name, text, expected in vectors:
            with self.subTest(name=name, text=text):
                self.assertTree(self.mod.parse_subset(text), expected)

    def parse_err(self, vectors):
        for name, text, message in vectors:
            with self.subTest(name=name, text=text):
                with self.assertRaises(self.mod.SubsetError) as cm:
                    self.mod.parse_subset(text)
                self.assertEqual(str(cm.exception), message)

    def value_ok(self, vectors):
        for value, expected in vectors:
            with self.subTest(value=value, where="key line"):
                self.assertTree(self.mod.parse_subset("k: %s\n" % value), {"k": expected})
            with self.subTest(value=value, where="list item"):
                self.assertTree(self.mod.parse_subset("l:\n  - %s\n" % value), {"l": [expected]})
            with self.subTest(value=value, where="item key"):
                self.assertTree(self.mod.parse_subset("l:\n  - k: %s\n" % value), {"l": [{"k": expected}]})

    def fm_ok(self, vectors):
        for name, text, meta, body in vectors:
            with self.subTest(name=name, text=text[:80]):
                got = self.mod.split_front_matter(text)
                self.assertEqual(len(got), 2)
                if meta is None:
                    self.assertIsNone(got[0])
                else:
                    self.assertTree(got[0], meta)
                self.assertEqual(got[1], body)

    def fm_err(self, vectors):
        for name, text, message in vectors:
            with self.subTest(name=name, text=text[:80]):
                with self.assertRaises(self.mod.SubsetError) as cm:
                    self.mod.split_front_matter(text)
                self.assertEqual(str(cm.exception), message)

    def paths_ok(self, vectors):
        for name, text, expected in vectors:
            with self.subTest(name=name):
                self.assertEqual(self.mod.key_paths(self.mod.parse_subset(text)), expected)

    def shipped_allows_reference(self, read_shipped):
        """read_shipped(name) -> text of the shipped list."""
        for name in ALLOW_NAMES:
            shipped = self.mod.AllowList.from_text(name, read_shipped(name))
            for pattern in pattern_lines(REFERENCE_PATTERNS[name]):
                samples = samples_for(pattern)
                for sample in samples:
                    self.assertTrue(re.match(pattern, sample), (pattern, sample))
                with self.subTest(list=name, pattern=pattern):
                    self.assertEqual(shipped.unknown(samples), [])


# --------------------------------------------------------------------------------------------
# §3.1
# --------------------------------------------------------------------------------------------

class LinesTest(Checks, unittest.TestCase):
    mod = majordomus

    def test_rule1_tab_anywhere(self):
        self.parse_err(TAB_ERRORS)

    def test_rule2_blank_comment_and_document_lines_are_skipped(self):
        self.parse_ok(SKIPPED_LINES)

    def test_result_is_always_a_dict(self):
        for text in ("", "# c\n", "---\n", "a: 1\n"):
            with self.subTest(text=text):
                self.assertIsInstance(majordomus.parse_subset(text), dict)

    def test_rule3_odd_indentation(self):
        self.parse_err(ODD_INDENTATION)

    def test_rule5_key_lines(self):
        self.parse_ok(KEY_LINES)

    def test_rule5_cannot_parse(self):
        self.parse_err(CANNOT_PARSE)

    def test_subset_error_is_an_exception(self):
        self.assertTrue(issubclass(majordomus.SubsetError, Exception))


# --------------------------------------------------------------------------------------------
# §3.2
# --------------------------------------------------------------------------------------------

class NestingTest(Checks, unittest.TestCase):
    mod = majordomus

    def test_nesting_vectors(self):
        self.parse_ok(NESTING)

    def test_enforcement_example_tree(self):
        self.assertTree(majordomus.parse_subset(ENFORCEMENT_EXAMPLE), ENFORCEMENT_TREE)

    def test_enforcement_example_key_paths_in_order(self):
        self.assertEqual(majordomus.key_paths(majordomus.parse_subset(ENFORCEMENT_EXAMPLE)),
                         ENFORCEMENT_PATHS)

    def test_unexpected_indentation(self):
        self.parse_err(UNEXPECTED_INDENTATION)

    def test_list_item_without_parent_key(self):
        self.parse_err(LIST_WITHOUT_PARENT)

    def test_given_twice(self):
        self.parse_err(GIVEN_TWICE)

    def test_mixes(self):
        self.parse_err(MIXES)

    def test_depth_is_unlimited_mappings(self):
        text, expected, path = deep_mapping(60)
        tree = majordomus.parse_subset(text)
        self.assertTree(tree, expected)
        self.assertEqual(majordomus.key_paths(tree), [path])

    def test_depth_is_unlimited_lists_of_mappings(self):
        text, expected, path = deep_lists(20)
        tree = majordomus.parse_subset(text)
        self.assertTree(tree, expected)
        self.assertEqual(majordomus.key_paths(tree), [path])

    def test_deep_error_line_numbers(self):
        text, _, _ = deep_mapping(30)
        lines = text.split("\n")
        # a second leaf at the same depth as `leaf`
        bad = "\n".join(lines[:-1] + ["  " * 30 + "leaf: w", ""])
        path = ".".join(["k%d" % i for i in range(30)] + ["leaf"])
        with self.assertRaises(majordomus.SubsetError) as cm:
            majordomus.parse_subset(bad)
        self.assertEqual(str(cm.exception), "'%s' is given twice, on line 32" % path)


# --------------------------------------------------------------------------------------------
# §3.3
# --------------------------------------------------------------------------------------------

class ScalarsTest(Checks, unittest.TestCase):
    mod = majordomus

    def test_rule1_refused_constructs(self):
        for value in REFUSED:
            with self.subTest(value=value, where="key line"):
                self.parse_err([(value, "a: 1\nk: %s\n" % value,
                                 "unsupported YAML construct on line 2: %s" % value)])
            with self.subTest(value=value, where="list item"):
                self.parse_err([(value, "l:\n  - x\n  - %s\n" % value,
                                 "unsupported YAML construct on line 3: %s" % value)])
            with self.subTest(value=value, where="item key"):
                self.parse_err([(value, "l:\n  - k: %s\n" % value,
                                 "unsupported YAML construct on line 2: %s" % value)])

    def test_rule1_refused_value_is_trimmed_in_message(self):
        self.parse_err([("trailing spaces", "k:   |  \n", "unsupported YAML construct on line 1: |"),
                        ("block scalar with text", "k: >\n  folded\n",
                         "unsupported YAML construct on line 1: >")])

    def test_rule1_only_unquoted_and_not_in_inline_lists(self):
        self.value_ok(NOT_REFUSED)

    def test_rule2_inline_lists(self):
        self.value_ok(INLINE_LISTS)

    def test_rule2_inline_list_key_paths(self):
        self.paths_ok([
            ("elements", "k: [a, b, c]\n", ["k.0", "k.1", "k.2"]),
            ("empty list is one path", "k: []\n", ["k"]),
            ("commented list is a string", "k: [a, b]  # note\n", ["k"]),
            ("empty elements are still elements", "k: [a,,]\n", ["k.0", "k.1", "k.2"]),
        ])

    def test_rule3_quoted(self):
        self.value_ok(QUOTED)

    def test_rule4_comments(self):
        self.value_ok(COMMENTS)

    def test_rule4_hash_led_value_is_a_leaf_not_a_parent(self):
        self.parse_ok([("a: # c", "a: # c\nb: 1\n", {"a": "# c", "b": 1})])

    def test_rule5_typing(self):
        self.value_ok(TYPING)

    def test_rule5_booleans_are_bools_and_integers_are_ints(self):
        tree = majordomus.parse_subset("t: true\nf: false\ni: 1\nz: 0\n")
        self.assertIs(tree["t"], True)
        self.assertIs(tree["f"], False)
        self.assertIs(type(tree["i"]), int)
        self.assertIs(type(tree["z"]), int)

    def test_no_null(self):
        tree = majordomus.parse_subset("a: null\nb: ~\nc: ''\n")
        self.assertTree(tree, {"a": "null", "b": "~", "c": ""})


# --------------------------------------------------------------------------------------------
# §3.4
# --------------------------------------------------------------------------------------------

def policy_key_paths(finish_requires):
    """The key paths (§3.4) of a policy in the skeleton's shape: the test layer's and the
    reference skeleton's differ only in how many `finish_requires` entries they list."""
    return ([
        "version", "context.always_loaded_budget_lines", "context.builder_budget_lines",
        "context.recent_decisions", "context.max_list_items", "context.strategy",
        "context.transcript_is_state", "profiles.default", "profiles.checkpoint_interval_default",
        "verification.required_for_changes"]
        + ["verification.finish_requires.%d" % i for i in range(finish_requires)]
        + ["checkpoint.max_body_lines", "checkpoint.retention_max_files"]
        + ["handover.required_sections.%d" % i for i in range(3)]
        + ["handover.retention_max_files", "ledger.retention_max_lines",
           "benchmark.samples", "benchmark.warmup", "benchmark.regression.p50",
           "benchmark.regression.p95", "benchmark.regression.p99",
           "benchmark.budget.doctor_ms", "benchmark.budget.watch_ms",
           "enforcement.0.name", "enforcement.0.path", "enforcement.0.args.0",
           "enforcement.0.wired_by", "enforcement.1.name", "enforcement.1.path",
           "enforcement.1.args.0", "enforcement.1.args.1", "enforcement.1.wired_by",
           "projections.0.provider", "projections.0.target", "projections.0.always_loaded",
           "projections.1.provider", "projections.1.target",
           "projections.2.provider", "projections.2.target"])


POLICY = ".ai/repo/policy.yaml"
SCOPE_RULE = ".ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md"
SOURCES = ".ai/repo/knowledge/sources.yaml"
# What the policy and the scope rule of each skeleton-shaped layer read as (ViewsTest).
SKELETON_VIEWS = {
    "layer": {
        "context": {"always_loaded_budget_lines": 120, "builder_budget_lines": 240,
                    "recent_decisions": 3, "max_list_items": 12,
                    "strategy": "smallest-that-suffices", "transcript_is_state": False},
        "profiles": {"default": "implementation", "checkpoint_interval_default": "20m"},
        "finish_requires": ["tests_ran", "scope_respected", "notes_written"],
        "required_sections": ["Goal", "Where it stands", "What comes next"],
        "regression": {"p50": "0.4", "p95": "0.45", "p99": "0.7"},
        "enforcement": [
            {"name": "check-before-commit", "path": "majordomus", "args": ["check"],
             "wired_by": "git-hook:pre-commit"},
            {"name": "verify-before-push", "path": "majordomus", "args": ["finish", "--dry-run"],
             "wired_by": "git-hook:pre-push"}],
        "meta": {
            "id": "majordomus.scope-integrity", "version": 1, "kind": "rule",
            "title": "Stay inside the claimed paths",
            "description": "A task changes only the files it said it would change.",
            "statement": "Changes outside the paths a task claimed do not count as that "
                         "task's work.",
            "status": "active", "class": "blocking",
            "depends_on": ["majordomus.one-task-at-a-time@1"],
            "tags": ["scope", "review"],
            "x-majordomus": {"validator": "scope", "category": "scope",
                             "enforced_by": ["check", "finish"],
                             "policy_key": "scope_respected", "exit_code": 10,
                             "claims": ["claimed-paths", "one-task"],
                             "tests": ["test/cases/03_scope.sh"]}},
        "body_starts": "\n# Why\n", "body_ends": "at check and at finish.\n"},
    "reference": {
        "context": {"always_loaded_budget_lines": 150, "builder_budget_lines": 300,
                    "recent_decisions": 5, "max_list_items": 20,
                    "strategy": "minimum-sufficient", "transcript_is_state": False},
        "profiles": {"default": "implementation", "checkpoint_interval_default": "15m"},
        "finish_requires": ["scope_respected", "verification_ran", "state_updated",
                            "no_open_blockers", "note_present"],
        "required_sections": ["Objective", "Current State", "Next Action"],
        "regression": {"p50": "0.5", "p95": "0.5", "p99": "0.6"},
        "enforcement": [
            {"name": "doctor-on-commit", "path": "majordomus", "args": ["doctor"],
             "wired_by": "git-hook:pre-commit"},
            {"name": "finish-on-push", "path": "majordomus", "args": ["finish", "--check"],
             "wired_by": "git-hook:pre-push"}],
        "meta": {
            "id": "majordomus.scope-integrity", "version": 1, "kind": "rule",
            "title": "Scope integrity",
            "description": "A task touches only the paths it claimed; work found elsewhere is "
                           "not accepted as done.",
            "statement": "Work outside the paths a task claimed is not accepted as that task's "
                         "work.",
            "status": "active", "class": "blocking",
            "depends_on": ["majordomus.one-worker-one-scope@1"],
            "tags": ["scope", "verification"],
            "x-majordomus": {"validator": "scope", "category": "scope",
                             "enforced_by": ["check", "finish", "watch"],
                             "policy_key": "scope_respected", "exit_code": 10,
                             "claims": ["scope-enforcement", "scoped-task"],
                             "tests": ["test/cases/04_start_check.sh"]}},
        "body_starts": "\n# Rationale\n", "body_ends": "CI runs that case.\n"},
}


class ViewsTest(Checks, unittest.TestCase):
    mod = majordomus

    def test_spec_34_example_tree(self):
        self.assertTree(majordomus.parse_subset(SPEC_34_EXAMPLE), {
            "id": "a", "version": 1, "depends_on": ["x@1", "y@2"], "tags": [],
            "x-majordomus": {"validator": "v", "tests": ["t"]}})

    def test_spec_34_example_key_paths(self):
        self.assertEqual(majordomus.key_paths(majordomus.parse_subset(SPEC_34_EXAMPLE)), SPEC_34_PATHS)

    def test_key_paths_of_documents(self):
        self.paths_ok(KEY_PATHS)

    def test_key_paths_of_trees(self):
        for name, tree, expected in KEY_PATHS_OF_TREES:
            with self.subTest(name=name):
                self.assertEqual(majordomus.key_paths(tree), expected)

    # The views are read on two layers of the skeleton's shape: the test layer (always
    # there) and the reference skeleton (skipped by name where it is absent); SKELETON_VIEWS
    # holds what each must read as.

    def policy_tree_and_paths(self, path, want):
        """A policy: nested mappings, inline comments, a block list of scalars, flow lists,
        block lists of mappings, numbers that stay text."""
        tree = majordomus.parse_subset(read(path))
        self.assertIs(tree["version"], 1)
        self.assertTree(tree["context"], want["context"])
        self.assertTree(tree["profiles"], want["profiles"])
        self.assertTree(tree["verification"]["finish_requires"], want["finish_requires"])
        self.assertTree(tree["handover"]["required_sections"], want["required_sections"])
        self.assertTree(tree["benchmark"]["regression"], want["regression"])
        self.assertTree(tree["enforcement"], want["enforcement"])
        self.assertTree(tree["projections"], [
            {"provider": "agents", "target": "AGENTS.md", "always_loaded": True},
            {"provider": "claude-code", "target": "CLAUDE.md"},
            {"provider": "gemini", "target": "GEMINI.md"}])
        self.assertEqual(majordomus.key_paths(tree),
                         policy_key_paths(len(want["finish_requires"])))

    def rule_front_matter(self, path, want):
        """A front matter with flow lists, a blank line and a nested mapping of its own."""
        meta, body = majordomus.split_front_matter(read(path))
        self.assertTree(meta, want["meta"])
        self.assertTrue(body.startswith(want["body_starts"]))
        self.assertTrue(body.endswith(want["body_ends"]))

    def sources_parse(self, path):
        tree = majordomus.parse_subset(read(path))
        self.assertEqual(list(tree), ["version", "sources"])
        self.assertEqual([c["id"] for c in tree["sources"]],
                         ["policy", "profile", "rule", "prompt", "workflow", "milestone", "issue",
                          "document", "readme"])
        self.assertTree(tree["sources"][2], {"id": "rule", "kind": "rule", "discovery": "vcs",
                                             "pathspec": ":(glob).ai/repo/rules/**/*.md",
                                             "required": True})

    def test_layer_policy_tree_and_paths(self):
        self.policy_tree_and_paths(os.path.join(SKELETON, POLICY), SKELETON_VIEWS["layer"])

    def test_layer_rule_front_matter(self):
        self.rule_front_matter(os.path.join(SKELETON, SCOPE_RULE), SKELETON_VIEWS["layer"])

    def test_layer_sources_parse(self):
        self.sources_parse(os.path.join(SKELETON, SOURCES))

    def test_reference_skeleton_policy_tree_and_paths(self):
        self.policy_tree_and_paths(reference_skeleton(self, POLICY),
                                   SKELETON_VIEWS["reference"])

    def test_reference_skeleton_rule_front_matter(self):
        self.rule_front_matter(reference_skeleton(self, SCOPE_RULE), SKELETON_VIEWS["reference"])

    def test_reference_skeleton_sources_parse(self):
        self.sources_parse(reference_skeleton(self, SOURCES))


# --------------------------------------------------------------------------------------------
# §3.5
# --------------------------------------------------------------------------------------------

class AllowListTest(Checks, unittest.TestCase):
    mod = majordomus

    def unknown(self, text, paths):
        return majordomus.AllowList.from_text("t", text).unknown(paths)

    def test_unknown_in_given_order(self):
        self.assertEqual(self.unknown("^a$\n^b\\.[0-9]+$\n", ["z", "a", "b.0", "b", "c", "b.x", "b.10"]),
                         ["z", "b", "c", "b.x"])

    def test_all_known(self):
        self.assertEqual(self.unknown("^a$\n", ["a", "a"]), [])
        self.assertEqual(self.unknown("^a$\n", []), [])

    def test_any_pattern_allows(self):
        self.assertEqual(self.unknown("^a$\n^b$\n^c$\n", ["c", "b", "a", "d"]), ["d"])

    def test_anchored_patterns_match_whole_paths(self):
        self.assertEqual(self.unknown("^a$\n^(id|version)$\n", ["a", "ab", "xa", "id", "idx", "xversion"]),
                         ["ab", "xa", "idx", "xversion"])
        self.assertEqual(self.unknown("^tags(\\.[0-9]+)?$\n", ["tags", "tags.0", "tags.12", "tags.x",
                                                               "tags.0.a", "tagsx"]),
                         ["tags.x", "tags.0.a", "tagsx"])

    def test_comment_lines_are_never_patterns(self):
        # as a regular expression '#|.*' would allow everything
        self.assertEqual(self.unknown("#|.*\n^a$\n", ["a", "b"]), ["b"])
        self.assertEqual(self.unknown("# GENERATED FILE \u2014 DO NOT EDIT DIRECTLY\n# Source: x\n"
                                      "# Generator: majordomus-cli 0.9.0\n^name$\n", ["name", "x"]),
                         ["x"])

    def test_empty_lines_are_never_patterns(self):
        # an empty pattern would allow everything (or the empty path)
        self.assertEqual(self.unknown("^a$\n\n^b$\n\n", ["a", "b", "c"]), ["c"])
        self.assertEqual(self.unknown("\n\n", ["a"]), ["a"])

    def test_reference_rule_list_on_the_34_example(self):
        allow = majordomus.AllowList.from_text("rule", REFERENCE_PATTERNS["rule"])
        self.assertEqual(allow.unknown(SPEC_34_PATHS), [])
        self.assertEqual(allow.unknown(["x-majordomus.foo", "tags.x", "statement.0", "owner", "id.0",
                                        "x-majordomus.tests.0.a", "x-majordomus"]),
                         ["x-majordomus.foo", "tags.x", "statement.0", "owner", "id.0",
                          "x-majordomus.tests.0.a", "x-majordomus"])

    def test_embedded_reference_copy_matches_shared_reference(self):
        if not os.path.isdir(REFERENCE_ALLOW):
            raise unittest.SkipTest("no reference data at %s" % REFERENCE_ALLOW)
        names = sorted(f[:-4] for f in os.listdir(REFERENCE_ALLOW) if f.endswith(".txt"))
        self.assertEqual(names, sorted(ALLOW_NAMES))
        for name in names:
            with self.subTest(list=name):
                self.assertEqual(pattern_lines(read(os.path.join(REFERENCE_ALLOW, name + ".txt"))),
                                 pattern_lines(REFERENCE_PATTERNS[name]))

    def test_sample_generator_covers_every_reference_pattern(self):
        self.assertEqual(sorted(REFERENCE_PATTERNS), sorted(ALLOW_NAMES))
        for name in ALLOW_NAMES:
            for pattern in pattern_lines(REFERENCE_PATTERNS[name]):
                samples = samples_for(pattern)
                self.assertTrue(samples)
                for sample in samples:
                    self.assertTrue(re.fullmatch(pattern[1:-1], sample), (pattern, sample))


class ShippedAllowListsTest(Checks, unittest.TestCase):
    mod = majordomus

    def test_every_list_is_shipped(self):
        for name in ALLOW_NAMES:
            with self.subTest(list=name):
                self.assertTrue(os.path.isfile(os.path.join(SHIPPED_ALLOW, name + ".txt")))

    def test_every_pattern_is_anchored_and_compiles(self):
        for name in ALLOW_NAMES:
            lines = pattern_lines(read(os.path.join(SHIPPED_ALLOW, name + ".txt")))
            with self.subTest(list=name):
                self.assertTrue(lines)
            for line in lines:
                with self.subTest(list=name, pattern=line):
                    self.assertTrue(line.startswith("^") and line.endswith("$"))
                    re.compile(line)

    def test_shipped_lists_allow_what_the_reference_allows(self):
        self.shipped_allows_reference(lambda name: read(os.path.join(SHIPPED_ALLOW, name + ".txt")))

    def test_shipped_lists_refuse_an_unknown_key(self):
        for name in ALLOW_NAMES:
            with self.subTest(list=name):
                allow = majordomus.AllowList.from_text(
                    name, read(os.path.join(SHIPPED_ALLOW, name + ".txt")))
                self.assertEqual(allow.unknown(["no_such_key", "id.x.y.z"]),
                                 ["no_such_key", "id.x.y.z"])

    def shipped(self, name):
        return majordomus.AllowList.from_text(name, read(os.path.join(SHIPPED_ALLOW, name + ".txt")))

    def no_unknown_keys(self, tree):
        for rel, name in ((".ai/repo/policy.yaml", "policy"),
                          (".ai/repo/profiles/implementation.yaml", "profile"),
                          (".ai/manifest.yaml", "manifest")):
            with self.subTest(path=rel):
                paths = majordomus.key_paths(majordomus.parse_subset(read(os.path.join(tree, rel))))
                self.assertTrue(paths)
                self.assertEqual(self.shipped(name).unknown(paths), [])
        for rel, name in ((".ai/repo/prompts/continue.md", "prompt"),
                          (".ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md", "rule")):
            with self.subTest(path=rel):
                meta, _ = majordomus.split_front_matter(read(os.path.join(tree, rel)))
                paths = majordomus.key_paths(meta)
                self.assertTrue(paths)
                self.assertEqual(self.shipped(name).unknown(paths), [])

    def test_layer_files_have_no_unknown_keys(self):
        self.no_unknown_keys(SKELETON)

    def test_reference_skeleton_files_have_no_unknown_keys(self):
        self.no_unknown_keys(support.reference_or_skip(self, "fixtures", "skeleton"))

    def test_skeleton_with_an_extra_key_reports_it(self):
        text = read(os.path.join(SKELETON, ".ai/repo/profiles/implementation.yaml"))
        paths = majordomus.key_paths(majordomus.parse_subset(text + "colour: blue\ncontext2:\n  x: 1\n"))
        self.assertEqual(self.shipped("profile").unknown(paths), ["colour", "context2.x"])


# --------------------------------------------------------------------------------------------
# §3.6
# --------------------------------------------------------------------------------------------

class FrontMatterTest(Checks, unittest.TestCase):
    mod = majordomus

    def test_front_matter_vectors(self):
        self.fm_ok(FRONT_MATTER)

    def test_front_matter_errors(self):
        self.fm_err(FRONT_MATTER_ERRORS)

    def test_limit_counts_utf8_bytes_between_the_fences(self):
        ok, err = limit_vectors()
        self.fm_ok(ok)
        self.fm_err(err)

    def test_no_front_matter_returns_the_same_text(self):
        text = "# Title\n---\n"
        meta, body = majordomus.split_front_matter(text)
        self.assertIsNone(meta)
        self.assertEqual(body, text)


# --------------------------------------------------------------------------------------------
# the same tables against the copy inside majordomus.pyz
# --------------------------------------------------------------------------------------------

def load_pyz_module():
    with zipfile.ZipFile(support.PYZ) as z:
        source = z.read("majordomus.py")
        allow = {}
        for name in ALLOW_NAMES:
            allow[name] = z.read("share/allow/%s.txt" % name).decode("utf-8")
    name = "majordomus_from_pyz_subset"
    mod = types.ModuleType(name)
    mod.__file__ = os.path.join(support.PYZ, "majordomus.py")
    sys.modules[name] = mod
    exec(compile(source, mod.__file__, "exec"), mod.__dict__)
    return mod, allow


class PyzCopyTest(Checks, unittest.TestCase):
    """Build first: python3 build_zipapp.py (the .pyz is what users run)."""

    @classmethod
    def setUpClass(cls):
        cls.mod, cls.allow = load_pyz_module()

    def test_parse_vectors(self):
        self.parse_ok(SKIPPED_LINES + KEY_LINES + NESTING)
        self.parse_err(TAB_ERRORS + ODD_INDENTATION + CANNOT_PARSE + UNEXPECTED_INDENTATION
                       + LIST_WITHOUT_PARENT + GIVEN_TWICE + MIXES)

    def test_scalar_vectors(self):
        self.value_ok(NOT_REFUSED + INLINE_LISTS + QUOTED + COMMENTS + TYPING)

    def test_key_paths(self):
        self.paths_ok(KEY_PATHS)

    def test_front_matter(self):
        ok, err = limit_vectors()
        self.fm_ok(FRONT_MATTER + ok)
        self.fm_err(FRONT_MATTER_ERRORS + err)

    def test_embedded_allow_lists_allow_what_the_reference_allows(self):
        self.shipped_allows_reference(lambda name: self.allow[name])


if __name__ == "__main__":
    unittest.main()
