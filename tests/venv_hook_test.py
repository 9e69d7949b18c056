"""What `majordomus hook` prints, judged by the clients' published hook output schemas
(SPEC §30), with an independent judge, `jsonschema`.

Not named test_*.py on purpose: it needs the third-party `jsonschema` package, so it runs
only in the test virtual environment (tests/run_all.py's VENV_MODULES; from the checkout:

    .venv/bin/python tests/_unit.py venv_hook_test

). For each recorded input of each client (tests/fixtures/hooks/, whose README cites the
shapes' sources) the real program (the zipapp and the module) answers in a scratch
repository; the answer must validate against:
- Codex: the hook output schemas of the open-source Codex CLI, kept as fixtures
  (schemas/codex/, as published: pre-tool-use, session-start, user-prompt-submit);
- Claude Code: schemas/claude-code.hook-output.schema.json, written from its hooks reference;
- Gemini CLI: schemas/gemini.hook-output.schema.json, written from its reference and types;
with `hookEventName` the input's event, and the context naming the chain and the chosen
rules; the guard's refusals too (a claim held by another session). The schemas must also
refuse what a client would (a wrong event name, an unknown field), so that they can fail.
"""
import json
import os
import sys
import unittest

import jsonschema

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests import test_hook  # noqa: E402   (its cases; its tests are its own to run)
from tests.test_hook import FIXTURES, HookCase, SharedHookCase, edit, fixture_text  # noqa

SCHEMAS = os.path.join(FIXTURES, "schemas")
CODEX = {"PreToolUse": "pre-tool-use", "SessionStart": "session-start",
         "UserPromptSubmit": "user-prompt-submit"}


def load(*parts):
    with open(os.path.join(SCHEMAS, *parts), encoding="utf-8") as handle:
        return json.load(handle)


def schema_for(client, event):
    if client == "codex":
        return load("codex", "%s.command.output.schema.json" % CODEX[event])
    return load("%s.hook-output.schema.json" % client)


class HookSchemaTest(HookCase):
    def valid(self, client, event, value):
        schema = schema_for(client, event)
        jsonschema.validators.validator_for(schema).check_schema(schema)
        jsonschema.validate(value, schema)
        return value

    def test_each_event_of_each_client(self):
        for via in ("pyz", "py"):
            for n, (client, name, event, wanted) in enumerate(test_hook.EventsTest.CASES):
                with self.subTest(via=via, client=client, fixture=name):
                    data = fixture_text(client, name, self.repo, "schema-%s-%d" % (via, n))
                    value = self.valid(client, event, self.answer(self.hook(data, via=via)))
                    specific = value["hookSpecificOutput"]
                    self.assertEqual(specific["hookEventName"], event)
                    for piece in wanted:
                        self.assertIn(piece, specific["additionalContext"])

    def test_the_schemas_can_refuse(self):
        good = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "additionalContext": "x"}}
        for client in ("claude-code", "codex"):
            with self.subTest(client=client):
                self.valid(client, "PreToolUse", good)
                for bad in ({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                                    "additionalcontext": "x"}},
                            {"hookSpecificOutput": {"hookEventName": "PreTool",
                                                    "additionalContext": "x"}},
                            {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                                    "permissionDecision": "refuse"}},
                            dict(good, extra=True)):
                    with self.assertRaises(jsonschema.ValidationError):
                        self.valid(client, "PreToolUse", bad)
        with self.assertRaises(jsonschema.ValidationError):
            self.valid("codex", "SessionStart", {"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "additionalContext": "x"}})
        self.valid("gemini", "AfterTool", {"hookSpecificOutput": {
            "hookEventName": "AfterTool", "additionalContext": "x"}})
        for bad in ({"hookSpecificOutput": {"hookEventName": "BeforeTool",
                                            "additionalContext": "x"}},
                    {"decision": "refuse"}):
            with self.assertRaises(jsonschema.ValidationError):
                self.valid("gemini", "BeforeTool", bad)


@unittest.skipIf(os.name == "nt", "POSIX process tree")
class GuardSchemaTest(SharedHookCase):
    def test_the_refusals(self):
        other = self.owner("other-agent", wrapped=True)
        answer = other.request("tools/call", {"name": "majordomus_announce", "arguments": {
            "intent": "rework", "scope": ["src/governed", ".ai/repo/rules"], "claim": True}})
        self.assertIs(answer["result"]["isError"], False, answer)
        for client, name in [("claude-code", "pre-tool-use-multiedit"),
                             ("codex", "pre-tool-use-apply-patch"),
                             ("gemini", "before-tool-replace")]:
            with self.subTest(client=client):
                value = self.answer(self.hook(fixture_text(client, name, self.repo, "deny-"
                                                           + client), "--guard"))
                jsonschema.validate(value, schema_for(client, "PreToolUse"))
                if client == "gemini":
                    self.assertEqual(value["decision"], "deny")
                else:
                    self.assertEqual(value["hookSpecificOutput"]["permissionDecision"], "deny")
                    self.assertEqual(value["hookSpecificOutput"]["hookEventName"], "PreToolUse")
        warned = self.answer(self.hook(edit(self.repo, "src/governed/x.py", "warned")))
        jsonschema.validate(warned, schema_for("claude-code", "PreToolUse"))
        self.assertIn("Claimed by another session", warned["hookSpecificOutput"][
            "additionalContext"])


if __name__ == "__main__":
    unittest.main()
