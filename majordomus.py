#!/usr/bin/env python3
"""majordomus: a read-only, data-driven reader of a repository's AI layer (.ai/).

It finds the root, reads the manifest and the declared knowledge sources, discovers files
through the git index, reads each by its kind, and serves the resulting index over MCP
stdio (`majordomus mcp`), HTTP on loopback (`majordomus serve`) and the command line.
The contract is SPEC.md; section numbers (§) below refer to it.

Sections, in data-flow order:
  1. errors and logging          5. discovery                 9. MCP stdio projection
  2. the YAML subset             6. the index                10. HTTP projection
  3. embedded data: kinds, allow 7. registry and execution   11. CLI projections
  4. root, manifest, sources     8. resolution               12. entry point
Standard library only; imports that only one command needs are made inside it, so that
the `mcp` path stays fast to start.
"""

import json
import os
import re
import stat
import sys
import time

VERSION = "0.1.0"


# ---------------------------------------------------------------------------------------
# 1. Errors and logging: fatal errors carry their exit code; logs go to stderr only.
# ---------------------------------------------------------------------------------------

EXIT_OK, EXIT_USAGE, EXIT_CONTRACT, EXIT_MISSING, EXIT_INTERNAL = 0, 2, 10, 12, 13


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


LOG_LEVELS = {"off": 0, "error": 1, "warn": 2, "info": 3, "debug": 4, "trace": 5}
_LOG_NAMES = {1: "ERROR", 2: "WARN", 3: "INFO", 4: "DEBUG", 5: "TRACE"}
_log_level = LOG_LEVELS.get(os.environ.get("MAJORDOMUS_LOG", "").strip().lower(), 3)
_SAFE_VALUE = re.compile(r'[^\s"=\\]+\Z')


def log(level, message, **fields):
    """Write one log line `<time> <LEVEL> <message> key=value …` to stderr."""
    if level > _log_level:
        return
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % (now % 1 * 1000)
    parts = [stamp, _LOG_NAMES[level], message]
    for key, value in fields.items():
        text = value if isinstance(value, str) else json.dumps(value)
        if not _SAFE_VALUE.match(text):
            text = json.dumps(text, ensure_ascii=False)
        parts.append("%s=%s" % (key, text))
    try:
        sys.stderr.write(" ".join(parts) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # a closed stderr must never end a session


ERROR, WARN, INFO, DEBUG, TRACE = 1, 2, 3, 4, 5


# ---------------------------------------------------------------------------------------
# 2. The YAML subset (§3): a strict line reader, the tree and key-path views, front matter.
# ---------------------------------------------------------------------------------------

class SubsetError(Exception):
    """The layer's YAML subset refused a text; str(err) is the exact message of §3."""


_KEY_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: |\Z)")
_INTEGER = re.compile(r"-?[0-9]+\Z")
_INTEGER_FIRST = frozenset("-0123456789")
_INT64 = (-(1 << 63), (1 << 63) - 1)


def _typed(text):
    """§3.3 rule 5: true/false, a signed 64-bit decimal integer, or the string itself."""
    if text == "true":
        return True
    if text == "false":
        return False
    if text[:1] in _INTEGER_FIRST and _INTEGER.match(text):
        number = int(text)
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
            items.append(value if quoted else _typed(value))
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
        """The container at `path` that segment `child` goes into, created on first use."""
        node = self.nodes.get(path)
        wants_list = child.isdigit()
        if node is None:
            parent, _, segment = path.rpartition(".")
            node = [] if wants_list else {}
            self.attach(self.container(parent, segment, full, line), segment, node)
            self.nodes[path] = node
            return node
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
    number = 0
    for raw in text.split("\n"):
        number += 1
        if raw[-1:] == "\r":
            raw = raw[:-1]
        if "\t" in raw:
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
            key = _KEY_LINE.match(content)
            if key is None:
                raise SubsetError("cannot parse line %d: %s" % (number, content))
            name = key.group(1)
            del ctx[1:]
            del pend[:]
            if name in reader.opened:
                raise SubsetError("'%s' is given twice, on line %d" % (name, number))
            reader.opened.add(name)
            value = content[key.end():].strip(" ")
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
            key = _KEY_LINE.match(item)
            if key is None:
                reader.leaf(path, _scalar(item, number) if item else "", number)
                continue
            # A mapping item: its keys sit one level (two columns) deeper than the dash.
            # Like a scalar item it leaves `pend` alone: a later `- x` at level + 1 is
            # still an item of the parent that set pend[level + 1].
            reader.mapping_item(path, number)
            del ctx[level + 1:]
            _put(ctx, level + 1, path)
            _key_line(reader, ctx, pend, level + 1, path, key, item, number)
            continue
        key = _KEY_LINE.match(content)
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


def _key_line(reader, ctx, pend, level, base, match, content, number):
    """A key line at `level` under `base`: a parent (empty value) or a leaf. Deeper
    entries of both tables were dropped by the caller."""
    path = base + "." + match.group(1) if base else match.group(1)
    reader.open_key(path, number)
    value = content[match.end():].strip(" ")
    if value:
        value = _scalar(value, number)
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

    def walk(node, prefix):
        pairs = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in pairs:
            path = prefix + str(key)
            if isinstance(value, (dict, list)) and value:
                walk(value, path + ".")
            else:
                paths.append(path)

    walk(tree, "")
    return paths


FRONT_MATTER_LIMIT = 65536
_FENCE = re.compile(r"^---\r?$", re.M)


def split_front_matter(text):
    """§3.6: (metadata mapping or None, body); raise SubsetError for a broken front matter."""
    if text.startswith("---\n"):
        start = 4
    elif text.startswith("---\r\n"):
        start = 5
    elif text in ("---", "---\r"):
        raise SubsetError("front matter opened on line 1 and never closed")
    else:
        return None, text
    fence = _FENCE.search(text, start)
    if fence is None:
        raise SubsetError("front matter opened on line 1 and never closed")
    inner = text[start:fence.start()]
    if len(inner) > FRONT_MATTER_LIMIT // 4:
        size = len(inner.encode("utf-8"))
        if size > FRONT_MATTER_LIMIT:
            raise SubsetError("front matter is %d bytes, over the %d byte limit"
                              % (size, FRONT_MATTER_LIMIT))
    newline = text.find("\n", fence.end())
    body = "" if newline < 0 else text[newline + 1:]
    return parse_subset(inner), body


def render_scalar(value):
    """A scalar as text (`true`, `1`, …); None for a mapping or a list."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    return None


# ---------------------------------------------------------------------------------------
# 3. Embedded data: schema/kinds.yaml and share/allow/*.txt, read from beside the module
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


class KindsError(Exception):
    """A kinds file or an allow-list that cannot be used; str() is the reason (§4.1, §4.4).
    The caller adds where: exit 13 for the shipped files, exit 10 for the repository's."""


def _schema_defect(reason):
    return Fatal(EXIT_INTERNAL, "embedded kind schema is invalid: " + reason)


class AllowList:
    """One allow-list: anchored patterns, one per line (§3.5); compiled on first use.
    `where` is the list's path as unknown_key messages name it."""

    def __init__(self, name, patterns, where=None):
        self.name = name
        self.patterns = patterns
        self.where = where or "share/allow/%s.txt" % name
        self._matcher = None
        self._seen = {}

    @classmethod
    def from_text(cls, name, text, where=None):
        return cls(name, [line for line in text.split("\n")
                          if line.strip() and not line.startswith("#")], where)

    @classmethod
    def shipped(cls, name):
        """A list of share/allow/; None when the tool ships none of that name."""
        try:
            text = read_embedded("share/allow/%s.txt" % name)
        except OSError:
            return None
        try:
            return cls.from_text(name, text.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise _schema_defect("share/allow/%s.txt: %s" % (name, exc))

    def compile(self):
        """The matcher; KindsError naming the first pattern that is not a regular expression."""
        try:
            # fullmatch: a pattern written without ^…$ is still anchored.
            self._matcher = re.compile("|".join("(?:%s)" % p for p in self.patterns)
                                       or "(?!)").fullmatch
        except re.error:
            for pattern in self.patterns:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise KindsError("pattern %r: %s" % (pattern, exc))
            raise KindsError("the patterns do not combine into one expression")
        return self._matcher

    def allows(self, path):
        known = self._seen.get(path)
        if known is None:
            matcher = self._matcher or self._shipped_matcher()
            known = self._seen[path] = matcher(path) is not None
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
_NAMESPACE = re.compile(r"[a-z][a-z0-9_-]*\Z")


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
    if not _NAMESPACE.match(name) or not isinstance(spec, dict):
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
        tree = parse_subset(read_embedded(SHIPPED_KINDS).decode("utf-8"))
        declared, specs = check_kinds_tree(tree)
        link_kinds(specs, declared)
    except (OSError, UnicodeDecodeError, SubsetError, KindsError) as exc:
        raise _schema_defect("%s: %s" % (SHIPPED_KINDS, _os_reason(exc)))
    allows = {}
    for name in sorted(set(spec["allow"] for spec in specs.values() if "allow" in spec)):
        allows[name] = AllowList.shipped(name)
        if allows[name] is None:
            raise _schema_defect("%s: allow-list '%s' is not embedded (share/allow/%s.txt)"
                                 % (SHIPPED_KINDS, name, name))
    _SHIPPED.append(Kinds(specs, declared, allows))
    return _SHIPPED[0]


def _os_reason(exc):
    """A short reason for an OS or decoding error, without a traceback or a full path."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


# ---------------------------------------------------------------------------------------
# 4. Root, manifest and sources (§2, §4.2): the repository's own declarations.
# ---------------------------------------------------------------------------------------

MANIFEST = ".ai/manifest.yaml"
LAYER_SCHEMA = "ai-repository/v1"


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
            if stat.S_ISREG(os.lstat(os.path.join(directory, MANIFEST)).st_mode):
                return directory
        except OSError:
            pass
        legacy = os.path.join(directory, ".majordomus")
        if os.path.isdir(legacy) and not os.path.exists(os.path.join(legacy, "bin", "majordomus")):
            raise Fatal(EXIT_MISSING, "project data lives under %s (the pre-.ai layout), which "
                        "nothing reads any more; run: majordomus migrate" % legacy)
        parent = os.path.dirname(directory)
        if parent == directory:
            raise Fatal(EXIT_MISSING, "no Majordomus repository found from %s: no ancestor "
                        "directory carries .ai/manifest.yaml" % here)
        directory = parent


def _read_declaration(root, relative):
    """Parse one of the repository's YAML declarations; fatal errors name its path
    (unreadable: exit 13; not the subset: exit 10)."""
    try:
        with open(os.path.join(root, relative), "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise Fatal(EXIT_INTERNAL, "%s: cannot be read: %s" % (relative, _os_reason(exc)))
    try:
        return parse_subset(data.decode("utf-8"))
    except (UnicodeDecodeError, SubsetError) as exc:
        raise Fatal(EXIT_CONTRACT, "%s: %s" % (relative, exc))


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
        self.sections = {name: _ai_path(value) for name, value in tree["sections"].items()}
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


def read_manifest(root, allow):
    """§2.2, with its processing order: subset, unknown keys, schema, required keys."""
    tree = _read_declaration(root, MANIFEST)
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

    __slots__ = ("id", "kind", "pathspec", "required", "match", "prefix")

    def __init__(self, spec):
        self.id = spec["id"]
        self.kind = spec["kind"]
        self.pathspec = spec["pathspec"]
        self.required = spec["required"]
        pattern = self.pathspec[len(GLOB_MAGIC):]
        self.match = glob_matcher(pattern)
        # The directories before the first wildcard: a cheap test that rules out most paths.
        literal = re.split(r"[*?\[\\]", pattern, maxsplit=1)[0]
        self.prefix = literal[:literal.rfind("/") + 1]


GLOB_MAGIC = ":(glob)"
_CLASS_KEYS = (("id", str), ("kind", str), ("discovery", str), ("pathspec", str),
               ("required", bool))
_CLASS_KEY_NAMES = frozenset(name for name, _ in _CLASS_KEYS)


def read_sources(root, manifest):
    """§4.2: the declared classes in order; every defect is fatal (exit 10, or 13 unread)."""
    if "knowledge" not in manifest.sections:
        raise Fatal(EXIT_CONTRACT, "%s: no 'knowledge' section, so no sources can be declared"
                    % MANIFEST)
    where = manifest.sections["knowledge"] + "/sources.yaml"
    tree = _read_declaration(root, where)
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


def read_repository_kinds(root, manifest, shipped):
    """§4.4: the repository's kinds file and allow-lists, merged over the shipped kinds.
    Every defect is fatal (exit 10, `<path>: <reason>`); absent = the shipped kinds."""
    knowledge = manifest.sections["knowledge"]
    where = knowledge + "/kinds.yaml"
    lists = _repository_allow_lists(root, knowledge + "/allow")
    if not os.path.lexists(os.path.join(root, where)):
        return shipped
    tree = _read_declaration(root, where)
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
    return Kinds(merged, order, allows, kinds_file=where)


def _repository_allow_lists(root, folder):
    """The `.txt` lists of the repository's allow/ folder, each read and compiled now."""
    lists = {}
    try:
        names = sorted(entry.name for entry in os.scandir(os.path.join(root, folder))
                       if entry.name.endswith(".txt") and entry.is_file())
    except OSError:
        return lists   # no folder: no lists
    for file_name in names:
        name, where = file_name[:-4], folder + "/" + file_name
        try:
            read_embedded("share/allow/" + file_name)
        except OSError:
            pass
        else:
            raise Fatal(EXIT_CONTRACT, "%s: allow-list '%s' is shipped; a repository adds "
                        "allow-lists, it does not redefine them" % (where, name))
        try:
            with open(os.path.join(root, where), "rb") as handle:
                text = handle.read().decode("utf-8")
            lists[name] = AllowList.from_text(name, text, where)
            lists[name].compile()
        except OSError as exc:
            raise Fatal(EXIT_INTERNAL, "%s: cannot be read: %s" % (where, _os_reason(exc)))
        except (UnicodeDecodeError, KindsError) as exc:
            raise Fatal(EXIT_CONTRACT, "%s: %s" % (where, exc))
    return lists


# ---------------------------------------------------------------------------------------
# 5. Discovery (§4.3): one `git ls-files -z`, or a walk of the work tree; glob matching
#    in Python; class order, sorting, the local half, claimed-twice, required classes.
# ---------------------------------------------------------------------------------------

def glob_matcher(pattern):
    """A full-path matcher for git's :(glob) magic: `*`, `?`, `[...]` within a segment,
    `**` as a whole segment for zero or more segments."""
    segments = pattern.split("/")
    parts = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".+" if last else "(?:[^/]+/)*")
        else:
            parts.append(_glob_segment(segment) + ("" if last else "/"))
    return re.compile("(?s)" + "".join(parts) + r"\Z").match


def _glob_segment(segment):
    out, i, n = [], 0, len(segment)
    while i < n:
        char = segment[i]
        i += 1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "\\" and i < n:
            out.append(re.escape(segment[i]))
            i += 1
        elif char == "[":
            translated, i = _glob_class(segment, i)
            out.append(translated)
        else:
            out.append(re.escape(char))
    return "".join(out)


_POSIX_CLASSES = {"alpha": "a-zA-Z", "digit": "0-9", "alnum": "a-zA-Z0-9", "upper": "A-Z",
                  "lower": "a-z", "space": " \\t\\n\\r\\f\\v", "blank": " \\t",
                  "xdigit": "0-9a-fA-F", "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
                  "print": " -~", "graph": "!-~", "cntrl": "\\x00-\\x1f\\x7f"}


def _glob_class(segment, i):
    """Translate the class opening at segment[i-1] == '['; (regex, index after it).
    Like git, a class never matches '/'; '!' or '^' negates; a leading ']' is literal."""
    n, j = len(segment), i
    negate = j < n and segment[j] in "!^"
    if negate:
        j += 1
    body = []
    first = True
    while j < n:
        char = segment[j]
        if char == "]" and not first:
            prefix = "[^/" if negate else "(?!/)["
            return prefix + "".join(body) + "]", j + 1
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
    return re.escape("["), i      # no closing bracket: a literal '['


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


def _git(root, *args):
    """Run one read-only git command in `root`: (returncode, stdout bytes, stderr text)."""
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    argv = ["git", "-C", root] + list(args)
    try:
        code, out, err = (_spawn(argv, env) if hasattr(os, "posix_spawnp")
                          else _spawn_portable(argv, env))
    except FileNotFoundError:
        return 127, b"", "git is not installed (no 'git' on PATH)"
    except OSError as exc:
        return 126, b"", "git cannot be run: %s" % _os_reason(exc)
    return code, out, _git_reason(err)


def _spawn(argv, env):
    """posix_spawnp with stdout and stderr read together: `subprocess` would cost the
    start-up of every MCP session more than git itself does."""
    import select
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        pid = os.posix_spawnp(argv[0], argv, env, file_actions=[
            (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, out_w, 1),
            (os.POSIX_SPAWN_DUP2, err_w, 2)])
    except BaseException:
        for fd in (out_r, err_r):
            os.close(fd)
        raise
    finally:
        for fd in (out_w, err_w, null):
            os.close(fd)
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


def _spawn_portable(argv, env):
    import subprocess
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def _git_reason(stderr):
    """git's own `fatal:` line, alone: hints and advice can quote configuration."""
    lines = stderr.decode("utf-8", "replace").splitlines()
    for line in lines:
        if line.startswith("fatal: "):
            return line[len("fatal: "):].strip()
    return lines[0].strip() if lines else "git failed"


def list_vcs(root):
    """The paths of the git index under `root`, relative to it (one git call)."""
    code, out, reason = _git(root, "ls-files", "-z")
    if code != 0:
        raise Fatal(EXIT_INTERNAL, "git: %s; discovery through the version-control index "
                    "needs git (or pass --discovery filesystem)" % reason)
    return [p.decode("utf-8", "replace") for p in out.split(b"\0") if p]


def list_filesystem(root, manifest):
    """The regular files of the work tree: no symlink followed, no .git, no local half."""
    found = []
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            entries = os.scandir(os.path.join(root, relative) if relative else root)
        except OSError:
            continue
        with entries:
            for entry in entries:
                path = relative + entry.name
                if entry.is_symlink():
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != ".git" and not manifest.is_local(path):
                        pending.append(path + "/")
                else:
                    found.append(path)
    return found


def discover(paths, classes, manifest):
    """§4.3: [(path, class)] in class order, and the discovery diagnostics."""
    claimed, claims, diagnostics = {}, [], []
    candidates = [p for p in paths if not manifest.is_local(p)]
    for source in classes:
        kept = 0
        prefix, match = source.prefix, source.match
        for path in sorted(set(p for p in candidates if p.startswith(prefix) and match(p))):
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
# 6. The index (§5): each discovered file read by its kind into an object, or excluded
#    with a named diagnostic; duplicate identities exclude every claimant.
# ---------------------------------------------------------------------------------------

FILE_LIMIT = 4194304
_NO_SPACE = re.compile(r"[^\s/@]+\Z")
_URI_SAFE = re.compile(r"[^\s\x00-\x1f\x7f]+\Z")


class LayerObject:
    """One object of the index (§5.2)."""

    __slots__ = ("uri", "id", "kind", "identity", "title", "description", "metadata",
                 "media_type", "content", "provenance", "path", "body", "prompt")

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
        self.body = body                 # the text after the front matter (markdown)
        self.prompt = kind.prompt        # served as an MCP prompt too (§17)

    def tags(self):
        tags = self.metadata.get("tags")
        return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


class _Excluded(Exception):
    """A file (or a member) that cannot become an object: the first failed check of §5.1."""

    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code = code
        self.message = message


def _read_text(root, path):
    """§5.1 check 2: a regular file, not a symlink, at most 4 MiB, UTF-8."""
    full = root + "/" + path
    try:
        info = os.lstat(full)
    except OSError as exc:
        raise _Excluded("unreadable", _os_reason(exc))
    if stat.S_ISLNK(info.st_mode):
        raise _Excluded("symlink", "a symlink is not read; sources are regular files")
    if not stat.S_ISREG(info.st_mode):
        raise _Excluded("not_a_file", "not a regular file")
    if info.st_size > FILE_LIMIT:
        raise _Excluded("oversized", "%d bytes, over the %d byte limit"
                        % (info.st_size, FILE_LIMIT))
    try:
        handle = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            # A regular file reads short only at its end: one read of size+1 bytes
            # returning fewer is the whole file; more means it grew, so read on.
            data = os.read(handle, info.st_size + 1)
            while len(data) > info.st_size and len(data) <= FILE_LIMIT:
                chunk = os.read(handle, FILE_LIMIT + 1 - len(data))
                if not chunk:
                    break
                data += chunk
        finally:
            os.close(handle)
    except OSError as exc:
        raise _Excluded("unreadable", _os_reason(exc))
    if len(data) > FILE_LIMIT:
        raise _Excluded("oversized", "%d bytes, over the %d byte limit"
                        % (len(data), FILE_LIMIT))
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


def read_file(layer, path, source):
    """§5.1: one discovered file read by its kind: (objects, diagnostics). A file is one
    object or none; a members file is one object per good item."""
    try:
        return _read_file(layer, path, source)
    except _Excluded as exc:
        return [], [Diagnostic("error", exc.code, path, exc.message)]


def _read_file(layer, path, source):
    kind = layer.kinds.get(source.kind)
    if kind is None:
        raise _Excluded("unknown_kind", "class '%s' declares kind '%s', which this executable "
                        "does not read" % (source.id, source.kind))
    text, size = _read_text(layer.root, path)
    metadata, body = {}, text
    if kind.format == "yaml":
        try:
            metadata = parse_subset(text)
        except SubsetError as exc:
            raise _Excluded("malformed_yaml", str(exc))
    elif kind.format == "markdown" and kind.front_matter != "none":
        try:
            found, body = split_front_matter(text)
        except SubsetError as exc:
            raise _Excluded("malformed_front_matter", str(exc))
        if found is None:
            if kind.without_front_matter:
                kind = layer.kinds[kind.without_front_matter]
            elif kind.front_matter == "required":
                raise _Excluded("missing_front_matter", "no front matter, and the kind requires it")
        else:
            metadata = found
            declared = metadata.get("kind")
            if (isinstance(declared, str) and declared != kind.name
                    and declared in layer.kinds.declared):
                kind = layer.kinds[declared]   # the file chose its kind (§4.1 `declared`)
    if kind.format != "text":
        if kind.allow is not None:
            unknown = kind.allow.unknown(key_paths(metadata))
            if unknown:
                raise _Excluded("unknown_key", "key(s) not in %s: %s"
                                % (kind.allow.where, ", ".join(unknown)))
        if not kind.members:
            declared = metadata.get("kind")
            if isinstance(declared, str) and declared != kind.name:
                raise _Excluded("kind_mismatch", "declares kind '%s' but was discovered by class "
                                "'%s' as '%s'" % (declared, source.id, kind.name))
        _check_version(kind, metadata)
    provenance = {"path": path, "directory": path.rpartition("/")[0] or ".",
                  "source_class": source.id}
    section = layer.manifest.section_of(path)
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
    return [LayerObject(kind, identity, metadata, text, provenance, title,
                        _field_text(metadata, kind.description), kind.media_type,
                        body if kind.format == "markdown" else None)], []


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
                        % (field, json.dumps(value), json.dumps(kind.supported)))


def _identity(kind, metadata, path):
    """§5.1 check 7: the identity fields joined with `@`, or the path."""
    if not kind.identity:
        if not _URI_SAFE.match(path):
            raise _Excluded("invalid_identity", "the path is the identity of a %s, and a URI "
                            "cannot carry whitespace or a control character" % kind.name)
        return path
    values = []
    for field in kind.identity:
        value = render_scalar(metadata.get(field))
        if not value:
            raise _Excluded("missing_field", "identity field '%s' is absent or empty" % field)
        if not _NO_SPACE.match(value):
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
        content = json.dumps(item, indent=2, ensure_ascii=False)
        objects.append(LayerObject(kind, identity, item, content, origin,
                                   _field_text(item, kind.title) if kind.title != "@heading"
                                   else None, _field_text(item, kind.description),
                                   "application/json", None))
    return objects, diagnostics


class Index:
    """The objects in URI order, the diagnostics in index order, and the state."""

    def __init__(self, objects, diagnostics):
        self.objects = sorted(objects, key=lambda o: o.uri)
        self.by_uri = {o.uri: o for o in self.objects}
        self.diagnostics = diagnostics
        self.errors = sum(1 for d in diagnostics if d.severity == "error")
        self.state = "degraded" if self.errors else "ok"
        counts = {}
        for obj in self.objects:
            counts[obj.kind] = counts.get(obj.kind, 0) + 1
        self.kinds = dict(sorted(counts.items()))
        # Identifies this index in cache keys: any change of the layer changes it.
        self.fingerprint = "%x" % (hash(tuple((o.uri, len(o.content)) for o in self.objects))
                                   & 0xFFFFFFFFFFFF)


def build_index(layer, claims, discovery_diagnostics, reserved_ids=()):
    """§5: read every claimed file, then exclude every claimant of a duplicate URI."""
    objects, diagnostics = [], list(discovery_diagnostics)
    for path, source in claims:
        found, problems = read_file(layer, path, source)
        diagnostics += problems
        for obj in found:
            if obj.id in reserved_ids:
                diagnostics.append(Diagnostic("error", "capability_conflict", path,
                                              "capability id '%s' belongs to a builtin "
                                              "capability" % obj.id))
                continue
            objects.append(obj)
    claimants = {}
    for obj in objects:
        claimants.setdefault(obj.uri, []).append(obj)
    duplicates = sorted((uri, group) for uri, group in claimants.items() if len(group) > 1)
    for uri, group in duplicates:
        paths = " and ".join(o.path for o in group)
        for obj in group:
            diagnostics.append(Diagnostic("error", "duplicate_identity", obj.path,
                                          "%s is claimed by %s; every claimant is excluded"
                                          % (uri, paths)))
    kept = [o for o in objects if len(claimants[o.uri]) == 1]
    return Index(kept, diagnostics)


class Layer:
    """A repository's layer as read once: root, manifest, classes, kinds, the index."""

    def __init__(self, root, discovery, manifest, classes, kinds):
        self.root, self.discovery, self.manifest = root, discovery, manifest
        self.classes, self.kinds = classes, kinds
        self.index = None
        self._git = None

    def git_state(self):
        """§9.1 `git`: computed on first use (two read-only git calls), then kept."""
        if self._git is None:
            self._git = _git_state(self.root)
        return self._git


def _git_state(root):
    code, out, reason = _git(root, "rev-parse", "--show-toplevel")
    if code != 0:
        return {"state": "unavailable", "reason": reason}
    toplevel = out.decode("utf-8", "replace").strip()
    code, out, reason = _git(root, "status", "--porcelain=v2", "--branch", "-z")
    head = branch = None
    tree = "unknown"
    if code == 0:
        dirty = False
        for record in out.split(b"\0"):
            if record.startswith(b"# branch.oid "):
                oid = record[13:].decode("ascii", "replace")
                head = oid if len(oid) == 40 else None
            elif record.startswith(b"# branch.head "):
                name = record[14:].decode("utf-8", "replace")
                branch = None if name == "(detached)" else name
            elif record and not record.startswith(b"#"):
                dirty = True
        tree = "dirty" if dirty else "clean"
    return {"state": "available", "toplevel": toplevel, "head": head, "branch": branch,
            "working_tree": tree}


def open_layer(start, discovery, counters):
    """Root → manifest → sources → kinds → discovery → index (§9.0); fatal errors raise."""
    began = time.perf_counter_ns()
    root = find_root(start)
    manifest = read_manifest(root, _manifest_allow())
    classes = read_sources(root, manifest)
    kinds = read_repository_kinds(root, manifest, shipped_kinds())
    layer = Layer(root, discovery, manifest, classes, kinds)
    if discovery == "vcs":
        paths = list_vcs(root)
    else:
        paths = list_filesystem(root, manifest)
    claims, diagnostics = discover(paths, classes, manifest)
    counters.count("repository_scans")
    counters.phase("repository_discovery", began)
    began = time.perf_counter_ns()
    layer.index = build_index(layer, claims, diagnostics, BUILTIN_IDS)
    counters.count("index_builds")
    counters.phase("index_build", began)
    return layer


# ---------------------------------------------------------------------------------------
# 7. The capability registry and execution (§7): descriptors without code, one
#    `execute(id, input)` for every caller, input validation, counters and the cache.
# ---------------------------------------------------------------------------------------

class CapabilityError(Exception):
    """A transport-neutral failure of a capability; str() is its Display text (§7.5)."""
    prefix = "internal"

    def __init__(self, message):
        Exception.__init__(self, "%s: %s" % (self.prefix, message))
        self.message = message


class InvalidInput(CapabilityError):
    prefix = "invalid input"


class NotFound(CapabilityError):
    prefix = "not found"


class Refused(CapabilityError):
    prefix = "refused"


class Internal(CapabilityError):
    prefix = "internal"


class Counters:
    """The process's counters and phase timings (perf.counters)."""

    NAMES = ("repository_scans", "index_builds", "registry_builds", "mcp_projection_builds",
             "http_projection_builds", "executions", "handler_invocations", "cache_hits",
             "cache_misses", "cache_evictions")
    PHASES = ("repository_discovery", "index_build", "registry_build", "handler_execution",
              "cache_lookup")

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
_ANY_OBJECT = {"type": "object"}
_PROVENANCE = _object_schema({"source": _STR, "module": _STR, "path": _STR, "directory": _STR,
                              "source_class": _STR, "section": _STR, "bytes": _INT,
                              "media_type": _STR})
_SUMMARY = _object_schema({"uri": _STR, "id": _STR, "kind": _STR, "identity": _STR,
                           "title": _STR, "description": _STR, "path": _STR},
                          ("uri", "id", "kind", "identity", "path"))
_HIT = _object_schema(dict(_SUMMARY["properties"], snippet=_STR), _SUMMARY["required"])
_DIAGNOSTIC = _object_schema({"severity": {"type": "string", "enum": ["error", "warning", "info"]},
                              "code": _STR, "path": _STR, "message": _STR},
                             ("severity", "code", "message"))
_REGISTRY_SUMMARY = _object_schema(
    {"total": _INT, "builtin": _INT, "declarative": _INT, "by_kind": _ANY_OBJECT,
     "by_stability": _ANY_OBJECT, "mcp_tools": _INT, "mcp_resources": _INT,
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
_VIEW_FIELDS = {"source": {"type": "string", "enum": ["declarative", "builtin"]}, "uri": _STR,
                "id": _STR, "kind": _STR, "identity": _STR, "title": _STR,
                "description": _STR, "metadata": _ANY_OBJECT, "answer": {},
                "provenance": _PROVENANCE, "media_type": _STR, "content": _STR}
_VIEW_REQUIRED = ("source", "uri", "id", "kind", "identity", "provenance", "media_type",
                  "content")
_KIND_ENUM = ["query", "command", "resource"]
_EXPOSURE_ENUM = ["mcp", "http", "cli"]

TYPES = {
    "Empty": _object_schema({}, closed=True),
    "ListInput": _object_schema({
        "kind": dict(_STR, description="only objects of this kind"),
        "tag": dict(_STR, description="only objects whose metadata tags list holds this tag")},
        closed=True),
    "GetInput": _object_schema({
        "uri": dict(_STR, description="a majordomus:// URI, as resources/list gives it")},
        ("uri",), closed=True),
    "SearchInput": _object_schema({
        "query": dict(_STR, description="case-insensitive text to find"),
        "kind": dict(_STR, description="only objects of this kind"),
        "limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 20,
                  "description": "the most hits to return"}},
        ("query",), closed=True),
    "CapabilitiesInput": _object_schema({
        "kind": {"type": "string", "enum": _KIND_ENUM},
        "exposure": {"type": "string", "enum": _EXPOSURE_ENUM}}, closed=True),
    "DescribeInput": _object_schema({
        "id": dict(_STR, description="a capability id, e.g. objects.get")}, ("id",), closed=True),
    "RepositoryReport": _object_schema({
        "repository": _object_schema({
            "root": _STR, "layer_schema": _STR, "sections": _ANY_OBJECT,
            "git": _ANY_OBJECT, "discovery": {"type": "string", "enum": ["vcs", "filesystem"]},
            "source_classes": {"type": "array", "items": {"type": "array", "items": _STR}}}),
        "state": {"type": "string", "enum": ["ok", "degraded"]}, "objects": _INT,
        "kinds": _ANY_OBJECT, "diagnostics": {"type": "array", "items": _DIAGNOSTIC},
        "capabilities": _REGISTRY_SUMMARY},
        ("repository", "state", "objects", "kinds", "diagnostics", "capabilities")),
    "ObjectList": _object_schema({"count": _INT, "objects": {"type": "array", "items": _SUMMARY}},
                                 ("count", "objects")),
    "SearchResult": _object_schema({"query": _STR, "count": _INT, "limit": _INT,
                                    "hits": {"type": "array", "items": _HIT}},
                                   ("query", "count", "limit", "hits")),
    "ResourceView": _object_schema(_VIEW_FIELDS, _VIEW_REQUIRED),
    "ObjectView": _object_schema(
        {k: v for k, v in _VIEW_FIELDS.items() if k not in ("source", "answer")},
        ("uri", "id", "kind", "identity", "metadata", "provenance", "media_type", "content")),
    "CapabilityList": _object_schema({"count": _INT, "summary": _REGISTRY_SUMMARY,
                                      "capabilities": {"type": "array", "items": _DESCRIPTOR}},
                                     ("count", "summary", "capabilities")),
    "Capability": _DESCRIPTOR,
    "CounterSnapshot": _object_schema(
        dict({name: _INT for name in Counters.NAMES}, phases=_ANY_OBJECT),
        Counters.NAMES + ("phases",)),
}

BUILTIN_PROVENANCE = {"source": "builtin", "module": "majordomus"}

# The builtin capabilities of §7.2, as data: (id, title, description, input, output,
# MCP tool, MCP resource (uri, name) or None, HTTP path or None, CLI words or None,
# process-cache size or 0).
BUILTINS = (
    ("repository.info", "Repository and index state",
     "Returns the repository root, its layer sections, git state, discovery mode, source "
     "classes, the index state with every diagnostic, and the capability summary.",
     "Empty", "RepositoryReport", "majordomus_repository",
     ("majordomus://repository", "repository"), "/api/v1/repository", None, 0),
    ("objects.list", "List objects",
     "Returns a summary of every object of the index in URI order, optionally only those of "
     "one kind or carrying one tag.",
     "ListInput", "ObjectList", "majordomus_list", None, "/api/v1/objects", None, 0),
    ("objects.get", "Get one object",
     "Returns the object a majordomus:// URI names, with its metadata, provenance and exact "
     "content. A URI a query projects (majordomus://repository) answers that query as a JSON "
     "document; the same resolution serves the MCP resource read.",
     "GetInput", "ResourceView", "majordomus_get", None, "/api/v1/object", ["get"], 0),
    ("objects.search", "Search objects",
     "Returns the objects whose identity, title, description or content contains the query, "
     "case-insensitively, in URI order, with the first matching content line as a snippet.",
     "SearchInput", "SearchResult", "majordomus_search", None, "/api/v1/search", None, 64),
    ("capabilities.list", "List capabilities",
     "Returns every capability descriptor in id order, optionally filtered by kind or "
     "exposure, with a summary of the whole registry.",
     "CapabilitiesInput", "CapabilityList", "majordomus_capabilities", None,
     "/api/v1/capabilities", ["capabilities", "list"], 16),
    ("capabilities.describe", "Describe one capability",
     "Returns the descriptor of one capability by id: its schemas, provenance and exposures.",
     "DescribeInput", "Capability", "majordomus_capability", None, "/api/v1/capability",
     ["capabilities", "describe"], 0),
    ("perf.counters", "Performance counters",
     "Returns this process's counters: scans, index and registry builds, executions, cache "
     "hits and misses, and the time spent in each phase.",
     "Empty", "CounterSnapshot", "majordomus_perf", None, "/api/v1/perf", None, 0),
)
BUILTIN_IDS = frozenset(entry[0] for entry in BUILTINS)


def builtin_descriptors():
    """The descriptors of the builtin capabilities, fields in §7.1 order."""
    out = []
    for (cap_id, title, description, input_type, output_type, tool, resource, http, cli,
         cache) in BUILTINS:
        exposure = {"mcp": {"tool": tool}}
        if resource:
            exposure["mcp"]["resource"] = {"uri": resource[0], "name": resource[1]}
        if http:
            exposure["http"] = {"method": "GET", "path": http}
        if cli:
            exposure["cli"] = {"path": list(cli)}
        out.append({
            "id": cap_id, "module": cap_id.partition(".")[0], "kind": "query", "title": title,
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
    """§7.3: the resource capability of one object."""
    origin = obj.provenance
    provenance = {"source": "declarative", "path": origin["path"],
                  "directory": origin["directory"], "source_class": origin["source_class"]}
    if "section" in origin:
        provenance["section"] = origin["section"]
    provenance["media_type"] = obj.media_type
    descriptor = {
        "id": obj.id, "module": obj.kind, "kind": "resource", "title": obj.title or obj.identity,
        "description": obj.description or "", "input": _EMPTY_INPUT, "output": _OBJECT_OUTPUT,
        "provenance": provenance,
        "exposure": {"mcp": {"resource": {"uri": obj.uri, "name": obj.identity}}},
        "stability": "implemented"}
    tags = obj.tags()
    if tags:
        descriptor["tags"] = tags
    descriptor["cache"] = _NO_CACHE
    return descriptor


class RegistryError(Exception):
    """The registry refused to build; `errors` lists every broken invariant (§7.4)."""

    def __init__(self, errors):
        Exception.__init__(self, "; ".join(errors))
        self.errors = errors


_CAPABILITY_ID = re.compile(r"[a-z][a-z0-9_-]*\.[^\s\x00-\x1f\x7f]+\Z")
_TOOL_NAME = re.compile(r"[a-z0-9_]+\Z")
_EXECUTABLE = ("query", "command")


def _provenance_text(descriptor):
    provenance = descriptor.get("provenance") or {}
    if provenance.get("source") == "declarative":
        return provenance.get("path", "declarative")
    return "builtin %s" % provenance.get("module", "majordomus")


class Registry:
    """Every capability by id and by each of its exposures; built once per index."""

    def __init__(self, descriptors):
        errors = []
        self.by_id, self.by_tool, self.by_uri, self.by_http, self.by_cli = {}, {}, {}, {}, {}
        for descriptor in descriptors:
            problems = self._add(descriptor)
            if problems:
                where = "capability '%s' (%s)" % (descriptor.get("id", ""),
                                                  _provenance_text(descriptor))
                errors += ["%s: %s" % (where, problem) for problem in problems]
        if errors:
            raise RegistryError(errors)
        self.ids = sorted(self.by_id)
        self.summary = self._summary()

    def _add(self, descriptor):
        """Index one descriptor under its id and exposures; the invariants it breaks."""
        problems = []
        cap_id = descriptor.get("id", "")

        def claim(table, key, what, *args):
            other = table.get(key)
            if other is not None and other is not descriptor:
                problems.append("%s is claimed by '%s' too" % (what % args, other.get("id")))
            table[key] = descriptor

        if cap_id in self.by_id:
            problems.append("the id is declared twice")
        self.by_id[cap_id] = descriptor
        if not _CAPABILITY_ID.match(cap_id):
            problems.append("the id is not <namespace>.<local>")
        kind, exposure = descriptor.get("kind"), descriptor.get("exposure") or {}
        executable = kind in _EXECUTABLE
        mcp = exposure.get("mcp") or {}
        if "tool" in mcp:
            if not _TOOL_NAME.match(mcp["tool"]):
                problems.append("MCP tool name '%s' is not [a-z0-9_]+" % mcp["tool"])
            claim(self.by_tool, mcp["tool"], "the MCP tool '%s'", mcp["tool"])
        if "resource" in mcp:
            uri = mcp["resource"].get("uri", "")
            if not uri.startswith("majordomus://") or not _URI_SAFE.match(uri):
                problems.append("the resource URI '%s' does not start with majordomus:// or "
                                "carries whitespace" % uri)
            claim(self.by_uri, uri, "the MCP resource '%s'", uri)
            required = descriptor["input"]["schema"].get("required")
            if executable and required:
                problems.append("a query read as the resource '%s' is called with no input, "
                                "and its input requires %s" % (uri, ", ".join(required)))
        if "http" in exposure:
            route = (exposure["http"].get("method", ""), exposure["http"].get("path", ""))
            path = route[1]
            if (not path.startswith("/api/v1/") or path.endswith("/") or "//" in path
                    or "?" in path or "#" in path):
                problems.append("the HTTP path '%s' is not a clean path under /api/v1/" % path)
            claim(self.by_http, route, "the HTTP route %s %s", *route)
        if "cli" in exposure:
            words = tuple(exposure["cli"].get("path") or ())
            claim(self.by_cli, words, "the CLI command '%s'", " ".join(words))
        if descriptor.get("stability") in ("planned", "unsupported") and (
                "tool" in mcp or "http" in exposure or "cli" in exposure
                or (executable and "resource" in mcp)):
            problems.append("a %s capability has an executable exposure"
                            % descriptor["stability"])
        cache = descriptor.get("cache") or {}
        if cache.get("policy") == "process" and not cache.get("max_entries"):
            problems.append("a process cache with max_entries 0")
        if kind == "resource" and not (len(exposure) == 1 and len(mcp) == 1
                                       and "resource" in mcp):
            problems.append("a resource capability is exposed other than as an MCP resource")
        return problems

    def _summary(self):
        by_kind, by_stability = {}, {}
        builtin = 0
        for descriptor in self.by_id.values():
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
        if "enum" in rule and item not in rule["enum"]:
            raise InvalidInput("property '%s' must be one of %s"
                               % (name, ", ".join(map(str, rule["enum"]))))
        if "minimum" in rule and item < rule["minimum"]:
            raise InvalidInput("property '%s' must be at least %d" % (name, rule["minimum"]))
        if "maximum" in rule and item > rule["maximum"]:
            raise InvalidInput("property '%s' must be at most %d" % (name, rule["maximum"]))


class Service:
    """One process's view of one layer: the index, its registry, execution and cache."""

    def __init__(self, layer, counters):
        self.layer, self.index, self.counters = layer, layer.index, counters
        began = time.perf_counter_ns()
        self.registry = Registry(builtin_descriptors()
                                 + [declarative_descriptor(o) for o in self.index.objects])
        counters.count("registry_builds")
        counters.phase("registry_build", began)
        import _thread
        self._cache = {}
        self._search_table = None
        self._search_lock = _thread.allocate_lock()

    def search_table(self):
        """[(object, lower-cased content, lower-cased identity/title/description)] in URI
        order, made by the first search (under a lock: concurrent first searches under
        `serve` must not each fold every object) and kept."""
        if self._search_table is None:
            with self._search_lock:
                if self._search_table is None:
                    self._search_table = [
                        (obj, obj.content.lower(), "\0".join(
                            (obj.identity, obj.title or "", obj.description or "")).lower())
                        for obj in self.index.objects]
        return self._search_table

    def execute(self, cap_id, arguments):
        """§7.5: the one way anything runs a capability."""
        self.counters.count("executions")
        descriptor = self.registry.by_id.get(cap_id)
        if descriptor is None:
            raise NotFound("unknown capability: %s" % cap_id)
        if descriptor["kind"] not in _EXECUTABLE:
            raise Refused("capability '%s' is a resource: it is read, never executed" % cap_id)
        check_input(descriptor["input"]["schema"], arguments)
        cache = descriptor["cache"]
        if cache["policy"] != "process":
            return self._invoke(cap_id, arguments)
        began = time.perf_counter_ns()
        key = (cap_id, json.dumps(arguments, sort_keys=True, separators=(",", ":")),
               self.index.fingerprint)
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

    def _invoke(self, cap_id, arguments):
        self.counters.count("handler_invocations")
        began = time.perf_counter_ns()
        try:
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


_MISSING = object()


def _traceback_text():
    """The current exception's traceback for a debug log line; never raises itself."""
    try:
        import traceback
        return traceback.format_exc()
    except Exception:  # e.g. the source of a frame cannot be read any more
        return "(traceback unavailable)"


# The handlers of §7.6: (service, validated input) -> the output value.

def summary(obj):
    out = {"uri": obj.uri, "id": obj.id, "kind": obj.kind, "identity": obj.identity}
    if obj.title is not None:
        out["title"] = obj.title
    if obj.description is not None:
        out["description"] = obj.description
    out["path"] = obj.path
    return out


def handle_list(service, arguments):
    kind, tag = arguments.get("kind"), arguments.get("tag")
    service.kinds_present(kind)
    objects = [summary(o) for o in service.index.objects
               if (kind is None or o.kind == kind) and (tag is None or tag in o.tags())]
    return {"count": len(objects), "objects": objects}


SNIPPET_LIMIT = 200


def handle_search(service, arguments):
    query, kind = arguments["query"], arguments.get("kind")
    limit = arguments.get("limit", 20)
    if not query.strip():
        raise Refused("argument 'query' is required and must not be blank")
    service.kinds_present(kind)
    needle = query.lower()
    hits = []
    for obj, lowered, names in service.search_table():
        if kind is not None and obj.kind != kind:
            continue
        at = lowered.find(needle)
        if at < 0 and needle not in names:
            continue
        hit = summary(obj)
        if at >= 0:
            # lower() never adds or removes a newline, so line numbers carry over.
            line = obj.content.split("\n")[lowered.count("\n", 0, at)]
            hit["snippet"] = line.strip()[:SNIPPET_LIMIT]
        hits.append(hit)
        if len(hits) >= limit:
            break
    return {"query": query, "count": len(hits), "limit": limit, "hits": hits}


def handle_get(service, arguments):
    return resolve(service, arguments["uri"]).view()


def handle_repository(service, arguments):
    layer, index = service.layer, service.index
    return {
        "repository": {
            "root": layer.root, "layer_schema": layer.manifest.schema,
            "sections": dict(sorted(layer.manifest.sections.items())),
            "git": layer.git_state(), "discovery": layer.discovery,
            "source_classes": [[c.id, c.kind] for c in layer.classes],
            "kinds_file": layer.kinds.kinds_file},
        "state": index.state, "objects": len(index.objects), "kinds": dict(index.kinds),
        "diagnostics": [d.as_dict() for d in index.diagnostics],
        "capabilities": dict(service.registry.summary)}


def handle_capabilities(service, arguments):
    kind, exposure = arguments.get("kind"), arguments.get("exposure")
    registry = service.registry
    chosen = [registry.by_id[i] for i in registry.ids
              if (kind is None or registry.by_id[i]["kind"] == kind)
              and (exposure is None or exposure in registry.by_id[i]["exposure"])]
    return {"count": len(chosen), "summary": registry.summary, "capabilities": chosen}


def handle_describe(service, arguments):
    descriptor = service.registry.by_id.get(arguments["id"])
    if descriptor is None:
        raise NotFound("unknown capability: %s" % arguments["id"])
    return descriptor


def handle_perf(service, arguments):
    return service.counters.snapshot()


HANDLERS = {"repository.info": handle_repository, "objects.list": handle_list,
            "objects.get": handle_get, "objects.search": handle_search,
            "capabilities.list": handle_capabilities, "capabilities.describe": handle_describe,
            "perf.counters": handle_perf}


# ---------------------------------------------------------------------------------------
# 8. Resolution (§8): what a URI resolves to, rendered as a ResourceView or as text.
# ---------------------------------------------------------------------------------------

def resolve(service, uri):
    """§8: the only path from a URI to an answer (objects.get and resources/read)."""
    entry = service.registry.by_uri.get(uri) if isinstance(uri, str) else None
    if entry is None:
        raise NotFound("unknown resource: %s" % uri)
    if entry["kind"] == "resource":
        obj = service.index.by_uri.get(uri)
        if obj is None:
            raise Internal("%s: the registry names %s and the index holds no such object"
                           % (uri, entry["id"]))
        return Resolved(entry, uri, obj=obj)
    try:
        answer = service.execute(entry["id"], {})
    except Refused:
        raise
    except CapabilityError as exc:
        raise Internal("%s: %s did not answer: %s" % (uri, entry["id"], exc))
    return Resolved(entry, uri, answer=answer)


def answer_text(answer):
    """The JSON text of a query's answer: 2-space indent, output order, no newline."""
    return json.dumps(answer, indent=2, ensure_ascii=False)


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


# ---------------------------------------------------------------------------------------
# 9. MCP over stdio (§9): JSON-RPC 2.0, one JSON value per line, bytes in and out.
# ---------------------------------------------------------------------------------------

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LINE_BOUND = 1048576
TOOL_ANNOTATIONS = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True,
                    "openWorldHint": False}


class RawJSON:
    """An already-serialised JSON value, spliced into a frame as it is."""

    __slots__ = ("data",)

    def __init__(self, value):
        self.data = _json_bytes(value)


def _json_bytes(value):
    """Compact UTF-8 JSON; a lone surrogate (from a client's \\ud800) falls back to ASCII."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


class RpcError(Exception):
    def __init__(self, code, message):
        Exception.__init__(self, message)
        self.code, self.message = code, message


class McpProjection:
    """The registry as MCP sees it: listings built once per index, and the methods."""

    def __init__(self, service):
        self.service = service
        registry = service.registry
        service.counters.count("mcp_projection_builds")
        self.tools, self.tool_ids = [], {}
        for cap_id in registry.ids:
            descriptor = registry.by_id[cap_id]
            name = descriptor["exposure"].get("mcp", {}).get("tool")
            if name:
                self.tool_ids[name] = cap_id
                self.tools.append({
                    "name": name, "title": descriptor["title"],
                    "description": descriptor["description"],
                    "inputSchema": descriptor["input"]["schema"],
                    "outputSchema": descriptor["output"]["schema"],
                    "_meta": {"majordomus": {"id": cap_id}}, "annotations": TOOL_ANNOTATIONS})
        self.tools_result = RawJSON({"tools": self.tools})
        self._resources = self._resources_result = None
        index = service.index
        self.instructions = (
            "Read-only view of a repository's AI layer: %d object(s), %d capabilities "
            "(%d tools, %d resources), index state %s. Each object is the resource "
            "majordomus://<kind>/<identity> (rules, prompts, profiles, the policy, plans, "
            "documents); majordomus://repository carries the repository report with every "
            "diagnostic. Nothing is ever written." % (
                len(index.objects), registry.summary["total"], len(self.tools),
                registry.summary["mcp_resources"], index.state))
        self.initialized = False
        self.methods = {
            "initialize": self.initialize, "ping": lambda params: {},
            "resources/list": lambda params: self.resources_result(),
            "resources/templates/list": lambda params: {"resourceTemplates": []},
            "resources/read": self.read, "tools/list": lambda params: self.tools_result,
            "tools/call": self.call}

    @property
    def resources(self):
        """The resources/list entries: query resources first, then objects in URI order.
        Built on first use (a client may never list), then kept."""
        if self._resources is None:
            self._resources = ([self._query_resource(d) for d in self._query_descriptors()]
                               + [self._object_resource(o) for o in self.service.index.objects])
        return self._resources

    def resource_uris(self):
        """The URIs of resources/list, in its order, without building the entries."""
        return [d["exposure"]["mcp"]["resource"]["uri"] for d in self._query_descriptors()] + [
            o.uri for o in self.service.index.objects]

    def _query_descriptors(self):
        registry = self.service.registry
        return [registry.by_id[i] for i in registry.ids
                if registry.by_id[i]["kind"] in _EXECUTABLE
                and "resource" in registry.by_id[i]["exposure"].get("mcp", {})]

    def resources_result(self):
        if self._resources_result is None:
            self._resources_result = RawJSON({"resources": self.resources})
        return self._resources_result

    @staticmethod
    def _query_resource(descriptor):
        resource = descriptor["exposure"]["mcp"]["resource"]
        return {"uri": resource["uri"], "name": resource["name"], "title": descriptor["title"],
                "description": descriptor["description"], "mimeType": "application/json",
                "_meta": {"majordomus": {"id": descriptor["id"], "kind": descriptor["kind"],
                                         "provenance": descriptor["provenance"]}}}

    @staticmethod
    def _object_resource(obj):
        out = {"uri": obj.uri, "name": obj.identity, "title": obj.title or obj.identity}
        if obj.description is not None:
            out["description"] = obj.description
        out["mimeType"] = obj.media_type
        out["_meta"] = {"majordomus": {"id": obj.id, "kind": obj.kind, "identity": obj.identity,
                                       "provenance": obj.provenance}}
        return out

    def initialize(self, params):
        version = params.get("protocolVersion")
        if version not in PROTOCOL_VERSIONS:
            version = PROTOCOL_VERSIONS[0]
        return {"protocolVersion": version,
                "capabilities": {"resources": {"subscribe": False, "listChanged": False},
                                 "tools": {"listChanged": False}},
                "serverInfo": {"name": "majordomus", "title": "Majordomus", "version": VERSION},
                "instructions": self.instructions}

    def read(self, params):
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise RpcError(-32602, "params.uri is required")
        try:
            resolved = resolve(self.service, uri)
        except NotFound:
            raise RpcError(-32002, "resource not found: %s" % uri)
        except InvalidInput as exc:
            raise RpcError(-32602, str(exc))
        except CapabilityError as exc:
            raise RpcError(-32603, str(exc))
        return {"contents": [{"uri": uri, "mimeType": resolved.media_type,
                              "text": resolved.text}]}

    def call(self, params):
        name = params.get("name")
        if not isinstance(name, str):
            raise RpcError(-32602, "params.name is required")
        arguments = params.get("arguments", {})
        if not isinstance(arguments, dict):
            raise RpcError(-32602, "params.arguments must be an object")
        cap_id = self.tool_ids.get(name)
        if cap_id is None:
            raise RpcError(-32602, "unknown tool: %s" % name)
        try:
            value = self.service.execute(cap_id, arguments)
        except Internal as exc:
            raise RpcError(-32603, str(exc))
        except CapabilityError as exc:
            return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        text = _json_bytes(value).decode("utf-8", "surrogatepass")
        return {"content": [{"type": "text", "text": text}], "structuredContent": value,
                "isError": False}

    def handle(self, message):
        """One message: the answer frame as bytes, or None for a notification."""
        if not isinstance(message, dict):
            return _frame(None, error=(-32600, "a message is a JSON object"))
        method, msg_id = message.get("method"), message.get("id")
        if not isinstance(method, str):
            return None if msg_id is None else _frame(msg_id, error=(-32600, "missing method"))
        if msg_id is None:
            if method == "notifications/initialized":
                self.initialized = True
            else:
                log(DEBUG, "notification ignored", method=method)
            return None
        handler = self.methods.get(method)
        if handler is None:
            return _frame(msg_id, error=(-32601, "method not found: %s" % method))
        params = message.get("params")
        try:
            return _frame(msg_id, handler(params if isinstance(params, dict) else {}))
        except RpcError as exc:
            return _frame(msg_id, error=(exc.code, exc.message))
        except Exception as exc:  # never end a session for one request
            log(DEBUG, "request failed", method=method, traceback=_traceback_text())
            return _frame(msg_id, error=(-32603, "internal: %s" % exc))


def _frame(msg_id, result=None, error=None):
    """A JSON-RPC response as bytes; a RawJSON result is spliced without re-encoding."""
    head = b'{"jsonrpc":"2.0","id":' + _json_bytes(msg_id)
    if error is not None:
        return head + b',"error":' + _json_bytes({"code": error[0], "message": error[1]}) + b"}"
    data = result.data if isinstance(result, RawJSON) else _json_bytes(result)
    return head + b',"result":' + data + b"}"


def _reject_constant(name):
    raise ValueError("%s is not JSON" % name)


def parse_frame(line):
    """Decode one input line: (value, None) or (None, error frame)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None, _frame(None, error=(-32700, "parse error: input is not UTF-8"))
    try:
        return json.loads(text, parse_constant=_reject_constant), None
    except (ValueError, RecursionError) as exc:
        return None, _frame(None, error=(-32700, "parse error: %s" % exc))


def answer_line(projection, line):
    """The bytes to write for one input line (None when nothing is answered)."""
    value, error = parse_frame(line)
    if error is not None:
        return error
    if isinstance(value, list):
        if not value:
            return _frame(None, error=(-32600, "empty batch"))
        frames = [f for f in (projection.handle(m) for m in value) if f is not None]
        return b"[" + b",".join(frames) + b"]" if frames else None
    return projection.handle(value)


class _ClientGone(Exception):
    pass


def run_stdio(service):
    """The stdio loop: read a line, answer it, flush; EOF or a closed output ends it."""
    projection = McpProjection(service)
    reader, writer = sys.stdin.buffer, sys.stdout.buffer
    answered = 0

    def send(data):
        try:
            writer.write(data + b"\n")
            writer.flush()
        except BrokenPipeError:
            raise _ClientGone()
        except (OSError, ValueError) as exc:
            raise Fatal(EXIT_INTERNAL, "cannot write to the client: %s" % _os_reason(exc))

    try:
        while True:
            try:
                line = reader.readline(LINE_BOUND + 1)
            except OSError as exc:
                raise Fatal(EXIT_INTERNAL, "cannot read from the client: %s" % _os_reason(exc))
            if not line:
                log(INFO, "input ended; stopping", answered=answered)
                return EXIT_OK
            if len(line) > LINE_BOUND and line[-1:] != b"\n":
                while line and not line.endswith(b"\n"):   # skip the rest, never holding it
                    line = reader.readline(65536)
                data = _frame(None, error=(-32700, "parse error: the line is over the %d byte "
                                           "bound" % LINE_BOUND))
            elif not line.strip():
                continue
            else:
                try:
                    data = answer_line(projection, line)
                except Exception as exc:  # a defect in framing must not end the session
                    log(DEBUG, "frame failed", traceback=_traceback_text())
                    data = _frame(None, error=(-32603, "internal: %s" % exc))
            if data is not None:
                send(data)
                answered += 1
    except _ClientGone:
        log(INFO, "client closed the output; stopping", answered=answered)
        _silence_stdout()
        return EXIT_OK


def _silence_stdout():
    """After a broken pipe, point stdout at /dev/null so the final flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def inspect_text(service, projection):
    """§6 text: what would be served, labels padded to 12 columns."""
    index = service.index
    totals = service.registry.summary
    lines = ["%-11s %s" % ("repository", service.layer.root),
             "%-11s %s" % ("discovery", service.layer.discovery),
             "%-11s %s" % ("state", index.state)]
    lines += ["%-11s %-12s %d" % ("kind", kind, count) for kind, count in index.kinds.items()]
    lines.append("capabilities %d (%d builtin, %d declarative)"
                 % (totals["total"], totals["builtin"], totals["declarative"]))
    lines += ["%-11s %s" % ("resource", uri) for uri in projection.resource_uris()]
    lines += ["%-11s %s" % ("tool", t["name"]) for t in projection.tools]
    labels = {"error": "FAIL", "warning": "WARN", "info": "INFO"}
    lines += ["%-4s %-22s %s \u2014 %s" % (labels[d.severity], d.code, d.path or "-", d.message)
              for d in index.diagnostics]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# 10. HTTP on loopback (§10): routes derived from the registry, bounded and guarded.
# ---------------------------------------------------------------------------------------

HEAD_LIMIT = 65536
BODY_LIMIT = 1048576
HEAD_DEADLINE = 30.0
MAX_IN_FLIGHT = 64
_HTTP_ERRORS = ((InvalidInput, 400, "invalid_input"), (NotFound, 404, "not_found"),
                (Refused, 422, "refused"), (Internal, 500, "internal"))
_BLANK_LINE = re.compile(rb"\r?\n\r?\n")


class HttpError(Exception):
    """An HTTP answer other than 200: status, error code, message, extra headers."""

    def __init__(self, status, code, message, headers=(), close=False):
        Exception.__init__(self, message)
        self.status, self.code, self.message = status, code, message
        self.headers, self.close = list(headers), close


class HttpProjection:
    """The registry as HTTP sees it: the route table and the OpenAPI document, built once."""

    def __init__(self, service):
        self.service = service
        service.counters.count("http_projection_builds")
        registry = service.registry
        self.routes = {}
        for cap_id in registry.ids:
            http = registry.by_id[cap_id]["exposure"].get("http")
            if http:
                self.routes[(http["method"], http["path"])] = registry.by_id[cap_id]
        self.paths = {path for _, path in self.routes} | {"/", "/openapi.json"}
        self.index_document = _pretty({
            "name": "majordomus", "version": VERSION, "root": service.layer.root,
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
            parameters = [{"name": name, "in": "query",
                           "required": name in schema.get("required", ()), "schema": rule}
                          for name, rule in schema.get("properties", {}).items()]
            operation = {"operationId": descriptor["id"], "summary": descriptor["title"],
                         "description": descriptor["description"]}
            if parameters:
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
                    {"code": _STR, "message": _STR}, ("code", "message"))}, ("error",))},
                "responses": responses}}

    def answer(self, method, target):
        """(status, body bytes) for a GET/HEAD request target; raise HttpError."""
        path, _, query = target.partition("?")
        path = _percent_decode(path, plus=False)
        if method not in ("GET", "HEAD", "POST"):
            raise HttpError(405, "method_not_allowed", "method %s is not served" % method)
        if path not in self.paths:
            raise HttpError(404, "not_found", "no route %s %s; the routes are listed at "
                            "/openapi.json" % (method, path))
        if method == "POST":
            raise HttpError(405, "method_not_allowed", "%s %s is not a route; another method "
                            "is" % (method, path), [("Allow", "GET, HEAD")])
        if path == "/":
            return self.index_document
        if path == "/openapi.json":
            return self.openapi
        descriptor = self.routes[("GET", path)]
        try:
            arguments = _query_arguments(query, descriptor["input"]["schema"])
            return _pretty(self.service.execute(descriptor["id"], arguments))
        except CapabilityError as exc:
            for error, status, code in _HTTP_ERRORS:
                if isinstance(exc, error):
                    raise HttpError(status, code, exc.message)
            raise


def _pretty(value):
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _percent_decode(text, plus):
    from urllib.parse import unquote, unquote_plus
    try:
        return (unquote_plus if plus else unquote)(text, errors="strict")
    except UnicodeDecodeError:
        raise HttpError(400, "invalid_input", "the request target is not UTF-8 once decoded")


def _query_arguments(query, schema):
    """Decode a query string and coerce each parameter by the input schema (§10)."""
    arguments = {}
    for pair in query.split("&"):
        if not pair:
            continue
        name, _, value = pair.partition("=")
        name, value = _percent_decode(name, True), _percent_decode(value, True)
        if name in arguments:
            raise InvalidInput("parameter '%s' is given twice" % name)
        expected = schema.get("properties", {}).get(name, {}).get("type")
        if expected == "integer":
            if not _INTEGER.match(value):
                raise InvalidInput("parameter '%s': '%s' is not an integer" % (name, value))
            value = int(value)
        elif expected == "boolean":
            if value not in ("true", "false"):
                raise InvalidInput("parameter '%s': '%s' is not a boolean" % (name, value))
            value = value == "true"
        arguments[name] = value
    return arguments


def _host_allowed(host):
    """The DNS-rebinding guard: an IP literal, localhost or *.localhost, any port."""
    import socket
    host = host.strip().lower()
    if host.startswith("["):
        name, bracket, rest = host[1:].partition("]")
        family = socket.AF_INET6
        if not bracket or (rest and not re.match(r":[0-9]*\Z", rest)):
            return False
    else:
        name, family = re.sub(r":[0-9]*\Z", "", host), socket.AF_INET
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        socket.inet_pton(family, name)
        return True
    except (OSError, ValueError):
        return False


def _read_head(sock, data):
    """(head bytes, the bytes after it), or None when the client left or ran out of time."""
    import socket
    deadline = time.monotonic() + HEAD_DEADLINE
    while True:
        data = data.lstrip(b"\r\n")
        end = _BLANK_LINE.search(data)
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


def _parse_head(head):
    """(method, target, version, headers) of a request head; HttpError 400 when malformed."""
    lines = head.decode("latin-1").replace("\r\n", "\n").split("\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not re.match(r"HTTP/1\.[01]\Z", parts[2]):
        raise HttpError(400, "bad_request", "malformed request line", close=True)
    headers = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise HttpError(400, "bad_request", "malformed header line", close=True)
        name = name.lower()
        if name in headers and name in ("host", "content-length", "origin"):
            raise HttpError(400, "bad_request", "header '%s' is given twice" % name, close=True)
        headers[name] = value.strip()
    return parts[0], parts[1], parts[2], headers


def _respond(sock, status, body, head_only, keep_alive, extra=()):
    from http import HTTPStatus
    lines = ["HTTP/1.1 %d %s" % (status, HTTPStatus(status).phrase),
             "Date: " + time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime()),
             "Server: majordomus/" + VERSION, "Content-Type: application/json",
             "Content-Length: %d" % len(body), "Cache-Control: no-store"]
    lines += ["%s: %s" % pair for pair in extra]
    lines.append("Connection: " + ("keep-alive" if keep_alive else "close"))
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
                 + (b"" if head_only else body))


def _error_body(code, message):
    return _pretty({"error": {"code": code, "message": message}})


def make_http_handler(projection):
    """The per-connection handler class: one thread per connection (socketserver)."""
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
            _respond(self.request, exc.status, _error_body(exc.code, exc.message), head_only,
                     keep_alive and not exc.close, exc.headers)
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
                host = headers.get("host")
                if host is not None and not _host_allowed(host):
                    raise HttpError(403, "forbidden", "host '%s' is not served" % host)
                origin = headers.get("origin")
                if origin is not None and origin != "http://" + (host or ""):
                    raise HttpError(403, "forbidden", "origin '%s' is not served" % origin)
                if "transfer-encoding" in headers:
                    raise HttpError(400, "bad_request", "a request body needs a Content-Length",
                                    close=True)
                length = headers.get("content-length", "0")
                if not length.isdigit():
                    raise HttpError(400, "bad_request", "Content-Length is not a number",
                                    close=True)
                if int(length) > BODY_LIMIT:
                    raise HttpError(413, "too_large", "the request body is over the %d byte "
                                    "bound" % BODY_LIMIT, close=True)
                pending = self.skip_body(int(length), pending)
                if not in_flight.acquire(blocking=False):
                    raise HttpError(503, "busy", "%d requests are in handling; try again"
                                    % MAX_IN_FLIGHT, [("Retry-After", "1")])
                try:
                    with running:
                        body = projection.answer("GET" if head_only else method, target)
                finally:
                    in_flight.release()
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

        def skip_body(self, length, pending):
            """Read and discard a (bounded) request body; return what follows it."""
            while len(pending) < length:
                self.request.settimeout(HEAD_DEADLINE)
                chunk = self.request.recv(min(65536, length - len(pending)))
                if not chunk:
                    raise OSError("the client left mid-body")
                pending += chunk
            return pending[length:]

    return Connection


def run_http(service, host, port):
    """Bind, log the address, serve until SIGINT or SIGTERM (then exit 0)."""
    import signal
    import socket
    import socketserver
    projection = HttpProjection(service)

    class Server(socketserver.ThreadingTCPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        allow_reuse_address = True
        daemon_threads = True
        request_queue_size = 128

    try:
        server = Server((host, port), make_http_handler(projection))
    except (OSError, OverflowError) as exc:
        raise Fatal(EXIT_INTERNAL, "cannot listen on %s:%d: %s" % (host, port, _os_reason(exc)))

    class _Stop(BaseException):
        """Raised by the signal handler; a BaseException so that socketserver's own
        `except Exception` (around accepting a connection) cannot swallow it."""

    def stop(signum, frame):
        raise _Stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    bound_host, bound_port = server.server_address[:2]
    shown = "[%s]" % bound_host if ":" in bound_host else bound_host
    if not _is_loopback(bound_host):
        log(WARN, "serving on a non-loopback address: anyone who reaches it reads the layer",
            host=bound_host)
    log(INFO, "listening on http://%s:%d" % (shown, bound_port))
    try:
        server.serve_forever(poll_interval=0.5)
    except _Stop:
        log(INFO, "signal received; stopping")
    finally:
        server.server_close()
    return EXIT_OK


def _is_loopback(host):
    return host == "localhost" or host.startswith("127.") or host == "::1"


# ---------------------------------------------------------------------------------------
# 11. CLI projections (§11): each command executes its capability through the registry's
#     CLI exposure.
# ---------------------------------------------------------------------------------------

_CLI_EXIT = ((InvalidInput, EXIT_USAGE), (NotFound, EXIT_MISSING), (Refused, EXIT_CONTRACT),
             (Internal, EXIT_INTERNAL))


def execute_cli(service, words, arguments):
    """Run the capability exposed as the CLI command `words`; errors become Fatal."""
    descriptor = service.registry.by_cli.get(tuple(words))
    if descriptor is None:
        raise Fatal(EXIT_INTERNAL, "no capability is exposed as '%s'" % " ".join(words))
    try:
        return service.execute(descriptor["id"], arguments)
    except CapabilityError as exc:
        code = next(code for error, code in _CLI_EXIT if isinstance(exc, error))
        hint = {"capabilities.describe": " (run: majordomus capabilities list)"}
        suffix = hint.get(descriptor["id"], "") if isinstance(exc, NotFound) else ""
        raise Fatal(code, exc.message + suffix)


def _exposure_text(descriptor):
    exposure = descriptor["exposure"]
    mcp = exposure.get("mcp", {})
    marks = (["tool:" + mcp["tool"]] if "tool" in mcp else []) + (
        ["resource:" + mcp["resource"]["uri"]] if "resource" in mcp else [])
    http = exposure.get("http")
    cli = exposure.get("cli")
    return (",".join(marks) or "-", "%s %s" % (http["method"], http["path"]) if http else "-",
            " ".join(cli["path"]) if cli else "-")


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
            ("mcp", json.dumps(exposure["mcp"], separators=(",", ":"), ensure_ascii=False)
             if "mcp" in exposure else "none"),
            ("http", "%s %s" % (http["method"], http["path"]) if http else "none"),
            ("cli", "majordomus " + " ".join(cli["path"]) if cli else "none"),
            ("input", descriptor["input"].get("name", "(anonymous)")),
            ("output", descriptor["output"].get("name", "(anonymous)")))
    return "".join("%-12s %s\n" % row for row in rows)


def write_stdout(text):
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        _silence_stdout()


# ---------------------------------------------------------------------------------------
# 12. Entry point: argument parsing, start-up (§9.0), dispatch, exit codes.
# ---------------------------------------------------------------------------------------

REPO_OPTIONS = ("--repo", "--discovery")
COMMANDS = {
    "mcp": {"usage": "majordomus mcp [--repo PATH] [--discovery vcs|filesystem] [--strict] "
                     "[--inspect [--format text|json]]",
            "about": "serve the layer to an MCP client over stdio (--inspect: print what "
                     "would be served, then exit)",
            "values": REPO_OPTIONS + ("--format",), "flags": ("--strict", "--inspect"),
            "positionals": (), "formats": ("text", "json")},
    "serve": {"usage": "majordomus serve [--repo PATH] [--discovery vcs|filesystem] [--strict] "
                       "[--host HOST] [--port PORT]",
              "about": "serve the layer over HTTP on loopback (default 127.0.0.1:8741)",
              "values": REPO_OPTIONS + ("--host", "--port"), "flags": ("--strict",),
              "positionals": ()},
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
                     "[--format json|text]",
            "about": "print the object a majordomus:// URI names (JSON, or --format text: the "
                     "file byte for byte)",
            "values": REPO_OPTIONS + ("--format",), "flags": ("--strict",),
            "positionals": ("URI",), "formats": ("json", "text")},
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
              "Exit codes: 0 ok, 2 usage, 10 contract unmet, 12 missing, 13 internal.",
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

    def get(self, name, default=None):
        return self.values.get(name, default)


_CHOICES = {"--discovery": ("vcs", "filesystem")}


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
    if first == "capabilities":
        if not rest or rest[0] in ("-h", "--help"):
            if rest:
                return None, command_help("capabilities list") + "\n" + command_help(
                    "capabilities describe")
            raise UsageError("'capabilities' needs a subcommand: list or describe",
                             "majordomus capabilities list|describe …")
        name, rest = "capabilities " + rest[0], rest[1:]
        if name not in COMMANDS:
            raise UsageError("unrecognized subcommand '%s'" % name.split(" ", 1)[1],
                             "majordomus capabilities list|describe …")
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
            if option not in spec["values"]:
                raise UsageError("unexpected argument '%s' found" % word, spec["usage"])
            if not equals:
                value = next(words, None)
                if value is None:
                    raise UsageError("a value is required for '%s' but none was supplied"
                                     % option, spec["usage"])
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
    if "--port" in options.values:
        port = options.values["--port"]
        if not port.isdigit() or int(port) > 65535:
            raise UsageError("invalid value '%s' for '--port <PORT>': a number from 0 to 65535"
                             % port, spec["usage"])
    kind = options.values.get("--kind")
    if kind is not None and kind not in _KIND_ENUM:
        raise UsageError("kind '%s' is not query, command or resource" % kind, spec["usage"])
    exposure = options.values.get("--exposure")
    if exposure is not None and exposure not in _EXPOSURE_ENUM:
        raise UsageError("exposure '%s' is not mcp, http or cli" % exposure, spec["usage"])


def start_service(options, log_diagnostics):
    """§9.0: root → … → index → registry; --strict refuses; the diagnostics are logged."""
    counters = Counters()
    layer = open_layer(options.get("--repo", "."), options.get("--discovery", "vcs"), counters)
    index = layer.index
    if "--strict" in options.flags and index.errors:
        raise Fatal(EXIT_CONTRACT, "declarative state carries %d error(s); refusing to serve "
                    "under --strict (run: majordomus mcp --inspect)" % index.errors)
    try:
        service = Service(layer, counters)
    except RegistryError as exc:
        raise Fatal(EXIT_INTERNAL, "the capability registry cannot be built: %s" % exc)
    if log_diagnostics:
        levels = {"error": ERROR, "warning": WARN, "info": INFO}
        for diagnostic in index.diagnostics:
            log(levels[diagnostic.severity], diagnostic.message, code=diagnostic.code,
                path=diagnostic.path or "-")
        log(INFO, "index built", objects=len(index.objects), diagnostics=len(index.diagnostics),
            state=index.state)
    return service


def run_command(options):
    command = options.command
    if command == "mcp" and "--inspect" in options.flags:
        service = start_service(options, log_diagnostics=False)
        projection = McpProjection(service)
        if options.get("--format") == "json":
            write_stdout(_pretty({"repository": service.execute("repository.info", {}),
                                  "resources": projection.resources,
                                  "tools": projection.tools}))
        else:
            write_stdout(inspect_text(service, projection))
        return EXIT_CONTRACT if service.index.errors else EXIT_OK
    if command == "mcp":
        return run_stdio(start_service(options, log_diagnostics=True))
    if command == "serve":
        service = start_service(options, log_diagnostics=True)
        return run_http(service, options.get("--host", "127.0.0.1"),
                        int(options.get("--port", "8741")))
    service = start_service(options, log_diagnostics=False)
    words = command.split(" ")
    if command == "capabilities list":
        arguments = {k: options.get("--" + k) for k in ("kind", "exposure")
                     if options.get("--" + k) is not None}
        value = execute_cli(service, words, arguments)
        text_form = capabilities_list_text
    elif command == "capabilities describe":
        value = execute_cli(service, words, {"id": options.positionals[0]})
        text_form = capability_text
    else:
        value = execute_cli(service, words, {"uri": options.positionals[0]})
        text_form = lambda view: view["content"]  # noqa: E731 -- the file, byte for byte
    default = COMMANDS[command]["formats"][0]
    write_stdout(text_form(value) if options.get("--format", default) == "text"
                 else _pretty(value))
    return EXIT_OK


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
        _stderr("error: %s\n\nUsage: %s\n\nFor more information, try '--help'.\n"
                % (exc.message, exc.usage))
        return EXIT_USAGE
    except Fatal as exc:
        _stderr("majordomus: %s\n" % " ".join(exc.message.split("\n")))
        return exc.code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a defect: one line for the user, the traceback at debug
        log(DEBUG, "unexpected failure", traceback=_traceback_text())
        _stderr("majordomus: internal error: %s: %s\n" % (type(exc).__name__, exc))
        return EXIT_INTERNAL


def _stderr(text):
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
