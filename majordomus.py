#!/usr/bin/env python3
"""majordomus: a read-only, data-driven reader of a repository's AI layer (.ai/).

It finds the root, reads the manifest and the declared knowledge sources, discovers files
through the git index, reads each by its kind, and serves the resulting index over MCP
(stdio `majordomus mcp`, and HTTP at `/mcp`), REST on loopback (`majordomus serve`) and
the command line; a long-lived process follows the layer as it changes. The contract is
SPEC.md; section numbers (§) below refer to it.

Sections, in data-flow order: each uses only the sections above it (tests/test_sections.py
holds the module to that, and to this table):
   1. Errors
   2. JSON
   3. Logging
   4. Platform (§24)
   5. The YAML subset (§3)
   6. Embedded data
   7. Glob patterns (§4.3)
   8. Root, manifest and sources (§2, §4.2)
   9. Discovery (§4.3)
  10. Context documents (§20)
  11. The index (§5)
  12. Ranked search (§21)
  13. The brief (§26)
  14. The capability registry (§7)
  15. Execution and resolution (§7.5, §7.6, §8)
  16. The live layer (§15)
  17. Sessions and the method table (§9, §15.4, §17, §18, §27)
  18. The stdio transport (§9.2)
  19. HTTP heads and guards (§10)
  20. Markdown to HTML (§22)
  21. The pages (§22)
  22. HTTP connections (§10, §19, §22)
  23. The command line (§11)
  24. Sharing (§27)
  25. Entry point

Standard library only; imports that only one command needs are made inside it, so that
the `mcp` path stays fast to start: neither `re` nor `json` is imported by a small
session (JSON goes through the json module's C half; a regular expression is compiled
where a text test cannot do, and then `re` is imported there).
"""

import math
import os
import stat
import sys
import time

VERSION = "0.1.0"


# ---------------------------------------------------------------------------------------
# 1. Errors: exit codes, the four ways a capability fails, and the few tests that every
#    text and number from outside passes (written with str methods, not `re`).
# ---------------------------------------------------------------------------------------

EXIT_OK, EXIT_USAGE, EXIT_CONTRACT, EXIT_MISSING, EXIT_INTERNAL = 0, 2, 10, 12, 13
EXIT_REFUSED_PATH = 15    # `context` only (§20.2)
EXIT_DRIFT = 11           # `context check-sync`: a projection out of date (§33)


class Fatal(Exception):
    """A run-ending error: printed once as `majordomus: <message>`, exit `code`."""

    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


class UsageError(Exception):
    """A command-line usage error (exit 2); `usage` is the usage line of the command."""

    def __init__(self, message, usage):
        Exception.__init__(self, message)
        self.message = message
        self.usage = usage


class CapabilityError(Exception):
    """A transport-neutral failure of a capability; str() is its Display text (§7.5).
    `detail` items follow the message, each after `; ` (a line-oriented transport prints
    them on lines of their own before `head`); `data`, when set, is carried where the
    transport has room for it (an HTTP error body)."""
    prefix = "internal"

    def __init__(self, message, data=None, detail=()):
        self.head = message
        self.message = message + "".join("; " + item for item in detail)
        Exception.__init__(self, "%s: %s" % (self.prefix, self.message))
        self.data = data


class InvalidInput(CapabilityError):
    prefix = "invalid input"


class NotFound(CapabilityError):
    prefix = "not found"


class Refused(CapabilityError):
    prefix = "refused"


class RefusedPath(Refused):
    """A path that context resolution refuses (absolute, or leaving the repository): on the
    CLI the shell tool's exit 15 (§20.2)."""


class Internal(CapabilityError):
    prefix = "internal"


# Text tests written with str methods, not regular expressions: importing `re` (and `json`,
# which imports it) costs a small session's start-up a third of its time (§23).
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_DIGITS = "0123456789"
_LETTERS = _LOWER + _LOWER.upper()
_KEY_CHARS = _LETTERS + _DIGITS + "_-"


def is_integer_text(text):
    """`-?[0-9]+`, ASCII digits only."""
    digits = text[1:] if text[:1] == "-" else text
    return digits.isdigit() and digits.isascii()


def is_name(text, first, rest):
    """`[first][rest]*`: a non-empty text of those characters."""
    return bool(text) and text[0] in first and not text.strip(rest)


def has_no_space(text):
    """Non-empty, and no whitespace character anywhere."""
    return bool(text) and text.split() == [text]


_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escaped(text):
    """`text` with each character that is not printable written as an escape (`\\x1b`,
    `\\n`, `\\u202e` …): what another program said (a peer's name, intent or scope, a
    client's method), shown on a terminal or in a log, never moves the cursor, colours the
    screen or forges a line (§25.1)."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _ESCAPES.get(char) or (
        "\\x%02x" % ord(char) if ord(char) < 0x100 else "\\u%04x" % ord(char)
        if ord(char) < 0x10000 else "\\U%08x" % ord(char)) for char in text)


def uri_safe(text):
    """`[^\\s\\x00-\\x1f\\x7f]+`: non-empty, no whitespace or control character."""
    if not has_no_space(text):
        return False
    if text.isascii():
        return text.isprintable()
    return all(char > "\x1f" and char != "\x7f" for char in text)


# Every number from outside (an HTTP Content-Length, a query's or the command line's
# integer) is read by parse_number (§25): ASCII digits only, and at most NUMBER_DIGITS of
# them, counted before int() converts anything (int() reads other digits, `²` or `٣`, and
# refuses 4,300 digits with an error of its own).
NUMBER_DIGITS = 18           # every number of 18 digits fits in 64 bits
JSON_INT_DIGITS = 4300       # an integer in a JSON frame: int()'s own bound, on every Python


class NumberError(ValueError):
    """Not a number this program reads; `over`: digits only, more of them than the bound
    (a number too large for anything it counts)."""

    def __init__(self, message, over=False):
        ValueError.__init__(self, message)
        self.over = over


def parse_number(text, signed=False, digits=NUMBER_DIGITS):
    """The one parser of a number from outside: `[0-9]+` (`-?[0-9]+` when `signed`), at
    most `digits` digits; NumberError otherwise."""
    body = text[1:] if signed and text[:1] == "-" else text
    if not (body.isdigit() and body.isascii()):
        raise NumberError("not a number")
    if len(body) > digits:
        raise NumberError("%d digits, over the %d-digit bound" % (len(body), digits), True)
    return int(text)


def number_or(text, default, digits=NUMBER_DIGITS):
    """parse_number(text), or `default` where text is not such a number (a value another
    process of this program wrote, read back: anything else counts as absent)."""
    try:
        return parse_number(text, digits=digits)
    except NumberError:
        return default


def _os_reason(exc):
    """A short reason for an OS or decoding error, without a traceback or a full path."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def _traceback_text():
    """The current exception's traceback for a debug log line; never raises itself."""
    try:
        import traceback
        return traceback.format_exc()
    except Exception:  # e.g. the source of a frame cannot be read any more
        return "(traceback unavailable)"


# ---------------------------------------------------------------------------------------
# 2. JSON: through the json module's C half (_json), which imports nothing; the json
#    module itself only where the C half cannot do (a malformed document's exact error
#    message). No encoder writes NaN or Infinity (they are not JSON: allow_nan is off
#    everywhere), and a tree deeper than the C half recurses is written by _json_into,
#    which does not recurse; a frame's integers are bounded before int() reads them.
# ---------------------------------------------------------------------------------------

_ENCODERS = {}


def _not_json(value):
    raise TypeError("Object of type %s is not JSON serializable" % type(value).__name__)


def _encoder(separators, ascii_only, sort_keys):
    key = (separators, ascii_only, sort_keys)
    encode = _ENCODERS.get(key)
    if encode is None:
        encode = _ENCODERS[key] = _make_encoder(separators, ascii_only, sort_keys)
    return encode


def _make_encoder(separators, ascii_only, sort_keys):
    try:
        import _json
        strings = _json.encode_basestring_ascii if ascii_only else _json.encode_basestring
        chunks = _json.make_encoder(None, _not_json, strings, None, separators[1],
                                    separators[0], sort_keys, False, False)
        probe = {"b": [1, 2.5, True, None, "\u00e9\""], "a": {}}
        item, key = separators
        text = '"\\u00e9\\""' if ascii_only else '"\u00e9\\""'
        pairs = ['"b"' + key + "[" + item.join(["1", "2.5", "true", "null", text]) + "]",
                 '"a"' + key + "{}"]
        expected = "{" + item.join(sorted(pairs) if sort_keys else pairs) + "}"
        if "".join(chunks(probe, 0)) == expected:
            return lambda value: "".join(chunks(value, 0))
    except Exception:  # an interpreter without the C half, or one whose half differs
        pass
    import json
    return lambda value: json.dumps(value, separators=separators, ensure_ascii=ascii_only,
                                    sort_keys=sort_keys, allow_nan=False)


def json_compact(value, ascii_only=False, sort_keys=False):
    """json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)."""
    try:
        return _encoder((",", ":"), ascii_only, sort_keys)(value)
    except RecursionError:   # deeper than the C half recurses (§25)
        out = []
        _json_into(value, out, _string_encoder(ascii_only), ",", ":", None, sort_keys)
        return "".join(out)


def json_default(value):
    """json.dumps(value), the json module's defaults (", ", ": ", ASCII)."""
    return _encoder((", ", ": "), True, False)(value)


def json_pretty(value):
    """json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False), without the json
    module, and at any depth."""
    out = []
    try:
        _pretty_into(value, out, "\n", _string_encoder())
    except RecursionError:   # deeper than Python recurses (§25)
        out = []
        _json_into(value, out, _string_encoder(), ",", ": ", "  ", False)
    return "".join(out)


def _pretty_into(value, out, newline, string):
    """_json_into's indented form by recursion: twice as fast, as deep as Python recurses."""
    if isinstance(value, str):
        out.append(string(value))
    elif value is None or value is True or value is False:
        out.append("null" if value is None else "true" if value else "false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        if value != value or value in _INFINITIES:
            raise ValueError("Out of range float values are not JSON compliant")
        out.append(float.__repr__(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner, sep = newline + "  ", "{"
        for key, item in value.items():
            if not isinstance(key, str):
                key = json_default(key).strip('"')
            out.append(sep + inner + string(key) + ": ")
            _pretty_into(item, out, inner, string)
            sep = ","
        out.append(newline + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner, sep = newline + "  ", "["
        for item in value:
            out.append(sep + inner)
            _pretty_into(item, out, inner, string)
            sep = ","
        out.append(newline + "]")
    else:
        _not_json(value)


_INFINITIES = (float("inf"), float("-inf"))


def _string_encoder(ascii_only=False):
    key = "ascii" if ascii_only else "string"
    encode = _ENCODERS.get(key)
    if encode is None:
        try:
            import _json
            encode = _json.encode_basestring_ascii if ascii_only else _json.encode_basestring
        except ImportError:
            import json
            encode = (json.encoder.py_encode_basestring_ascii if ascii_only
                      else json.encoder.py_encode_basestring)
        _ENCODERS[key] = encode
    return encode


_END = object()


def _json_into(value, out, string, comma, colon, indent, sort_keys):
    """Append the JSON text of `value` to `out`, with an explicit stack instead of recursion
    (a tree of any depth): `indent` None for one line, else one level's indentation."""
    stack = []      # [iterator, is a mapping, what goes before an item, closing text, first]
    while True:
        if type(value) is str:
            out.append(string(value))
        elif value is None or value is True or value is False:
            out.append("null" if value is None else "true" if value else "false")
        elif isinstance(value, int):
            out.append(int.__repr__(value))
        elif isinstance(value, float):
            if value != value or value in _INFINITIES:
                raise ValueError("Out of range float values are not JSON compliant")
            out.append(float.__repr__(value))
        elif isinstance(value, str):
            out.append(string(value))
        elif isinstance(value, (dict, list, tuple)) and value:
            mapping = isinstance(value, dict)
            if indent is None:
                inner = closing = ""
            else:
                inner = "\n" + indent * (len(stack) + 1)
                closing = "\n" + indent * len(stack)
            items = value.items() if mapping else value
            if mapping and sort_keys:
                items = sorted(items)
            out.append("{" if mapping else "[")
            stack.append([iter(items), mapping, inner, closing + ("}" if mapping else "]"),
                          True])
        elif isinstance(value, (dict, list, tuple)):
            out.append("{}" if isinstance(value, dict) else "[]")
        else:
            _not_json(value)
        while stack:
            frame = stack[-1]
            item = next(frame[0], _END)
            if item is _END:
                out.append(frame[3])
                stack.pop()
                continue
            before = frame[2] if frame[4] else comma + frame[2]
            frame[4] = False
            if frame[1]:
                key, value = item
                if not isinstance(key, str):
                    key = json_default(key).strip('"')
                out.append(before + string(key) + colon)
            else:
                value = item
                out.append(before)
            break
        else:
            return


def _json_int(text):
    """An integer of a JSON frame, bounded before int() reads it (the same bound on every
    interpreter: before 3.11 int() has none, and reads a megabyte of digits for seconds)."""
    if len(text) > JSON_INT_DIGITS:
        raise ValueError("an integer of %d digits is over the %d-digit bound"
                         % (len(text), JSON_INT_DIGITS))
    return int(text)


class _ScanContext:
    """What the C scanner reads of a json.JSONDecoder."""
    strict = True
    object_hook = object_pairs_hook = array_hook = None     # array_hook: 3.15
    parse_float, parse_int = float, staticmethod(_json_int)
    memo = None

    @staticmethod
    def parse_constant(name):
        raise ValueError("%s is not JSON" % name)


def json_loads(text):
    """json.loads(text) refusing NaN and Infinity; a malformed text raises exactly what
    the json module raises (it is asked for the message)."""
    scan = _ENCODERS.get("scan")
    if scan is None:
        try:
            import _json
            scan = _json.make_scanner(_ScanContext())
            if scan('{"a": [1, 2.5, "\\u00e9"]}', 0) != ({"a": [1, 2.5, "\u00e9"]}, 25):
                scan = False
        except Exception:   # no C half, or one that reads another attribute of a decoder
            scan = False
        _ENCODERS["scan"] = scan
    if scan:
        start = len(text) - len(text.lstrip(" \t\n\r"))
        try:
            value, end = scan(text, start)
        except Exception:  # StopIteration, ValueError; 3.10-3.11 may raise SystemError
            value, end = None, -1
        if end >= 0 and not text[end:].strip(" \t\n\r"):
            return value
    import json
    return json.loads(text, parse_constant=_ScanContext.parse_constant, parse_int=_json_int)


# ---------------------------------------------------------------------------------------
# 3. Logging: one line an event, `<time> <LEVEL> <message> key=value …`, on stderr only.
# ---------------------------------------------------------------------------------------

LOG_LEVELS = {"off": 0, "error": 1, "warn": 2, "info": 3, "debug": 4, "trace": 5}
_LOG_NAMES = {1: "ERROR", 2: "WARN", 3: "INFO", 4: "DEBUG", 5: "TRACE"}
_log_level = LOG_LEVELS.get(os.environ.get("MAJORDOMUS_LOG", "").strip().lower(), 3)


def log(level, message, **fields):
    """Write one log line `<time> <LEVEL> <message> key=value …` to stderr."""
    if level > _log_level:
        return
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % (now % 1 * 1000)
    parts = [stamp, _LOG_NAMES[level], escaped(message)]
    for key, value in fields.items():
        text = value if isinstance(value, str) else json_default(value)
        if not has_no_space(text) or '"' in text or "=" in text or "\\" in text or (
                not text.isprintable()):
            text = escaped(json_compact(text))     # (JSON leaves DEL and C1 as they are)
        parts.append("%s=%s" % (key, text))
    write_stderr(" ".join(parts) + "\n")   # a closed stderr must never end a session


ERROR, WARN, INFO, DEBUG, TRACE = 1, 2, 3, 4, 5


def write_stderr(text):
    """Log lines and fatal messages as UTF-8 bytes, whatever the console's code page; a
    closed stderr never ends anything."""
    stream = sys.stderr
    try:
        buffer = getattr(stream, "buffer", None)
        if buffer is None:
            stream.write(text)
            stream.flush()
            return
        buffer.write(text.encode("utf-8", "backslashreplace"))
        buffer.flush()
    except (AttributeError, OSError, ValueError):
        pass


# ---------------------------------------------------------------------------------------
# 4. Platform (§24): what Linux, macOS and Windows do differently is decided in these few
#    functions, and only here; the rest of the module calls them and never asks the platform.
# ---------------------------------------------------------------------------------------

def read_flags():
    """How a file is opened to be read: never through a symlink, and as bytes (without
    O_BINARY the Windows C runtime turns CRLF into LF and stops at a 0x1A byte)."""
    return os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


READ_FLAGS = read_flags()
# A file is opened without blocking: a FIFO (or a device) swapped in after its lstat opens
# at once, and its fstat refuses it (§25). Nothing else changes for a regular file.
PLAIN_FLAGS = READ_FLAGS | getattr(os, "O_NONBLOCK", 0)
FOLLOW_FLAGS = PLAIN_FLAGS & ~getattr(os, "O_NOFOLLOW", 0)    # git's control files only
S_ISREG = stat.S_ISREG
# What open() with O_NOFOLLOW says of a symlink: ELOOP (Linux, macOS), EMLINK (FreeBSD).


def _link_errnos():
    import errno       # (loaded by os already)
    return (errno.ELOOP, getattr(errno, "EMLINK", errno.ELOOP))


_LINK_ERRNOS = _link_errnos()
FILE_LIMIT = 4194304


class NotPlain(Exception):
    """A path that is not a plain file this program reads (§5.1 check 2): `code` symlink,
    not_a_file, unreadable or oversized, and §5.1's message."""

    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code, self.message = code, message


def read_plain(path, info=None, limit=FILE_LIMIT, what="sources", follow=False):
    """(bytes, fstat) of a regular file: the one place that decides whether a file may be
    read (§5.1, §25), for every file of the layer and every declaration, at start and
    live. Never through a symlink (`follow`: git's own control files, which git may
    link), never a FIFO, socket or device: refused by the lstat (`info`, when the caller
    has it), and again by fstat on the descriptor, which was opened without following a
    link and without blocking, in case the path changed in between. At most `limit`
    bytes; `what` the files are, in the symlink's message."""
    try:
        if info is None:
            info = os.stat(path) if follow else os.lstat(path)
        if not S_ISREG(info.st_mode) or info.st_size > limit:
            _not_plain(info, limit, what)
        handle = os.open(path, FOLLOW_FLAGS if follow else PLAIN_FLAGS)
    except OSError as exc:
        if exc.errno in _LINK_ERRNOS and not follow:
            raise NotPlain("symlink", "a symlink is not read; %s are regular files" % what)
        raise NotPlain("unreadable", _os_reason(exc))
    try:
        info = os.fstat(handle)
        if not S_ISREG(info.st_mode) or info.st_size > limit:
            _not_plain(info, limit, what)
        data = read_whole(handle, info.st_size, limit)
    except OSError as exc:
        raise NotPlain("unreadable", _os_reason(exc))
    finally:
        os.close(handle)
    if len(data) > limit:
        raise NotPlain("oversized", "%d bytes, over the %d byte limit" % (len(data), limit))
    return data, info


# Why a file is not read when linked_folder finds a symlink on its way.
LINKED_FOLDER = "a symlink is not read; the folder %s on its path is one"


def linked_folder(root, relative, seen):
    """The first folder on the way to `relative` (`/`-separated, under the canonical
    `root`) that is a symlink, or None: nothing is read through one either (§25). `seen`
    keeps each folder's answer, so that a build asks each folder once."""
    folder = relative.rpartition("/")[0]
    found = seen.get(folder, False)
    if found is not False:
        return found
    found, prefix = None, ""
    for name in folder.split("/") if folder else ():
        prefix = prefix + "/" + name if prefix else name
        known = seen.get(prefix, False)
        if known is False:
            try:
                mode = os.lstat(native_path(root, prefix)).st_mode
            except OSError:
                mode = 0
            known = seen[prefix] = prefix if stat.S_ISLNK(mode) else None
        if known is not None:
            found = known
            break
    seen[folder] = found
    return found


def _not_plain(info, limit, what):
    """Raise the NotPlain a file of this lstat or fstat is (it is not a plain file)."""
    if stat.S_ISLNK(info.st_mode):
        raise NotPlain("symlink", "a symlink is not read; %s are regular files" % what)
    if not stat.S_ISREG(info.st_mode):
        raise NotPlain("not_a_file", "not a regular file")
    raise NotPlain("oversized", "%d bytes, over the %d byte limit" % (info.st_size, limit))


def read_whole(handle, size, limit=FILE_LIMIT):
    """The bytes of an open regular file of `size` bytes, at most `limit` + 1: a regular
    file reads short only at its end, so one read of size+1 bytes returning fewer is the
    whole file; more means it grew, so read on."""
    data = os.read(handle, size + 1)
    while len(data) > size and len(data) <= limit:
        chunk = os.read(handle, limit + 1 - len(data))
        if not chunk:
            break
        data += chunk
    return data


def write_whole(handle, data):
    """Write all of `data` to an open file (os.write may write less than it is given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(handle, view):]


def folder_flags():
    """How a folder is opened so that a sweep stats its files by name in it (fstatat: the
    kernel walks the folder's path once, not once per file); None where os.stat takes no
    folder handle (Windows). O_PATH (Linux) opens a folder that may be searched but not
    listed, as lstat by the whole path would pass through it."""
    if os.stat not in os.supports_dir_fd or os.stat not in os.supports_follow_symlinks:
        return None
    return os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_PATH", 0)


FOLDER_FLAGS = folder_flags()

# A file whose mtime is within this of the moment it was read is racily clean (§15.2): on
# a 1-2 s clock (HFS+, FAT, SMB) an in-place save in that second keeps size and mtime.
RACY_NS = 2000000000
# Files the walk never discovers: macOS' Finder and AppleDouble files, Windows' folder files.
_NEVER_WALKED = frozenset((".DS_Store", "Thumbs.db", "desktop.ini"))
_REPARSE_TAGS = hasattr(os.stat_result, "st_reparse_tag")     # Windows' lstat has them
MOUNT_POINT_TAG = getattr(stat, "IO_REPARSE_TAG_MOUNT_POINT", 0xA0000003)   # a junction
_GIT_PROGRAM = []      # the git to run, resolved once per process


def is_closed_pipe(exc):
    """A write to a pipe whose reader closed it: BrokenPipeError, and on Windows
    OSError(EINVAL) (§9.2)."""
    import errno
    return isinstance(exc, BrokenPipeError) or (
        isinstance(exc, OSError) and exc.errno == errno.EINVAL)


def executable_names(name, windows=os.name == "nt", pathext=None):
    """The file names a program is found under: on Windows the PATHEXT suffixes that
    CreateProcess runs itself (.com, .exe; a .bat or .cmd would need a shell)."""
    if not windows:
        return [name]
    suffixes = (os.environ.get("PATHEXT", "") if pathext is None else pathext).split(";")
    wanted = [s.lower() for s in suffixes if s.lower() in (".com", ".exe")]
    return [name + suffix for suffix in (wanted or [".com", ".exe"])]


def find_program(name, entries, names=None, isabs=os.path.isabs, join=os.path.join):
    """The absolute path of `name` in the absolute entries of a PATH (`entries`, a list),
    in order; never the current directory, never a relative entry (on Windows
    CreateProcess would search the current directory first: CVE-2023-40590). None when
    there is none."""
    for entry in entries:
        if not entry or not isabs(entry):
            continue
        for file_name in names or [name]:
            candidate = join(entry, file_name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    return None


def git_program():
    """The git every git call runs: resolved once, from PATH's absolute entries only."""
    if not _GIT_PROGRAM:
        # os.get_exec_path() less its import of `warnings` (half a millisecond of a start)
        path = os.environ.get("PATH", os.defpath).split(os.pathsep)
        _GIT_PROGRAM.append(find_program("git", path, executable_names("git")))
    return _GIT_PROGRAM[0]


def native_path(root, relative, flavour=os.path):
    """A repository-relative path (always `/`-separated) under `root`, joined by the
    platform's own rules, never by gluing with `/`: under a `\\\\?\\C:\\` root a `/` is no
    separator, and `\\\\server\\share\\` is a root of its own."""
    if not relative:
        return root
    if flavour.sep == "/" and relative[0] != "/":
        # POSIX, a relative path: what posixpath.join gives, without its call (a path is
        # joined per file at start-up and at every sweep).
        return root + relative if root.endswith("/") else root + "/" + relative
    if flavour.sep != "/":
        relative = relative.replace("/", flavour.sep)
    return flavour.join(root, relative)


def spelled_exactly(directory, relative):
    """Whether `relative` (`/`-separated, known to exist under `directory`) is spelled in
    this case there: a case-insensitive file system finds `.AI/Manifest.yaml` for
    `.ai/manifest.yaml`."""
    for name in relative.split("/"):
        try:
            if name not in os.listdir(directory):
                return False
        except OSError:
            return False
        directory = os.path.join(directory, name)
    return True


def walked_name(name, is_dir):
    """The name the filesystem walk gives an entry, in NFC (macOS gives NFD; git's index
    holds NFC), so both discovery modes give one URI per file; None for a file the walk
    never discovers (`._*` AppleDouble, .DS_Store, Thumbs.db, desktop.ini)."""
    if not is_dir and (name in _NEVER_WALKED or name.startswith("._")):
        return None
    if name.isascii():
        return name
    import unicodedata
    return unicodedata.normalize("NFC", name)


def is_junction(entry, reparse_tags=_REPARSE_TAGS):
    """A directory junction (Windows), which the walk never enters: DirEntry.is_junction()
    from 3.12, else the reparse tag of the entry's lstat."""
    test = getattr(entry, "is_junction", None)
    if test is not None:
        return test()
    if not reparse_tags:
        return False
    try:
        return entry.stat(follow_symlinks=False).st_reparse_tag == MOUNT_POINT_TAG
    except (OSError, AttributeError):
        return False


def exclusive_bind(sock):
    """Bind options that keep a port in use in use: SO_EXCLUSIVEADDRUSE where the platform
    has it (Windows, where SO_REUSEADDR lets a second server bind a served port), else
    SO_REUSEADDR (POSIX: a port left in TIME_WAIT can be bound again)."""
    import socket
    exclusive = getattr(socket, "SO_EXCLUSIVEADDRUSE", None)
    if exclusive is not None:
        sock.setsockopt(socket.SOL_SOCKET, exclusive, 1)
    else:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)


def lease_directory():
    """Where the leases of §27 live (path, None), or (None, why not): on Windows
    %LOCALAPPDATA%\\majordomus\\run, else $XDG_RUNTIME_DIR/majordomus (an absolute
    directory), else <tempdir>/majordomus-<uid> (TMPDIR, TEMP or TMP when absolute, /tmp)."""
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA", "")
        if not os.path.isabs(base):
            return None, "LOCALAPPDATA names no absolute directory"
        return os.path.join(base, "majordomus", "run"), None
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and os.path.isdir(runtime):
        return os.path.join(runtime, "majordomus"), None
    temp = next((os.environ[name] for name in ("TMPDIR", "TEMP", "TMP")
                 if os.path.isabs(os.environ.get(name, "")) and os.path.isdir(os.environ[name])),
                "/tmp")
    return os.path.join(temp, "majordomus-%d" % os.geteuid()), None


def install_folder():
    """Where `install` puts the archive (§32), (path, None), or (None, why not):
    %LOCALAPPDATA%\\majordomus on Windows, ~/Library/Application Support/majordomus on
    macOS, ~/.local/share/majordomus elsewhere (as the contract names it: XDG_DATA_HOME is
    not read, so the install links' path holds for every user)."""
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA", "")
        if not os.path.isabs(base):
            return None, "LOCALAPPDATA names no absolute directory"
        return os.path.join(base, "majordomus"), None
    home = os.path.expanduser("~")
    if not os.path.isabs(home):
        return None, "HOME names no absolute directory"
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "majordomus"), None
    return os.path.join(home, ".local", "share", "majordomus"), None


def make_private_folder(path):
    """Make the lease directory, 0700, when absent (on Windows its parents too)."""
    if os.name == "nt":
        os.makedirs(path, exist_ok=True)
    else:
        os.mkdir(path, 0o700)


# How the lease directory is opened (its checks then ask the open directory, and every lease
# is opened relative to it), and how a lease is: never through a symlink. None: by path.
FOLDER_OPEN = (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_NOFOLLOW
               if hasattr(os, "O_NOFOLLOW") and os.open in os.supports_dir_fd else None)
LEASE_FLAGS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


def unsafe_folder(info, path):
    """Why the lease directory must not be used (None when it may): a symlink, another
    user's, or writable by others. (Windows: %LOCALAPPDATA% is the user's own.)"""
    if stat.S_ISLNK(info.st_mode) or getattr(info, "st_reparse_tag", 0):
        return "the lease directory %s is a symlink" % path
    if not stat.S_ISDIR(info.st_mode):
        return "the lease directory %s is not a directory" % path
    if os.name == "nt":
        return None
    if info.st_uid != os.geteuid():
        return "the lease directory %s is not this user's (its owner is uid %d)" % (
            path, info.st_uid)
    if info.st_mode & 0o022:
        return "the lease directory %s is writable by others (mode %04o)" % (
            path, stat.S_IMODE(info.st_mode))
    return None


def unsafe_lease(info, path):
    """Why a lease file must not be trusted (None when it may): not a regular file,
    another user's, or open to others (a lease is 0600)."""
    if not stat.S_ISREG(info.st_mode):
        return "the lease %s is not a regular file" % path
    if os.name == "nt":
        return None
    if info.st_uid != os.geteuid():
        return "the lease %s is not this user's (its owner is uid %d)" % (path, info.st_uid)
    if info.st_mode & 0o077:
        return "the lease %s is open to others (mode %04o)" % (path, stat.S_IMODE(info.st_mode))
    return None


def lock_lease(handle):
    """Take the lease's lock without waiting: True when this process now holds it (§27).
    The system drops a lock when its holder ends, even by kill -9: an unlocked lease has no
    owner. flock on POSIX; on Windows a byte-range lock far past the lease's bytes (a lock
    on them would keep other processes from reading the lease)."""
    if os.name == "nt":
        import msvcrt
        try:
            os.lseek(handle, 1 << 30, os.SEEK_SET)
            msvcrt.locking(handle, msvcrt.LK_NBLCK, 1)
            return True
        except OSError:
            return False
        finally:
            os.lseek(handle, 0, os.SEEK_SET)
    import fcntl
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def process_alive(pid):
    """Is process `pid` alive? (Windows: not asked, True: os.kill would end it; the lock
    and the probe of §27 decide there.)"""
    if os.name == "nt":
        return True
    if pid <= 0:
        return False       # 0 and -1 name groups of processes, never one
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):
        return True        # another user's (EPERM), or a pid no process can have
    return True


def ancestor_pids(most=8):
    """The ids of this process's parent, its parent's, and so on (at most `most`, nearest
    first, init left out): on Linux read from /proc, on macOS and the BSDs from one `ps`;
    on Windows the parent alone (§31's guard tells the hook's own client by them)."""
    out = [os.getppid()]
    if sys.platform.startswith("linux"):
        while len(out) < most:
            try:
                with open("/proc/%d/stat" % out[-1], "rb") as handle:
                    fields = handle.read().rpartition(b")")[2].split()
                parent = int(fields[1])
            except (OSError, ValueError, IndexError):
                break
            if parent <= 1 or parent in out:
                break
            out.append(parent)
    elif os.name != "nt":
        import subprocess
        try:
            listing = subprocess.run(["ps", "-A", "-o", "pid=", "-o", "ppid="],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     timeout=1.0).stdout.split()
            parents = dict(zip(map(int, listing[0::2]), map(int, listing[1::2])))
        except (OSError, ValueError, subprocess.SubprocessError):
            parents = {}
        while len(out) < most and parents.get(out[-1], 0) > 1 and (
                parents[out[-1]] not in out):
            out.append(parents[out[-1]])
    return [pid for pid in out if pid > 1]


def stop_signals():
    """The signals that end `serve` with exit 0: SIGINT, SIGTERM, and on Windows SIGBREAK
    (Ctrl-Break)."""
    import signal
    return [getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGBREAK")
            if hasattr(signal, name)]


# ---------------------------------------------------------------------------------------
# 5. The YAML subset (§3): a strict line reader, the tree and key-path views, front matter.
# ---------------------------------------------------------------------------------------

class SubsetError(Exception):
    """The layer's YAML subset refused a text; str(err) is the exact message of §3."""


_KEY_FIRST = _LETTERS + "_"
_INTEGER_FIRST = frozenset("-0123456789")


def _key_at(content):
    """§3.1 rule 5, `KEY:` then the end or a space: (KEY, where its value starts), or None."""
    colon = content.find(":")
    key = content[:colon]
    if colon <= 0 or key[0] not in _KEY_FIRST or key.strip(_KEY_CHARS):
        return None
    after = colon + 1
    # A key is interned: 10,000 files spell the same few keys, one string each (§23).
    if after == len(content):
        return sys.intern(key), after
    return (sys.intern(key), after + 1) if content[after] == " " else None
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _typed(text):
    """§3.3 rule 5: true/false, a signed 64-bit decimal integer, or the string itself."""
    if text == "true":
        return True
    if text == "false":
        return False
    if text[:1] in _INTEGER_FIRST and is_integer_text(text):
        # What does not fit in 64 bits is a string (§3.3): counted before int() reads it,
        # which refuses 4,300 digits on its own (§25). Leading zeros count for nothing.
        if len(text) <= 18:
            return int(text)      # fits in 64 bits whatever the digits
        digits = text.lstrip("-").lstrip("0")
        if len(digits) <= 19:
            number = int(digits or "0")
            number = -number if text[0] == "-" else number
            if _INT64[0] <= number <= _INT64[1]:
                return number
    return text


def _unquoted(text):
    """§3.3 rule 3: (is_quoted, value) with one quote stripped from each end."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        inner = text[1:-1]
        return True, inner.replace("''", "'") if text[0] == "'" else inner
    return False, text


_SPECIAL_FIRST = frozenset("&*|>[\"'")


def _scalar(text, line):
    """§3.3 for a trimmed value: a scalar, or a Python list for an inline list."""
    if text[:1] in ("&", "*", "|", ">"):
        raise SubsetError("unsupported YAML construct on line %d: %s" % (line, text))
    if text[:1] == "[" and text[-1:] == "]":
        inside = text[1:-1]
        if not inside.strip(" "):
            return []
        items = []
        for element in inside.split(","):
            quoted, value = _unquoted(element.strip(" \t"))
            value = value if quoted else _typed(value)
            # An inline list's words (tags) recur across files: one string each (§23).
            items.append(sys.intern(value) if type(value) is str else value)
        return items
    if "#" not in text and text[0] not in "\"'":
        return _typed(text)   # a plain value: nothing to unquote or strip
    quoted, value = _unquoted(text)
    if quoted:
        return value
    hash_at = value.find("#", 1)
    while hash_at > 0:
        if value[hash_at - 1] in " \t":
            value = value[:hash_at].rstrip(" \t")
            break
        hash_at = value.find("#", hash_at + 1)
    return _typed(value)


class _SubsetReader:
    """One parse of one text: the ctx/pend tables of §3.2 and the tree being built."""

    def __init__(self):
        self.root = {}
        # path -> the dict or list holding its children. A leaf never gets children: no
        # context opens under a key with a value, so nothing is ever inserted below one.
        self.nodes = {"": self.root}
        self.opened = set()            # key paths written by a key line (given-twice check)
        self.items = {}                # list path -> next item index

    def container(self, path, child, full, line):
        """The container at `path` that segment `child` goes into, created on first use
        with every missing ancestor (a loop, not a recursion: depth is unlimited, §3.2)."""
        nodes = self.nodes
        if path in nodes:
            return self._check(nodes[path], child, full, line)
        chain = []                  # (a missing path, the segment going into it)
        while path not in nodes:
            chain.append((path, child))
            path, _, child = path.rpartition(".")
        node = self._check(nodes[path], child, full, line)
        for path, child in reversed(chain):
            made = [] if child.isdigit() else {}
            self.attach(node, path.rpartition(".")[2], made)
            nodes[path] = node = made
        return node

    @staticmethod
    def _check(node, child, full, line):
        """`node`, when segment `child` may go into it (a digit into a list, a name into a
        mapping); else the subset's error."""
        wants_list = child.isdigit()
        if wants_list and not isinstance(node, list):
            raise SubsetError("'%s' mixes a list with a mapping, on line %d" % (full, line))
        if not wants_list and not isinstance(node, dict):
            raise SubsetError("'%s' mixes a mapping with a scalar or list, on line %d"
                              % (full, line))
        return node

    @staticmethod
    def attach(parent, segment, value):
        if isinstance(parent, list):
            parent.append(value)
        else:
            parent[segment] = value

    def leaf(self, path, value, line):
        """Place a scalar (or an inline list's items) at `path`."""
        if isinstance(value, list) and value:
            for index, item in enumerate(value):
                self.leaf("%s.%d" % (path, index), item, line)
            return
        parent, _, segment = path.rpartition(".")
        self.attach(self.container(parent, segment, path, line), segment, value)

    def mapping_item(self, path, line):
        """An item that is a mapping exists, as `{}`, even if its only key vanishes."""
        parent, _, segment = path.rpartition(".")
        node = {}
        self.attach(self.container(parent, segment, path, line), segment, node)
        self.nodes[path] = node

    def open_key(self, path, line):
        if path in self.opened:
            raise SubsetError("'%s' is given twice, on line %d" % (path, line))
        self.opened.add(path)

    def next_item(self, parent):
        index = self.items.get(parent, 0)
        self.items[parent] = index + 1
        return "%s.%d" % (parent, index)


def parse_subset(text):
    """Parse the layer's YAML subset (§3.1–§3.3) into a mapping; raise SubsetError."""
    reader = _SubsetReader()
    # §3.2's tables, indexed by level = indentation / 2; None marks an absent entry.
    ctx, pend = [""], []
    carriage, tabs = "\r" in text, "\t" in text    # (per line only when the text has one)
    number = 0
    for raw in text.split("\n"):
        number += 1
        if carriage and raw[-1:] == "\r":
            raw = raw[:-1]
        if tabs and "\t" in raw:
            raise SubsetError("tab character on line %d" % number)
        content = raw.lstrip(" ")
        indent = len(raw) - len(content)
        if not content or content[0] == "#" or (not indent and raw.rstrip(" ") == "---"):
            continue   # (an indented `---` is no separator: rules 3-5 judge it)
        if indent & 1:
            raise SubsetError("odd indentation on line %d" % number)
        if not indent and content[0] != "-":
            # The most common line by far, a key at the root: the general key-line path
            # below, specialised (same checks, same order, same messages).
            key = _key_at(content)
            if key is None:
                raise SubsetError("cannot parse line %d: %s" % (number, content))
            name = key[0]
            del ctx[1:]
            del pend[:]
            if name in reader.opened:
                raise SubsetError("'%s' is given twice, on line %d" % (name, number))
            reader.opened.add(name)
            value = content[key[1]:].strip(" ")
            if not value:
                pend += (name, name)
                ctx.append(name)
            elif value[0] not in _SPECIAL_FIRST and "#" not in value:
                reader.root[name] = _typed(value)
            else:
                # A scalar or an inline list of scalars: nothing can nest under either.
                reader.root[name] = _scalar(value, number)
            continue
        level = indent >> 1
        if content[:2] == "- ":   # a bare `-` is no item: it cannot parse as a key line
            parent = pend[level] if level < len(pend) else None
            if parent is None:
                raise SubsetError("list item without a parent key on line %d" % number)
            path = reader.next_item(parent)
            item = content[2:].strip(" ")
            key = _key_at(item)
            if key is None:
                value = _scalar(item, number) if item else ""
                node = reader.nodes.get(parent)
                if type(node) is list and not isinstance(value, list):
                    node.append(value)    # the list exists: the item is its next element
                else:
                    reader.leaf(path, value, number)
                continue
            # A mapping item: its keys sit one level (two columns) deeper than the dash.
            # Like a scalar item it leaves `pend` alone: a later `- x` at level + 1 is
            # still an item of the parent that set pend[level + 1].
            reader.mapping_item(path, number)
            del ctx[level + 1:]
            _put(ctx, level + 1, path)
            _key_line(reader, ctx, pend, level + 1, path, key, item, number)
            continue
        key = _key_at(content)
        if key is None:
            raise SubsetError("cannot parse line %d: %s" % (number, content))
        base = ctx[level] if level < len(ctx) else None
        if base is None:
            raise SubsetError("unexpected indentation on line %d" % number)
        del ctx[level + 1:]
        del pend[level:]
        _key_line(reader, ctx, pend, level, base, key, content, number)
    return reader.root


def _put(table, level, value):
    """table[level] = value, growing the table with absent (None) entries."""
    while len(table) <= level:
        table.append(None)
    table[level] = value


def _key_line(reader, ctx, pend, level, base, key, content, number):
    """A key line at `level` under `base` (`key`: its name and where its value starts): a
    parent (empty value) or a leaf. Deeper entries of both tables were dropped by the
    caller."""
    path = base + "." + key[0] if base else key[0]
    reader.open_key(path, number)
    value = content[key[1]:].strip(" ")
    if value:
        if value[0] not in _SPECIAL_FIRST and "#" not in value:
            value = _typed(value)     # a plain scalar: nothing to unquote, strip or split
            node = reader.nodes.get(base)
            if type(node) is dict:    # the mapping it goes into exists: straight in
                node[key[0]] = value
                return
        else:
            value = _scalar(value, number)
            node = reader.nodes.get(base) if base else None
            if type(node) is dict and isinstance(value, list):
                node[key[0]] = value      # an inline list: nothing can nest under it
                return
        if base or isinstance(value, list):
            reader.leaf(path, value, number)
        else:
            # A root scalar: the root is a mapping and nothing can ever nest under a
            # scalar (no context opens for it), so it goes straight in.
            reader.root[path] = value
    else:
        _put(pend, level, path)
        _put(pend, level + 1, path)
        _put(ctx, level + 1, path)


def key_paths(tree):
    """§3.4 key-path view: scalar leaves, empty lists and empty mappings, in order."""
    paths = []
    try:
        _walk_paths(tree, "", paths)
    except RecursionError:     # deeper than Python recurses: the same walk with a stack
        paths = _stacked_paths(tree)
    return paths


def _walk_paths(node, prefix, paths):
    # (No closure: a nested function that calls itself is a cycle, which outlives the
    # call while an index build pauses the collector, with its list, §23.)
    pairs = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in pairs:
        path = prefix + str(key)
        if isinstance(value, (dict, list)) and value:
            _walk_paths(value, path + ".", paths)
        else:
            paths.append(path)


def _stacked_paths(tree):
    """key_paths at any depth (§25): a stack of the mappings and lists being walked and
    of their keys, each path joined once (no prefix kept per level: memory stays linear)."""
    paths, keys, stack = [], [], [iter(tree.items())]
    while stack:
        for key, value in stack[-1]:
            key = key if type(key) is str else str(key)
            if isinstance(value, (dict, list)) and value:
                keys.append(key)
                stack.append(iter(value.items()) if isinstance(value, dict)
                             else enumerate(value))
                break
            paths.append(".".join(keys) + "." + key if keys else key)
        else:
            stack.pop()
            if keys:
                keys.pop()
    return paths


FRONT_MATTER_LIMIT = 65536


def _closing_fence(text, start):
    """(where, end) of the first line from `start` that is exactly `---` (a `\r` after it
    tolerated), or None."""
    at = start if text.startswith("---", start) else -1
    while True:
        if at < 0:
            at = text.find("\n---", start)
            if at < 0:
                return None
            at += 1
        end = at + 3
        if end == len(text) or text[end] == "\n" or (
                text[end] == "\r" and text[end + 1:end + 2] in ("", "\n")):
            return at, end
        start, at = end, -1


def split_front_matter(text, parse=parse_subset):
    """§3.6: (metadata mapping or None, body); raise SubsetError for a broken front matter.
    `parse`: what reads the front matter's text (parse_subset, or a TreeCache's parse)."""
    if text.startswith("---\n"):
        start = 4
    elif text.startswith("---\r\n"):
        start = 5
    elif text in ("---", "---\r"):
        raise SubsetError("front matter opened on line 1 and never closed")
    else:
        return None, text
    fence = _closing_fence(text, start)
    if fence is None:
        raise SubsetError("front matter opened on line 1 and never closed")
    inner = text[start:fence[0]]
    if len(inner) > FRONT_MATTER_LIMIT // 4:
        size = len(inner.encode("utf-8"))
        if size > FRONT_MATTER_LIMIT:
            raise SubsetError("front matter is %d bytes, over the %d byte limit"
                              % (size, FRONT_MATTER_LIMIT))
    newline = text.find("\n", fence[1])
    body = "" if newline < 0 else text[newline + 1:]
    return parse(inner), body


TREES_FILES = 1000    # the most files a layer may have for a TreeCache to keep its trees


class TreeCache:
    """The trees an earlier process parsed, by their texts: a process's first index build
    parses only the texts no earlier one did (parsing is half of that build, §23). A text
    is its own key, so no entry can go stale; `identity` names the module and interpreter
    that made them, and trees of any other are not used. `read()` gives the bytes kept
    (data(): what to keep next), asked once, when the build first needs them (load()).
    Kept for a layer of at most TREES_FILES files (stop()): a larger one's would cost a
    server that runs for days more memory than its start saves it time.
    Beside the trees, what made() gave for a text (a hook that reads the layer itself
    keeps the search terms of each field past ASCII, §30), kept as one marshalled whole
    that a process which never asks carries over unread."""

    def __init__(self, read, identity):
        self.read, self.identity = read, identity
        self.known = None    # text -> its tree, marshalled (as kept by the last process)
        self.kept = {}       # the same, of the texts this process parsed
        self.changed = False
        self.stopped = False
        self.made_read = b""     # made()'s texts and values as the last process kept them
        self.made_known = None   # the same, unmarshalled on the first ask
        self.made_kept = {}      # of the texts this process asked

    def stop(self):
        """Parse without the cache from now on, and keep nothing."""
        self.known, self.kept, self.stopped = {}, {}, True

    def load(self):
        if self.known is not None:
            return
        import marshal
        self.known, head = {}, None
        try:
            data = self.read()
            head, known, made = marshal.loads(data) if data else (None, None, None)
        except Exception:  # unreadable, or not ours: kept again from what is parsed now
            pass
        if head == self.identity and type(known) is dict and type(made) is bytes:
            self.known, self.made_read = known, made
        else:
            self.changed = True

    def made(self, text, make):
        """make(text), from the cache where it holds the text (make is always the same
        function of a text, whose value is a str)."""
        if self.stopped:
            return make(text)
        if self.made_known is None:
            import marshal
            self.load()
            try:
                known = marshal.loads(self.made_read) if self.made_read else {}
            except Exception:  # damaged: made again
                known = {}
            self.made_known = known if type(known) is dict else {}
        value = self.made_known.get(text)
        if type(value) is not str:
            value = make(text)
        self.made_kept[text] = value
        return value

    def parse(self, text):
        """parse_subset(text), from the cache where it holds the text."""
        import marshal
        if self.stopped:
            return parse_subset(text)
        self.load()
        data = self.known.get(text)
        if type(data) is bytes:
            try:
                tree = marshal.loads(data)
            except Exception:  # a damaged entry: parsed again below
                tree = None
            if type(tree) is dict:
                self.kept[text] = data
                return tree
        tree = parse_subset(text)
        try:
            self.kept[text] = marshal.dumps(tree)
            self.changed = True
        except ValueError:  # deeper than marshal goes (§25): parsed again next time
            pass
        return tree

    def data(self):
        """What to keep for the next process (the trees of the texts this one parsed), or
        None when that is what was read."""
        import marshal
        asked = self.made_known is not None
        if self.stopped or self.known is None or not (
                self.changed or len(self.kept) != len(self.known) or asked and (
                    self.made_kept != self.made_known)):
            return None
        return marshal.dumps((self.identity, self.kept, marshal.dumps(self.made_kept)
                              if asked else self.made_read))


def render_scalar(value):
    """A scalar as text (`true`, `1`, …); None for a mapping or a list."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    return None


# ---------------------------------------------------------------------------------------
# 6. Embedded data: schema/kinds.yaml and share/allow/*.txt, read from beside the module
#    or from inside the zipapp through the module's own loader (no zipfile import).
# ---------------------------------------------------------------------------------------

def read_embedded(relative):
    """The bytes of a data file shipped with the tool; OSError when it is not there."""
    loader = globals().get("__loader__")
    archive = getattr(loader, "archive", None)
    if archive:
        # Inside a zipapp. zipimport names entries by the archive path exactly as the
        # interpreter was given it (relative, with `..`, through a symlink), so build the
        # name from that path, never from an absolute form of __file__.
        return loader.get_data(os.path.join(archive, loader.prefix, relative))
    where = os.path.join(os.path.dirname(os.path.realpath(__file__)), relative)
    with open(where, "rb") as handle:
        return handle.read()


# What build_zipapp.py stores beside them in the archive: the same files already read, so
# that a start from the archive does not parse them again (§23). Plain data in marshal's
# format 2 (no back-references, so the bytes depend on nothing but the files):
# {"kinds": the parsed kinds.yaml, "allow": {name: (patterns, sorted shapes, the rest)}}.
SHIPPED_READ = "share/shipped.marshal"
_READ = []


def shipped_read(part):
    """One part of SHIPPED_READ, or None when there is none (run from a checkout, or an
    archive without it): the caller then reads the file itself."""
    if not _READ:
        try:
            import marshal
            read = marshal.loads(read_embedded(SHIPPED_READ))
        except (OSError, EOFError, ValueError, TypeError):
            read = None
        _READ.append(read if type(read) is dict else {})
    return _READ[0].get(part)


def read_shipped():
    """SHIPPED_READ's content, read from the files by the module's own readers (what
    build_zipapp.py stores)."""
    listed = {}
    for name in sorted(os.listdir(os.path.join(os.path.dirname(__file__), "share/allow"))):
        if name.endswith(".txt"):
            allow = AllowList.from_text(name[:-4], read_embedded("share/allow/" + name)
                                        .decode("utf-8"))
            listed[allow.name] = (allow.patterns, sorted(allow.shapes), allow.rest)
    return {"kinds": parse_subset(read_embedded(SHIPPED_KINDS).decode("utf-8")),
            "allow": listed}


class KindsError(Exception):
    """A kinds file or an allow-list that cannot be used; str() is the reason (§4.1, §4.4).
    The caller adds where: exit 13 for the shipped files, exit 10 for the repository's."""


def _schema_defect(reason):
    return Fatal(EXIT_INTERNAL, "embedded kind schema is invalid: " + reason)


class AllowList:
    """One allow-list: anchored patterns, one per line (§3.5). A pattern that is a plain
    key path (words, `[0-9]+` segments, an optional `(\\.[0-9]+)?`) is kept as the key-path
    shapes it allows, where `#` stands for a list index; only the other patterns are a
    regular expression, compiled on first use. `where` is the list's path as unknown_key
    messages name it."""

    def __init__(self, name, patterns, where=None):
        self.name = name
        self.where = where or "share/allow/%s.txt" % name
        self._matcher = None
        self._seen = {}
        self.patterns = self.shapes = self.rest = None
        if patterns is not None:
            self._take(patterns)

    def _take_stored(self):
        """The list as SHIPPED_READ stores it, (patterns, shapes, the rest); False when the
        archive stores none of this name."""
        stored = (shipped_read("allow") or {}).get(self.name)
        if stored is None:
            return False
        self.patterns, shapes, self.rest = stored
        self.shapes = set(shapes)
        return True

    def _take(self, patterns):
        self.patterns, self.shapes, self.rest = patterns, set(), []
        for pattern in patterns:
            shapes = _pattern_shapes(pattern)
            if shapes is None:
                self.rest.append(pattern)
            else:
                self.shapes.update(shapes)

    def _load(self):
        """A shipped list is read on first use: a start pays only for the lists its layer
        uses."""
        if self._take_stored():
            return
        try:
            text = read_embedded("share/allow/%s.txt" % self.name)
        except OSError:
            raise _schema_defect("%s: allow-list '%s' is not embedded (share/allow/%s.txt)"
                                 % (SHIPPED_KINDS, self.name, self.name))
        try:
            self._take(_list_patterns(text.decode("utf-8")))
        except UnicodeDecodeError as exc:
            raise _schema_defect("share/allow/%s.txt: %s" % (self.name, exc))

    @classmethod
    def from_text(cls, name, text, where=None):
        return cls(name, _list_patterns(text), where)

    @classmethod
    def shipped(cls, name):
        """A list of share/allow/; None when the tool ships none of that name."""
        allow = cls(name, None)
        if allow._take_stored():
            return allow
        try:
            text = read_embedded("share/allow/%s.txt" % name)
        except OSError:
            return None
        try:
            allow._take(_list_patterns(text.decode("utf-8")))
        except UnicodeDecodeError as exc:
            raise _schema_defect("share/allow/%s.txt: %s" % (name, exc))
        return allow

    def compile(self):
        """The matcher of the patterns that are no plain key path; KindsError naming the
        first one that is not a regular expression."""
        if self.patterns is None:
            self._load()
        import re
        try:
            # fullmatch: a pattern written without ^…$ is still anchored.
            self._matcher = re.compile("|".join("(?:%s)" % p for p in self.rest)
                                       or "(?!)").fullmatch
        except re.error:
            for pattern in self.rest:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise KindsError("pattern %r: %s" % (pattern, exc))
            raise KindsError("the patterns do not combine into one expression")
        return self._matcher

    def allows(self, path):
        known = self._seen.get(path)
        if known is None:
            if self.shapes is None:
                self._load()
            known = path in self.shapes or key_shape(path) in self.shapes
            if not known and self.rest:
                matcher = self._matcher or self._shipped_matcher()
                known = matcher(path) is not None
            self._seen[path] = known
        return known

    def _shipped_matcher(self):
        # A shipped list is compiled on first use (start-up pays only for the lists a
        # layer uses); a repository list was compiled when it was read.
        try:
            return self.compile()
        except KindsError as exc:
            raise _schema_defect("%s: %s" % (self.where, exc))

    def unknown(self, paths):
        """The paths no pattern allows, in the order given."""
        return [path for path in paths if not self.allows(path)]


def _list_patterns(text):
    """The patterns of an allow-list's text: its lines but the empty ones and comments.
    A line ends in LF or CRLF alike (a Windows checkout, §24)."""
    return [line for line in text.replace("\r\n", "\n").split("\n")
            if line.strip() and not line.startswith("#")]


_INDEX_GROUP = "(\\.[0-9]+)?"


def _pattern_shapes(pattern):
    """The key-path shapes a plain pattern allows (`^a\\.[0-9]+\\.b(\\.[0-9]+)?$` ->
    {a.#.b, a.#.b.#}), or None when the pattern is anything else (a regular expression is
    then needed). Key names never are all digits, so `#` cannot be taken for a name."""
    text = pattern[1:] if pattern.startswith("^") else pattern
    text = text[:-1] if text.endswith("$") and not text.endswith("\\$") else text
    if text.isascii() and text.replace("_", "a").replace("-", "a").isalnum() and (
            not text.isdigit()):
        return {text}        # the most common pattern by far: one key, `^name$`
    shapes = [""]
    for part in text.replace(_INDEX_GROUP, "\0").split("\\."):
        core = part.rstrip("\0")
        optional = len(part) - len(core)
        if core == "[0-9]+":
            segment = "#"
        elif core and not core.isdigit() and core.isascii() and (
                core.replace("_", "a").replace("-", "a").isalnum()):
            segment = core
        else:
            return None
        shapes = [shape + "." + segment if shape else segment for shape in shapes]
        for _ in range(optional):
            shapes += [shape + ".#" for shape in shapes]
    return set(shapes)


def key_shape(path):
    """A key path with each list index written `#` (names never are all digits)."""
    return ".".join("#" if segment.isdigit() else segment for segment in path.split("."))


FORMATS = ("markdown", "yaml", "text")
_MEDIA_TYPES = {"markdown": "text/markdown", "yaml": "application/yaml", "text": "text/plain"}


class Kind:
    """One kind of object, as a kinds file declares it (§4.1); `allow` is its AllowList."""

    __slots__ = ("name", "format", "front_matter", "without_front_matter", "allow",
                 "identity", "title", "description", "version_field", "supported",
                 "members", "prompt", "media_type")

    def __init__(self, name, spec, allow):
        self.name = name
        self.format = spec["format"]
        self.front_matter = spec.get("front_matter", "none")
        self.without_front_matter = spec.get("without_front_matter")
        self.allow = allow
        self.identity = spec.get("identity", [])
        self.title = spec.get("title")
        self.description = spec.get("description")
        version = spec.get("schema_version") or {}
        self.version_field = version.get("field")
        self.supported = version.get("supported", [])
        self.members = spec.get("members")
        self.prompt = spec.get("prompt") == "body"
        self.media_type = _MEDIA_TYPES[self.format]


KINDS_SCHEMA = "majordomus-kinds/v1"
SHIPPED_KINDS = "schema/kinds.yaml"
_KINDS_TOP = ("schema", "declared", "kinds")
_KIND_FIELDS = ("format", "front_matter", "without_front_matter", "allow", "identity", "title",
                "description", "schema_version", "members", "prompt")
_NAMESPACE_REST = _LOWER + _DIGITS + "_-"


def check_kinds_tree(tree):
    """The field-by-field checks of one kinds file (§4.1): (declared, {name: spec}).
    Raise KindsError with the first reason."""
    unknown = [key for key in tree if key not in _KINDS_TOP]
    if unknown:
        raise KindsError("unknown field(s): " + ", ".join(unknown))
    if tree.get("schema") != KINDS_SCHEMA:
        found = render_scalar(tree.get("schema"))
        raise KindsError("schema '%s' is not %s" % ("" if found is None else found, KINDS_SCHEMA))
    declared = tree.get("declared", [])
    if not isinstance(declared, list) or not all(isinstance(d, str) for d in declared):
        raise KindsError("declared must be a list of kind names")
    kinds = tree.get("kinds", {})
    if not isinstance(kinds, dict):
        raise KindsError("kinds must map each kind's name to its fields")
    for name, spec in kinds.items():
        _check_kind(name, spec)
    return declared, kinds


def _check_kind(name, spec):
    where = "kind '%s': " % name
    if not is_name(name, _LOWER, _NAMESPACE_REST) or not isinstance(spec, dict):
        raise KindsError(where + "a kind is a lower-case name mapped to its fields")
    unknown = [field for field in spec if field not in _KIND_FIELDS]
    if unknown:
        raise KindsError(where + "unknown field(s): " + ", ".join(unknown))
    form = spec.get("format")
    if form not in FORMATS:
        raise KindsError(where + "format must be markdown, yaml or text")
    for field in ("title", "description", "allow", "without_front_matter", "members"):
        if field in spec and not isinstance(spec[field], str):
            raise KindsError(where + "%s must be a string" % field)
    identity = spec.get("identity", [])
    if not isinstance(identity, list) or not all(isinstance(f, str) for f in identity):
        raise KindsError(where + "identity must be a list of field names")
    if form == "text" and ("front_matter" in spec or "allow" in spec or identity
                           or "members" in spec):
        raise KindsError(where + "a text kind has no metadata, so no allow-list, identity "
                         "fields or members")
    if spec.get("front_matter", "none") not in ("required", "optional", "none"):
        raise KindsError(where + "front_matter must be required, optional or none")
    if form != "markdown" and (spec.get("front_matter", "none") != "none"
                               or "without_front_matter" in spec):
        raise KindsError(where + "only a markdown kind has a front matter rule")
    if "members" in spec and form != "yaml":
        raise KindsError(where + "only a yaml kind has members")
    version = spec.get("schema_version")
    if version is not None:
        if isinstance(version, dict):
            extra = [key for key in version if key not in ("field", "supported")]
            if extra:
                raise KindsError(where + "unknown field(s): " + ", ".join(
                    "schema_version." + key for key in extra))
        supported = version.get("supported") if isinstance(version, dict) else None
        if not (isinstance(version, dict) and isinstance(version.get("field"), str)
                and isinstance(supported, list) and supported
                and (all(type(v) is int for v in supported)
                     or all(isinstance(v, str) for v in supported))):
            raise KindsError(where + "schema_version is {field, supported: [values]}, the "
                             "values all integers or all strings")
    if "prompt" in spec:
        if spec["prompt"] != "body":
            raise KindsError(where + "prompt must be body")
        if form != "markdown":
            raise KindsError(where + "only a markdown kind has a body to serve as a prompt")


def link_kinds(specs, declared):
    """The checks over every kind a layer reads (shipped and the repository's together)."""
    for name in declared:
        spec = specs.get(name)
        if spec is None or spec["format"] != "markdown" or spec.get("front_matter") != "required":
            raise KindsError("declared kind '%s' is not a markdown kind that requires front "
                             "matter" % name)
    for name in sorted(specs):
        target = specs[name].get("without_front_matter")
        if target is None:
            continue
        other = specs.get(target)
        if other is None or other["format"] != "markdown" or (
                other.get("front_matter") == "required"):
            raise KindsError("kind '%s': without_front_matter names '%s', which is not a "
                             "markdown kind that accepts a file without front matter"
                             % (name, target))


class Kinds:
    """The kinds a layer is read with: the shipped ones and the repository's (§4.4)."""

    def __init__(self, specs, declared, allows, kinds_file=None):
        self.specs, self.allows, self.kinds_file = specs, allows, kinds_file
        self.declared = frozenset(declared)
        self.declared_order = list(declared)
        self.by_name = {name: Kind(name, spec, allows.get(spec.get("allow")))
                        for name, spec in specs.items()}

    def get(self, name):
        return self.by_name.get(name)

    def __getitem__(self, name):
        return self.by_name[name]


_SHIPPED = []   # the shipped kinds, read once per process (they are part of the program)


def shipped_kinds():
    """schema/kinds.yaml and every allow-list it names; a defect is exit 13."""
    if _SHIPPED:
        return _SHIPPED[0]
    try:
        tree = shipped_read("kinds") or parse_subset(
            read_embedded(SHIPPED_KINDS).decode("utf-8"))
        declared, specs = check_kinds_tree(tree)
        link_kinds(specs, declared)
    except (OSError, UnicodeDecodeError, SubsetError, KindsError) as exc:
        raise _schema_defect("%s: %s" % (SHIPPED_KINDS, _os_reason(exc)))
    # Each list is read when a file of its kind is first checked (AllowList._load).
    allows = {name: AllowList(name, None) for name in sorted(
        set(spec["allow"] for spec in specs.values() if "allow" in spec))}
    _SHIPPED.append(Kinds(specs, declared, allows))
    return _SHIPPED[0]


# ---------------------------------------------------------------------------------------
# 7. Glob patterns (§4.3): a source class's include and exclude, matched segment by segment
#    in Python (a class of characters by `re` only when it must be).
# ---------------------------------------------------------------------------------------

GLOB_BY_HAND = 256     # paths a class matches with str methods before a regex pays


def glob_by_hand(pattern):
    """glob_matcher written with str methods (a small layer starts without importing
    `re`): the same matches, proven against it by the tests."""
    try:
        parts = [None if segment == "**" else _segment_test(_wild_segment(segment))
                 for segment in pattern.split("/")]
    except _NeedsRegex:
        return glob_matcher(pattern)
    return lambda path: _segments_match(parts, path.split("/"), 0, 0)


def _segment_test(tokens):
    """One segment's test: equality, a suffix or prefix for the common shapes (`*.md`),
    else the general walk."""
    literal = [token for token in tokens if type(token) is str]
    if len(literal) == len(tokens):
        return "".join(tokens).__eq__
    if len(literal) == len(tokens) - 1:
        text = "".join(literal)
        if tokens[0] is _STAR:
            return lambda name: name.endswith(text)
        if tokens[-1] is _STAR:
            return lambda name: name.startswith(text)
    return lambda name: _wild_match(tokens, name)


_STAR, _ONE = object(), object()


def _wild_segment(segment):
    """A segment as a list of literal characters, _STAR (`*`), _ONE (`?`) and classes
    (negated, characters, ranges)."""
    out, i = [], 0
    while i < len(segment):
        char = segment[i]
        i += 1
        if char == "\\" and i < len(segment):
            out.append(segment[i])
            i += 1
        elif char == "[":
            found = _class_body(segment, i)
            if found is None:
                out.append("[")
            else:
                out.append((found[0],) + _class_members(found[1]))
                i = found[2]
        else:
            out.append(_STAR if char == "*" else _ONE if char == "?" else char)
    return out


def _in_class(token, char):
    negate, singles, ranges = token
    inside = char in singles or any(low <= char <= high for low, high in ranges)
    return inside != negate


def _segments_match(parts, names, i, j):
    while i < len(parts):
        if parts[i] is None:               # `**`: the rest (at the end), or any segments
            if i == len(parts) - 1:
                return j < len(names)
            return any(_segments_match(parts, names, i + 1, k)
                       for k in range(j, len(names) + 1))
        if j >= len(names) or not parts[i](names[j]):
            return False
        i, j = i + 1, j + 1
    return j == len(names)


def _wild_match(tokens, name):
    """`*` and `?` within one segment, by the two-pointer walk (a `*` is retried one
    character further on a mismatch)."""
    t = n = 0
    star, mark = -1, 0
    while n < len(name):
        token = tokens[t] if t < len(tokens) else None
        if token is not None and (token is _ONE or token == name[n] or (
                type(token) is tuple and _in_class(token, name[n]))):
            t, n = t + 1, n + 1
        elif t < len(tokens) and tokens[t] is _STAR:
            star, mark, t = t, n, t + 1
        elif star >= 0:
            mark += 1
            t, n = star + 1, mark
        else:
            return False
    while t < len(tokens) and tokens[t] is _STAR:
        t += 1
    return t == len(tokens)


def glob_matcher(pattern):
    """A full-path matcher for git's :(glob) magic: `*`, `?`, `[...]` within a segment,
    `**` as a whole segment for zero or more segments."""
    import re
    segments = pattern.split("/")
    parts = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".+" if last else "(?:[^/]+/)*")
        else:
            parts.append(_glob_segment(segment) + ("" if last else "/"))
    return re.compile("(?s)" + "".join(parts) + r"\Z").match


def _glob_segment(segment, pathname=True):
    """A glob's regex: path-wise (`*`, `?` and a class never match `/`), or, without
    `pathname`, as git's wildmatch without WM_PATHNAME (`*` matches `/` too)."""
    import re
    star, one = ("[^/]*", "[^/]") if pathname else (".*", ".")
    out, i, n = [], 0, len(segment)
    while i < n:
        char = segment[i]
        i += 1
        if char == "*":
            if not out or out[-1] != star:
                out.append(star)
        elif char == "?":
            out.append(one)
        elif char == "\\" and i < n:
            out.append(re.escape(segment[i]))
            i += 1
        elif char == "[":
            translated, i = _glob_class(segment, i, pathname)
            out.append(translated)
        else:
            out.append(re.escape(char))
    return "".join(out)


_POSIX_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z",
                  "lower": "a-z", "space": " \\t\\n\\r\\f\\v", "blank": " \\t",
                  "xdigit": "0-9a-fA-F",
                  # re.escape of the punctuation, written out (nothing of `re` at import)
                  "punct": '!"\\#\\$%\\&\'\\(\\)\\*\\+,\\-\\./:;<=>\\?@\\[\\\\\\]\\^_`\\{\\|\\}\\~',
                  "print": " -~", "graph": "!-~", "cntrl": "\\x00-\\x1f\\x7f"}


def _glob_class(segment, i, pathname=True):
    """Translate the class opening at segment[i-1] == '['; (regex, index after it).
    Like git, a class never matches '/' in a path-wise match (`pathname`); '!' or '^'
    negates; a leading ']' is literal."""
    import re
    found = _class_body(segment, i)
    if found is None:
        return re.escape("["), i      # no closing bracket: a literal '['
    negate, body, end = found
    prefix = ("[^/" if negate else "(?!/)[") if pathname else ("[^" if negate else "[")
    return prefix + body + "]", end


def _class_body(segment, i):
    """The class opening at segment[i-1] == '[': (negated, its body as a regular
    expression's class, the index after it), or None when it never closes."""
    n, j = len(segment), i
    negate = j < n and segment[j] in "!^"
    if negate:
        j += 1
    body = []
    first = True
    while j < n:
        char = segment[j]
        if char == "]" and not first:
            return negate, "".join(body), j + 1
        first = False
        if segment.startswith("[:", j):
            close = segment.find(":]", j + 2)
            name = segment[j + 2:close] if close > 0 else None
            if name in _POSIX_CLASSES:
                body.append(_POSIX_CLASSES[name])
                j = close + 2
                continue
        if char == "\\" and j + 1 < n:
            j += 1
            char = segment[j]
        body.append("\\" + char if char in "\\[]^" else char)
        j += 1
    return None


_CLASS_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v"}


class _NeedsRegex(Exception):
    """A class body the hand matcher does not read the way `re` would: `re` decides."""


def _class_members(body):
    """A class body (as _class_body writes it) read as `re` reads it: (single characters,
    ranges)."""
    atoms, i = [], 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            code = body[i + 1]
            if code == "x":
                atoms.append((chr(int(body[i + 2:i + 4], 16)), True))
                i += 4
                continue
            atoms.append((_CLASS_ESCAPES.get(code, code), True))
            i += 2
        else:
            atoms.append((char, False))
            i += 1
    singles, ranges, k = set(), [], 0
    while k < len(atoms):
        if k + 2 < len(atoms) and atoms[k + 1] == ("-", False):
            low, high = atoms[k][0], atoms[k + 2][0]
            if low > high:
                raise _NeedsRegex()       # `re` refuses a reversed range
            ranges.append((low, high))
            k += 3
        else:
            singles.add(atoms[k][0])
            k += 1
    return frozenset(singles), tuple(ranges)


# ---------------------------------------------------------------------------------------
# 8. Root, manifest and sources (§2, §4.2): the repository's own declarations.
# ---------------------------------------------------------------------------------------

MANIFEST = ".ai/manifest.yaml"
LAYER_SCHEMA = "ai-repository/v1"
# What `mcp` started where no layer is found says, and answers every call with (§32).
NO_LAYER = 'no AI layer here: see "Start a layer" in the README'


def find_root(start):
    """§2.1: the nearest ancestor of `start` holding a regular file .ai/manifest.yaml."""
    try:
        here = os.path.realpath(start)
        if not os.path.isdir(here):
            raise FileNotFoundError
    except (OSError, ValueError):
        raise Fatal(EXIT_INTERNAL, "cannot start at %s: no such directory" % start)
    directory = here
    while True:
        try:
            if stat.S_ISREG(os.lstat(native_path(directory, MANIFEST)).st_mode) and (
                    spelled_exactly(directory, MANIFEST)):
                return directory
        except OSError:
            pass
        legacy = os.path.join(directory, ".majordomus")
        if os.path.isdir(legacy) and not os.path.exists(os.path.join(legacy, "bin", "majordomus")):
            raise Fatal(EXIT_MISSING, "project data lives under %s (the pre-.ai layout), which "
                        "nothing reads any more; run: majordomus migrate" % legacy)
        parent = os.path.dirname(directory)
        if parent == directory:
            # The contract's message, then where a person who meets it first can go.
            exc = Fatal(EXIT_MISSING, "no Majordomus repository found from %s: no ancestor "
                        "directory carries .ai/manifest.yaml; see 'Start a layer' in the "
                        "README" % here)
            exc.nowhere = here        # `mcp` starts anyway, at this folder (§32)
            raise exc
        directory = parent


def manifest_places(here):
    """Where a manifest would make the folder `here` (canonical) part of a layer: the
    .ai/manifest.yaml of `here` and of each ancestor, nearest first, as find_root looks."""
    places = []
    while True:
        places.append(native_path(here, MANIFEST))
        parent = os.path.dirname(here)
        if parent == here:
            return places
        here = parent


def _read_declaration(root, relative, parse):
    """Parse one of the repository's YAML declarations (`parse`: parse_subset, or what
    gives its trees); fatal errors name its path (unreadable: exit 13; not the subset:
    exit 10)."""
    data = read_declared(root, relative)
    try:
        return parse(data.decode("utf-8"))
    except (UnicodeDecodeError, SubsetError) as exc:
        raise Fatal(EXIT_CONTRACT, "%s: %s" % (relative, exc))


def read_declared(root, relative):
    """The bytes of one of the repository's declarations (read_plain): a symlink, a FIFO
    or a file over 4 MiB is contract unmet (exit 10), named by its path and never by
    anything it points at; a file that cannot be read is exit 13 (§25)."""
    folder = linked_folder(root, relative, {})
    if folder is not None:
        raise Fatal(EXIT_CONTRACT, "%s: %s" % (relative, LINKED_FOLDER % folder))
    try:
        return read_plain(native_path(root, relative), what="the layer's declarations")[0]
    except NotPlain as exc:
        if exc.code == "unreadable":
            raise Fatal(EXIT_INTERNAL, "%s: cannot be read: %s" % (relative, exc.message))
        raise Fatal(EXIT_CONTRACT, "%s: %s" % (relative, exc.message))


_TYPE_NAMES = ((bool, "a boolean"), (str, "a string"), (dict, "a mapping"), (list, "a list"))


def _typed_key(tree, dotted, expected, where, required=True):
    """The value at a dotted key path, checked for presence and type (§2.2 rule 4)."""
    node = tree
    for segment in dotted.split("."):
        node = node.get(segment) if isinstance(node, dict) else None
        if node is None:
            if required:
                raise Fatal(EXIT_CONTRACT, "%s: missing key '%s'" % (where, dotted))
            return None
    if not isinstance(node, expected) or (expected is not bool and isinstance(node, bool)):
        name = dict(_TYPE_NAMES)[expected]
        raise Fatal(EXIT_CONTRACT, "%s: key '%s' must be %s" % (where, dotted, name))
    return node


class Manifest:
    """The checked manifest: sections as repo-relative paths, and the local half."""

    def __init__(self, tree):
        self.schema = tree["schema"]
        self.local = _ai_path(tree["local"]["path"])
        self.repo = _ai_path(tree["repo"]["path"])     # the tracked half (§33: providers/)
        self.sections = {name: _ai_path(value) for name, value in tree["sections"].items()}
        # The file names that must carry the context contract under .ai/ (§20.1).
        self.context_documents = frozenset(
            text for text in map(render_scalar, (tree.get("context") or {}).get("documents", ()))
            if text)
        # Longest path first, so that the first prefix match is the section of a file.
        self._by_length = sorted(self.sections.items(), key=lambda kv: -len(kv[1]))

    def section_of(self, path):
        for name, prefix in self._by_length:
            if path == prefix or path.startswith(prefix + "/"):
                return name
        return None

    def is_local(self, path):
        return path == self.local or path.startswith(self.local + "/")


def _ai_path(value):
    import posixpath
    return posixpath.normpath(".ai/" + value)


def _manifest_allow():
    allow = AllowList.shipped("manifest")
    if allow is None:
        raise _schema_defect("share/allow/manifest.txt is not embedded")
    return allow


def read_manifest(root, allow, parse=parse_subset):
    """§2.2, with its processing order: subset, unknown keys, schema, required keys."""
    tree = _read_declaration(root, MANIFEST, parse)
    unknown = allow.unknown(key_paths(tree))
    if unknown:
        raise Fatal(EXIT_CONTRACT, "%s: unknown key(s): %s" % (MANIFEST, ", ".join(unknown)))
    if tree.get("schema") != LAYER_SCHEMA:
        found = render_scalar(tree.get("schema"))
        raise Fatal(EXIT_CONTRACT, "%s: unsupported schema '%s'; this executable reads %s"
                    % (MANIFEST, "" if found is None else found, LAYER_SCHEMA))
    _typed_key(tree, "repo.path", str, MANIFEST)
    _typed_key(tree, "local.path", str, MANIFEST)
    _typed_key(tree, "local.tracked", bool, MANIFEST)
    _typed_key(tree, "local.implicit_context", bool, MANIFEST)
    for name in _typed_key(tree, "sections", dict, MANIFEST):
        _typed_key(tree, "sections." + name, str, MANIFEST)
    _typed_key(tree, "context.documents", list, MANIFEST, required=False)
    return Manifest(tree)


class SourceClass:
    """One declared class of sources.yaml: which files, read as which kind."""

    __slots__ = ("id", "kind", "pathspec", "required", "_match", "prefix")

    def __init__(self, spec):
        self.id = spec["id"]
        self.kind = spec["kind"]
        self.pathspec = spec["pathspec"]
        self.required = spec["required"]
        self._match = None
        pattern = self.pathspec[len(GLOB_MAGIC):]
        # The directories before the first wildcard: a cheap test that rules out most paths.
        wild = min([pattern.find(char) for char in "*?[\\" if char in pattern] or [-1])
        literal = pattern if wild < 0 else pattern[:wild]
        self.prefix = literal[:literal.rfind("/") + 1]

    def matcher(self, reached):
        """A test of the class's pathspec for the `reached` paths its prefix lets through:
        equality for a literal pathspec, str methods for a few paths, a regular expression
        (compiled once) for many or for a character class. A class no path reaches costs
        nothing."""
        pattern = self.pathspec[len(GLOB_MAGIC):]
        if not any(char in pattern for char in "*?[\\"):
            return pattern.__eq__
        if reached <= GLOB_BY_HAND:
            return glob_by_hand(pattern)
        if self._match is None:
            self._match = glob_matcher(pattern)
        return self._match


GLOB_MAGIC = ":(glob)"
_CLASS_KEYS = (("id", str), ("kind", str), ("discovery", str), ("pathspec", str),
               ("required", bool))
_CLASS_KEY_NAMES = frozenset(name for name, _ in _CLASS_KEYS)


def read_sources(root, manifest, parse=parse_subset):
    """§4.2: the declared classes in order; every defect is fatal (exit 10, or 13 unread)."""
    if "knowledge" not in manifest.sections:
        raise Fatal(EXIT_CONTRACT, "%s: no 'knowledge' section, so no sources can be declared"
                    % MANIFEST)
    where = manifest.sections["knowledge"] + "/sources.yaml"
    tree = _read_declaration(root, where, parse)
    for key in tree:
        if key not in ("version", "sources"):
            raise Fatal(EXIT_CONTRACT, "%s: unknown key '%s'" % (where, key))
    version = _typed_key(tree, "version", int, where)
    if version != 1:
        raise Fatal(EXIT_CONTRACT, "%s: version %d is not 1" % (where, version))
    classes, seen = [], set()
    for position, spec in enumerate(_typed_key(tree, "sources", list, where)):
        if not isinstance(spec, dict):
            raise Fatal(EXIT_CONTRACT, "%s: class %d: must be a mapping" % (where, position))
        label = ("class '%s'" % spec["id"] if isinstance(spec.get("id"), str)
                 else "class %d" % position)
        for key in spec:
            if key not in _CLASS_KEY_NAMES:
                raise Fatal(EXIT_CONTRACT, "%s: %s: unknown key '%s'" % (where, label, key))
        for key, expected in _CLASS_KEYS:
            _typed_key(spec, key, expected, "%s: %s" % (where, label))
        if spec["discovery"] != "vcs":
            raise Fatal(EXIT_CONTRACT, "%s: %s: discovery '%s' is not vcs"
                        % (where, label, spec["discovery"]))
        if spec["id"] in seen:
            raise Fatal(EXIT_CONTRACT, "%s: %s is declared twice" % (where, label))
        if not spec["pathspec"].startswith(GLOB_MAGIC):
            raise Fatal(EXIT_CONTRACT, "%s: %s: pathspec must start with %s"
                        % (where, label, GLOB_MAGIC))
        seen.add(spec["id"])
        classes.append(SourceClass(spec))
    return classes


def read_repository_kinds(root, manifest, shipped, parse=parse_subset):
    """§4.4: the repository's kinds file and allow-lists, merged over the shipped kinds:
    (kinds, the paths of the repository's lists). Every defect is fatal (exit 10,
    `<path>: <reason>`); no kinds file = the shipped kinds."""
    knowledge = manifest.sections["knowledge"]
    where = knowledge + "/kinds.yaml"
    lists = _repository_allow_lists(root, knowledge + "/allow")
    if not os.path.lexists(native_path(root, where)):
        return shipped, sorted(allow.where for allow in lists.values())
    tree = _read_declaration(root, where, parse)
    try:
        declared, specs = check_kinds_tree(tree)
        for name in specs:
            if name in shipped.specs:
                raise KindsError("kind '%s' is declared by both %s and %s; a repository adds "
                                 "kinds, it does not redefine them" % (name, SHIPPED_KINDS, where))
        merged = dict(shipped.specs)
        merged.update(specs)
        order = shipped.declared_order + [d for d in declared if d not in shipped.declared]
        link_kinds(merged, order)
        allows = dict(shipped.allows)
        for name, spec in specs.items():
            wanted = spec.get("allow")
            if wanted is None or wanted in allows:
                continue
            allows[wanted] = lists.get(wanted) or AllowList.shipped(wanted)
            if allows[wanted] is None:
                raise KindsError("kind '%s' names allow-list '%s', which is neither %s/allow/%s.txt"
                                 " nor a shipped list" % (name, wanted, knowledge, wanted))
    except KindsError as exc:
        raise Fatal(EXIT_CONTRACT, "%s: %s" % (where, exc))
    return (Kinds(merged, order, allows, kinds_file=where),
            sorted(allow.where for allow in lists.values()))


def _repository_allow_lists(root, folder):
    """The `.txt` lists of the repository's allow/ folder, each read and compiled now."""
    lists = {}
    linked = linked_folder(root, folder + "/", {})
    if linked is not None:     # (its names are not even listed)
        raise Fatal(EXIT_CONTRACT, "%s: %s" % (folder, LINKED_FOLDER % linked))
    try:
        # Every `.txt` but a folder: a link is refused by read_declared, never followed.
        names = sorted(entry.name for entry in os.scandir(native_path(root, folder))
                       if entry.name.endswith(".txt") and not entry.is_dir(follow_symlinks=False))
    except OSError:
        return lists   # no folder: no lists
    for file_name in names:
        name, where = file_name[:-4], folder + "/" + file_name
        try:
            # In any case: on a case-insensitive file system `Rule.txt` is `rule.txt`.
            read_embedded("share/allow/" + file_name.lower())
        except OSError:
            pass
        else:
            raise Fatal(EXIT_CONTRACT, "%s: allow-list '%s' is shipped; a repository adds "
                        "allow-lists, it does not redefine them" % (where, name))
        data = read_declared(root, where)
        try:
            lists[name] = AllowList.from_text(name, data.decode("utf-8"), where)
            lists[name].compile()
        except (UnicodeDecodeError, KindsError) as exc:
            raise Fatal(EXIT_CONTRACT, "%s: %s" % (where, exc))
    return lists


# ---------------------------------------------------------------------------------------
# 9. Discovery (§4.3): one `git ls-files -z`, or a walk of the work tree; class order,
#    sorting, the local half, claimed-twice, required classes; git's HEAD and branch.
# ---------------------------------------------------------------------------------------

class Diagnostic:
    __slots__ = ("severity", "code", "path", "message")

    def __init__(self, severity, code, path, message):
        self.severity, self.code, self.path, self.message = severity, code, path, message

    def as_dict(self):
        out = {"severity": self.severity, "code": self.code}
        if self.path is not None:
            out["path"] = self.path
        out["message"] = self.message
        return out


class _Excluded(Exception):
    """A file (or a member) that cannot become an object: the first failed check of §5.1.
    `context`: the failure is also a problem of the context tree (§20.1)."""

    def __init__(self, code, message, context=False):
        Exception.__init__(self, message)
        self.code = code
        self.message = message
        self.context = context


def file_signature(info):
    """(size, mtime_ns, inode) of an lstat result, or None: what the sweep compares."""
    return None if info is None else (info.st_size, info.st_mtime_ns, info.st_ino)


def _git(root, *args):
    """Run one read-only git command in `root`: (returncode, stdout bytes, stderr text)."""
    return git_started(root, *args)()


def git_started(root, *args):
    """Start one read-only git command in `root`; what it returns waits for it and gives
    (returncode, stdout bytes, stderr text). Started early, git runs while Python works."""
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    program = git_program()
    missing = lambda: (127, b"", "git is not installed (no 'git' on PATH)")  # noqa: E731
    if program is None:
        return missing
    # An fsmonitor daemon would write under .git (§24).
    argv = [program, "-c", "core.fsmonitor=false", "-C", root] + list(args)
    try:
        finish = (_spawn(argv, env) if hasattr(os, "posix_spawn")
                  else _spawn_portable(argv, env))
    except FileNotFoundError:
        return missing
    except OSError as exc:
        reason = "git cannot be run: %s" % _os_reason(exc)
        return lambda: (126, b"", reason)

    def wait():
        code, out, err = finish()
        return code, out, _git_reason(err)
    return wait


def _spawn(argv, env):
    """posix_spawn, and a function that reads stdout and stderr together and reaps the
    child: `subprocess` would cost the start-up of every MCP session more than git does."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        pid = os.posix_spawn(argv[0], argv, env, file_actions=[
            (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2)])
    except BaseException:
        for fd in (out_r, err_r):
            os.close(fd)
        raise
    finally:
        for fd in (out_w, err_w, null):
            os.close(fd)

    def finish():
        import select
        reading, done = {out_r: [], err_r: []}, {}
        try:
            while reading:
                ready, _, _ = select.select(list(reading), [], [])
                for fd in ready:
                    data = os.read(fd, 1 << 20)
                    if data:
                        reading[fd].append(data)
                    else:
                        done[fd] = b"".join(reading.pop(fd))
        finally:
            os.close(out_r)
            os.close(err_r)
            _, status = os.waitpid(pid, 0)
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128
        return code, done[out_r], done[err_r]
    return finish


def _spawn_portable(argv, env):
    import subprocess
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)

    def finish():
        out, err = proc.communicate()
        return proc.returncode, out, err
    return finish


def _git_reason(stderr):
    """git's own `fatal:` line, alone: hints and advice can quote configuration."""
    lines = stderr.decode("utf-8", "replace").splitlines()
    for line in lines:
        if line.startswith("fatal: "):
            return line[len("fatal: "):].strip()
    return lines[0].strip() if lines else "git failed"


LS_FILES = ("ls-files", "-s", "-z")


def list_vcs(root, listing=None):
    """The paths of the git index under `root`, relative to it, and those of them whose
    index mode is a symlink's (120000), whatever is on disk: with core.symlinks=false a
    tracked symlink is checked out as a small text file (§24). One git call (`listing`:
    git_started's wait for LS_FILES, when the caller started it earlier)."""
    code, out, reason = (listing or git_started(root, *LS_FILES))()
    if code != 0:
        raise Fatal(EXIT_INTERNAL, "git: %s; discovery through the version-control index "
                    "needs git (or pass --discovery filesystem)" % reason)
    paths, links = [], set()
    for entry in out.split(b"\0"):
        tab = entry.find(b"\t")     # `<mode> <object> <stage>\t<path>`
        if tab < 0:
            continue
        path = entry[tab + 1:].decode("utf-8", "replace")
        paths.append(path)
        if entry.startswith(b"120000 "):
            links.add(path)
    return paths, links


def list_filesystem(root, manifest):
    """The regular files of the work tree: no symlink followed, no .git, no local half;
    and the signature of each directory entered, taken before it was listed (the stamp
    a live process compares, §15.2)."""
    found, entered, on_disk = [], [], {}
    pending = [("", "")]
    while pending:
        relative, disk = pending.pop()
        folder = native_path(root, disk)
        try:
            entered.append((folder, file_signature(os.lstat(folder))))
            entries = os.scandir(folder)
        except OSError:
            continue
        with entries:
            for entry in entries:
                if entry.is_symlink() or is_junction(entry):
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                name = walked_name(entry.name, is_dir)
                if name is None:
                    continue
                path = relative + name
                if name != entry.name or disk != relative:
                    on_disk[path] = disk + entry.name   # the name in NFC is not the disk's
                if is_dir:
                    if entry.name != ".git" and not manifest.is_local(path):
                        pending.append((path + "/", on_disk.get(path, path) + "/"))
                else:
                    found.append(path)
    return found, entered, on_disk


class GitDirs:
    """Where git keeps a work tree's control files: its git dir (HEAD, index, …), the
    common dir it shares with linked worktrees (refs, packed-refs), and the top level."""

    __slots__ = ("git_dir", "common_dir", "toplevel")

    def __init__(self, git_dir, common_dir, toplevel):
        self.git_dir, self.common_dir, self.toplevel = git_dir, common_dir, toplevel


def find_git_dirs(root):
    """GitDirs of the work tree holding `root`, found as git finds them (a `.git` folder,
    or a `.git` file naming a linked worktree's git dir); None outside a work tree.
    Read from disk, not through git: start-up runs git once (ls-files)."""
    if os.environ.get("GIT_DIR"):
        return _git_dirs_from_git(root)   # the environment overrides discovery
    directory = root
    while True:
        marker = os.path.join(directory, ".git")
        try:
            if os.path.isdir(marker):
                git_dir = marker
            elif os.path.isfile(marker):
                line = _git_file(marker).strip()
                if not line.startswith("gitdir: "):
                    return None
                git_dir = os.path.join(directory, line[len("gitdir: "):])
            else:
                git_dir = None
            if git_dir is not None:
                common = git_dir
                if os.path.isfile(os.path.join(git_dir, "commondir")):
                    common = os.path.join(git_dir, _git_file(os.path.join(
                        git_dir, "commondir")).strip())
                return GitDirs(os.path.realpath(git_dir), os.path.realpath(common), directory)
        except (OSError, NotPlain, UnicodeDecodeError):
            return _git_dirs_from_git(root)
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def _git_dirs_from_git(root):
    code, out, _ = _git(root, "rev-parse", "--absolute-git-dir", "--git-common-dir",
                        "--show-toplevel")
    lines = out.decode("utf-8", "replace").splitlines()
    if code != 0 or len(lines) != 3:
        return None
    common = lines[1] if os.path.isabs(lines[1]) else os.path.join(root, lines[1])
    return GitDirs(lines[0], os.path.realpath(common), lines[2])


def _object_name(text):
    """A git object name: 40 or 64 lower-case hex digits."""
    return len(text) in (40, 64) and not text.strip("0123456789abcdef")


def read_head(dirs):
    """(head commit or None, branch or None) from the control files; git itself only
    when they are of a form this does not read (e.g. the reftable format)."""
    try:
        head = _git_file(os.path.join(dirs.git_dir, "HEAD")).strip()
    except (NotPlain, UnicodeDecodeError):
        return None, None
    if _object_name(head):
        return head, None                    # detached
    if not head.startswith("ref: ") or head == "ref: refs/heads/.invalid":
        return _head_from_git(dirs.toplevel)
    ref = head[len("ref: "):]
    branch = ref[len("refs/heads/"):] if ref.startswith("refs/heads/") else None
    return _resolve_ref(dirs, ref), branch


def _resolve_ref(dirs, ref):
    for folder in (dirs.git_dir, dirs.common_dir):
        try:
            value = _git_file(os.path.join(folder, ref)).strip()
            return value if _object_name(value) else None
        except (NotPlain, UnicodeDecodeError):
            continue
    try:
        packed = _git_file(os.path.join(dirs.common_dir, "packed-refs"), 1 << 30, "replace")
    except NotPlain:
        return None
    for line in packed.splitlines():
        name, _, target = line.partition(" ")
        if target == ref and _object_name(name):
            return name
    return None   # an unborn branch


def root_digest(root):
    """The sha256 of a root's real path, in hex: what names its lease (§27) and tells its
    checkout's peers apart from another's (§31)."""
    return text_digest(os.path.realpath(root))


def text_digest(text):
    """The sha256 of a text (UTF-8), in hex."""
    return sha256_hex(text.encode("utf-8", "surrogateescape"))


def sha256_hex(data):
    """The sha256 of bytes, in hex, without hashlib's start-up (its OpenSSL: 3 ms)."""
    try:
        from _sha256 import sha256           # 3.9-3.11
    except ImportError:
        try:
            from _sha2 import sha256         # 3.12 and later
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


def checkout_tag(root):
    """How the peers of another checkout are told apart: `p1@` and these 8 hex digits."""
    return root_digest(root)[:8]


def checkouts(dirs, root):
    """§31: the layer roots of the other checkouts of the repository `dirs` is one of (the
    same git common dir: its main work tree and each linked worktree), where `root` is this
    checkout's layer root; read from git's files (worktrees/*/gitdir), never through git.
    A checkout whose folder is gone is left out; a bare repository has no main one."""
    inner = os.path.relpath(root, dirs.toplevel)
    tops = []
    if os.path.basename(dirs.common_dir) == ".git":
        tops.append(os.path.dirname(dirs.common_dir))
    folder = os.path.join(dirs.common_dir, "worktrees")
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        names = []
    for name in names:
        try:
            gitdir = _git_file(os.path.join(folder, name, "gitdir")).strip()
        except (OSError, NotPlain, UnicodeDecodeError):
            continue
        if os.path.basename(gitdir) == ".git":
            tops.append(os.path.dirname(gitdir))
    here = os.path.realpath(root)
    found = []
    for top in tops:
        other = os.path.realpath(os.path.join(top, inner) if inner != "." else top)
        if other != here and other not in found and os.path.isdir(other):
            found.append(other)
    return found


def _git_file(path, limit=4096, errors="strict"):
    """The text of one of git's control files (read_plain: links followed, as git follows
    them, but never a FIFO or a device); NotPlain or UnicodeDecodeError."""
    return read_plain(path, limit=limit, follow=True)[0].decode("utf-8", errors)


def _head_from_git(root):
    code, out, _ = _git(root, "rev-parse", "-q", "--verify", "HEAD")
    head = out.decode("ascii", "replace").strip() if code == 0 else None
    code, out, _ = _git(root, "symbolic-ref", "-q", "--short", "HEAD")
    branch = out.decode("utf-8", "replace").strip() if code == 0 else None
    return (head if head and _object_name(head) else None), branch or None


def working_tree_state(root):
    """(`clean` or `dirty` (anything `git status --porcelain` would print), None), or
    (None, git's reason) when git cannot say anything about the work tree."""
    code, out, reason = _git(root, "status", "--porcelain", "-z")
    if code != 0:
        return None, reason
    return ("dirty" if out.strip(b"\0") else "clean"), None


def discover(paths, classes, manifest):
    """§4.3: [(path, class)] in class order, and the discovery diagnostics."""
    claimed, claims, diagnostics = {}, [], []
    candidates = [p for p in paths if not manifest.is_local(p)]
    for source in classes:
        kept = 0
        reached = [p for p in candidates if p.startswith(source.prefix)]
        match = source.matcher(len(reached))
        for path in sorted(set(p for p in reached if match(p))):
            first = claimed.get(path)
            if first is not None:
                diagnostics.append(Diagnostic(
                    "warning", "claimed_twice", path, "matched by class '%s' after class '%s'; "
                    "kept under '%s'" % (source.id, first.id, first.id)))
                continue
            claimed[path] = source
            claims.append((path, source))
            kept += 1
        if source.required and not kept:
            diagnostics.append(Diagnostic(
                "error", "required_source_empty", None, "required class '%s' (%s) discovered "
                "nothing" % (source.id, source.pathspec)))
    return claims, diagnostics


# ---------------------------------------------------------------------------------------
# 10. Context documents (§20): the contract each one meets, the checks across them (part
#    of building every index), and what governs a path: the ancestor chain, filtered and
#    ordered, with supersession. The later shell tool (oracle/context/) is the judge: its
#    classes, messages, order and text are reproduced as it has them.
# ---------------------------------------------------------------------------------------

CONTEXT_KIND = "context"
CONTEXT_SCHEMA = "context/v1"
LAYER_TREE = ".ai"
_CONTEXT_REQUIRED = ("schema", "id", "kind", "title", "description", "status", "scope",
                     "composition", "order")
_CONTEXT_CHOICES = (("status", ("active", "deprecated"), "is neither active nor deprecated"),
                    ("scope", ("directory", "subtree", "explicit"),
                     "is not directory, subtree or explicit"),
                    ("composition", ("extend", "replace", "final"),
                     "is not extend, replace or final"))
_CONTEXT_ID_REST = _LOWER + _DIGITS + "-"
_AUDIENCES = ("human", "agent")


def in_layer_tree(path):
    """Is a repository-relative path inside the layer's tree, `.ai/` (§20.1)?"""
    return path.startswith(LAYER_TREE + "/")


def is_context_document(obj):
    return obj.kind == CONTEXT_KIND and in_layer_tree(obj.path)


def is_context_convention(manifest, path):
    """Does the manifest name this file's base name as a context document (context.documents)?"""
    return in_layer_tree(path) and path.rpartition("/")[2] in manifest.context_documents


def convention_message(path, found, text):
    """invalid_context for a file the manifest names as a context document that is not one."""
    name = path.rpartition("/")[2]
    if found is None or text.startswith(("---\n---\n", "---\n---\r\n")) or text == "---\n---":
        return ("carries no front matter, and the manifest names %s as a context document "
                "(context.documents)" % name)
    declared = render_scalar(found.get("kind")) or "absent"
    return ("front matter is not the context contract (kind '%s'), and the manifest names %s "
            "as a context document" % (declared, name))


def declares_context_schema(path, metadata):
    """Does a file under .ai/ declare the context contract by its schema (`context` or
    `context/…`), whatever its `kind` says? The shell tool then reads it as a context
    document, so that a wrong or missing kind is `kind is K, not context` or `lacks kind`."""
    schema = render_scalar(metadata.get("schema")) or ""
    return in_layer_tree(path) and path.endswith(".md") and (
        schema == CONTEXT_KIND or schema.startswith(CONTEXT_KIND + "/"))


def broken_front_is_context(path, text, message):
    """Is a front matter that cannot be read a problem of the context tree? One that never
    closes is, on any Markdown file under .ai/; one that does not parse is when it declares
    the contract (a `schema: context/…` or `kind: context` line), as the shell tool has it."""
    if not in_layer_tree(path) or not path.endswith(".md"):
        return False
    if message.endswith("never closed"):
        return True
    for line in text.split("\n")[1:]:
        if line == "---":
            break
        if line.startswith("schema: context/") or line == "kind: context":
            return True
    return False


def _context_id(text):
    """`[a-z][a-z0-9-]*(\\.[a-z0-9-]+)*`: a lower-case dotted identifier."""
    first, *rest = text.split(".")
    return is_name(first, _LOWER, _CONTEXT_ID_REST) and all(
        part and not part.strip(_CONTEXT_ID_REST) for part in rest)


def _first_text(metadata, field):
    value = metadata.get(field)
    return (render_scalar(value[0]) or "") if isinstance(value, list) and value else ""


def check_context_contract(metadata):
    """§20.1, what one document must meet on its own, after its allow-list and schema, in
    the shell tool's order; `invalid_context` with its message. (Its providers and
    audience are checked with the policy, by context_lists_problem.)"""
    def fail(message):
        raise _Excluded("invalid_context", message)

    text = {field: render_scalar(metadata.get(field)) or "" for field in _CONTEXT_REQUIRED}
    for field in _CONTEXT_REQUIRED:
        if not text[field]:
            fail("lacks " + field)
    if not _first_text(metadata, "providers"):
        fail('lacks providers (write providers: ["*"] for every provider)')
    if text["kind"] != CONTEXT_KIND:
        fail("kind is %s, not context" % text["kind"])
    if not _context_id(text["id"]):
        fail("id '%s' is not a lower-case dotted identifier" % text["id"])
    for field, allowed, refusal in _CONTEXT_CHOICES:
        if text[field] not in allowed:
            fail("%s '%s' %s" % (field, text[field], refusal))
    if not is_integer_text(text["order"]):
        fail("order '%s' is not an integer" % text["order"])
    scope, composition = text["scope"], text["composition"]
    paths, supersedes = _first_text(metadata, "paths"), _first_text(metadata, "supersedes")
    if scope == "explicit" and not paths:
        fail("scope explicit names no paths")
    if scope != "explicit" and paths:
        fail("paths are for scope explicit only (scope is %s)" % scope)
    if composition == "replace" and not supersedes:
        fail("composition replace names nothing in supersedes")
    if composition != "replace" and supersedes:
        fail("supersedes is for composition replace only (composition is %s)" % composition)


def policy_object(decl, results):
    """The object read from the file the manifest's policy section names (served or not),
    or None."""
    result = results.get(decl.manifest.sections.get("policy"))
    return result.objects[0] if result is not None and result.objects else None


def policy_providers(decl, results):
    """The provider names the policy's projections declare, in order (§20.1), read from
    the policy object of this index (none when the policy is not one)."""
    policy = policy_object(decl, results)
    if policy is None:
        return []
    names = []
    for projection in policy.metadata.get("projections") or ():
        name = render_scalar(projection.get("provider")) if isinstance(projection, dict) else None
        if not name:
            break
        names.append(name)
    return names


def context_lists_problem(obj, providers):
    """The first entry of a document's `providers` the policy does not project, or of its
    `audience` that is neither human nor agent, in file order: the Diagnostic, or None."""
    if not is_context_document(obj):
        return None
    projected = " %s " % " ".join(providers)
    for path in key_paths(obj.metadata):
        field, _, number = path.partition(".")
        if field not in ("providers", "audience") or not number.isdigit():
            continue
        value = render_scalar(obj.metadata[field][int(number)])
        if value is None:
            continue
        if field == "providers" and value != "*" and " %s " % value not in projected:
            return Diagnostic("error", "unknown_provider", obj.path, "provider '%s' is not one "
                              "the policy projects (have:%s)" % (value, projected))
        if field == "audience" and value not in _AUDIENCES:
            return Diagnostic("error", "invalid_context", obj.path,
                              "audience '%s' is neither human nor agent" % value)
    return None


def context_checks(result, providers):
    """Each context-kind object of a FileResult (by id) with its lists problem
    (context_lists_problem) and, when it is a document of the tree without one, its
    ContextDoc: made once per result and providers, so that an unchanged file keeps them
    across generations (§15.2) as it keeps its objects."""
    checked = result.checked
    if checked is None or checked[0] != providers:
        found = {}
        for obj in result.objects:
            if obj.kind == CONTEXT_KIND:
                failure = context_lists_problem(obj, providers)
                found[id(obj)] = (failure, ContextDoc(obj) if failure is None
                                  and is_context_document(obj) else None)
        checked = result.checked = (list(providers), found)
    return checked[1]


def _words(metadata, field):
    """A list field as the shell tool reads it: the items up to the first empty one, each
    split into words."""
    value = metadata.get(field)
    words = []
    for item in value if isinstance(value, list) else ():
        text = render_scalar(item)
        if not text:
            break
        words += [word for word in text.split(" ") if word]
    return words


def _depth(directory):
    """Path segments below .ai (`.ai` is 0), counted as the shell tool counts them."""
    rest = directory[len(LAYER_TREE):] if directory.startswith(LAYER_TREE) else directory
    return rest.count("/")


def norm_rel(path):
    """A repository-relative path normalised (a leading ./, doubled and trailing slashes);
    None when it is empty, absolute or leaves the repository."""
    if path.startswith("./"):
        path = path[2:]
    while "//" in path:
        path = path.replace("//", "/")
    if path.endswith("/"):
        path = path[:-1]
    if (not path or path[0] == "/" or path == ".." or path.startswith("../")
            or path.endswith("/..") or "/../" in path):
        return None
    return path


def path_contains(outer, inner):
    """Is `inner` `outer` or below it (both normalised first when they can be)?"""
    outer, inner = norm_rel(outer) or outer, norm_rel(inner) or inner
    return inner == outer or inner.startswith(outer + "/")


class ContextDoc:
    """One context document of the tree, its fields as resolution reads them."""

    __slots__ = ("obj", "id", "path", "dir", "depth", "scope", "composition", "order",
                 "status", "title", "providers", "audience", "supersedes", "tracks", "paths")

    def __init__(self, obj):
        meta = obj.metadata
        self.obj, self.id, self.path = obj, obj.identity, obj.path
        self.dir = obj.provenance["directory"]
        self.depth = _depth(self.dir)
        self.scope, self.composition, self.status = (
            render_scalar(meta.get(f)) for f in ("scope", "composition", "status"))
        self.order = int(render_scalar(meta.get("order")))
        self.title = obj.title
        self.providers, self.supersedes, self.tracks, self.paths = (
            _words(meta, f) for f in ("providers", "supersedes", "tracks", "paths"))
        # No audience item at all addresses both (an empty item still counts as one).
        given = meta.get("audience")
        listed = isinstance(given, list) and any(render_scalar(a) is not None for a in given)
        self.audience = _words(meta, "audience") if listed else list(_AUDIENCES)


class ContextTree:
    """The context documents of one index, in path order; the problems of the tree (every
    §20.1 diagnostic, in index order); and the files each `tracks` pathspec matches.
    `docs`: the documents' ContextDoc in index order (context_checks makes them)."""

    def __init__(self, decl, docs, listed, providers, problems, checked):
        self.root, self.providers, self.problems = decl.root, providers, problems
        self.docs = sorted(docs, key=lambda d: d.path)
        # What the checks across documents see: `docs` and the documents excluded for
        # claiming one id (they are declared; a tree with them resolves nothing anyway).
        self._checked = sorted(checked, key=lambda d: d.path)
        self.by_id = {}
        for doc in self._checked:
            self.by_id.setdefault(doc.id, doc)
        # A new tracked file can mend a `tracks`, a new folder a `paths` entry: a live
        # process then rebuilds on a changed listing alone (§15.2).
        self.follows_listing = any(d.tracks or d.paths for d in self._checked)
        self._listed, self._ordered, self.vcs = listed, None, decl.discovery == "vcs"
        self.tracked = {}
        self._sha = {}
        self.cross_problems = self._cross_check()
        problems += self.cross_problems

    def files_of(self, spec):
        """The listed files a `tracks` pathspec matches, sorted (once per generation)."""
        files = self.tracked.get(spec)
        if files is None:
            if self._ordered is None:
                self._ordered = sorted(self._listed)   # git lists them sorted: linear
            files = self.tracked[spec] = pathspec_files(self.root, spec, self._ordered,
                                                        self.vcs)
        return files

    def _cross_check(self):
        """§20.1's second group, in the shell tool's order: each document's paths, tracks
        and supersedes, then every supersedes chain that returns to its start."""
        found = []

        def problem(doc, code, message):
            found.append(Diagnostic("error", code, doc.path, message))

        for doc in self._checked:
            for entry in doc.paths:
                normal = norm_rel(entry)
                if normal is None:
                    problem(doc, "broken_reference", "paths entry '%s' is not a "
                            "repository-relative path" % entry)
                elif not path_contains(LAYER_TREE, normal):
                    problem(doc, "broken_reference", "paths entry '%s' lies outside the tree "
                            "%s/" % (entry, LAYER_TREE))
                elif not os.path.isdir(native_path(self.root, normal)):
                    problem(doc, "broken_reference", "paths entry '%s' is not a directory in "
                            "this repository" % entry)
            for spec in doc.tracks:
                if not self.files_of(spec):
                    problem(doc, "broken_reference", "tracks '%s', which matches no tracked "
                            "file" % spec)
            for target in doc.supersedes:
                other = self.by_id.get(target)
                if other is None:
                    problem(doc, "broken_reference", "supersedes '%s', which no document "
                            "declares" % target)
                elif other is doc:
                    problem(doc, "cycle", "supersedes itself")
                elif not path_contains(other.dir, doc.dir):
                    problem(doc, "broken_reference", "supersedes '%s' at %s, which is not in "
                            "its ancestor chain; a document may only supersede what applies "
                            "above it" % (target, other.path))
                elif other.composition == "final":
                    problem(doc, "illegal_override", "supersedes '%s', which is final; no "
                            "descendant may weaken it" % target)
        for doc in sorted(self._checked, key=lambda d: d.id):
            if self._returns(doc):
                problem(doc, "cycle", "supersedes chain returns to itself")
        return found

    def _returns(self, start):
        """Does a walk along supersedes edges from `start` come back to its id?"""
        seen, pending = set(), [start]
        while pending:
            for target in pending.pop().supersedes:
                if target == start.id:
                    return True
                if target not in seen:
                    seen.add(target)
                    if target in self.by_id:
                        pending.append(self.by_id[target])
        return False

    def sha256(self, doc):
        digest = self._sha.get(doc.path)
        if digest is None:
            digest = self._sha[doc.path] = sha256_hex(doc.obj.content.encode("utf-8"))
        return digest


def pathspec_files(root, spec, ordered, vcs):
    """What `git ls-files -- SPEC` lists among `ordered` (sorted, §20.1): a plain pathspec is the
    file of that name or every file below that directory; one with wildcards matches with
    git's wildmatch, `*` and `?` crossing `/`. A pathspec git would have to normalise or
    interpret (magic, `..`, absolute) is asked of git itself under vcs discovery."""
    plain = _plain_pathspec(spec)
    if plain is None:
        if not vcs:
            return []
        code, out, _ = _git(root, "ls-files", "-z", "--", spec)
        if code != 0:
            return []
        return sorted(p.decode("utf-8", "replace") for p in out.split(b"\0") if p)
    import bisect
    wild = next((i for i, char in enumerate(plain) if char in "*?[\\"), -1)
    literal = plain if wild < 0 else plain[:wild]
    below = plain if plain.endswith("/") or not plain else plain + "/"
    matcher = _wildmatch(_bytes_text(plain)) if wild >= 0 else None
    found = []
    for at in range(bisect.bisect_left(ordered, literal), len(ordered)):
        path = ordered[at]
        if not path.startswith(literal):
            break
        if path == plain or path.startswith(below) or (
                matcher is not None and matcher(_bytes_text(path))):
            found.append(path)
    return found


def _bytes_text(text):
    """A path as one character per UTF-8 byte: git matches bytes (`?` is one byte)."""
    return text.encode("utf-8").decode("latin-1")


def _plain_pathspec(spec):
    """The pathspec as git reads it from the top of the work tree, or None when git must
    be asked (magic, absolute, or leaving the tree)."""
    if spec.startswith((":", "/")):
        return None
    parts = []
    for segment in spec.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(segment)
    joined = "/".join(parts)
    return joined + "/" if joined and spec.endswith(("/", "/.")) else joined


def _wildmatch(pattern):
    """git's wildmatch without WM_PATHNAME (a pathspec's default): `*` matches anything,
    `/` included; `?` one character; `[…]` a class; `\\` escapes."""
    import re
    return re.compile("(?s)" + _glob_segment(pattern, pathname=False) + r"\Z").match


def context_target(root, given, absent=False):
    """§20.2 step 1, as the shell tool has it: (the normalised path, its directory). With
    `absent` (the brief, §26), a path that does not exist is a file that would be created
    there, judged by the nearest folder above it that exists: (path, directory, exists)."""
    path = target_path(root, given, as_sent=absent)
    full = native_path(root, path) if path != "." else root
    exists = os.path.exists(full)
    if not exists and not absent:
        raise NotFound("no such path in the repository: %s" % path)
    folder = exists and os.path.isdir(full)
    where = full if folder else os.path.dirname(full)
    while not exists and not os.path.isdir(where) and len(where) > len(root):
        where = os.path.dirname(where)
    refuse_outside(root, where, path)
    directory = path if folder else (path.rpartition("/")[0] if "/" in path else ".")
    return (path, directory, exists) if absent else (path, directory)


PATH_BOUND = 4096       # bytes of a path from outside (§25.1)


def bounded_path(given):
    """§25.1: a path from outside (a brief's, an announce's, a context's) over PATH_BOUND
    bytes, or holding a NUL, is invalid input: said before any file-system call, at the
    cost of one look at its length."""
    if len(given) > PATH_BOUND // 4 and len(given.encode("utf-8", "surrogatepass")) > (
            PATH_BOUND):
        raise InvalidInput("the path is over the %d byte bound" % PATH_BOUND)
    if "\x00" in given:
        raise InvalidInput("the path holds a NUL character")
    return given


def target_path(root, given, as_sent=False):
    """§20.2 step 1's normalisation: `given` relative to the root (a path under the root
    made relative; a leading ./, doubled and trailing slashes), `.` for the root itself;
    RefusedPath when it is empty, absolute elsewhere, or leaves the repository;
    InvalidInput when it is not bounded (bounded_path). `as_sent` (a brief's, an
    announce's path: as clients send them, §29) reads the platform's own separator as `/`
    and a path that names the root through a symbolic link, as a hook that sends the
    folder it was started in does; context resolution takes the shell tool's forms only."""
    bounded_path(given)
    if not given:
        raise RefusedPath("refused-path '' (absolute, or leaves the repository)")
    path, top = given, root
    if as_sent and os.sep != "/":
        path, top = path.replace(os.sep, "/"), root.replace(os.sep, "/")
    if path == top or path.startswith(top + "/"):
        path = path[len(top):]
        path = path[1:] if path.startswith("/") else path
    elif as_sent and os.path.isabs(given):
        under = _under_root(root, given)
        path = path if under is None else under
    path = path or "."
    if path != ".":
        path = norm_rel(path)
        if path is None:
            raise RefusedPath("refused-path '%s' (absolute, or leaves the repository)" % given)
    return path


def _under_root(root, given):
    """An absolute path that names a place under the root through a symbolic link (the
    root is a real path, §2.1): that place relative to the root ("" for the root itself),
    else None. The part of `given` that does not exist yet is kept as written."""
    real = os.path.realpath(given)
    if real == root:
        return ""
    inside = os.path.join(root, "")
    if not real.startswith(inside):
        return None
    rest = real[len(inside):]
    return rest.replace(os.sep, "/") if os.sep != "/" else rest


def refuse_outside(root, where, path):
    """RefusedPath when `where`, the place on disk that judges `path`, resolves outside
    the repository (through a symlink on its way)."""
    real, top = os.path.realpath(where), os.path.realpath(root)
    if real != top and not real.startswith(os.path.join(top, "")):
        raise RefusedPath("refused-path '%s' resolves outside the repository" % path)


def context_filters(tree, arguments):
    """(provider, audience) of a ContextInput (or BriefInput): an unknown provider is
    invalid input."""
    provider, audience = arguments.get("provider") or None, arguments.get("audience") or None
    if provider is not None and " %s " % provider not in " %s " % " ".join(tree.providers):
        raise InvalidInput("unknown-provider '%s'; the policy projects: %s"
                           % (provider, " ".join(tree.providers)))
    return provider, audience


def resolve_context(gen, arguments):
    """§20.2: the ContextResolution of a path."""
    tree = gen.index.context
    provider, audience = context_filters(tree, arguments)
    if tree.problems:
        raise Refused("the context tree does not validate (%d problem(s)); nothing is "
                      "resolved partially" % len(tree.problems),
                      data={"problems": [d.as_dict() for d in tree.problems]},
                      detail=["%s %s: %s" % (d.code, d.path, d.message) for d in tree.problems])
    target, directory = context_target(gen.root, arguments["path"])
    chain, excluded = context_chain(tree, target, directory, provider, audience)
    return {
        "schema": CONTEXT_SCHEMA, "target": target, "directory": directory,
        "provider": provider, "audience": audience,
        "fingerprint": _fingerprint(tree, [doc for doc, _ in chain]),
        "documents": [_chain_entry(tree, number, doc, reason)
                      for number, (doc, reason) in enumerate(chain, 1)],
        "excluded": [{"id": doc.id, "uri": doc.obj.uri, "path": doc.path, "reason": reason}
                     for doc, reason in excluded]}


def context_chain(tree, target, directory, provider, audience, unlisted=False):
    """§20.2 steps 3-6 over the tree's documents: ([(document, why it applies)] in chain
    order, [(document, why it is left out)] in the shell tool's order). `unlisted`: the
    target is a file that does not exist yet (the brief, §26), which a `tracks` pathspec
    that would list it once it is tracked governs too."""
    candidates, excluded = [], []
    inside = path_contains(LAYER_TREE, directory)
    for doc in tree.docs:
        reason, depth = _applies(tree, doc, target, directory, inside, unlisted)
        if reason is None:
            continue
        left_out = _filtered(doc, provider, audience)
        if left_out is not None:
            excluded.append((doc, left_out))
            continue
        candidates.append((depth, doc.order, doc.path, doc, reason))
    candidates.sort(key=lambda c: (c[0], c[1], c[2].encode("utf-8")))
    applying = set(id(c[3]) for c in candidates)
    superseded = set()
    for _, _, _, doc, _ in candidates:
        if doc.composition != "replace":
            continue
        for name in doc.supersedes:
            other = tree.by_id.get(name)
            if other is not None and id(other) in applying:
                excluded.append((other, "superseded by %s (%s)" % (doc.id, doc.path)))
                superseded.add(id(other))
    chain = [(doc, reason) for _, _, _, doc, reason in candidates if id(doc) not in superseded]
    return chain, excluded


def context_problems_line(tree):
    """What `mcp --inspect` and the overview page say when the context tree does not
    validate (§26)."""
    return ("context: %d problem(s); resolve refuses, brief answers degraded"
            % len(tree.problems))


def _applies(tree, doc, target, directory, inside, unlisted=False):
    """§20.2 step 3: (why the document is a candidate for the target, its depth), or None."""
    if inside:
        if doc.scope == "directory" and doc.dir == directory:
            return "the target directory (scope directory)", doc.depth
        if doc.scope == "subtree":
            if doc.dir == directory:
                return "the target directory (scope subtree)", doc.depth
            if path_contains(doc.dir, directory):
                return "ancestor at depth %d (scope subtree)" % doc.depth, doc.depth
        if doc.scope == "explicit":
            for entry in doc.paths:
                if path_contains(entry, directory):
                    return "declared path %s (scope explicit)" % entry, _depth(entry)
        return None, None
    if doc.dir == LAYER_TREE and doc.scope == "subtree":
        return "the tree root; the target is outside %s/" % LAYER_TREE, doc.depth
    for spec in doc.tracks:
        if any(path_contains(target, f) or path_contains(f, target) for f in tree.files_of(spec)
               ) or (unlisted and pathspec_files(tree.root, spec, [target], tree.vcs)):
            return "tracks %s" % spec, doc.depth
    return None, None


def _filtered(doc, provider, audience):
    """§20.2 step 4: why a candidate is left out, or None."""
    if doc.status == "deprecated":
        return "deprecated; discovered and never applied"
    if provider is not None and "*" not in doc.providers and provider not in doc.providers:
        return "provider %s is not among its providers (%s)" % (provider, ",".join(doc.providers))
    if audience is not None and audience not in doc.audience:
        return "audience %s is not among its audience (%s)" % (audience, ",".join(doc.audience))
    return None


def _chain_entry(tree, number, doc, reason):
    return {"index": number, "id": doc.id, "uri": doc.obj.uri, "path": doc.path,
            "dir": doc.dir, "depth": doc.depth, "scope": doc.scope,
            "composition": doc.composition, "order": doc.order, "status": doc.status,
            "title": doc.title, "providers": doc.providers, "audience": doc.audience,
            "supersedes": doc.supersedes, "tracks": doc.tracks, "paths": doc.paths,
            "sha256": tree.sha256(doc), "reason": reason}


def _fingerprint(tree, chain):
    lines = [CONTEXT_SCHEMA] + ["%s %s %s" % (d.id, d.path, tree.sha256(d)) for d in chain]
    return sha256_hex(("\n".join(lines) + "\n").encode("utf-8"))


def context_text(value, explain):
    """The shell tool's text of `context resolve` (and, with `explain`, `context explain`),
    byte for byte: columns padded by bytes, as its printf pads them."""
    head = "# effective context for %s" % value["directory"]
    if value["provider"] is not None:
        head += " \u2014 provider %s" % value["provider"]
    if value["audience"] is not None:
        head += " \u2014 audience %s" % value["audience"]
    lines = [head]
    for doc in value["documents"]:
        lines.append("%02d  %s %s %s %s %s" % (
            doc["index"], _pad(doc["id"], 26), _pad(doc["path"], 42), _pad(doc["scope"], 9),
            _pad(doc["composition"], 7), ",".join(doc["providers"])))
        if explain:
            lines.append("    applies: %s" % doc["reason"])
    if not value["documents"]:
        lines.append("(no document applies)")
    if explain:
        lines += ["", "# left out"]
        lines += ["- %s (%s): %s" % (e["id"], e["path"], e["reason"]) for e in value["excluded"]]
        if not value["excluded"]:
            lines.append("(nothing: every candidate applies)")
        lines += ["", "# order", "depth (tree root first), then order, then path; never the "
                  "order the filesystem lists files in", "fingerprint %s" % value["fingerprint"]]
    return "\n".join(lines) + "\n"


def _pad(text, width):
    return text + " " * max(0, width - len(text.encode("utf-8")))


# §33: the rest of the later tool's `context`: list, validate, affected and check-sync. The
# documents and problems are the index's (§20.1); this block says them in the shell tool's
# words (its classes, subjects, messages and reproduce hints, in its order), takes a change
# set from git as the shell tool does (each path as git prints it, quoted where git quotes
# it), and checks each projection of the policy against its stamp: the one projection
# check that check-sync, the brief (§29) and the hook (§30) share.

def context_finding(level, subject, message, reproduce=""):
    """One finding as the shell tool reports it (its `--json` line): level OK, INFO, WARN,
    FAIL or DRIFT; `reproduce` is "" when there is none."""
    return {"level": level, "category": "context", "subject": subject, "message": message,
            "reproduce": reproduce}


def _said(cls, subject, message, reproduce):
    return {"class": cls, "subject": subject, "message": message, "reproduce": reproduce}


def _c_order(text):
    """Byte order (LC_ALL=C sort) of a text."""
    return text.encode("utf-8", "surrogatepass")


# The shell tool's classes for what the index names otherwise, where its own reading of
# the file (_shell_scan) cannot say more.
_SHELL_CLASSES = {"invalid_context": "invalid-front-matter",
                  "malformed_front_matter": "invalid-front-matter",
                  "unknown_provider": "unknown-provider", "unknown_key": "unknown-key",
                  "unsupported_version": "unsupported-schema",
                  "missing_field": "unsupported-schema", "symlink": "refused-path"}
_SHELL_KEY_FIRST = _LETTERS + "_"


def _shell_key(text):
    """A `key: value` line as the shell tool's flattener reads one
    (`^[A-Za-z_][A-Za-z0-9_-]*:([ \\t]|$)`): (key, the value after the blanks), or None."""
    key, colon, after = text.partition(":")
    if not colon or not is_name(key, _SHELL_KEY_FIRST, _KEY_CHARS) or (
            after and after[0] not in " \t"):
        return None
    return key, after.lstrip(" \t")


def _shell_unquote(value):
    """The flattener's `unq`: quotes taken off a quoted value, else a trailing comment and
    the blanks around it."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    import re
    comment = re.search("[ \t]+#", value)
    return (value[:comment.start()] if comment else value).strip(" \t")


def _shell_emit(out, path, value):
    if len(value) >= 2 and value[0] == "[" and value[-1] == "]":
        inner = value[1:-1].strip(" \t")
        if not inner:
            out.append((path, "[]"))
            return
        import re
        for number, part in enumerate(re.split("[ \t]*,[ \t]*", inner)):
            out.append(("%s.%d" % (path, number), _shell_unquote(part)))
        return
    out.append((path, _shell_unquote(value)))


def _shell_flatten(lines):
    """The shell tool's YAML flattener (mj_yaml_flatten) over `lines`: ([(key, value)] in
    order, None), or (None, its error: the first line it cannot read)."""
    ctx, pend, count, out = {0: ""}, {}, {}, []
    for number, line in enumerate(lines, 1):
        if "\t" in line:
            return None, "tab character on line %d" % number
        bare = line.lstrip(" ")
        if not bare or bare[0] == "#" or (line[:3] == "---" and not line[3:].strip(" ")):
            continue
        indent = len(line) - len(bare)
        if indent % 2:
            return None, "odd indentation on line %d" % number
        if bare[:2] == "- ":
            if indent not in pend:
                return None, "list item without a parent key on line %d" % number
            parent = pend[indent]
            at = count.get(parent, 0)
            count[parent] = at + 1
            item = bare[2:].strip(" ")
            here = "%s.%d" % (parent, at)
            pair = _shell_key(item)
            if pair is None:
                _shell_emit(out, here, item)
                continue
            for level in [level for level in ctx if level > indent + 2]:
                del ctx[level]
            ctx[indent + 2] = here
            path = here + "." + pair[0]
            if pair[1]:
                _shell_emit(out, path, pair[1])
            else:
                pend[indent + 2] = pend[indent + 4] = ctx[indent + 4] = path
            continue
        pair = _shell_key(bare)
        if pair is None:
            return None, "cannot parse line %d: %s" % (number, bare)
        if indent not in ctx:
            return None, "unexpected indentation on line %d" % number
        for level in [level for level in ctx if level > indent]:
            del ctx[level]
        for level in [level for level in pend if level >= indent]:
            del pend[level]
        path = ctx[indent] + "." + pair[0] if ctx[indent] else pair[0]
        if pair[1]:
            _shell_emit(out, path, pair[1])
        else:
            pend[indent] = pend[indent + 2] = ctx[indent + 2] = path
    return out, None


def _shell_scan(text, rel, conventions, providers, allow):
    """What the shell tool says of one Markdown file under .ai/ (mj_ctxd_scan): its problem
    as (class, message, reproduce), or None (a document, or no document and no problem)."""
    base = rel.rpartition("/")[2]
    named = base in conventions
    head = "head -n 20 '%s'" % rel
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()                      # a final newline ends the last line
    front, closed = [], False
    if lines and lines[0] == "---":
        for line in lines[1:]:
            if line == "---":
                closed = True
                break
            front.append(line)
    if front and not closed:
        return "invalid-front-matter", "front matter never closes (no second ---)", head
    if not front:
        return ("invalid-front-matter", "carries no front matter, and the manifest names %s as "
                "a context document (context.documents)" % base,
                "head -n 5 '%s'" % rel) if named else None
    flat, error = _shell_flatten(front)
    if error is not None:
        if named or any(line.startswith("schema: context/") or line == "kind: context"
                        for line in front):
            return ("invalid-front-matter", "front matter does not parse: %s"
                    % (_shell_flatten(lines)[1] or error), head)
        return None
    first = {}
    for key, value in flat:
        first.setdefault(key, value)
    kind, schema = first.get("kind", ""), first.get("schema", "")
    if kind != CONTEXT_KIND and schema.partition("/")[0] != CONTEXT_KIND:
        return ("invalid-front-matter", "front matter is not the context contract (kind '%s'), "
                "and the manifest names %s as a context document" % (kind or "absent", base),
                head) if named else None
    if schema != CONTEXT_SCHEMA:
        return ("unsupported-schema", "schema '%s' is not %s (this executable reads %s)"
                % (schema or "absent", CONTEXT_SCHEMA, CONTEXT_SCHEMA), "head -n 3 %s" % rel)
    unknown = [key for key, _ in flat if allow is not None and not allow.allows(key)]
    if unknown:
        return "unknown-key", "front-matter key(s) nothing reads: " + " ".join(unknown), head
    problem = _shell_contract(first)
    if problem is not None:
        return "invalid-front-matter", problem, head
    projected = " %s " % " ".join(providers)
    for key, value in flat:
        field, dot, number = key.partition(".")
        if not dot or not number.isdigit() or not number.isascii():
            continue
        if field == "providers" and value != "*" and " %s " % value not in projected:
            return ("unknown-provider", "provider '%s' is not one the policy projects (have:%s)"
                    % (value, projected), head)
        if field == "audience" and value not in _AUDIENCES:
            return ("invalid-front-matter", "audience '%s' is neither human nor agent" % value,
                    head)
    return None


def _shell_contract(first):
    """The contract's checks on the first value of each flattened key, in the shell tool's
    order (check_context_contract's, on its reading): the message, or None."""
    for field in _CONTEXT_REQUIRED:
        if not first.get(field):
            return "lacks " + field
    if not first.get("providers.0"):
        return 'lacks providers (write providers: ["*"] for every provider)'
    if first["kind"] != CONTEXT_KIND:
        return "kind is %s, not context" % first["kind"]
    if not _context_id(first["id"]):
        return "id '%s' is not a lower-case dotted identifier" % first["id"]
    for field, allowed, refusal in _CONTEXT_CHOICES:
        if first[field] not in allowed:
            return "%s '%s' %s" % (field, first[field], refusal)
    if not is_integer_text(first["order"]):
        return "order '%s' is not an integer" % first["order"]
    scope, composition = first["scope"], first["composition"]
    paths, supersedes = first.get("paths.0"), first.get("supersedes.0")
    if scope == "explicit" and not paths:
        return "scope explicit names no paths"
    if scope != "explicit" and paths:
        return "paths are for scope explicit only (scope is %s)" % scope
    if composition == "replace" and not supersedes:
        return "composition replace names nothing in supersedes"
    if composition != "replace" and supersedes:
        return "supersedes is for composition replace only (composition is %s)" % composition
    return None


def context_problems(tree, decl):
    """The problems of the context tree (§20.1) as the shell tool says them, in its order:
    [{class, subject, message, reproduce}]: the symbolic links; each file that is no
    document for a reason of its own; each id two files claim; then the checks across
    documents, each cycle once. Made once per tree."""
    said = tree.__dict__.get("said")
    if said is not None:
        return said
    across = set(map(id, tree.cross_problems))
    files, links = {}, {}
    for diagnostic in tree.problems:
        if id(diagnostic) not in across and diagnostic.code != "duplicate_identity":
            (links if diagnostic.code == "symlink" else files).setdefault(diagnostic.path,
                                                                         diagnostic)
    said = [_said("refused-path", path, "is a symbolic link; the tree is read literally and "
                  "links are not followed", "ls -l '%s'" % path)
            for path in sorted(links, key=_c_order)]
    kind = decl.kinds.get(CONTEXT_KIND)
    allow = kind.allow if kind is not None else None
    for path in sorted(files, key=_c_order):
        found = None
        try:
            with open(decl.full(path), "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
            found = _shell_scan(text, path, decl.manifest.context_documents, tree.providers,
                                allow)
        except OSError:
            pass
        diagnostic = files[path]
        said.append(_said(*((found[0], path) + found[1:])) if found else _said(
            _SHELL_CLASSES.get(diagnostic.code, diagnostic.code.replace("_", "-")), path,
            diagnostic.message, "head -n 20 '%s'" % path))
    claimed = {}
    for doc in tree._checked:
        claimed.setdefault(doc.id, []).append(doc.path)
    said += [_said("duplicate-id", ident, "claimed by two files: " + " ".join(claimed[ident]),
                   "grep -rln '^id: %s$' %s" % (ident, LAYER_TREE))
             for ident in sorted(claimed, key=_c_order) if len(claimed[ident]) > 1]
    at = {doc.path: doc for doc in tree._checked}
    for diagnostic in tree.cross_problems:
        entry = _cross_said(diagnostic, at.get(diagnostic.path))
        if entry not in said:            # a cycle is said once per id (`sort -u`)
            said.append(entry)
    tree.said = said
    return said


def _cross_said(diagnostic, doc):
    """A check across documents (ContextTree._cross_check) in the shell tool's words."""
    message, path = diagnostic.message, diagnostic.path
    cls = diagnostic.code.replace("_", "-")
    if message == "supersedes chain returns to itself":
        return _said(cls, doc.id if doc else path, message, "majordomus context list")
    rep = "head -n 20 '%s'" % path
    for start, end, form in (("paths entry '", "' is not a directory in this repository",
                              "ls -d '%s'"),
                             ("tracks '", "', which matches no tracked file",
                              "git ls-files -- '%s'")):
        if message.startswith(start) and message.endswith(end):
            rep = form % message[len(start):len(message) - len(end)]
    if message.endswith("', which no document declares"):
        rep = "majordomus context list"
    elif cls == "illegal-override" or message.endswith(
            "a document may only supersede what applies above it"):
        rep = "majordomus context explain %s" % (doc.dir if doc else path.rpartition("/")[0])
    return _said(cls, path, message, rep)


def context_documents_listed(tree):
    """Every document of the tree (those two files claim one id too), in the order
    resolution uses: depth, order, path."""
    return sorted(tree._checked, key=lambda doc: (doc.depth, doc.order, _c_order(doc.path)))


def context_listing(tree, decl):
    """§33 `context.list`: the ContextList."""
    documents = []
    for number, doc in enumerate(context_documents_listed(tree), 1):
        entry = _chain_entry(tree, number, doc, None)
        del entry["reason"]
        documents.append(entry)
    return {"schema": CONTEXT_SCHEMA, "tree": LAYER_TREE, "count": len(documents),
            "documents": documents,
            "conventions": sorted(decl.manifest.context_documents, key=_c_order),
            "problems": context_problems(tree, decl)}


def context_validation(tree, decl):
    """§33 `context.validate`: the ContextValidation."""
    problems = context_problems(tree, decl)
    return {"schema": CONTEXT_SCHEMA, "tree": LAYER_TREE, "valid": not problems,
            "documents": len(tree._checked), "problems": problems}


# ---- the change set

def context_change_mode(arguments):
    """(mode, base) of an AffectedInput: `worktree` (the default), `staged`, or `base` with
    the commit to compare with."""
    base, staged = arguments.get("base"), arguments.get("staged", False)
    if base is not None and staged:
        raise InvalidInput("give base or staged, not both")
    if base is None:
        return ("staged" if staged else "worktree"), None
    if not base or base[0] == "-" or not base.isprintable():
        raise InvalidInput("base %r is not a commit in this repository" % base)
    return "base", base


def _git_lines(result):
    """The lines git printed; none when it failed (as the shell tool's `2>/dev/null`)."""
    code, out, err = result
    if code == 127:
        raise Refused(err)
    return out.decode("utf-8", "replace").split("\n") if code == 0 else []


def _name_status(lines):
    """`git diff --name-status` lines as the shell tool reads them: (letter, path, new path
    of a rename or copy, else "")."""
    out = []
    for line in lines:
        if line:
            fields = line.split("\t")
            letter = fields[0][:1]
            paired = letter in "RC" and len(fields) > 2
            out.append((letter, fields[1] if len(fields) > 1 else "",
                        fields[2] if paired else ""))
    return out


def _untracked(lines):
    return [("A", line, "") for line in lines if line]


def git_unquote(text):
    """A path as git prints it (C-quoted where it holds a special character) as the path
    itself."""
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return text
    out, at, body = bytearray(), 0, text[1:-1]
    escapes = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13}
    while at < len(body):
        char = body[at]
        if char != "\\" or at + 1 == len(body):
            out += char.encode("utf-8")
            at += 1
            continue
        code = body[at + 1]
        if code in "0123" and body[at + 1:at + 4].isdigit():
            out.append(int(body[at + 1:at + 4], 8) & 0xFF)
            at += 4
            continue
        out += bytes((escapes[code],)) if code in escapes else code.encode("utf-8")
        at += 2
    return out.decode("utf-8", "replace")


def _status_changes(lines, heads=None):
    """The change set from `git status --porcelain=v2 --branch -uall`, where it says what
    `git diff --name-status -M HEAD` and `git ls-files --others` would (every change staged
    alone, or a change in the work tree alone, no addition beside a deletion in the work
    tree); None where only those two commands can say it. `heads`, a dict: each deleted
    path's object at HEAD is put in it."""
    out, deleted, added = [], False, False
    for line in lines:
        if not line:
            continue
        if line[0] == "#":
            if line == "# branch.oid (initial)":
                return None              # no HEAD: `git diff HEAD` says nothing
            continue
        if line[0] == "?":
            out.append(("A", line[2:], ""))
            continue
        if line[0] not in "12":
            return None                  # unmerged
        fields = line.split(" ", 9 if line[0] == "2" else 8)
        staged, worktree, submodule = fields[1][0], fields[1][1], fields[2]
        if submodule != "N...":
            return None
        if "D" in (staged, worktree) and heads is not None and line[0] == "1":
            heads[fields[8]] = fields[6]
        if worktree == ".":
            if line[0] == "2":
                path, _, old = fields[9].partition("\t")
                out.append((staged, old, path))
            else:
                out.append((staged, fields[8], ""))
            added = added or staged in "ARC"
        elif staged == "." and worktree in "MTD":
            out.append((worktree, fields[8], ""))
            deleted = deleted or worktree == "D"
        else:
            return None
    return None if deleted and added else out


def context_changes(root, mode, base=None):
    """The change set of `context affected` (§33), as the shell tool takes it from git:
    [(letter, path, new path or "")], each path as git prints it, in its order (`sort -t TAB
    -k2,2`). worktree: HEAD against the work tree, and the untracked files (`A`); staged:
    HEAD against the index; base: the commit against the work tree, and the untracked
    files. One git process for the work tree where `git status` can say it all (§33's
    benchmark); the shell tool's two commands, at once, otherwise. Returns (changes, the
    commit compared with: HEAD or the base's, the untracked files as git prints them, and
    {path: its object at HEAD} of the deleted files where git status named them)."""
    others = ("ls-files", "--others", "--exclude-standard")
    untracked, heads = (), {}
    if mode == "staged":
        changes = _name_status(_git_lines(_git(root, "diff", "--name-status", "-M",
                                                "--cached")))
        origin = "HEAD"
    elif mode == "worktree":
        origin = "HEAD"
        status = _git(root, "status", "--porcelain=v2", "--branch", "--renames", "-uall")
        lines = _git_lines(status)
        changes = _status_changes(lines, heads) if status[0] == 0 else None   # an old git
        untracked = [line[2:] for line in lines if line[:2] == "? "]
        if changes is None:
            diff = git_started(root, "diff", "--name-status", "-M", "HEAD")
            listed = git_started(root, *others)
            changes = _name_status(_git_lines(diff()))
            untracked = [line for line in _git_lines(listed()) if line]
            changes += _untracked(untracked)
    else:
        code, out, _ = _git(root, "rev-parse", "--verify", "--quiet", base + "^{commit}")
        if code != 0 or not out.strip():
            raise InvalidInput("base '%s' is not a commit in this repository" % base)
        origin = out.decode("ascii", "replace").strip()
        diff = git_started(root, "diff", "--name-status", "-M", origin)
        listed = git_started(root, *others)
        changes = _name_status(_git_lines(diff()))
        untracked = [line for line in _git_lines(listed()) if line]
        changes += _untracked(untracked)
    changes.sort(key=lambda change: (_c_order(change[1]), _c_order("\t".join(change))))
    return changes, origin, untracked, heads


def _declares_contract(text):
    """Does a file's front matter hold a `schema: context/…` or `kind: context` line?"""
    lines = text.split("\n")
    if lines[0] != "---":
        return False
    for line in lines[1:]:
        if line == "---":
            return False
        if line.startswith("schema: context/") or line == "kind: context":
            return True
    return False


def _loose_blob(root, name):
    """The bytes of a blob stored loose in the repository's object store, or None (packed,
    elsewhere, or not a blob): read without a git process."""
    dirs = find_git_dirs(root) if name and not name.strip("0123456789abcdef") else None
    if dirs is None:
        return None
    import zlib
    try:
        with open(os.path.join(dirs.common_dir, "objects", name[:2], name[2:]), "rb") as handle:
            data = zlib.decompress(handle.read())
    except (OSError, ValueError, zlib.error):
        return None
    head, nul, body = data.partition(b"\0")
    return body if nul and head.startswith(b"blob ") else None


def _contract_of_deleted(root, origin, paths, heads=None):
    """Of the deleted Markdown files under .ai/, those whose front matter at `origin`
    declares the contract (a `schema: context/…` or `kind: context` line): each read from
    the object store where git status named its object and it is stored loose, the others
    in one git process for all."""
    found, asked = set(), []
    for path in paths:
        data = _loose_blob(root, (heads or {}).get(path))
        if data is None:
            asked.append(path)
        elif _declares_contract(data.decode("utf-8", "replace")):
            found.add(path)
    paths = asked
    if not paths:
        return found
    import subprocess
    program = git_program()
    if program is None:
        return found
    request = "".join("%s:%s\n" % (origin, path) for path in paths).encode("utf-8")
    try:
        proc = subprocess.run([program, "-c", "core.fsmonitor=false", "-C", root, "cat-file",
                               "--batch"], input=request, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=dict(
                                  os.environ, GIT_OPTIONAL_LOCKS="0", LC_ALL="C"))
    except OSError:
        return found
    data, at = proc.stdout, 0
    for path in paths:
        end = data.find(b"\n", at)
        if end < 0:
            break
        head = data[at:end].split(b" ")
        at = end + 1
        if len(head) != 3 or not head[2].isdigit():
            continue                     # missing, or not one object
        size = int(head[2])
        if _declares_contract(data[at:at + size].decode("utf-8", "replace")):
            found.add(path)
        at += size + 1
    return found


_CHANGE_WORDS = {"A": "added", "M": "modified", "D": "deleted", "R": "moved", "C": "copied"}


def _reaches(doc, directory):
    """Does a document apply to `directory` by its own scope (mj_ctxd_reaches)?"""
    if doc.scope == "directory":
        return doc.dir == directory
    if doc.scope == "subtree":
        return path_contains(doc.dir, directory)
    return any(path_contains(entry, directory) for entry in doc.paths)


def context_affected(tree, decl, mode, base=None):
    """§33 `context.affected`'s findings: (the change set's, in the shell tool's order and
    words, the number of documents they name). A changed document and each one resolved
    below it; a move and its ancestry; a deleted document; the manifest (every document);
    the policy (its projections); and each document whose tracks cover a changed path
    (WARN: review it). An unrelated change says nothing. Also returned: the Markdown files
    under .ai/ that git does not track, which are no documents until added (§20.1)."""
    changes, origin, untracked, heads = context_changes(decl.root, mode, base)
    rep = {"base": "git diff --name-status -M %s" % base,
           "staged": "git diff --name-status -M --cached"}.get(mode, "git status --porcelain")
    manifest, policy = MANIFEST, decl.manifest.sections.get("policy")
    docs = tree._checked
    at = {doc.path: doc for doc in docs}
    prefix = LAYER_TREE + "/"
    deleted = _contract_of_deleted(decl.root, origin, [
        old for letter, old, new in changes if letter == "D" and not new and old not in (
            manifest, policy) and old.startswith(prefix) and old.endswith(".md")], heads)
    findings, count = [], 0
    for letter, old, new in changes:
        path, word = new or old, _CHANGE_WORDS.get(letter, "changed")
        if path == manifest:
            findings.append(context_finding("INFO", path, "%s; the manifest names the tree and "
                                            "its conventions, so every document is affected:%s"
                                            % (word, "".join(" " + d.id for d in docs)),
                                            "%s -- %s" % (rep, path)))
            count += len(docs)
            continue
        if path == policy:
            findings.append(context_finding("INFO", path, "%s; a projection rendered from the "
                                            "previous policy is stale-projection under "
                                            "check-sync and drift under watch" % word,
                                            "%s -- %s" % (rep, path)))
            continue
        if not (path.startswith(prefix) and path.endswith(".md")):
            continue
        if letter == "D":
            if old in deleted:
                findings.append(context_finding(
                    "INFO", old, "deleted; a document that superseded it is a broken-reference "
                    "under validate, and its scope now inherits from above",
                    "majordomus context validate"))
                count += 1
            continue
        doc = at.get(path)
        if doc is None:
            continue
        below = [other.id for other in docs if other is not doc and doc.status == "active"
                 and _reaches(doc, other.dir)]
        line = "%s %s; scope %s/ (%s%s)" % (word, doc.id, doc.dir, doc.scope,
                                            ", deprecated: applied nowhere"
                                            if doc.status == "deprecated" else "")
        if below:
            line += " and %d document(s) resolved below it:%s" % (
                len(below), "".join(" " + ident for ident in below))
        if letter == "R":
            was = old.rpartition("/")[0] if "/" in old else "."
            line += ("; moved from %s/, so its ancestry changed" % was if was != doc.dir
                     else "; renamed within %s/" % doc.dir)
            line += "; identity %s travels with the file" % doc.id
        where = "majordomus context explain %s" % doc.dir
        findings.append(context_finding("INFO", path, line, where))
        count += 1 + len(below)
        findings += [context_finding("INFO", name, "superseded by %s, which changed" % doc.id,
                                     where) for name in doc.supersedes]
    hits = _track_hits(decl.root, mode, origin, changes)
    for doc in docs:
        for spec in doc.tracks:
            found = hits(spec)
            if found:
                findings.append(context_finding(
                    "WARN", doc.id, "tracks %s (%s); confirm %s still describes it" % (
                        spec, ", ".join(" ".join(hit.split()[:2]) for hit in found),
                        doc.path), "%s -- %s" % (rep, spec)))
                count += 1
    unadded = [path for path in untracked if path.startswith(prefix) and path.endswith(".md")]
    return findings, count, unadded


def _track_hits(root, mode, origin, changes):
    """spec -> the changed paths under that pathspec, as `git diff --name-status -- SPEC`
    (and `git ls-files --others -- SPEC`) list them: sorted `letter path` lines. A rename
    with one side under the pathspec is, there, a deletion or an addition; a pathspec git
    must interpret itself (magic) is asked of git."""
    paths = sorted(set(git_unquote(p) for _, old, new in changes for p in (old, new) if p))

    def hits(spec):
        if _plain_pathspec(spec) is None:
            return _track_hits_of_git(root, mode, origin, spec)
        under = set(pathspec_files(root, spec, paths, True))
        found = set()
        for letter, old, new in changes:
            if not new:
                if git_unquote(old) in under:
                    found.add("%s %s" % (letter, old))
                continue
            was, now = git_unquote(old) in under, git_unquote(new) in under
            if was and now:
                found.add("%s %s" % (letter, new))
            elif now:
                found.add("A %s" % new)
            elif was and letter == "R":
                found.add("D %s" % old)
        return sorted(found, key=_c_order)
    return hits


def _track_hits_of_git(root, mode, origin, spec):
    """The shell tool's own commands for one pathspec (mj_ctxd_track_hits)."""
    diff = ["diff", "--name-status"] + (["--cached"] if mode == "staged" else [origin])
    lines = _git_lines(_git(root, *(diff + ["--", spec])))
    found = set("%s %s" % (line.split("\t")[0][:1], line.split("\t")[-1])
                for line in lines if line)
    if mode != "staged":
        found.update("A " + line for line in _git_lines(_git(
            root, "ls-files", "--others", "--exclude-standard", "--", spec)) if line)
    return sorted(found, key=_c_order)


# ---- the projections of the policy

def policy_digest(root, manifest):
    """The policy's hash as a stamp names it (12 hex): sha256 of the policy file followed by
    each profile (`profiles/*.yaml`, in byte order), as the shell tool's mj_policy_cat."""
    import hashlib
    digest = hashlib.sha256()
    policy, profiles = manifest.sections.get("policy"), manifest.sections.get("profiles")
    files = [native_path(root, policy)] if policy else []
    if profiles:
        folder = native_path(root, profiles)
        try:
            names = sorted((n for n in os.listdir(folder)
                            if n.endswith(".yaml") and not n.startswith(".")), key=_c_order)
        except OSError:
            names = []
        files += [os.path.join(folder, name) for name in names]
    for full in files:
        try:
            if os.path.isfile(full):
                with open(full, "rb") as handle:
                    digest.update(handle.read())
        except OSError:
            pass
    return digest.hexdigest()[:12]


_STAMP_START = "<!-- generated by `majordomus update` from "
_REGION_BEGIN, _REGION_END = "<!-- majordomus:begin", "<!-- majordomus:end -->"


def _hex(text):
    return bool(text) and not text.strip("0123456789abcdef")


def _file_stamp(line):
    """The (policy, content) hashes of a file-mode stamp line, or None: the shell tool's
    MJ_STAMP_RE (`^<!-- generated by `majordomus update` from .* \\(policy [0-9a-f]+, content
    [0-9a-f]+\\) .* -->$`), then, as its sed reads them, the last `(policy P, content C)`."""
    if not line.startswith(_STAMP_START) or not line.endswith(" -->"):
        return None
    stamped, last = False, None
    at = line.find("(policy ")
    while at >= 0:
        policy, comma, tail = line[at + 8:].partition(", content ")
        content, close, _ = tail.partition(")")
        if comma and close and _hex(policy) and _hex(content):
            last = (policy, content)
            after = at + 8 + len(policy) + 10 + len(content) + 1
            stamped = stamped or (at > len(_STAMP_START) and line[at - 1] == " "
                                  and line[after:after + 1] == " "
                                  and line[after + 1:].endswith(" -->"))
        at = line.find("(policy ", at + 1)
    return last if stamped else None


def _region_marker(line):
    """The hashes a region's begin marker carries ([] to two), or None for another line."""
    if not line.startswith(_REGION_BEGIN) or not line.endswith(" -->"):
        return None
    words = line[len(_REGION_BEGIN):-4].split(" ")
    if words[0] != "" or len(words) > 3 or not all(_hex(w) for w in words[1:]):
        return None
    return words[1:]


def _region_body(lines):
    """The text between a region's markers (mj_region_extract): (state, body) with state
    ok, region_absent (no begin marker) or malformed."""
    seen = inside = closed = False
    body = []
    for line in lines:
        if _region_marker(line) is not None:
            if seen:
                return "malformed", None
            seen = inside = True
        elif line == _REGION_END:
            if not inside:
                return "malformed", None
            inside, closed = False, True
        elif inside:
            body.append(line + "\n")
    if not seen:
        return "region_absent", None
    return ("ok", "".join(body)) if closed else ("malformed", None)


def projection_check(root, manifest, policy, target=None):
    """Each projection the policy declares (its `projections`, up to the first without a
    target), checked against the stamp its file carries: the one check of check-sync
    (§33), the brief's projection line (§29) and the hook (§30). `policy`: the policy's
    metadata (a dict) or None; `target`: only the projection of that repository-relative
    path (normalised). Returns [Projection]: {provider, target, mode, source (the policy's
    path), template (the provider has a template at <repo>/providers/P.tmpl: check-sync
    judges only those, as the shell tool does), state, stamp ({policy, content} or None),
    policy (the policy's hash now), stale}. `state`: ok; stale (the content is the stamp's,
    the policy moved on); hand_edited (the content is not the stamp's); unstamped;
    malformed (a region without its end, or twice); absent; region_absent. `stale` is true
    for stale, hand_edited, unstamped and malformed: the file says what the policy does
    not."""
    entries = policy.get("projections") if isinstance(policy, dict) else None
    out, digest = [], None
    for entry in entries if isinstance(entries, list) else ():
        place = render_scalar(entry.get("target")) if isinstance(entry, dict) else None
        if not place:
            break
        if target is not None and norm_rel(place) != target:
            continue
        if digest is None:
            digest = policy_digest(root, manifest)
        provider = render_scalar(entry.get("provider")) or ""
        mode = render_scalar(entry.get("mode")) or "file"
        out.append(_projection(root, manifest, provider, place, mode, digest))
    return out


def policy_metadata(decl, results):
    """The policy's metadata (a dict) in an index's results, or None."""
    policy = policy_object(decl, results)
    return policy.metadata if policy is not None else None


def projection_of(root, decl, results, path):
    """The Projection (projection_check) whose target is `path`, repository-relative and
    normalised (the brief's and the hook's target), or None when the policy projects
    nothing there: `projection_of(gen.root, gen.decl, gen.index.results, target)`."""
    found = projection_check(root, decl.manifest, policy_metadata(decl, results), path)
    return found[0] if found else None


def _projection(root, manifest, provider, place, mode, digest):
    """One projection checked (mj_projection_status, the template apart)."""
    template = os.path.isfile(native_path(root, "%s/providers/%s.tmpl"
                                          % (manifest.repo, provider)))
    text = _projection_text(root, place)
    state, stamp, hashes, owned = "absent", None, None, None
    if text is not None and mode == "region":
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        state, owned = _region_body(lines)
        if state == "ok":
            marker = next(m for m in map(_region_marker, lines) if m is not None)
            hashes = tuple(marker) if len(marker) == 2 else None
    elif text is not None:
        line, _, owned = text.partition("\n")
        state, hashes = "ok", _file_stamp(line)
    if state == "ok" and hashes is None:
        state = "unstamped"
    elif state == "ok":
        import hashlib
        stamp = {"policy": hashes[0], "content": hashes[1]}
        mine = hashlib.sha256(owned.encode("utf-8", "surrogateescape")).hexdigest()
        state = ("hand_edited" if mine[:16] != hashes[1][:16] else
                 "ok" if hashes[0] == digest else "stale")
    return {"provider": provider, "target": place, "mode": mode,
            "source": manifest.sections.get("policy", ""), "template": template,
            "state": state, "stamp": stamp, "policy": digest,
            "stale": state in ("stale", "hand_edited", "unstamped", "malformed")}


def _projection_text(root, place):
    """The text of a projection's file (bytes kept: surrogateescape), or None when it is
    absent, not a file, or lies outside the repository (also through a link)."""
    relative = norm_rel(place)
    full = native_path(root, relative) if relative else None
    if full is None or not os.path.isfile(full):
        return None
    if not os.path.realpath(full).startswith(os.path.join(os.path.realpath(root), "")):
        return None
    try:
        with open(full, "rb") as handle:
            return handle.read().decode("utf-8", "surrogateescape")
    except OSError:
        return None


def projection_findings(projections):
    """check-sync's finding of each projection (the shell tool's words): (findings, any
    drift)."""
    findings, drift = [], False
    for p in projections:
        provider, state = p["provider"], p["state"] if p["template"] else "no_template"
        if state in ("no_template", "absent", "region_absent"):
            findings.append(context_finding("INFO", p["target"], "projection for %s is %s "
                                            "(majordomus doctor reports it; majordomus update "
                                            "writes it)" % (provider, state), "majordomus update"))
        elif state == "ok":
            findings.append(context_finding("OK", p["target"], "projection for %s matches its "
                                            "stamp and the policy as it is" % provider))
        elif state == "stale":
            findings.append(context_finding("DRIFT", p["target"], "stale-projection: rendered "
                                            "from policy %s, and the policy is now %s" % (
                                                p["stamp"]["policy"], p["policy"]),
                                            "majordomus update --dry-run"))
        else:
            findings.append(context_finding("DRIFT", p["target"], "stale-projection: %s; the "
                                            "projection for %s no longer matches its stamp"
                                            % (state, provider),
                                            "majordomus update --diff %s" % p["target"]))
        drift = drift or findings[-1]["level"] == "DRIFT"
    return findings, drift


def context_sync(tree, decl, policy, mode, base=None):
    """§33 `context.sync` (check-sync): the tree validated, then each projection against
    its stamp, then what the change set affects: the ContextSync."""
    affected, count, _ = context_affected(tree, decl, mode, base)
    problems = context_problems(tree, decl)
    findings = context_failures(problems) or [
        context_finding("OK", LAYER_TREE + "/", "%d document(s) validate" % len(tree._checked))]
    projections = projection_check(decl.root, decl.manifest, policy)
    said, drift = projection_findings(projections)
    return {"status": "invalid" if problems else "drift" if drift else "in_sync",
            "documents": len(tree._checked), "projections": len(projections),
            "affected": count, "findings": findings + said + affected}


def context_failures(problems):
    """The FAIL finding of each problem of the tree (`CLASS: MESSAGE`)."""
    return [context_finding("FAIL", p["subject"], "%s: %s" % (p["class"], p["message"]),
                            p["reproduce"]) for p in problems]


def scope_path(root, given):
    """A path of an announced scope, normalised and refused as §20.2's target is
    (target_path, refuse_outside). It need not exist (a peer may announce a file it will
    create): its nearest existing ancestor must not lead outside the repository. Taken
    as clients send it (§29)."""
    path = target_path(root, given, as_sent=True)
    probe = path
    while probe != "." and not os.path.lexists(native_path(root, probe)):
        probe = probe.rpartition("/")[0] or "."
    refuse_outside(root, native_path(root, probe) if probe != "." else root, path)
    return path


# ---------------------------------------------------------------------------------------
# 11. The index (§5): each discovered file read by its kind into an object, or excluded
#    with a named diagnostic; duplicate identities exclude every claimant.
# ---------------------------------------------------------------------------------------

class LayerObject:
    """One object of the index (§5.2)."""

    __slots__ = ("uri", "id", "kind", "identity", "title", "description", "metadata",
                 "media_type", "content", "provenance", "path", "body_at", "prompt",
                 "descriptor", "problems")

    def __init__(self, kind, identity, metadata, content, provenance, title, description,
                 media_type, body):
        self.kind = kind.name
        self.identity = identity
        self.uri = "majordomus://%s/%s" % (kind.name, identity)
        self.id = "%s.%s" % (kind.name, identity)
        self.title = title
        self.description = description
        self.metadata = metadata
        self.media_type = media_type
        self.content = content
        self.provenance = provenance
        self.path = provenance["path"]
        # Where the text after the front matter starts (markdown), or None: the body is
        # sliced from the content when asked for, not kept twice (§23).
        self.body_at = None if body is None else len(content) - len(body)
        self.prompt = kind.prompt        # served as an MCP prompt too (§17)
        self.descriptor = self.problems = None   # its capability, made on first use

    @property
    def body(self):
        """The text after the front matter (markdown), or None."""
        at = self.body_at
        return None if at is None else self.content[at:]

    def tags(self):
        tags = self.metadata.get("tags")
        return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def _read_text(full, info, failure, linked=False, kept=None):
    """§5.1 check 2: a regular file, not a symlink, at most 4 MiB, UTF-8. `info` is the
    file's lstat (or None, and `failure` the OSError); `failure` a NotPlain: a folder on
    its path is a symlink; `linked`: a symlink in the git index, whatever is on disk;
    `kept`, a list: the bytes read are appended to it."""
    if isinstance(failure, NotPlain):      # a folder on its path is a symlink
        raise _Excluded(failure.code, failure.message)
    if info is None:
        raise _Excluded("unreadable", _os_reason(failure))
    if linked:
        raise _Excluded("symlink", "a symlink is not read; sources are regular files")
    try:
        data = read_plain(full, info)[0]
    except NotPlain as exc:
        raise _Excluded(exc.code, exc.message)
    if kept is not None:
        kept.append(data)
    try:
        return data.decode("utf-8"), len(data)
    except UnicodeDecodeError as exc:
        raise _Excluded("invalid_utf8", str(exc))


def _heading(body):
    """The first body line starting with `# `, trimmed; None when absent or empty."""
    at = 0 if body.startswith("# ") else body.find("\n# ") + 1
    if at == 0 and not body.startswith("# "):
        return None
    end = body.find("\n", at)
    text = (body[at + 2:] if end < 0 else body[at + 2:end]).strip()
    return text or None


def _field_text(metadata, field):
    text = render_scalar(metadata.get(field)) if field else None
    return text or None


class FileResult:
    """What reading one discovered file gave: its objects (none, one, or one per member)
    and its diagnostics, kept across generations while its class and signature stay.
    `context`: its diagnostics are problems of the context tree too (§20.1). `checked`:
    its objects' §20.1 checks for one policy, made once (context_checks)."""

    __slots__ = ("source_id", "signature", "objects", "diagnostics", "context", "racy",
                 "checked")

    def __init__(self, source_id, signature, objects, diagnostics, context=False):
        self.source_id, self.signature = source_id, signature
        self.objects, self.diagnostics = objects, diagnostics
        self.context, self.checked = context, None
        # A racily clean file (§15.2, §24): the hash of the bytes read, which the sweep
        # compares while its mtime is too close to that read to tell an edit.
        self.racy = None


def read_file(decl, path, source):
    """§5.1: one discovered file read by its kind, the first failed check excluding it."""
    full, kept = decl.full(path), []
    began = time.time_ns()
    try:
        info, failure = os.lstat(full), None
    except OSError as exc:
        info, failure = None, exc
    folder = linked_folder(decl.root, decl.on_disk.get(path, path), decl.folders)
    if folder is not None:
        failure = NotPlain("symlink", LINKED_FOLDER % folder)
    try:
        objects, diagnostics = _read_file(decl, path, source, full, info, failure, kept)
        context = False
    except _Excluded as exc:
        objects, diagnostics = [], [Diagnostic("error", exc.code, path, exc.message)]
        # A file of the context tree (§20.1) that is excluded is a problem of the tree.
        context = exc.context or (exc.code == "symlink" and in_layer_tree(path)) or (
            is_context_convention(decl.manifest, path))
    result = FileResult(source.id, file_signature(info), objects, diagnostics, context)
    if kept and began - info.st_mtime_ns < RACY_NS:
        result.racy = hash(kept[0])
    return result


def _read_file(decl, path, source, full, info, failure, kept=None):
    kind = decl.kinds.get(source.kind)
    if kind is None:
        raise _Excluded("unknown_kind", "class '%s' declares kind '%s', which this executable "
                        "does not read" % (source.id, source.kind))
    text, size = _read_text(full, info, failure, path in decl.links, kept)
    metadata, body, found = {}, text, None
    if kind.format == "yaml":
        try:
            metadata = decl.parse(text)
        except SubsetError as exc:
            raise _Excluded("malformed_yaml", str(exc))
    elif kind.format == "markdown" and kind.front_matter != "none":
        try:
            found, body = split_front_matter(text, decl.parse)
        except SubsetError as exc:
            raise _Excluded("malformed_front_matter", str(exc),
                            context=broken_front_is_context(path, text, str(exc)))
        if found is None:
            if kind.without_front_matter:
                kind = decl.kinds[kind.without_front_matter]
            elif kind.front_matter == "required":
                raise _Excluded("missing_front_matter", "no front matter, and the kind requires it")
        else:
            metadata = found
            declared = metadata.get("kind")
            if declares_context_schema(path, metadata):
                declared = CONTEXT_KIND   # `schema: context/…` under .ai/ is one (§20.1)
            if (isinstance(declared, str) and declared != kind.name
                    and declared in decl.kinds.declared):
                kind = decl.kinds[declared]   # the file chose its kind (§4.1 `declared`)
    if kind.name == CONTEXT_KIND:
        try:
            return _read_object(decl, kind, metadata, text, body, path, source, size)
        except _Excluded as exc:
            exc.context = in_layer_tree(path)    # a context document that fails its contract
            raise
    if is_context_convention(decl.manifest, path):
        raise _Excluded("invalid_context", convention_message(path, found, text), context=True)
    return _read_object(decl, kind, metadata, text, body, path, source, size)


def _read_object(decl, kind, metadata, text, body, path, source, size):
    """§5.1 checks 4-7 for a file whose kind is settled; its object (or members)."""
    if kind.format != "text":
        if kind.allow is not None:
            unknown = kind.allow.unknown(key_paths(metadata))
            if unknown:
                raise _Excluded("unknown_key", "key(s) not in %s: %s"
                                % (kind.allow.where, ", ".join(unknown)))
        if not kind.members:
            declared = metadata.get("kind")
            if (isinstance(declared, str) and declared != kind.name
                    and not (kind.name == CONTEXT_KIND and in_layer_tree(path))):
                raise _Excluded("kind_mismatch", "declares kind '%s' but was discovered by class "
                                "'%s' as '%s'" % (declared, source.id, kind.name))
        _check_version(kind, metadata)
        if kind.name == CONTEXT_KIND and in_layer_tree(path):
            check_context_contract(metadata)
    provenance = {"path": path, "directory": sys.intern(path.rpartition("/")[0] or "."),
                  "source_class": source.id}
    section = decl.manifest.section_of(path)
    if section is not None:
        provenance["section"] = section
    if kind.members:
        return _read_members(kind, metadata, path, provenance, size)
    provenance["bytes"] = size
    identity = _identity(kind, metadata, path)
    if kind.title == "@heading":
        title = _heading(body) if kind.format != "yaml" else None
    else:
        title = _field_text(metadata, kind.title)
    return (LayerObject(kind, identity, metadata, text, provenance, title,
                        _field_text(metadata, kind.description), kind.media_type,
                        body if kind.format == "markdown" else None),), ()


def _check_version(kind, metadata):
    """§5.1 check 6: the kind's schema_version field holds a supported value, typed."""
    field = kind.version_field
    if not field:
        return
    value = metadata.get(field)
    if type(kind.supported[0]) is int:
        if type(value) is not int:
            raise _Excluded("missing_field", "no integer '%s'" % field)
    elif not isinstance(value, str):
        raise _Excluded("missing_field", "no '%s'" % field)
    if value not in kind.supported:
        raise _Excluded("unsupported_version", "%s %s is not among the supported %s"
                        % (field, json_default(value), json_default(kind.supported)))


def _identity(kind, metadata, path):
    """§5.1 check 7: the identity fields joined with `@`, or the path."""
    if not kind.identity:
        if not uri_safe(path):
            raise _Excluded("invalid_identity", "the path is the identity of a %s, and a URI "
                            "cannot carry whitespace or a control character" % kind.name)
        return path
    values = []
    for field in kind.identity:
        value = render_scalar(metadata.get(field))
        if not value:
            raise _Excluded("missing_field", "identity field '%s' is absent or empty" % field)
        if not has_no_space(value) or "/" in value or "@" in value:
            raise _Excluded("missing_field", "identity field '%s' carries '/', '@' or "
                            "whitespace: '%s'" % (field, value))
        values.append(value)
    return "@".join(values)


def _read_members(kind, metadata, path, provenance, size):
    """§5.1 members: one object per item of the list `kind.members`; a bad item is
    excluded alone, with a diagnostic on the file's path."""
    items = metadata.get(kind.members)
    if not isinstance(items, list):
        raise _Excluded("missing_field", "no list '%s' holding the members" % kind.members)
    objects, diagnostics = [], []
    for number, item in enumerate(items):
        member = "%s.%d" % (kind.members, number)
        if not isinstance(item, dict):
            diagnostics.append(Diagnostic("error", "malformed_yaml", path,
                                          "member %s is not a mapping" % member))
            continue
        try:
            identity = _identity(kind, item, path) if kind.identity else member
        except _Excluded as exc:
            diagnostics.append(Diagnostic("error", exc.code, path,
                                          "member %s: %s" % (member, exc.message)))
            continue
        origin = dict(provenance, member=member, bytes=size)
        content = json_pretty(item)
        objects.append(LayerObject(kind, identity, item, content, origin,
                                   _field_text(item, kind.title) if kind.title != "@heading"
                                   else None, _field_text(item, kind.description),
                                   "application/json", None))
    return objects, diagnostics


class Index:
    """The objects in URI order, the diagnostics in index order, the state, the context
    tree (§20.1), and the result of reading each file (what the next, incremental build
    starts from)."""

    def __init__(self, objects, diagnostics, results, context):
        self.objects = sorted(objects, key=lambda o: o.uri)
        self.by_uri = {o.uri: o for o in self.objects}
        self.diagnostics = diagnostics
        self.results = results
        self.context = context
        self.errors = sum(1 for d in diagnostics if d.severity == "error")
        self.state = "degraded" if self.errors else "ok"
        counts = {}
        for obj in self.objects:
            counts[obj.kind] = counts.get(obj.kind, 0) + 1
        self.kinds = dict(sorted(counts.items()))

    def signatures(self):
        return {path: result.signature for path, result in self.results.items()}


def build_index(decl, claims, discovery_diagnostics, counters, previous=None, signatures=None,
                listed=(), reserved=frozenset()):
    """§5: the index of the claimed files. A file whose class and signature are those it
    had in `previous` keeps its result; only new or changed files are read (§15.2).
    `listed` is every path discovery saw (what a context document's `tracks` match);
    `reserved`, the builtin capabilities' ids, which no object may declare."""
    results, read = {}, 0
    decl.folders = {}          # each folder is asked once per build whether it is a link
    for path, source in claims:
        result = previous.get(path) if previous is not None else None
        if (result is None or result.source_id != source.id
                or result.signature != signatures.get(path)):
            result = read_file(decl, path, source)
            read += 1
        results[path] = result
    counters.count("files_read", read)
    providers = policy_providers(decl, results)
    objects, diagnostics = [], list(discovery_diagnostics)
    problems = []      # the context tree's problems (§20.1), in index order
    documents = []     # (object, ContextDoc) of the context documents, in index order
    for path, _ in claims:
        result = results[path]
        diagnostics += result.diagnostics
        if result.context:
            problems += result.diagnostics
        for obj in result.objects:
            if obj.id in reserved:
                diagnostics.append(Diagnostic("error", "capability_conflict", path,
                                              "capability id '%s' belongs to a builtin "
                                              "capability" % obj.id))
                continue
            if obj.kind == CONTEXT_KIND:
                failure, doc = context_checks(result, providers)[id(obj)]
                if failure is not None:
                    diagnostics.append(failure)
                    problems.append(failure)
                    continue
                if doc is not None:
                    documents.append((obj, doc))
            objects.append(obj)
    claimants = {}
    for obj in objects:
        claimants.setdefault(obj.uri, []).append(obj)
    duplicates = sorted((uri, group) for uri, group in claimants.items() if len(group) > 1)
    for uri, group in duplicates:
        paths = " and ".join(o.path for o in group)
        for obj in group:
            diagnostic = Diagnostic("error", "duplicate_identity", obj.path,
                                    "%s is claimed by %s; every claimant is excluded"
                                    % (uri, paths))
            diagnostics.append(diagnostic)
            if is_context_document(obj):
                problems.append(diagnostic)
    kept = [o for o in objects if len(claimants[o.uri]) == 1] if duplicates else objects
    checked = [doc for _, doc in documents]
    if duplicates:
        documents = [(o, doc) for o, doc in documents if len(claimants[o.uri]) == 1]
    # The claimants of one id are excluded, yet declared: the shell tool checks them
    # across documents too, and `supersedes` of their id names the first of them.
    tree = ContextTree(decl, [doc for _, doc in documents], listed, providers, problems,
                       checked)
    diagnostics += tree.cross_problems
    return Index(kept, diagnostics, results, tree)


class Declarations:
    """The layer's declarations as read at one moment: the root, the discovery mode, the
    manifest, the source classes and the kinds (§2.2, §4.2, §4.4). A change to any of
    them re-reads every file."""

    def __init__(self, root, discovery, manifest, classes, kinds, lists):
        self.root, self.discovery, self.manifest = root, discovery, manifest
        self.classes, self.kinds = classes, kinds
        # What the last discovery said of the files beyond their paths: the index's
        # symlinks (vcs), the names on disk of those not in NFC there (filesystem).
        self.links, self.on_disk = frozenset(), {}
        self.folders = {}   # folder -> the symlink on its way, or None (linked_folder)
        self.parse = parse_subset   # what reads a file's YAML (a first build: TreeCache's)
        knowledge = manifest.sections["knowledge"]
        # What a live process stats to see a declaration change (§15.2). The knowledge
        # folder's own signature moves when a kinds file or an allow/ folder appears or
        # goes, so only those present are stat'ed (a missing file costs an exception).
        self.watched = [MANIFEST, knowledge + "/sources.yaml", knowledge] + [
            path for path in (knowledge + "/kinds.yaml", knowledge + "/allow")
            if os.path.lexists(native_path(root, path))] + lists

    def full(self, path):
        """The platform's path of a discovered file."""
        return native_path(self.root, self.on_disk.get(path, path))


def read_declarations(root, discovery, parse=parse_subset):
    """Manifest → sources → kinds (§9.0); every defect raises Fatal, whose `watched` names
    the declarations to follow until they can be read (a live process, §25). `parse`:
    parse_subset, or what gives its trees (TreeCache.parse)."""
    watched = [MANIFEST, LAYER_TREE]
    try:
        manifest = read_manifest(root, _manifest_allow(), parse)
        knowledge = manifest.sections.get("knowledge")
        if knowledge is not None:
            allow = knowledge + "/allow"
            watched += [knowledge + "/sources.yaml", knowledge, knowledge + "/kinds.yaml",
                        allow] + [allow + "/" + name for name in _names_in(root, allow)]
        classes = read_sources(root, manifest, parse)
        kinds, lists = read_repository_kinds(root, manifest, shipped_kinds(), parse)
    except Fatal as exc:
        exc.watched = watched
        raise
    return Declarations(root, discovery, manifest, classes, kinds, lists)


def _names_in(root, folder):
    try:
        return sorted(os.listdir(native_path(root, folder)))
    except OSError:
        return []


def discover_files(decl, counters, listing=None):
    """One discovery (§4.3): (claims, diagnostics, the directories a walk entered, every
    path listed). `listing`: the git listing, when the caller started it earlier."""
    began = time.perf_counter_ns()
    if decl.discovery == "vcs":
        (paths, decl.links), directories = list_vcs(decl.root, listing), ()
    else:
        paths, directories, decl.on_disk = list_filesystem(decl.root, decl.manifest)
    claims, diagnostics = discover(paths, decl.classes, decl.manifest)
    counters.count("repository_scans")
    counters.phase("repository_discovery", began)
    return claims, diagnostics, directories, paths


# ---------------------------------------------------------------------------------------
# 12. Ranked search (§21): terms folded alike in queries and objects, and BM25F over an
#    object's fields, from a term index built once per generation on first use.
# ---------------------------------------------------------------------------------------

SNIPPET_LIMIT = 200

# Three weighted fields: identity, title and tags (the object's name for itself); the
# description; the content without its front matter. Lengths are counted in characters.
# An object's name and summary say what it is about; a long body names many things in
# passing (§26: agents ask in sentences, whose words a long document carries anyway).
SEARCH_WEIGHTS = (3.0, 2.0, 0.4)
BM25_K1, BM25_B = 3.0, 0.75
PHRASE_BONUS = 1.0        # per query term, when the whole query appears verbatim
PAIR_BONUS = 3.0          # per two neighbouring words of the query that stand together
PAIR_SCAN = 40            # the best hits looked at for such neighbours
IDENTIFIER_BONUS = 5.0    # per word of an identifier of the query an object holds verbatim
STOP_WEIGHT = 0.2         # what a function word of the query weighs (a sentence's "how do I")
# The English function words of a question: they count for the score, lightly.
STOPWORDS = frozenset("""a about all also am an and any are as at be been being but by can
could did do does for from had has have he her here his how i if in into is it its just may
me might must my no not of on one or our out over own same shall she should so some such
than that the their them then there these they this to too up very was we were what when
where which who whom why will with would you your""".split())
_STOPPED = []             # the stop words folded (fold_term), made on first use
PHRASE_SCAN_OVER = 256    # more hits than this: the text is scanned for the phrase first
POSTINGS_KEPT = 512       # terms whose postings a generation keeps (least recently used go)
FIND_MOST = 2000          # a term found more often is a common one (str.find is per hit)
LAZY_MOST = 1000          # a common term asked at more objects is weighed in all at once
_WORD = r"[^\W_]+"        # a term: a maximal run of Unicode letters and digits
_VOWELS = frozenset("aeiouy")
_FOLDED = {}              # term -> folded term, for every term seen by this process


def fold_term(term):
    """A light, deterministic English suffix folding (`rules`, `ruled`, `ruling` and
    `rule` all give `rul`). Terms under 4 letters and any term that is not plain ASCII
    letters pass through unchanged."""
    folded = _FOLDED.get(term)
    if folded is None:
        folded = _FOLDED[term] = _fold(term) if len(_FOLDED) < 1 << 20 else term
    return folded


def _fold(term):
    if len(term) < 4 or not (term.isascii() and term.isalpha()):
        return term
    if term.endswith("ies") and len(term) > 4:
        term = term[:-3] + "y"                    # policies -> policy
    elif term.endswith("sses"):
        term = term[:-2]                          # classes -> class
    elif term.endswith("s") and not term.endswith(("ss", "us", "is")):
        term = term[:-1]                          # tests -> test, but status stays
    if term.endswith("tion") and len(term) >= 8:
        return _fold(term[:-3])                   # adoption -> adopt, completion -> complete
    for suffix in ("ing", "ed"):
        stem = term[:-len(suffix)]
        if term.endswith(suffix) and not term.endswith("eed") and len(stem) >= 3 and (
                _VOWELS.intersection(stem)):
            undouble = len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz"
            term = stem[:-1] if undouble else stem
            break                                 # running -> run, sealed -> seal
    if term.endswith("e") and len(term) > 3:
        term = term[:-1]                          # rule -> rul, as ruled and ruling
    return term


# A text's words are found with str and bytes methods, not `re`: importing it and compiling
# the patterns cost a hook that builds its own index a fifth of its time (§30). recoded()
# writes each character of a text as one function says: the ASCII ones through a table made
# from it (bytes.translate), the few others by str.replace. Where that function gives one
# character for one, the result is a class string: its words are a str.split away, and a
# position in it is one in the text.
_ASCII_BYTES = bytes(range(128))
_TABLES = {}              # name -> bytes.translate's table, made on first use


def _table(name, char_of):
    """bytes.translate's table `name`: each ASCII byte as char_of(its character) says (one
    character), each byte past ASCII kept; made on first use."""
    table = _TABLES.get(name)
    if table is None:
        table = _TABLES[name] = bytes(ord(char_of(chr(code))) for code in range(128)) + \
            bytes(range(128, 256))
    return table


def recoded(text, name, char_of):
    """`text` with each character as char_of(it) says: an ASCII one through the table
    `name` (one character for one), each other one by str.replace (lone surrogates pass
    through as characters)."""
    data = text.encode("utf-8", "surrogatepass")
    out = data.translate(_table(name, char_of)).decode("utf-8", "surrogatepass")
    if len(data) != len(text):
        for char in set(data.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")):
            made = char_of(char)
            if made != char:
                out = out.replace(char, made)
    return out


def _word_char(char):
    return char if char.isalnum() else " "


def _folded_char(char):
    """A character case-folded (str.casefold folds each alone), then each of what it
    became that is no letter or digit a space."""
    if char.isascii():
        return char.lower() if char.isalnum() else " "
    return "".join(part if part.isalnum() else " " for part in char.casefold())


def spaced_words(text):
    """`text` with every character but a letter or digit a space, one for one (str.isalnum
    is what a pattern's `\\w` holds, but for `_`)."""
    return recoded(text, "words", _word_char)


def words_of(text):
    """The maximal runs of letters and digits in a text, as re.findall(_WORD) finds them."""
    return spaced_words(text).split()


def collapsed(text):
    """re.sub(r"[\\W_]+", " ", text): each run of characters that are not letters or digits
    one space."""
    return _collapse(spaced_words(text))


def _collapse(spaced):
    """A text of letters, digits and spaces with each run of spaces one."""
    words = spaced.split()
    if not words:
        return " " if spaced else ""
    return "%s%s%s" % (" " if spaced[0] == " " else "", " ".join(words),
                       " " if spaced[-1] == " " else "")


def search_terms(text):
    """The folded terms of a text, in order (§21)."""
    return [fold_term(t) for t in words_of(text.casefold())]


def query_terms(query):
    """(terms, own): a query's distinct terms in order, then the compound of each two
    neighbouring words, as written and with the first folded (`hand over`, `handing over`
    also ask for `handover`); `own` counts the query's own terms, which come first."""
    words = words_of(query.casefold())
    terms = list(dict.fromkeys(fold_term(word) for word in words))
    own = len(terms)
    for first, second in zip(words, words[1:]):
        if first.isalpha() and second.isalpha() and len(first + second) >= 6:
            terms += [fold_term(first + second), fold_term(fold_term(first) + second)]
    return list(dict.fromkeys(terms)), own


def _search_fields(obj):
    """An object's three searched texts: its name (kind, identity, title and tags: "which
    profile" asks for a kind); the description; the content without front matter."""
    head = " ".join([obj.kind, obj.identity, obj.title or ""] + obj.tags())
    description = obj.description
    if description is None and obj.media_type == "application/yaml":
        description = _opening_comment(obj.content)
    return head, description or "", _search_body(obj)


def _opening_comment(content):
    """A YAML file's own description: the comment lines that open it, up to the first
    line that is not a comment (a file without a `description` says what it is there)."""
    lines = []
    for line in content.split("\n"):
        text = line.strip()
        if not text.startswith("#"):
            if text or lines:
                break
            continue
        lines.append(text.lstrip("#").strip())
    return " ".join(filter(None, lines))


def _search_body(obj):
    """What a search reads of an object's content: a Markdown body (the front matter is
    the object's fields, never its text); a text file; a YAML file's own text, its keys,
    values and comments (`builder_budget_lines` finds the policy, §29); a member of a
    file (its metadata) as one `key: value` line a scalar, keys dotted."""
    if obj.body is not None:
        return obj.body
    if obj.media_type in ("text/plain", "application/yaml"):
        return obj.content
    return "\n".join(_key_lines(obj.metadata))


def _key_lines(node):
    """`key.path: value` of each scalar leaf of a metadata tree, in order (a list's items
    under the list's key); a stack, not a recursion (any depth, §25)."""
    stack = [("", iter(node.items()), True)]
    while stack:
        prefix, items, mapping = stack[-1]
        for key, value in items:
            name = (prefix + "." + key if prefix else key) if mapping else prefix
            if isinstance(value, dict):
                stack.append((name, iter(value.items()), True))
                break
            if isinstance(value, list):
                stack.append((name, iter(enumerate(value)), False))
                break
            text = render_scalar(value)
            if text:
                yield "%s: %s" % (name, text) if name else text
        else:
            stack.pop()


def _normalised(text):
    """A field as space-separated terms, case-folded (not yet suffix-folded): the same
    terms re.findall(_WORD) finds, with every other character a space (past ASCII, each
    run of them one space)."""
    if text.isascii():
        return text.encode("ascii").translate(_table("folded", _folded_char)).decode("ascii")
    # str.casefold folds each character alone: the few past ASCII are folded, not the text
    return _collapse(recoded(text, "folded", _folded_char))


ARRAY_OVER = 2000        # objects: a smaller TermIndex keeps its numbers in lists


def _numbers(values, objects):
    """A TermIndex's numbers: an array of a large layer's (a third of a list's memory), a
    list of a small one's (importing array, and the collections it registers with, would
    cost a hook that builds its own index 2 ms, §30)."""
    if objects <= ARRAY_OVER:
        return list(values)
    import array
    return array.array("L", values)


class TermIndex:
    """The searched text of every object of one generation as one string (an object is
    `   head   description   body `, each field's terms space-separated), the field
    boundaries, the field lengths, and the postings of the terms asked so far. The
    texts of objects a previous generation had are taken from its index, not made again."""

    def __init__(self, objects, previous=None, normalise=None):
        import _thread
        from itertools import accumulate, cycle
        normalise = normalise or _normalised
        self.objects = objects
        reuse = previous.spans() if previous is not None else {}
        parts, lengths = [], []                  # lengths: each field's, in characters
        for obj in objects:
            old = reuse.get(id(obj))
            if old is not None and old[0] is obj:
                parts.append(old[1])
                lengths.extend(old[2])
                continue
            fields = _search_fields(obj)
            piece = "   %s   %s   %s " % fields
            if not piece.isascii():
                # casefold may lengthen a character: the field is normalised on its own (an
                # ASCII piece is translated with the rest below, one character for one, so
                # its raw lengths are its lengths)
                fields = tuple(map(normalise, fields))
                piece = "   %s   %s   %s " % fields
            parts.append(piece)
            lengths.extend(map(len, fields))
        # UTF-8's bytes past ASCII are left alike by the table, and a normalised piece's
        # ASCII too: one translation of the whole
        self.text = "".join(parts).encode("utf-8").translate(_table(
            "folded", _folded_char)).decode("utf-8")
        self.lengths = _numbers(lengths, len(objects))
        # where each field begins (3 an object), at the space before its first term: 3
        # characters lie between a field and the next, and 4 between objects
        self.starts = _numbers(accumulate(map(int.__add__, lengths, cycle((3, 3, 4))),
                                          initial=2), len(objects))
        del self.starts[-1:]
        count = max(len(objects), 1)
        self.average = [max(sum(lengths[f::3]) / count, 1.0) for f in range(3)]
        self._postings = {}
        self._bounded = None
        # the postings and what settles them change as searches run: HTTP's /mcp runs
        # searches on many threads, each changing them under this lock
        self.lock = _thread.allocate_lock()

    def phrase_positions(self, phrase, among=None):
        """The positions of the objects in whose text the phrase's terms stand in its
        order: where the phrase itself may be (the verbatim test comes after). With
        `among` (positions), only those objects' pieces of the text are looked at: the
        same answer within them, without a scan of the whole text for a few hits."""
        import bisect
        found, text, starts = set(), self.text, self.starts
        for form in {_normalised(phrase).strip(), collapsed(phrase).strip()}:
            if not form:
                continue
            if among is not None:
                # An object's piece runs from its first field's start to the next
                # object's; a match belongs to the piece it begins in.
                for position in among:
                    end = starts[3 * position + 3] if 3 * position + 3 < len(starts) \
                        else len(text)
                    if text.find(form, starts[3 * position], end + len(form) - 1) >= 0:
                        found.add(position)
                continue
            at = text.find(form)
            while at >= 0:
                found.add((bisect.bisect_right(starts, at) - 1) // 3)
                at = text.find(form, at + 1)
        return found

    def spans(self):
        """{id(object): (object, its piece of the text, its field lengths)}, for the next
        generation's index."""
        out, starts, lengths = {}, self.starts, self.lengths
        for n, obj in enumerate(self.objects):
            begin = starts[3 * n] - 2
            end = starts[3 * n + 3] - 2 if 3 * n + 3 < len(starts) else len(self.text)
            out[id(obj)] = (obj, self.text[begin:end], lengths[3 * n:3 * n + 3])
        return out

    def postings(self, terms):
        """[the posting of each term], in order: a dict {object position: the term's BM25F
        weight in it}, or for a term whose needle the text holds too often for str.find,
        a _Common, settled when a search needs it (settle, weights_at). The last
        POSTINGS_KEPT terms asked are kept (least recently used dropped)."""
        missing = [term for term in dict.fromkeys(terms) if term not in self._postings]
        if missing:
            self._postings.update(self._find(missing))
        out = []
        for term in terms:
            found = self._postings.pop(term)
            self._postings[term] = found
            out.append(found)
        while len(self._postings) > max(POSTINGS_KEPT, len(terms)):
            del self._postings[next(iter(self._postings))]
        return out

    def _find(self, terms):
        """{term: its posting} of new terms. Every word that begins as a term's inflections
        all do and folds to it counts (the words that fold to `policy` begin with `polic`).
        Each term is looked for with str.find, a rare one at C speed; one found more than
        FIND_MOST times is a common one (a _Common). A term whose needle was left out for a
        shorter one that proved common is looked for again with its own."""
        out, pending = {}, terms
        while pending:
            exact = [term for term in pending if _whole(term)]
            kept = []        # no prefix of another kept one: each word is found once
            for prefix in sorted({_prefix(term) for term in pending if not _whole(term)}):
                if not kept or not prefix.startswith(kept[-1]):
                    kept.append(prefix)
            exact = [term for term in exact if not term.startswith(tuple(kept))]
            at = {}                          # word -> where it begins in the text
            common = self._find_rare(at, exact, kept)
            again = []
            for term, places in _places_by_term(at, pending).items():
                own = term if _whole(term) else _prefix(term)
                if own in common:
                    out[term] = _Common(term)      # settled when a search needs it
                elif term.startswith(tuple(common)):
                    again.append(term)
                else:
                    out[term] = self._weighed(places)
            pending = again
        return out

    def _find_rare(self, at, exact, prefixes):
        """Each whole word of `exact` and each word beginning with a prefix, found with
        str.find into `at`; those found more than FIND_MOST times (or as often in the
        text's first sixteenth, by str.count) are given back."""
        text = self.text
        find, sample = text.find, len(text) // 16
        common = set()
        for whole, needle in ([(True, _needle(term)) for term in exact]
                              + [(False, " " + prefix) for prefix in prefixes]):
            many = text.count(needle, 0, sample) * 16 > FIND_MOST
            found, i = [], -1 if many else find(needle)
            while i >= 0 and len(found) <= FIND_MOST:
                if whole:
                    found.append((needle[1:-1], i))
                    i = find(needle, i + len(needle) - 1)   # its closing space opens the next
                else:
                    end = find(" ", i + 1)
                    found.append((text[i + 1:end], i))
                    i = find(needle, end)
            if many or i >= 0:
                common.add(needle.strip(" "))
                continue
            for word, i in found:
                places = at.get(word)
                if places is None:
                    at[word] = [i]
                else:
                    places.append(i)
        return common

    def settle(self, postings, everywhere):
        """The postings with each _Common settled. With `everywhere`, it is weighed in
        every object (one scan for them all); else the objects that carry it are found,
        and where they are at most half of the objects, it is weighed everywhere too. A
        _Common weighed everywhere is given as its weights."""
        scan = []
        for posting in postings:
            if isinstance(posting, dict) or posting.whole is not None:
                continue
            if not everywhere and posting.mask is None:
                posting.mask = self._carriers(posting.term)
                posting.found = posting.mask.count(1)
                posting.idf = self._idf(posting.found)
            if everywhere or posting.found <= len(self.objects) / 2:
                scan.append(posting)
        for posting, whole in zip(scan, self._scanned([p.term for p in scan]) if scan
                                  else ()):
            posting.whole, posting.found = whole, len(whole)
        return [posting if isinstance(posting, dict) or posting.whole is None
                else posting.whole for posting in postings]

    def _carriers(self, term):
        """Which objects carry a common term (a bytearray of 0 and 1): one str.find in
        each for the term's needle, whose word there folds to the term or not; where it
        did not, one str.find for each word of the text's first sixteenth that folds to
        it, and a look at the rest."""
        import operator
        from itertools import compress, repeat
        text = self.text
        begins, ends = self._bounds()
        whole, needle = _whole(term), _needle(term)
        firsts = list(map(text.find, repeat(needle), begins, ends))
        if whole:
            mask = bytearray(map((0).__le__, firsts))
        else:
            often = {}
            for i, end in _word_spans(text, needle, 0, len(text) // 16):
                word = text[i:end]
                often[word] = often.get(word, 0) + 1
            for word in [text[i:text.find(" ", i + 1)] for i in firsts[:64] if i >= 0]:
                often[word] = often.get(word, 0) + 1
            words = tuple(word + " " for word in sorted(often, key=often.get, reverse=True)
                          if fold_term(word[1:]) == term)     # the most frequent first
            mask = bytearray(map(text.startswith, repeat(words), firsts))   # (-1: the end)
            rest = list(compress(range(len(mask)), map(
                operator.gt, map((0).__le__, firsts), mask)))
            for word in words if len(rest) > 64 else ():
                for position, i in zip(rest, list(map(text.find, repeat(word), [
                        begins[p] for p in rest], [ends[p] for p in rest]))):
                    mask[position] = i >= 0
                rest = [position for position in rest if not mask[position]]
            for position in rest:
                mask[position] = self._count_in(term, firsts[position], ends[position], 1)
        return mask

    def _count_in(self, term, start, end, most=None):
        """How many words folding to the term text[start:end] holds (`most` at most)."""
        text, whole = self.text, _whole(term)
        needle = _needle(term)
        count, i = 0, text.find(needle, start, end)
        while i >= 0 and count != most:
            if whole:
                count += 1
                i = text.find(needle, i + len(needle) - 1, end)  # its closing space opens the next
            else:
                after = text.find(" ", i + 1)
                count += fold_term(text[i + 1:after]) == term
                i = text.find(needle, after, end)
        return count

    def _scanned(self, terms):
        """[the weights of each term in every object], from one regex scan of the text."""
        at = {}
        self._scan(at, [t for t in terms if _whole(t)],
                   [_prefix(t) for t in terms if not _whole(t)])
        places = _places_by_term(at, terms)
        return [self._weighed(places[term]) for term in terms]

    def _weighed(self, places):
        """A term's weights from where its words begin in the text, in text order so that
        every path sums an object's fields in one order."""
        import bisect
        from itertools import repeat
        found = list(map(bisect.bisect_right, repeat(self.starts), sorted(places)))
        # how often each field holds the term (found is in order: its runs are the counts)
        return self._weights({place: bisect.bisect_right(found, place) - bisect.bisect_left(
            found, place) for place in dict.fromkeys(found)})

    def _scan(self, at, exact, prefixes):
        """Every word of `exact` and every word beginning with a prefix, with where its
        space begins it, into `at` (each word's places in text order): str.find over the
        text a needle, no regular expression (its import alone costs a hook some 4 ms)."""
        text, find = self.text, self.text.find
        exact, prefixes = list(dict.fromkeys(exact)), list(dict.fromkeys(prefixes))
        for word in exact:
            needle = " %s " % word
            i = find(needle)
            if i >= 0:
                places = at.setdefault(word, [])
                while i >= 0:
                    places.append(i)
                    i = find(needle, i + len(needle) - 1)   # its closing space opens the next
        for prefix in prefixes:
            for i, stop in _word_spans(text, " " + prefix, 0, len(text)):
                word = text[i + 1:stop]
                places = at.get(word)
                if places is None:
                    at[word] = [i]
                else:
                    places.append(i)
        if any(word.startswith(prefix) for prefix in prefixes for word in exact) or any(
                a != b and a.startswith(b) for a in prefixes for b in prefixes):
            for word, places in at.items():     # a word two needles found, counted once
                at[word] = sorted(set(places))

    def weights_at(self, postings, positions):
        """[{position: weight}] of each posting at the positions asked (a dict posting is
        given whole). A _Common's weights are made one object at a time, or when more than
        LAZY_MOST positions are asked, everywhere (and kept), in one scan for them all."""
        out = []
        for posting in self.settle(postings, len(positions) > LAZY_MOST):
            if isinstance(posting, dict):
                out.append(posting)
                continue
            made, mask = posting.made, posting.mask
            for position in positions:
                if mask[position] and position not in made:
                    made[position] = self._weight_at(posting, position)
            out.append({position: made[position] for position in positions if mask[position]})
        return out

    def _weight_at(self, posting, position):
        """A common term's weight in one object, counted field by field."""
        starts = self.starts
        tf = 0.0
        for place in range(3 * position, 3 * position + 3):
            end = starts[place + 1] if place + 1 < len(starts) else len(self.text)
            count = self._count_in(posting.term, starts[place], end)
            if count:
                tf += self.factor(place) * count
        return _saturated(posting.idf, tf)

    def _bounds(self):
        """(where each object's text begins, where it ends), made on first use."""
        if self._bounded is None:
            begins = self.starts[::3]
            ends = begins[1:]
            ends.append(len(self.text))
            self._bounded = (begins, ends)
        return self._bounded

    def _idf(self, found):
        total = len(self.objects)
        return math.log(1 + (total - found + 0.5) / (found + 0.5))

    def _weights(self, counts):
        """BM25F: per object, idf times the saturated sum of the fields' weighted counts,
        each normalised by the field's length against its average."""
        factor, sums = self.factor, {}
        for place, count in counts.items():       # place: the field slot plus one
            position = (place - 1) // 3
            sums[position] = sums.get(position, 0.0) + factor(place - 1) * count
        idf = self._idf(len(sums))
        return {position: _saturated(idf, tf) for position, tf in sums.items()}

    def factor(self, slot):
        """A field slot's weight over its length normalisation."""
        field = slot % 3
        return SEARCH_WEIGHTS[field] / (1 - BM25_B + BM25_B * self.lengths[slot]
                                        / self.average[field])


def _whole(term):
    """Whether only the word itself folds to the term: one under 3 letters or not plain
    ASCII letters (a longer word folds to a term of 3 or more ASCII letters only)."""
    return len(term) < 3 or not (term.isascii() and term.isalpha())


def _prefix(term):
    """How every word that folds to a term begins (`policies` and `policy`: `polic`)."""
    return term[:-1] if term.endswith("y") else term


def _needle(term):
    """What str.find looks for: the whole word, or how its words begin, after a space."""
    return " %s " % term if _whole(term) else " " + _prefix(term)


def _word_spans(text, needle, start, end):
    """(where, where its word ends) of each needle in text[start:end] (one that begins
    with a space), the word running to the next space or to `end`: what a regex scan for
    the needle and `[^ ]*` finds, found with str.find."""
    i = text.find(needle, start, end)
    while i >= 0:
        stop = text.find(" ", i + len(needle), end)
        if stop < 0:
            stop = end
        yield i, stop
        i = text.find(needle, stop, end)


def _places_by_term(at, terms):
    """{term: where the words of `at` ({word: places}) that fold to it begin}."""
    wanted = {term: [] for term in terms}
    for word, places in at.items():
        term = fold_term(word)
        if term in wanted:
            wanted[term] += places
    return wanted


def _saturated(idf, tf):
    return idf * tf * (BM25_K1 + 1) / (tf + BM25_K1)


class _Common:
    """The posting of a term whose needle the text holds too often for str.find. Settled
    (TermIndex.settle), it holds either which objects carry it (`mask`, their number
    `found`, the term's idf) and the weights made so far, or `whole`, every weight."""

    __slots__ = ("term", "mask", "found", "idf", "made", "whole")

    def __init__(self, term):
        self.term, self.made = term, {}
        self.mask = self.found = self.idf = self.whole = None

    def __len__(self):
        return self.found


def term_index(gen):
    """The generation's TermIndex, made on the first ranked search (§21)."""
    def build():
        previous = gen.previous_terms
        gen.previous_terms = None       # an older generation's index is not kept alive
        trees = gen.trees
        return TermIndex(gen.index.objects, previous, _normalised if trees is None else (
            lambda text: trees.made(text, _normalised)))
    return gen.memo("terms", build)


RULE_KIND = "rule"


def rule_id(obj):
    """A rule's id: its `id`, else its identity."""
    return render_scalar(obj.metadata.get("id")) or obj.identity


def version_rank(version):
    """How versions compare: an integer above any text, texts by their characters."""
    return (1, version, "") if type(version) is int else (0, 0, render_scalar(version) or "")


def in_force(obj):
    """Whether a rule's status puts it in force: active, or absent (§26)."""
    return render_scalar(obj.metadata.get("status")) in (None, "", "active")


def rule_versions(gen):
    """{rule id: the object of its version in force (the highest version whose status is
    active or absent), else of its highest version}, once per generation: the one version
    a ranked search lists (§29) and the brief's rules in force (§26) are read from it."""
    def build():
        best = {}
        for obj in gen.index.objects:
            if obj.kind != RULE_KIND:
                continue
            rank = (in_force(obj), version_rank(obj.metadata.get("version")))
            key = rule_id(obj)
            held = best.get(key)
            if held is None or rank > held[0]:
                best[key] = (rank, obj)
        return {key: obj for key, (_, obj) in best.items()}
    return gen.memo("rules.versions", build)


def _other_versions(gen):
    """{id(object): the object of its version in force} of every rule whose id has more
    than one version (the one in force too), once per generation."""
    by_id = {}
    for obj in gen.index.objects:
        if obj.kind == RULE_KIND:
            key = rule_id(obj)
            held = by_id.get(key)
            if held is None:
                by_id[key] = obj
            elif type(held) is list:
                held.append(obj)
            else:
                by_id[key] = [held, obj]
    out = {}
    for versions in by_id.values():
        if type(versions) is list:
            keep = max(versions, key=lambda v: (in_force(v), version_rank(
                v.metadata.get("version"))))
            out.update((id(v), keep) for v in versions)
    return out


RECENT_QUERIES = 16       # queries whose hits of every kind a generation keeps


def ranked_hits(gen, query, kind):
    """[(score rounded to 4 places, object)] of a ranked search, best first (§21). The hits
    of every kind of the last RECENT_QUERIES queries are kept: a page that asks one query
    for a kind and counts its hits by kind weighs the objects once."""
    hits = gen.recent("ranked.recent", RECENT_QUERIES, query, lambda: _ranked_hits(gen, query))
    return list(hits) if kind is None else [hit for hit in hits if hit[1].kind == kind]


def _ranked_hits(gen, query):
    index = term_index(gen)
    terms, words = query_terms(query)      # the query's own terms, then its compounds
    if not terms:
        return []
    with index.lock:
        scores = _scores(index, terms, words)
    if words > 1:
        _pair_bonus(index, query, scores)
    # The bonus for the whole query verbatim, in the title or in one content line (the
    # query is one line); only where its terms stand in that order in the index's text.
    phrase = query.casefold().strip() if words > 1 else None
    if not phrase or "\n" in phrase:
        near = ()
    elif len(scores) <= PHRASE_SCAN_OVER:
        # few hits: only their pieces of the text are looked at, and only an object whose
        # piece holds the phrase's terms in order has its fields case-folded
        near = index.phrase_positions(phrase, scores)
    else:
        near = index.phrase_positions(phrase)
    for position in near:
        if position in scores:
            obj = index.objects[position]
            if phrase in (obj.title or "").casefold() or phrase in _search_body(obj).casefold():
                scores[position] += PHRASE_BONUS * words
    _identifier_bonus(index, query, scores)
    hits = _one_version(gen, [(round(score, 4), index.objects[position])
                              for position, score in scores.items()])
    hits.sort(key=lambda hit: (-hit[0], hit[1].uri))
    return hits


def _identifiers(text):
    """re.findall(r"[^\\W_]+(?:[_.\\-][^\\W_]+)+", text): runs of letters and digits
    joined by one `_`, `.` or `-` each, at least two."""
    out = []
    spaced = recoded(text, "identifiers", lambda c: c if c.isalnum() or c in "_.-" else " ")
    for token in spaced.split():
        if token.isalnum():
            continue
        # a token's words between its joining characters ("" where two stand together): an
        # identifier is two or more words in a row
        at, first, count = 0, 0, 0
        for word in spaced_words(token).split(" ") + [""]:
            if word:
                if not count:
                    first = at
                count += 1
            else:
                if count > 1:
                    out.append(token[first:at - 1])
                count = 0
            at += len(word) + 1
    return out


def _identifier_bonus(index, query, scores):
    """IDENTIFIER_BONUS a part for each identifier of the query (words joined by `_`, `.`
    or `-`: a YAML key, a rule's id, a finding's code, §29) that an object's text holds
    verbatim (case-folded), or, a YAML file's, as the path of one of its keys
    (`context.builder_budget_lines`): a key asked by name, alone or in a sentence, finds
    what declares it before what merely carries its words."""
    for name in dict.fromkeys(_identifiers(query.casefold())):
        parts = len(words_of(name))
        last = name.rpartition(".")[2]
        for position in index.phrase_positions(
                last, scores if len(scores) <= PHRASE_SCAN_OVER else None):
            if position in scores:
                obj = index.objects[position]
                if any(name in text.casefold() for text in _search_fields(obj)) or (
                        "." in name and obj.media_type == "application/yaml" and any(
                            line.casefold().startswith(name + ":")
                            for line in _key_lines(obj.metadata))):
                    scores[position] += IDENTIFIER_BONUS * parts


def _one_version(gen, hits):
    """One hit a rule id (§29): its version in force (rule_versions), with the best score
    of its versions; every other hit as it is (all of them, at no cost, in a layer whose
    rules have one version each)."""
    others = gen.memo("rules.other_versions", lambda: _other_versions(gen))
    if not others:
        return hits
    out, at = [], {}
    for score, obj in hits:
        if id(obj) in others:
            obj = others[id(obj)]
            held = at.get(obj.uri)
            if held is not None:
                if score > out[held][0]:
                    out[held] = (score, obj)
                continue
            at[obj.uri] = len(out)
        out.append((score, obj))
    return out


def _scores(index, terms, words):
    """{object position: BM25F score} of the hits of a query's terms (`words`: how many
    are the query's own, the rest compounds); a function word weighs STOP_WEIGHT."""
    half = len(index.objects) / 2
    stopped = _stopped()
    weights = index.postings(terms)
    # A term most objects carry makes no hit on its own, unless every term of the query is
    # of that kind; a compound only adds to the hits (one that nothing carries is no term).
    # A query with no rare term that str.find found scores every object: its common terms
    # are weighed everywhere at once, not first counted object by object.
    weights = index.settle(weights, not any(
        isinstance(w, dict) and len(w) <= half and (n < words or w)
        for n, w in enumerate(weights)))
    rare = [w for n, w in enumerate(weights) if len(w) <= half and (n < words or w)]
    carriers = set()
    for w in rare or weights:
        carriers.update(w)
    scores = dict.fromkeys(carriers, 0.0)
    for term, w in zip(terms, index.weights_at(weights, scores)):   # in term order
        factor = STOP_WEIGHT if term in stopped else 1.0
        if len(w) <= len(scores):
            for position, weight in w.items():
                if position in scores:
                    scores[position] += weight * factor
        else:
            for position in scores:
                scores[position] += w.get(position, 0.0) * factor
    return scores


def _stopped():
    if not _STOPPED:
        _STOPPED.append(frozenset(fold_term(word) for word in STOPWORDS))
    return _STOPPED[0]


def _pair_bonus(index, query, scores):
    """PAIR_BONUS for each two neighbouring words of the query (function words left out)
    that stand together in an object's text, inflected or not ("checkpoint interval",
    "regression tests"), in the PAIR_SCAN best hits."""
    stopped = _stopped()
    words = [w for w in search_terms(query) if w not in stopped]
    pairs = [(" " + _prefix(a), _prefix(b)) for a, b in dict.fromkeys(zip(words, words[1:]))]
    if not pairs:
        return
    import heapq
    best = heapq.nsmallest(PAIR_SCAN, scores, key=lambda p: (-scores[p], index.objects[p].uri))
    begins, ends = index._bounds()
    for position in best:
        found = sum(1 for first, second in pairs if _paired(
            index.text, first, second, begins[position], ends[position]))
        scores[position] += PAIR_BONUS * found


def _paired(text, first, second, begin, end):
    """Whether text[begin:end] holds a word beginning with the needle `first` (a space
    and a prefix), then spaces, then `second`: what a search for `first[^ ]* +second`
    finds."""
    for _, stop in _word_spans(text, first, begin, end):
        after = stop
        while after < end and text[after] == " ":
            after += 1
        if after > stop and text.startswith(second, after, end):
            return True
    return False


def ranked_snippet(obj, terms):
    """The content line carrying the most distinct query terms (ties: the first), trimmed
    to SNIPPET_LIMIT; None when no line carries one. Folding only shortens a word of 4
    letters or more, to 3 or more (`ies` becoming `y`): a word folds to a wanted term only
    if it starts with that term (less a final `y`), or, for a term under 3 letters, is it.
    One regex a term finds those words in the whole text and only they are folded: a page
    of hits costs its candidate words, not every word of every line."""
    import re
    wanted = set(terms)
    text = _search_body(obj)
    folded = text.casefold()
    found = {}      # where a word starts -> its folded term, when that term is wanted
    for term in wanted:
        stem = term[:-1] if term.endswith("y") and len(term) > 2 else term
        if stem not in folded:
            continue            # the common case, decided without a regex
        pattern = re.escape(stem) + (r"[^\W_]*" if len(term) > 2 else r"(?![^\W_])")
        for match in re.finditer(pattern, folded):
            at = match.start()
            if at and folded[at - 1].isalnum():
                continue        # inside a word
            if at not in found and fold_term(match.group()) == term:
                found[at] = term
    carried, line, last = {}, 0, 0
    for at in sorted(found):
        line += folded.count("\n", last, at)
        last = at
        carried.setdefault(line, set()).add(found[at])
    if not carried:
        return None
    best = min(carried, key=lambda number: (-len(carried[number]), number))
    return text.split("\n")[best].strip()[:SNIPPET_LIMIT]


# ---------------------------------------------------------------------------------------
# 13. The brief (§26): what an agent needs before it works on a path, in one answer and
#    in any state of the layer: the chain of §20.2 with the documents' text, the rules in
#    force, the default profile and what the intent relates to, within a line budget.
#    brief() decides what goes in (the JSON); brief_layout() lays the JSON out as the
#    parts of the Markdown a model reads: one structure that counts the budget, prints the
#    text (brief_text) and that the page (brief_html) draws from.
# ---------------------------------------------------------------------------------------

BRIEF_SCHEMA = "brief/v1"
BRIEF_LINES = (20, 300, 5000)   # the least, default and most a budget of lines may be
BRIEF_CHARS = (1000, 12000, 200000)   # and of characters (§29)
BRIEF_RELATED = 5               # hits of the intent's search a brief names at most, and
                                # documents the chain links to
BRIEF_RELEVANT = 5              # rules chosen as relevant at most (§29)
RELEVANT_SHARE = 0.7            # of the best rule's score a relevant rule has at least
RELATED_SHARE = 0.6             # of the best hit's score a related hit has at least
PATH_WEIGHT = 1.0               # what the path's words weigh beside an intent's
PROJECTION_WORD = "projection"  # what a generated file is, beside its path's words
# Words a file's name carries that say nothing of what it is about (`new-rule.v1.md`).
PLACEHOLDER_WORDS = frozenset("new old tmp temp copy draft untitled file".split())
BRIEF_EXCERPT = 10              # lines of a linked or related document's passage at most
BRIEF_PROBLEMS = 10             # problems the text names at most (the JSON has them all)
BRIEF_STATEMENT = 280           # characters of a rule's statement its line shows
BRIEF_NAME = 160                # characters of a title, path or reason a line shows
BRIEF_HEAD = 80                 # and the header (which a budget never cuts)
BRIEF_SHORT = 60                # characters of a title a blocking rule's line shows
BRIEF_BUDGET = "budget"         # the reason of what did not fit
BRIEF_MORE_RULES = "majordomus_list kind=rule"


def brief(gen, arguments):
    """§26, §29: the Brief of a path (the handler of context.brief): the chain of §20.2 with
    the documents' text, the rules in force ranked for the path and the intent, the
    documents the chain links to and the objects the intent relates to, each with its
    passage, the projection the path is, what was left out; laid out within the budget."""
    given = bounded_path(arguments["path"])       # §25.1: before any file-system call
    tree = gen.index.context
    provider, audience = context_filters(tree, arguments)
    default_lines, profile = _brief_policy(gen)
    target, directory, exists = context_target(gen.root, given, absent=True)
    chain, excluded = context_chain(tree, target, directory, provider, audience,
                                    unlisted=not exists)
    docs = [doc for doc, _ in chain]
    intent = " ".join((arguments.get("intent") or "").split())
    held = {doc.obj.uri for doc in docs} | {doc.obj.uri for doc, _ in excluded}
    if profile is not None:
        held.add(profile["uri"])
    linked = _linked(gen, docs, held, target)          # [(object, the linking document)]
    documents = [obj for obj, _ in linked if obj.kind != RULE_KIND]
    forced = rules_in_force(gen)
    named = _named_by(gen, docs + documents, forced, linked)
    projection, source = _brief_projection(gen, target)
    words = _path_words(gen, target, {doc.dir for doc in docs}) + (
        " " + PROJECTION_WORD if projection else "")
    rules = _ranked_rules(gen, forced, named, intent, words)
    hits = _related(gen, intent, words, target, held | {obj.uri for obj, _ in linked})
    terms = _brief_terms(intent + " " + words)
    sections = gen.memo("brief.sections", dict)
    related = [_related_entry(obj, terms, sections) for obj in documents + hits]
    problems, others = _own_problems(tree, chain, excluded, directory)
    value = BriefAnswer({
        "schema": BRIEF_SCHEMA, "target": target, "directory": directory, "exists": exists,
        "projection": projection, "degraded": bool(tree.problems),
        "problems": [{"code": d.code, "path": d.path, "message": d.message} for d in problems],
        "fingerprint": _fingerprint(tree, docs),
        "budget_lines": arguments.get("budget_lines", default_lines), "used_lines": 0,
        "budget_chars": arguments.get("budget_chars", BRIEF_CHARS[1]), "used_chars": 0,
        "documents": [], "rules": [], "profile": profile, "related": [],
        "left_out": [{"uri": doc.obj.uri, "reason": reason} for doc, reason in excluded]
        + rules_not_in_force(gen)})
    value.others, value.source = others, source
    _fit(value, [dict(_chain_entry(tree, number, doc, reason), body=_body_lines(doc.obj))
                 for number, (doc, reason) in enumerate(chain, 1)], rules, related)
    return value


def _brief_policy(gen):
    """(the default budget: the policy's context.builder_budget_lines within the bounds,
    else 300; the default profile {uri, title} the policy's profiles.default names, or
    None), once per generation."""
    def build():
        policy = policy_object(gen.decl, gen.index.results)
        meta = policy.metadata if policy is not None and policy.uri in gen.index.by_uri else {}
        least, default, most = BRIEF_LINES
        context, profiles = meta.get("context"), meta.get("profiles")
        lines = context.get("builder_budget_lines") if isinstance(context, dict) else None
        if type(lines) is int:
            default = min(max(lines, least), most)
        name = render_scalar(profiles.get("default")) if isinstance(profiles, dict) else None
        found = gen.index.by_uri.get("majordomus://profile/%s" % name) if name else None
        profile = None if found is None else {"uri": found.uri,
                                              "title": found.title or found.identity}
        return default, profile
    return gen.memo("brief.policy", build)


def _brief_projection(gen, target):
    """(§29's `projection` of the target, or None; the URI of the policy it is generated
    from): the projection check of check-sync (§33), said as the brief says it: `source`
    the policy's path, `stamp` what the file's stamp names (`policy P, content C`; None
    when it has none, or does not exist yet), `stale` as the check says."""
    found = projection_of(gen.root, gen.decl, gen.index.results, target)
    if found is None:
        return None, None
    stamp = found["stamp"]
    policy = policy_object(gen.decl, gen.index.results)
    return {"source": found["source"], "stamp": "policy %s, content %s" % (
        stamp["policy"], stamp["content"]) if stamp else None, "stale": found["stale"]}, (
        policy.uri if policy is not None else None)


def rules_in_force(gen):
    """§26: the index's rules in force, once per generation: objects of kind rule whose
    status is active or absent, the highest version of each id (rule_versions), blocking
    first, then by id; each {uri, id, version, title, class, statement} (statement: else
    description)."""
    def build():
        out = []
        for key, obj in rule_versions(gen).items():
            if not in_force(obj):
                continue
            meta = obj.metadata
            version = meta.get("version")
            out.append({
                "uri": obj.uri, "id": key,
                "version": version if type(version) is int else render_scalar(version),
                "title": obj.title or obj.identity,
                "class": render_scalar(meta.get("class")),
                "statement": render_scalar(meta.get("statement")) or obj.description})
        out.sort(key=lambda r: (r["class"] != "blocking", r["id"]))
        return out
    return gen.memo("brief.rules", build)


def rules_not_in_force(gen):
    """§29: the rules whose status is present and not active, each a left_out entry
    {uri, reason: `status: VALUE`, detail}, by id, then version: a status written wrong
    (`actve`) is seen, not silent. A version below the one in force of its id is no news
    (a rule's history) and is not listed."""
    def build():
        versions = rule_versions(gen)
        out = []
        for obj in gen.index.objects:
            if obj.kind != RULE_KIND or in_force(obj):
                continue
            key = rule_id(obj)
            current = versions.get(key)
            rank = version_rank(obj.metadata.get("version"))
            if current is not None and in_force(current) and rank < version_rank(
                    current.metadata.get("version")):
                continue
            status = render_scalar(obj.metadata.get("status"))
            out.append((key, rank, {
                "uri": obj.uri, "reason": "status: %s" % _one_line(status),
                "detail": "%s (%s) is not in force: its status is neither active nor absent"
                          % (key, _one_line(obj.path))}))
        out.sort(key=lambda entry: entry[:2])
        return [entry for _, _, entry in out]
    return [dict(entry) for entry in gen.memo("brief.not_in_force", build)]


_NAME_FIRST = _LETTERS + _DIGITS + "_"


def _dotted_names(text):
    """What re.findall(r"(?<![\\w.@/-])([A-Za-z0-9_][\\w-]*(?:\\.[\\w-]+)+|[A-Za-z0-9_]
    [\\w.-]*(?=@\\d))", text) finds: a run of word characters, `.` and `-` that does not
    follow `@` or `/` and begins with an ASCII one, up to its first empty part between dots
    when it has two parts or more; else the whole run, when `@` and a digit follow it."""
    out = []
    marks = recoded(text, "names", lambda c: c if c.isalnum() or c in "_.-" else {
        "@": "\1", "/": "\2"}.get(c, " "))
    for token in marks.split(" "):
        if "." not in token and "\1" not in token:
            continue
        # only a token's first run can begin a name: every later one follows `@` or `/`
        cut = min(at for at in (token.find("\1"), token.find("\2"), len(token)) if at >= 0)
        run = token[:cut]
        if not run or run[0] not in _NAME_FIRST:
            continue
        parts = run.split(".")
        whole = 1
        while whole < len(parts) and parts[whole]:
            whole += 1
        if whole > 1:
            out.append(".".join(parts[:whole]))
        elif token[cut:cut + 1] == "\1" and token[cut + 1:cut + 2].isdecimal():
            out.append(run)
    return out


def _named_by(gen, docs, rules, linked):
    """{rule id: [the ids of the documents whose body names it]}: the chain's documents
    (ContextDoc) and the documents it links to (objects, named by their identity); a
    dotted identifier, or any identifier written with @N, is a name (found once per
    document and generation). A rule the chain links to is named by the linking
    document."""
    out = {}
    if not rules:
        return out
    ids = gen.memo("brief.rule_ids", lambda: frozenset(r["id"] for r in rules))
    names = gen.memo("brief.names", dict)
    for doc in docs:
        obj = getattr(doc, "obj", doc)
        found = names.get(obj.uri)
        if found is None:
            found = names[obj.uri] = frozenset(_dotted_names(obj.body or "")) & ids
        name = doc.id if obj is not doc else obj.identity
        for key in sorted(found):
            out.setdefault(key, []).append(name)
    for obj, via in linked:
        if obj.kind == RULE_KIND and via not in out.setdefault(rule_id(obj), []):
            out[rule_id(obj)].append(via)
    return {key: names for key, names in out.items() if names}


def _body_lines(obj):
    """A document's body (Markdown without front matter) as lines, line breaks read as
    Markdown reads them (LF, CRLF and a lone CR each end a line, §29), without the blank
    lines that open and close it."""
    text = obj.body if obj.body is not None else obj.content
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    return lines[start:]


def _first_section(lines):
    """How many lines of a body its first section holds: up to its second heading."""
    fenced = False
    for n, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif n and not fenced and _heading_level(line):
            return n
    return len(lines)


def _heading_level(line):
    """The level of an ATX heading line (`## x`: 2), else 0."""
    stripped = line.lstrip(" ")
    if len(line) - len(stripped) > 3 or not stripped.startswith("#"):
        return 0
    level = len(stripped) - len(stripped.lstrip("#"))
    return level if level <= 6 and stripped[level:level + 1] in ("", " ", "\t") else 0


# ---- what the chain links to, what the intent relates to

def _brief_terms(words):
    """The folded terms a passage is chosen by (the intent's and the path's words), the
    function words left out."""
    stopped = _stopped()
    return frozenset(t for t in query_terms(words)[0] if t not in stopped)


def _path_words(gen, target, governed=()):
    """The words of a target's path a reader would search with (§29): its folders below
    the folder every section of the manifest shares (`.ai/repo/` of `.ai/repo/rules/x.md`)
    but those the chain's documents govern (`governed`: their folders; what such a folder
    is about, its document says, and the brief holds it), then the file's name without
    its extension and version mark (`.v1.md`); placeholder words (`new`) left out."""
    shared = gen.memo("brief.sections_folder", lambda: _shared_folder(
        gen.decl.manifest.sections.values()))
    if target in (".", LAYER_TREE):
        return ""
    segments = target.split("/")
    skip = len(shared.split("/")) if shared and target.startswith(shared + "/") else 0
    names = [segment for n, segment in enumerate(segments[:-1]) if n >= skip
             and "/".join(segments[:n + 1]) not in governed]
    parts = segments[-1].split(".")
    while len(parts) > 1 and (parts[-1].isalpha() and len(parts[-1]) <= 5 or (
            parts[-1][:1] == "v" and parts[-1][1:].isdigit())):
        parts.pop()
    if target not in governed:
        names += parts
    words = words_of(" ".join(names))
    return " ".join(w for w in words if w.casefold() not in PLACEHOLDER_WORDS)


def _shared_folder(paths):
    paths = [p.split("/") for p in paths]
    if not paths:
        return ""
    shared = []
    for segments in zip(*[p[:-1] for p in paths]):
        if len(set(segments)) != 1:
            break
        shared.append(segments[0])
    return "/".join(shared)


def _linked(gen, docs, held, target):
    """[(object, the id of the chain document that links to it)] in chain order, then
    body order, at most BRIEF_RELATED documents: what a chain document's body names by a
    Markdown link, a repository path (relative to the document's folder, else to the
    root) or a majordomus:// URI, when the index holds it and the brief does not already
    (`held`); never the target itself. Found once per document and generation."""
    links = gen.memo("brief.links", dict)
    by_path = gen.memo("brief.by_path", lambda: {
        obj.path: obj for obj in gen.index.objects if "member" not in obj.provenance})
    out, seen, documents = [], set(held), 0
    for doc in docs:
        found = links.get(doc.path)
        if found is None:
            found = links[doc.path] = _links_of(doc.obj.body or "", doc.dir, by_path,
                                                gen.index.by_uri)
        for obj in found:
            if obj.uri in seen or obj.path == target:
                continue
            if obj.kind != RULE_KIND:
                if documents == BRIEF_RELATED:
                    continue
                documents += 1
            seen.add(obj.uri)
            out.append((obj, doc.id))
    return out


_WORD_STOPS = "`'\"()[]<>*,;|"    # besides white space: what ends a word of a body
_URI_STOPS = ")`'\"<>]"
_TARGET_STOPS = ")>"


def _stops(text, name, stops):
    """`text` with each white space character and each of `stops` a NUL, one for one (a
    NUL of the text, which stops nothing, a \\x01)."""
    return recoded(text, name, lambda c: "\0" if c.isspace() or c in stops else (
        "\1" if c == "\0" else c))


def _link_words(body):
    """What re.finditer(r"\\]\\(\\s*<?([^)\\s>]+)|majordomus://[^\\s)`'\"<>\\]]+|[^\\s`'\"()
    \\[\\]<>*,;|]+", body) finds, each match's group 1 where it has one, in body order: a
    link's target, a majordomus:// URI, a word. Every match ends where a word does, so the
    body is walked word by word, and a URI or a link target may run over several."""
    out, size = [], len(body)
    words = _stops(body, "link words", _WORD_STOPS)
    uris = targets = None
    at = resume = 0
    for word in words.split("\0"):
        end = at + len(word)             # where the word stops: a stop, or the end
        if word and at >= resume:
            if body.startswith("majordomus://", at) and at + 13 < size and (
                    body[at + 13] not in _URI_STOPS and not body[at + 13].isspace()):
                uris = uris or _stops(body, "uris", _URI_STOPS)
                resume = uris.find("\0", at + 13) % (size + 1)
                out.append(body[at:resume])
            else:
                out.append(body[at:end])
                resume = end
        if end < size and end >= resume and body[end] == "]" and body[end + 1:end + 2] == "(":
            start = end + 2
            while start < size and body[start].isspace():
                start += 1
            if start < size:
                targets = targets or _stops(body, "targets", _TARGET_STOPS)
                stop = targets.find("\0", start + 1) % (size + 1)
                if body[start] == "<" and stop > start + 1:
                    start += 1           # <target>: the bracket is not the target's
                if targets[start] != "\0":
                    out.append(body[start:stop])
                    resume = stop
        at = end + 1
    return out


def _links_of(body, folder, by_path, by_uri):
    """The objects a body names by link, path or URI, in body order, once each."""
    import posixpath
    out = []
    for word in _link_words(body):
        if word.startswith("majordomus://"):
            found = by_uri.get(word.rstrip(".:"))
        else:
            word = word.partition("#")[0].rstrip(".:")
            if not word or "://" in word or word.startswith(("mailto:", "/")) or (
                    "/" not in word and "." not in word):
                continue
            found = None
            for base in (folder, ""):
                candidate = posixpath.normpath(posixpath.join(base, word)) if base else (
                    posixpath.normpath(word))
                found = by_path.get(candidate)
                if found is not None:
                    break
        if found is not None and found not in out:
            out.append(found)
    return out


def _related(gen, intent, words, target, held):
    """§26 `related`: the best ranked hits (§21) of the intent that the brief does not
    already hold (`held`: the chain, what it left out, the default profile, what it links
    to), never a rule (the rules are ranked on their own) nor the target itself; at most
    BRIEF_RELATED, each with at least RELATED_SHARE of the best one's score."""
    if not intent:
        return []
    scores = _two_part_scores(gen, intent, words, None)
    if not scores:
        return []
    best = max(score for score, _ in scores.values())   # of every kind, rules too
    out = []
    for score, obj in sorted(scores.values(), key=lambda hit: (-hit[0], hit[1].uri)):
        if score < best * RELATED_SHARE:
            break
        if obj.kind == RULE_KIND or obj.uri in held or obj.path == target:
            continue
        out.append(obj)
        if len(out) == BRIEF_RELATED:
            break
    return out


def _two_part_scores(gen, intent, words, kind):
    """{uri: (score, object)} of §21's ranking (of one kind, or of all) for a query made of
    the intent and the path's words: each part's scores as shares of its best hit's, the
    path's weighing PATH_WEIGHT beside an intent (so that neither part outweighs the other
    by its length or its rarity), summed. Each part's search is the generation's (kept for
    the next brief that asks it)."""
    scores = {}
    for query, weight in ((intent, 1.0), (words, PATH_WEIGHT if intent else 1.0)):
        hits = ranked_hits(gen, query, kind) if query else []
        top = hits[0][0] if hits else 0.0
        for score, obj in hits:
            held = scores.get(obj.uri)
            scores[obj.uri] = (round((held[0] if held else 0.0) + weight * score / top, 4), obj)
    return scores


def _related_entry(obj, terms, sections=None):
    """A related object as the brief shows it: {uri, kind, title, snippet, excerpt}; a
    document (an object with a Markdown body, not a rule or a context document) carries
    its best passage (§29)."""
    snippet = ranked_snippet(obj, terms) if terms else None
    excerpt = None
    if obj.body is not None and obj.kind not in (RULE_KIND, CONTEXT_KIND):
        excerpt = _excerpt(obj, terms, sections)
    return {"uri": obj.uri, "kind": obj.kind, "title": obj.title or obj.identity,
            "snippet": snippet if snippet is not None else (obj.description or ""),
            "excerpt": excerpt}


def _excerpt(obj, terms, sections=None):
    """§29: the section of a document (its heading to the next heading of the same or a
    higher level) that best matches `terms`: the stretch (a heading to the next heading of
    any level) carrying most of them wins, a term in its heading counting twice (ties: the
    first); at most BRIEF_EXCERPT lines, cut with a pointer to the rest. None for an empty
    body. `sections`: a per-generation memo of each document's stretches and their
    terms (_stretches)."""
    found = sections.get(obj.uri) if sections is not None else None
    if found is None:
        found = _stretches(obj)
        if sections is not None:
            sections[obj.uri] = found
    lines, stretches = found
    if not lines:
        return None
    best, chosen = -1, None
    for stretch in stretches:
        score = 2 * len(terms & stretch[3]) + len(terms & stretch[4])
        if score > best:
            best, chosen = score, stretch
    section = lines[chosen[0]:chosen[2]]
    while section and not section[-1].strip():
        section.pop()
    if len(section) > BRIEF_EXCERPT:
        section = section[:BRIEF_EXCERPT - 1] + ["\u2026 (%d more lines: majordomus_get %s)" % (
            len(section) - BRIEF_EXCERPT + 1, obj.uri)]
    return "\n".join(section)


def _stretches(obj):
    """(a document's body lines, [(where a stretch starts, where it ends, where the section
    it opens ends, its heading's terms, its body's terms)]): a stretch runs from a heading
    (or the body's start) to the next heading of any level; the section a heading opens,
    to the next heading of its level or a higher one. A first line that is a level-1
    heading is the document's title: every section is under it, so its terms are no
    section's own heading, and chosen it gives its stretch alone."""
    lines = _body_lines(obj)
    heads, fenced = [], False
    for n, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and _heading_level(line):
            heads.append(n)
    starts = ([0] if not heads or heads[0] else []) + heads
    titled = bool(heads) and heads[0] == 0 and _heading_level(lines[0]) == 1
    out = []
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        own = start in heads and not (titled and start == 0)
        level = _heading_level(lines[start]) if own else 7
        close = next((n for n in heads if n > start and _heading_level(lines[n]) <= level),
                     len(lines))
        out.append((start, end, close, frozenset(search_terms(lines[start])) if own
                    else frozenset(),
                    frozenset(search_terms(" ".join(lines[start + (start in heads):end])))))
    return lines, out


# ---- rules ranked (§29)

def _ranked_rules(gen, forced, named, intent, words):
    """The rules in force ranked (§29), as RuleGroups: named (by the chain or what it links
    to), relevant (§21's ranking over the rules for the intent and the path's words: at
    least RELEVANT_SHARE of the best rule's score, at most BRIEF_RELEVANT, by score),
    blocking (by id), in force (by id). A rule's score is its ranking's, 0 when the query
    does not find it. A class neither blocking nor advisory (nor absent) is listed with
    the blocking ones, one line each, as written. Made for 10,000 rules: the blocking and
    the other rules are the generation's lists, the chosen ones skipped, never copied."""
    scores = {uri: score for uri, (score, _) in _two_part_scores(
        gen, intent, words, RULE_KIND).items()}
    by_uri = gen.memo("brief.rules_by_uri", lambda: {r["uri"]: r for r in forced})
    best = max((score for uri, score in scores.items() if uri in by_uri), default=0.0)
    relevant = sorted((by_uri[uri] for uri, score in scores.items() if uri in by_uri
                       and best > 0 and score >= best * RELEVANT_SHARE
                       and by_uri[uri]["id"] not in named),
                      key=lambda r: (-scores[r["uri"]], r["uri"]))[:BRIEF_RELEVANT]
    named_rules = [r for r in forced if r["id"] in named] if named else []
    blocking, rest = gen.memo("brief.rules_split", lambda: _split_rules(forced))
    return RuleGroups(
        [(r, "named", scores.get(r["uri"], 0.0), named[r["id"]]) for r in named_rules],
        [(r, "relevant", scores[r["uri"]], []) for r in relevant], blocking, rest,
        {r["uri"] for r in named_rules} | {r["uri"] for r in relevant}, scores)


def _split_rules(forced):
    """(the rules in force listed on a line each, the others), each (rules, {uri:
    position}, the left_out entries the budget would give them)."""
    out = []
    for why, which in (("blocking", [r for r in forced if _one_line_class(r["class"])]),
                       ("in_force", [r for r in forced if not _one_line_class(r["class"])])):
        out.append((which, {r["uri"]: n for n, r in enumerate(which)},
                    [{"uri": r["uri"], "reason": BRIEF_BUDGET} for r in which]))
    return tuple(out)


class RuleGroups:
    """A brief's rules in force, ranked (§29): `named` and `relevant`, items (rule, why,
    score, named_by); `blocking` and `in_force`, (rules, {uri: position}, the left_out
    entries of each), in order, in which the rules of `skip` (URIs: the chosen ones) are
    not theirs; `scores`, {uri: score}."""

    __slots__ = ("named", "relevant", "blocking", "in_force", "skip", "scores")

    def __init__(self, named, relevant, blocking, in_force, skip, scores):
        self.named, self.relevant, self.blocking, self.in_force = (
            named, relevant, blocking, in_force)
        self.skip, self.scores = skip, scores

    @classmethod
    def of(cls, items):
        """The groups of ranked items (rule, why, score, named_by) in §29's order."""
        split = [(why, [item[0] for item in items if item[1] == why])
                 for why in ("blocking", "in_force")]
        return cls([i for i in items if i[1] == "named"],
                   [i for i in items if i[1] == "relevant"], *[
                       (rules, {r["uri"]: n for n, r in enumerate(rules)},
                        [{"uri": r["uri"], "reason": BRIEF_BUDGET} for r in rules])
                       for why, rules in split],
                   set(), {item[0]["uri"]: item[2] for item in items})

    def own(self, which):
        """The rules of a group that are its own (not chosen), in order."""
        rules = which[0]
        skipped = {which[1][uri] for uri in self.skip if uri in which[1]}
        return [r for n, r in enumerate(rules) if n not in skipped] if skipped else rules

    def count(self, which):
        return len(which[0]) - sum(1 for uri in self.skip if uri in which[1])

    def cut_from(self, which, start):
        """The left_out entries of a group's own rules from its position `start` on:
        slices of the generation's entries around the chosen ones."""
        entries, out, at = which[2], [], start
        for n in sorted(which[1][uri] for uri in self.skip if uri in which[1]):
            if n >= at:
                out += entries[at:n]
                at = n + 1
        return out + entries[at:]

    def entry(self, rule, why):
        return dict(rule, named_by=[], why=why, score=self.scores.get(rule["uri"], 0.0))

    def total(self):
        return len(self.named) + len(self.relevant) + self.count(self.blocking) + self.count(
            self.in_force)


def _rule_entry(item):
    """A ranked rule (rule, why, score, named_by) as the Brief holds it (§29's keys)."""
    rule, why, score, named_by = item
    return dict(rule, named_by=named_by, why=why, score=score)


def _one_line_class(klass):
    """Whether a rule not chosen is listed on a line of its own: blocking, or a class
    other than advisory written as it is (a typo stays visible)."""
    return klass not in (None, "", "advisory")


def _own_problems(tree, chain, excluded, directory):
    """([the problems of the target's own chain: on a document of the chain or left out
    of it, or on a file under .ai/ in a folder that holds the target], how many others)."""
    paths = {doc.path for doc, _ in chain} | {doc.path for doc, _ in excluded}
    own, others = [], 0
    for problem in tree.problems:
        path = problem.path
        if path and (path in paths or path_contains(LAYER_TREE, path) and path_contains(
                path.rpartition("/")[0] or ".", directory)):
            own.append(problem)
        else:
            others += 1
    return own, others


# ---- the layout: one structure counts the budget, prints the text, draws the page
#
# The brief's text (§29) is made of parts, each a list of Markdown lines: the header, a
# section's heading, one rule, the line of the rules also in force, one document (its
# heading, where it is and why it applies, its body), one related object (with its
# passage), one entry left out. Each part is printed by one function below, and _fit
# counts the budget on those same parts, in lines and characters (a line's characters
# and its line break): the text never says more than the parts that were counted.

_BRIEF_HEADINGS = {
    "rules": ["", "## Rules in force (%d)"],
    "documents": ["", "## Documents that govern it, most specific first"],
    "related": ["", "## Related: linked from these documents, or matching the intent"],
    "left_out": ["", "## Left out"]}


class BriefAnswer(dict):
    """A Brief (the JSON) that carries the layout its text was counted on (BriefLayout),
    and what the layout needs beyond the JSON: how many problems of the layer lie outside
    the target's chain (`others`) and the URI of the policy a projection is generated from
    (`source`). The text and the page are drawn from the layout, never made again."""

    __slots__ = ("layout", "others", "source")


class BriefLayout:
    """The brief's text as parts, in print order: each (section, entry, lines), `section`
    one of head, rules, documents, related, left_out; `entry` the Brief's item the part
    prints (a rule, a document, a related object, a left_out entry; a list of rules for
    the line of those also in force), or None for the header and a section's heading;
    `lines` its Markdown. The one structure that counts what the budget counts (`lines`,
    `chars`), prints the text (text()) and that brief_html draws the page from."""

    __slots__ = ("parts", "lines", "chars", "counts", "_text")

    def __init__(self, parts, counts=None):
        self.parts, self.counts = parts, counts
        self.lines = sum(len(lines) for _, _, lines in parts)
        self.chars = sum(_cost(lines)[1] for _, _, lines in parts)
        self._text = None

    def text(self):
        if self._text is None:
            self._text = "".join(line + "\n" for _, _, lines in self.parts for line in lines)
        return self._text

    def entries(self, section):
        """The entries of a section's parts, in print order."""
        return [entry for name, entry, _ in self.parts if name == section and entry is not None]


def _cost(lines):
    """(lines, characters) of a part: each line and its line break."""
    return len(lines), sum(map(len, lines)) + len(lines)


class _Room:
    """What a brief has left of its budget (lines and characters), and the sections
    already opened (a section's first part costs its heading too)."""

    __slots__ = ("lines", "chars", "opened", "headings")

    def __init__(self, lines, chars, headings):
        self.lines, self.chars, self.opened, self.headings = lines, chars, set(), headings

    def take(self, lines, section=None):
        """Take a part (its lines), and its section's heading when it opens here, if they
        fit."""
        cost_lines, cost_chars = _cost(lines)
        if section is not None and section not in self.opened:
            extra = _cost(self.headings[section])
            cost_lines, cost_chars = cost_lines + extra[0], cost_chars + extra[1]
        if cost_lines > self.lines or cost_chars > self.chars:
            return False
        self.lines -= cost_lines
        self.chars -= cost_chars
        if section is not None:
            self.opened.add(section)
        return True

    def give(self, lines):
        self.lines, self.chars = self.lines + _cost(lines)[0], self.chars + _cost(lines)[1]


def _fit(value, docs, rules, related):
    """Fill the brief within both budgets (§29), taking in this order while each part
    fits, and stopping at the first that does not (so that what is cut goes in the cut
    order: first the rules also in force, then related, then the tails of the documents'
    bodies, then the blocking rules, then the relevant ones from the lowest score): the
    header (the projection line, and as many of the chain's problems as half the budget
    affords), the named rules, each document's heading with its first section (most
    specific first), the relevant rules, the blocking ones, the rest of each body (most
    specific first, a line at a time), the related objects, the rules also in force (as
    many ids as the line affords). A body that does not fit whole ends with a pointer to
    the rest. What does not fit goes to left_out.
    Every cost is the part brief_layout prints. Made for 10,000 rules: a part is made only
    when it is tried, and what the budget leaves out is sliced from the generation's
    entries. `rules`: RuleGroups, or a list of ranked items (rule, why, score, named_by)
    in §29's order. Sets the value's documents, rules, related, left_out, the layout and
    the counts."""
    budget_lines, budget_chars = value["budget_lines"], value["budget_chars"]
    groups = rules if isinstance(rules, RuleGroups) else RuleGroups.of(rules)
    total = groups.total()
    headings = dict(_BRIEF_HEADINGS, rules=_heading_lines("rules", total))
    entries = {}        # id(item) -> the rule as the Brief holds it, for a rule shown whole
    specific = docs[::-1]
    excluded = list(value["left_out"])
    for reserve in ((bool(excluded),) if excluded else (False, True)):
        room = _Room(budget_lines, budget_chars, headings)
        if reserve:
            room.take(_LEFT_OUT_LEAST)
        shown_problems = _problems_shown(value, room)
        room.take(_brief_head(value, (budget_lines, budget_chars),
                              value["problems"][:shown_problems], value.others, value.source))
        going = True
        shown = {}          # id(item) -> True, for the chosen rules shown

        def take_chosen(which):
            nonlocal going
            for item in which:
                entry = entries.get(id(item))
                if entry is None:
                    entry = entries[id(item)] = _rule_entry(item)
                if going and room.take([_rule_line(entry)], "rules"):
                    shown[id(item)] = True
                else:
                    going = False
                    return
        take_chosen(groups.named)
        bodies = {}         # id(doc) -> the body lines shown
        for doc in specific:
            # its heading and first section, else (a budget this tight) its heading alone
            for first in (_first_section(doc["body"]), 0):
                if going and room.take(_doc_head(doc) + doc["body"][:first] + (
                        [_pointer(doc, first)] if first < len(doc["body"]) else []),
                        "documents"):
                    bodies[id(doc)] = first
                    break
            else:
                going = False
        take_chosen(groups.relevant)
        blocking_count = groups.count(groups.blocking)
        rules, skip, lines_shown, at = groups.blocking[0], groups.skip, [], 0
        while going and at < len(rules):        # the blocking ones: a line each, in order
            rule = rules[at]
            if rule["uri"] not in skip:
                if not room.take((_blocking_label(blocking_count) if not lines_shown else [])
                                 + [_short_rule_line(rule)], "rules"):
                    going = False
                    break
                lines_shown.append(rule)
            at += 1
        for doc in specific:
            shown_lines, body = bodies.get(id(doc)), doc["body"]
            if not going or shown_lines is None or shown_lines == len(body):
                continue
            room.give([_pointer(doc, shown_lines)])
            while going and shown_lines < len(body):
                rest = shown_lines + 1 < len(body)
                pointer = [_pointer(doc, shown_lines + 1)] if rest else []
                if room.take([body[shown_lines]] + pointer):
                    room.give(pointer)
                    shown_lines += 1
                else:
                    going = False
            if shown_lines < len(body):
                room.take([_pointer(doc, shown_lines)])     # it fitted before: it fits
            bodies[id(doc)] = shown_lines
        shown_related = []
        for hit in related:
            if going and room.take(_related_lines(hit), "related"):
                shown_related.append(hit)
            else:
                going = False
        also = groups.own(groups.in_force)
        listed = _also_fitting(also, room, going) if also else 0
        dropped = [{"uri": item[0]["uri"], "reason": BRIEF_BUDGET}
                   for item in groups.named + groups.relevant if id(item) not in shown]
        dropped += groups.cut_from(groups.blocking, at)
        if listed < len(also):
            dropped += groups.cut_from(groups.in_force, groups.in_force[1][also[listed]["uri"]])
        if reserve or not (dropped or len(bodies) < len(docs)
                           or len(shown_related) < len(related)):
            break
    value["documents"] = [dict(doc, body=_cut(doc, bodies[id(doc)])) for doc in docs
                          if id(doc) in bodies]
    value["rules"] = [entries[id(item)] for item in groups.named + groups.relevant
                      if id(item) in shown] + [groups.entry(rule, "blocking") for rule in
                                               lines_shown] + [groups.entry(rule, "in_force")
                                                               for rule in also[:listed]]
    value["related"] = shown_related
    left_out = value["left_out"]
    left_out += dropped
    left_out += [{"uri": doc["uri"], "reason": BRIEF_BUDGET} for doc in specific
                 if id(doc) not in bodies]
    left_out += [{"uri": hit["uri"], "reason": BRIEF_BUDGET}
                 for hit in related[len(shown_related):]]
    counts = (total, blocking_count, len(also))
    layout = brief_layout(value, value.others, value.source, shown_problems, counts)
    value.layout = layout
    value["used_lines"], value["used_chars"] = layout.lines, layout.chars


def _problems_shown(value, room):
    """How many of the chain's problems the header names: at most BRIEF_PROBLEMS, and
    while the header stays within half of each budget."""
    problems = value["problems"]
    most = min(len(problems), BRIEF_PROBLEMS)
    while most:
        lines, chars = _cost(_brief_head(value, (value["budget_lines"], value["budget_chars"]),
                                         problems[:most], value.others, value.source))
        if (lines <= min(room.lines, value["budget_lines"] // 2)
                and chars <= min(room.chars, value["budget_chars"] // 2)):
            break
        most -= 1
    return most


def _also_fitting(also, room, going):
    """How many ids of the rules also in force (`also`, in order) the line lists within the
    room (taken): as many as fit beside the pointer to the rest; the line is never made
    with ids that do not fit (10,000 rules)."""
    if not going:
        return 0
    count = len(also)
    heading = [] if "rules" in room.opened else list(room.headings["rules"])
    least = _cost(heading + [_also_line(also, 0, count)])     # no id: the pointer alone
    if least[0] > room.lines:
        return 0
    left, shown = room.chars - least[1], 0
    while shown < count:
        cost = len(_id_text(also[shown])) + 2       # the id and its separator
        if cost > left:
            break
        left -= cost
        shown += 1
    while shown and not room.take([_also_line(also, shown, count)], "rules"):
        shown -= 1                                  # the exact line, its count's digits
    return shown


def _id_text(rule):
    text = rule["id"]
    return text if len(text) <= BRIEF_NAME and has_no_space(text) else _one_line(
        text, BRIEF_NAME)


def _rule_counts(value):
    """(the rules in force, the blocking ones, those also in force) a Brief counts from its
    JSON alone: those it holds, and the rules the budget left out (counted as also in force:
    the budget cuts them first)."""
    rules = value["rules"]
    cut = sum(1 for e in value["left_out"] if e["reason"] == BRIEF_BUDGET
              and e["uri"].startswith("majordomus://%s/" % RULE_KIND))
    return (len(rules) + cut, sum(1 for r in rules if r["why"] == "blocking"),
            sum(1 for r in rules if r["why"] == "in_force") + cut)


_LEFT_OUT_LEAST = _BRIEF_HEADINGS["left_out"] + [
    "- \u2026 999999 more (each is in left_out; read any with majordomus_get)"]


def brief_layout(value, others=0, source=None, problems_shown=BRIEF_PROBLEMS, counts=None):
    """The BriefLayout of a Brief: the header, the rules in force (named and relevant with
    their statements, blocking one line each, the rest on one line), the documents' bodies
    from the most specific to the least, the related objects with their passages, and
    what was left out (as many entries as the budget leaves, then how many more). The
    header's counts are the layout's own. `others`: the problems of the layer outside the
    target's chain; `source`: the URI of the policy a projection is generated from;
    `problems_shown`: how many of the chain's problems the header names; `counts`: (the
    rules in force, the blocking ones, those also in force), the budget's cuts counted
    (else _rule_counts)."""
    problems = value["problems"][:problems_shown]
    budgets = (value["budget_lines"], value["budget_chars"])
    parts = [("head", None, _brief_head(value, budgets, problems, others, source))]
    rules = value["rules"]
    if rules and counts is None:
        counts = _rule_counts(value)
    if rules:
        parts.append(("rules", None, _heading_lines("rules", counts[0])))
        parts += [("rules", r, [_rule_line(r)]) for r in rules if r["why"] in (
            "named", "relevant")]
        blocking = [r for r in rules if r["why"] == "blocking"]
        parts += [("rules", r, (_blocking_label(counts[1]) if not n else []) + [
            _short_rule_line(r)]) for n, r in enumerate(blocking)]
        also = [r for r in rules if r["why"] == "in_force"]
        if also:
            parts.append(("rules", also, [_also_line(also, len(also), counts[2])]))
    if value["documents"]:
        parts.append(("documents", None, _BRIEF_HEADINGS["documents"]))
        parts += [("documents", doc, _doc_head(doc) + (doc["body"].split("\n") if doc["body"]
                                                        else []))
                  for doc in value["documents"][::-1]]
    if value["related"]:
        parts.append(("related", None, _BRIEF_HEADINGS["related"]))
        parts += [("related", hit, _related_lines(hit)) for hit in value["related"]]
    left_out = value["left_out"]
    if left_out:
        parts.append(("left_out", None, _BRIEF_HEADINGS["left_out"]))
        used = [_cost(lines) for _, _, lines in parts]
        room = [value["budget_lines"] - sum(c[0] for c in used),
                value["budget_chars"] - sum(c[1] for c in used)]
        more = _cost([_LEFT_OUT_LEAST[-1]])
        shown = 0
        for entry in left_out:
            cost = _cost([_left_out_line(entry)])
            last = shown + 1 == len(left_out)
            need = (cost[0], cost[1]) if last else (cost[0] + more[0], cost[1] + more[1])
            if need[0] > room[0] or need[1] > room[1]:
                break
            room = [room[0] - cost[0], room[1] - cost[1]]
            shown += 1
        parts += [("left_out", e, [_left_out_line(e)]) for e in left_out[:shown]]
        if shown < len(left_out):
            parts.append(("left_out", None, [
                "- \u2026 %d more (each is in left_out; read any with majordomus_get)"
                % (len(left_out) - shown)]))
    layout = BriefLayout(parts)
    parts[0] = ("head", None, _brief_head(value, budgets, problems, others, source,
                                          (layout.lines, 0)))
    layout = BriefLayout(parts)
    # the header names the text's own count of characters: the count of a text whose
    # header holds the count (the digits found once, a fixed point of a few steps)
    base = layout.chars
    for digits in range(1, 8):
        if len(str(base + digits - 1)) == digits:
            break
    parts[0] = ("head", None, _brief_head(value, budgets, problems, others, source,
                                          (layout.lines, base + digits - 1)))
    return BriefLayout(parts, counts)


def _heading_lines(section, count=None):
    lines = _BRIEF_HEADINGS[section]
    return lines if count is None else [lines[0], lines[1] % count]


def _cut(doc, shown):
    """A document's body of `shown` lines (all: whole), else cut with the pointer."""
    lines = doc["body"]
    if shown >= len(lines):
        return "\n".join(lines)
    return "\n".join(lines[:shown] + [_pointer(doc, shown)])


def _pointer(doc, shown):
    return "\u2026 (%d more lines: majordomus_get %s)" % (len(doc["body"]) - shown, doc["uri"])


def _one_line(text, most=None):
    """A value on one line of the text (any line break or run of spaces one space)."""
    text = " ".join(str(text).split())
    return text if most is None or len(text) <= most else text[:most - 1] + "\u2026"


def _doc_head(doc):
    """A document's part before its body: a blank line, its title and path, where it is
    and why it applies."""
    return ["", "### %s (`%s`)" % (_one_line(doc["title"], BRIEF_NAME),
                                   _one_line(doc["path"], BRIEF_NAME)),
            "%s \u00b7 applies: %s" % (_one_line(doc["uri"], BRIEF_NAME),
                                       _one_line(doc["reason"], BRIEF_NAME))]


def _related_lines(hit):
    """A related object's part: its line, then its passage quoted (inside the item)."""
    head = "- [%s](%s) (%s)" % (_one_line(hit["title"], BRIEF_NAME),
                                _one_line(hit["uri"], BRIEF_NAME),
                                _one_line(hit["kind"], BRIEF_NAME))
    if not hit.get("excerpt"):
        return [head + ": " + _one_line(hit["snippet"], BRIEF_STATEMENT)]
    return [head + ":"] + [("  > " + line).rstrip() for line in hit["excerpt"].split("\n")]


def _left_out_line(entry):
    return "- %s: %s" % (_one_line(entry["uri"], BRIEF_NAME),
                         _one_line(entry["reason"], BRIEF_NAME))


def _brief_head(value, budgets, problems, others=0, source=None, used=None):
    """The header's lines: the target; the projection it is, when it is one (§29); what is
    there; the budget (`used` of it: (lines, characters)) and the profile; then the
    chain's problems given (and how many more) and how many others the layer has."""
    target, directory = _one_line(value["target"], BRIEF_HEAD), _one_line(
        value["directory"], BRIEF_HEAD)
    lines = ["# Brief: `%s`" % target]
    projection = value["projection"]
    if projection is not None:
        path = _one_line(projection["source"], BRIEF_HEAD)
        lines.append("generated from %s (%s): edit %s, not this file (majordomus_get %s)%s" % (
            path, "stamp %s" % _one_line(projection["stamp"], BRIEF_HEAD)
            if projection["stamp"] else "no stamp" if value["exists"] else "not written yet",
            path, _one_line(source or "majordomus://policy/" + projection["source"],
                            BRIEF_HEAD),
            "; stale: it no longer matches its stamp or the policy, `majordomus update` "
            "writes it again" if projection["stale"] else ""))
    if not value["exists"]:
        where = ("A new file: nothing exists at this path yet; it would be created in `%s`."
                 % directory)
    elif target == directory:
        where = "A directory of the repository." if target != "." else "The repository's root."
    else:
        where = "An existing file in `%s`." % directory
    profile = value["profile"]
    lines_used, chars_used = used or budgets
    lines += [where, "%d of %d lines \u00b7 %d of %d characters \u00b7 default profile %s" % (
        lines_used, budgets[0], chars_used, budgets[1],
        "[%s](%s)" % (_one_line(profile["title"], BRIEF_HEAD), _one_line(
            profile["uri"], BRIEF_HEAD)) if profile else "none")]
    every = value["problems"]
    if every:
        lines.append("**Degraded**: %d problem(s) in this path's chain (`context resolve` "
                     "refuses; this brief answers with what the index holds):" % len(every))
        lines += ["- `%s` %s: %s" % (_one_line(p["code"], BRIEF_NAME),
                                     _one_line(p["path"] or "-", BRIEF_NAME),
                                     _one_line(p["message"], BRIEF_STATEMENT))
                  for p in problems]
        if len(problems) < len(every):
            lines.append("- \u2026 %d more problem(s) of this chain: majordomus_repository"
                         % (len(every) - len(problems)))
    if others:
        lines.append("%d other problem(s) in the layer: majordomus_repository" % others)
    return lines


def brief_text(value):
    """The Brief as the Markdown a model reads (§26, §29): its layout's text, every line of
    it counted by the budget (the layout the brief was made with, when it carries one)."""
    layout = getattr(value, "layout", None)
    return (layout if layout is not None else brief_layout(value)).text()


def _rule_line(rule):
    """A chosen rule's line (named or relevant): its class, title, statement, and which
    documents name it."""
    kind = rule["class"]
    tag = "**blocking** " if kind == "blocking" else ("%s " % _one_line(kind, BRIEF_NAME)
                                                       if kind else "")
    line = "- %s[%s](%s)" % (tag, _one_line(rule["title"], BRIEF_NAME),
                             _one_line(rule["uri"], BRIEF_NAME))
    if rule["statement"]:
        line += ": " + _one_line(rule["statement"], BRIEF_STATEMENT)
    if rule["named_by"]:
        line += " (named by %s)" % _one_line(", ".join(rule["named_by"]), BRIEF_NAME)
    return line


def _blocking_label(count):
    """The line before the blocking rules' lines (the rules of another class than advisory
    with them)."""
    return ["Blocking (%d):" % count]


def _short_rule_line(rule):
    """A blocking rule's line (or one of another class than advisory, as written): its id
    and title; a title whose words the id already holds (`majordomus.ledger-integrity`,
    "Ledger integrity") is not said twice. Made once a rule (the last lines made kept)."""
    key = (rule["id"], rule["class"], rule["title"])
    line = _SHORT_LINES.get(key)
    if line is None:
        if len(_SHORT_LINES) >= 1 << 15:
            _SHORT_LINES.clear()
        line = _SHORT_LINES[key] = _make_short_rule_line(rule)
    return line


_SHORT_LINES = {}


def _make_short_rule_line(rule):
    kind = rule["class"]
    line = "- %s%s" % (_one_line(rule["id"], BRIEF_NAME), "" if kind == "blocking" else
                       " (class %s)" % _one_line(kind, BRIEF_NAME))
    title = _one_line(rule["title"], BRIEF_SHORT)
    if not set(search_terms(title)) <= set(search_terms(rule["id"])):
        line += ": " + title
    return line


def _also_line(also, shown, total):
    """The line of the rules also in force: `shown` ids of them, and a pointer to the rest
    of `total`."""
    ids = ", ".join(_id_text(r) for r in also[:shown])
    line = "Also in force (%d): %s" % (total, ids) if ids else "Also in force (%d):" % total
    if shown < total:
        line += " \u2026 (%d more: %s)" % (total - shown, BRIEF_MORE_RULES)
    return line


# ---- §30: the brief delivered at the moment (a client's hook)
#
# A client (Claude Code, Codex, Gemini CLI) runs `majordomus hook` before an edit, when a
# session starts and when a prompt is submitted, and puts what it prints before the model.
# What to say is decided here, from the client's JSON alone: which event, which paths, and
# what the session was not given yet (a memory handed in: the owner's, or a file's). The
# command line prints it in the client's shape (section 23); a live owner is asked for it
# by the sharing section (24), which also lends the claims and the peers (HookHost).

HOOK_CLIENTS = ("claude-code", "codex", "gemini")
HOOK_LINES, HOOK_CHARS = 60, 4000   # the compact brief's default budget (§30)
HOOK_START_LINES = 15               # an orientation's lines at most
HOOK_INPUT = 1048576                # bytes of a client's hook JSON at most
HOOK_TARGETS = 16                   # paths one edit is briefed for at most
HOOK_PROMPT_CHARS = 2000            # characters of a prompt taken as the intent
# The relevance bar of a prompt (§30): the §21 score its best rule or document must reach
# (a prompt about nothing the layer holds scores under 3 on real-latest; one naming a
# rule's subject, over 8), then §29's shares of that best one.
HOOK_PROMPT_BAR = 6.0
HOOK_PASSAGES = 2                   # documents a prompt's answer quotes at most
HOOK_KEPT = 4096                    # items a session's memory holds at most
HOOK_SESSIONS = 512                 # sessions an owner remembers at most
HOOK_FORGET = ("clear", "compact")  # a start after which the model has lost its context
HOOK_LINE = 1000                    # characters of an orientation's line at most
PATCH = "patch"                     # a tool whose paths are inside its patch text
HOOK_ROUTE = "/api/v1/hook"         # hook.deliver's HTTP route (a hook asks an owner there)

# The events each client runs the hook for: edit (before a tool writes files; Gemini CLI's
# AfterTool too, whose context is what it lets a hook add about a write), start, prompt.
HOOK_EVENTS = {
    "claude-code": {"PreToolUse": "edit", "SessionStart": "start",
                    "UserPromptSubmit": "prompt"},
    "codex": {"PreToolUse": "edit", "SessionStart": "start", "UserPromptSubmit": "prompt"},
    "gemini": {"BeforeTool": "edit", "AfterTool": "edit", "SessionStart": "start",
               "BeforeAgent": "prompt"}}
# The tools that write files, by client, and the key of tool_input naming the path (PATCH:
# the paths the patch text of tool_input.command names; a shell command carries one when
# Codex runs apply_patch through the shell).
HOOK_WRITERS = {
    "claude-code": {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path",
                    "NotebookEdit": "notebook_path"},
    "codex": {"apply_patch": PATCH, "Bash": PATCH, "shell": PATCH, "exec_command": PATCH,
              "local_shell": PATCH},
    "gemini": {"write_file": "file_path", "replace": "file_path"}}
_PATCH_HEADS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
_GEMINI_ONLY = ("BeforeTool", "AfterTool", "BeforeAgent")


class HookCall:
    """A client's hook JSON, read (§30): the client, its event's name, the event (edit,
    start, prompt, or None: nothing this hook answers, `why` says), the session id (None:
    none given, so nothing is remembered), the session's working directory, how a session
    started (`source`), the paths an edit names as the client sent them, the prompt."""

    __slots__ = ("client", "name", "event", "why", "session", "cwd", "source", "paths",
                 "prompt")

    def __init__(self, client, name):
        self.client, self.name = client, name
        self.event = self.why = self.session = self.cwd = self.source = self.prompt = None
        self.paths = []


def _hook_text(value, key, most=None):
    """A string field of the client's JSON, or None (absent, not a string, blank, or over
    `most` characters)."""
    text = value.get(key)
    if not isinstance(text, str) or not text.strip() or (most and len(text) > most):
        return None
    return text


def hook_client(value, client=None):
    """The client whose JSON `value` is: the one named (--client), else told by its event
    and fields: Gemini CLI's own event names (and a timestamp), Codex's apply_patch and
    turn_id; else Claude Code (whose output Codex shares)."""
    if client is not None:
        return client
    name = value.get("hook_event_name")
    if name in _GEMINI_ONLY or name == "SessionStart" and "timestamp" in value:
        return "gemini"
    if value.get("tool_name") == "apply_patch" or "turn_id" in value:
        return "codex"
    return "claude-code"


def read_hook(text, client=None):
    """The HookCall of a client's hook JSON (`text`); InvalidInput when it is not one."""
    try:
        value = json_loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidInput("the hook's input is not JSON: %s" % _one_line(exc, BRIEF_NAME))
    if not isinstance(value, dict):
        raise InvalidInput("the hook's input is not a JSON object")
    name = _hook_text(value, "hook_event_name", 100)
    if name is None:
        raise InvalidInput("the hook's input names no hook_event_name")
    call = HookCall(hook_client(value, client), name)
    call.session = _hook_text(value, "session_id", PATH_BOUND)
    cwd = _hook_text(value, "cwd", PATH_BOUND)
    call.cwd = cwd if cwd is not None and "\x00" not in cwd else None
    call.source = _hook_text(value, "source", 100)
    event = HOOK_EVENTS[call.client].get(name)
    if event is None:
        call.why = "%s is not an event this hook answers for %s" % (_one_line(name, 100),
                                                                     call.client)
    elif event == "prompt":
        call.prompt = value.get("prompt") if isinstance(value.get("prompt"), str) else ""
    elif event == "edit":
        tool, given = value.get("tool_name"), value.get("tool_input")
        where = HOOK_WRITERS[call.client].get(tool) if isinstance(tool, str) else None
        if where == PATCH and isinstance(given, dict):
            call.paths = patch_paths(given.get("command"))
        elif where is not None and isinstance(given, dict):
            path = given.get(where)
            call.paths = [path] if isinstance(path, str) and path else []
        if not call.paths:
            call.why = "%s writes no file this hook can name" % (
                _one_line(tool, 100) if isinstance(tool, str) else "the tool")
            return call
    call.event = event if call.why is None else None
    return call


def patch_paths(text):
    """The paths a patch (apply_patch's format: `*** Begin Patch`, then `*** Add File: P`,
    `*** Update File: P`, `*** Delete File: P`, `*** Move to: P` …) names, in order, once
    each; [] for a text that is no such patch."""
    if not isinstance(text, str) or "*** Begin Patch" not in text:
        return []
    out = []
    for line in text.split("\n"):
        line = line.rstrip("\r")
        for head in _PATCH_HEADS:
            if line.startswith(head):
                path = line[len(head):].strip()
                if path and path not in out:
                    out.append(path)
    return out


def _windows_absolute(path):
    """A path only Windows reads as absolute (`C:\\x`, `C:/x`, `\\\\server\\share`)."""
    return path[1:3] in (":\\", ":/") and path[:1].isalpha() or path.startswith("\\\\")


def hook_target(root, cwd, given, flavour=os.path):
    """§30: the repository-relative path (`/`-separated, `.` for the root) that a path a
    client sent names, or None when it lies outside the repository. A relative path is
    the client's working directory's (`cwd`, when absolute), else the root's; an absolute
    one is the platform's (`flavour`: os.path, or ntpath to read a Windows client's paths
    anywhere). The brief judges what it then names (§29: refused through a symlink)."""
    bounded_path(given)
    if flavour is os.path and os.sep == "/" and _windows_absolute(given):
        return None
    base = cwd if cwd and flavour.isabs(cwd) else root
    full = flavour.normpath(flavour.join(base, given))
    top = flavour.normpath(root)
    case = flavour.normcase
    if case(full) == case(top):
        return "."
    inside = flavour.join(top, "")
    if case(full).startswith(case(inside)):
        return full[len(inside):].replace(flavour.sep, "/")
    if flavour is os.path:
        under = _under_root(root, full)     # the root named through a symbolic link
        if under is not None:
            return under or "."
    return None


class HookHost:
    """What a hook's answer knows beyond the generation (§30, §31), lent by the process
    that answers: `memory` (what each session was given: a HookMemory, a file's, or None),
    the claims of other sessions overlapping some paths, and the sessions present. This
    base knows of no board: no claim, no peer (None: no shared server here)."""

    def __init__(self, memory=None):
        self.memory = memory

    def claims(self, targets):
        """[{id, client, branch, worktree, paths, pid}]: the live claims overlapping
        `targets` (repository-relative), `paths` the holder's that overlap, `pid` its
        client's process (None where unknown)."""
        return []

    def peers(self, ancestors):
        """[(a Peer, is it the hook's own client's?)] of the sessions present, or None
        where no shared server runs."""
        return None


class HookMemory:
    """What each session was given (§30), in this process's memory: {session key: {item
    key: True}}; the least recently used session goes past HOOK_SESSIONS, a session's
    oldest items past HOOK_KEPT. `session(key)` is used as a context manager, like a
    file's (section 24), and yields the session's items to read and add to."""

    def __init__(self):
        import _thread
        self.lock = _thread.allocate_lock()
        self.sessions = {}

    def session(self, key):
        return _Remembered(self, key)


class _Remembered:
    def __init__(self, memory, key):
        self.memory, self.key = memory, key

    def __enter__(self):
        memory = self.memory
        with memory.lock:
            given = memory.sessions.pop(self.key, None)
            if given is None:
                given = {}
                while len(memory.sessions) >= HOOK_SESSIONS:
                    del memory.sessions[next(iter(memory.sessions))]
            memory.sessions[self.key] = given
        return given

    def __exit__(self, *exc):
        with self.memory.lock:
            given = self.memory.sessions.get(self.key)
            while given is not None and len(given) > HOOK_KEPT:
                del given[next(iter(given))]
        return False


class _Forgetful:
    """No memory (no session id, or none lent): every hook is told everything."""

    def __enter__(self):
        return {}

    def __exit__(self, *exc):
        return False


def hook_deliver(gen, arguments, host=None):
    """§30: the handler of hook.deliver: what the client's hook adds (HookAnswer): the
    compact brief of the paths an edit names, an orientation at a session's start, the
    rules and passages a prompt is about; each item said once per session; with `guard`
    (§31), an edit of a path another session claims is refused (`deny`), else warned of."""
    call = read_hook(arguments["input"], arguments.get("client"))
    ancestors = arguments.get("ancestors", [])
    if len(ancestors) > 16 or not all(type(pid) is int for pid in ancestors):
        raise InvalidInput("property 'ancestors' holds at most 16 process ids (integers)")
    out = {"client": call.client, "event": call.event, "hook_event_name": call.name,
           "targets": [], "context": "", "deny": None, "note": call.why}
    if call.event is None:
        return out
    budget = (arguments.get("budget_lines", HOOK_LINES), arguments.get("budget_chars",
                                                                       HOOK_CHARS))
    memory = host.memory if host is not None else None
    key = call.session            # a session id is the client's own, unique across clients
    with (memory.session(key) if memory is not None and key is not None
          else _Forgetful()) as given:
        if call.event == "start":
            if call.source in HOOK_FORGET:
                given.clear()
            text, note = hook_start(gen, host, frozenset(ancestors), given, budget)
        elif call.event == "prompt":
            text, note = hook_prompt(gen, call.prompt, given, budget)
        else:
            text, note = _hook_edit(gen, call, host, frozenset(ancestors), given, budget,
                                    arguments.get("guard") is True, out)
    out["context"], out["note"] = text, note if not text and not out["deny"] else None
    return out


def _hook_edit(gen, call, host, ancestors, given, budget, guard, out):
    """Before an edit: (the compact brief of what is new to the session, why nothing is
    said); with the guard, `out["deny"]` when another session claims a path."""
    targets, outside = [], []
    for path in call.paths[:HOOK_TARGETS]:
        try:
            target = hook_target(gen.root, call.cwd, path)
        except InvalidInput:
            target = None
        if target is None:
            outside.append(path)
        elif target not in targets:
            targets.append(target)
    out["targets"] = targets
    if not targets:
        return "", "outside the repository: %s" % _one_line(", ".join(outside), BRIEF_NAME)
    claims = [claim for claim in (host.claims(targets) if host is not None else ())
              if claim.get("pid") is None or claim["pid"] not in ancestors]
    if claims and guard and call.name != "AfterTool":
        out["deny"] = hook_refusal(claims)
        return "", None
    if call.name == "BeforeTool":
        return "", ("Gemini CLI's BeforeTool carries no context for the model: the brief "
                    "comes with AfterTool")
    return hook_brief(gen, targets, given, budget, [_claim_line(c) for c in claims])


def _claim_words(claim):
    return "%s (%s) on branch %s in %s" % (
        _one_line(claim["id"], BRIEF_NAME), _one_line(claim["client"], BRIEF_NAME),
        _one_line(claim.get("branch") or "(detached)", BRIEF_NAME),
        _one_line(claim.get("worktree") or "-", BRIEF_NAME))


def _claim_line(claim):
    return ("Claimed by another session: %s, by %s. Coordinate before you change it "
            "(majordomus_peers), or change another path." % (
                _one_line(", ".join(claim["paths"]), BRIEF_NAME), _claim_words(claim)))


def hook_refusal(claims):
    """The guard's reason (§31): each claim the edit overlaps, its holder, branch and
    checkout, and what to do."""
    held = "; ".join("%s is claimed by %s" % (_one_line(", ".join(claim["paths"]),
                                                        BRIEF_NAME), _claim_words(claim))
                     for claim in claims)
    return ("majordomus guard: %s. Change another path, or ask that session to release "
            "its claim (it announces again with claim: false, or ends); majordomus_peers "
            "lists the claims." % held)


class _HookText:
    """The parts of a hook's context within a budget (lines, characters): `take` adds a
    part when it fits (a part with a key only when the session was not given it), and
    remembers what it added; `left` counts what did not fit."""

    def __init__(self, budget, given):
        self.lines, self.chars = budget
        self.given, self.parts, self.keys, self.left, self.known = given, [], [], 0, 0

    def new(self, key):
        if key in self.given:
            self.known += 1
            return False
        return True

    def take(self, lines, keys=(), room=(0, 0)):
        """Add `lines` if they fit with `room` (lines, characters) kept free; `keys`: what
        the session is then given."""
        cost = _cost(lines)
        if cost[0] + room[0] > self.lines or cost[1] + room[1] > self.chars:
            self.left += 1
            return False
        self.lines -= cost[0]
        self.chars -= cost[1]
        self.parts.append(lines)
        self.keys += keys
        return True

    def text(self):
        for key in self.keys:
            self.given[key] = True
        return "".join(line + "\n" for lines in self.parts for line in lines)


def hook_brief(gen, targets, given, budget, warnings=()):
    """§30: the compact brief of `targets` (repository-relative paths): for each, its
    projection line (first, §33), the rules named and relevant (§29, with their
    statements), the governing passage (the section of the most specific governing
    document that best matches the path's words) and the other documents that govern it;
    what the session was given before is not said again; within the budget, what does
    not fit counted on the last line. ("", why) when nothing is new."""
    briefs = []
    for target in targets:
        try:
            briefs.append((target, gen.execute("context.brief", {"path": target})))
        except RefusedPath:
            continue                        # outside, through a symbolic link
    if not briefs:
        return "", "outside the repository: %s" % _one_line(", ".join(targets), BRIEF_NAME)
    sections = gen.memo("brief.sections", dict)
    # What may be said, each (its keys: the first is its own, the rest what it gives too;
    # its lines), by kind, in order.
    firsts, rules, passages, documents = [], [], [], []
    for target, value in briefs:
        projection = value["projection"]
        if projection is not None:
            line = _brief_head(value, (value["budget_lines"], value["budget_chars"]), [], 0,
                               value.source)[1]
            firsts.append((("projection:%s:%s:%s" % (target, projection["stamp"],
                                                     projection["stale"]),),
                           ["`%s`: %s" % (_one_line(target, BRIEF_NAME), line)]))
        chosen = [rule for rule in value["rules"] if rule["why"] in ("named", "relevant")]
        rules += [(("rule:" + rule["uri"],), [_rule_line(rule)]) for rule in chosen]
        docs = [doc for doc in value["documents"] if doc["body"]][::-1]
        terms = _brief_terms(_path_words(gen, target, {doc["dir"] for doc in
                                                       value["documents"]}))
        for doc in docs:
            obj = gen.index.by_uri.get(doc["uri"])
            excerpt = _excerpt(obj, terms, sections) if obj is not None else None
            if excerpt:
                passages.append((("passage:%s:%s" % (doc["uri"], excerpt.split("\n", 1)[0][
                    :BRIEF_NAME]), "doc:" + doc["uri"]), [
                        "From %s (`%s`), the passage that governs this place:" % (
                            _doc_link(doc), _one_line(doc["path"], BRIEF_NAME))]
                    + [("> " + line).rstrip() for line in excerpt.split("\n")]))
                docs.remove(doc)
                break
        documents += [(("doc:" + doc["uri"],), "%s (`%s`)" % (
            _doc_link(doc), _one_line(doc["path"], BRIEF_NAME))) for doc in docs]
        if not value["documents"] and not chosen:
            passages.append((("none:" + value["directory"],), [
                "No context document governs `%s` and no rule names it: only the rules in "
                "force everywhere apply (listed at session start; majordomus_list kind=rule)."
                % _one_line(value["directory"], BRIEF_NAME)]))
    room = _HookText(budget, given)
    seen = set()

    def fresh(items):
        out = []
        for keys, lines in items:
            if keys[0] not in seen:
                seen.add(keys[0])
                if room.new(keys[0]):
                    out.append((keys, lines))
        return out
    firsts, rules, passages = fresh(firsts), fresh(rules), fresh(passages)
    quoted = {key for keys, _ in passages for key in keys[1:]}
    documents = [(keys, text) for keys, text in fresh(documents) if keys[0] not in quoted]
    if not (firsts or rules or passages or documents or warnings):
        return "", "already given in this session: %s" % _one_line(", ".join(targets),
                                                                    BRIEF_NAME)
    for keys, lines in firsts:
        room.take(lines, keys)
    shown = ", ".join("`%s`" % _one_line(t, BRIEF_NAME) for t, _ in briefs)
    room.take(["majordomus brief for %s, compact (the whole brief: majordomus_brief)%s:" % (
        shown, "; %d item(s) given earlier in this session are not repeated" % room.known
        if room.known else "")])
    for line in warnings:
        room.take([line])
    left = len(rules) + len(passages) + len(documents)
    reserve = _cost(["\u2026 %d more in the whole brief: majordomus_brief %s" % (
        left, _one_line(briefs[0][0], BRIEF_NAME))])
    for keys, lines in rules + passages:
        room.take(lines, keys, reserve)
    if documents:
        line = "Also governing: " + ", ".join(text for _, text in documents)
        if room.take([_one_line(line, HOOK_LINE)], (), reserve):
            room.keys += [keys[0] for keys, _ in documents]
    if room.left:
        room.take(["\u2026 %d more in the whole brief: majordomus_brief %s" % (
            room.left, _one_line(briefs[0][0], BRIEF_NAME))])
    return room.text(), None


def _doc_link(doc):
    return "[%s](%s)" % (_one_line(doc["title"], BRIEF_NAME), _one_line(doc["uri"], BRIEF_NAME))


def hook_start(gen, host, ancestors, given, budget):
    """§30: one orientation at a session's start (at most HOOK_START_LINES lines): the
    layer's state, the blocking rules' ids, the sessions present, and one sentence on
    majordomus_brief; once per session (a start after /clear or a compaction forgets)."""
    if "start" in given:
        return "", "this session was oriented already"
    index = gen.index
    forced = rules_in_force(gen)
    problems = len(index.diagnostics) + len(index.context.problems)
    lines = ["majordomus: this repository's AI layer is read here: state %s, %d objects, "
             "%d rules in force, %d context documents%s." % (
                 index.state, len(index.objects), len(forced), len(index.context.docs),
                 " (%d problem(s): majordomus_repository)" % problems if problems else "")]
    blocking = [r["id"] for r in forced if r["class"] == "blocking"]
    if blocking:
        lines.append(_hook_list("Blocking rules (%d): " % len(blocking), blocking,
                                " \u2026 (%d more: " + BRIEF_MORE_RULES + ")"))
    present = host.peers(ancestors) if host is not None else None
    if present is not None:
        others = ["%s (%s)%s%s" % (
            _one_line(peer["id"], BRIEF_NAME), _one_line(peer["client"], BRIEF_NAME),
            " on branch %s" % _one_line(peer["branch"], BRIEF_NAME) if peer.get("branch")
            else "", ": %s %s" % ("claims" if peer.get("claim") else "announced",
                                  _one_line(", ".join(peer["scope"]), BRIEF_NAME))
            if peer.get("scope") else "") for peer, own in present if not own]
        lines.append(_hook_list("Other sessions in this repository (%d): " % len(others),
                                others, " \u2026 (%d more: majordomus_peers)") if others else
                     "No other session shares this repository's server now "
                     "(majordomus_peers lists them as they come).")
    lines.append("Before you create or change a file, call majordomus_brief with its path and "
                 "your intent: the rules that apply, the documents that govern the place and "
                 "their passages, within a budget.")
    room = _HookText((min(budget[0], HOOK_START_LINES), budget[1]), given)
    for line in lines:
        room.take([line])
    room.keys.append("start")
    return room.text(), None


def _hook_list(head, names, rest):
    """`head` and as many of `names` as HOOK_LINE characters hold, the rest counted."""
    line, shown = head, 0
    for name in names:
        tail = rest % (len(names) - shown - 1) if shown + 1 < len(names) else ""
        if len(line) + len(name) + 2 + len(tail) > HOOK_LINE:
            break
        line += (", " if shown else "") + name
        shown += 1
    return line + (rest % (len(names) - shown) if shown < len(names) else "")


def hook_prompt(gen, prompt, given, budget):
    """§30: on a prompt, the rules (with their statements) and the passages that §21's
    ranking finds for its text as the intent, only those over the relevance bar (the best
    hit of each at least HOOK_PROMPT_BAR; then §29's shares of it); nothing else, and
    nothing the session was given."""
    intent = " ".join(prompt.split())[:HOOK_PROMPT_CHARS]
    if not intent:
        return "", "an empty prompt"
    hits = ranked_hits(gen, intent, None)
    forced = gen.memo("brief.rules_by_uri", lambda: {r["uri"]: r for r in rules_in_force(gen)})
    rules = [(score, forced[obj.uri]) for score, obj in hits if obj.uri in forced]
    docs = [(score, obj) for score, obj in hits
            if obj.kind != RULE_KIND and obj.body is not None and obj.body.strip()]
    chosen = []
    if rules and rules[0][0] >= HOOK_PROMPT_BAR:
        bar = rules[0][0] * RELEVANT_SHARE
        chosen += [("rule", "rule:" + rule["uri"], [_rule_line(dict(
            rule, named_by=[], why="relevant", score=score))])
                   for score, rule in rules[:BRIEF_RELEVANT] if score >= bar]
    if docs and docs[0][0] >= HOOK_PROMPT_BAR:
        bar, terms = docs[0][0] * RELATED_SHARE, _brief_terms(intent)
        sections = gen.memo("brief.sections", dict)
        for score, obj in docs[:HOOK_PASSAGES]:
            excerpt = _excerpt(obj, terms, sections) if score >= bar else None
            if excerpt:
                chosen.append(("passage", "passage:%s:%s" % (
                    obj.uri, excerpt.split("\n", 1)[0][:BRIEF_NAME]), [
                        "From [%s](%s) (`%s`):" % (
                            _one_line(obj.title or obj.identity, BRIEF_NAME),
                            _one_line(obj.uri, BRIEF_NAME), _one_line(obj.path, BRIEF_NAME))]
                    + [("> " + line).rstrip() for line in excerpt.split("\n")]))
    if not chosen:
        return "", "nothing in the layer is over the relevance bar for this prompt"
    room = _HookText(budget, given)
    fresh = [item for item in chosen if room.new(item[1])]
    if not fresh:
        return "", "already given in this session"
    room.take(["majordomus: what the layer says about this request (before you change a "
               "file, majordomus_brief gives its whole brief):"])
    for _, key, lines in fresh:
        room.take(lines, (key,))
    return room.text(), None


# ---------------------------------------------------------------------------------------
# 14. The capability registry (§7): descriptors without code (the builtins' and the layer's
#    declarative ones), their schemas, the registry's invariants, input validation.
# ---------------------------------------------------------------------------------------

class Counters:
    """The process's counters and phase timings (perf.counters), across generations."""

    NAMES = ("repository_scans", "index_builds", "registry_builds", "mcp_projection_builds",
             "http_projection_builds", "executions", "handler_invocations", "cache_hits",
             "cache_misses", "cache_evictions", "freshness_checks", "sweeps", "stamp_moves",
             "files_read", "rebuilds_failed", "generation")
    PHASES = ("repository_discovery", "index_build", "registry_build", "handler_execution",
              "cache_lookup", "freshness_check", "sweep")

    def __init__(self):
        import _thread
        self.lock = _thread.allocate_lock()   # serve runs handlers on many threads
        self.values = dict.fromkeys(self.NAMES, 0)
        self.phases = {name: [0, 0] for name in self.PHASES}

    def count(self, name, amount=1):
        with self.lock:
            self.values[name] += amount

    def phase(self, name, began):
        elapsed = time.perf_counter_ns() - began
        with self.lock:
            entry = self.phases[name]
            entry[0] += 1
            entry[1] += elapsed

    def snapshot(self):
        with self.lock:
            out = dict(self.values)
            out["phases"] = {name: {"count": c, "total_nanos": t}
                             for name, (c, t) in self.phases.items()}
        return out


# JSON Schemas (2020-12) of the named input and output types of §7.2.
def _object_schema(properties, required=(), closed=False):
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return schema


_STR, _INT, _BOOL = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
# One `type` a node: clients that map tool schemas onto a single-type dialect reject lists.
_STR_OR_NULL = {"anyOf": [_STR, {"type": "null"}]}
_ANY_OBJECT = {"type": "object"}
_COUNTS = {"type": "object", "additionalProperties": _INT}
_PROVENANCE = _object_schema({"source": _STR, "module": _STR, "path": _STR, "directory": _STR,
                              "source_class": _STR, "section": _STR, "member": _STR,
                              "bytes": _INT, "media_type": _STR})
_SUMMARY = _object_schema({"uri": _STR, "id": _STR, "kind": _STR, "identity": _STR,
                           "title": _STR, "description": _STR, "path": _STR},
                          ("uri", "id", "kind", "identity", "path"))
_HIT = _object_schema(dict(_SUMMARY["properties"], score={"type": "number"}, snippet=_STR),
                      _SUMMARY["required"])
_DIAGNOSTIC = _object_schema({"severity": {"type": "string", "enum": ["error", "warning", "info"]},
                              "code": _STR, "path": _STR, "message": _STR},
                             ("severity", "code", "message"))
_REGISTRY_SUMMARY = _object_schema(
    {"total": _INT, "builtin": _INT, "declarative": _INT, "by_kind": _COUNTS,
     "by_stability": _COUNTS, "mcp_tools": _INT, "mcp_resources": _INT,
     "http_routes": _INT, "cli_commands": _INT},
    ("total", "builtin", "declarative", "by_kind", "by_stability", "mcp_tools",
     "mcp_resources", "http_routes", "cli_commands"))
_TYPED_SCHEMA = _object_schema({"name": _STR, "schema": _ANY_OBJECT}, ("schema",))
_DESCRIPTOR = _object_schema(
    {"id": _STR, "module": _STR,
     "kind": {"type": "string", "enum": ["query", "command", "resource"]},
     "title": _STR, "description": _STR, "input": _TYPED_SCHEMA, "output": _TYPED_SCHEMA,
     "provenance": _PROVENANCE, "exposure": _ANY_OBJECT, "stability": _STR,
     "tags": {"type": "array", "items": _STR}, "cache": _ANY_OBJECT},
    ("id", "module", "kind", "title", "description", "input", "output", "provenance",
     "exposure", "stability", "cache"))
_GIT = {"type": "object", "properties": {
    "state": {"type": "string", "enum": ["available", "unavailable"]}, "reason": _STR,
    "toplevel": _STR, "head": _STR_OR_NULL,
    "branch": _STR_OR_NULL,
    "working_tree": {"type": "string", "enum": ["clean", "dirty", "unknown"]}},
    "required": ["state"]}
_REPORT = _object_schema({
    "repository": _object_schema({
        "root": _STR, "layer_schema": _STR_OR_NULL,
        "sections": {"type": "object", "additionalProperties": _STR}, "git": _GIT,
        "discovery": {"type": "string", "enum": ["vcs", "filesystem"]},
        "source_classes": {"type": "array", "items": {"type": "array", "items": _STR}},
        "kinds_file": _STR_OR_NULL},
        ("root", "layer_schema", "sections", "git", "discovery", "source_classes",
         "kinds_file")),
    "state": {"type": "string", "enum": ["ok", "degraded", "broken"]}, "objects": _INT,
    "kinds": _COUNTS, "diagnostics": {"type": "array", "items": _DIAGNOSTIC},
    "capabilities": _REGISTRY_SUMMARY,
    "context": _object_schema({"documents": _INT, "problems": _INT}, ("documents", "problems")),
    "live": _object_schema({"generation": _INT, "stale": _STR_OR_NULL},
                           ("generation", "stale"))},
    ("repository", "state", "objects", "kinds", "diagnostics", "capabilities", "context",
     "live"))
_WINDOW = _object_schema({"offset": _INT, "limit": _INT, "lines": _INT, "total_lines": _INT,
                          "next_offset": _INT}, ("offset", "limit", "lines", "total_lines"))
_VIEW_FIELDS = {"source": {"type": "string", "enum": ["declarative", "builtin"]}, "uri": _STR,
                "id": _STR, "kind": _STR, "identity": _STR, "title": _STR,
                "description": _STR, "metadata": _ANY_OBJECT, "answer": _REPORT,
                "provenance": _PROVENANCE, "media_type": _STR, "content": _STR,
                "window": _WINDOW}
_VIEW_REQUIRED = ("source", "uri", "id", "kind", "identity", "provenance", "media_type",
                  "content")
_KIND_ENUM = ["query", "command", "resource"]
_EXPOSURE_ENUM = ["mcp", "http", "cli"]
_CURSOR = dict(_STR, description="where the previous answer's next_cursor said to go on")
_NEXT = dict(_STR, description="present when more remain: pass it as cursor for the rest")
_PROMPT_MESSAGE = _object_schema({
    "role": {"type": "string", "enum": ["user"]},
    "content": _object_schema({"type": {"type": "string", "enum": ["text"]}, "text": _STR},
                              ("type", "text"))}, ("role", "content"))


_STRINGS = {"type": "array", "items": _STR}
_CONTEXT_DOC = _object_schema(
    {"index": _INT, "id": _STR, "uri": _STR, "path": _STR, "dir": _STR, "depth": _INT,
     "scope": {"type": "string", "enum": ["directory", "subtree", "explicit"]},
     "composition": {"type": "string", "enum": ["extend", "replace", "final"]},
     "order": _INT, "status": {"type": "string", "enum": ["active", "deprecated"]},
     "title": _STR, "providers": _STRINGS, "audience": _STRINGS, "supersedes": _STRINGS,
     "tracks": _STRINGS, "paths": _STRINGS, "sha256": _STR, "reason": _STR},
    ("index", "id", "uri", "path", "dir", "depth", "scope", "composition", "order", "status",
     "title", "providers", "audience", "supersedes", "tracks", "paths", "sha256", "reason"))
_CONTEXT_LEFT_OUT = _object_schema({"id": _STR, "uri": _STR, "path": _STR, "reason": _STR},
                                   ("id", "uri", "path", "reason"))
# §33: what list, validate, affected and check-sync answer.
# A listed document has a chain document's fields but `reason` (the README lists them;
# its schema is kept short: §16's first page of capabilities holds these four).
_CONTEXT_LISTED = {"type": "object", "required": ["index", "id", "path", "scope",
                                                  "composition", "providers", "status"]}
_CONTEXT_PROBLEM = _object_schema({"class": _STR, "subject": _STR, "message": _STR,
                                   "reproduce": _STR},
                                  ("class", "subject", "message", "reproduce"))
_CONTEXT_FINDING = _object_schema(
    {"level": {"type": "string", "enum": ["OK", "INFO", "WARN", "FAIL", "DRIFT"]},
     "category": _STR, "subject": _STR, "message": _STR, "reproduce": _STR},
    ("level", "category", "subject", "message", "reproduce"))
_PROJECTION = _object_schema(
    {"provider": _STR, "target": _STR, "mode": _STR,
     "source": dict(_STR, description="edit this, not the target"), "template": _BOOL,
     "state": {"type": "string", "enum": ["ok", "stale", "hand_edited", "unstamped",
                                          "malformed", "absent", "region_absent"]},
     "stamp": {"anyOf": [_object_schema({"policy": _STR, "content": _STR},
                                        ("policy", "content")), {"type": "null"}]},
     "policy": _STR, "stale": _BOOL},
    ("provider", "target", "mode", "source", "template", "state", "stamp", "policy", "stale"))
_CHANGE_MODE = {"type": "string", "enum": ["worktree", "staged", "base"]}
_PEER = _object_schema(
    {"id": _STR, "client": dict(_STR, description="the name its client gave"),
     "transport": {"type": "string", "enum": ["stdio", "bridge", "http"]},
     "since": dict(_STR, description="UTC, ISO 8601"), "intent": _STR,
     "scope": dict(_STRINGS, description="the paths it announced it will change"),
     "announced": _STR,
     "overlaps": dict(_STRINGS, description="the peers whose scope overlaps this one's"),
     "worktree": _STR, "branch": _STR_OR_NULL, "claim": _BOOL, "handle": _STR},
    ("id", "client", "transport", "since", "scope", "overlaps", "worktree", "branch",
     "claim"))


def _limit(low, high, default, what):
    return {"type": "integer", "minimum": low, "maximum": high, "default": default,
            "description": "the most %s to return" % what}


TYPES = {
    "Empty": _object_schema({}, closed=True),
    "ListInput": _object_schema({
        "kind": dict(_STR, description="only objects of this kind"),
        "tag": dict(_STR, description="only objects whose metadata tags list holds this tag"),
        "limit": _limit(1, 500, 50, "objects"), "cursor": _CURSOR}, closed=True),
    "GetInput": _object_schema({
        "uri": dict(_STR, description="a majordomus:// URI, as resources/list gives it"),
        "offset": {"type": "integer", "minimum": 1,
                   "description": "the first line to return (from 1), for a window"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 10000,
                  "description": "the most lines to return, for a window"}},
        ("uri",), closed=True),
    "SearchInput": _object_schema({
        "query": dict(_STR, description="what to find, in plain words (ranked) or the exact "
                      "text to find (substring), case-insensitive"),
        "kind": dict(_STR, description="only objects of this kind"),
        "limit": _limit(1, 200, 20, "hits"), "cursor": _CURSOR,
        "mode": {"type": "string", "enum": ["ranked", "substring"], "default": "ranked",
                 "description": "ranked: by relevance to the query's words (the default); "
                                "substring: objects containing the query verbatim, in URI "
                                "order"}}, ("query",), closed=True),
    "CapabilitiesInput": _object_schema({
        "kind": {"type": "string", "enum": _KIND_ENUM},
        "exposure": {"type": "string", "enum": _EXPOSURE_ENUM},
        "limit": _limit(1, 200, 20, "capabilities"), "cursor": _CURSOR}, closed=True),
    "DescribeInput": _object_schema({
        "id": dict(_STR, description="a capability id, e.g. objects.get")}, ("id",), closed=True),
    "PromptInput": _object_schema({
        "name": dict(_STR, description="a prompt's name, as prompts/list gives it"),
        "arguments": {"type": "object", "additionalProperties": _STR,
                      "description": "a value for each {{NAME}} placeholder of the prompt"}},
        ("name",), closed=True),
    "ContextInput": _object_schema({
        "path": dict(_STR, description="a repository-relative path, a file (which resolves to "
                     "its directory) or a directory; '.' is the root"),
        "provider": dict(_STR, description="only the documents for this provider (a name the "
                         "policy's projections declare)"),
        "audience": {"type": "string", "enum": list(_AUDIENCES),
                     "description": "only the documents addressed to this audience"}},
        ("path",), closed=True),
    "ContextResolution": _object_schema({
        "schema": _STR, "target": _STR, "directory": _STR, "provider": _STR_OR_NULL,
        "audience": _STR_OR_NULL, "fingerprint": _STR,
        "documents": {"type": "array", "items": _CONTEXT_DOC},
        "excluded": {"type": "array", "items": _CONTEXT_LEFT_OUT}},
        ("schema", "target", "directory", "provider", "audience", "fingerprint", "documents",
         "excluded")),
    "ContextList": _object_schema({
        "schema": _STR, "tree": _STR, "count": _INT,
        "documents": {"type": "array", "items": _CONTEXT_LISTED}, "conventions": _STRINGS,
        "problems": {"type": "array", "items": _CONTEXT_PROBLEM}},
        ("schema", "tree", "count", "documents", "conventions", "problems")),
    "ContextValidation": _object_schema({
        "schema": _STR, "tree": _STR, "valid": _BOOL, "documents": _INT,
        "problems": {"type": "array", "items": _CONTEXT_PROBLEM}},
        ("schema", "tree", "valid", "documents", "problems")),
    "AffectedInput": _object_schema({
        "base": dict(_STR, description="a commit to compare the work tree with, not HEAD"),
        "staged": dict(_BOOL, description="only what is staged")},
        closed=True),
    "ContextAffected": _object_schema({
        "mode": _CHANGE_MODE, "base": _STR_OR_NULL, "valid": _BOOL,
        "documents": _INT, "affected": _INT,
        "findings": {"type": "array", "items": _CONTEXT_FINDING},
        "untracked": dict(_STRINGS, description="not documents until git add"),
        "projections": {"type": "array", "items": _PROJECTION}},
        ("mode", "base", "valid", "documents", "affected", "findings", "untracked",
         "projections")),
    "ContextSync": _object_schema({
        "status": {"type": "string", "enum": ["in_sync", "invalid", "drift"]},
        "documents": _INT, "projections": _INT, "affected": _INT,
        "findings": {"type": "array", "items": _CONTEXT_FINDING}},
        ("status", "documents", "projections", "affected", "findings")),
    "AnnounceInput": _object_schema({
        "intent": dict(_STR, maxLength=500, description="what you are about to do, in plain "
                       "words"),
        "scope": {"type": "array", "items": _STR, "maxItems": 64,
                  "description": "the repository-relative paths (files or folders) you expect "
                                 "to change; '.' is the whole repository"},
        "claim": dict(_BOOL, description="hold the scope exclusively (false or an empty "
                      "scope releases it)"),
        "handle": dict(_STR, description="what an earlier announce answered, where there is "
                       "no session")},
        ("intent", "scope"), closed=True),
    "Peer": _PEER,
    "PeersInput": _object_schema({"local": dict(_BOOL, description="this checkout's "
                                                "sessions only")}, closed=True),
    "PeerList": _object_schema({"count": _INT,
                                "caller": dict(_STR, description="the id of the session asking"),
                                "peers": {"type": "array", "items": _PEER},
                                "boards": _INT, "complete": _BOOL},
                               ("count", "peers", "boards", "complete")),
    "TellInput": _object_schema({"peer": _PEER}, ("peer",), closed=True),
    "Told": _object_schema({"told": _STRINGS}, ("told",)),
    "HookInput": _object_schema({
        "input": dict(_STR, maxLength=HOOK_INPUT, description="the client's hook JSON, as "
                      "its hook command reads it on stdin"),
        "client": {"type": "string", "enum": list(HOOK_CLIENTS)},
        "budget_lines": {"type": "integer", "minimum": BRIEF_LINES[0],
                         "maximum": BRIEF_LINES[2], "default": HOOK_LINES},
        "budget_chars": {"type": "integer", "minimum": BRIEF_CHARS[0],
                         "maximum": BRIEF_CHARS[2], "default": HOOK_CHARS},
        "guard": dict(_BOOL, description="refuse an edit of a path another session claims"),
        "ancestors": {"type": "array", "items": _INT, "maxItems": 16,
                      "description": "the hook's ancestor processes: a claim of a session "
                                     "whose client is one of them is the hook's own"}},
        ("input",), closed=True),
    "HookAnswer": _object_schema({
        "client": _STR, "event": _STR_OR_NULL, "hook_event_name": _STR,
        "targets": _STRINGS, "context": dict(_STR, description="what the client adds before "
                                             "the model ('': nothing)"),
        "deny": _STR_OR_NULL, "note": _STR_OR_NULL},
        ("client", "event", "hook_event_name", "targets", "context", "deny", "note")),
    "BriefInput": _object_schema({
        "path": dict(_STR, description="a file or folder ('.': the root), existing or not"),
        "intent": dict(_STR, description="what you will do there, in plain words"),
        "provider": dict(_STR, description="only the documents for this provider"),
        "audience": {"type": "string", "enum": list(_AUDIENCES),
                     "description": "only the documents addressed to this audience"},
        "budget_lines": {"type": "integer", "minimum": BRIEF_LINES[0],
                         "maximum": BRIEF_LINES[2],
                         "description": "most lines of the text (default: the policy's "
                                        "context.builder_budget_lines, else 300)"},
        "budget_chars": {"type": "integer", "minimum": BRIEF_CHARS[0],
                         "maximum": BRIEF_CHARS[2],
                         "description": "most characters of the text (default %d)"
                                        % BRIEF_CHARS[1]}},
        ("path",), closed=True),
    "Brief": _object_schema({
        "schema": _STR, "target": _STR, "directory": _STR, "exists": _BOOL,
        "projection": {"anyOf": [_object_schema(
            {"source": _STR, "stamp": _STR_OR_NULL, "stale": _BOOL},
            ("source", "stamp", "stale")), {"type": "null"}]},
        "degraded": _BOOL,
        "problems": {"type": "array", "items": _object_schema(
            {"code": _STR, "path": _STR_OR_NULL, "message": _STR}, ("code", "path", "message"))},
        "fingerprint": _STR, "budget_lines": _INT, "used_lines": _INT,
        "budget_chars": _INT, "used_chars": _INT,
        "documents": {"type": "array", "items": _object_schema(
            dict(_CONTEXT_DOC["properties"], body=_STR),
            _CONTEXT_DOC["required"] + ["body"])},
        "rules": {"type": "array", "items": _object_schema(
            {"uri": _STR, "id": _STR, "version": {"anyOf": [_INT, _STR, {"type": "null"}]},
             "title": _STR, "class": _STR_OR_NULL, "statement": _STR_OR_NULL,
             "named_by": _STRINGS,
             "why": _STR, "score": {"type": "number"}},
            ("uri", "id", "version", "title", "class", "statement", "named_by", "why",
             "score"))},
        "profile": {"anyOf": [_object_schema({"uri": _STR, "title": _STR}, ("uri", "title")),
                              {"type": "null"}]},
        "related": {"type": "array", "items": _object_schema(
            {"uri": _STR, "kind": _STR, "title": _STR, "snippet": _STR,
             "excerpt": _STR_OR_NULL},
            ("uri", "kind", "title", "snippet", "excerpt"))},
        "left_out": {"type": "array", "items": _object_schema(
            {"uri": _STR, "reason": _STR, "detail": _STR}, ("uri", "reason"))}},
        ("schema", "target", "directory", "exists", "projection", "degraded", "problems",
         "fingerprint", "budget_lines", "used_lines", "budget_chars", "used_chars",
         "documents", "rules", "profile", "related", "left_out")),
    "RepositoryReport": _REPORT,
    "ObjectList": _object_schema({"count": _INT, "total": _INT,
                                  "objects": {"type": "array", "items": _SUMMARY},
                                  "next_cursor": _NEXT}, ("count", "total", "objects")),
    "SearchResult": _object_schema({"query": _STR,
                                    "mode": {"type": "string", "enum": ["ranked"]},
                                    "count": _INT, "total": _INT, "limit": _INT,
                                    "hits": {"type": "array", "items": _HIT},
                                    "next_cursor": _NEXT},
                                   ("query", "count", "total", "limit", "hits")),
    "ResourceView": _object_schema(_VIEW_FIELDS, _VIEW_REQUIRED),
    "ObjectView": _object_schema(
        {k: v for k, v in _VIEW_FIELDS.items() if k not in ("source", "answer", "window")},
        ("uri", "id", "kind", "identity", "metadata", "provenance", "media_type", "content")),
    "CapabilityList": _object_schema({"count": _INT, "total": _INT,
                                      "summary": _REGISTRY_SUMMARY,
                                      "capabilities": {"type": "array", "items": _DESCRIPTOR},
                                      "next_cursor": _NEXT},
                                     ("count", "total", "summary", "capabilities")),
    "Capability": _DESCRIPTOR,
    "PromptResult": _object_schema({"name": _STR, "description": _STR,
                                    "messages": {"type": "array", "items": _PROMPT_MESSAGE},
                                    "uri": _STR, "provenance": _PROVENANCE},
                                   ("name", "messages", "uri", "provenance")),
    "CounterSnapshot": _object_schema(
        dict({name: _INT for name in Counters.NAMES}, phases={
            "type": "object", "additionalProperties": _object_schema(
                {"count": _INT, "total_nanos": _INT}, ("count", "total_nanos"))}),
        Counters.NAMES + ("phases",)),
}

BUILTIN_PROVENANCE = {"source": "builtin", "module": "majordomus"}

# The builtin capabilities of §7.2, as data: (id, title, description, input, output,
# MCP tool, MCP resource (uri, name) or None, HTTP path or None, CLI words or None,
# process-cache size or 0).
BUILTINS = (
    ("repository.info", "Repository and index state",
     "Returns the repository root, its layer sections, git state, discovery mode, source "
     "classes, the index state with every diagnostic, the capability summary and the live "
     "generation.",
     "Empty", "RepositoryReport", "majordomus_repository",
     ("majordomus://repository", "repository"), "/api/v1/repository", None, 0),
    ("objects.list", "List objects",
     "Returns one page of object summaries in URI order (50 by default), optionally only "
     "those of one kind or carrying one tag, with the total and a next_cursor while more "
     "remain.",
     "ListInput", "ObjectList", "majordomus_list", None, "/api/v1/objects", None, 0),
    ("objects.get", "Get one object",
     "Returns the object a majordomus:// URI names, with its metadata, provenance and exact "
     "content; for a large file, ask for a window of lines with offset and limit. A URI a "
     "query projects (majordomus://repository) answers that query as a JSON document; the "
     "same resolution serves the MCP resource read.",
     "GetInput", "ResourceView", "majordomus_get", None, "/api/v1/object", ["get"], 0),
    ("objects.search", "Search objects",
     "Finds the rules, prompts and documents an agent needs: ask in plain words (\"how do "
     "I hand over a session\") or with keywords; returns the objects ranked by relevance, "
     "best first, each with its score and the line that matches best, one page at a time. "
     "mode substring finds the exact text instead, in URI order.",
     "SearchInput", "SearchResult", "majordomus_search", None, "/api/v1/search", ["search"],
     64),
    ("capabilities.list", "List capabilities",
     "Returns one page of capability descriptors in id order (20 by default), optionally "
     "filtered by kind or exposure, with a summary of the whole registry.",
     "CapabilitiesInput", "CapabilityList", "majordomus_capabilities", None,
     "/api/v1/capabilities", ["capabilities", "list"], 16),
    ("prompts.get", "Get one prompt, filled in",
     "Returns one of the layer's prompts with each {{NAME}} placeholder replaced by the "
     "argument of that name, as the messages to send.",
     "PromptInput", "PromptResult", "majordomus_prompt", None, "/api/v1/prompt", ["prompt"], 0),
    ("capabilities.describe", "Describe one capability",
     "Returns the descriptor of one capability by id: its schemas, provenance and exposures.",
     "DescribeInput", "Capability", "majordomus_capability", None, "/api/v1/capability",
     ["capabilities", "describe"], 0),
    ("context.resolve", "What governs a path",
     "Call this before reading or changing a file, to learn what governs it: returns the "
     "layer's context documents that apply to a repository-relative path (a file resolves "
     "to its directory), least specific first, each with why it applies and its URI (read "
     "each with majordomus_get: no content is included), and the candidates left out with "
     "the reason. Refused while the context tree does not validate.",
     "ContextInput", "ContextResolution", "majordomus_context", None, "/api/v1/context",
     ["context", "resolve"], 64),
    # §33: the rest of the later tool's `context`; one MCP tool, majordomus_affected.
    ("context.list", "Every context document",
     "Returns every context document, in resolution's order, and the tree's problems.",
     "Empty", "ContextList", None, None, "/api/v1/context/list", ["context", "list"], 1),
    ("context.validate", "Does the context tree hold its contract",
     "Returns whether the context tree holds its contract, with every problem named.",
     "Empty", "ContextValidation", None, None, "/api/v1/context/validate",
     ["context", "validate"], 1),
    ("context.affected", "What to update before you commit",
     "Call this before you commit: the context documents your changes touch, and each "
     "generated file (AGENTS.md, CLAUDE.md) against its stamp: a stale one is regenerated "
     "from its source, never edited.",
     "AffectedInput", "ContextAffected", "majordomus_affected", None,
     "/api/v1/context/affected", ["context", "affected"], 0),
    ("context.sync", "Are the tree and its projections in sync",
     "Returns the tree validated, each projection against its stamp, then what the change "
     "set affects: in_sync, invalid or drift.",
     "AffectedInput", "ContextSync", None, None, "/api/v1/context/sync",
     ["context", "check-sync"], 0),
    ("peers.list", "Who else works here",
     "Returns the sessions sharing this repository's server and its other checkouts' "
     "(worktrees), each with its client's name, transport, checkout and branch, since when, "
     "what it announced it will change, and whose announced paths overlap its own.",
     "PeersInput", "PeerList", "majordomus_peers", ("majordomus://peers", "peers"),
     "/api/v1/peers", ["peers"], 0),
    ("peers.announce", "Announce what you will change",
     "Call this before you change files, to tell the other sessions on this repository what "
     "you are about to do (intent, in plain words) and the repository-relative paths you "
     "expect to change (scope); claim: true holds them exclusively. Returns your entry with "
     "the peers whose paths overlap yours; each of them is told. Changes this server's "
     "memory only, never a file.",
     "AnnounceInput", "Peer", "majordomus_announce", None, "/api/v1/peers/announce", None, 0,
     "command"),
    ("peers.tell", "Tell this checkout of another's announce",
     "What another checkout's server sends when one of its sessions announces: the "
     "sessions here whose paths overlap are told.",
     "TellInput", "Told", None, None, "/api/v1/peers/tell", None, 0, "command"),
    ("context.brief", "Brief me before I work on a path",
     "Call this before you create or change a file, with its path and your intent in plain "
     "words: what governs it, as Markdown within a budget (the rules that apply first, the "
     "context documents, related passages, what was left out), even while the layer has "
     "problems.",
     "BriefInput", "Brief", "majordomus_brief", None, "/api/v1/brief", ["brief"], 64),
    ("hook.deliver", "Deliver the brief at the moment (a client's hook)",
     "What a client's hook (Claude Code, Codex, Gemini CLI) adds before an edit, when a "
     "session starts and on a prompt: the compact brief of the edited paths, an orientation, "
     "the rules a prompt is about; each said once per session; with guard, an edit of a path "
     "another session claims is refused. The CLI reads the client's JSON on stdin.",
     "HookInput", "HookAnswer", None, None, HOOK_ROUTE, ["hook"], 0, "command"),
    ("perf.counters", "Performance counters",
     "Returns this process's counters: scans, index and registry builds, executions, cache "
     "hits and misses, freshness checks and rebuilds, and the time spent in each phase.",
     "Empty", "CounterSnapshot", "majordomus_perf", None, "/api/v1/perf", None, 0),
)
BUILTIN_IDS = frozenset(entry[0] for entry in BUILTINS)

# What a capability's kind decides for every projection (§7.1, §27): the HTTP method that
# routes it and the MCP tool annotations. They are derived from the kind here, and checked
# by the registry (§7.4), never declared per projection. A command changes this process's
# memory only (never the repository): not read-only, not destructive, idempotent.
KIND_METHODS = {"query": "GET", "command": "POST"}
KIND_ANNOTATIONS = {
    "query": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
              "openWorldHint": False},
    "command": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True,
                "openWorldHint": False}}


def builtin_descriptors():
    """The descriptors of the builtin capabilities, fields in §7.1 order (an entry's 11th
    field, when present, is its kind: query otherwise)."""
    out = []
    for entry in BUILTINS:
        (cap_id, title, description, input_type, output_type, tool, resource, http, cli,
         cache) = entry[:10]
        kind = entry[10] if len(entry) > 10 else "query"
        exposure = {"mcp": {"tool": tool}} if tool else {}
        if resource:
            exposure.setdefault("mcp", {})["resource"] = {"uri": resource[0],
                                                          "name": resource[1]}
        if http:
            exposure["http"] = {"method": KIND_METHODS[kind], "path": http}
        if cli:
            exposure["cli"] = {"path": list(cli)}
        out.append({
            "id": cap_id, "module": cap_id.partition(".")[0], "kind": kind, "title": title,
            "description": description,
            "input": {"name": input_type, "schema": TYPES[input_type]},
            "output": {"name": output_type, "schema": TYPES[output_type]},
            "provenance": BUILTIN_PROVENANCE, "exposure": exposure,
            "stability": "behaviorally_verified",
            "cache": ({"policy": "process", "max_entries": cache} if cache
                      else {"policy": "disabled"})})
    return out


# Shared by every declarative descriptor (never mutated): one object each, not 10,000.
_EMPTY_INPUT = {"schema": _object_schema({}, closed=True)}
_OBJECT_OUTPUT = {"name": "ObjectView", "schema": TYPES["ObjectView"]}
_NO_CACHE = {"policy": "disabled"}


def declarative_descriptor(obj):
    """§7.3: the resource capability of one object (made once per object, on first use:
    an unchanged file keeps its objects, and so its descriptors, across generations)."""
    if obj.descriptor is not None:
        return obj.descriptor
    origin = obj.provenance
    provenance = {"source": "declarative", "path": origin["path"],
                  "directory": origin["directory"], "source_class": origin["source_class"]}
    if "section" in origin:
        provenance["section"] = origin["section"]
    provenance["media_type"] = obj.media_type
    mcp = {"resource": {"uri": obj.uri, "name": obj.identity}}
    if obj.prompt:
        mcp["prompt"] = {"name": obj.identity}
    descriptor = {
        "id": obj.id, "module": obj.kind, "kind": "resource", "title": obj.title or obj.identity,
        "description": obj.description or "", "input": _EMPTY_INPUT, "output": _OBJECT_OUTPUT,
        "provenance": provenance, "exposure": {"mcp": mcp}, "stability": "implemented"}
    tags = obj.tags()
    if tags:
        descriptor["tags"] = tags
    descriptor["cache"] = _NO_CACHE
    obj.descriptor = descriptor
    return descriptor


class RegistryError(Exception):
    """The registry refused to build; `errors` lists every broken invariant (§7.4)."""

    def __init__(self, errors):
        Exception.__init__(self, "; ".join(errors))
        self.errors = errors


def capability_id_ok(text):
    """`<namespace>.<local>`: namespace `[a-z][a-z0-9_-]*`, the local part URI-safe."""
    namespace, dot, local = text.partition(".")
    return bool(dot) and is_name(namespace, _LOWER, _NAMESPACE_REST) and uri_safe(local)


def tool_name_ok(text):
    """`[a-z0-9_]+`"""
    return bool(text) and not text.strip(_LOWER + _DIGITS + "_")
_EXECUTABLE = ("query", "command")


def _provenance_text(descriptor):
    provenance = descriptor.get("provenance") or {}
    if provenance.get("source") == "declarative":
        return provenance.get("path", "declarative")
    return "builtin %s" % provenance.get("module", "majordomus")


def descriptor_problems(descriptor):
    """The invariants of §7.4 that one descriptor breaks on its own."""
    problems = []
    cap_id = descriptor.get("id", "")
    if not capability_id_ok(cap_id):
        problems.append("the id is not <namespace>.<local>")
    kind, exposure = descriptor.get("kind"), descriptor.get("exposure") or {}
    executable = kind in _EXECUTABLE
    mcp = exposure.get("mcp") or {}
    if "tool" in mcp and not tool_name_ok(mcp["tool"]):
        problems.append("MCP tool name '%s' is not [a-z0-9_]+" % mcp["tool"])
    if "resource" in mcp:
        uri = mcp["resource"].get("uri", "")
        if not uri.startswith("majordomus://") or not uri_safe(uri):
            problems.append("the resource URI '%s' does not start with majordomus:// or "
                            "carries whitespace" % uri)
        required = descriptor["input"]["schema"].get("required")
        if executable and required:
            problems.append("a query read as the resource '%s' is called with no input, "
                            "and its input requires %s" % (uri, ", ".join(required)))
    if kind == "command" and "resource" in mcp:
        problems.append("a command is exposed as the MCP resource '%s': a read would change "
                        "the process" % mcp["resource"].get("uri", ""))
    if "http" in exposure and kind in KIND_METHODS and (
            exposure["http"].get("method") != KIND_METHODS[kind]):
        problems.append("the HTTP method %s does not fit a %s (routed by %s)" % (
            exposure["http"].get("method"), kind, KIND_METHODS[kind]))
    if "prompt" in mcp and kind != "resource":
        problems.append("a prompt exposure sits on a %s capability, not a resource" % kind)
    if "http" in exposure:
        path = exposure["http"].get("path", "")
        if (not path.startswith("/api/v1/") or path.endswith("/") or "//" in path
                or "?" in path or "#" in path):
            problems.append("the HTTP path '%s' is not a clean path under /api/v1/" % path)
    if descriptor.get("stability") in ("planned", "unsupported") and (
            "tool" in mcp or "http" in exposure or "cli" in exposure
            or (executable and "resource" in mcp)):
        problems.append("a %s capability has an executable exposure" % descriptor["stability"])
    cache = descriptor.get("cache") or {}
    if cache.get("policy") == "process" and not cache.get("max_entries"):
        problems.append("a process cache with max_entries 0")
    if kind == "resource" and not (len(exposure) == 1 and "resource" in mcp
                                   and not set(mcp) - {"resource", "prompt"}):
        problems.append("a resource capability is exposed other than as an MCP resource or "
                        "an MCP prompt")
    return problems


def _descriptor_of(entry):
    """A registry table's entry as a descriptor: an object stands for its own (§23)."""
    return entry if type(entry) is dict else declarative_descriptor(entry)


class _Descriptors:
    """A registry table (id, URI or prompt name -> descriptor) that holds an object in
    place of its descriptor and makes that on first lookup: initialize, resources/list and
    a read look at no descriptor of 10,000 objects, so none is made for them (§23)."""

    __slots__ = ("table",)

    def __init__(self):
        self.table = {}

    def __getitem__(self, key):
        return _descriptor_of(self.table[key])

    def __setitem__(self, key, descriptor):
        self.table[key] = descriptor

    def __contains__(self, key):
        return key in self.table

    def __len__(self):
        return len(self.table)

    def __iter__(self):
        return iter(self.table)

    def get(self, key, default=None):
        entry = self.table.get(key, _MISSING)
        return default if entry is _MISSING else _descriptor_of(entry)

    def items(self):
        return [(key, _descriptor_of(entry)) for key, entry in self.table.items()]


class Registry:
    """Every capability by id and by each of its exposures; built once per generation.
    `objects` are the index's objects: their descriptors (and the problems each has on its
    own) are made once per object, when first needed, and kept with it."""

    def __init__(self, descriptors, objects=()):
        errors = []
        self.by_id, self.by_uri, self.by_prompt = _Descriptors(), _Descriptors(), _Descriptors()
        self.by_tool, self.by_http, self.by_cli = {}, {}, {}
        for descriptor in descriptors:
            errors += self._add(descriptor, descriptor_problems(descriptor))
        by_id, by_uri, by_prompt = self.by_id.table, self.by_uri.table, self.by_prompt.table
        for obj in objects:
            if obj.problems is None:
                # An object's descriptor is made whole by declarative_descriptor: only its
                # id and its URI come from the layer, so they are what is checked (and the
                # descriptor made only when one of them is wrong).
                obj.problems = () if (capability_id_ok(obj.id) and uri_safe(
                    obj.uri)) else descriptor_problems(declarative_descriptor(obj))
            # The common case inline (10,000 objects on a large layer): an object's
            # descriptor claims its id, its URI and maybe a prompt name, and nothing else.
            if obj.problems or obj.id in by_id or obj.uri in by_uri or (
                    obj.prompt and obj.identity in by_prompt):
                errors += self._add(declarative_descriptor(obj), obj.problems)
                continue
            by_id[obj.id] = by_uri[obj.uri] = obj
            if obj.prompt:
                by_prompt[obj.identity] = obj
        if errors:
            raise RegistryError(errors)
        self._ids = None
        self.summary = self._summary(descriptors, len(self.by_id) - len(descriptors))

    @property
    def ids(self):
        """Every capability id, sorted (on first use: initialize needs none of them)."""
        if self._ids is None:
            self._ids = sorted(self.by_id)
        return self._ids

    def _add(self, descriptor, problems):
        """Index one descriptor under its id and exposures; every invariant it breaks."""
        cap_id = descriptor.get("id", "")
        problems = list(problems)

        def claim(table, key, what):
            other = table.get(key)
            if other is not None and other is not descriptor:
                problems.append("%s is claimed by '%s' too" % (what, other.get("id")))
            table[key] = descriptor

        if cap_id in self.by_id:
            problems.append("the id is declared twice")
        self.by_id[cap_id] = descriptor
        exposure = descriptor.get("exposure") or {}
        mcp = exposure.get("mcp") or {}
        if "tool" in mcp:
            claim(self.by_tool, mcp["tool"], "the MCP tool '%s'" % mcp["tool"])
        if "resource" in mcp:
            uri = mcp["resource"].get("uri", "")
            claim(self.by_uri, uri, "the MCP resource '%s'" % uri)
        if "prompt" in mcp:
            name = mcp["prompt"].get("name", "")
            claim(self.by_prompt, name, "the MCP prompt '%s'" % name)
        if "http" in exposure:
            route = (exposure["http"].get("method", ""), exposure["http"].get("path", ""))
            claim(self.by_http, route, "the HTTP route %s %s" % route)
        if "cli" in exposure:
            words = tuple(exposure["cli"].get("path") or ())
            claim(self.by_cli, words, "the CLI command '%s'" % " ".join(words))
        if not problems:
            return problems
        where = "capability '%s' (%s)" % (cap_id, _provenance_text(descriptor))
        return ["%s: %s" % (where, problem) for problem in problems]

    def _summary(self, descriptors, objects):
        """§7.6 `summary`; every object's descriptor is an implemented resource."""
        by_kind, by_stability = {}, {}
        if objects:
            by_kind["resource"] = by_stability["implemented"] = objects
        builtin = 0
        for descriptor in descriptors:
            by_kind[descriptor["kind"]] = by_kind.get(descriptor["kind"], 0) + 1
            stability = descriptor["stability"]
            by_stability[stability] = by_stability.get(stability, 0) + 1
            builtin += descriptor["provenance"]["source"] == "builtin"
        return {"total": len(self.by_id), "builtin": builtin,
                "declarative": len(self.by_id) - builtin,
                "by_kind": dict(sorted(by_kind.items())),
                "by_stability": dict(sorted(by_stability.items())),
                "mcp_tools": len(self.by_tool), "mcp_resources": len(self.by_uri),
                "http_routes": len(self.by_http), "cli_commands": len(self.by_cli)}


def check_input(schema, value):
    """Validate an input against its schema (the subset our types use); InvalidInput.
    An integral float given for an integer is rewritten in place as an int."""
    if not isinstance(value, dict):
        raise InvalidInput("the input must be an object")
    properties = schema.get("properties", {})
    if schema.get("additionalProperties") is False:
        for name in value:
            if name not in properties:
                raise InvalidInput("unknown property '%s'" % name)
    for name in schema.get("required", ()):
        if name not in value:
            raise InvalidInput("missing required property '%s'" % name)
    for name, item in value.items():
        rule = properties.get(name)
        if rule is None:
            continue
        expected = rule.get("type")
        if expected == "integer" and isinstance(item, float) and item.is_integer():
            item = value[name] = int(item)   # JSON Schema: 5.0 is an integer
        if expected == "string" and not isinstance(item, str):
            raise InvalidInput("property '%s' must be a string" % name)
        if expected == "integer" and (type(item) is not int):
            raise InvalidInput("property '%s' must be an integer" % name)
        if expected == "boolean" and not isinstance(item, bool):
            raise InvalidInput("property '%s' must be a boolean" % name)
        if expected == "object" and not isinstance(item, dict):
            raise InvalidInput("property '%s' must be an object" % name)
        if expected == "array":
            if not isinstance(item, list):
                raise InvalidInput("property '%s' must be an array" % name)
            if rule.get("items", {}).get("type") == "string" and not all(
                    isinstance(element, str) for element in item):
                raise InvalidInput("property '%s' must be an array of strings" % name)
            if "maxItems" in rule and len(item) > rule["maxItems"]:
                raise InvalidInput("property '%s' holds at most %d items" % (name,
                                                                            rule["maxItems"]))
        if "maxLength" in rule and len(item) > rule["maxLength"]:
            raise InvalidInput("property '%s' is at most %d characters" % (name,
                                                                          rule["maxLength"]))
        if "enum" in rule and item not in rule["enum"]:
            raise InvalidInput("property '%s' must be one of %s"
                               % (name, ", ".join(map(str, rule["enum"]))))
        if "minimum" in rule and item < rule["minimum"]:
            raise InvalidInput("property '%s' must be at least %d" % (name, rule["minimum"]))
        if "maximum" in rule and item > rule["maximum"]:
            raise InvalidInput("property '%s' must be at most %d" % (name, rule["maximum"]))


_MISSING = object()


# ---------------------------------------------------------------------------------------
# 15. Execution and resolution (§7.5, §7.6, §8): the builtin handlers, one resolution
#    from a URI to an answer, and a generation: one `execute(id, input)` for every caller.
# ---------------------------------------------------------------------------------------

# Keyset cursors (§16): opaque to clients, naming the last URI (or id) an answer held.
_CURSOR_TAG = "mj1"


def make_cursor(scope, key):
    import base64
    raw = ("%s:%s" % (scope, key)).encode("utf-8")
    return _CURSOR_TAG + "." + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def read_cursor(scope, cursor):
    """The key a cursor of `scope` names; InvalidInput for anything this program did not
    write (for this kind of list)."""
    import base64
    import binascii
    tag, dot, data = cursor.partition(".")
    try:
        if tag != _CURSOR_TAG or not dot or not data or data.strip(_KEY_CHARS):
            raise ValueError
        text = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4)).decode("utf-8")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        text = ""
    found, colon, key = text.partition(":")
    if found != scope or not colon or not key:
        raise InvalidInput("parameter 'cursor' is not a cursor this server issued")
    return key


def page(items, key_of, scope, arguments, default):
    """(the page of `items` (sorted by key) after the cursor, the next cursor or None)."""
    import bisect
    start = 0
    if arguments.get("cursor") is not None:
        after = read_cursor(scope, arguments["cursor"])
        start = bisect.bisect_right([key_of(item) for item in items], after)
    limit = arguments.get("limit", default)
    chosen = items[start:start + limit]
    more = start + limit < len(items)
    return chosen, (make_cursor(scope, key_of(chosen[-1])) if more and chosen else None)


# The handlers of §7.6: (generation, validated input) -> the output value.

def summary(obj):
    out = {"uri": obj.uri, "id": obj.id, "kind": obj.kind, "identity": obj.identity}
    if obj.title is not None:
        out["title"] = obj.title
    if obj.description is not None:
        out["description"] = obj.description
    out["path"] = obj.path
    return out


def _paged(out, next_cursor):
    if next_cursor is not None:
        out["next_cursor"] = next_cursor
    return out


def handle_list(gen, arguments):
    kind, tag = arguments.get("kind"), arguments.get("tag")
    gen.kinds_present(kind)
    matches = [o for o in gen.index.objects
               if (kind is None or o.kind == kind) and (tag is None or tag in o.tags())]
    chosen, next_cursor = page(matches, _uri_of, "uri", arguments, 50)
    objects = [summary(o) for o in chosen]
    return _paged({"count": len(objects), "total": len(matches), "objects": objects},
                  next_cursor)


def _uri_of(obj):
    return obj.uri


def handle_search(gen, arguments):
    query, kind = arguments["query"], arguments.get("kind")
    if not query.strip():
        raise Refused("argument 'query' is required and must not be blank")
    gen.kinds_present(kind)
    if arguments.get("mode", "ranked") == "ranked":
        return _ranked_search(gen, query, kind, arguments)
    return _substring_search(gen, query, kind, arguments)


def _substring_search(gen, query, kind, arguments):
    """§7.6 and §16, unchanged: the objects holding the query verbatim, in URI order."""
    limit = arguments.get("limit", 20)
    needle = query.lower()
    table = gen.search_table()
    if kind is not None:
        table = [entry for entry in table if entry[0].kind == kind]
    # "\0" separates the fields, so a needle holding one could match across two of them.
    matches = [entry for entry in table if needle in entry[1]] if "\0" not in needle else []
    chosen, next_cursor = page(matches, _entry_uri, "uri", arguments, 20)
    hits = []
    for obj, _ in chosen:
        hit = summary(obj)
        lowered = obj.content.lower()
        at = lowered.find(needle)
        if at >= 0:
            # lower() never adds or removes a newline, so line numbers carry over.
            line = obj.content.split("\n")[lowered.count("\n", 0, at)]
            hit["snippet"] = line.strip()[:SNIPPET_LIMIT]
        hits.append(hit)
    return _paged({"query": query, "count": len(hits), "total": len(matches), "limit": limit,
                   "hits": hits}, next_cursor)


def _ranked_search(gen, query, kind, arguments):
    """§21: the hits by score, then URI; a keyset cursor over (score, URI)."""
    import bisect
    limit = arguments.get("limit", 20)
    hits = ranked_hits(gen, query, kind)
    start = 0
    if arguments.get("cursor") is not None:
        score, _, uri = read_cursor("rank", arguments["cursor"]).partition("\t")
        try:
            # A score this server wrote: a finite float's repr, a few dozen characters.
            after = (-float(score) if len(score) <= 32 else math.nan, uri)
        except ValueError:
            after = (math.nan, uri)
        if after[0] != after[0] or after[0] in _INFINITIES:
            raise InvalidInput("parameter 'cursor' is not a cursor this server issued")
        start = bisect.bisect_right([(-s, o.uri) for s, o in hits], after)
    chosen = hits[start:start + limit]
    terms = set(query_terms(query)[0])
    out = []
    for score, obj in chosen:
        hit = summary(obj)
        hit["score"] = score
        snippet = ranked_snippet(obj, terms)
        if snippet is not None:
            hit["snippet"] = snippet
        out.append(hit)
    more = start + limit < len(hits)
    next_cursor = make_cursor("rank", "%r\t%s" % (chosen[-1][0], chosen[-1][1].uri)) if (
        more and chosen) else None
    return _paged({"query": query, "mode": "ranked", "count": len(out), "total": len(hits),
                   "limit": limit, "hits": out}, next_cursor)


def _entry_uri(entry):
    return entry[0].uri


def handle_get(gen, arguments, caller=None):
    view = resolve(gen, arguments["uri"], caller).view()
    if "offset" in arguments or "limit" in arguments:
        view = window(view, arguments.get("offset", 1), arguments.get("limit"))
    return view


def split_lines(text):
    """The lines of a text, each with its `\n` (the last one may have none)."""
    lines = text.split("\n")
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


def window(view, offset, limit):
    """§16: the ResourceView with `content` cut to the lines [offset, offset + limit)."""
    if view["source"] != "declarative":
        raise InvalidInput("property 'offset': %s is a query's answer, which takes no window "
                           "of lines" % view["uri"])
    lines = split_lines(view["content"])
    if offset > len(lines) and not (offset == 1 and not lines):
        raise InvalidInput("property 'offset': %d is past the last line of %s (%d lines)"
                           % (offset, view["uri"], len(lines)))
    if limit is None:
        limit = max(len(lines) - offset + 1, 1)
    chosen = lines[offset - 1:offset - 1 + limit]
    out = dict(view, content="".join(chosen))
    out["window"] = {"offset": offset, "limit": limit, "lines": len(chosen),
                     "total_lines": len(lines)}
    if offset - 1 + len(chosen) < len(lines):
        out["window"]["next_offset"] = offset + len(chosen)
    return out


def handle_repository(gen, arguments):
    decl, index = gen.decl, gen.index
    manifest = decl.manifest      # None while the layer cannot be read (§25)
    return {
        "repository": {
            "root": decl.root, "layer_schema": manifest.schema if manifest else None,
            "sections": dict(sorted(manifest.sections.items())) if manifest else {},
            "git": git_report(gen), "discovery": decl.discovery,
            "source_classes": [[c.id, c.kind] for c in decl.classes],
            "kinds_file": decl.kinds.kinds_file if decl.kinds else None},
        "state": index.state, "objects": len(index.objects), "kinds": dict(index.kinds),
        "diagnostics": [d.as_dict() for d in index.diagnostics],
        "capabilities": dict(gen.registry.summary),
        "context": {"documents": len(index.context.docs), "problems": len(index.context.problems)},
        "live": {"generation": gen.number, "stale": gen.live.stale if gen.live else None}}


def git_report(gen):
    """§9.1 `git`: HEAD and the branch of the generation; the work tree (which nothing
    watches) as `git status` sees it now."""
    tree, reason = working_tree_state(gen.root)
    if gen.dirs is None or tree is None:
        return {"state": "unavailable", "reason": reason or "not inside a git work tree"}
    return {"state": "available", "toplevel": os.path.realpath(gen.dirs.toplevel),
            "head": gen.head, "branch": gen.branch, "working_tree": tree}


def handle_capabilities(gen, arguments):
    kind, exposure = arguments.get("kind"), arguments.get("exposure")
    registry = gen.registry
    matches = [i for i in registry.ids
               if (kind is None or registry.by_id[i]["kind"] == kind)
               and (exposure is None or exposure in registry.by_id[i]["exposure"])]
    chosen, next_cursor = page(matches, str, "id", arguments, 20)
    return _paged({"count": len(chosen), "total": len(matches), "summary": registry.summary,
                   "capabilities": [registry.by_id[i] for i in chosen]}, next_cursor)


def handle_describe(gen, arguments):
    descriptor = gen.registry.by_id.get(arguments["id"])
    if descriptor is None:
        raise NotFound("unknown capability: %s" % arguments["id"])
    return descriptor


def handle_perf(gen, arguments):
    return gen.counters.snapshot()


_PLACEHOLDER = r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}"     # compiled by `re` on first use


def placeholders(body):
    """§17: the distinct {{NAME}} placeholders of a body, in order of first appearance."""
    if "{{" not in body:
        return []
    import re
    return list(dict.fromkeys(re.findall(_PLACEHOLDER, body)))


def handle_prompt(gen, arguments):
    name, given = arguments["name"], arguments.get("arguments", {})
    obj = gen.prompts().get(name)
    if obj is None:
        raise NotFound("unknown prompt: %s" % name)
    body = obj.body if obj.body is not None else obj.content
    wanted = placeholders(body)
    for key, value in given.items():
        if not isinstance(value, str):
            raise InvalidInput("argument '%s' must be a string" % key)
        if key not in wanted:
            raise InvalidInput("prompt '%s' has no argument '%s'" % (name, key))
    for key in wanted:
        if key not in given:
            raise InvalidInput("prompt '%s' needs argument '%s'" % (name, key))
    # One pass: a value is inserted as given, never scanned for placeholders itself.
    import re
    text = re.sub(_PLACEHOLDER, lambda match: given[match.group(1)], body)
    out = {"name": name}
    if obj.description is not None:
        out["description"] = obj.description
    out.update(messages=[{"role": "user", "content": {"type": "text", "text": text}}],
               uri=obj.uri, provenance=obj.provenance)
    return out


def handle_peers(gen, arguments, caller=None):
    """§27, §31: the sessions of this server and, unless `local`, of the other checkouts'
    (none in a one-shot command, which has none)."""
    board = gen.live.board if gen.live is not None else None
    if board is None:
        return {"count": 0, "peers": [], "boards": 1, "complete": True}
    return board.listing(caller.peer if caller is not None else None, gen.root, gen.branch,
                         arguments.get("local") is True)


def handle_announce(gen, arguments, caller=None):
    """§27, §31: the caller's intent and scope (with `claim`, an exclusive claim), kept in
    this process's memory; the others whose scope it overlaps are told (a replayed
    announce, after a takeover, tells nobody). A 2026-07-28 request over HTTP has no session:
    a handle stands for one, answered with the Peer and passed by later calls."""
    board = gen.live.board if gen.live is not None else None
    if caller is None or board is None:
        raise Refused("announce needs an MCP session")
    intent = " ".join(arguments["intent"].split())
    if not intent:
        raise InvalidInput("property 'intent' must not be blank")
    scope = list(dict.fromkeys(scope_path(gen.root, path) for path in arguments["scope"]))
    if caller.peer is None:
        caller = board.handle_session(gen.live, arguments.get("handle"), caller.client)
    return board.announce(caller, intent, scope, arguments.get("claim") is True, gen.root,
                          gen.branch)


def handle_tell(gen, arguments, caller=None):
    """§31: a peer of another checkout announced (its server says so): the sessions here
    whose scope overlaps it are told, naming its branch."""
    board = gen.live.board if gen.live is not None else None
    if board is None:
        return {"told": []}
    peer = arguments["peer"]
    scope = list(dict.fromkeys(target_path(gen.root, path) for path in peer["scope"]))
    return {"told": board.told_afar(dict(peer, scope=scope),
                                    checkout_tag(peer.get("worktree") or ""))}


def handle_hook(gen, arguments):
    """§30: what a client's hook adds, with what the process lends (HookHost): a long-lived
    one's (its board, the sessions' memory), or a one-shot hook's (a file's memory)."""
    host = gen.live.hooks if gen.live is not None else gen.hooks
    return hook_deliver(gen, arguments, host)


def resolve(gen, uri, caller=None):
    """§8: the only path from a URI to an answer (objects.get and resources/read); a query
    runs for `caller` (§27: majordomus://peers names who asks)."""
    entry = gen.registry.by_uri.get(uri) if isinstance(uri, str) else None
    if entry is None:
        raise NotFound("unknown resource: %s" % uri)
    if entry["kind"] == "resource":
        obj = gen.index.by_uri.get(uri)
        if obj is None:
            raise Internal("%s: the registry names %s and the index holds no such object"
                           % (uri, entry["id"]))
        return Resolved(entry, uri, obj=obj)
    try:
        answer = gen.execute(entry["id"], {}, caller)
    except Refused:
        raise
    except CapabilityError as exc:
        raise Internal("%s: %s did not answer: %s" % (uri, entry["id"], exc))
    return Resolved(entry, uri, answer=answer)


def answer_text(answer):
    """The JSON text of a query's answer: 2-space indent, output order, no newline."""
    return json_pretty(answer)


class Resolved:
    """One resolved URI: an object of the index, or the answer of a query."""

    def __init__(self, descriptor, uri, obj=None, answer=None):
        self.descriptor, self.uri, self.obj, self.answer = descriptor, uri, obj, answer

    @property
    def media_type(self):
        return self.obj.media_type if self.obj is not None else "application/json"

    @property
    def text(self):
        return self.obj.content if self.obj is not None else answer_text(self.answer)

    def view(self):
        """The ResourceView: an ObjectView or an AnswerView, tagged by `source`."""
        obj = self.obj
        if obj is not None:
            out = {"source": "declarative", "uri": obj.uri, "id": obj.id, "kind": obj.kind,
                   "identity": obj.identity}
            if obj.title is not None:
                out["title"] = obj.title
            if obj.description is not None:
                out["description"] = obj.description
            out.update(metadata=obj.metadata, provenance=obj.provenance,
                       media_type=obj.media_type, content=obj.content)
            return out
        descriptor = self.descriptor
        out = {"source": "builtin", "uri": self.uri, "id": descriptor["id"],
               "kind": descriptor["kind"],
               "identity": descriptor["exposure"]["mcp"]["resource"]["name"],
               "title": descriptor["title"]}
        if descriptor.get("description"):
            out["description"] = descriptor["description"]
        out.update(answer=self.answer, provenance=BUILTIN_PROVENANCE,
                   media_type="application/json", content=self.text)
        return out


def handle_context_list(gen, arguments):
    """§33: every context document, in resolution's order, and the tree's problems."""
    return context_listing(gen.index.context, gen.decl)


def handle_context_validate(gen, arguments):
    """§33: the tree against its contract, the problems in the shell tool's words."""
    return context_validation(gen.index.context, gen.decl)


def handle_context_affected(gen, arguments):
    """§33: what the change set touches, and the projections' state."""
    tree, decl = gen.index.context, gen.decl
    mode, base = context_change_mode(arguments)
    findings, count, untracked = context_affected(tree, decl, mode, base)
    problems = context_problems(tree, decl)
    return {"mode": mode, "base": base, "valid": not problems,
            "documents": len(tree._checked), "affected": count,
            "findings": context_failures(problems) + findings, "untracked": untracked,
            "projections": projection_check(gen.root, decl.manifest,
                                            policy_metadata(decl, gen.index.results))}


def handle_context_sync(gen, arguments):
    """§33 check-sync: validate, the projections against their stamps, then affected."""
    mode, base = context_change_mode(arguments)
    return context_sync(gen.index.context, gen.decl,
                        policy_metadata(gen.decl, gen.index.results), mode, base)


HANDLERS = {"repository.info": handle_repository, "objects.list": handle_list,
            "objects.get": handle_get, "objects.search": handle_search,
            "capabilities.list": handle_capabilities, "capabilities.describe": handle_describe,
            "prompts.get": handle_prompt, "perf.counters": handle_perf,
            "context.resolve": resolve_context, "context.brief": brief,
            "peers.list": handle_peers, "peers.announce": handle_announce,
            "peers.tell": handle_tell, "hook.deliver": handle_hook,
            "context.list": handle_context_list, "context.validate": handle_context_validate,
            "context.affected": handle_context_affected, "context.sync": handle_context_sync}
# The handlers that are told who asks (§27): the peers, and objects.get, which reads
# majordomus://peers for its caller as resources/read does.
CALLER_HANDLERS = frozenset(("objects.get", "peers.list", "peers.announce", "peers.tell"))


class Generation:
    """One immutable snapshot of the layer (§15.1): its declarations and index, HEAD and
    the branch, the registry, and every projection prepared from them (each at most once,
    on first use). Everything that answers a request asks one generation."""

    def __init__(self, number, decl, index, head, counters, dirs=None, live=None,
                 previous=None):
        self.number, self.decl, self.index, self.counters = number, decl, index, counters
        self.root = decl.root
        self.head, self.branch = head
        self.dirs = dirs          # GitDirs of the work tree, or None outside one
        self.live = live          # the Live that owns this generation (None: one-shot)
        self.broken = None        # the fatal message, when the layer cannot be read (§25)
        self.absent = False       # no layer was found at all (§32): `broken` is NO_LAYER
        self.hooks = None         # what a one-shot hook lends hook.deliver (§30: HookHost)
        self.trees = None         # a one-shot hook's TreeCache: its TermIndex keeps terms there
        began = time.perf_counter_ns()
        self.registry = Registry(builtin_descriptors(), index.objects)
        counters.count("registry_builds")
        counters.phase("registry_build", began)
        import _thread
        self._memo = {}
        self._memo_lock = _thread.RLock()   # a projection may be built from another
        self._cache = {}
        # The term index of the previous generation, if it made one: the next one takes
        # the texts of unchanged objects from it (§21).
        self.previous_terms = None if previous is None else (
            previous._memo.get("terms") or previous.previous_terms)

    def memo(self, name, build):
        """The projection `name` of this generation, built by `build()` the first time
        (under a lock: concurrent first requests under `serve` build it once)."""
        value = self._memo.get(name, _MISSING)
        if value is _MISSING:
            with self._memo_lock:
                value = self._memo.get(name, _MISSING)
                if value is _MISSING:
                    value = self._memo[name] = build()
        return value

    def recent(self, name, most, key, build):
        """The value of `key` in this generation's projection `name` (a dict), built by
        `build()` on first use; the last `most` keys built are kept, the oldest goes
        first."""
        kept = self.memo(name, dict)
        value = kept.get(key, _MISSING)
        if value is _MISSING:
            value = build()
            with self._memo_lock:
                if len(kept) >= most:
                    del kept[next(iter(kept))]
                kept[key] = value
        return value

    def search_table(self):
        """[(object, its identity, title, description and content, lower-cased, one text)]
        in URI order: one substring test an object."""
        return self.memo("search", lambda: [
            (obj, "\0".join((obj.identity, obj.title or "", obj.description or "",
                             obj.content)).lower())
            for obj in self.index.objects])

    def execute(self, cap_id, arguments, caller=None):
        """§7.5: the one way anything runs a capability. `caller` is the Session asking
        (§27: a peer, or a 2026-07-28 request's own, which is on no board), None where no
        session asks (the CLI, a REST request without one)."""
        self.counters.count("executions")
        descriptor = self.registry.by_id.get(cap_id)
        if descriptor is None:
            raise NotFound("unknown capability: %s" % cap_id)
        if self.absent:
            raise Refused(NO_LAYER)
        if self.broken is not None and cap_id != "repository.info":
            raise Refused("the layer cannot be read: %s" % self.broken)
        if descriptor["kind"] not in _EXECUTABLE:
            raise Refused("capability '%s' is a resource: it is read, never executed" % cap_id)
        check_input(descriptor["input"]["schema"], arguments)
        cache = descriptor["cache"]
        if cache["policy"] != "process":
            return self._invoke(cap_id, arguments, caller)
        began = time.perf_counter_ns()
        # The cache belongs to the generation, so its key needs no index fingerprint.
        key = (cap_id, json_compact(arguments, sort_keys=True))
        entries = self._cache.setdefault(cap_id, {})
        hit = entries.get(key, _MISSING)
        self.counters.phase("cache_lookup", began)
        if hit is not _MISSING:
            self.counters.count("cache_hits")
            return hit
        self.counters.count("cache_misses")
        value = self._invoke(cap_id, arguments)   # an error propagates: never cached
        with self.counters.lock:
            entries[key] = value
            while len(entries) > cache["max_entries"]:
                del entries[next(iter(entries))]
                self.counters.values["cache_evictions"] += 1
        return value

    def _invoke(self, cap_id, arguments, caller=None):
        self.counters.count("handler_invocations")
        began = time.perf_counter_ns()
        try:
            if cap_id in CALLER_HANDLERS:
                return HANDLERS[cap_id](self, arguments, caller)
            return HANDLERS[cap_id](self, arguments)
        except CapabilityError:
            raise
        except Exception as exc:  # a handler defect is the request's Internal error
            log(DEBUG, "handler failed", id=cap_id, traceback=_traceback_text())
            raise Internal("%s failed: %s" % (cap_id, exc))
        finally:
            self.counters.phase("handler_execution", began)

    def kinds_present(self, kind):
        if kind is not None and kind not in self.index.kinds:
            raise InvalidInput("kind '%s' is not among the kinds this repository has: %s"
                               % (kind, ", ".join(self.index.kinds)))

    def prompts(self):
        """{name: object} of every object that is also an MCP prompt (§17)."""
        return self.memo("prompts", lambda: {
            name: self.index.by_uri[d["exposure"]["mcp"]["resource"]["uri"]]
            for name, d in sorted(self.registry.by_prompt.items())})


# ---------------------------------------------------------------------------------------
# 16. The live layer (§15): the current generation of a long-lived process, kept fresh by
#    a stamp and a sweep, rebuilt from what changed; its followers told each Change.
# ---------------------------------------------------------------------------------------

SWEEP_EVERY = 1.0        # seconds: a request sweeps at most this often
IDLE_SHARE = 0.005       # the idle timer's sweeps use at most this share of one core
IDLE_TICK = 1.0          # seconds between the idle timer's stamp comparisons
# Git's control files (§15.2). git replaces each by a rename into its folder, which moves
# the folder's own signature: so the git dir stands for ORIG_HEAD, MERGE_HEAD and the
# rebase folders appearing or going, and the common dir for packed-refs; HEAD and the
# index are stat'ed themselves (a rename gives them a new inode, even within one mtime
# tick), logs/HEAD is appended in place, refs/heads holds the branches.
_GIT_FILES = ("HEAD", "index", "logs/HEAD", "")
_GIT_COMMON_FILES = ("refs/heads", "")


def _stat(path):
    try:
        return file_signature(os.lstat(path))
    except OSError:
        return None


class _Building:
    """The cyclic garbage collector paused while an index and its registry are made: tens
    of thousands of new objects, no cycle among them, and a collection every few hundred
    allocations would cost a sixth of a large layer's start-up."""

    def __enter__(self):
        import gc
        self.gc, self.was = gc, gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self.was:
            self.gc.enable()


def first_generation(start, discovery, counters, live=None):
    """Root → declarations → discovery → index → registry (§9.0): generation 1, and what
    a live process needs to follow it (the declarations' signatures and the walk)."""
    return read_generation(find_root(start), discovery, counters, live)


def read_generation(root, discovery, counters, live=None, trees=None, listing=None):
    """first_generation from a root already found; a Fatal from the declarations carries
    `layer` (the layer cannot be read, §25). `trees`: a TreeCache the files' YAML is read
    through; `listing`: git_started's wait for LS_FILES in the root, started earlier."""
    # git lists the index while the declarations are read (still one ls-files, §4.3).
    if listing is None and discovery == "vcs":
        listing = git_started(root, *LS_FILES)
    try:
        if trees is not None:
            trees.load()                 # (while git lists the index)
        try:
            decl = read_declarations(root, discovery, trees.parse if trees is not None
                                     else parse_subset)
        except Fatal as exc:
            exc.layer = True
            raise
        dirs = find_git_dirs(root)
        if trees is not None:
            decl.parse = trees.parse
    except BaseException:
        if listing is not None:
            listing()                    # reaped, not left behind
        raise
    claims, diagnostics, walked, listed = discovered = discover_files(decl, counters, listing)
    if trees is not None and len(claims) > TREES_FILES:
        trees.stop()
    head = read_head(dirs) if dirs is not None else (None, None)
    began = time.perf_counter_ns()
    with _Building():
        index = build_index(decl, claims, diagnostics, counters, listed=listed,
                            reserved=BUILTIN_IDS)
        decl.parse = parse_subset        # a rebuild parses what changed, as it always did
        counters.phase("index_build", began)
        counters.count("index_builds")
        counters.values["generation"] = 1
        gen = Generation(1, decl, index, head, counters, dirs, live)
    return gen, discovered


class Undeclared:
    """The declarations of a layer that cannot be read (§25): the root and the discovery
    mode, no manifest, no classes, no kinds; `watched`: what is followed until it can
    (paths under the root, or absolute ones: where no layer was found, §32)."""

    manifest = kinds = None
    classes = ()

    def __init__(self, root, discovery, watched):
        self.root, self.discovery, self.watched = root, discovery, watched
        self.links, self.on_disk = frozenset(), {}

    def full(self, path):
        return native_path(self.root, path)


def broken_generation(root, discovery, failure, counters, live):
    """The state of a live process whose layer cannot be read (§25): generation 0, no
    object, the fatal message as its one diagnostic; every capability but the report
    refuses (Generation.execute)."""
    decl = Undeclared(root, discovery, getattr(failure, "watched", [MANIFEST]))
    index = Index([], [Diagnostic("error", "broken_layer", None, failure.message)], {},
                  ContextTree(decl, [], [], {}, [], []))
    index.state = "broken"
    dirs = find_git_dirs(root)
    head = read_head(dirs) if dirs is not None else (None, None)
    gen = Generation(0, decl, index, head, counters, dirs, live)
    gen.broken = failure.message
    return gen


def absent_generation(here, discovery, counters, live):
    """The state of `mcp` started where no layer is found (§32): generation 0 at the start
    folder `here`, no object, no diagnostic, no git; every capability refuses with
    NO_LAYER (Generation.execute). It watches the manifest of `here` and of each ancestor,
    a stat each per check, so the first one written is found as find_root would find it."""
    decl = Undeclared(here, discovery, manifest_places(here))
    index = Index([], [], {}, ContextTree(decl, [], [], {}, [], []))
    index.state = "broken"
    gen = Generation(0, decl, index, (None, None), counters, None, live)
    gen.broken, gen.absent = NO_LAYER, True
    return gen


NOTHING_DISCOVERED = ([], [], [], [])


def sweep_plan(full, seen):
    """What a sweep stats (§15.2): the kept files `seen` ({path: signature}) grouped by
    folder, [(folder, [(name, signature)])]; a folder of None holds whole paths (the
    folders of one file, and every file where os.stat takes no folder handle)."""
    if FOLDER_FLAGS is None:
        return [(None, [(full(path), sig) for path, sig in seen.items()])]
    folders, alone = {}, []
    for path, sig in seen.items():
        folder, _, name = full(path).rpartition(os.sep)
        folders.setdefault(folder, []).append((name, sig))
    plan = []
    for folder, files in folders.items():
        if len(files) > 1:
            plan.append((folder, files))
        else:
            alone.append((folder + os.sep + files[0][0], files[0][1]))
    return plan + [(None, alone)] if alone else plan


def _folder_moved(folder, files):
    """Has any of one folder's kept files changed since it was read: gone, appeared, or
    another (size, mtime_ns, inode)?"""
    if folder is None:
        return _moved(files, os.lstat)
    try:
        handle = os.open(folder, FOLDER_FLAGS)
    except OSError:   # (gone, or not to be opened: each file by its whole path then)
        return _moved(files, lambda name: os.lstat(folder + os.sep + name))
    try:
        return _moved(files, lambda name: os.stat(name, dir_fd=handle, follow_symlinks=False))
    finally:
        os.close(handle)


def _moved(files, lstat):
    """Does `lstat(name)` of any (name, signature) differ from the signature?"""
    for name, signature in files:
        try:
            info = lstat(name)
        except OSError:
            if signature is not None:
                return True
            continue
        if signature is None or (info.st_mtime_ns != signature[1] or info.st_size !=
                                 signature[0] or info.st_ino != signature[2]):
            return True
    return False


class Change:
    """What a new generation changed, as every follower of the live layer is told it (a
    follower says it in its own words: MCP notifications, a page's event)."""

    def __init__(self, old, new):
        self.old, self.new = old, new
        # Would a listing of resources (or of prompts) differ now? A layer that appears or
        # can be read at last (§25, §32) is told, whatever it lists: every answer changes.
        self.resources = (old.absent, old.broken is None) != (new.absent, new.broken is None) \
            or _listing_changed(old.index.objects, new.index.objects, _resource_key)
        self.prompts = _listing_changed(list(old.prompts().values()),
                                        list(new.prompts().values()), _prompt_key)

    def read_changed(self, uri):
        """Would reading `uri` answer differently (or not at all) now?"""
        return _read_changed(self.old, self.new, uri)


class Live:
    """The one owner of "the current generation" (§15.1). Every projection asks
    `current()`, which compares the stamp (and, at most once a second, sweeps the kept
    files) and rebuilds only what changed; a failed rebuild keeps the last good one."""

    def __init__(self, start, discovery, counters, watch=True, strict=False, board=None,
                 nowhere=False, trees=None):
        import _thread
        self.counters, self.watch, self.strict = counters, watch, strict
        self.stale = None
        self._rebuilding = _thread.allocate_lock()
        self._sweeping = _thread.allocate_lock()
        self._listeners_lock = _thread.allocate_lock()
        self.listeners = []       # callables told each new generation's Change
        self._timer = False
        # The idle timer sleeps on `_stopping` (released by close()) and holds `_ticking`
        # while it runs, so that close() can wait for it: no thread of ours may still run
        # while the interpreter shuts down.
        self._stopping = _thread.allocate_lock()
        self._stopping.acquire()
        self._ticking = _thread.allocate_lock()
        self.board = board        # the sessions of this process (§27), if it has any
        self.hooks = None         # what hook.deliver is lent here (§30: a HookHost)
        self.stale_since = None   # when the last good generation began to be served over
        self.trees = None         # the TreeCache of the first build (its owner keeps it)
        try:
            root = find_root(start)
        except Fatal as exc:
            here = getattr(exc, "nowhere", None)
            if strict or not nowhere or here is None:
                raise
            # No layer at all (`nowhere`: `mcp` only): start anyway, say so, and follow the
            # folder until one appears (§32).
            root = None
            self.generation = absent_generation(here, discovery, counters, self)
            discovered = NOTHING_DISCOVERED
        try:
            if root is not None:
                self.trees = trees(root) if trees is not None else None
                self.generation, discovered = read_generation(root, discovery, counters, self,
                                                              self.trees)
        except Fatal as exc:
            if strict or not getattr(exc, "layer", False):
                raise
            # The layer cannot be read: start anyway, say why, and follow it (§25).
            self.generation = broken_generation(root, discovery, exc, counters, self)
            discovered = NOTHING_DISCOVERED
        self._failing = False     # the last rebuild failed: the next reads everything again
        self._idle_sweep_every = SWEEP_EVERY   # learnt from the cost of each sweep
        self._watch = []
        self._remember(self.generation, discovered, None)

    # -- what is watched --------------------------------------------------------------

    def _remember(self, gen, discovered, before):
        """Keep what the next check compares with: the last discovery (claims, its
        diagnostics, the folders a walk entered), the stamp's paths and values, and the
        signature of every kept file."""
        root = gen.root
        dirs = gen.dirs if gen.broken is None else None   # broken: its declarations alone
        self._claims, self._discovered, walked, self._listed = discovered
        declared = [native_path(root, p) for p in gen.decl.watched]
        git = []
        if dirs is not None:
            git = [native_path(dirs.git_dir, name) for name in _GIT_FILES]
            git += [path for path in (native_path(dirs.common_dir, name)
                                      for name in _GIT_COMMON_FILES) if path not in git]
        # One flat list, stat'ed in one pass per check: declarations, git's control files,
        # the directories a filesystem walk entered (each keeps the signature it had when
        # the walk listed it).
        stat_now = declared + git
        stamp = tuple(map(_stat, stat_now)) + tuple(sig for _, sig in walked)
        if before is not None:
            # Read before the rebuild: a path that moved since then moved while it ran.
            earlier = dict(zip(self._watch, before))
            if any(earlier.get(path, sig) != sig for path, sig in zip(stat_now, stamp)):
                stamp = None   # look again at the next check
        self._parts = (len(declared), len(stat_now))
        self._watch = stat_now + [path for path, _ in walked]
        self._stamp = stamp
        self._seen = gen.index.signatures()
        full = gen.decl.full
        self._sweep_plan = sweep_plan(full, self._seen)
        self._racy = [(path, full(path), result) for path, result in gen.index.results.items()
                      if result.racy is not None]
        self._racy_changed = set()
        self._swept = time.monotonic()

    def _read_stamp(self):
        return tuple(map(_stat, self._watch))

    # -- the check before each request ------------------------------------------------

    def current(self):
        """The generation a request is answered from."""
        if self.watch:
            self.check()
        return self.generation

    def check(self, idle=False):
        began = time.perf_counter_ns()
        self.counters.count("freshness_checks")
        stamp = self._read_stamp()
        moved = stamp != self._stamp
        changed = False
        if not moved:
            every = self._idle_sweep_every if idle else SWEEP_EVERY
            if time.monotonic() - self._swept >= every:
                changed = self._sweep()
        self.counters.phase("freshness_check", began)
        # One rebuild at a time; a request meanwhile is answered from the current one.
        if (moved or changed) and self._rebuilding.acquire(False):
            try:
                self._rebuild(stamp)
            finally:
                self._rebuilding.release()

    def _sweep(self):
        """Does any kept file's (size, mtime_ns, inode) differ from what was read?"""
        if not self._sweeping.acquire(False):
            return False
        try:
            began = time.perf_counter_ns()
            self.counters.count("sweeps")
            changed = any(_folder_moved(folder, files) for folder, files in self._sweep_plan)
            if not changed and self._racy:
                changed = self._racy_sweep()
            elapsed = (time.perf_counter_ns() - began) / 1e9
            self._swept = time.monotonic()
            # On a large layer the idle timer sweeps less often than once a second.
            self._idle_sweep_every = max(SWEEP_EVERY, elapsed / IDLE_SHARE)
            self.counters.phase("sweep", began)
            return changed
        finally:
            self._sweeping.release()

    def _racy_sweep(self):
        """The racily clean files (§15.2, §24): each one's bytes compared with those it was
        read with, until a comparison finds it unchanged once its mtime is RACY_NS old (a
        later edit then moves the mtime, whatever the clock's resolution)."""
        changed, still = False, []
        for path, full, result in self._racy:
            now = time.time_ns()
            try:
                data, info = read_plain(full)
                mtime = info.st_mtime_ns
            except NotPlain:
                still.append((path, full, result))    # gone: the signatures tell that
                continue
            digest = hash(data)
            if digest != result.racy:
                result.racy = digest     # told once; the rebuild reads it again
                self._racy_changed.add(path)
                changed = True
            elif now - mtime >= RACY_NS:
                result.racy = None       # its signature tells from now on
                continue
            still.append((path, full, result))
        self._racy = still
        return changed

    def _rebuild(self, stamp):
        old = self.generation
        if old.broken is not None:
            self._first(old, stamp)
            return
        forced, self._racy_changed = self._racy_changed, set()   # edited within their tick
        if stamp != self._stamp:
            self.counters.count("stamp_moves")
        # After a failed rebuild nothing read since the last good generation is trusted:
        # the declarations are read and discovery runs again, whatever moved.
        moved = self._stamp is None or stamp != self._stamp or self._failing
        signatures = None
        try:
            decl = old.decl
            declared = self._parts[0]
            redeclared = (self._stamp is None or self._failing
                          or stamp[:declared] != self._stamp[:declared])
            if redeclared:
                decl = read_declarations(old.root, old.decl.discovery)
            if moved:
                discovered = discover_files(decl, self.counters)
                head = read_head(old.dirs) if old.dirs is not None else (None, None)
            else:
                start = self._parts[1]
                discovered = (self._claims, self._discovered,
                              list(zip(self._watch[start:], stamp[start:])), self._listed)
                head = (old.head, old.branch)
            claims, diagnostics, _, listed = discovered
            signatures = {path: _stat(decl.full(path)) for path, _ in claims}
            wanted = dict(signatures, **{path: None for path in forced if path in signatures})
            if (not redeclared and head == (old.head, old.branch) and not forced
                    and _same_claims(claims, self._claims) and signatures == self._seen
                    and _same_diagnostics(diagnostics, self._discovered)
                    and (listed == self._listed or not old.index.context.follows_listing)):
                self._remember(old, discovered, stamp)   # e.g. a plain `git status`
                self._recovered(old)
                return
            began = time.perf_counter_ns()
            with _Building():
                index = build_index(decl, claims, diagnostics, self.counters,
                                    None if redeclared else old.index.results, wanted,
                                    listed, BUILTIN_IDS)
                self.counters.phase("index_build", began)
                new = Generation(old.number + 1, decl, index, head, self.counters, old.dirs,
                                 self, old)
            if self.strict and index.errors:
                raise Fatal(EXIT_CONTRACT, "declarative state carries %d error(s); refusing "
                            "to serve under --strict" % index.errors)
        except (Fatal, RegistryError) as exc:
            self._failed(str(exc) if isinstance(exc, RegistryError) else exc.message, stamp,
                         signatures)
            return
        except Exception as exc:  # a defect must not end a server that has a good layer
            log(DEBUG, "rebuild failed", traceback=_traceback_text())
            self._failed("internal error: %s: %s" % (type(exc).__name__, exc), stamp,
                         signatures)
            return
        self.counters.count("index_builds")
        self.counters.values["generation"] = new.number
        self._remember(new, discovered, stamp)
        self.generation = new
        self._recovered(new)
        log(DEBUG, "generation built", generation=new.number, objects=len(index.objects),
            state=index.state)
        self._tell(old, new)

    def _first(self, old, stamp):
        """The layer could not be read until now (§25), or there was none (§32): read it
        whole, as at start; the first generation built is told to the clients like any
        new one."""
        if stamp != self._stamp:
            self.counters.count("stamp_moves")
        root = old.root
        if old.absent:
            try:
                root = find_root(root)
            except Fatal:     # still no layer (or the start folder went): nothing to tell
                self._stamp = stamp
                return
        try:
            new, discovered = read_generation(root, old.decl.discovery, self.counters, self)
            if self.strict and new.index.errors:   # (a strict start never gets here)
                raise Fatal(EXIT_CONTRACT, "declarative state carries %d error(s)"
                            % new.index.errors)
        except Fatal as exc:
            self.counters.count("rebuilds_failed")
            new, discovered = broken_generation(root, old.decl.discovery, exc,
                                                self.counters, self), NOTHING_DISCOVERED
            if old.absent:
                log(WARN, "a layer appeared and cannot be read", root=root, reason=new.broken)
            elif new.broken != old.broken:
                log(WARN, "the layer still cannot be read", reason=new.broken)
        except Exception:  # a defect must not end a server that explains itself
            log(DEBUG, "rebuild failed", traceback=_traceback_text())
            self.counters.count("rebuilds_failed")
            self._stamp = stamp
            return
        else:
            self.counters.count("index_builds")
            self.counters.values["generation"] = new.number
            log(INFO, "a layer appeared" if old.absent else "the layer can be read",
                generation=new.number, objects=len(new.index.objects),
                state=new.index.state)
        self._remember(new, discovered, stamp)
        self.generation = new
        self._tell(old, new)

    def _recovered(self, gen):
        if self.stale is not None:
            log(INFO, "the layer is readable again", generation=gen.number)
        self.stale, self._failing, self.stale_since = None, False, None

    def _failed(self, message, stamp, signatures):
        """§15.3: keep the last good generation; say so once; wait for the next move."""
        self.counters.count("rebuilds_failed")
        if self.stale is None:
            self.stale_since = time.time()
        self.stale, self._failing = message, True
        log(WARN, "the layer could not be read again; still serving generation %d"
            % self.generation.number, reason=message)
        self._stamp = stamp
        if signatures is not None:
            self._seen = dict(signatures)
            self._sweep_plan = sweep_plan(self.generation.decl.full, self._seen)
        self._swept = time.monotonic()

    # -- telling the clients (§15.4) --------------------------------------------------

    def listen(self, listener):
        """Start telling `listener(change)` of each new generation; the idle timer runs
        while anyone listens."""
        import _thread
        with self._listeners_lock:
            if listener not in self.listeners:
                self.listeners.append(listener)
            start = self.watch and not self._timer and self._stopping.locked()
            self._timer = self._timer or start
        if start:
            self._ticking.acquire()
            _thread.start_new_thread(self._idle, ())

    def unlisten(self, listener):
        with self._listeners_lock:
            if listener in self.listeners:
                self.listeners.remove(listener)

    def close(self):
        """Stop the idle timer and wait (briefly) for it to end."""
        with self._listeners_lock:
            del self.listeners[:]
        if self._stopping.locked():
            self._stopping.release()
        if self._ticking.acquire(True, 5.0):
            self._ticking.release()

    def _idle(self):
        """The idle timer: compare the stamp every second, sweep as often as the idle
        budget allows; stop when nobody listens (a process with no listener uses no CPU)."""
        try:
            while not self._stopping.acquire(True, IDLE_TICK):
                with self._listeners_lock:
                    if not self.listeners:
                        self._timer = False
                        return
                try:
                    self.check(idle=True)
                except Exception:  # the timer must outlive any one failure
                    log(DEBUG, "idle check failed", traceback=_traceback_text())
            self._stopping.release()   # closing: leave it free for close() and others
        finally:
            self._ticking.release()

    def _tell(self, old, new):
        with self._listeners_lock:
            listeners = list(self.listeners)
        if not listeners:
            return
        change = Change(old, new)
        for listener in listeners:
            try:
                listener(change)
            except Exception:  # one client that cannot be told must not stop the others
                log(DEBUG, "a notification could not be delivered",
                    traceback=_traceback_text())


def _same_claims(a, b):
    return len(a) == len(b) and all(
        pa == pb and sa is sb for (pa, sa), (pb, sb) in zip(a, b))


def _same_diagnostics(a, b):
    return [(d.code, d.path, d.message) for d in a] == [(d.code, d.path, d.message) for d in b]


def _listing_changed(old, new, key):
    """Would a listing of `new` differ from one of `old`? Unchanged files keep their
    objects, so most pairs are the same object and cost nothing."""
    return len(old) != len(new) or any(
        a is not b and key(a) != key(b) for a, b in zip(old, new))


def _resource_key(obj):
    return (obj.uri, obj.identity, obj.title, obj.description, obj.media_type, obj.id,
            obj.kind, tuple(obj.provenance.items()))


def _prompt_key(obj):
    body = obj.body if obj.body is not None else obj.content
    return _resource_key(obj) + tuple(placeholders(body))


def _read_changed(old, new, uri):
    """Would `resources/read` of `uri` answer differently (or not at all) now?"""
    entry = new.registry.by_uri.get(uri)
    if entry is not None and entry["kind"] in _EXECUTABLE:
        # a query's answer: the repository report names its generation; the peers are no
        # generation's (the board tells of its own changes, §27)
        return entry["id"] != "peers.list"
    before, after = old.index.by_uri.get(uri), new.index.by_uri.get(uri)
    if after is None:
        return before is not None
    return before is None or (before.content, before.media_type) != (
        after.content, after.media_type)


# ---------------------------------------------------------------------------------------
# 17. Sessions and the method table (§9, §15.4, §17, §18, §27): who is connected (one
#    Session each: its protocol state, what it follows, its place on the board of peers),
#    and one table of MCP methods: the legacy era (initialize, then requests) and the
#    2026-07-28 era (stateless, `_meta` on every request) are thin framings over it.
# ---------------------------------------------------------------------------------------

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MODERN_VERSION = "2026-07-28"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
SERVER_INFO = {"name": "majordomus", "title": "Majordomus", "version": VERSION}
META_CLIENT = "io.modelcontextprotocol/clientInfo"
LINE_BOUND = 1048576
INSTRUCTIONS_BOUND = 600      # characters: the instructions stay short (§27 adds the peers)
# The results a 2026-07-28 client may cache (for 0 ms: the layer can change any moment).
_CACHEABLE = frozenset(("server/discover", "tools/list", "resources/list",
                        "resources/templates/list", "resources/read", "prompts/list"))


# -- frames: what one message is on the wire ----------------------------------------------

class RawJSON:
    """An already-serialised JSON object, spliced into a frame as it is."""

    __slots__ = ("data",)

    def __init__(self, value=None, data=None):
        self.data = _json_bytes(value) if data is None else data


def _json_bytes(value):
    """Compact UTF-8 JSON; a lone surrogate (from a client's \\ud800) falls back to ASCII."""
    try:
        return json_compact(value).encode("utf-8")
    except UnicodeEncodeError:
        return json_compact(value, ascii_only=True).encode("ascii")


class RpcError(Exception):
    def __init__(self, code, message, data=None):
        Exception.__init__(self, message)
        self.code, self.message, self.data = code, message, data


class _ResourceMissing(Exception):
    """resources/read of a URI nothing serves: each era words it its own way."""


def _frame(msg_id, result=None, error=None):
    """A JSON-RPC response as bytes; a RawJSON result is spliced without re-encoding."""
    head = b'{"jsonrpc":"2.0","id":' + _json_bytes(msg_id)
    try:
        if error is not None:
            body = {"code": error[0], "message": error[1]}
            if len(error) > 2 and error[2] is not None:
                body["data"] = error[2]
            return head + b',"error":' + _json_bytes(body) + b"}"
        data = result.data if isinstance(result, RawJSON) else _json_bytes(result)
    except (ValueError, RecursionError) as exc:  # a defect; still one JSON frame, no NaN
        log(DEBUG, "answer not written", traceback=_traceback_text())
        return head + b',"error":' + _json_bytes({"code": -32603, "message": "internal: the "
                                                  "answer cannot be written as JSON: %s"
                                                  % exc}) + b"}"
    return head + b',"result":' + data + b"}"


def _notification(method, params):
    message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return _json_bytes(message)


def parse_frame(line):
    """Decode one input line: (value, None) or (None, error frame)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None, _frame(None, error=(-32700, "parse error: input is not UTF-8"))
    try:
        return json_loads(text), None
    except (ValueError, RecursionError) as exc:
        return None, _frame(None, error=(-32700, "parse error: %s" % exc))


# An id JSON cannot carry back (§25): `1e400` reads as infinity, which is not JSON.
BAD_ID = (-32600, "invalid id: a number JSON cannot carry back (not finite)")


def carried(value):
    """Can `value` be written back as JSON (no NaN, no infinity, anywhere in it)?"""
    try:
        _json_bytes(value)
        return True
    except (ValueError, RecursionError):
        return False


class _ClientGone(Exception):
    pass


# -- who is connected: a session each, and the board of the lasting ones (§27) ------------

PEERS_URI = "majordomus://peers"
CLIENT_NAME_BOUND = 100   # characters of a client's name kept


def utc_stamp(now=None):
    """A UTC time in ISO 8601, to the second (2026-07-30T09:41:00Z)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


def paths_overlap(a, b):
    """§27: one path equals or contains the other, by segments (`.` holds everything). The
    definition; the board finds overlaps through a ScopeIndex, which must agree with it."""
    return a == b or a == "." or b == "." or b.startswith(a + "/") or a.startswith(b + "/")


def scope_overlap(mine, theirs):
    """The paths of `mine` that overlap any path of `theirs` (by the definition)."""
    return [a for a in mine if any(paths_overlap(a, b) for b in theirs)]


def path_folders(path):
    """The folders that contain a normalised path, by segments, `.` first (`.`: none)."""
    if path == ".":
        return []
    folders, at = ["."], path.find("/")
    while at >= 0:
        folders.append(path[:at])
        at = path.find("/", at + 1)
    return folders


class ScopeIndex:
    """Whose announced paths are where (§27, §25.1): each path kept under itself and under
    every folder that contains it, so that the holders overlapping a path (holding it, a
    folder of it, or a path under it) are found in as many steps as it has segments,
    never by comparing each path with every other."""

    def __init__(self):
        self.at = {}          # path -> {holder: True}
        self.under = {}       # folder -> {holder: how many of its paths lie below}

    def add(self, holder, paths):
        for path in paths:
            self.at.setdefault(path, {})[holder] = True
            for folder in path_folders(path):
                below = self.under.setdefault(folder, {})
                below[holder] = below.get(holder, 0) + 1

    def remove(self, holder, paths):
        for path in paths:
            holders = self.at.get(path)
            if holders is not None:
                holders.pop(holder, None)
                if not holders:
                    del self.at[path]
            for folder in path_folders(path):
                below = self.under.get(folder)
                if below is not None and holder in below:
                    below[holder] -= 1
                    if not below[holder]:
                        del below[holder]
                    if not below:
                        del self.under[folder]

    def overlapping(self, path):
        """The holders of a path that overlaps `path` (paths_overlap)."""
        found = set(self.at.get(path, ()))
        found.update(self.under.get(path, ()))
        for folder in path_folders(path):
            found.update(self.at.get(folder, ()))
        return found


def client_name(name):
    """A client's name as the board keeps it (its whitespace runs made one space, at most
    CLIENT_NAME_BOUND characters), or None for one that names nothing."""
    if not isinstance(name, str) or not name.strip():
        return None
    return " ".join(name.split())[:CLIENT_NAME_BOUND]


class Subscription:
    """What a session follows of the layer (§15.4, §18): the lists, and which URIs. Told
    each new generation's Change by the live layer, it says it in MCP's words:
    `send(method, params)` puts one notification on the session's connection."""

    def __init__(self, send, resources_list=True, prompts_list=True, uris=()):
        self.send = send
        self.resources_list, self.prompts_list = resources_list, prompts_list
        self.uris = set(uris)

    def __call__(self, change):
        if change.resources and self.resources_list:
            self.send("notifications/resources/list_changed", None)
        if change.prompts and self.prompts_list:
            self.send("notifications/prompts/list_changed", None)
        for uri in sorted(self.uris):
            if change.read_changed(uri):
                self.send("notifications/resources/updated", {"uri": uri})


class Session:
    """One client of this process (§9, §19, §27): its connection's MCP state (the legacy
    handshake, its resource subscriptions, the 2026-07-28 listens), how a frame reaches it
    (`write(frame)`: one whole frame on the connection, one writer at a time; for a legacy
    /mcp session, on its open event stream, else nowhere), and, for a lasting one
    (`transport` stdio, bridge or http), its place on the board as a peer: its id, its
    client's name, what it announced. A 2026-07-28 request over HTTP, or a listen's
    stream, is a session of its own on no board."""

    afar = ""                 # a peer of this checkout: a notice names no branch (§31)

    def __init__(self, live, write=None, pushes=True, transport=None, key=None):
        self.live, self._write = live, write
        self.pushes = pushes      # can the transport send a frame on its own? (stdio: yes)
        self.initialized = False
        self.subscription = Subscription(self._notify)   # the legacy era's (§15.4)
        self.listens = {}         # 2026-07-28: a listen's id -> its Subscription (§18)
        self.replaying = False    # a takeover's replay (§27): its announce tells nobody
        # A legacy /mcp session (§19): its key, last use, protocol version, open stream.
        self.key, self.used, self.version, self.stream = key, time.monotonic(), \
            "2025-03-26", None
        # The peer (§27): its id and number on the board, the sessions whose scope overlaps.
        self.id, self.number, self.transport = None, 0, transport
        self.overlaps = set()
        self.claim = False        # is its scope an exclusive claim? (§31)
        self.client_pid = None    # its client's process, where known (§31: the guard)
        self.handle = None        # a 2026-07-28 session's stand-in: its handle (§31)
        self.client, self.since = "unknown", utc_stamp()
        self.intent = self.announced = None
        self.scope = []
        if transport:
            live.board.join(self)

    @property
    def peer(self):
        """This session as the peers' capabilities name their caller, or None (off the
        board)."""
        return self if self.id is not None else None

    def write(self, frame):
        if self._write is not None:
            self._write(frame)
            return
        stream = self.stream
        if stream is not None:      # no stream open: nobody to tell (nothing is kept)
            stream.put(frame)

    def _notify(self, method, params):
        self.write(_notification(method, params))

    def follow(self):
        """A legacy /mcp session hears of changes only through its GET stream: it follows
        while one is open (and it has sent notifications/initialized)."""
        if self.stream is not None and self.initialized:
            self.live.listen(self.subscription)

    def close(self):
        """The connection ended: nobody is told anything any more."""
        self.live.unlisten(self.subscription)
        for listener in self.listens.values():
            self.live.unlisten(listener)
        self.listens.clear()
        if self.id is not None:
            self.live.board.leave(self)

    def end(self):
        """A legacy /mcp session ends (deleted, expired, or the server stops)."""
        self.close()
        if self.stream is not None:
            self.stream.end()

    def name(self, info):
        """The client's name, from initialize's clientInfo or a 2026-07-28 request's _meta
        (kept by a session on no board too: a handle it announces with takes it, §31)."""
        name = client_name(info.get("name")) if isinstance(info, dict) else None
        if name is None:
            return
        if self.id is not None:
            self.live.board.name(self, name)
        else:
            self.client = name

    def told(self, announcer, mine):
        """§27: another peer announced a scope that overlaps this session's paths `mine`:
        `updated` for majordomus://peers where subscribed, and a warning where the era has
        log messages (the legacy one)."""
        if self.initialized and PEERS_URI in self.subscription.uris:
            self.subscription.send("notifications/resources/updated", {"uri": PEERS_URI})
        for listener in list(self.listens.values()):
            if PEERS_URI in listener.uris:
                listener.send("notifications/resources/updated", {"uri": PEERS_URI})
        if self.initialized:
            self.write(_notification("notifications/message", {
                "level": "warning", "logger": "majordomus.peers",
                "data": "%s (%s)%s announced %s on %s, overlapping yours: %s" % (
                    announcer.id, announcer.client, announcer.afar, announcer.intent,
                    ", ".join(announcer.scope), ", ".join(mine))}))


CLAIM_IDLE = 30.0         # seconds an HTTP session's claim, or a handle, outlives its last
                          # request (§31)


class Afar:
    """A peer of another checkout of the repository (§31), as that checkout's server shows
    it: its id there qualified by the checkout (`p1@` its tag), what it announced, and where
    it works; told of an announce here, or named in a listing here."""

    def __init__(self, view, tag):
        self.id = "%s@%s" % (view["id"], tag)
        self.client, self.intent = view.get("client", "unknown"), view.get("intent")
        self.scope = list(view.get("scope", ()))
        self.worktree, self.branch = view.get("worktree"), view.get("branch")
        self.claim = view.get("claim") is True
        self.view = dict(view, id=self.id)

    @property
    def afar(self):
        """Where it works, as a notice names it."""
        return " on branch %s in %s" % (self.branch or "(detached)", self.worktree)


class _NoLock:
    """The lock of a process that shares with nobody: its own board's lock is enough."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Board:
    """The peers of this process (§27): every lasting session (this process's stdio, each
    bridge, each /mcp session, each 2026-07-28 handle), named by its client, with what it
    announced and whether that is a claim (§31). Memory only; gone with the process. A
    process that shares (§27) is handed its neighbours: the other checkouts' boards, read
    from their servers, where overlaps and claims are found too."""

    def __init__(self):
        import _thread
        self.lock = _thread.allocate_lock()
        self.peers = {}           # id -> Session, in joining order
        self.scopes = ScopeIndex()   # whose announced paths are where
        self.claims = ScopeIndex()   # whose claimed paths are where (§31)
        self.handles = {}         # a 2026-07-28 handle -> its Session (§31)
        self.joined = 0
        self.version = 0          # moves with every change (the pages reload on it)
        self.watchers = []        # callables told the new version (the pages' streams)
        self._waiters = []        # locks released when the last bridge leaves
        # Handed in by sharing (§31): () -> ([Afar], complete, boards read); announce ->
        # the other servers told; the repository's claims decided one at a time.
        self.neighbours = self.tell_afar = None
        self.claims_lock = _NoLock

    def join(self, session):
        with self.lock:
            self.joined += 1
            session.number, session.id = self.joined, "p%d" % self.joined
            self.peers[session.id] = session
        self._changed()

    def leave(self, peer):
        with self.lock:
            if self.peers.pop(peer.id, None) is None:
                return
            self._unscope(peer)
            if peer.handle is not None:
                self.handles.pop(peer.handle, None)
            waiters = [] if self._bridges() else self._waiters
            self._waiters = [] if waiters else self._waiters
        for waiter in waiters:
            waiter.release()
        self._changed()

    def name(self, peer, name):
        name = client_name(name)
        if name is not None and name != peer.client:
            peer.client = name
            self._changed()

    def _bridges(self):
        return sum(1 for peer in self.peers.values() if peer.transport == "bridge")

    def bridges(self):
        with self.lock:
            return self._bridges()

    def linger(self):
        """Wait while a bridge is attached (§27: an owner whose client has gone)."""
        import _thread
        with self.lock:
            if not self._bridges():
                return
            waiter = _thread.allocate_lock()
            waiter.acquire()
            self._waiters.append(waiter)
        waiter.acquire()

    def others(self, peer):
        with self.lock:
            return [other for other in self.peers.values() if other is not peer]

    def view(self, peer, worktree, branch):
        """A session as peers.list shows it (a Peer), with the ids whose scope overlaps
        its own, in joining order (called with the lock held)."""
        out = {"id": peer.id, "client": peer.client, "transport": peer.transport,
               "since": peer.since}
        if peer.intent is not None:
            out["intent"] = peer.intent
        out["scope"] = list(peer.scope)
        if peer.announced is not None:
            out["announced"] = peer.announced
        out["overlaps"] = [other.id for other in sorted(peer.overlaps,
                                                        key=lambda other: other.number)]
        out.update(worktree=worktree, branch=branch, claim=peer.claim)
        return out

    def listing(self, caller=None, worktree=None, branch=None, local=False):
        """peers.list (§27, §31): this board's peers, then, unless `local`, those of the
        other checkouts' boards, with the overlaps across them."""
        self._expire()
        with self.lock:
            peers = [self.view(peer, worktree, branch) for peer in self.peers.values()]
        boards, complete = 1, True
        if not local and self.neighbours is not None:
            afar, complete, read = self.neighbours()
            boards += read
            if afar:
                peers = _overlapping(peers + [peer.view for peer in afar])
        out = {"count": len(peers)}
        if caller is not None:
            out["caller"] = caller.id
        out.update(peers=peers, boards=boards, complete=complete)
        return out

    def announce(self, peer, intent, scope, claim=False, worktree=None, branch=None):
        """Keep the peer's intent and scope, and with `claim` hold it as an exclusive claim
        (refused, with nothing changed, when it overlaps another live claim in any
        checkout); tell each other session whose scope overlaps (not while the announcer
        replays a takeover): each is only queued a notice (§25.1); the announcer's Peer."""
        claim = bool(claim and scope)
        with self.claims_lock():
            self._expire()
            afar = self.neighbours()[0] if self.neighbours is not None else []
            if claim:
                refusal = self._conflicts(peer, scope, afar, worktree, branch)
                if refusal:
                    raise Refused("claim_conflict: " + refusal)
            with self.lock:
                self._unscope(peer)
                peer.intent, peer.scope, peer.announced = intent, scope, utc_stamp()
                if peer.id in self.peers:
                    self.scopes.add(peer, scope)
                    for path in scope:
                        peer.overlaps.update(self.scopes.overlapping(path))
                    peer.overlaps.discard(peer)
                    for other in peer.overlaps:
                        other.overlaps.add(peer)
                    peer.claim = claim
                    if claim:
                        self.claims.add(peer, scope)
                others = sorted(peer.overlaps, key=lambda other: other.number)
                view = self.view(peer, worktree, branch)
        own = ScopeIndex()
        own.add(peer, scope)
        far = [other for other in afar if other.scope and any(
            own.overlapping(path) for path in other.scope)]
        view["overlaps"] += [other.id for other in far]
        if peer.handle is not None:
            view["handle"] = peer.handle
        if not peer.replaying:
            for other in others:
                mine = [path for path in other.scope if own.overlapping(path)]
                try:
                    other.told(peer, mine)
                except Exception:  # one session that cannot be told stops no other
                    log(DEBUG, "a peer could not be told", traceback=_traceback_text())
            if far and self.tell_afar is not None:
                self.tell_afar(view)
        self._changed()
        return view

    def told_afar(self, view, tag):
        """§31: a peer of another checkout (`view`, as its server shows it, `tag` its
        checkout's) announced: each session here whose scope overlaps it is told (naming the
        other branch); the ids told."""
        announcer = Afar(view, tag)
        own = ScopeIndex()
        own.add(announcer, announcer.scope)
        with self.lock:
            sessions = [peer for peer in self.peers.values() if peer.scope]
        told = []
        for peer in sessions:
            mine = [path for path in peer.scope if own.overlapping(path)]
            if mine:
                try:
                    peer.told(announcer, mine)
                    told.append(peer.id)
                except Exception:  # one session that cannot be told stops no other
                    log(DEBUG, "a peer could not be told", traceback=_traceback_text())
        return told

    def _conflicts(self, peer, scope, afar, worktree, branch):
        """Why a claim of `scope` by `peer` is refused ('' when it is not): every other
        live claim it overlaps, here or in another checkout, its holder and paths named."""
        own = ScopeIndex()
        own.add(peer, scope)
        with self.lock:
            holders = set()
            for path in scope:
                holders.update(self.claims.overlapping(path))
            holders.discard(peer)
            found = [(holder.id, holder.client, branch, worktree,
                      [path for path in holder.scope if own.overlapping(path)])
                     for holder in sorted(holders, key=lambda other: other.number)]
        found += [(other.id, other.client, other.branch, other.worktree,
                   [path for path in other.scope if own.overlapping(path)])
                  for other in afar if other.claim]
        return "; ".join("%s claimed by %s (%s) on branch %s in %s" % (
            ", ".join(paths), holder, client, where or "(detached)", tree)
            for holder, client, where, tree, paths in found if paths)

    def handle_session(self, live, handle, client="unknown"):
        """§31: the session a 2026-07-28 handle stands for (a new one, with its handle and
        `client`'s name, when none is given); InvalidInput for a handle not known here."""
        self._expire()
        if handle is not None:
            with self.lock:
                session = self.handles.get(handle)
            if session is None:
                raise InvalidInput("the handle %s is not known here (a handle ends %d s after "
                                   "its last use): announce without it for a new one"
                                   % (handle[:64], CLAIM_IDLE))
            session.used = time.monotonic()
            return session
        session = Session(live, pushes=False, transport="http")
        session.handle, session.client = os.urandom(16).hex(), client
        with self.lock:
            self.handles[session.handle] = session
        return session

    def _expire(self):
        """§31: a handle 30 s past its last use leaves the board; an HTTP session's claim 30
        s past its last request is released."""
        now, gone = time.monotonic(), []
        with self.lock:
            for peer in self.peers.values():
                if peer.transport != "http" or now - peer.used <= CLAIM_IDLE:
                    continue
                if peer.handle is not None:
                    gone.append(peer)
                elif peer.claim:
                    self.claims.remove(peer, peer.scope)
                    peer.claim = False
        for peer in gone:
            peer.close()

    def _unscope(self, peer):
        """Take a session's scope off the indices and out of the others' overlaps (called
        with the lock held)."""
        self.scopes.remove(peer, peer.scope)
        if peer.claim:
            self.claims.remove(peer, peer.scope)
            peer.claim = False
        for other in peer.overlaps:
            other.overlaps.discard(peer)
        peer.overlaps.clear()

    def _changed(self):
        with self.lock:
            self.version += 1
            version, watchers = self.version, list(self.watchers)
        for watcher in watchers:
            try:
                watcher(version)
            except Exception:  # a page's stream that has gone
                log(DEBUG, "a board watcher failed", traceback=_traceback_text())

    def watch(self, watcher):
        with self.lock:
            self.watchers.append(watcher)

    def unwatch(self, watcher):
        with self.lock:
            if watcher in self.watchers:
                self.watchers.remove(watcher)


def _overlapping(peers):
    """Each Peer's overlaps found again across checkouts (§31): by repository-relative path,
    in the listing's order."""
    index = ScopeIndex()
    for number, peer in enumerate(peers):
        index.add(number, peer["scope"])
    out = []
    for number, peer in enumerate(peers):
        found = set()
        for path in peer["scope"]:
            found.update(index.overlapping(path))
        found.discard(number)
        out.append(dict(peer, overlaps=[peers[k]["id"] for k in sorted(found)]))
    return out


class BoardHooks(HookHost):
    """What a long-lived process lends its hook answers (§30, §31): each session's memory,
    here; the claims and the sessions of its board (and, once it shares, of the other
    checkouts' boards). A session of the board is the hook's own client's when its client's
    process is one of the hook's ancestors (the heuristic the README describes)."""

    def __init__(self, live):
        HookHost.__init__(self, HookMemory())
        self.live = live

    def claims(self, targets):
        board, gen = self.live.board, self.live.generation
        board._expire()
        mine = ScopeIndex()
        mine.add(None, targets)
        with board.lock:
            holders = set()
            for target in targets:
                holders.update(board.claims.overlapping(target))
            found = [{"id": holder.id, "client": holder.client, "branch": gen.branch,
                      "worktree": gen.root, "pid": holder.client_pid,
                      "paths": [path for path in holder.scope if mine.overlapping(path)]}
                     for holder in sorted(holders, key=lambda peer: peer.number)]
        afar = board.neighbours()[0] if board.neighbours is not None else []
        found += [{"id": other.id, "client": other.client, "branch": other.branch,
                   "worktree": other.worktree, "pid": None,
                   "paths": [path for path in other.scope if mine.overlapping(path)]}
                  for other in afar if other.claim]
        return [claim for claim in found if claim["paths"]]

    def peers(self, ancestors):
        board, gen = self.live.board, self.live.generation
        with board.lock:
            own = {peer.id for peer in board.peers.values() if peer.client_pid in ancestors}
        listing = board.listing(None, gen.root, gen.branch)
        return [(peer, peer["id"] in own) for peer in listing["peers"]]


def peers_sentence(others, room):
    """§27: who else is here, for a session's instructions, in at most `room` characters:
    as many as fit by name, the rest counted ('' when nobody is, or nothing fits)."""
    if not others:
        return ""
    tail = "; majordomus_peers tells what each will change, majordomus_announce tells them yours."
    names = ["%s (%s)" % (peer.id, peer.client) for peer in others]
    for shown in range(len(names), -1, -1):
        listed = ", ".join(names[:shown])
        rest = len(names) - shown
        if rest:
            listed += "%s%d other session(s)" % (" and " if listed else "", rest)
        for ending in (tail, "; see majordomus_peers.", "."):
            text = "Also here: " + listed + ending
            if len(text) <= room:
                return text
    return ""


# -- what MCP lists, prepared once per generation -----------------------------------------

class McpListing:
    """The registry as MCP lists it, prepared once per generation (on first use)."""

    def __init__(self, gen):
        gen.counters.count("mcp_projection_builds")
        registry = gen.registry
        self.tools, self.tool_ids = [], {}
        # Only a builtin has a tool or is a query (an object's capability is a resource).
        builtin = sorted(i for i in BUILTIN_IDS if i in registry.by_id)
        for cap_id in builtin:
            descriptor = registry.by_id[cap_id]
            name = descriptor["exposure"].get("mcp", {}).get("tool")
            if name:
                self.tool_ids[name] = cap_id
                self.tools.append({
                    "name": name, "title": descriptor["title"],
                    "description": descriptor["description"],
                    "inputSchema": descriptor["input"]["schema"],
                    "outputSchema": descriptor["output"]["schema"],
                    "_meta": {"majordomus": {"id": cap_id}},
                    "annotations": KIND_ANNOTATIONS[descriptor["kind"]]})
        self._tools_result = None
        self.queries = [registry.by_id[i] for i in builtin
                        if registry.by_id[i]["kind"] in _EXECUTABLE
                        and "resource" in registry.by_id[i]["exposure"].get("mcp", {})]
        index = gen.index
        if gen.absent:
            self.instructions = NO_LAYER      # exactly (§32)
            return
        if gen.broken is not None:
            self.instructions = (
                "the layer cannot be read: %s. majordomus://repository reports it; this "
                "server follows the layer's files and serves the layer as soon as they can "
                "be read (resources/list_changed then tells)." % gen.broken)
            return
        self.instructions = instructions(len(index.objects), registry.summary["total"],
                                         len(self.tools), registry.summary["mcp_resources"],
                                         index.state, len(registry.by_prompt))

    @property
    def tools_result(self):
        """The tools/list answer, encoded on the first tools/list (not for initialize)."""
        if self._tools_result is None:
            self._tools_result = RawJSON({"tools": self.tools})
        return self._tools_result

    def resource_uris(self, gen):
        """The URIs of resources/list, in its order, without building the entries."""
        return [d["exposure"]["mcp"]["resource"]["uri"] for d in self.queries] + [
            o.uri for o in gen.index.objects]


# The sentence of initialize's instructions that sends a model to the brief (§26).
BRIEF_INSTRUCTION = ("Before you create or change a file, call majordomus_brief with its path "
                     "and your intent.")


def instructions(objects, capabilities, tools, resources, state, prompts):
    """initialize's instructions (§9.3, §26): one short paragraph, under 600 characters
    whatever the counts, with room for the sentence naming the other sessions (§27)."""
    return (
        "Read-only view of a repository's AI layer: %d object(s), %d capabilities "
        "(%d tools, %d resources), index state %s. %s Each object is the resource "
        "majordomus://<kind>/<identity>; majordomus://repository carries the repository "
        "report with every diagnostic. The layer's %d prompt(s) are MCP prompts "
        "(prompts/list), each placeholder an argument. Lists page with limit and cursor. "
        "Nothing is ever written." % (objects, capabilities, tools, resources, state, BRIEF_INSTRUCTION,
                      prompts))


def mcp_listing(gen):
    return gen.memo("mcp", lambda: McpListing(gen))


def mcp_resources(gen):
    """The resources/list entries: query resources first, then objects in URI order."""
    return gen.memo("mcp.resources", lambda: [
        _query_resource(d) for d in mcp_listing(gen).queries] + [
        _object_resource(o) for o in gen.index.objects])


def _query_resource(descriptor):
    resource = descriptor["exposure"]["mcp"]["resource"]
    return {"uri": resource["uri"], "name": resource["name"], "title": descriptor["title"],
            "description": descriptor["description"], "mimeType": "application/json",
            "_meta": {"majordomus": {"id": descriptor["id"], "kind": descriptor["kind"],
                                     "provenance": descriptor["provenance"]}}}


def _object_resource(obj):
    out = {"uri": obj.uri, "name": obj.identity, "title": obj.title or obj.identity}
    if obj.description is not None:
        out["description"] = obj.description
    out["mimeType"] = obj.media_type
    out["_meta"] = {"majordomus": {"id": obj.id, "kind": obj.kind, "identity": obj.identity,
                                   "provenance": obj.provenance}}
    return out


def mcp_prompts(gen):
    """The prompts/list entries (§17), in name order."""
    def build():
        out = []
        for name, obj in gen.prompts().items():
            entry = {"name": name, "title": obj.title or obj.identity}
            if obj.description is not None:
                entry["description"] = obj.description
            body = obj.body if obj.body is not None else obj.content
            entry["arguments"] = [{"name": arg, "description": "Replaces {{%s}} in the prompt."
                                   % arg, "required": True} for arg in placeholders(body)]
            entry["_meta"] = {"majordomus": {"id": obj.id, "uri": obj.uri,
                                             "provenance": obj.provenance}}
            out.append(entry)
        return RawJSON({"prompts": out})
    return gen.memo("mcp.prompts", build)


# -- the methods: one table, both eras ----------------------------------------------------

class Call:
    """One request as a method handler sees it: the generation it is answered from, the
    session, its id and era."""

    __slots__ = ("gen", "session", "id", "modern")

    def __init__(self, gen, session, msg_id, modern):
        self.gen, self.session, self.id, self.modern = gen, session, msg_id, modern


def _capabilities(live):
    watching = live.watch
    return {"resources": {"subscribe": watching, "listChanged": watching},
            "tools": {"listChanged": False}, "prompts": {"listChanged": watching}}


def m_initialize(call, params):
    version = params.get("protocolVersion")
    if version not in PROTOCOL_VERSIONS:
        version = PROTOCOL_VERSIONS[0]
    call.session.name(params.get("clientInfo"))
    return {"protocolVersion": version, "capabilities": _capabilities(call.session.live),
            "serverInfo": SERVER_INFO, "instructions": _instructions(call)}


def m_discover(call, params):
    return {"resultType": "complete", "supportedVersions": [MODERN_VERSION] + list(
        PROTOCOL_VERSIONS), "capabilities": _capabilities(call.session.live),
            "serverInfo": SERVER_INFO, "instructions": _instructions(call)}


def _instructions(call):
    """The generation's instructions and, when other sessions are here, who (§27), within
    INSTRUCTIONS_BOUND characters."""
    text = mcp_listing(call.gen).instructions
    peer = call.session.peer
    if peer is None:
        return text
    others = call.session.live.board.others(peer)
    sentence = peers_sentence(others, INSTRUCTIONS_BOUND - 1 - len(text))
    return text + " " + sentence if sentence else text


def _no_cursor(params):
    if params.get("cursor") is not None:
        raise RpcError(-32602, "invalid cursor")


def m_resources_list(call, params):
    _no_cursor(params)
    return call.gen.memo("mcp.resources.result",
                         lambda: RawJSON({"resources": mcp_resources(call.gen)}))


def m_tools_list(call, params):
    _no_cursor(params)
    return mcp_listing(call.gen).tools_result


def m_prompts_list(call, params):
    _no_cursor(params)
    return mcp_prompts(call.gen)


def m_read(call, params):
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise RpcError(-32602, "params.uri is required")
    try:
        resolved = resolve(call.gen, uri, call.session)
    except NotFound:
        raise _ResourceMissing(uri)
    except InvalidInput as exc:
        raise RpcError(-32602, str(exc))
    except CapabilityError as exc:
        raise RpcError(-32603, str(exc))
    return {"contents": [{"uri": uri, "mimeType": resolved.media_type, "text": resolved.text}]}


def m_call(call, params):
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(-32602, "params.name is required")
    arguments = params.get("arguments", {})
    if not isinstance(arguments, dict):
        raise RpcError(-32602, "params.arguments must be an object")
    cap_id = mcp_listing(call.gen).tool_ids.get(name)
    if cap_id is None:
        raise RpcError(-32602, "unknown tool: %s" % name)
    try:
        value = call.gen.execute(cap_id, arguments, call.session)
    except Internal as exc:
        raise RpcError(-32603, str(exc))
    except CapabilityError as exc:
        return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
    render = TOOL_TEXT.get(cap_id)
    text = render(value) if render else _json_bytes(value).decode("utf-8", "surrogatepass")
    return {"content": [{"type": "text", "text": text}], "structuredContent": value,
            "isError": False}


# The tools whose text block is written for the model, not the JSON of structuredContent.
TOOL_TEXT = {"context.brief": brief_text}


def m_prompt(call, params):
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(-32602, "params.name is required")
    arguments = params.get("arguments", {})
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise RpcError(-32602, "params.arguments must be an object")
    try:
        value = call.gen.execute("prompts.get", {"name": name, "arguments": arguments})
    except (InvalidInput, NotFound) as exc:
        raise RpcError(-32602, exc.message)
    except CapabilityError as exc:
        raise RpcError(-32603, str(exc))
    out = {"description": value["description"]} if "description" in value else {}
    out["messages"] = value["messages"]
    return out


def _subscribed_uri(call, params):
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise RpcError(-32602, "params.uri is required")
    return uri


def m_subscribe(call, params):
    uri = _subscribed_uri(call, params)
    if uri not in call.gen.registry.by_uri:
        raise _ResourceMissing(uri)
    call.session.subscription.uris.add(uri)
    return {}


def m_unsubscribe(call, params):
    call.session.subscription.uris.discard(_subscribed_uri(call, params))
    return {}


_NO_ANSWER = object()   # a request answered later, or never (subscriptions/listen)


def m_listen(call, params):
    """§18: acknowledge at once with what will be honoured, then tag every notification
    of this subscription with its id; the request itself stays open."""
    wanted = params.get("notifications")
    if not isinstance(wanted, dict):
        raise RpcError(-32602, "params.notifications is required")
    session, honoured = call.session, {}
    if session.live.watch:
        for flag in ("resourcesListChanged", "promptsListChanged"):
            if wanted.get(flag) is True:
                honoured[flag] = True
        uris = wanted.get("resourceSubscriptions")
        known = [u for u in (uris if isinstance(uris, list) else ())
                 if isinstance(u, str) and u in call.gen.registry.by_uri]
        if known:
            honoured["resourceSubscriptions"] = list(dict.fromkeys(known))
    tag = {META_SUBSCRIPTION: call.id}
    session.write(_notification("notifications/subscriptions/acknowledged",
                                {"_meta": tag, "notifications": honoured}))

    def send(method, params_):
        session.write(_notification(method, dict(params_ or {}, _meta=tag)))

    listener = Subscription(send, "resourcesListChanged" in honoured,
                            "promptsListChanged" in honoured,
                            honoured.get("resourceSubscriptions", ()))
    replaced = session.listens.pop(_id_key(call.id), None)
    if replaced is not None:       # ids are unique per JSON-RPC; a reused one starts over
        session.live.unlisten(replaced)
    session.listens[_id_key(call.id)] = listener
    session.live.listen(listener)
    return _NO_ANSWER


def _id_key(msg_id):
    return json_compact(msg_id, sort_keys=True)


# method -> (handler, served to legacy requests, served to modern requests)
METHODS = {
    "initialize": (m_initialize, True, False),
    "ping": (lambda call, params: {}, True, False),
    "server/discover": (m_discover, False, True),
    "resources/list": (m_resources_list, True, True),
    "resources/templates/list": (lambda call, params: {"resourceTemplates": []}, True, True),
    "resources/read": (m_read, True, True),
    "resources/subscribe": (m_subscribe, True, False),
    "resources/unsubscribe": (m_unsubscribe, True, False),
    "tools/list": (m_tools_list, True, True),
    "tools/call": (m_call, True, True),
    "prompts/list": (m_prompts_list, True, True),
    "prompts/get": (m_prompt, True, True),
    "subscriptions/listen": (m_listen, False, True),
}


def is_modern(method, params):
    """§18: a request is of the 2026-07-28 era when its `_meta` names a protocol version
    (and `server/discover` always is)."""
    meta = params.get("_meta")
    return method == "server/discover" or (isinstance(meta, dict) and META_VERSION in meta)


def check_modern_envelope(params, header_version=None):
    """The 2026-07-28 `_meta` rules (§18, and §19's header first): RpcError when broken."""
    meta = params.get("_meta")
    if not isinstance(meta, dict) or META_VERSION not in meta:
        raise RpcError(-32602, "params._meta must carry %s" % META_VERSION)
    if not isinstance(meta.get(META_CAPABILITIES), dict):
        raise RpcError(-32602, "params._meta must carry %s (an object)" % META_CAPABILITIES)
    version = meta[META_VERSION]
    if header_version is not None and header_version != version:
        raise RpcError(-32020, "header mismatch: MCP-Protocol-Version")
    if version != MODERN_VERSION:
        raise RpcError(-32022, "Unsupported protocol version",
                       {"supported": [MODERN_VERSION],
                        "requested": version if carried(version) else None})


def _modern(method, result):
    """A result in the 2026-07-28 shape: resultType, the server's identity in `_meta`,
    and for the cacheable ones a zero time to live."""
    extra = {"resultType": "complete"}
    if method in _CACHEABLE:
        extra.update(ttlMs=0, cacheScope="private")
    extra["_meta"] = {META_SERVER: SERVER_INFO}
    if isinstance(result, RawJSON):   # splice the fields in, never re-encoding the list
        comma = b"," if result.data != b"{}" else b""
        return RawJSON(data=result.data[:-1] + comma + _json_bytes(extra)[1:])
    out = dict(result)
    out.update((k, v) for k, v in extra.items() if k not in out)
    return out


def dispatch(live, session, message, header_version=None):
    """One JSON-RPC message of either era: the answer frame (bytes), or None."""
    if not isinstance(message, dict):
        return _frame(None, error=(-32600, "a message is a JSON object"))
    method, msg_id = message.get("method"), message.get("id")
    if msg_id is not None and type(msg_id) not in (int, str) and not carried(msg_id):
        return _frame(None, error=BAD_ID)
    if not isinstance(method, str):
        return None if msg_id is None else _frame(msg_id, error=(-32600, "missing method"))
    params = message.get("params")
    params = params if isinstance(params, dict) else {}
    if msg_id is None:
        _notification_in(session, method, params)
        return None
    modern = is_modern(method, params)
    try:
        gen = live.current()   # every request first sees the layer as it is now (§15.2)
        if modern:
            check_modern_envelope(params, header_version)
            session.name(params["_meta"].get(META_CLIENT))
        entry = METHODS.get(method)
        if entry is None or not entry[2 if modern else 1]:
            raise RpcError(-32601, "method not found: %s" % method)
        call = Call(gen, session, msg_id, modern)
        try:
            result = entry[0](call, params)
        except _ResourceMissing as exc:
            uri = exc.args[0]
            if modern:
                raise RpcError(-32602, "resource not found: %s" % uri, {"uri": uri})
            raise RpcError(-32002, "resource not found: %s" % uri)
        if result is _NO_ANSWER:
            return None
        return _frame(msg_id, _modern(method, result) if modern else result)
    except RpcError as exc:
        return _frame(msg_id, error=(exc.code, exc.message, exc.data))
    except Exception as exc:  # never end a session for one request
        log(DEBUG, "request failed", method=method, traceback=_traceback_text())
        return _frame(msg_id, error=(-32603, "internal: %s" % exc))


def _notification_in(session, method, params):
    """A client notification: the legacy handshake's end, or a listen's cancellation."""
    if method == "notifications/initialized":
        session.initialized = True
        if session.pushes:
            session.live.listen(session.subscription)
    elif method == "notifications/cancelled" and "requestId" in params:
        listener = session.listens.pop(_id_key(params["requestId"]), None)
        if listener is not None:
            session.live.unlisten(listener)
    else:
        log(DEBUG, "notification ignored", method=method)


def answer_line(live, session, line):
    """The bytes to write for one input line (None when nothing is answered)."""
    value, error = parse_frame(line)
    if error is not None:
        return error
    if isinstance(value, list):
        if not value:
            return _frame(None, error=(-32600, "empty batch"))
        frames = [f for f in (dispatch(live, session, m) for m in value) if f is not None]
        return b"[" + b",".join(frames) + b"]" if frames else None
    return dispatch(live, session, value)


# ---------------------------------------------------------------------------------------
# 18. The stdio transport (§9.2): one JSON-RPC message a line each way, whole frames
#    written one at a time, the loop of `mcp`.
# ---------------------------------------------------------------------------------------

OVERSIZED = None          # a line over §9.2's bound, as read_lines yields it


class FrameWriter:
    """Whole frames on one file descriptor, one writer at a time: a write is repeated
    until every byte is out (an unbuffered stdout may write short, e.g. when a signal
    arrives), so frames never interleave or tear."""

    def __init__(self, fd):
        import _thread
        self.fd, self.lock, self.gone = fd, _thread.allocate_lock(), False

    def __call__(self, frame):
        with self.lock:
            if self.gone:
                raise _ClientGone()
            view = memoryview(frame + b"\n")
            while view:
                try:
                    written = os.write(self.fd, view)
                except OSError as exc:
                    if is_closed_pipe(exc):
                        self.gone = True
                        raise _ClientGone()
                    raise Fatal(EXIT_INTERNAL, "cannot write to the client: %s"
                                % _os_reason(exc))
                view = view[written:]


WRITE_DEADLINE = 2.0      # seconds a write to a session may wait before it is dropped (§25.1)


class Outbox:
    """The frames for one connection, written in order by a thread of its own: whoever
    makes one (a rebuild telling its followers, another session's announce) only queues
    it, whatever lock it holds, and never waits on a slow or stopped client (§25.1).
    `write(data)` blocks, as long as the connection's own deadline allows; when it fails,
    `drop()` ends the connection, and every later frame raises _ClientGone. The thread
    `direct` (a stdio loop's own) writes at once when nothing waits before it, so an answer
    keeps its place behind what was queued first."""

    def __init__(self, write, drop, direct=None):
        import _thread
        self.write, self.drop, self.direct = write, drop, direct
        self.lock, self.ident = _thread.allocate_lock(), _thread.get_ident
        self.frames = None        # a SimpleQueue, made with the thread when first needed
        self.waiting = 0
        self.gone = False

    def put(self, data):
        with self.lock:
            if self.gone:
                raise _ClientGone()
            now = self.waiting == 0 and self.ident() == self.direct
            if not now:
                self.waiting += 1
                if self.frames is None:
                    import _thread
                    from _queue import SimpleQueue
                    self.frames = SimpleQueue()
                    _thread.start_new_thread(self._run, ())
                self.frames.put(data)
        if now:
            self.write(data)

    def _run(self):
        while True:
            data = self.frames.get()
            if data is None:
                return
            try:
                self.write(data)
            except BaseException as exc:  # failed or too slow: the connection is dropped
                with self.lock:
                    self.gone = True
                self.drop(exc)
                return
            with self.lock:
                self.waiting -= 1

    def close(self):
        """No more frames; the thread ends once it has written what waits."""
        with self.lock:
            self.gone = True
            if self.frames is not None:
                self.frames.put(None)


def _silence_stdout():
    """After a broken pipe, point stdout at /dev/null so the final flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def read_lines(readline, stdin=False):
    """§9.2's input lines, blank ones skipped; OVERSIZED for a line over the bound (read
    past without being held). An error reading stdin is the transport's (exit 13)."""
    while True:
        try:
            line = readline(LINE_BOUND + 1)
        except OSError as exc:
            if not stdin:
                raise
            raise Fatal(EXIT_INTERNAL, "cannot read from the client: %s" % _os_reason(exc))
        if not line:
            return
        if len(line) > LINE_BOUND and line[-1:] != b"\n":
            while line and not line.endswith(b"\n"):
                line = readline(65536)
            yield OVERSIZED
        elif line.strip():
            yield line


def answer_guarded(live, session, line):
    """The frame answering one input line (None: nothing to answer); a defect in framing
    answers -32603 and never ends the session."""
    if line is OVERSIZED:
        return _frame(None, error=(-32700, "parse error: the line is over the %d byte bound"
                                   % LINE_BOUND))
    try:
        return answer_line(live, session, line)
    except _ClientGone:
        raise
    except Exception as exc:  # a defect in framing must not end the session
        log(DEBUG, "frame failed", traceback=_traceback_text())
        return _frame(None, error=(-32603, "internal: %s" % exc))


class StdioLoop:
    """§9.2's loop on this process's stdin and stdout, its lines answered by a session of
    this process. `start(options)` makes the live layer: the entry point's start-up,
    handed in (a shared server's loop, SharedStdio, may instead forward the lines to the
    repository's owner)."""

    def __init__(self, options, start):
        import _thread
        self.options, self.start = options, start
        self.watching = "--no-watch" not in options.flags
        self.writer = FrameWriter(sys.stdout.fileno())
        # Frames of other threads (a rebuild's notices, another session's announce) are
        # queued; this thread's answers are written at once when nothing waits. Its own
        # client is never dropped (it is the process's reason to be): a stalled one stalls
        # this loop only.
        self.outbox = Outbox(self.writer, lambda exc: None, _thread.get_ident())
        self.lock = _thread.allocate_lock()
        self.live = self.session = None
        self.replaying = self.ending = False
        self.answered = 0

    def serve_locally(self):
        """Answer from an index of this process's own (built now, unless it already was)."""
        if self.live is None:
            self.live = self.start(self.options)
        self.session = Session(self.live, self._write, transport="stdio")
        self.session.client_pid = os.getppid()     # who started this process (§31)

    def _write(self, frame):
        if not self.replaying:
            self.outbox.put(frame)

    def run(self):
        reader = sys.stdin.buffer
        try:
            for line in read_lines(reader.readline, stdin=True):
                if self.forwarded(line):
                    continue
                data = answer_guarded(self.live, self.session, line)
                if data is not None:
                    self.outbox.put(data)
                    self.answered += 1
                    if self.answered == 1:
                        self.first_answer()
                elif self.writer.gone:
                    raise _ClientGone()
            self.drain()
            if self.session is not None:
                self.session.close()     # off the board before saying who is left (§27)
            self.input_ended()
        except _ClientGone:
            log(INFO, "client closed the output; stopping", answered=self.answered)
            _silence_stdout()
        finally:
            self.end()
        return EXIT_OK

    # What a shared server's loop adds (SharedStdio): here, nothing.

    def forwarded(self, line):
        """Was `line` sent on to another process to answer?"""
        return False

    def first_answer(self):
        """The first answer is out."""

    def drain(self):
        """At the end of input: wait for the lines another process answers."""

    def input_ended(self):
        log(INFO, "input ended; stopping", answered=self.answered)

    def end(self):
        self.ending = True
        self.disconnect()
        if self.session is None:
            return
        self.session.close()
        self.unshare()
        self.live.close()

    def disconnect(self):
        """Let go of another process answering this one's lines."""

    def unshare(self):
        """Stop serving other processes."""


# ---------------------------------------------------------------------------------------
# 19. HTTP heads and guards (§10): a request's head read and checked (the Host, the
#    token), query arguments and JSON bodies, error bodies, one response head.
# ---------------------------------------------------------------------------------------

HEAD_LIMIT = 65536
BODY_LIMIT = 1048576
HEAD_DEADLINE = 30.0
MAX_IN_FLIGHT = 64
_HTTP_ERRORS = ((InvalidInput, 400, "invalid_input"), (NotFound, 404, "not_found"),
                (Refused, 422, "refused"), (Internal, 500, "internal"))
_BLANK_LINE = rb"\r?\n\r?\n"     # compiled by `re` on first use


class HttpError(Exception):
    """An HTTP answer other than 200: status, error code, message, extra headers."""

    def __init__(self, status, code, message, headers=(), close=False, data=None):
        Exception.__init__(self, message)
        self.status, self.code, self.message = status, code, message
        self.headers, self.close, self.data = list(headers), close, data


def _pretty(value):
    return (json_pretty(value) + "\n").encode("utf-8")


def _percent_decode(text, plus):
    from urllib.parse import unquote, unquote_plus
    try:
        return (unquote_plus if plus else unquote)(text, errors="strict")
    except UnicodeDecodeError:
        raise HttpError(400, "invalid_input", "the request target is not UTF-8 once decoded")


def _body_arguments(query, body):
    """A command's input (§27): the request body, one JSON object; nothing in the query."""
    if query:
        raise InvalidInput("a POST route takes its input as a JSON body, not in the query")
    if not body.strip():
        return {}
    try:
        value = json_loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InvalidInput("the request body is not JSON: %s" % exc)
    if not isinstance(value, dict):
        raise InvalidInput("the request body must be a JSON object")
    return value


def _query_arguments(query, schema):
    """Decode a query string and coerce each parameter by the input schema (§10). A
    parameter `P.KEY` is the entry KEY of an object-valued property P (a string)."""
    arguments, seen = {}, set()
    properties = schema.get("properties", {})
    for pair in query.split("&"):
        if not pair:
            continue
        name, _, value = pair.partition("=")
        name, value = _percent_decode(name, True), _percent_decode(value, True)
        if name in seen:
            raise InvalidInput("parameter '%s' is given twice" % name)
        seen.add(name)
        outer, dot, key = name.partition(".")
        if dot and key and properties.get(outer, {}).get("type") == "object":
            entries = arguments.setdefault(outer, {})
            if not isinstance(entries, dict):
                raise InvalidInput("parameter '%s' is given both whole and by entry" % outer)
            entries[key] = value
            continue
        if name in arguments:
            raise InvalidInput("parameter '%s' is given both whole and by entry" % name)
        expected = properties.get(name, {}).get("type")
        if expected == "integer":
            value = _integer_argument("parameter '%s'" % name, value)
        elif expected == "boolean":
            if value not in ("true", "false"):
                raise InvalidInput("parameter '%s': '%s' is not a boolean" % (name, value))
            value = value == "true"
        arguments[name] = value
    return arguments


def _integer_argument(what, text):
    """An integer of a query or of the command line (parse_number; a sign allowed): the
    §7.5 InvalidInput for anything else, a number of thousands of digits included."""
    try:
        return parse_number(text, signed=True)
    except NumberError as exc:
        if exc.over:
            raise InvalidInput("%s: a number of %s" % (what, exc))
        raise InvalidInput("%s: '%s' is not an integer" % (what, text))


_LOOPBACK_HOSTS = frozenset(("localhost", "127.0.0.1", "[::1]"))
_LABEL_CHARS = _LOWER + _DIGITS + "-"


def _host_allowed(host, bound=None):
    """The DNS-rebinding guard (§10, §25): `localhost`, a `*.localhost` name of valid DNS
    labels, `127.0.0.1` or `[::1]` (or `bound`, the literal address the server was told
    to bind), each with an optional port. Nothing is resolved; anything else is refused."""
    host = host.strip(" \t").lower()
    if host.startswith("["):
        name, bracket, port = host.partition("]")
        name += bracket
    else:
        name, colon, port = host.partition(":")
        port = colon + port
    if port and not (port[0] == ":" and (len(port) == 1 or (
            len(port) <= 6 and port[1:].isdigit() and port[1:].isascii()
            and int(port[1:]) <= 65535))):
        return False
    if name in _LOOPBACK_HOSTS or (bound is not None and name == bound):
        return True
    if not name.endswith(".localhost") or len(name) > 253:
        return False
    return all(0 < len(label) <= 63 and not label.strip(_LABEL_CHARS) and label[0] != "-"
               and label[-1] != "-" for label in name[:-len(".localhost")].split("."))


def _read_head(sock, data):
    """(head bytes, the bytes after it), or None when the client left or ran out of time."""
    import re
    import socket
    deadline = time.monotonic() + HEAD_DEADLINE
    while True:
        data = data.lstrip(b"\r\n")
        end = re.search(_BLANK_LINE, data)
        if end is not None:
            if end.start() > HEAD_LIMIT:
                raise HttpError(431, "too_large", "the request head is over the %d byte bound"
                                % HEAD_LIMIT, close=True)
            return data[:end.start()], data[end.end():]
        if len(data) > HEAD_LIMIT:
            raise HttpError(431, "too_large", "the request head is over the %d byte bound"
                            % HEAD_LIMIT, close=True)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None
        try:
            sock.settimeout(remaining)
            chunk = sock.recv(65536)
        except (socket.timeout, OSError):
            return None
        if not chunk:
            return None
        data += chunk


# RFC 9110's token: a method's and a header name's characters (a method: letters only).
_TOKEN_CHARS = _LETTERS + _DIGITS + "!#$%&'*+-.^_`|~"


def _parse_head(head):
    """(method, target, version, headers) of a request head; HttpError 400 when malformed:
    a method of anything but ASCII letters, a header name that is not a token (§25)."""
    lines = head.decode("latin-1").replace("\r\n", "\n").split("\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0] or parts[0].strip(_LETTERS) or (
            parts[2] not in ("HTTP/1.0", "HTTP/1.1")):
        raise HttpError(400, "bad_request", "malformed request line", close=True)
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name.strip(_TOKEN_CHARS):
            raise HttpError(400, "bad_request", "malformed header line", close=True)
        name = name.lower()
        if name in headers and name in ("host", "content-length", "origin"):
            raise HttpError(400, "bad_request", "header '%s' is given twice" % name, close=True)
        headers[name] = value.strip()
    return parts[0], parts[1], parts[2], headers


def body_length(headers):
    """The declared body's length (§10, §25): a Content-Length of ASCII digits only, at
    most BODY_LIMIT; 400 for anything else that is not a number, 413 for a number over
    the bound (read without converting a number of thousands of digits)."""
    length = headers.get("content-length", "0")
    try:
        length = parse_number(length) if length else 0
    except NumberError as exc:
        if not exc.over:
            raise HttpError(400, "bad_request", "Content-Length is not a number", close=True)
        length = BODY_LIMIT + 1
    if length > BODY_LIMIT:
        raise HttpError(413, "too_large", "the request body is over the %d byte bound"
                        % BODY_LIMIT, close=True)
    return length


class Access:
    """Who may use an owner's port (§27): the lease's token, presented as
    `Authorization: Bearer`; a private owner (started by `mcp`) requires it on every
    request, a public one (`serve`) refuses only a wrong one."""

    def __init__(self, token, public):
        self.token, self.public = token, public

    def refusal(self, authorization):
        """Why a request is refused 401, or None."""
        if authorization is None:
            return None if self.public else "this server serves its repository's sessions " \
                "only: present the lease's token (Authorization: Bearer)"
        scheme, _, given = authorization.strip().partition(" ")
        try:
            from _operator import _compare_digest     # hmac's, without hashlib's start-up
        except ImportError:
            from hmac import compare_digest as _compare_digest
        if scheme.lower() != "bearer" or not _compare_digest(given.strip().encode("utf-8"),
                                                             self.token.encode("utf-8")):
            return "the token is not this server's"
        return None

    def admits_bridge(self, authorization):
        return authorization is not None and self.refusal(authorization) is None


def _respond(sock, status, body, head_only, keep_alive, extra=(), stream=False,
             content_type="application/json"):
    """One response head and body. An event stream (§19) has no Content-Length: its body
    ends with the connection."""
    from http import HTTPStatus
    lines = ["HTTP/1.1 %d %s" % (status, HTTPStatus(status).phrase),
             "Date: " + time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime()),
             "Server: majordomus/" + VERSION]
    if stream:
        lines += ["Content-Type: text/event-stream", "X-Accel-Buffering: no"]
    elif status != 204:
        lines += ["Content-Type: " + content_type, "Content-Length: %d" % len(body)]
    lines.append("Cache-Control: no-store")
    lines += ["%s: %s" % pair for pair in extra]
    lines.append("Connection: " + ("keep-alive" if keep_alive and not stream else "close"))
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
                 + (b"" if head_only else body))


def _error_body(code, message, data=None):
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return _pretty({"error": error})


# ---------------------------------------------------------------------------------------
# 20. Markdown to HTML (§22): the subset the AI layer uses, for the pages.
# Blocks: ATX headings (with ids), paragraphs, fenced and indented code, bullet and
# ordered lists, block quotes, GitHub pipe tables, rules. Inline: emphasis, code spans,
# hard breaks, backslash escapes, links, autolinks, images (as links). Everything else
# (raw HTML, entities, setext headings, reference links, strikethrough...) is text.
# Safe by construction: every input character reaching the output is escaped, and a link
# is kept only for http:, https:, mailto: and relative targets, else shown as written.
# Bounded: quotes and lists nest at most _MD_MAX_DEPTH deep and reread a line at most
# about 4 times, a text has at most 10,000 inline tokens, and every scan is linear.
# A page may pass a linker (the pages' UiLinks, handed in): the ids, paths and
# majordomus:// URIs it knows then become links; and a snippet is rendered inline with its
# terms marked.
# ---------------------------------------------------------------------------------------

_MD_PATTERNS = {}           # pattern -> compiled regex, filled on first use
_MD_MAX_DEPTH = 32          # deeper quotes and lists are read as text
_MD_MAX_PIECES = 20000      # a text's first 10,000 inline tokens are read, the rest is text
_MD_SCHEMES = ("http", "https", "mailto")
_MD_TOKENS = (r"(?:\\|(?<! ) {2,})\n"          # a hard line break
              r"|\\[!-/:-@\[-`{-~]|`+|\*+|_+")   # an escaped punctuation, runs of ` * _
_MD_LINK = r"(!?)\[([^\[\]]*)\]\(([^()\n]*(?:\([^()\n]*\)[^()\n]*)*)\)"
_MD_AUTOLINK = r"<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>"
_MD_TARGET = r"""(\S+)(?:\s+"([^"]*)"|\s+'([^']*)')?\s*"""   # what the parentheses hold


def _md_re(pattern):
    """The compiled form of pattern, compiled once, on first use."""
    regex = _MD_PATTERNS.get(pattern)
    if regex is None:
        import re
        regex = _MD_PATTERNS[pattern] = re.compile(pattern)
    return regex


def _md_escape(text):
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


def _md_indent(line):
    return len(line) - len(line.lstrip(" "))


def render_markdown(text, linker=None):
    """Render Markdown text to an HTML fragment; raw HTML in it is shown, never rendered.
    `linker` (UiLinks, or None): the objects named in text and code spans become links."""
    lines = []
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")
    for line in text.rstrip("\n").split("\n"):
        body = line.lstrip(" \t")
        lines.append(line[:len(line) - len(body)].expandtabs(4) + body)  # tabs only in indents
    html = _md_blocks(lines, {"ids": {}, "room": 4 * len(lines) + 1000, "linker": linker}, 0)
    return html + "\n" if html else ""


# Blocks: each reader takes the lines and an index, and returns (html, next index).

def _md_blocks(lines, state, depth, tight=False):
    """Render a container's lines; tight (a tight list's item) leaves paragraphs bare."""
    state["room"] -= len(lines)     # each depth reads its lines again: past the room
    blocks, i, nest = [], 0, depth < _MD_MAX_DEPTH and state["room"] > 0  # nest no more
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if _md_fence_start(line):
            html, i = _md_fenced(lines, i)
        elif _md_indent(line) >= 4:
            html, i = _md_indented(lines, i)
        elif _md_heading_start(line):
            html, i = _md_heading(line, state), i + 1
        elif _md_is_hr(line):
            html, i = "<hr>", i + 1
        elif nest and _md_re(r" {0,3}>").match(line):
            html, i = _md_quote(lines, i, state, depth)
        elif nest and _md_item(line):
            html, i = _md_list(lines, i, state, depth)
        elif _md_table_start(lines, i):
            html, i = _md_table(lines, i, state["linker"])
        else:
            html, i = _md_paragraph(lines, i, tight, state["linker"])
        blocks.append(html)
    return "\n".join(blocks)


def _md_interrupts(lines, i):
    """Whether line i starts a block, ending the paragraph (or table) before it."""
    line = lines[i]
    if line.lstrip()[:1] not in "`~#*-_+>0123456789" and "|" not in line:
        return False                # the common case, decided cheaply
    item = _md_item(line)
    return bool(_md_fence_start(line) or _md_heading_start(line) or _md_is_hr(line)
                or _md_re(r" {0,3}>").match(line) or _md_table_start(lines, i)
                or (item and item[4].strip() and item[1] in (None, 1)))  # as CommonMark


def _md_paragraph(lines, i, tight, linker):
    end = i + 1
    while end < len(lines) and lines[end].strip() and not _md_interrupts(lines, end):
        end += 1
    html = _md_inline("\n".join(line.lstrip() for line in lines[i:end]).rstrip(), linker=linker)
    return (html if tight else "<p>%s</p>" % html), end


def _md_heading_start(line):
    return _md_re(r" {0,3}(#{1,6})(?:[ \t]|$)").match(line)


def _md_heading(line, state):
    match = _md_heading_start(line)
    body = line[match.end():].strip()
    bare = body.rstrip("#")
    if not bare or bare[-1] in " \t":   # a closing run of #s counts only after a space
        body = bare.rstrip()
    level, html = len(match.group(1)), _md_inline(body, linker=state["linker"])
    return '<h%d id="%s">%s</h%d>' % (level, _md_slug(html, state["ids"]), html, level)


def _md_slug(html, ids):
    """A unique id from a heading's text: ASCII letters and digits joined by hyphens."""
    import unicodedata
    text = _md_re(r"<[^>]*>|&[#\w]+;").sub("", html)   # tags and entities are all ours
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    base = "-".join(_md_re(r"[a-z0-9]+").findall(text)) or "section"
    number, slug = ids.get(base, 1), base   # ids: each id given -> last suffix tried on it
    while slug in ids:
        number += 1
        slug = "%s-%d" % (base, number)
    ids[base] = number
    ids.setdefault(slug, 1)
    return slug


def _md_is_hr(line):
    marks = line.replace(" ", "").replace("\t", "")
    return (_md_indent(line) < 4 and len(marks) >= 3 and marks[0] in "-*_"
            and marks == marks[0] * len(marks))


def _md_fence_start(line):
    match = _md_re(r"( {0,3})(`{3,}|~{3,})(.*)").match(line)
    return None if match and match.group(2)[0] == "`" and "`" in match.group(3) else match


def _md_fenced(lines, i):
    match = _md_fence_start(lines[i])
    indent, fence, info = len(match.group(1)), match.group(2), match.group(3).split()
    code, i = [], i + 1
    while i < len(lines):           # an unclosed fence runs to the end of its container
        line, mark = lines[i], lines[i].strip()
        i += 1
        if _md_indent(line) < 4 and len(mark) >= len(fence) and mark == fence[0] * len(mark):
            break
        code.append(line[min(indent, _md_indent(line)):] + "\n")
    lang = ' class="language-%s"' % _md_escape(info[0]) if info else ""
    return "<pre><code%s>%s</code></pre>" % (lang, _md_escape("".join(code))), i


def _md_indented(lines, i):
    code = []
    while i < len(lines) and (_md_indent(lines[i]) >= 4 or not lines[i].strip()):
        code.append(lines[i][4:] + "\n")
        i += 1
    while not code[-1].strip():     # trailing blank lines separate, they are not code
        code.pop()
    return "<pre><code>%s</code></pre>" % _md_escape("".join(code)), i


def _md_quote(lines, i, state, depth):
    body = []
    while i < len(lines):
        marker = _md_re(r" {0,3}> ?").match(lines[i])
        if marker:
            body.append(lines[i][marker.end():])
        elif body[-1].strip() and lines[i].strip() and not _md_interrupts(lines, i):
            body.append(lines[i])   # a lazy continuation of the quoted paragraph
        else:
            break
        i += 1
    return "<blockquote>\n%s\n</blockquote>" % _md_blocks(body, state, depth + 1), i


def _md_item(line):
    """A list item's first line as (marker, number, indent, width, rest), or None."""
    match = _md_re(r"( {0,3})(?:([-+*])|(\d{1,9})([.)]))( +|$)").match(line)
    if match is None:
        return None
    width = match.end()
    if width == len(line) or len(match.group(5)) > 4:   # content starts one space in
        width = match.start(5) + 1
    number = int(match.group(3)) if match.group(3) else None
    return (match.group(2) or match.group(4), number, len(match.group(1)), width,
            line[width:])


def _md_list(lines, i, state, depth):
    item = _md_item(lines[i])
    marker, start, items, loose = item[0], item[1], [], False
    while True:
        body, i = _md_item_body(lines, i, item)
        items.append(body)
        loose = loose or "" in body[1:]     # a blank line inside an item
        after = i
        while after < len(lines) and not lines[after].strip():
            after += 1
        item = after < len(lines) and not _md_is_hr(lines[after]) and _md_item(lines[after])
        if not item or item[0] != marker:   # another marker starts another list
            break
        loose, i = loose or after > i, after
    tag = "ul" if start is None else "ol"
    first = ' start="%d"' % start if start not in (None, 1) else ""
    html = "".join("<li>%s</li>\n" % _md_blocks(body, state, depth + 1, not loose)
                   for body in items)
    return "<%s%s>\n%s</%s>" % (tag, first, html, tag), i


def _md_item_body(lines, i, item):
    """The lines of the item starting at line i, without its indentation, and the end."""
    indent, width, rest = item[2:]
    needed = min(width, indent + 2)     # two spaces nest under any marker, even "10."
    body, i = [rest], i + 1
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            body.append("")
        elif _md_indent(line) >= needed:
            body.append(line[min(_md_indent(line), width):])
        elif body[-1] and not _md_item(line) and not _md_interrupts(lines, i):
            body.append(line)       # a lazy continuation of the item's paragraph
        else:
            break
        i += 1
    while len(body) > 1 and not body[-1]:   # trailing blank lines belong to no item
        body.pop()
        i -= 1
    return body, i


def _md_cells(row):
    """A table row's cells, split on unescaped pipes, without the optional outer ones."""
    row = row.strip()
    row = row[1:] if row.startswith("|") else row
    row = row[:-1] if row.endswith("|") and not row.endswith("\\|") else row
    return [cell.strip().replace("\\|", "|") for cell in _md_re(r"(?<!\\)\|").split(row)]


def _md_table_start(lines, i):
    if i + 1 >= len(lines) or "|" not in lines[i] or "|" not in lines[i + 1]:
        return False
    delimiters = _md_cells(lines[i + 1])
    return (len(delimiters) == len(_md_cells(lines[i]))
            and all(_md_re(r":?-+:?").fullmatch(cell) for cell in delimiters))


def _md_table(lines, i, linker):
    aligns = []
    for cell in _md_cells(lines[i + 1]):   # the only style written, from fixed values
        side = {":-": "left", "-:": "right", "::": "center"}.get(cell[0] + cell[-1])
        aligns.append(' style="text-align:%s"' % side if side else "")
    rows = [_md_row(lines[i], aligns, "th", linker)]
    i += 2
    while i < len(lines) and lines[i].strip() and not _md_interrupts(lines, i):
        rows.append(_md_row(lines[i], aligns, "td", linker))
        i += 1
    body = "<tbody>\n%s\n</tbody>\n" % "\n".join(rows[1:]) if rows[1:] else ""
    return ('<div class="table-wrap"><table>\n<thead>\n%s\n</thead>\n%s</table></div>'
            % (rows[0], body)), i


def _md_row(line, aligns, tag, linker):
    cells = (_md_cells(line) + [""] * len(aligns))[:len(aligns)]   # the header's width
    return "<tr>%s</tr>" % "".join("<%s%s>%s</%s>" % (
        tag, align, _md_inline(cell, linker=linker), tag) for cell, align in zip(cells, aligns))


# Links: the scheme decides, and anything not plainly allowed is refused.

def _md_anchor(url, label, title="", css=""):
    """An <a> to url around label (HTML), or None when url is not a target we link."""
    if not url.isprintable() or " " in url or url.replace("\\", "/").startswith("//"):
        return None     # browsers drop controls and blanks, read \ as /, and // is a host
    end = _md_re(r"[:/?#]").search(url)
    head = url[:end.start()] if end else url
    scheme = end is not None and end.group() == ":"
    if "&" in head or (scheme and head.lower() not in _MD_SCHEMES):
        return None     # "&" could be an entity spelling a colon: javascript&#58;
    return '<a href="%s"%s%s%s>%s</a>' % (
        _md_escape(url), ' title="%s"' % _md_escape(title) if title else "",
        ' class="%s"' % css if css else "", ' rel="noopener noreferrer"' if scheme else "",
        label)


# Inline content: one left-to-right scan, then emphasis matched over a delimiter stack.

def _md_inline(text, links=True, linker=None, marks=None):
    return _MdInline(text, links, linker, marks).render()


def render_snippet(text, marks):
    """A search hit's snippet (one content line) as inline HTML: its Markdown read inline
    (a leading heading, list or quote marker dropped; a link shows its text only, inside a
    hit that is a link already), the words whose folded term is in `marks` in <mark>."""
    lead = _md_re(r" {0,3}(?:#{1,6}[ \t]+|>[ \t]?|[-+*][ \t]+|\d{1,9}[.)][ \t]+)+").match(text)
    return _md_inline(text[lead.end():] if lead else text, marks=marks)


def _md_marked(text, marks):
    """Text escaped, each word whose folded term (§21) is among `marks` in <mark>."""
    out, pos = [], 0
    for match in _md_re(_WORD).finditer(text):
        if fold_term(match.group().casefold()) in marks:
            out.append("%s<mark>%s</mark>" % (_md_escape(text[pos:match.start()]),
                                             _md_escape(match.group())))
            pos = match.end()
    out.append(_md_escape(text[pos:]))
    return "".join(out)


class _MdDelimiter:
    """A run of '*' or '_': its unmatched characters, between the tags it matched."""
    __slots__ = ("char", "count", "closing", "opening")

    def __init__(self, char, count):
        self.char, self.count, self.closing, self.opening = char, count, "", ""

    def __str__(self):
        return self.closing + self.char * self.count + self.opening


class _MdInline:
    """The inline parser of one paragraph, heading, table cell or link text."""

    def __init__(self, text, links, linker=None, marks=None):
        self.text, self.links = text, links     # links=False inside a link's text
        # linker: ids, paths and URIs become links (never inside a link's text); marks: a
        # snippet's wanted terms are marked and its links shown as their text
        self.linker, self.marks = (linker if links else None), marks
        self.out = []           # escaped HTML strings and _MdDelimiter runs, in order
        self.openers = []       # runs that may still open emphasis, innermost last
        self.open_count = {"*": 0, "_": 0}      # lets a closer skip a hopeless search
        self.ticks = None       # backtick run length -> starts, last first; built on demand

    def render(self):
        """Escape the text between tokens; a token is handled whole, or not found."""
        text, pos = self.text, 0
        tokens = _md_re(_MD_TOKENS + "|" + _MD_LINK + "|" + _MD_AUTOLINK if self.links
                        else _MD_TOKENS)
        while len(self.out) < _MD_MAX_PIECES:   # then the rest is shown as written
            match = tokens.search(text, pos)
            if match is None:
                break
            self.out.append(self.plain(pos, match.start()))
            pos = self.token(match)
        self.out.append(self.plain(pos, len(text)))
        return "".join(map(str, self.out))

    def plain(self, start, end):
        """The text between tokens, escaped; its terms marked, or the objects it names
        linked (a name never runs on into the tokens around it)."""
        text = self.text
        if self.marks is not None:
            return _md_marked(text[start:end], self.marks)
        if self.linker is not None:
            return self.linker.text_html(text[start:end], text[start - 1:start],
                                         text[end:end + 1])
        return _md_escape(text[start:end])

    def token(self, match):
        found = match.group()
        first = found[0]
        if first in "*_":
            self.delimiter(match.start(), match.end())
        elif found.endswith("\n"):  # a backslash or two spaces before it: a hard break
            self.out.append("<br>\n")
        elif first == "\\":
            self.out.append(_md_escape(found[1]))
        elif first == "`":
            return self.code(match.start(), match.end())
        elif first == "<":
            url = match.group(4)
            self.out.append(_md_escape(url) if self.marks is not None else
                            self.own_anchor(url, _md_escape(url))
                            or _md_anchor(url, _md_escape(url)) or _md_escape(found))
        else:
            self.link(*match.group(0, 1, 2, 3))
        return match.end()

    def code(self, start, end):
        text = self.text
        if self.ticks is None:
            self.ticks = {}
            for begin, finish in reversed([run.span() for run in _md_re(r"`+").finditer(text)]):
                self.ticks.setdefault(finish - begin, []).append(begin)
        starts = self.ticks.get(end - start, [])
        while starts and starts[-1] < end:
            starts.pop()
        if not starts:              # no closing run of the same length: literal backticks
            self.out.append(text[start:end])
            return end
        close = starts.pop()
        code = text[end:close].replace("\n", " ")
        if code[:1] == code[-1:] == " " and code.strip(" "):
            code = code[1:-1]
        html = "<code>%s</code>" % (_md_escape(code) if self.marks is None
                                    else _md_marked(code, self.marks))
        self.out.append(self.own_anchor(code.strip(), html) or html)
        return close + end - start

    def own_anchor(self, name, html):
        """A link around html to the page of the object `name` (an id, a path, a URI) names,
        or None (no linker, or nothing known by that name)."""
        href = self.linker.href(name) if self.linker is not None else None
        return '<a class="ref" href="%s">%s</a>' % (_md_escape(href), html) if href else None

    def link(self, found, image, label, inside):
        target, html = _md_re(_MD_TARGET).fullmatch(inside), None
        if target:                  # an image is never loaded: it becomes a link to it
            url, title = target.group(1), target.group(2) or target.group(3) or ""
            label = (_md_escape(label or url) if image
                     else _md_inline(label, False, marks=self.marks))
            if self.marks is not None:  # a snippet: the link's text, the hit links already
                html = label
            elif url.startswith("majordomus://"):
                html = self.own_anchor(url, label)
            else:
                html = _md_anchor(url, label, title, "image" if image else "")
        self.out.append(html or _md_escape(found))  # refused: shown as written

    def delimiter(self, start, end):
        text, char = self.text, self.text[start]
        before, after = text[start - 1:start] or " ", text[end:end + 1] or " "
        left = not after.isspace() and (after.isalnum() or not before.isalnum())
        right = not before.isspace() and (before.isalnum() or not after.isalnum())
        if char == "_":             # no intraword emphasis: snake_case_names stay
            left, right = (left and (not right or not before.isalnum()),
                           right and (not left or not after.isalnum()))
        if not (left or right):
            self.out.append(text[start:end])
            return
        run = _MdDelimiter(char, end - start)
        self.out.append(run)
        while right and run.count and self.open_count[char]:   # close the nearest openers
            opener = self.openers.pop()
            self.open_count[opener.char] -= 1
            if opener.char != char:
                continue            # crossed by this span, so it stays literal
            used = 2 if run.count >= 2 and opener.count >= 2 else 1
            opener.count, run.count = opener.count - used, run.count - used
            opener.opening = ("<strong>" if used == 2 else "<em>") + opener.opening
            run.closing += "</strong>" if used == 2 else "</em>"
            if opener.count:
                self.openers.append(opener)
                self.open_count[char] += 1
        if left and run.count:
            self.openers.append(run)
            self.open_count[char] += 1


# ---------------------------------------------------------------------------------------
# 21. The pages (§22): server-rendered HTML of the current generation, a projection like
#    the routes (a page never reads a file itself), memoised per generation where it pays;
#    one stylesheet and one small script from the archive; every repository value escaped;
#    the safety headers on every answer.
# ---------------------------------------------------------------------------------------

UI_PREFIX = "/ui"
UI_EVENTS = "/ui/events"
UI_PAGE = 50              # objects a kind page shows
UI_CAPABILITIES = 100     # declarative capabilities a capabilities page shows
UI_STATIC = {"majordomus.css": "text/css; charset=utf-8",
             "live.js": "text/javascript; charset=utf-8"}
UI_HEADERS = [
    ("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; "
     "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; "
     "frame-ancestors 'none'"),
    ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer")]
_HTML = "text/html; charset=utf-8"
# Where a page's banner and state go, filled in when it is answered (UiPages.html): no
# repository text can hold either (every value is escaped, raw HTML shown as text).
_UI_BANNER, _UI_STATE = "<!--mj:banner-->", "<!--mj:state-->"


class Page:
    """An answer that is not the JSON of a capability: a page, a stylesheet, a redirect."""

    __slots__ = ("status", "body", "content_type", "headers")

    def __init__(self, status, body, content_type=_HTML, headers=()):
        self.status, self.body, self.content_type = status, body, content_type
        self.headers = UI_HEADERS + list(headers)


def _h(value):
    """Text made safe for HTML, in content and in quoted attributes alike."""
    return (str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


def _q(value):
    from urllib.parse import quote
    return quote(value, safe="")


def wants_html(accept):
    """Does an Accept header rank text/html above application/json (what a browser sends)?"""
    def quality(wanted):
        best, rank = 0.0, -1
        for part in (accept or "").split(","):
            media, _, params = part.strip().partition(";")
            media = media.strip().lower()
            kind = wanted.split("/")[0] + "/*"
            order = 2 if media == wanted else 1 if media == kind else 0 if media == "*/*" else -1
            if order < 0 or order < rank:
                continue
            q = 1.0
            for param in params.split(";"):
                name, _, value = param.strip().partition("=")
                if name.strip() == "q":
                    try:
                        q = float(value)
                    except ValueError:
                        q = 0.0
            if order > rank or q > best:
                best, rank = q, order
        return best
    return quality("text/html") > quality("application/json")


_UI_DATA = {}   # the stylesheet and the script, read from the archive once per process


def ui_static(name):
    if name not in _UI_DATA:
        _UI_DATA[name] = read_embedded("share/ui/" + name)
    return _UI_DATA[name]


# The fields whose values name other objects (their key paths, list indices left out), and
# the kinds a name there is looked for first; and the fields whose values are paths of the
# repository, linked to what governs them (the context page).
UI_REFERENCES = {"depends_on": (), "supersedes": ("context",), "superseded_by": (),
                 "profile": ("profile",), "profiles.default": ("profile",),
                 "milestone": ("milestone",), "serves": ()}
UI_PLACES = ("tracks", "paths")
_UI_FIELDS = tuple(UI_REFERENCES) + UI_PLACES
_UI_REFERENCE_KEYS = frozenset(field.partition(".")[0] for field in UI_REFERENCES)
UI_RENDERED = 256         # rendered bodies a generation's linker keeps
UI_CONTEXT_KEPT = 64      # context pages a generation keeps (the last asked)
_UI_NAME = (r"majordomus://[^\s<>()\[\]{}\"'`]+|ADR[ -]?([0-9]{1,6})(?![A-Za-z0-9_])"
            r"|[A-Za-z0-9][A-Za-z0-9_.@-]*")
UI_ADR_SECTION = "adrs"     # the manifest's section whose files are numbered decisions


def ui_object_href(obj):
    return ui_object_href_uri(obj.uri)


def ui_object_href_uri(uri):
    return "%s/object?uri=%s" % (UI_PREFIX, _q(uri))


def ui_context_href(path):
    return "%s/context?path=%s" % (UI_PREFIX, _q(path))


class UiLinks:
    """The one linker of the pages, made once per generation from its index: what a name
    in a value or a body means. A name is an identity (`id@N`; a versioned identity's `id`
    alone names its highest N), the path of a file that is one object, or a majordomus://
    URI; a name nothing carries is no link (shown as written). `own`: the object a page
    shows, never linked to itself (seen_from)."""

    def __init__(self, index):
        self.index, self.own = index, None
        # identity -> its object; `twins`: the identities several objects carry (kinds
        # apart), each with all of them. Few lists are made: a large layer's index is read
        # here once a generation, on the first page that links.
        names, twins, paths, newest, versions, decisions = {}, {}, {}, {}, {}, {}
        for obj in index.objects:
            identity = obj.identity
            if names.setdefault(identity, obj) is not obj:
                twins.setdefault(identity, [names[identity]]).append(obj)
            if paths.setdefault(obj.path, obj) is not obj:
                paths[obj.path] = None                  # a file of several objects
            if "@" in identity:
                base, _, number = identity.rpartition("@")
                number = number_or(number, None)       # ASCII digits (a name from outside)
                if number is not None and base:
                    key = (obj.kind, base)
                    seen = newest.get(key)
                    if seen is None:
                        newest[key] = (number, obj)
                    else:
                        versions.setdefault(key, [seen]).append((number, obj))
                        if number > seen[0]:
                            newest[key] = (number, obj)
            if obj.provenance.get("section") == UI_ADR_SECTION:
                # "ADR 3": the decision whose file, in the layer's adrs section, is numbered 3
                number = number_or(obj.path.rpartition("/")[2].partition("-")[0], None)
                if number is not None:
                    decisions.setdefault(number, obj)
        for (kind, base), (_, obj) in newest.items():   # `id` alone: its highest version
            other = names.setdefault(base, obj)
            if other is not obj:
                if all(o.kind == kind for o in twins.get(base, [other])):
                    twins.setdefault(base, [other]).append(obj)
        for found in versions.values():
            found.sort(key=lambda pair: pair[0])
        self.names, self.twins, self.versions, self.decisions = names, twins, versions, decisions
        self.paths = paths
        self._cited = []          # [{uri: [(field, object)]}] once cited_by has read the index
        self._rendered = {}       # (URI, Markdown) -> its HTML, the first UI_RENDERED kept

    def seen_from(self, obj):
        """This linker on the page of `obj` (which is not linked to itself)."""
        view = object.__new__(UiLinks)
        view.__dict__.update(self.__dict__)
        view.own = obj
        return view

    def target(self, name, kinds=()):
        """The object a name names (kinds: looked for first), or None (unknown, or two
        objects of kinds not preferred carry it)."""
        if name.startswith("majordomus://"):
            return self.index.by_uri.get(name)
        found = self.twins.get(name)
        if found is None:
            return self.names.get(name) or self.paths.get(name)
        return next((obj for obj in found if obj.kind in kinds), None)

    def href(self, name, kinds=()):
        """The page of what a name in a body names (an id with a dot or an @, a path, a
        URI; a bare word is not taken for a name there), or None."""
        if "." not in name and "@" not in name and "/" not in name:
            return None
        obj = self.target(name, kinds)
        if obj is None and self.own is not None and "/" in name and "://" not in name:
            import posixpath     # a path relative to the page's own file: ../README.md
            obj = self.paths.get(posixpath.normpath(posixpath.join(
                posixpath.dirname(self.own.path), name)))
        return ui_object_href(obj) if obj is not None and obj is not self.own else None

    def text_html(self, text, before="", after=""):
        """Running text escaped, each name it holds whole (not inside a word, a path or a
        URL) linked to its object's page; `before` and `after`: the characters around the
        text in its source (a name may not continue across them either)."""
        out, pos = [], 0
        for match in _md_re(_UI_NAME).finditer(text):
            name, start = match.group(), match.start()
            name = name.rstrip(".,;:!?)") if name.startswith("majordomus:") else name.rstrip(".")
            end = start + len(name)
            left = text[start - 1] if start else before
            right = text[match.end()] if match.end() < len(text) else after
            if (left and (left.isalnum() or left in "_./@:-\\")) or (
                    right and (right.isalnum() or right in "_/@-")):
                continue
            if match.group(1):
                obj = self.decisions.get(int(match.group(1)))
                href = ui_object_href(obj) if obj is not None and obj is not self.own else None
            else:
                href = self.href(name)
            if href:
                out.append('%s<a class="ref" href="%s">%s</a>' % (
                    _h(text[pos:start]), _h(href), _h(name)))
                pos = end
        out.append(_h(text[pos:]))
        return "".join(out)

    def value_html(self, field, value):
        """A metadata value at key path `field` (list indices left out): a scalar as text, a
        list or mapping as compact JSON; a string that names an object links to its page,
        and a path of UI_PLACES to what governs it. Walked with a stack, not recursion (a
        tree any number of levels deep, §25); a key path is followed only as far as a
        field of UI_REFERENCES or UI_PLACES could lie."""
        out, pending = [], [(field, value, False)]
        while pending:
            item = pending.pop()
            if isinstance(item, str):
                out.append(item)
                continue
            field, value, nested = item
            if isinstance(value, (list, dict)):
                pieces = ["[" if isinstance(value, list) else "{"]
                entries = ([(None, child) for child in value] if isinstance(value, list)
                           else value.items())
                for number, (key, child) in enumerate(entries):
                    if number:
                        pieces.append(",")
                    inner = field
                    if key is not None:
                        pieces.append("%s:" % _h(json_compact(key)))
                        inner = "%s.%s" % (field, key) if field else ""
                        if not any(f == inner or f.startswith(inner + ".")
                                   for f in _UI_FIELDS):
                            inner = ""
                    pieces.append((inner, child, True))
                pieces.append("]" if isinstance(value, list) else "}")
                pending.extend(reversed(pieces))
            else:
                out.append(self._scalar_html(field, value, nested))
        return "".join(out)

    def _scalar_html(self, field, value, nested):
        if not isinstance(value, str):
            return _h(json_compact(value) if nested or render_scalar(value) is None
                      else render_scalar(value))
        if nested:      # the quotes stay outside the link, escapes inside it as written
            text = json_compact(value)
            return '"%s"' % self._scalar_html(field, value, False) if (
                text[1:-1] == value) else _h(text)
        href = None
        if field in UI_PLACES and value:
            href = ui_context_href(value)
        elif field in UI_REFERENCES:
            obj = self.target(value, UI_REFERENCES[field])
            href = ui_object_href(obj) if obj is not None and obj is not self.own else None
        else:
            href = self.href(value)
        return '<a class="ref" href="%s">%s</a>' % (_h(href), _h(value)) if href else _h(value)

    def rendered(self, uri, text):
        """render_markdown(text) as seen from the object at `uri` (its relative paths, never
        itself), kept: the documents of a chain recur from one path's page to the next."""
        key = (uri, text)
        html = self._rendered.get(key)
        if html is None:
            html = render_markdown(text, self.seen_from(self.index.by_uri.get(uri)))
            if len(self._rendered) < UI_RENDERED:
                self._rendered[key] = html
        return html

    def versions_of(self, obj):
        """[(N, object)] of every version of a versioned object (`id@N`), oldest first."""
        base, _, number = obj.identity.rpartition("@")
        number = number_or(number, None)
        if number is None:
            return []
        return self.versions.get((obj.kind, base)) or [(number, obj)]

    def cited_by(self, obj):
        """[(field, object)] of the objects whose reference fields (UI_REFERENCES) name
        obj, in index order; the whole index is read once, on first use."""
        if not self._cited:
            cited = {}
            for source in self.index.objects:
                if _UI_REFERENCE_KEYS.isdisjoint(source.metadata):
                    continue
                for field, value in _reference_values(source.metadata):
                    found = self.target(value, UI_REFERENCES[field])
                    if found is not None and found is not source:
                        entry = cited.setdefault(found.uri, [])
                        if (field, source) not in entry:
                            entry.append((field, source))
            self._cited[:] = [cited]
        return self._cited[0].get(obj.uri, [])


def _reference_values(metadata, prefix="", fields=UI_REFERENCES):
    """(field, string) of the values a mapping holds at the key paths `fields` (by
    default the reference fields, UI_REFERENCES), a list's items each."""
    for key, value in metadata.items():
        field = prefix + str(key)
        if field in fields:
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str) and item:
                    yield field, item
        elif isinstance(value, dict) and any(f.startswith(field + ".") for f in fields):
            yield from _reference_values(value, field + ".", fields)


def ui_links(gen):
    def build():
        with _Building():       # tens of thousands of small lists, no cycle among them
            return UiLinks(gen.index)
    return gen.memo("ui.links", build)


class UiPages:
    """The pages of one generation (§22)."""

    def __init__(self, gen):
        self.gen = gen
        self._objects = {}        # object URI -> its page (rendered on first request)

    # -- routing ------------------------------------------------------------------------

    def answer(self, method, path, query, host):
        if method == "POST":
            return self.error(405, "Not served", "%s %s is not served; pages are read with "
                              "GET." % (method, path), [("Allow", "GET, HEAD")])
        params = _ui_params(query)
        if path == UI_PREFIX:
            return Page(303, b"", headers=[("Location", UI_PREFIX + "/")])
        if path == UI_PREFIX + "/":
            page = self.gen.memo("ui.overview." + host, lambda: self.overview(host))
            live = self.gen.live
            return self.html(page.replace(PEERS_PLACE, peers_board(live.board, self.gen) if live else "",
                                          1))
        if path.startswith(UI_PREFIX + "/static/"):
            name = path[len(UI_PREFIX + "/static/"):]
            if name in UI_STATIC:
                return Page(200, ui_static(name), UI_STATIC[name])
        elif path.startswith(UI_PREFIX + "/kind/"):
            return self.kind(path[len(UI_PREFIX + "/kind/"):], params)
        elif path == UI_PREFIX + "/object":
            return self.object(params.get("uri", ""))
        elif path == UI_PREFIX + "/search":
            return self.search(params)
        elif path in (UI_PREFIX + "/context", UI_PREFIX + "/brief"):
            # one page: the brief with the explain beside it, kept for its arguments
            key = tuple(params.get(n, "") for n in ("path", "intent", "provider", "audience"))
            return self.gen.recent("ui.context", UI_CONTEXT_KEPT, key,
                                   lambda: self.context(params))
        elif path == UI_PREFIX + "/diagnostics":
            return self.html(self.gen.memo("ui.diagnostics", self.diagnostics))
        elif path == UI_PREFIX + "/capabilities":
            return self.capabilities(params.get("after"))
        return self.error(404, "Not found", "No page is served at %s." % path)

    def html(self, text, status=200):
        """A page as it is answered now: its banner and state are those of this moment (a
        page is kept for the generation; the layer may turn stale meanwhile, §25)."""
        state = self.state()
        text = text.replace(_UI_BANNER, self.banner(), 1).replace(
            _UI_STATE, '<span class="badge state-%s">%s</span>' % (state, state))
        return Page(status, text.encode("utf-8"))

    def banner(self):
        """What every page says first while the layer cannot be read (§25): that it cannot
        and why, or since when it could not be read again and which generation is
        served."""
        gen, live = self.gen, self.gen.live
        if gen.broken is not None:
            return ('<section class="alert banner" role="alert"><p><strong>The layer cannot '
                    'be read</strong>: <code>%s</code></p><p>Nothing of it is served until it '
                    'can be: this server follows its files and serves the layer as soon as '
                    'they are fixed.</p></section>\n' % _h(gen.broken))
        if live is None or live.stale is None:
            return ""
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(live.stale_since or 0))
        return ('<section class="alert banner" role="alert"><p><strong>The layer could not '
                'be read again</strong> since %s: <code>%s</code></p><p>Still serving '
                'generation %d, the last that could be read.</p></section>\n'
                % (since, _h(live.stale), gen.number))

    def error(self, status, title, message, headers=()):
        page = self.html(self.layout(title, "<h1>%s</h1><p class=\"lede\">%s</p><p><a href="
                                     "\"%s/\">Back to the overview</a></p>"
                                     % (_h(title), _h(message), UI_PREFIX)), status)
        page.headers += list(headers)
        return page

    # -- the frame every page shares ----------------------------------------------------

    def layout(self, title, main, current=None):
        gen, index = self.gen, self.gen.index
        name = _h(os.path.basename(gen.root.rstrip("/")) or gen.root)
        links = [("/", "Overview"), ("/diagnostics", "Diagnostics (%d)" % len(index.diagnostics)),
                 ("/capabilities", "Capabilities")]
        nav = "".join('<li><a href="%s%s"%s>%s</a></li>' % (
            UI_PREFIX, href, ' aria-current="page"' if href == current else "", _h(label))
            for href, label in links)
        live = "on" if gen.live is not None and gen.live.watch else "off"
        return (
            '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<title>%s \u00b7 %s \u00b7 majordomus</title>\n'
            '<link rel="stylesheet" href="%s/static/majordomus.css">\n'
            '<script src="%s/static/live.js" defer></script>\n</head>\n'
            '<body data-generation="%d" data-live="%s">\n'
            '<a class="skip" href="#main">Skip to the content</a>\n'
            '<header class="top"><nav aria-label="Pages">'
            '<a class="brand" href="%s/">majordomus <span>%s</span></a><ul>%s</ul>'
            '<form role="search" aria-label="Quick search" action="%s/search" method="get">'
            '<label class="visually-hidden" for="mj-top-q">Search the layer</label>'
            '<input id="mj-top-q" type="search" name="q" placeholder="Search the layer">'
            '<button type="submit">Search</button></form></nav></header>\n'
            '<main id="main">\n%s%s\n</main>\n'
            '<footer><p>Generation %d \u00b7 state %s'
            ' \u00b7 read-only <span id="live-note" aria-live="polite"></span></p></footer>\n'
            '</body>\n</html>\n' % (
                _h(title), name, UI_PREFIX, UI_PREFIX, gen.number, live, UI_PREFIX, name, nav,
                UI_PREFIX, _UI_BANNER, main, gen.number, _UI_STATE))

    def state(self):
        live = self.gen.live
        return "stale" if live is not None and live.stale and self.gen.broken is None else (
            self.gen.index.state)

    def object_link(self, obj):
        return '<a href="%s">%s</a>' % (_h(ui_object_href(obj)), _h(obj.title or obj.identity))

    # -- the pages ----------------------------------------------------------------------

    def overview(self, host):
        gen, index = self.gen, self.gen.index
        name = os.path.basename(gen.root.rstrip("/")) or gen.root
        parts = ['<h1>%s</h1>' % _h(name),
                 '<p class="lede">The AI layer of this repository, as the MCP server, the REST '
                 'API and the command line serve it. Nothing here writes anything.</p>']
        if index.diagnostics:
            # §26: when the context tree does not validate, the state says what follows
            context = ('<p><strong>%s</strong></p>' % _h(context_problems_line(index.context))
                       if index.context.problems else "")
            parts.append('<section class="alert" aria-labelledby="mj-diag"><h2 id="mj-diag">%d '
                         'diagnostic(s)</h2>%s%s<p><a href="%s/diagnostics">Every diagnostic, '
                         'grouped by code</a></p></section>' % (
                             len(index.diagnostics), context,
                             _diagnostic_table(index.diagnostics[:100]), UI_PREFIX))
        summary = gen.registry.summary
        cards = [("State", _UI_STATE),
                 ("Objects", "%d" % len(index.objects)),
                 ("Diagnostics", "%d" % len(index.diagnostics)),
                 ("Branch", _h(gen.branch or "(none)")),
                 ("HEAD", "<code>%s</code>" % _h(gen.head[:12]) if gen.head else "(none)"),
                 ("Generation", "%d" % gen.number)]
        parts.append('<dl class="cards">%s</dl>' % "".join(
            '<div class="card"><dt>%s</dt><dd>%s</dd></div>' % (label, value)
            for label, value in cards))
        parts.append('<h2 id="mj-brief">What governs a path</h2><p>Before you change a file '
                     'or create one: the documents that govern it and why each applies, the '
                     'rules in force, and what relates to what you are about to do.</p>'
                     + brief_form("", ""))
        # The peers board (§27), made for each request: after the state and the path form,
        # before the kinds (who else is working here is read before what is served).
        parts.append(PEERS_PLACE)
        rows = "".join('<tr><td><a href="%s/kind/%s">%s</a></td><td class="num">%d</td></tr>'
                       % (UI_PREFIX, _q(kind), _h(kind), count)
                       for kind, count in index.kinds.items())
        parts.append('<h2 id="mj-kinds">Kinds</h2><div class="table-wrap narrow"><table aria-labelledby='
                     '"mj-kinds"><thead><tr><th scope="col">Kind</th><th scope="col" class="num">'
                     'Objects</th></tr></thead><tbody>%s</tbody></table></div>'
                     % (rows or '<tr><td colspan="2">No object.</td></tr>'))
        parts.append('<h2 id="mj-caps">Capabilities</h2><p>%d capabilities: %d builtin, %d '
                     'declarative; %d MCP tools, %d MCP resources, %d REST routes, %d CLI '
                     'commands. <a href="%s/capabilities">The registry</a></p>' % (
                         summary["total"], summary["builtin"], summary["declarative"],
                         summary["mcp_tools"], summary["mcp_resources"], summary["http_routes"],
                         summary["cli_commands"], UI_PREFIX))
        url = {"mcpServers": {"majordomus": {"type": "http", "url": "http://%s/mcp" % host}}}
        stdio = {"mcpServers": {"majordomus": {"command": "python3", "args": [
            "majordomus.pyz", "mcp", "--repo", "."]}}}
        parts.append('<h2 id="mj-connect">Connect an MCP client</h2><p>To this server, by URL '
                     '(it follows the layer while it runs):</p><pre><code>%s</code></pre>'
                     '<p>Or spawned by the client for each session, from <code>.mcp.json</code> '
                     'at the repository root, with <code>majordomus.pyz</code> beside it:</p>'
                     '<pre><code>%s</code></pre>' % (_h(json_pretty(url)),
                                                      _h(json_pretty(stdio))))
        return self.layout("Overview", "\n".join(parts), "/")

    def kind(self, kind, params):
        from urllib.parse import unquote
        kind = unquote(kind)
        index = self.gen.index
        if kind not in index.kinds:
            return self.error(404, "Not found", "This repository has no object of kind '%s'."
                              % kind)
        members = self.gen.memo("ui.kind." + kind,
                                lambda: [o for o in index.objects if o.kind == kind])
        import bisect
        keys = self.gen.memo("ui.kind.keys." + kind, lambda: [o.uri for o in members])
        columns, named, folder = self.gen.memo("ui.kind.columns." + kind,
                                               lambda: _kind_columns(members))
        if params.get("before"):
            end = bisect.bisect_left(keys, params["before"])
            start = max(0, end - UI_PAGE)
        else:
            start = bisect.bisect_right(keys, params["after"]) if params.get("after") else 0
            end = start + UI_PAGE
        chosen = members[start:end]
        links = ui_links(self.gen)
        rows = "".join(
            '<tr><td class="object">%s%s<div class="path">%s</div></td>%s<td>%s</td></tr>' % (
                self.object_link(o), '<div class="ident"><code>%s</code></div>'
                % _h(o.identity) if named else "", _path_html(o.path[len(folder):]), "".join(
                    '<td class="key">%s</td>' % _key_html(links, field, o.metadata.get(field))
                    for field in columns), _h(o.description or ""))
            for o in chosen)
        pager = []
        if start > 0 and chosen:
            pager.append('<a rel="prev" href="%s/kind/%s?before=%s">Previous %d</a>'
                         % (UI_PREFIX, _q(kind), _q(chosen[0].uri), UI_PAGE))
        if end < len(members) and chosen:
            pager.append('<a rel="next" href="%s/kind/%s?after=%s">Next %d</a>'
                         % (UI_PREFIX, _q(kind), _q(chosen[-1].uri), UI_PAGE))
        heads = "".join('<th scope="col">%s</th>' % _h(_field_label(field)) for field in columns)
        body = ('<p class="crumbs"><a href="%s/">Overview</a> / kind</p><h1>%s</h1>'
                '<p class="lede">%d object(s) of kind %s; %d to %d shown.</p>'
                '<div class="table-wrap"><table class="stack listing"><thead><tr>'
                '<th scope="col">Title, %spath%s</th>%s<th scope="col">Description</th>'
                '</tr></thead><tbody>%s</tbody></table></div>'
                '<nav class="pager" aria-label="Pages of this kind">%s</nav>%s' % (
                    UI_PREFIX, _h(kind), len(members), _h(kind), start + 1 if chosen else 0,
                    start + len(chosen), "identity and " if named else "",
                    " under <code>%s</code>" % _h(folder) if folder else "", heads, rows,
                    "".join(pager), '<h2 id="mj-governs">What governs a path</h2>'
                    + brief_form("", "")))
        return self.html(self.layout("Kind %s" % kind, body))

    def object(self, uri):
        page = self._objects.get(uri)
        if page is None:
            obj = self.gen.index.by_uri.get(uri)
            if obj is None:
                return self.error(404, "Not found", "Nothing is served at %s." % (uri or "(no "
                                                                                 "URI)"))
            page = self._render_object(obj)
            if len(self._objects) < 256:
                self._objects[uri] = page
        return self.html(page)

    def _render_object(self, obj):
        registry = self.gen.registry
        links = ui_links(self.gen).seen_from(obj)
        parts = ['<p class="crumbs"><a href="%s/">Overview</a> / <a href="%s/kind/%s">%s</a>'
                 '</p><h1>%s</h1>' % (UI_PREFIX, UI_PREFIX, _q(obj.kind), _h(obj.kind),
                                      _h(obj.title or obj.identity))]
        parts.append(self._lead(obj, links))
        parts.append('<div class="copy"><label class="visually-hidden" for="mj-uri">URI</label>'
                     '<input id="mj-uri" type="text" readonly value="%s" size="60" data-copy '
                     'aria-label="the URI"></div>' % _h(obj.uri))
        origin = obj.provenance
        parts.append('<h2 id="mj-content">Content</h2>')
        if obj.media_type == "text/markdown":
            parts.append('<div class="content">%s</div>' % render_markdown(
                obj.body if obj.body is not None else obj.content, links))
        else:
            parts.append('<pre><code>%s</code></pre>' % _h(obj.content))
        parts.append('<details><summary>The exact source (%d bytes)</summary><pre><code>%s'
                     '</code></pre></details>' % (origin["bytes"], _h(obj.content)))
        facts = [("Kind", _h(obj.kind)), ("Identity", "<code>%s</code>" % _h(obj.identity)),
                 ("Path", "<code>%s</code>" % _h(origin["path"])),
                 ("Class", _h(origin["source_class"])),
                 ("Section", _h(origin.get("section", "(none)"))),
                 ("Media type", _h(obj.media_type)), ("Bytes", "%d" % origin["bytes"])]
        if "member" in origin:
            facts.append(("Member", "<code>%s</code>" % _h(origin["member"])))
        parts.append('<h2 id="mj-prov">Provenance</h2>' + _facts(facts, "mj-prov"))
        if obj.metadata:
            parts.append('<h2 id="mj-meta">Metadata</h2>' + _facts(
                [(_h(key), _metadata_value(value, links, key))
                 for key, value in obj.metadata.items()], "mj-meta"))
        descriptor = registry.by_uri[obj.uri]
        mcp = descriptor["exposure"]["mcp"]
        getter = registry.by_id["objects.get"]["exposure"]
        served = [("MCP resource", "<code>resources/read</code> <code>%s</code>"
                   % _h(json_compact({"uri": mcp["resource"]["uri"]}))),
                  ("MCP tool", "<code>%s</code> <code>%s</code>" % (
                      _h(getter["mcp"]["tool"]), _h(json_compact({"uri": obj.uri})))),
                  ("REST", '<a href="%s?uri=%s"><code>GET %s?uri=%s</code></a>' % (
                      _h(getter["http"]["path"]), _q(obj.uri), _h(getter["http"]["path"]),
                      _h(_q(obj.uri)))),
                  ("CLI", "<code>majordomus %s %s</code>" % (
                      _h(" ".join(getter["cli"]["path"])), _h(_shell_word(obj.uri))))]
        if "prompt" in mcp:
            body = obj.body if obj.body is not None else obj.content
            arguments = placeholders(body)
            prompt = registry.by_id["prompts.get"]["exposure"]
            served.append(("MCP prompt", "<code>prompts/get</code> <code>%s</code>; arguments: %s"
                           % (_h(json_compact({"name": mcp["prompt"]["name"]})), ", ".join(
                               "<code>%s</code>" % _h(a) for a in arguments) or "none")))
            served.append(("CLI prompt", "<code>majordomus %s %s%s</code>" % (
                _h(" ".join(prompt["cli"]["path"])), _h(_shell_word(mcp["prompt"]["name"])),
                "".join(" --arg %s=\u2026" % _h(a) for a in arguments))))
        parts.append('<h2 id="mj-served">Where it is served</h2><dl class="interfaces">%s</dl>'
                     % "".join("<dt>%s</dt><dd>%s</dd>" % pair for pair in served))
        return self.layout(obj.title or obj.identity, "\n".join(parts))

    def _lead(self, obj, links):
        """What matters first, under the title: the object's key facts (a rule's status and
        class), its statement, its description, what it names and what names it, and for
        a context document its place in the chain of its directory."""
        meta = obj.metadata
        keys = [(field, meta[field]) for field in UI_KEY_FIELDS
                if _key_html(links, field, meta.get(field))]
        parts = []
        if keys:
            parts.append('<dl class="keys">%s</dl>' % "".join(
                '<div><dt>%s</dt><dd>%s</dd></div>' % (_h(_field_label(field)),
                                                      _key_html(links, field, value))
                for field, value in keys))
        statement = render_scalar(meta.get("statement"))
        if statement:
            parts.append('<p class="statement"><span class="label">Statement</span> %s</p>'
                         % _h(statement))
        if obj.description:
            parts.append('<p class="lede">%s</p>' % _h(obj.description))
        refs = []
        for field in list(UI_REFERENCES) + list(UI_PLACES):
            values = [v for f, v in _reference_values(meta, fields=(field,))]
            if values:
                refs.append((_field_label(field), ", ".join(
                    links.value_html(field, value) for value in values)))
        cited = {}
        for field, source in links.cited_by(obj):
            cited.setdefault(field, []).append(source)
        for field, sources in cited.items():
            refs.append((UI_CITED.get(field, "Named in %s by" % field), ", ".join(
                self.object_link(source) for source in sources)))
        versions = links.versions_of(obj)
        if len(versions) > 1:
            refs.append(("Versions", ", ".join(
                '<strong aria-current="true">%d</strong>' % number if other is obj else
                '<a href="%s">%d</a>' % (_h(ui_object_href(other)), number)
                for number, other in versions)))
        if is_context_document(obj):
            refs.append(("Chain", self._chain_place(obj)))
        if refs:
            parts.append('<dl class="refs">%s</dl>' % "".join(
                '<div><dt>%s</dt><dd>%s</dd></div>' % pair for pair in refs))
        return '<div class="lead">%s</div>' % "".join(parts) if parts else ""

    def _chain_place(self, obj):
        """A context document's place in the chain that governs its own directory, and the
        way to what governs that directory (the context page)."""
        directory = obj.provenance["directory"]
        link = ('<a class="governs" href="%s">The brief of this folder, and why each document '
                'applies</a>' % _h(ui_context_href(directory)))
        try:
            chain = self.gen.execute("context.resolve", {"path": directory})["documents"]
        except CapabilityError as exc:
            return "not resolved: %s. %s" % (_h(exc.head), link)
        at = next((d["index"] for d in chain if d["uri"] == obj.uri), None)
        names = " → ".join(
            '<strong aria-current="true">%s</strong>' % _h(d["id"]) if d["uri"] == obj.uri
            else '<a href="%s">%s</a>' % (_h(ui_object_href_uri(d["uri"])), _h(d["id"]))
            for d in chain)
        return "%s for <code>%s</code>: %s. %s" % (
            "%d of %d" % (at, len(chain)) if at else "Not in the chain",
            _h(directory), names or "no document", link)

    def search(self, params):
        """Ranked search (§21) through objects.search, `q` or `query` and `kind` as the API
        takes them; the hits of every kind counted beside, each count a filter."""
        query = params.get("q", params.get("query", ""))
        kind = params.get("kind") or None
        index = self.gen.index
        options = "".join('<option value="%s"%s>%s</option>' % (
            _h(k), " selected" if k == kind else "", _h(k)) for k in index.kinds)
        form = ('<form class="search-form" role="search" aria-label="Search" action="%s/search" '
                'method="get">'
                '<label class="visually-hidden" for="mj-q">Search the layer</label>'
                '<input id="mj-q" type="search" name="q" value="%s" placeholder="Ask in plain '
                'words"><label class="visually-hidden" for="mj-kind">Kind</label>'
                '<select id="mj-kind" name="kind"><option value="">every kind</option>%s'
                '</select><button type="submit">Search</button></form>' % (
                    UI_PREFIX, _h(query), options))
        parts = ['<h1>Search</h1>', form]
        title = "Search"
        if query.strip():
            arguments = {"query": query}
            if kind is not None:
                arguments["kind"] = kind
            if params.get("cursor"):
                arguments["cursor"] = params["cursor"]
            try:
                value = self.gen.execute("objects.search", arguments)
            except CapabilityError as exc:
                return self.error(400, "Search", exc.message)
            title = "Search: %s" % query + (" (%s)" % kind if kind else "")
            counts = {}
            for _, obj in ranked_hits(self.gen, query, None):
                counts[obj.kind] = counts.get(obj.kind, 0) + 1
            marks = set(query_terms(query)[0])
            items = []
            for hit in value["hits"]:
                items.append('<li><div class="title"><a href="%s">%s</a> '
                             '<span class="badge">%s</span></div><div class="where">%s '
                             '\u00b7 score %.2f</div>%s</li>' % (
                                 _h(ui_object_href_uri(hit["uri"])),
                                 _h(hit.get("title", hit["identity"])), _h(hit["kind"]),
                                 _h(hit["uri"]), hit["score"],
                                 '<p class="snippet">%s%s</p>' % (
                                     render_snippet(cut_snippet(hit["snippet"]), marks)
                                     if len(hit["snippet"]) >= SNIPPET_LIMIT else
                                     render_snippet(hit["snippet"], marks), "…" if len(
                                         hit["snippet"]) >= SNIPPET_LIMIT else "")
                                 if "snippet" in hit else ""))
            parts.append('<p class="lede" role="status">%d of %d hit(s) for \u201c%s\u201d%s.</p>'
                         % (value["count"], value["total"], _h(query),
                            " among the objects of kind %s" % _h(kind) if kind else ""))
            if counts:
                def chip(name, label, number):
                    href = "%s/search?q=%s%s" % (UI_PREFIX, _q(query),
                                                 "&kind=" + _q(name) if name else "")
                    return '<li><a href="%s"%s>%s <span class="count">%d</span></a></li>' % (
                        _h(href), ' aria-current="true"' if name == kind else "", _h(label),
                        number)
                parts.append('<nav class="by-kind" aria-label="Hits by kind"><ul>%s%s</ul></nav>'
                             % (chip(None, "every kind", sum(counts.values())), "".join(
                                 chip(k, k, counts[k]) for k in sorted(counts))))
            parts.append('<ol class="hits">%s</ol>' % "".join(items) if items else
                         "<p>Nothing carries these words.</p>")
            if "next_cursor" in value:
                parts.append('<nav class="pager" aria-label="More hits"><a rel="next" href="'
                             '%s">More hits</a></nav>' % _h("%s/search?q=%s%s&cursor=%s" % (
                                 UI_PREFIX, _q(query), "&kind=" + _q(kind) if kind else "",
                                 _q(value["next_cursor"]))))
        return self.html(self.layout(title, "\n".join(parts)))

    def context(self, params):
        """What governs a path (also at /ui/brief): the brief (§26, brief_html) with the
        resolution's explain beside it (§20.2: why each document applies, what was left
        out), or why the resolution gives none (the tree's problems, a path that does not
        exist yet). The page's status is the brief's."""
        path, intent = params.get("path", ""), params.get("intent", "")
        head = '<p class="crumbs"><a href="%s/">Overview</a> / what governs</p>' % UI_PREFIX
        if not path:
            return self.html(self.layout("What governs a path", head + (
                '<h1>What governs a path</h1><p class="lede">The documents that govern a file '
                'or folder of this repository (one that does not exist yet too), in order, why '
                'each applies, and the rules in force.</p>') + brief_form("", "")))
        arguments = {"path": path}
        for name in ("provider", "audience"):
            if params.get(name):
                arguments[name] = params[name]
        asked = dict(arguments, intent=intent) if intent.strip() else arguments
        status, brief = 200, None
        try:
            brief = self.gen.execute("context.brief", asked)
        except CapabilityError as exc:
            status = next((status for error, status, _ in _HTTP_ERRORS
                           if isinstance(exc, error)), 500)       # as the REST route's
            failed = ('<section class="brief alert" aria-labelledby="mj-brief-failed"><h2 id='
                      '"mj-brief-failed">No brief</h2><p>%s</p></section>' % _h(str(exc)))
        explain = self._resolution(arguments, brief)
        title = "What governs %s" % (brief["target"] if brief else path)
        parts = [head, '<h1>What governs <code>%s</code></h1>' % _h(
                     brief["target"] if brief else path), brief_form(path, intent),
                 '<div class="governs">%s%s</div>' % (explain, (
                     '<section class="brief" aria-labelledby="mj-brief-head"><h2 id='
                     '"mj-brief-head">The brief</h2>%s</section>' % brief_html(
                         brief, ui_links(self.gen))) if brief else failed)]
        return self.html(self.layout(title, "\n".join(parts)), status)

    def _resolution(self, arguments, brief):
        """The explain part of the context page: context.resolve's answer explained, or why
        it gives none (`brief`, when there is one, lists the tree's problems itself)."""
        try:
            value = self.gen.execute("context.resolve", arguments)
        except NotFound as exc:
            if brief is None:
                return _no_chain(exc)
            return self._brief_chain(brief, arguments, "<code>%s</code>: a file created there "
                                     "would have this chain" % _h(str(exc)))
        except Refused as exc:
            if isinstance(exc, RefusedPath) or not self.gen.index.context.problems:
                return _no_chain(exc)
            problems = ('<p><a href="#mj-brief-problems">The problems</a> are listed in the '
                        'brief (those of this path\'s chain; the others on the page of <a href='
                        '"%s/diagnostics">every diagnostic</a>), which answers with the '
                        'documents the index holds.</p>' % UI_PREFIX if brief
                        else _diagnostic_table(self.gen.index.context.problems))
            refusal = ('<section class="explain alert" aria-labelledby="mj-refused"><h2 id='
                       '"mj-refused">The context tree does not validate</h2><p><code>%s: %s'
                       '</code></p><p>Each problem is in the file it names; once none is left, '
                       'the chain is resolved and explained here.</p>%s</section>' % (
                           _h(exc.prefix), _h(exc.head), problems))
            if brief is None:
                return refusal
            return '<div class="explain-group">%s%s</div>' % (refusal, self._brief_chain(
                brief, arguments, "The chain the brief resolved over the documents the index "
                "holds"))
        except CapabilityError as exc:
            return _no_chain(exc)
        return self._explain(value)

    def _brief_chain(self, brief, arguments, note):
        """The chain a brief resolved (§26: §20.2 steps 3-6 over the documents the index
        holds), explained as a resolution is: each document with its reason, and what was
        left out other than for room."""
        return self._explain(dict(
            brief, provider=arguments.get("provider"), audience=arguments.get("audience"),
            excluded=[e for e in brief["left_out"] if e["reason"] != BRIEF_BUDGET
                      and e["uri"].startswith("majordomus://%s/" % CONTEXT_KIND)]), note)

    def _explain(self, value, note=None):
        """A resolution (§20.2) as the shell tool's `context explain` says it: the chain,
        least specific first, each document with why it applies; what was left out, and
        why; the order; the fingerprint. `note`: said first, when the chain is not
        context.resolve's own (a path that does not exist yet)."""
        target = value["target"]
        by_uri = self.gen.index.by_uri
        where = ("the directory itself" if value["directory"] == target else
                 "its directory <code>%s</code>" % _h(value["directory"]))
        chosen = "".join(" \u2014 %s %s" % (name, _h(value[name])) for name in (
            "provider", "audience") if value[name] is not None)
        items = "".join(
            '<li><div class="title"><a href="%s">%s</a> <code>%s</code></div>'
            '<div class="where">%s \u00b7 scope %s \u00b7 %s \u00b7 order %d</div>'
            '<p class="why">Applies: %s</p></li>' % (
                _h(ui_object_href_uri(d["uri"])), _h(d["title"] or d["id"]), _h(d["id"]),
                _path_html(d["path"]), _h(d["scope"]), _h(d["composition"]), d["order"],
                _h(d["reason"]))
            for d in value["documents"])
        left = "".join('<li><a href="%s"><code>%s</code></a> <span class="where">%s</span>: '
                       '%s</li>' % (_h(ui_object_href_uri(e["uri"])), _h(e.get("id") or (
                           by_uri[e["uri"]].identity if e["uri"] in by_uri else e["uri"])),
                           _path_html(e.get("path") or (by_uri[e["uri"]].path
                                                        if e["uri"] in by_uri else "")),
                           _h(e["reason"]))
                       for e in value["excluded"])
        return (
            '<section class="explain" aria-labelledby="mj-chain"><h2 id="mj-chain">The chain'
            '</h2>%s<p>For <code>%s</code> (%s)%s: %d document(s), least specific first.</p>%s'
            '<h2 id="mj-left">Left out</h2>%s'
            '<p class="note">Order: depth (the tree root first), then <code>order</code>, then '
            'path. Fingerprint <code class="fingerprint">%s</code></p></section>' % (
                '<p class="note">%s.</p>' % note if note else "",
                _h(target), where, chosen, len(value["documents"]),
                '<ol class="chain">%s</ol>' % items if items else
                "<p>No document applies.</p>",
                '<ul class="left-out">%s</ul>' % left if left else
                "<p>Nothing: every candidate applies.</p>", _h(value["fingerprint"])))

    def diagnostics(self):
        groups = {}
        for diagnostic in self.gen.index.diagnostics:
            groups.setdefault(diagnostic.code, []).append(diagnostic)
        parts = ['<h1>Diagnostics</h1><p class="lede">%d diagnostic(s); a file that cannot '
                 'become an object is left out of the index (a context document whose '
                 'references fail stays served), and the rest is served.</p>'
                 % len(self.gen.index.diagnostics)]
        for code, found in sorted(groups.items()):
            parts.append('<h2 id="mj-code-%s"><code>%s</code> (%d)</h2>%s' % (
                _h(code), _h(code), len(found), _diagnostic_table(found)))
        if not groups:
            parts.append("<p>None: every discovered file is served.</p>")
        return self.layout("Diagnostics", "\n".join(parts), "/diagnostics")

    def capabilities(self, after):
        import bisect
        registry = self.gen.registry
        ids = registry.ids
        builtin = [i for i in ids if registry.by_id[i]["kind"] != "resource"]
        declarative = self.gen.memo("ui.declarative", lambda: [
            i for i in ids if registry.by_id[i]["kind"] == "resource"])
        start = bisect.bisect_right(declarative, after) if after else 0
        chosen = declarative[start:start + UI_CAPABILITIES]
        parts = ['<h1>Capabilities</h1><p class="lede">Every interface is a projection of this '
                 'registry: %d capabilities.</p>' % len(ids),
                 '<h2 id="mj-builtin">Builtin</h2>' + _capability_table(registry, builtin),
                 '<h2 id="mj-declarative">Declarative (one per object)</h2><p>Each is a '
                 'resource; its id is its kind, a dot, and its identity. %d to %d of %d.</p>'
                 % (start + 1 if chosen else 0, start + len(chosen), len(declarative))
                 + _resource_table(registry, chosen)]
        if start + UI_CAPABILITIES < len(declarative):
            parts.append('<nav class="pager" aria-label="More capabilities"><a rel="next" '
                         'href="%s/capabilities?after=%s">Next %d</a></nav>'
                         % (UI_PREFIX, _q(chosen[-1]), UI_CAPABILITIES))
        return self.html(self.layout("Capabilities", "\n".join(parts), "/capabilities"))


def _no_chain(exc):
    """The context page's explain where context.resolve gives no chain: why."""
    return ('<section class="explain" aria-labelledby="mj-chain"><h2 id="mj-chain">The chain'
            '</h2><p><code>%s</code></p></section>' % _h(str(exc)))


def ui_pages(gen):
    return gen.memo("ui", lambda: UiPages(gen))


PEERS_PLACE = "<!-- the peers board -->"


def peers_board(board, gen):
    """The overview's board (§27, §31): every session sharing this server and the other
    checkouts' servers, which client, where (branch and checkout), its intent, scope and
    since when, the overlaps marked; the claims apart, first. Made for each request (the
    board is no generation's); `data-peers` is its version, which the page's event stream
    follows."""
    listing = board.listing(None, gen.root, gen.branch)
    rows, claims = [], []
    for peer in listing["peers"]:
        overlaps = "".join('<span class="badge sev-warning">overlaps %s</span> ' % _h(other)
                           for other in peer["overlaps"])
        where = '<span class="nowrap">%s</span> <span class="path">%s</span>' % (
            _h(peer.get("branch") or "(detached)"), _path_html(peer.get("worktree") or ""))
        scope = ", ".join(_path_html(path) for path in peer["scope"])
        if peer.get("claim"):
            claims.append('<tr><td><code>%s</code></td><td>%s</td><td>%s</td><td class="path">'
                          '%s</td></tr>' % (_h(peer["id"]), _h(peer["client"]), where, scope))
        rows.append('<tr%s><td><code>%s</code></td><td>%s</td><td>%s</td><td>%s</td><td>%s'
                    '</td><td class="path">%s</td><td class="nowrap">%s</td><td>%s</td></tr>' % (
                        ' class="overlap"' if peer["overlaps"] else "", _h(peer["id"]),
                        _h(peer["client"]), _h(peer["transport"]), where,
                        _h(peer.get("intent", "")), ("%s %s" % (
                            '<span class="badge">claim</span>', scope)) if peer.get("claim")
                        else scope, _h(peer["since"].replace("T", " ")), overlaps.strip()))
    claimed = ('<h3 id="mj-claims">Claimed paths (%d)</h3><div class="table-wrap"><table class='
               '"stack" aria-labelledby="mj-claims"><thead><tr><th scope="col">Session</th>'
               '<th scope="col">Client</th><th scope="col">Branch and checkout</th><th scope='
               '"col">Paths no other session may claim</th></tr></thead><tbody>%s</tbody>'
               '</table></div>' % (len(claims), "".join(claims))) if claims else ""
    table = ('<div class="table-wrap"><table class="stack" aria-labelledby="mj-peers"><thead>'
             '<tr><th scope="col">Session</th><th scope="col">Client</th><th scope="col">'
             'Transport</th><th scope="col">Branch and checkout</th><th scope="col">Intent'
             '</th><th scope="col">Scope</th><th scope="col">Since (UTC)</th><th scope="col">'
             'Overlaps</th></tr></thead><tbody>%s</tbody></table></div>' % "".join(rows)
             ) if rows else '<p>No MCP client is connected now.</p>'
    title = "Sessions sharing this server (%d)" % listing["count"] if listing["boards"] == 1 \
        else "Sessions working on this repository (%d, in %d checkouts)" % (
            listing["count"], listing["boards"])
    if not listing["complete"]:
        title += " (a checkout's server did not answer)"
    return ('<section class="peers" aria-labelledby="mj-peers" data-peers="%d"><h2 id='
            '"mj-peers">%s</h2>%s%s</section>' % (board.version, _h(title), claimed, table))


def cut_snippet(text):
    """A snippet cut at SNIPPET_LIMIT, closed as Markdown so that a cut inside `**bold**`,
    `*emphasis*` or a code span shows no raw marker (§29): an unclosed code span and
    emphasis are closed, and a link cut before its target ends is its text alone."""
    opened = text.rfind("[")
    if opened >= 0 and "](" in text[opened:] and ")" not in text[text.index("](", opened):]:
        text = text[:opened] + text[opened + 1:text.index("](", opened)]
    if text.count("`") % 2:
        text += "`"
    outside = "".join(text.split("`")[0::2])      # emphasis is not read inside code spans
    closing = ""
    for marker in ("**", "__"):
        if outside.count(marker) % 2:
            closing = marker + closing
        outside = outside.replace(marker, "")
    for marker in ("*", "_"):
        words = [w for w in outside.split() if w.strip(marker) and marker in (w[0], w[-1])]
        if len(words) % 2:
            closing = marker + closing
    return text.rstrip() + closing


def brief_form(path, intent):
    """The form that asks what governs a path (the context page, with the brief, §26): a
    path, and what the reader is about to do."""
    return ('<form class="path-form" action="%s/context" method="get" aria-label="What governs '
            'a path"><div class="field"><label for="mj-path">Path <span>a file or folder, '
            'existing or new</span></label><input id="mj-path" type="text" name="path" '
            'value="%s" placeholder="e.g. src/app.py or .ai/repo/rules" required '
            'autocomplete="off" spellcheck="false"></div><div class="field"><label for='
            '"mj-intent">Intent <span>optional: what you are about to do</span></label><input '
            'id="mj-intent" type="text" name="intent" value="%s" placeholder="e.g. add a rule '
            'for commit messages"></div><button type="submit">Show what governs it</button>'
            '</form>' % (UI_PREFIX, _h(path), _h(intent)))


def brief_html(value, linker=None):
    """A Brief (§26, §29) as the main part of a page, drawn from the parts of its text
    (BriefLayout): the target, the file it is generated from, the problems of its chain
    (and how many others the layer has), then each section in the text's order with the
    entries the text holds: the rules (each linked to its page; the chosen ones with their
    statements and why, the blocking ones by id and title, the rest in one line), the
    chain's documents with their bodies rendered (the objects they name linked by
    `linker`, UiLinks), the related objects with their passages, and what was left out (a
    page has the room for every entry the JSON holds, up to UI_CAPABILITIES). It renders
    any Brief, wherever a page shows one."""
    def link(uri, text):
        return '<a href="%s">%s</a>' % (_h(ui_object_href_uri(uri)), _h(text))

    def named(ident):     # a document's id, linked when the linker knows it
        obj = linker.target(ident, (CONTEXT_KIND,)) if linker is not None else None
        return link(obj.uri, ident) if obj is not None else _h(ident)

    def rendered(uri, text):
        return linker.rendered(uri, text) if linker is not None else render_markdown(text)

    layout = getattr(value, "layout", None) or brief_layout(value)
    others = getattr(value, "others", 0) or 0
    where = ("a directory" if value["exists"] and value["target"] == value["directory"]
             else "an existing file" if value["exists"] else
             "a new file (nothing exists there yet)")
    profile = value["profile"]
    parts = ['<p class="lede"><code>%s</code> is %s in <code>%s</code>. %d of %d lines and '
             '%d of %d characters of the text form; default profile %s.</p>' % (
                 _h(value["target"]), where, _h(value["directory"]), value["used_lines"],
                 value["budget_lines"], value["used_chars"], value["budget_chars"],
                 link(profile["uri"], profile["title"]) if profile else "none"),
             '<p class="where">Fingerprint <code>%s</code></p>' % _h(value["fingerprint"])]
    projection = value["projection"]
    if projection is not None:
        source = getattr(value, "source", None) or "majordomus://policy/" + projection["source"]
        parts.append('<p class="%s">Generated from %s (%s): edit <code>%s</code>, not this '
                     'file.%s</p>' % (
                         "alert" if projection["stale"] else "where",
                         link(source, projection["source"]),
                         "stamp <code>%s</code>" % _h(projection["stamp"]) if projection[
                             "stamp"] else "no stamp" if value["exists"] else "not written yet",
                         _h(projection["source"]),
                         " It is stale: it no longer matches its stamp or the policy; "
                         "<code>majordomus update</code> writes it again."
                         if projection["stale"] else ""))
    if value["problems"] or others:
        parts.append('<section class="alert" aria-labelledby="mj-brief-problems"><h2 id='
                     '"mj-brief-problems">Degraded: %d problem(s) in this path\'s chain</h2>'
                     '<p>The context tree does not validate: <code>context resolve</code> '
                     'refuses; this brief answers with the documents the index holds.</p>'
                     '%s%s</section>' % (
                         len(value["problems"]), '<ul>%s</ul>' % "".join(
                             '<li><code>%s</code> %s: %s</li>' % (
                                 _h(p["code"]), _path_html(p["path"] or "-"), _h(p["message"]))
                             for p in value["problems"]) if value["problems"] else "",
                         '<p>%d other problem(s) in the layer: <a href="%s/diagnostics">every '
                         'diagnostic</a>.</p>' % (others, UI_PREFIX) if others else ""))
    rules = layout.entries("rules")
    chosen = [r for r in rules if isinstance(r, dict) and r["why"] in ("named", "relevant")]
    short = [r for r in rules if isinstance(r, dict) and r["why"] == "blocking"]
    also = next((r for r in rules if isinstance(r, list)), [])
    total, _, also_total = layout.counts or _rule_counts(value)
    parts.append('<h2 id="mj-brief-rules">Rules in force (%d)</h2>' % total)
    parts.append('<ul class="hits">%s</ul>' % "".join(
        '<li><div class="title">%s%s</div>%s<div class="where">%s</div></li>' % (
            '<span class="badge">%s</span> ' % _h(r["class"]) if r["class"] else "",
            link(r["uri"], r["title"]),
            '<p class="snippet">%s</p>' % _h(r["statement"]) if r["statement"] else "",
            "named by %s" % ", ".join(named(name) for name in r["named_by"])
            if r["named_by"] else "relevant to this path and intent")
        for r in chosen) if chosen else "<p>None chosen for this path.</p>")
    if short:
        parts.append('<h3>Blocking (%d)</h3><ul class="short">%s</ul>' % (len(short), "".join(
            '<li>%s%s %s</li>' % (link(r["uri"], r["id"]), "" if r["class"] == "blocking" else
                                  ' <span class="badge">%s</span>' % _h(r["class"]),
                                  _h(r["title"])) for r in short)))
    if also:
        more = also_total - len(also)
        parts.append('<p>Also in force (%d): %s%s</p>' % (
            len(also) + more, ", ".join(link(r["uri"], r["id"]) for r in also),
            " \u2026 and %d more (<code>majordomus_list kind=rule</code>)" % more
            if more else ""))
    parts.append('<h2 id="mj-brief-docs">Documents that govern it, most specific first</h2>')
    for doc in layout.entries("documents"):
        parts.append('<section class="brief-doc"><h2>%s</h2><p class="where"><code>%s</code> '
                     '\u00b7 applies: %s</p><div class="content">%s</div></section>' % (
                         link(doc["uri"], doc["title"]), _h(doc["path"]), _h(doc["reason"]),
                         rendered(doc["uri"], doc["body"])))
    if not value["documents"]:
        parts.append("<p>No document applies.</p>")
    related = layout.entries("related")
    if related:
        parts.append('<h2 id="mj-brief-related">Related: linked from these documents, or '
                     'matching the intent</h2><ul class="hits">%s</ul>' % "".join(
                         '<li><div class="title">%s <span class="badge">%s</span></div>%s</li>'
                         % (link(hit["uri"], hit["title"]), _h(hit["kind"]),
                            '<blockquote class="content">%s</blockquote>' % rendered(
                                hit["uri"], hit["excerpt"]) if hit.get("excerpt") else
                            '<p class="snippet">%s</p>' % _h(hit["snippet"]))
                         for hit in related))
    if value["left_out"]:
        parts.append('<h2 id="mj-brief-left">Left out (%d)</h2><div class="table-wrap"><table '
                     'class="stack" aria-labelledby="mj-brief-left"><thead><tr><th scope="col">'
                     'Object</th><th scope="col">Why</th></tr></thead><tbody>%s</tbody></table>'
                     '</div>' % (len(value["left_out"]), "".join(
                         '<tr><td>%s</td><td>%s%s</td></tr>' % (
                             link(e["uri"], e["uri"]), _h(e["reason"]),
                             " (%s)" % _h(e["detail"]) if e.get("detail") else "")
                         for e in value["left_out"][:UI_CAPABILITIES])))
        if len(value["left_out"]) > UI_CAPABILITIES:
            parts.append("<p>And %d more, each in the JSON form (<code>left_out</code>).</p>"
                         % (len(value["left_out"]) - UI_CAPABILITIES))
    return "\n".join(parts)


def _ui_params(query):
    """A page's query parameters (the last of a repeated one wins; a page forgives)."""
    out = {}
    for pair in query.split("&"):
        if pair:
            name, _, value = pair.partition("=")
            try:
                out[_percent_decode(name, True)] = _percent_decode(value, True)
            except HttpError:
                continue
    return out


def _shell_word(text):
    import shlex
    return shlex.quote(text)


def _facts(rows, label):
    return ('<div class="table-wrap"><table class="meta" aria-labelledby="%s"><tbody>%s'
            '</tbody></table></div>' % (label, "".join(
                '<tr><th scope="row">%s</th><td>%s</td></tr>' % row for row in rows)))


def _metadata_value(value, links=None, key=""):
    """A metadata value: a scalar as text, nested values as compact JSON; with `links`
    (UiLinks), the names of other objects in it at key path `key` linked."""
    html = links.value_html(key, value) if links is not None else _h(
        render_scalar(value) if render_scalar(value) is not None else json_compact(value))
    return html if render_scalar(value) is not None else "<code>%s</code>" % html


# The key facts an object page leads with, and a listing's columns, when its kind's
# objects carry them (in this order); the labels of the names an object is cited by.
UI_KEY_FIELDS = ("status", "class", "version", "scope", "composition", "order", "priority",
                 "milestone", "profile", "effort", "audience", "providers")
UI_BADGES = ("status", "class", "priority")
UI_COLUMNS_MAX = 4
UI_CITED = {"depends_on": "Depended on by", "supersedes": "Superseded by",
            "profile": "The profile of", "profiles.default": "The default profile of",
            "milestone": "Milestone of", "serves": "Served by"}


def _field_label(field):
    label = field.replace("_", " ").replace(".", " ")
    return label[:1].upper() + label[1:]


def _key_html(links, field, value):
    """A key fact: a status, class or priority as a badge, a name as a link, a list of
    scalars joined with commas; absent as nothing."""
    if isinstance(value, list):     # a list of scalars; anything nested is no key fact
        return ", ".join(_key_html(links, field, item) for item in value
                         if render_scalar(item) is not None)
    text = render_scalar(value)
    if text is None:
        return ""
    if field in UI_BADGES:
        word = "".join(c for c in text.lower() if c.isalnum() or c == "-")[:32]
        return '<span class="badge key-%s">%s</span>' % (word, _h(text))
    return links.value_html(field, value)


def _kind_columns(members):
    """A listing's key columns (UI_KEY_FIELDS that a member carries, the version left to
    the identity, at most UI_COLUMNS_MAX); whether the kind names its objects (an
    identity that is not the path, shown in a column of its own); and the folder all its
    paths share (said once, in the column's head)."""
    carried = set()
    for obj in members:
        carried.update(field for field in UI_KEY_FIELDS if field in obj.metadata)
    columns = [f for f in UI_KEY_FIELDS if f in carried and f != "version"][:UI_COLUMNS_MAX]
    folder = os.path.commonprefix([obj.path for obj in members])
    folder = folder[:folder.rfind("/") + 1]
    if len(members) < 2 or any(obj.path == folder for obj in members):
        folder = ""     # one object's path is shown whole
    return columns, any(obj.identity != obj.path for obj in members), folder


def _path_html(path):
    """A path made safe, free to wrap after each `/` only (a narrow column then breaks it
    between folders, never inside a name, not even at its hyphens)."""
    return "<wbr>".join('<span class="seg">%s</span>' % _h(part)
                        for part in path.replace("/", "/\0").split("\0") if part)


def _diagnostic_table(diagnostics):
    rows = "".join('<tr><td><span class="badge sev-%s">%s</span></td>'
                   '<td class="nowrap"><code>%s</code></td>'
                   '<td class="path">%s</td><td>%s</td></tr>' % (
                       d.severity, d.severity, _h(d.code), _path_html(d.path or "-"),
                       _h(d.message))
                   for d in diagnostics)
    return ('<div class="table-wrap"><table class="stack"><thead><tr><th scope="col">Severity</th>'
            '<th scope="col">Code</th><th scope="col">Path</th><th scope="col">Message</th>'
            '</tr></thead><tbody>%s</tbody></table></div>' % rows)


def _capability_table(registry, ids):
    """The builtin capabilities: id, kind and each exposure, one per line ("none" where
    the capability has none)."""
    none = '<span class="none">none</span>'
    rows = []
    for cap_id in ids:
        descriptor = registry.by_id[cap_id]
        exposure = descriptor["exposure"]
        mcp, http, cli = exposure.get("mcp", {}), exposure.get("http"), exposure.get("cli")
        marks = (["tool <code>%s</code>" % _h(mcp["tool"])] if "tool" in mcp else []) + (
            ["resource <code>%s</code>" % _h(mcp["resource"]["uri"])] if "resource" in mcp
            else [])
        rows.append('<tr><td class="ident"><code>%s</code></td><td>%s</td><td>%s</td><td>%s'
                    '</td><td>%s</td></tr>' % (
                        _h(cap_id), _h(descriptor["kind"]), "<br>".join(marks) or none,
                        "<code>%s %s</code>" % (_h(http["method"]), _h(http["path"]))
                        if http else none, "<code>majordomus %s</code>" % _h(" ".join(
                            cli["path"])) if cli else none))
    return ('<div class="table-wrap"><table class="stack exposures"><thead><tr><th scope="col">'
            'Id</th><th scope="col">Kind</th><th scope="col">MCP</th><th scope="col">HTTP</th>'
            '<th scope="col">CLI</th>'
            '</tr></thead><tbody>%s</tbody></table></div>' % "".join(rows))


def _resource_table(registry, ids):
    """The declarative capabilities, one per object: the id's two parts apart (the kind,
    then the identity: `document` and `.ai/x.md`, not `document..ai/x.md` read as one
    word), the object's title linked to its page, and how it is read: the MCP resource
    (and prompt), and objects.get's REST route and CLI command with its URI."""
    getter = registry.by_id["objects.get"]["exposure"]
    prompt = registry.by_id["prompts.get"]["exposure"]
    rows = []
    for cap_id in ids:
        descriptor = registry.by_id[cap_id]
        mcp = descriptor["exposure"]["mcp"]
        uri = mcp["resource"]["uri"]
        kind = descriptor["module"]
        http = "%s?uri=%s" % (getter["http"]["path"], _q(uri))
        ways = [("MCP", "<code>resources/read %s</code>" % _h(uri)),
                ("REST", '<a href="%s"><code>GET %s</code></a>' % (_h(http), _h(http))),
                ("CLI", "<code>majordomus %s %s</code>" % (
                    _h(" ".join(getter["cli"]["path"])), _h(_shell_word(uri))))]
        if "prompt" in mcp:
            name = mcp["prompt"]["name"]
            ways += [("MCP", "<code>prompts/get %s</code>" % _h(name)),
                     ("CLI", "<code>majordomus %s %s</code>" % (
                         _h(" ".join(prompt["cli"]["path"])), _h(_shell_word(name))))]
        rows.append('<tbody><tr><td><span class="badge">%s</span></td><td class="ident"><code>'
                    '%s</code></td><td><a href="%s">%s</a></td></tr><tr class="ways"><td '
                    'colspan="3"><span class="visually-hidden">Read by: </span>%s</td></tr>'
                    '</tbody>' % (
                        _h(kind), _h(cap_id[len(kind) + 1:]), _h(ui_object_href_uri(uri)),
                        _h(descriptor["title"]), " ".join(
                            '<span class="way"><span class="how">%s</span> %s</span>' % way
                            for way in ways)))
    return ('<div class="table-wrap"><table class="stack exposures resources"><thead><tr>'
            '<th scope="col">Kind</th><th scope="col">Identity</th><th scope="col">Title, and '
            'how it is read</th></tr></thead>%s</table></div>' % "".join(rows))


# ---------------------------------------------------------------------------------------
# 22. HTTP connections (§10, §19, §22): the routes (REST from the registry's HTTP table,
#    /mcp, /ui), one thread per connection, the event streams, and the server.
# ---------------------------------------------------------------------------------------

class HttpProjection:
    """The registry as HTTP sees it: the route table and the OpenAPI document, prepared
    once per generation (on first use)."""

    def __init__(self, gen):
        self.gen = gen
        gen.counters.count("http_projection_builds")
        registry = gen.registry
        # From the registry's route table, in id order: no object's descriptor has an HTTP
        # exposure, so none of 10,000 is made for it (§23).
        self.routes = dict(sorted(registry.by_http.items(), key=lambda item: item[1]["id"]))
        self.paths = {path for _, path in self.routes} | {"/", "/openapi.json"}
        self.index_document = _pretty({
            "name": "majordomus", "version": VERSION, "root": gen.root,
            "openapi": "/openapi.json", "capabilities": "/api/v1/capabilities"})
        self.openapi = _pretty(self._openapi())

    def _openapi(self):
        error_schema = {"$ref": "#/components/schemas/Error"}
        responses = {}
        for _, status, code in _HTTP_ERRORS:
            responses[code] = {"description": "%d %s" % (status, code), "content": {
                "application/json": {"schema": error_schema}}}
        paths = {}
        for (method, path), descriptor in sorted(self.routes.items(), key=lambda kv: kv[0][1]):
            schema = descriptor["input"]["schema"]
            parameters = [_openapi_parameter(name, rule, name in schema.get("required", ()))
                          for name, rule in schema.get("properties", {}).items()]
            operation = {"operationId": descriptor["id"], "summary": descriptor["title"],
                         "description": descriptor["description"]}
            if method == "POST":      # a command (§27): its input is the JSON body
                operation["requestBody"] = {"required": True, "content": {
                    "application/json": {"schema": schema}}}
            elif parameters:
                operation["parameters"] = parameters
            operation["responses"] = {
                "200": {"description": descriptor["output"].get("name", "the value"),
                        "content": {"application/json": {
                            "schema": descriptor["output"]["schema"]}}}}
            for _, status, code in _HTTP_ERRORS:
                operation["responses"][str(status)] = {"$ref": "#/components/responses/" + code}
            paths[path] = {method.lower(): operation}
        return {
            "openapi": "3.1.0",
            "info": {"title": "majordomus", "version": VERSION,
                     "description": "Read-only view of a repository's AI layer."},
            "paths": paths,
            "components": {
                "schemas": {"Error": _object_schema({"error": _object_schema(
                    {"code": _STR, "message": _STR, "data": _ANY_OBJECT},
                    ("code", "message"))}, ("error",))},
                "responses": responses}}

    def answer(self, method, target, headers=None, caller=None, body=b""):
        """The JSON body (bytes) of a request, or a Page (§22); raise HttpError. A query is
        routed by GET (and HEAD) with its input in the query string, a command (§27) by
        POST with its input as the JSON body; `caller` is the Peer of the MCP session the
        request names (Mcp-Session-Id), if any."""
        path, _, query = target.partition("?")
        path = _percent_decode(path, plus=False)
        if method not in ("GET", "HEAD", "POST"):
            raise HttpError(405, "method_not_allowed", "method %s is not served" % method)
        headers = headers or {}
        if path == UI_PREFIX or path.startswith(UI_PREFIX + "/"):
            return ui_pages(self.gen).answer(method, path, query,
                                             headers.get("host") or "127.0.0.1")
        if path == "/" and method != "POST" and wants_html(headers.get("accept")):
            return Page(303, b"", headers=[("Location", UI_PREFIX + "/")])
        if path not in self.paths:
            raise HttpError(404, "not_found", "no route %s %s; the routes are listed at "
                            "/openapi.json" % (method, path))
        routed = "GET" if method == "HEAD" else method
        descriptor = self.routes.get((routed, path))
        if descriptor is None and not (routed == "GET" and path in ("/", "/openapi.json")):
            allowed = sorted({m for m, p in self.routes if p == path} or {"GET"})
            raise HttpError(405, "method_not_allowed", "%s %s is not a route; another method "
                            "is" % (method, path), [("Allow", ", ".join(
                                "GET, HEAD" if m == "GET" else m for m in allowed))])
        if path == "/":
            return self.index_document
        if path == "/openapi.json":
            return self.openapi
        try:
            if routed == "POST":
                arguments = _body_arguments(query, body)
            else:
                arguments = _query_arguments(query, descriptor["input"]["schema"])
            return _pretty(self.gen.execute(descriptor["id"], arguments, caller))
        except CapabilityError as exc:
            for error, status, code in _HTTP_ERRORS:
                if isinstance(exc, error):
                    raise HttpError(status, code, exc.message, data=exc.data)
            raise


def _openapi_parameter(name, rule, required):
    parameter = {"name": name, "in": "query", "required": required, "schema": rule}
    if rule.get("type") == "object":
        # §10: an object-valued input travels as one parameter per entry, `NAME.KEY=value`.
        parameter["description"] = ("each entry as its own parameter %s.KEY=VALUE, e.g. "
                                    "%s.CONTEXT=text" % (name, name))
        parameter.update(style="form", explode=True)
    return parameter


def http_projection(gen):
    return gen.memo("http", lambda: HttpProjection(gen))
LEASE_PROTOCOL = "majordomus-stdio"      # the Upgrade a bridge asks of /mcp (§27)

def make_http_handler(live, mcp, bound=None, access=None, options=None, bridge=None):
    """The per-connection handler class: one thread per connection (socketserver). `mcp`
    is the /mcp transport (McpOverHttp); `bound`, the address literal the server was told
    to bind, which the Host guard accepts too; `access` (§27) the token an owner asks for,
    `options` what a bridge's options must equal, and `bridge(sock, pending, live,
    replay, client_pid)` serves a bridge's switched connection (None: no lease, no
    bridge)."""
    import socketserver
    import threading
    in_flight = threading.BoundedSemaphore(MAX_IN_FLIGHT)
    # Capabilities run one at a time. Python runs one thread's bytecode at a time anyway,
    # so this costs no throughput; but admitted requests then wait on this lock instead of
    # competing for the interpreter, and accepting, reading heads and answering `503 busy`
    # stay prompt however many requests are in handling.
    running = threading.Lock()

    class Connection(socketserver.BaseRequestHandler):
        def handle(self):
            sock, pending = self.request, b""
            try:
                while True:
                    try:
                        read = _read_head(sock, pending)
                    except HttpError as exc:
                        self.fail(exc, False)
                        return
                    if read is None:
                        return
                    head, pending = read
                    keep_alive, pending = self.one_request(head, pending)
                    if not keep_alive:
                        return
            except OSError:
                return   # the client went away mid-answer: nothing to tell anyone

        def fail(self, exc, head_only, keep_alive=False):
            _respond(self.request, exc.status, _error_body(exc.code, exc.message, exc.data),
                     head_only, keep_alive and not exc.close, exc.headers)
            if not keep_alive or exc.close:
                self.linger()

        def linger(self):
            """Close after an answer without draining a body: FIN, a bounded wait, close."""
            import socket
            try:
                self.request.shutdown(socket.SHUT_WR)
                self.request.settimeout(1.0)
                for _ in range(16):
                    if not self.request.recv(65536):
                        break
            except OSError:
                pass

        def one_request(self, head, pending):
            """Answer one request; (keep the connection?, bytes read past the request)."""
            head_only = keep_alive = False
            try:
                method, target, version, headers = _parse_head(head)
                head_only = method == "HEAD"
                keep_alive = (headers.get("connection", "").lower() != "close"
                              if version == "HTTP/1.1"
                              else headers.get("connection", "").lower() == "keep-alive")
                # Refused before its body is read, a request with a body ends the connection:
                # the unread bytes must never be taken for the next request.
                unread = headers.get("content-length", "0") not in ("", "0")
                host = headers.get("host")
                if host is not None and not _host_allowed(host, bound):
                    raise HttpError(403, "forbidden", "host '%s' is not served" % host,
                                    close=unread)
                origin = headers.get("origin")
                if origin is not None and origin != "http://" + (host or ""):
                    raise HttpError(403, "forbidden", "origin '%s' is not served" % origin,
                                    close=unread)
                refusal = access.refusal(headers.get("authorization")) if access else None
                if refusal is not None:
                    raise HttpError(401, "unauthorized", refusal,
                                    [("WWW-Authenticate", "Bearer")], close=unread)
                if "transfer-encoding" in headers:
                    raise HttpError(400, "bad_request", "a request body needs a Content-Length",
                                    close=True)
                length = body_length(headers)
                body, pending = self.read_body(length, pending)
                if not in_flight.acquire(blocking=False):
                    raise HttpError(503, "busy", "%d requests are in handling; try again"
                                    % MAX_IN_FLIGHT, [("Retry-After", "1")])
                # The event streams are counted per client address and Host (§25).
                slots = (self.client_address[0], (host or "").lower())
                if target.partition("?")[0] == MCP_PATH:
                    if headers.get("upgrade", "").lower() == LEASE_PROTOCOL:
                        return self.bridge(method, headers, pending), b""
                    return self.mcp(method, headers, body, keep_alive, slots), pending
                if target.partition("?")[0] == UI_EVENTS and method != "POST":
                    return self.events(head_only, headers, slots), pending
                try:
                    # The freshness check runs outside the lock: a request that arrives
                    # during a rebuild is answered from the previous generation (§15.1).
                    projection = http_projection(live.current())
                    caller = mcp.peer_of(headers.get("mcp-session-id"))
                    with running:
                        body = projection.answer("GET" if head_only else method, target,
                                                 headers, caller, body)
                finally:
                    in_flight.release()
                if isinstance(body, Page):
                    _respond(self.request, body.status, body.body, head_only, keep_alive,
                             body.headers, content_type=body.content_type)
                else:
                    _respond(self.request, 200, body, head_only, keep_alive)
                return keep_alive, pending
            except HttpError as exc:
                self.fail(exc, head_only, keep_alive)
                return keep_alive and not exc.close, pending
            except Exception as exc:  # never let one request end the server
                log(DEBUG, "request failed", traceback=_traceback_text())
                self.fail(HttpError(500, "internal", "%s: %s" % (type(exc).__name__, exc)),
                          head_only)
                return False, pending

        def read_body(self, length, pending):
            """The (bounded) request body, and what follows it."""
            while len(pending) < length:
                self.request.settimeout(HEAD_DEADLINE)
                chunk = self.request.recv(min(65536, length - len(pending)))
                if not chunk:
                    raise OSError("the client left mid-body")
                pending += chunk
            return pending[:length], pending[length:]

        def events(self, head_only, headers, slots):
            """/ui/events (§22): the generation now, then each new one, as server-sent
            events; and (§27) each change of the board, as `peers` events; counted with
            /mcp's streams; to this server's own pages only (§25: an <img> on another site
            must not take the slots)."""
            try:
                if not same_origin(headers, strict=True):
                    raise HttpError(403, "forbidden", "%s is served to this server's own "
                                    "pages only" % UI_EVENTS)
                stream = mcp._stream(slots)
                if stream is not None:
                    gen = live.current()
                    stream.put(_json_bytes({"generation": gen.number}))
                    stream.put(("peers", _json_bytes({"peers": live.board.version})))
            finally:
                in_flight.release()
            if stream is None:
                raise HttpError(503, "busy", "%d event streams are open; try again"
                                % MAX_STREAMS, [("Retry-After", "1")])
            if head_only:
                stream.closed()
                _respond(self.request, 200, b"", True, False, UI_HEADERS, stream=True)
                return False

            def listener(change):      # a page reloads on each new generation (§22)
                stream.put(_json_bytes({"generation": change.new.number}))
            release = stream.release

            def board_moved(version):
                stream.put(("peers", _json_bytes({"peers": version})))

            def closed():
                live.unlisten(listener)
                live.board.unwatch(board_moved)
                release()
            stream.release = closed
            live.listen(listener)
            live.board.watch(board_moved)
            try:
                _respond(self.request, 200, b"", False, False, UI_HEADERS, stream=True)
                self.request.sendall(b"retry: 1000\n\n")
            except BaseException:
                stream.closed()
                raise
            serve_stream(self.request, stream)
            return False

        def bridge(self, method, headers, pending):
            """A bridge asks /mcp to switch to the stdio framing (§27): it must present the
            lease's token and serve with this server's options; then the connection is
            the bridge's session until it ends."""
            try:
                if method != "GET" or bridge is None or access is None or not (
                        access.admits_bridge(headers.get("authorization"))):
                    raise HttpError(401, "unauthorized", "a bridge presents the lease's token",
                                    [("WWW-Authenticate", "Bearer")])
                if headers.get("majordomus-options") != options:
                    raise HttpError(409, "conflict", "this server serves with other options "
                                    "(%s)" % options)
                replay = number_or(headers.get("majordomus-replay", "0"), 0, 6)
                client = number_or(headers.get("majordomus-client-pid", ""), None, 10)
            finally:
                in_flight.release()
            self.request.sendall(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: %s\r\n"
                                  "Connection: Upgrade\r\n\r\n" % LEASE_PROTOCOL).encode("ascii"))
            self.request.settimeout(None)
            bridge(self.request, pending, live, replay, client)
            return False

        def mcp(self, method, headers, body, keep_alive, slots):
            """/mcp (§19), admitted like any request; an event stream, once its head is
            written, no longer counts as a request in handling."""
            try:
                reply = mcp.handle(method, headers, body, slots)
            finally:
                in_flight.release()
            if reply.stream is None:
                _respond(self.request, reply.status, reply.body, False, keep_alive,
                         reply.headers)
                return keep_alive
            try:
                _respond(self.request, 200, b"", False, False, reply.headers, stream=True)
            except BaseException:
                reply.stream.closed()
                raise
            serve_stream(self.request, reply.stream)
            return False

    return Connection


# MCP over HTTP (§19): the Streamable HTTP transport at /mcp, both eras, over the same
# dispatch as stdio; legacy sessions, and server-sent event streams for notifications.

MCP_PATH = "/mcp"
SESSION_IDLE = 1800.0      # seconds: a legacy session unused this long ends
MAX_SESSIONS = 256
MAX_STREAMS = 16           # event streams open at once per client address and Host (§25),
MAX_STREAMS_ALL = 64       # and in all: legacy GET, modern listen and /ui/events
KEEP_ALIVE = 15.0          # seconds between keep-alive comments on an idle stream


class Reply:
    """What /mcp answers: a status, a JSON body (or none), extra headers; or, when
    `stream` is set, an event stream that the connection then serves until it ends."""

    __slots__ = ("status", "body", "headers", "stream")

    def __init__(self, status, body=b"", headers=(), stream=None):
        self.status, self.body, self.headers, self.stream = status, body, list(headers), stream


class EventStream:
    """The frames waiting for one open event stream; `put` never blocks the writer."""

    def __init__(self, release):
        import queue
        self.frames = queue.Queue()
        self.release = release    # called once when the stream ends
        self.missed = None        # called when a write misses its deadline (§25.1)
        self.ended = False
        self.session = None       # a listen's own session, closed with the stream

    def put(self, frame):
        if not self.ended:
            self.frames.put(frame)

    def end(self):
        self.frames.put(None)

    def closed(self):
        """The stream is over (served to its end, or never served): free its place."""
        self.ended = True
        if self.session is not None:
            self.session.close()
        self.release()


def _rpc_error_body(msg_id, code, message, data=None):
    return _frame(msg_id, error=(code, message, data))


def _admits(accept, wanted):
    """Does an Accept header admit the media type `wanted`? (Absent admits anything.)"""
    if accept is None:
        return True
    kind = wanted.split("/")[0] + "/*"
    return any(part.split(";")[0].strip().lower() in (wanted, kind, "*/*")
               for part in accept.split(","))


def _header_value(value):
    """A 2026-07-28 header value: optional whitespace trimmed, `=?base64?…?=` decoded."""
    import base64
    import binascii
    value = value.strip(" \t")
    if value.startswith("=?base64?") and value.endswith("?=") and len(value) >= 11:
        try:
            return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
        except (binascii.Error, ValueError, UnicodeDecodeError):
            return None
    return value


class McpOverHttp:
    """POST, GET and DELETE of /mcp (§19)."""

    def __init__(self, live):
        import _thread
        self.live = live
        self.lock = _thread.allocate_lock()
        self.sessions = {}
        self.streams = 0
        self.held = {}        # (client address, Host) -> its open event streams

    def handle(self, method, headers, body, slots=None):
        """`slots`: whose event streams a stream opened here counts against (§25)."""
        if method == "POST":
            return self.post(headers, body, slots)
        version = headers.get("mcp-protocol-version")
        if method in ("GET", "DELETE") and version is not None and (
                version not in PROTOCOL_VERSIONS):
            return Reply(405, _rpc_error_body(None, -32600, "%s %s is not served to the "
                                              "2026-07-28 protocol" % (method, MCP_PATH)),
                         [("Allow", "POST")])
        if method == "GET":
            return self.open_stream(headers, slots)
        if method == "DELETE":
            session, problem = self.session_of(headers, None)
            if problem is not None:
                return problem
            self.end_session(session)
            return Reply(204)
        return Reply(405, _rpc_error_body(None, -32600, "method %s is not served at %s"
                                          % (method, MCP_PATH)),
                     [("Allow", "GET, POST, DELETE")])

    def close(self):
        """End every session and stream (the server is stopping)."""
        with self.lock:
            sessions, self.sessions = list(self.sessions.values()), {}
        for session in sessions:
            session.end()

    def peer_of(self, key):
        """The Peer of the live legacy session `key` names (§27: a REST request that names
        its MCP session acts for it), or None."""
        if key is None:
            return None
        with self.lock:
            session = self.sessions.get(key)
        return session.peer if session is not None else None

    # -- legacy sessions --------------------------------------------------------------

    def session_of(self, headers, msg_id):
        """(the live session the request names, None) or (None, the error Reply)."""
        key = headers.get("mcp-session-id")
        if key is None:
            return None, Reply(400, _rpc_error_body(msg_id, -32600,
                                                    "Mcp-Session-Id is required"))
        with self.lock:
            self._expire()
            session = self.sessions.get(key)
            if session is not None:
                session.used = time.monotonic()
        if session is None:
            return None, Reply(404, _rpc_error_body(msg_id, -32600,
                                                    "session not found; initialize again"))
        return session, None

    def new_session(self):
        session = Session(self.live, pushes=False, transport="http", key=os.urandom(16).hex())
        ended = []
        with self.lock:
            self._expire()
            while len(self.sessions) >= MAX_SESSIONS:   # the longest idle makes room
                oldest = min(self.sessions.values(), key=lambda s: s.used)
                ended.append(self.sessions.pop(oldest.key))
            self.sessions[session.key] = session
        for old in ended:
            old.end()
        return session

    def end_session(self, session):
        with self.lock:
            self.sessions.pop(session.key, None)
        session.end()

    def _expire(self):
        """End every session idle for SESSION_IDLE (called with the lock held)."""
        now = time.monotonic()
        for key in [k for k, s in self.sessions.items() if now - s.used > SESSION_IDLE]:
            self.sessions.pop(key).end()

    # -- POST -------------------------------------------------------------------------

    def post(self, headers, body, slots=None):
        try:
            message = json_loads(body.decode("utf-8"))
        except UnicodeDecodeError:
            return Reply(400, _rpc_error_body(None, -32700, "parse error: input is not UTF-8"))
        except (ValueError, RecursionError) as exc:
            return Reply(400, _rpc_error_body(None, -32700, "parse error: %s" % exc))
        if isinstance(message, dict) and not carried(message.get("id")):
            return Reply(400, _rpc_error_body(None, *BAD_ID))
        if not _admits(headers.get("accept"), "application/json"):
            return Reply(406, _rpc_error_body(_id_of(message), -32600, "the Accept header must "
                                              "admit application/json"))
        if isinstance(message, list):
            return self.batch(headers, message)
        if not isinstance(message, dict):
            return Reply(400, _rpc_error_body(None, -32600, "a message is a JSON object"))
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        method = message.get("method")
        if isinstance(method, str) and is_modern(method, params):
            return self.modern(headers, message, method, params, slots)
        return self.legacy(headers, message, method)

    def legacy(self, headers, message, method):
        msg_id = message.get("id")
        if method == "initialize" and msg_id is not None:
            session = self.new_session()
            params = message.get("params")
            asked = params.get("protocolVersion") if isinstance(params, dict) else None
            session.version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
            frame = dispatch(self.live, session, message)
            return Reply(200, frame, [("Mcp-Session-Id", session.key)])
        if msg_id is None and "mcp-session-id" not in headers or (
                method is None and ("result" in message or "error" in message)):
            return Reply(202)      # a response, or a notification with no session to go to
        session, problem = self.session_of(headers, msg_id)
        if problem is not None:
            return problem
        version = headers.get("mcp-protocol-version", "2025-03-26")
        if version not in PROTOCOL_VERSIONS:
            return Reply(400, _rpc_error_body(msg_id, -32600, "unsupported MCP-Protocol-Version "
                                              "'%s'" % version))
        frame = dispatch(self.live, session, message)
        session.follow()
        return Reply(202) if frame is None else Reply(200, frame)

    def batch(self, headers, messages):
        session, problem = (self.session_of(headers, None) if "mcp-session-id" in headers
                            else (None, None))
        if problem is not None:
            return problem
        if session is None or session.version != "2025-03-26":
            return Reply(400, _rpc_error_body(None, -32600, "a batch is served only to a session "
                                              "of protocol 2025-03-26"))
        if not messages:
            return Reply(400, _rpc_error_body(None, -32600, "empty batch"))
        frames = [f for f in (dispatch(self.live, session, m) for m in messages) if f]
        return Reply(200, b"[" + b",".join(frames) + b"]") if frames else Reply(202)

    def modern(self, headers, message, method, params, slots=None):
        """A 2026-07-28 request: no session; the envelope and the standard headers are
        checked first (400), an unknown method is 404, everything else 200."""
        msg_id = message.get("id")
        if msg_id is None:
            return Reply(202)      # a notification: nothing to check it against, nor answer
        version = headers.get("mcp-protocol-version")
        try:
            if version is None:
                raise RpcError(-32020, "header mismatch: MCP-Protocol-Version")
            check_modern_envelope(params, _header_value(version))
            if _header_value(headers.get("mcp-method", "")) != method:
                raise RpcError(-32020, "header mismatch: Mcp-Method")
            named = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
            if method in named:
                given = headers.get("mcp-name")
                if given is None or _header_value(given) != params.get(named[method]):
                    raise RpcError(-32020, "header mismatch: Mcp-Name")
        except RpcError as exc:
            return Reply(400, _rpc_error_body(msg_id, exc.code, exc.message, exc.data))
        entry = METHODS.get(method)
        if entry is None or not entry[2]:
            return Reply(404, _rpc_error_body(msg_id, -32601, "method not found: %s" % method))
        if method == "subscriptions/listen":
            return self.listen(message, slots)
        return Reply(200, dispatch(self.live, _stateless_session(self.live), message))

    # -- event streams ----------------------------------------------------------------

    def _stream(self, slots=None):
        """A new EventStream, or None when `slots` (a client address and Host) hold
        MAX_STREAMS already, or MAX_STREAMS_ALL are open in all."""
        with self.lock:
            held = self.held.get(slots, 0)
            if held >= MAX_STREAMS or self.streams >= MAX_STREAMS_ALL:
                return None
            self.streams += 1
            self.held[slots] = held + 1

        def release():
            with self.lock:
                self.streams -= 1
                left = self.held.pop(slots) - 1
                if left:
                    self.held[slots] = left
        return EventStream(release)

    def listen(self, message, slots=None):
        stream = self._stream(slots)
        if stream is None:
            return _busy_reply(message.get("id"))
        session = Session(self.live, stream.put)
        frame = dispatch(self.live, session, message)
        if frame is not None:        # refused (e.g. no notifications filter): plain JSON
            stream.closed()
            return Reply(200, frame)
        stream.session = session
        return Reply(200, stream=stream)

    def open_stream(self, headers, slots=None):
        if not same_origin(headers, strict=False):
            return Reply(403, _rpc_error_body(None, -32600, "a stream is not served to "
                                              "another site's page"))
        if not _admits(headers.get("accept"), "text/event-stream") or "accept" not in headers:
            return Reply(406, _rpc_error_body(None, -32600, "the Accept header must admit "
                                              "text/event-stream"))
        session, problem = self.session_of(headers, None)
        if problem is not None:
            return problem
        if session.stream is not None:
            return Reply(409, _rpc_error_body(None, -32600, "this session's stream is open "
                                              "already"))
        stream = self._stream(slots)
        if stream is None:
            return _busy_reply(None)
        session.stream = stream
        session.follow()
        stream.missed = lambda: self.end_session(session)    # dropped whole (§25.1)

        def release(release=stream.release):
            if session.stream is stream:
                session.stream = None
                self.live.unlisten(session.subscription)
            release()
        stream.release = release
        return Reply(200, stream=stream)


def same_origin(headers, strict):
    """Is a request from a page of this server (§25)? An Origin was checked against the
    Host already (§10), so one that is there is ours; else a browser's Sec-Fetch-Site
    says same-origin or none. Not `strict`: a request no browser marked at all (no
    Origin, no Sec-Fetch-Site: an MCP client) passes too."""
    site = headers.get("sec-fetch-site")
    if "origin" in headers or site in ("same-origin", "none"):
        return True
    return not strict and site is None


def _stateless_session(live):
    """The session of one 2026-07-28 request over HTTP: it has no state and no stream."""
    return Session(live, lambda frame: None, pushes=False)


def _busy_reply(msg_id):
    return Reply(503, _rpc_error_body(msg_id, -32600, "%d event streams are open; try again"
                                      % MAX_STREAMS), [("Retry-After", "1")])


def _id_of(message):
    return message.get("id") if isinstance(message, dict) else None


def serve_stream(sock, stream):
    """Write an event stream until it ends or the client goes: each frame one `data:`
    event, a keep-alive comment when idle. The body ends with the connection; so does a
    write that waits WRITE_DEADLINE (a stopped client), and then `stream.missed()`."""
    import queue
    import select
    import _socket
    last = time.monotonic()
    sock.settimeout(WRITE_DEADLINE)
    try:
        while True:
            try:
                frame = stream.frames.get(timeout=0.5)
            except queue.Empty:
                frame = b""
            if frame is None:
                return
            if isinstance(frame, tuple):          # a named event (§27: `peers`)
                sock.sendall(b"event: " + frame[0].encode("ascii") + b"\ndata: " + frame[1]
                             + b"\n\n")
                last = time.monotonic()
            elif frame:
                sock.sendall(b"data: " + frame + b"\n\n")
                last = time.monotonic()
            elif time.monotonic() - last >= KEEP_ALIVE:
                sock.sendall(b": keep-alive\n\n")
                last = time.monotonic()
            readable, _, _ = select.select([sock], [], [], 0)
            if readable and not sock.recv(65536):
                return             # the client closed the stream
    except _socket.timeout:
        log(INFO, "an event stream missed the write deadline; dropped",
            seconds=WRITE_DEADLINE)
        if stream.missed is not None:
            stream.missed()
    except OSError:
        return
    finally:
        stream.closed()


def http_server(live, host, port, access=None, options=None, bound=None, bridge=None):
    """The HTTP server of §10, §19, §22 bound to host:port (not yet serving), and its /mcp
    transport; `bound`, `access`, `options` and `bridge` as make_http_handler's."""
    import socket
    import socketserver

    class Server(socketserver.ThreadingTCPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        daemon_threads = True
        request_queue_size = 128
        closing = False               # set by an ending owner (Sharing.stop)

        def server_bind(self):
            exclusive_bind(self.socket)     # a port in use is exit 13 everywhere (§24)
            socketserver.TCPServer.server_bind(self)

        def verify_request(self, request, client_address):
            return not self.closing       # an ending owner takes no new connection

        def handle_error(self, request, client_address):
            # socketserver would print a traceback to stderr: one log line instead (a
            # handler's own errors are answered inside it; what lands here is the
            # server's, such as no thread to be had while the interpreter ends)
            import sys
            exc = sys.exc_info()[1]
            log(WARN, "a connection was dropped", peer="%s:%s" % client_address[:2],
                reason="%s: %s" % (type(exc).__name__, exc))

    mcp = McpOverHttp(live)
    return Server((host, port), make_http_handler(live, mcp, bound, access, options,
                                                  bridge)), mcp


def bound_name(host):
    """The Host header that names the address `host` (--host) literally, when it is one
    address (not a wildcard, not a name): the guard accepts it beside localhost's."""
    host = host.lower()
    if ":" in host:
        return None if host.strip(":0") == "" else "[%s]" % host
    if host.replace(".", "").isdigit() and host.strip("0.") != "":
        return host
    return None


def _is_loopback(host):
    return host == "localhost" or host.startswith("127.") or host == "::1"


# ---------------------------------------------------------------------------------------
# 23. The command line (§11): each command executes its capability through the registry's
#    CLI exposure; the text forms.
# ---------------------------------------------------------------------------------------

def inspect_text(gen):
    """§6 text: what would be served, labels padded to 12 columns."""
    index, listing = gen.index, mcp_listing(gen)
    totals = gen.registry.summary
    lines = ["%-11s %s" % ("repository", gen.root),
             "%-11s %s" % ("discovery", gen.decl.discovery),
             "%-11s %s" % ("state", index.state)]
    if index.context.problems:
        lines.append(context_problems_line(index.context))
    lines += ["%-11s %-12s %d" % ("kind", kind, count) for kind, count in index.kinds.items()]
    lines.append("capabilities %d (%d builtin, %d declarative)"
                 % (totals["total"], totals["builtin"], totals["declarative"]))
    lines += ["%-11s %s" % ("resource", uri) for uri in listing.resource_uris(gen)]
    lines += ["%-11s %s" % ("tool", t["name"]) for t in listing.tools]
    lines += ["%-11s %s" % ("note", note) for note in layer_notes(gen)]
    labels = {"error": "FAIL", "warning": "WARN", "info": "INFO"}
    lines += ["%-4s %-22s %s \u2014 %s" % (labels[d.severity], d.code, d.path or "-", d.message)
              for d in index.diagnostics]
    return "\n".join(lines) + "\n"


def layer_notes(gen):
    """§32: what a person most often gets wrong and the reader cannot call an error, for
    --inspect's text alone (no diagnostic, no state): each section path of the manifest
    that names nothing on disk, and under vcs discovery the files under a section's path
    that git would add (untracked, not ignored), counted per section, in manifest order."""
    manifest, root = gen.decl.manifest, gen.root
    if manifest is None:
        return []
    sections = [(name, path) for name, path in manifest.sections.items()
                if not manifest.is_local(path)]
    missing = {path for _, path in sections if not os.path.lexists(native_path(root, path))}
    unstaged = {}
    present = [path for _, path in sections if path not in missing
               and path != ".." and not path.startswith(("../", "/"))]
    if gen.decl.discovery == "vcs" and gen.dirs is not None and present:
        code, out, _ = _git(root, "ls-files", "--others", "--exclude-standard", "-z", "--",
                            *(":(literal)" + path for path in sorted(set(present))))
        for entry in out.split(b"\0") if code == 0 else ():
            name = manifest.section_of(entry.decode("utf-8", "replace"))
            if entry and name is not None:
                unstaged[name] = unstaged.get(name, 0) + 1
    notes = []
    for name, path in sections:
        if path in missing:
            notes.append("sections.%s: %s names nothing on disk" % (name, path))
        elif unstaged.get(name):
            notes.append("%d file(s) under %s not staged: git add" % (unstaged[name], path))
    return notes


_CLI_EXIT = ((InvalidInput, EXIT_USAGE), (NotFound, EXIT_MISSING),
             (RefusedPath, EXIT_REFUSED_PATH), (Refused, EXIT_CONTRACT),
             (Internal, EXIT_INTERNAL))


def execute_cli(gen, words, arguments):
    """Run the capability exposed as the CLI command `words`; errors become Fatal."""
    descriptor = gen.registry.by_cli.get(tuple(words))
    if descriptor is None:
        raise Fatal(EXIT_INTERNAL, "no capability is exposed as '%s'" % " ".join(words))
    try:
        return gen.execute(descriptor["id"], arguments)
    except CapabilityError as exc:
        code = next(code for error, code in _CLI_EXIT if isinstance(exc, error))
        hint = {"capabilities.describe": " (run: majordomus capabilities list)"}
        suffix = hint.get(descriptor["id"], "") if isinstance(exc, NotFound) else ""
        problems = (exc.data or {}).get("problems")
        if problems:   # one line each on stderr, then the refusal itself (§20.2)
            write_stderr("".join("%-4s %-22s %s \u2014 %s\n" % (
                "FAIL", p["code"], p.get("path", "-"), p["message"]) for p in problems))
            raise Fatal(code, exc.head + suffix)
        raise Fatal(code, exc.message + suffix)


def all_capabilities(gen, words, arguments):
    """§16: the CLI pages through capabilities.list to its end: one CapabilityList of
    everything (count = total, no next_cursor)."""
    chosen, cursor = [], None
    while True:
        page_arguments = dict(arguments, limit=200)
        if cursor is not None:
            page_arguments["cursor"] = cursor
        value = execute_cli(gen, words, page_arguments)
        chosen += value["capabilities"]
        cursor = value.get("next_cursor")
        if cursor is None:
            return {"count": len(chosen), "total": len(chosen), "summary": value["summary"],
                    "capabilities": chosen}


def _exposure_text(descriptor):
    exposure = descriptor["exposure"]
    mcp = exposure.get("mcp", {})
    marks = (["tool:" + mcp["tool"]] if "tool" in mcp else []) + (
        ["resource:" + mcp["resource"]["uri"]] if "resource" in mcp else []) + (
        ["prompt:" + mcp["prompt"]["name"]] if "prompt" in mcp else [])
    http = exposure.get("http")
    cli = exposure.get("cli")
    return (",".join(marks) or "-", "%s %s" % (http["method"], http["path"]) if http else "-",
            " ".join(cli["path"]) if cli else "-")


def search_text(value):
    """One line a hit, `score  uri  title` (`-` for a substring hit's score), then
    `N of TOTAL`."""
    lines = ["%s  %s  %s" % ("%.4f" % hit["score"] if "score" in hit else "-", hit["uri"],
                             hit.get("title", hit["identity"])) for hit in value["hits"]]
    return "\n".join(lines + ["%d of %d" % (value["count"], value["total"])]) + "\n"


def hook_output(answer):
    """What `majordomus hook` prints (§30): a HookAnswer in its client's documented JSON, on
    one line ('' when there is nothing to add). Claude Code and Codex: hookSpecificOutput
    with the event's name and additionalContext, or a PreToolUse permissionDecision deny
    (§31's guard); Gemini CLI: hookSpecificOutput with additionalContext, or its
    decision deny with the reason."""
    if answer.get("deny"):
        if answer["client"] == "gemini":
            value = {"decision": "deny", "reason": answer["deny"]}
        else:
            value = {"hookSpecificOutput": {"hookEventName": answer["hook_event_name"],
                                            "permissionDecision": "deny",
                                            "permissionDecisionReason": answer["deny"]}}
    elif answer.get("context"):
        value = {"hookSpecificOutput": {"hookEventName": answer["hook_event_name"],
                                        "additionalContext": answer["context"]}}
    else:
        return ""
    return json_compact(value) + "\n"


def peers_text(value):
    """`majordomus peers` as text: one line a session, then `N peer(s)`; what a peer said
    (its client's name, intent, scope) escaped (§25.1: another user's session may be one)."""
    lines = []
    for peer in value["peers"]:
        line = "%-4s %-24s %-7s since %s" % (peer["id"], escaped(peer["client"]),
                                              peer["transport"], peer["since"])
        if "@" in peer["id"]:      # another checkout's (§31)
            line += "  in %s" % escaped(peer.get("worktree") or "?")
        line += "  on %s" % escaped(peer.get("branch") or "(detached)")
        if "intent" in peer:
            line += "  intent: %s" % escaped(peer["intent"])
        if peer["scope"]:
            line += "  %s: %s" % ("claims" if peer.get("claim") else "scope",
                                  ", ".join(escaped(path) for path in peer["scope"]))
        if peer["overlaps"]:
            line += "  overlaps: %s" % ", ".join(peer["overlaps"])
        lines.append(line)
    boards = value.get("boards", 1)
    tail = "%d peer(s)" % value["count"] + ("" if boards == 1 else " on %d checkouts" % boards)
    if value.get("complete") is False:
        tail += " (a checkout's server did not answer)"
    return "\n".join(lines + [tail]) + "\n"


def capabilities_list_text(value):
    lines = []
    for descriptor in value["capabilities"]:
        mcp, http, cli = _exposure_text(descriptor)
        lines.append("%-48s %-9s %-22s mcp=%s http=%s cli=%s" % (
            descriptor["id"], descriptor["kind"], descriptor["stability"], mcp, http, cli))
    s = value["summary"]
    lines.append("capabilities: %d (%d builtin, %d declarative); mcp tools %d, mcp resources %d, "
                 "http routes %d, cli commands %d" % (
                     s["total"], s["builtin"], s["declarative"], s["mcp_tools"],
                     s["mcp_resources"], s["http_routes"], s["cli_commands"]))
    return "\n".join(lines) + "\n"


def capability_text(descriptor):
    provenance = descriptor["provenance"]
    if provenance["source"] == "builtin":
        origin = "builtin " + provenance["module"]
    else:
        origin = "%s (class %s, section %s)" % (provenance["path"], provenance["source_class"],
                                                provenance.get("section", "-"))
    exposure = descriptor["exposure"]
    http = exposure.get("http")
    cli = exposure.get("cli")
    rows = (("id", descriptor["id"]), ("kind", descriptor["kind"]),
            ("stability", descriptor["stability"]), ("title", descriptor["title"]),
            ("description", descriptor["description"]), ("provenance", origin),
            ("mcp", json_compact(exposure["mcp"])
             if "mcp" in exposure else "none"),
            ("http", "%s %s" % (http["method"], http["path"]) if http else "none"),
            ("cli", "majordomus " + " ".join(cli["path"]) if cli else "none"),
            ("input", descriptor["input"].get("name", "(anonymous)")),
            ("output", descriptor["output"].get("name", "(anonymous)")))
    return "".join("%-12s %s\n" % row for row in rows)


# §33: `context list | validate | affected | check-sync`, the later shell tool's text byte
# for byte (its findings' `%-4s %-11s SUBJECT — MESSAGE  [reproduce: …]`, columns padded by
# bytes as its printf pads them), and its exit codes.

def finding_line(finding):
    line = "%s %s %s \u2014 %s" % (_pad(finding["level"], 4), _pad(finding["category"], 11),
                                   finding["subject"], finding["message"])
    return line + ("  [reproduce: %s]\n" % finding["reproduce"] if finding["reproduce"]
                   else "\n")


def problem_lines(problems):
    """FAIL lines, one a problem of the context tree."""
    return "".join(map(finding_line, context_failures(problems)))


def context_list_text(value):
    lines = ["%s %s %s %s %s %s\n" % (_pad(d["id"], 28), _pad(d["path"], 44), _pad(d["scope"], 9),
                                      _pad(d["composition"], 7), _pad(",".join(d["providers"]), 14),
                                      d["status"]) for d in value["documents"]]
    if not value["documents"]:
        lines.append("no context document under %s/ (a Markdown file with front matter schema: "
                     "%s, kind: context)\n" % (value["tree"], value["schema"]))
    if not value["conventions"]:
        lines.append("the manifest names no file convention (context.documents); only the "
                     "contract identifies a document\n")
    if value["problems"]:
        lines.append(problem_lines(value["problems"]))
        lines.append("context list: %d problem(s); run: majordomus context validate\n"
                     % len(value["problems"]))
    return "".join(lines)


def context_validate_text(value):
    if value["problems"]:
        return problem_lines(value["problems"]) + (
            "context validate: %d problem(s) in %d document(s)\n"
            % (len(value["problems"]), value["documents"]))
    return finding_line(context_finding(
        "OK", value["tree"] + "/", "%d document(s) carry the contract; ids unique, references "
        "resolve, no final document superseded, no cycle" % value["documents"])) + (
        "context validate: 0 problem(s) in %d document(s)\n" % value["documents"])


def context_affected_text(value):
    return "".join(map(finding_line, value["findings"]))


def context_sync_text(value):
    status = value["status"]
    summary = {"invalid": "the tree does not validate", "drift": "drift found"}.get(
        status, "in sync (%d document(s), %d projection(s), %d affected)" % (
            value["documents"], value["projections"], value["affected"]))
    return "".join(map(finding_line, value["findings"])) + "context check-sync: %s\n" % summary


def context_exit(command, value):
    """The exit code of `context list | validate | affected | check-sync` (§33)."""
    if command == "context check-sync":
        return {"invalid": EXIT_CONTRACT, "drift": EXIT_DRIFT}.get(value["status"], EXIT_OK)
    valid = value.get("valid", command == "context list" or not value.get("problems"))
    return EXIT_OK if valid else EXIT_CONTRACT


CONTEXT_TEXTS = {"context list": context_list_text, "context validate": context_validate_text,
                 "context affected": context_affected_text,
                 "context check-sync": context_sync_text}


def write_stdout(text):
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except OSError as exc:
        if not is_closed_pipe(exc):
            raise
        _silence_stdout()


# ---------------------------------------------------------------------------------------
# 24. Sharing (§27): one server per repository root, found through a lease outside the
#    repository: the election, the owner's server, bridges that forward a client's frames
#    to the owner, and a takeover when the owner dies.
# ---------------------------------------------------------------------------------------

# Design.
# - Election. `mcp` (not --inspect, --standalone or MAJORDOMUS_STANDALONE=1) and `serve`
#   open the lease directory (made 0700; refused unless the user's, not writable by others,
#   not a symlink) and the root's lease in it, `<first 16 hex of sha256(real root)>.json`:
#     absent             -> create it (O_CREAT|O_EXCL, 0600), lock it, write its pid and
#                           token (no address yet): OWNER;
#     present, unlocked  -> its owner is dead (the kernel drops a dead process's lock, even
#                           after kill -9): stale: lock it, remove it, elect again (so every
#                           owner's lease is a file of its own, never a reused one);
#     locked, no address -> an owner is starting (its address comes with its port): wait
#                           while its pid is alive; empty, unreadable, or a pid not seen here
#                           for 1 s: stale (§25.1), removed, elect again;
#     locked, written    -> a live owner: BRIDGE, while GET /api/v1/repository answers for
#                           this root within 1 s (asked beside the bridge's own connection;
#                           an owner that has switched that connection is alive, and its
#                           report, a git status, may take up to 10 s on a large work tree);
#                           else stale: unlinked (when it is still that file), elect again;
#     a symlink, not the user's, not private, another root, version or options ->
#                           STANDALONE, the reason said at info.
#   The lock decides, not the pid or the file's existence: only one process can hold it, so
#   two that elect at once never both win, and a lease no process holds is stale however it
#   got there (a crash, kill -9, a file planted by hand).
# - Owner. Builds its index and serves its own client on stdio exactly as a standalone
#   server does; once its first answer is out (or 50 ms have passed) a thread binds
#   127.0.0.1:0, serves every route of §10, §19 and §22 there (an owner started by `mcp` is
#   private: every request without the lease's token is refused 401) and writes the lease.
#   Its client gone, it lingers while a bridge is attached and ends with the last; ending,
#   it removes the lease (if the file is still its own) and so lets the lock go.
# - Bridge. Builds no index. Its connection to the owner's /mcp asks to switch (HTTP/1.1
#   Upgrade: majordomus-stdio, 101) to the stdio framing, one JSON value a line each way,
#   and the owner serves that connection with its stdio loop (one Session, transport
#   `bridge`). So both eras, batches, requests before initialize, a second initialize, the
#   line bound and notifications written before the answer they precede are the owner's
#   stdio behaviour, carried as the lines they are: the bridge parses none of the owner's
#   frames. (Streamable HTTP differs from stdio in each of those; translating them would be
#   a second dispatch.) After each line it has handled, the owner writes one line of its
#   own, `+` (answered) or `-` (not), in the same write as the answer and the notifications
#   the line's handling wrote; a notification of another thread closes with `=`. The bridge
#   delivers a group when its mark comes: so it knows which of its client's lines are done
#   (and counts its answers), and an owner that dies mid-write leaves nothing half told.
# - Takeover. A bridge keeps what a new server needs to be the same server to its client:
#   the last legacy initialize, notifications/initialized, the resource subscriptions, the
#   open subscriptions/listen, the last announce (Kept); and the lines sent but not done.
#   When the owner's connection ends it elects again. Owner: it builds its index and
#   replays all that into a local session, whose writes are dropped. Bridge of another: it
#   sends the replay first (the handshake says how many lines: the owner keeps their
#   announce from the other peers, and the bridge drops what they produce). Then the lines
#   not done are sent again, and the client hears list_changed (the layer may have moved
#   meanwhile) and nothing else. Within 2 s: the dead owner's lock is free at once.

PROBE_SECONDS = 1.0       # a live owner answers GET /api/v1/repository within this
PROBE_GRACE = 10.0        # ... or, once it has switched a bridge's connection, this
START_WAIT = 30.0         # seconds a process waits for an owner that is starting
KICK_SECONDS = 0.05       # the owner binds once its first answer is out, or after this
OWNER_DEADLINE = 10.0     # seconds a bridge waits for its owner's answer (§25.1): then it
                          # answers its client with an error and elects again


# -- the lease ----------------------------------------------------------------------------

class LeaseFolder:
    """The lease directory, opened once and checked (§27): each lease is opened relative
    to that open directory where the platform can (no path is looked up twice)."""

    def __init__(self, path, handle):
        self.path, self.handle = path, handle

    def _at(self, name):
        return ({"dir_fd": self.handle}, name) if self.handle is not None else (
            {}, os.path.join(self.path, name))

    def open(self, name, flags, mode=0o600):
        kwargs, where = self._at(name)
        return os.open(where, flags | LEASE_FLAGS, mode, **kwargs)

    def stat(self, name):
        kwargs, where = self._at(name)
        return os.stat(where, follow_symlinks=False, **kwargs)

    def unlink(self, name, handle):
        """Remove the lease `name` if it is still the file open as `handle`."""
        try:
            if same_file(self.stat(name), os.fstat(handle)):
                kwargs, where = self._at(name)
                os.unlink(where, **kwargs)
        except OSError:
            pass

    def where(self, name):
        return os.path.join(self.path, name)

    def replace(self, name, other):
        """Put the file `name` in the place of `other`, in one rename."""
        if self.handle is not None and os.rename in os.supports_dir_fd:
            os.replace(name, other, src_dir_fd=self.handle, dst_dir_fd=self.handle)
        else:
            os.replace(self.where(name), self.where(other))

    def remove(self, name):
        kwargs, where = self._at(name)
        try:
            os.unlink(where, **kwargs)
        except OSError:
            pass


def open_lease_folder():
    """(LeaseFolder, None), or (None, why the lease directory cannot be used)."""
    path, why = lease_directory()
    if path is None:
        return None, why
    try:
        make_private_folder(path)
    except FileExistsError:
        pass                      # (what is there is checked below, never followed)
    except OSError as exc:
        return None, "the lease directory %s cannot be made: %s" % (path, _os_reason(exc))
    handle = None
    try:
        if FOLDER_OPEN is not None:
            handle = os.open(path, FOLDER_OPEN)
            info = os.fstat(handle)
        else:
            info = os.lstat(path)
    except OSError as exc:
        import errno
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) or os.path.islink(path):
            return None, "the lease directory %s is a symlink" % path
        return None, "the lease directory %s cannot be opened: %s" % (path, _os_reason(exc))
    why = unsafe_folder(info, path)
    if why is not None:
        if handle is not None:
            os.close(handle)
        return None, why
    return LeaseFolder(path, handle), None


def lease_name(root):
    """The lease of a root: the first 16 hex digits of sha256 of its real path, .json."""
    return root_digest(root)[:16] + ".json"


# The trees of a root's texts (TreeCache), kept beside its lease for the next process's first
# build: `trees-<16 hex>-<bytecode tag>.marshal`, 0600, written by an owner once its first
# answer is out and by a hook that read the layer itself, never by a standalone process.
TREES_LIMIT = 256 << 20


def module_identity():
    """What names this module's build and interpreter, for TreeCache: the version, the
    bytecode tag, and the path, size and time of the file that holds the module (the
    archive, or majordomus.py); None when no such file is found."""
    where = os.path.abspath(__file__)
    while True:
        try:
            info = os.stat(where)
            if stat.S_ISREG(info.st_mode):
                return "%s %s %s %d %d" % (VERSION, sys.implementation.cache_tag, where,
                                           info.st_size, info.st_mtime_ns)
        except OSError:
            pass                           # a member of the archive: its parent is the file
        parent = os.path.dirname(where)
        if parent == where:
            return None
        where = parent


def _trees_name(root):
    return "trees-%s-%s.marshal" % (root_digest(root)[:16], sys.implementation.cache_tag)


def tree_cache(folder, root):
    """The TreeCache of a root's first build from what the lease directory `folder` keeps
    (None without one): the file read as a lease is (never through a link, this user's
    own, 0600), when the build first asks."""
    identity = module_identity() if folder is not None else None
    if identity is None:
        return None
    name = _trees_name(root)

    def read():
        handle = folder.open(name, os.O_RDONLY)
        try:
            info = os.fstat(handle)
            if unsafe_lease(info, folder.where(name)) is not None or (
                    info.st_size > TREES_LIMIT):
                return b""
            return read_whole(handle, info.st_size, TREES_LIMIT)
        finally:
            os.close(handle)
    return TreeCache(read, identity)


def keep_trees(folder, root, cache):
    """Keep what the next process's first build reads (TreeCache.data) where it changed: a
    new file renamed over the old one, so that a reader finds the one or the other whole."""
    data = cache.data() if cache is not None and folder is not None else None
    if data is None or len(data) > TREES_LIMIT:
        return
    name = _trees_name(root)
    temporary = "%s.%d.tmp" % (name, os.getpid())
    try:
        handle = folder.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except OSError:
        return                            # (the next process tries again)
    try:
        write_whole(handle, data)
        os.close(handle)
        handle = None
        folder.replace(temporary, name)
    except OSError:
        folder.remove(temporary)
    finally:
        if handle is not None:
            os.close(handle)


class Refusal(Exception):
    """This process cannot share: it serves standalone, and says why at info."""


class Lease:
    """The lease this process owns: its file, open and locked (the lock is the ownership)."""

    def __init__(self, folder, name, handle, root):
        self.folder, self.name, self.handle, self.root = folder, name, handle, root
        self.token = os.urandom(32).hex()
        self.url = None

    def write(self, url):
        """The lease's JSON, in one write over an emptied file (a reader of a partial one
        waits and reads again)."""
        self.url = url
        if self.handle is None:
            return                  # released already: the owner is ending
        data = json_pretty({"root": self.root, "url": url, "pid": os.getpid(),
                            "token": self.token, "version": VERSION,
                            "started": utc_stamp()}).encode("utf-8") + b"\n"
        os.ftruncate(self.handle, 0)
        os.lseek(self.handle, 0, os.SEEK_SET)
        write_whole(self.handle, data)

    def release(self):
        """Remove the lease (when the file is still this one) and let the lock go."""
        if self.handle is None:
            return
        self.folder.unlink(self.name, self.handle)
        os.close(self.handle)
        self.handle = None


def read_lease(handle):
    """The lease's fields, or None while it is empty or partly written."""
    try:
        os.lseek(handle, 0, os.SEEK_SET)
        data = os.read(handle, 65536)
        value = json_loads(data.decode("utf-8")) if data.strip() else None
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(value, dict) or not all(isinstance(value.get(key), kind) for key, kind in (
            ("root", str), ("url", str), ("pid", int), ("token", str), ("version", str))):
        return None
    return value


_AGAIN = ("again", None)      # an election's look that must be taken again at once


class Elector:
    """Who serves this root (§27): elect() -> ("owner", Lease) or ("bridge", the lease's
    fields); a Refusal when this process must serve standalone."""

    def __init__(self, root, folder, options):
        self.root, self.folder, self.options = root, folder, options
        self.name = lease_name(root)
        self.where = folder.where(self.name)
        self.first_seen = {}      # (device, inode) of a lease that names no live owner

    def elect(self, wait=START_WAIT):
        deadline = time.monotonic() + wait
        while True:
            outcome = self._try()
            if outcome is _AGAIN:
                continue
            if outcome is not None:
                return outcome
            if time.monotonic() > deadline:
                raise Refusal("the server holding the lease %s has not answered within %d s"
                              % (self.where, wait))
            time.sleep(0.01)

    def _try(self):
        """One look at the lease: an outcome, or None to look again shortly."""
        created = True
        try:
            handle = self.folder.open(self.name, os.O_RDWR | os.O_CREAT | os.O_EXCL)
            # (created: empty, and locked below before anything is written)
        except FileExistsError:
            created = False
            try:
                handle = self.folder.open(self.name, os.O_RDWR)
            except FileNotFoundError:
                return None                      # removed meanwhile: look again
            except OSError as exc:
                import errno
                if exc.errno in (errno.ELOOP, errno.EMLINK) or _is_link(self.folder, self.name):
                    raise Refusal("the lease %s is a symlink" % self.where)
                raise Refusal("the lease %s cannot be opened: %s" % (self.where,
                                                                   _os_reason(exc)))
        except OSError as exc:
            raise Refusal("the lease %s cannot be made: %s" % (self.where, _os_reason(exc)))
        try:
            why = unsafe_lease(os.fstat(handle), self.where)
            if why is not None:
                raise Refusal(why)
            if lock_lease(handle):
                if not _still_there(self.folder, self.name, handle):
                    return None                  # unlinked under us: look again
                if not created:
                    # No process holds it: stale. Its file goes (this process holds its
                    # lock, so no other can own it meanwhile) and a new one is created: an
                    # owner's lease is always a file of its own, so that a process judging
                    # the old one stale can never remove the new owner's.
                    stale = read_lease(handle)
                    log(INFO, "replacing a stale lease", lease=self.where,
                        pid=stale["pid"] if stale else "-")
                    self.folder.unlink(self.name, handle)
                    return _AGAIN
                lease, handle = Lease(self.folder, self.name, handle, self.root), None
                lease.write("")   # its owner named at once; its address once it has a port
                return "owner", lease
            fields = read_lease(handle)
            if fields is None or not fields["url"]:
                # Empty or unreadable, or an owner still starting (no port yet): while its
                # pid is alive it is waited for; else, 1 s on, the lease is stale (§25.1).
                if fields is not None and process_alive(fields["pid"]):
                    return None
                if not self._stuck(handle):
                    return None
                log(INFO, "replacing a lease that names no live owner", lease=self.where,
                    pid=fields["pid"] if fields else "-")
                self.folder.unlink(self.name, handle)
                return _AGAIN
            if fields["root"] != self.root:
                raise Refusal("the lease %s names another root" % self.where)
            if fields["version"] != VERSION:
                raise Refusal("the shared server (pid %d) is majordomus %s, not %s"
                              % (fields["pid"], fields["version"], VERSION))
            return "bridge", fields     # (a pid not seen here: the probe decides, §25.1)
        finally:
            if handle is not None:
                os.close(handle)

    def exists(self):
        """Is there a lease for this root at all (a look, no more)?"""
        try:
            self.folder.stat(self.name)
            return True
        except OSError:
            return False

    def _stuck(self, handle):
        """Has this lease file looked the same (empty, or naming a pid not seen here) for
        PROBE_SECONDS since this process first saw it so?"""
        info = os.fstat(handle)
        first = self.first_seen.setdefault((info.st_dev, info.st_ino), time.monotonic())
        return time.monotonic() - first >= PROBE_SECONDS

    def stale(self, fields):
        """The owner named by `fields` does not answer: remove its lease so that the next
        election replaces it, if the file there still names it (its token: a file's inode
        number is no identity once the file is gone, and the next lease may reuse it)."""
        log(INFO, "the shared server does not answer; replacing its lease", pid=fields["pid"],
            lease=self.where)
        try:
            handle = self.folder.open(self.name, os.O_RDONLY)
        except OSError:
            return
        try:
            now = read_lease(handle)
            if now is not None and now["token"] == fields["token"]:
                self.folder.unlink(self.name, handle)      # (it checks the open file)
        finally:
            os.close(handle)


def live_lease(folder, root):
    """The fields of the lease of `root` while a live owner holds it, else None (a look,
    never a change: `majordomus peers`)."""
    name = lease_name(root)
    try:
        handle = folder.open(name, os.O_RDWR)
    except OSError:
        return None
    try:
        if unsafe_lease(os.fstat(handle), name) is not None or lock_lease(handle):
            return None          # (a lease this look could lock has no owner)
        fields = read_lease(handle)
        return fields if fields is not None and fields["root"] == root and fields["url"] \
            else None
    finally:
        os.close(handle)


def _still_there(folder, name, handle):
    try:
        return same_file(folder.stat(name), os.fstat(handle))
    except OSError:
        return False


def _is_link(folder, name):
    try:
        return stat.S_ISLNK(folder.stat(name).st_mode)
    except OSError:
        return False


def same_file(a, b):
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def options_text(options):
    """The options that change what a server answers: a bridge attaches only to an owner
    serving with the same ones (§27; its answers must be a standalone server's)."""
    return "discovery=%s watch=%s strict=%s" % (
        options.get("--discovery", "vcs"), "off" if "--no-watch" in options.flags else "on",
        "on" if "--strict" in options.flags else "off")


def standalone_reason(options):
    """Why this process does not look for a shared server (None: it does)."""
    if "--standalone" in options.flags:
        return "--standalone"
    if os.environ.get("MAJORDOMUS_STANDALONE", "").strip() == "1":
        return "MAJORDOMUS_STANDALONE=1"
    return None


# -- loopback HTTP from the bridge's side: a few requests, no http.client -----------------

def url_address(url):
    """(host, port) of a lease's `http://HOST:PORT` on loopback, the host written as the
    literal 127.0.0.1 or [::1] (§25.1: no other address, no name); Refusal otherwise."""
    rest = url[len("http://"):] if url.startswith("http://") else ""
    host, _, port = rest.rstrip("/").rpartition(":")
    if host == "[::1]":
        host = "::1"
    port = number_or(port, None)
    if port is None or host not in ("127.0.0.1", "::1"):
        raise Refusal("the lease names %r, not a loopback HTTP address" % url)
    return host, port


def http_exchange(url, head, body=b"", timeout=PROBE_SECONDS, switch=False):
    """One request on a fresh connection to `url`'s server: (status, headers, body) where
    body is the whole answer's; with `switch`, a 101 answer keeps the connection:
    (101, headers, (socket, the bytes read past the head)). OSError when it fails."""
    import _socket
    host, port = url_address(url)
    sock = _socket.socket(_socket.AF_INET6 if ":" in host else _socket.AF_INET,
                          _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect((host, port))
        hostport = "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)
        sock.sendall(("%s\r\nHost: %s\r\n\r\n" % (head, hostport)).encode("latin-1") + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk or len(data) > HEAD_LIMIT:
                raise OSError("the server closed the connection")
            data += chunk
        top, _, rest = data.partition(b"\r\n\r\n")
        lines = top.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        status = number_or(parts[1], None) if len(parts) >= 2 else None
        if status is None:
            raise OSError("not an HTTP answer")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if status == 101 and switch:
            sock.settimeout(None)
            kept, sock = sock, None
            return status, headers, (kept, rest)
        length = number_or(headers.get("content-length", "0"), 0)
        while len(rest) < length:
            chunk = sock.recv(min(65536, length - len(rest)))
            if not chunk:
                break
            rest += chunk
        return status, headers, rest
    finally:
        if sock is not None:
            sock.close()


def _error_message(body):
    try:
        return json_loads(body.decode("utf-8"))["error"]["message"]
    except Exception:  # not our error body
        return "HTTP error"


def probe(fields, timeout=PROBE_SECONDS):
    """§27: the root the lease's owner names in its answer to GET /api/v1/repository, or
    None when it does not answer (within `timeout` for each step) with a report."""
    try:
        status, _, body = http_exchange(
            fields["url"], "GET /api/v1/repository HTTP/1.1\r\nAuthorization: Bearer %s\r\n"
            "Connection: close" % fields["token"], timeout=timeout)
        return json_loads(body.decode("utf-8"))["repository"]["root"] if status == 200 \
            else None
    except Exception:  # no answer, or no report
        return None


class LineReader:
    """Lines from a socket, as io.BufferedReader.readline(limit) reads them from a file. A
    socket with a timeout (its writes' deadline) is waited on past it: each time it passes
    with nothing read, `idle()` says whether to go on waiting (None: always)."""

    def __init__(self, sock, data=b"", idle=None):
        self.sock, self.data, self.idle = sock, data, idle

    def readline(self, limit=-1):
        parts, size, data = [], 0, self.data
        while True:
            end = data.find(b"\n")
            if end >= 0 and (limit < 0 or size + end < limit):
                parts.append(data[:end + 1])
                self.data = data[end + 1:]
                return b"".join(parts)
            if 0 <= limit <= size + len(data):
                parts.append(data[:limit - size])
                self.data = data[limit - size:]
                return b"".join(parts)
            parts.append(data)
            size += len(data)
            data = self._recv()
            if not data:
                self.data = b""
                return b"".join(parts)

    def _recv(self):
        import _socket
        while True:
            try:
                return self.sock.recv(262144)
            except _socket.timeout:
                if self.idle is not None and not self.idle():
                    return b""
            except OSError:
                return b""


class Remote:
    """A bridge's connection to the owner, switched to the stdio framing."""

    def __init__(self, sock, rest, fields):
        self.sock, self.reader, self.fields = sock, LineReader(sock, rest), fields

    def send(self, data):
        try:
            self.sock.sendall(data)
        except OSError:
            pass          # the reader sees the end, and the lines are sent again

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def switch_to_owner(fields, root, options, replay):
    """Connect to the owner's /mcp and switch to the stdio framing, asking the owner beside
    it for its repository report (the probe of §27); a Remote. StaleOwner when the owner
    answers neither within PROBE_SECONDS; Refusal when this process must serve standalone
    (refused, or the owner serves another root). An owner that switched the connection is
    alive: its report may take longer (git status on a large work tree), PROBE_GRACE."""
    import _thread
    answered = []
    done = _thread.allocate_lock()
    done.acquire()

    def ask():
        answered.append(probe(fields, PROBE_GRACE))
        done.release()
    _thread.start_new_thread(ask, ())
    try:
        status, headers, body = http_exchange(
            fields["url"], "GET %s HTTP/1.1\r\nAuthorization: Bearer %s\r\nConnection: "
            "Upgrade\r\nUpgrade: %s\r\nMajordomus-Options: %s\r\nMajordomus-Replay: %d\r\n"
            "Majordomus-Client-Pid: %d" % (MCP_PATH, fields["token"], LEASE_PROTOCOL, options,
                                           replay, os.getppid()), switch=True)
    except OSError:
        status = None
    done.acquire(True, PROBE_GRACE if status == 101 else PROBE_SECONDS)
    if status == 101 and answered == [root]:
        return Remote(body[0], body[1], fields)
    if status == 101:
        body[0].close()
    if status in (401, 409):
        raise Refusal("the shared server (pid %d) refused this process: %s"
                      % (fields["pid"], _error_message(body)))
    if answered and answered[0] not in (None, root):
        raise Refusal("the server the lease names serves %s" % answered[0])
    raise StaleOwner()


class StaleOwner(Exception):
    """The lease's owner holds its lock but does not answer."""


# -- what a takeover replays --------------------------------------------------------------

class Kept:
    """The requests that made this client's session what it is (§27): replayed into the
    next server so that it is the same server to the client."""

    _WORDS = (b"initialize", b"subscribe", b"listen", b"cancelled", b"majordomus_announce")

    def __init__(self):
        self.initialize = self.initialized = self.announce = None
        self.subscribed, self.listens = {}, {}

    def note(self, line):
        if line is OVERSIZED or not any(word in line for word in self._WORDS):
            return
        value, _ = parse_frame(line)
        for message in value if isinstance(value, list) else [value]:
            if isinstance(message, dict) and isinstance(message.get("method"), str):
                self._note(message)

    def _note(self, message):
        method, msg_id = message["method"], message.get("id")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        modern = is_modern(method, params)
        if msg_id is None:
            if method == "notifications/initialized":
                self.initialized = message
            elif method == "notifications/cancelled" and "requestId" in params:
                self.listens.pop(_id_key(params["requestId"]), None)
        elif method == "initialize" and not modern:
            self.initialize = message
        elif method in ("resources/subscribe", "resources/unsubscribe") and not modern:
            uri = params.get("uri")
            if isinstance(uri, str):
                self.subscribed.pop(uri, None)
                if method == "resources/subscribe":
                    self.subscribed[uri] = message
        elif method == "subscriptions/listen" and modern:
            self.listens[_id_key(msg_id)] = message
        elif method == "tools/call" and params.get("name") == "majordomus_announce":
            self.announce = message

    def lines(self):
        messages = [self.initialize, self.initialized] + list(self.subscribed.values()) + list(
            self.listens.values()) + [self.announce]
        return [_json_bytes(m) + b"\n" for m in messages if m is not None]

    def list_changed(self):
        """The frames that tell this client the lists may have changed."""
        frames = []
        if self.initialize is not None and self.initialized is not None:
            frames += [_notification("notifications/resources/list_changed", None),
                       _notification("notifications/prompts/list_changed", None)]
        for message in self.listens.values():
            wanted = (message.get("params") or {}).get("notifications")
            wanted = wanted if isinstance(wanted, dict) else {}
            tag = {META_SUBSCRIPTION: message["id"]}
            for flag, method in (("resourcesListChanged", "notifications/resources/list_changed"),
                                 ("promptsListChanged", "notifications/prompts/list_changed")):
                if wanted.get(flag) is True:
                    frames.append(_notification(method, {"_meta": tag}))
        return frames


# -- the owner's side: its HTTP server, and a bridge's connection -------------------------

# -- the other checkouts of the repository (§31) ---------------------------------------------

class Neighbourhood:
    """The other checkouts of this repository (worktrees sharing its git common dir), read
    through their servers' leases (same user, same token rule as a bridge's): their boards,
    each asked within 1 s; what their servers are told of an announce here; and the lock,
    beside the leases, that decides the repository's claims one at a time. Installed on an
    owner's board (Board.neighbours, tell_afar, claims_lock)."""

    def __init__(self, live, folder):
        self.live, self.folder = live, folder
        dirs = live.generation.dirs
        self.name = "%s.claims" % root_digest(dirs.common_dir)[:16] if dirs else None

    def install(self, board):
        if self.name is not None:
            board.neighbours, board.tell_afar = self.boards, self.tell
            board.claims_lock = self.claims_lock

    def _servers(self):
        """(root, lease fields) of each other checkout whose server is live."""
        gen = self.live.generation
        for root in checkouts(gen.dirs, gen.root) if gen.dirs is not None else ():
            fields = live_lease(self.folder, root)
            if fields is not None:
                yield root, fields

    def boards(self):
        """([Afar] of the other checkouts' boards, every server answered?, boards read).
        The servers are asked at once, a thread each beyond the first: a claim waits for
        the slowest board, not for their sum."""
        import _thread
        servers = list(self._servers())
        views = [None] * len(servers)
        done = []
        for i in range(1, len(servers)):
            lock = _thread.allocate_lock()
            lock.acquire()
            done.append(lock)
            _thread.start_new_thread(self._read_board, (servers[i][1], views, i, lock))
        if servers:
            self._read_board(servers[0][1], views, 0, None)
        for lock in done:       # each ends within http_exchange's timeout
            lock.acquire()
        afar, read = [], 0
        for (root, _), board in zip(servers, views):
            if board is not None:
                read += 1
                tag = checkout_tag(root)
                afar += [Afar(view, tag) for view in board]
        return afar, read == len(servers), read

    @staticmethod
    def _read_board(fields, views, i, lock):
        try:
            status, _, body = http_exchange(
                fields["url"], "GET /api/v1/peers?local=true HTTP/1.1\r\nAuthorization: "
                "Bearer %s\r\nConnection: close" % fields["token"])
            peers = json_loads(body.decode("utf-8"))["peers"] if status == 200 else None
            views[i] = [view for view in peers if isinstance(view, dict)
                        and isinstance(view.get("id"), str)
                        and isinstance(view.get("scope"), list)]
        except Exception:  # no answer within the probe's second, or not a board
            pass
        finally:
            if lock is not None:
                lock.release()

    def tell(self, view):
        """Tell the other checkouts' servers of an announce here (a thread of its own: the
        announcer is answered meanwhile)."""
        import _thread
        body = json_compact({"peer": {key: value for key, value in view.items()
                                      if key != "handle"}}).encode("utf-8")

        def send():
            for _, fields in self._servers():
                try:
                    http_exchange(fields["url"], "POST /api/v1/peers/tell HTTP/1.1\r\n"
                                  "Authorization: Bearer %s\r\nContent-Type: application/"
                                  "json\r\nContent-Length: %d\r\nConnection: close"
                                  % (fields["token"], len(body)), body)
                except Exception:  # a server that does not answer is told nothing
                    log(DEBUG, "another checkout's server was not told", url=fields["url"])
        _thread.start_new_thread(send, ())

    def claims_lock(self):
        return _ClaimsLock(self.folder, self.name)


class _ClaimsLock:
    """The repository's claims, decided one at a time across its checkouts' servers: a lock
    on a file beside the leases (2 s at most; then the claim is decided all the same)."""

    def __init__(self, folder, name):
        self.folder, self.name, self.handle = folder, name, None

    def __enter__(self):
        try:
            self.handle = self.folder.open(self.name, os.O_RDWR | os.O_CREAT)
        except OSError:
            return self
        deadline = time.monotonic() + 2.0
        while not lock_lease(self.handle) and time.monotonic() < deadline:
            time.sleep(0.002)
        return self

    def __exit__(self, *exc):
        if self.handle is not None:
            os.close(self.handle)        # (the lock goes with it)
            self.handle = None
        return False


# -- a client's hook (§30): asked of the owner, or answered here with a file's memory -------

HOOK_MEMORY_DAYS = 7      # a session's memory file unused this long is removed
HOOK_ASK_SECONDS = 1.5    # what a hook waits for a live owner's answer at most
HOOK_MEMORY_WAIT = 1.0    # what a hook waits for another hook of its session at most


class FileMemory:
    """What each session was given (§30) where no owner is live: a small file per root and
    session in the lease directory (never in the repository), `hook-<16 hex>.json`, 0600,
    read and written under its lock (two hooks of one session at once take turns). Used
    like HookMemory: `session(key)` is a context manager yielding the session's items."""

    def __init__(self, folder, root):
        self.folder, self.root = folder, root

    def session(self, key):
        return _MemoryFile(self, key)


class _MemoryFile:
    def __init__(self, memory, key):
        self.memory = memory
        self.name = "hook-%s.json" % text_digest(memory.root + "\0" + key)[:16]
        self.handle, self.given, self.before = None, {}, []

    def __enter__(self):
        folder = self.memory.folder
        try:
            try:
                handle = folder.open(self.name, os.O_RDWR | os.O_CREAT | os.O_EXCL)
                _sweep_memories(folder)
            except FileExistsError:
                handle = folder.open(self.name, os.O_RDWR)
        except OSError:
            return self.given           # no memory: this hook repeats
        try:
            info = os.fstat(handle)
            if unsafe_lease(info, folder.where(self.name)) is not None:
                raise OSError("not a memory file of this user's")
            deadline = time.monotonic() + HOOK_MEMORY_WAIT
            while not lock_lease(handle) and time.monotonic() < deadline:
                time.sleep(0.005)
            os.lseek(handle, 0, os.SEEK_SET)
            data = read_whole(handle, info.st_size, HOOK_INPUT)
            value = json_loads(data.decode("utf-8")) if data.strip() else {}
            kept = value.get("given") if isinstance(value, dict) and value.get(
                "root") == self.memory.root else None
            if isinstance(kept, list):
                self.given.update((item, True) for item in kept if isinstance(item, str))
        except (OSError, ValueError, UnicodeDecodeError, RecursionError):
            self.given.clear()          # unreadable: this session starts again
        self.handle, self.before = handle, list(self.given)
        return self.given

    def __exit__(self, *exc):
        handle, self.handle = self.handle, None
        if handle is None:
            return False
        try:
            if list(self.given) != self.before:
                data = json_compact({"root": self.memory.root,
                                     "given": list(self.given)[-HOOK_KEPT:]}).encode("utf-8")
                os.ftruncate(handle, 0)
                os.lseek(handle, 0, os.SEEK_SET)
                write_whole(handle, data)
        except OSError:
            pass                        # the next hook repeats what this one said
        finally:
            os.close(handle)
        return False


def _sweep_memories(folder):
    """Remove the session memories (and the kept trees, keep_trees) of the lease directory
    unused for HOOK_MEMORY_DAYS."""
    try:
        names = [name for name in os.listdir(folder.path)
                 if name.startswith(("hook-", "trees-"))]
    except OSError:
        return
    old = time.time() - HOOK_MEMORY_DAYS * 86400
    for name in names:
        try:
            if folder.stat(name).st_mtime < old:
                os.unlink(folder.where(name))
        except OSError:
            pass


class _Holding:
    """A generation held as a live process holds one (what Neighbourhood reads)."""

    def __init__(self, gen):
        self.generation = gen


class ColdHooks(HookHost):
    """What a one-shot hook lends hook.deliver where no owner is live for its root (§30):
    a file's memory in the lease directory; the sessions and claims of the repository's
    other checkouts, read from their servers (§31: none can be here, where no server
    runs)."""

    def __init__(self, folder, gen):
        HookHost.__init__(self, FileMemory(folder, gen.root) if folder is not None else None)
        self.folder, self.gen = folder, gen

    def afar(self):
        """[Afar] of the other checkouts' boards (none without a lease directory or git)."""
        if self.folder is None or self.gen.dirs is None:
            return []
        return Neighbourhood(_Holding(self.gen), self.folder).boards()[0]

    def peers(self, ancestors):
        """The sessions of the other checkouts (none can be here, where no server runs;
        None when there are none either)."""
        return [(other.view, False) for other in self.afar()] or None

    def claims(self, targets):
        afar = self.afar()
        if not afar:
            return []
        mine = ScopeIndex()
        mine.add(None, targets)
        found = [{"id": other.id, "client": other.client, "branch": other.branch,
                  "worktree": other.worktree, "pid": None,
                  "paths": [path for path in other.scope if mine.overlapping(path)]}
                 for other in afar if other.claim]
        return [claim for claim in found if claim["paths"]]


def hook_from_owner(fields, arguments):
    """§30's warm path: hook.deliver asked of the live owner the lease `fields` name (its
    token), by its HTTP route; (the HookAnswer, None), or (None, the owner's refusal) for
    an answer that refuses the input; OSError when the owner does not answer in time (or
    answers otherwise): the hook then reads the layer itself."""
    body = json_compact(arguments).encode("utf-8")
    status, _, data = http_exchange(
        fields["url"], "POST %s HTTP/1.1\r\nAuthorization: Bearer %s\r\nContent-Type: "
        "application/json\r\nContent-Length: %d\r\nConnection: close" % (
            HOOK_ROUTE, fields["token"], len(body)), body, timeout=HOOK_ASK_SECONDS)
    if status == 200:
        try:
            value = json_loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError):
            value = None
        if isinstance(value, dict) and isinstance(value.get("context"), str):
            return value, None
    elif status in (400, 404, 422):
        try:
            error = json_loads(data.decode("utf-8"))["error"]
            return None, "%s: %s" % (error["code"].replace("_", " "), error["message"])
        except Exception:  # not our error body
            return None, "the shared server refused the hook's input (HTTP %d)" % status
    raise OSError("the shared server answered %s" % status)


class Sharing:
    """An owner's lease and server: a thread binds 127.0.0.1:0 once `kick()` says the
    first answer is out (or KICK_SECONDS passed), writes the lease and serves until
    `stop()`. (The thread ends then: where it was the first to import threading, the
    interpreter takes it for its main thread and waits for it at exit.)"""

    def __init__(self, elector, lease):
        import _thread
        self.elector, self.lease = elector, lease
        self.server, self.stopping = None, False
        self.lock = _thread.allocate_lock()
        self._kick = _thread.allocate_lock()
        self._kick.acquire()
        self._ended = _thread.allocate_lock()   # held while the server's thread runs

    def start(self, live, kicked=False):
        import _thread
        Neighbourhood(live, self.lease.folder).install(live.board)
        if kicked:
            self.kick()
        self._ended.acquire()
        _thread.start_new_thread(self._serve, (live,))

    def kick(self):
        if self._kick.locked():
            self._kick.release()

    def _serve(self, live):
        try:
            self._run(live)
        finally:
            self._ended.release()

    def _run(self, live):
        self._kick.acquire(True, KICK_SECONDS)
        # The first build's trees, kept for the next process (a session that ended at
        # once keeps them too): off the path to the first answer, as the port is.
        trees, live.trees = live.trees, None
        keep_trees(self.lease.folder, self.lease.root, trees)
        if self.stopping:
            return
        try:
            server, _ = http_server(live, "127.0.0.1", 0, Access(self.lease.token, False),
                                    self.elector.options, bridge=serve_bridge)
        except Exception as exc:  # the session goes on unshared; others take the lease
            log(WARN, "the shared server cannot start; serving this client alone",
                reason="%s: %s" % (type(exc).__name__, exc))
            self.stop(wait=False)
            return
        with self.lock:
            if not self.stopping:
                host, port = server.server_address[:2]
                self.lease.write("http://%s:%d" % (host, port))
                self.server = server
        if self.server is not None:
            log(INFO, "sharing this repository's server", url=self.lease.url,
                lease=self.elector.where)
            server.timeout = None
            while not self.stopping:
                server.handle_request()
        server.server_close()

    def stop(self, wait=True):
        """The owner ends: the lease gone, the server's thread woken and waited for (a
        thread still accepting while the interpreter ends cannot start a handler, and
        3.15 can hang at exit while that thread is still importing socketserver)."""
        with self.lock:
            self.stopping = True
            server = self.server
            self.lease.release()
        self.kick()
        if server is not None:
            server.closing = True
            import socket
            # a plain connect to the numeric address (create_connection would ask
            # getaddrinfo, whose IDNA codec imports `re`)
            host, port = server.server_address[:2]
            wake = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
            try:
                wake.settimeout(1.0)
                wake.connect((host, port))
            except OSError:
                pass
            finally:
                wake.close()
        if wait and self._ended.acquire(True, 2.0):
            self._ended.release()


class BridgeWriter:
    """Frames on a bridge's connection, one writer at a time, each group closed by a mark
    in the same write: what one of the bridge's lines produced (the notifications its
    handling wrote, then its answer) by `+` (answered) or `-` (not), a notification of
    another thread's by `=`. The bridge delivers a group only once its mark has come, so
    an owner that dies mid-write leaves nothing half told."""

    def __init__(self, sock, drop):
        import _thread
        self.lock = _thread.allocate_lock()
        self.holder, self.held, self.ident = None, [], _thread.get_ident
        # Written by a thread of its own, within the socket's deadline (§25.1).
        self.outbox = Outbox(sock.sendall, drop)

    def __call__(self, frame):
        with self.lock:
            if self.holder == self.ident():
                self.held.append(frame + b"\n")
                return
            self._send(frame + b"\n=\n")

    def handling(self):
        """The calling thread handles one of the bridge's lines: hold what it writes."""
        with self.lock:
            self.holder = self.ident()

    def done(self, data):
        with self.lock:
            held, self.held, self.holder = self.held, [], None
            self._send(b"".join(held) + (data + b"\n+\n" if data is not None else b"-\n"))

    def _send(self, data):
        self.outbox.put(data)


def serve_bridge(sock, rest, live, replay, client_pid=None):
    """A bridge's connection once switched (§27): the stdio loop over a socket, one session
    of transport `bridge` (its client's process `client_pid`, as the bridge tells it: §31's
    guard); the first `replay` lines are a takeover's replay. A write that misses
    WRITE_DEADLINE (a bridge stopped, or not reading) drops the session (§25.1)."""
    import _socket
    sock.settimeout(WRITE_DEADLINE)

    def drop(exc):
        if isinstance(exc, _socket.timeout):
            log(INFO, "a session missed the write deadline; dropped", peer=session.id,
                seconds=WRITE_DEADLINE)
        try:
            sock.shutdown(_socket.SHUT_RDWR)     # the reader below sees the end
        except OSError:
            pass
    writer = BridgeWriter(sock, drop)
    session = Session(live, writer, transport="bridge")
    session.client_pid = client_pid
    session.replaying = replay > 0
    reader = LineReader(sock, rest)
    handled = 0
    try:
        for line in read_lines(reader.readline):
            writer.handling()
            writer.done(answer_guarded(live, session, line))
            handled += 1
            if handled >= replay:
                session.replaying = False
    except (OSError, _ClientGone):
        pass              # the bridge went: its session ends
    finally:
        session.close()
        writer.outbox.close()


# -- the stdio loop of a shared `mcp`: the owner's, or a bridge's -------------------------

class SharedStdio(StdioLoop):
    """The stdio loop of an `mcp` that shares (§27): its lines are answered by this
    process (the owner, or standalone when refused) or forwarded to the owner (a bridge,
    which a takeover makes local or points at another owner)."""

    def __init__(self, options, start, elector):
        from collections import deque
        StdioLoop.__init__(self, options, start)
        self.elector = elector
        self.sharing = self.remote = None
        self.kept = Kept()
        self.pending = deque()          # lines sent to the owner, not yet done
        self.waiting_since = 0.0        # when the first of them began to wait
        self.late = False               # the owner let one wait OWNER_DEADLINE (§25.1)
        self.skip = 0                   # marks of a replay still to come

    # -- who answers ----------------------------------------------------------------------

    def link(self, replay=(), takeover=False):
        """Elect, and answer from this process (as owner, or standalone when refused) or
        from the owner; with `replay`, be the same server the client had. At start, where
        no lease exists yet (this process will most likely own it), the election runs
        beside the index build, off the path to the first answer."""
        try:
            early = self._elect_beside_build() if not takeover and not self.elector.exists() \
                else None
            while True:
                role, value = early if early is not None else self.elector.elect()
                early = None
                if role != "owner" and self.live is not None:
                    self.live.close()            # lost the race: a bridge holds no index
                    self.live = None
                if role == "owner":
                    return self.serve_locally(Sharing(self.elector, value), replay, takeover)
                try:
                    return self.attach(value, replay)
                except StaleOwner:
                    self.elector.stale(value)
        except Refusal as exc:
            log(INFO, "not shared: %s; serving standalone" % exc)
            return self.serve_locally(None, replay, takeover)

    def _elect_beside_build(self):
        """(role, value) of the election, which a thread of its own ran (its file system
        calls wait outside the interpreter's lock) while this one built the index (kept as
        self.live); a Refusal is raised here, after the build, as elect() would."""
        import _thread
        outcome, done = [], _thread.allocate_lock()
        done.acquire()

        def elect():
            try:
                outcome.append(self.elector.elect())
            except BaseException as exc:  # (a Refusal, or a defect) raised below
                outcome.append(exc)
            finally:
                done.release()
        _thread.start_new_thread(elect, ())
        try:
            self.live = self.start(self.options)
        except BaseException:
            done.acquire()
            if outcome and isinstance(outcome[0], tuple) and outcome[0][0] == "owner":
                outcome[0][1].release()
            raise
        done.acquire()
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    def serve_locally(self, sharing=None, replay=(), takeover=False):
        """Answer from an index of this process's own, as the owner when `sharing`: replay
        what the client did (its writes dropped), then answer the lines not yet done."""
        try:
            StdioLoop.serve_locally(self)
        except BaseException:
            if sharing is not None:
                sharing.lease.release()
            raise
        live, self.sharing = self.live, sharing
        if sharing is not None:
            sharing.start(live, kicked=takeover)
        else:
            live.trees = None           # (an owner keeps them, once its first answer is out)
        self.session.replaying = self.replaying = True
        for line in replay:
            answer_guarded(live, self.session, line)
        self.session.replaying = self.replaying = False
        pending, self.pending = list(self.pending), type(self.pending)()
        for line in pending:
            data = answer_guarded(live, self.session, line)
            if data is not None:
                self.outbox.put(data)
                self.answered += 1

    def attach(self, fields, replay=()):
        """Forward to the owner the lease names (StaleOwner or Refusal as switch_to_owner):
        the replay first, then the lines not yet done."""
        import _thread
        remote = switch_to_owner(fields, self.elector.root, self.elector.options, len(replay))
        remote.reader.idle = self._owner_answers     # asked each quiet second
        remote.sock.settimeout(1.0)
        self.skip, self.late = len(replay), False
        self.waiting_since = time.monotonic()
        remote.send(b"".join(replay) + b"".join(self.pending))
        self.remote = remote
        _thread.start_new_thread(self._pump, (remote,))
        log(INFO, "attached to the shared server", url=fields["url"], pid=fields["pid"])

    # -- the loop's steps -----------------------------------------------------------------

    def forwarded(self, line):
        if self.remote is not None:   # (a bridge keeps what a takeover replays)
            self.kept.note(line)
        with self.lock:
            remote = self.remote
            if remote is not None:
                line = oversized_line() if line is OVERSIZED else (
                    line if line.endswith(b"\n") else line + b"\n")
                if not self.pending:
                    self.waiting_since = time.monotonic()
                self.pending.append(line)
        if remote is not None:
            remote.send(line)
            return True
        return False

    def _owner_answers(self):
        """The owner's connection has been quiet a second: go on waiting, unless a line
        sent to it has waited OWNER_DEADLINE for its answer (a stopped owner, §25.1)."""
        with self.lock:
            self.late = bool(self.pending) and (
                time.monotonic() - self.waiting_since >= OWNER_DEADLINE)
            return not self.late

    def _answer_late(self, fields):
        """The owner did not answer in time: each request waiting for it is answered with an
        error (called with the lock held; the lines are not sent again)."""
        message = ("the shared server (pid %d) did not answer within %d s; this session "
                   "elects another" % (fields["pid"], OWNER_DEADLINE))
        lines, self.pending = list(self.pending), type(self.pending)()
        log(WARN, "the shared server does not answer; electing again", pid=fields["pid"],
            waiting=len(self.pending))
        for line in lines:
            value, _ = parse_frame(line)
            batch = isinstance(value, list)
            frames = [_frame(m["id"], error=(-32603, message))
                      for m in (value if batch else [value]) if isinstance(m, dict)
                      and isinstance(m.get("method"), str) and m.get("id") is not None]
            try:
                if frames:
                    self.writer(b"[" + b",".join(frames) + b"]" if batch else frames[0])
            except _ClientGone:
                return            # (the loop reading the client's lines ends too)

    def first_answer(self):
        if self.sharing is not None:
            self.sharing.kick()

    def drain(self):
        """At the end of input, a bridge waits until its lines are done (a takeover
        meanwhile answers them)."""
        self.ending = True
        while True:
            with self.lock:
                if self.remote is None or not self.pending:
                    return
            time.sleep(0.005)

    def input_ended(self):
        bridges = self.live.board.bridges() if self.sharing is not None else 0
        if not bridges:
            return StdioLoop.input_ended(self)
        log(INFO, "input ended; serving the attached bridges until the last leaves",
            answered=self.answered, bridges=bridges)

    def disconnect(self):
        with self.lock:
            remote = self.remote
        if remote is not None:
            remote.close()

    def unshare(self):
        if self.sharing is not None:
            if self.live.board.bridges():
                self.live.board.linger()
                log(INFO, "the last bridge left; stopping")
            self.sharing.stop()

    # -- a bridge's reader, and the takeover --------------------------------------------

    def _pump(self, remote):
        """The owner's lines to this client, until the owner's connection ends: each group
        delivered when its mark comes (a group without one, cut by the owner's death, is
        dropped, and its line is sent again to the next server)."""
        group = []
        while True:
            line = remote.reader.readline()
            if not line.endswith(b"\n"):
                break
            if line not in (b"+\n", b"-\n", b"=\n"):
                group.append(line[:-1])
                continue
            if line != b"=\n" and self.skip:
                self.skip -= 1            # (only this thread counts it down)
                group = []                # what a replayed line produced
                continue
            try:
                for frame in group:
                    self.writer(frame)
            except _ClientGone:
                log(INFO, "client closed the output; stopping", answered=self.answered)
                _silence_stdout()
                remote.close()
                os._exit(EXIT_OK)         # stdin may stay open: nothing else would end us
            group = []
            if line != b"=\n":
                with self.lock:           # done once told: the end of input waits for it
                    if self.pending:
                        self.pending.popleft()
                        self.answered += line == b"+\n"
                        self.waiting_since = time.monotonic()
        with self.lock:
            if self.late and self.remote is remote:
                self._answer_late(remote.fields)
            if self.remote is not remote or (self.ending and not self.pending):
                return                    # closed by this process, at its end
            self.remote = None
            remote.close()
            self._takeover(remote.fields)

    def _takeover(self, gone):
        """The owner's connection ended: elect again and be the same server to the client
        (the lock is held meanwhile: the client's next lines wait)."""
        began = time.monotonic()
        log(INFO, "the shared server ended; electing again", pid=gone["pid"])
        try:
            self.link(self.kept.lines(), takeover=True)
        except Fatal as exc:
            write_stderr("majordomus: %s\n" % exc.message)
            os._exit(exc.code)
        except _ClientGone:
            return
        for frame in self.kept.list_changed() if self.watching else ():
            try:
                self.outbox.put(frame)
            except _ClientGone:
                return
        log(INFO, "took over the shared server" if self.sharing is not None else
            "attached to the new shared server" if self.remote is not None else
            "serving standalone after the shared server ended",
            ms=int((time.monotonic() - began) * 1000))


def oversized_line():
    """What a bridge sends for a line over the bound: a line the owner reads as over it."""
    return b" " * (LINE_BOUND + 1) + b"\n"


# -- `serve`: an owner with a port of its own ---------------------------------------------

def run_http(live, host, port, elector=None):
    """Bind, log the address, serve until SIGINT or SIGTERM (then exit 0). With an
    `elector` (§27), `serve` owns the repository's lease when no live server does."""
    import signal
    lease = None
    if elector is not None:
        lease = serve_lease(elector, host)
    if lease is not None:
        Neighbourhood(live, lease.folder).install(live.board)
    try:
        server, mcp = http_server(live, host, port, lease and Access(lease.token, True),
                                  elector.options if lease else None, bound_name(host),
                                  serve_bridge if lease else None)
    except (OSError, OverflowError) as exc:
        if lease is not None:
            lease.release()
        raise Fatal(EXIT_INTERNAL, "cannot listen on %s:%d: %s" % (host, port, _os_reason(exc)))

    class _Stop(BaseException):
        """Raised by the signal handler; a BaseException so that socketserver's own
        `except Exception` (around accepting a connection) cannot swallow it."""

    def stop(signum, frame):
        raise _Stop()

    for signum in stop_signals():
        signal.signal(signum, stop)
    bound_host, bound_port = server.server_address[:2]
    shown = "[%s]" % bound_host if ":" in bound_host else bound_host
    try:   # a signal may come as soon as the address is told
        if not _is_loopback(bound_host):
            log(WARN, "serving on a non-loopback address: anyone who reaches it reads the "
                "layer", host=bound_host)
        if lease is not None:
            reach = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(bound_host, bound_host)
            lease.write("http://%s:%d" % ("[%s]" % reach if ":" in reach else reach,
                                          bound_port))
        log(INFO, "listening on http://%s:%d" % (shown, bound_port))
        server.serve_forever(poll_interval=0.5)
    except _Stop:
        log(INFO, "signal received; stopping")
    finally:
        if lease is not None:
            lease.release()
        server.server_close()
        mcp.close()
        live.close()
    return EXIT_OK


def serve_lease(elector, host):
    """`serve`'s lease (§27), or None when another server holds it or it cannot be used
    (said at info: this server then serves its own sessions only)."""
    if host not in ("127.0.0.1", "::1", "localhost", "0.0.0.0", "::"):
        log(INFO, "not sharing this repository's sessions: a lease names 127.0.0.1 or [::1], "
            "not %s" % host)
        return None
    try:
        role, value = elector.elect(PROBE_SECONDS)
    except Refusal as exc:
        log(INFO, "not sharing this repository's sessions: %s" % exc)
        return None
    if role == "bridge":
        log(INFO, "this repository's shared server runs elsewhere; this one serves its own "
            "sessions", url=value["url"], pid=value["pid"])
        return None
    return value


# ---------------------------------------------------------------------------------------
# 25. Entry point: argument parsing, start-up (§9.0), dispatch, exit codes.
# ---------------------------------------------------------------------------------------

REPO_OPTIONS = ("--repo", "--discovery")
COMMANDS = {
    "mcp": {"usage": "majordomus mcp [--repo PATH] [--discovery vcs|filesystem] [--strict] "
                     "[--no-watch] [--standalone] [--inspect [--format text|json]]",
            "about": "serve the layer to an MCP client over stdio, sharing one server per "
                     "repository (--standalone: alone; --inspect: print what would be "
                     "served, then exit)",
            "values": REPO_OPTIONS + ("--format",),
            "flags": ("--strict", "--inspect", "--no-watch", "--standalone"),
            "positionals": (), "formats": ("text", "json")},
    "serve": {"usage": "majordomus serve [--repo PATH] [--discovery vcs|filesystem] [--strict] "
                       "[--no-watch] [--standalone] [--host HOST] [--port PORT]",
              "about": "serve the layer over HTTP on loopback (default 127.0.0.1:8741), MCP "
                       "at /mcp",
              "values": REPO_OPTIONS + ("--host", "--port"),
              "flags": ("--strict", "--no-watch", "--standalone"), "positionals": ()},
    "peers": {"usage": "majordomus peers [--repo PATH] [--format text|json]",
              "about": "list the sessions sharing this repository's running server (who, "
                       "which client, what each announced)",
              "values": ("--repo", "--format"), "flags": (), "positionals": (),
              "formats": ("text", "json")},
    "hook": {"usage": "majordomus hook [--client claude-code|codex|gemini] [--repo DIR] "
                      "[--budget-lines N] [--budget-chars N] [--guard] | --print-config CLIENT "
                      "[--guard]",
             "about": "a client's hook (Claude Code, Codex, Gemini CLI): read its JSON on "
                      "stdin, print what to add before the model (the brief of an edited "
                      "path, an orientation, the rules a prompt is about); --print-config: "
                      "the client's configuration",
             "values": ("--client", "--repo", "--budget-lines", "--budget-chars",
                        "--print-config"),
             "flags": ("--guard",), "positionals": (),
             "integers": ("--budget-lines", "--budget-chars")},
    "install": {"usage": "majordomus install [--dir DIR] [--format text|json]",
                "about": "copy this archive to your user folder, once for every repository, "
                         "and print each client's configuration that runs it",
                "values": ("--dir", "--format"), "flags": (), "positionals": (),
                "formats": ("text", "json")},
    "capabilities list": {
        "usage": "majordomus capabilities list [--repo PATH] [--discovery vcs|filesystem] "
                 "[--strict] [--kind K] [--exposure E] [--format text|json]",
        "about": "list the capabilities (the registry every interface projects)",
        "values": REPO_OPTIONS + ("--kind", "--exposure", "--format"), "flags": ("--strict",),
        "positionals": (), "formats": ("text", "json")},
    "capabilities describe": {
        "usage": "majordomus capabilities describe ID [--repo PATH] [--discovery "
                 "vcs|filesystem] [--strict] [--format text|json]",
        "about": "describe one capability by id",
        "values": REPO_OPTIONS + ("--format",), "flags": ("--strict",),
        "positionals": ("ID",), "formats": ("text", "json")},
    "get": {"usage": "majordomus get URI [--repo PATH] [--discovery vcs|filesystem] [--strict] "
                     "[--format json|text] [--offset N --limit N]",
            "about": "print the object a majordomus:// URI names (JSON, or --format text: the "
                     "file byte for byte; --offset/--limit: a window of lines)",
            "values": REPO_OPTIONS + ("--format", "--offset", "--limit"), "flags": ("--strict",),
            "positionals": ("URI",), "formats": ("json", "text"),
            "integers": ("--offset", "--limit")},
    "search": {
        "usage": "majordomus search QUERY [--repo PATH] [--discovery vcs|filesystem] [--strict] "
                 "[--kind K] [--mode ranked|substring] [--limit N] [--format text|json]",
        "about": "search the layer: ranked by relevance to the query's words, or --mode "
                 "substring for the exact text",
        "values": REPO_OPTIONS + ("--kind", "--mode", "--limit", "--format"),
        "flags": ("--strict",), "positionals": ("QUERY",), "formats": ("text", "json"),
        "integers": ("--limit",)},
    "brief": {
        "usage": "majordomus brief PATH [--repo PATH] [--discovery vcs|filesystem] [--strict] "
                 "[--intent TEXT] [--provider P] [--audience human|agent] [--budget-lines N] "
                 "[--budget-chars N] [--format text|json]",
        "about": "before you create or change a file: what governs it (the rules that apply, "
                 "the documents, what relates to --intent), within a budget of lines and "
                 "characters",
        "values": REPO_OPTIONS + ("--intent", "--provider", "--audience", "--budget-lines",
                                  "--budget-chars", "--format"),
        "flags": ("--strict",), "positionals": ("PATH",), "formats": ("text", "json"),
        "integers": ("--budget-lines", "--budget-chars")},
    "context resolve": {
        "usage": "majordomus context resolve PATH [--repo PATH] [--discovery vcs|filesystem] "
                 "[--strict] [--provider P] [--audience human|agent] [--format text|json]",
        "about": "the context documents that govern a path, least specific first",
        "values": REPO_OPTIONS + ("--provider", "--audience", "--format"), "flags": ("--strict",),
        "positionals": ("PATH",), "formats": ("text", "json")},
    "context explain": {
        "usage": "majordomus context explain PATH [--repo PATH] [--discovery vcs|filesystem] "
                 "[--strict] [--provider P] [--audience human|agent]",
        "about": "the same, with why each document applies and every candidate left out",
        "values": REPO_OPTIONS + ("--provider", "--audience"), "flags": ("--strict",),
        "positionals": ("PATH",), "formats": ("text",)},
    "context list": {
        "usage": "majordomus context list [--repo PATH] [--discovery vcs|filesystem] [--strict] "
                 "[--format text|json]",
        "about": "every context document (id, path, scope, composition, providers, status)",
        "values": REPO_OPTIONS + ("--format",), "flags": ("--strict",), "positionals": (),
        "formats": ("text", "json")},
    "context validate": {
        "usage": "majordomus context validate [--repo PATH] [--discovery vcs|filesystem] "
                 "[--strict] [--format text|json]",
        "about": "the context tree against its contract; exit 10 on any problem",
        "values": REPO_OPTIONS + ("--format",), "flags": ("--strict",), "positionals": (),
        "formats": ("text", "json")},
    "context affected": {
        "usage": "majordomus context affected [--base REF | --staged] [--repo PATH] "
                 "[--discovery vcs|filesystem] [--strict] [--format text|json]",
        "about": "which context documents a change set touches (the work tree against HEAD, "
                 "--staged, or --base REF)",
        "values": REPO_OPTIONS + ("--base", "--format"),
        "flags": ("--strict", "--staged", "--worktree"), "positionals": (),
        "formats": ("text", "json")},
    "context check-sync": {
        "usage": "majordomus context check-sync [--base REF | --staged] [--repo PATH] "
                 "[--discovery vcs|filesystem] [--strict] [--format text|json]",
        "about": "validate, then each projection against its stamp, then affected; exit 10 "
                 "(invalid), 11 (a projection out of date) or 0",
        "values": REPO_OPTIONS + ("--base", "--format"),
        "flags": ("--strict", "--staged", "--worktree"), "positionals": (),
        "formats": ("text", "json")},
    "prompt": {"usage": "majordomus prompt NAME [--repo PATH] [--discovery vcs|filesystem] "
                        "[--strict] [--arg NAME=VALUE]... [--format text|json]",
               "about": "print one of the layer's prompts with its placeholders filled in",
               "values": REPO_OPTIONS + ("--format",), "flags": ("--strict",),
               "multi": ("--arg",), "positionals": ("NAME",), "formats": ("text", "json")},
}
TOP_USAGE = "majordomus <COMMAND> [OPTIONS]"


def top_help():
    lines = ["majordomus %s: a read-only reader of a repository's AI layer (.ai/)" % VERSION, "",
             "Usage: " + TOP_USAGE, "", "Commands:"]
    lines += ["  %-22s %s" % (name, spec["about"]) for name, spec in COMMANDS.items()]
    lines += ["", "Repository options (every command):",
              "  --repo PATH                 start the search for .ai/manifest.yaml here "
              "(default: .)",
              "  --discovery vcs|filesystem  enumerate files from the git index (default) or "
              "the work tree",
              "  --strict                    refuse to run when the index carries an error",
              "", "Options:", "  -h, --help     print help (also after a command)",
              "  --version      print the version", "",
              "Exit codes: 0 ok, 2 usage, 10 contract unmet, 11 drift (context check-sync),"
              " 12 missing, 13 internal, 15 a refused path (context, brief).",
              "Logs go to stderr; MAJORDOMUS_LOG=off|error|warn|info|debug|trace."]
    return "\n".join(lines) + "\n"


def command_help(name):
    spec = COMMANDS[name]
    return "%s\n\nUsage: %s\n\nRun 'majordomus --help' for the options every command takes.\n" % (
        spec["about"][0].upper() + spec["about"][1:], spec["usage"])


class Options:
    """Parsed arguments of one command."""

    def __init__(self, command):
        self.command = command
        self.values, self.flags, self.positionals = {}, set(), []
        self.multi = {}   # a repeatable option -> its (NAME, VALUE) pairs, in order

    def get(self, name, default=None):
        return self.values.get(name, default)


_CHOICES = {"--discovery": ("vcs", "filesystem"), "--audience": _AUDIENCES,
            "--mode": ("ranked", "substring"), "--client": HOOK_CLIENTS,
            "--print-config": HOOK_CLIENTS}


def parse_args(args):
    """(Options, None) for a command, or (None, text to print on stdout) for help/version."""
    if not args:
        raise UsageError("a command is required", TOP_USAGE)
    first = args[0]
    if first in ("-h", "--help"):
        return None, top_help()
    if first == "--version":
        return None, "majordomus %s\n" % VERSION
    if first.startswith("-"):
        raise UsageError("unexpected argument '%s' found" % first, TOP_USAGE)
    name, rest = first, args[1:]
    group = [command.split(" ")[1] for command in COMMANDS if command.startswith(first + " ")]
    if group:
        usage = "majordomus %s %s …" % (first, "|".join(group))
        if not rest or rest[0] in ("-h", "--help"):
            if rest:
                return None, "\n".join(command_help(first + " " + sub) for sub in group)
            raise UsageError("'%s' needs a subcommand: %s" % (first, " or ".join(group)), usage)
        name, rest = first + " " + rest[0], rest[1:]
        if name not in COMMANDS:
            raise UsageError("unrecognized subcommand '%s'" % name.split(" ", 1)[1], usage)
    if name not in COMMANDS:
        raise UsageError("unrecognized subcommand '%s'" % first, TOP_USAGE)
    spec, options = COMMANDS[name], Options(name)
    words = iter(rest)
    only_positionals = False
    for word in words:
        if not only_positionals and word in ("-h", "--help"):
            return None, command_help(name)
        if not only_positionals and word == "--":
            only_positionals = True
            continue
        if not only_positionals and word.startswith("-") and word != "-":
            option, equals, value = word.partition("=")
            if option in spec["flags"] and not equals:
                options.flags.add(option)
                continue
            repeatable = option in spec.get("multi", ())
            if option not in spec["values"] and not repeatable:
                raise UsageError("unexpected argument '%s' found" % word, spec["usage"])
            if not equals:
                value = next(words, None)
                if value is None:
                    raise UsageError("a value is required for '%s' but none was supplied"
                                     % option, spec["usage"])
            if repeatable:
                key, assign, entry = value.partition("=")
                if not assign or not key:
                    raise UsageError("invalid value '%s' for '%s <NAME=VALUE>'" % (value, option),
                                     spec["usage"])
                if key in dict(options.multi.get(option, ())):
                    raise UsageError("'%s %s=…' is given twice" % (option, key), spec["usage"])
                options.multi.setdefault(option, []).append((key, entry))
                continue
            if option in options.values:
                raise UsageError("the argument '%s' cannot be used multiple times" % option,
                                 spec["usage"])
            options.values[option] = value
            continue
        if len(options.positionals) >= len(spec["positionals"]):
            raise UsageError("unexpected argument '%s' found" % word, spec["usage"])
        options.positionals.append(word)
    if len(options.positionals) < len(spec["positionals"]):
        raise UsageError("the following required argument was not provided: <%s>"
                         % spec["positionals"][len(options.positionals)], spec["usage"])
    _check_choices(options, spec)
    return options, None


def _check_choices(options, spec):
    for option, value in options.values.items():
        choices = _CHOICES.get(option) or (spec.get("formats") if option == "--format" else None)
        if choices and value not in choices:
            raise UsageError("invalid value '%s' for '%s <%s>'" % (value, option,
                                                                  "|".join(choices)),
                             spec["usage"])
    if "--format" in options.values and options.command == "mcp" and (
            "--inspect" not in options.flags):
        raise UsageError("'--format' goes with '--inspect'", spec["usage"])
    for option in spec.get("integers", ()):
        value = options.values.get(option)
        if value is not None:
            options.values[option] = _cli_number(option, value, "<N>': a whole number",
                                                 spec["usage"])
    if "--port" in options.values:
        port = _cli_number("--port", options.values["--port"],
                           "<PORT>': a number from 0 to 65535", spec["usage"])
        if port > 65535:
            raise UsageError("invalid value '%s' for '--port <PORT>': a number from 0 to "
                             "65535" % port, spec["usage"])
        options.values["--port"] = port
    kind = options.values.get("--kind")
    if options.command == "capabilities list" and kind is not None and kind not in _KIND_ENUM:
        raise UsageError("kind '%s' is not query, command or resource" % kind, spec["usage"])
    exposure = options.values.get("--exposure")
    if exposure is not None and exposure not in _EXPOSURE_ENUM:
        raise UsageError("exposure '%s' is not mcp, http or cli" % exposure, spec["usage"])


def _cli_number(option, value, wanted, usage):
    """A number of the command line (parse_number): a usage error when it is not one, the
    §7.5 invalid input (exit 2 too) when it has more digits than any count can."""
    try:
        return parse_number(value)
    except NumberError as exc:
        if exc.over:
            raise Fatal(EXIT_USAGE, "invalid input: %s: a number of %s" % (option, exc))
        raise UsageError("invalid value '%s' for '%s %s" % (value, option, wanted), usage)


def start(options, long_lived, trees=None):
    """§9.0: the first generation (root → … → registry), inside a Live for `mcp` and
    `serve`; --strict refuses; a long-lived process logs the diagnostics. `trees`: the
    root's TreeCache, asked of `trees(root)` (a Live's first build)."""
    counters = Counters()
    begin = (options.get("--repo", "."), options.get("--discovery", "vcs"), counters)
    strict = "--strict" in options.flags
    try:
        if long_lived:
            live = Live(*begin, watch="--no-watch" not in options.flags, strict=strict,
                        board=Board(), nowhere=options.command == "mcp", trees=trees)
            live.hooks = BoardHooks(live)
            gen = live.generation
        else:
            live, gen = None, first_generation(*begin)[0]
    except RegistryError as exc:
        raise Fatal(EXIT_INTERNAL, "the capability registry cannot be built: %s" % exc)
    index = gen.index
    if strict and index.errors:
        raise Fatal(EXIT_CONTRACT, "declarative state carries %d error(s); refusing to serve "
                    "under --strict (run: majordomus mcp --inspect)" % index.errors)
    if long_lived and gen.absent:
        log(INFO, "no AI layer here; every call is answered with that, and the folder is "
            "followed until one appears", start=gen.root)
    elif long_lived and gen.broken is not None:
        log(ERROR, "the layer cannot be read; serving its report and following its files "
            "until it can be", reason=gen.broken)
    elif long_lived:
        levels = {"error": ERROR, "warning": WARN, "info": INFO}
        for diagnostic in index.diagnostics:
            log(levels[diagnostic.severity], diagnostic.message, code=diagnostic.code,
                path=diagnostic.path or "-")
        log(INFO, "index built", objects=len(index.objects), diagnostics=len(index.diagnostics),
            state=index.state)
    return live, gen


def run_command(options):
    command = options.command
    if command == "mcp" and "--inspect" in options.flags:
        gen = start(options, False)[1]
        if options.get("--format") == "json":
            write_stdout(_pretty({"repository": gen.execute("repository.info", {}),
                                  "resources": mcp_resources(gen),
                                  "tools": mcp_listing(gen).tools}))
        else:
            write_stdout(inspect_text(gen))
        return EXIT_CONTRACT if gen.index.errors else EXIT_OK
    if command == "mcp":
        return run_mcp(options)
    if command == "serve":
        live = start(options, True)[0]
        elector = None
        if standalone_reason(options) is None:
            folder, why = open_lease_folder()
            if folder is None:
                log(INFO, "not sharing this repository's sessions: %s" % why)
            else:
                elector = Elector(live.generation.root, folder, options_text(options))
        return run_http(live, options.get("--host", "127.0.0.1"),
                        options.get("--port", 8741), elector)
    if command == "peers":
        return run_peers(options)
    if command == "hook":
        return run_hook(options)
    if command == "install":
        return run_install(options)
    gen = start(options, False)[1]
    words = command.split(" ")
    if command == "capabilities list":
        arguments = {k: options.get("--" + k) for k in ("kind", "exposure")
                     if options.get("--" + k) is not None}
        value = all_capabilities(gen, words, arguments)
        text_form = capabilities_list_text
    elif command == "capabilities describe":
        value = execute_cli(gen, words, {"id": options.positionals[0]})
        text_form = capability_text
    elif command == "search":
        arguments = {"query": options.positionals[0]}
        arguments.update((k, options.get("--" + k)) for k in ("kind", "mode")
                         if options.get("--" + k) is not None)
        if options.get("--limit") is not None:
            arguments["limit"] = options.get("--limit")
        value = execute_cli(gen, words, arguments)
        text_form = search_text
    elif command == "brief":
        if not options.positionals[0]:
            raise UsageError("which path? (an empty PATH names nothing)",
                             COMMANDS[command]["usage"])
        arguments = {"path": options.positionals[0]}
        arguments.update((k, options.get("--" + k)) for k in ("intent", "provider", "audience")
                         if options.get("--" + k))
        for key in ("budget_lines", "budget_chars"):
            if options.get("--" + key.replace("_", "-")) is not None:
                arguments[key] = options.get("--" + key.replace("_", "-"))
        value = execute_cli(gen, words, arguments)
        text_form = brief_text
    elif command in CONTEXT_TEXTS:     # §33
        arguments = {}
        if options.get("--base") is not None:
            arguments["base"] = options.get("--base")
        if "--staged" in options.flags:
            arguments["staged"] = True
        if len(arguments) > 1 or "--worktree" in options.flags and arguments:
            raise UsageError("give one of --base REF, --staged and --worktree",
                             COMMANDS[command]["usage"])
        value = execute_cli(gen, words, arguments)
        write_stdout(CONTEXT_TEXTS[command](value) if options.get("--format", "text") == "text"
                     else _pretty(value))
        return context_exit(command, value)
    elif command.startswith("context "):
        if not options.positionals[0]:
            raise UsageError("which path? (an empty PATH names nothing)",
                             COMMANDS[command]["usage"])
        arguments = {"path": options.positionals[0]}
        arguments.update((k, options.get("--" + k)) for k in ("provider", "audience")
                         if options.get("--" + k))
        value = execute_cli(gen, ["context", "resolve"], arguments)
        explain = command == "context explain"
        text_form = lambda result: context_text(result, explain)  # noqa: E731
    elif command == "prompt":
        value = execute_cli(gen, words, {"name": options.positionals[0],
                                         "arguments": dict(options.multi.get("--arg", ()))})
        text_form = lambda result: result["messages"][0]["content"]["text"]  # noqa: E731
    else:
        arguments = {"uri": options.positionals[0]}
        for option in ("--offset", "--limit"):
            if option in options.values:
                arguments[option[2:]] = options.values[option]
        value = execute_cli(gen, words, arguments)
        text_form = lambda view: view["content"]  # noqa: E731 -- the file, byte for byte
    default = COMMANDS[command]["formats"][0]
    write_stdout(text_form(value) if options.get("--format", default) == "text"
                 else _pretty(value))
    return EXIT_OK


def run_mcp(options):
    """`mcp` (§9, §27): the owner of this repository's shared server, a bridge to it, or
    (--standalone, or where the lease cannot be used: said at info) alone."""
    why = standalone_reason(options)
    if why is None:
        try:
            root = find_root(options.get("--repo", "."))
        except Fatal as exc:
            if getattr(exc, "nowhere", None) is None or "--strict" in options.flags:
                raise
            # No layer, so no root to share (§32): alone for this process's life.
            root, why = None, "no AI layer here, so no repository to share"
        if root is not None:
            folder, why = open_lease_folder()
            if folder is not None:
                loop = SharedStdio(options, lambda options: start_live(options, folder),
                                   Elector(root, folder, options_text(options)))
                loop.link()
                return loop.run()
        log(INFO, "not shared: %s; serving standalone" % why)
    loop = StdioLoop(options, start_live)
    loop.serve_locally()
    return loop.run()


def start_live(options, folder=None):
    """A long-lived process's start-up (`mcp`): its live layer (where it shares, its first
    build through the trees the lease directory `folder` keeps)."""
    trees = (lambda root: tree_cache(folder, root)) if folder is not None else None
    return start(options, True, trees)[0]


def run_peers(options):
    """`majordomus peers` (§27): the running owner's board, through its HTTP route."""
    root = find_root(options.get("--repo", "."))
    descriptor = next(d for d in builtin_descriptors()
                      if d.get("exposure", {}).get("cli", {}).get("path") == ["peers"])
    folder, _ = open_lease_folder()
    fields = live_lease(folder, root) if folder is not None else None
    if fields is None:
        raise Fatal(EXIT_MISSING, "no shared server for this repository")
    http = descriptor["exposure"]["http"]
    try:
        status, _, body = http_exchange(fields["url"], "%s %s HTTP/1.1\r\nAuthorization: "
                                        "Bearer %s\r\nConnection: close" % (
                                            http["method"], http["path"], fields["token"]),
                                        timeout=10.0)
        value = json_loads(body.decode("utf-8")) if status == 200 else None
    except (OSError, ValueError, UnicodeDecodeError):
        value = None
    if not isinstance(value, dict):
        raise Fatal(EXIT_MISSING, "no shared server for this repository")
    write_stdout(peers_text(value) if options.get("--format", "text") == "text"
                 else _pretty(value))
    return EXIT_OK


HOOK_SECONDS = 2.0        # a hook that has not answered by then adds nothing (§30)
# What the archive's door (hook_door) read before it handed a hook over to the module loaded
# whole: (the input's bytes, the lock its watchdog honours, (the root, the arguments of
# hook.deliver, the git listing it started there) or None); set by the entry point.
HOOK_LEFT = None


def run_hook(options):
    """`majordomus hook` (§30): the client's hook JSON on stdin (at most HOOK_INPUT bytes)
    answered by hook.deliver, asked of the live owner of the root (its lease's token: no
    index is built here) or executed here on an index of this process's own; printed in
    the client's shape once. Never in the way: whatever fails (no layer, a broken one, bad
    input, HOOK_SECONDS passed), the exit is 0, nothing is printed on stdout and one line
    says why on stderr; only the guard (--guard, §31) ever refuses a tool.
    `--print-config CLIENT` prints that client's configuration instead. From the archive,
    hook_door answered first when an owner is live, and hands over what it read when not."""
    client = options.get("--print-config")
    if client is not None:
        write_stdout(json_pretty(hook_config(client, "--guard" in options.flags)) + "\n")
        return EXIT_OK
    if HOOK_LEFT is not None:
        data, writing, handed = HOOK_LEFT
        _hook_log_off()
    else:
        data, writing, handed = None, _hook_quiet(), None
    answer, why, prepared = None, None, None
    try:
        listing = None
        if handed is not None:           # what the door found: no owner answers for the root
            root, arguments, listing = handed
            prepared = _HookAsk(root, arguments, asking=False)
        else:
            prepared = _hook_prepare(options, _read_input(HOOK_INPUT + 1) if data is None
                                     else data)
            if data is None:
                answer = _hook_warm(prepared)
        if answer is None:
            answer = _hook_cold(prepared, listing)
    except Fatal as exc:
        why = exc.message
    except CapabilityError as exc:
        why = str(exc)
    except Exception as exc:  # a defect: one line, never a traceback, never in the way
        log(DEBUG, "the hook failed", traceback=_traceback_text())
        why = "internal error: %s: %s" % (type(exc).__name__, exc)
    _hook_say(writing, answer, why)
    if prepared is not None and prepared.trees is not None:
        try:
            keep_trees(prepared.folder, prepared.root, prepared.trees)
        except Exception:  # (the next hook parses again)
            pass
    return EXIT_OK


def hook_door(args):
    """§30's warm path, before the module is loaded whole: the archive's entry point runs
    this function alone (build_zipapp.py compiles it with only what it uses: parsing the
    command line, the root, the lease, one request to the owner, the output), since
    loading the module costs a hook more than its answer. For `hook` with a live owner for
    its root: the answer printed (or why there is none), and the exit code; None for any
    other command line (the module does it all); else (the input read, the watchdog's lock,
    what it found: the root, hook.deliver's arguments and the git listing the module will
    need, already started, so that git runs while the module loads) for the module's
    run_hook to answer from an index of its own (HOOK_LEFT)."""
    try:
        options, _ = parse_args(args)
    except Exception:  # a usage error, a number over its bound: the module says it
        return None
    if options is None or options.command != "hook" or options.get("--print-config"):
        return None
    writing = _hook_quiet()
    data = b""
    answer, why = None, None
    try:
        data = _read_input(HOOK_INPUT + 1)
        call = _hook_prepare(options, data)
        answer = _hook_warm(call)
        if answer is None:
            return data, writing, (call.root, call.arguments,
                                   git_started(call.root, *LS_FILES))
    except Fatal as exc:
        why = exc.message
    except Exception:  # the module says it (once more, on an index of its own)
        return data, writing, None
    _hook_say(writing, answer, why)
    return EXIT_OK


def _hook_quiet():
    """A hook's start: its log off, and its watchdog; the lock the answer is written
    under."""
    _hook_log_off()
    import _thread
    writing = _thread.allocate_lock()
    _hook_watchdog(writing)
    return writing


def _hook_log_off():
    """A hook logs nothing unless MAJORDOMUS_LOG asks: its one line is all it says."""
    global _log_level
    if not os.environ.get("MAJORDOMUS_LOG", "").strip():
        _log_level = 0


def _hook_say(writing, answer, why):
    """Print the answer in its client's shape, or one line why there is none; once (the
    watchdog says nothing once this is written)."""
    text = ""
    if answer is not None:
        text = hook_output(answer)
        why = answer.get("note") or "nothing to add"
    writing.acquire()
    if text:
        write_stdout(text)
    else:
        write_stderr("majordomus hook: %s\n" % " ".join(str(why).split()))


def _hook_watchdog(writing):
    """§30's own limit: past HOOK_SECONDS, one line on stderr and exit 0 (unless the
    answer is being written: `writing` held)."""
    import _thread

    def fire():
        time.sleep(HOOK_SECONDS)
        writing.acquire()
        write_stderr("majordomus hook: no answer within %g s; nothing added\n" % HOOK_SECONDS)
        os._exit(EXIT_OK)
    _thread.start_new_thread(fire, ())


class _HookAsk:
    """A hook's input, checked, with its root and what hook.deliver is asked; the lease
    directory and the live owner's lease (None: none live, or `asking` False: the door
    already found none)."""

    __slots__ = ("root", "arguments", "folder", "why", "fields", "trees")

    def __init__(self, root, arguments, asking=True):
        self.root, self.arguments, self.trees = root, arguments, None
        self.folder, self.why = open_lease_folder()
        self.fields = live_lease(self.folder, root) if asking and (
            self.folder is not None) else None


def _hook_prepare(options, data):
    """What a hook asks, from its command line and its input; Fatal for what stops it
    early (empty, over the bound, not UTF-8, no layer)."""
    if not data.strip():
        raise Fatal(EXIT_OK, "the hook's input is empty (the client's JSON was expected)")
    if len(data) > HOOK_INPUT:
        raise Fatal(EXIT_OK, "the hook's input is over %d bytes" % HOOK_INPUT)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Fatal(EXIT_OK, "the hook's input is not UTF-8")
    root = find_root(options.get("--repo", "."))
    arguments = {"input": text}
    if options.get("--client") is not None:
        arguments["client"] = options.get("--client")
    for key in ("budget_lines", "budget_chars"):
        if options.get("--" + key.replace("_", "-")) is not None:
            arguments[key] = options.get("--" + key.replace("_", "-"))
    if "--guard" in options.flags:
        arguments["guard"] = True
    if '"tool_input"' in text or '"SessionStart"' in text:
        arguments["ancestors"] = ancestor_pids()     # whose claims are the hook's own
    return _HookAsk(root, arguments)


def _hook_warm(call):
    """The HookAnswer of the live owner of the call's root (None: no owner, or one that did
    not answer: the hook then reads the layer itself); Fatal for its refusal."""
    fields = call.fields
    if fields is None:
        return None
    try:
        answer, refusal = hook_from_owner(fields, call.arguments)
    except OSError as exc:
        log(DEBUG, "the shared server did not answer the hook; reading the layer here",
            pid=fields["pid"], reason=_os_reason(exc))
        return None
    log(DEBUG, "the hook was answered by the shared server; no index built here",
        pid=fields["pid"], url=fields["url"])
    if refusal is not None:
        raise Fatal(EXIT_OK, refusal)
    return answer


def _hook_cold(call, listing=None):
    """The HookAnswer from an index of this process's own, with a file's memory. `listing`:
    the git listing of the root the door started, or None."""
    call.trees = tree_cache(call.folder, call.root)
    gen = read_generation(call.root, "vcs", Counters(), trees=call.trees,
                          listing=listing)[0]
    gen.trees = call.trees
    gen.hooks = ColdHooks(call.folder, gen)
    log(DEBUG, "the hook was answered by an index of its own", objects=len(gen.index.objects),
        memory="a file in %s" % call.folder.path if call.folder is not None
        else "none (%s)" % call.why)
    return gen.execute("hook.deliver", call.arguments)


def _read_input(most):
    """Up to `most` bytes of stdin, to its end."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        return b""
    parts, size = [], 0
    while size < most:
        chunk = stream.read(most - size)
        if not chunk:
            break
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


HOOK_IMPORT = "import sys; sys.path[0] = sys.argv[1]; import majordomus_hook"


def hook_command(archive, client, guard=False, from_archive=True):
    """The command a client runs as its hook: this archive, by `python3 -S` (no site: the
    archive needs the standard library only, and starts sooner without it). On POSIX, from
    the archive, its member majordomus_hook is imported (HOOK_IMPORT) rather than the
    archive run: the same entry point, without runpy (build_zipapp's HOOK). Windows keeps
    the plain form, whose quoting every shell there reads alike."""
    command, head = ("py", ["-3", "-S"]) if os.name == "nt" else ("python3", ["-S"])
    quote = _shell_word if os.name != "nt" else (
        lambda word: '"%s"' % word if " " in word else word)
    if from_archive and os.name != "nt":
        head = head + ["-c", HOOK_IMPORT]
    words = [command] + head + [archive, "hook", "--client", client] + (
        ["--guard"] if guard else [])
    return " ".join(map(quote, words))


def hook_config(client, guard=False):
    """§30: the hooks a client's settings need to run `majordomus hook` (the JSON to merge
    into Claude Code's .claude/settings.json, Codex's .codex/hooks.json, Gemini CLI's
    .gemini/settings.json; the same at user level under the home folder): the session's
    start, each prompt, and the tools that write files (Gemini CLI: after them, where its
    hooks can add words for the model); with `guard`, the command refuses an edit of a path
    another session claims (Gemini CLI: before it, too)."""
    archive = running_archive()
    command = hook_command(archive or os.path.abspath(__file__), client, guard,
                           archive is not None)
    if client == "gemini":
        hook = {"name": "majordomus", "type": "command", "command": command, "timeout": 5000}
        events = [("SessionStart", None), ("BeforeAgent", None),
                  ("AfterTool", "write_file|replace")] + (
            [("BeforeTool", "write_file|replace")] if guard else [])
    else:
        hook = {"type": "command", "command": command, "timeout": 5}     # seconds
        events = [("SessionStart", None), ("UserPromptSubmit", None), (
            "PreToolUse", "Edit|Write|MultiEdit|NotebookEdit" if client == "claude-code"
            else "apply_patch")]
    return {"hooks": {event: [dict({"matcher": matcher} if matcher else {},
                                   hooks=[dict(hook)])] for event, matcher in events}}


def running_archive():
    """The archive this process runs from (its path), or None when it runs majordomus.py
    itself: from an archive, the module's file is a member, `<archive>/majordomus.py`."""
    folder = os.path.dirname(os.path.abspath(__file__))
    return folder if os.path.isfile(folder) else None


def repository_holding(folder):
    """The repository `folder` (which may not exist yet) lies in, or None: the nearest
    ancestor holding `.git` or a layer's manifest, unless it also holds the user's home
    folder (a dotfiles work tree at ~ is no project, and the user folder is under it)."""
    home = os.path.realpath(os.path.expanduser("~"))
    here = os.path.realpath(folder)
    while True:
        if os.path.lexists(os.path.join(here, ".git")) or os.path.isfile(
                native_path(here, MANIFEST)):
            return None if _folder_within(here, home) else here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _folder_within(outer, inner):
    """Is the real path `inner` equal to, or under, the real path `outer`?"""
    return inner == outer or inner.startswith(outer.rstrip(os.sep) + os.sep)


def run_install(options):
    """`majordomus install [--dir DIR]` (§32): the running archive copied, byte for byte,
    to the user folder (or DIR), never into a repository; then each client's configuration
    that runs that copy for the folder the client has open. Nothing else is written."""
    source = running_archive()
    if source is None:
        raise Fatal(EXIT_MISSING, "install copies the archive it runs from, and this is %s: "
                    "build the archive (python3 build_zipapp.py) and run: python3 "
                    "majordomus.pyz install" % os.path.abspath(__file__))
    folder = options.get("--dir")
    if folder is None:
        folder, why = install_folder()
        if folder is None:
            raise Fatal(EXIT_INTERNAL, "%s; name the folder with --dir DIR" % why)
    folder = os.path.abspath(folder)
    holder = repository_holding(folder)
    if holder is not None:
        raise Fatal(EXIT_USAGE, "%s is inside the repository %s: install puts the archive in "
                    "a folder of yours, never in a repository (one copy serves every "
                    "repository; pass --dir DIR outside it)" % (folder, holder))
    target = os.path.join(folder, "majordomus.pyz")
    copied = _install_copy(source, folder, target)
    clients = install_clients(target)
    if options.get("--format", "text") == "json":
        write_stdout(_pretty({"archive": target, "version": VERSION, "copied": copied,
                              "clients": clients}))
    else:
        write_stdout(install_text(target, source, copied, clients))
    return EXIT_OK


def _install_copy(source, folder, target):
    """Copy `source` to `target` (made in a temporary beside it, then renamed into place);
    False when `target` already is that file."""
    try:
        if os.path.exists(target) and os.path.samefile(source, target):
            return False
        with open(source, "rb") as handle:
            data = handle.read()
        os.makedirs(folder, exist_ok=True)
        temporary = os.path.join(folder, ".majordomus-%d.pyz" % os.getpid())
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC
                         | getattr(os, "O_BINARY", 0), 0o755)
        try:
            try:
                write_whole(handle, data)
            finally:
                os.close(handle)
            os.replace(temporary, target)
        except OSError:
            try:
                os.unlink(temporary)      # (nothing half-written is left behind)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise Fatal(EXIT_INTERNAL, "cannot install %s: %s" % (target, _os_reason(exc)))
    return True


def install_clients(archive):
    """Each client's configuration running `archive` for its open folder (§32): [{client,
    where, config[, command]}], in the README's order. A client's workspace variable where
    it has one (VS Code, Cursor: ${workspaceFolder}); Claude Code starts the server in the
    project's folder (`.`); Claude Desktop has no folder: a placeholder to replace."""
    command, head = ("py", ["-3"]) if os.name == "nt" else ("python3", [])

    def server(repo, **extra):
        return dict(extra, command=command, args=head + [archive, "mcp", "--repo", repo])
    quote = _shell_word if os.name != "nt" else (      # (cmd and PowerShell: double quotes)
        lambda word: '"%s"' % word if " " in word else word)
    line = " ".join(map(quote, ["claude", "mcp", "add", "--scope", "user", "majordomus", "--",
                                command] + head + [archive, "mcp", "--repo", "."]))
    return [
        {"client": "Claude Code", "where": "every project: run the command (it writes "
         "~/.claude.json); the server starts in the folder you start claude in",
         "command": line, "config": {"mcpServers": {"majordomus": server(".")}}},
        {"client": "Claude Desktop", "where": "claude_desktop_config.json (Settings, "
         "Developer, Edit Config): it has no open folder, so replace /path/to/repository",
         "config": {"mcpServers": {"majordomus": server("/path/to/repository")}}},
        {"client": "Cursor", "where": "~/.cursor/mcp.json (every project)",
         "config": {"mcpServers": {"majordomus": server("${workspaceFolder}")}}},
        {"client": "VS Code", "where": "your user mcp.json (the command MCP: Open User "
         "Configuration)",
         "config": {"servers": {"majordomus": server("${workspaceFolder}", type="stdio")}}}]


def install_text(archive, source, copied, clients):
    """What `install` prints for a person: where the copy is, then each client's
    configuration (the JSON to paste; Claude Code's command line first)."""
    lines = ["majordomus %s %s %s" % (VERSION, "installed:" if copied else "already at",
                                      archive)]
    if copied:
        lines.append("(copied from %s)" % source)
    lines += ["", "Each configuration below runs that copy for the folder the client has open "
              "(a folder without a layer is answered, not failed). Nothing else was written."]
    if os.name != "nt":
        lines.append("A client that does not find python3 needs its absolute path: %s"
                     % sys.executable)
    for client in clients:
        lines += ["", "%s: %s" % (client["client"], client["where"])]
        if "command" in client:
            lines += ["  " + client["command"], "or, the same as JSON:"]
        lines.append(json_pretty(client["config"]))
    return "\n".join(lines) + "\n"


def main(argv=None):
    """Run one command; return its exit code. No traceback ever reaches the user."""
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        options, text = parse_args(args)
        if options is None:
            write_stdout(text)
            return EXIT_OK
        return run_command(options)
    except UsageError as exc:
        if args[:1] == ["hook"] and "--print-config" not in args:
            # A hook is never in the way (§30): exit 2 would block the client's tool.
            write_stderr("majordomus hook: %s (usage: %s)\n" % (exc.message, exc.usage))
            return EXIT_OK
        write_stderr("error: %s\n\nUsage: %s\n\nFor more information, try '--help'.\n"
                % (exc.message, exc.usage))
        return EXIT_USAGE
    except Fatal as exc:
        write_stderr("majordomus: %s\n" % " ".join(exc.message.split("\n")))
        return exc.code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a defect: one line for the user, the traceback at debug
        log(DEBUG, "unexpected failure", traceback=_traceback_text())
        write_stderr("majordomus: internal error: %s: %s\n" % (type(exc).__name__, exc))
        return EXIT_INTERNAL


def exit_with(code):
    """End the process with `code`: a hook's (§30) at once, once what it printed is flushed,
    since tearing down the index it built costs a client 2.5-3 ms more at every edit;
    any other command's through sys.exit (its threads joined, its files closed)."""
    if sys.argv[1:2] == ["hook"]:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # a closed pipe: nothing more can be said
                pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    exit_with(main())
