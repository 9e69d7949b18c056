"""The archives measured: this build, the earlier commit's (OLD_COMMIT), the floor of a
start-up and a bare archive."""
import os
import subprocess
import tempfile

from bench import common
from bench.common import (BUILD, PY, PYTHON, ROOT, child_env, exit_text, last_line, progress,
                          track)


def build():
    """Build majordomus.pyz when missing or older than majordomus.py; None or a reason."""
    if not os.path.exists(PY) and not os.path.exists(common.PYZ):
        return "majordomus.py is not there yet"
    stale = not os.path.exists(common.PYZ) or (
        os.path.exists(PY) and os.path.getmtime(common.PYZ) < os.path.getmtime(PY))
    if stale:
        if not os.path.exists(BUILD):
            return "build_zipapp.py is not there yet"
        progress("building majordomus.pyz")
        p = subprocess.run([PYTHON, BUILD], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=300)
        if p.returncode != 0 or not os.path.exists(common.PYZ):
            return "build_zipapp.py failed (exit %d): %s" % (
                p.returncode, last_line(p.stderr) or last_line(p.stdout))
    return None


def build_old(tmp):
    """majordomus.pyz of OLD_COMMIT, the last landed version, built under tmp from
    `git archive`: (path, None) or (None, the reason it could not be built)."""
    src = os.path.join(tmp, "old-src")
    out = os.path.join(tmp, "old.pyz")
    progress("building %s's majordomus.pyz" % common.OLD_COMMIT)
    try:
        os.makedirs(src)
        err = tempfile.TemporaryFile()
        try:
            archive = track(subprocess.Popen(["git", "-C", ROOT, "archive", common.OLD_COMMIT],
                                             stdout=subprocess.PIPE, stderr=err,
                                             env=child_env()))
            try:
                tar = subprocess.run(["tar", "-x", "-C", src], stdin=archive.stdout,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     timeout=120)
            finally:
                archive.stdout.close()
                rc = archive.wait(60)
            err.seek(0)
            if rc != 0:
                return None, "git archive %s: %s" % (common.OLD_COMMIT, last_line(err.read()))
        finally:
            err.close()
        if tar.returncode != 0:
            return None, "tar -x: %s" % last_line(tar.stderr)
        p = subprocess.run([PYTHON, os.path.join(src, "build_zipapp.py"), out], cwd=src,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        if p.returncode != 0 or not os.path.exists(out):
            return None, "%s build_zipapp.py: %s: %s" % (
                common.OLD_COMMIT, exit_text(p.returncode), last_line(p.stderr))
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "%s: %s" % (type(e).__name__, e)
    return out, None


# §23's floor: what no start-up can avoid. The archive's own entry point loads the module
# (build_zipapp.MAIN, its last line swapped), then one `git ls-files` is started before the
# declarations are read, every claimed file is read and parsed by the module's subset
# reader, and the first line read is answered. Nothing is checked, built, indexed or
# registered: a start that does its whole work takes longer.
FLOOR_BODY = r"""import os
m = _load()
root = m.find_root(".")
listing = m.git_started(root, *m.LS_FILES)
decl = m.read_declarations(root, "vcs")
claims = m.discover_files(decl, m.Counters(), listing)[0]
for path, source in claims:
    handle = os.open(decl.full(path), os.O_RDONLY)
    try:
        text = os.read(handle, os.fstat(handle).st_size + 1).decode("utf-8")
    finally:
        os.close(handle)
    try:
        if path.endswith(".md"):
            m.split_front_matter(text)
        elif path.endswith((".yaml", ".yml")):
            m.parse_subset(text)
    except m.SubsetError:
        pass
sys.stdin.buffer.readline()
sys.stdout.write('{"jsonrpc":"2.0","id":1,"result":{}}\n')
sys.stdout.flush()
sys.stdin.buffer.read()
"""


FLOOR_LAST = b"sys.exit(_load().main())\n"


def build_floor(tmp):
    """The built archive with its entry point ending in FLOOR_BODY: (path, None), or (None,
    why)."""
    import zipfile
    out = os.path.join(tmp, "floor.pyz")
    try:
        with zipfile.ZipFile(common.PYZ) as src, zipfile.ZipFile(out, "w") as dst:
            main = src.read("__main__.py")
            if "majordomus.pyc" not in src.namelist() or not main.endswith(FLOOR_LAST):
                return None, "the archive's entry point is not the one this floor extends"
            main = main[:-len(FLOOR_LAST)] + FLOOR_BODY.encode()
            for info in src.infolist():
                dst.writestr(info, main if info.filename == "__main__.py"
                             else src.read(info))
    except (OSError, KeyError, zipfile.BadZipFile) as e:
        return None, "%s: %s" % (type(e).__name__, e)
    return out, None


# What `python3 an-archive.pyz` costs before the archive's first line runs: CPython runs a
# zip through runpy (importlib.util, contextlib, functools, collections) and zipimport,
# which `-c pass` never loads. The bare archive answers the first line and nothing else.
BARE_MAIN = r"""import sys
sys.stdin.buffer.readline()
sys.stdout.write('{"jsonrpc":"2.0","id":1,"result":{}}\n')
sys.stdout.flush()
sys.stdin.buffer.read()
"""


def build_bare(tmp):
    """An archive holding only BARE_MAIN as its __main__.py: its path, or None."""
    import zipfile
    out = os.path.join(tmp, "bare.pyz")
    try:
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
            dst.writestr("__main__.py", BARE_MAIN)
    except OSError:
        return None
    return out
