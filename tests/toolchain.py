#!/usr/bin/env python3
"""Toolchains the test command makes for itself, beyond what the machine comes with.

  * A Debian unstable root made with debootstrap, holding CPython 3.14 and 3.15 and the newest
    git (SPEC §13). It is kept outside the checkout (/var/cache/majordomus-tests/sid, or
    $MAJORDOMUS_TOOLCHAIN_CACHE/sid) and reused: a marker file written only after a complete
    setup tells a finished root from a half-made one, which is made again. The unit suite runs
    inside it (chroot) in a private mount namespace, with the checkout and the reference data
    ($MAJORDOMUS_REFERENCE, default ../shared) mounted at their own absolute paths, /proc,
    the host's /dev and a fresh /tmp.
  * Node 22 and the MCP judges (the conformance suite and the Inspector CLI), installed from the
    npm registry into .tools/ in the checkout (gitignored), with a stamp so that reruns are fast.
  * The MCP Bundle CLI (@anthropic-ai/mcpb), the judge of the bundle build_zipapp.py --mcpb
    writes (`mcpb validate`, `mcpb unpack`), installed with Node 22's npm into .tools/mcpb.
  * The browser the HTML pages are proven in: Debian's chromium and chromium-driver (apt-get on
    the host), and axe-core from the npm registry in .tools/axe (tests/browser.py drives them).

Every public function answers (value, reason): value is None when the tool cannot be had
here, and reason then says why in one line.

Usage: python3 tests/toolchain.py [status|sid|node|judges|mcpb|chromium|axe] [--refresh]
"""
import fcntl
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from support import REFERENCE  # noqa: E402  (where the reference data is, when it is)

CACHE = os.environ.get("MAJORDOMUS_TOOLCHAIN_CACHE") or "/var/cache/majordomus-tests"
SID = os.path.join(CACHE, "sid")
SID_MARKER = ".majordomus-ready"
SID_MINORS = (14, 15)
SID_PACKAGES = ["python3.%d" % minor for minor in SID_MINORS] + ["git"]
FALLBACK_MIRROR = "http://deb.debian.org/debian"
ROOT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Variables of the host's interpreters and temporary directories that mean nothing in the root.
ROOT_ENV_DROPPED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONSAFEPATH",
                    "VIRTUAL_ENV", "TMPDIR", "LD_LIBRARY_PATH", "LD_PRELOAD")

TOOLS = os.path.join(ROOT, ".tools")
NODE_MAJOR = 22
NODE_VERSION = "22.23.5"        # the newest 22.x on the registry when this was written
CONFORMANCE = "@modelcontextprotocol/conformance@0.2.0-alpha.12"
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"
JUDGE_PACKAGES = [CONFORMANCE, INSPECTOR]
MCPB = "@anthropic-ai/mcpb@2.1.2"     # the newest on the registry when this was written
MCPB_JS = "node_modules/@anthropic-ai/mcpb/dist/cli/cli.js"
CONFORMANCE_JS = "node_modules/@modelcontextprotocol/conformance/dist/index.js"
INSPECTOR_JS = "node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"
STAMP = ".majordomus-stamp"
CHROMIUM_PACKAGES = ["chromium", "chromium-driver"]
CHROMIUM_LAUNCHER = "/usr/bin/chromium"       # Debian's shell wrapper around the binary below
CHROMIUM_BINARY = "/usr/lib/chromium/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
AXE_CORE = "axe-core@4.14.1"    # the newest 4.x on the registry when this was written
AXE_JS = "node_modules/axe-core/axe.min.js"
# One setup step (debootstrap, apt-get, npm install) normally takes well under a minute here;
# one that hangs on a network that drops packets is given up after this many seconds.
SETUP_TIMEOUT = 300


def _quiet(log):
    return log or (lambda text: None)


def _run(argv, env=None, timeout=SETUP_TIMEOUT, cwd=None):
    """(exit code, combined output text); an argv that cannot be started answers 127, one
    that outlives timeout is killed with its process group and answers 124."""
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, cwd=cwd,
                                start_new_session=True)
    except OSError as exc:
        return 127, "%s: %s" % (argv[0], exc)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return 124, "%s: killed after %d s" % (argv[0], timeout)
    return proc.returncode, out.decode("utf-8", "replace")


def _tail(text, lines=3):
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def _read_json(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _write_json(path, data):
    with open(path + ".new", "w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
    os.replace(path + ".new", path)


# --- the Debian unstable root ------------------------------------------------------------

def host_mirror():
    """The Debian mirror the host's apt sources use (one-line or deb822 files)."""
    files = ["/etc/apt/sources.list"]
    try:
        files += sorted(os.path.join("/etc/apt/sources.list.d", name)
                        for name in os.listdir("/etc/apt/sources.list.d"))
    except OSError:
        pass
    entries = []            # (uri, [suites])
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
        except OSError:
            continue
        if path.endswith(".sources"):
            for stanza in text.split("\n\n"):
                fields = {}
                for line in stanza.splitlines():
                    if line[:1] not in ("", "#", " ", "\t") and ":" in line:
                        key, _, value = line.partition(":")
                        fields[key.strip().lower()] = value.split()
                if "deb" in fields.get("types", []):
                    for uri in fields.get("uris", []):
                        entries.append((uri, fields.get("suites", [])))
        elif path.endswith(".list"):
            for line in text.splitlines():
                words = line.split("#", 1)[0].split()
                if words[:1] == ["deb"]:
                    words = words[1:]
                    if words and words[0].startswith("["):
                        while words and not words[0].endswith("]"):
                            words.pop(0)
                        words = words[1:]
                    if len(words) >= 2:
                        entries.append((words[0], [words[1]]))
    for uri, suites in entries:
        if uri.rstrip("/").endswith("/debian") and any("-" not in s for s in suites):
            return uri.rstrip("/")
    return FALLBACK_MIRROR


def _mounts_under(path):
    """Mount points under path in this namespace (a leftover would make removal unsafe)."""
    found = []
    try:
        with open("/proc/self/mountinfo") as handle:
            for line in handle:
                point = line.split()[4].replace("\\040", " ")
                if point == path or point.startswith(path.rstrip("/") + "/"):
                    found.append(point)
    except OSError:
        pass
    return found


def sid_ready(root=SID):
    """The marker of a complete root (dict), or None."""
    marker = _read_json(os.path.join(root, SID_MARKER))
    if marker and marker.get("packages") == SID_PACKAGES:
        return marker
    return None


def _why_no_root():
    if not sys.platform.startswith("linux"):
        return "not Linux"
    if os.geteuid() != 0:
        return "not running as root (debootstrap, chroot and mount need it)"
    for tool in ("unshare", "mount", "chroot"):
        if not shutil.which(tool):
            return "%s is not on PATH" % tool
    return None


def _ensure_debootstrap(log):
    if shutil.which("debootstrap"):
        return None
    log("sid root: installing debootstrap on the host (apt-get)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    code, out = _run(["apt-get", "install", "-y", "-q", "debootstrap"], env=env)
    if code != 0:
        _run(["apt-get", "update", "-q"], env=env)
        code, out = _run(["apt-get", "install", "-y", "-q", "debootstrap"], env=env)
    if code != 0 or not shutil.which("debootstrap"):
        return "apt-get install debootstrap failed: " + _tail(out)
    return None


def _in_root_setup(root, argv, logfile):
    """Run argv inside the root being made (network on, /proc and /dev mounted); exit code."""
    env = root_environ(dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    code, out = _run(root_command(root, argv, cwd="/", binds=(), tmp=False), env=env)
    logfile.write("$ %s\n%s\n" % (" ".join(argv), out))
    logfile.flush()
    return code, out


def _make_sid(root, log):
    """debootstrap + apt-get install; answers (marker, None) or (None, reason)."""
    leftovers = _mounts_under(root)
    if leftovers:
        return None, "mounts left under %s (%s): unmount them first" % (root, leftovers[0])
    if os.path.lexists(root):
        shutil.rmtree(root)
    os.makedirs(CACHE, exist_ok=True)
    mirror = host_mirror()
    started = time.time()
    with open(os.path.join(CACHE, "sid-setup.log"), "w") as logfile:
        log("sid root: debootstrap --variant=minbase sid %s %s" % (root, mirror))
        # In a private mount namespace, so that the mounts debootstrap makes in the target
        # cannot outlive it, even when it is killed.
        argv = ["unshare", "--mount", "--propagation", "private", "--",
                "debootstrap", "--variant=minbase", "sid", root, mirror]
        code, out = _run(argv, env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
        logfile.write("$ %s\n%s\n" % (" ".join(argv), out))
        if code != 0:
            return None, "debootstrap failed (exit %d): %s" % (code, _tail(out))
        if os.path.isfile("/etc/resolv.conf"):
            target = os.path.join(root, "etc", "resolv.conf")
            if os.path.lexists(target):
                os.remove(target)
            shutil.copyfile("/etc/resolv.conf", target)
        # The mirror may serve a snapshot older than unstable's Valid-Until window (a week);
        # apt would then refuse its (still signed) index.
        with open(os.path.join(root, "etc/apt/apt.conf.d/99majordomus"), "w") as handle:
            handle.write('Acquire::Check-Valid-Until "false";\n')
        code, out = _in_root_setup(root, ["apt-get", "update", "-q"], logfile)
        if code != 0 or "\nE: " in "\n" + out:
            return None, "apt-get update in the root failed: " + _tail(out)
        plain, experimental = [], []
        for package in SID_PACKAGES:
            code, out = _in_root_setup(root, ["apt-cache", "show", "--no-all-versions", package],
                                       logfile)
            (plain if code == 0 and "Package:" in out else experimental).append(package)
        if experimental:
            # A Python not yet in unstable may already be in experimental.
            with open(os.path.join(root, "etc/apt/sources.list.d/experimental.list"), "w") as h:
                h.write("deb %s experimental main\n" % mirror)
            _in_root_setup(root, ["apt-get", "update", "-q"], logfile)
        install = ["apt-get", "install", "-y", "-q", "--no-install-recommends"]
        code, out = _in_root_setup(root, install + plain, logfile)
        if code != 0:
            return None, "apt-get install %s failed: %s" % (" ".join(plain), _tail(out))
        if experimental:
            code, out = _in_root_setup(root, install + ["-t", "experimental"] + experimental,
                                       logfile)
            if code != 0:
                log("sid root: %s not in unstable or experimental: %s"
                    % (" ".join(experimental), _tail(out, 1)))
        _in_root_setup(root, ["apt-get", "clean"], logfile)
        marker = {"packages": SID_PACKAGES, "mirror": mirror, "interpreters": {},
                  "made": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "seconds": round(time.time() - started, 1)}
        code, out = _in_root_setup(root, ["git", "--version"], logfile)
        if code != 0:
            return None, "git does not run in the root: " + _tail(out)
        marker["git"] = out.strip().split()[-1]
        for minor in SID_MINORS:
            code, out = _in_root_setup(root, ["python3.%d" % minor, "-c",
                                              "import sys; print(sys.version.split()[0])"],
                                       logfile)
            if code == 0:
                marker["interpreters"]["3.%d" % minor] = out.strip().splitlines()[-1]
        if not marker["interpreters"]:
            return None, "no interpreter runs in the root (see %s/sid-setup.log)" % CACHE
        marker["from_experimental"] = [p for p in experimental
                                       if p.replace("python", "") in marker["interpreters"]]
    _write_json(os.path.join(root, SID_MARKER), marker)
    return marker, None


def sid_root(log=None, refresh=False):
    """(marker dict, None) for a complete root at SID, making it if needed, or (None, reason).
    The marker holds: interpreters {"3.14": "3.14.x", ...}, git, mirror, made, seconds,
    fresh (True when this call made it)."""
    log = _quiet(log)
    why = _why_no_root()
    if why:
        return None, why
    try:
        os.makedirs(CACHE, exist_ok=True)
        with open(os.path.join(CACHE, ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)     # two test commands at once make it once
            marker = None if refresh else sid_ready(SID)
            if marker:
                marker["fresh"] = False
                return marker, None
            why = _ensure_debootstrap(log)
            if why:
                return None, why
            marker, why = _make_sid(SID, log)
            if marker:
                marker["fresh"] = True
            return marker, why
    except OSError as exc:
        return None, "%s: %s" % (CACHE, exc)


def root_environ(env):
    """The environment for a process in the root: the host's less what names host paths."""
    out = {k: v for k, v in env.items()
           if k not in ROOT_ENV_DROPPED and not k.startswith("PYENV") and not k.startswith("LC_")}
    out["PATH"] = ROOT_PATH
    out["LANG"] = "C.UTF-8"
    out.setdefault("HOME", "/root")
    return out


def default_binds():
    """The checkout and the reference data (when there is any), each mounted in the root at
    the absolute path the tests compute, and at its real path when that differs."""
    binds = []
    for path, read_only in ((ROOT, False), (REFERENCE, True)):
        if not os.path.isdir(path):
            continue
        real = os.path.realpath(path)
        for target in sorted({path, real}):
            binds.append((real, target, read_only))
    return binds


def root_command(root, argv, cwd=None, binds=None, tmp=True):
    """An argv that runs argv inside root: a private mount namespace, /proc, the host's /dev,
    a fresh tmpfs on /tmp (tmp=True), each (source, target, read_only) bind, chroot, cd cwd.
    Run it with root_environ(...) as its environment."""
    spec = {"root": root, "cwd": cwd or ROOT, "tmp": tmp,
            "binds": default_binds() if binds is None else list(binds)}
    return (["unshare", "--mount", "--propagation", "private", "--",
             sys.executable, os.path.abspath(__file__), "_enter", json.dumps(spec), "--"]
            + list(argv))


def _enter(spec, argv):
    """Inside the new mount namespace: mount, chroot, exec (the helper behind root_command)."""
    root = spec["root"]

    def mount(*args):
        code, out = _run(["mount"] + list(args))
        if code != 0:
            sys.stderr.write("toolchain: mount %s failed: %s\n" % (" ".join(args), out))
            sys.exit(125)

    def inside(path):
        target = os.path.join(root, path.lstrip("/"))
        real = os.path.realpath(target)
        if real != os.path.realpath(root) and not real.startswith(os.path.realpath(root) + "/"):
            sys.stderr.write("toolchain: %s leaves the root\n" % target)
            sys.exit(125)
        return target

    mount("-t", "proc", "proc", inside("/proc"))
    mount("--rbind", "/dev", inside("/dev"))
    if spec["tmp"]:
        mount("-t", "tmpfs", "-o", "mode=1777", "tmpfs", inside("/tmp"))
    for source, target, read_only in spec["binds"]:
        point = inside(target)
        os.makedirs(point, exist_ok=True)
        mount("--bind", source, point)
        if read_only:
            mount("-o", "remount,bind,ro", point)
    os.chroot(root)
    os.chdir(spec["cwd"])
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        sys.stderr.write("toolchain: cannot run %s in the root: %s\n" % (argv[0], exc))
        sys.exit(127)


def sid_interpreters(marker):
    """[(version, argv prefix)] for the Pythons of a complete root (marker from sid_root):
    argv prefix + [script, args...] runs script under that Python in the root, in the
    checkout's root directory; give the process root_environ(env)."""
    found = []
    for minor in SID_MINORS:
        version = marker["interpreters"].get("3.%d" % minor)
        if version:
            found.append((version, root_command(SID, ["python3.%d" % minor], cwd=ROOT)))
    return found


# --- Node 22 and the judges ---------------------------------------------------------------

def _stamped(folder, wanted):
    return _read_json(os.path.join(folder, STAMP)) == wanted


def _npm_install(folder, packages, path_first=None):
    """npm install packages into folder/node_modules; (None) or reason."""
    npm = shutil.which("npm")
    if not npm:
        return "npm is not on PATH (the host's Node is needed once, to fetch Node %d)" % NODE_MAJOR
    if os.path.lexists(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    env = dict(os.environ, npm_config_update_notifier="false", npm_config_fund="false",
               npm_config_audit="false")
    if path_first:
        env["PATH"] = path_first + os.pathsep + env.get("PATH", "")
    code, out = _run([npm, "install", "--prefix", folder, "--no-audit", "--no-fund",
                      "--loglevel=error"] + packages, env=env)
    if code != 0:
        return "npm install %s failed (exit %d): %s" % (" ".join(packages), code, _tail(out))
    return None


def node22(log=None):
    """(path of a Node 22 binary, None) or (None, reason): the registry's node-linux-<arch>
    package, installed into .tools/node22."""
    log = _quiet(log)
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower())
    if not sys.platform.startswith("linux") or not arch:
        return None, "no Node package for %s %s" % (sys.platform, platform.machine())
    package = "node-linux-%s@%s" % (arch, NODE_VERSION)
    folder = os.path.join(TOOLS, "node%d" % NODE_MAJOR)
    binary = os.path.join(folder, "node_modules", "node-linux-%s" % arch, "bin", "node")
    wanted = {"packages": [package]}
    if not (_stamped(folder, wanted) and os.access(binary, os.X_OK)):
        log("node: npm install %s into %s" % (package, folder))
        why = _npm_install(folder, [package])
        if why:
            return None, why
        code, out = _run([binary, "--version"])
        if code != 0 or not out.strip().startswith("v%d." % NODE_MAJOR):
            return None, "%s --version answered %r (exit %d)" % (binary, out.strip()[:80], code)
        _write_json(os.path.join(folder, STAMP), wanted)
    return binary, None


def judges(log=None):
    """({"node": path, "conformance": argv, "inspector_cli": argv}, None) or (None, reason):
    the conformance suite and the Inspector, installed with Node 22's npm into .tools/judges."""
    log = _quiet(log)
    node, why = node22(log)
    if not node:
        return None, why
    folder = os.path.join(TOOLS, "judges")
    wanted = {"packages": JUDGE_PACKAGES, "node": node}
    tools = {"node": node,
             "conformance": [node, os.path.join(folder, CONFORMANCE_JS)],
             "inspector_cli": [node, os.path.join(folder, INSPECTOR_JS), "--cli"]}
    if not _stamped(folder, wanted):
        log("judges: npm install %s into %s" % (" ".join(JUDGE_PACKAGES), folder))
        why = _npm_install(folder, JUDGE_PACKAGES, path_first=os.path.dirname(node))
        if why:
            return None, why
        for name in ("conformance", "inspector_cli"):
            code, out = _run(tools[name] + ["--help"], env=judge_env())
            if code != 0:
                return None, "%s --help failed (exit %d): %s" % (name, code, _tail(out))
        _write_json(os.path.join(folder, STAMP), wanted)
    return tools, None


def mcpb(log=None):
    """(argv of the mcpb CLI, None) or (None, reason): MCPB, installed with Node 22's npm
    into .tools/mcpb. E.g. argv + ["validate", "manifest.json"]."""
    log = _quiet(log)
    node, why = node22(log)
    if not node:
        return None, why
    folder = os.path.join(TOOLS, "mcpb")
    wanted = {"packages": [MCPB], "node": node}
    argv = [node, os.path.join(folder, MCPB_JS)]
    if not _stamped(folder, wanted):
        log("mcpb: npm install %s into %s" % (MCPB, folder))
        why = _npm_install(folder, [MCPB], path_first=os.path.dirname(node))
        if why:
            return None, why
        code, out = _run(argv + ["--version"], env=judge_env())
        if code != 0 or out.strip() != MCPB.rsplit("@", 1)[1]:
            return None, "mcpb --version answered %r (exit %d)" % (out.strip()[:80], code)
        _write_json(os.path.join(folder, STAMP), wanted)
    return argv, None


def conformance_cmd(log=None):
    """(argv of the conformance suite's CLI, None) or (None, reason). E.g. argv + ["server",
    "--url", "http://127.0.0.1:PORT/mcp", "--scenario", "ping", "-o", DIR]."""
    tools, why = judges(log)
    return (tools["conformance"], None) if tools else (None, why)


def inspector_cli_cmd(log=None):
    """(argv of the Inspector CLI (launcher --cli), None) or (None, reason). E.g. argv +
    ["python3", "majordomus.pyz", "mcp", "--method", "tools/list"]."""
    tools, why = judges(log)
    return (tools["inspector_cli"], None) if tools else (None, why)


def judge_env(home=None, base=None):
    """The environment for the judges: Node 22 first on PATH; with home, HOME and the
    Inspector's catalog and client config inside it (so that nothing is written to ~)."""
    env = dict(os.environ if base is None else base)
    folder = os.path.join(TOOLS, "node%d" % NODE_MAJOR, "node_modules")
    bins = [os.path.join(folder, name, "bin") for name in sorted(os.listdir(folder))
            if name.startswith("node-linux-")] if os.path.isdir(folder) else []
    env["PATH"] = os.pathsep.join(bins + [env.get("PATH", "")])
    env["npm_config_update_notifier"] = "false"
    if home:
        env["HOME"] = home
        env["MCP_CATALOG_PATH"] = os.path.join(home, "mcp.json")
        env["MCP_CLIENT_CONFIG_PATH"] = os.path.join(home, "client.json")
    return env


# --- Chromium, chromedriver and axe-core ------------------------------------------------------

def _chromium_versions():
    """({"chromium": path, "chromedriver": path, "version": "Chromium N…", "driver_version":
    "N…", "launcher": path}, None) for the installed packages, or (None, reason)."""
    binary = CHROMIUM_BINARY if os.access(CHROMIUM_BINARY, os.X_OK) else shutil.which("chromium")
    driver = CHROMEDRIVER if os.access(CHROMEDRIVER, os.X_OK) else shutil.which("chromedriver")
    if not binary or not driver:
        return None, "%s is not installed" % ("chromium" if not binary else "chromedriver")
    code, out = _run([binary, "--version"], timeout=60)
    found = re.search(r"Chromium (\d+)[.\d]*", out)
    if code != 0 or not found:
        return None, "%s --version answered %r (exit %d)" % (binary, _tail(out, 1)[:80], code)
    code, out2 = _run([driver, "--version"], timeout=60)
    found2 = re.search(r"ChromeDriver (\d+)[.\d]*", out2)
    if code != 0 or not found2:
        return None, "%s --version answered %r (exit %d)" % (driver, _tail(out2, 1)[:80], code)
    if found.group(1) != found2.group(1):
        return None, "%s is %s but %s is %s: the majors must match" % (
            binary, found.group(0), driver, found2.group(0))
    return {"chromium": binary, "chromedriver": driver, "version": found.group(0),
            "driver_version": found2.group(0).split()[-1],
            "launcher": CHROMIUM_LAUNCHER if os.path.exists(CHROMIUM_LAUNCHER) else binary}, None


def chromium(log=None):
    """({"chromium": path, "chromedriver": path, "version": "Chromium N.…", "driver_version":
    "N.…", "launcher": "/usr/bin/chromium"}, None) or (None, reason): Debian's chromium and
    chromium-driver, installed with apt-get when they are not there yet (apt-get update first
    only when the install fails for want of package lists). "chromium" is the browser binary
    itself, which Debian's launcher script /usr/bin/chromium starts after sourcing
    /etc/chromium.d (flags that turn remote extensions on; the test browser wants none)."""
    log = _quiet(log)
    tools, why = _chromium_versions()
    if tools:
        return tools, None
    if not sys.platform.startswith("linux") or not shutil.which("apt-get"):
        return None, "%s, and there is no apt-get to install it" % why
    if os.geteuid() != 0:
        return None, "%s, and apt-get install needs root" % why
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    # Another apt-get (a second test command) holds the lock for a while: wait for it.
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends",
               "-o", "DPkg::Lock::Timeout=%d" % (SETUP_TIMEOUT // 2)] + CHROMIUM_PACKAGES
    log("chromium: %s (%s)" % (" ".join(install), why))
    code, out = _run(install, env=env)
    if code != 0 and re.search(r"Unable to locate package|has no installation candidate|"
                               r"is not available|Failed to fetch|404\s+Not Found", out):
        log("chromium: apt-get update (the package lists are missing or stale)")
        code, out2 = _run(["apt-get", "update", "-q",
                           "-o", "DPkg::Lock::Timeout=%d" % (SETUP_TIMEOUT // 2)], env=env)
        if code != 0:
            return None, "apt-get update failed (exit %d): %s" % (code, _tail(out2))
        code, out = _run(install, env=env)
    if code != 0:
        return None, "apt-get install %s failed (exit %d): %s" % (
            " ".join(CHROMIUM_PACKAGES), code, _tail(out))
    return _chromium_versions()


def axe_core(log=None):
    """(path of axe.min.js, None) or (None, reason): the npm package axe-core (AXE_CORE),
    installed with the host's npm into .tools/axe."""
    log = _quiet(log)
    folder = os.path.join(TOOLS, "axe")
    script = os.path.join(folder, AXE_JS)
    wanted = {"packages": [AXE_CORE]}
    if not (_stamped(folder, wanted) and os.path.isfile(script)):
        log("axe: npm install %s into %s" % (AXE_CORE, folder))
        why = _npm_install(folder, [AXE_CORE])
        if why:
            return None, why
        try:
            with open(script, encoding="utf-8", errors="replace") as handle:
                head = handle.read(400)
        except OSError as exc:
            return None, "%s: %s" % (script, exc)
        version = AXE_CORE.rsplit("@", 1)[1]
        if "axe v" + version not in head:
            return None, "%s does not say it is axe v%s: %r" % (script, version, head[:80])
        _write_json(os.path.join(folder, STAMP), wanted)
    return script, None


def main(args):
    if args[:1] == ["_enter"]:
        split = args.index("--")
        _enter(json.loads(args[1]), args[split + 1:])
        return 125
    refresh = "--refresh" in args
    what = ([a for a in args if a != "--refresh"] or ["status"])[0]
    say = lambda text: print(text, flush=True)   # noqa: E731
    started = time.time()
    code = 0
    if what in ("status", "sid"):
        if what == "sid":
            marker, why = sid_root(say, refresh=refresh)
        else:
            marker, why = sid_ready(), "not made yet (python3 tests/toolchain.py sid)"
        if marker:
            extra = marker.get("from_experimental")
            say("sid root %s: python %s, git %s (made %s in %s s%s)" % (
                SID, ", ".join(marker["interpreters"].values()), marker["git"], marker["made"],
                marker["seconds"], "; from experimental: " + " ".join(extra) if extra else ""))
        else:
            say("sid root: " + why)
            code = 1
    if what == "status":
        for folder in ("node%d" % NODE_MAJOR, "judges", "mcpb", "axe"):
            stamp = _read_json(os.path.join(TOOLS, folder, STAMP))
            say("%s: %s" % (folder, " ".join(stamp["packages"]) if stamp else "not installed"))
    elif what == "node":
        node, why = node22(say)
        say("node: %s" % (node or why))
        code = 0 if node else 1
    elif what == "judges":
        tools, why = judges(say)
        if tools:
            for name in ("node", "conformance", "inspector_cli"):
                say("%s: %s" % (name, tools[name] if name == "node" else " ".join(tools[name])))
        else:
            say("judges: " + why)
            code = 1
    elif what == "mcpb":
        argv, why = mcpb(say)
        say("mcpb: %s" % (" ".join(argv) if argv else why))
        code = 0 if argv else 1
    elif what == "chromium":
        tools, why = chromium(say)
        if tools:
            say("chromium: %s (%s); chromedriver: %s (%s)" % (
                tools["chromium"], tools["version"], tools["chromedriver"],
                tools["driver_version"]))
        else:
            say("chromium: " + why)
            code = 1
    elif what == "axe":
        script, why = axe_core(say)
        say("axe: %s" % (script or why))
        code = 0 if script else 1
    say("(%.1f s)" % (time.time() - started))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
