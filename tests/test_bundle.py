"""The bundles of `python3 build_zipapp.py --mcpb` (SPEC §28): majordomus.mcpb (an MCP Bundle,
manifest version 0.3) and server.json (the MCP registry's entry, schema 2025-12-11).

Two builds in two folders are byte-identical; the manifest says what §28 asks and lists the
tools a real session lists; the bundle, unpacked, runs by its own mcp_config (its
`${__dirname}` and `${user_config.repository}` filled in as a client fills them, `python3`
being the interpreter under test) with a scratch repository, from a folder outside it, and
answers initialize and tools/list; server.json names the bundle by its SHA-256. (The official
`mcpb validate` judges the manifest in tests/judges.py.)"""
import hashlib
import json
import os
import re
import subprocess
import unittest
import zipfile

from tests import support

import majordomus

BUILD = os.path.join(support.ROOT, "build_zipapp.py")
OUTPUTS = ("majordomus.pyz", "majordomus.mcpb", "server.json")


def build(folder, *options):
    """build_zipapp.py --mcpb into folder; {name: bytes} of what it wrote."""
    os.makedirs(folder, exist_ok=True)
    p = subprocess.run([support.PYTHON, BUILD, "--mcpb"] + list(options)
                       + [os.path.join(folder, "majordomus.pyz")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if p.returncode != 0:
        raise AssertionError("build_zipapp.py --mcpb failed: %s" % p.stderr.decode())
    written = p.stdout.decode("utf-8").split()
    out = {}
    for name in OUTPUTS:
        path = os.path.join(folder, name)
        if path not in written:
            raise AssertionError("%s not said written: %r" % (name, written))
        with open(path, "rb") as handle:
            out[name] = handle.read()
    return out


def substituted(value, names):
    """mcp_config with the client's variables filled in (MCPB: ${__dirname}, ${user_config.…})."""
    if isinstance(value, str):
        for name, text in names.items():
            value = value.replace("${%s}" % name, text)
        return value
    if isinstance(value, list):
        return [substituted(item, names) for item in value]
    return {key: substituted(item, names) for key, item in value.items()}


class BundleTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.base = support.tempdir(support._ClassScope(cls))
        cls.first = build(os.path.join(cls.base, "one"))
        cls.second = build(os.path.join(cls.base, "two"))
        cls.bundle = os.path.join(cls.base, "one", "majordomus.mcpb")
        with zipfile.ZipFile(cls.bundle) as archive:
            cls.names = archive.namelist()
            cls.manifest = json.loads(archive.read("manifest.json").decode("utf-8"))
            cls.unpacked = os.path.join(cls.base, "unpacked")
            archive.extractall(cls.unpacked)

    def test_two_builds_are_byte_identical(self):
        for name in OUTPUTS:
            with self.subTest(name=name):
                self.assertEqual(hashlib.sha256(self.first[name]).hexdigest(),
                                 hashlib.sha256(self.second[name]).hexdigest())

    def test_the_bundle_holds_the_manifest_and_the_archive(self):
        self.assertEqual(self.names, ["manifest.json", "majordomus.pyz"])
        with open(os.path.join(self.unpacked, "majordomus.pyz"), "rb") as handle:
            self.assertEqual(handle.read(), self.first["majordomus.pyz"])
        with zipfile.ZipFile(self.bundle) as archive:
            for info in archive.infolist():
                self.assertEqual(info.date_time, (1980, 1, 1, 0, 0, 0), info.filename)

    def test_the_manifest(self):
        m = self.manifest
        self.assertEqual(m["manifest_version"], "0.3")
        self.assertEqual((m["name"], m["version"]), ("majordomus", majordomus.VERSION))
        self.assertTrue(m["description"] and m["author"]["name"])
        server = m["server"]
        self.assertEqual((server["type"], server["entry_point"]), ("python", "majordomus.pyz"))
        self.assertIn(server["entry_point"], self.names)
        run = ["${__dirname}/majordomus.pyz", "mcp", "--repo", "${user_config.repository}"]
        self.assertEqual(server["mcp_config"]["command"], "python3")
        self.assertEqual(server["mcp_config"]["args"], run)
        self.assertEqual(server["mcp_config"]["platform_overrides"],
                         {"win32": {"command": "py", "args": ["-3"] + run}})
        self.assertEqual(m["user_config"]["repository"]["type"], "directory")
        self.assertIs(m["user_config"]["repository"]["required"], True)
        self.assertEqual(list(m["user_config"]), ["repository"])
        self.assertEqual(m["compatibility"], {"platforms": ["darwin", "linux", "win32"],
                                              "runtimes": {"python": ">=3.9"}})
        # the builtin tools, from the module's registry, in tools/list order
        self.assertEqual([t["name"] for t in m["tools"]], support.TOOLS)
        by_id = {d["exposure"]["mcp"]["tool"]: d["description"]
                 for d in majordomus.builtin_descriptors()
                 if "tool" in d["exposure"].get("mcp", {})}
        for tool in m["tools"]:
            self.assertEqual(tool["description"], by_id[tool["name"]])

    def test_it_runs_by_its_mcp_config(self):
        repo = support.make_repo(self)
        elsewhere = support.tempdir(self)          # a client starts it in a folder of its own
        config = substituted(self.manifest["server"]["mcp_config"],
                             {"__dirname": self.unpacked, "user_config.repository": repo})
        self.assertEqual(config["command"], "python3")
        command = [support.PYTHON] + config["args"]     # python3: the interpreter under test
        requests = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "bundle-test", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
        p = subprocess.run(command, cwd=elsewhere, env=support.base_env(config.get("env")),
                           input="".join(json.dumps(r) + "\n" for r in requests).encode(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        answers = [json.loads(line) for line in p.stdout.decode("utf-8").splitlines()]
        self.assertEqual([a["id"] for a in answers], [1, 2], answers)
        self.assertEqual(answers[0]["result"]["serverInfo"]["name"], "majordomus")
        self.assertEqual(answers[0]["result"]["serverInfo"]["version"], self.manifest["version"])
        tools = answers[1]["result"]["tools"]
        self.assertEqual([(t["name"], t["description"]) for t in tools],
                         [(t["name"], t["description"]) for t in self.manifest["tools"]])

    def test_server_json(self):
        entry = json.loads(self.first["server.json"].decode("utf-8"))
        self.assertEqual(list(entry), ["$schema", "name", "description", "version", "packages"])
        self.assertEqual(entry["$schema"],
                         "https://static.modelcontextprotocol.io/schemas/2025-12-11/"
                         "server.schema.json")
        self.assertRegex(entry["name"], r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")
        self.assertTrue(3 <= len(entry["name"]) <= 200)
        self.assertTrue(1 <= len(entry["description"]) <= 100, len(entry["description"]))
        self.assertEqual(entry["version"], majordomus.VERSION)
        package, = entry["packages"]
        self.assertEqual(package, {
            "registryType": "mcpb",
            "identifier": "https://github.com/majordomus/majordomus/releases/download/v%s/"
                          "majordomus.mcpb" % majordomus.VERSION,
            "version": majordomus.VERSION,
            "fileSha256": hashlib.sha256(self.first["majordomus.mcpb"]).hexdigest(),
            "transport": {"type": "stdio"}})
        self.assertRegex(package["fileSha256"], r"^[a-f0-9]{64}$")

    def test_the_registry_name_and_the_address_are_options(self):
        out = build(os.path.join(self.base, "named"), "--registry-name", "io.github.someone/mj",
                    "--download-url", "https://example.invalid/{version}/mj.mcpb")
        entry = json.loads(out["server.json"].decode("utf-8"))
        self.assertEqual(entry["name"], "io.github.someone/mj")
        self.assertEqual(entry["packages"][0]["identifier"],
                         "https://example.invalid/%s/mj.mcpb" % majordomus.VERSION)
        self.assertEqual(out["majordomus.mcpb"], self.first["majordomus.mcpb"])
        p = subprocess.run([support.PYTHON, BUILD, "--mcpb", "--no-such-option"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"unexpected argument '--no-such-option'", p.stderr)
        self.assertTrue(re.search(rb"Usage: python3 build_zipapp.py", p.stderr))


if __name__ == "__main__":
    unittest.main()
