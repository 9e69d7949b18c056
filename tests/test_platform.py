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


def build_into(folder):
    """This interpreter's build of the checkout, in folder."""
    archive = os.path.join(folder, "majordomus.pyz")
    proc = subprocess.run([sys.executable, os.path.join(support.ROOT, "build_zipapp.py"),
                           archive], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        raise AssertionError("build failed: " + proc.stdout.decode("utf-8", "replace"))
    return archive


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


class CheckoutArchiveTest(unittest.TestCase):
    """§32, one archive for every interpreter: the checkout's majordomus.pyz, built by the
    interpreter that ran the build (whose bytecode it carries), answers the test layer under
    this interpreter byte for byte as an archive this interpreter builds itself. The test
    command's other interpreters run the rest of the suite on their own build
    (tests/_unit.py, MAJORDOMUS_TEST_OWN_BUILD): this is where they meet the checkout's."""

    def test_the_checkout_archive_answers_as_this_interpreter_s_own_build(self):
        checkout = os.path.join(support.ROOT, "majordomus.pyz")
        if not os.path.isfile(checkout):
            self.fail("build first: python3 build_zipapp.py (no %s)" % checkout)
        own = support.PYZ
        if own == checkout:
            own = build_into(support.tempdir(self))
        with open(own, "rb") as mine, open(checkout, "rb") as theirs:
            if mine.read() == theirs.read():
                return      # this interpreter built the checkout's: one archive, one answer
        repo = support.make_repo(self)
        expected = skeleton_answers(own, repo)
        self.assertEqual(expected[0][1], 0, expected[0])
        self.assertIsNone(first_difference(expected, skeleton_answers(checkout, repo)))


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
        and its build is the LF build's bytes, so it answers the skeleton byte for byte
        like it (two archives of the same bytes run by one interpreter answer alike: the
        answers are not asked again; the test command's autocrlf step asks them once)."""
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

    def test_build_independent_of_hash_seed(self):
        """The archive is the same bytes whatever the building interpreter's hash seed:
        marshal writes a frozenset constant in hash order on 3.9 and 3.10 (seed 26 moved
        3.9's pyc, seeds 1, 3 and 4 moved 3.10's), which failed the autocrlf comparison;
        and it flags a string for back-reference by its reference count, so a pyc compiled
        in the building process (seed 0 once did) differed from one compiled in a child."""
        digests = {}
        for seed in ("0", "1", "2", "26"):
            target = os.path.join(self.scratch, "seed-%s.pyz" % seed)
            proc = subprocess.run([sys.executable, os.path.join(support.ROOT, "build_zipapp.py"),
                                   target], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  env=dict(os.environ, PYTHONHASHSEED=seed))
            self.assertEqual(proc.returncode, 0, proc.stdout)
            with open(target, "rb") as handle:
                digests[seed] = handle.read()
        self.assertEqual(len(set(digests.values())), 1,
                         "builds differ by hash seed: %s" % sorted(
                             seed for seed in digests if digests[seed] != digests["0"]))

    def test_build_independent_of_its_folder(self):
        """The archive is the same bytes whatever folder it is built in: an interned name
        held elsewhere in the compiling process (its folder's listing, cached by the
        import system) moved marshal's back-reference flags on 3.10, one folder in two,
        which failed the autocrlf comparison in CI."""
        digests = {}
        for extra in range(6):
            folder = os.path.join(self.scratch, "folder-" + "x" * (extra * 7 + 1))
            os.makedirs(folder)
            for n in range(extra):
                open(os.path.join(folder, "other-%d.txt" % n), "w").close()
            with open(build_tree(support.ROOT, folder), "rb") as handle:
                digests[folder] = handle.read()
        self.assertEqual(len(set(digests.values())), 1, "builds differ by folder")

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



def inspect(repo, args=(), env=None):
    """(process, the JSON report of `mcp --inspect`)."""
    proc = support.run(["mcp", "--inspect", "--format", "json"] + list(args), cwd=repo,
                       env=env)
    return proc, (json.loads(proc.stdout.decode("utf-8")) if proc.stdout else None)


def planted_git(folder, marker):
    """An executable `git` in `folder` that records it ran by writing `marker`."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "git")
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\necho ran >> '%s'\nexit 1\n" % marker)
    os.chmod(path, 0o755)
    return path


class WhichGitTest(unittest.TestCase):
    """§24 which git runs: resolved once from PATH's absolute entries only."""

    def setUp(self):
        self.outside = support.tempdir(self)
        self.marker = os.path.join(self.outside, "planted-git-ran")
        self.repo = support.make_repo(self)
        planted_git(self.repo, self.marker)          # at the repository's root
        planted_git(os.path.join(self.repo, "bin"), self.marker)   # a relative PATH entry

    def test_planted_git_never_runs(self):
        path = os.pathsep.join(["", ".", "bin", os.environ.get("PATH", "")])
        proc, doc = inspect(self.repo, env={"PATH": path})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(doc["repository"]["state"], "ok")
        self.assertFalse(os.path.exists(self.marker), "the planted git ran")

    def test_no_absolute_git_is_the_discovery_message(self):
        proc = support.run(["mcp", "--inspect"], cwd=self.repo,
                           env={"PATH": os.pathsep.join([".", "bin"])})
        self.assertEqual(proc.returncode, 13)
        self.assertEqual(proc.stderr.decode(), "majordomus: git: git is not installed (no 'git' "
                         "on PATH); discovery through the version-control index needs git (or "
                         "pass --discovery filesystem)\n")
        self.assertFalse(os.path.exists(self.marker), "the planted git ran")

    def test_every_git_call_turns_fsmonitor_off(self):
        real = shutil.which("git")
        wrapper = os.path.join(self.outside, "wrap")
        os.makedirs(wrapper)
        log = os.path.join(self.outside, "argv")
        with open(os.path.join(wrapper, "git"), "w") as handle:
            handle.write('#!/bin/sh\nprintf "%%s\\n" "$*" >> \'%s\'\nexec \'%s\' "$@"\n'
                         % (log, real))
        os.chmod(os.path.join(wrapper, "git"), 0o755)
        env = {"PATH": os.pathsep.join([wrapper, os.environ.get("PATH", "")])}
        proc, doc = inspect(self.repo, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        proc = support.run(["context", "resolve", "README.md"], cwd=self.repo, env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        with open(log) as handle:
            calls = handle.read().splitlines()
        self.assertTrue(calls)
        for call in calls:
            self.assertTrue(call.startswith("-c core.fsmonitor=false -C "), call)

    def test_find_program(self):
        here = support.tempdir(self)
        first, second = os.path.join(here, "a"), os.path.join(here, "b")
        planted_git(second, self.marker)
        planted_git(os.path.join(here, "rel"), self.marker)
        os.makedirs(first)
        with open(os.path.join(first, "git"), "w") as handle:
            handle.write("not executable")
        old = os.getcwd()
        os.chdir(here)
        try:
            self.assertEqual(mj.find_program("git", ["", ".", "rel", first, second]),
                             os.path.join(second, "git"))
            self.assertIsNone(mj.find_program("git", ["", ".", "rel", first]))
        finally:
            os.chdir(old)
        started = time.perf_counter()
        mj.find_program("git", os.get_exec_path(), mj.executable_names("git"))
        sys.stderr.write("[one PATH scan for git: %.3f ms] " % ((time.perf_counter() - started)
                                                                 * 1000))

    def test_windows_names(self):
        """On Windows the PATHEXT suffixes CreateProcess runs itself, in PATHEXT's order."""
        self.assertEqual(mj.executable_names("git", windows=True,
                                             pathext=".COM;.EXE;.BAT;.CMD;.VBS"),
                         ["git.com", "git.exe"])
        self.assertEqual(mj.executable_names("git", windows=True, pathext=".exe;.cmd"),
                         ["git.exe"])
        self.assertEqual(mj.executable_names("git", windows=True, pathext=""),
                         ["git.com", "git.exe"])
        self.assertEqual(mj.executable_names("git", windows=False), ["git"])
        # A drive-relative or relative entry is no absolute one, with Windows' rules.
        tried = []

        def join(*parts):
            tried.append(ntpath.join(*parts))
            return os.devnull + "-nothing-here"

        mj.find_program("git", ["bin", "C:relative", ".", "", "C:\\Git\\cmd"], ["git.exe"],
                        isabs=ntpath.isabs, join=join)
        self.assertEqual(tried, ["C:\\Git\\cmd\\git.exe"])


class GitSpawnTest(unittest.TestCase):
    """git is spawned with posix_spawn where the platform has it and through subprocess
    elsewhere (Windows): both give the same answers; the listing started before the
    declarations are read is reaped when they fail."""

    def setUp(self):
        self.repo = support.make_repo(self)

    def without_posix_spawn(self, call):
        # (os.posix_spawn itself stays: subprocess uses it on 3.13 and later.)
        with mock.patch.object(mj, "_spawn", mj._spawn_portable):
            return call()

    def test_portable_spawn_answers_alike(self):
        listed = mj.list_vcs(self.repo)
        self.assertIn(".ai/manifest.yaml", listed[0])
        self.assertEqual(self.without_posix_spawn(lambda: mj.list_vcs(self.repo)), listed)
        for spawn in (lambda call: call(), self.without_posix_spawn):
            code, out, reason = spawn(lambda: mj._git(self.repo, "rev-parse", "--verify",
                                                      "no-such-ref"))
            self.assertEqual((code, out, reason), (128, b"", "Needed a single revision"))

    def test_early_listing_reaped_when_declarations_fail(self):
        with open(os.path.join(self.repo, ".ai", "manifest.yaml"), "a") as handle:
            handle.write("\tbroken: tab\n")
        started = []
        real = mj.git_started

        def spy(*args):
            wait = real(*args)
            started.append(args)
            return wait
        with mock.patch.object(mj, "git_started", spy):
            with self.assertRaises(mj.Fatal):
                mj.first_generation(self.repo, "vcs", mj.Counters())
        self.assertEqual(started, [(self.repo,) + mj.LS_FILES])
        with self.assertRaises(ChildProcessError):    # no child left unreaped
            os.waitpid(-1, os.WNOHANG)


class BytesAsTheyAreTest(unittest.TestCase):
    """§24 bytes as they are: O_BINARY where the platform has it."""

    def test_read_flags_carry_o_binary_where_it_exists(self):
        path = os.path.join(support.tempdir(self), "f.md")
        data = b"a\r\nb\x1ac\r\n"
        with open(path, "wb") as handle:
            handle.write(data)
        with mock.patch.object(os, "O_BINARY", 0x8000, create=True):
            flags = mj.read_flags()
        self.assertEqual(flags & 0x8000, 0x8000)
        self.assertEqual(mj.read_flags(), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                         | getattr(os, "O_BINARY", 0))
        seen = []
        real_open = os.open

        def spy(name, flags, *rest):
            seen.append(flags)
            return real_open(name, flags, *rest)

        with mock.patch.object(mj, "READ_FLAGS", mj.READ_FLAGS), \
                mock.patch.object(os, "open", spy):
            text, size = mj._read_text(path, os.lstat(path), None)
        self.assertEqual((text.encode(), size), (data, len(data)))
        # (without following a link, and without blocking on a FIFO: §25)
        self.assertEqual(seen, [mj.PLAIN_FLAGS])
        self.assertEqual(mj.PLAIN_FLAGS & mj.READ_FLAGS, mj.READ_FLAGS)

    def test_crlf_and_ctrl_z_served_byte_for_byte(self):
        data = b"# Notes\r\n\r\nline one\r\nafter \x1a the byte\r\n"
        repo = support.make_repo(self, {"docs/raw.md": data})
        proc = support.run(["get", "majordomus://document/docs/raw.md", "--format", "text"],
                           cwd=repo)
        self.assertEqual((proc.returncode, proc.stdout), (0, data), proc.stderr)
        proc = support.run(["get", "majordomus://document/docs/raw.md"], cwd=repo)
        view = json.loads(proc.stdout)
        self.assertEqual(view["provenance"]["bytes"], len(data))


class ClosedPipeTest(unittest.TestCase):
    """§24: a closed pipe raising OSError(EINVAL) (Windows) ends quietly, like EPIPE."""

    def test_frame_writer(self):
        for error in (OSError(errno.EINVAL, "Invalid argument"), BrokenPipeError()):
            with self.subTest(error=error):
                writer = mj.FrameWriter(1)
                with mock.patch.object(os, "write", side_effect=error):
                    with self.assertRaises(mj._ClientGone):
                        writer(b"{}")
                self.assertTrue(writer.gone)
        writer = mj.FrameWriter(1)
        with mock.patch.object(os, "write", side_effect=OSError(errno.EIO, "I/O error")):
            with self.assertRaises(mj.Fatal) as caught:
                writer(b"{}")
        self.assertEqual(caught.exception.code, 13)

    def test_cli_output(self):
        class Closed:
            def write(self, data):
                raise OSError(errno.EINVAL, "Invalid argument")

            flush = write

        stdout = mock.Mock()
        stdout.buffer = Closed()
        with mock.patch.object(sys, "stdout", stdout), \
                mock.patch.object(mj, "_silence_stdout") as silenced:
            mj.write_stdout("text\n")      # no exception: `get … | more` that stops reading
        silenced.assert_called_once_with()

    def test_session_ends_quietly(self):
        """The real program: a client that closes the output gets exit 0."""
        repo = support.make_repo(self)
        proc = subprocess.Popen(support.command() + ["mcp"], cwd=repo, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=support.base_env())
        proc.stdout.close()
        _, err = proc.communicate(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n' * 3, 30)
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn(b"client closed the output; stopping", err)


class PortInUseTest(unittest.TestCase):
    """§24: SO_EXCLUSIVEADDRUSE where it exists (Windows), else SO_REUSEADDR."""

    class Socket:
        def __init__(self):
            self.options = []

        def setsockopt(self, level, option, value):
            self.options.append((level, option, value))

    def test_windows_exclusive(self):
        import socket
        sock = self.Socket()
        with mock.patch.object(socket, "SO_EXCLUSIVEADDRUSE", -5, create=True):
            mj.exclusive_bind(sock)
        self.assertEqual(sock.options, [(socket.SOL_SOCKET, -5, 1)])

    def test_posix_reuse(self):
        import socket
        sock = self.Socket()
        if hasattr(socket, "SO_EXCLUSIVEADDRUSE"):
            self.skipTest("a platform with SO_EXCLUSIVEADDRUSE")
        mj.exclusive_bind(sock)
        self.assertEqual(sock.options, [(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)])

    def test_second_serve_on_a_served_port_is_exit_13(self):
        repo = support.make_repo(self)
        server = support.HttpServer(repo)
        try:
            proc = support.run(["serve", "--port", str(server.port)], cwd=repo, timeout=30)
            self.assertEqual(proc.returncode, 13, proc.stderr)
        finally:
            self.assertEqual(server.stop(), 0)


class StopServeTest(unittest.TestCase):
    def test_ctrl_break_where_it_exists(self):
        import signal
        self.assertEqual(mj.stop_signals()[:2], [signal.SIGINT, signal.SIGTERM])
        with mock.patch.object(signal, "SIGBREAK", 21, create=True):
            self.assertEqual(mj.stop_signals(), [signal.SIGINT, signal.SIGTERM, 21])

    def test_sigint_exit_0(self):
        import signal
        server = support.HttpServer(support.make_repo(self))
        self.assertEqual(server.stop(signal.SIGINT), 0)


class SymlinkAsTextTest(unittest.TestCase):
    """§24: with core.symlinks=false a tracked symlink is a text file on disk; its index
    mode 120000 still makes it the `symlink` diagnostic."""

    def test_checked_out_as_text(self):
        repo = support.make_repo(self, commit=False)
        os.symlink("README.md", os.path.join(repo, ".ai", "repo", "rules", "alias.md"))
        os.symlink("../README.md", os.path.join(repo, "docs-link.md"))
        support.commit_all(repo)
        clone = os.path.join(support.tempdir(self), "clone")
        support.git(repo, "-c", "core.symlinks=false", "clone", "-q", repo, clone)
        self.assertTrue(os.path.isfile(clone + "/.ai/repo/rules/alias.md"))
        self.assertFalse(os.path.islink(clone + "/.ai/repo/rules/alias.md"))
        reports = []
        for where in (repo, clone):
            proc, doc = inspect(where)
            self.assertEqual(proc.returncode, 10, proc.stderr)
            reports.append(([r["uri"] for r in doc["resources"]],
                            doc["repository"]["diagnostics"],
                            doc["repository"]["context"]))
        self.assertEqual(reports[1], reports[0])
        codes = [(d["code"], d.get("path")) for d in reports[1][1]]
        self.assertIn(("symlink", ".ai/repo/rules/alias.md"), codes)
        self.assertIn(("symlink", "docs-link.md"), codes)


class StderrUtf8Test(unittest.TestCase):
    """§24: log lines and fatal messages reach stderr as UTF-8 whatever the encoding."""

    def test_fatal_message(self):
        where = os.path.join(support.tempdir(self), "d\u00e9j\u00e0-vu")
        for encoding in ("ascii", "latin-1", "cp1252"):
            with self.subTest(encoding=encoding):
                proc = support.run(["mcp", "--inspect", "--repo", where],
                                   cwd=support.tempdir(self),
                                   env={"PYTHONIOENCODING": encoding, "PYTHONUTF8": "0"})
                self.assertEqual(proc.returncode, 13)
                self.assertEqual(proc.stderr.decode("utf-8"), "majordomus: cannot start at %s: "
                                 "no such directory\n" % where)

    def test_log_line(self):
        repo = support.make_repo(self, {"docs/\u00e9t\u00e9.md": b"\xff not utf-8\n"})
        proc = subprocess.run(support.command() + ["mcp"], cwd=repo, input=b"",
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=support.base_env({"PYTHONIOENCODING": "ascii"}))
        self.assertEqual(proc.returncode, 0)
        self.assertIn("path=docs/\u00e9t\u00e9.md".encode("utf-8"), proc.stderr)


class CoarseClockTest(unittest.TestCase):
    """§24 coarse clocks: an in-place edit keeping size, mtime and inode (the mtime put back
    with os.utime) is seen while the file is racily clean; an unchanged one builds nothing."""

    URI = "majordomus://document/README.md"

    def read(self, session, uri):
        answer = session.request("resources/read", {"uri": uri})
        return answer["result"]["contents"][0]["text"]

    def perf(self, session):
        answer = session.request("tools/call", {"name": "majordomus_perf", "arguments": {}})
        return answer["result"]["structuredContent"]

    def test_same_second_same_size_edit_is_seen(self):
        repo = support.make_repo(self)
        path = os.path.join(repo, "README.md")
        now = time.time_ns()
        os.utime(path, ns=(now, now))
        session = support.McpSession(repo)
        try:
            before = self.read(session, self.URI)
            info = os.lstat(path)
            with open(path, "r+b") as handle:          # in place: same inode
                data = handle.read()
                handle.seek(0)
                handle.write(data.replace(b"e", b"E", 1))
            os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
            after = os.lstat(path)
            self.assertEqual((after.st_size, after.st_mtime_ns, after.st_ino),
                             (info.st_size, info.st_mtime_ns, info.st_ino))
            time.sleep(mj.SWEEP_EVERY + 0.2)
            self.assertEqual(self.read(session, self.URI), before.replace("e", "E", 1))
            builds = self.perf(session)["index_builds"]
            self.assertEqual(builds, 2)
            time.sleep(mj.SWEEP_EVERY + 0.2)          # compared again: nothing moved
            self.read(session, self.URI)
            time.sleep(mj.RACY_NS / 1e9 + 0.2)     # older than the tick: compared once more
            self.read(session, self.URI)
            self.assertEqual(self.perf(session)["index_builds"], builds)
        finally:
            session.close()


class CaseAndNamesTest(unittest.TestCase):
    """§24 case and normalisation."""

    def test_root_only_in_this_case(self):
        """A case-insensitive file system (simulated: lstat finds any case) does not find
        `.AI/Manifest.yaml`."""
        top = support.tempdir(self)
        support.write(top, ".AI/Manifest.yaml", "schema: ai-repository/v1\n")
        real_lstat = os.lstat

        def any_case(path, *rest):
            """lstat on a case-insensitive file system: each name matched in any case."""
            where = os.sep
            for name in os.path.abspath(path).split(os.sep)[1:]:
                names = os.listdir(where) if os.path.isdir(where) else []
                name = next((n for n in names if n.lower() == name.lower()), name)
                where = os.path.join(where, name)
            return real_lstat(where, *rest)

        with mock.patch.object(os, "lstat", any_case):
            self.assertTrue(stat_is_file(os.path.join(top, ".ai", "manifest.yaml")))
            with self.assertRaises(mj.Fatal) as caught:
                mj.find_root(top)
        self.assertEqual(caught.exception.code, 12)
        support.write(top, ".ai/manifest.yaml", "schema: ai-repository/v1\n")
        self.assertEqual(mj.find_root(top), os.path.realpath(top))

    def test_allow_list_named_like_a_shipped_one_in_another_case(self):
        files = note_layer()
        files[ALLOW_DIR + "/Rule.txt"] = "^id$\n"
        repo = support.make_repo(self, files)
        proc = support.run(["mcp", "--inspect"], cwd=repo)
        self.assertEqual(proc.returncode, 10, proc.stderr)
        self.assertEqual(proc.stderr.decode(), "majordomus: %s/Rule.txt: allow-list 'Rule' is "
                         "shipped; a repository adds allow-lists, it does not redefine them\n"
                         % ALLOW_DIR)

    def test_nfd_name_is_one_nfc_uri(self):
        nfc = "docs/caf\u00e9.md"
        nfd = unicodedata.normalize("NFD", nfc)
        self.assertNotEqual(nfc, nfd)
        repo = support.make_repo(self, {nfd: "# Caf\u00e9\n"})
        proc, doc = inspect(repo, ["--discovery", "filesystem"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        uris = [r["uri"] for r in doc["resources"]]
        self.assertIn("majordomus://document/" + nfc, uris)
        self.assertNotIn("majordomus://document/" + nfd, uris)
        proc = support.run(["get", "majordomus://document/" + nfc, "--format", "text",
                            "--discovery", "filesystem"], cwd=repo)
        self.assertEqual((proc.returncode, proc.stdout.decode()), (0, "# Caf\u00e9\n"))

    def test_finder_and_explorer_files_never_walked(self):
        with open(os.path.join(support.SKELETON, SOURCES), encoding="utf-8") as f:
            sources = f.read()
        files = {SOURCES: sources + (
            "\n  - id: junk\n    kind: implementation\n    discovery: vcs\n"
            "    pathspec: ':(glob)junk/**'\n    required: false\n")}
        for name in ("._README.md", "docs/._guide.md", "junk/.DS_Store", "junk/Thumbs.db",
                     "junk/desktop.ini", "junk/._keep.txt", "junk/keep.txt", "docs/guide.md"):
            files[name] = "# x\n"
        repo = support.make_repo(self, files)
        proc, doc = inspect(repo, ["--discovery", "filesystem"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        uris = [r["uri"] for r in doc["resources"]]
        self.assertIn("majordomus://implementation/junk/keep.txt", uris)
        self.assertIn("majordomus://document/docs/guide.md", uris)
        self.assertEqual([u for u in uris if "._" in u or u.rsplit("/")[-1] in (
            ".DS_Store", "Thumbs.db", "desktop.ini")], [])


def stat_is_file(path):
    import stat
    return stat.S_ISREG(os.lstat(path).st_mode)


class JunctionTest(unittest.TestCase):
    """§24: the walk never enters a directory junction."""

    class Entry:
        def __init__(self, tag, junction=None):
            self.tag = tag
            if junction is not None:
                self.is_junction = lambda: junction

        def stat(self, follow_symlinks=True):
            assert follow_symlinks is False
            return mock.Mock(st_reparse_tag=self.tag)

    def test_is_junction(self):
        point = mj.MOUNT_POINT_TAG
        self.assertTrue(mj.is_junction(self.Entry(point), reparse_tags=True))
        self.assertFalse(mj.is_junction(self.Entry(0xA000000C), True))    # a symlink's tag
        self.assertFalse(mj.is_junction(self.Entry(point), reparse_tags=False))
        self.assertTrue(mj.is_junction(self.Entry(0, junction=True), reparse_tags=False))
        self.assertFalse(mj.is_junction(self.Entry(point, junction=False), True))

    def test_walk_skips_junctions(self):
        root = support.tempdir(self)
        for rel in ("a/x.md", "j/y.md", "k/z.md"):
            support.write(root, rel, "x")
        manifest = mock.Mock(is_local=lambda path: False)
        with mock.patch.object(mj, "is_junction", lambda entry: entry.name == "j"):
            found = mj.list_filesystem(root, manifest)[0]
        self.assertEqual(sorted(found), ["a/x.md", "k/z.md"])


class PlatformJoinTest(unittest.TestCase):
    """§24 long and UNC paths: repository-relative paths joined by the platform's rules."""

    def test_windows_roots(self):
        join = lambda root, rel: mj.native_path(root, rel, ntpath)  # noqa: E731
        self.assertEqual(join("\\\\?\\C:\\work\\repo", ".ai/manifest.yaml"),
                         "\\\\?\\C:\\work\\repo\\.ai\\manifest.yaml")
        self.assertEqual(join("\\\\server\\share\\repo", ".ai/repo/rules/x.v1.md"),
                         "\\\\server\\share\\repo\\.ai\\repo\\rules\\x.v1.md")
        self.assertEqual(join("\\\\server\\share\\", "README.md"),
                         "\\\\server\\share\\README.md")
        self.assertEqual(join("C:\\", "a/b"), "C:\\a\\b")
        self.assertEqual(join("\\\\?\\C:\\r", ""), "\\\\?\\C:\\r")

    def test_posix_roots(self):
        import posixpath
        self.assertEqual(mj.native_path("/r", "a/b", posixpath), "/r/a/b")
        self.assertEqual(mj.native_path("/", "a", posixpath), "/a")

    def test_declarations_read_through_the_join(self):
        """Every discovered file is read at decl.full(path), the platform's path."""
        repo = support.make_repo(self)
        decl = mj.read_declarations(repo, "vcs")
        self.assertEqual(decl.full("docs/a.md"), os.path.join(repo, "docs", "a.md"))
        decl.on_disk = {"docs/caf\u00e9.md": "docs/cafe\u0301.md"}
        self.assertEqual(decl.full("docs/caf\u00e9.md"), repo + "/docs/cafe\u0301.md")


if __name__ == "__main__":
    unittest.main()
