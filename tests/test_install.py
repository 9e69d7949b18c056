"""`majordomus install` (SPEC §32): the running archive copied, byte for byte, to the user
folder (or --dir), never into a repository; each client's configuration printed, running
that copy with --repo set to the client's workspace variable; nothing else written. Every
run has a fake HOME of its own; the printed configurations are spawned as printed."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import unittest
import unittest.mock

from tests import support

NO_LAYER = 'no AI layer here: see "Start a layer" in the README'
CLIENTS = ["Claude Code", "Claude Desktop", "Cursor", "VS Code"]


def tree(folder):
    """{relative path: sha256 of the bytes, or '/' for a folder} of everything under it."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), folder)] = "/"
        for name in filenames:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as handle:
                out[os.path.relpath(path, folder)] = hashlib.sha256(handle.read()).hexdigest()
    return out


def digest(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def default_folder(home):
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "majordomus")
    return os.path.join(home, ".local", "share", "majordomus")


class InstallTest(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        if os.name == "nt":
            self.skipTest("the POSIX user folder and commands")
        self.home = os.path.realpath(support.tempdir(self))
        support.write(self.home, ".bashrc", "# the user's own\n")
        support.write(self.home, ".config/editor/settings.json", "{}\n")
        self.repo = support.make_repo(self)
        self.env = {"HOME": self.home}

    def install(self, *args, via="pyz", cwd=None, archive=None):
        command = [sys.executable, archive] if archive else support.command(via)
        return subprocess.run(command + ["install"] + list(args), cwd=cwd or self.repo,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=support.base_env(self.env), timeout=60)

    def spawn(self, server, cwd, workspace):
        """Run a printed server entry as its client would (the workspace variable
        expanded), send initialize and tools/list: (instructions, tool names)."""
        argv = [server["command"]] + [workspace if a in ("${workspaceFolder}",
                                                         "/path/to/repository") else a
                                      for a in server["args"]]
        if shutil.which(argv[0]) is None:      # (a Debian root with python3.X alone)
            argv[0] = support.PYTHON
        lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "install-test", "version": "1"}}},
                 {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
        p = subprocess.run(argv, cwd=cwd, input="".join(json.dumps(l) + "\n" for l in lines)
                           .encode("utf-8"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=support.base_env(self.env), timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        answers = [json.loads(line) for line in p.stdout.decode("utf-8").splitlines()]
        self.assertEqual([a["id"] for a in answers], [1, 2], answers)
        return (answers[0]["result"]["instructions"],
                [t["name"] for t in answers[1]["result"]["tools"]])

    def test_install_dir_copies_the_archive_and_the_configurations_run_it(self):
        before_home, before_repo = tree(self.home), support.snapshot(self.repo)
        folder = os.path.join(self.home, "tools", "mj")
        p = self.install("--dir", folder, "--format", "json")
        self.assertEqual(p.returncode, 0, p.stderr)
        value = json.loads(p.stdout.decode("utf-8"))
        archive = os.path.join(folder, "majordomus.pyz")
        self.assertEqual((value["archive"], value["copied"]), (archive, True))
        self.assertEqual(digest(archive), digest(support.PYZ), "not byte-identical")
        # nothing else written: HOME holds the folder and the archive more, the repository
        # (its git status, index, files) is as it was
        after = tree(self.home)
        self.assertEqual({k: v for k, v in after.items() if k not in before_home},
                         {"tools": "/", os.path.join("tools", "mj"): "/",
                          os.path.join("tools", "mj", "majordomus.pyz"): digest(archive)})
        self.assertEqual({k: after[k] for k in before_home}, before_home)
        self.assertEqual(support.snapshot(self.repo), before_repo)
        # each client's configuration: that copy, --repo the client's workspace variable
        clients = {c["client"]: c for c in value["clients"]}
        self.assertEqual([c["client"] for c in value["clients"]], CLIENTS)
        repos = {"Claude Code": ".", "Claude Desktop": "/path/to/repository",
                 "Cursor": "${workspaceFolder}", "VS Code": "${workspaceFolder}"}
        for name, config in clients.items():
            key = "servers" if name == "VS Code" else "mcpServers"
            server = config["config"][key]["majordomus"]
            self.assertEqual(server["args"], [archive, "mcp", "--repo", repos[name]], name)
            self.assertEqual(server["command"], "python3")
        self.assertEqual(clients["VS Code"]["config"]["servers"]["majordomus"]["type"], "stdio")
        self.assertEqual(clients["Claude Code"]["command"],
                         "claude mcp add --scope user majordomus -- python3 %s mcp --repo ."
                         % archive)
        # ... and runs it: in the repository (a layer), and in a folder without one
        plain = support.tempdir(self)
        for name, config in clients.items():
            server = config["config"]["servers" if name == "VS Code" else "mcpServers"][
                "majordomus"]
            with self.subTest(client=name):
                instructions, tools = self.spawn(server, self.repo, self.repo)
                self.assertTrue(instructions.startswith("Read-only view of a repository's AI "
                                                        "layer: 9 object(s)"), instructions)
                self.assertEqual(tools, support.TOOLS)
                instructions, tools = self.spawn(server, plain, plain)
                self.assertEqual(instructions, NO_LAYER)
                self.assertEqual(tools, support.TOOLS)
        self.assertEqual(support.snapshot(self.repo), before_repo)
        # the text form prints the same configurations
        p = self.install("--dir", folder)
        self.assertEqual(p.returncode, 0, p.stderr)
        text = p.stdout.decode("utf-8")
        self.assertTrue(text.startswith("majordomus %s installed: %s\n" % (
            value["version"], archive)), text)
        for config in value["clients"]:
            self.assertIn("\n%s: %s\n" % (config["client"], config["where"]), text)
            self.assertIn(json.dumps(config["config"], indent=2), text)
        self.assertIn("\n  " + clients["Claude Code"]["command"] + "\n", text)

    def test_the_default_folder_and_installing_again_from_the_copy(self):
        p = self.install()
        self.assertEqual(p.returncode, 0, p.stderr)
        archive = os.path.join(default_folder(self.home), "majordomus.pyz")
        self.assertEqual(digest(archive), digest(support.PYZ))
        self.assertIn("installed: %s\n" % archive, p.stdout.decode("utf-8"))
        # the installed copy, asked again: it is already there, nothing is written
        before = tree(self.home)
        p = self.install("--format", "json", archive=archive)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout.decode("utf-8"))["copied"], False)
        self.assertEqual(tree(self.home), before)
        p = self.install(archive=archive)
        self.assertIn("already at %s\n" % archive, p.stdout.decode("utf-8"))

    def test_never_into_a_repository(self):
        before_home, before_repo = tree(self.home), support.snapshot(self.repo)
        for folder, cwd in ((".", self.repo), (os.path.join(self.repo, "tools"), self.home),
                            (os.path.join(self.repo, ".ai", "bin"), self.home)):
            with self.subTest(folder=folder):
                p = self.install("--dir", folder, cwd=cwd)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(p.stdout, b"")
                self.assertEqual(p.stderr.decode("utf-8"), (
                    "majordomus: %s is inside the repository %s: install puts the archive in "
                    "a folder of yours, never in a repository (one copy serves every "
                    "repository; pass --dir DIR outside it)\n" % (
                        os.path.abspath(os.path.join(cwd, folder)), self.repo)))
        # a layer without git is a repository too
        layer = os.path.join(support.tempdir(self), "layer")
        support.copy_layer(layer)
        p = self.install("--dir", os.path.join(layer, "bin"))
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(tree(self.home), before_home)
        self.assertEqual(support.snapshot(self.repo), before_repo)
        self.assertFalse(os.path.exists(os.path.join(layer, "bin")))

    def test_a_home_under_version_control_is_no_repository(self):
        # a work tree at ~ (dotfiles) holds the user folder; it is not a project
        support.git(self.home, "init", "-q")
        p = self.install()
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.isfile(os.path.join(default_folder(self.home),
                                                    "majordomus.pyz")))

    def test_run_from_the_module_it_refuses(self):
        before = tree(self.home)
        p = self.install(via="py")
        self.assertEqual(p.returncode, 12, p.stderr)
        self.assertEqual(p.stdout, b"")
        self.assertEqual(p.stderr.decode("utf-8"), (
            "majordomus: install copies the archive it runs from, and this is %s: build the "
            "archive (python3 build_zipapp.py) and run: python3 majordomus.pyz install\n"
            % support.PY))
        self.assertEqual(tree(self.home), before)

    def test_help_lists_it(self):
        p = support.run(["--help"], self.repo)
        self.assertIn("\n  install ", p.stdout.decode("utf-8"))
        p = support.run(["install", "--help"], self.repo)
        self.assertEqual(p.returncode, 0)
        self.assertIn("Usage: majordomus install [--dir DIR]", p.stdout.decode("utf-8"))
        p = support.run(["install", "--bogus"], self.repo)
        self.assertEqual(p.returncode, 2)


class FolderTest(unittest.TestCase):
    """The user folder and the configurations of each platform, in process (Windows and
    macOS simulated: the module asks os.name and sys.platform when it is called)."""

    def setUp(self):
        if os.name == "nt":
            self.skipTest("POSIX paths stand for every platform's here")
        import majordomus
        self.mj = majordomus

    def test_each_platform_folder(self):
        mock = unittest.mock
        home = "/home/someone"
        with mock.patch.dict(os.environ, {"HOME": home}):
            with mock.patch.object(self.mj.sys, "platform", "linux"):
                self.assertEqual(self.mj.install_folder(),
                                 (home + "/.local/share/majordomus", None))
            with mock.patch.object(self.mj.sys, "platform", "darwin"):
                self.assertEqual(self.mj.install_folder(),
                                 (home + "/Library/Application Support/majordomus", None))
        with mock.patch.object(self.mj.os, "name", "nt"):
            with mock.patch.dict(os.environ, {"LOCALAPPDATA": "/c/Users/x/AppData/Local"}):
                self.assertEqual(self.mj.install_folder(),
                                 ("/c/Users/x/AppData/Local/majordomus", None))
                clients = self.mj.install_clients("C:/Users/x/My Apps/majordomus.pyz")
            with mock.patch.dict(os.environ, {"LOCALAPPDATA": ""}):
                self.assertEqual(self.mj.install_folder(),
                                 (None, "LOCALAPPDATA names no absolute directory"))
        server = clients[2]["config"]["mcpServers"]["majordomus"]
        self.assertEqual(server, {"command": "py", "args": [
            "-3", "C:/Users/x/My Apps/majordomus.pyz", "mcp", "--repo", "${workspaceFolder}"]})
        self.assertEqual(clients[0]["command"], 'claude mcp add --scope user majordomus -- py '
                         '-3 "C:/Users/x/My Apps/majordomus.pyz" mcp --repo .')


if __name__ == "__main__":
    unittest.main()
