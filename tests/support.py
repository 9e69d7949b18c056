"""Shared helpers for the test suite: scratch repositories, spawning the real program."""
import atexit
import hashlib
import json
import os
import queue
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The archive under test: the checkout's build, or MAJORDOMUS_TEST_PYZ (the test command's
# build by the interpreter running the suite, when that is not the interpreter that built
# the checkout's: run_all.interpreter_archive).
PYZ = os.environ.get("MAJORDOMUS_TEST_PYZ") or os.path.join(ROOT, "majordomus.pyz")
PY = os.path.join(ROOT, "majordomus.py")
# Reference data from elsewhere (the shell tools, the real layer, the skeleton; SPEC §28):
# found at MAJORDOMUS_REFERENCE, else ../shared beside the checkout. Tests that compare with
# it skip by name where it is absent (reference_or_skip); nothing else may need it.
REFERENCE = os.path.abspath(os.environ.get("MAJORDOMUS_REFERENCE") or os.path.join(
    os.path.dirname(ROOT), "shared"))


def reference(*parts):
    """The path of parts under the reference data (it may not exist)."""
    return os.path.join(REFERENCE, *parts)


def reference_missing(*parts):
    """None when parts exist under the reference data, else the reason a test that needs
    them is skipped: `no reference data at PATH`, PATH naming the group the data belongs
    to (its first two parts: fixtures/skeleton, oracle/shell, reference/allow…) or the
    first missing path below it, so that the test command counts each group's skipped
    tests on one line."""
    if os.path.exists(reference(*parts)):
        return None
    shown = reference(*parts[:2])
    for end in range(3, len(parts) + 1):
        if not os.path.exists(shown):
            break
        shown = reference(*parts[:end])
    return "no reference data at %s" % shown


def reference_or_skip(testcase, *parts):
    """The path of parts under the reference data, or skip testcase by name when absent."""
    import unittest
    missing = reference_missing(*parts)
    if missing:
        raise unittest.SkipTest(missing)
    return reference(*parts)


# The project's own test layer (tests/fixtures/layer/, written for these tests and never
# copied from reference data): what make_repo starts from by default, the same everywhere,
# with or without reference data. It has the skeleton's shape (the same paths, kinds and
# identities) in words of its own; SKELETON is the name the tests have long used for it.
# Its .gitignore is written by copy_layer: inside this checkout a .gitignore there would
# make git ignore the fixture's own .ai/local/.
LAYER = os.path.join(ROOT, "tests", "fixtures", "layer")
LAYER_GITIGNORE = ".ai/local/\n"
SKELETON = LAYER
PYTHON = sys.executable
ENTRIES = {"pyz": PYZ, "py": PY}
READ_TIMEOUT = 30   # seconds a test waits for one answer before it fails
# The protocol versions of the 2025 era (§9: initialize's answer to an unknown version is the
# latest), the 2026-07-28 era's (§18), and the test layer's objects the tests name: one
# place for what the test modules used to copy each.
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST = SUPPORTED_VERSIONS[0]
MODERN = "2026-07-28"
# The keys of the 2026-07-28 era's _meta (§18).
K_VERSION = "io.modelcontextprotocol/protocolVersion"
K_CAPS = "io.modelcontextprotocol/clientCapabilities"
K_INFO = "io.modelcontextprotocol/clientInfo"
K_SERVER = "io.modelcontextprotocol/serverInfo"
K_SUB = "io.modelcontextprotocol/subscriptionId"
RULE_URI = "majordomus://rule/majordomus.scope-integrity@1"
RULE_PATH = ".ai/repo/rules/vendor/majordomus/rules/scope-integrity.v1.md"
PROMPT_URI = "majordomus://prompt/continue"
PROMPT_PATH = ".ai/repo/prompts/continue.md"
POLICY_URI = "majordomus://policy/.ai/repo/policy.yaml"
POLICY_PATH = ".ai/repo/policy.yaml"
PROFILE_URI = "majordomus://profile/implementation"
README_URI = "majordomus://document/README.md"
REPOSITORY_URI = "majordomus://repository"
PEERS_URI = "majordomus://peers"
# The objects the default layer serves, in URI order.
SKELETON_URIS = [
    "majordomus://document/.ai/repo/rules/README.md",
    "majordomus://document/.ai/repo/workflows/README.md",
    "majordomus://document/.ai/repo/workflows/plan.md",
    "majordomus://document/.ai/repo/workflows/task-lifecycle.md",
    "majordomus://document/README.md",
    "majordomus://policy/.ai/repo/policy.yaml",
    "majordomus://profile/implementation",
    "majordomus://prompt/continue",
    "majordomus://rule/majordomus.scope-integrity@1",
]

# The MCP tools, in tools/list order (capability-id order, §9.3): one per builtin capability.
TOOLS = ["majordomus_capability", "majordomus_capabilities", "majordomus_affected",
         "majordomus_brief", "majordomus_context", "majordomus_get", "majordomus_list", "majordomus_search",
         "majordomus_announce", "majordomus_peers", "majordomus_perf", "majordomus_prompt",
         "majordomus_repository"]
# The resources of the builtin queries, first in resources/list (§9.3, §27), in that order.
QUERY_URIS = ["majordomus://peers", "majordomus://repository"]
# Builtin capabilities (§7.2, §20, §26, §27, §30, §31, §33): each has an MCP tool but three
# of §33's (context.list, context.validate and context.sync: majordomus_affected is their
# tool), §31's peers.tell (what one checkout's server sends another's) and §30's hook.deliver
# (what a client's hook command asks); three are commands.
WITHOUT_TOOL = ["context.list", "context.sync", "context.validate", "hook.deliver",
                "peers.tell"]
BUILTINS = len(TOOLS) + len(WITHOUT_TOOL)


def without_peers(instructions):
    """Initialize's instructions without the sentence naming the other sessions present
    (§27): that sentence depends on who else is connected, not on the answer's source."""
    head, found, _ = instructions.partition(" Also here: ")
    return head if found else instructions


# The tools whose text block is Markdown for a model, not the JSON of structuredContent (§26).
MARKDOWN_TOOLS = ("majordomus_brief",)

# The keys of the repository report (§9.1, §20.3), in order.
REPORT_KEYS = ["repository", "state", "objects", "kinds", "diagnostics", "capabilities",
               "context", "live"]
# The test layer's sections and its source classes (id, kind), as its report names them.
LAYER_SECTIONS = {
    "adrs": ".ai/repo/adrs", "knowledge": ".ai/repo/knowledge",
    "policy": ".ai/repo/policy.yaml", "profiles": ".ai/repo/profiles",
    "project": ".ai/repo/project", "prompts": ".ai/repo/prompts", "rules": ".ai/repo/rules",
    "skills": ".ai/repo/skills", "workflows": ".ai/repo/workflows",
}
LAYER_CLASSES = [["policy", "policy"], ["profile", "profile"], ["rule", "rule"],
                 ["prompt", "prompt"], ["workflow", "document"], ["milestone", "milestone"],
                 ["issue", "issue"], ["document", "document"], ["readme", "document"]]


def check_layer_report(testcase, report, repo):
    """The repository report (§9.1) of the test layer committed at repo, fresh: what every
    interface that answers it (HTTP, `mcp --inspect --format json`) must say."""
    eq = testcase.assertEqual
    eq(list(report), REPORT_KEYS)
    eq(report["context"], {"documents": 0, "problems": 0})
    eq(report["live"], {"generation": 1, "stale": None})
    eq(list(report["live"]), ["generation", "stale"])
    rep = report["repository"]
    eq(list(rep), ["root", "layer_schema", "sections", "git", "discovery", "source_classes",
                   "kinds_file"])
    eq(rep["root"], repo)
    eq(rep["layer_schema"], "ai-repository/v1")
    eq(rep["sections"], LAYER_SECTIONS)
    eq(list(rep["sections"]), sorted(LAYER_SECTIONS))
    head = git(repo, "rev-parse", "HEAD").strip()
    eq(rep["git"], {"state": "available", "toplevel": repo, "head": head, "branch": "main",
                    "working_tree": "clean"})
    eq(list(rep["git"]), ["state", "toplevel", "head", "branch", "working_tree"])
    eq(rep["discovery"], "vcs")
    eq(rep["source_classes"], LAYER_CLASSES)
    testcase.assertIsNone(rep["kinds_file"])
    eq(report["state"], "ok")
    eq(report["objects"], 9)
    eq(report["kinds"], {"document": 5, "policy": 1, "profile": 1, "prompt": 1, "rule": 1})
    eq(list(report["kinds"]), sorted(report["kinds"]))
    eq(report["diagnostics"], [])
    summary = report["capabilities"]
    eq(list(summary), ["total", "builtin", "declarative", "by_kind", "by_stability",
                       "mcp_tools", "mcp_resources", "http_routes", "cli_commands"])
    eq((summary["total"], summary["builtin"], summary["declarative"], summary["mcp_tools"],
        summary["mcp_resources"], summary["http_routes"], summary["cli_commands"]),
       (27, 18, 9, 13, 11, 18, 13))
    eq({k: v for k, v in summary["by_kind"].items() if v},
       {"command": 3, "query": 15, "resource": 9})          # the commands: §27, §30, §31
    eq(sum(summary["by_stability"].values()), 27)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t.invalid",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
}

if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


# The leases of shared servers (SPEC §27) go under $XDG_RUNTIME_DIR/majordomus: every program
# a test spawns gets this process's own private one, so that no test meets a lease of the
# user's or of another test process (each scratch repository is its own root besides, and
# a killed server's lease stays here, not in the user's runtime directory).
RUNTIME = tempfile.mkdtemp(prefix="mj-run-")
atexit.register(shutil.rmtree, RUNTIME, True)


def base_env(extra=None):
    env = dict(os.environ)
    env.update(GIT_ENV)
    env.pop("MAJORDOMUS_LOG", None)
    env.pop("MAJORDOMUS_STANDALONE", None)
    env["XDG_RUNTIME_DIR"] = RUNTIME
    if extra:
        env.update(extra)
    return env


# Scratch repositories never run git's automatic maintenance or gc: git 2.5x starts it in
# the background after a commit, and the .git/objects/maintenance.lock it leaves for a while
# would show up in the read-only proof's snapshot as a file the session made.
NO_MAINTENANCE = (("maintenance.auto", "false"), ("gc.auto", "0"))


def git(repo, *args, check=True, env=None):
    """Run git in repo; return stdout as text. A repository made with `init` here is
    configured without auto maintenance, so that later commits (the bash cases' too) leave
    nothing behind in .git."""
    options = []
    for key, value in NO_MAINTENANCE:
        options += ["-c", "%s=%s" % (key, value)]
    p = subprocess.run(["git"] + options + ["-C", repo] + list(args), env=base_env(env),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if check and p.returncode != 0:
        raise AssertionError("git %s failed: %s" % (" ".join(args), p.stderr.decode()))
    if args[:1] == ("init",) and p.returncode == 0:
        for key, value in NO_MAINTENANCE:
            git(repo, "config", key, value)
    return p.stdout.decode("utf-8", "replace")


def write(repo, rel, data):
    """Write data (str or bytes) at repo/rel, creating directories."""
    path = os.path.join(repo, rel)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(path, "wb") as f:
        f.write(data)
    return path


def copy_tree(src, dst):
    """Copy a (possibly read-only) tree so that the copy is writable."""
    shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
    for dirpath, dirnames, filenames in os.walk(dst):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IWUSR)


def tempdir(testcase):
    d = tempfile.mkdtemp(prefix="mj-test-")
    testcase.addCleanup(shutil.rmtree, d, True)
    return d


def copy_layer(dst, src=LAYER):
    """The project's test layer (or another tree, such as the reference skeleton) copied to
    dst, writable, with the layer's .gitignore."""
    copy_tree(src, dst)
    if src == LAYER:
        write(dst, ".gitignore", LAYER_GITIGNORE)
    return dst


# The two declarations of a layer a test writes itself, in the shape of the test layer: the
# repo/ and local/ halves, each section at repo/<name> (the policy at repo/policy.yaml).
def manifest_yaml(*sections, documents=None):
    """.ai/manifest.yaml naming `sections` in that order; `documents`: the file name the
    context documents carry (context.documents)."""
    text = ("schema: ai-repository/v1\nrepo:\n  path: repo\nlocal:\n  path: local\n"
            "  tracked: false\n  implicit_context: false\nsections:\n") + "".join(
        "  %s: repo/%s\n" % (name, "policy.yaml" if name == "policy" else name)
        for name in sections)
    if documents:
        text += "context:\n  documents: [%s]\n" % documents
    return text


def source_class(cid, kind, pathspec, required=False):
    """One class of .ai/repo/knowledge/sources.yaml, discovered through git."""
    return ("  - id: %s\n    kind: %s\n    discovery: vcs\n    pathspec: '%s'\n"
            "    required: %s\n" % (cid, kind, pathspec, "true" if required else "false"))


def sources_yaml(*classes):
    """.ai/repo/knowledge/sources.yaml of `classes`, each (id, kind, pathspec[, required])."""
    return "version: 1\nsources:\n" + "".join(source_class(*c) for c in classes)


def make_repo(testcase, files=None, skeleton=True, commit=True, git_init=True, name="repo"):
    """A scratch repository under a temp dir: the test layer (tests/fixtures/layer, unless
    skeleton is False) plus files, committed."""
    repo = os.path.join(tempdir(testcase), name)
    os.makedirs(repo)
    if skeleton:
        copy_layer(repo)
    for rel, data in (files or {}).items():
        write(repo, rel, data)
    if git_init:
        git(repo, "init", "-q", "-b", "main")
        if commit:
            commit_all(repo)
    return os.path.realpath(repo)


class _ClassScope(object):
    """Lets make_repo register its cleanup on a class (for setUpClass)."""

    def __init__(self, cls):
        self.addCleanup = cls.addClassCleanup


def class_repo(cls, files=None):
    """make_repo for setUpClass: the repository lives as long as the test class."""
    return make_repo(_ClassScope(cls), files=files)


def real_latest_repo(testcase, name="real-latest", stand_ins=()):
    """The reference data's real layer (fixtures/real-latest) committed in a scratch
    repository, with an empty file at each path of stand_ins; the test is skipped by name
    where the reference data is absent."""
    real = reference_or_skip(testcase, "fixtures", "real-latest")
    repo = make_repo(testcase, skeleton=False, commit=False, name=name)
    copy_tree(real, repo)
    for path in stand_ins:
        write(repo, path, b"")
    commit_all(repo)
    return repo


class ClassRepo(object):
    """A base for a test class whose tests share one scratch repository of the test layer,
    cls.repo, made once for the class (tests that only read it)."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.repo = class_repo(cls)


def generated_rule(n, extra=""):
    """Rule n of a large generated layer (the benchmark's 10,000 and 20,000 rules, the
    identity test's 2,000), its text; `extra` is added to its title and its first line."""
    tag = "group%02d" % (n % 50)
    return "\n".join([
        "---",
        "id: project.gen-%05d" % n,
        "version: 1",
        "title: Generated rule %05d%s" % (n, extra),
        "description: Benchmark rule number %05d, generated to measure a large layer." % n,
        "tags: [generated, bench, %s]" % tag,
        "---",
        "",
        "# Generated rule %05d" % n,
        "",
        "This rule exists so that the index holds ten thousand objects (gen-%05d).%s"
        % (n, extra),
        "It states nothing a contributor must obey; it is filler with a realistic shape.",
        "",
        "# Required behaviour",
        "",
        "Line six of the body of rule %05d, in group %s." % (n, tag),
        "Line seven: a task reads the rules before it starts and cites the ones it uses.",
        "Line eight: the quick brown fox jumps over the lazy dog.",
        "Line nine: nothing here is enforced by a validator.",
        "",
    ])


def read_bytes(repo, rel):
    with open(os.path.join(repo, rel), "rb") as handle:
        return handle.read()


def commit_all(repo, message="commit"):
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "--no-gpg-sign", "-m", message)


def require_archive():
    """Fail unless majordomus.pyz is built (the tests that run it through a client's SDK
    do not build it themselves)."""
    if not os.path.isfile(PYZ):
        raise AssertionError("build first: python3 build_zipapp.py (no %s)" % PYZ)


def command(via="pyz"):
    return [PYTHON, ENTRIES[via]]


def run(args, cwd, via="pyz", input=None, env=None, timeout=60):
    """Run the program; return CompletedProcess with bytes stdout/stderr."""
    return subprocess.run(command(via) + list(args), cwd=cwd, input=input,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=base_env(env), timeout=timeout)


def snapshot(repo):
    """Everything §12 says a session must leave byte-identical."""
    files = []
    for dirpath, dirnames, filenames in os.walk(repo):
        for name in sorted(dirnames + filenames):
            files.append(os.path.relpath(os.path.join(dirpath, name), repo))
    tracked = git(repo, "ls-files", "-z").split("\0")
    digest = hashlib.sha256()
    for rel in sorted(t for t in tracked if t):
        p = os.path.join(repo, rel)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, "rb") as f:
                digest.update(rel.encode() + b"\0" + f.read() + b"\0")
    index = os.path.join(repo, ".git", "index")
    with open(index, "rb") as f:
        index_bytes = f.read()
    # GIT_OPTIONAL_LOCKS=0: the snapshot itself must not refresh .git/index.
    return {
        "status": git(repo, "status", "--porcelain", env={"GIT_OPTIONAL_LOCKS": "0"}),
        "ls_files": git(repo, "ls-files", "-s"),
        "tracked_hash": digest.hexdigest(),
        "index_mtime": os.stat(index).st_mtime_ns,
        "index_bytes": hashlib.sha256(index_bytes).hexdigest(),
        "files": sorted(files),
    }


class McpSession(object):
    """A real `majordomus mcp` child over pipes, with time-bounded reads."""

    def __init__(self, repo, via="pyz", args=(), env=None):
        self.proc = subprocess.Popen(command(via) + ["mcp"] + list(args), cwd=repo,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=base_env(env))
        self._lines = queue.Queue()
        self._err = []
        self._to = threading.Thread(target=self._read_out, daemon=True)
        self._te = threading.Thread(target=self._read_err, daemon=True)
        self._to.start()
        self._te.start()
        self._next = 1
        self.rc = None

    def _read_out(self):
        try:
            for line in self.proc.stdout:
                self._lines.put(line)
        except ValueError:
            pass
        self._lines.put(None)

    def _read_err(self):
        for line in self.proc.stderr:
            self._err.append(line)

    def stderr(self):
        return b"".join(self._err).decode("utf-8", "replace")

    def wait_stderr(self, text, timeout=READ_TIMEOUT):
        """The log so far, once it holds `text`: the thread that reads it may lag behind
        what the process wrote before its answers (a loaded machine showed this)."""
        deadline = time.monotonic() + timeout
        while True:
            err = self.stderr()
            if text in err:
                return err
            if time.monotonic() > deadline:
                raise AssertionError("no %r in the log within %ss:\n%s" % (text, timeout, err))
            time.sleep(0.02)

    def send_raw(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, obj):
        self.send_raw(json.dumps(obj).encode("utf-8") + b"\n")

    def recv_line(self, timeout=READ_TIMEOUT):
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no answer within %ss; stderr:\n%s" % (timeout, self.stderr()))
        if line is None:
            self._lines.put(None)
            raise AssertionError("stdout closed; stderr:\n" + self.stderr())
        if not line.endswith(b"\n"):
            raise AssertionError("answer not ended by a newline: %r" % line[:200])
        return line

    def recv(self, timeout=READ_TIMEOUT):
        line = self.recv_line(timeout)
        body = line[:-1]
        if b"\n" in body:
            raise AssertionError("a frame spans several lines")
        return json.loads(body.decode("utf-8"))

    def pending(self, wait=0.0):
        """Lines already received and not yet read (after waiting `wait` seconds)."""
        if wait:
            time.sleep(wait)
        out = []
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return out
            if line is None:
                self._lines.put(None)
                return out
            out.append(line)

    def new_id(self):
        i = self._next
        self._next += 1
        return i

    def send_request(self, method, params=None, id=None):
        """Send one request (a new id unless given); its id."""
        if id is None:
            id = self.new_id()
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return id

    def request(self, method, params=None, id=None):
        """Send one request; the next frame."""
        self.send_request(method, params, id)
        return self.recv()

    def initialize(self, version="2025-06-18", name="t", initialized=True):
        """initialize in the 2025 era (clientInfo `name`), then, unless initialized is
        False, notifications/initialized: the answer, which must be a result."""
        answer = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                             "clientInfo": {"name": name, "version": "1"}})
        if "result" not in answer:
            raise AssertionError("initialize failed: %r" % (answer,))
        if initialized:
            self.notify("notifications/initialized")
        return answer

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def close(self, timeout=10):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.rc = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self._to.join(5)
        self._te.join(5)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return self.rc

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except (OSError, ValueError):
                pass


class HttpServer:
    """A real `majordomus serve --port 0` child; .port is the bound port."""

    def __init__(self, repo, via="pyz", args=(), env=None):
        self.proc = subprocess.Popen(command(via) + ["serve", "--port", "0"] + list(args),
                                     cwd=repo, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=base_env(env))
        self._stderr = []
        self.port = None
        deadline = time.time() + 30
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self._stderr.append(line)
            text = line.decode("utf-8", "replace")
            if "listening on http://" in text:
                addr = text.split("listening on http://", 1)[1].split()[0]
                self.host, port = addr.rsplit(":", 1)
                self.port = int(port)
                break
        if self.port is None:
            self.proc.kill()
            raise AssertionError("server did not start: " + self.stderr())
        self._t = threading.Thread(target=self._drain, daemon=True)
        self._t.start()

    def _drain(self):
        for line in self.proc.stderr:
            self._stderr.append(line)

    def stderr(self):
        return b"".join(self._stderr).decode("utf-8", "replace")

    def request(self, method, path, headers=None, body=None, timeout=30):
        """One request on a fresh connection: (status, headers dict lower-cased, body bytes)."""
        import http.client
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def get_json(self, path):
        status, headers, body = self.request("GET", path)
        return status, json.loads(body.decode("utf-8")) if body else None

    def stop(self, sig=None):
        import signal
        if self.proc.poll() is None:
            self.proc.send_signal(sig or signal.SIGTERM)
        rc = self.proc.wait(15)
        self.proc.stdout.close()
        self._t.join(5)
        self.proc.stderr.close()
        return rc


def class_session(cls, repo, via="pyz", version=None, **initialize):
    """An `mcp` session on repo for a test class's tests, ended with the class; initialized
    (McpSession.initialize) when `version` is given."""
    session = McpSession(repo, via=via)
    cls.addClassCleanup(session.kill)
    if version is not None:
        session.initialize(version, **initialize)
    return session


def class_server(cls, repo, via="pyz"):
    """A `serve` on repo for a test class's tests, stopped with the class."""
    server = HttpServer(repo, via=via)
    cls.addClassCleanup(server.stop)
    return server


def wait_until(what, check, timeout=READ_TIMEOUT, pause=0.05):
    """check()'s first true value within `timeout` seconds; AssertionError naming `what`
    when there is none."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(pause)
    raise AssertionError("%s: not within %ss" % (what, timeout))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def staged_rule(name):
    """(path, text, URI) of a small rule `project.<name>@1`, for a test to write and stage
    while a server runs."""
    path = ".ai/repo/rules/project/%s.v1.md" % name
    text = ("---\nid: project.%s\nversion: 1\ntitle: %s\ndescription: A rule staged while "
            "the server runs.\n---\n\n# %s\n\nBody.\n" % (name, name.title(), name.title()))
    return path, text, "majordomus://rule/project.%s@1" % name


def compact_variants(value):
    """The compact JSON texts a tool result's text block may be (§9.3)."""
    return (json.dumps(value, separators=(",", ":"), ensure_ascii=False),
            json.dumps(value, separators=(",", ":"), ensure_ascii=True))


class ToolCalls(object):
    """Requests and tool calls on a test case's MCP session `self.s`, checked against
    §9.3's shapes. `seen`, when a dict, collects each tool's structuredContent."""

    seen = None

    def rpc(self, method, params=None):
        id = self.s.new_id()
        answer = self.s.request(method, params, id=id)
        self.assertEqual(answer.get("id"), id, answer)
        return answer

    def rpc_ok(self, method, params=None):
        answer = self.rpc(method, params)
        self.assertIn("result", answer, answer)
        self.assertNotIn("error", answer)
        return answer["result"]

    def rpc_error(self, method, params, code, message=None):
        answer = self.rpc(method, params)
        self.assertNotIn("result", answer, answer)
        self.assertEqual(answer["error"]["code"], code, answer)
        if message is not None:
            self.assertEqual(answer["error"]["message"], message)
        return answer["error"]["message"]

    def call(self, name, arguments):
        return self.rpc_ok("tools/call", {"name": name, "arguments": arguments})

    def tool(self, name, arguments):
        """A successful tool call: its structuredContent (text block checked)."""
        result = self.call(name, arguments)
        self.assertIs(result.get("isError"), False, result)
        sc = result["structuredContent"]
        self.assertEqual(len(result["content"]), 1)
        self.assertEqual(result["content"][0]["type"], "text")
        if name in MARKDOWN_TOOLS:     # §26: the text is the brief's Markdown, for a model
            text = result["content"][0]["text"]
            self.assertTrue(text.startswith("# Brief: "), text[:200])
            self.assertEqual(text.count("\n"), sc["used_lines"])
        else:
            self.assertIn(result["content"][0]["text"], compact_variants(sc))
        if self.seen is not None:
            self.seen.setdefault(name, []).append(sc)
        return sc

    def tool_error(self, name, arguments):
        """A refused tool call: its text."""
        result = self.call(name, arguments)
        self.assertIs(result.get("isError"), True, result)
        self.assertNotIn("structuredContent", result)
        self.assertEqual(len(result["content"]), 1, result)
        return result["content"][0]["text"]

