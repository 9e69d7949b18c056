"""`majordomus hook` (SPEC §30) and its guard (§31): the real program (the zipapp and the
module) spawned over pipes in scratch repositories, fed the recorded hook inputs of Claude
Code, Codex and Gemini CLI (tests/fixtures/hooks/, whose README cites where each shape comes
from):

- each event of each client answered in the client's shape, `hookEventName` the event's,
  the context naming the chain and the chosen rules; a tool that writes nothing, an event
  the hook does not answer: nothing;
- said once per session: the same edit twice adds nothing, another place adds only what is
  new, another session (or none) is told again, a start after a compaction forgets; the
  memory is a file in the lease directory (never in the repository, §12);
- never in the way: garbage, empty, 2 MiB, non-JSON, a path outside the repository, a
  Windows path here, no layer, a broken layer, a bad command line, a client that never
  closes stdin (the hook's own 2 s): exit 0, nothing on stdout, one line on stderr;
- the warm path: with an `mcp` owner live, the hook asks it and builds no index (its debug
  log, and the owner's counters: one index built, one more execution), and answers byte for
  byte what the cold path answers; the owner's memory is the session's;
- the guard: an edit of a path another session claims is refused with the holder named
  (Claude Code and Codex: permissionDecision deny; Gemini CLI: decision deny), the rest is
  allowed, a claim of the hook's own client (its MCP server, whose client is one of the
  hook's ancestors) is not another's; without --guard, a warning in the context only;
- --print-config for each client, whose command runs;
- in process: paths as clients send them (Windows ones read with ntpath), patches, the
  client told by its JSON, the output shapes.
Schema validation of the outputs (jsonschema) is tests/venv_hook_test.py's.

Every layer here is written by the test (tests/test_brief.py's), plain-clone safe."""
import glob
import json
import ntpath
import os
import shlex
import shutil
import subprocess
import time
import unittest

from tests import support
from tests.test_brief import layer

import majordomus as mj

FIXTURES = os.path.join(support.ROOT, "tests", "fixtures", "hooks")
R = ".ai/repo/rules/"
RULE = "majordomus://rule/"
# the printed command's program: the archive's member imported, not the archive run (§30)
IMPORT_HOOK = "import sys; sys.path[0] = sys.argv[1]; import majordomus_hook"
CONTEXT = "majordomus://context/"
NEW_RULE = R + "project/new-rule.v1.md"


def fixture_text(client, name, root, session="s-1"):
    """A recorded input with the scratch root and a session id in place."""
    with open(os.path.join(FIXTURES, client, name + ".json"), encoding="utf-8") as handle:
        text = handle.read()
    return text.replace("${ROOT}", json.dumps(root)[1:-1]).replace("${SESSION}", session)


def fixture(client, name, root, session="s-1", **changes):
    value = json.loads(fixture_text(client, name, root, session))
    value.update(changes)
    return value


def edit(root, path, session="s-1", tool="Edit"):
    """A Claude Code PreToolUse of an edit of `path` (relative to the root, or absolute)."""
    value = fixture("claude-code", "pre-tool-use-edit", root, session)
    value["tool_input"]["file_path"] = path if os.path.isabs(path) else os.path.join(root, path)
    value["tool_name"] = tool
    return value


class HookCase(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.runtime = support.tempdir(self)
        self.env = {"XDG_RUNTIME_DIR": self.runtime}
        self.repo = support.make_repo(self, files=layer(), skeleton=False)

    def hook(self, data, *args, via="pyz", env=None, cwd=None, timeout=30):
        if isinstance(data, dict):
            data = json.dumps(data).encode("utf-8")
        elif isinstance(data, str):
            data = data.encode("utf-8")
        return support.run(["hook"] + list(args), cwd or self.repo, via=via, input=data,
                           env=dict(self.env, **(env or {})), timeout=timeout)

    def answer(self, p):
        """The one JSON line a hook printed (its stderr empty)."""
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, b"")
        self.assertTrue(p.stdout.endswith(b"\n") and p.stdout.count(b"\n") == 1, p.stdout)
        return json.loads(p.stdout.decode("utf-8"))

    def context(self, p, event="PreToolUse"):
        value = self.answer(p)
        self.assertEqual(list(value), ["hookSpecificOutput"])
        specific = value["hookSpecificOutput"]
        self.assertEqual(specific["hookEventName"], event)
        self.assertEqual(list(specific), ["hookEventName", "additionalContext"])
        return specific["additionalContext"]

    def silent(self, p, why=None):
        """Nothing on stdout, exit 0, one line on stderr: its text."""
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, b"")
        text = p.stderr.decode("utf-8")
        self.assertTrue(text.startswith("majordomus hook: ") and text.endswith("\n")
                        and text.count("\n") == 1, text)
        if why is not None:
            self.assertIn(why, text)
        return text


class EventsTest(HookCase):
    """Each event of each client, in its shape, naming the chain and the chosen rules."""

    # (client, fixture, the event's name, what the context holds)
    CASES = [
        ("claude-code", "pre-tool-use-edit", "PreToolUse",
         ["`%s`" % NEW_RULE, RULE + "project.alpha@2", RULE + "project.delta@1",
          "From [Context ai.repo.rules.project](%sai.repo.rules.project)" % CONTEXT,
          CONTEXT + "ai.repo.rules)", CONTEXT + "ai.repo)", CONTEXT + "ai.layer)"]),
        ("claude-code", "pre-tool-use-write", "PreToolUse",
         ["`AGENTS.md`: generated from .ai/repo/policy.yaml (stamp policy ",
          CONTEXT + "ai.layer"]),
        ("claude-code", "pre-tool-use-multiedit", "PreToolUse",
         ["`src/governed/existing.py`", RULE + "project.alpha@2", RULE + "project.delta@1",
          "From [Context ai.repo.rules](%sai.repo.rules)" % CONTEXT, CONTEXT + "ai.layer"]),
        ("claude-code", "pre-tool-use-notebookedit", "PreToolUse",
         ["`docs/analysis.ipynb`", "From [Context ai.layer](%sai.layer)" % CONTEXT]),
        ("claude-code", "session-start", "SessionStart",
         ["state ok", "Blocking rules (2): project.alpha, project.epsilon", "majordomus_brief"]),
        ("claude-code", "user-prompt-submit", "UserPromptSubmit",
         [RULE + "project.lint@1", "majordomus://document/docs/GUIDE.md", "> ## Linting"]),
        ("codex", "pre-tool-use-apply-patch", "PreToolUse",
         ["`src/governed/new.py`, `.ai/repo/rules/project/alpha.v2.md`", RULE + "project.alpha@2",
          CONTEXT + "ai.repo.rules.project", CONTEXT + "ai.repo.rules)"]),
        ("codex", "pre-tool-use-apply-patch-moved", "PreToolUse",
         ["`src/other/existing.py`, `src/governed/moved.py`, `docs/GUIDE.md`",
          RULE + "project.alpha@2", CONTEXT + "ai.layer"]),
        ("codex", "pre-tool-use-shell-apply-patch", "PreToolUse",
         ["`src/other/existing.py`", CONTEXT + "ai.layer"]),
        ("codex", "session-start", "SessionStart",
         ["Blocking rules (2): project.alpha, project.epsilon", "majordomus_brief"]),
        ("codex", "user-prompt-submit", "UserPromptSubmit", [RULE + "project.lint@1"]),
        ("gemini", "after-tool-write-file", "AfterTool",
         ["`%s`" % NEW_RULE, RULE + "project.alpha@2", CONTEXT + "ai.repo.rules.project"]),
        ("gemini", "after-tool-replace", "AfterTool",
         ["`src/governed/existing.py`", RULE + "project.delta@1"]),
        ("gemini", "session-start", "SessionStart", ["Blocking rules (2)"]),
        ("gemini", "before-agent", "BeforeAgent", [RULE + "project.lint@1", "> ## Linting"]),
    ]

    def test_each_event_of_each_client(self):
        for via in ("pyz", "py"):
            for n, (client, name, event, wanted) in enumerate(self.CASES):
                with self.subTest(via=via, client=client, fixture=name):
                    data = fixture_text(client, name, self.repo, "%s-%d" % (via, n))
                    text = self.context(self.hook(data, "--client", client, via=via), event)
                    for piece in wanted:
                        self.assertIn(piece, text)
                    if event == "SessionStart":
                        self.assertLessEqual(text.count("\n"), mj.HOOK_START_LINES)
                    else:
                        self.assertNotIn("Blocking rules", text)

    def test_the_client_is_told_by_its_json(self):
        """Without --client: the same answer (Gemini CLI by its own event names, Codex by
        apply_patch; Claude Code and Codex share their output)."""
        for client, name, event, _ in self.CASES[::3]:
            with self.subTest(client=client, fixture=name):
                told = self.hook(fixture_text(client, name, self.repo, "told-" + name))
                named = self.hook(fixture_text(client, name, self.repo, "named-" + name),
                                  "--client", client)
                self.assertEqual(self.context(told, event), self.context(named, event))

    def test_a_projection_is_said_first(self):
        """§33: a generated file's brief says what it is generated from in its first line."""
        text = self.context(self.hook(fixture("claude-code", "pre-tool-use-write", self.repo)))
        self.assertTrue(text.startswith("`AGENTS.md`: generated from .ai/repo/policy.yaml "),
                        text)
        self.assertIn("edit .ai/repo/policy.yaml, not this file", text.split("\n")[0])

    def test_what_writes_nothing_gets_nothing(self):
        for client, name, why in [
                ("claude-code", "pre-tool-use-bash", "Bash writes no file"),
                ("codex", "pre-tool-use-bash", "Bash writes no file"),
                ("gemini", "before-tool-write-file", "the brief comes with AfterTool"),
                ("gemini", "before-tool-replace", "the brief comes with AfterTool")]:
            with self.subTest(client=client, fixture=name):
                self.silent(self.hook(fixture_text(client, name, self.repo)), why)
        stop = fixture("claude-code", "session-start", self.repo, hook_event_name="Stop")
        self.silent(self.hook(stop), "Stop is not an event this hook answers")

    def test_the_budget_holds(self):
        for lines, chars in ((20, 1000), (60, 4000), (25, 1500)):
            with self.subTest(lines=lines, chars=chars):
                text = self.context(self.hook(
                    edit(self.repo, NEW_RULE, "budget-%d-%d" % (lines, chars)),
                    "--budget-lines", str(lines), "--budget-chars", str(chars)))
                self.assertLessEqual(text.count("\n"), lines)
                self.assertLessEqual(len(text), chars)
                self.assertIn(RULE + "project.alpha@2", text)   # named: kept first
        tight = self.context(self.hook(edit(self.repo, NEW_RULE, "tight"), "--budget-chars",
                                       "1000"))
        self.assertIn("more in the whole brief: majordomus_brief %s" % NEW_RULE, tight)

    def test_paths_as_clients_send_them(self):
        """Absolute, relative to the session's folder, through a symbolic link to the root:
        one target."""
        link = os.path.join(support.tempdir(self), "link")
        os.symlink(self.repo, link)
        forms = [os.path.join(self.repo, "src/governed/new.py"), "src/governed/new.py",
                 os.path.join(link, "src/governed/new.py")]
        for n, path in enumerate(forms):
            with self.subTest(path=path):
                text = self.context(self.hook(edit(self.repo, path, "form-%d" % n)))
                self.assertTrue(text.startswith("majordomus brief for `src/governed/new.py`,"),
                                text)
        inner = fixture("claude-code", "pre-tool-use-edit", self.repo, "inner",
                        cwd=os.path.join(self.repo, "src"))
        inner["tool_input"]["file_path"] = "governed/new.py"
        self.assertIn("`src/governed/new.py`", self.context(self.hook(inner)))


class MemoryTest(HookCase):
    """Said once per session (§30)."""

    def test_the_same_edit_twice_adds_nothing(self):
        before = support.snapshot(self.repo)
        first = self.context(self.hook(edit(self.repo, NEW_RULE)))
        self.assertIn(RULE + "project.alpha@2", first)
        self.silent(self.hook(edit(self.repo, NEW_RULE)), "already given in this session")
        # the same place by another path of the same chain: nothing new either
        self.silent(self.hook(edit(self.repo, R + "project/other.v1.md")), "already given")
        self.assertEqual(support.snapshot(self.repo), before)       # §12
        memories = glob.glob(os.path.join(self.runtime, "majordomus", "hook-*.json"))
        self.assertEqual(len(memories), 1, memories)
        self.assertEqual(os.stat(memories[0]).st_mode & 0o777, 0o600)
        self.assertEqual(glob.glob(os.path.join(self.repo, "**", "hook-*"), recursive=True), [])

    def test_another_place_adds_only_what_is_new(self):
        self.context(self.hook(edit(self.repo, NEW_RULE)))
        text = self.context(self.hook(edit(self.repo, "src/governed/existing.py")))
        self.assertIn("item(s) given earlier in this session are not repeated", text)
        self.assertIn("From [Context ai.repo.rules](%sai.repo.rules)" % CONTEXT, text)
        self.assertNotIn(RULE + "project.alpha@2", text)
        self.assertNotIn(RULE + "project.delta@1", text)
        self.assertNotIn("Also governing", text)

    def test_another_session_is_told_again(self):
        first = self.context(self.hook(edit(self.repo, NEW_RULE, "one")))
        self.assertEqual(self.context(self.hook(edit(self.repo, NEW_RULE, "two"))), first)
        nameless = edit(self.repo, NEW_RULE)
        del nameless["session_id"]
        self.assertEqual(self.context(self.hook(nameless)), first)
        self.assertEqual(self.context(self.hook(nameless)), first)      # no id: it repeats

    def test_a_prompt_and_an_edit_share_the_memory(self):
        self.assertIn(RULE + "project.lint@1", self.context(self.hook(fixture(
            "claude-code", "user-prompt-submit", self.repo)), "UserPromptSubmit"))
        text = self.context(self.hook(edit(self.repo, NEW_RULE)))
        self.assertIn(RULE + "project.alpha@2", text)
        self.assertNotIn(RULE + "project.lint@1", text)

    def test_a_start_once_and_again_after_a_compaction(self):
        start = fixture("claude-code", "session-start", self.repo)
        self.context(self.hook(start), "SessionStart")
        self.silent(self.hook(start), "oriented already")
        self.context(self.hook(edit(self.repo, NEW_RULE)))
        compact = fixture("claude-code", "session-start-compact", self.repo)
        self.context(self.hook(compact), "SessionStart")
        self.assertIn(RULE + "project.alpha@2", self.context(self.hook(edit(self.repo,
                                                                              NEW_RULE))))

    def test_two_hooks_of_one_session_at_once(self):
        """The memory file is read and written under its lock: at most one tells."""
        procs = [subprocess.Popen(support.command() + ["hook"], cwd=self.repo,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=support.base_env(self.env))
                 for _ in range(2)]
        data = json.dumps(edit(self.repo, NEW_RULE, "racing")).encode("utf-8")
        outs = [proc.communicate(data, timeout=30) for proc in procs]
        self.assertEqual(sorted(bool(out) for out, _ in outs), [False, True], outs)


class NeverInTheWayTest(HookCase):
    """Whatever fails: exit 0, nothing on stdout, one line on stderr (§30)."""

    def test_bad_input(self):
        for name, data, why in [
                ("empty", b"", "empty"), ("blank", b" \n\t\n", "empty"),
                ("garbage", b"\x00\xff\xfe garbage \x81", "not UTF-8"),
                ("not JSON", b"PreToolUse Edit x.py", "not JSON"),
                ("truncated", b'{"hook_event_name": "PreToolUse", "tool_', "not JSON"),
                ("an array", b'[{"hook_event_name": "PreToolUse"}]', "not a JSON object"),
                ("no event", b'{"session_id": "x"}', "names no hook_event_name"),
                ("2 MiB", b'{"a": "' + b"x" * (2 << 20) + b'"}', "over 1048576 bytes"),
                ("deep", b"[" * 100000 + b"]" * 100000, "not JSON")]:
            for via in ("pyz", "py"):
                with self.subTest(input=name, via=via):
                    self.silent(self.hook(data, via=via), why)

    def test_paths_that_are_not_the_repository_s(self):
        windows = fixture("claude-code", "pre-tool-use-windows", self.repo)
        for name, value, why in [
                ("outside", edit(self.repo, "/etc/passwd"), "outside the repository: /etc/passwd"),
                ("leaving", edit(self.repo, "../sibling/x.py"), "outside the repository"),
                ("a NUL", edit(self.repo, "src/a\x00b.py"), "outside the repository"),
                ("too long", edit(self.repo, "a/" * 3000), "outside the repository"),
                ("windows", windows, "outside the repository: C:\\Users\\dev\\repo")]:
            with self.subTest(path=name):
                self.silent(self.hook(value), why)
        patch = fixture("codex", "pre-tool-use-apply-patch", self.repo)
        patch["tool_input"]["command"] = "*** Begin Patch\n*** Add File: ../../x\n*** End Patch\n"
        self.silent(self.hook(patch), "outside the repository")

    def test_no_layer_and_a_broken_one(self):
        bare = support.make_repo(self, files={"README.md": "no layer here\n"}, skeleton=False)
        self.silent(self.hook(edit(bare, "README.md"), cwd=bare),
                    "no Majordomus repository found")
        support.write(self.repo, ".ai/manifest.yaml", "schema: [unclosed\n")
        for via in ("pyz", "py"):
            with self.subTest(via=via):
                self.silent(self.hook(edit(self.repo, NEW_RULE), via=via), ".ai/manifest.yaml")

    def test_a_bad_command_line_blocks_nothing(self):
        for args, why in [(["--client", "nope"], "invalid value 'nope'"),
                          (["--budget-lines", "many"], "invalid value 'many'"),
                          (["--budget-lines", "5"], "budget_lines' must be at least 20"),
                          (["--frobnicate"], "unexpected argument '--frobnicate'"),
                          (["--repo", "/nonexistent/where"], "cannot start at")]:
            with self.subTest(args=args):
                self.silent(self.hook(edit(self.repo, NEW_RULE), *args), why)

    def test_its_own_time_limit(self):
        """A client that never closes stdin: the hook's own 2 s, then exit 0."""
        proc = subprocess.Popen(support.command() + ["hook"], cwd=self.repo,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=support.base_env(self.env))
        began = time.monotonic()
        proc.stdin.write(b'{"hook_event_name": "PreToolUse", ')
        proc.stdin.flush()
        try:
            proc.wait(timeout=20)                # stdin still open: no end of input
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            elapsed = time.monotonic() - began
            proc.stdin.close()
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
        self.assertEqual((proc.returncode, out), (0, b""))
        self.assertEqual(err, b"majordomus hook: no answer within 2 s; nothing added\n")
        self.assertGreaterEqual(elapsed, 1.9)
        self.assertLess(elapsed, 15)


def wait_for(predicate, timeout=support.READ_TIMEOUT, what="the condition"):
    return support.wait_until(what, predicate, timeout, 0.02)


class Wrapped(support.McpSession):
    """An `mcp` run by `sh -c` in a process group of its own (its parent, the shell, is its
    client: no ancestor of a hook this test runs)."""

    def __init__(self, repo, env=None):
        import queue
        import threading
        self.proc = subprocess.Popen(
            ["sh", "-c", '"$0" "$@"; exit $?'] + support.command() + ["mcp"], cwd=repo,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=support.base_env(env), start_new_session=True)
        self._lines, self._err = queue.Queue(), []
        self._to = threading.Thread(target=self._read_out, daemon=True)
        self._te = threading.Thread(target=self._read_err, daemon=True)
        self._to.start()
        self._te.start()
        self._next, self.rc = 1, None

    def kill(self):
        import signal
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        support.McpSession.kill(self)


class SharedHookCase(HookCase):
    """A live owner for the scratch repository, in the test's own runtime directory."""

    def tool(self, session, name, arguments):
        answer = session.request("tools/call", {"name": name, "arguments": arguments})
        self.assertIn("result", answer, answer)
        self.assertIs(answer["result"].get("isError"), False, answer)
        return answer["result"]["structuredContent"]

    def initialized(self, session, name):
        answer = session.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": name, "version": "1"}})
        self.assertIn("result", answer, answer)
        session.notify("notifications/initialized")
        return session

    def spawn(self, name, wrapped=False):
        """An `mcp` of client `name`: started by this process, or (`wrapped`) by a shell of
        its own, so that its client is no ancestor of the hooks this test runs."""
        session = (Wrapped if wrapped else support.McpSession)(self.repo, env=self.env)
        self.addCleanup(session.kill)
        return self.initialized(session, name)

    def owner(self, name="owner", wrapped=False):
        session = self.spawn(name, wrapped)
        wait_for(lambda: "sharing this repository's server" in session.stderr(),
                 what="the owner's lease")
        return session


@unittest.skipIf(os.name == "nt", "POSIX process tree")
class WarmTest(SharedHookCase):
    """With an owner live, the hook asks it and builds no index (§30)."""

    def test_the_owner_answers(self):
        owner = self.owner()
        before = self.tool(owner, "majordomus_perf", {})
        p = self.hook(edit(self.repo, NEW_RULE, "warm"), env={"MAJORDOMUS_LOG": "debug"})
        self.assertEqual(p.returncode, 0)
        log = p.stderr.decode("utf-8")
        self.assertIn("the hook was answered by the shared server; no index built here", log)
        self.assertNotIn("an index of its own", log)
        warm = json.loads(p.stdout.decode("utf-8"))
        after = self.tool(owner, "majordomus_perf", {})
        self.assertEqual((before["index_builds"], after["index_builds"]), (1, 1))
        self.assertGreater(after["executions"], before["executions"])
        # the same answer as an index of the hook's own (another runtime: no owner there)
        cold = self.hook(edit(self.repo, NEW_RULE, "warm"),
                         env={"XDG_RUNTIME_DIR": support.tempdir(self)})
        self.assertEqual(json.loads(cold.stdout.decode("utf-8")), warm)
        # the owner's memory is the session's; no file is written meanwhile
        self.silent(self.hook(edit(self.repo, NEW_RULE, "warm")), "already given")
        self.assertEqual(glob.glob(os.path.join(self.runtime, "majordomus", "hook-*")), [])
        for client, name, event in [("codex", "user-prompt-submit", "UserPromptSubmit"),
                                    ("gemini", "session-start", "SessionStart")]:
            with self.subTest(event=event):
                self.context(self.hook(fixture_text(client, name, self.repo, "w-" + name)),
                             event)
        owner.close()
        wait_for(lambda: not glob.glob(os.path.join(self.runtime, "majordomus", "*.json")),
                 what="the lease's removal")
        p = self.hook(edit(self.repo, NEW_RULE, "after"), env={"MAJORDOMUS_LOG": "debug"})
        self.assertIn("the hook was answered by an index of its own", p.stderr.decode())

    def test_the_module_asks_the_owner_too(self):
        """From the checkout (no door: the module loaded whole) the same answer, from the
        owner as well."""
        self.owner()
        answers = []
        for via in ("pyz", "py"):
            p = self.hook(edit(self.repo, NEW_RULE, "both-" + via), via=via,
                          env={"MAJORDOMUS_LOG": "debug"})
            self.assertIn("answered by the shared server", p.stderr.decode(), via)
            answers.append(json.loads(p.stdout.decode("utf-8")))
        self.assertEqual(answers[0], answers[1])

    def test_the_orientation_names_the_other_sessions(self):
        self.owner("alpha-agent", wrapped=True)
        bridge = self.spawn("beta-agent")
        wait_for(lambda: "attached to the shared server" in bridge.stderr(), what="a bridge")
        self.tool(bridge, "majordomus_announce", {"intent": "tidy", "scope": ["docs"]})
        text = self.context(self.hook(fixture("claude-code", "session-start", self.repo)),
                            "SessionStart")
        self.assertIn("Other sessions in this repository (1): p1 (alpha-agent) on branch "
                      "main", text)
        self.assertNotIn("beta-agent", text)        # the hook's own client's session


@unittest.skipIf(os.name == "nt", "POSIX process tree")
class GuardTest(SharedHookCase):
    """§31: --guard refuses an edit of a path another session claims, and only that."""

    def test_the_guard(self):
        other = self.owner("other-agent", wrapped=True)
        held = self.tool(other, "majordomus_announce", {
            "intent": "rework the governed code", "scope": ["src/governed"], "claim": True})
        self.assertIs(held["claim"], True)
        claimed = edit(self.repo, "src/governed/existing.py", "g1", tool="MultiEdit")
        value = self.answer(self.hook(claimed, "--guard"))
        self.assertEqual(list(value["hookSpecificOutput"]), [
            "hookEventName", "permissionDecision", "permissionDecisionReason"])
        self.assertEqual(value["hookSpecificOutput"]["permissionDecision"], "deny")
        reason = value["hookSpecificOutput"]["permissionDecisionReason"]
        self.assertTrue(reason.startswith(
            "majordomus guard: src/governed is claimed by p1 (other-agent) on branch main in %s"
            % self.repo), reason)
        self.assertIn("release", reason)
        # the rest is allowed, with its brief
        self.assertIn("`docs/analysis.ipynb`", self.context(self.hook(
            fixture("claude-code", "pre-tool-use-notebookedit", self.repo, "g1"), "--guard")))
        # Codex: a patch touching the claimed folder; Gemini CLI: its own deny
        patch = self.answer(self.hook(fixture("codex", "pre-tool-use-apply-patch", self.repo,
                                              "g2"), "--guard"))
        self.assertEqual(patch["hookSpecificOutput"]["permissionDecision"], "deny")
        gemini = self.answer(self.hook(fixture("gemini", "before-tool-replace", self.repo, "g3"),
                                       "--guard"))
        self.assertEqual(list(gemini), ["decision", "reason"])
        self.assertEqual(gemini["decision"], "deny")
        self.assertIn("claimed by p1 (other-agent)", gemini["reason"])
        # without --guard: a warning in the context, nothing refused
        text = self.context(self.hook(claimed))
        self.assertIn("Claimed by another session: src/governed, by p1 (other-agent) on branch "
                      "main in %s" % self.repo, text)
        # a claim of the hook's own client (its server's client is the hook's ancestor)
        own = self.spawn("own-agent")
        wait_for(lambda: "attached to the shared server" in own.stderr(), what="a bridge")
        self.tool(own, "majordomus_announce", {"intent": "notes", "scope": ["docs"],
                                               "claim": True})
        text = self.context(self.hook(fixture("claude-code", "pre-tool-use-notebookedit",
                                              self.repo, "g4"), "--guard"))
        self.assertNotIn("Claimed", text)
        # released by its holder: allowed again
        self.tool(other, "majordomus_announce", {"intent": "done", "scope": [], "claim": False})
        self.assertNotIn("permissionDecision", self.answer(self.hook(
            edit(self.repo, "src/governed/existing.py", "g5"), "--guard"))["hookSpecificOutput"])


@unittest.skipIf(os.name == "nt", "POSIX process tree")
class DoorTest(SharedHookCase):
    """The archive's door (build_zipapp.py): the module's hook_door and only what it uses,
    compiled alone, each function the module's own."""

    @classmethod
    def setUpClass(cls):
        import marshal
        import zipfile
        import importlib.util
        with zipfile.ZipFile(support.PYZ) as archive:
            cls.door = archive.read("majordomus-hook.pyc")
            cls.module = archive.read("majordomus.pyc")
        if cls.door[:4] != importlib.util.MAGIC_NUMBER:
            raise unittest.SkipTest("the archive's bytecode is another interpreter's: here "
                                    "the module is compiled from its source, and no door runs")
        cls.door_code = marshal.loads(cls.door[16:])
        cls.module_code = marshal.loads(cls.module[16:])

    @staticmethod
    def functions(code):
        return {c.co_name: c for c in code.co_consts if hasattr(c, "co_code")}

    def test_a_subset_of_the_module(self):
        door, module = self.functions(self.door_code), self.functions(self.module_code)
        self.assertIn("hook_door", door)
        for name in ("build_index", "Registry", "brief", "hook_deliver", "Live", "run_hook"):
            self.assertNotIn(name, door)
        for name, code in door.items():
            with self.subTest(function=name):
                self.assertEqual((code.co_code, code.co_firstlineno, code.co_names),
                                 (module[name].co_code, module[name].co_firstlineno,
                                  module[name].co_names))
        self.assertLess(len(self.door), len(self.module) // 8)

    def test_a_warm_hook_imports_little(self):
        """Through the door, with an owner live: neither `re` nor `json` nor `hashlib`, nor
        `socket` or `threading`, beyond what starting any archive imports (3.9's runpy
        imports `re`, through importlib.util and typing)."""
        self.owner()

        def imported(*args, **kwargs):
            p = subprocess.run([support.PYTHON, "-S", "-X", "importtime", support.PYZ] +
                               list(args), cwd=self.repo, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30,
                               env=support.base_env(self.env), **kwargs)
            return p, {line.rsplit("|", 1)[1].strip() for line in
                       p.stderr.decode("utf-8").splitlines() if line.startswith("import time:")}
        p, hook = imported("hook", input=json.dumps(edit(self.repo, NEW_RULE)).encode("utf-8"))
        self.assertIn(b"hookSpecificOutput", p.stdout, p.stderr[-2000:])
        _, start = imported("--version")
        self.assertEqual(sorted({"re", "json", "hashlib", "socket", "threading"} & hook
                                - start), [])


@unittest.skipIf(os.name == "nt", "POSIX process tree")
class WorktreeGuardTest(SharedHookCase):
    """§31: a claim in another checkout of the repository, whose server runs, refuses an
    edit here, where none runs (the hook reads the layer itself and asks that server)."""

    def test_a_claim_in_another_checkout(self):
        other = os.path.join(os.path.dirname(self.repo), "feature-checkout")
        support.git(self.repo, "worktree", "add", "-q", "-b", "feature", other)
        other = os.path.realpath(other)
        session = Wrapped(other, env=self.env)
        self.addCleanup(session.kill)
        self.initialized(session, "far-agent")
        wait_for(lambda: "sharing this repository's server" in session.stderr(),
                 what="the other checkout's owner")
        self.tool(session, "majordomus_announce", {"intent": "rework", "claim": True,
                                                   "scope": ["src/governed"]})
        p = self.hook(edit(self.repo, "src/governed/existing.py", "far"), "--guard",
                      env={"MAJORDOMUS_LOG": "debug"})
        self.assertIn("an index of its own", p.stderr.decode())
        value = json.loads(p.stdout.decode("utf-8"))
        reason = value["hookSpecificOutput"]["permissionDecisionReason"]
        self.assertIn("src/governed is claimed by p1@", reason)
        self.assertIn("(far-agent) on branch feature in %s" % other, reason)
        start = self.context(self.hook(fixture("claude-code", "session-start", self.repo,
                                               "far")), "SessionStart")
        self.assertIn("Other sessions in this repository (1): p1@", start)
        self.assertIn("(far-agent) on branch feature: claims src/governed", start)


class PrintConfigTest(HookCase):
    """--print-config CLIENT: the client's hooks, running this archive (§30)."""

    def config(self, *args, via="pyz"):
        p = support.run(["hook", "--print-config"] + list(args), self.repo, via=via)
        self.assertEqual((p.returncode, p.stderr), (0, b""))
        return json.loads(p.stdout.decode("utf-8"))

    def commands(self, value):
        return [hook["command"] for groups in value["hooks"].values() for group in groups
                for hook in group["hooks"]]

    def test_each_client(self):
        expected = {
            "claude-code": {"SessionStart": None, "UserPromptSubmit": None,
                            "PreToolUse": "Edit|Write|MultiEdit|NotebookEdit"},
            "codex": {"SessionStart": None, "UserPromptSubmit": None,
                      "PreToolUse": "apply_patch"},
            "gemini": {"SessionStart": None, "BeforeAgent": None,
                       "AfterTool": "write_file|replace"}}
        for client, events in expected.items():
            with self.subTest(client=client):
                value = self.config(client)
                self.assertEqual(list(value), ["hooks"])
                self.assertEqual({event: groups[0].get("matcher")
                                  for event, groups in value["hooks"].items()}, events)
                for command in self.commands(value):
                    self.assertEqual(shlex.split(command), [
                        "python3", "-S", "-c", IMPORT_HOOK, support.PYZ, "hook", "--client",
                        client] if os.name != "nt" else [
                        "py", "-3", "-S", support.PYZ, "hook", "--client", client])
                timeouts = {hook["timeout"] for groups in value["hooks"].values()
                            for group in groups for hook in group["hooks"]}
                self.assertEqual(timeouts, {5000} if client == "gemini" else {5})
        guarded = self.config("gemini", "--guard")
        self.assertEqual(guarded["hooks"]["BeforeTool"][0]["matcher"], "write_file|replace")
        self.assertTrue(all(c.endswith(" --guard") for c in self.commands(guarded)))
        self.assertTrue(all(c.endswith("--client codex --guard")
                            for c in self.commands(self.config("codex", "--guard"))))
        # majordomus.py itself has no member to import: it is run
        for command in self.commands(self.config("codex", via="py")):
            self.assertEqual(shlex.split(command)[1:], ["-S", support.PY, "hook",
                                                        "--client", "codex"])

    def test_the_printed_command_runs(self):
        command = shlex.split(self.commands(self.config("claude-code"))[0])
        if shutil.which(command[0]) is None:    # (a Debian root with python3.X alone)
            command[0] = support.PYTHON
        p = subprocess.run(command, cwd=self.repo, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, env=support.base_env(self.env),
                           input=json.dumps(edit(self.repo, NEW_RULE)).encode("utf-8"),
                           timeout=30)
        self.assertIn(RULE + "project.alpha@2", self.context(p))

    def test_the_printed_command_imports_neither_runpy_nor_the_folder_s_modules(self):
        """The command imports the archive's member majordomus_hook (CPython would load
        runpy, importlib.util and contextlib to run the archive); the folder the client
        runs it in is not on the path, so a majordomus_hook.py there is never run."""
        support.write(self.repo, "majordomus_hook.py", "print('the folder s own module')\n")
        command = shlex.split(self.commands(self.config("claude-code"))[0])
        if os.name == "nt":
            self.skipTest("Windows runs the archive (hook_command)")
        p = subprocess.run([support.PYTHON, "-X", "importtime"] + command[1:], cwd=self.repo,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=support.base_env(self.env), timeout=30,
                           input=json.dumps(edit(self.repo, NEW_RULE)).encode("utf-8"))
        lines = p.stderr.decode("utf-8").splitlines()
        self.assertEqual([line for line in lines if not line.startswith("import time:")], [])
        self.assertIn(RULE + "project.alpha@2", self.context(
            subprocess.CompletedProcess(p.args, p.returncode, p.stdout, b"")))
        self.assertNotIn(b"the folder s own module", p.stdout)
        imported = {line.rsplit("|", 1)[1].strip() for line in lines}
        # (majordomus_hook's own line never comes: a hook ends, os._exit, inside that import)
        self.assertIn("zipimport", imported)
        self.assertNotIn("majordomus_hook", imported)
        self.assertEqual(sorted({"runpy", "importlib.util", "contextlib"} & imported), [])
        # a cold hook ranks a prompt without regular expressions (nor json, which loads re)
        asked = fixture("claude-code", "user-prompt-submit", self.repo, "s-2",
                        prompt="Write the alpha rule's test names as the checklist says")
        p = subprocess.run([support.PYTHON, "-X", "importtime"] + command[1:], cwd=self.repo,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=support.base_env(self.env), timeout=30,
                           input=json.dumps(asked).encode("utf-8"))
        self.assertIn(RULE + "project.alpha@2", self.context(
            subprocess.CompletedProcess(p.args, p.returncode, p.stdout, b""),
            "UserPromptSubmit"))
        imported = {line.rsplit("|", 1)[1].strip() for line in
                    p.stderr.decode("utf-8").splitlines() if line.startswith("import time:")}
        self.assertIn("zipimport", imported)
        self.assertEqual(sorted({"re", "json", "runpy"} & imported), [])

    def test_a_person_s_mistake_is_a_usage_error(self):
        p = support.run(["hook", "--print-config", "vim"], self.repo)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"invalid value 'vim' for '--print-config", p.stderr)


class InProcessTest(unittest.TestCase):
    """The hook's decisions, in process."""

    def test_windows_paths(self):
        root = "C:\\Users\\dev\\repo"
        for given, cwd, expected in [
                ("C:\\Users\\dev\\repo\\src\\governed\\new.py", root, "src/governed/new.py"),
                ("c:/users/dev/repo/src/x.py", None, "src/x.py"),
                ("src\\x.py", "C:\\Users\\dev\\repo\\docs", "docs/src/x.py"),
                ("C:\\Users\\dev\\repo", root, "."),
                ("C:\\Users\\dev\\other\\x.py", root, None),
                ("D:\\repo\\x.py", root, None),
                ("..\\..\\x.py", root, None),
                ("\\\\server\\share\\x.py", root, None)]:
            with self.subTest(given=given):
                self.assertEqual(mj.hook_target(root, cwd, given, ntpath), expected)
        # here, a Windows path is nobody's
        self.assertIsNone(mj.hook_target("/repo", "/repo", "C:\\repo\\x.py"))
        self.assertEqual(mj.hook_target("/repo", "/repo/src", "x.py"), "src/x.py")
        self.assertEqual(mj.hook_target("/repo", "/elsewhere", "/repo/a/./b/../c.py"), "a/c.py")

    def test_patches(self):
        patch = ("*** Begin Patch\n*** Add File: a.py\n+x\n*** Update File: b/c.py\r\n"
                 "*** Move to: d.py\n@@\n-*** Add File: not-a-path\n*** Delete File: a.py\n"
                 "*** End Patch")
        self.assertEqual(mj.patch_paths(patch), ["a.py", "b/c.py", "d.py"])
        self.assertEqual(mj.patch_paths("*** Add File: a.py\n"), [])     # no patch
        self.assertEqual(mj.patch_paths(None), [])

    def test_the_client_told(self):
        for value, client in [
                ({"hook_event_name": "BeforeTool"}, "gemini"),
                ({"hook_event_name": "SessionStart", "timestamp": "t"}, "gemini"),
                ({"hook_event_name": "PreToolUse", "tool_name": "apply_patch"}, "codex"),
                ({"hook_event_name": "UserPromptSubmit", "turn_id": "t"}, "codex"),
                ({"hook_event_name": "PreToolUse", "tool_name": "Edit"}, "claude-code")]:
            self.assertEqual(mj.hook_client(value), client)
        self.assertEqual(mj.hook_client({"hook_event_name": "BeforeTool"}, "codex"), "codex")

    def test_outputs(self):
        base = {"client": "claude-code", "hook_event_name": "PreToolUse", "deny": None,
                "context": "x"}
        self.assertEqual(json.loads(mj.hook_output(base)), {"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "additionalContext": "x"}})
        self.assertEqual(json.loads(mj.hook_output(dict(base, deny="no"))), {
            "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "no"}})
        self.assertEqual(json.loads(mj.hook_output(dict(base, client="gemini", deny="no"))),
                         {"decision": "deny", "reason": "no"})
        self.assertEqual(mj.hook_output(dict(base, context="")), "")

    def test_the_memory_is_bounded(self):
        memory = mj.HookMemory()
        for n in range(mj.HOOK_SESSIONS + 5):
            with memory.session("s%d" % n) as given:
                given["x"] = True
        self.assertEqual(len(memory.sessions), mj.HOOK_SESSIONS)
        self.assertNotIn("s0", memory.sessions)
        with memory.session("big") as given:
            given.update(("k%d" % n, True) for n in range(mj.HOOK_KEPT + 10))
        self.assertEqual(len(memory.sessions["big"]), mj.HOOK_KEPT)
        self.assertNotIn("k0", memory.sessions["big"])


if __name__ == "__main__":
    unittest.main()
