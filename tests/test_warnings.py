"""Nothing in the product warns (SPEC §0: nothing 3.14 or 3.15 warns about): the real
program run with `-W error`, through the CLI, an MCP session in both protocol eras, and
`serve`, must start, answer and stop without a warning becoming an error."""
import json
import subprocess
import unittest

from tests import support

MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {}}


class WarningsAreErrorsTest(support.ClassRepo, unittest.TestCase):
    def strict(self, args, via="pyz", **kwargs):
        return subprocess.run([support.PYTHON, "-W", "error", "-X", "dev", support.ENTRIES[via]]
                              + args, cwd=self.repo, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=support.base_env(), timeout=60,
                              **kwargs)

    def test_cli(self):
        for via in ("pyz", "py"):
            for args in (["--help"], ["mcp", "--inspect"], ["capabilities", "list"],
                         ["get", "majordomus://prompt/continue"],
                         ["prompt", "continue", "--arg", "CONTEXT=x"]):
                with self.subTest(via=via, args=args):
                    proc = self.strict(args, via)
                    self.assertEqual(proc.returncode, 0, proc.stderr)
                    self.assertNotIn(b"Warning", proc.stderr)

    def test_mcp_session(self):
        lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
                 {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                 {"jsonrpc": "2.0", "id": 3, "method": "server/discover",
                  "params": {"_meta": MODERN}},
                 {"jsonrpc": "2.0", "id": 4, "method": "resources/read",
                  "params": {"uri": "majordomus://repository", "_meta": MODERN}}]
        data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
        proc = self.strict(["mcp"], input=data)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        answers = [json.loads(line) for line in proc.stdout.splitlines()]
        self.assertEqual([a["id"] for a in answers], [1, 2, 3, 4])
        self.assertTrue(all("result" in a for a in answers), answers)
        self.assertNotIn(b"Warning", proc.stderr)

    def test_serve(self):
        import signal
        server = support.HttpServer(self.repo, args=[], env={"PYTHONWARNINGS": "error",
                                                            "PYTHONDEVMODE": "1"})
        try:
            self.assertEqual(server.get_json("/api/v1/repository")[0], 200)
            status, _, _ = server.request("POST", "/mcp", body=json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}))
            self.assertEqual(status, 200)
        finally:
            rc = server.stop(signal.SIGTERM)
        self.assertEqual(rc, 0, server.stderr())
        self.assertNotIn("Warning", server.stderr())


if __name__ == "__main__":
    unittest.main()
