"""At home on Windows and macOS (SPEC §24), proven on this machine: what can run here runs
against the real program in scratch repositories (CRLF data, a checkout cloned with
core.autocrlf=true, symlinks checked out as text, a same-second in-place edit, NFD names,
AppleDouble files, a planted `git`, a closed pipe raising EINVAL); the branches only
Windows takes run in-process with the platform simulated.
"""
import errno
import json
import ntpath
import os
import shutil
import subprocess
import sys
import time
import unittest
import unicodedata
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402  (puts the checkout root on sys.path)
import majordomus as mj  # noqa: E402

SOURCES = ".ai/repo/knowledge/sources.yaml"
KINDS_FILE = ".ai/repo/knowledge/kinds.yaml"
ALLOW_DIR = ".ai/repo/knowledge/allow"
# The data files a build embeds, which a Windows checkout may give CRLF endings.
DATA_FOLDERS = (("schema", ".yaml"), ("share/allow", ".txt"))
BUILD_FILES = ("majordomus.py", "build_zipapp.py")


def crlf(text):
    return text.replace("\n", "\r\n")


def note_layer(line_end="\n"):
    """A repository kind `note` with its own allow-list, the kinds file and the list (and
    the sources file) written with `line_end`."""
    with open(os.path.join(support.SKELETON, SOURCES), encoding="utf-8") as handle:
        sources = handle.read()
    sources += ("\n  - id: note\n    kind: note\n    discovery: vcs\n"
                "    pathspec: ':(glob).ai/repo/notes/*.md'\n    required: false\n")
    kinds = ("schema: majordomus-kinds/v1\nkinds:\n  note:\n    format: markdown\n"
             "    front_matter: required\n    allow: note\n    identity: [id]\n"
             "    title: title\n")
    allow = "# the note kind's keys\n^id$\n^title$\n\n"
    files = {SOURCES: sources, KINDS_FILE: kinds, ALLOW_DIR + "/note.txt": allow}
    files = {path: text.replace("\n", line_end) for path, text in files.items()}
    files[".ai/repo/notes/first.md"] = "---\nid: first\ntitle: First note\n---\n\n# First\n"
    return files


def build_tree(source, target, line_end=None):
    """Copy what build_zipapp.py reads from `source` into `target` (the data files' lines
    ended by `line_end` when given), build it there; the archive's path."""
    os.makedirs(target, exist_ok=True)
    for name in BUILD_FILES:
        shutil.copy(os.path.join(source, name), os.path.join(target, name))
    for folder in ("schema", "share/allow", "share/ui"):
        shutil.copytree(os.path.join(source, folder), os.path.join(target, folder))
    if line_end is not None:
        for folder, suffix in DATA_FOLDERS:
            for name in os.listdir(os.path.join(target, folder)):
                if name.endswith(suffix):
                    path = os.path.join(target, folder, name)
                    with open(path, "rb") as handle:
                        data = handle.read().replace(b"\r\n", b"\n")
                    with open(path, "wb") as handle:
                        handle.write(data.replace(b"\n", line_end.encode()))
    return build_in(target)


def build_in(folder):
    archive = os.path.join(folder, "majordomus.pyz")
    proc = subprocess.run([sys.executable, os.path.join(folder, "build_zipapp.py"), archive],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise AssertionError("build failed: " + proc.stdout.decode("utf-8", "replace"))
    return archive


# What the skeleton is asked, by the command line and over MCP: the answers must be the same
# bytes whichever build gives them.
SKELETON_COMMANDS = [["mcp", "--inspect"], ["mcp", "--inspect", "--format", "json"],
                     ["capabilities", "list"], ["capabilities", "list", "--format", "json"],
                     ["search", "scope"], ["context", "resolve", "README.md"]] + [
    ["get", uri, "--format", fmt] for uri in support.SKELETON_URIS for fmt in ("text", "json")]


def skeleton_answers(archive, repo):
    """[(what was asked, exit code, stdout bytes)] of `archive` in the skeleton `repo`."""
    answers = []
    for args in SKELETON_COMMANDS:
        proc = subprocess.run([sys.executable, archive] + args, cwd=repo,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=support.base_env(), timeout=60)
        answers.append((" ".join(args), proc.returncode, proc.stdout))
    frames = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 4, "method": "prompts/list"}] + [
        {"jsonrpc": "2.0", "id": 10 + n, "method": "resources/read", "params": {"uri": uri}}
        for n, uri in enumerate(support.SKELETON_URIS)]
    data = b"".join(json.dumps(frame).encode() + b"\n" for frame in frames)
    proc = subprocess.run([sys.executable, archive, "mcp"], cwd=repo, input=data,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=support.base_env(), timeout=60)
    answers.append(("mcp session", proc.returncode, proc.stdout))
    return answers


def first_difference(expected, got):
    for (what, code, out), (_, code2, out2) in zip(expected, got):
        if (code, out) != (code2, out2):
            return "%s: exit %d vs %d\n%r\n%r" % (what, code, code2, out[:300], out2[:300])
    return None


class LineEndingsTest(unittest.TestCase):
    """§24 line endings: the program's own data and a repository's kinds and allow-lists
    read alike with LF and CRLF; the checkout stays LF however it is cloned."""

    @classmethod
    def setUpClass(cls):
        cls.repo = support.class_repo(cls)
        cls.scratch = support.tempdir(support._ClassScope(cls))
        cls.lf = build_tree(support.ROOT, os.path.join(cls.scratch, "lf"))
        cls.expected = skeleton_answers(cls.lf, cls.repo)

    def test_skeleton_answers_are_ok(self):
        inspect = self.expected[0]
        self.assertEqual(inspect[1], 0, inspect)
        self.assertIn(b"state       ok", inspect[2])

    def test_crlf_data_files_answer_alike(self):
        """A build whose schema/ and share/allow/ have CRLF endings (a Windows checkout
        without the attributes) answers the skeleton byte for byte like the LF build."""
        archive = build_tree(support.ROOT, os.path.join(self.scratch, "crlf"), "\r\n")
        with open(os.path.join(self.scratch, "crlf", "share", "allow", "manifest.txt"),
                  "rb") as handle:
            self.assertIn(b"\r\n", handle.read())
        got = skeleton_answers(archive, self.repo)
        self.assertIsNone(first_difference(self.expected, got))

    def test_autocrlf_clone_answers_alike(self):
        """`git -c core.autocrlf=true clone` of the checkout: .gitattributes keeps it LF,
        and its build answers the skeleton byte for byte like the LF build."""
        builds = {}
        for name, autocrlf in (("plain", "false"), ("autocrlf", "true")):
            clone = os.path.join(self.scratch, name)
            support.git(self.scratch, "-c", "core.autocrlf=" + autocrlf, "clone", "-q",
                        support.ROOT, clone)
            builds[name] = build_in(clone)
        with open(os.path.join(self.scratch, "autocrlf", "schema", "kinds.yaml"), "rb") as f:
            self.assertFalse(b"\r\n" in f.read(), "the clone has CRLF endings")
        with open(builds["plain"], "rb") as plain, open(builds["autocrlf"], "rb") as other:
            self.assertEqual(plain.read(), other.read(), "the two builds differ")
        expected = skeleton_answers(builds["plain"], self.repo)
        self.assertIsNone(first_difference(expected, skeleton_answers(builds["autocrlf"],
                                                                      self.repo)))

    def test_repository_kinds_and_allow_list_with_crlf(self):
        """A repository's kinds file, allow-list and sources file with CRLF endings read
        as with LF: the note is served, no unknown_key."""
        results = {}
        for name, line_end in (("lf", "\n"), ("crlf", "\r\n")):
            repo = support.make_repo(self, note_layer(line_end), name=name)
            proc = support.run(["mcp", "--inspect", "--format", "json"], cwd=repo)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            report = json.loads(proc.stdout.decode())["repository"]
            results[name] = (report["diagnostics"], report["kinds"])
            self.assertIn("note", report["kinds"])
        self.assertEqual(results["crlf"], results["lf"])
        self.assertEqual(results["crlf"][0], [])

    def test_gitattributes(self):
        with open(os.path.join(support.ROOT, ".gitattributes"), encoding="utf-8") as handle:
            lines = [line.split() for line in handle if line.strip() and line[0] != "#"]
        self.assertIn(["*", "text=auto", "eol=lf"], lines)
        self.assertIn(["*.pyz", "binary"], lines)


if __name__ == "__main__":
    unittest.main()
