"""The browser harness (tests/browser.py) proved against tiny pages, in a real headless Chromium.

Not named test_*.py on purpose: it needs the third-party `selenium` package, so it runs only in
the test virtual environment (from the checkout):

    .venv/bin/python tests/_unit.py venv_browser_selftest

The pages come from a local http.server on 127.0.0.1 (a free port) that sends the safety header
of serve's /ui/ pages, `Content-Security-Policy: default-src 'none'; script-src 'self'; ...`, so
that what is proven here (the recorder, execute_script, axe-core) is proven under that policy.
Chromium, chromedriver and axe-core are the ones run_all.py passes (MAJORDOMUS_CHROMIUM,
MAJORDOMUS_CHROMEDRIVER, MAJORDOMUS_AXE), or what tests/toolchain.py installs; when one of them
(or selenium) cannot be had, every test here FAILS with the toolchain's reason: the test
command is the one that installs them, so their absence is a fault, not a reason to skip.
MAJORDOMUS_SCREENSHOTS=DIR keeps the screenshots in DIR (else a temporary folder).
"""
import http.server
import os
import struct
import sys
import threading
import unittest
import urllib.parse
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import browser  # noqa: E402

CSP = ("default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
LIGHT, DARK = (255, 255, 255), (17, 17, 17)


def page(title, body, head=""):
    return ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            '<title>%s</title>%s</head>\n<body>%s</body></html>\n' % (title, head, body))


STYLE = ("body { background: #fff; color: #111; font: 16px sans-serif; margin: 0 }\n"
         "a { color: #2455b0 } main { padding: 1rem }\n"
         ".tall { height: 1600px; border-left: 8px solid #36c }\n"
         "@media (prefers-color-scheme: dark) {\n"
         "  body { background: #111; color: #eee } a { color: #9cf } }\n")
HEAD = '<link rel="stylesheet" href="/style.css">'
PAGES = {
    "/style.css": ("text/css", STYLE),
    "/alert.js": ("text/javascript", "alert(1);\n"),
    "/log.js": ("text/javascript", 'console.log("hello from the page");\n'
                                   'console.error("trouble", 42);\n'),
    "/alert.html": ("text/html", page("Alert", "<main><h1>Alert</h1></main>",
                                      HEAD + '<script src="/alert.js"></script>')),
    "/log.html": ("text/html", page("Log", "<main><h1>Log</h1></main>",
                                    HEAD + '<script src="/log.js"></script>')),
    "/plain.html": ("text/html", page("Plain", (
        '<main><h1 id="top">Plain page</h1>'
        '<p><a href="/next.html">Next page</a> <a href="/alert.html">Alerting page</a></p>'
        '<form action="/done.html" method="get"><label for="q">Query</label>'
        '<input id="q" name="q"> <button type="submit">Go</button></form>'
        '<div class="tall"></div><p id="bottom">The end.</p></main>'), HEAD)),
    "/next.html": ("text/html", page("Next", "<main><h1>Next page</h1></main>", HEAD)),
    "/done.html": ("text/html", page("Done", "<main><h1>Done</h1></main>", HEAD)),
    "/inline.html": ("text/html", page("Inline", (
        '<main><h1>Inline</h1><script>document.title = "inline ran"; alert(2);</script>'
        '</main>'), HEAD)),
    "/noalt.html": ("text/html", page("No alt", (
        '<main><h1>No alt</h1><img src="/pixel.png"></main>'), HEAD)),
    "/clean.html": ("text/html", page("Clean", (
        '<header><p>Site</p></header><nav aria-label="Main"><a href="/next.html">Next</a></nav>'
        '<main><h1>Clean page</h1><p>Some text.</p><img src="/pixel.png" alt="A dot"></main>'),
        HEAD)),
}


def png(width, height, rgb):
    """A tiny PNG of one colour (the stdlib is enough)."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = b"".join(b"\0" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2,
                                                                0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def png_facts(path):
    """(width, height, (r, g, b) of the top-left pixel) of a PNG file. The first pixel of the
    first row is stored as it is whatever the row's filter (they all predict 0 there)."""
    with open(path, "rb") as handle:
        data = handle.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour = header[:4]
    assert depth == 8 and colour in (2, 6), "unexpected PNG format %r" % (header,)
    raw = zlib.decompressobj().decompress(idat, 16)
    return width, height, tuple(raw[1:4])


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/pixel.png":
            kind, body = "image/png", png(4, 4, (200, 40, 40))
        elif path in PAGES:
            kind, text = PAGES[path]
            kind, body = kind + "; charset=utf-8", text.encode("utf-8")
        else:
            kind, body = "text/plain; charset=utf-8", b"not found\n"
        self.send_response(200 if body != b"not found\n" else 404)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class BrowserHarnessTest(unittest.TestCase):
    page = None

    @classmethod
    def setUpClass(cls):
        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        cls.server.daemon_threads = True
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.base = "http://127.0.0.1:%d" % cls.server.server_address[1]
        browser.open_browser(cls, "mj-shots-")

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self):
        if not self.tools:
            self.fail("the browser cannot be had: %s" % self.why)
        self.page.set_size(1280, 900)
        self.page.set_scheme(False)

    def url(self, path):
        return self.base + path

    # --- the recorder, under the page's CSP ------------------------------------------------

    def test_external_script_alert_is_recorded(self):
        self.page.open(self.url("/alert.html"))
        self.assertEqual([(r["kind"], r["args"]) for r in self.page.recorded()],
                         [("alert", ["1"])])

    def test_page_without_script_records_nothing(self):
        self.page.open(self.url("/plain.html"))
        self.assertEqual(self.page.recorded(), [])
        self.assertEqual(self.page.text("h1"), "Plain page")

    def test_recorder_is_in_every_document(self):
        # A second navigation (a click, not open) gets a fresh recorder before its scripts.
        self.page.open(self.url("/plain.html"))
        self.page.click("Alerting page")
        self.assertEqual(self.page.current_url, self.url("/alert.html"))
        self.assertEqual([r["kind"] for r in self.page.recorded()], ["alert"])

    def test_csp_is_in_force_and_execute_script_is_not_subject_to_it(self):
        self.page.open(self.url("/inline.html"))
        self.assertEqual(self.page.title, "Inline")          # the inline script was refused
        kinds = [(r["kind"], r["args"][0], r.get("blocked")) for r in self.page.recorded()]
        self.assertIn(("csp", "script-src-elem", "inline"), kinds)
        self.assertNotIn("alert", [k for k, _, _ in kinds])
        self.assertEqual(self.page.script("return 6 * 7"), 42)
        self.assertEqual(self.page.script("return eval('6 * 7')"), 42)

    def test_console_messages(self):
        self.page.browser_log()                              # empties it
        self.page.open(self.url("/log.html"))
        messages = [entry["message"] for entry in self.page.browser_log()]
        self.assertTrue(any("hello from the page" in m for m in messages), messages)
        self.assertEqual([(r["kind"], r["args"]) for r in self.page.recorded()],
                         [("console.error", ["trouble", "42"])])

    # --- people's actions ------------------------------------------------------------------

    def test_click_follows_a_link(self):
        self.page.open(self.url("/plain.html"))
        self.page.click("Next page")
        self.assertEqual(self.page.current_url, self.url("/next.html"))
        self.assertEqual(self.page.text("h1"), "Next page")
        self.page.open(self.url("/plain.html"))
        self.page.click('a[href="/next.html"]')
        self.assertEqual(self.page.wait_for("h1").text, "Next page")

    def test_form_submit_navigates(self):
        self.page.open(self.url("/plain.html"))
        self.page.type("#q", "hello world")
        self.page.submit("form")
        self.assertEqual(self.page.current_url, self.url("/done.html?q=hello+world"))
        self.assertEqual(self.page.text("h1"), "Done")
        self.page.open(self.url("/plain.html"))
        self.page.type("#q", "again")
        self.page.submit("#q")                               # a field: its form
        self.assertEqual(self.page.current_url, self.url("/done.html?q=again"))

    def test_wait_for_times_out_with_a_reason(self):
        self.page.open(self.url("/next.html"))
        with self.assertRaises(TimeoutError) as caught:
            self.page.wait_for("#never", timeout=0.3)
        self.assertIn("#never", str(caught.exception))
        self.assertEqual(self.page.wait_for(lambda p: p.title == "Next" and p.title), "Next")

    # --- screenshots -----------------------------------------------------------------------

    def test_screenshots_at_two_widths_light_and_dark(self):
        facts = {}
        for width in (1280, 390):
            for dark in (False, True):
                self.page.set_size(width, 900)
                self.page.set_scheme(dark)
                self.page.open(self.url("/plain.html"))
                self.assertEqual(self.page.script("return innerWidth"), width)
                self.assertEqual(self.page.script(
                    "return matchMedia('(prefers-color-scheme: dark)').matches"), dark)
                path = os.path.join(self.shots, "plain-%d-%s.png"
                                    % (width, "dark" if dark else "light"))
                self.page.screenshot(path)
                self.assertGreater(os.path.getsize(path), 1000)
                facts[width, dark] = png_facts(path)
                shot_width, shot_height, pixel = facts[width, dark]
                self.assertEqual(shot_width, width)
                # The full page, not the 900-pixel viewport: the page is over 1600 tall.
                self.assertGreater(shot_height, 1600)
                self.assertEqual(pixel, DARK if dark else LIGHT)
        for width in (1280, 390):
            with open(os.path.join(self.shots, "plain-%d-light.png" % width), "rb") as light, \
                    open(os.path.join(self.shots, "plain-%d-dark.png" % width), "rb") as dark:
                self.assertNotEqual(light.read(), dark.read())

    def test_dark_from_the_start(self):
        with browser.Browser(width=390, height=700, dark=True,
                             chromium=self.tools["chromium"],
                             chromedriver=self.tools["chromedriver"]) as other:
            other.open(self.url("/next.html"))
            self.assertEqual(other.script("return [innerWidth, innerHeight]"), [390, 700])
            self.assertTrue(other.script(
                "return matchMedia('(prefers-color-scheme: dark)').matches"))
            path = other.screenshot(os.path.join(self.shots, "next-390-dark.png"), False)
            self.assertEqual(png_facts(path), (390, 700, DARK))
            other.set_scheme(False)
            self.assertFalse(other.script(
                "return matchMedia('(prefers-color-scheme: dark)').matches"))

    # --- axe-core --------------------------------------------------------------------------

    def test_axe_finds_an_image_without_alt(self):
        self.page.open(self.url("/noalt.html"))
        violations = self.page.axe(self.tools["axe"])
        found = {v["id"]: v for v in violations}
        self.assertIn("image-alt", found, violations)
        self.assertEqual(found["image-alt"]["impact"], "critical")
        self.assertEqual(found["image-alt"]["nodes"], ["img"])
        self.assertTrue(found["image-alt"]["help"])
        # Injecting axe broke no CSP rule; the one refusal is the image's (no img-src).
        self.assertEqual([(r["kind"], r["args"], r["blocked"]) for r in self.page.recorded()],
                         [("csp", ["img-src"], self.url("/pixel.png"))])

    def test_axe_clean_page_has_nothing_serious(self):
        for dark in (False, True):
            self.page.set_scheme(dark)
            self.page.open(self.url("/clean.html"))
            violations = self.page.axe(self.tools["axe"], {"resultTypes": ["violations"]})
            serious = [v for v in violations if v["impact"] in ("serious", "critical")]
            self.assertEqual(serious, [], "dark" if dark else "light")
            self.assertEqual(violations, [])


if __name__ == "__main__":
    unittest.main()
