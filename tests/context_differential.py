#!/usr/bin/env python3
"""The differential test of context resolution (SPEC §20.3): the rebuilt shell tool
(`$MAJORDOMUS_REFERENCE/oracle/context/bin/majordomus context …`, the judge) and this
program's CLI asked the same questions in the same scratch repositories.

Situations: every state case 69 (`oracle/context/test/cases/69_context_documents.sh`)
builds on `oracle/context/test/fixture-69/`; `fixtures/real-latest/` of the reference data
with empty stand-ins committed at the paths its `tracks` name; and a seeded generator of small
context trees. Each answer is one (situation, path[, --provider P][, --audience A]):

  - the oracle's `context resolve PATH --json` and ours `context resolve PATH --format json`:
    the exit code; on 0 the whole JSON (apart from our two `uri` keys: chain, reasons,
    exclusions in order, fingerprint); on 10 the problem lists (classes mapped, subjects
    and the §20.1 messages compared; the shell tool's id-subjects of duplicate-id and of a
    supersedes chain mapped to paths);
  - on 0, the text, byte for byte (§20.2): ours `context explain` against the oracle's
    `context explain`, and ours `context resolve` text against the oracle's. The shell tool
    takes about a third of a second of CPU a call (a second on real-latest), so to keep the
    default run near two minutes on two cores the texts are asked on a sample: explain on
    the first three questions of each case-69 and real-latest situation (which include
    every `explain` case 69 runs) and on the first of each generated tree, the resolve text
    on the first question of every situation. The JSON, which holds everything the texts
    print, is compared on every answer.

Usage: python3 tests/context_differential.py [--seed N] [--trees N] [--first N] [--paths N] [--keep]
Prints a line per disagreement, then
`context oracle: N answers (case 69 A, real-latest B, generated C trees x D paths): N agree, M disagree (T s)`;
exit 0 when nothing disagrees (and something was asked), 1 otherwise, 2 when bash or git is
missing. Without the reference data (support.REFERENCE) it asks nothing and prints
`context oracle: skipped (no reference data at PATH)`, exit 0.
"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import support  # noqa: E402
from support import reference, reference_missing  # noqa: E402
ORACLE_HOME = reference("oracle", "context")
ORACLE = os.path.join(ORACLE_HOME, "bin", "majordomus")
FIXTURE_69 = os.path.join(ORACLE_HOME, "test", "fixture-69")
REAL_LATEST = reference("fixtures", "real-latest")
PYZ = os.path.join(ROOT, "majordomus.pyz")

GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "Differential", "GIT_AUTHOR_EMAIL": "differential@example.invalid",
           "GIT_COMMITTER_NAME": "Differential",
           "GIT_COMMITTER_EMAIL": "differential@example.invalid",
           "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
# Our discovery reads the layer's sources file (§4.2): the fixture has none, so each
# scratch layer gets one that discovers the policy and every Markdown file under .ai/ (the
# shell tool walks every *.md under .ai/; with every file committed the two sets are equal).
SOURCES = support.sources_yaml(("policy", "policy", ":(glob).ai/repo/policy.yaml", True),
                              ("layer", "document", ":(glob).ai/**/*.md"))
A = ".ai/repo/areas"
# The texts are compared on the first TEXTS questions of each case-69 and real-latest
# situation (and the first of each generated tree): see the docstring.
TEXTS = 3

# The shell tool's problem classes, as ours name them (§20.1; the allow-list's unknown_key
# and the kind's unsupported_version of §5.1).
CLASSES = {"invalid-front-matter": "invalid_context", "unknown-provider": "unknown_provider",
           "broken-reference": "broken_reference", "cycle": "cycle",
           "illegal-override": "illegal_override", "duplicate-id": "duplicate_identity",
           "refused-path": "symlink", "unknown-key": "unknown_key",
           "unsupported-schema": "unsupported_version"}
# A front matter that cannot be read (never closes, does not parse) is the shell tool's
# invalid-front-matter and our reader's malformed_front_matter (§3.6).
READER_CLASS = "malformed_front_matter"
# Classes whose messages §20.1 says are the shell tool's.
SAME_MESSAGES = {"invalid_context", "unknown_provider", "broken_reference", "cycle",
                 "illegal_override"}
READER_MESSAGES = ("front matter never closes", "front matter does not parse")


# ---------------------------------------------------------------------------------------
# Situations: a repository state and the questions asked of it.
# ---------------------------------------------------------------------------------------

class Situation:
    """A scratch repository: a base tree (copied), files (text; None deletes), symbolic
    links, empty directories, untracked files; everything but those committed."""

    def __init__(self, group, name, base, files=None, links=None, dirs=(), untracked=None,
                 queries=(), describe=None):
        self.group, self.name, self.base = group, name, base
        self.files, self.links = dict(files or {}), dict(links or {})
        self.dirs, self.untracked = list(dirs), dict(untracked or {})
        self.queries = list(queries)     # (path, provider or None, audience or None)
        self.describe = describe         # the tree, printed with a disagreement
        self.repo = None

    def label(self):
        return "%s: %s" % (self.group, self.name)


def front(fields, body=None):
    """A Markdown file whose front matter holds `fields` ((key, value) pairs or raw lines)."""
    lines = [f if isinstance(f, str) else "%s: %s" % f for f in fields]
    return "---\n%s\n---\n%s" % ("\n".join(lines), body if body is not None else "\n# x\n")


def cdoc(id, scope="subtree", order=100, extra=(), set=None, drop=(), body=None):
    """A minimal valid context document (the fields case 69's cdoc writes), a value
    replaced in place (`set`), keys dropped, raw lines added at the end."""
    fields = [("schema", "context/v1"), ("id", id), ("kind", "context"),
              ("title", "Context %s" % id), ("description", "What %s describes." % id),
              ("status", "active"), ("scope", scope), ("providers", '["*"]'),
              ("composition", "extend"), ("order", str(order))]
    set = set or {}
    fields = [(k, set.get(k, v)) for k, v in fields if k not in drop]
    return front(fields + list(extra), body if body is not None else "\n# %s\n" % id)


def case69_situations():
    """Every state case 69 builds, in its order, with the questions it asks there (and a
    few more of the same kind)."""
    base = FIXTURE_69
    out = []

    def add(name, files, queries, **kw):
        out.append(Situation("case 69", name, base, files=files, queries=queries, **kw))

    q = lambda *paths, p=None, a=None: [(x, p, a) for x in paths]  # noqa: E731
    # discovery
    add("the seeded layer", {}, q(".ai/repo/rules/project", ".ai/repo/rules", ".ai", ".",
                                  ".ai/repo/policy.yaml", ".ai/README.md"),
        dirs=[".ai/repo/rules/project"])
    add("a Markdown file with no front matter",
        {".ai/repo/notes.md": "# notes\n\nno front matter here\n"},
        q(".ai/repo", ".ai/repo/notes.md"))
    add("a README.md the manifest names, without the contract", {A + "/README.md": "# stray\n"},
        q(A, "."))
    guide = {A + "/guide.md": cdoc("ai.repo.areas")}
    add("a document recognised by contract alone; the local half", guide,
        q(A, ".ai/local/notes", ".ai/repo"),
        untracked={".ai/local/notes/guide.md": cdoc("local.never", "subtree", 1)})
    # inheritance and scope
    tree = dict(guide)
    tree.update({A + "/alpha/guide.md": cdoc("ai.repo.areas.alpha"),
                 A + "/alpha/deep/guide.md": cdoc("ai.repo.areas.alpha.deep"),
                 A + "/beta/guide.md": cdoc("ai.repo.areas.beta"),
                 A + "/beta/here.md": cdoc("ai.repo.areas.beta.here", "directory"),
                 A + "/gamma/only.md": cdoc("ai.repo.areas.gamma", "explicit", 100,
                                            ["paths: [.ai/repo/areas/alpha/deep]"])})
    add("inheritance and scope", tree,
        q(A, A + "/alpha", A + "/alpha/deep", A + "/beta", A + "/beta/sub", A + "/gamma",
          A + "/alpha/guide.md", "."), dirs=[A + "/beta/sub"])
    tracked = dict(tree)
    tracked.update({"lib/thing.sh": "x\n",
                    A + "/beta/guide.md": cdoc("ai.repo.areas.beta",
                                               extra=["tracks: [lib/thing.sh]"])})
    add("tracks", tracked, q("lib/thing.sh", "lib", ".", A + "/beta"), dirs=[A + "/beta/sub"])
    # ordering
    ordered = dict(tracked)
    ordered.update({A + "/alpha/zz.md": cdoc("ai.repo.areas.alpha.zz", "subtree", 50),
                    A + "/alpha/aa.md": cdoc("ai.repo.areas.alpha.aa", "subtree", 100)})
    add("order within a depth", ordered, q(A + "/alpha", A + "/alpha/deep"))
    edited = dict(ordered)
    edited[A + "/alpha/aa.md"] = ordered[A + "/alpha/aa.md"] + "\nmore prose\n"
    add("order within a depth, a document's prose edited", edited, q(A + "/alpha"))
    # composition
    replace = dict(tracked)
    replace[A + "/alpha/deep/guide.md"] = cdoc(
        "ai.repo.areas.alpha.deep", set={"composition": "replace"},
        extra=["supersedes: [ai.repo.areas.alpha]"])
    add("replace", replace, q(A + "/alpha/deep", A + "/alpha", A + "/alpha/deep/guide.md") +
        q(A + "/alpha/deep", p="agents"), dirs=[A + "/beta/sub"])

    def deep_supersedes(value):
        files = dict(replace)
        files[A + "/alpha/deep/guide.md"] = cdoc(
            "ai.repo.areas.alpha.deep", set={"composition": "replace"},
            extra=["supersedes: %s" % value])
        return files

    add("replace names a final document", deep_supersedes("[ai.layer]"),
        q(A + "/alpha/deep", "../"))
    add("replace names a document outside its ancestor chain",
        deep_supersedes("[ai.repo.areas.beta]"), q(A + "/alpha/deep"))
    # providers and audience
    claude = dict(replace)
    claude[A + "/beta/claude.md"] = cdoc("ai.repo.areas.beta.claude", "subtree", 200,
                                         ["audience: [agent]"],
                                         set={"providers": "[claude-code]"})
    add("providers and audience", claude,
        q(A + "/beta") + q(A + "/beta", p="claude-code") + q(A + "/beta", p="agents") +
        q(A + "/beta", a="human") + q(A + "/beta", a="agent") +
        q(A + "/beta", p="claude-code", a="human") + q(A + "/beta", p="nonesuch") +
        q(A + "/beta", a="robot") + q("lib/thing.sh", p="gemini"), dirs=[A + "/beta/sub"])
    unknown = dict(replace)
    unknown[A + "/beta/claude.md"] = cdoc("ai.repo.areas.beta.claude", "subtree", 200,
                                          ["audience: [agent]"], set={"providers": "[nonesuch]"})
    add("a document names a provider the policy does not project", unknown, q(A + "/beta"))
    deprecated = dict(replace)
    deprecated[A + "/beta/here.md"] = cdoc("ai.repo.areas.beta.here", "directory",
                                           set={"status": "deprecated"})
    add("deprecated", deprecated, q(A + "/beta") + q(A + "/beta", p="agents"),
        dirs=[A + "/beta/sub"])
    # refusals, each by name: beta/guide.md (or gamma, deep) changed one way
    beta = A + "/beta/guide.md"
    good = replace[beta]

    def bad(name, path, text, links=None, also=None):
        files = dict(replace)
        files.update(also or {})
        if path:
            files[path] = text
        add("refused: " + name, files, q(A + "/beta"), links=links)

    bad("an id that is not lower-case", beta, good.replace("id: ai.repo.areas.beta\n",
                                                           "id: Not-Lower\n"))
    bad("no title", beta, "".join(line for line in good.splitlines(True)
                                  if not line.startswith("title:")))
    bad("an unknown scope", beta, good.replace("scope: subtree", "scope: everywhere"))
    bad("an unknown composition", beta, good.replace("composition: extend",
                                                     "composition: merge"))
    bad("an order that is not an integer", beta, good.replace("order: 100", "order: first"))
    bad("paths on a subtree document", beta, good.replace("order: 100",
                                                          "order: 1\npaths: [.ai]"))
    bad("an unknown key", beta, good.replace("order: 100", "order: 1\nflavour: mint"))
    bad("schema context/v2", beta, good.replace("schema: context/v1", "schema: context/v2"))
    bad("front matter that never closes", beta, good.replace("---\n\n#", "\n#", 1))
    bad("front matter that does not parse", beta, re.sub(r"(?m)^title: .*$",
                                                         " title: odd indentation", good))
    bad("tracks that match nothing", beta, good.replace("tracks: [lib/thing.sh]",
                                                        "tracks: [nowhere/at/all]"))
    gamma = A + "/gamma/only.md"
    bad("explicit paths naming a missing directory", gamma,
        replace[gamma].replace("paths: [.ai/repo/areas/alpha/deep]",
                               "paths: [.ai/repo/areas/missing]"))
    bad("explicit paths outside the tree", gamma,
        replace[gamma].replace("paths: [.ai/repo/areas/alpha/deep]", "paths: [lib]"))
    bad("two files, one id", A + "/beta/twin.md", good)
    bad("supersedes an id no document declares", None, None,
        also=deep_supersedes("[ai.repo.areas.nothing]"))
    bad("supersedes itself", None, None, also=deep_supersedes("[ai.repo.areas.alpha.deep]"))
    deep = A + "/alpha/deep"
    bad("two documents superseding each other", None, None, also={
        deep + "/x.md": cdoc("ai.repo.areas.alpha.deep.x", set={"composition": "replace"},
                             extra=["supersedes: [ai.repo.areas.alpha.deep.y]"]),
        deep + "/y.md": cdoc("ai.repo.areas.alpha.deep.y", set={"composition": "replace"},
                             extra=["supersedes: [ai.repo.areas.alpha.deep.x]"])})
    bad("a symbolic link inside the tree", None, None,
        links={A + "/link.md": "../../../README.md"})
    # paths that leave the repository, missing paths; the machine-readable answer
    add("refused and missing paths", replace,
        q("../", "/etc", "no/such/dir", "", "./.ai//repo/", ".ai/repo/", "lib/../.ai",
          "@ROOT@/.ai/repo/areas", "@ROOT@") + q(A + "/alpha/deep", p="agents") +
        q(A + "/alpha/deep", a="agent"), dirs=[A + "/beta/sub"])
    return out


def real_latest_situation():
    """The reference data's fixtures/real-latest/, with an empty file committed at every path its
    context documents' `tracks` name."""
    stand_ins = {}
    for dirpath, _, names in os.walk(os.path.join(REAL_LATEST, ".ai")):
        for name in names:
            if name.endswith(".md"):
                with open(os.path.join(dirpath, name), encoding="utf-8") as handle:
                    for spec in front_list(handle.read(), "tracks"):
                        stand_ins[spec] = ""
    queries = [(p, None, None) for p in (
        ".ai/repo/rules/project/clean-room.v1.md", "lib", ".", ".ai",
        ".ai/repo/rules/vendor/majordomus/rules", ".ai/repo/workflows/continuity.md",
        ".ai/repo/skills/implement/examples", ".ai/repo/knowledge/curated/start-here.md",
        "lib/rules.sh", "share", "share/standard/majordomus", "AGENTS.md", ".ai/repo/nothing",
        "../outside")]
    queries += [(".ai/repo/rules/project", "bb", None), ("lib", "claude-code", "agent"),
                (".ai/repo/prompts", None, "human"), ("lib", "gemini", None)]
    return Situation("real-latest", "real-latest with stand-ins", REAL_LATEST,
                     files=stand_ins, queries=queries)


def front_list(text, key):
    """The items of `key: [a, b]` (or a block list) in a file's front matter (enough for
    the real layer's tracks lines)."""
    lines = text.split("\n")
    if not lines or lines[0] != "---":
        return []
    items, block = [], False
    for line in lines[1:]:
        if line == "---":
            break
        if block and line.startswith("  - "):
            items.append(line[4:].strip())
            continue
        block = False
        if line.startswith(key + ":"):
            value = line[len(key) + 1:].strip()
            if value.startswith("[") and value.endswith("]"):
                items += [v.strip() for v in value[1:-1].split(",") if v.strip()]
            elif not value:
                block = True
    return items


# ---------------------------------------------------------------------------------------
# The generator: small seeded context trees on the fixture-69 layer.
# ---------------------------------------------------------------------------------------

DIR_NAMES = ["a", "b", "c", "deep", "x-y", "docs", "z9", "caf\u00e9"]
PROVIDERS = ["agents", "claude-code", "gemini"]
OUTSIDE_FILES = ["lib/a.sh", "lib/b.sh", "lib/sub/c.sh", "src/m/one.py", "src/m/two.py",
                 "src/n/three.py", "README.md", "tools/t.txt"]
TRACK_SPECS = ["lib/a.sh", "lib/b.sh", "lib", "lib/sub", "src/m", "src/m/one.py", "README.md",
               "lib/*.sh", "src/*/two.py", "src/?/three.py", "tools/", "./lib/a.sh"]
# One thing wrong, in a tree of its own; those case 69 does not build come first, so that
# the default run's trees (two in five carry one, in this order) reach them all.
MUTATIONS = ["bad status", "bad audience", "drop providers", "other kind",
             "explicit without paths", "replace without supersedes", "supersedes not replace",
             "paths not relative", "readme of another kind", "never closes, no contract",
             "symlink", "drop field", "supersedes final", "supersedes non-ancestor",
             "supersedes unknown", "supersedes itself", "cycle of two", "duplicate id",
             "bad id", "bad scope", "bad composition", "bad order", "paths not explicit",
             "unknown provider", "unknown key", "schema v2", "never closes", "does not parse",
             "tracks nothing", "paths missing", "paths outside", "bare readme"]


def generated_situation(seed, number, paths):
    """Tree `number` of seed `seed`: nested directories under .ai/, context documents of
    every scope, composition, order, provider and audience; two trees in five with one
    thing wrong (MUTATIONS, in turn); and `paths` questions."""
    rng = random.Random("%d:%d" % (seed, number))
    dirs = [".ai"]
    for _ in range(rng.randint(2, 7)):
        parent = rng.choice(dirs)
        if parent.count("/") >= 4:
            continue
        child = parent + "/" + rng.choice(DIR_NAMES)
        if child not in dirs:
            dirs.append(child)
    files = {f: "x\n" for f in rng.sample(OUTSIDE_FILES, rng.randint(3, len(OUTSIDE_FILES)))}
    docs = []                  # [path, id, fields, dir]
    keep_seeded = rng.random() < 0.5
    delete = {} if keep_seeded else {".ai/README.md": None, ".ai/repo/README.md": None,
                                     ".ai/repo/rules/README.md": None}
    if keep_seeded:
        dirs += [d for d in (".ai/repo", ".ai/repo/rules") if d not in dirs]
        docs += [[".ai/README.md", "ai.layer", None, ".ai"],
                 [".ai/repo/README.md", "ai.repo", None, ".ai/repo"],
                 [".ai/repo/rules/README.md", "ai.repo.rules", None, ".ai/repo/rules"]]
    used = set(d[0] for d in docs)
    for k in range(rng.randint(2, 7)):
        folder = rng.choice(dirs)
        name = rng.choice(["README.md", "guide.md", "a.md", "zz.md", "notes-%d.md" % k])
        path = folder + "/" + name
        if path in used:
            continue
        used.add(path)
        ident = "g%d.d%d" % (number, k)
        scope = rng.choice(["subtree", "subtree", "directory", "explicit"])
        fields = [("schema", "context/v1"), ("id", ident), ("kind", "context"),
                  ("title", rng.choice(["Context %s" % ident, "\"Quoted: %s\"" % ident,
                                        "\u00dcber %s" % ident])),
                  ("description", "What %s says." % ident),
                  ("status", "deprecated" if rng.random() < 0.15 else "active"),
                  ("scope", scope),
                  ("providers", rng.choice(['["*"]', '["*"]', "[agents]", "[claude-code, gemini]",
                                            "[gemini]", "\n  - agents\n  - \"*\""])),
                  ("composition", rng.choice(["extend", "extend", "final"])),
                  ("order", str(rng.choice([-5, 0, 10, 50, 100, 100, 200])))]
        roll = rng.random()
        if roll < 0.5:
            fields.append(("audience", rng.choice(["[human]", "[agent]", "[human, agent]",
                                                   "[agent, human]", "\n  - agent"])))
        if scope == "explicit":
            targets = rng.sample(dirs, min(len(dirs), rng.randint(1, 2)))
            shown = [rng.choice([t, t + "/", "./" + t]) if rng.random() < 0.3 else t
                     for t in targets]
            fields.append(("paths", "[%s]" % ", ".join(shown)))
        if rng.random() < 0.35:
            specs = rng.sample(TRACK_SPECS, rng.randint(1, 2))
            fields.append(("tracks", "[%s]" % ", ".join(specs)))
        docs.append([path, ident, fields, folder])
    # replace: a document supersedes one or two that apply above it (or beside it)
    for doc in docs:
        if doc[2] is None or rng.random() > 0.3:
            continue
        above = [o for o in docs if o is not doc and (doc[3] == o[3] or
                                                      doc[3].startswith(o[3] + "/"))
                 and not is_final(o) and not (o[2] and ("composition", "replace") in o[2])]
        if above:
            names = [o[1] for o in rng.sample(above, min(len(above), rng.randint(1, 2)))]
            set_field(doc[2], "composition", "replace")
            doc[2].append(("supersedes", "[%s]" % ", ".join(names)))
    for doc in docs:           # every tracks spec must match a committed file
        for key, value in doc[2] or ():
            if key == "tracks":
                for spec in value.strip("[]").split(", "):
                    covers = spec_matcher(spec)
                    if not any(covers(f) for f in files):
                        files[next(f for f in OUTSIDE_FILES if covers(f))] = "x\n"
    links, untracked = {"escape": ".."}, {}
    if rng.random() < 0.3:
        files[rng.choice(dirs) + "/plain.md"] = "# plain\n\nno front matter\n"
    if rng.random() < 0.2:
        files[rng.choice(dirs) + "/other.md"] = front([("title", "Another kind"),
                                                       ("kind", "note")])
    if rng.random() < 0.2:
        untracked[".ai/local/scratch/README.md"] = "# local\n"
    mutation = None
    if number % 5 in (1, 3):
        mutation = MUTATIONS[(number // 5 * 2 + (number % 5 == 3)) % len(MUTATIONS)]
    generated = [d for d in docs if d[2] is not None]
    if mutation and generated:
        mutate(rng, mutation, generated, docs, dirs, files, links)
    for path, _, fields, _ in docs:
        if fields is not None and path not in files:
            files[path] = front(fields, "\n# %s\n\nBody of %s.\n" % (path, path))
    for path in [p for p in delete if p not in files]:
        files[path] = None
    situation = Situation("generated", "seed %d tree %d%s" % (
        seed, number, " (%s)" % mutation if mutation else ""), FIXTURE_69, files=files,
        links=links, dirs=dirs, untracked=untracked)
    situation.queries = generated_queries(rng, paths, dirs, docs, files)
    situation.describe = describe_tree(situation)
    return situation


def spec_matcher(spec):
    """Does a file match one of TRACK_SPECS (as git ls-files would list it)?"""
    plain = spec[2:] if spec.startswith("./") else spec
    if "*" in plain or "?" in plain:
        pattern = re.compile(re.escape(plain).replace(r"\*", ".*").replace(r"\?", "."))
        return lambda f: pattern.fullmatch(f) is not None
    folder = plain.rstrip("/") + "/"
    return lambda f: f == plain or f.startswith(folder)


def is_final(doc):
    return doc[2] is None and doc[1] == "ai.layer" or bool(
        doc[2] and ("composition", "final") in doc[2])


def set_field(fields, key, value):
    for i, (k, _) in enumerate(fields):
        if k == key:
            fields[i] = (key, value)
            return
    fields.append((key, value))


def drop_field(fields, key):
    fields[:] = [(k, v) for k, v in fields if k != key]


# The mutations that set one field to one wrong value: (the field, the value).
ONE_FIELD = {"other kind": ("kind", "note"), "bad status": ("status", "draft"),
             "bad scope": ("scope", "global"), "bad composition": ("composition", "merge"),
             "bad audience": ("audience", "[human, robot]"),
             "unknown provider": ("providers", "[agents, nonesuch]"),
             "schema v2": ("schema", "context/v2")}


def mutate(rng, mutation, generated, docs, dirs, files, links):
    """One thing wrong in the tree, of the kind named."""
    doc = rng.choice(generated)
    path, ident, fields, folder = doc
    if mutation == "bad id":
        set_field(fields, "id", rng.choice(["Bad.Id", "9x", "a..b", "a.", "a_b", "x.Y"]))
    elif mutation == "drop field":
        drop_field(fields, rng.choice(["schema", "id", "kind", "title", "description", "status",
                                       "scope", "composition", "order"]))
    elif mutation == "drop providers":
        drop_field(fields, "providers")
    elif mutation in ONE_FIELD:
        set_field(fields, *ONE_FIELD[mutation])
    elif mutation == "bad order":
        set_field(fields, "order", rng.choice(["first", "1.5", "ten", "1e3"]))
    elif mutation == "explicit without paths":
        set_field(fields, "scope", "explicit")
        drop_field(fields, "paths")
    elif mutation == "paths not explicit":
        set_field(fields, "scope", "subtree")
        set_field(fields, "paths", "[%s]" % rng.choice(dirs))
    elif mutation == "replace without supersedes":
        set_field(fields, "composition", "replace")
        drop_field(fields, "supersedes")
    elif mutation == "supersedes not replace":
        set_field(fields, "composition", "extend")
        set_field(fields, "supersedes", "[ai.layer]")
    elif mutation == "unknown key":
        fields.append(("flavour", "mint"))
    elif mutation == "never closes":
        files[path] = front(fields).replace("\n---\n", "\n", 1)   # no closing fence
    elif mutation == "does not parse":
        set_field(fields, "title", "x")
        fields[:] = [" title: odd indentation" if f == ("title", "x") else f for f in fields]
    elif mutation == "tracks nothing":
        set_field(fields, "tracks", "[nowhere/at/all]")
    elif mutation.startswith("paths "):
        set_field(fields, "scope", "explicit")
        set_field(fields, "paths", {"paths missing": "[.ai/missing/dir]",
                                    "paths outside": "[lib]",
                                    "paths not relative": rng.choice(["[../x]", "[/abs]",
                                                                      "[.ai/a/../b]"])}[mutation])
    elif mutation == "supersedes unknown":
        set_field(fields, "composition", "replace")
        set_field(fields, "supersedes", "[no.such.id]")
    elif mutation == "supersedes itself":
        set_field(fields, "composition", "replace")
        set_field(fields, "supersedes", "[%s]" % ident)
    elif mutation in ("supersedes non-ancestor", "supersedes final"):
        others = [o for o in docs if o is not doc and (
            mutation == "supersedes final" and is_final(o) or
            mutation == "supersedes non-ancestor" and not (folder == o[3] or
                                                           folder.startswith(o[3] + "/")))]
        if not others:
            other = None
            if mutation == "supersedes final":
                other = [".ai/final-top.md", "g.final.top", None, ".ai"]
                files[other[0]] = cdoc("g.final.top", set={"composition": "final"})
            else:
                files[".ai/zz-side/other.md"] = cdoc("g.side.other")
                dirs.append(".ai/zz-side")
                other = [".ai/zz-side/other.md", "g.side.other", None, ".ai/zz-side"]
            others = [other]
        set_field(fields, "composition", "replace")
        set_field(fields, "supersedes", "[%s]" % rng.choice(others)[1])
    elif mutation == "cycle of two":
        for name, peer in (("p", "q"), ("q", "p")):
            files[folder + "/cyc-%s.md" % name] = cdoc(
                "%s.cyc-%s" % (ident, name), set={"composition": "replace"},
                extra=["supersedes: [%s.cyc-%s]" % (ident, peer)])
    elif mutation == "duplicate id":
        leaf = [o for o in generated if not any(k in ("supersedes", "paths", "tracks")
                                                for k, _ in o[2])] or generated
        twin = rng.choice(leaf)
        files[twin[3] + "/twin.md"] = front(twin[2])
    elif mutation == "symlink":
        links[rng.choice(dirs) + "/link.md"] = rng.choice(["../README.md", "guide.md",
                                                           "/etc/hostname"])
    elif mutation == "bare readme":
        target = rng.choice(dirs) + "/README.md"
        docs[:] = [d for d in docs if d[0] != target]
        files[target] = "# a README without front matter\n"
    elif mutation == "readme of another kind":
        target = rng.choice(dirs) + "/README.md"
        docs[:] = [d for d in docs if d[0] != target]
        files[target] = front([("title", "A README"), ("kind", "note")])
    elif mutation == "never closes, no contract":
        files[rng.choice(dirs) + "/open.md"] = "---\ntitle: open\n\n# never closed\n"


def generated_queries(rng, count, dirs, docs, files):
    """`count` questions: a directory of the tree, a document (a file: its directory), a
    path outside (tracked, a directory, the root), and the rest drawn from everything,
    refused and missing paths included; some with --provider or --audience."""
    inside = dirs + [d[0] for d in docs]
    outside = [f for f, v in files.items() if v is not None and not f.startswith(".ai/")]
    outside += sorted(set(f.rpartition("/")[0] for f in outside if "/" in f)) + ["."]
    odd = ["/etc", "../x", "lib/../..", "..", "escape", "escape/x", ".ai/nope", "src/none.py",
           "./.ai//", "@ROOT@/.ai", "@ROOT@/lib", ".ai/local/scratch", ".ai/repo/policy.yaml"]
    pools = [dirs, inside, outside, inside + outside + odd, inside + outside + odd]
    out = []
    for k in range(count):
        path = rng.choice(pools[k % len(pools)])
        if k % len(pools) in (0, 1) and rng.random() < 0.2:
            path = rng.choice(["./" + path, path + "/", path.replace("/", "//", 1)])
        provider = audience = None
        if rng.random() < 0.3:
            provider = rng.choice(PROVIDERS + ["nonesuch"] if rng.random() < 0.1 else PROVIDERS)
        if rng.random() < 0.25:
            audience = rng.choice(["human", "agent", "robot"] if rng.random() < 0.1
                                  else ["human", "agent"])
        out.append((path, provider, audience))
    return out


def describe_tree(situation):
    """The generated tree, compactly: each file under .ai/ that is not the fixture's, with
    its front matter on one line."""
    lines = []
    for path in sorted(situation.files):
        text = situation.files[path]
        if text is None:
            lines.append("    %s: (deleted)" % path)
        elif path.startswith(".ai/"):
            lines.append("    %s: %s" % (path, text.split("\n---\n")[0][4:].replace("\n", " | ")))
    for path, target in sorted(situation.links.items()):
        lines.append("    %s -> %s" % (path, target))
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Running both programs.
# ---------------------------------------------------------------------------------------

def environment():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MJ_", "MAJORDOMUS_", "GIT_"))}
    env.update(GIT_ENV)
    return env


ENV = environment()


def git(repo, *args):
    proc = subprocess.run(["git", "-c", "maintenance.auto=false", "-c", "gc.auto=0", "-C", repo]
                          + list(args), env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise RuntimeError("git %s: %s" % (" ".join(args), proc.stderr.decode("utf-8", "replace")))


def write(repo, rel, text):
    path = os.path.join(repo, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.remove(path)
    with open(path, "wb") as handle:
        handle.write(text.encode("utf-8"))


def materialise(situation, scratch, number):
    """The situation's repository, committed (untracked files written after)."""
    repo = os.path.join(scratch, "s%03d" % number, "repo")
    support.copy_tree(situation.base, repo)
    if not os.path.exists(os.path.join(repo, ".ai", "repo", "knowledge", "sources.yaml")):
        write(repo, ".ai/repo/knowledge/sources.yaml", SOURCES)
    for rel, text in situation.files.items():
        if text is None:
            if os.path.lexists(os.path.join(repo, rel)):
                os.remove(os.path.join(repo, rel))
        else:
            write(repo, rel, text)
    for rel, target in situation.links.items():
        os.makedirs(os.path.dirname(os.path.join(repo, rel)) or repo, exist_ok=True)
        os.symlink(target, os.path.join(repo, rel))
    for rel in situation.dirs:
        os.makedirs(os.path.join(repo, rel), exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "situation")
    for rel, text in situation.untracked.items():
        write(repo, rel, text)
    situation.repo = os.path.realpath(repo)
    return situation


def run(argv, cwd):
    try:
        proc = subprocess.run(argv, cwd=cwd, env=ENV, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    except subprocess.TimeoutExpired:
        return -1, "", "timed out after 120 s"
    return (proc.returncode, proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"))


def options(provider, audience):
    out = []
    if provider is not None:
        out += ["--provider", provider]
    if audience is not None:
        out += ["--audience", audience]
    return out


def oracle(repo, sub, path, provider, audience, json_form):
    return run(["bash", ORACLE, "context", sub, path] + options(provider, audience)
               + (["--json"] if json_form else []), repo)


def ours(repo, sub, path, provider, audience, json_form):
    return run([sys.executable, PYZ, "context", sub, path] + options(provider, audience)
               + (["--format", "json"] if json_form else []), repo)


def without_uri(value):
    for entry in value.get("documents", []) + value.get("excluded", []):
        entry.pop("uri", None)
    return value


def oracle_problems(stdout):
    """The shell tool's --json findings: [(class, subject, message)]."""
    found = []
    for line in stdout.splitlines():
        try:
            finding = json.loads(line)
        except ValueError:
            continue
        if isinstance(finding, dict) and finding.get("level") == "FAIL":
            cls, _, message = finding["message"].partition(": ")
            found.append((cls, finding["subject"], message))
    return found


OUR_PROBLEM = re.compile(r"FAIL (\S+) +(.*?) \u2014 (.*)\Z")


def our_problems(stderr):
    found = []
    for line in stderr.splitlines():
        match = OUR_PROBLEM.match(line)
        if match:
            found.append(match.groups())
    return found


def normal_oracle(problems, ids):
    """The shell tool's problems as ours are written: our class, a path for subject, the
    message where §20.1 fixes it."""
    out = []
    for cls, subject, message in problems:
        ours_cls = CLASSES.get(cls, cls)
        if cls == "invalid-front-matter" and message.startswith(READER_MESSAGES):
            ours_cls = READER_CLASS
        if cls == "unsupported-schema" and message.startswith("schema 'absent' "):
            ours_cls = "missing_field"     # §5.1: no version field at all
        if cls == "duplicate-id":
            for path in message.split(": ", 1)[1].split(" "):
                out.append((ours_cls, path, None))
            continue
        if cls == "cycle" and message == "supersedes chain returns to itself":
            subject = ids.get(subject, subject)
        out.append((ours_cls, subject, message if ours_cls in SAME_MESSAGES else None))
    return sorted(out, key=repr)


def normal_ours(problems):
    return sorted(((cls, path, message if cls in SAME_MESSAGES else None)
                   for cls, path, message in problems), key=repr)


def ask(situation, query, text, resolve_text):
    """One answer: (agree, description lines). `text`: compare the explain texts too;
    `resolve_text`: and the resolve texts."""
    path, provider, audience = query
    path = path.replace("@ROOT@", situation.repo)
    repo = situation.repo
    o_code, o_out, o_err = oracle(repo, "resolve", path, provider, audience, True)
    m_code, m_out, m_err = ours(repo, "resolve", path, provider, audience, True)
    wrong = []
    if o_code != m_code:
        wrong.append("exit %d (oracle) vs %d (ours)" % (o_code, m_code))
    elif o_code == 0:
        try:
            theirs, mine = json.loads(o_out), without_uri(json.loads(m_out))
        except ValueError as exc:
            theirs = mine = None
            wrong.append("unreadable JSON: %s" % exc)
        if theirs is not None and json.dumps(theirs) != json.dumps(mine):
            wrong.append("JSON differs:\n      oracle %s\n      ours   %s" % (
                json.dumps(theirs, ensure_ascii=False), json.dumps(mine, ensure_ascii=False)))
        if text:
            wrong += compare_texts(repo, path, provider, audience, resolve_text)
    elif o_code == 10:
        ids = tree_ids(repo)
        theirs, mine = normal_oracle(oracle_problems(o_out), ids), normal_ours(our_problems(m_err))
        if theirs != mine:
            wrong.append("problems differ:\n      oracle %s\n      ours   %s" % (theirs, mine))
        if not theirs:
            wrong.append("refused with no problem listed: %s / %s" % (o_err.strip(), m_err.strip()))
    if not wrong:
        return True, [], o_code
    what = "%s | path %r%s%s" % (situation.label(), path,
                                 " --provider %s" % provider if provider else "",
                                 " --audience %s" % audience if audience else "")
    lines = ["DISAGREE %s" % what] + ["    " + w for w in wrong]
    lines.append("    oracle: exit %d %s %s" % (o_code, summary(o_out), o_err.strip()[:300]))
    lines.append("    ours:   exit %d %s %s" % (m_code, summary(m_out), m_err.strip()[:300]))
    if situation.describe:
        lines.append("    the tree:\n" + situation.describe)
    return False, lines, o_code


def compare_texts(repo, path, provider, audience, resolve_text):
    """The explain texts byte for byte; with `resolve_text`, the resolve texts too."""
    wrong = []
    o_explain = oracle(repo, "explain", path, provider, audience, False)
    m_explain = ours(repo, "explain", path, provider, audience, False)
    if o_explain[0] != 0 or m_explain[0] != 0:
        wrong.append("explain exit %d (oracle) vs %d (ours)" % (o_explain[0], m_explain[0]))
    elif o_explain[1] != m_explain[1]:
        wrong.append("explain text differs:\n%s\n    vs ours\n%s" % (
            indent(o_explain[1]), indent(m_explain[1])))
    if resolve_text:
        o_text = oracle(repo, "resolve", path, provider, audience, False)
        m_text = ours(repo, "resolve", path, provider, audience, False)
        if m_text[0] != 0 or m_text[1] != o_text[1]:
            wrong.append("resolve text differs (exit %d):\n%s\n    vs ours\n%s" % (
                m_text[0], indent(o_text[1]), indent(m_text[1])))
    return wrong


def tree_ids(repo):
    """id -> the path of the first file (C order) under .ai/ declaring it (how the shell
    tool names a document by id in a `cycle` finding)."""
    ids = {}
    found = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(repo, ".ai")):
        for name in filenames:
            full = os.path.join(dirpath, name)
            if name.endswith(".md") and not os.path.islink(full):
                found.append(os.path.relpath(full, repo))
    for rel in sorted(found, key=lambda p: p.encode("utf-8")):
        with open(os.path.join(repo, rel), encoding="utf-8", errors="replace") as handle:
            for line in handle.read().split("\n---\n")[0].split("\n"):
                if line.startswith("id: "):
                    ids.setdefault(line[4:].strip(), rel)
                    break
    return ids


def summary(stdout):
    try:
        value = json.loads(stdout)
    except ValueError:
        return ""
    if isinstance(value, dict) and "documents" in value:
        return "chain [%s] excluded [%s]" % (
            " ".join(d["id"] for d in value["documents"]),
            "; ".join("%s: %s" % (e["id"], e["reason"]) for e in value["excluded"]))
    return ""


def indent(text):
    return "\n".join("      | " + line for line in text.split("\n"))


# ---------------------------------------------------------------------------------------

def arguments(argv):
    values = {"--seed": 20260728, "--trees": 60, "--paths": 5, "--first": 0}
    keep = False
    rest = list(argv)
    while rest:
        word = rest.pop(0)
        if word == "--keep":
            keep = True
        elif word in values and rest and rest[0].lstrip("-").isdigit():
            values[word] = int(rest.pop(0))
        else:
            sys.stderr.write("usage: context_differential.py [--seed N] [--trees N] "
                             "[--first N] [--paths N] [--keep]\n")
            sys.exit(2)
    return values["--seed"], (values["--first"], values["--trees"]), values["--paths"], keep


def ensure_pyz():
    """The zipapp under test, built when it is missing or older than the module."""
    source = os.path.join(ROOT, "majordomus.py")
    if os.path.isfile(PYZ) and os.path.getmtime(PYZ) >= os.path.getmtime(source):
        return True
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "build_zipapp.py")], cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return proc.returncode == 0


def unready(label):
    """The exit code of a differential that cannot run here (bash or git missing, 2; the
    reference data absent, 0: skipped by name, §28; the archive not built, 2), its line
    printed under `label`; None when it can run."""
    for tool in ("bash", "git"):
        if shutil.which(tool) is None:
            print("%s: cannot run: %s is not on PATH" % (label, tool))
            return 2
    missing = (reference_missing("oracle", "context", "bin", "majordomus")
               or reference_missing("oracle", "context", "test", "fixture-69"))
    if missing:
        print("%s: skipped (%s)" % (label, missing))
        return 0
    if not ensure_pyz():
        print("%s: cannot run: majordomus.pyz does not build" % label)
        return 2
    return None


def main(argv):
    seed, trees, paths, keep = arguments(argv)
    code = unready("context oracle")
    if code is not None:
        return code
    started = time.time()
    situations = case69_situations()
    if os.path.isdir(REAL_LATEST):
        situations.append(real_latest_situation())
    first, trees = trees       # a disagreement's tree is made again alone with --first N
    situations += [generated_situation(seed, n, paths) for n in range(first, first + trees)]
    scratch = tempfile.mkdtemp(prefix="mj-ctx-diff-")
    workers = os.cpu_count() or 2
    results, counts = [], {"case 69": 0, "real-latest": 0, "generated": 0}
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            built = list(pool.map(lambda pair: materialise(pair[1], scratch, pair[0]),
                                  enumerate(situations)))
            jobs = []
            for situation in built:
                for k, query in enumerate(situation.queries):
                    text = k < (1 if situation.group == "generated" else TEXTS)
                    jobs.append(pool.submit(ask, situation, query, text, k == 0))
                    counts[situation.group] += 1
            results = [job.result() for job in jobs]
    finally:
        if keep:
            print("context oracle: the scratch repositories are kept under %s" % scratch)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    agree = sum(1 for ok, _, _ in results if ok)
    for ok, lines, _ in results:
        if not ok:
            print("\n".join(lines))
    total = len(results)
    codes = {}
    for _, _, code in results:
        codes[code] = codes.get(code, 0) + 1
    print("context oracle: the judge's exit codes: %s" % ", ".join(
        "%d x%d" % (code, codes[code]) for code in sorted(codes)))
    print("context oracle: %d answers (case 69 %d, real-latest %d, generated %d trees x %d "
          "paths): %d agree, %d disagree (%.1f s)" % (
              total, counts["case 69"], counts["real-latest"], trees, paths, agree,
              total - agree, time.time() - started))
    return 0 if total and agree == total else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
