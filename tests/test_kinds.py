"""Kinds (SPEC §4.1, §4.4) and reading by kind (§5.1, §5.2): the kinds-file refusals as
unit vectors, then black-box layers holding a file of each of the 23 shipped kinds and a
repository kind of their own, the repository-kinds errors, and the zipapp started through
relative, `..` and symlinked paths.
"""
import json
import os
import shutil
import subprocess
import unittest

from tests import support

import majordomus as mj

KINDS_FILE = ".ai/repo/knowledge/kinds.yaml"
ALLOW_DIR = ".ai/repo/knowledge/allow"
TEXT_KIND = "a text kind has no metadata, so no allow-list, identity fields or members"


def refusal(text):
    """The KindsError reason for one kinds file checked over the shipped kinds."""
    tree = mj.parse_subset(text)
    declared, specs = mj.check_kinds_tree(tree)
    shipped = mj.shipped_kinds()
    merged = dict(shipped.specs)
    merged.update(specs)
    mj.link_kinds(merged, shipped.declared_order + declared)
    return None


def kinds_text(body, declared=None):
    head = "schema: majordomus-kinds/v1\n"
    if declared is not None:
        head += "declared: [%s]\n" % declared
    return head + "kinds:\n" + body


# (name, kinds file text, the reason of §4.1)
REFUSALS = [
    ("unknown top-level field", "schema: majordomus-kinds/v1\ncolour: red\n",
     "unknown field(s): colour"),
    ("another schema", "schema: majordomus-kinds/v9\nkinds:\n  k:\n    format: yaml\n",
     "schema 'majordomus-kinds/v9' is not majordomus-kinds/v1"),
    ("no schema", "kinds:\n  k:\n    format: yaml\n",
     "schema '' is not majordomus-kinds/v1"),
    ("unknown kind field", kinds_text("  k:\n    format: yaml\n    colour: red\n"),
     "kind 'k': unknown field(s): colour"),
    ("unknown schema_version field",
     kinds_text("  k:\n    format: yaml\n    schema_version:\n      field: v\n"
                "      supported: [1]\n      max: 2\n"),
     "kind 'k': unknown field(s): schema_version.max"),
    ("format missing", kinds_text("  k:\n    identity: [id]\n"),
     "kind 'k': format must be markdown, yaml or text"),
    ("format unknown", kinds_text("  k:\n    format: json\n"),
     "kind 'k': format must be markdown, yaml or text"),
    ("upper-case kind name", kinds_text("  Note:\n    format: yaml\n"),
     "kind 'Note': a kind is a lower-case name mapped to its fields"),
    ("text kind with an allow-list", kinds_text("  k:\n    format: text\n    allow: rule\n"),
     "kind 'k': " + TEXT_KIND),
    ("text kind with identity fields", kinds_text("  k:\n    format: text\n    identity: [id]\n"),
     "kind 'k': " + TEXT_KIND),
    ("text kind with members", kinds_text("  k:\n    format: text\n    members: items\n"),
     "kind 'k': " + TEXT_KIND),
    ("text kind with a front matter rule",
     kinds_text("  k:\n    format: text\n    front_matter: optional\n"), "kind 'k': " + TEXT_KIND),
    ("yaml kind with a front matter rule",
     kinds_text("  k:\n    format: yaml\n    front_matter: required\n"),
     "kind 'k': only a markdown kind has a front matter rule"),
    ("yaml kind with a fallback",
     kinds_text("  k:\n    format: yaml\n    without_front_matter: document\n"),
     "kind 'k': only a markdown kind has a front matter rule"),
    ("front matter value", kinds_text("  k:\n    format: markdown\n    front_matter: always\n"),
     "kind 'k': front_matter must be required, optional or none"),
    ("markdown kind with members", kinds_text("  k:\n    format: markdown\n    members: items\n"),
     "kind 'k': only a yaml kind has members"),
    ("identity not a list", kinds_text("  k:\n    format: yaml\n    identity: id\n"),
     "kind 'k': identity must be a list of field names"),
    ("title not a string", kinds_text("  k:\n    format: yaml\n    title: [a]\n"),
     "kind 'k': title must be a string"),
    ("schema_version values of two types",
     kinds_text("  k:\n    format: yaml\n    schema_version:\n      field: v\n"
                "      supported: [1, v1]\n"),
     "kind 'k': schema_version is {field, supported: [values]}, the values all integers "
     "or all strings"),
    ("schema_version without values",
     kinds_text("  k:\n    format: yaml\n    schema_version:\n      field: v\n"
                "      supported: []\n"),
     "kind 'k': schema_version is {field, supported: [values]}, the values all integers "
     "or all strings"),
    ("prompt other than body", kinds_text("  k:\n    format: markdown\n    prompt: yes\n"),
     "kind 'k': prompt must be body"),
    ("prompt on a yaml kind", kinds_text("  k:\n    format: yaml\n    prompt: body\n"),
     "kind 'k': only a markdown kind has a body to serve as a prompt"),
    ("declared yaml kind", kinds_text("  k:\n    format: yaml\n", declared="k"),
     "declared kind 'k' is not a markdown kind that requires front matter"),
    ("declared kind with optional front matter",
     kinds_text("  k:\n    format: markdown\n    front_matter: optional\n", declared="k"),
     "declared kind 'k' is not a markdown kind that requires front matter"),
    ("declared kind nobody defines", kinds_text("  k:\n    format: yaml\n", declared="nope"),
     "declared kind 'nope' is not a markdown kind that requires front matter"),
    ("fallback to a kind that requires front matter",
     kinds_text("  k:\n    format: markdown\n    front_matter: required\n"
                "    without_front_matter: rule\n"),
     "kind 'k': without_front_matter names 'rule', which is not a markdown kind that "
     "accepts a file without front matter"),
    ("fallback to a yaml kind",
     kinds_text("  k:\n    format: markdown\n    front_matter: required\n"
                "    without_front_matter: profile\n"),
     "kind 'k': without_front_matter names 'profile', which is not a markdown kind that "
     "accepts a file without front matter"),
    ("fallback to nothing",
     kinds_text("  k:\n    format: markdown\n    without_front_matter: nope\n"),
     "kind 'k': without_front_matter names 'nope', which is not a markdown kind that "
     "accepts a file without front matter"),
]


class KindsFileRefusalTest(unittest.TestCase):
    def test_refusals(self):
        for name, text, reason in REFUSALS:
            with self.subTest(name):
                with self.assertRaises(mj.KindsError) as caught:
                    refusal(text)
                self.assertEqual(str(caught.exception), reason)

    def test_accepted(self):
        for text in (
                kinds_text("  k:\n    format: text\n    identity: []\n    title: '@heading'\n"),
                kinds_text("  k:\n    format: markdown\n    front_matter: required\n"
                           "    prompt: body\n", declared="k"),
                kinds_text("  k:\n    format: yaml\n    members: items\n    identity: [id]\n"
                           "    schema_version:\n      field: schema\n"
                           "      supported: [k/v1, k/v2]\n"),
                "schema: majordomus-kinds/v1\ndeclared: [context]\n"):
            with self.subTest(text):
                self.assertIsNone(refusal(text))

    def test_shipped_kinds(self):
        """The 23 kinds the README names, in the file's order; `prompt: body` on the prompt
        kind alone; every kind names a format."""
        ours = mj.shipped_kinds()
        self.assertEqual(list(ours.specs), [
            "rule", "prompt", "skill", "profile", "policy", "scope", "milestone", "issue",
            "document", "context", "session", "adr", "knowledge", "use-case", "application",
            "taxonomy", "claim", "command", "moment", "audience", "area", "implementation",
            "test"])
        self.assertEqual([n for n, spec in ours.specs.items() if spec.get("prompt") == "body"],
                         ["prompt"])
        for name, spec in ours.specs.items():
            self.assertIn(spec.get("format"), ("markdown", "yaml", "text"), name)

    def test_shipped_file_is_the_later_eras(self):
        """schema/kinds.yaml holds the 23 kinds of the reference file, `schema: X` read as
        `allow: X`, and `prompt: body` on the prompt kind alone."""
        path = support.reference_or_skip(self, "reference", "later", "kinds.share-ca6f3615.yaml")
        with open(path, encoding="utf-8") as handle:
            reference = mj.parse_subset(handle.read())
        ours = mj.shipped_kinds()
        self.assertEqual(list(ours.specs), list(reference["kinds"]))
        self.assertEqual(ours.declared_order, reference["declared"])
        for name, spec in reference["kinds"].items():
            expected = {("allow" if k == "schema" else k): v for k, v in spec.items()}
            if name == "prompt":
                expected["prompt"] = "body"
            self.assertEqual(ours.specs[name], expected, name)


def layer(*parts):
    """The files of a scratch layer: the skeleton's manifest plus the parts given."""
    with open(os.path.join(support.SKELETON, ".ai", "manifest.yaml"), "rb") as handle:
        files = {".ai/manifest.yaml": handle.read()}
    for part in parts:
        files.update(part)
    return files


def classes(*entries):
    out = "version: 1\nsources:\n"
    for cid, kind, pathspec in entries:
        out += ("  - id: %s\n    kind: %s\n    discovery: vcs\n    pathspec: ':(glob)%s'\n"
                "    required: false\n" % (cid, kind, pathspec))
    return out


def fm(*lines, body="\n# Body\n"):
    return "---\n" + "".join(line + "\n" for line in lines) + "---\n" + body


ALL_KINDS_CLASSES = classes(
    ("policy", "policy", ".ai/repo/policy.yaml"),
    ("scope", "scope", ".ai/repo/scope.yaml"),
    ("profile", "profile", ".ai/repo/profiles/*.yaml"),
    ("rule", "rule", ".ai/repo/rules/**/*.v1.md"),
    ("prompt", "prompt", ".ai/repo/prompts/*.md"),
    ("skill", "skill", ".ai/repo/skills/*/SKILL.md"),
    ("milestone", "milestone", ".ai/repo/project/milestones/*.yaml"),
    ("issue", "issue", ".ai/repo/project/issues/*.yaml"),
    ("session", "session", ".ai/repo/sessions/*.md"),
    ("adr", "adr", ".ai/repo/adrs/*.md"),
    ("knowledge", "knowledge", ".ai/repo/knowledge/notes/*.md"),
    ("use_case", "use-case", ".ai/repo/use-cases/*.md"),
    ("taxonomy", "taxonomy", ".ai/repo/use-cases/taxonomy.yaml"),
    ("application", "application", ".ai/repo/applications/*.md"),
    ("moment", "moment", ".ai/repo/moments/*.md"),
    ("audience", "audience", ".ai/repo/audiences/*.md"),
    ("area", "area", ".ai/repo/areas/*.md"),
    ("claim", "claim", "docs/CLAIMS.yaml"),
    ("command", "command", "share/commands.yaml"),
    ("implementation", "implementation", "lib/*.sh"),
    ("test", "test", "test/cases/*.sh"),
    ("note", "note", ".ai/repo/notes/*.md"),
    ("readme", "document", "**/README.md"),
    ("document", "document", "docs/*.md"),
)

TAXONOMY = """version: 1
categories:
  - id: cat-a
    title: Category A
    summary: the first
  - title: no id here
  - id: cat-d
    title: Category D
"""
CLAIMS = """version: 1
claims:
  - id: C1
    claim: the reader is exact
    note: proven by the oracle test
    status: verified
"""
# `command` has no allow-list, so an item that is not a mapping reaches the members check
# (under an allow-list of `commands.N.<key>` lines it would be an unknown key of the file).
COMMANDS = ("version: 1\ncommands:\n  - id: init\n    title: Init\n    summary: write a layer\n"
            "  - just a string\n")
SCRIPT = "#!/bin/sh\n# A helper\necho hello\n"

ALL_KINDS_FILES = {
    ".ai/repo/knowledge/sources.yaml": ALL_KINDS_CLASSES,
    KINDS_FILE: ("schema: majordomus-kinds/v1\nkinds:\n  note:\n    format: markdown\n"
                 "    front_matter: required\n    allow: note\n    identity: [id]\n"
                 "    title: title\n"),
    ALLOW_DIR + "/note.txt": "# the note kind's keys\n^id$\n^title$\n",
    ".ai/repo/policy.yaml": "version: 1\n",
    ".ai/repo/scope.yaml": "version: 1\nin: [lib, docs]\n",
    ".ai/repo/profiles/p.yaml": "name: p\ndescription: a profile\n",
    ".ai/repo/rules/r.v1.md": fm("id: demo.r", "version: 1", "title: R", "description: a rule"),
    ".ai/repo/rules/README.md": fm("kind: context", "schema: context/v1", "id: ai.repo.rules",
                                   "title: The rules tree", "description: What governs rules.",
                                   "status: active", "scope: subtree", 'providers: ["*"]',
                                   "composition: extend", "order: 100"),
    ".ai/repo/prompts/hello.md": fm("name: hello", "description: say hello"),
    ".ai/repo/skills/s/SKILL.md": fm("schema: skill/v1", "id: demo-skill", "title: S",
                                     "description: a skill"),
    ".ai/repo/skills/t/SKILL.md": fm("schema: skill/v2", "id: next-skill"),
    ".ai/repo/skills/u/SKILL.md": fm("schema: 1", "id: int-skill"),
    ".ai/repo/project/milestones/M001.yaml": "id: M001\ntitle: First\noutcome: done\n",
    ".ai/repo/project/issues/I0001.yaml": "id: I0001\ntitle: One\nobjective: fix\n",
    ".ai/repo/sessions/s1.md": fm("schema: session/v1", "session_id: S1", "title: A session"),
    ".ai/repo/adrs/adr-0001.md": fm("schema: adr/v1", "id: adr-0001", "title: Use data"),
    ".ai/repo/knowledge/notes/k.md": fm("schema: knowledge/v1", "id: k1", "title: K"),
    ".ai/repo/use-cases/u.md": fm("id: u1", "title: U", "summary: a use"),
    ".ai/repo/use-cases/taxonomy.yaml": TAXONOMY,
    ".ai/repo/applications/a.md": fm("id: a1", "title: A", "summary: an application"),
    ".ai/repo/moments/m.md": fm("schema: moment/v1", "id: m1", "title: M", "summary: a moment"),
    ".ai/repo/audiences/x.md": fm("schema: audience/v1", "id: x1", "title: X"),
    ".ai/repo/areas/y.md": fm("schema: area/v1", "id: y1", "title: Y"),
    "docs/CLAIMS.yaml": CLAIMS,
    "docs/guide.md": "# Guide\n\ntext\n",
    "docs/README.md": fm("kind: rule", "id: x"),
    "share/commands.yaml": COMMANDS,
    "lib/a.sh": SCRIPT,
    "test/cases/00_x.sh": SCRIPT,
    ".ai/repo/notes/first.md": fm("id: first", "title: First note"),
    ".ai/repo/notes/second.md": fm("id: second", "colour: red"),
}

ALL_KINDS_URIS = [
    "majordomus://adr/adr-0001", "majordomus://application/a1", "majordomus://area/y1",
    "majordomus://audience/x1", "majordomus://claim/C1", "majordomus://command/init",
    "majordomus://context/ai.repo.rules", "majordomus://document/docs/guide.md",
    "majordomus://implementation/lib/a.sh", "majordomus://issue/I0001",
    "majordomus://knowledge/k1", "majordomus://milestone/M001", "majordomus://moment/m1",
    "majordomus://note/first", "majordomus://policy/.ai/repo/policy.yaml",
    "majordomus://profile/p", "majordomus://prompt/hello", "majordomus://rule/demo.r@1",
    "majordomus://scope/.ai/repo/scope.yaml", "majordomus://session/S1",
    "majordomus://skill/demo-skill", "majordomus://taxonomy/cat-a",
    "majordomus://taxonomy/cat-d", "majordomus://test/test/cases/00_x.sh",
    "majordomus://use-case/u1",
]

ALL_KINDS_DIAGNOSTICS = [
    {"severity": "warning", "code": "claimed_twice", "path": "docs/README.md",
     "message": "matched by class 'document' after class 'readme'; kept under 'readme'"},
    {"severity": "error", "code": "unsupported_version", "path": ".ai/repo/skills/t/SKILL.md",
     "message": 'schema "skill/v2" is not among the supported ["skill/v1"]'},
    {"severity": "error", "code": "missing_field", "path": ".ai/repo/skills/u/SKILL.md",
     "message": "no 'schema'"},
    {"severity": "error", "code": "missing_field", "path": ".ai/repo/use-cases/taxonomy.yaml",
     "message": "member categories.1: identity field 'id' is absent or empty"},
    {"severity": "error", "code": "malformed_yaml", "path": "share/commands.yaml",
     "message": "member commands.1 is not a mapping"},
    {"severity": "error", "code": "unknown_key", "path": ".ai/repo/notes/second.md",
     "message": "key(s) not in .ai/repo/knowledge/allow/note.txt: colour"},
    {"severity": "error", "code": "kind_mismatch", "path": "docs/README.md",
     "message": "declares kind 'rule' but was discovered by class 'readme' as 'document'"},
]


def inspect_json(repo, via="pyz", args=()):
    proc = support.run(["mcp", "--inspect", "--format", "json"] + list(args), cwd=repo, via=via)
    return proc, (json.loads(proc.stdout.decode("utf-8")) if proc.stdout else None)


class AllKindsTest(unittest.TestCase):
    """A layer holding a file of each of the 23 kinds and a repository kind of its own."""

    @classmethod
    def setUpClass(cls):
        cls.repo = support.make_repo(support._ClassScope(cls), layer(ALL_KINDS_FILES),
                                     skeleton=False)

    def test_inspect(self):
        for via in ("pyz", "py"):
            with self.subTest(via=via):
                proc, doc = inspect_json(self.repo, via)
                self.assertEqual(proc.returncode, 10, proc.stderr)
                report = doc["repository"]
                uris = [r["uri"] for r in doc["resources"]]
                self.assertEqual(uris, support.QUERY_URIS + ALL_KINDS_URIS)
                self.assertEqual(report["state"], "degraded")
                self.assertEqual(report["diagnostics"], ALL_KINDS_DIAGNOSTICS)
                self.assertEqual(report["repository"]["kinds_file"], KINDS_FILE)
                self.assertEqual(list(report["repository"])[-2:], ["source_classes", "kinds_file"])
                self.assertEqual(len(report["kinds"]), 24)

    def test_media_types(self):
        _, doc = inspect_json(self.repo)
        types = {r["uri"]: r["mimeType"] for r in doc["resources"]}
        self.assertEqual(types["majordomus://implementation/lib/a.sh"], "text/plain")
        self.assertEqual(types["majordomus://taxonomy/cat-a"], "application/json")
        self.assertEqual(types["majordomus://claim/C1"], "application/json")
        self.assertEqual(types["majordomus://scope/.ai/repo/scope.yaml"], "application/yaml")
        self.assertEqual(types["majordomus://context/ai.repo.rules"], "text/markdown")

    def get(self, uri):
        proc = support.run(["get", uri], cwd=self.repo)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return json.loads(proc.stdout.decode("utf-8"))

    def test_get_member(self):
        view = self.get("majordomus://taxonomy/cat-a")
        item = {"id": "cat-a", "title": "Category A", "summary": "the first"}
        self.assertEqual(view["metadata"], item)
        self.assertEqual(view["content"], json.dumps(item, indent=2))
        self.assertEqual(view["title"], "Category A")
        self.assertEqual(view["description"], "the first")
        self.assertEqual(view["media_type"], "application/json")
        self.assertEqual(list(view["provenance"].items()), [
            ("path", ".ai/repo/use-cases/taxonomy.yaml"), ("directory", ".ai/repo/use-cases"),
            ("source_class", "taxonomy"), ("member", "categories.0"),
            ("bytes", len(TAXONOMY.encode()))])
        last = self.get("majordomus://taxonomy/cat-d")
        self.assertEqual(last["provenance"]["member"], "categories.2")
        self.assertNotIn("description", last)
        claim = self.get("majordomus://claim/C1")
        self.assertEqual((claim["title"], claim["description"]),
                         ("the reader is exact", "proven by the oracle test"))
        self.assertNotIn("section", claim["provenance"])

    def test_get_text(self):
        view = self.get("majordomus://implementation/lib/a.sh")
        self.assertEqual(view["metadata"], {})
        self.assertEqual(view["content"], SCRIPT)
        self.assertEqual(view["media_type"], "text/plain")
        self.assertNotIn("title", view)
        proc = support.run(["get", "majordomus://test/test/cases/00_x.sh", "--format", "text"],
                           cwd=self.repo)
        self.assertEqual(proc.stdout, SCRIPT.encode())

    def test_declared_context_keeps_its_class(self):
        view = self.get("majordomus://context/ai.repo.rules")
        self.assertEqual(view["kind"], "context")
        self.assertEqual(view["provenance"]["source_class"], "readme")
        self.assertEqual(view["provenance"]["section"], "rules")
        self.assertEqual(view["title"], "The rules tree")

    def test_string_versioned_skill(self):
        view = self.get("majordomus://skill/demo-skill")
        self.assertEqual(view["metadata"]["schema"], "skill/v1")


BASE = {
    ".ai/repo/knowledge/sources.yaml": classes(("rule", "rule", ".ai/repo/rules/**/*.md"),
                                               ("note", "note", ".ai/repo/notes/*.md")),
    ".ai/repo/rules/r.v1.md": fm("id: demo.r", "version: 1"),
    ".ai/repo/notes/first.md": fm("id: first", "title: First"),
}
NOTE_KIND = ("schema: majordomus-kinds/v1\nkinds:\n  note:\n    format: markdown\n"
             "    front_matter: required\n    allow: %s\n    identity: [id]\n    title: title\n")


class RepositoryKindsErrorsTest(unittest.TestCase):
    """§4.4: every error in the repository's kinds file or allow-lists is exit 10."""

    def check(self, files, message, code=10):
        repo = support.make_repo(self, layer(BASE, files), skeleton=False)
        proc = support.run(["mcp", "--inspect"], cwd=repo)
        self.assertEqual(proc.returncode, code, proc.stdout + proc.stderr)
        self.assertEqual(proc.stdout, b"")
        self.assertEqual(proc.stderr.decode(), "majordomus: %s\n" % message)

    def test_redefined_kind(self):
        self.check({KINDS_FILE: "schema: majordomus-kinds/v1\nkinds:\n  rule:\n"
                                "    format: markdown\n"},
                   KINDS_FILE + ": kind 'rule' is declared by both schema/kinds.yaml and "
                   ".ai/repo/knowledge/kinds.yaml; a repository adds kinds, it does not "
                   "redefine them")

    def test_redefined_allow_list(self):
        self.check({KINDS_FILE: NOTE_KIND % "note", ALLOW_DIR + "/note.txt": "^id$\n",
                    ALLOW_DIR + "/rule.txt": "^id$\n"},
                   ALLOW_DIR + "/rule.txt: allow-list 'rule' is shipped; a repository adds "
                   "allow-lists, it does not redefine them")

    def test_missing_allow_list(self):
        self.check({KINDS_FILE: NOTE_KIND % "nope"},
                   KINDS_FILE + ": kind 'note' names allow-list 'nope', which is neither "
                   ".ai/repo/knowledge/allow/nope.txt nor a shipped list")

    def test_subset_error(self):
        self.check({KINDS_FILE: "schema: majordomus-kinds/v1\nkinds:\n\tnote:\n"},
                   KINDS_FILE + ": tab character on line 3")

    def test_unknown_field(self):
        self.check({KINDS_FILE: NOTE_KIND % "note" + "    colour: red\n",
                    ALLOW_DIR + "/note.txt": "^id$\n"},
                   KINDS_FILE + ": kind 'note': unknown field(s): colour")

    def test_bad_value(self):
        self.check({KINDS_FILE: NOTE_KIND.replace("markdown", "json") % "note"},
                   KINDS_FILE + ": kind 'note': format must be markdown, yaml or text")

    def test_declared_kind_of_the_wrong_shape(self):
        self.check({KINDS_FILE: "schema: majordomus-kinds/v1\ndeclared: [profile]\n"},
                   KINDS_FILE + ": declared kind 'profile' is not a markdown kind that "
                   "requires front matter")

    def test_bad_pattern(self):
        self.check({KINDS_FILE: NOTE_KIND % "note", ALLOW_DIR + "/note.txt": "^(id$\n"},
                   ALLOW_DIR + "/note.txt: pattern '^(id$': missing ), unterminated "
                   "subpattern at position 1")

    def test_not_utf8(self):
        self.check({KINDS_FILE: NOTE_KIND % "note", ALLOW_DIR + "/note.txt": b"^id\xff$\n"},
                   ALLOW_DIR + "/note.txt: 'utf-8' codec can't decode byte 0xff in position "
                   "3: invalid start byte")

    def test_a_shipped_list_serves_a_repository_kind(self):
        repo = support.make_repo(self, skeleton=False, files=layer(BASE, {
            KINDS_FILE: NOTE_KIND % "prompt",
            ".ai/repo/notes/second.md": fm("id: second", "title: x")}))
        proc, doc = inspect_json(repo)
        self.assertEqual(proc.returncode, 10)
        self.assertEqual(doc["repository"]["diagnostics"], [
            {"severity": "error", "code": "unknown_key", "path": ".ai/repo/notes/first.md",
             "message": "key(s) not in share/allow/prompt.txt: id, title"},
            {"severity": "error", "code": "unknown_key", "path": ".ai/repo/notes/second.md",
             "message": "key(s) not in share/allow/prompt.txt: id, title"}])

    def test_no_kinds_file_is_the_shipped_kinds(self):
        repo = support.make_repo(self, layer(BASE), skeleton=False)
        proc, doc = inspect_json(repo)
        self.assertEqual(proc.returncode, 10)
        self.assertIsNone(doc["repository"]["repository"]["kinds_file"])
        self.assertEqual(doc["repository"]["diagnostics"], [
            {"severity": "error", "code": "unknown_kind", "path": ".ai/repo/notes/first.md",
             "message": "class 'note' declares kind 'note', which this executable does not "
                        "read"}])

    def test_repository_kind_declared_and_prompt(self):
        """A repository kind may be declared (a file chooses it) and be a prompt kind."""
        repo = support.make_repo(self, skeleton=False, files=layer(BASE, {
            KINDS_FILE: "schema: majordomus-kinds/v1\ndeclared: [memo]\nkinds:\n"
                        "  memo:\n    format: markdown\n    front_matter: required\n"
                        "    identity: [id]\n    prompt: body\n",
            ".ai/repo/rules/README.md": fm("kind: memo", "id: m1")}))
        proc, doc = inspect_json(repo)
        uris = [r["uri"] for r in doc["resources"]]
        self.assertIn("majordomus://memo/m1", uris)


class ReadingVectorsTest(unittest.TestCase):
    """§5.1's new reading rules, one scratch layer each."""

    def layer(self, files):
        repo = support.make_repo(self, layer(files), skeleton=False)
        return inspect_json(repo)[1]

    def test_yaml_class_is_never_overridden(self):
        doc = self.layer({
            ".ai/repo/knowledge/sources.yaml": classes(("profile", "profile",
                                                        ".ai/repo/profiles/*.yaml")),
            ".ai/repo/profiles/p.yaml": "name: p\nkind: context\n"})
        self.assertEqual(doc["repository"]["diagnostics"][0]["code"], "unknown_key")

    def test_declared_context_must_carry_its_schema(self):
        doc = self.layer({
            ".ai/repo/knowledge/sources.yaml": classes(("doc", "document", "docs/*.md")),
            "docs/a.md": fm("kind: context", "id: a"),
            "docs/b.md": fm("kind: context", "id: b", "schema: context/v2")})
        self.assertEqual([(d["code"], d["message"]) for d in doc["repository"]["diagnostics"]], [
            ("missing_field", "no 'schema'"),
            ("unsupported_version",
             'schema "context/v2" is not among the supported ["context/v1"]')])

    def test_integer_versions(self):
        doc = self.layer({
            ".ai/repo/knowledge/sources.yaml": classes(("policy", "policy", ".ai/repo/p*.yaml")),
            ".ai/repo/p1.yaml": "version: 2\n", ".ai/repo/p2.yaml": "version: '1'\n"})
        self.assertEqual([(d["code"], d["message"]) for d in doc["repository"]["diagnostics"]], [
            ("unsupported_version", "version 2 is not among the supported [1]"),
            ("missing_field", "no integer 'version'")])

    def test_members_file_without_its_list(self):
        doc = self.layer({
            ".ai/repo/knowledge/sources.yaml": classes(("tax", "taxonomy", "t*.yaml")),
            "t1.yaml": "version: 1\n", "t2.yaml": "version: 1\ncategories: x\n",
            "t3.yaml": "version: 2\ncategories:\n  - id: a\n"})
        self.assertEqual([(d["path"], d["code"], d["message"])
                          for d in doc["repository"]["diagnostics"]], [
            ("t1.yaml", "missing_field", "no list 'categories' holding the members"),
            ("t2.yaml", "unknown_key", "key(s) not in share/allow/taxonomy.txt: categories"),
            ("t3.yaml", "unsupported_version", "version 2 is not among the supported [1]")])

    def test_members_share_the_identity_rules(self):
        doc = self.layer({
            ".ai/repo/knowledge/sources.yaml": classes(("tax", "taxonomy", "t*.yaml")),
            "t1.yaml": "version: 1\ncategories:\n  - id: a\n  - id: b c\n",
            "t2.yaml": "version: 1\ncategories:\n  - id: a\n  - id: z\n"})
        self.assertEqual([r["uri"] for r in doc["resources"]][len(support.QUERY_URIS):],
                         ["majordomus://taxonomy/z"])
        self.assertEqual([(d["code"], d["message"]) for d in doc["repository"]["diagnostics"]], [
            ("missing_field", "member categories.1: identity field 'id' carries '/', '@' or "
                              "whitespace: 'b c'"),
            ("duplicate_identity", "majordomus://taxonomy/a is claimed by t1.yaml and t2.yaml; "
                                   "every claimant is excluded"),
            ("duplicate_identity", "majordomus://taxonomy/a is claimed by t1.yaml and t2.yaml; "
                                   "every claimant is excluded")])

    def test_members_keys_checked_on_the_whole_file(self):
        doc = self.layer({
            ".ai/repo/knowledge/sources.yaml": classes(("tax", "taxonomy", "t.yaml")),
            "t.yaml": "version: 1\ncategories:\n  - id: a\n    colour: red\n"})
        self.assertEqual([(d["code"], d["message"]) for d in doc["repository"]["diagnostics"]], [
            ("unknown_key", "key(s) not in share/allow/taxonomy.txt: categories.0.colour")])


class ZipappPathsTest(unittest.TestCase):
    """§0, issue 7 item 7: the embedded data is found whatever path the interpreter got."""

    @classmethod
    def setUpClass(cls):
        cls.base = support.tempdir(support._ClassScope(cls))
        cls.tools = os.path.join(cls.base, "tools")
        os.makedirs(cls.tools)
        shutil.copy(support.PYZ, os.path.join(cls.tools, "majordomus.pyz"))
        os.symlink(os.path.join(cls.tools, "majordomus.pyz"), os.path.join(cls.base, "link.pyz"))
        src = os.path.join(cls.base, "src")
        os.makedirs(src)
        os.symlink(support.PY, os.path.join(src, "majordomus.py"))
        cls.repo = os.path.join(cls.base, "repo")
        support.copy_layer(cls.repo)
        support.git(cls.repo, "init", "-q", "-b", "main")
        support.commit_all(cls.repo)

    def inspect(self, program, cwd):
        proc = subprocess.run([support.PYTHON, program, "mcp", "--inspect", "--repo", self.repo],
                              cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=support.base_env(), timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(b"\nstate       ok\n", proc.stdout)

    def test_relative_path_with_dotdot(self):
        self.inspect("../tools/majordomus.pyz", self.repo)

    def test_relative_path(self):
        self.inspect("tools/majordomus.pyz", self.base)

    def test_dot_segments_inside(self):
        self.inspect("./tools/../tools/majordomus.pyz", self.base)

    def test_symlink_to_the_archive(self):
        self.inspect("../link.pyz", self.repo)

    def test_symlink_to_the_source(self):
        self.inspect(os.path.join(self.base, "src", "majordomus.py"), self.repo)


if __name__ == "__main__":
    unittest.main()
