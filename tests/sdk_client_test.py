"""`majordomus mcp` driven by the official MCP Python SDK's stdio client.

Not named test_*.py on purpose: it needs the third-party `mcp` package, so it runs only
in a virtualenv that has it (from the checkout):

    python3 -m venv .venv && .venv/bin/pip install mcp
    .venv/bin/python -m unittest tests.sdk_client_test -v

Results are compared as their wire JSON (`model_dump(by_alias=True, mode="json")`), so the
test reads the same under SDK 1.x (camelCase attributes) and 2.x (snake_case attributes).
"""
import asyncio
import json
import os
import sys
import tempfile
import unittest

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests import support
from tests.support import (PROMPT_PATH, PROMPT_URI, REPOSITORY_URI, RULE_PATH, RULE_URI,
                           SUPPORTED_VERSIONS)

TOOLS = list(support.TOOLS)


def wire(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


class SdkClientTest(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        support.require_archive()
        self.repo = support.make_repo(self)
        fd, self.errlog_path = tempfile.mkstemp(prefix="mj-sdk-", suffix=".log")
        os.close(fd)
        self.addCleanup(os.unlink, self.errlog_path)

    def params(self, entry):
        env = support.base_env()
        return StdioServerParameters(command=sys.executable, args=[entry, "mcp"],
                                     env=env, cwd=self.repo)

    async def scenario(self, entry):
        out = {}
        with open(self.errlog_path, "w") as errlog:
            async with stdio_client(self.params(entry), errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    out["init"] = wire(await session.initialize())
                    await session.send_ping()
                    out["resources"] = wire(await session.list_resources())
                    out["read_rule"] = wire(await session.read_resource(RULE_URI))
                    out["read_repo"] = wire(await session.read_resource(REPOSITORY_URI))
                    out["tools"] = wire(await session.list_tools())
                    # call_tool validates structuredContent against the listed outputSchema
                    out["get"] = wire(await session.call_tool("majordomus_get",
                                                              {"uri": PROMPT_URI}))
                    out["get_repo"] = wire(await session.call_tool("majordomus_get",
                                                                   {"uri": REPOSITORY_URI}))
                    out["search"] = wire(await session.call_tool(
                        "majordomus_search", {"query": "unfinished", "mode": "substring"}))
                    out["ranked"] = wire(await session.call_tool("majordomus_search",
                                                                 {"query": "unfinished notes"}))
                    out["repository"] = wire(await session.call_tool("majordomus_repository",
                                                                     {}))
                    out["list"] = wire(await session.call_tool("majordomus_list",
                                                               {"kind": "rule"}))
                    out["capabilities"] = wire(await session.call_tool(
                        "majordomus_capabilities", {}))
                    out["perf"] = wire(await session.call_tool("majordomus_perf", {}))
                    out["prompt_tool"] = wire(await session.call_tool("majordomus_prompt", {
                        "name": "continue", "arguments": {"CONTEXT": "from the SDK"}}))
                    out["prompts"] = wire(await session.list_prompts())
                    out["prompt"] = wire(await session.get_prompt(
                        "continue", {"CONTEXT": "from the SDK"}))
                    out["unknown_cap"] = wire(await session.call_tool("majordomus_capability",
                                                                      {"id": "x"}))
        return out

    def run_scenario(self, entry):
        return asyncio.run(asyncio.wait_for(self.scenario(entry), 60))

    def check(self, out):
        init = out["init"]
        self.assertIn(init["protocolVersion"], SUPPORTED_VERSIONS)
        self.assertEqual(init["serverInfo"]["name"], "majordomus")
        self.assertEqual(init["serverInfo"]["version"], "0.1.0")
        self.assertIn("index state ok", init["instructions"])
        # §9.3, §15.4, §17: a watching process announces list changes and subscriptions
        self.assertEqual(init["capabilities"], {
            "resources": {"subscribe": True, "listChanged": True},
            "tools": {"listChanged": False}, "prompts": {"listChanged": True}})

        uris = [str(r["uri"]) for r in out["resources"]["resources"]]
        self.assertEqual(uris[:2], support.QUERY_URIS)      # the peers, the repository
        self.assertEqual(len(uris), 11)
        self.assertEqual(uris[2:], sorted(uris[2:]))
        self.assertIn(RULE_URI, uris)
        self.assertIn(PROMPT_URI, uris)

        with open(os.path.join(self.repo, RULE_PATH), "rb") as f:
            rule_bytes = f.read()
        contents = out["read_rule"]["contents"]
        self.assertEqual(len(contents), 1)
        self.assertEqual(str(contents[0]["uri"]), RULE_URI)
        self.assertEqual(contents[0]["mimeType"], "text/markdown")
        self.assertEqual(contents[0]["text"].encode("utf-8"), rule_bytes)

        repo_text = out["read_repo"]["contents"][0]["text"]
        self.assertEqual(json.loads(repo_text)["state"], "ok")

        self.assertEqual([t["name"] for t in out["tools"]["tools"]], TOOLS)
        for tool in out["tools"]["tools"]:
            self.assertEqual(tool["inputSchema"]["type"], "object")
            self.assertEqual(tool["outputSchema"]["type"], "object")
            # §27: the one command (it changes the server's memory) is not read-only
            self.assertIs(tool["annotations"]["readOnlyHint"],
                          tool["name"] != "majordomus_announce")

        with open(os.path.join(self.repo, PROMPT_PATH), "rb") as f:
            prompt_bytes = f.read()
        get = out["get"]
        self.assertIs(get["isError"], False)
        sc = get["structuredContent"]
        self.assertEqual(sc["source"], "declarative")
        self.assertEqual(sc["uri"], PROMPT_URI)
        self.assertEqual(sc["id"], "prompt.continue")
        self.assertEqual(sc["kind"], "prompt")
        self.assertEqual(sc["metadata"], {"name": "continue",
                                          "description": "pick up unfinished work from its notes"})
        self.assertEqual(sc["content"].encode("utf-8"), prompt_bytes)
        self.assertEqual(get["content"][0]["type"], "text")
        self.assertEqual(json.loads(get["content"][0]["text"]), sc)

        get_repo = out["get_repo"]
        self.assertIs(get_repo["isError"], False)
        self.assertEqual(get_repo["structuredContent"]["source"], "builtin")
        self.assertEqual(get_repo["structuredContent"]["content"], repo_text)
        self.assertIs(out["repository"]["isError"], False)
        self.assertEqual(get_repo["structuredContent"]["answer"],
                         out["repository"]["structuredContent"])

        search = out["search"]
        self.assertIs(search["isError"], False)
        ssc = search["structuredContent"]
        self.assertEqual(ssc["query"], "unfinished")
        self.assertEqual((ssc["count"], ssc["total"]), (1, 1))
        self.assertEqual(ssc["limit"], 20)
        self.assertNotIn("next_cursor", ssc)
        self.assertEqual([h["uri"] for h in ssc["hits"]], [PROMPT_URI])
        self.assertEqual(ssc["hits"][0]["snippet"], "description: pick up unfinished work from its notes")
        ranked = out["ranked"]["structuredContent"]     # §21: the default mode
        self.assertEqual(list(ranked)[:2], ["query", "mode"])
        self.assertEqual(ranked["mode"], "ranked")
        self.assertEqual(ranked["hits"][0]["uri"], PROMPT_URI)
        self.assertIsInstance(ranked["hits"][0]["score"], float)

        self.assertIs(out["list"]["isError"], False)
        self.assertEqual([o["uri"] for o in out["list"]["structuredContent"]["objects"]],
                         [RULE_URI])
        self.assertIs(out["capabilities"]["isError"], False)
        # eighteen builtins (context.resolve, §20; context.brief, §26; peers.list and
        # peers.announce, §27; hook.deliver, §30; peers.tell, §31; context.list, validate,
        # affected and sync, §33) and the nine declarative: the default page holds 20
        self.assertEqual(out["capabilities"]["structuredContent"]["count"], 20)
        self.assertEqual(out["capabilities"]["structuredContent"]["total"], 27)
        self.assertIs(out["perf"]["isError"], False)
        self.assertEqual(out["perf"]["structuredContent"]["index_builds"], 1)

        body = prompt_bytes.decode("utf-8").split("---\n", 2)[2]
        filled = body.replace("{{CONTEXT}}", "from the SDK")
        messages = [{"role": "user", "content": {"type": "text", "text": filled}}]
        self.assertIs(out["prompt_tool"]["isError"], False)
        self.assertEqual(out["prompt_tool"]["structuredContent"]["messages"], messages)
        self.assertEqual(out["prompt_tool"]["structuredContent"]["uri"], PROMPT_URI)
        prompts = out["prompts"]["prompts"]
        self.assertEqual([p["name"] for p in prompts], ["continue"])
        self.assertEqual(prompts[0]["arguments"], [{
            "name": "CONTEXT", "description": "Replaces {{CONTEXT}} in the prompt.",
            "required": True}])
        self.assertEqual(out["prompt"]["messages"], messages)
        self.assertEqual(out["prompt"]["description"], "pick up unfinished work from its notes")

        unknown = out["unknown_cap"]
        self.assertIs(unknown["isError"], True)
        self.assertNotIn("structuredContent", unknown)
        self.assertEqual(unknown["content"][0]["text"], "not found: unknown capability: x")

        with open(self.errlog_path, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        self.assertIn("index built", err)
        self.assertNotIn("Traceback", err)

    def test_sdk_client_pyz(self):
        self.check(self.run_scenario(support.PYZ))

    def test_sdk_client_py(self):
        self.check(self.run_scenario(support.PY))


if __name__ == "__main__":
    unittest.main()
