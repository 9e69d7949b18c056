"""The pages of `serve` (SPEC §22) in a real headless Chromium, against the built archive.

Not named test_*.py: it needs `selenium` (the test virtual environment) and Debian's chromium,
chromedriver and axe-core, which run_all.py passes as MAJORDOMUS_CHROMIUM,
MAJORDOMUS_CHROMEDRIVER and MAJORDOMUS_AXE (tests/toolchain.py installs them):

    python3 build_zipapp.py && .venv/bin/python tests/_unit.py venv_ui_test

Every server is a real `majordomus.pyz serve --port 0` child in a scratch git repository made
from the skeleton fixture. When the browser cannot be had, every browser test FAILS with the
toolchain's reason (the test command installs it: its absence is a fault, not a skip).
Screenshots (each page at 1280 and 390 px wide, light and dark) go under the test's temporary
directory, or MAJORDOMUS_SCREENSHOTS=DIR to keep them; each path is printed to stderr on a
line `screenshot: PATH`, and axe-core's counts per page on lines `axe: ...`.
"""
import http.client
import json
import os
import sys
import time
import unittest
from urllib.parse import quote, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import browser  # noqa: E402
import support  # noqa: E402

CSP = ("default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
SAFETY = {"content-security-policy": CSP, "x-content-type-options": "nosniff",
          "referrer-policy": "no-referrer"}
BROWSER_ACCEPT = ("text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,"
                  "image/webp,*/*;q=0.8")
LIVE_WAIT = 3.0         # seconds a page open in the browser may take to show a new generation
SERIOUS = ("serious", "critical")

RULES = ".ai/repo/rules/project/"
GREETING_PATH = RULES + "greeting.v1.md"
GREETING_URI = "majordomus://rule/project.greeting@1"
GREETING_TITLE = "Greet every contributor"
GREETING = """---
id: project.greeting
version: 1
title: %s
description: A salutation opens each review; the reviewer names what was done well first.
statement: Every review starts with a greeting.
tags: [review, tone]
---

# Greet every contributor

A review opens with a **salutation** and names what was done *well* before what is missing;
`git log --format=%%an` says who did it.

## Why

> People who feel seen keep contributing.

- Name the person.
- Name one thing done well.

| Step | Who | When |
|------|-----|------|
| Greet | the reviewer | first |
| Reply | the author | after |

```text
$ majordomus get majordomus://rule/project.greeting@1 --format text --offset 1 --limit 40 | less
```

See [the guide](https://example.org/guide) or write to [the maintainers](mailto:team@example.org).
""" % GREETING_TITLE

TICKER_PATH = RULES + "ticker.v1.md"
TICKER_URI = "majordomus://rule/project.ticker@1"


def ticker(word):
    return ("---\nid: project.ticker\nversion: 1\ntitle: Ticker %s\ndescription: A rule the "
            "tests edit while its page is open.\n---\n\n# Ticker\n\nThe word is **%s**.\n"
            % (word, word))


# A rule that every field of which carries markup and script: served (it is valid), and shown
# as text wherever it appears.
HOSTILE_PATH = RULES + "hostile.v1.md"
HOSTILE_URI = "majordomus://rule/project.hostile@1"
HOSTILE_TITLE = "<script>alert(1)</script> <img src=x onerror=alert(2)> Hostile"
HOSTILE_DESCRIPTION = "<b>bold</b> <img src=x onerror=alert(3)> javascript:alert(4)"
HOSTILE = """---
id: project.hostile
version: 1
title: "%s"
description: "%s"
statement: "<script>alert(5)</script> javascript:alert(6)"
tags: ["<img src=x onerror=alert(7)>", "javascript:alert(8)"]
depends_on: ["javascript:alert(9)"]
---

# <script>alert(10)</script> heading

Body <img src=x onerror=alert(11)> and <b>raw</b> HTML, <iframe src="javascript:alert(12)"></iframe>.

[js link](javascript:alert(13)) and [data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxNCk8L3NjcmlwdD4=) and <javascript:alert(15)> and [upper](JaVaScRiPt:alert(16)) and [a kept link](https://example.org/kept).

<div onclick="alert(17)" style="background:url(javascript:alert(18))">div</div>

<script>alert(19)</script>

<svg onload=alert(20)></svg>
""" % (HOSTILE_TITLE, HOSTILE_DESCRIPTION)
HOSTILE_TEXTS = ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>",
                 "<script>alert(10)</script>", "<img src=x onerror=alert(11)>", "<b>raw</b>",
                 "[js link](javascript:alert(13))", "<javascript:alert(15)>",
                 '<div onclick="alert(17)"', "<script>alert(19)</script>",
                 "<svg onload=alert(20)></svg>"]

# The degraded repository: a rule whose front matter is never closed, in a file whose name is
# markup, and one whose front matter has a line that cannot be parsed (the diagnostic quotes
# it); the repository's own folder name is markup too (every page shows it).
DEGRADED_DIR = 'mj-<img src=x onerror=alert(30)> & "q"'
UNCLOSED_PATH = RULES + "<img src=x onerror=alert(31)>.v1.md"
UNCLOSED = "---\nid: project.unclosed\nversion: 1\ntitle: Unclosed\n\n# No end\n\nBody.\n"
UNPARSED_PATH = RULES + "keys.v1.md"
UNPARSED = ('---\nid: project.keys\nversion: 1\ntitle: Keys\n"<script>alert(32)</script>": 1\n'
            '---\n\nBody.\n')


def object_path(uri):
    return "/ui/object?uri=" + quote(uri, safe="")


def git_commit(repo, message):
    support.git(repo, "add", "-A")
    support.git(repo, "commit", "-q", "--no-gpg-sign", "-m", message)


def report(server):
    status, value = server.get_json("/api/v1/repository")
    assert status == 200, (status, value)
    return value


def settle(server, repo, timeout=10):
    """Wait until the server serves the repository's HEAD in a generation that has not moved
    for a second (an edit, its staging and its commit may each build one)."""
    head = support.git(repo, "rev-parse", "HEAD").strip()
    deadline = time.time() + timeout
    last, since = None, time.time()
    while time.time() < deadline:
        now = report(server)
        key = (now["live"]["generation"], now["repository"]["git"]["head"])
        if key != last:
            last, since = key, time.time()
        elif key[1] == head and time.time() - since >= 1.0:
            return key[0]
        time.sleep(0.1)
    raise AssertionError("the server did not settle on HEAD %s: %r" % (head, last))


class Servers:
    """serve children for a test class, stopped when it ends."""

    @classmethod
    def serve(cls, repo, *args):
        server = support.HttpServer(repo, args=args)
        cls.addClassCleanup(server.stop)
        return server


class UiBrowserTest(Servers, unittest.TestCase):
    """The pages, driven in one headless Chromium (one session for the whole class)."""

    page = None

    @classmethod
    def setUpClass(cls):
        scope = support._ClassScope(cls)
        cls.repo = support.make_repo(scope, files={
            GREETING_PATH: GREETING, HOSTILE_PATH: HOSTILE, TICKER_PATH: ticker("one")})
        cls.server = cls.serve(cls.repo)
        cls.degraded_repo = support.make_repo(scope, files={
            UNCLOSED_PATH: UNCLOSED, UNPARSED_PATH: UNPARSED}, name=DEGRADED_DIR)
        cls.degraded = cls.serve(cls.degraded_repo)
        cls.still_repo = support.make_repo(scope, files={TICKER_PATH: ticker("one")})
        cls.still = cls.serve(cls.still_repo, "--no-watch")
        browser.open_browser(cls, "mj-ui-")

    def setUp(self):
        if not self.tools:
            self.fail("the browser cannot be had: %s" % self.why)
        self.page.set_size(1280, 900)
        self.page.set_scheme(False)

    def url(self, path, server=None):
        return "http://127.0.0.1:%d%s" % ((server or self.server).port, path)

    def open(self, path, server=None):
        return self.page.open(self.url(path, server))

    def assert_nothing_ran(self, where):
        """No dialog, no uncaught error, no console.error, no CSP refusal in this document."""
        recorded = self.page.recorded()
        self.assertIsNotNone(recorded, "the recorder is not in %s" % where)
        self.assertEqual(recorded, [], "%s: the page did something" % where)

    def assert_inert(self, where):
        """What the repository said arrived as text: the one script is the archive's, no
        image, frame or SVG was made, no attribute is an event handler, every link is http,
        https, mailto or relative."""
        facts = self.page.script("""
            var out = {scripts: [], made: [], handlers: [], hrefs: []};
            document.querySelectorAll('script').forEach(function (s) {
              out.scripts.push(s.getAttribute('src') || '(inline) ' + s.textContent); });
            document.querySelectorAll('img, iframe, svg, object, embed, div[onclick]')
              .forEach(function (e) { out.made.push(e.outerHTML.slice(0, 120)); });
            document.querySelectorAll('*').forEach(function (e) {
              Array.prototype.forEach.call(e.attributes, function (a) {
                if (/^on/i.test(a.name)) { out.handlers.push(e.tagName + ' ' + a.name); }
                if (/javascript:/i.test(a.value) && a.name !== 'value') {
                  out.handlers.push(e.tagName + ' ' + a.name + '=' + a.value); }
              }); });
            document.querySelectorAll('[href], [src], [action]').forEach(function (e) {
              out.hrefs.push(e.getAttribute('href') || e.getAttribute('src') ||
                             e.getAttribute('action')); });
            return out;""")
        self.assertEqual(facts["scripts"], ["/ui/static/live.js"], where)
        self.assertEqual(facts["made"], [], where)
        self.assertEqual(facts["handlers"], [], where)
        for target in facts["hrefs"]:
            scheme = urlsplit(target).scheme.lower()
            self.assertIn(scheme, ("", "http", "https", "mailto"), "%s: %s" % (where, target))

    def body_text(self):
        return self.page.text("body")

    # --- following the pages --------------------------------------------------------------

    def test_overview_kind_object_by_clicking(self):
        expected = report(self.server)
        self.open("/ui/")
        self.assert_nothing_ran("the overview")
        self.assertIn("Overview", self.page.title)
        self.assertEqual(self.page.text("main h1"), os.path.basename(self.repo))
        cards = dict(zip([e.text for e in self.page.find_all(".cards dt")],
                         [e.text for e in self.page.find_all(".cards dd")]))
        self.assertEqual(cards["State"], expected["state"])
        self.assertEqual(expected["state"], "ok")
        self.assertEqual(cards["Objects"], str(expected["objects"]))
        self.assertEqual(cards["Diagnostics"], str(len(expected["diagnostics"])))
        self.assertEqual(cards["Generation"], str(expected["live"]["generation"]))
        self.assertEqual(cards["Branch"], "main")
        self.assertTrue(expected["repository"]["git"]["head"].startswith(cards["HEAD"]), cards)
        rows = [[cell.text for cell in row.find_elements(browser.By.CSS_SELECTOR, "td")]
                for row in self.page.find_all('table[aria-labelledby="mj-kinds"] tbody tr')]
        self.assertEqual({kind: int(count) for kind, count in rows}, expected["kinds"])
        self.assertEqual(expected["kinds"]["rule"], 4)       # the skeleton's one and ours
        self.assertFalse(self.page.find_all("section.alert"), "a clean layer shows no alert")

        self.page.click('a[href="/ui/kind/rule"]')
        self.assertEqual(urlsplit(self.page.current_url).path, "/ui/kind/rule")
        self.assertEqual(self.page.text("main h1"), "rule")
        self.assertIn("Kind rule", self.page.title)
        listed = [link.text for link in self.page.find_all("main tbody tr td:first-child a")]
        self.assertIn(GREETING_TITLE, listed)
        self.assertEqual(len(listed), expected["kinds"]["rule"])
        self.assertIn("project/greeting.v1.md", self.page.text("main table"))
        self.assert_nothing_ran("the kind page")

        self.page.click(GREETING_TITLE)
        self.assertEqual(self.page.current_url, self.url(object_path(GREETING_URI)))
        self.assertEqual(self.page.text("main h1"), GREETING_TITLE)
        self.assertIn(GREETING_TITLE, self.page.title)
        self.assertEqual(self.page.find("#mj-uri").get_attribute("value"), GREETING_URI)
        meta = {row.find_element(browser.By.CSS_SELECTOR, "th").text:
                row.find_element(browser.By.CSS_SELECTOR, "td").text
                for row in self.page.find_all('table[aria-labelledby="mj-meta"] tr')}
        self.assertEqual(meta["id"], "project.greeting")
        self.assertEqual(meta["version"], "1")
        self.assertEqual(meta["title"], GREETING_TITLE)
        self.assertEqual(meta["statement"], "Every review starts with a greeting.")
        self.assertEqual(meta["tags"], '["review","tone"]')
        # The body rendered: its constructs became elements, not text.
        content = ".content "
        self.assertEqual(self.page.text(content + "strong"), "salutation")
        self.assertEqual(self.page.text(content + "em"), "well")
        self.assertEqual(self.page.text(content + "h2"), "Why")
        self.assertIn("People who feel seen", self.page.text(content + "blockquote"))
        self.assertEqual([e.text for e in self.page.find_all(content + "ul li")],
                         ["Name the person.", "Name one thing done well."])
        self.assertEqual([e.text for e in self.page.find_all(content + "table th")],
                         ["Step", "Who", "When"])
        self.assertIn("majordomus get", self.page.text(content + "pre code"))
        self.assertEqual(self.page.find(content + 'a[href="https://example.org/guide"]').text,
                         "the guide")
        self.assertTrue(self.page.find_all(content + 'a[href="mailto:team@example.org"]'))
        self.assertNotIn("**salutation**", self.page.text(".content"))
        self.assert_nothing_ran("the object page")
        self.assert_inert("the object page")

    def test_search_form_finds_a_rule(self):
        self.open("/ui/")
        self.page.type("#mj-top-q", "salutation review")
        self.page.submit("#mj-top-q")
        self.assertEqual(urlsplit(self.page.current_url).path, "/ui/search")
        self.assertIn("Search: salutation review", self.page.title)
        hits = [a.text for a in self.page.find_all("ol.hits li .title a")]
        self.assertTrue(hits, self.body_text())
        self.assertEqual(hits[0], GREETING_TITLE)
        self.assertEqual(self.page.find("#mj-q").get_attribute("value"), "salutation review")
        # The search page's own form, then the hit by clicking.
        self.page.type("#mj-q", "ticker edit")
        self.page.submit("#mj-q")
        hits = [a.text for a in self.page.find_all("ol.hits li .title a")]
        self.assertTrue(hits and hits[0].startswith("Ticker"), hits)
        self.page.type("#mj-q", "salutation")
        self.page.submit("form.search-form button")
        self.page.click("ol.hits li .title a")
        self.assertEqual(self.page.current_url, self.url(object_path(GREETING_URI)))
        self.assertEqual(self.page.text("main h1"), GREETING_TITLE)
        self.page.type("#mj-top-q", "zzzqqq xyzzyq")
        self.page.submit("#mj-top-q")
        self.assertFalse(self.page.find_all("ol.hits li"))
        self.assertIn("Nothing carries these words.", self.page.text("main"))
        self.assert_nothing_ran("the search page")

    def test_degraded_layer_shows_its_diagnostics_first(self):
        expected = report(self.degraded)
        self.assertEqual(expected["state"], "degraded")
        codes = sorted((d["code"], d["path"]) for d in expected["diagnostics"])
        self.assertIn(("malformed_front_matter", UNCLOSED_PATH), codes)
        self.open("/ui/", self.degraded)
        self.assert_nothing_ran("the degraded overview")
        order = self.page.script("""
            var main = document.querySelector('main');
            return Array.prototype.map.call(main.children, function (e) {
              return e.tagName.toLowerCase() + (e.className ? '.' + e.className : ''); });""")
        # The name and the lede, then the diagnostics, before the state and the counts.
        self.assertEqual(order[:4], ["h1", "p.lede", "section.alert", "dl.cards"], order)
        self.assertEqual(self.page.text("section.alert h2"),
                         "%d diagnostic(s)" % len(expected["diagnostics"]))
        rows = sorted(tuple(cell.text for cell in row.find_elements(browser.By.CSS_SELECTOR,
                                                                      "td")[1:3])
                      for row in self.page.find_all("section.alert tbody tr"))
        self.assertEqual(rows, codes)
        self.assertIn("front matter opened on line 1 and never closed",
                      self.page.text("section.alert"))
        cards = dict(zip([e.text for e in self.page.find_all(".cards dt")],
                         [e.text for e in self.page.find_all(".cards dd")]))
        self.assertEqual(cards["State"], "degraded")
        self.assertEqual(cards["Diagnostics"], str(len(expected["diagnostics"])))
        self.page.click("Every diagnostic, grouped by code")
        self.assertEqual(urlsplit(self.page.current_url).path, "/ui/diagnostics")
        self.assertIn("malformed_front_matter", self.page.text("main h2"))
        self.assertIn(UNCLOSED_PATH, self.page.text("main"))
        self.assert_nothing_ran("the degraded diagnostics")

    # --- live ------------------------------------------------------------------------------

    def test_an_open_page_shows_the_new_generation(self):
        settle(self.server, self.repo)
        self.open(object_path(TICKER_URI))
        self.assertEqual(self.page.script("return document.body.dataset.live"), "on")
        before = int(self.page.script("return document.body.dataset.generation"))
        self.assertEqual(self.page.text("main h1"), "Ticker one")
        self.page.script("window.__mjSamePage = true;")
        support.write(self.repo, TICKER_PATH, ticker("two"))
        git_commit(self.repo, "ticker two")
        edited = time.time()

        def shows_the_edit(page):
            return (page.script("return window.__mjSamePage !== true && "
                                "document.readyState === 'complete'")
                    and page.text("main h1") == "Ticker two")
        try:
            self.page.wait_for(shows_the_edit, timeout=LIVE_WAIT, what="the edited rule")
        except TimeoutError as exc:
            self.fail("%s; the page shows %r, generation %s; the server: %r" % (
                exc, self.page.text("main h1"),
                self.page.script("return document.body.dataset.generation"),
                report(self.server)["live"]))
        after = int(self.page.script("return document.body.dataset.generation"))
        self.assertGreater(after, before)
        sys.stderr.write("\nlive: generation %d shown %.1f s after the commit (was %d)\n"
                         % (after, time.time() - edited, before))
        self.assertIn("two", self.page.text(".content strong"))
        self.assert_nothing_ran("the reloaded page")
        settle(self.server, self.repo)        # no later test sees a reload it did not ask for

    def test_no_watch_page_never_changes(self):
        self.open(object_path(TICKER_URI), self.still)
        self.assertEqual(self.page.script("return document.body.dataset.live"), "off")
        before = self.page.script("return document.body.dataset.generation")
        self.page.script("window.__mjSamePage = true;")
        support.write(self.still_repo, TICKER_PATH, ticker("two"))
        git_commit(self.still_repo, "ticker two")
        time.sleep(LIVE_WAIT)
        self.assertTrue(self.page.script("return window.__mjSamePage === true"),
                        "the page was reloaded")
        self.assertEqual(self.page.script("return document.body.dataset.generation"), before)
        self.assertEqual(self.page.text("main h1"), "Ticker one")
        self.open(object_path(TICKER_URI), self.still)           # a reload: still generation 1
        self.assertEqual(self.page.text("main h1"), "Ticker one")
        self.assertEqual(self.page.script("return document.body.dataset.generation"), "1")

    # --- safe by construction --------------------------------------------------------------

    def test_hostile_rule_runs_nothing_and_shows_its_text(self):
        self.open(object_path(HOSTILE_URI))
        self.assertEqual(self.page.text("main h1"), HOSTILE_TITLE)
        self.assertEqual(self.page.text("main .lede"), HOSTILE_DESCRIPTION)
        text = self.body_text()
        for literal in HOSTILE_TEXTS + ["javascript:alert(9)", "<script>alert(5)</script>"]:
            self.assertIn(literal, text)
        self.assertEqual(self.page.find('.content a[href="https://example.org/kept"]').text,
                         "a kept link")
        self.assertEqual(len(self.page.find_all(".content a")), 1, "only the https link")
        self.assert_inert("the object page")
        self.assert_nothing_ran("the object page")
        self.page.click("details summary")                        # the exact source
        self.assertIn('title: "%s"' % HOSTILE_TITLE, self.page.text("details pre"))
        self.assert_nothing_ran("the object page's source")

        self.open("/ui/kind/rule")
        row = [r.text for r in self.page.find_all("main tbody tr") if "hostile.v1.md" in r.text]
        self.assertEqual(len(row), 1)
        self.assertIn(HOSTILE_TITLE, row[0])
        self.assertIn(HOSTILE_DESCRIPTION, row[0])
        self.assert_inert("the kind page")
        self.assert_nothing_ran("the kind page")

        self.open("/ui/search?q=" + quote("hostile alert onerror"))
        hits = self.page.find_all("ol.hits li")
        self.assertTrue(hits, self.body_text())
        self.assertIn(HOSTILE_TITLE, hits[0].text)
        self.assert_inert("the search page")
        self.assert_nothing_ran("the search page")
        self.open("/ui/search?q=" + quote("<script>alert(40)</script>"))
        self.assertIn("<script>alert(40)</script>", self.page.text("main"))
        self.assertEqual(self.page.find("#mj-q").get_attribute("value"),
                         "<script>alert(40)</script>")
        self.assert_inert("the search page with a hostile query")
        self.assert_nothing_ran("the search page with a hostile query")

        # The overview and the diagnostics of the repository whose folder and files are markup.
        for path in ("/ui/", "/ui/diagnostics", "/ui/kind/rule", "/ui/capabilities"):
            self.open(path, self.degraded)
            text = self.body_text()
            self.assertIn(os.path.basename(self.degraded_repo), text)
            if path in ("/ui/", "/ui/diagnostics"):
                self.assertIn(UNCLOSED_PATH, text)
                self.assertIn('"<script>alert(32)</script>": 1', text)
            self.assertIn(os.path.basename(self.degraded_repo), self.page.title)
            self.assert_inert("the degraded %s" % path)
            self.assert_nothing_ran("the degraded %s" % path)

    # --- accessibility and looks -----------------------------------------------------------

    def pages(self):
        """(name, path, server) of every page, for axe-core and the screenshots."""
        return [("overview", "/ui/", self.server),
                ("kind", "/ui/kind/rule", self.server),
                ("object", object_path(GREETING_URI), self.server),
                ("object-hostile", object_path(HOSTILE_URI), self.server),
                ("search", "/ui/search?q=" + quote("greeting review"), self.server),
                ("diagnostics", "/ui/diagnostics", self.server),
                ("capabilities", "/ui/capabilities", self.server),
                ("brief", "/ui/brief?path=" + quote(".ai/repo/rules/project/new.v1.md")
                 + "&intent=" + quote("greeting review"), self.server),
                ("overview-degraded", "/ui/", self.degraded),
                ("brief-degraded", "/ui/brief?path=" + quote("src/new_file.py"),
                 self.degraded),
                ("diagnostics-degraded", "/ui/diagnostics", self.degraded),
                ("not-found", "/ui/object?uri=" + quote("majordomus://rule/none@1"),
                 self.server)]

    def axe_serious(self):
        """Every page of self.pages() checked by axe in light and dark (each page's count
        written to stderr): the serious or critical violations, as lines."""
        serious = []
        sys.stderr.write("\n")
        for dark in (False, True):
            self.page.set_scheme(dark)
            scheme = "dark" if dark else "light"
            for name, path, server in self.pages():
                self.open(path, server)
                violations = self.page.axe(self.tools["axe"])
                bad = [v for v in violations if v["impact"] in SERIOUS]
                sys.stderr.write("axe: %s %s: %d violation(s), %d serious or critical%s\n" % (
                    name, scheme, len(violations), len(bad), "".join(
                        "\n  %s %s: %s (%s)" % (v["impact"], v["id"], v["help"],
                                               ", ".join(v["nodes"][:3])) for v in violations)))
                serious += ["%s %s: %s %s %s" % (name, scheme, v["impact"], v["id"], v["nodes"])
                            for v in bad]
        return serious

    def test_axe_finds_nothing_serious(self):
        serious = self.axe_serious()
        self.assertTrue(self.page.axe_version, "axe did not say its version")
        self.assertEqual(serious, [])

    def shoot(self, name, width, scheme, overflow):
        """The page shown saved as a screenshot (its path printed, at least 2,000 bytes), a
        page wider than the screen named in `overflow`."""
        wide = self.page.script("return document.documentElement.scrollWidth")
        if wide > width:
            overflow.append("%s at %d px %s: %d px wide" % (name, width, scheme, wide))
        shot = self.page.screenshot(os.path.join(
            self.shots, "%s-%d-%s.png" % (name, width, scheme)))
        self.assertGreater(os.path.getsize(shot), 2000)
        sys.stderr.write("screenshot: %s\n" % shot)

    def test_screenshots_wide_and_narrow_light_and_dark(self):
        overflow = []
        backgrounds = {}
        sys.stderr.write("\n")
        for width in (1280, 390):
            for dark in (False, True):
                self.page.set_size(width, 900)
                self.page.set_scheme(dark)
                scheme = "dark" if dark else "light"
                for name, path, server in self.pages():
                    self.open(path, server)
                    self.assertEqual(self.page.script("return innerWidth"), width)
                    self.assertEqual(self.page.script(
                        "return matchMedia('(prefers-color-scheme: dark)').matches"), dark)
                    backgrounds.setdefault(scheme, set()).add(self.page.script(
                        "return getComputedStyle(document.body).backgroundColor"))
                    self.shoot(name, width, scheme, overflow)
        self.assertEqual(overflow, [], "a page is wider than the screen")
        self.assertEqual(len(backgrounds["light"]), 1, backgrounds)
        self.assertEqual(len(backgrounds["dark"]), 1, backgrounds)
        self.assertNotEqual(backgrounds["light"], backgrounds["dark"])


class UiHeadersTest(Servers, unittest.TestCase):
    """The safety headers on every route of the pages, and the JSON API unchanged for the
    clients that are not browsers (plain http.client, no browser)."""

    @classmethod
    def setUpClass(cls):
        cls.repo = support.make_repo(support._ClassScope(cls), files={
            GREETING_PATH: GREETING, UNCLOSED_PATH: UNCLOSED})
        cls.server = cls.serve(cls.repo)

    def request(self, method, path, accept=None):
        headers = {"Accept": accept} if accept is not None else {}
        return self.server.request(method, path, headers)

    ROUTES = [("/ui/", 200, "text/html"), ("/ui", 303, None),
              ("/ui/kind/rule", 200, "text/html"), ("/ui/kind/nothing", 404, "text/html"),
              ("/ui/kind/rule?after=" + quote(GREETING_URI), 200, "text/html"),
              (object_path(GREETING_URI), 200, "text/html"),
              (object_path("majordomus://rule/none@1"), 404, "text/html"),
              ("/ui/object", 404, "text/html"),
              ("/ui/search", 200, "text/html"), ("/ui/search?q=greeting", 200, "text/html"),
              ("/ui/diagnostics", 200, "text/html"), ("/ui/capabilities", 200, "text/html"),
              ("/ui/brief", 200, "text/html"), ("/ui/brief?path=new.md", 200, "text/html"),
              ("/ui/brief?path=..%2Fx", 422, "text/html"),
              ("/ui/capabilities?after=x", 200, "text/html"),
              ("/ui/static/majordomus.css", 200, "text/css"),
              ("/ui/static/live.js", 200, "text/javascript"),
              ("/ui/static/nothing.js", 404, "text/html"), ("/ui/nothing", 404, "text/html")]

    def test_safety_headers_on_every_page_route(self):
        for path, status, kind in self.ROUTES:
            for method in ("GET", "HEAD"):
                for accept in (None, BROWSER_ACCEPT):
                    with self.subTest(path=path, method=method, accept=accept):
                        got, headers, body = self.request(method, path, accept)
                        self.assertEqual(got, status, body[:300])
                        for name, value in SAFETY.items():
                            self.assertEqual(headers.get(name), value, name)
                        if kind:
                            self.assertTrue(headers["content-type"].startswith(kind),
                                            headers["content-type"])
                        if status == 303:
                            self.assertEqual(headers["location"], "/ui/")
                        if method == "HEAD":
                            self.assertEqual(body, b"")
                        elif kind == "text/html":
                            text = body.decode("utf-8")
                            self.assertTrue(text.startswith("<!doctype html>"), text[:100])
                            self.assertNotIn("<script>", text)    # only the one script file
        got, headers, body = self.request("POST", "/ui/")
        self.assertEqual(got, 405)
        for name, value in SAFETY.items():
            self.assertEqual(headers.get(name), value, name)

    def test_events_stream_carries_the_headers(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=10)
        try:
            conn.request("GET", "/ui/events", headers={"Accept": "text/event-stream",
                                                       "Sec-Fetch-Site": "same-origin"})
            resp = conn.getresponse()
            self.assertEqual(resp.status, 200)
            self.assertTrue(resp.getheader("Content-Type").startswith("text/event-stream"))
            for name, value in SAFETY.items():
                self.assertEqual(resp.getheader(name), value, name)
            data = None
            while data is None:
                line = resp.fp.readline()
                self.assertTrue(line, "the stream ended before its first event")
                if line.startswith(b"data:"):
                    data = json.loads(line[len(b"data:"):].decode("utf-8"))
            self.assertEqual(data, {"generation": report(self.server)["live"]["generation"]})
        finally:
            conn.close()
        got, headers, _ = self.server.request("HEAD", "/ui/events",
                                              {"Sec-Fetch-Site": "same-origin"})
        self.assertEqual(got, 200)
        for name, value in SAFETY.items():
            self.assertEqual(headers.get(name), value, name)

    def test_root_redirects_browsers_only(self):
        plain = self.request("GET", "/")
        self.assertEqual(plain[0], 200)
        self.assertEqual(plain[1]["content-type"], "application/json")
        self.assertEqual(json.loads(plain[2].decode("utf-8"))["name"], "majordomus")
        for accept in ("application/json", "*/*", "application/json, text/html;q=0.5",
                       "text/html;q=0.5, application/json", "text/plain"):
            with self.subTest(accept=accept):
                got = self.request("GET", "/", accept)
                self.assertEqual(got[0], 200)
                self.assertEqual(got[1]["content-type"], "application/json")
                self.assertEqual(got[2], plain[2])
        for accept in (BROWSER_ACCEPT, "text/html", "text/html, application/json;q=0.9"):
            for method in ("GET", "HEAD"):
                with self.subTest(accept=accept, method=method):
                    got, headers, body = self.request(method, "/", accept)
                    self.assertEqual(got, 303)
                    self.assertEqual(headers["location"], "/ui/")
                    self.assertEqual(body, b"")
                    for name, value in SAFETY.items():
                        self.assertEqual(headers.get(name), value, name)

    def test_json_api_is_the_same_for_a_browser_accept(self):
        paths = ["/api/v1/repository", "/api/v1/capabilities", "/api/v1/objects",
                 "/api/v1/object?uri=" + quote(GREETING_URI),
                 "/api/v1/search?query=greeting", "/api/v1/nothing", "/openapi.json",
                 "/api/v1/object?uri=" + quote("majordomus://rule/none@1")]
        for path in paths:
            answers = [self.request("GET", path, accept)
                       for accept in (None, "application/json", BROWSER_ACCEPT, "text/html")]
            with self.subTest(path=path):
                status, headers, body = answers[0]
                self.assertNotEqual(status, 303)
                self.assertTrue(headers["content-type"].startswith("application/json"),
                                headers["content-type"])
                json.loads(body.decode("utf-8"))
                for other in answers[1:]:
                    self.assertEqual(other[0], status)
                    self.assertEqual(other[1]["content-type"], headers["content-type"])
                    self.assertEqual(other[2], body)
        repository = json.loads(self.request("GET", "/api/v1/repository")[2].decode("utf-8"))
        self.assertEqual(list(repository), support.REPORT_KEYS)
        self.assertEqual(repository["state"], "degraded")


if __name__ == "__main__":
    unittest.main()
