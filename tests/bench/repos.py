"""The scratch repositories the benchmark measures: the skeleton, generated rules, the real
layer with stand-ins for its tracks, and a deep tree of context documents."""
import os
import re
import subprocess

import support
from bench.common import CONTEXT_DOCS, GEN_RULES, REAL_LATEST, SKELETON, child_env, first_line


def git(repo, *args):
    p = subprocess.run(["git", "-C", repo] + list(args), env=child_env(),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if p.returncode != 0:
        raise RuntimeError("git %s failed: %s" % (" ".join(args), first_line(p.stderr)))
    return p.stdout.decode("utf-8", "replace")


def copy_skeleton(dst):
    """The skeleton (or the test layer, with its .gitignore) copied to dst, writable."""
    support.copy_layer(dst, SKELETON)


def init_commit(repo, message):
    git(repo, "-c", "init.defaultBranch=main", "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--no-gpg-sign", "-m", message)


def write_rules(repo, count):
    d = os.path.join(repo, ".ai", "repo", "rules", "project")
    os.makedirs(d, exist_ok=True)
    for n in range(count):
        with open(os.path.join(d, "gen-%05d.v1.md" % n), "w", encoding="utf-8",
                  newline="\n") as f:
            f.write(support.generated_rule(n))


def make_repos(tmp):
    skel = os.path.join(tmp, "skeleton")
    copy_skeleton(skel)
    init_commit(skel, "skeleton")
    big = os.path.join(tmp, "rules10k")
    copy_skeleton(big)
    write_rules(big, GEN_RULES)
    init_commit(big, "skeleton plus %d generated rules" % GEN_RULES)
    return os.path.realpath(skel), os.path.realpath(big)


def make_real_latest(tmp):
    """real-latest committed into a scratch repository, with an empty stand-in committed
    at each path its context documents' `tracks` name (SPEC §20.3), so that its context
    tree validates; None when the fixture is not there."""
    if not os.path.isdir(REAL_LATEST):
        return None
    repo = os.path.join(tmp, "real-latest")
    support.copy_tree(REAL_LATEST, repo)
    pattern = re.compile(r"^tracks: \[(.*)\]\s*$", re.M)
    for dirpath, _, filenames in os.walk(os.path.join(repo, ".ai")):
        for name in filenames:
            if name != "README.md":
                continue
            with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                m = pattern.search(f.read().split("\n---", 1)[0])
            for entry in (m.group(1).split(",") if m else ()):
                entry = entry.strip().strip("'\"")
                target = os.path.join(repo, entry)
                if entry and not os.path.exists(target):
                    os.makedirs(os.path.dirname(target), exist_ok=True)
                    open(target, "w").close()
    init_commit(repo, "real-latest with stand-ins for its tracks")
    return os.path.realpath(repo)


CONTEXT_SOURCE = """
  - id: area_context
    kind: context
    discovery: vcs
    pathspec: ':(glob).ai/repo/areas/**/README.md'
    required: false
"""


def context_dirs():
    """The directories of the §20 repository's CONTEXT_DOCS documents, a deep tree under
    .ai/repo/areas: 4 at depth 3, 20 at depth 4, the rest at depth 5."""
    out = []
    for a in range(4):
        out.append("a%d" % a)
    for a in range(4):
        for b in range(5):
            out.append("a%d/b%d" % (a, b))
    for c in range(10):
        for a in range(4):
            for b in range(5):
                if len(out) < CONTEXT_DOCS:
                    out.append("a%d/b%d/c%d" % (a, b, c))
    return [".ai/repo/areas/" + d for d in out]


def context_document(directory, n, parent_id):
    ident = "bench." + directory[len(".ai/repo/areas/"):].replace("/", ".")
    lines = ["---", "schema: context/v1", "id: %s" % ident, "kind: context",
             "title: Benchmark context %s" % directory,
             "description: Context document %d of the benchmark's deep tree." % n,
             "status: %s" % ("deprecated" if n % 37 == 36 else "active"),
             "scope: %s" % ("directory" if n % 5 == 4 else "subtree"),
             'providers: ["*"]', "audience: [human, agent]"]
    if parent_id and n % 10 == 7:
        lines += ["composition: replace", "supersedes: [%s]" % parent_id]
    else:
        lines.append("composition: extend")
    lines.append("order: %d" % (10 + n % 3 * 10))
    if n % 20 == 3:
        lines.append("tracks: [README.md, .ai/repo/rules/project/gen-%05d.v1.md]"
                     % (n * 31 % GEN_RULES))
    lines += ["---", "", "# Benchmark context %s" % directory, "",
              "What governs %s in the benchmark's tree; it states nothing." % directory, ""]
    return "\n".join(lines)


def make_context_repo(tmp):
    """The skeleton, 10,000 generated rules and CONTEXT_DOCS context documents."""
    repo = os.path.join(tmp, "context10k")
    copy_skeleton(repo)
    write_rules(repo, GEN_RULES)
    with open(os.path.join(repo, ".ai", "repo", "knowledge", "sources.yaml"), "a",
              encoding="utf-8", newline="\n") as f:
        f.write(CONTEXT_SOURCE)
    ids = {}
    for n, directory in enumerate(context_dirs()):
        parent = directory.rpartition("/")[0]
        os.makedirs(os.path.join(repo, directory), exist_ok=True)
        with open(os.path.join(repo, directory, "README.md"), "w", encoding="utf-8",
                  newline="\n") as f:
            f.write(context_document(directory, n, ids.get(parent)))
        ids[directory] = "bench." + directory[len(".ai/repo/areas/"):].replace("/", ".")
    init_commit(repo, "skeleton, %d rules, %d context documents" % (GEN_RULES, CONTEXT_DOCS))
    return os.path.realpath(repo)


def make_rules_repo(tmp, count):
    repo = os.path.join(tmp, "rules%dk" % (count // 1000))
    copy_skeleton(repo)
    write_rules(repo, count)
    init_commit(repo, "skeleton plus %d generated rules" % count)
    return os.path.realpath(repo)


def tree_bytes(repo):
    """Bytes of every file of the work tree outside .git."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(repo):
        if ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames:
            total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def context_targets(repo, limit):
    """Paths to resolve: every directory under .ai/ and the tracked files outside it,
    interleaved, at most `limit` (sorted, so the same in every run)."""
    listed = git(repo, "ls-files").splitlines()
    dirs, outside = set(), []
    for path in listed:
        if path.startswith(".ai/"):
            parts = path.split("/")[:-1]
            for k in range(1, len(parts) + 1):
                dirs.add("/".join(parts[:k]))
        else:
            outside.append(path)
    dirs = sorted(dirs)
    out = []
    for k in range(max(len(dirs), len(outside))):
        if k < len(dirs):
            out.append(dirs[k])
        if k < len(outside) and k % 4 == 0:
            out.append(outside[k])
    return out[:limit]
