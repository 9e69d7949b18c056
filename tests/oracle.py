"""The differential harness of tests/test_oracle.py: the shell tool's reader against ours.

The oracle is the shell tool of the era (SPEC §3.7), `$MAJORDOMUS_REFERENCE/oracle/shell`. Its
reader is `lib/common.sh`: `mj_record_front FILE` prints a file's front matter (exit 2 when
line 1 is not `---`) and `mj_yaml_flatten FILE` prints a YAML file as `key.path=value` lines
(exit 3 and `ERROR:<message>` on stderr when it refuses). `Oracle.run` drives it over a batch
of documents in ONE bash process that sources common.sh once and runs each document in a
subshell; `ours` runs `majordomus.parse_subset` / `split_front_matter` on the same text.

Our tree is shown in the shell's format (`flatten`): a scalar leaf is `path=value` (a string
verbatim, an integer in decimal, a boolean `true`/`false`), an empty list `path=[]`, list
indices in decimal; a non-empty mapping or list is descended; a key that vanished has no
line. An empty mapping (`- a:` with no child, §3.2) has no spelling in the shell's format: it
is shown as `path {}` (no `=`, so it never equals a line the shell prints).

`Judge.verdict(mode, text)` compares the two readers on one document:
  agree        both find no front matter; both refuse with the same message, or ours on an
               earlier line where the lines up to it are themselves explained; or both accept
               with the same lines (as a multiset: the shell prints in line order, our tree
               is in insertion order; they differ only where a stale `pend` entry lets a
               later item join an earlier list)
  deliberate   every difference is explained by rows of the §3.7 table (ROWS)
  other        anything else. (MANDATED names four rows that the §3.7 table omits but
               §3.1 and §3.6 mandate; they count as deliberate.)
A row is recognised from the input and both outputs together. Where ours refuses at line N
(twice, mixes, construct) the shell's output must show what the message says and lines
1..N-1 must pass; CRLF lines and blanks after a closing quote or bracket are judged by the
shell on the text without them (which ours must read alike). Such derived documents need
the shell: `verdict` raises `Need`, and `Judge.settle` runs them in a further batch (one
bash process a round) until every verdict is known.
"""
import collections
import os
import random
import re
import subprocess
import sys
import tempfile

import majordomus

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from support import reference  # noqa: E402
ORACLE = reference("oracle", "shell")     # the shell tool, in the reference data

# §3.7, one short name a row.
ROWS = collections.OrderedDict([
    ("twice", "a key given twice, a parent key reopened: the shell accepts both (§3.2)"),
    ("mixes", "a list and a mapping under one key: the shell accepts (§3.2)"),
    ("construct", "an unquoted value led by & * | >: the shell keeps it as text (§3.3.1)"),
    ("empty-item", "`- a:` with no child: the shell prints no line, ours has {} (§3.2, §3.4)"),
    ("quotes", "'' inside single quotes: the shell keeps both quotes (§3.3.3)"),
    ("typing", "007, -0: the shell keeps the text, ours types an integer (§3.3.5)"),
    ("hash-in-list", "[a #c, d]: the shell strips ' #c' in the element (§3.3.2)"),
    ("blanks-after", "blanks after a closing quote or bracket: the shell keeps the quotes or "
                     "brackets as text (§3.3)"),
    ("crlf-front", "front matter opened with ---\\r\\n: the shell finds no front matter (§3.6)"),
])

# Differences the §3.7 table does not list, but which the SPEC mandates elsewhere: this
# reader follows §3.1 (one trailing \r dropped a line) and §3.6 (an unclosed front matter
# is refused, a closing fence may carry \r, the 65536-byte limit), the shell's awk does
# not. They count as deliberate, each named in the summary line.
MANDATED = collections.OrderedDict([
    ("crlf-lines", "CRLF lines: the shell keeps the \\r (a value ends in \\r; `key:\\r`, a "
                   "blank `\\r` line and `---\\r` cannot parse), ours drops one \\r a "
                   "line (§3.1)"),
    ("unclosed-front", "front matter never closed: the shell reads every line after the "
                       "opening `---` as front matter, ours refuses (§3.6)"),
    ("crlf-fence", "a `---\\r` closing fence after a `---\\n` opening: the shell does not "
                   "close there, ours does (§3.6)"),
    ("front-limit", "front matter over 65536 bytes: the shell has no limit (§3.6)"),
])
ROWS.update(MANDATED)

# Differences of the shell that no part of the SPEC explains: "other" (the test fails).
UNLISTED = collections.OrderedDict()

RS = "\x1eMJ-DOC\n"          # starts a document's stdout and stderr
END = re.compile(r"\x1dMJ-END (\d+)\n\Z")
NO_FRONT = 100      # + mj_record_front's status: the file has no front matter

BASH_LOOP = r"""
set -u
export LC_ALL=C
. "$1/lib/common.sh" || exit 99
while read -r mode f; do
  printf '\036MJ-DOC\n'; printf '\036MJ-DOC\n' >&2
  (
    t=$f
    if [ "$mode" = fm ]; then
      mj_record_front "$f" > "$f.front" || exit $((100 + $?))
      t=$f.front
    fi
    mj_yaml_flatten "$t"
  )
  printf '\035MJ-END %s\n' "$?"
done < "$2"
"""


class Outcome(object):
    """One reader on one document: kind `ok` (lines), `refused` (message) or `nofm`."""

    __slots__ = ("kind", "lines", "message", "front", "code")

    def __init__(self, kind, lines=(), message="", front=None, code=0):
        self.kind, self.lines, self.message = kind, list(lines), message
        self.front, self.code = front, code     # the shell's front matter text; exit status

    def same(self, other):
        return (self.kind, self.lines, self.message) == (other.kind, other.lines, other.message)

    def show(self):
        if self.kind == "nofm":
            return "no front matter"
        if self.kind == "refused":
            head = "refused (exit %d): %r" % (self.code, self.message) if self.code else \
                "refused: %r" % self.message
            return head + "".join("\n      (printed before) %r" % l for l in self.lines)
        return "accepted, %d line(s)%s" % (len(self.lines),
                                            "".join("\n      %r" % l for l in self.lines))


# --------------------------------------------------------------------------------------------
# the two readers
# --------------------------------------------------------------------------------------------

def flatten(tree):
    """Our tree in the shell's `key.path=value` format (see the module docstring)."""
    out = []

    def walk(node, path):
        if isinstance(node, dict):
            if not node:
                out.append(path + " {}")
            for key, value in node.items():
                walk(value, path + "." + key if path else key)
        elif isinstance(node, list):
            if not node:
                out.append(path + "=[]")
            for index, value in enumerate(node):
                walk(value, "%s.%d" % (path, index))
        elif isinstance(node, bool):
            out.append(path + ("=true" if node else "=false"))
        else:
            out.append("%s=%s" % (path, node))

    for key, value in tree.items():
        walk(value, key)
    return out


def ours(mode, text):
    try:
        if mode == "fm":
            meta, _ = majordomus.split_front_matter(text)
            if meta is None:
                return Outcome("nofm")
            return Outcome("ok", flatten(meta))
        return Outcome("ok", flatten(majordomus.parse_subset(text)))
    except majordomus.SubsetError as err:
        return Outcome("refused", message=str(err))


class OracleMissing(Exception):
    pass


class Oracle(object):
    """The shell tool's reader, driven over a batch of documents by one bash process."""

    def __init__(self, shell_dir=ORACLE, scratch=None):
        self.dir = shell_dir
        if not os.path.isfile(os.path.join(shell_dir, "lib", "common.sh")):
            raise OracleMissing(
                "the shell tool of §3.7 is not at %s (expected $MAJORDOMUS_REFERENCE/oracle/"
                "shell, i.e. lib/common.sh there); the differential test needs it" % shell_dir)
        self.scratch = scratch or tempfile.mkdtemp(prefix="mj-oracle-")
        self.batches = 0
        self.documents = 0

    def run(self, docs):
        """docs: [(mode, text)] with mode `yaml` or `fm` -> [Outcome] in the same order."""
        if not docs:
            return []
        self.batches += 1
        self.documents += len(docs)
        where = os.path.join(self.scratch, "batch%03d" % self.batches)
        os.makedirs(where)
        listing = []
        for index, (mode, text) in enumerate(docs):
            path = os.path.join(where, "%05d.%s" % (index, "md" if mode == "fm" else "yaml"))
            with open(path, "wb") as handle:
                handle.write(text.encode("utf-8", "surrogateescape"))
            listing.append("%s %s\n" % (mode, path))
        manifest = os.path.join(where, "manifest")
        with open(manifest, "w") as handle:
            handle.writelines(listing)
        proc = subprocess.run(["bash", "-c", BASH_LOOP, "oracle", self.dir, manifest],
                              env=dict(os.environ, TMPDIR=where), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        stdout = proc.stdout.decode("utf-8", "surrogateescape").split(RS)
        stderr = proc.stderr.decode("utf-8", "surrogateescape").split(RS)
        if proc.returncode != 0 or len(stdout) != len(docs) + 1 or len(stderr) != len(docs) + 1:
            raise AssertionError("the oracle's bash loop failed (exit %d, %d of %d documents); "
                                 "stderr: %s" % (proc.returncode, len(stdout) - 1, len(docs),
                                                 stderr[0][-2000:]))
        results = []
        for index, (mode, text) in enumerate(docs):
            chunk, err = stdout[index + 1], stderr[index + 1]
            end = END.search(chunk)
            if end is None:
                raise AssertionError("the oracle printed no status for document %d: %r"
                                     % (index, chunk[-300:]))
            lines = chunk[:end.start()].split("\n")[:-1] if end.start() else []
            code = int(end.group(1))
            front = None
            if mode == "fm" and code < NO_FRONT:
                with open(os.path.join(where, "%05d.md.front" % index), "rb") as handle:
                    front = handle.read().decode("utf-8", "surrogateescape")
            if mode == "fm" and code >= NO_FRONT:
                results.append(Outcome("nofm", code=code - NO_FRONT))
            elif code == 0:
                results.append(Outcome("ok", lines, front=front))
            else:
                message = err.strip("\n")
                if message.startswith("ERROR:"):
                    message = message[len("ERROR:"):]
                results.append(Outcome("refused", lines, message or "(no message)", front, code))
        return results


# --------------------------------------------------------------------------------------------
# the judge
# --------------------------------------------------------------------------------------------

class Need(Exception):
    """A verdict needs the shell's outcome on these (mode, text) documents first."""

    def __init__(self, docs):
        Exception.__init__(self, "needs %d document(s)" % len(docs))
        self.docs = docs


class Verdict(object):
    __slots__ = ("kind", "rows", "why", "ordered")

    def __init__(self, kind, rows=(), why="", ordered=True):
        self.kind, self.rows, self.why, self.ordered = kind, tuple(sorted(set(rows))), why, ordered

    def __repr__(self):
        return "Verdict(%s, %s%s)" % (self.kind, ",".join(self.rows), (", " + self.why)
                                      if self.why else "")


AGREE = Verdict("agree")
_TWICE = re.compile(r"'(.+)' is given twice, on line (\d+)\Z")
_MIXES = re.compile(r"'(.+)' mixes a (?:list with a mapping|mapping with a scalar or list), "
                    r"on line (\d+)\Z")
_CONSTRUCT = re.compile(r"unsupported YAML construct on line (\d+): (.*)\Z", re.S)
_INTEGER = re.compile(r"-?[0-9]+\Z")
_ITEM_KEY = re.compile(r"- +[A-Za-z_][A-Za-z0-9_-]*: *\Z")
_KEY_OF = re.compile(r"(?:- +)?([A-Za-z_][A-Za-z0-9_-]*):(?: |\Z)")
_LINE = re.compile(r"line (\d+)")
_FENCE = re.compile(r"^---\r?$", re.M)
_BLANKS_AFTER = re.compile(r"([\]\"']) +$", re.M)


def message_class(message):
    """A refusal's message without its numbers and quoted parts: `cannot parse line N`."""
    text = re.sub(r"'[^']*'", "'P'", message)
    text = re.sub(r"(line \d+): .*", r"\1", text, flags=re.S)
    return re.sub(r"\d+", "N", text)


def refused_at(message):
    """The line number a refusal names, or None."""
    match = _LINE.search(message)
    return int(match.group(1)) if match else None


def spec_front(text):
    """§3.6's front matter text between the fences, or None (no front matter or never closed)."""
    if text.startswith("---\n"):
        start = 4
    elif text.startswith("---\r\n"):
        start = 5
    else:
        return None
    fence = _FENCE.search(text, start)
    return None if fence is None else text[start:fence.start()]


def lf_copy(text):
    """The text with one trailing CR a line dropped (what §3.1 reads)."""
    return "\n".join(line[:-1] if line.endswith("\r") else line for line in text.split("\n"))


def _split(line):
    path, _, value = line.partition("=")
    return path, value


def _alike(a, b):
    """Ours reads two texts alike: same kind and lines, refusals of the same class."""
    return ((a.kind, a.lines, message_class(a.message))
            == (b.kind, b.lines, message_class(b.message)))


class Judge(object):
    """Verdicts for documents; the shell's outcomes are cached by (mode, text)."""

    def __init__(self, oracle):
        self.oracle = oracle
        self.shell = {}          # (mode, text) -> Outcome
        self.mine = {}

    def ours(self, mode, text):
        key = (mode, text)
        if key not in self.mine:
            self.mine[key] = ours(mode, text)
        return self.mine[key]

    def get(self, mode, text):
        outcome = self.shell.get((mode, text))
        if outcome is None:
            raise Need([(mode, text)])
        return outcome

    def settle(self, docs):
        """Verdicts of all (mode, text) docs, running the shell in as few batches as it takes."""
        verdicts = [None] * len(docs)
        todo = list(range(len(docs)))
        wanted = [d for d in dict.fromkeys(docs) if d not in self.shell]
        while True:
            if wanted:
                for doc, outcome in zip(wanted, self.oracle.run(wanted)):
                    self.shell[doc] = outcome
            wanted, later = [], []
            for index in todo:
                try:
                    verdicts[index] = self.verdict(*docs[index])
                except Need as need:
                    later.append(index)
                    wanted.extend(d for d in need.docs if d not in self.shell)
            if not later:
                return verdicts
            if not wanted:
                raise AssertionError("the judge asks for documents it already has")
            wanted = list(dict.fromkeys(wanted))
            todo = later

    # ---- one document
    def verdict(self, mode, text):
        return self.judge(mode, text, text, ())

    def judge(self, mode, stext, otext, done):
        """The shell reads `stext`, ours `otext`: the same text, or `stext` is `otext` with
        one §3.7 trigger taken out (named in `done`), which ours reads alike."""
        shell, mine = self.get(mode, stext), self.ours(mode, otext)
        if shell.kind == mine.kind == "nofm":
            return AGREE
        if shell.kind == mine.kind == "refused" and shell.message == mine.message:
            return AGREE
        if shell.kind == mine.kind == "ok" and shell.lines == mine.lines:
            return AGREE
        if mode == "fm":
            return self.front_matter(stext, shell, mine)
        if shell.kind == mine.kind == "refused":
            # Both refuse, with other messages: fine where ours meets an earlier error, and
            # then the lines up to it are a document the shell accepts and ours refuses.
            ours_at, shell_at = refused_at(mine.message), refused_at(shell.message)
            if ours_at and shell_at and ours_at < shell_at:
                cut = self.prefix(otext, ours_at + 1)
                if self.ours("yaml", cut).message != mine.message:
                    return Verdict("other", why="ours refuses line %d only with the lines after "
                                                "it" % ours_at)
                sub = self.judge("yaml", self.prefix(stext, ours_at + 1), cut, done)
                return sub if sub.kind != "agree" else AGREE
        # Rewrites: the shell reads the text without the trigger; ours must read it alike.
        for row in ("crlf-lines", "blanks-after"):
            if row in done:
                continue
            derived = lf_copy(stext) if row == "crlf-lines" else _BLANKS_AFTER.sub(r"\1", stext)
            if derived == stext:
                continue
            if row != "crlf-lines" and not _alike(self.ours("yaml", derived), mine):
                return Verdict("other", why="ours reads the text apart once the blanks after a "
                                            "closing quote or bracket are gone")
            sub = self.judge("yaml", derived, otext, done + (row,))
            if sub.kind == "other":
                return sub
            changed = not self.get("yaml", derived).same(shell)
            rows = list(sub.rows) + ([row] if changed else [])
            if row in UNLISTED and changed:
                return Verdict("other", rows, why=row)
            return Verdict("deliberate" if rows else "agree", rows)
        if shell.kind == mine.kind == "refused":
            return Verdict("other", why="both refuse, the shell first (%s), ours later (%s)"
                           % (message_class(shell.message), message_class(mine.message)))
        if shell.kind == "ok" and mine.kind == "refused":
            return self.refusal_row(stext, otext, done, mine)
        if shell.kind == "refused":
            return Verdict("other", why="the shell refuses (%s), ours accepts"
                           % message_class(shell.message))
        return self.line_rows(stext, shell, mine)

    def front_matter(self, text, shell, mine):
        if shell.kind == "nofm":
            if text.startswith("---\r"):
                return Verdict("deliberate", ["crlf-front"])
            return Verdict("other", why="the shell finds no front matter, ours %s"
                           % ("does" if mine.kind == "ok" else "refuses (%s)"
                              % message_class(mine.message)))
        # the shell found front matter (line 1 is exactly `---`, or the file is empty)
        if mine.kind == "nofm":
            if text == "" and shell.kind == "ok" and not shell.lines:
                return AGREE     # an empty file: awk never sees a line 1; nothing either way
            return Verdict("other", why="the shell finds front matter, ours does not")
        inner = spec_front(text)
        if shell.kind == mine.kind == "refused" and inner != shell.front:
            # Both refuse, each in the front matter it cut (an unclosed one, a CRLF fence).
            ours_at, shell_at = refused_at(mine.message), refused_at(shell.message)
            if ours_at and shell_at and ours_at <= shell_at:
                return AGREE
            return Verdict("other", why="both refuse, the shell first (%s), ours later (%s)"
                           % (message_class(shell.message), message_class(mine.message)))
        if inner is None:
            if mine.kind == "refused" and "never closed" in mine.message:
                return Verdict("deliberate", ["unclosed-front"])
            return Verdict("other", why="the front matter is not closed, ours: %s"
                           % message_class(mine.message))
        if inner != shell.front:
            if "\r" in text:
                return Verdict("deliberate", ["crlf-fence"])
            return Verdict("other", why="the two readers cut a different front matter")
        if mine.kind == "refused" and "byte limit" in mine.message and shell.kind == "ok":
            return Verdict("deliberate", ["front-limit"])
        # The same front matter text: judged as a YAML document (the shell's outcome is the
        # flatten of exactly that text).
        self.shell.setdefault(("yaml", inner), Outcome(shell.kind, shell.lines, shell.message,
                                                       code=shell.code))
        return self.verdict("yaml", inner)

    def refusal_row(self, stext, otext, done, mine):
        """Ours refuses at line N where the shell accepts: a row of §3.7 only when the shell's
        own output shows what the message says, and lines 1..N-1 pass."""
        lines = stext.split("\n")
        shell_paths = [_split(l)[0].split(" ")[0] for l in self.get("yaml", stext).lines]
        row = number = None
        match = _TWICE.match(mine.message)
        if match:
            row, path, number = "twice", match.group(1), int(match.group(2))
            key = _KEY_OF.match(lines[number - 1].lstrip(" "))
            before = self.get("yaml", self.prefix(stext, number)).lines
            seen = any(p == path or p.startswith(path + ".")
                       for p in (_split(l)[0] for l in before))
            vanished = any(re.match(r" *(- +)?%s: *\Z" % re.escape(path.rpartition(".")[2]), l)
                           for l in lines[:number - 1])
            if not (key and key.group(1) == path.rpartition(".")[2] and (seen or vanished)):
                return Verdict("other", why="ours: %s, but the shell saw no earlier '%s'"
                               % (message_class(mine.message), path))
        match = _MIXES.match(mine.message)
        if match:
            # The shell's output shows both a numbered and a named child under one path
            # (with our lines before line N, which the prefix check below vouches for: an
            # empty item `- a:` prints nothing in the shell).
            row, path, number = "mixes", match.group(1), int(match.group(2))
            segments = path.split(".")
            shell_paths += [_split(l)[0].split(" ")[0] for l in
                            self.ours("yaml", self.prefix(otext, number)).lines]
            line = lines[number - 1].lstrip(" ")
            key = _KEY_OF.match(line)
            if (key and key.group(1) in segments) or line[:2] == "- ":
                shell_paths.append(path)     # what line N itself inserts (it may vanish)
            both = False
            for cut in range(1, len(segments)):
                base = ".".join(segments[:cut]) + "."
                kids = [p[len(base):].split(".")[0] for p in shell_paths if p.startswith(base)]
                if any(k.isdigit() for k in kids) and any(not k.isdigit() for k in kids):
                    both = True
            if not both:
                return Verdict("other", why="ours: %s, but the shell's output mixes nothing"
                               % message_class(mine.message))
        match = _CONSTRUCT.match(mine.message)
        if match:
            row, number, value = "construct", int(match.group(1)), match.group(2)
            held = re.match(r"(?:- +)?(?:[A-Za-z_][A-Za-z0-9_-]*: +)?(.*)\Z",
                            lines[number - 1].strip(" "))
            if value[:1] not in "&*|>" or held.group(1) != value:
                return Verdict("other", why="ours: unsupported construct, not on line %d" % number)
        if row is None:
            return Verdict("other", why="ours refuses (%s), the shell accepts"
                           % message_class(mine.message))
        sub = self.judge("yaml", self.prefix(stext, number), self.prefix(otext, number), done)
        if sub.kind == "other":
            return Verdict("other", sub.rows, why="before the refused line: " + sub.why)
        return Verdict("deliberate", [row] + list(sub.rows))

    @staticmethod
    def prefix(text, number):
        """Lines 1..number-1 of text."""
        return "\n".join(text.split("\n")[:number - 1]) + "\n" if number > 1 else ""

    def line_rows(self, text, shell, mine):
        """Both accept: every line that differs must be one of the value-level rows."""
        s_count, o_count = collections.Counter(shell.lines), collections.Counter(mine.lines)
        if s_count == o_count:
            return Verdict("agree", ordered=False)
        common = s_count & o_count
        s_only, o_only = s_count - common, o_count - common
        rows = set()
        source = text.split("\n")
        shell_paths = [_split(l)[0] for l in shell.lines]
        # empty-item: a `{}` item of ours where a `- key:` item had no child (no shell line)
        for line in list(o_only):
            if line.endswith(" {}") and "=" not in line:
                path = line[:-3]
                if (not path.rpartition(".")[2].isdigit()
                        or any(p == path or p.startswith(path + ".") for p in shell_paths)
                        or not any(_ITEM_KEY.match(l.lstrip(" ")) for l in source)):
                    return Verdict("other", why="ours has an empty mapping the shell does not "
                                                "explain")
                del o_only[line]
                rows.add("empty-item")
        # the rest must pair up by path, one line each, and differ only in the value
        s_paths = collections.Counter(_split(l)[0] for l in s_only.elements())
        o_paths = collections.Counter(_split(l)[0] for l in o_only.elements())
        if s_paths != o_paths or any(n > 1 for n in s_paths.values()):
            return Verdict("other", why="both accept, the lines differ")
        o_values = dict(_split(l) for l in o_only)
        for line in s_only:
            path, sv = _split(line)
            ov = o_values[path]
            if (_INTEGER.match(sv) and -(1 << 63) <= int(sv) < (1 << 63) and str(int(sv)) == ov
                    and re.search(r"(?<![\"'\w-])%s(?![\"'\w])" % re.escape(sv), text)):
                rows.add("typing")           # an unquoted 007 / -0 in the input
            elif "''" in sv and sv.replace("''", "'") == ov and "'%s'" % sv in text:
                rows.add("quotes")           # the shell's value was inside single quotes
            elif (path.rpartition(".")[2].isdigit() and "#" in ov
                  and re.sub(r"[ \t]+#.*\Z", "", ov, flags=re.S).strip(" \t") == sv
                  and any("[" in l.partition(ov)[0] and "]" in l.partition(ov)[2]
                          for l in source if ov in l)):
                rows.add("hash-in-list")     # an element of an inline list carried the #
            else:
                return Verdict("other", why="both accept, the lines differ")
        return Verdict("deliberate", rows)

    # ---- minimising an "other"
    def shrink(self, docs, rounds=60):
        """Each (mode, text) with an "other" verdict, cut line by line while its verdict stays
        "other" for the same reason -> [(mode, small text)]."""
        current = list(docs)
        target = [v.why for v in self.settle(docs)]
        active = set(range(len(docs)))
        while active and rounds:
            rounds -= 1
            candidates = {}
            for i in active:
                mode, text = current[i]
                lines = text.split("\n")
                candidates[i] = [(mode, "\n".join(lines[:j] + lines[j + 1:]))
                                 for j in range(len(lines)) if len(lines) > 1]
            flat = list(dict.fromkeys(c for i in sorted(candidates) for c in candidates[i]))
            verdicts = dict(zip(flat, self.settle(flat)))
            progressed = set()
            for i in sorted(candidates):
                for cand in candidates[i]:
                    v = verdicts[cand]
                    if v.kind == "other" and v.why == target[i]:
                        current[i] = cand
                        progressed.add(i)
                        break
            active = progressed
        return current


def describe(judge, verdict, count, first, small):
    """The failure report of one class of "other" documents."""
    mode, text = small
    shell, mine = judge.get(mode, text), judge.ours(mode, text)
    row = verdict.why if verdict.why in UNLISTED else ""
    return ("other: %s (%d document(s))%s\n    minimised input (%s): %r\n    shell: %s\n"
            "    ours:  %s\n    first seen in: %r" % (
                verdict.why, count, "\n    not a row of §3.7: " + UNLISTED[row] if row else "",
                "front matter" if mode == "fm" else "YAML", text, shell.show(), mine.show(),
                first[1][:300]))


# --------------------------------------------------------------------------------------------
# the generated corpus (§3's edges)
# --------------------------------------------------------------------------------------------

KEYS = ["a", "b", "c", "id", "name", "x-majordomus", "_k", "K9", "version", "tags",
        "args", "nested", "p", "path", "deep-er"]
PLAIN = ["x", "lib/auth", "docs/", "hello world", "v1.2", "--strict", "7", "42", "-1", "0",
         "true", "false", "majordomus.scope-integrity", "a-b_c", "bin/x", "doctor", "\u00e9",
         '"quoted"', "'single'", "x # c", "[a, b]", "[]"]
WORDS = ["bench: targets", "a#b", "http://x/#frag", "Every surface agrees: the CLI",
         "\u00fcn\u00efc\u00f8d\u00e9 \u2014 dash", "{a: 1}", "{}", "`tick`", "%pct", "@at",
         "!bang", "?q", "a,b", "a, b", "-", "- a", "-x", "yes", "no", "null", "~", "1.5", "0x10",
         "1e3", "15m", "+1", "...", "---", "a: b", "a:b", "=", "k=v", "\\n", "\\", "x]", "[x",
         "]", "[", "a\"b", "a'b", "#", "# lead", "#lead", "x\u00a0y", "\u3000", "x\r y", ""]
INTEGERS = ["0", "7", "-1", "007", "-0", "-007", "00", "0123", "9223372036854775807",
            "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
            "18446744073709551616", "09223372036854775807", "-09223372036854775808", "true",
            "false", "True", "FALSE"]
QUOTED = ['"x"', "'x'", '""', "''", '"', "'", "'it''s'", "''''", "'a'''", "\"it''s\"",
          '"a # b"', "'# c'", '"a" # c', "'a' #c", '"a"b"', "'007'", '"true"', '"[a, b]"',
          '"&x"', "'*x'", '"a: b"', "'a, b'", '" padded "', '"x"  ', "'y'   ", '"a # b"   ']
CONSTRUCTS = ["&anchor", "*alias", "|", ">", "|-", ">+", "& x", "*", "&"]
COMMENTS = ["x # c", "x  #c", "x #", "7 # seven", "007 # c", "a#b # c", "x\u00a0# nbsp",
            "[a, b]  # note", "[a] x", "x #c # d", "[a #c]", "'x' # c"]
EDGE_POOLS = [WORDS, WORDS, INTEGERS, QUOTED, COMMENTS, CONSTRUCTS]


class Gen(object):
    """One document's lines: mostly the subset's well-formed shapes, values drawn from the
    plain pool but, at this document's edge rate, from the edge pools."""

    def __init__(self, rng):
        self.rng = rng
        self.edge = rng.choice([0.0, 0.02, 0.05, 0.05, 0.1, 0.2, 0.4])
        self.out = []

    def element(self):
        rng = self.rng
        if rng.random() >= self.edge:
            return rng.choice(["a", "b", "lib/x", "--strict", "x y", "7", "-1", "true", '"q"',
                               "'s'", "a:b", "\u00e9"])
        return rng.choice(["", " ", "{}", "007", "-0", "9223372036854775808", "'it''s'",
                           '"a, b"', "'a,b'", '""', "\"x\" ", "'x", "a #c", "b # c", "#c",
                           "a#c", "[x", "x]", "&a", "*b", "|", "TRUE"])

    def inline(self):
        rng = self.rng
        if rng.random() < 0.12:
            return rng.choice(["[]", "[ ]", "[  ]", "[,]", "[a,]", "[,a]", "[ , ]"])
        items = [self.element() for _ in range(rng.randint(1, 4))]
        edge = rng.random() < self.edge
        seps = [rng.choice([", ", ",", " , ", ",  "]) if edge else ", " for _ in items[1:]]
        body = items[0] + "".join(s + e for s, e in zip(seps, items[1:]))
        if edge and rng.random() < 0.3:
            body = rng.choice([" ", "  "]) + body + rng.choice([" ", "  ", ""])
        if edge and rng.random() < 0.2:
            return rng.choice(["[a, [b, c]]", "[[a]]", "[a] # c", "[a]]", "[[a]", "[a, b] x"])
        return "[" + body + "]"

    def scalar(self):
        rng = self.rng
        if rng.random() >= self.edge:
            return rng.choice(PLAIN) if rng.random() < 0.9 else self.inline()
        if rng.random() < 0.15:
            return self.inline()
        return rng.choice(rng.choice(EDGE_POOLS))

    def value(self):
        rng = self.rng
        value = self.scalar()
        if value == "":
            return ""
        edge = rng.random() < self.edge
        return (" " if not edge or rng.random() < 0.7 else "   ") + value + (
            rng.choice([" ", "   "]) if edge and rng.random() < 0.3 else "")

    def noise(self, ind):
        rng = self.rng
        r = rng.random()
        if r < 0.05:
            self.out.append(rng.choice(["", "", "   ", " " * ind]))
        elif r < 0.09:
            self.out.append(" " * rng.choice([0, ind, ind, 1, ind + 3]) +
                            rng.choice(["# c", "# c", "#", "#: x", "# a: 1"]))

    def mapping(self, ind, depth, names=None, first=None):
        rng = self.rng
        names = names or rng.sample(KEYS, rng.randint(1, 4 if depth < 2 else 2))
        for name in names:
            if name == first:
                continue
            if rng.random() < self.edge * 0.1:
                name = rng.choice(KEYS)           # maybe a key given twice
            self.noise(ind)
            self.key(ind, depth, name)

    def key(self, ind, depth, name, lead=None):
        """A key line at `ind` (written after `lead`, e.g. `- `, when given)."""
        rng = self.rng
        head = (lead if lead is not None else " " * ind) + name + ":"
        r = rng.random()
        if r < 0.50 or depth >= 3:
            self.out.append(head + (self.value() or rng.choice(["", " "])))
        elif r < 0.58:
            self.out.append(head + " " + self.inline())
        elif r < 0.74:
            self.out.append(head + rng.choice(["", "", " "]))
            self.mapping(ind + 2, depth + 1)
        elif r < 0.96:
            self.out.append(head)
            at = ind if lead is None and rng.random() < 0.5 else ind + 2
            self.items(at, depth + 1)
        else:
            self.out.append(head)                  # vanishes (or gets whatever follows)

    def items(self, ind, depth):
        rng = self.rng
        dash = " " * ind + "- "
        for _ in range(rng.randint(1, 4)):
            self.noise(ind)
            r = rng.random()
            if r < 0.45:
                self.out.append(dash + self.scalar())
            elif r < 0.78:
                names = rng.sample(KEYS, rng.randint(1, 3))
                self.key(ind + 2, depth + 1, names[0], lead=dash)
                self.mapping(ind + 2, depth + 1, names=names, first=names[0])
            elif r < 0.84:
                self.out.append(dash + self.inline())
            elif r < 0.88:
                self.out.append(dash + rng.choice(["- a", "- - b", "-", "- ", "-x"]))
            elif r < 0.91:
                self.out.append(dash.rstrip(" ") + rng.choice(["", " ", "   "]))
            elif r < 0.95:
                self.out.append(dash + rng.choice(KEYS) + ": " + self.scalar())
                self.out.append(" " * (ind + 2) + "- " + self.scalar())  # stale pend[ind + 2]
            elif r < 0.97 or rng.random() >= self.edge:
                self.out.append(dash + rng.choice(KEYS) + ":")     # `- a:` with no child
            else:
                self.out.append(dash + rng.choice(QUOTED + CONSTRUCTS))


MUTATIONS = ["tab", "odd", "indent", "dedent", "bare-dash", "separator", "no-space",
             "space-colon", "orphan", "duplicate", "mix", "cr-line", "trailing", "bad-key",
             "blank", "vanish", "swap", "drop"]


def mutate(rng, lines):
    kind = rng.choice(MUTATIONS)
    if not lines:
        lines.append("a: 1")
    i = rng.randrange(len(lines))
    line = lines[i]
    if kind == "tab":
        j = rng.randint(0, len(line))
        lines[i] = line[:j] + "\t" + line[j:] if rng.random() < 0.8 else "  \t "
    elif kind == "odd":
        lines[i] = " " + line
    elif kind == "indent":
        lines[i] = "  " + line
    elif kind == "dedent":
        lines[i] = line[2:] if line.startswith("  ") else line
    elif kind == "bare-dash":
        lines.insert(i, " " * rng.choice([0, 2, 4]) + rng.choice(["-", "-  ", "-#", "--"]))
    elif kind == "separator":
        lines.insert(i, rng.choice(["---", "--- ", " ---", "  ---", "----", "...", "--- a",
                                    "---  # x", "    ---", "---\u00a0", "---\x0c"]))
    elif kind == "no-space":
        lines[i] = line.replace(": ", ":", 1)
    elif kind == "space-colon":
        lines[i] = line.replace(":", " :", 1)
    elif kind == "orphan":
        lines.insert(i, " " * rng.choice([0, 2, 4]) + "- orphan")
    elif kind == "duplicate":
        lines.insert(rng.randint(i, len(lines)), line)
    elif kind == "mix":
        ind = len(line) - len(line.lstrip(" "))
        lines.insert(i + 1, " " * ind + rng.choice(["- x", "k: v", "- k: v"]))
    elif kind == "cr-line":
        lines[i] = line + "\r"
    elif kind == "trailing":
        lines[i] = line + rng.choice([" ", "   "])
    elif kind == "bad-key":
        lines.insert(i, " " * rng.choice([0, 2]) + rng.choice(
            ["1a: x", "a.b: x", "a b: x", "-a: x", "\u00e9: x", "\"a\": x", "a:b: c", "? a",
             "\ufeffa: 1", "[a, b]", "{a: 1}", "key:value", "just text", ": x", "a:\u00a0x"]))
    elif kind == "blank":
        lines.insert(i, rng.choice(["", " ", "    ", "#", "  # c", "\u00a0", "\x0c"]))
    elif kind == "vanish":
        lines[i] = re.sub(r":( .*)?\Z", ":", line, count=1)
    elif kind == "swap" and len(lines) > 1:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "drop":
        del lines[i]


BODIES = ["", "# Title\n", "\ntext\n", "body\n---\nmore\n", "---\n", "a: 1\n"]


def wrap_front(rng, yaml):
    body = rng.choice(BODIES)
    if rng.random() < 0.85:
        return "---\n" + yaml + "---\n" + body
    return rng.choice([
        "---\r\n" + yaml.replace("\n", "\r\n") + "---\r\n" + body,
        "---\r\n" + yaml + "---\n" + body,
        "---\n" + yaml,                                   # never closed
        "---\n" + yaml + "--- \n" + body + "---\n",       # `--- ` is no fence
        "---\n" + yaml + "----\n---\n",
        "\ufeff---\n" + yaml + "---\n",
        "\n---\n" + yaml + "---\n",
        "---\n---\n" + body,
        "---", "---\n", "", "---\r\n", "--\n", "---\n-\n---\n",
        "no front matter\n---\n" + yaml + "---\n",
        "--- \n" + yaml + "---\n",
        "---\n" + yaml + "---\r\n" + body,                # a CRLF closing fence
        "---\n" + yaml + "---",                           # closing fence without newline
    ])


def corpus(seed, count):
    """`count` small (mode, text) documents around the subset's edges, reproducibly."""
    rng = random.Random(seed)
    docs = []
    for _ in range(count):
        gen = Gen(rng)
        if rng.random() < 0.03:
            gen.items(0, 1)                          # items without a parent key
        else:
            gen.mapping(0, 0)
        lines = gen.out
        if rng.random() < 0.30:
            for _ in range(rng.randint(1, 2)):
                mutate(rng, lines)
        text = "\n".join(lines)
        end = rng.random()
        text += "\n" if end < 0.92 else "\n\n" if end < 0.95 else ""
        if rng.random() < 0.02:
            text = text.replace("\n", "\r\n")
        if rng.random() < 0.25:
            docs.append(("fm", wrap_front(rng, text if text.endswith("\n") or not text
                                          else text + "\n")))
        else:
            docs.append(("yaml", text))
    return docs
