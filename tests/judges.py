#!/usr/bin/env python3
"""The official MCP judges, run by the test command against the real program (SPEC §19).

  * the conformance suite (@modelcontextprotocol/conformance) in server mode against the
    `/mcp` of `majordomus serve --port 0`, in a scratch repository holding the test layer
    (tests/fixtures/layer): every scenario that needs nothing outside this read-only
    surface, each at the protocol versions it applies to, judged from the suite's own
    checks.json; the others are listed as not applicable, each with its reason;
  * the MCP Inspector CLI over stdio and over HTTP, in both protocol eras, with its
    `--strict` schema check of tools/list;
  * the MCP Bundle CLI (@anthropic-ai/mcpb, SPEC §28) on the bundle `build_zipapp.py --mcpb`
    writes: `mcpb unpack`, `mcpb validate` of its manifest (and of a broken copy, which it
    must refuse), `mcpb info`, and the unpacked bundle run by its mcp_config.

They come from the npm registry into .tools/ (tests/toolchain.py, with Node 22). Standard
library only. Usage: python3 tests/judges.py [--bundle]   (--bundle: the bundle's judge
alone; prints what ran; exit 1 on any failure)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import support  # noqa: E402
import toolchain  # noqa: E402

# (scenario, spec version or None for the suite's default wire): what this server is judged on.
APPLICABLE = [
    ("server-initialize", None), ("server-session-lifecycle", None), ("ping", None),
    ("tools-list", None), ("resources-list", None), ("prompts-list", None),
    ("server-sse-multiple-streams", None), ("dns-rebinding-protection", None),
    ("tools-list", "2026-07-28"), ("resources-list", "2026-07-28"),
    ("prompts-list", "2026-07-28"), ("server-sse-multiple-streams", "2026-07-28"),
    ("dns-rebinding-protection", "2026-07-28"), ("server-stateless", None), ("caching", None),
    ("sep-2164-resource-not-found", None), ("http-header-validation", None),
    ("input-required-result-unsupported-methods", None),
]
# Checks of an applicable scenario that need a diagnostic tool this server does not have:
# the suite itself reports them "Not testable: …" (they are not this server's failures).
NOT_TESTABLE = {
    "server-stateless": {"sep-2575-server-rejects-undeclared-capability",
                         "sep-2575-missing-capability-http-400",
                         "sep-2575-http-server-no-independent-requests-on-stream",
                         "sep-2575-server-no-log-without-loglevel"},
}
_TEST_FIXTURES = ("it calls the suite's own test tools, resources or prompts (test_*, "
                  "test://…), which a server of a repository's layer does not have")
NOT_APPLICABLE = [
    (re.compile(r"tools-call-.*|prompts-get-.*|resources-read-.*|resources-templates-read|"
                r"json-schema-2020-12|elicitation-.*|server-sse-polling|"
                r"input-required-result-.*|http-custom-header-server-validation"),
     _TEST_FIXTURES),
    (re.compile(r"logging-set-level"), "this server has no logging capability (SPEC §9.3: "
                                       "logging/setLevel is -32601)"),
    (re.compile(r"completion-complete"), "this server has no completions capability (SPEC "
                                         "§9.3: completion/complete is -32601)"),
    (re.compile(r"resources-(un)?subscribe"), "it subscribes to test://watched-resource, which "
                                              "this server does not serve (SPEC §15.4: -32002)"),
    (re.compile(r"tasks-.*|sep-2640-skills-.*"), "an extension this server does not offer"),
]


def say(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class Result:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, label, detail=""):
        if ok:
            self.passed += 1
            say("  ok   %s" % label)
        else:
            self.failed += 1
            say("  FAIL %s%s" % (label, "\n" + detail if detail else ""))
        return ok


def scratch_repo(base):
    repo = os.path.join(base, "repo")
    support.copy_layer(repo)
    support.git(repo, "init", "-q", "-b", "main")
    support.commit_all(repo, "test layer")
    return repo


def _plain(text):
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def conformance(result, argv, env, url, work):
    """Run each applicable scenario; judge it from checks.json."""
    listed = subprocess.run(argv + ["list", "--server"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, timeout=120)
    names = re.findall(r"^\s+- (\S+)", _plain(listed.stdout.decode("utf-8", "replace")), re.M)
    result.check(bool(names), "conformance: `list --server` names the suite's scenarios")
    applicable = {name for name, _ in APPLICABLE}
    unclassified = [n for n in names if n not in applicable
                    and not any(rule.fullmatch(n) for rule, _ in NOT_APPLICABLE)]
    result.check(not unclassified, "conformance: every scenario of the suite is judged or "
                 "listed as not applicable", "  unclassified: %s" % ", ".join(unclassified))
    for number, (scenario, version) in enumerate(APPLICABLE):
        out = os.path.join(work, "conformance-%d" % number)
        command = argv + ["server", "--url", url, "--scenario", scenario, "-o", out]
        if version:
            command += ["--spec-version", version]
        began = time.time()
        proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=300)
        checks = []
        for folder in sorted(os.listdir(out)) if os.path.isdir(out) else ():
            path = os.path.join(out, folder, "checks.json")
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as handle:
                    checks += json.load(handle)
        excused = NOT_TESTABLE.get(scenario, set())
        failures = [c for c in checks if c["status"] == "FAILURE" and not (
            c["id"] in excused and (c.get("errorMessage") or "").startswith("Not testable"))]
        counts = {}
        for c in checks:
            counts[c["status"]] = counts.get(c["status"], 0) + 1
        passed = counts.get("SUCCESS", 0)
        label = "conformance %s%s: %d checks succeeded%s%s (%.1fs)" % (
            scenario, " (%s)" % version if version else "", passed,
            ", %d not testable here (need the suite's diagnostic tools)" % (
                counts.get("FAILURE", 0) - len(failures)) if excused else "",
            ", %d warning(s)" % counts["WARNING"] if counts.get("WARNING") else "",
            time.time() - began)
        detail = "\n".join("    %s %s: %s" % (c["status"], c["id"], (c.get("errorMessage") or "")
                                              [:300]) for c in failures)
        if not checks:
            detail = _plain(proc.stdout.decode("utf-8", "replace"))[-3000:]
        result.check(checks and passed and not failures, label, detail)
    for rule, reason in NOT_APPLICABLE:
        matching = [n for n in names if rule.fullmatch(n) and n not in applicable]
        if matching:
            say("  n/a  conformance %s: %s" % (", ".join(matching), reason))


def inspector(result, argv, env, stdio, url):
    """The Inspector CLI: tools/list with --strict, prompts, a read, both eras, both
    transports."""
    def run(target, era, *method):
        command = argv + ["--protocol-era", era] + target + list(method)
        proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=120)
        err = proc.stderr.decode("utf-8", "replace")
        try:
            value = json.loads(proc.stdout.decode("utf-8"))
        except ValueError:
            value = None
        return proc.returncode, value, err

    tools = list(support.TOOLS)
    targets = (("stdio", stdio), ("http", ["--transport", "http", "--server-url", url]))
    for transport, target in targets:
        for era in ("legacy", "modern"):
            where = "inspector %s %s:" % (transport, era)
            code, value, err = run(target, era, "--method", "tools/list", "--strict")
            advisories = [line for line in err.splitlines()
                          if re.search(r"warning|error", line, re.I) and " INFO " not in line]
            result.check(code == 0 and value is not None and [t["name"] for t in value["tools"]]
                         == tools and not advisories,
                         "%s tools/list --strict: 8 tools, no schema warning" % where,
                         "    exit %s\n%s" % (code, err[-2000:]))
            code, value, err = run(target, era, "--method", "prompts/get", "--prompt-name",
                                   "continue", "--prompt-args", "CONTEXT=inspected")
            text = (value or {}).get("messages", [{}])[0].get("content", {}).get("text", "")
            result.check(code == 0 and text == "\n# Pick up where it stopped\n\ninspected\n",
                         "%s prompts/get continue CONTEXT=inspected" % where,
                         "    exit %s: %r\n%s" % (code, value, err[-2000:]))
            code, value, err = run(target, era, "--method", "prompts/list")
            names = [p["name"] for p in (value or {}).get("prompts", [])]
            result.check(code == 0 and names == ["continue"], "%s prompts/list" % where,
                         "    exit %s: %r\n%s" % (code, value, err[-2000:]))
            code, value, err = run(target, era, "--method", "resources/read", "--uri",
                                   "majordomus://rule/majordomus.scope-integrity@1")
            contents = (value or {}).get("contents") or [{}]
            result.check(code == 0 and contents[0].get("text", "").startswith("---\n"),
                         "%s resources/read of a rule" % where,
                         "    exit %s: %r\n%s" % (code, value, err[-2000:]))


def bundle(result, argv, env, work):
    """The official mcpb CLI on the bundle build_zipapp.py --mcpb writes (SPEC §28)."""
    folder = os.path.join(work, "bundle")
    os.makedirs(folder)
    built = subprocess.run([support.PYTHON, os.path.join(support.ROOT, "build_zipapp.py"),
                            "--mcpb", os.path.join(folder, "majordomus.pyz")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    if not result.check(built.returncode == 0, "mcpb: build_zipapp.py --mcpb",
                        built.stdout.decode("utf-8", "replace")[-2000:]):
        return

    def mcpb(*args):
        proc = subprocess.run(argv + list(args), cwd=work, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=120)
        return proc.returncode, _plain(proc.stdout.decode("utf-8", "replace"))

    unpacked = os.path.join(work, "unpacked")
    code, out = mcpb("unpack", os.path.join(folder, "majordomus.mcpb"), unpacked)
    result.check(code == 0 and sorted(os.listdir(unpacked)) == ["majordomus.pyz",
                                                                "manifest.json"],
                 "mcpb unpack majordomus.mcpb: manifest.json and majordomus.pyz",
                 "    exit %s: %s" % (code, out[-2000:]))
    manifest = os.path.join(unpacked, "manifest.json")
    code, out = mcpb("validate", manifest)
    result.check(code == 0 and "Manifest schema validation passes!" in out,
                 "mcpb validate manifest.json (manifest_version 0.3)",
                 "    exit %s: %s" % (code, out[-2000:]))
    with open(manifest, encoding="utf-8") as handle:
        data = json.load(handle)
    broken = os.path.join(work, "broken.json")     # the judge refuses what the spec refuses
    with open(broken, "w", encoding="utf-8") as handle:
        json.dump(dict(data, compatibility={"platforms": ["windows"]}), handle)
    code, out = mcpb("validate", broken)
    result.check(code != 0 and "platforms" in out,
                 "mcpb validate refuses a manifest naming platform 'windows'",
                 "    exit %s: %s" % (code, out[-2000:]))
    code, out = mcpb("info", os.path.join(folder, "majordomus.mcpb"))
    result.check(code == 0 and "majordomus.mcpb" in out, "mcpb info majordomus.mcpb",
                 "    exit %s: %s" % (code, out[-2000:]))
    # the unpacked bundle, run as a client runs it: mcp_config with its variables filled in
    repo = scratch_repo(os.path.join(work, "for-bundle"))
    config = data["server"]["mcp_config"]
    args = [arg.replace("${__dirname}", unpacked).replace("${user_config.repository}", repo)
            for arg in config["args"]]
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "judges", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    proc = subprocess.run([shutil.which(config["command"]) or support.PYTHON] + args, cwd=work,
                          env=support.base_env(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60,
                          input="".join(json.dumps(r) + "\n" for r in requests).encode())
    try:
        answers = [json.loads(line) for line in proc.stdout.decode("utf-8").splitlines()]
        names = [t["name"] for t in answers[1]["result"]["tools"]]
    except (ValueError, KeyError, IndexError):
        answers, names = [], None
    result.check(proc.returncode == 0 and len(answers) == 2 and names == [
        t["name"] for t in data["tools"]] and answers[0]["result"]["serverInfo"]["name"]
                 == "majordomus",
                 "the unpacked bundle, run by its mcp_config (%s …): initialize, tools/list "
                 "(%d tools, as the manifest lists)" % (config["command"], len(data["tools"])),
                 "    exit %s: %r\n%s" % (proc.returncode, answers,
                                          proc.stderr.decode("utf-8", "replace")[-2000:]))


def main():
    result = Result()
    if "--bundle" not in sys.argv[1:]:
        everything(result)
    argv, why = toolchain.mcpb(say)
    if not argv:
        say("mcpb: cannot be installed here (%s)" % why)
        result.check(False, "the bundle's judge is installed (Node 22, %s)" % toolchain.MCPB)
        return result
    say("judges: %s" % toolchain.MCPB)
    work = tempfile.mkdtemp(prefix="mj-mcpb-")
    try:
        bundle(result, argv, toolchain.judge_env(), work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result


def everything(result):
    """The conformance suite and the Inspector."""
    judges, why = toolchain.judges(say)
    if not judges:
        say("judges: cannot be installed here (%s)" % why)
        result.check(False, "the judges are installed (Node 22, conformance, inspector)")
        return
    work = tempfile.mkdtemp(prefix="mj-judges-")
    server = None
    try:
        repo = scratch_repo(work)
        home = os.path.join(work, "home")
        os.makedirs(home)
        env = toolchain.judge_env(home=home)
        conformance_argv, inspector_argv = judges["conformance"], judges["inspector_cli"]
        say("judges: node %s (%s); %s; %s" % (toolchain.NODE_VERSION, judges["node"],
                                              toolchain.CONFORMANCE, toolchain.INSPECTOR))
        server = support.HttpServer(repo)
        url = "http://127.0.0.1:%d/mcp" % server.port
        conformance(result, conformance_argv, env, url, work)
        stdio = [support.PYTHON, support.PYZ, "mcp", "--repo", repo]
        inspector(result, inspector_argv, env, stdio, url)
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    outcome = main()
    say("judges: %d checks ok, %d failing" % (outcome.passed, outcome.failed))
    sys.exit(1 if outcome.failed else 0)
