"""An `mcp` child over pipes, read with select: frames, answers, sessions."""
import json
import os
import re
import select
import subprocess
import time

from bench.common import (Child, NotAvailable, REQUEST_TIMEOUT, SPAWN_TIMEOUT, child_env,
                          exit_text, last_line, stop)


class ChildGone(Exception):
    pass


class Pipe(Child):
    """A child spoken to over pipes, read with select (no reader thread, no blocking read)."""

    def __init__(self, argv, cwd, shared=False):
        self.spawn(argv, cwd, child_env(shared), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                   bufsize=0)
        self.in_fd = self.proc.stdin.fileno()
        self.out_fd = self.proc.stdout.fileno()
        os.set_blocking(self.in_fd, False)
        self.buf = bytearray()
        self.scan = 0

    def gone_reason(self):
        rc = self.proc.poll()
        if rc is None:
            try:
                rc = self.proc.wait(2)
            except subprocess.TimeoutExpired:
                rc = None
        tail = last_line(self.stderr_text())
        if rc is None:
            return "no answer" + (": " + tail if tail else "")
        return "%s%s" % (exit_text(rc), ": " + tail if tail else "")

    def transact(self, payload, count, timeout=REQUEST_TIMEOUT):
        """Write payload (bytes), return the next `count` answer lines (without newline)."""
        out = memoryview(payload)
        pos = 0
        lines = []
        deadline = time.monotonic() + timeout
        while True:
            while len(lines) < count:
                i = self.buf.find(b"\n", self.scan)
                if i < 0:
                    self.scan = len(self.buf)
                    break
                lines.append(bytes(self.buf[:i]))
                del self.buf[:i + 1]
                self.scan = 0
            if len(lines) >= count and pos >= len(out):
                return lines
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ChildGone("no answer within %d s" % timeout)
            wl = [self.in_fd] if pos < len(out) else []
            r, w, _ = select.select([self.out_fd], wl, [], remaining)
            if w:
                try:
                    pos += os.write(self.in_fd, out[pos:pos + 65536])
                except BlockingIOError:
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    raise ChildGone(self.gone_reason())
            if r:
                chunk = os.read(self.out_fd, 1 << 20)
                if not chunk:
                    raise ChildGone(self.gone_reason())
                self.buf += chunk

    def next_line(self, timeout):
        """The next line the child writes (without newline), or None after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            i = self.buf.find(b"\n", self.scan)
            if i >= 0:
                line = bytes(self.buf[:i])
                del self.buf[:i + 1]
                self.scan = 0
                return line
            self.scan = len(self.buf)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            r, _, _ = select.select([self.out_fd], [], [], remaining)
            if r:
                chunk = os.read(self.out_fd, 1 << 20)
                if not chunk:
                    raise ChildGone(self.gone_reason())
                self.buf += chunk

    def close(self, timeout=10):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            rc = "no exit within %d s of stdin closing (stopped)" % timeout
        stop(self.proc)
        self.err.close()
        return rc


def frame(id_, method, params=None):
    msg = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg, separators=(",", ":")).encode("utf-8") + b"\n"


def rpc_error(line):
    """The JSON-RPC error message of an answer line, or None for a result."""
    try:
        msg = json.loads(line.decode("utf-8"))
    except ValueError as e:
        return "answer is not JSON: %s" % e
    if not isinstance(msg, dict):
        return "answer is not a JSON object"
    if "error" in msg:
        err = msg["error"] if isinstance(msg["error"], dict) else {}
        return "%s %s" % (err.get("code"), err.get("message"))
    result = msg.get("result")
    if isinstance(result, dict) and result.get("isError") is True:
        content = result.get("content") or [{}]
        text = content[0].get("text") if isinstance(content[0], dict) else None
        return "tool error: %s" % text
    if "result" not in msg:
        return "answer carries neither result nor error"
    return None


MODERN = "2026-07-28"


MODERN_META = {"io.modelcontextprotocol/protocolVersion": MODERN,
               "io.modelcontextprotocol/clientCapabilities": {}}


LEGACY = "2025-06-18"


INITIALIZE = {"protocolVersion": LEGACY, "capabilities": {},
              "clientInfo": {"name": "majordomus-bench", "version": "0"}}


_ID = re.compile(rb'"id"\s*:\s*(-?\d+)')


def answer_id(line):
    """The id of an answer line; None for a notification (or anything without an id)."""
    if len(line) < (1 << 16):
        try:
            msg = json.loads(line.decode("utf-8"))
        except ValueError:
            return None
        if not isinstance(msg, dict) or "method" in msg:
            return None
        return msg.get("id")
    m = _ID.search(line[:256])   # a large line is an answer: its id comes first
    return int(m.group(1)) if m else None


def notice_method(line):
    try:
        msg = json.loads(line.decode("utf-8"))
    except ValueError:
        return None
    return msg.get("method") if isinstance(msg, dict) and "id" not in msg else None


def structured(line):
    """structuredContent of a tools/call answer line; NotAvailable on any error."""
    err = rpc_error(line)
    if err:
        raise NotAvailable(err)
    try:
        return json.loads(line.decode("utf-8"))["result"]["structuredContent"]
    except (ValueError, KeyError, TypeError):
        raise NotAvailable("the tool answer carries no structuredContent")


class Session:
    """One `mcp` child spoken to by request id: notifications that arrive meanwhile are
    kept with their arrival time (perf_counter) for wait_notice()."""

    def __init__(self, argv, cwd, shared=False):
        self.pipe = Pipe(argv, cwd, shared)
        self.pid = self.pipe.proc.pid
        self.next_id = 1
        self.notices = []

    def send(self, payload):
        self.pipe.transact(payload, 0)

    def call(self, method, params=None, timeout=REQUEST_TIMEOUT):
        """(seconds from the write to the answer line, the answer line)."""
        id_ = self.next_id
        self.next_id += 1
        t0 = time.perf_counter()
        self.send(frame(id_, method, params))
        deadline = time.monotonic() + timeout
        while True:
            line = self.pipe.next_line(max(0.0, deadline - time.monotonic()))
            if line is None:
                raise ChildGone("no answer to %s within %d s" % (method, timeout))
            t = time.perf_counter() - t0
            got = answer_id(line)
            if got == id_:
                return t, line
            if got is None:
                self.notices.append((time.perf_counter(), line))

    def tool(self, name, arguments, timeout=REQUEST_TIMEOUT):
        t, line = self.call("tools/call", {"name": name, "arguments": arguments}, timeout)
        return t, structured(line)

    def perf(self):
        return self.tool("majordomus_perf", {})[1]

    def initialize(self, initialized=True):
        """Legacy initialize; `initialized` also sends notifications/initialized, which
        makes the session a listener (under watching, the idle timer runs)."""
        _, line = self.call("initialize", INITIALIZE, SPAWN_TIMEOUT)
        err = rpc_error(line)
        if err:
            raise NotAvailable("initialize answered %s" % err)
        if initialized:
            self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def wait_notice(self, method, timeout):
        """Arrival time (perf_counter) of the next notification `method`, or None."""
        deadline = time.monotonic() + timeout
        while True:
            for k, (at, line) in enumerate(self.notices):
                if notice_method(line) == method:
                    del self.notices[:k + 1]
                    return at
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            line = self.pipe.next_line(remaining)
            if line is None:
                return None
            if answer_id(line) is None:
                self.notices.append((time.perf_counter(), line))

    def drain(self, seconds):
        """Keep every notification that arrives within `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            line = self.pipe.next_line(remaining)
            if line is None:
                return
            if answer_id(line) is None:
                self.notices.append((time.perf_counter(), line))

    def close(self):
        return self.pipe.close()


def open_session(argv, cwd, initialized=True, shared=False):
    """A started and initialized Session; NotAvailable (the session stopped) otherwise."""
    session = Session(argv, cwd, shared)
    try:
        session.initialize(initialized)
    except (ChildGone, NotAvailable) as e:
        session.close()
        raise NotAvailable(str(e))
    return session


def phase_delta(before, after, name):
    """(count, seconds) spent in one majordomus_perf phase between two snapshots."""
    b, a = before["phases"][name], after["phases"][name]
    return a["count"] - b["count"], (a["total_nanos"] - b["total_nanos"]) / 1e9


def case_variant(text, i):
    """`text` with its letters' case set by the bits of i: distinct cache keys, one needle."""
    out, bit = [], 0
    for ch in text:
        if ch.isalpha():
            out.append(ch.upper() if (i >> bit) & 1 else ch)
            bit += 1
        else:
            out.append(ch)
    return "".join(out)
