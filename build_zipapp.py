#!/usr/bin/env python3
"""Build majordomus.pyz: majordomus.py, __main__.py, schema/, share/allow/ and share/ui/ in one
file, with the module's bytecode and the data files already read (share/shipped.marshal).

Reproducible: entries sorted, timestamps and permissions fixed, so two builds of the same
tree are byte-identical. The archive also carries majordomus.pyc, compiled by the building
interpreter (a hash-checked pyc): zipimport uses it when the running interpreter has the
same bytecode version, which saves compiling the module at every start, and falls back to
majordomus.py on any other version. Usage: python3 build_zipapp.py [OUTPUT]
"""
import importlib.util
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
MAIN = b"""import sys
import _frozen_importlib_external as _bootstrap


def _load():
    loader = __loader__
    name = loader.archive + "/" + loader.prefix + "majordomus.pyc"
    try:
        data = loader.get_data(name)
    except OSError:
        data = b""
    if data[:4] != _bootstrap.MAGIC_NUMBER:
        import majordomus
        return majordomus
    import marshal
    module = type(sys)("majordomus")
    module.__file__ = loader.archive + "/" + loader.prefix + "majordomus.py"
    module.__loader__ = loader
    sys.modules["majordomus"] = module
    exec(marshal.loads(memoryview(data)[16:]), module.__dict__)
    return module


sys.exit(_load().main())
"""
STAMP = (1980, 1, 1, 0, 0, 0)


def entries():
    """(archive name, bytes) of everything the archive carries, sorted by name."""
    found = {"__main__.py": MAIN}
    with open(os.path.join(HERE, "majordomus.py"), "rb") as handle:
        found["majordomus.py"] = source = handle.read()
    found["majordomus.pyc"] = bytecode(source)
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


def compiled(source):
    """The pyc's bytes, in the child bytecode() runs. Every string the code holds is held
    once more while it is written: marshal flags an object for back-reference only when
    something else refers to it, and whether anything else in the process held an
    interned name moved with the files beside this script (3.10: one folder in two)."""
    code = compile(source, "majordomus.py", "exec", dont_inherit=True)
    held = list(strings_in(code))
    data = marshal.dumps(code)
    del held
    return (importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little")
            + importlib.util.source_hash(source) + data)


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
    # A unique temporary beside the target, renamed into place: concurrent builds never
    # leave a truncated archive where a running test looks for it.
    handle, temporary = tempfile.mkstemp(prefix=".majordomus-", suffix=".pyz",
                                         dir=os.path.dirname(os.path.abspath(output)))
    with os.fdopen(handle, "wb") as raw:
        raw.write(b"#!/usr/bin/env python3\n")
        with zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, data in entries():
                info = zipfile.ZipInfo(name, date_time=STAMP)
                # What a start reads (the bytecode, the data) is stored, not deflated;
                # only the source, read when an interpreter cannot use the bytecode, is.
                info.compress_type = (zipfile.ZIP_DEFLATED if name.endswith(".py")
                                      else zipfile.ZIP_STORED)
                info.external_attr = 0o644 << 16
                info.create_system = 3
                archive.writestr(info, data)
    os.chmod(temporary, 0o755)
    os.replace(temporary, output)
    return output


if __name__ == "__main__":
    if sys.argv[1:] == ["--bytecode"]:     # the child bytecode() runs: source in, pyc out
        sys.stdout.buffer.write(compiled(sys.stdin.buffer.read()))
        sys.exit(0)
    if sys.argv[1:] == ["--shipped"]:      # the child entries() runs: the data already read
        sys.stdout.buffer.write(shipped())
        sys.exit(0)
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "majordomus.pyz")
    print(build(target))
