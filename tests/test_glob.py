"""Unit vectors for the `:(glob)` pathspec matcher of SPEC §4.3.

majordomus.glob_matcher(pattern) -> callable(path) -> bool; the pattern is given without the
`:(glob)` prefix and matches the whole repo-relative path. Every vector below is also checked
against git itself (`git ls-files ':(glob)PATTERN'`), the semantics the spec names.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import types
import unittest
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402  (puts the checkout root on sys.path)
import majordomus  # noqa: E402

# (pattern, [(path, expected)]); within one pattern no path is a leading directory of another,
# so one scratch repository per pattern can hold them all for the git cross-check.
GLOB_VECTORS = [
    # (pattern, [(path, expected)])
    ("*.md", [("README.md", True), ("a.b.md", True), (".hidden.md", True), (".md", True),
              ("docs/README.md", False), (".ai/README.md", False), ("README.mdx", False),
              ("READMExmd", False), ("README.MD", False), ("README", False)]),
    ("docs/*.md", [("docs/a.md", True), ("docs/.md", True), ("docs/sub/a.md", False),
                   ("xdocs/a.md", False), ("docs.md", False), ("a/docs/a.md", False)]),
    (".ai/repo/profiles/*.yaml", [(".ai/repo/profiles/implementation.yaml", True),
                                  (".ai/repo/profiles/x/y.yaml", False),
                                  (".ai/repo/profiles/implementation.yml", False),
                                  ("xai/repo/profiles/a.yaml", False),
                                  (".ai/repo/profilesXa.yaml", False)]),
    (".ai/repo/policy.yaml", [(".ai/repo/policy.yaml", True), (".ai/repo/policyxyaml", False),
                              (".ai/repo/policy.yaml.bak", False), ("x/.ai/repo/policy.yaml", False),
                              ("_ai/repo/policy.yaml", False)]),
    ("a?.md", [("ab.md", True), ("a..md", True), ("a.md", False), ("abc.md", False), ("a/.md", False)]),
    ("a?b", [("a.b", True), ("a-b", True), ("ab", False), ("a/b", False)]),
    ("a*b", [("ab", True), ("axxb", True), ("a.b", True), ("a/b", False), ("ax/yb", False)]),
    ("*.*", [("a.b", True), ("a/b.c", False), ("ab", False)]),
    ("[ab].md", [("a.md", True), ("b.md", True), ("c.md", False), ("ab.md", False), (".md", False)]),
    ("x[a-c]y", [("xay", True), ("xby", True), ("xcy", True), ("xdy", False), ("xAy", False), ("xy", False)]),
    ("x[0-9][0-9].md", [("x42.md", True), ("x4a.md", False), ("x4.md", False)]),
    ("x[!a]y", [("xby", True), ("x.y", True), ("xay", False), ("x/y", False), ("xy", False)]),
    ("x[^a]y", [("xby", True), ("xay", False), ("x/y", False)]),
    ("x[!a-c]y", [("xdy", True), ("xby", False)]),
    # classes as git reads them: never '/', even through a range that spans it; ']' first is
    # literal (also after '!'); POSIX classes; a backslash escapes the next character
    ("a[--0]b", [("a/b", False), ("a.b", True), ("a-b", True), ("a0b", True), ("a1b", False)]),
    ("a[.-0]b", [("a/b", False), ("a.b", True)]),
    ("[]a]x", [("]x", True), ("ax", True), ("bx", False)]),
    ("[!]a]x", [("bx", True), ("]x", False), ("ax", False)]),
    ("x[[:digit:]]y", [("x5y", True), ("xay", False)]),
    ("x[[:alpha:]]y", [("xby", True), ("x5y", False)]),
    ("x[a-]y", [("x-y", True), ("xay", True), ("xby", False)]),
    ("a\\*b", [("a*b", True), ("axb", False)]),
    (".ai/repo/rules/**/*.md", [(".ai/repo/rules/README.md", True),
                                (".ai/repo/rules/vendor/majordomus/rules/x.v1.md", True),
                                (".ai/repo/rules/project/a.md", True),
                                (".ai/repo/rules/a.txt", False),
                                (".ai/repo/rules/vendor/a.txt", False),
                                (".ai/repo/rulesx/a.md", False),
                                (".ai/repo/rulesREADME.md", False),
                                (".ai/repo/README.md", False),
                                ("x/.ai/repo/rules/a.md", False)]),
    ("**/x.md", [("x.md", True), ("a/x.md", True), ("a/b/c/x.md", True), ("ax.md", False),
                 ("a/bx.md", False), ("x.mdx", False)]),
    ("docs/**", [("docs/x", True), ("docs/a/b/c.md", True), ("docsx/a", False), ("x/docs/a", False)]),
    ("a/**/b", [("a/b", True), ("a/x/b", True), ("a/x/y/b", True), ("a/xb", False), ("ab", False),
                ("x/a/b", False), ("a/bb", False)]),
    ("**", [("a", True), ("b/c/d", True), (".x", True), ("e/.f", True)]),
    ("x**.md", [("xa.md", True), ("x.md", True), ("xa/b.md", False)]),
    ("a+b.md", [("a+b.md", True), ("aab.md", False), ("ab.md", False), ("aaab.md", False)]),
    ("(x).md", [("(x).md", True), ("x.md", False), ("x)md", False)]),
    ("a{1,2}.md", [("a{1,2}.md", True), ("a.md", False), ("aa.md", False)]),
    ("a|b", [("a|b", True), ("a", False), ("b", False)]),
    ("^a$", [("^a$", True), ("a", False)]),
    ("x.y", [("x.y", True), ("xzy", False)]),
    ("a b/*.md", [("a b/c.md", True), ("a b/c/d.md", False)]),
]


# the skeleton's sources (SPEC §4.2 fixture) and what each class discovers (SPEC §4.3)
SKELETON_CLASSES = [
    (".ai/repo/policy.yaml", [".ai/repo/policy.yaml"]),
    (".ai/repo/profiles/*.yaml", [".ai/repo/profiles/implementation.yaml"]),
    (".ai/repo/rules/**/*.md", [".ai/repo/rules/README.md",
                                ".ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md"]),
    (".ai/repo/prompts/*.md", [".ai/repo/prompts/continue.md"]),
    (".ai/repo/workflows/*.md", [".ai/repo/workflows/README.md", ".ai/repo/workflows/plan.md",
                                 ".ai/repo/workflows/task-lifecycle.md"]),
    (".ai/repo/project/milestones/*.yaml", []),
    (".ai/repo/project/issues/*.yaml", []),
    ("docs/*.md", []),
    ("*.md", ["README.md"]),
]


def skeleton_files():
    out = []
    for dirpath, dirnames, filenames in os.walk(support.SKELETON):
        for name in filenames:
            out.append(os.path.relpath(os.path.join(dirpath, name), support.SKELETON).replace(os.sep, "/"))
    return sorted(out, key=lambda p: p.encode("utf-8"))


class Checks(object):
    mod = None

    def check_vectors(self):
        for pattern, cases in GLOB_VECTORS:
            match = self.mod.glob_matcher(pattern)
            self.assertTrue(callable(match))
            for path, expected in cases:
                with self.subTest(pattern=pattern, path=path):
                    self.assertIs(bool(match(path)), expected)


class GlobTest(Checks, unittest.TestCase):
    mod = majordomus

    def vectors(self, pattern):
        return dict(GLOB_VECTORS)[pattern]

    def run_pattern(self, pattern):
        match = majordomus.glob_matcher(pattern)
        for path, expected in self.vectors(pattern):
            with self.subTest(pattern=pattern, path=path):
                self.assertIs(bool(match(path)), expected)

    def test_star_stays_within_one_segment(self):
        for p in ("*.md", "docs/*.md", ".ai/repo/profiles/*.yaml", "a*b", "*.*", "a b/*.md"):
            self.run_pattern(p)

    def test_question_mark_is_one_character_of_one_segment(self):
        for p in ("a?.md", "a?b"):
            self.run_pattern(p)

    def test_character_classes(self):
        for p in ("[ab].md", "x[a-c]y", "x[0-9][0-9].md"):
            self.run_pattern(p)

    def test_negated_character_classes(self):
        for p in ("x[!a]y", "x[^a]y", "x[!a-c]y"):
            self.run_pattern(p)

    def test_character_class_edge_cases_follow_git(self):
        for p in ("a[--0]b", "a[.-0]b", "[]a]x", "[!]a]x", "x[[:digit:]]y", "x[[:alpha:]]y",
                  "x[a-]y"):
            self.run_pattern(p)

    def test_backslash_escapes(self):
        self.run_pattern("a\\*b")

    def test_double_star_segment_matches_zero_or_more_segments(self):
        for p in (".ai/repo/rules/**/*.md", "a/**/b"):
            self.run_pattern(p)

    def test_leading_double_star(self):
        self.run_pattern("**/x.md")

    def test_trailing_double_star(self):
        self.run_pattern("docs/**")

    def test_lone_double_star_matches_everything(self):
        self.run_pattern("**")

    def test_double_star_inside_a_segment_is_a_plain_star(self):
        self.run_pattern("x**.md")

    def test_literal_paths_and_dots(self):
        for p in (".ai/repo/policy.yaml", "x.y"):
            self.run_pattern(p)

    def test_regex_metacharacters_are_literal(self):
        for p in ("a+b.md", "(x).md", "a{1,2}.md", "a|b", "^a$"):
            self.run_pattern(p)

    def test_all_vectors(self):
        self.check_vectors()

    def test_by_hand_matches_as_the_regex_does(self):
        """glob_by_hand (str methods, for a few paths) is glob_matcher: every vector, and
        generated patterns and paths around classes, escapes and `**`."""
        for pattern, cases in GLOB_VECTORS:
            match = majordomus.glob_by_hand(pattern)
            for path, expected in cases:
                with self.subTest(pattern=pattern, path=path):
                    self.assertIs(bool(match(path)), expected)
        import random
        rng = random.Random(19)
        pieces = ["a", "b", "*", "?", "**", "ab*", "*b", "a?b", "\\*", "x.md", "*.md", "[ab]",
                  "[!a]*", "[^b]", "[a-c]x", "[[:alpha:]]", "[[:digit:]]*", "[]a]", "[a-]",
                  "[-a]", "[\\]]", "[[:punct:]]", "[", "[a", "[0-9][0-9]-*.md", "[[:cntrl:]]",
                  "*x*", "a*", "[[:space:]]x", "[[:bogus:]]"]
        names = ["a", "b", "ab", "aab", "x.md", "y.md", "a.b", "*", "?", "abab", "a?b", "ba",
                 "1", "12-x.md", "]", "-", "[", "[a", "c", "x", "\u00e9", "a b", "xa", "\x01"]
        checked = 0
        for _ in range(1500):
            pattern = "/".join(rng.choice(pieces) for _ in range(rng.randint(1, 4)))
            regex, hand = majordomus.glob_matcher(pattern), majordomus.glob_by_hand(pattern)
            for _ in range(16):
                path = "/".join(rng.choice(names) for _ in range(rng.randint(1, 4)))
                checked += 1
                if bool(regex(path)) != bool(hand(path)):
                    self.fail("%r on %r: the regex says %s" % (pattern, path, bool(regex(path))))
        self.assertEqual(checked, 24000)

    def test_matcher_is_reusable(self):
        match = majordomus.glob_matcher("*.md")
        self.assertEqual([bool(match(p)) for p in ("a.md", "b/a.md", "c.md", "b/a.md")],
                         [True, False, True, False])

    def test_skeleton_sources_discover_the_expected_files(self):
        files = skeleton_files()
        self.assertIn(".ai/repo/rules/project/.gitkeep", files)
        for pattern, expected in SKELETON_CLASSES:
            with self.subTest(pattern=pattern):
                match = majordomus.glob_matcher(pattern)
                self.assertEqual([f for f in files if match(f)], expected)

    def test_vectors_are_git_glob_semantics(self):
        """Cross-check the table itself against git (the semantics SPEC §4.3 names)."""
        env = support.base_env()
        for pattern, cases in GLOB_VECTORS:
            d = tempfile.mkdtemp(prefix="mj-glob-")
            self.addCleanup(shutil.rmtree, d, True)
            for path, _ in cases:
                support.write(d, path, "")
            subprocess.run(["git", "init", "-q", d], check=True, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            support.git(d, "add", "-A")
            out = support.git(d, "ls-files", "-z", "--", ":(glob)" + pattern)
            listed = set(p for p in out.split("\0") if p)
            for path, expected in cases:
                with self.subTest(pattern=pattern, path=path):
                    self.assertIs(path in listed, expected)


def load_pyz_module():
    with zipfile.ZipFile(support.PYZ) as z:
        source = z.read("majordomus.py")
    name = "majordomus_from_pyz_glob"
    mod = types.ModuleType(name)
    mod.__file__ = os.path.join(support.PYZ, "majordomus.py")
    sys.modules[name] = mod
    exec(compile(source, mod.__file__, "exec"), mod.__dict__)
    return mod


class PyzCopyTest(Checks, unittest.TestCase):
    """The same vectors against the majordomus.py inside majordomus.pyz (build it first)."""

    @classmethod
    def setUpClass(cls):
        cls.mod = load_pyz_module()

    def test_all_vectors(self):
        self.check_vectors()


if __name__ == "__main__":
    unittest.main()
