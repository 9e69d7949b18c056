"""The shipped allow-lists, share/allow/*.txt (SPEC §3.5, §4.1).

Every list compiles and every pattern is anchored in the file; every list a shipped kind
names is there (the 23 kinds of the later era, plus `manifest`); and each list still allows
every key path the shell era's list allows (`$MAJORDOMUS_REFERENCE/reference/allow/`) and
every path the later era's list it was taken from allows
(`$MAJORDOMUS_REFERENCE/reference/later/allow/`; those comparisons skip by name where the
reference data is absent).

Regular expressions cannot be compared as sets, so a reference pattern is turned into sample
key paths by a small expander of the regex dialect the lists use (alternation, groups, `?`,
`*`, `+`, character classes, `.`, escapes); each sample must match its own pattern (the
expander is checked against `re` on every sample) and be allowed by the shipped list.
Standard library only: runs under every interpreter of the suite.
"""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402  (puts the checkout root on sys.path)
import majordomus  # noqa: E402

ROOT = support.ROOT
SHIPPED = os.path.join(ROOT, "share", "allow")
# The reference data's allow-lists (the shell era's, and the later era's with its kinds
# file): the tests that compare with them skip by name where they are absent.
ERA = ("reference", "allow")
LATER = ("reference", "later", "allow")
LATER_KINDS = ("reference", "later", "kinds.share-ca6f3615.yaml")

# §4.1: the lists the 23 shipped kinds name (`session` names `session-record`; document,
# command, implementation and test name none), then the manifest's, then `project` (kept:
# the era's list, no shipped kind names it today).
KIND_LISTS = ("rule", "prompt", "skill", "profile", "policy", "scope", "milestone", "issue",
              "context", "session-record", "adr", "knowledge", "use-case", "application",
              "taxonomy", "claim", "moment", "audience", "area")
TAKEN_FROM_LATER = tuple(n for n in KIND_LISTS if n not in ("claim", "moment", "audience", "area")) \
    + ("manifest", "project")
DERIVED = ("claim", "moment", "audience", "area")
EXPECTED = KIND_LISTS + ("manifest", "project")


def read(path):
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8")


def pattern_lines(text):
    """The lines the reader uses as patterns (§3.5: empty and `#` lines are skipped)."""
    return [line for line in text.split("\n") if line.strip() and not line.startswith("#")]


def need_reference(testcase, parts):
    """The reference path of parts, or skip testcase by name (support.reference_or_skip)."""
    return support.reference_or_skip(testcase, *parts)


# --------------------------------------------------------------------------------------------
# the sample expander: a pattern of the allow-list dialect -> strings it matches
# --------------------------------------------------------------------------------------------

class Unreadable(ValueError):
    """A construct the expander does not read; the pattern must then be checked another way."""


SAMPLE_LIMIT = 20000
# characters tried for a class or `.`: letters, digits, and the key-path separator
POOL = "a0z9_-.x7M"


def _class(pattern, i):
    """A character class starting after '[' at i: (member samples, index after ']')."""
    negate = pattern.startswith("^", i)
    if negate:
        i += 1
    members, first = set(), True
    while i < len(pattern) and (pattern[i] != "]" or first):
        first = False
        c = pattern[i]
        if c == "\\":
            if i + 1 >= len(pattern):
                raise Unreadable("dangling escape in %r" % pattern)
            c, i = pattern[i + 1], i + 2
            if c.isalnum():
                raise Unreadable("class escape \\%s in %r" % (c, pattern))
        else:
            i += 1
        if pattern.startswith("-", i) and i + 1 < len(pattern) and pattern[i + 1] != "]":
            hi = pattern[i + 1]
            if hi == "\\":
                raise Unreadable("escaped range end in %r" % pattern)
            members.update(chr(n) for n in range(ord(c), ord(hi) + 1))
            i += 2
        else:
            members.add(c)
    if i >= len(pattern):
        raise Unreadable("unclosed class in %r" % pattern)
    if negate:
        chosen = [c for c in POOL if c not in members]
    else:
        chosen = [c for c in POOL if c in members] or sorted(members)[:1]
        chosen += [c for c in (min(members), max(members)) if c not in chosen]
    if not chosen:
        raise Unreadable("a class with no sample in %r" % pattern)
    return chosen[:3], i + 1


def _alternatives(pattern, i, depth):
    """Expand alternatives from i up to ')' (depth > 0) or the end: (samples, index)."""
    options, current = [], [""]
    while i < len(pattern) and not (pattern[i] == ")" and depth):
        c = pattern[i]
        if c == "|":
            options.extend(current)
            current, i = [""], i + 1
            continue
        if c == "(":
            if pattern.startswith("(?:", i):
                i += 3
            elif pattern.startswith("(?", i):
                raise Unreadable("group flag or assertion in %r" % pattern)
            else:
                i += 1
            piece, i = _alternatives(pattern, i, depth + 1)
            if i >= len(pattern):
                raise Unreadable("unbalanced group in %r" % pattern)
            i += 1
        elif c == "[":
            piece, i = _class(pattern, i + 1)
        elif c == ".":
            piece, i = ["a", "0", ".", "-"], i + 1
        elif c == "\\":
            if i + 1 >= len(pattern):
                raise Unreadable("dangling escape in %r" % pattern)
            e = pattern[i + 1]
            if e == "d":
                piece = ["0", "7"]
            elif e == "w":
                piece = ["a", "_", "9"]
            elif e.isalnum():
                raise Unreadable("escape \\%s in %r" % (e, pattern))
            else:
                piece = [e]
            i += 2
        elif c in "^$":
            raise Unreadable("an anchor inside %r" % pattern)
        elif c in "?*+{})]":
            raise Unreadable("%r where an atom is expected in %r" % (c, pattern))
        else:
            piece, i = [c], i + 1
        if i < len(pattern) and pattern[i] in "?*+{":
            q = pattern[i]
            if q == "{":
                raise Unreadable("counted repetition in %r" % pattern)
            i += 1
            if i < len(pattern) and pattern[i] in "?+":
                raise Unreadable("lazy or possessive quantifier in %r" % pattern)
            once = list(piece)
            twice = [piece[0] + piece[-1]] + ([piece[-1] + piece[0]] if len(piece) > 1 else [])
            piece = {"?": [""] + once, "*": [""] + once + twice, "+": once + twice}[q]
        current = [a + b for a in current for b in dict.fromkeys(piece)]
        if len(current) > SAMPLE_LIMIT:
            raise Unreadable("more than %d samples for %r" % (SAMPLE_LIMIT, pattern))
    options.extend(current)
    return list(dict.fromkeys(options)), i


def samples(pattern):
    """The sample strings of one anchored pattern `^…$`; each is checked against `re`."""
    if not anchored(pattern):
        raise Unreadable("not anchored as one whole: %r" % pattern)
    body = pattern[1:-1]
    found, i = _alternatives(body, 0, 0)
    if i != len(body):
        raise Unreadable("stray ')' in %r" % pattern)
    compiled = re.compile(body)
    wrong = [s for s in found if not compiled.fullmatch(s)]
    if wrong:
        raise AssertionError("expander bug: %r does not match %r" % (pattern, wrong))
    return found


def anchored(pattern):
    """`^` first, an unescaped `$` last, and no alternation outside a group: the pattern
    then means the same searched or full-matched (the reader full-matches, §3.5)."""
    if not pattern.startswith("^") or not pattern.endswith("$"):
        return False
    backslashes = len(pattern[:-1]) - len(pattern[:-1].rstrip("\\"))
    if backslashes % 2:
        return False
    depth, i, in_class = 0, 1, False
    while i < len(pattern) - 1:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern.startswith("]", i + 1) or pattern.startswith("^]", i + 1):
                i += 1 + pattern.startswith("^]", i + 1)
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth < 0:
                return False
        elif c == "|" and depth == 0:
            return False
        elif c in "^$":
            return False
        i += 1
    return depth == 0 and not in_class


def not_allowed(shipped_text, reference_text):
    """(reference pattern, sample) pairs the shipped list does not allow."""
    shipped = majordomus.AllowList.from_text("shipped", shipped_text)
    missing = []
    for pattern in pattern_lines(reference_text):
        missing.extend((pattern, s) for s in shipped.unknown(samples(pattern)))
    return missing


# --------------------------------------------------------------------------------------------

class ExpanderTest(unittest.TestCase):
    """The expander itself: what it yields, what it refuses."""

    def test_samples(self):
        for pattern, expected in (
                (r"^id$", ["id"]),
                (r"^(id|version)$", ["id", "version"]),
                (r"^tags(\.[0-9]+)?$",
                 ["tags", "tags.0", "tags.9", "tags.7", "tags.07", "tags.70"]),
                (r"^x\.(a|b)\.[0-9]$", ["x.a.0", "x.a.9", "x.a.7", "x.b.0", "x.b.9", "x.b.7"]),
                (r"^a(?:b|)c?$", ["ab", "abc", "a", "ac"])):
            with self.subTest(pattern=pattern):
                self.assertEqual(samples(pattern), expected)

    def test_wildcards_yield_several_shapes(self):
        got = samples(r"^session\..*$")
        self.assertIn("session.", got)
        self.assertIn("session.a", got)
        self.assertIn("session..", got)
        got = samples(r"^a[^.]+$")
        self.assertTrue(got and all("." not in s[1:] for s in got), got)

    def test_unreadable_constructs_are_refused(self):
        for pattern in (r"^a{2}$", r"^(?=a)a$", r"^a\1$", r"^a+?$", r"^(a$", r"^a)$",
                        r"^a\b$", r"^a$|^b$", r"a", r"^a\$"):
            with self.subTest(pattern=pattern):
                with self.assertRaises(Unreadable):
                    samples(pattern)

    def test_anchored(self):
        for pattern in (r"^a$", r"^(a|b)$", r"^a\\$", r"^[|$]$", r"^a(\.[0-9]+)?$"):
            with self.subTest(pattern=pattern):
                self.assertTrue(anchored(pattern))
        for pattern in (r"a", r"^a", r"a$", r"^a\$", r"^a$|^b$", r"^a|b$", r"^(a$)", r"^a)($",
                        r"^a$b$", r""):
            with self.subTest(pattern=pattern):
                self.assertFalse(anchored(pattern))

    def test_a_narrower_list_is_caught(self):
        era = "^(id|version)$\n^tags(\\.[0-9]+)?$\n"
        self.assertEqual(not_allowed(era, era), [])
        self.assertEqual(not_allowed("^id$\n^version$\n^tags$\n^tags\\.[0-9]+$\n", era), [])
        self.assertEqual(not_allowed("^id$\n^tags(\\.[0-9]+)?$\n", era),
                         [("^(id|version)$", "version")])
        self.assertEqual(not_allowed("# ^version$\n^id$\n^version$\n^tags$\n", era),
                         [("^tags(\\.[0-9]+)?$", "tags." + n)
                          for n in ("0", "9", "7", "07", "70")])


class ShippedListsTest(unittest.TestCase):

    def allow(self, name):
        return majordomus.AllowList.from_text(name, read(os.path.join(SHIPPED, name + ".txt")))

    def shipped_names(self):
        return sorted(f[:-4] for f in os.listdir(SHIPPED) if f.endswith(".txt"))

    def test_every_named_list_is_shipped(self):
        self.assertEqual(sorted(set(EXPECTED) - set(self.shipped_names())), [])

    def test_the_named_lists_are_those_of_the_shipped_kinds(self):
        kinds = majordomus.parse_subset(read(need_reference(self, LATER_KINDS)))["kinds"]
        self.assertEqual(len(kinds), 23)
        named = set(entry["schema"] for entry in kinds.values() if "schema" in entry)
        self.assertEqual(sorted(named), sorted(KIND_LISTS))

    def test_every_list_the_checkout_kinds_name_is_shipped(self):
        kinds = majordomus.parse_subset(read(os.path.join(ROOT, "schema", "kinds.yaml")))["kinds"]
        for name, entry in kinds.items():
            if "allow" in entry:
                with self.subTest(kind=name):
                    self.assertIn(entry["allow"], self.shipped_names())

    def test_every_file_is_clean_text(self):
        for name in self.shipped_names():
            with self.subTest(list=name):
                with open(os.path.join(SHIPPED, name + ".txt"), "rb") as handle:
                    raw = handle.read()
                text = raw.decode("utf-8")
                self.assertTrue(text.endswith("\n"))
                self.assertNotIn("\r", text)
                self.assertNotIn("\t", text)
                for line in text.split("\n"):
                    self.assertEqual(line, line.rstrip(), "trailing white space: %r" % line)

    def test_every_pattern_compiles_and_is_anchored(self):
        for name in self.shipped_names():
            lines = pattern_lines(read(os.path.join(SHIPPED, name + ".txt")))
            with self.subTest(list=name):
                self.assertTrue(lines, "a list with no pattern")
                self.assertEqual(len(lines), len(set(lines)), "a pattern written twice")
                self.allow(name).compile()   # the reader's own compile of the whole list
            for line in lines:
                with self.subTest(list=name, pattern=line):
                    re.compile(line)
                    self.assertTrue(anchored(line), "not anchored as one whole")
                    self.assertTrue(samples(line))   # every shipped pattern is readable

    def test_every_list_refuses_what_it_does_not_name(self):
        for name in self.shipped_names():
            allow = self.allow(name)
            with self.subTest(list=name):
                self.assertEqual(allow.unknown(["zz_no_such_key", "id.zz.0", "", "."]),
                                 ["zz_no_such_key", "id.zz.0", "", "."])

    def test_still_allows_what_the_shell_era_allows(self):
        era = need_reference(self, ERA)
        era_names = sorted(f[:-4] for f in os.listdir(era) if f.endswith(".txt"))
        self.assertEqual(era_names, ["issue", "manifest", "milestone", "policy", "profile",
                                     "project", "prompt", "rule"])
        for name in era_names:
            with self.subTest(list=name):
                self.assertEqual(not_allowed(read(os.path.join(SHIPPED, name + ".txt")),
                                             read(os.path.join(era, name + ".txt"))), [])

    def test_still_allows_what_the_later_list_allows(self):
        later = need_reference(self, LATER)
        for name in TAKEN_FROM_LATER:
            with self.subTest(list=name):
                self.assertEqual(not_allowed(read(os.path.join(SHIPPED, name + ".txt")),
                                             read(os.path.join(later, name + ".txt"))), [])

    def test_derived_lists_name_their_schema(self):
        for name in DERIVED:
            text = read(os.path.join(SHIPPED, name + ".txt"))
            with self.subTest(list=name):
                self.assertTrue(text.startswith("# "))
                self.assertIn("reference/later/schemas/%s.schema.json" % name,
                              text.split("\n^", 1)[0])

    def test_the_claim_list_is_written_over_the_whole_file(self):
        allow = self.allow("claim")
        self.assertEqual(allow.unknown(["version", "claims", "claims.0.id", "claims.12.note"]),
                         [])
        self.assertEqual(allow.unknown(["id", "note", "claims.0", "claims.id", "claims.0.zz"]),
                         ["id", "note", "claims.0", "claims.id", "claims.0.zz"])


if __name__ == "__main__":
    unittest.main()


class KeyPathShapesTest(unittest.TestCase):
    """§23: a plain pattern is kept as the key-path shapes it allows, not a regular
    expression; the two answer alike for every shipped list and for patterns of every
    shape, and a pattern that is no plain key path is still a regular expression."""

    def test_shapes(self):
        shapes = majordomus._pattern_shapes
        self.assertEqual(shapes(r"^paths(\.[0-9]+)?$"), {"paths", "paths.#"})
        self.assertEqual(shapes(r"^categories\.[0-9]+\.id$"), {"categories.#.id"})
        self.assertEqual(shapes(r"^a\.b\.p99$"), {"a.b.p99"})
        self.assertEqual(shapes(r"^x(\.[0-9]+)?\.y$"), {"x.y", "x.#.y"})
        for pattern in (r"^a.*$", r"^a\.1$", r"^(a|b)$", r"^a\.b+$", r"^a$\b"):
            with self.subTest(pattern=pattern):
                self.assertIsNone(shapes(pattern))

    def test_shapes_answer_as_the_regex(self):
        import random
        import re
        rng = random.Random(23)
        checked = 0
        for name in sorted(f[:-4] for f in os.listdir(SHIPPED) if f.endswith(".txt")):
            allow = majordomus.AllowList.from_text(name, read(os.path.join(SHIPPED, name + ".txt")))
            self.assertEqual(allow.rest, [], "%s: every shipped pattern is a plain path" % name)
            regex = re.compile("|".join("(?:%s)" % p for p in allow.patterns)).fullmatch
            words = sorted(set(re.findall(r"[A-Za-z_][A-Za-z0-9_-]*", " ".join(allow.patterns))))
            for _ in range(1500):
                path = ".".join(rng.choice(words + ["0", "7", "12", "x"])
                                for _ in range(rng.randint(1, 5)))
                checked += 1
                self.assertEqual(allow.allows(path), regex(path) is not None, (name, path))
        mixed = majordomus.AllowList("mixed", [r"^a\.[0-9]+$", r"^b.*$", r"^c$"])
        self.assertEqual(mixed.rest, [r"^b.*$"])
        self.assertEqual([mixed.allows(p) for p in ("a.3", "bxyz", "c", "a", "d")],
                         [True, True, True, False, False])
        self.assertGreater(checked, 20000)
