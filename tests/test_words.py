"""The words of a text found without `re` (SPEC §21, §29, §30): each finder of the module
against the regular expression it stands for, on random texts of the characters where the
two could part (ASCII punctuation, white space past ASCII, letters and digits past ASCII,
casefold's lengthening letters, a digit that is no decimal, a lone surrogate), on each
code point, and on the real layer's texts (skipped by name without it)."""
import os
import random
import re
import sys
import unittest

from tests import support

import majordomus as mj

WORD = r"[^\W_]+"
IDENTIFIER = r"[^\W_]+(?:[_.\-][^\W_]+)+"
NAME = r"(?<![\w.@/-])([A-Za-z0-9_][\w-]*(?:\.[\w-]+)+|[A-Za-z0-9_][\w.-]*(?=@\d))"
LINK = r"\]\(\s*<?([^)\s>]+)|majordomus://[^\s)`'\"<>\]]+|[^\s`'\"()\[\]<>*,;|]+"

# Every character the patterns above treat apart, and a few of each class past ASCII.
ALPHABET = (list("aZ09_.-@/\\]()[<>*,;|`'\" \t\n\r\x0b\x0c\x1c:#x")
            + ["majordomus://", "](", "](<", "](  ", "@1", "a.b", "v2"]
            + ["\xa0", "\u2003", "\u3000", "\u2028", "\x85",   # white space past ASCII
               "\xe9", "\u0130", "\xdf", "\ufb01", "\u0663",   # letters, a decimal digit
               "\xb2", "\u2014", "\u2019", "\u2192", "\U0001F600", "\ud800",
               "\u0345", "\u03a3", "\u03c3", "\u1e9e", "\u0149"])   # fold to letters


def texts(seed, count, longest=40):
    rng = random.Random(seed)
    for _ in range(count):
        yield "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(longest)))


def layer_texts():
    root = support.reference("fixtures", "real-latest")
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".md", ".yaml", ".yml", ".txt")):
                with open(os.path.join(folder, name), encoding="utf-8",
                          errors="replace") as f:
                    yield f.read()


def links_by_re(text):
    return [m.group(1) or m.group() for m in re.finditer(LINK, text)]


FINDERS = (
    ("words_of", mj.words_of, lambda t: re.findall(WORD, t)),
    ("collapsed", mj.collapsed, lambda t: re.sub(r"[\W_]+", " ", t)),
    ("_normalised", mj._normalised, lambda t: re.sub(r"[\W_]+", " ", t.casefold())
     if not t.isascii() else t.lower().translate({c: " " for c in range(128)
                                                  if not chr(c).isalnum()})),
    ("_identifiers", mj._identifiers, lambda t: re.findall(IDENTIFIER, t)),
    ("_dotted_names", mj._dotted_names, lambda t: re.findall(NAME, t)),
    ("_link_words", mj._link_words, links_by_re),
)


class FinderTest(unittest.TestCase):
    def check(self, samples):
        checked = 0
        for text in samples:
            for name, ours, theirs in FINDERS:
                self.assertEqual(ours(text), theirs(text), "%s(%r)" % (name, text))
            checked += 1
        return checked

    def test_random_texts(self):
        self.assertEqual(self.check(texts(1, 6000)), 6000)

    def test_long_random_texts(self):
        self.assertEqual(self.check(texts(2, 300, longest=400)), 300)

    def test_each_code_point_alone_and_between_words(self):
        step = 1 if os.environ.get("MAJORDOMUS_TEST_EVERY_CODE_POINT") else 17
        samples = []
        for code in range(0, sys.maxunicode + 1, step):
            char = chr(code)
            samples.append("a%sb.c@1 ](%s) majordomus://x%s]" % (char, char, char))
        self.assertEqual(self.check(samples), len(samples))

    def test_cases_written_out(self):
        # what each finder is for, spelt out (a failure here names the rule that broke)
        self.assertEqual(mj._dotted_names("see rule.a-b.c, x/y.z, @a.b, v.1@2 and a..b@3"),
                         ["rule.a-b.c", "v.1", "a..b"])
        self.assertEqual(mj._dotted_names("run.sh@1 é.x x.é"), ["run.sh", "x.é"])
        self.assertEqual(mj._link_words("[a](<b c>) ](<) majordomus://r/x]( y) w*v"),
                         ["a", "b", "c", "<", "majordomus://r/x", "y", "w", "v"])
        self.assertEqual(mj._identifiers("a.b..c-d_e x_ _y -"), ["a.b", "c-d_e"])
        self.assertEqual(mj.collapsed("\u2014a\u2014b\u2014"), " a b ")
        self.assertEqual(mj.collapsed("\u2014"), " ")
        self.assertEqual(mj.words_of("\u0130x \ud800 y\xb2"), ["\u0130x", "y\xb2"])

    def test_the_real_layer(self):
        missing = support.reference_missing("fixtures", "real-latest")
        if missing:
            self.skipTest(missing)
        self.assertGreater(self.check(layer_texts()), 100)


# The search text's scans (§21): words of a few letters that share their beginnings, and
# runs of spaces, so that needles meet, overlap and end at the text's end.
SEARCH_WORDS = ["a", "ab", "abc", "abd", "b", "ba", "bab", "c", "cab", "\xe9t\xe9", "\xe9"]


def search_texts(seed, count, longest=30):
    rng = random.Random(seed)
    for _ in range(count):
        parts = []
        for _ in range(rng.randrange(longest)):
            parts.append(rng.choice(SEARCH_WORDS))
            parts.append(rng.choice([" ", " ", " ", "  ", "\n", " \n "]))
        text = "".join(parts)
        yield text if rng.random() < 0.5 else text.rstrip()


def scan_by_re(text, exact, prefixes):
    """The scan as one regex did it before (TermIndex._scan)."""
    parts = []
    if exact:
        parts.append(" (?:%s)(?= )" % "|".join(map(re.escape, exact)))
    if prefixes:
        parts.append(" (?:%s)[^ ]*" % "|".join(map(re.escape, prefixes)))
    at = {}
    for match in re.finditer("|".join(parts), text):
        at.setdefault(match.group()[1:], []).append(match.start())
    return at


class SearchScanTest(unittest.TestCase):
    """The scans of the search text that a prompt's ranking runs, each against the
    regular expression it replaced: a needle and the word it begins, the common terms'
    scan, and a pair of neighbouring words."""

    def test_word_spans(self):
        rng = random.Random(3)
        for text in search_texts(4, 3000):
            needle = " " + rng.choice(SEARCH_WORDS + [""])
            start = rng.randrange(len(text) + 1)
            end = rng.randrange(start, len(text) + 1)
            ours = [text[i:e] for i, e in mj._word_spans(text, needle, start, end)]
            theirs = re.compile(re.escape(needle) + "[^ ]*").findall(text, start, end)
            self.assertEqual(ours, theirs, (text, needle, start, end))

    def test_scan(self):
        rng = random.Random(5)
        holder = type("Holder", (), {})()
        for text in search_texts(6, 3000):
            # (two terms may share a prefix: `policy` and `polic`)
            exact = rng.choices(SEARCH_WORDS, k=rng.randrange(3))
            prefixes = rng.choices(SEARCH_WORDS, k=rng.randrange(0 if exact else 1, 3))
            holder.text = text
            at = {}
            mj.TermIndex._scan(holder, at, exact, prefixes)
            theirs = scan_by_re(text, exact, prefixes)
            self.assertEqual(at, theirs, (text, exact, prefixes))

    def test_paired(self):
        rng = random.Random(7)
        seen = set()
        for text in search_texts(8, 4000):
            # (a query's "y" is a term whose prefix is empty)
            a, b = rng.choice(SEARCH_WORDS + [""]), rng.choice(SEARCH_WORDS + [""])
            start = rng.randrange(len(text) + 1)
            end = rng.randrange(start, len(text) + 1)
            ours = mj._paired(text, " " + a, b, start, end)
            theirs = re.compile(" %s[^ ]* +%s" % (re.escape(a), re.escape(b))).search(
                text, start, end) is not None
            self.assertEqual(ours, theirs, (text, a, b, start, end))
            seen.add(ours)
        self.assertEqual(seen, {True, False})      # both answers were asked for

    def test_cases_written_out(self):
        spans = list(mj._word_spans(" ab abc  ab", " ab", 0, 11))
        self.assertEqual(spans, [(0, 3), (3, 7), (8, 11)])
        self.assertEqual(list(mj._word_spans(" abc", " ab", 0, 3)), [(0, 3)])
        self.assertTrue(mj._paired(" abc   bd x", " ab", "b", 0, 11))
        self.assertFalse(mj._paired(" abc bd", " ab", "b", 0, 5))      # b past the end
        self.assertFalse(mj._paired(" abc", " ab", "c", 0, 4))         # no space between
        self.assertFalse(mj._paired(" abc", " ab", "", 0, 4))          # nor after
        self.assertTrue(mj._paired(" abc ", " ab", "", 0, 5))


if __name__ == "__main__":
    unittest.main()
