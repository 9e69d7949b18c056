"""Lean start-up (SPEC §23): what a small session does not import, the hand-written
replacements that make it so answering exactly as what they replace (JSON through the json
module's C half; the text tests written without regular expressions), and the shipped data
that the archive carries already read."""
import json
import marshal
import os
import random
import re
import shutil
import subprocess
import tempfile
import unittest
import zipfile

from tests import support

import majordomus as mj



def values(rng, depth=0):
    """A random JSON value of the kinds the program writes."""
    pick = rng.random()
    if depth > 3 or pick < 0.45:
        return rng.choice([0, -1, 7, 2 ** 53, 1.5, -0.25, 1e100, True, False, None, "",
                           "plain", "é ünï", "quote \" back \\ slash", "\u2028\u2029",
                           "tab\tnew\nline", "\x00\x1f", "emoji \U0001f600", "\ud800"])
    if pick < 0.75:
        return [values(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(["a", "b", "key", "é", "z", "0"]) + str(n): values(rng, depth + 1)
            for n in range(rng.randint(0, 4))}


class JsonTest(unittest.TestCase):
    def test_encoders_write_what_json_writes(self):
        rng = random.Random(31)
        for n in range(3000):
            value = values(rng)
            with self.subTest(n=n):
                self.assertEqual(mj.json_compact(value),
                                 json.dumps(value, ensure_ascii=False, separators=(",", ":")))
                self.assertEqual(mj.json_compact(value, ascii_only=True),
                                 json.dumps(value, separators=(",", ":")))
                self.assertEqual(mj.json_compact(value, sort_keys=True),
                                 json.dumps(value, ensure_ascii=False, separators=(",", ":"),
                                            sort_keys=True))
                self.assertEqual(mj.json_default(value), json.dumps(value))
                self.assertEqual(mj.json_pretty(value),
                                 json.dumps(value, indent=2, ensure_ascii=False))

    def test_loads_reads_what_json_reads(self):
        rng = random.Random(37)
        for n in range(2000):
            value = values(rng)
            for text in (json.dumps(value), " \n%s\t " % json.dumps(value, indent=2)):
                with self.subTest(n=n):
                    self.assertEqual(mj.json_loads(text), json.loads(text))

    def test_loads_refuses_as_json_refuses(self):
        for text in ("", "  ", "{", "[1,]", '{"a" 1}', "nul", "1 2", "\ufeff{}", '"\\x"',
                     "[" * 100000, "NaN", "-Infinity", '{"a": NaN}', "01", "{'a': 1}", "\x00"):
            with self.subTest(text=text[:20]):
                try:
                    json.loads(text, parse_constant=mj._ScanContext.parse_constant)
                except (ValueError, RecursionError) as exc:
                    expected = (type(exc), str(exc))
                else:
                    self.fail("json read %r" % text[:20])
                with self.assertRaises((ValueError, RecursionError)) as caught:
                    mj.json_loads(text)
                self.assertEqual((type(caught.exception), str(caught.exception)), expected)


class TextTestsTest(unittest.TestCase):
    """The str-method tests equal the regular expressions they replace."""

    CASES = {
        mj.is_integer_text: r"-?[0-9]+\Z",
        mj.has_no_space: r"\S+\Z",
        mj.uri_safe: r"[^\s\x00-\x1f\x7f]+\Z",
        mj.capability_id_ok: r"[a-z][a-z0-9_-]*\.[^\s\x00-\x1f\x7f]+\Z",
        mj.tool_name_ok: r"[a-z0-9_]+\Z",
        mj._object_name: r"(?:[0-9a-f]{40}|[0-9a-f]{64})\Z",
        mj._context_id: r"[a-z][a-z0-9-]*(\.[a-z0-9-]+)*\Z",
    }

    def test_against_the_expressions(self):
        rng = random.Random(41)
        alphabet = list("az09_-.@/ \t\n\x00\x1f\x7f\u00a0\u2028éZ#:") + ["ab", "1", "abc"]
        samples = ["", "a", "-1", "-", "007", "\u0661", "²", "a.b", "rule.x@1", "a" * 40,
                   "0123456789abcdef" * 4, "f" * 40, "F" * 40]
        for _ in range(20000):
            samples.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))))
        for test, pattern in self.CASES.items():
            expression = re.compile(pattern)
            for text in samples:
                with self.subTest(test=test.__name__, text=text):
                    self.assertEqual(bool(test(text)), expression.match(text) is not None)

    def test_key_lines(self):
        expression = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: |\Z)")
        rng = random.Random(43)
        alphabet = list("aZ_-9: .#'\"") + ["key", ": ", "::"]
        for _ in range(20000):
            text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
            match = expression.match(text)
            with self.subTest(text=text):
                self.assertEqual(mj._key_at(text),
                                 None if match is None else (match.group(1), match.end()))

    def test_closing_fence(self):
        expression = re.compile(r"^---\r?$", re.M)
        rng = random.Random(47)
        pieces = ["---", "\n", "\r", "\r\n", "x", "----", " ---", "--- ", "-"]
        for _ in range(20000):
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
            start = rng.randint(0, len(text))
            # the reader asks only from the start of a line
            if start and text[start - 1] != "\n":
                continue
            found = expression.search(text, start)
            with self.subTest(text=text, start=start):
                self.assertEqual(mj._closing_fence(text, start),
                                 None if found is None else (found.start(), found.start() + 3))


class StartImportsTest(unittest.TestCase):
    """A small session imports neither `re` nor `json`: they cost a third of its start.
    (-S: the interpreter's own site packages may import them.)"""

    def imported(self, argv, cwd, stdin=b""):
        proc = subprocess.run([support.PYTHON, "-S", "-X", "importtime"] + argv, cwd=cwd,
                              input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=support.base_env(), timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
        return set(re.findall(r"\|\s+(\S+)\s*$", proc.stderr.decode("utf-8"), re.M))

    def test_a_small_session_imports_neither(self):
        repo = support.make_repo(self)
        # What running any zipapp costs this interpreter (3.9's runpy brings re itself).
        scratch = tempfile.mkdtemp(prefix="mj-lean-")
        self.addCleanup(shutil.rmtree, scratch, True)
        empty = os.path.join(scratch, "empty.pyz")
        with zipfile.ZipFile(empty, "w") as archive:
            archive.writestr("__main__.py", "")
        baseline = self.imported([empty], repo)
        for args in (["mcp", "--inspect"], ["mcp"]):
            with self.subTest(args=args):
                imported = self.imported(
                    [support.PYZ] + args, repo,
                    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n')
                self.assertNotIn("json", imported)
                self.assertEqual(sorted({"re", "json"} & (imported - baseline)), [])
                if args == ["mcp"]:
                    self.assertIn("_json", imported)     # the answer went through it


class ShippedReadTest(unittest.TestCase):
    """share/shipped.marshal: the archive carries schema/kinds.yaml and share/allow/ already
    read; a start from the archive uses it, and one without it (or with it broken) reads
    the files and answers the same."""

    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.mkdtemp(prefix="mj-shipped-")
        cls.addClassCleanup(shutil.rmtree, cls.scratch, True)
        with zipfile.ZipFile(support.PYZ) as archive:
            cls.entries = [(info, archive.read(info)) for info in archive.infolist()]

    def archive(self, name, read):
        """The built archive with its shipped.marshal replaced by `read` (None: left out)."""
        path = os.path.join(self.scratch, name + ".pyz")
        with zipfile.ZipFile(path, "w") as archive:
            for info, data in self.entries:
                if info.filename == mj.SHIPPED_READ:
                    if read is None:
                        continue
                    data = read
                archive.writestr(info, data)
        return path

    def inspect(self, pyz, repo):
        proc = subprocess.run([support.PYTHON, pyz, "mcp", "--inspect", "--format", "json"],
                              cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=support.base_env(), timeout=60)
        return proc.returncode, proc.stdout, proc.stderr

    def test_it_is_what_the_files_read(self):
        data = [d for info, d in self.entries if info.filename == mj.SHIPPED_READ]
        self.assertEqual(len(data), 1, [info.filename for info, _ in self.entries])
        read = marshal.loads(data[0])
        self.assertEqual(read, mj.read_shipped())
        self.assertEqual(sorted(read["allow"]), sorted(
            name[:-4] for name in os.listdir(os.path.join(support.ROOT, "share", "allow"))
            if name.endswith(".txt")))
        self.assertEqual(data[0][:1], b"{")   # format 2: no back-reference flag (0x80)

    def test_a_start_reads_it(self):
        repo = support.make_repo(self)
        read = mj.read_shipped()
        patterns, shapes, rest = read["allow"]["rule"]
        self.assertIn("title", shapes)
        read["allow"]["rule"] = ([p for p in patterns if p != "^title$"],
                                 [s for s in shapes if s != "title"], rest)
        code, out, err = self.inspect(self.archive("edited", marshal.dumps(read, 2)), repo)
        self.assertEqual(code, 10, err)       # the index is degraded: §8
        self.assertIn(b"key(s) not in share/allow/rule.txt: title", out[:4000])
        code, out, err = self.inspect(support.PYZ, repo)
        self.assertEqual(code, 0, err)
        self.assertNotIn(b"unknown_key", out)

    def test_without_it_the_same_answers(self):
        self.same_answers(support.make_repo(self))

    def test_without_it_the_same_answers_real_latest(self):
        self.same_answers(support.real_latest_repo(self))

    def same_answers(self, repo):
        expected = self.inspect(support.PYZ, repo)
        self.assertIn(b'"objects"', expected[1])
        for name, read in (("absent", None), ("broken", b"\x00not marshal"),
                           ("truncated", marshal.dumps(mj.read_shipped(), 2)[:100]),
                           ("a list", marshal.dumps([1, 2], 2))):
            with self.subTest(name=name):
                self.assertEqual(self.inspect(self.archive(name, read), repo), expected)


if __name__ == "__main__":
    unittest.main()


class FoldedTest(unittest.TestCase):
    """The archive's pyc (build_zipapp.py's folded()): the top-level functions of the
    sections an `mcp` start does not run are stubs holding their code, which the first call
    makes the function's own; each is the module's function, compiled from its source."""

    @classmethod
    def setUpClass(cls):
        import importlib.util
        support.require_archive()
        with zipfile.ZipFile(support.PYZ) as archive:
            data = archive.read("majordomus.pyc")
        if data[:4] != importlib.util.MAGIC_NUMBER:
            raise unittest.SkipTest("the archive's bytecode is another interpreter's: here "
                                    "the module is compiled from its source, unfolded")
        cls.code = marshal.loads(data[16:])
        with open(os.path.join(support.ROOT, "majordomus.py"), "rb") as handle:
            cls.source = compile(handle.read(), "majordomus.py", "exec", dont_inherit=True)

    def functions(self, code):
        return {(c.co_name, c.co_firstlineno): c for c in code.co_consts
                if hasattr(c, "co_code")}

    def test_each_stub_holds_its_function_s_code(self):
        built, source = self.functions(self.code), self.functions(self.source)
        self.assertEqual(sorted(built), sorted(source))
        stubs = {key: c for key, c in built.items() if "__code__" in c.co_names}
        self.assertGreater(len(stubs), 100)
        for key, stub in stubs.items():
            with self.subTest(function=key[0]):
                inner = [marshal.loads(c) for c in stub.co_consts if isinstance(c, bytes)]
                self.assertEqual(len(inner), 1)
                real = source[key]
                self.assertEqual((inner[0].co_code, inner[0].co_names, inner[0].co_consts,
                                  inner[0].co_varnames),
                                 (real.co_code, real.co_names, real.co_consts,
                                  real.co_varnames))
        for key, code in built.items():
            if key not in stubs:
                self.assertEqual(code.co_code, source[key].co_code, key)
        # what an `mcp` start and the hook's door run stay whole
        for name in ("parse_subset", "build_index", "read_generation", "run_mcp",
                     "hook_door", "hook_output", "answer_guarded"):
            self.assertIn(name, {key[0] for key in built})
            self.assertNotIn(name, {key[0] for key in stubs})
        for name in ("brief", "search_terms", "context_affected", "context_affected_text"):
            self.assertIn(name, {key[0] for key in stubs})

    def test_a_folded_function_answers_and_is_whole_after(self):
        """The archive imported as a module, in a child: a folded function's first call
        answers as the function does, and leaves the function holding its own code."""
        probe = (
            "import sys\n"
            "sys.path.insert(0, sys.argv[1])\n"
            "import majordomus as module\n"       # zipimport, which reads the pyc too
            "f = module.search_terms\n"
            "before = '__code__' in f.__code__.co_names\n"
            "print(before, f('Rules ruled, RULING!'), '__code__' in f.__code__.co_names)\n")
        p = subprocess.run([support.PYTHON, "-c", probe, support.PYZ], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.decode().split(), ["True", "['rul',", "'rul',", "'rul']",
                                                      "False"])


class EntryMembersTest(unittest.TestCase):
    """The archive's two small entry members come compiled too (__main__.pyc,
    majordomus_hook.pyc: a process's first compile() costs about 1 ms): each holds exactly
    its source's code under a hash-based header; where the interpreter's magic number is
    another, zipimport and runpy compile the source, and the archive answers the same."""

    @classmethod
    def setUpClass(cls):
        support.require_archive()
        with zipfile.ZipFile(support.PYZ) as archive:
            cls.entries = [(info, archive.read(info)) for info in archive.infolist()]
        cls.members = {info.filename: data for info, data in cls.entries}

    def test_each_holds_its_source_s_code(self):
        import importlib.util
        for name in ("__main__", "majordomus_hook"):
            with self.subTest(member=name):
                source, data = self.members[name + ".py"], self.members[name + ".pyc"]
                self.assertEqual(data[4:8], (1).to_bytes(4, "little"))   # hash-based, unchecked
                self.assertEqual(data[8:16], importlib.util.source_hash(source))
                if data[:4] != importlib.util.MAGIC_NUMBER:
                    continue                     # another interpreter's: compiled from source
                self.assertEqual(marshal.loads(data[16:]),
                                 compile(source, name + ".py", "exec", dont_inherit=True))

    def test_another_magic_number_falls_back_to_the_source(self):
        scratch = tempfile.mkdtemp(prefix="mj-entry-")
        self.addCleanup(shutil.rmtree, scratch, True)
        foreign = os.path.join(scratch, "foreign.pyz")
        with zipfile.ZipFile(foreign, "w") as archive:
            for info, data in self.entries:
                if info.filename in ("__main__.pyc", "majordomus_hook.pyc"):
                    data = b"\x00\x00\r\n" + data[4:]     # a magic number no CPython has
                archive.writestr(info, data)
        repo = support.make_repo(self)
        path = os.path.join(repo, ".ai", "repo", "rules", "project", "new-rule.v1.md")
        event = json.dumps({"session_id": None, "cwd": repo, "hook_event_name": "PreToolUse",
                            "tool_name": "Write", "tool_input": {"file_path": path}}
                           ).encode("utf-8")       # (no session: each run says it all)
        answers = []
        for pyz in (support.PYZ, foreign):
            version = subprocess.run([support.PYTHON, pyz, "--version"], cwd=repo,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=support.base_env(), timeout=60)
            hook = subprocess.run([support.PYTHON, "-S", "-c", mj.HOOK_IMPORT, pyz, "hook",
                                   "--client", "claude-code"], cwd=repo, input=event,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=support.base_env(), timeout=60)
            self.assertEqual((version.returncode, hook.returncode, hook.stderr), (0, 0, b""))
            answers.append((version.stdout, json.loads(hook.stdout.decode("utf-8"))))
        self.assertEqual(answers[0], answers[1])
        self.assertIn(b"majordomus", answers[0][0])
        self.assertEqual(answers[0][1]["hookSpecificOutput"]["hookEventName"], "PreToolUse")
