"""Unit tests of the registry invariants (§7.4), input validation and execution (§7.5),
resolution (§8), the shipped data files (§4.1), and the project's own layer (§13)."""
import copy
import json
import os
import subprocess
import types
import unittest

import support
import majordomus as mj


def builtins():
    return copy.deepcopy(mj.builtin_descriptors())


def by_id(descriptors, cap_id):
    return next(d for d in descriptors if d["id"] == cap_id)


def declarative(uri="majordomus://rule/a@1", cap_id="rule.a@1"):
    return {"id": cap_id, "module": "rule", "kind": "resource", "title": "a", "description": "",
            "input": {"schema": {"type": "object", "properties": {},
                                 "additionalProperties": False}},
            "output": {"name": "ObjectView", "schema": mj.TYPES["ObjectView"]},
            "provenance": {"source": "declarative", "path": ".ai/repo/rules/a.md",
                           "directory": ".ai/repo/rules", "source_class": "rule",
                           "media_type": "text/markdown"},
            "exposure": {"mcp": {"resource": {"uri": uri, "name": "a@1"}}},
            "stability": "implemented", "cache": {"policy": "disabled"}}


class RegistryInvariantTest(unittest.TestCase):
    def refused(self, descriptors):
        with self.assertRaises(mj.RegistryError) as caught:
            mj.Registry(descriptors)
        return caught.exception.errors

    def test_the_shipped_registry_builds(self):
        registry = mj.Registry(builtins() + [declarative()])
        self.assertEqual(registry.summary["total"], 19)
        self.assertEqual(registry.summary["builtin"], 18)
        self.assertEqual(registry.summary["mcp_tools"], 13)
        self.assertEqual(registry.summary["http_routes"], 18)
        self.assertEqual(registry.summary["cli_commands"], 13)
        self.assertEqual(registry.summary["mcp_resources"], 3)
        self.assertEqual(registry.summary["by_kind"], {"command": 3, "query": 15,
                                                       "resource": 1})

    def test_duplicate_id(self):
        errors = self.refused(builtins() + [declarative(), declarative("majordomus://rule/b")])
        self.assertTrue(any("'rule.a@1'" in e and "declared twice" in e for e in errors), errors)

    def test_invalid_id(self):
        for bad in ("Nope.x", "nodot", "ns.has space", "ns.", "9ns.x"):
            errors = self.refused(builtins() + [declarative(cap_id=bad)])
            self.assertTrue(any("'%s'" % bad in e and "<namespace>.<local>" in e for e in errors),
                            (bad, errors))

    def test_tool_claimed_twice_and_bad_tool_name(self):
        descriptors = builtins()
        by_id(descriptors, "objects.list")["exposure"]["mcp"]["tool"] = "majordomus_get"
        by_id(descriptors, "perf.counters")["exposure"]["mcp"]["tool"] = "Bad-Name"
        errors = self.refused(descriptors)
        self.assertTrue(any("MCP tool 'majordomus_get' is claimed" in e for e in errors), errors)
        self.assertTrue(any("'Bad-Name' is not [a-z0-9_]+" in e for e in errors), errors)

    def test_resource_uri_claimed_twice_and_malformed(self):
        errors = self.refused(builtins() + [declarative("majordomus://repository", "rule.x")])
        self.assertTrue(any("resource 'majordomus://repository' is claimed" in e
                            for e in errors), errors)
        for bad in ("http://x/y", "majordomus://rule/a b"):
            errors = self.refused(builtins() + [declarative(bad)])
            self.assertTrue(any("'%s' does not start with majordomus://" % bad in e
                                for e in errors), errors)

    def test_http_route_rules(self):
        for path in ("/v2/x", "/api/v1/x/", "/api/v1//x", "/api/v1/x?y", "/api/v1/x#y"):
            descriptors = builtins()
            by_id(descriptors, "perf.counters")["exposure"]["http"]["path"] = path
            errors = self.refused(descriptors)
            self.assertTrue(any("HTTP path '%s'" % path in e for e in errors), (path, errors))
        descriptors = builtins()
        by_id(descriptors, "perf.counters")["exposure"]["http"]["path"] = "/api/v1/object"
        errors = self.refused(descriptors)
        self.assertTrue(any("HTTP route GET /api/v1/object is claimed" in e for e in errors))

    def test_cli_path_claimed_twice(self):
        descriptors = builtins()
        by_id(descriptors, "perf.counters")["exposure"]["cli"] = {"path": ["get"]}
        errors = self.refused(descriptors)
        self.assertTrue(any("CLI command 'get' is claimed" in e for e in errors), errors)

    def test_planned_capability_with_executable_exposure(self):
        for stability in ("planned", "unsupported"):
            descriptors = builtins()
            by_id(descriptors, "perf.counters")["stability"] = stability
            errors = self.refused(descriptors)
            self.assertTrue(any("a %s capability has an executable exposure" % stability in e
                                for e in errors), errors)

    def test_process_cache_without_entries(self):
        descriptors = builtins()
        by_id(descriptors, "objects.search")["cache"] = {"policy": "process", "max_entries": 0}
        errors = self.refused(descriptors)
        self.assertTrue(any("process cache with max_entries 0" in e for e in errors), errors)

    def test_resource_capability_with_other_exposure(self):
        bad = declarative()
        bad["exposure"]["http"] = {"method": "GET", "path": "/api/v1/rule"}
        errors = self.refused(builtins() + [bad])
        self.assertTrue(any("a resource capability is exposed other than as an MCP resource"
                            in e for e in errors), errors)

    def test_prompt_claimed_twice_and_prompt_on_a_query(self):
        first, second = declarative(), declarative("majordomus://rule/b@1", "rule.b@1")
        for d in (first, second):
            d["exposure"]["mcp"]["prompt"] = {"name": "p"}
        mj.Registry(builtins() + [first])   # a prompt exposure on a resource is fine
        errors = self.refused(builtins() + [first, second])
        self.assertTrue(any("MCP prompt 'p' is claimed" in e for e in errors), errors)
        descriptors = builtins()
        by_id(descriptors, "perf.counters")["exposure"]["mcp"]["prompt"] = {"name": "q"}
        errors = self.refused(descriptors)
        self.assertTrue(any("capability 'perf.counters'" in e and "prompt exposure" in e
                            for e in errors), errors)

    def test_the_kind_decides_the_method_and_the_annotations(self):
        """§27: a command is routed by POST and annotated not read-only, both derived from
        its kind; the registry refuses a method that does not fit the kind, and a command
        exposed as a resource (a read would change the process)."""
        announce = by_id(builtins(), "peers.announce")
        self.assertEqual(announce["kind"], "command")
        self.assertEqual(announce["exposure"]["http"], {"method": "POST",
                                                        "path": "/api/v1/peers/announce"})
        self.assertEqual(mj.KIND_ANNOTATIONS["command"], {
            "readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
            "openWorldHint": False})
        self.assertEqual(mj.KIND_ANNOTATIONS["query"]["readOnlyHint"], True)
        for cap_id, method in (("peers.announce", "GET"), ("perf.counters", "POST")):
            descriptors = builtins()
            by_id(descriptors, cap_id)["exposure"]["http"]["method"] = method
            errors = self.refused(descriptors)
            kind = "command" if cap_id == "peers.announce" else "query"
            self.assertTrue(any("capability '%s'" % cap_id in e and "the HTTP method %s does "
                                "not fit a %s" % (method, kind) in e for e in errors), errors)
        descriptors = builtins()
        by_id(descriptors, "peers.announce")["exposure"]["mcp"]["resource"] = {
            "uri": "majordomus://announce", "name": "announce"}
        errors = self.refused(descriptors)
        self.assertTrue(any("a command is exposed as the MCP resource 'majordomus://announce'"
                            in e for e in errors), errors)

    def test_query_resource_with_required_input(self):
        descriptors = builtins()
        get = by_id(descriptors, "objects.get")
        get["exposure"]["mcp"]["resource"] = {"uri": "majordomus://get", "name": "get"}
        errors = self.refused(descriptors)
        self.assertIn("capability 'objects.get' (builtin majordomus): a query read as the "
                      "resource 'majordomus://get' is called with no input, and its input "
                      "requires uri", errors)

    def test_all_errors_are_collected(self):
        descriptors = builtins()
        by_id(descriptors, "objects.search")["cache"] = {"policy": "process", "max_entries": 0}
        by_id(descriptors, "perf.counters")["exposure"]["mcp"]["tool"] = "majordomus_get"
        errors = self.refused(descriptors + [declarative(cap_id="bad id")])
        self.assertGreaterEqual(len(errors), 3, errors)


class InputValidationTest(unittest.TestCase):
    def check(self, type_name, value):
        with self.assertRaises(mj.InvalidInput) as caught:
            mj.check_input(mj.TYPES[type_name], value)
        return str(caught.exception)

    def test_messages_name_the_property(self):
        self.assertEqual(self.check("GetInput", {}),
                         "invalid input: missing required property 'uri'")
        self.assertEqual(self.check("GetInput", {"uri": "x", "bogus": 1}),
                         "invalid input: unknown property 'bogus'")
        self.assertEqual(self.check("GetInput", {"uri": 5}),
                         "invalid input: property 'uri' must be a string")
        self.assertEqual(self.check("SearchInput", {"query": "a", "limit": "5"}),
                         "invalid input: property 'limit' must be an integer")
        self.assertEqual(self.check("SearchInput", {"query": "a", "limit": True}),
                         "invalid input: property 'limit' must be an integer")
        self.assertEqual(self.check("SearchInput", {"query": "a", "limit": 0}),
                         "invalid input: property 'limit' must be at least 1")
        self.assertEqual(self.check("SearchInput", {"query": "a", "limit": 201}),
                         "invalid input: property 'limit' must be at most 200")
        self.assertIn("property 'kind' must be one of query, command, resource",
                      self.check("CapabilitiesInput", {"kind": "x"}))
        self.assertEqual(self.check("Empty", []), "invalid input: the input must be an object")

    def test_valid_inputs_pass(self):
        mj.check_input(mj.TYPES["SearchInput"], {"query": "a", "limit": 200, "kind": "rule"})
        mj.check_input(mj.TYPES["Empty"], {})


def scratch_generation(testcase, files=None):
    """Generation 1 of a scratch skeleton repository (§15.1), as a one-shot command has it."""
    repo = support.make_repo(testcase, files=files)
    return mj.first_generation(repo, "vcs", mj.Counters())[0]


class ExecutionTest(unittest.TestCase):
    def test_cache_hits_misses_and_errors_not_cached(self):
        gen = scratch_generation(self)
        first = gen.execute("objects.search", {"query": "scope"})
        again = gen.execute("objects.search", {"query": "scope"})
        self.assertEqual(first, again)
        counters = gen.counters.snapshot()
        self.assertEqual((counters["cache_hits"], counters["cache_misses"]), (1, 1))
        for _ in range(2):
            with self.assertRaises(mj.Refused):
                gen.execute("objects.search", {"query": "  "})
        counters = gen.counters.snapshot()
        self.assertEqual(counters["cache_misses"], 3)   # the refusal was never cached
        self.assertEqual(counters["handler_invocations"], 3)

    def test_the_cache_belongs_to_its_generation(self):
        """§7.5, §15.1: an entry cached by one generation is never served by another."""
        gen = scratch_generation(self)
        gen.execute("objects.search", {"query": "scope"})
        later = mj.Generation(2, gen.decl, gen.index, (gen.head, gen.branch), gen.counters,
                              gen.dirs)
        later.execute("objects.search", {"query": "scope"})
        counters = gen.counters.snapshot()
        self.assertEqual((counters["cache_hits"], counters["cache_misses"]), (0, 2))
        later.execute("objects.search", {"query": "scope"})
        self.assertEqual(gen.counters.snapshot()["cache_hits"], 1)

    def test_eviction_oldest_first(self):
        gen = scratch_generation(self)
        for number in range(66):
            gen.execute("objects.search", {"query": "q%d" % number})
        self.assertEqual(gen.counters.snapshot()["cache_evictions"], 2)
        gen.execute("objects.search", {"query": "q65"})   # newest: still cached
        self.assertEqual(gen.counters.snapshot()["cache_hits"], 1)
        gen.execute("objects.search", {"query": "q0"})    # oldest: evicted
        self.assertEqual(gen.counters.snapshot()["cache_misses"], 67)

    def test_disabled_cache_never_touches_counters(self):
        gen = scratch_generation(self)
        gen.execute("objects.list", {})
        counters = gen.counters.snapshot()
        self.assertEqual((counters["cache_hits"], counters["cache_misses"]), (0, 0))
        self.assertEqual(counters["executions"], 1)
        self.assertEqual(counters["phases"]["handler_execution"]["count"], 1)

    def test_unknown_capability_and_resource_capability(self):
        gen = scratch_generation(self)
        with self.assertRaises(mj.NotFound) as caught:
            gen.execute("nope.x", {})
        self.assertEqual(str(caught.exception), "not found: unknown capability: nope.x")
        with self.assertRaises(mj.Refused):
            gen.execute("prompt.continue", {})

    def test_unknown_kind_is_invalid_input(self):
        gen = scratch_generation(self)
        with self.assertRaises(mj.InvalidInput) as caught:
            gen.execute("objects.list", {"kind": "x"})
        self.assertEqual(str(caught.exception), "invalid input: kind 'x' is not among the kinds "
                         "this repository has: document, policy, profile, prompt, rule")


class ResolutionTest(unittest.TestCase):
    def test_registry_without_object_is_internal(self):
        gen = scratch_generation(self)
        uri = "majordomus://prompt/continue"
        del gen.index.by_uri[uri]
        with self.assertRaises(mj.Internal) as caught:
            mj.resolve(gen, uri)
        self.assertEqual(str(caught.exception), "internal: majordomus://prompt/continue: the "
                         "registry names prompt.continue and the index holds no such object")

    def test_query_failure_becomes_internal(self):
        gen = scratch_generation(self)
        original = mj.HANDLERS["repository.info"]

        def broken(gen, arguments):
            raise mj.NotFound("gone")
        mj.HANDLERS["repository.info"] = broken
        self.addCleanup(mj.HANDLERS.__setitem__, "repository.info", original)
        with self.assertRaises(mj.Internal) as caught:
            mj.resolve(gen, "majordomus://repository")
        self.assertEqual(str(caught.exception), "internal: majordomus://repository: "
                         "repository.info did not answer: not found: gone")

    def test_paths_are_never_uris(self):
        gen = scratch_generation(self)
        for uri in ("majordomus://document/../../etc/passwd", "majordomus://document//etc/passwd",
                    "majordomus://prompt/%63ontinue", "/etc/passwd", "majordomus://prompt/",
                    "MAJORDOMUS://prompt/continue", None, 7):
            with self.assertRaises(mj.NotFound):
                mj.resolve(gen, uri)

    def test_answer_view_content_is_the_answer(self):
        gen = scratch_generation(self)
        view = gen.execute("objects.get", {"uri": "majordomus://repository"})
        self.assertEqual(json.loads(view["content"]), view["answer"])
        self.assertEqual(view["content"], mj.resolve(gen, "majordomus://repository").text)
        self.assertEqual(view["answer"], gen.execute("repository.info", {}))


class ShippedDataTest(unittest.TestCase):
    def test_kinds_and_allow_lists_load(self):
        kinds = mj.shipped_kinds()
        self.assertEqual(sorted(kinds.by_name), sorted(
            "rule prompt skill profile policy scope milestone issue document context session "
            "adr knowledge use-case application taxonomy claim command moment audience area "
            "implementation test".split()))
        self.assertEqual(kinds["rule"].without_front_matter, "document")
        self.assertEqual(kinds["policy"].supported, [1])
        self.assertEqual(kinds["session"].supported, ["session/v1"])
        self.assertEqual(kinds["session"].allow.where, "share/allow/session-record.txt")
        self.assertEqual(kinds.declared, frozenset(["context"]))
        self.assertEqual([n for n, k in kinds.by_name.items() if k.prompt], ["prompt"])
        self.assertEqual(kinds["taxonomy"].members, "categories")
        self.assertEqual(kinds["implementation"].format, "text")
        for name in os.listdir(os.path.join(support.ROOT, "share", "allow")):
            mj.AllowList.shipped(name[:-4]).compile()

    def test_project_layer_stays_ok(self):
        """The checkout's own .ai/ layer, copied into a scratch repository, inspects ok."""
        repo = support.make_repo(self, skeleton=False, commit=False)
        # every tracked file: the context documents' `tracks` name the code and the tests
        tracked = subprocess.run(["git", "-C", support.ROOT, "ls-files", "-z"],
                                 stdout=subprocess.PIPE).stdout.decode().split("\0")
        tracked = [t for t in tracked if t]
        self.assertIn(".ai/manifest.yaml", tracked)
        for rel in tracked:
            with open(os.path.join(support.ROOT, rel), "rb") as handle:
                support.write(repo, rel, handle.read())
        support.commit_all(repo)
        proc = support.run(["mcp", "--inspect"], cwd=repo)
        out = proc.stdout.decode()
        self.assertEqual(proc.returncode, 0, out + proc.stderr.decode())
        self.assertIn("\nstate       ok\n", out)
        for rule in ("stdlib-only", "one-module", "read-only"):
            self.assertIn("resource    majordomus://rule/project.%s@1\n" % rule, out)
        # §20: what governs the program and its tests is answered from the layer itself
        for path in ("majordomus.py", "tests", "tests/test_cli.py", ".ai/repo/rules/project"):
            with self.subTest(path=path):
                proc = support.run(["context", "resolve", path, "--format", "json"], cwd=repo)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                chain = [d["id"] for d in json.loads(proc.stdout.decode())["documents"]]
                self.assertEqual(chain, ["ai.layer", "ai.repo.rules"])


if __name__ == "__main__":
    unittest.main()


class PeersUnitTest(unittest.TestCase):
    """§27 in process: the overlap rule, a scope's paths, and the instructions' sentence."""

    def test_overlap_is_by_segments(self):
        for a, b, overlap in ((".ai/repo", ".ai/repo/rules/x.md", True), ("a", "a", True),
                              (".", "src", True), ("src", "src2", False),
                              ("a/b", "a/bc/d", False), ("a/b/c", "a/b", True)):
            self.assertEqual(mj.paths_overlap(a, b), overlap, (a, b))
            self.assertEqual(mj.paths_overlap(b, a), overlap, (b, a))
        self.assertEqual(mj.scope_overlap(["docs", "src/a.py"], ["src", "lib"]), ["src/a.py"])

    def test_scope_paths_are_normalised_as_a_target(self):
        root = support.make_repo(self, files={"src/a.py": "x"}, skeleton=False, commit=False)
        for given, want in (("./src/", "src"), ("src//a.py", "src/a.py"), (".", "."),
                            (root, "."), (root + "/src/new/b.py", "src/new/b.py")):
            self.assertEqual(mj.scope_path(root, given), want, given)
        for given in ("", "../x", "/etc", "src/../../x"):
            with self.assertRaises(mj.RefusedPath):
                mj.scope_path(root, given)

    def test_the_instructions_sentence_fits(self):
        board = mj.Board()
        live = types.SimpleNamespace(board=board)     # what a session needs of its process
        peers = [mj.Session(live, transport="bridge") for _ in range(6)]
        for n, peer in enumerate(peers):
            board.name(peer, "client-%d-" % n + "x" * 150)
        self.assertEqual(len(peers[0].client), mj.CLIENT_NAME_BOUND)
        for room in (400, 120, 60, 20):
            text = mj.peers_sentence(peers, room)
            self.assertLessEqual(len(text), room)
        self.assertIn("6 other session(s)", mj.peers_sentence(peers, 60))
        self.assertEqual(mj.peers_sentence(peers, 5), "")
        self.assertEqual(mj.peers_sentence([], 500), "")
        short = [mj.Session(live, transport="stdio")]
        board.name(short[0], "codex")
        self.assertEqual(mj.peers_sentence(short, 600), "Also here: p7 (codex); "
                         "majordomus_peers tells what each will change, majordomus_announce "
                         "tells them yours.")
