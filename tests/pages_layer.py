"""A small AI layer written for the page tests (SPEC §22, issue 28): its own manifest,
sources, policy, profile, prompt, issues, rules that name each other, context documents in a
chain (one deprecated), a workflow document under .ai/ (its capability id holds two dots
in a row) and one tracked file outside .ai/ that a context document tracks. Nothing here is
read from ../shared: a plain clone runs the tests that use it.

    files = pages_layer.files()                  # {path: text}
    repo = support.make_repo(case, files=files, skeleton=False)
"""
from tests import support


MANIFEST = support.manifest_yaml("policy", "profiles", "rules", "prompts", "workflows",
                                "knowledge", "project", documents="README.md")

SOURCES = support.sources_yaml(
    ("policy", "policy", ":(glob).ai/repo/policy.yaml", True),
    ("profile", "profile", ":(glob).ai/repo/profiles/*.yaml"),
    ("rule", "rule", ":(glob).ai/repo/rules/**/*.md", True),
    ("prompt", "prompt", ":(glob).ai/repo/prompts/*.md"),
    ("workflow", "document", ":(glob).ai/repo/workflows/*.md"),
    ("issue", "issue", ":(glob).ai/repo/project/issues/*.yaml"),
    ("layer", "document", ":(glob).ai/README.md"))

POLICY = """version: 1
profiles:
  default: steady
projections:
  - provider: claude-code
    target: CLAUDE.md
"""

PROFILE = """name: steady
description: careful, one change at a time
effort: medium
"""

PROMPT = """---
name: inspect
description: look over a change before it lands
profile: steady
---

# Look over the change

Read {{SCOPE}} against project.base@1 and report what is missing.
"""

ISSUE_A = """id: I0101
title: Teach the pages to link
objective: Every value that names another object links to it.
depends_on:
  - I0102
  - I0999
"""

ISSUE_B = """id: I0102
title: Read the layer once
objective: One index serves every page.
"""


def context_doc(ident, title, scope="subtree", order=100, status="active", extra="", body=""):
    return ("---\nschema: context/v1\nid: %s\nkind: context\ntitle: %s\ndescription: What %s "
            "covers.\nstatus: %s\nscope: %s\nproviders: [\"*\"]\ncomposition: extend\norder: "
            "%d\n%s---\n\n# %s\n\n%s" % (ident, title, title.lower(), status, scope, order,
                                         extra, title, body))


ROOT_DOC = context_doc("ai.layer", "The layer", order=0, body="Everything under .ai/.\n")
RULES_DOC = context_doc(
    "ai.repo.rules", "Repository rules", extra="tracks: [lib/rules.sh]\n",
    body="Every change here follows `project.base` (see project.base@1). The retired "
    "`project.nothing` is named by no file.\n")
PROJECT_DOC = context_doc("ai.repo.rules.project", "Project rules", order=10,
                          body="Rules this repository wrote; the format is in `../README.md`.\n")
WORKFLOWS_DOC = context_doc("ai.repo.workflows", "Workflows", status="deprecated",
                            body="Retired.\n")

BASE_TITLE = "Every change carries a test"
BASE_STATEMENT = "A change without a test that fails before it is not finished."
BASE = """---
id: project.base
version: 1
kind: rule
title: %s
description: The rule every other rule here builds on.
statement: %s
status: active
class: blocking
depends_on: []
tags: [testing]
---

# Why

A test that never failed proves nothing.
""" % (BASE_TITLE, BASE_STATEMENT)

GREETING_OLD = """---
id: project.greeting
version: 1
kind: rule
title: Greet the contributor (retired)
description: The first greeting rule.
statement: Say hello.
status: deprecated
class: advisory
depends_on: []
---

# Retired

Replaced by version 2.
"""

GREETING_TITLE = "Greet every contributor"
GREETING_STATEMENT = "Every review opens with a greeting and names what was done well."
GREETING = """---
id: project.greeting
version: 2
kind: rule
title: %s
description: A salutation opens each review.
statement: %s
status: active
class: advisory
depends_on: [project.base@1, project.nothing@1]
tags: [review]
---

# Greet every contributor

Build on `project.base`, as project.base@1 says. The older `project.greeting@1` said less.
Nothing here depends on project.nothing, and xproject.base or project.based or
project.base-two or lib/project.base are other words.

## project.base

[the base rule, with project.base in its text](https://example.org/base) and
[the base by its URI](majordomus://rule/project.base@1) and
[a URI nothing serves](majordomus://rule/project.nothing@1).

| Rule | Why |
|------|-----|
| `project.base@1` | first |
""" % (GREETING_TITLE, GREETING_STATEMENT)

GUIDE = """# The review guide

Open with `project.greeting`; read `../rules/README.md` for the tree.
"""

PATHS = {
    "manifest": ".ai/manifest.yaml",
    "root": ".ai/README.md",
    "rules": ".ai/repo/rules/README.md",
    "project": ".ai/repo/rules/project/README.md",
    "workflows": ".ai/repo/workflows/README.md",
    "base": ".ai/repo/rules/project/base.v1.md",
    "greeting_old": ".ai/repo/rules/project/greeting.v1.md",
    "greeting": ".ai/repo/rules/project/greeting.v2.md",
    "guide": ".ai/repo/workflows/guide.md",
    "tracked": "lib/rules.sh",
}
BASE_URI = "majordomus://rule/project.base@1"
GREETING_URI = "majordomus://rule/project.greeting@2"
GREETING_OLD_URI = "majordomus://rule/project.greeting@1"
PROMPT_URI = "majordomus://prompt/inspect"
PROFILE_URI = "majordomus://profile/steady"
ISSUE_A_URI = "majordomus://issue/I0101"
ISSUE_B_URI = "majordomus://issue/I0102"
RULES_DOC_URI = "majordomus://context/ai.repo.rules"
PROJECT_DOC_URI = "majordomus://context/ai.repo.rules.project"
GUIDE_URI = "majordomus://document/.ai/repo/workflows/guide.md"


def files(extra=None):
    """The layer's files, {path: text}, with `extra` added (or replacing)."""
    out = {
        PATHS["manifest"]: MANIFEST,
        ".ai/repo/knowledge/sources.yaml": SOURCES,
        ".ai/repo/policy.yaml": POLICY,
        ".ai/repo/profiles/steady.yaml": PROFILE,
        ".ai/repo/prompts/inspect.md": PROMPT,
        ".ai/repo/project/issues/I0101.yaml": ISSUE_A,
        ".ai/repo/project/issues/I0102.yaml": ISSUE_B,
        PATHS["root"]: ROOT_DOC,
        PATHS["rules"]: RULES_DOC,
        PATHS["project"]: PROJECT_DOC,
        PATHS["workflows"]: WORKFLOWS_DOC,
        PATHS["base"]: BASE,
        PATHS["greeting_old"]: GREETING_OLD,
        PATHS["greeting"]: GREETING,
        PATHS["guide"]: GUIDE,
        PATHS["tracked"]: "#!/bin/sh\n",
        ".gitignore": ".ai/local/\n",
    }
    out.update(extra or {})
    return out
