"""The differential test of SPEC §3.7: the shell tool's reader against ours.

The shell tool of the era (`$MAJORDOMUS_REFERENCE/oracle/shell`, rebuilt byte for byte; each
test here is skipped by name where it is absent) reads the layer with `mj_record_front FILE` +
`mj_yaml_flatten FILE` (lib/common.sh). This module
drives that reader and `majordomus.parse_subset` / `split_front_matter` over
  (a) the shell's own vectors (test/cases/00_yaml_flatten.sh),
  (b) every file of the `.ai/` layer that the shell tool's `init` writes in a scratch
      repository (these must agree line for line: no deliberate difference either),
  (c) a seeded corpus of at least 2,000 small documents around the subset's edges, plus
      pinned examples: the rows of §3.7 and places where both readers must agree,
and judges every document (tests/oracle.py): agree, a deliberate difference of §3.7 (named
by its row), or "other", which fails with the minimised input and both outputs.

All shell work happens in temporary directories: a handful of bash processes in all (one
for the whole corpus, a few more for the documents a verdict derives, e.g. the lines
before a refused line). A summary line `oracle: N documents: …` goes to stderr.
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402  (puts the checkout root on sys.path)
import oracle  # noqa: E402

SEED = 20260728
GENERATED = 2000
LAYER_MIN_FILES = 40

# (name, mode, text, expected): "agree", or rows of oracle.ROWS joined by "+".
PINNED = [
    # places where both readers must agree (§3.1-§3.3, including the corrections to them)
    ("a mapping item leaves pend alone", "yaml", "p:\n- k: v\n  - x\n", "agree"),
    ("a stale pend entry keeps its list", "yaml", "l:\n- a:\n    - x\n- b: 1\n  - y\n", "agree"),
    ("[ ] is an empty list", "yaml", "a: [ ]\nb: [  ]\nc: []\n", "agree"),
    ("a bare - cannot parse", "yaml", "l:\n-\n", "agree"),
    ("a bare - at +2 cannot parse", "yaml", "l:\n  -\n  - x\n", "agree"),
    ("'- ' is the empty string", "yaml", "l:\n- \n-   \n", "agree"),
    ("' ---' is odd indentation", "yaml", " ---\na: 1\n", "agree"),
    ("'  ---' cannot parse", "yaml", "a:\n  ---\n", "agree"),
    ("--- at column 0 is skipped", "yaml", "a: 1\n---\nb: 2\n---   \nc: 3\n", "agree"),
    ("the §3.2 example", "yaml",
     "enforcement:\n  - name: first\n    path: bin/x\n    args: [doctor, --strict]\n"
     "    nested:\n      - deep\n  - name: second\n    args: []\n", "agree"),
    ("true is printed alike", "yaml", "a: true\nb: false\nc: yes\n", "agree"),
    ("64-bit edges", "yaml", "a: 9223372036854775807\nb: 9223372036854775808\n"
     "c: -9223372036854775808\nd: -9223372036854775809\n", "agree"),
    ("the split is at the first colon", "yaml", "title: bench: targets\n", "agree"),
    ("a trailing comment defeats an inline list", "yaml", "tags: [a, b]  # note\n", "agree"),
    ("quote detection before comments", "yaml", "a: \"a\" # c\nb: x # c\nc: a#b\n", "agree"),
    ("a vanished key", "yaml", "a:\nb:\n  c:\nd: 1\n", "agree"),
    ("- - a is the scalar '- a'", "yaml", "l:\n- - a\n- -\n", "agree"),
    ("no tab anywhere", "yaml", "a: 1\n  \t\n", "agree"),
    ("front matter", "fm", "---\nid: x\ntags: [a]\n---\n# body\n---\n", "agree"),
    ("empty front matter", "fm", "---\n---\nbody\n", "agree"),
    ("no front matter", "fm", "# Title\n---\na: 1\n---\n", "agree"),
    ("an empty file", "fm", "", "agree"),
    # the rows of §3.7
    ("a key given twice", "yaml", "a: 1\na: 2\n", "twice"),
    ("a parent key reopened", "yaml", "a:\n  b: 1\na:\n  c: 2\n", "twice"),
    ("a list and a mapping under one key", "yaml", "a:\n  b: 1\n- x\n", "mixes"),
    ("& leads a value", "yaml", "a: &x\n", "construct"),
    ("* leads a value", "yaml", "a: *x\n", "construct"),
    ("| leads a value", "yaml", "a: |\n", "construct"),
    ("> leads a list item", "yaml", "l:\n- >\n", "construct"),
    ("- a: with no child", "yaml", "l:\n- a:\n- b\n", "empty-item"),
    ("'' inside single quotes", "yaml", "a: 'it''s'\n", "quotes"),
    ("007 is typed", "yaml", "a: 007\n", "typing"),
    ("-0 is typed", "yaml", "a: -0\n", "typing"),
    ("# inside an inline list element", "yaml", "a: [a #c, d]\n", "hash-in-list"),
    ("blanks after a closing quote", "yaml", "a: \"x\"   \n", "blanks-after"),
    ("blanks after a closing bracket", "yaml", "a: [a, b]   \n", "blanks-after"),
    ("front matter opened with ---\\r\\n", "fm", "---\r\na: 1\r\n---\r\n", "crlf-front"),
    ("an empty item, then a key: the mix the shell cannot see", "yaml",
     "id:\n  - b:\n  c: docs/\n", "empty-item+mixes"),
    ("a key, then an item that vanishes: a mix", "yaml", "a:\n  b: 1\n- a:\n", "mixes"),
    ("a reopened parent whose first opening vanished", "yaml", "a:\na: 1\n", "twice"),
    # shell differences that §3.7 does not list (the classifier must still name them)
    ("CRLF lines", "yaml", "a: b\r\n", "crlf-lines"),
    ("front matter never closed", "fm", "---\na: 1\n", "unclosed-front"),
    ("a ---\\r closing fence", "fm", "---\na: 1\n---\r\nb: 2\n", "crlf-fence"),
    ("front matter over 64 KiB", "fm", "---\nk: " + "x" * 65540 + "\n---\n", "front-limit"),
]


# (name, text, a planted outcome of ours): a reader bug the judge must not excuse by a row.
PLANTED = [
    ("a quoted '007' typed", "a: '007'\n", ("ok", ["a=7"], "")),
    ("'' collapsed inside double quotes", "a: \"it''s\"\n", ("ok", ["a=it's"], "")),
    ("a list item's comment kept", "l:\n- x #c\n", ("ok", ["l.0=x #c"], "")),
    ("an empty mapping out of nothing", "l:\n- a: 1\n", ("ok", ["l.0.a=1", "l.1 {}"], "")),
    ("two items' keys taken as one", "l:\n- a: 1\n- a: 2\n",
     ("refused", [], "'l.1.a' is given twice, on line 3")),
    ("a mix that is none", "a:\n  b: 1\nc:\n  d: 2\n",
     ("refused", [], "'c.d' mixes a mapping with a scalar or list, on line 4")),
    ("a construct that is none", "a: x\nb: &y\n",
     ("refused", [], "unsupported YAML construct on line 1: x")),
    ("a good line refused", "a: 1\nb: c\nd: &y\n", ("refused", [], "cannot parse line 2: b: c")),
    ("a tab missed", "a: 1\nb:\t2\n", ("ok", ["a=1", "b=\t2"], "")),
    ("a lost item", "l:\n- x\n- y\n", ("ok", ["l.0=x"], "")),
    ("an earlier refusal that is none", "a: 1\nb: 2\n\tc\n",
     ("refused", [], "odd indentation on line 2")),
]


def shell_vectors(case, where):
    """The documents 00_yaml_flatten.sh writes (its heredocs and printf lines), written by
    bash itself into `where` -> [("yaml", text)] in file-name order."""
    with open(case) as handle:
        lines = handle.read().split("\n")
    script, i = ["set -e", "cd \"$1\""], 0
    while i < len(lines):
        line = lines[i]
        here = re.match(r"cat > ([\w.-]+\.yaml) <<'?(\w+)'?\Z", line)
        if here:
            end = lines.index(here.group(2), i + 1)
            script.extend(lines[i:end + 1])
            i = end + 1
            continue
        if re.match(r"printf .* > [\w.-]+\.yaml\Z", line):
            script.append(line)
        i += 1
    proc = subprocess.run(["bash", "-c", "\n".join(script) + "\n", "vectors", where],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise AssertionError("writing the vectors of %s failed: %s" % (case, proc.stdout))
    docs = []
    for name in sorted(os.listdir(where)):
        with open(os.path.join(where, name), "rb") as handle:
            docs.append(("yaml", handle.read().decode("utf-8")))
    return docs


def init_layer(shell_dir, where):
    """Every file of the .ai/ layer `majordomus init` of the shell tool writes in a fresh
    repository with one commit -> [(relative path, mode, text)]."""
    repo = os.path.join(where, "repo")
    os.makedirs(repo)
    support.git(repo, "init", "-q", "-b", "main")
    support.git(repo, "commit", "-q", "--allow-empty", "--no-gpg-sign", "-m", "init")
    proc = subprocess.run(["bash", os.path.join(shell_dir, "bin", "majordomus"), "init"],
                          cwd=repo, env=support.base_env({"TMPDIR": where}),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=120)
    if proc.returncode != 0:
        raise AssertionError("the shell tool's init failed (exit %d): %s"
                             % (proc.returncode, proc.stdout.decode("utf-8", "replace")))
    files = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(repo, ".ai")):
        dirnames.sort()
        for name in sorted(filenames):
            mode = "fm" if name.endswith(".md") else "yaml" if name.endswith(
                (".yaml", ".yml")) else None
            if mode:
                path = os.path.join(dirpath, name)
                with open(path, "rb") as handle:
                    files.append((os.path.relpath(path, repo), mode,
                                  handle.read().decode("utf-8")))
    return files


class OracleTest(unittest.TestCase):
    """One judge, one batch: every document of (a), (b), (c) is judged in setUpClass."""

    missing = broken = None

    @classmethod
    def setUpClass(cls):
        # Without the reference data each test is skipped by name (setUp), not failed.
        cls.missing = support.reference_missing("oracle", "shell", "lib", "common.sh")
        if cls.missing:
            return
        cls.scratch = tempfile.mkdtemp(prefix="mj-oracle-")
        cls.addClassCleanup(shutil.rmtree, cls.scratch, True)
        try:
            cls.oracle = oracle.Oracle(scratch=os.path.join(cls.scratch, "batches"))
        except oracle.OracleMissing as err:
            cls.broken = str(err)
            return
        os.makedirs(cls.oracle.scratch)
        vectors_dir = os.path.join(cls.scratch, "vectors")
        os.makedirs(vectors_dir)
        cls.vectors = shell_vectors(os.path.join(oracle.ORACLE, "test", "cases",
                                                 "00_yaml_flatten.sh"), vectors_dir)
        cls.layer = init_layer(oracle.ORACLE, os.path.join(cls.scratch, "init"))
        cls.generated = oracle.corpus(SEED, GENERATED)
        cls.pinned = [(mode, text) for _, mode, text, _ in PINNED]
        cls.planted = [("yaml", text) for _, text, _ in PLANTED]
        cls.sources = collections.OrderedDict([
            ("vectors", cls.vectors), ("layer", [(m, t) for _, m, t in cls.layer]),
            ("pinned", cls.pinned + cls.planted), ("generated", cls.generated)])
        everything = [doc for docs in cls.sources.values() for doc in docs]
        cls.judge = oracle.Judge(cls.oracle)
        verdicts = iter(cls.judge.settle(everything))
        cls.verdicts = collections.OrderedDict(
            (name, [next(verdicts) for _ in docs]) for name, docs in cls.sources.items())

    @classmethod
    def tearDownClass(cls):
        if not (cls.missing or cls.broken):
            sys.stderr.write("\n" + cls.summary() + "\n")

    @classmethod
    def summary(cls):
        verdicts = [v for vs in cls.verdicts.values() for v in vs]
        kinds = collections.Counter(v.kind for v in verdicts)
        rows = collections.Counter(r for v in verdicts if v.kind == "deliberate" for r in v.rows)
        other = collections.Counter(v.why for v in verdicts if v.kind == "other")
        unordered = sum(1 for v in verdicts if v.kind == "agree" and not v.ordered)
        return ("oracle: %d documents (%s) in %d bash batches: %d agree%s, %d deliberate (%s), "
                "%d other%s" % (
                    len(verdicts), ", ".join("%s %d" % (n, len(d)) for n, d in
                                               cls.sources.items()),
                    cls.oracle.batches, kinds["agree"],
                    " (%d in another order)" % unordered if unordered else "",
                    kinds["deliberate"],
                    ", ".join("%s: %d" % (r, rows[r]) for r in oracle.ROWS if rows[r]),
                    kinds["other"], " (%s)" % ", ".join("%s: %d" % kv for kv in
                                                        other.most_common()) if other else ""))

    def setUp(self):
        if self.missing:
            raise unittest.SkipTest(self.missing)
        if self.broken:
            self.fail(self.broken)

    def assert_no_other(self, source, allow_deliberate=True, labels=None):
        docs, verdicts = self.sources[source], self.verdicts[source]
        groups = collections.OrderedDict()
        for index, (doc, verdict) in enumerate(zip(docs, verdicts)):
            if verdict.kind == "other" or (verdict.kind == "deliberate" and not allow_deliberate):
                groups.setdefault(verdict.why or "deliberate " + ",".join(verdict.rows),
                                  []).append(index)
        if not groups:
            return
        firsts = [groups[why][0] for why in groups][:12]
        small = self.judge.shrink([docs[i] for i in firsts])
        report = []
        for i, (why, indexes) in zip(firsts, list(groups.items())[:12]):
            label = " [%s]" % labels[i] if labels else ""
            report.append(oracle.describe(self.judge, verdicts[i], len(indexes), docs[i],
                                          small[firsts.index(i)]) + label)
        self.fail("%s: %d document(s) the two readers do not agree on%s:\n%s" % (
            source, sum(len(v) for v in groups.values()),
            "" if allow_deliberate else " (the layer allows no deliberate difference either)",
            "\n".join(report)))

    def test_shell_vectors(self):
        """(a) 00_yaml_flatten.sh's own documents."""
        self.assertGreaterEqual(len(self.vectors), 5, "00_yaml_flatten.sh wrote too few files")
        self.assert_no_other("vectors")

    def test_init_layer(self):
        """(b) every file `init` writes: the two readers agree line for line (§3.7)."""
        self.assertGreaterEqual(len(self.layer), LAYER_MIN_FILES,
                                "the shell tool's init wrote only %d files" % len(self.layer))
        self.assert_no_other("layer", allow_deliberate=False, labels=[p for p, _, _ in self.layer])
        accepted = [p for (p, _, _), (m, t) in zip(self.layer, self.sources["layer"])
                    if self.judge.ours(m, t).kind == "ok"]
        self.assertGreaterEqual(len(accepted), LAYER_MIN_FILES - 4,
                                "too few layer files have a mapping to compare")

    def test_pinned_examples(self):
        """Each pinned example gets the verdict it names (the classifier itself is tested)."""
        wrong = []
        for (name, mode, text, expected), verdict in zip(PINNED, self.verdicts["pinned"]):
            if expected == "agree":
                ok = verdict.kind == "agree"
            elif expected.split("+")[0] in oracle.ROWS:
                ok = verdict.kind == "deliberate" and verdict.rows == tuple(
                    sorted(expected.split("+")))
            else:
                ok = verdict.kind == "other" and verdict.why == expected
            if not ok:
                wrong.append("  %s: expected %s, got %r\n    input: %r\n    shell: %s\n"
                             "    ours:  %s" % (name, expected, verdict, text[:200],
                                                self.judge.get(mode, text).show()[:600],
                                                self.judge.ours(mode, text).show()[:600]))
        if wrong:
            self.fail("pinned examples judged otherwise:\n" + "\n".join(wrong))

    def test_planted_bugs_are_other(self):
        """The judge with a planted reader bug: each must come out "other", never a row."""
        judge = oracle.Judge(self.oracle)
        judge.shell = self.judge.shell          # the shell's outcomes are already known
        for (_, text, (kind, lines, message)) in PLANTED:
            judge.mine[("yaml", text)] = oracle.Outcome(kind, lines, message)
        verdicts = judge.settle(self.planted)
        excused = ["  %s: %r -> %r" % (name, text, verdict)
                   for (name, text, _), verdict in zip(PLANTED, verdicts)
                   if verdict.kind != "other"]
        self.assertEqual(excused, [], "planted bugs the judge excused:\n" + "\n".join(excused))

    def test_generated_corpus(self):
        """(c) the seeded corpus: every disagreement is a row of §3.7."""
        self.assertGreaterEqual(len(self.generated), 2000)
        self.assert_no_other("generated")

    def test_corpus_reaches_every_row(self):
        """The generator exercises every row of §3.7, and mostly documents that agree."""
        verdicts = self.verdicts["generated"]
        seen = collections.Counter(r for v in verdicts for r in v.rows)
        # front-limit needs a 64 KiB document: only the pinned example reaches it.
        self.assertEqual([r for r in oracle.ROWS if not seen[r] and r != "front-limit"], [],
                         "rows of §3.7 the generated corpus never reached")
        agree = sum(1 for v in verdicts if v.kind == "agree")
        self.assertGreater(agree, len(verdicts) // 2, "the corpus is mostly edge cases")


if __name__ == "__main__":
    unittest.main()
