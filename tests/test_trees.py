"""The trees a process parsed, kept for the next one (TreeCache, keep_trees): an owner's and a
cold hook's first build parses only the texts no earlier process did.

In process: the cache gives parse_subset's trees, refuses what parse_subset refuses, keeps
only the texts still read, and ignores a file of another build or a damaged one. Over real
processes (an `mcp` owner, a standalone server, the hook), each with a runtime directory of
its own: the file beside the lease (0600), read by the next owner (shown by a tree changed
in the file, which that owner then serves), rewritten after an edit, never read through a
symlink nor when it is open to others, never read or written by a standalone server, and
not used by another build of the archive.
"""
import json
import marshal
import os
import shutil
import stat
import subprocess
import time
import unittest

from tests import support

import majordomus as mj

RULE_PATH = ".ai/repo/rules/project/one.v1.md"
RULE_URI = "majordomus://rule/project.one@1"
MANIFEST = support.manifest_yaml("rules", "knowledge")
SOURCES = support.sources_yaml(("rule", "rule", ":(glob).ai/repo/rules/**/*.md"))
TEXTS = [
    "a: 1\nb: true\nc: 'quoted # not a comment'\nd: [x, 'y', 3]\n",
    "top:\n  list:\n    - one\n    - key: value\n      other: [a]\n  empty: []\n",
    "n: 9223372036854775808\nm: -00012\ns: \"x\"  # a comment\n",
    "id: project.one\nversion: 1\ntitle: One\n",
]


GET = {"name": "majordomus_get", "arguments": {"uri": RULE_URI}}


def title_in(answer):
    """The rule's title in a majordomus_get answer (from its front matter's tree)."""
    return json.loads(answer["result"]["content"][0]["text"])["title"]


def rule(title):
    return ("---\nid: project.one\nversion: 1\ntitle: %s\ndescription: The rule one.\n---\n\n"
            "# %s\n\nBody.\n" % (title, title))


def layer(title="One"):
    return {".ai/manifest.yaml": MANIFEST, ".ai/repo/knowledge/sources.yaml": SOURCES,
            RULE_PATH: rule(title)}


class TreeCacheTest(unittest.TestCase):
    """TreeCache in process, against parse_subset."""

    def cache(self, data=b"", identity="this build"):
        return mj.TreeCache(lambda: data, identity)

    def test_it_gives_parse_subset_s_trees_and_keeps_them(self):
        first = self.cache()
        self.assertEqual([first.parse(t) for t in TEXTS], [mj.parse_subset(t) for t in TEXTS])
        data = first.data()
        self.assertIsNotNone(data)
        second = self.cache(data)
        self.assertEqual([second.parse(t) for t in TEXTS], [mj.parse_subset(t) for t in TEXTS])
        self.assertFalse(second.changed)
        self.assertIsNone(second.data())          # nothing new: nothing to write
        # each tree is the process's own (a change to one is not seen by the next parse)
        second.parse(TEXTS[0])["a"] = 2
        self.assertEqual(second.parse(TEXTS[0])["a"], 1)

    def test_what_parse_subset_refuses_it_refuses(self):
        cache = self.cache()
        for text in ("a: 1\na: 2\n", "\tx: 1\n", "a: &anchor\n"):
            with self.subTest(text=text):
                with self.assertRaises(mj.SubsetError) as mine:
                    cache.parse(text)
                with self.assertRaises(mj.SubsetError) as theirs:
                    mj.parse_subset(text)
                self.assertEqual(str(mine.exception), str(theirs.exception))
        self.assertEqual(cache.kept, {})

    def test_a_tree_deeper_than_marshal_goes_is_parsed_each_time(self):
        deep = "".join("%sk%d:\n" % ("  " * n, n) for n in range(2100)) + "  " * 2100 + "v: 1\n"
        cache = self.cache()
        tree = cache.parse(deep)
        self.assertEqual(mj.key_paths(tree), mj.key_paths(mj.parse_subset(deep)))
        self.assertEqual(cache.kept, {})
        self.assertEqual(marshal.loads(cache.data()), ("this build", {}, b""))

    def test_only_the_texts_read_are_kept(self):
        whole = self.cache()
        for text in TEXTS:
            whole.parse(text)
        again = self.cache(whole.data())
        again.parse(TEXTS[0])
        identity, kept, made = marshal.loads(again.data())
        self.assertEqual((identity, list(kept), made), ("this build", [TEXTS[0]], b""))

    def test_another_build_s_file_or_a_damaged_one_is_parsed_again(self):
        made = self.cache()
        for text in TEXTS:
            made.parse(text)
        _, kept, _ = marshal.loads(made.data())
        lied = {text: marshal.dumps({"forged": True}) for text in TEXTS}
        damaged = dict(kept)
        damaged[TEXTS[1]] = b"\xff not marshal"
        for label, data, identity in (
                ("another build", marshal.dumps(("this build", lied, b"")), "another build"),
                ("not marshal", b"\x00garbage", "this build"),
                ("not a triple", marshal.dumps(["this build"]), "this build"),
                ("the form before made()", marshal.dumps(("this build", lied)), "this build"),
                ("a damaged entry", marshal.dumps(("this build", damaged, b"")),
                 "this build")):
            with self.subTest(label):
                cache = self.cache(data, identity)
                self.assertEqual([cache.parse(t) for t in TEXTS],
                                 [mj.parse_subset(t) for t in TEXTS])
                self.assertIsNotNone(cache.data())    # written again, whole

    def test_what_made_gave_is_kept_and_carried_over_unread(self):
        calls = []

        def make(text):
            calls.append(text)
            return text.upper()
        first = self.cache()
        first.parse(TEXTS[0])
        self.assertEqual([first.made(t, make) for t in ("é a", "ß b")], ["É A", "SS B"])
        second = self.cache(first.data())
        self.assertEqual(second.made("é a", make), "É A")     # kept: not made again
        self.assertEqual(calls, ["é a", "ß b"])
        second.parse(TEXTS[0])
        _, _, made = marshal.loads(second.data())                # only what was asked
        self.assertEqual(marshal.loads(made), {"é a": "É A"})
        # a process that never asks (an owner) keeps them as it read them
        owner = self.cache(first.data())
        owner.parse(TEXTS[0])
        self.assertIsNone(owner.data())
        owner.parse(TEXTS[1])
        self.assertEqual(marshal.loads(owner.data())[2], marshal.loads(first.data())[2])
        # a damaged whole is made again; a value not a text too
        for label, made in (("damaged", b"\xff"), ("not a text",
                                                   marshal.dumps({"é a": 1}))):
            with self.subTest(label):
                cache = self.cache(marshal.dumps(("this build", {}, made)))
                self.assertEqual(cache.made("é a", str.upper), "É A")
        # a stopped cache (a large layer) makes each time and keeps nothing
        stopped = self.cache(first.data())
        stopped.stop()
        self.assertEqual(stopped.made("é a", make), "É A")
        self.assertEqual(calls, ["é a", "ß b", "é a"])

    def test_a_cold_hook_s_term_index_through_the_cache_equals_one_without(self):
        repo = support.make_repo(self, files={RULE_PATH: (
            "---\nid: project.one\nversion: 1\ntitle: Règle — une\ndescription: Ça « marche »"
            "\n---\n\nStraße, naïve — ﬁne; ΣΑΣ\n")})
        plain = mj.first_generation(repo, "vcs", mj.Counters())[0]
        made = self.cache()
        gen = mj.read_generation(repo, "vcs", mj.Counters(), trees=made)[0]
        gen.trees = made
        kept = self.cache(made.data())
        again = mj.read_generation(repo, "vcs", mj.Counters(), trees=kept)[0]
        again.trees = kept
        indexes = [mj.term_index(g) for g in (plain, gen, again)]
        self.assertTrue(made.made_kept)                  # fields past ASCII were kept
        self.assertEqual(kept.made_kept, made.made_kept)
        self.assertEqual(len({(i.text, tuple(i.lengths)) for i in indexes}), 1)
        for query in ("strasse", "regle une", "σας", "fine", "ça marche"):
            hits = [[(score, obj.uri) for score, obj in mj.ranked_hits(g, query, None)]
                    for g in (plain, again)]
            self.assertEqual(hits[0], hits[1], query)
            self.assertTrue(hits[0], query)

    def test_an_index_through_the_cache_equals_one_without(self):
        repo = support.make_repo(self)
        plain = mj.first_generation(repo, "vcs", mj.Counters())[0]
        made = self.cache()
        first = mj.read_generation(repo, "vcs", mj.Counters(), trees=made)[0]
        kept = self.cache(made.data())
        second = mj.read_generation(repo, "vcs", mj.Counters(), trees=kept)[0]
        self.assertFalse(kept.changed)
        self.assertGreater(len(kept.kept), 3)

        def shape(gen):
            return ([(o.uri, o.metadata, o.body) for o in gen.index.objects],
                    [d.as_dict() for d in gen.index.diagnostics])
        self.assertEqual(shape(first), shape(plain))
        self.assertEqual(shape(second), shape(plain))
        self.assertIs(second.decl.parse, mj.parse_subset)    # a rebuild parses as ever


    def test_a_layer_of_more_than_trees_files_keeps_none(self):
        repo = support.make_repo(self)
        files = len(mj.first_generation(repo, "vcs", mj.Counters())[0].index.results)
        kept = self.cache()
        mj.read_generation(repo, "vcs", mj.Counters(), trees=kept)
        self.assertTrue(kept.kept)
        saved = mj.TREES_FILES
        mj.TREES_FILES = files - 1
        try:
            over = self.cache(kept.data())
            gen = mj.read_generation(repo, "vcs", mj.Counters(), trees=over)[0]
        finally:
            mj.TREES_FILES = saved
        self.assertTrue(over.stopped)
        self.assertEqual((over.known, over.kept, over.data()), ({}, {}, None))
        self.assertEqual(len(gen.index.results), files)


class KeptTreesTest(unittest.TestCase):
    """The file beside the lease, over real processes."""

    def setUp(self):
        self.runtime = support.tempdir(self)
        self.env = {"XDG_RUNTIME_DIR": self.runtime}
        self.repo = support.make_repo(self, files=layer(), skeleton=False)
        self.folder = os.path.join(self.runtime, "majordomus")

    def owner_title(self, via="pyz", args=(), owner=True, env=None):
        """Start an `mcp`, read the rule's title, end it; (title, its log)."""
        s = support.McpSession(self.repo, via=via, args=args, env=dict(self.env, **(env or {})))
        self.addCleanup(s.kill)
        s.initialize(name="trees")
        answer = s.request("tools/call", GET)
        self.assertIn("result", answer, answer)
        if owner:
            support.wait_until("the owner's log", lambda: "sharing this repository's server"
                               in s.stderr())
        s.close()
        return title_in(answer), s.stderr()

    def kept(self):
        names = [n for n in os.listdir(self.folder) if n.startswith("trees-")] \
            if os.path.isdir(self.folder) else []
        return [os.path.join(self.folder, n) for n in names]

    def forge(self, path, title):
        """The kept file with the rule's front matter tree saying `title` (the same build's
        identity): what the next start serves, if it reads the file."""
        with open(path, "rb") as handle:
            identity, kept, made = marshal.loads(handle.read())
        front = [text for text in kept if text.startswith("id: project.one\n")]
        self.assertEqual(len(front), 1, list(kept))
        tree = marshal.loads(kept[front[0]])
        tree["title"] = title
        kept[front[0]] = marshal.dumps(tree)
        return marshal.dumps((identity, kept, made))

    def test_an_owner_keeps_the_trees_and_the_next_one_reads_them(self):
        title, _ = self.owner_title()
        self.assertEqual(title, "One")
        files = self.kept()
        self.assertEqual(len(files), 1, files)
        info = os.lstat(files[0])
        self.assertTrue(stat.S_ISREG(info.st_mode))
        self.assertEqual(stat.S_IMODE(info.st_mode), 0o600)
        self.assertTrue(os.path.basename(files[0]).endswith(".marshal"))
        # unchanged layer: the next owner writes nothing
        before = os.stat(files[0]).st_mtime_ns
        self.assertEqual(self.owner_title()[0], "One")
        self.assertEqual(os.stat(files[0]).st_mtime_ns, before)
        # a forged tree, served: the next owner read the file instead of parsing
        forged = self.forge(files[0], "Forged")
        with open(files[0], "wb") as handle:
            handle.write(forged)
        self.assertEqual(self.owner_title()[0], "Forged")
        # a standalone server neither reads nor writes it
        before = os.stat(files[0]).st_mtime_ns
        self.assertEqual(self.owner_title(args=["--standalone"], owner=False)[0], "One")
        self.assertEqual(os.stat(files[0]).st_mtime_ns, before)

    def test_an_edit_between_two_starts_is_read_and_kept(self):
        self.owner_title()
        support.write(self.repo, RULE_PATH, rule("Edited"))
        time.sleep(0.01)
        self.assertEqual(self.owner_title()[0], "Edited")
        (path,) = self.kept()
        with open(path, "rb") as handle:
            _, kept, _ = marshal.loads(handle.read())
        titles = [marshal.loads(tree).get("title") for tree in kept.values()]
        self.assertIn("Edited", titles)
        self.assertNotIn("One", titles)            # a text no longer read is dropped

    def test_a_file_not_safely_this_user_s_is_never_read(self):
        self.owner_title()
        (path,) = self.kept()
        forged = self.forge(path, "Forged")
        elsewhere = os.path.join(support.tempdir(self), "forged.marshal")
        with open(elsewhere, "wb") as handle:
            handle.write(forged)
        os.chmod(elsewhere, 0o600)
        cases = [("a symlink", lambda: os.symlink(elsewhere, path))]
        if os.name == "posix":
            cases.append(("open to others", lambda: (shutil.copy(elsewhere, path),
                                                     os.chmod(path, 0o644))))
        for label, plant in cases:
            with self.subTest(label):
                os.remove(path)
                plant()
                self.assertEqual(self.owner_title()[0], "One")
        with open(elsewhere, "rb") as handle:
            self.assertEqual(handle.read(), forged)     # the link's target untouched

    def test_another_build_of_the_archive_does_not_use_them(self):
        support.require_archive()
        copy = os.path.join(support.tempdir(self), "majordomus.pyz")
        shutil.copy(support.PYZ, copy)

        def title():
            p = subprocess.Popen([support.PYTHON, copy, "mcp"], cwd=self.repo,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=support.base_env(self.env))
            lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": GET}]
            out, _ = p.communicate(b"".join(json.dumps(m).encode() + b"\n" for m in lines),
                                   timeout=60)
            return title_in(json.loads(out.splitlines()[1]))
        self.assertEqual(title(), "One")
        support.wait_until("the kept trees", lambda: len(self.kept()) == 1)
        (path,) = self.kept()
        forged = self.forge(path, "Forged")
        with open(path, "wb") as handle:
            handle.write(forged)
        self.assertEqual(title(), "Forged")              # the same build reads them
        later = os.stat(copy).st_mtime_ns + 10 ** 9
        os.utime(copy, ns=(later, later))                # "rebuilt": another build
        with open(path, "wb") as handle:
            handle.write(forged)
        self.assertEqual(title(), "One")

    def test_a_cold_hook_keeps_them_and_the_next_hook_reads_them(self):
        support.write(self.repo, ".ai/repo/rules/project/two.v1.md", rule("Two").replace(
            "project.one", "project.two"))
        support.commit_all(self.repo)

        def hook(session):
            data = json.dumps({"session_id": session, "cwd": self.repo,
                               "hook_event_name": "SessionStart", "source": "startup"})
            p = support.run(["hook", "--client", "claude-code"], self.repo,
                            input=data.encode("utf-8"), env=self.env)
            self.assertEqual(p.returncode, 0, p.stderr)
            return p.stdout
        first = hook("s-1")
        self.assertIn(b"hookSpecificOutput", first)
        (path,) = self.kept()
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        before = os.stat(path).st_mtime_ns
        self.assertEqual(hook("s-2"), first.replace(b"s-1", b"s-2"))
        self.assertEqual(os.stat(path).st_mtime_ns, before)


if __name__ == "__main__":
    unittest.main()
