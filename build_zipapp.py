#!/usr/bin/env python3
"""Build majordomus.pyz: majordomus.py, __main__.py, schema/, share/allow/ and share/ui/ in one
file.

Reproducible: entries sorted, timestamps and permissions fixed, so two builds of the same
tree are byte-identical. The archive also carries majordomus.pyc, compiled by the building
interpreter (a hash-checked pyc): zipimport uses it when the running interpreter has the
same bytecode version, which saves compiling the module at every start, and falls back to
majordomus.py on any other version. Usage: python3 build_zipapp.py [OUTPUT]
"""
import importlib.util
import marshal
import os
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
MAIN = b"import sys\nimport majordomus\nsys.exit(majordomus.main())\n"
STAMP = (1980, 1, 1, 0, 0, 0)


def entries():
    """(archive name, bytes) of everything the archive carries, sorted by name."""
    found = {"__main__.py": MAIN}
    with open(os.path.join(HERE, "majordomus.py"), "rb") as handle:
        found["majordomus.py"] = source = handle.read()
    found["majordomus.pyc"] = bytecode(source)
    for folder, suffixes in (("schema", (".yaml",)), ("share/allow", (".txt",)),
                             ("share/ui", (".css", ".js"))):
        for name in sorted(os.listdir(os.path.join(HERE, folder))):
            if name.endswith(suffixes):
                with open(os.path.join(HERE, folder, name), "rb") as handle:
                    found["%s/%s" % (folder, name)] = handle.read()
    return sorted(found.items())


def bytecode(source):
    """A hash-based, source-checked pyc of majordomus.py (PEP 552 header, flags 0b11)."""
    code = compile(source, "majordomus.py", "exec", dont_inherit=True)
    return (importlib.util.MAGIC_NUMBER + (3).to_bytes(4, "little")
            + importlib.util.source_hash(source) + marshal.dumps(code))


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
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                info.create_system = 3
                archive.writestr(info, data)
    os.chmod(temporary, 0o755)
    os.replace(temporary, output)
    return output


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "majordomus.pyz")
    print(build(target))
