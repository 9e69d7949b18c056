"""The module's promise of order: its sections stand in data-flow order, and each uses only
the sections above it. A section starts at a header between two dashed comment lines,
`# N. Title: what it holds`; every top-level definition (def, class, assigned name) belongs
to the section it stands in. A definition that names (anywhere in its body) a top-level name
of a LATER section is a forward reference: the test fails on one, unless FORWARD allows it,
with its reason. FORWARD may only shrink: an entry no longer needed fails too. The table of
sections in the module's docstring is checked against the headers themselves. What a
statement defines and what a definition binds for itself are read as build_zipapp.py reads
them (top_names, bound_inside: the archive's hook door is made of the functions they name)."""
import ast
import os
import re
import unittest

import support
from build_zipapp import bound_inside, top_names as defined_names

MODULE = os.path.join(support.ROOT, "majordomus.py")
DIVIDER = re.compile(r"# -{20,}\Z")
HEADER = re.compile(r"# (\d+)\. ([^:]+): ")
# (definition, the later name it uses) -> why it may; at most FORWARD_MOST entries, ever.
FORWARD = {}
FORWARD_MOST = 5


def sections(lines):
    """[(first line number, number, title)] of the module's section headers, in order."""
    found = []
    for at, line in enumerate(lines[:-1]):
        following = lines[at + 1]
        if DIVIDER.match(line) and following.startswith("# ") and not DIVIDER.match(following):
            header = HEADER.match(following)
            if header is None:
                raise AssertionError("line %d: a section header must read `# N. Title: …`, "
                                     "not %r" % (at + 2, following))
            found.append((at + 1, int(header.group(1)), header.group(2)))
    return found


def forward_references(source):
    """(sections, {(definition, name): (its section, the name's section)})."""
    lines = source.split("\n")
    heads = sections(lines)
    starts = [line for line, _, _ in heads]

    def section_of(line):
        return sum(1 for start in starts if start <= line)   # 0: above the first header

    tree = ast.parse(source)
    owner = {}
    for node in tree.body:
        for name in defined_names(node):
            owner.setdefault(name, section_of(node.lineno))
    found = {}
    for node in tree.body:
        names = defined_names(node)
        if not names:
            continue
        here = section_of(node.lineno)
        skip = bound_inside(node)
        for inner in ast.walk(node):
            if (isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Load)
                    and owner.get(inner.id, 0) > here and inner.id not in names
                    and inner.id not in skip):
                found[(names[0], inner.id)] = (here, owner[inner.id])
    return heads, found


class SectionOrderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(MODULE, encoding="utf-8") as handle:
            cls.source = handle.read()
        cls.heads, cls.forward = forward_references(cls.source)

    def test_sections_are_numbered_in_order(self):
        self.assertEqual([number for _, number, _ in self.heads],
                         list(range(1, len(self.heads) + 1)))

    def test_every_reference_runs_to_an_earlier_section(self):
        unexpected = ["%s (section %d) uses %s of section %d" % (name, here, used, there)
                      for (name, used), (here, there) in sorted(self.forward.items())
                      if (name, used) not in FORWARD]
        self.assertEqual(unexpected, [], "forward references: move the definition up, or "
                         "hand the later one in (a parameter, a callback)")

    def test_the_allowance_only_shrinks(self):
        self.assertLessEqual(len(FORWARD), FORWARD_MOST)
        stale = sorted(key for key in FORWARD if key not in self.forward)
        self.assertEqual(stale, [], "no longer needed: remove from FORWARD")
        for key, reason in FORWARD.items():
            self.assertTrue(reason.strip() and "\n" not in reason, key)

    def test_the_docstring_table_is_the_headers(self):
        docstring = ast.get_docstring(ast.parse(self.source))
        table = re.findall(r"^ *(\d+)\. (.+)$", docstring, re.M)
        self.assertEqual([(int(n), title) for n, title in table],
                         [(number, title) for _, number, title in self.heads])

    def test_the_checker_sees_a_forward_reference(self):
        """The check itself: a definition using a later section's name is found, a
        parameter of the same name is not."""
        source = ('"""doc\n\n   1. One\n   2. Two\n"""\n'
                  "# " + "-" * 30 + "\n# 1. One: first.\n# " + "-" * 30 + "\n"
                  "def early(later):\n    return late() + later\n\n"
                  "# " + "-" * 30 + "\n# 2. Two: second.\n# " + "-" * 30 + "\n"
                  "def late():\n    return 1\n\nlater = 2\n")
        heads, found = forward_references(source)
        self.assertEqual([(n, t) for _, n, t in heads], [(1, "One"), (2, "Two")])
        self.assertEqual(found, {("early", "late"): (1, 2)})


if __name__ == "__main__":
    unittest.main()
