"""Black-box tests of the layer reader (SPEC §1 frame, §2 root and manifest, §4 sources and
discovery, §5 index, §6 `mcp --inspect` / `--strict`, §12 read-only, §14 fixture).

Every test spawns the real program (`majordomus.pyz` and `majordomus.py`) in scratch
directories made under a temporary directory, never in the checkout.
"""
import concurrent.futures
import json
import os
import re
import shutil
import unittest

from tests import support
from tests.support import RULE_URI

VIAS = ("pyz", "py")
VERSION = "0.1.0"
SOURCES = ".ai/repo/knowledge/sources.yaml"
MANIFEST = ".ai/manifest.yaml"
VENDOR_RULE = ".ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md"
GIT_SUFFIX = ("; discovery through the version-control index needs git "
              "(or pass --discovery filesystem)")
LOG_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2}) "
                    r"(ERROR|WARN|INFO|DEBUG|TRACE) \S")

SKELETON_URIS = support.SKELETON_URIS
TOOLS = list(support.TOOLS)
BUILTINS = support.BUILTINS  # not every builtin has an MCP tool (§31, §33)
SKELETON_CLASSES = support.LAYER_CLASSES

BASE_MANIFEST = support.manifest_yaml("policy", "profiles", "rules", "prompts", "skills",
                                     "workflows", "knowledge", "adrs", "project")


cls_entry = support.source_class


def skeleton_sources(*extra):
    with open(os.path.join(support.SKELETON, SOURCES), "r", encoding="utf-8") as f:
        text = f.read()
    if not text.endswith("\n"):
        text += "\n"
    return text + "".join(extra)


def diag_line(severity, code, path, message):
    label = {"error": "FAIL", "warning": "WARN", "info": "INFO"}[severity]
    return "{:<4} {:<22} {} \u2014 {}".format(label, code, path or "-", message)


def fail(code, path, message):
    return diag_line("error", code, path, message)


def warn(code, path, message):
    return diag_line("warning", code, path, message)


# §32: the sections the test layer's manifest names and its files do not hold (as the
# skeleton's), each a `note` line of --inspect after the tools.
LAYER_NOTES = ["note        sections.%s: .ai/repo/%s names nothing on disk" % (name, name)
               for name in ("skills", "adrs", "project")]


def expected_inspect(root, uris, discovery="vcs", state=None, diags=(), context=0,
                     notes=LAYER_NOTES):
    """The whole `mcp --inspect` text of §6 for a repository holding these object URIs
    (`context`: the context tree's problems, which §26 says after the state; `notes`: the
    §32 notes, after the tools)."""
    uris = sorted(uris)
    if state is None:
        state = "degraded" if any(d.startswith("FAIL") for d in diags) else "ok"
    kinds = {}
    for uri in uris:
        kind = uri[len("majordomus://"):].split("/", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
    lines = ["repository  %s" % root, "discovery   %s" % discovery, "state       %s" % state]
    if context:
        lines.append("context: %d problem(s); resolve refuses, brief answers degraded" % context)
    for kind in sorted(kinds):
        lines.append("kind        {:<12} {}".format(kind, kinds[kind]))
    lines.append("capabilities %d (%d builtin, %d declarative)"
                 % (BUILTINS + len(uris), BUILTINS, len(uris)))
    lines.extend("resource    %s" % u for u in support.QUERY_URIS)
    lines.extend("resource    %s" % u for u in uris)
    lines.extend("tool        %s" % t for t in TOOLS)
    lines.extend(notes)
    lines.extend(diags)
    return lines


def resources_of(lines):
    return [l[len("resource    "):] for l in lines if l.startswith("resource    ")]


def diags_of(lines):
    return [l for l in lines if re.match(r"^(FAIL|WARN|INFO) ", l)]


def json_diag_line(d):
    return diag_line(d["severity"], d["code"], d.get("path"), d["message"])


def ancestors_have_manifest(path):
    path = os.path.realpath(path)
    while True:
        if os.path.isfile(os.path.join(path, MANIFEST)):
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


class _ClassCleanup(object):
    """Lets support.make_repo/tempdir register class-level cleanups from setUpClass."""

    def __init__(self, cls):
        self.cls = cls

    def addCleanup(self, fn, *args, **kwargs):
        self.cls.addClassCleanup(fn, *args, **kwargs)


class Out(object):
    def __init__(self, proc):
        self.rc = proc.returncode
        self.raw_out = proc.stdout
        self.raw_err = proc.stderr
        self.out = proc.stdout.decode("utf-8")
        self.err = proc.stderr.decode("utf-8", "replace")
        self.lines = self.out.splitlines()

    def json(self):
        return json.loads(self.out)

    def __repr__(self):
        return "rc=%r\n--- stdout ---\n%s\n--- stderr ---\n%s" % (self.rc, self.out[:4000],
                                                                self.err[:4000])


class LayerCase(unittest.TestCase):
    maxDiff = None

    # -- spawning ---------------------------------------------------------------------
    def mj(self, args, cwd, via="pyz", env=None):
        """Spawn the real program; never a Python traceback on stderr (nor stdout)."""
        proc = support.run(list(args), cwd=cwd, via=via, input=b"", env=env)
        self.assertNotIn(b"Traceback", proc.stderr,
                         "traceback on stderr for %r:\n%s" % (args, proc.stderr.decode(
                             "utf-8", "replace")))
        self.assertNotIn(b"Traceback", proc.stdout, "traceback on stdout for %r" % (args,))
        return Out(proc)

    def mj_parallel(self, jobs, workers=4):
        """Spawn several (args, cwd, via, env) jobs at once; same checks as mj()."""
        def one(job):
            args, cwd, via, env = job
            return support.run(list(args), cwd=cwd, via=via, input=b"", env=env)
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            procs = list(pool.map(one, jobs))
        outs = []
        for job, proc in zip(jobs, procs):
            self.assertNotIn(b"Traceback", proc.stderr, "traceback on stderr for %r:\n%s"
                             % (job[0], proc.stderr.decode("utf-8", "replace")))
            self.assertNotIn(b"Traceback", proc.stdout)
            outs.append(Out(proc))
        return outs

    def inspect(self, cwd, via="pyz", extra=(), env=None):
        return self.mj(["mcp", "--inspect"] + list(extra), cwd, via=via, env=env)

    def assert_log_lines(self, err, allow_fatal=False):
        """Every stderr line is a §1 log line (or, when allowed, the one fatal line)."""
        for line in err.splitlines():
            if allow_fatal and line.startswith("majordomus: "):
                continue
            self.assertRegex(line, LOG_RE, "stderr line is not a log line")

    def assert_fatal(self, r, code, message=None, contains=None, prefix=None, suffix=None,
                     alternatives=None, quiet=True):
        """§1: exit `code`, nothing on stdout, exactly one line `majordomus: <message>`."""
        self.assertEqual(r.rc, code, r)
        self.assertEqual(r.out, "", r)
        if quiet:
            # MAJORDOMUS_LOG=off: the fatal line is the whole of stderr.
            self.assertTrue(r.err.endswith("\n"), r)
            self.assertEqual(len(r.err.splitlines()), 1, r)
        fatal = [l for l in r.err.splitlines() if l.startswith("majordomus: ")]
        self.assertEqual(len(fatal), 1, r)
        self.assert_log_lines(r.err, allow_fatal=True)
        text = fatal[0][len("majordomus: "):]
        if message is not None:
            self.assertEqual(text, message)
        if alternatives is not None:
            self.assertIn(text, alternatives)
        if contains is not None:
            self.assertIn(contains, text)
        if prefix is not None:
            self.assertTrue(text.startswith(prefix), "%r does not start with %r" % (text, prefix))
        if suffix is not None:
            self.assertTrue(text.endswith(suffix), "%r does not end with %r" % (text, suffix))
        return text

    def fatal(self, args, cwd, code, via="pyz", env=None, **kw):
        full = {"MAJORDOMUS_LOG": "off"}
        full.update(env or {})
        r = self.mj(args, cwd, via=via, env=full)
        return self.assert_fatal(r, code, **kw)

    def assert_usage_error(self, r, first):
        self.assertEqual(r.rc, 2, r)
        self.assertEqual(r.out, "", r)
        lines = r.err.splitlines()
        self.assertIn(first, lines, r)
        after = lines[lines.index(first) + 1:]
        self.assertTrue(any(re.search(r"(?i)usage", l) for l in after),
                        "no usage line after %r: %r" % (first, r.err))

    # -- scratch directories ----------------------------------------------------------
    def outside_dir(self, owner=None):
        d = os.path.realpath(support.tempdir(owner or self))
        self.assertFalse(ancestors_have_manifest(d),
                         "precondition: %s has an ancestor carrying .ai/manifest.yaml" % d)
        return d

    @staticmethod
    def no_git_path(owner):
        """A PATH directory holding only a symlink to the Python interpreter (no git)."""
        d = os.path.join(support.tempdir(owner), "bin")
        os.makedirs(d)
        os.symlink(support.PYTHON, os.path.join(d, "python3"))
        return d


# ---------------------------------------------------------------------------------------
# §1 the command-line frame
# ---------------------------------------------------------------------------------------
class FrameTests(LayerCase):

    @classmethod
    def setUpClass(cls):
        cls.outside = os.path.realpath(support.tempdir(_ClassCleanup(cls)))
        cls.repo = support.make_repo(_ClassCleanup(cls))

    def test_help_top_level_and_per_command(self):
        self.assertFalse(ancestors_have_manifest(self.outside))
        for flag, via in (("--help", "pyz"), ("--help", "py"), ("-h", "pyz")):
            with self.subTest(via=via, flag=flag):
                r = self.mj([flag], self.outside, via=via)
                self.assertEqual(r.rc, 0, r)
                for command in ("mcp", "serve", "capabilities", "get"):
                    self.assertTrue(
                        any(re.match(r"^  %s " % command, l) for l in r.lines),
                        "no line '^  %s ' in --help output:\n%s" % (command, r.out))
        for args, via in ((["mcp", "--help"], "pyz"), (["mcp", "--help"], "py"),
                          (["mcp", "-h"], "py"), (["mcp", "--inspect", "--help"], "pyz")):
            with self.subTest(via=via, args=args):
                r = self.mj(args, self.outside, via=via)
                self.assertEqual(r.rc, 0, r)
                self.assertIn("Usage: majordomus mcp", r.out)
        # help at every level: on stdout, exit 0, outside any repository.
        for args in (["serve", "--help"], ["get", "--help"],
                     ["capabilities", "list", "--help"]):
            with self.subTest(args=args):
                r = self.mj(args, self.outside)
                self.assertEqual(r.rc, 0, r)
                self.assertNotEqual(r.out.strip(), "", r)
                self.assertIn("majordomus", r.out)

    def test_version(self):
        for via in VIAS:
            with self.subTest(via=via):
                r = self.mj(["--version"], self.outside, via=via)
                self.assertEqual(r.rc, 0, r)
                self.assertEqual(r.lines, ["majordomus %s" % VERSION], r)

    def test_no_arguments_is_a_usage_error(self):
        for via in VIAS:
            with self.subTest(via=via):
                r = self.mj([], self.outside, via=via)
                self.assertEqual(r.rc, 2, r)
                self.assertEqual(r.out, "", r)
                self.assertRegex(r.err, r"(?i)usage", r)

    def test_unknown_subcommand(self):
        for via in VIAS:
            with self.subTest(via=via):
                r = self.mj(["nonsense"], self.outside, via=via)
                self.assert_usage_error(r, "error: unrecognized subcommand 'nonsense'")

    def test_unknown_option(self):
        first = "error: unexpected argument '--no-such-option' found"
        cases = [(["--no-such-option"], self.outside, "pyz"),
                 (["mcp", "--no-such-option"], self.outside, "py"),
                 # a usage error is found before any repository is looked for
                 (["mcp", "--inspect", "--no-such-option"], self.outside, "pyz"),
                 (["mcp", "--inspect", "--no-such-option"], self.repo, "py")]
        for args, cwd, via in cases:
            with self.subTest(args=args, cwd=cwd, via=via):
                self.assert_usage_error(self.mj(args, cwd, via=via), first)

    def test_bad_option_values_are_usage_errors(self):
        # §1: usage errors go to stderr with exit 2 and an empty stdout; the value is named.
        for args in (["mcp", "--inspect", "--discovery", "bogus"],
                     ["mcp", "--inspect", "--format", "yaml"]):
            with self.subTest(args=args):
                r = self.mj(args, self.repo, via="py")
                self.assertEqual(r.rc, 2, r)
                self.assertEqual(r.out, "", r)
                self.assertIn(args[-1], r.err)
                self.assertRegex(r.err, r"(?i)usage")

    def test_fatal_line_whatever_the_log_level(self):
        message = ("no Majordomus repository found from %s: no ancestor directory carries "
                   ".ai/manifest.yaml; see 'Start a layer' in the README" % self.outside)
        # off: logs silenced, the fatal line is the whole of stderr
        self.fatal(["mcp", "--inspect"], self.outside, 12, message=message)
        # default (unset), error, trace, invalid (= info): exactly one fatal line,
        # every other stderr line a log line.
        for level in (None, "trace"):
            with self.subTest(level=level):
                env = {"MAJORDOMUS_LOG": level} if level else None
                r = self.mj(["mcp", "--inspect"], self.outside, env=env)
                self.assert_fatal(r, 12, message=message, quiet=False)

    def test_log_off_silences_a_successful_run(self):
        r = self.inspect(self.repo, env={"MAJORDOMUS_LOG": "off"})
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.err, "", r)
        r = self.inspect(self.repo, via="py", env={"MAJORDOMUS_LOG": "debug"})
        self.assertEqual(r.rc, 0, r)
        self.assert_log_lines(r.err)


# ---------------------------------------------------------------------------------------
# §2.1 the root
# ---------------------------------------------------------------------------------------
class RootTests(LayerCase):

    @classmethod
    def setUpClass(cls):
        cls.repo = support.make_repo(_ClassCleanup(cls))

    def test_outside_any_repository(self):
        outside = self.outside_dir()
        message = ("no Majordomus repository found from %s: no ancestor directory carries "
                   ".ai/manifest.yaml; see 'Start a layer' in the README" % outside)
        for via in VIAS:
            with self.subTest(via=via):
                self.fatal(["mcp", "--inspect"], outside, 12, via=via, message=message)
        # §32: `mcp` itself starts there and answers (tests/test_live.py: NoLayerTest);
        # `serve` and `mcp --strict` keep exit 12
        self.fatal(["mcp", "--strict"], outside, 12, message=message)
        self.fatal(["serve", "--port", "0"], outside, 12, via="py", message=message)
        # --repo names the start; the current directory (a repository) is not used
        self.fatal(["mcp", "--inspect", "--repo", outside], self.repo, 12, via="py",
                   message=message)

    def test_start_in_a_subdirectory_and_repo_option(self):
        expected = expected_inspect(self.repo, SKELETON_URIS)
        outside = self.outside_dir()
        link = os.path.join(outside, "link-to-repo")
        os.symlink(self.repo, link)
        cases = [("cwd subdirectory", [], os.path.join(self.repo, ".ai", "repo", "rules"), "pyz"),
                 ("--repo root", ["--repo", self.repo], outside, "py"),
                 ("--repo subdirectory", ["--repo", os.path.join(self.repo, ".ai", "repo")],
                  outside, "pyz"),
                 ("--repo through a symlink", ["--repo", os.path.join(link, ".ai")], outside,
                  "py"),
                 ("--repo relative", ["--repo", os.path.join("link-to-repo", ".ai", "repo")],
                  outside, "pyz")]
        for name, extra, cwd, via in cases:
            with self.subTest(name):
                r = self.inspect(cwd, via=via, extra=extra)
                self.assertEqual(r.rc, 0, r)
                self.assertEqual(r.lines, expected)

    def test_repo_option_that_does_not_exist(self):
        missing = os.path.join(self.outside_dir(), "no", "such", "dir")
        for via in VIAS:
            with self.subTest(via=via):
                self.fatal(["mcp", "--inspect", "--repo", missing], self.repo, 13, via=via,
                           contains=missing)

    def test_legacy_layout(self):
        base = self.outside_dir()
        legacy = os.path.join(base, "legacy")
        os.makedirs(os.path.join(legacy, ".majordomus", "state"))
        start = os.path.join(legacy, "src", "deep")
        os.makedirs(start)
        message = ("project data lives under %s/.majordomus (the pre-.ai layout), which "
                   "nothing reads any more; run: majordomus migrate" % legacy)
        self.fatal(["mcp", "--inspect"], start, 12, via="py", message=message)
        # a .majordomus/ that holds bin/majordomus is not the legacy layout
        installed = os.path.join(base, "installed")
        support.write(installed, ".majordomus/bin/majordomus", "#!/bin/sh\n")
        self.fatal(["mcp", "--inspect"], installed, 12,
                   message="no Majordomus repository found from %s: no ancestor directory "
                           "carries .ai/manifest.yaml; see 'Start a layer' in the README"
                           % installed)

    def test_broken_manifest_stops_the_walk(self):
        outer = support.make_repo(self)
        inner = os.path.join(outer, "sub")
        support.write(inner, MANIFEST, "schema: ai-repository/v1\n\trepo:\n")
        start = os.path.join(inner, "deeper")
        os.makedirs(start)
        self.fatal(["mcp", "--inspect"], start, 10,
                   message=".ai/manifest.yaml: tab character on line 2")
        # only a regular file .ai/manifest.yaml marks a root: a directory of that name does
        # not, and the walk goes on to the parent
        other = os.path.join(outer, "other")
        os.makedirs(os.path.join(other, ".ai", "manifest.yaml"))
        r = self.inspect(other, via="py")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.lines, expected_inspect(outer, SKELETON_URIS))

    def test_layer_in_a_subdirectory_of_a_git_work_tree(self):
        # The root is where the manifest is; paths are relative to it, not to git's toplevel.
        outer = support.make_repo(self, skeleton=False, commit=False, name="mono")
        support.copy_layer(os.path.join(outer, "sub"))
        support.write(outer, "README.md", "# outer\n")
        support.commit_all(outer)
        root = os.path.join(outer, "sub")
        r = self.inspect(root)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.lines, expected_inspect(root, SKELETON_URIS))
        r = self.inspect(root, via="py", extra=["--format", "json"])
        self.assertEqual(r.rc, 0, r)
        report = r.json()["repository"]["repository"]
        self.assertEqual(report["root"], root)
        self.assertEqual(report["git"]["toplevel"], outer)


# ---------------------------------------------------------------------------------------
# §2.2 the manifest
# ---------------------------------------------------------------------------------------
class ManifestTests(LayerCase):

    def test_manifest_errors_in_processing_order(self):
        # No git here: every manifest error is found before git is needed, so each case
        # is a directory holding only its manifest; the cases run in parallel.
        base = self.outside_dir()
        sections = BASE_MANIFEST[BASE_MANIFEST.index("sections:"):]
        cases = [
            ("subset error before unknown keys",
             "schema: ai-repository/v1\nbogus: 1\nrepo:\n\tpath: repo\n",
             "tab character on line 4"),
            ("subset error: cannot parse",
             BASE_MANIFEST + "just some words\n",
             "cannot parse line %d: just some words" % (len(BASE_MANIFEST.splitlines()) + 1)),
            ("subset error: odd indentation",
             "schema: ai-repository/v1\nrepo:\n   path: repo\n",
             "odd indentation on line 3"),
            ("unknown keys before schema, in document order",
             BASE_MANIFEST.replace("ai-repository/v1", "ai-repository/v9")
             .replace("repo:\n  path: repo\n", "zeta: 1\nrepo:\n  path: repo\n  extra: x\n")
             + "alpha: [a]\n",
             "unknown key(s): zeta, repo.extra, alpha.0"),
            ("schema before missing keys",
             "schema: ai-repository/v9\n" + sections,
             "unsupported schema 'ai-repository/v9'; this executable reads ai-repository/v1"),
            ("missing repo.path",
             BASE_MANIFEST.replace("repo:\n  path: repo\n", ""),
             "missing key 'repo.path'"),
            ("missing repo.path (parent without child vanishes)",
             BASE_MANIFEST.replace("repo:\n  path: repo\n", "repo:\n"),
             "missing key 'repo.path'"),
            ("missing local.implicit_context",
             BASE_MANIFEST.replace("  implicit_context: false\n", ""),
             "missing key 'local.implicit_context'"),
            ("missing local.path",
             BASE_MANIFEST.replace("  path: local\n", ""),
             "missing key 'local.path'"),
            ("missing sections",
             BASE_MANIFEST[:BASE_MANIFEST.index("sections:")],
             "missing key 'sections'"),
            ("tracked quoted",
             BASE_MANIFEST.replace("tracked: false", 'tracked: "no"'),
             "key 'local.tracked' must be a boolean"),
            ("implicit_context yes",
             BASE_MANIFEST.replace("implicit_context: false", "implicit_context: yes"),
             "key 'local.implicit_context' must be a boolean"),
            ("repo.path integer",
             BASE_MANIFEST.replace("  path: repo\n", "  path: 5\n"),
             "key 'repo.path' must be a string"),
            ("local.path boolean",
             BASE_MANIFEST.replace("  path: local\n", "  path: true\n"),
             "key 'local.path' must be a string"),
            ("section integer",
             BASE_MANIFEST.replace("  rules: repo/rules\n", "  rules: 5\n"),
             "key 'sections.rules' must be a string"),
            ("context.documents not a list",
             BASE_MANIFEST + "context:\n  documents: README.md\n",
             "key 'context.documents' must be a list"),
        ]
        cases.append(("schema missing",
                      BASE_MANIFEST.replace("schema: ai-repository/v1\n", ""), None))
        jobs = []
        for i, (name, text, reason) in enumerate(cases):
            d = os.path.join(base, "case%02d" % i)
            support.write(d, MANIFEST, text)
            jobs.append((["mcp", "--inspect"], d, VIAS[i % 2], {"MAJORDOMUS_LOG": "off"}))
        # a valid manifest (with the optional context.documents) goes on to the sources
        # and then to git
        valid = support.make_repo(self, git_init=False)
        support.write(valid, MANIFEST, BASE_MANIFEST + "context:\n  documents: [README.md]\n")
        jobs.append((["mcp", "--inspect"], valid, "pyz", {"MAJORDOMUS_LOG": "off"}))
        outs = self.mj_parallel(jobs)
        for (name, text, reason), r in zip(cases, outs):
            with self.subTest(name):
                if reason is None:
                    self.assert_fatal(r, 10, prefix=".ai/manifest.yaml: unsupported schema '",
                                      suffix="'; this executable reads ai-repository/v1")
                else:
                    self.assert_fatal(r, 10, message=".ai/manifest.yaml: " + reason)
        with self.subTest("a valid manifest goes on to git"):
            self.assert_fatal(outs[-1], 13, prefix="git: ", suffix=GIT_SUFFIX)


# ---------------------------------------------------------------------------------------
# §4.2 the sources file
# ---------------------------------------------------------------------------------------
class SourcesTests(LayerCase):

    def test_sources_fatal_errors(self):
        base = self.outside_dir()
        rule = cls_entry("rule", "rule", ":(glob).ai/repo/rules/**/*.md", True)
        policy = cls_entry("policy", "policy", ":(glob).ai/repo/policy.yaml", True)
        good = "version: 1\nsources:\n" + policy + rule
        cases = [
            ("subset error", "version: 1\nsources:\n  - id: rule\n   kind: rule\n",
             ["odd indentation on line 4"]),
            ("unknown top-level key", "version: 1\nextra: 2\nsources:\n" + policy + rule,
             ["unknown key 'extra'"]),
            ("unknown class key", good + "    note: hi\n",
             ["class 'rule': unknown key 'note'"]),
            ("missing key, class without id",
             "version: 1\nsources:\n" + policy + rule.replace("  - id: rule\n    kind",
                                                                 "  - kind"),
             ["class 1: missing key 'id'"]),
            ("missing key, class with id",
             "version: 1\nsources:\n" + policy
             + rule.replace("    pathspec: ':(glob).ai/repo/rules/**/*.md'\n", ""),
             # §4.2: N is the position when there is no id, "else its id"
             ["class 'rule': missing key 'pathspec'", "class rule: missing key 'pathspec'"]),
            ("discovery not vcs",
             "version: 1\nsources:\n" + policy
             + rule.replace("discovery: vcs", "discovery: filesystem"),
             ["class 'rule': discovery 'filesystem' is not vcs"]),
            ("version", good.replace("version: 1", "version: 2"), ["version 2 is not 1"]),
            ("declared twice", good + rule, ["class 'rule' is declared twice"]),
            ("pathspec without :(glob)",
             "version: 1\nsources:\n" + policy
             + rule.replace("':(glob).ai/repo/rules/**/*.md'", "'.ai/repo/rules/*.md'"),
             ["class 'rule': pathspec must start with :(glob)"]),
        ]
        cases.append(("a valid sources file goes on to git", good, None))
        jobs = []
        for i, (name, text, reasons) in enumerate(cases):
            # only the manifest and the sources file: both are read before git is needed
            d = os.path.join(base, "case%02d" % i)
            support.write(d, MANIFEST, BASE_MANIFEST)
            support.write(d, SOURCES, text)
            jobs.append((["mcp", "--inspect"], d, VIAS[i % 2], {"MAJORDOMUS_LOG": "off"}))
        for (name, text, reasons), r in zip(cases, self.mj_parallel(jobs)):
            with self.subTest(name):
                if reasons is None:
                    self.assert_fatal(r, 13, prefix="git: ", suffix=GIT_SUFFIX)
                else:
                    self.assert_fatal(r, 10,
                                      alternatives=[SOURCES + ": " + x for x in reasons])

    def test_no_knowledge_section(self):
        d = support.make_repo(self, git_init=False)
        support.write(d, MANIFEST, BASE_MANIFEST.replace("  knowledge: repo/knowledge\n", ""))
        self.fatal(["mcp", "--inspect"], d, 10, via="py",
                   message=".ai/manifest.yaml: no 'knowledge' section, so no sources "
                           "can be declared")

    def test_missing_sources_file(self):
        d = support.make_repo(self, git_init=False)
        os.remove(os.path.join(d, SOURCES))
        self.fatal(["mcp", "--inspect"], d, 13, contains="sources.yaml")

    def test_sources_file_follows_the_knowledge_section(self):
        d = support.make_repo(self, git_init=False)
        support.write(d, MANIFEST, BASE_MANIFEST.replace("knowledge: repo/knowledge",
                                                         "knowledge: repo/kb"))
        support.write(d, ".ai/repo/kb/sources.yaml", skeleton_sources())
        os.remove(os.path.join(d, SOURCES))
        r = self.inspect(d, extra=["--discovery", "filesystem"])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.lines, expected_inspect(d, SKELETON_URIS, discovery="filesystem"))


# ---------------------------------------------------------------------------------------
# §4.3 discovery
# ---------------------------------------------------------------------------------------
class DiscoveryTests(LayerCase):
    """One repository exercising vcs and filesystem discovery (not mutated by the tests)."""

    EXTRA_CLASSES = (
        cls_entry("notes", "document", ":(glob)notes/[ab]?.md"),
        cls_entry("docs2", "document", ":(glob)docs/**/*.md"),
        cls_entry("skills", "document", ":(glob).ai/repo/skills/*.md", True),
        cls_entry("layer", "document", ":(glob).ai/local*/**/*.md"),
        cls_entry("planted", "document", ":(glob)**/planted.md"),
    )

    @classmethod
    def setUpClass(cls):
        files = {SOURCES: skeleton_sources(*cls.EXTRA_CLASSES)}
        for rel in ("docs/a.md", "docs/gone.md", "docs/sub/deep.md", "notes/a1.md",
                    "notes/b2.md", "notes/c3.md", "notes/a12.md", "notes/sub/a1.md",
                    "notes/sub/planted.md", ".ai/localx/n.md"):
            files[rel] = "# %s\n" % rel
        repo = cls.repo = support.make_repo(_ClassCleanup(cls), files=files)
        # the local half, force-added: still never served
        support.write(repo, ".ai/local/state/note.md", "# local note\n")
        support.git(repo, "add", "-f", ".ai/local/state/open-questions.md",
                    ".ai/local/state/note.md")
        support.git(repo, "commit", "-q", "--no-gpg-sign", "-m", "force-add the local half")
        # deleted from the work tree, still in the index
        os.remove(os.path.join(repo, "docs", "gone.md"))
        # staged, never committed
        support.write(repo, "docs/staged.md", "# staged\n")
        support.git(repo, "add", "docs/staged.md")
        # untracked
        support.write(repo, "docs/untracked.md", "# untracked\n")
        # untracked symlinks: a file and a directory (filesystem discovery never follows them)
        os.symlink("a.md", os.path.join(repo, "docs", "link.md"))
        os.symlink("../notes", os.path.join(repo, "docs", "linked"))
        # a file inside .git that a pattern would match
        support.write(repo, ".git/planted.md", "# not a source\n")

    COMMON = [
        "majordomus://document/.ai/localx/n.md",
        "majordomus://document/docs/a.md",
        "majordomus://document/docs/staged.md",
        "majordomus://document/docs/sub/deep.md",
        "majordomus://document/notes/a1.md",
        "majordomus://document/notes/b2.md",
        "majordomus://document/notes/sub/planted.md",
    ]
    SKILLS = fail("required_source_empty", None,
                  "required class 'skills' (:(glob).ai/repo/skills/*.md) discovered nothing")

    @staticmethod
    def twice(path):
        return warn("claimed_twice", path,
                    "matched by class 'docs2' after class 'document'; kept under 'document'")

    def test_vcs_discovery(self):
        for via in VIAS:
            with self.subTest(via=via):
                r = self.inspect(self.repo, via=via)
                self.assertEqual(r.rc, 10, r)
                self.assertEqual(resources_of(r.lines),
                                 support.QUERY_URIS
                                 + sorted(SKELETON_URIS + self.COMMON))
                diags = diags_of(r.lines)
                self.assertEqual(diags[:4], [self.twice("docs/a.md"),
                                             self.twice("docs/gone.md"),
                                             self.twice("docs/staged.md"), self.SKILLS])
                self.assertEqual(len(diags), 5, diags)
                prefix = fail("unreadable", "docs/gone.md", "")
                self.assertTrue(diags[4].startswith(prefix), diags[4])
                self.assertGreater(len(diags[4]), len(prefix))
                lines = [l for l in r.lines if l not in diags]
                uris = SKELETON_URIS + self.COMMON
                self.assertEqual(lines, expected_inspect(self.repo, uris, state="degraded"))
                self.assertNotIn(".ai/local/", r.out)

    def test_filesystem_discovery(self):
        uris = SKELETON_URIS + self.COMMON + ["majordomus://document/docs/untracked.md"]
        diags = [self.twice("docs/a.md"), self.twice("docs/staged.md"),
                 self.twice("docs/untracked.md"), self.SKILLS]
        for via in VIAS:
            with self.subTest(via=via):
                r = self.inspect(self.repo, via=via, extra=["--discovery", "filesystem"])
                self.assertEqual(r.rc, 10, r)
                self.assertEqual(r.lines, expected_inspect(self.repo, uris,
                                                           discovery="filesystem",
                                                           diags=diags))
                self.assertNotIn(".ai/local/", r.out)
                self.assertNotIn("linked", r.out)
                self.assertNotIn("link.md", r.out)
                self.assertNotIn(".git/", r.out)

    def test_json_report_of_discovery(self):
        r = self.inspect(self.repo, extra=["--format", "json"])
        self.assertEqual(r.rc, 10, r)
        doc = r.json()
        report = doc["repository"]
        self.assertEqual(report["state"], "degraded")
        self.assertEqual(report["repository"]["discovery"], "vcs")
        self.assertEqual(report["repository"]["source_classes"],
                         SKELETON_CLASSES + [["notes", "document"], ["docs2", "document"],
                                             ["skills", "document"], ["layer", "document"],
                                             ["planted", "document"]])
        self.assertEqual(report["repository"]["git"]["working_tree"], "dirty")
        codes = [(d["severity"], d["code"], d.get("path")) for d in report["diagnostics"]]
        self.assertEqual(codes, [("warning", "claimed_twice", "docs/a.md"),
                                 ("warning", "claimed_twice", "docs/gone.md"),
                                 ("warning", "claimed_twice", "docs/staged.md"),
                                 ("error", "required_source_empty", None),
                                 ("error", "unreadable", "docs/gone.md")])
        for d in doc["resources"]:
            path = d["_meta"]["majordomus"]["provenance"]["path"] if d["uri"] not in \
                support.QUERY_URIS else None
            self.assertFalse(path and path.startswith(".ai/local/"), d)
        # text and JSON tell the same diagnostics
        t = self.inspect(self.repo)
        self.assertEqual([json_diag_line(d) for d in report["diagnostics"]], diags_of(t.lines))

    def test_claimed_twice_is_only_a_warning(self):
        repo = support.make_repo(self, files={
            SOURCES: skeleton_sources(cls_entry("again", "document", ":(glob)*.md")),
        })
        r = self.inspect(repo, via="py")
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.lines, expected_inspect(repo, SKELETON_URIS, diags=[
            warn("claimed_twice", "README.md",
                 "matched by class 'again' after class 'readme'; kept under 'readme'")]))
        self.assertIn("state       ok", r.lines)

    def test_git_unusable(self):
        bindir = self.no_git_path(self)
        repo = support.make_repo(self)
        with self.subTest("git not installed"):
            self.fatal(["mcp", "--inspect"], repo, 13, env={"PATH": bindir},
                       prefix="git: ", suffix=GIT_SUFFIX)
        with self.subTest("git not installed, filesystem discovery"):
            r = self.inspect(repo, extra=["--discovery", "filesystem", "--format", "json"],
                             env={"PATH": bindir})
            self.assertEqual(r.rc, 0, r)
            report = r.json()["repository"]
            self.assertEqual(report["state"], "ok")
            git = report["repository"]["git"]
            self.assertEqual(list(git), ["state", "reason"], git)
            self.assertEqual(git["state"], "unavailable")
            self.assertIsInstance(git["reason"], str)
            self.assertNotEqual(git["reason"], "")
        plain = support.make_repo(self, git_init=False)
        with self.subTest("not a git work tree"):
            self.fatal(["mcp", "--inspect"], plain, 13, via="py", prefix="git: ",
                       suffix=GIT_SUFFIX)
        with self.subTest("not a git work tree, filesystem discovery"):
            r = self.inspect(plain, via="py", extra=["--discovery", "filesystem"])
            self.assertEqual(r.rc, 0, r)
            self.assertEqual(r.lines, expected_inspect(plain, SKELETON_URIS,
                                                       discovery="filesystem"))


# ---------------------------------------------------------------------------------------
# §5.1 / §5.3 diagnostics, each provoked once
# ---------------------------------------------------------------------------------------
def _padded_front_matter(head, size):
    """Front matter text of exactly `size` bytes: `head` then comment lines."""
    body = head
    while len(body) + 100 <= size:
        body += "#" + "x" * 98 + "\n"
    rest = size - len(body)
    if rest:
        assert rest >= 2
        body += "#" + "x" * (rest - 2) + "\n"
    assert len(body.encode("utf-8")) == size
    return body


RULE_FM = "---\nid: %s\nversion: 1\n%s---\n\n# %s\n"
LATIN1 = b"# caf\xe9\n"
try:
    LATIN1.decode("utf-8")
except UnicodeDecodeError as exc:
    LATIN1_MESSAGE = str(exc)
HUGE_FM = _padded_front_matter("id: project.huge\nversion: 1\n", 70028)
EDGE_FM = _padded_front_matter("id: project.edge\nversion: 1\n", 65536)


class DiagnosticsTests(LayerCase):

    @classmethod
    def setUpClass(cls):
        with open(os.path.join(support.SKELETON, VENDOR_RULE), "rb") as f:
            vendored = f.read()
        files = {
            SOURCES: skeleton_sources(
                cls_entry("widgets", "widget", ":(glob)widgets/*.txt"),
                cls_entry("policies", "policy", ":(glob)policies/*.yaml")),
            "widgets/a.txt": "hello\n",
            "docs/gone.md": "# Gone\n",
            "docs/big.md": b"# Big\n" + b"a" * (4194305 - 6),
            "docs/limit.md": b"# Limit\n" + b"a" * (4194304 - 8),
            "docs/latin1.md": LATIN1,
            ".ai/repo/profiles/bad.yaml": "name: bad\n  x: 1\n",
            ".ai/repo/profiles/anon.yaml": "description: nobody\n",
            ".ai/repo/profiles/slash.yaml": "name: a/b\n",
            ".ai/repo/profiles/flag.yaml": "name: true\n",
            ".ai/repo/profiles/num.yaml": "name: 007\n",
            ".ai/repo/rules/project/tab.v1.md": "---\nid: project.tab\n\tversion: 1\n---\n",
            ".ai/repo/rules/project/huge.v1.md": "---\n" + HUGE_FM + "---\n# Huge\n",
            ".ai/repo/rules/project/edge.v1.md": "---\n" + EDGE_FM + "---\n# Edge\n",
            ".ai/repo/rules/project/extra.v1.md": RULE_FM % (
                "project.extra", "kind: prompt\nzz_extra: 1\nx-majordomus:\n  bogus: y\n",
                "Extra"),
            ".ai/repo/rules/project/mismatch.v1.md": RULE_FM % (
                "project.mismatch", "kind: prompt\n", "Mismatch"),
            ".ai/repo/rules/project/nover.v1.md": "---\nid: project.nover\n---\n# x\n",
            ".ai/repo/rules/project/scope-integrity.v1.md": vendored,
            ".ai/repo/prompts/plain.md": "# Plain\n\nno front matter\n",
            ".ai/repo/workflows/odd.md": "---\nkind: rule\ntitle: Odd\n---\n# Odd\n",
            "policies/ok.yaml": "version: 1\n",
            "policies/quoted.yaml": 'version: "1"\n',
            "policies/v2.yaml": "version: 2\n",
        }
        repo = cls.repo = support.make_repo(_ClassCleanup(cls), files=files)
        # a committed symlink
        os.symlink("../README.md", os.path.join(repo, "docs", "link.md"))
        support.commit_all(repo, "symlink")
        # a gitlink (submodule entry): a directory in the work tree
        head = support.git(repo, "rev-parse", "HEAD").strip()
        support.git(repo, "update-index", "--add", "--cacheinfo",
                    "160000,%s,docs/sub.md" % head)
        os.makedirs(os.path.join(repo, "docs", "sub.md"))
        support.git(repo, "commit", "-q", "--no-gpg-sign", "-m", "gitlink")
        # deleted from the work tree, still in the index
        os.remove(os.path.join(repo, "docs", "gone.md"))

    URIS = [
        "majordomus://document/.ai/repo/rules/README.md",
        "majordomus://document/.ai/repo/workflows/README.md",
        "majordomus://document/.ai/repo/workflows/plan.md",
        "majordomus://document/.ai/repo/workflows/task-lifecycle.md",
        "majordomus://document/README.md",
        "majordomus://document/docs/limit.md",
        "majordomus://policy/.ai/repo/policy.yaml",
        "majordomus://policy/policies/ok.yaml",
        "majordomus://profile/7",
        "majordomus://profile/implementation",
        "majordomus://profile/true",
        "majordomus://prompt/continue",
        "majordomus://rule/project.edge@1",
    ]
    DUP = ("%s is claimed by .ai/repo/rules/project/scope-integrity.v1.md and %s; every "
           "claimant is excluded" % (RULE_URI, VENDOR_RULE))
    BEFORE_UNREADABLE = [
        fail("missing_field", ".ai/repo/profiles/anon.yaml",
             "identity field 'name' is absent or empty"),
        fail("malformed_yaml", ".ai/repo/profiles/bad.yaml", "unexpected indentation on line 2"),
        fail("missing_field", ".ai/repo/profiles/slash.yaml",
             "identity field 'name' carries '/', '@' or whitespace: 'a/b'"),
        fail("unknown_key", ".ai/repo/rules/project/extra.v1.md",
             "key(s) not in share/allow/rule.txt: zz_extra, x-majordomus.bogus"),
        fail("malformed_front_matter", ".ai/repo/rules/project/huge.v1.md",
             "front matter is 70028 bytes, over the 65536 byte limit"),
        fail("kind_mismatch", ".ai/repo/rules/project/mismatch.v1.md",
             "declares kind 'prompt' but was discovered by class 'rule' as 'rule'"),
        fail("missing_field", ".ai/repo/rules/project/nover.v1.md",
             "identity field 'version' is absent or empty"),
        fail("malformed_front_matter", ".ai/repo/rules/project/tab.v1.md",
             "tab character on line 2"),
        fail("missing_front_matter", ".ai/repo/prompts/plain.md",
             "no front matter, and the kind requires it"),
        fail("kind_mismatch", ".ai/repo/workflows/odd.md",
             "declares kind 'rule' but was discovered by class 'workflow' as 'document'"),
        fail("oversized", "docs/big.md", "4194305 bytes, over the 4194304 byte limit"),
    ]
    AFTER_UNREADABLE = [
        fail("invalid_utf8", "docs/latin1.md", LATIN1_MESSAGE),
        fail("symlink", "docs/link.md", "a symlink is not read; sources are regular files"),
        fail("not_a_file", "docs/sub.md", "not a regular file"),
        fail("unknown_kind", "widgets/a.txt",
             "class 'widgets' declares kind 'widget', which this executable does not read"),
        fail("missing_field", "policies/quoted.yaml", "no integer 'version'"),
        fail("unsupported_version", "policies/v2.yaml",
             "version 2 is not among the supported [1]"),
        fail("duplicate_identity", ".ai/repo/rules/project/scope-integrity.v1.md", DUP),
        fail("duplicate_identity", VENDOR_RULE, DUP),
    ]

    def test_each_diagnostic_in_index_order(self):
        n = len(self.BEFORE_UNREADABLE)
        for via in VIAS:
            with self.subTest(via=via):
                r = self.inspect(self.repo, via=via)
                self.assertEqual(r.rc, 10, r)
                diags = diags_of(r.lines)
                self.assertEqual(diags[:n], self.BEFORE_UNREADABLE)
                prefix = fail("unreadable", "docs/gone.md", "")
                self.assertTrue(diags[n].startswith(prefix), diags[n:n + 1])
                self.assertGreater(len(diags[n]), len(prefix))
                self.assertEqual(diags[n + 1:], self.AFTER_UNREADABLE)
                # every other file still serves; the duplicated URI is gone
                self.assertEqual([l for l in r.lines if l not in diags],
                                 expected_inspect(self.repo, self.URIS, state="degraded"))
                self.assertNotIn("resource    " + RULE_URI, r.lines)

    def test_json_diagnostics_match_the_text(self):
        r = self.inspect(self.repo, extra=["--format", "json"])
        self.assertEqual(r.rc, 10, r)
        report = r.json()["repository"]
        self.assertEqual(report["state"], "degraded")
        self.assertEqual(report["objects"], len(self.URIS))
        self.assertEqual(report["kinds"], {"document": 6, "policy": 2, "profile": 3,
                                           "prompt": 1, "rule": 1})
        self.assertEqual(list(report["kinds"]), ["document", "policy", "profile", "prompt",
                                                 "rule"])
        for d in report["diagnostics"]:
            self.assertEqual(list(d), ["severity", "code", "path", "message"], d)
        lines = [json_diag_line(d) for d in report["diagnostics"]]
        n = len(self.BEFORE_UNREADABLE)
        self.assertEqual(lines[:n], self.BEFORE_UNREADABLE)
        self.assertEqual(report["diagnostics"][n]["code"], "unreadable")
        self.assertEqual(lines[n + 1:], self.AFTER_UNREADABLE)
        self.assertEqual([x["uri"] for x in r.json()["resources"]],
                         support.QUERY_URIS + self.URIS)

    def test_strict_counts_every_error(self):
        total = len(self.BEFORE_UNREADABLE) + 1 + len(self.AFTER_UNREADABLE)
        message = ("declarative state carries %d error(s); refusing to serve under --strict "
                   "(run: majordomus mcp --inspect)" % total)
        self.fatal(["mcp", "--inspect", "--strict"], self.repo, 10, message=message)
        self.fatal(["mcp", "--inspect", "--strict", "--format", "json"], self.repo, 10,
                   via="py", message=message)


# ---------------------------------------------------------------------------------------
# §6 inspect on the skeleton, §14
# ---------------------------------------------------------------------------------------
class ReferenceSkeletonTest(LayerCase):
    """§14: the skeleton of the reference data (the layer the shell tool's `init` writes),
    committed, serves state ok with the objects §14 names and nothing under .ai/local/
    (skipped by name where the reference data is absent)."""

    def test_section_14(self):
        repo = support.make_repo(self, skeleton=False, commit=False)
        support.copy_layer(repo, support.reference_or_skip(self, "fixtures", "skeleton"))
        support.commit_all(repo)
        for via in VIAS:
            with self.subTest(via=via):
                r = self.inspect(repo, via=via)
                self.assertEqual(r.rc, 0, r)
                self.assertIn("state       ok", r.lines)
                self.assertEqual(r.lines, expected_inspect(repo, SKELETON_URIS))
                for uri in ("majordomus://policy/.ai/repo/policy.yaml",
                            "majordomus://profile/implementation", "majordomus://prompt/continue",
                            "majordomus://rule/majordomus.scope-integrity@1"):
                    self.assertIn("resource    " + uri, r.lines)
                self.assertNotIn(".ai/local", r.out)


class InspectSkeletonTests(LayerCase):

    @classmethod
    def setUpClass(cls):
        cls.repo = support.make_repo(_ClassCleanup(cls))

    def test_text_exactly(self):
        expected = expected_inspect(self.repo, SKELETON_URIS)
        # the spec's own example of the format, checked literally once
        self.assertIn("kind        document     5", expected)
        self.assertIn("capabilities 27 (18 builtin, 9 declarative)", expected)
        for via in VIAS:
            with self.subTest(via=via):
                r = self.inspect(self.repo, via=via)
                self.assertEqual(r.rc, 0, r)
                self.assertEqual(r.lines, expected)
                self.assertTrue(r.out.endswith("\n"))
                self.assertIn("state       ok", r.lines)
                self.assertNotIn(".ai/local", r.out)
                self.assert_log_lines(r.err)
        with self.subTest("--strict with no error"):
            r = self.inspect(self.repo, via="py", extra=["--strict"])
            self.assertEqual(r.rc, 0, r)
            self.assertEqual(r.lines, expected)
        with self.subTest("--format text"):
            r = self.inspect(self.repo, extra=["--format", "text"])
            self.assertEqual(r.rc, 0, r)
            self.assertEqual(r.lines, expected)

    def test_json(self):
        rule_size = os.path.getsize(os.path.join(self.repo, VENDOR_RULE))
        readme_size = os.path.getsize(os.path.join(self.repo, "README.md"))
        for via in VIAS:
            with self.subTest(via=via):
                r = self.inspect(self.repo, via=via, extra=["--format", "json"])
                self.assertEqual(r.rc, 0, r)
                doc = r.json()
                self.assertEqual(list(doc), ["repository", "resources", "tools"])
                support.check_layer_report(self, doc["repository"], self.repo)
                self.assertEqual([x["uri"] for x in doc["resources"]],
                                 support.QUERY_URIS + SKELETON_URIS)
                self.assertEqual([t["name"] for t in doc["tools"]], TOOLS)
                by_uri = {x["uri"]: x for x in doc["resources"]}
                self.assertEqual(by_uri[RULE_URI], {
                    "uri": RULE_URI, "name": "majordomus.scope-integrity@1",
                    "title": "Stay inside the claimed paths",
                    "description": "A task changes only the files it said it would change.",
                    "mimeType": "text/markdown",
                    "_meta": {"majordomus": {
                        "id": "rule.majordomus.scope-integrity@1", "kind": "rule",
                        "identity": "majordomus.scope-integrity@1",
                        "provenance": {"path": VENDOR_RULE,
                                       "directory": os.path.dirname(VENDOR_RULE),
                                       "source_class": "rule", "section": "rules",
                                       "bytes": rule_size}}}})
                readme = by_uri["majordomus://document/README.md"]
                self.assertEqual(readme["_meta"]["majordomus"]["provenance"],
                                 {"path": "README.md", "directory": ".",
                                  "source_class": "readme", "bytes": readme_size})
                self.assertEqual(list(readme["_meta"]["majordomus"]["provenance"]),
                                 ["path", "directory", "source_class", "bytes"])
                self.assertEqual(readme["title"], "Fixture layer")
                self.assertNotIn("description", readme)
                self.assertEqual(by_uri["majordomus://repository"]["_meta"]["majordomus"]["id"],
                                 "repository.info")
                self.assertNotIn(".ai/local", r.out)


class SkeletonLifecycleTests(LayerCase):

    ALPHA = ("---\nid: project.alpha\nversion: 1\ntitle: Alpha\n"
             "description: The first project rule.\n---\n\n# Alpha\n\nBody.\n")
    ALPHA_PATH = ".ai/repo/rules/project/alpha.v1.md"
    ALPHA_URI = "majordomus://rule/project.alpha@1"

    def test_rule_added_then_removed(self):
        repo = support.make_repo(self)
        support.write(repo, self.ALPHA_PATH, self.ALPHA)
        with self.subTest("untracked: not served"):
            r = self.inspect(repo)
            self.assertEqual(r.rc, 0, r)
            # §32: not served, and said (a note: no diagnostic, the state stays ok)
            # (in the manifest's order: rules before skills)
            self.assertEqual(r.lines, expected_inspect(repo, SKELETON_URIS, notes=[
                "note        1 file(s) under .ai/repo/rules not staged: git add"] + LAYER_NOTES))
        support.commit_all(repo, "add alpha")
        for via in VIAS:
            with self.subTest("committed: served", via=via):
                r = self.inspect(repo, via=via)
                self.assertEqual(r.rc, 0, r)
                self.assertEqual(r.lines, expected_inspect(repo, SKELETON_URIS
                                                           + [self.ALPHA_URI]))
                self.assertIn("kind        rule         2", r.lines)
                self.assertIn("capabilities 28 (18 builtin, 10 declarative)", r.lines)
        support.git(repo, "rm", "-q", self.ALPHA_PATH)
        support.commit_all(repo, "remove alpha")
        with self.subTest("removed: dropped"):
            r = self.inspect(repo, via="py")
            self.assertEqual(r.rc, 0, r)
            self.assertEqual(r.lines, expected_inspect(repo, SKELETON_URIS))

    def test_broken_rule(self):
        path = ".ai/repo/rules/project/broken.v1.md"
        repo = support.make_repo(self, files={path: "---\nid: project.broken\nversion: 1\n"})
        line = fail("malformed_front_matter", path,
                    "front matter opened on line 1 and never closed")
        for via in VIAS:
            with self.subTest(via=via):
                r = self.inspect(repo, via=via)
                self.assertEqual(r.rc, 10, r)
                self.assertEqual(r.lines, expected_inspect(repo, SKELETON_URIS, diags=[line],
                                                           context=1))
                self.assertIn("state       degraded", r.lines)
                self.assertTrue(any(re.match(
                    r"^FAIL malformed_front_matter +\.ai/repo/rules/project/broken\.v1\.md", l)
                    for l in r.lines))
                self.assertIn("resource    " + RULE_URI, r.lines)
        with self.subTest("json"):
            r = self.inspect(repo, extra=["--format", "json"])
            self.assertEqual(r.rc, 10, r)
            report = r.json()["repository"]
            self.assertEqual(report["state"], "degraded")
            self.assertEqual(report["diagnostics"], [
                {"severity": "error", "code": "malformed_front_matter", "path": path,
                 "message": "front matter opened on line 1 and never closed"}])
        message = ("declarative state carries 1 error(s); refusing to serve under --strict "
                   "(run: majordomus mcp --inspect)")
        for args, via in ((["mcp", "--strict"], "pyz"), (["mcp", "--inspect", "--strict"], "py")):
            with self.subTest(via=via, args=args):
                self.fatal(args, repo, 10, via=via, message=message)
        with self.subTest("--strict at the default log level"):
            r = self.mj(["mcp", "--strict"], repo)
            self.assert_fatal(r, 10, message=message, quiet=False)


# ---------------------------------------------------------------------------------------
# §12 read-only
# ---------------------------------------------------------------------------------------
GIT_WRAPPER = """#!/bin/sh
printf '%%s\\t%%s\\n' "${GIT_OPTIONAL_LOCKS-unset}" "$*" >> '%s'
exec '%s' "$@"
"""
READ_ONLY_GIT = ("ls-files", "rev-parse", "symbolic-ref", "status")


def git_subcommand(argv):
    args = argv.split(" ")
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-C", "-c"):
            i += 2
            continue
        if a.startswith("-") or a == "":
            i += 1
            continue
        return a, args[i + 1:]
    return None, []


class InspectNotesTests(LayerCase):
    """§32: `note` lines of --inspect's text, after the tools, for what the reader cannot
    call an error: a section path naming nothing on disk (a misspelt `rules: repo/rulez`),
    and files under a section's path the git index does not hold. Not diagnostics: the
    state, the exit code, the report and the JSON form stay as they are."""

    def layer(self, rules_path):
        manifest = support.manifest_yaml("rules", "knowledge").replace(
            "rules: repo/rules", "rules: " + rules_path)
        return support.make_repo(self, {
            ".ai/manifest.yaml": manifest,
            ".ai/repo/knowledge/sources.yaml": support.sources_yaml(
                ("rule", "rule", ":(glob).ai/repo/rules/**/*.md")),
            ".ai/repo/rules/one.v1.md": "---\nid: team.one\nversion: 1\ntitle: One\n---\n"
                                        "\n# One\n"}, skeleton=False)

    def test_a_misspelt_section_path(self):
        repo = self.layer("repo/rulez")
        for via in VIAS:
            with self.subTest(via=via):
                r = self.inspect(repo, via=via)
                self.assertEqual(r.rc, 0, r)
                self.assertIn("state       ok", r.lines)
                notes = [l for l in r.lines if l.startswith("note")]
                self.assertEqual(notes, [
                    "note        sections.rules: .ai/repo/rulez names nothing on disk"])
                self.assertEqual(r.lines[-1], notes[-1], "the notes follow the tools")
                self.assertTrue(r.lines[-2].startswith("tool        "), r.lines)

    def test_files_not_staged_and_the_json_form_unchanged(self):
        repo = self.layer("repo/rules")

        def json_form(via="pyz"):
            """The JSON form, but for the work tree's state (dirty once files are added)."""
            value = json.loads(self.inspect(repo, via=via, extra=["--format", "json"]).out)
            del value["repository"]["repository"]["git"]["working_tree"]
            return value
        json_before = json_form()
        text_before = self.inspect(repo).lines
        self.assertEqual([l for l in text_before if l.startswith("note")], [])
        support.write(repo, ".ai/repo/rules/two.v1.md", "---\nid: team.two\nversion: 1\n---\n")
        support.write(repo, ".ai/repo/rules/deep/three.v1.md", "---\nid: team.three\n---\n")
        support.write(repo, ".ai/repo/rules/ignored.swp", "x")
        support.write(repo, ".gitignore", "*.swp\n")
        support.git(repo, "add", ".gitignore")
        note = "note        2 file(s) under .ai/repo/rules not staged: git add"
        for via in VIAS:
            with self.subTest(via=via):
                r = self.inspect(repo, via=via)
                self.assertEqual(r.rc, 0, r)
                self.assertEqual(r.lines, text_before + [note])
                # the JSON form (and in it the report and the state) is what it was
                self.assertEqual(json_form(via), json_before)
        # a filesystem walk serves them: nothing to stage then
        r = self.inspect(repo, extra=["--discovery", "filesystem"])
        self.assertEqual([l for l in r.lines if l.startswith("note")], [])
        support.git(repo, "add", ".ai")
        r = self.inspect(repo)
        self.assertEqual([l for l in r.lines if l.startswith("note")], [])


class ReadOnlyTests(LayerCase):

    def test_nothing_changes_and_git_is_only_read(self):
        broken = ".ai/repo/rules/project/broken.v1.md"
        repo = support.make_repo(self, files={broken: "---\nid: project.broken\nversion: 1\n"})
        support.write(repo, "docs/untracked.md", "# untracked\n")
        real_git = shutil.which("git")
        tools = support.tempdir(self)
        log = os.path.join(tools, "git.log")
        wrapper_dir = os.path.join(tools, "bin")
        os.makedirs(wrapper_dir)
        wrapper = support.write(wrapper_dir, "git", GIT_WRAPPER % (log, real_git))
        os.chmod(wrapper, 0o755)
        env = {"PATH": wrapper_dir + os.pathsep + os.environ.get("PATH", "")}

        # Backdate the work tree, then let one `git status` (inside snapshot) refresh the
        # index: git rewrites an index holding racily-clean entries (mtime in the index's
        # own second) on every status, which would make the proof flaky.
        past = os.stat(os.path.join(repo, ".git", "index")).st_mtime - 10
        for dirpath, dirnames, filenames in os.walk(repo):
            dirnames[:] = [n for n in dirnames if n != ".git"]
            for name in filenames:
                os.utime(os.path.join(dirpath, name), (past, past), follow_symlinks=False)
        support.snapshot(repo)
        before = support.snapshot(repo)
        self.assertEqual(support.snapshot(repo), before, "control: snapshot is not stable")

        commands = [
            (["mcp", "--inspect"], 10, True),
            (["mcp", "--inspect", "--format", "json"], 10, True),
            (["mcp", "--inspect", "--discovery", "filesystem"], 10, False),
            (["mcp", "--inspect", "--strict"], 10, True),
            (["mcp", "--strict"], 10, True),
            (["mcp", "--inspect", "--no-such-option"], 2, False),
        ]
        for i, (args, code, vcs) in enumerate(commands):
            via = VIAS[i % 2]
            with self.subTest(via=via, args=args):
                if os.path.exists(log):
                    os.remove(log)
                r = self.mj(args, repo, via=via, env=env)
                self.assertEqual(r.rc, code, r)
                calls = []
                if os.path.exists(log):
                    with open(log, "r", encoding="utf-8") as f:
                        calls = [l.rstrip("\n") for l in f if l.strip()]
                ls_files = 0
                for call in calls:
                    locks, argv = call.split("\t", 1)
                    self.assertEqual(locks, "0", "git run without GIT_OPTIONAL_LOCKS=0: "
                                     + argv)
                    sub, rest = git_subcommand(argv)
                    self.assertIn(sub, READ_ONLY_GIT, "not a read-only git command: "
                                  + argv)
                    if sub == "status":
                        self.assertTrue(any(a.startswith("--porcelain") for a in rest), argv)
                    if sub == "ls-files" and "--others" not in rest:
                        ls_files += 1     # (--others: --inspect's §32 note, not discovery)
                if vcs:
                    self.assertEqual(ls_files, 1, "git ls-files runs once: %r" % calls)
        self.assertEqual(support.snapshot(repo), before)


if __name__ == "__main__":
    unittest.main()
