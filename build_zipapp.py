#!/usr/bin/env python3
"""Build majordomus.pyz: majordomus.py, __main__.py, schema/, share/allow/ and share/ui/ in one
file, with the module's bytecode and the data files already read (share/shipped.marshal).

Reproducible: entries sorted, timestamps and permissions fixed, so two builds of the same
tree are byte-identical. The archive also carries majordomus.pyc, compiled by the building
interpreter (a hash-checked pyc): zipimport uses it when the running interpreter has the
same bytecode version, which saves compiling the module at every start, and falls back to
majordomus.py on any other version. Usage: python3 build_zipapp.py [OUTPUT]

With --mcpb it also writes, beside OUTPUT, majordomus.mcpb (an MCP Bundle, manifest version
0.3: manifest.json and the archive, for one-click installation in Claude Desktop) and
server.json (its entry for the MCP registry, schema 2025-12-11, with the bundle's SHA-256),
both reproducible like the archive. --registry-name NAME and --download-url URL set the
registry entry's name and the bundle's address ({version} is replaced). --links prints the
README's one-click install links for VS Code and Cursor, made from CLIENTS (one
configuration per platform, each running the copy `majordomus install` puts in the user
folder).
Usage: python3 build_zipapp.py [--mcpb [--registry-name NAME] [--download-url URL]] [OUTPUT]
       python3 build_zipapp.py --links
"""
import hashlib
import importlib.util
import json
import marshal
import os
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
# The entry point runs the archive's pyc itself when it is this interpreter's bytecode:
# through zipimport the module's code would be read, inflated and unmarshalled twice (its
# spec asks for the file name, which loads the code), a tenth of a small session's start.
#
# A `hook` (SPEC §30) first runs the door, majordomus-hook.pyc: the module's hook_door and
# only what it uses (door()), compiled alone. With an owner live for its root it asks the
# owner and answers, having loaded a tenth of the module; else it hands what it read over to
# the module loaded whole (HOOK_LEFT), and the git listing the module will need, started
# (git runs while the module loads).
#
# The module is loaded with the cyclic collector paused, and what it made frozen (gc.freeze):
# its functions and classes live as long as the process, and the collections that unmarshalling
# a megabyte of code would set off cost a start most of a millisecond, for nothing.
MAIN = b"""import sys
import _frozen_importlib_external as _bootstrap


def _entry(name):
    loader = __loader__
    try:
        data = loader.get_data(loader.archive + "/" + loader.prefix + name)
    except OSError:
        return None
    return data if data[:4] == _bootstrap.MAGIC_NUMBER else None


def _door():
    if sys.argv[1:2] != ["hook"]:
        return None
    data = _entry("majordomus-hook.pyc")
    if data is None:
        return None
    import marshal
    space = {"__name__": "majordomus", "__builtins__": __builtins__}
    exec(marshal.loads(memoryview(data)[16:]), space)
    return space["hook_door"](sys.argv[1:])


def _load():
    loader = __loader__
    data = _entry("majordomus.pyc")
    if data is None:
        import majordomus
        majordomus.HOOK_LEFT = _LEFT
        return majordomus
    import gc
    import marshal
    module = type(sys)("majordomus")
    module.__file__ = loader.archive + "/" + loader.prefix + "majordomus.py"
    module.__loader__ = loader
    sys.modules["majordomus"] = module
    gc.disable()
    exec(marshal.loads(memoryview(data)[16:]), module.__dict__)
    gc.freeze()
    gc.enable()
    module.HOOK_LEFT = _LEFT
    return module


_LEFT = _door()
if type(_LEFT) is int:
    sys.exit(_LEFT)
_module = _load()
_module.exit_with(_module.main())
"""
# The hook's command (SPEC §30) imports this member rather than running the archive: CPython
# runs an archive through runpy, which imports importlib.util and contextlib first, some 5 ms
# of a hook that a client waits for at every edit. `python3 -S -c 'import sys; sys.path[0] =
# sys.argv[1]; import majordomus_hook' ARCHIVE hook ...` finds it by zipimport (the
# folder the client runs in is no longer on the path) and runs the entry point as `python3
# -S ARCHIVE hook ...` would.
#
# Both small members are also in the archive compiled (__main__.pyc, majordomus_hook.pyc,
# as majordomus.pyc is: hash-based, unchecked), which zipimport and runpy take where the
# interpreter's magic number is theirs: a process's first compile() costs it about 1 ms.
HOOK = b"""import sys

del sys.argv[0]                  # ['-c', ARCHIVE, 'hook', ...]: as the archive's argv
_main = __loader__.archive + "/" + __loader__.prefix + "__main__.py"
exec(__loader__.get_code("__main__"),
     {"__name__": "__main__", "__file__": _main, "__loader__": __loader__,
      "__builtins__": __builtins__})
"""
STAMP = (1980, 1, 1, 0, 0, 0)

# The client configurations the README's install links carry, one per platform: the copy
# `majordomus install` puts in the user folder (SPEC §32), serving the folder the client has
# open (VS Code and Cursor expand ${userHome} and ${workspaceFolder}; on Windows the user
# folder is %LOCALAPPDATA%, by default ${userHome}/AppData/Local, and Python is `py -3`).
# install_links() makes the links of each; a test decodes them back.
def client(command, head, folder):
    return {"name": "majordomus", "command": command,
            "args": head + ["${userHome}/%s/majordomus.pyz" % folder, "mcp", "--repo",
                            "${workspaceFolder}"]}


CLIENTS = {"Linux": client("python3", [], ".local/share/majordomus"),
           "macOS": client("python3", [], "Library/Application Support/majordomus"),
           "Windows": client("py", ["-3"], "AppData/Local/majordomus")}

# The bundle and its registry entry. The name must be in a namespace its publisher owns
# (io.github.<owner>/…), and the address is where the release puts the bundle: both are
# options of the build, these are the defaults.
REGISTRY_NAME = "io.github.majordomus/majordomus"
DOWNLOAD_URL = ("https://github.com/majordomus/majordomus/releases/download/v{version}/"
                "majordomus.mcpb")
REGISTRY_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
DESCRIPTION = "Serves a repository's AI layer (.ai/: rules, prompts, context) to agents, read-only"


def entries():
    """(archive name, bytes) of everything the archive carries, sorted by name."""
    found = {"__main__.py": MAIN}
    with open(os.path.join(HERE, "majordomus.py"), "rb") as handle:
        found["majordomus.py"] = source = handle.read()
    found["majordomus.pyc"] = bytecode(source)
    found["majordomus-hook.pyc"] = child("--door", source)
    found["majordomus_hook.py"] = HOOK
    found["__main__.pyc"] = child("--small=__main__.py", MAIN)
    found["majordomus_hook.pyc"] = child("--small=majordomus_hook.py", HOOK)
    found["share/shipped.marshal"] = child("--shipped", b"")
    for folder, suffixes in (("schema", (".yaml",)), ("share/allow", (".txt",)),
                             ("share/ui", (".css", ".js"))):
        for name in sorted(os.listdir(os.path.join(HERE, folder))):
            if name.endswith(suffixes):
                with open(os.path.join(HERE, folder, name), "rb") as handle:
                    found["%s/%s" % (folder, name)] = handle.read()
    return sorted(found.items())


def bytecode(source):
    """A hash-based, unchecked pyc of majordomus.py (PEP 552 header, flags 0b01): the
    source beside it in the archive is the one it was compiled from, so nothing needs to
    read and hash the source at every start.

    Compiled in a child under a fixed hash seed, whatever this process's seed: marshal
    writes a frozenset constant in its hash order, which moves with the seed (3.9, 3.10)."""
    return child("--bytecode", source)


def child(option, data):
    """What this script answers to `option` in a child under hash seed 0, `data` its input."""
    env = dict(os.environ, PYTHONHASHSEED="0")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), option],
                          input=data, stdout=subprocess.PIPE, env=env, check=True)
    return proc.stdout


def shipped():
    """share/shipped.marshal: schema/kinds.yaml and share/allow/ as the module reads them
    (its own readers, from this folder), in marshal's format 2, which has no
    back-references: the bytes depend on the files alone, and every Python 3 reads them."""
    sys.dont_write_bytecode = True
    sys.path.insert(0, HERE)
    import majordomus
    return marshal.dumps(majordomus.read_shipped(), 2)


def pyc(source, data):
    """A hash-based, unchecked pyc (PEP 552 header, flags 0b01) of `source`, whose code,
    marshalled, is `data`."""
    return (importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little")
            + importlib.util.source_hash(source) + data)


def small(source, name):
    """The pyc of a small member (__main__.py, majordomus_hook.py)."""
    return pyc(source, marshal.dumps(compile(source, name, "exec", dont_inherit=True)))


def compiled(source):
    """The pyc's bytes, in the child bytecode() runs. Every string the code holds is held
    once more while it is written: marshal flags an object for back-reference only when
    something else refers to it, and whether anything else in the process held an
    interned name moved with the files beside this script (3.10: one folder in two)."""
    code = compile(source, "majordomus.py", "exec", dont_inherit=True)
    held = list(strings_in(code))
    code = folded(source, code)
    held += strings_in(code)
    data = marshal.dumps(code)
    del held
    return pyc(source, data)


# The sections of majordomus.py whose functions an `mcp` start does not run: search, the
# brief, the rest of `context`, HTTP, Markdown, the pages and the command line. In the pyc
# each of their top-level functions is a stub holding the function's code, marshalled: the
# first call makes it the function's code and calls the function again. A start then
# unmarshals a third less code (SPEC §23; issue 31). The functions the hook's door runs stay
# whole, as they are its own.
FOLDED_SECTIONS = ("12", "13", "§33", "19", "20", "21", "22", "23")
STUB = ("def {0}(*args, **kwargs):\n    import marshal\n"
        "    {0}.__code__ = marshal.loads(b'')\n    return {0}(*args, **kwargs)\n")


def folded(source, code):
    """The module's code with the top-level functions of FOLDED_SECTIONS as stubs: plain
    `def`s (no decorator, no name bound twice), not what the door uses."""
    import ast
    tree = ast.parse(source)
    text = source.decode("utf-8") if isinstance(source, bytes) else source
    heads = [(number + 1, line.split(" ")[1].rstrip(".:"))
             for number, line in enumerate(text.split("\n"))
             if line.startswith("# ") and line.split(" ")[1][:1] in "123456789§"
             and line.split(" ")[1].rstrip(".:").lstrip("§").isdigit()]
    bound = {}
    for node in tree.body:
        for name in top_names(node):
            bound[name] = bound.get(name, 0) + 1
    door_uses = used_by(tree, DOOR)
    chosen = {}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.decorator_list:
            continue
        section = [label for line, label in heads if line < node.lineno]
        if (section and section[-1] in FOLDED_SECTIONS and bound[node.name] == 1
                and node.name not in door_uses):
            chosen[node.name] = node.lineno
    consts = []
    for const in code.co_consts:
        if (hasattr(const, "co_code") and chosen.get(const.co_name) == const.co_firstlineno
                and not const.co_freevars):
            const = stub(const)
        consts.append(const)
    return code.replace(co_consts=tuple(consts))


def stub(function):
    """A function's stub: its code, marshalled, in a body that unfolds it."""
    name = function.co_name
    made = compile(STUB.format(name), function.co_filename, "exec", dont_inherit=True)
    body = next(c for c in made.co_consts if hasattr(c, "co_code"))
    consts = tuple(marshal.dumps(function) if c == b"" else c for c in body.co_consts)
    return body.replace(co_consts=consts, co_firstlineno=function.co_firstlineno)


def used_by(tree, root):
    """The top-level names `root` uses, directly or through one another."""
    import ast
    defined = {}
    for node in tree.body:
        for name in top_names(node):
            defined.setdefault(name, []).append(node)
    wanted, queue = set(), [root]
    while queue:
        name = queue.pop()
        if name in wanted or name not in defined:
            continue
        wanted.add(name)
        for node in defined[name]:
            local = bound_inside(node)
            queue += [inner.id for inner in ast.walk(node)
                      if isinstance(inner, ast.Name) and inner.id not in local]
    return wanted


DOOR = "hook_door"     # the function the archive's entry point runs first for `hook`


def door(source):
    """The pyc of the hook's door: the module's top-level definitions DOOR uses, directly
    or through one another (functions, classes, the names they read, the imports), in the
    module's order, compiled as one module with the module's line numbers. A subset of
    majordomus.py, never code of its own: run as the module would run them."""
    import ast
    tree = ast.parse(source)
    wanted = used_by(tree, DOOR)
    body = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
            or any(name in wanted for name in top_names(node))]
    code = compile(ast.Module(body=body, type_ignores=[]), "majordomus.py", "exec",
                   dont_inherit=True)
    held = list(strings_in(code))
    data = marshal.dumps(code)
    del held
    return pyc(source, data)


def bound_inside(node):
    """The names a function or class binds for itself (parameters, assignments, imports,
    inner definitions; not those it declares global): reading one is not reading the
    module's name."""
    import ast
    if not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return set()
    bound, declared = set(), set()
    for inner in ast.walk(node):
        if inner is node:
            continue
        if isinstance(inner, ast.Name) and isinstance(inner.ctx, (ast.Store, ast.Del)):
            bound.add(inner.id)
        elif isinstance(inner, ast.arg):
            bound.add(inner.arg)
        elif isinstance(inner, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in inner.names)
        elif isinstance(inner, (ast.FunctionDef, ast.ClassDef)):
            bound.add(inner.name)
        elif isinstance(inner, (ast.Global, ast.Nonlocal)):
            declared.update(inner.names)
    if isinstance(node, ast.FunctionDef):
        arguments = node.args
        bound.update(a.arg for a in arguments.posonlyargs + arguments.args
                     + arguments.kwonlyargs)
    return bound - declared


def top_names(node):
    """The names a top-level statement of the module defines."""
    import ast
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [n.id for target in node.targets for n in ast.walk(target)
                if isinstance(n, ast.Name)]
    return []


def strings_in(value):
    """Every str a code object holds, through its constants and nested code."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, (tuple, frozenset)):
        for item in value:
            yield from strings_in(item)
    elif hasattr(value, "co_code"):
        for name in CODE_STRINGS:
            yield from strings_in(getattr(value, name, None))


CODE_STRINGS = ("co_consts", "co_names", "co_varnames", "co_freevars", "co_cellvars",
                "co_filename", "co_name", "co_qualname")


def build(output):
    # What a start reads (the bytecode, the data) is stored, not deflated; only the source,
    # read when an interpreter cannot use the bytecode, is.
    return write_zip(output, entries(), head=b"#!/usr/bin/env python3\n", mode=0o755,
                     deflated=lambda name: name.endswith(".py"))


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def install_links(config=CLIENTS["Linux"]):
    """The one-click install links of `config`: VS Code's (`vscode:mcp/install?` and the
    JSON, percent-encoded; the https redirect for pages that do not open `vscode:` links)
    and Cursor's (the name, and the configuration without it in base64)."""
    import base64
    from urllib.parse import quote
    vscode = "vscode:mcp/install?" + quote(compact(config), safe="")
    body = {key: value for key, value in config.items() if key != "name"}
    cursor = "cursor://anysphere.cursor-deeplink/mcp/install?name=%s&config=%s" % (
        quote(config["name"], safe=""),
        quote(base64.b64encode(compact(body).encode("utf-8")).decode("ascii"), safe=""))
    return {"vscode": vscode,
            "vscode-redirect": "https://insiders.vscode.dev/redirect?url=" + quote(vscode, safe=""),
            "cursor": cursor}


def described():
    """The module's version and its builtin MCP tools in tools/list order (capability-id
    order), as the registry declares them: what the bundle's manifest lists."""
    sys.dont_write_bytecode = True
    sys.path.insert(0, HERE)
    import majordomus
    tools = [{"name": d["exposure"]["mcp"]["tool"], "description": d["description"]}
             for d in sorted(majordomus.builtin_descriptors(), key=lambda d: d["id"])
             if "tool" in d["exposure"].get("mcp", {})]
    return {"version": majordomus.VERSION, "tools": tools}


def mcpb_manifest(info):
    """manifest.json of the bundle (MCPB manifest version 0.3)."""
    run = ["${__dirname}/majordomus.pyz", "mcp", "--repo", "${user_config.repository}"]
    return {
        "manifest_version": "0.3",
        "name": "majordomus",
        "display_name": "Majordomus",
        "version": info["version"],
        "description": DESCRIPTION + ".",
        "long_description": (
            "majordomus reads a repository's AI layer (`.ai/`: rules, prompts, profiles, a "
            "policy, skills, context documents) through the git index and serves it to an "
            "agent as MCP resources, prompts and read-only tools: what governs a path, a "
            "ranked search, one object, a list. It follows the layer as it changes and "
            "never writes in the repository. One file, the Python standard library only."),
        "author": {"name": "The majordomus authors"},
        "server": {
            "type": "python",
            "entry_point": "majordomus.pyz",
            "mcp_config": {
                "command": "python3",
                "args": run,
                # Windows has no python3: the launcher a python.org install puts on PATH
                "platform_overrides": {"win32": {"command": "py", "args": ["-3"] + run}},
            },
        },
        "tools": info["tools"],
        "tools_generated": False,
        "prompts_generated": True,       # the layer's own prompts, whatever it holds
        "keywords": ["ai-layer", "rules", "prompts", "context", "repository", "read-only"],
        "compatibility": {"platforms": ["darwin", "linux", "win32"],
                          "runtimes": {"python": ">=3.9"}},
        "user_config": {
            "repository": {
                "type": "directory",
                "title": "Repository",
                "description": "The repository whose AI layer (.ai/) to serve: the folder "
                               "holding .ai/manifest.yaml, or one inside it.",
                "required": True,
            },
        },
    }


def write_zip(output, members, head=b"", mode=0o644, deflated=lambda name: True):
    """A zip of (name, bytes) after `head`, reproducibly (fixed time and permissions), each
    member deflated where `deflated(name)` says, else stored; written to a unique temporary
    beside `output` and renamed into place (concurrent builds never leave a truncated file
    where a running test looks for it)."""
    handle, temporary = tempfile.mkstemp(prefix=".majordomus-", suffix=".zip",
                                         dir=os.path.dirname(os.path.abspath(output)))
    with os.fdopen(handle, "wb") as raw:
        raw.write(head)
        with zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, data in members:
                info = zipfile.ZipInfo(name, date_time=STAMP)
                info.compress_type = (zipfile.ZIP_DEFLATED if deflated(name)
                                      else zipfile.ZIP_STORED)
                info.external_attr = 0o644 << 16
                info.create_system = 3
                archive.writestr(info, data)
    os.chmod(temporary, mode)
    os.replace(temporary, output)
    return output


def build_mcpb(archive, registry_name=REGISTRY_NAME, download_url=DOWNLOAD_URL):
    """majordomus.mcpb and server.json beside `archive` (the built majordomus.pyz):
    (bundle path, server.json path)."""
    folder = os.path.dirname(os.path.abspath(archive))
    info = json.loads(child("--described", b"").decode("utf-8"))
    with open(archive, "rb") as handle:
        pyz = handle.read()
    manifest = json.dumps(mcpb_manifest(info), indent=2, ensure_ascii=False) + "\n"
    bundle = write_zip(os.path.join(folder, "majordomus.mcpb"),
                       [("manifest.json", manifest.encode("utf-8")), ("majordomus.pyz", pyz)])
    with open(bundle, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    entry = {
        "$schema": REGISTRY_SCHEMA,
        "name": registry_name,
        "description": DESCRIPTION,
        "version": info["version"],
        "packages": [{"registryType": "mcpb",
                      "identifier": download_url.replace("{version}", info["version"]),
                      "version": info["version"], "fileSha256": digest,
                      "transport": {"type": "stdio"}}],
    }
    server = os.path.join(folder, "server.json")
    with open(server, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(json.dumps(entry, indent=2, ensure_ascii=False) + "\n")
    return bundle, server


def options(argv):
    """(target, {option: value}) of the command line; exits 2 on a bad one."""
    flags, target, rest = {}, None, list(argv)
    while rest:
        word = rest.pop(0)
        if word in ("--mcpb", "--links"):
            flags[word] = True
        elif word in ("--registry-name", "--download-url") and rest:
            flags[word] = rest.pop(0)
        elif not word.startswith("-") and target is None:
            target = word
        else:
            sys.stderr.write("build_zipapp.py: unexpected argument '%s'\n%s" % (
                word, __doc__[__doc__.index("Usage: python3 build_zipapp.py [--mcpb"):]))
            sys.exit(2)
    return target or os.path.join(HERE, "majordomus.pyz"), flags


if __name__ == "__main__":
    if sys.argv[1:] == ["--bytecode"]:     # the child bytecode() runs: source in, pyc out
        sys.stdout.buffer.write(compiled(sys.stdin.buffer.read()))
        sys.exit(0)
    if sys.argv[1:] == ["--door"]:         # the child entries() runs: source in, door out
        sys.stdout.buffer.write(door(sys.stdin.buffer.read()))
        sys.exit(0)
    if sys.argv[1:2] and sys.argv[1].startswith("--small="):    # entries()'s child
        sys.stdout.buffer.write(small(sys.stdin.buffer.read(), sys.argv[1][len("--small="):]))
        sys.exit(0)
    if sys.argv[1:] == ["--shipped"]:      # the child entries() runs: the data already read
        sys.stdout.buffer.write(shipped())
        sys.exit(0)
    if sys.argv[1:] == ["--described"]:    # the child build_mcpb() runs: version and tools
        sys.stdout.buffer.write(compact(described()).encode("utf-8"))
        sys.exit(0)
    target, flags = options(sys.argv[1:])
    if flags.get("--links"):
        for platform, config in CLIENTS.items():
            for label, link in install_links(config).items():
                print("%s %s: %s" % (platform, label, link))
        sys.exit(0)
    print(build(target))
    if flags.get("--mcpb"):
        for path in build_mcpb(target, flags.get("--registry-name", REGISTRY_NAME),
                               flags.get("--download-url", DOWNLOAD_URL)):
            print(path)
