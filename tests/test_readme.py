"""The README a person follows (SPEC §28, §32): its starter layer (a rule, a context document,
a decision record), copied out of the README into a scratch repository and staged as it says,
is served `state ok`, and its example of a rule scoped to a place names the rule in the brief
of a path it tracks; every JSON snippet in it parses; its one-click install links decode to
the configurations it documents, which are the ones build_zipapp.py makes them from, running
the copy `install` puts in the user folder; the error outside a layer names a section it
has."""
import base64
import json
import os
import re
import unittest
import unittest.mock
from urllib.parse import parse_qs, unquote, urlsplit

from tests import support

import build_zipapp

README = os.path.join(support.ROOT, "README.md")
STARTER_SECTION = "Start a layer"
SCOPE_SECTION = "Scope a rule to a place"
LINKS_SECTION = "One-click install links"
STARTER_FILES = [".ai/manifest.yaml", ".ai/repo/knowledge/sources.yaml",
                 ".ai/repo/rules/tests-first.v1.md", ".ai/README.md",
                 ".ai/repo/adrs/0001-record-decisions.md"]


def readme():
    with open(README, encoding="utf-8") as handle:
        return handle.read()


def section(text, title):
    """The text of the section headed `title` (any level), up to the next heading of the
    same or a higher level; a `#` line inside a fenced code block is no heading."""
    lines, level, out, fence = text.split("\n"), None, [], False
    for line in lines:
        heading = re.match(r"(#+) (.*)", line) if not fence else None
        if line.startswith("```"):
            fence = not fence
        if level is None:
            if heading and heading.group(2) == title:
                level = len(heading.group(1))
            continue
        if heading and len(heading.group(1)) <= level:
            break
        out.append(line)
    if level is None:
        raise AssertionError("the README has no section %r" % title)
    return "\n".join(out)


def starter_files(title):
    """(path, text) of each fenced block of the section whose info string names a file."""
    return [(info.split()[1], body) for info, body in fenced(section(readme(), title))
            if len(info.split()) == 2]


def fenced(text):
    """(info string, body) of every fenced code block of text."""
    return re.findall(r"^```([^\n]*)\n(.*?)^```$", text, re.M | re.S)


class ReadmeTest(unittest.TestCase):

    def test_every_json_snippet_parses(self):
        blocks = [body for info, body in fenced(readme()) if info.split()[:1] == ["json"]]
        self.assertGreaterEqual(len(blocks), 6)
        for body in blocks:
            with self.subTest(body=body[:60]):
                json.loads(body)

    def test_the_starter_layer_is_served_ok(self):
        files = starter_files(STARTER_SECTION)
        self.assertEqual([path for path, _ in files], STARTER_FILES)
        repo = support.make_repo(self, files=dict(files), skeleton=False, commit=False)
        support.git(repo, "add", ".ai")     # staged, not committed: as the README says
        for via in ("pyz", "py"):
            with self.subTest(via=via):
                p = support.run(["mcp", "--inspect"], repo, via=via)
                out = p.stdout.decode("utf-8")
                self.assertEqual(p.returncode, 0, out + p.stderr.decode("utf-8"))
                self.assertIn("\nstate       ok\n", out)
                for uri in ("majordomus://rule/team.tests-first@1",
                            "majordomus://context/team.layer", "majordomus://adr/adr-0001"):
                    self.assertIn("\nresource    %s\n" % uri, out)
                self.assertIn("\nkind        context      1\n", out)
                self.assertNotIn("FAIL", out)
                self.assertNotIn("WARN", out)
                self.assertNotIn("\nnote ", out)     # every section it names is there (§32)

    def test_a_rule_scoped_to_a_place(self):
        """The example of "Scope a rule to a place", beside the starter layer and a file of
        code: the brief of a path under what its `tracks` names lists the rule as named by
        it; elsewhere the rule is in force and named by nobody."""
        example = starter_files(SCOPE_SECTION)
        self.assertEqual([path for path, _ in example], [".ai/repo/rules/src/README.md"])
        files = dict(starter_files(STARTER_SECTION) + example)
        files.update({"src/app.py": "print('hello')\n", "docs/guide.md": "# Guide\n"})
        repo = support.make_repo(self, files=files, skeleton=False, commit=False)
        support.git(repo, "add", ".")
        p = support.run(["mcp", "--inspect"], repo)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(b"\nresource    majordomus://context/team.src\n", p.stdout)
        self.assertNotIn(b"FAIL", p.stdout)
        for path, named, chain in (("src/app.py", ["team.src"], ["team.layer", "team.src"]),
                                   ("src/new.py", ["team.src"], ["team.layer", "team.src"]),
                                   ("docs/guide.md", [], ["team.layer"])):
            with self.subTest(path=path):
                p = support.run(["brief", path, "--format", "json"], repo)
                self.assertEqual(p.returncode, 0, p.stderr)
                brief = json.loads(p.stdout.decode("utf-8"))
                rules = {r["id"]: r for r in brief["rules"]}
                self.assertEqual(rules["team.tests-first"]["named_by"], named)
                self.assertEqual(rules["team.tests-first"]["class"], "blocking")
                self.assertEqual(sorted(d["id"] for d in brief["documents"]), chain)
        p = support.run(["context", "resolve", "src/app.py", "--format", "json"], repo)
        self.assertEqual([d["id"] for d in json.loads(p.stdout.decode("utf-8"))["documents"]],
                         ["team.layer", "team.src"])

    def test_the_error_outside_a_layer_names_a_section_it_has(self):
        outside = support.tempdir(self)
        p = support.run(["mcp", "--inspect"], outside)
        self.assertEqual(p.returncode, 12)
        self.assertTrue(p.stderr.decode("utf-8").endswith(
            "; see '%s' in the README\n" % STARTER_SECTION), p.stderr)
        section(readme(), STARTER_SECTION)

    def test_the_install_links_decode_to_the_documented_configuration(self):
        text = section(readme(), LINKS_SECTION)
        documented = [json.loads(body) for info, body in fenced(text) if info == "json"]
        self.assertEqual(documented, list(build_zipapp.CLIENTS.values()))
        # each system's configuration precedes its own links
        parts = re.split(r"^```json\n.*?^```$", text, flags=re.M | re.S)[1:]
        self.assertEqual(len(parts), len(documented))
        for config, part in zip(documented, parts):
            with self.subTest(config=config["command"] + " " + config["args"][-4]):
                self.check_links(config, part)
        # the path each runs is the copy `install` makes (Linux and macOS: ${userHome})
        import majordomus
        home = support.tempdir(self)
        for system, platform in (("Linux", "linux"), ("macOS", "darwin")) * (os.name != "nt"):
            with unittest.mock.patch.dict(os.environ, {"HOME": home}), \
                    unittest.mock.patch.object(majordomus.sys, "platform", platform):
                folder, _ = majordomus.install_folder()
            self.assertEqual(build_zipapp.CLIENTS[system]["args"][0], "${userHome}" + (
                os.path.join(folder, "majordomus.pyz")[len(home):]))
            self.assertIn("| %s | `~%s` |" % (system, os.path.join(folder, "majordomus.pyz")[
                len(home):]), readme())
        windows = build_zipapp.CLIENTS["Windows"]
        self.assertEqual((windows["command"], windows["args"][:2]),
                         ("py", ["-3", "${userHome}/AppData/Local/majordomus/majordomus.pyz"]))

    def check_links(self, config, text):
        links = re.findall(r"\]\(((?:vscode:|cursor:|https://insiders\.vscode\.dev/)[^)\s]+)\)",
                           text)
        self.assertEqual(sorted(links), sorted(build_zipapp.install_links(config).values()))
        by_scheme = {urlsplit(link).scheme: link for link in links}
        self.assertEqual(set(by_scheme), {"vscode", "cursor", "https"})
        # VS Code: the whole configuration, name included, as percent-encoded JSON
        vscode = by_scheme["vscode"]
        self.assertTrue(vscode.startswith("vscode:mcp/install?"))
        self.assertEqual(json.loads(unquote(vscode.split("?", 1)[1])), config)
        # the redirect for pages that do not open vscode: links carries that same link
        redirect = parse_qs(urlsplit(by_scheme["https"]).query)
        self.assertEqual(redirect, {"url": [vscode]})
        # Cursor: the name, and the rest of the configuration in base64
        cursor = urlsplit(by_scheme["cursor"])
        self.assertEqual((cursor.netloc, cursor.path),
                         ("anysphere.cursor-deeplink", "/mcp/install"))
        query = parse_qs(cursor.query)
        self.assertEqual(sorted(query), ["config", "name"])
        self.assertEqual(query["name"], [config["name"]])
        body = json.loads(base64.b64decode(query["config"][0], validate=True).decode("utf-8"))
        self.assertEqual(dict(body, name=query["name"][0]), config)
        # and the configuration runs the installed copy, serving the open folder
        self.assertEqual(config["args"][-3:], ["mcp", "--repo", "${workspaceFolder}"])
        self.assertTrue(config["args"][-4].startswith("${userHome}/"))
        self.assertTrue(config["args"][-4].endswith("/majordomus/majordomus.pyz"))


if __name__ == "__main__":
    unittest.main()
