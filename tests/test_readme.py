"""The README a person follows (SPEC §28): its starter layer, copied out of the README into a
scratch repository and staged as it says, is served `state ok`; every JSON snippet in it
parses; its one-click install links decode to the configuration it documents, which is the
one build_zipapp.py makes them from; the error outside a layer names a section it has."""
import base64
import json
import os
import re
import unittest
from urllib.parse import parse_qs, unquote, urlsplit

from tests import support

import build_zipapp

README = os.path.join(support.ROOT, "README.md")
STARTER_SECTION = "Start a layer"
LINKS_SECTION = "One-click install links"


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
        files = [(info.split()[1], body) for info, body in
                 fenced(section(readme(), STARTER_SECTION)) if len(info.split()) == 2]
        self.assertEqual([path for path, _ in files],
                         [".ai/manifest.yaml", ".ai/repo/knowledge/sources.yaml",
                          ".ai/repo/rules/tests-first.v1.md"])
        repo = support.make_repo(self, files=dict(files), skeleton=False, commit=False)
        support.git(repo, "add", ".ai")     # staged, not committed: as the README says
        for via in ("pyz", "py"):
            with self.subTest(via=via):
                p = support.run(["mcp", "--inspect"], repo, via=via)
                out = p.stdout.decode("utf-8")
                self.assertEqual(p.returncode, 0, out + p.stderr.decode("utf-8"))
                self.assertIn("\nstate       ok\n", out)
                self.assertIn("\nresource    majordomus://rule/team.tests-first@1\n", out)
                self.assertNotIn("FAIL", out)
                self.assertNotIn("WARN", out)

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
        self.assertEqual(documented, [build_zipapp.CLIENT])
        config = documented[0]
        links = re.findall(r"\]\(((?:vscode:|cursor:|https://insiders\.vscode\.dev/)[^)\s]+)\)",
                           text)
        self.assertEqual(sorted(links), sorted(build_zipapp.install_links().values()))
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
        # and the configuration runs this archive, serving the open folder
        self.assertEqual(config["args"][1:], ["mcp", "--repo", "${workspaceFolder}"])
        self.assertTrue(config["args"][0].endswith("/majordomus.pyz"))


if __name__ == "__main__":
    unittest.main()
