"""`majordomus mcp` and `majordomus serve`'s `/mcp` driven by the official MCP Python SDK
(`mcp` on PyPI, 2.x): SPEC §18 (the SDK's `Client` in auto mode negotiates 2026-07-28,
`ClientSession` 2025-11-25) and §19 (its Streamable HTTP client completes a session in
both eras).

Not named test_*.py on purpose: it imports the third-party `mcp` package at the top, so it
runs only in the test virtual environment (from the checkout):

    python3 -m venv .venv && .venv/bin/pip install mcp
    .venv/bin/python tests/_unit.py venv_sdk_test
"""
import json
import sys
import time
import unittest

import anyio
import mcp.types as types
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ResourcesListChanged
from mcp.shared.exceptions import MCPError

from tests import support
from tests.support import (MODERN, PROMPT_PATH, PROMPT_URI, REPOSITORY_URI, RULE_PATH, RULE_URI)

LEGACY = "2025-11-25"
UNKNOWN_URI = "majordomus://rule/no.such-rule@9"
TOOLS = list(support.TOOLS)
SCENARIO_TIMEOUT = 90    # seconds one whole SDK scenario may take on a loaded machine
WAIT = 25                # seconds to wait for a notification of the live layer


def wire(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)




class SdkCase(unittest.TestCase):
    maxDiff = None

    def run_async(self, scenario, *args):
        async def bounded():
            with anyio.fail_after(SCENARIO_TIMEOUT):
                return await scenario(*args)
        return anyio.run(bounded)

    def legacy(self, connect):
        """A 2025-era ClientSession over the streams of connect() (stdio_client or
        streamable_http_client): initialize, ping, then exercise(): (initialize's result,
        what exercise returned)."""
        async def scenario():
            async with connect() as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    await session.send_ping()
                    return init, await self.exercise(session)
        return self.run_async(scenario)

    def listen(self, target, name, **listen):
        """A 2026-07-28 Client of target (stdio parameters or the /mcp URL) listens for
        resources/list_changed (and what `listen` adds) while the rule `name` is staged:
        (the protocol version, what the server honoured, the rule's URI, the URIs listed
        after the notification)."""
        async def scenario():
            async with Client(target) as client:
                async with client.listen(resources_list_changed=True, **listen) as sub:
                    honored = sub.honored
                    uri = self.stage(name)
                    with anyio.fail_after(WAIT):
                        async for event in sub:
                            if isinstance(event, ResourcesListChanged):
                                break
                listed = await client.list_resources(cache_mode="bypass")
                return (client.protocol_version, honored, uri,
                        [str(r.uri) for r in listed.resources])
        return self.run_async(scenario)

    def stage(self, name):
        path, text, uri = support.staged_rule(name)
        support.write(self.repo, path, text)
        support.git(self.repo, "add", path)
        return uri

    # --- one set of calls, either client -----------------------------------------------

    async def exercise(self, client):
        """The calls every era must serve, as wire JSON."""
        out = {}
        out["tools"] = wire(await client.list_tools())
        out["get"] = wire(await client.call_tool("majordomus_get", {"uri": RULE_URI}))
        out["get_prompt_object"] = wire(await client.call_tool("majordomus_get",
                                                               {"uri": PROMPT_URI}))
        out["get_unknown"] = wire(await client.call_tool("majordomus_get",
                                                         {"uri": UNKNOWN_URI}))
        out["read_rule"] = wire(await client.read_resource(RULE_URI))
        out["read_repo"] = wire(await client.read_resource(REPOSITORY_URI))
        out["resources"] = wire(await client.list_resources())
        out["prompts"] = wire(await client.list_prompts())
        out["prompt"] = wire(await client.get_prompt("continue", {"CONTEXT": "x"}))
        try:
            await client.read_resource(UNKNOWN_URI)
        except MCPError as exc:
            out["read_unknown"] = {"code": exc.code, "message": exc.message, "data": exc.data}
        else:
            out["read_unknown"] = None
        return out

    def check(self, out, era):
        tools = out["tools"]["tools"]
        self.assertEqual([t["name"] for t in tools], TOOLS)
        for tool in tools:
            self.assertEqual(tool["inputSchema"]["type"], "object")
            self.assertEqual(tool["outputSchema"]["type"], "object")
        get = out["get"]
        self.assertIs(get["isError"], False)
        sc = get["structuredContent"]
        self.assertEqual(sc["uri"], RULE_URI)
        self.assertEqual(sc["kind"], "rule")
        self.assertEqual(sc["content"].encode("utf-8"), support.read_bytes(self.repo, RULE_PATH))
        self.assertEqual(json.loads(get["content"][0]["text"]), sc)
        self.assertEqual(out["get_prompt_object"]["structuredContent"]["uri"], PROMPT_URI)
        self.assertIs(out["get_unknown"]["isError"], True)
        self.assertNotIn("structuredContent", out["get_unknown"])
        contents = out["read_rule"]["contents"]
        self.assertEqual(len(contents), 1)
        self.assertEqual(str(contents[0]["uri"]), RULE_URI)
        self.assertEqual(contents[0]["mimeType"], "text/markdown")
        self.assertEqual(contents[0]["text"].encode("utf-8"),
                         support.read_bytes(self.repo, RULE_PATH))
        self.assertEqual(json.loads(out["read_repo"]["contents"][0]["text"])["state"], "ok")
        uris = [str(r["uri"]) for r in out["resources"]["resources"]]
        self.assertEqual(uris[:2], support.QUERY_URIS)      # the peers, the repository
        self.assertIn(RULE_URI, uris)
        prompts = out["prompts"]["prompts"]
        self.assertEqual([p["name"] for p in prompts], ["continue"])
        self.assertEqual(prompts[0]["arguments"], [{
            "name": "CONTEXT", "description": "Replaces {{CONTEXT}} in the prompt.",
            "required": True}])
        body = support.read_bytes(self.repo, PROMPT_PATH).decode("utf-8").split("---\n", 2)[2]
        self.assertEqual(out["prompt"]["messages"], [{
            "role": "user", "content": {"type": "text",
                                        "text": body.replace("{{CONTEXT}}", "x")}}])
        self.assertEqual(out["prompt"]["description"], "pick up unfinished work from its notes")
        unknown = out["read_unknown"]
        self.assertIsNotNone(unknown, "reading an unknown URI did not fail")
        if era == MODERN:
            self.assertEqual(unknown["code"], -32602)
            self.assertEqual(unknown["data"], {"uri": UNKNOWN_URI})
            for key in ("tools", "read_rule", "resources", "prompts"):
                self.assertEqual(out[key].get("ttlMs"), 0, key)
                self.assertEqual(out[key].get("cacheScope"), "private", key)
        else:
            self.assertEqual(unknown["code"], -32002)
        self.assertEqual(unknown["message"], "resource not found: " + UNKNOWN_URI)

    @staticmethod
    def core(out):
        """What both eras must answer alike (the 2026 decorations left out)."""
        return {
            "tools": out["tools"]["tools"],
            "get": out["get"]["structuredContent"],
            "get_unknown": out["get_unknown"]["content"],
            "read_rule": out["read_rule"]["contents"],
            "resources": out["resources"]["resources"],
            "prompts": out["prompts"]["prompts"],
            "prompt": out["prompt"]["messages"],
        }


# ------------------------------------------------------------------------------------------
# stdio
# ------------------------------------------------------------------------------------------

class StdioSdkTests(SdkCase):
    @classmethod
    def setUpClass(cls):
        support.require_archive()
        cls.repo = support.class_repo(cls)

    def params(self, entry=support.PYZ):
        # The SDK's child gets only HOME, LOGNAME, PATH, SHELL, TERM and USER: add what the
        # server's git needs to ignore the machine's configuration, and quiet its log.
        env = dict(support.GIT_ENV, MAJORDOMUS_LOG="warn")
        return StdioServerParameters(command=sys.executable, args=[entry, "mcp"], env=env,
                                     cwd=self.repo)

    def test_client_auto_negotiates_2026(self):
        async def scenario(entry):
            async with Client(self.params(entry)) as client:
                found = client.session.discover_result
                return (client.protocol_version, client.server_info,
                        found, await self.exercise(client))
        for entry in (support.PYZ, support.PY):
            with self.subTest(entry=entry):
                version, info, found, out = self.run_async(scenario, entry)
                self.assertEqual(version, MODERN)
                self.assertIsNotNone(info, "no serverInfo in the discover result's _meta")
                self.assertEqual(info.name, "majordomus")
                self.assertEqual(info.title, "Majordomus")
                self.assertIsNotNone(found)
                self.assertIn(MODERN, found.supported_versions)
                self.assertEqual(found.cache_scope, "private")
                self.assertEqual(found.ttl_ms, 0)
                self.check(out, MODERN)

    def test_client_pinned_2026(self):
        async def scenario():
            async with Client(self.params(), mode=MODERN) as client:
                return client.protocol_version, await self.exercise(client)
        version, out = self.run_async(scenario)
        self.assertEqual(version, MODERN)
        self.check(out, MODERN)

    def test_client_session_negotiates_2025_11_25(self):
        init, out = self.legacy(lambda: stdio_client(self.params()))
        self.assertEqual(init.protocol_version, LEGACY)
        self.assertEqual(init.server_info.name, "majordomus")
        self.assertTrue(init.capabilities.resources.list_changed)
        self.assertTrue(init.capabilities.resources.subscribe)
        self.check(out, LEGACY)

    def test_both_eras_answer_alike(self):
        async def scenario():
            async with Client(self.params()) as client:
                modern = await self.exercise(client)
            async with Client(self.params(), mode="legacy") as client:
                legacy_version = client.protocol_version
                legacy = await self.exercise(client)
            return modern, legacy_version, legacy
        modern, legacy_version, legacy = self.run_async(scenario)
        self.assertEqual(legacy_version, LEGACY)
        self.assertEqual(self.core(modern), self.core(legacy))

    def test_message_handler_hears_list_changed(self):
        """Issue 8: a legacy session's message handler receives
        ResourceListChangedNotification after a rule is staged."""
        async def scenario():
            heard, other = anyio.Event(), []

            async def handler(message):
                if isinstance(message, types.ResourceListChangedNotification):
                    heard.set()
                else:
                    other.append(message)
            async with stdio_client(self.params()) as (read, write):
                async with ClientSession(read, write, message_handler=handler) as session:
                    await session.initialize()
                    await session.list_tools()
                    uri = self.stage("handled")
                    with anyio.fail_after(WAIT):
                        await heard.wait()
                    listed = await session.list_resources()
                    return uri, [str(r.uri) for r in listed.resources], other
        uri, uris, other = self.run_async(scenario)
        self.assertIn(uri, uris)
        self.assertEqual([m for m in other if isinstance(m, Exception)], [])

    def test_listen_hears_list_changed(self):
        version, honored, uri, uris = self.listen(self.params(), "listened",
                                                  tools_list_changed=True)
        self.assertEqual(version, MODERN)
        self.assertIs(honored.resources_list_changed, True)
        self.assertFalse(honored.tools_list_changed)
        self.assertIn(uri, uris)


# ------------------------------------------------------------------------------------------
# Streamable HTTP at /mcp
# ------------------------------------------------------------------------------------------

class HttpSdkTests(SdkCase):
    @classmethod
    def setUpClass(cls):
        support.require_archive()
        cls.repo = support.class_repo(cls)
        cls.srv = support.HttpServer(cls.repo)
        cls.addClassCleanup(cls.srv.stop)
        cls.url = "http://127.0.0.1:%d/mcp" % cls.srv.port

    def test_legacy_session(self):
        init, out = self.legacy(lambda: streamable_http_client(self.url))
        self.assertEqual(init.protocol_version, LEGACY)
        self.assertEqual(init.server_info.name, "majordomus")
        self.check(out, LEGACY)

    def test_client_auto_negotiates_2026(self):
        async def scenario():
            async with Client(self.url) as client:
                return client.protocol_version, client.server_info, await self.exercise(client)
        version, info, out = self.run_async(scenario)
        self.assertEqual(version, MODERN)
        self.assertIsNotNone(info)
        self.assertEqual(info.name, "majordomus")
        self.check(out, MODERN)

    def test_both_eras_answer_alike_and_as_stdio(self):
        async def scenario():
            async with Client(self.url) as client:
                modern = await self.exercise(client)
            async with Client(self.url, mode="legacy") as client:
                legacy = await self.exercise(client)
            params = StdioServerParameters(command=sys.executable, args=[support.PYZ, "mcp"],
                                           env=dict(support.GIT_ENV, MAJORDOMUS_LOG="warn"),
                                           cwd=self.repo)
            async with Client(params) as client:
                stdio = await self.exercise(client)
            return modern, legacy, stdio
        modern, legacy, stdio = self.run_async(scenario)
        self.assertEqual(self.core(modern), self.core(legacy))
        self.assertEqual(self.core(modern), self.core(stdio))

    def test_legacy_stream_hears_list_changed(self):
        """The SDK opens its GET stream on its own after `notifications/initialized`; a
        change made before the stream is open is not kept, so stage until one is heard."""
        async def scenario():
            heard = anyio.Event()

            async def handler(message):
                if isinstance(message, types.ResourceListChangedNotification):
                    heard.set()
            async with streamable_http_client(self.url) as (read, write):
                async with ClientSession(read, write, message_handler=handler) as session:
                    await session.initialize()
                    deadline = time.monotonic() + WAIT
                    n = 0
                    while not heard.is_set():
                        self.assertLess(time.monotonic(), deadline, "no list_changed heard")
                        n += 1
                        self.stage("streamed%d" % n)
                        with anyio.move_on_after(3):
                            await heard.wait()
                    return n
        self.assertGreaterEqual(self.run_async(scenario), 1)

    def test_modern_listen(self):
        _, honored, uri, uris = self.listen(self.url, "heard")
        self.assertIs(honored.resources_list_changed, True)
        self.assertIn(uri, uris)


if __name__ == "__main__":
    unittest.main()
