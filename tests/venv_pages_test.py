"""The pages a maintainer keeps open (SPEC §22, §26, issue 28) in a real headless Chromium,
against the built archive, on the layer of tests/pages_layer.py (nothing from ../shared).

Not named test_*.py: it needs `selenium` (the test virtual environment) and Debian's
chromium, chromedriver and axe-core, as tests/venv_ui_test.py does (its harness and helpers
are reused):

    python3 build_zipapp.py && .venv/bin/python tests/_unit.py venv_pages_test

Clicks from a rule to the rule it depends on and back, from a context document to what
governs its folder, from a search filtered by kind to a hit; the context form on a new
file's path; a rule page's first screen at 390 px; axe-core on every new page; screenshots
of every new page at 1280 and 390 px, light and dark (MAJORDOMUS_SCREENSHOTS=DIR keeps them;
each path is printed on a line `screenshot: PATH`).
"""
import os
import sys
import unittest
from urllib.parse import parse_qs, quote, urlsplit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import browser  # noqa: E402
import pages_layer as layer  # noqa: E402
import support  # noqa: E402
import venv_ui_test as ui  # noqa: E402

NEW_FILE = ".ai/repo/rules/project/new-rule.v1.md"


def object_path(uri):
    return "/ui/object?uri=" + quote(uri, safe="")


class PagesBrowserTest(ui.Servers, unittest.TestCase):
    """One serve of the pages layer and one Chromium for the class."""

    page = None

    @classmethod
    def setUpClass(cls):
        scope = support._ClassScope(cls)
        cls.repo = support.make_repo(scope, files=layer.files(), skeleton=False)
        cls.server = cls.serve(cls.repo)
        broken = layer.context_doc("ai.repo.rules.project", "Project rules",
                                   extra="tracks: [lib/gone.sh]\n")
        cls.broken_repo = support.make_repo(scope, files=layer.files(
            {layer.PATHS["project"]: broken}), skeleton=False, name="broken")
        cls.broken = cls.serve(cls.broken_repo)
        browser.open_browser(cls, "mj-pages-")

    setUp = ui.UiBrowserTest.setUp
    url = ui.UiBrowserTest.url
    open = ui.UiBrowserTest.open
    assert_nothing_ran = ui.UiBrowserTest.assert_nothing_ran
    assert_inert = ui.UiBrowserTest.assert_inert
    axe_serious = ui.UiBrowserTest.axe_serious
    shoot = ui.UiBrowserTest.shoot

    def here(self):
        """(path, {parameter: value}) of the page the browser shows."""
        parts = urlsplit(self.page.current_url)
        return parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()}

    # --- following links ---------------------------------------------------------------------

    def test_from_a_rule_to_the_rule_it_depends_on_and_back(self):
        self.open(object_path(layer.GREETING_URI))
        self.assertEqual(self.page.text("main h1"), layer.GREETING_TITLE)
        self.page.click('.refs a[href="%s"]' % object_path(layer.BASE_URI))
        self.assertEqual(self.here(), ("/ui/object", {"uri": layer.BASE_URI}))
        self.assertEqual(self.page.text("main h1"), layer.BASE_TITLE)
        self.assert_nothing_ran("the rule depended on")
        refs = self.page.text(".refs")
        self.assertIn("Depended on by", refs)
        self.page.click(layer.GREETING_TITLE)
        self.assertEqual(self.here(), ("/ui/object", {"uri": layer.GREETING_URI}))
        # and from the body: the id in a code span
        self.page.click('.content a.ref code')
        self.assertEqual(self.here(), ("/ui/object", {"uri": layer.BASE_URI}))
        self.assert_nothing_ran("the rule reached from a body")

    def test_from_a_context_document_to_what_governs_its_folder(self):
        self.open(object_path(layer.PROJECT_DOC_URI))
        self.assertIn("3 of 3", self.page.text(".refs"))
        self.page.click("a.governs")
        self.assertEqual(self.here(), ("/ui/context", {"path": ".ai/repo/rules/project"}))
        text = self.page.text("main")
        for ident in ("ai.layer", "ai.repo.rules", "ai.repo.rules.project"):
            self.assertIn(ident, text)
        self.assertIn("the target directory (scope subtree)", text)
        self.assert_nothing_ran("the context page")
        self.assert_inert("the context page")
        self.page.click("Repository rules")
        self.assertEqual(self.here(), ("/ui/object", {"uri": layer.RULES_DOC_URI}))

    def test_from_a_search_filtered_by_kind_to_a_hit(self):
        self.open("/ui/")
        self.page.type("#mj-top-q", "greeting review")
        self.page.submit("#mj-top-q")
        every = [a.text for a in self.page.find_all("ol.hits li .title a")]
        self.assertTrue(every, self.page.text("main"))
        self.page.script("document.getElementById('mj-kind').value = 'rule';")
        self.page.submit("form.search-form button")
        path, params = self.here()
        self.assertEqual((path, params.get("kind"), params.get("q")),
                         ("/ui/search", "rule", "greeting review"))
        kinds = {b.text for b in self.page.find_all("ol.hits li .badge")}
        self.assertEqual(kinds, {"rule"})
        self.assertEqual(self.page.find(".by-kind a[aria-current]").text.split()[0], "rule")
        self.assertTrue(self.page.find_all("ol.hits li .snippet mark"))
        self.page.click("ol.hits li .title a")
        self.assertEqual(self.here(), ("/ui/object", {"uri": layer.GREETING_URI}))
        self.assert_nothing_ran("the hit")

    def test_the_context_form_on_a_new_files_path(self):
        self.open("/ui/kind/rule")
        self.page.type("#mj-path", NEW_FILE)
        self.page.submit("#mj-path")
        self.assertEqual(self.here(), ("/ui/context", {"path": NEW_FILE}))
        self.assertIn(NEW_FILE, self.page.title)
        main = self.page.text("main")
        self.assertIn("a new file", main)
        for ident in ("ai.layer", "ai.repo.rules", "ai.repo.rules.project"):
            self.assertIn(ident, main)
        self.assertIn(layer.BASE_TITLE, main)           # a rule in force
        self.assert_nothing_ran("the context page of a new file")

    def test_a_rules_first_screen_at_390_px_holds_status_class_and_statement(self):
        self.page.set_size(390, 844)
        self.open(object_path(layer.BASE_URI))
        inside = self.page.script("""
            var out = {};
            ['.keys', '.statement', 'main h1'].forEach(function (css) {
              var r = document.querySelector(css).getBoundingClientRect();
              out[css] = [r.top, r.bottom, r.left, r.right];
            });
            out.height = innerHeight; out.width = innerWidth;
            return out;""")
        for css in (".keys", ".statement", "main h1"):
            top, bottom, left, right = inside[css]
            self.assertTrue(0 <= top and bottom <= inside["height"] and 0 <= left
                            and right <= inside["width"], (css, inside))
        keys = self.page.text(".keys")
        self.assertIn("active", keys)
        self.assertIn("blocking", keys)
        self.assertIn(layer.BASE_STATEMENT, self.page.text(".statement"))

    def test_a_tree_that_does_not_validate_is_explained(self):
        self.open("/ui/context?path=lib%2Frules.sh", self.broken)
        self.assertIn("does not validate", self.page.text(".explain.alert"))
        self.page.click('.explain a[href="#mj-brief-problems"]')
        # §29: the brief lists the problems of this path's chain; this one is another's,
        # counted, with the page of every diagnostic a click away
        alert = self.page.text("section.alert:has(#mj-brief-problems)")
        self.assertIn("1 other problem(s) in the layer", alert)
        self.assertNotIn("lib/gone.sh", alert)
        self.assert_nothing_ran("the refusal")

    # --- accessibility and looks -------------------------------------------------------------

    def pages(self):
        """(name, path, server) of every new page and every page that changed."""
        return [("context", "/ui/context?path=" + quote(".ai/repo/rules/project/greeting.v2.md"),
                 self.server),
                ("context-outside", "/ui/context?path=lib%2Frules.sh", self.server),
                ("context-new-file", "/ui/context?path=" + quote(NEW_FILE), self.server),
                ("context-left-out", "/ui/context?path=.ai%2Frepo%2Fworkflows", self.server),
                ("context-form", "/ui/context", self.server),
                ("context-refused", "/ui/context?path=lib%2Frules.sh", self.broken),
                ("rule", object_path(layer.GREETING_URI), self.server),
                ("rule-depended-on", object_path(layer.BASE_URI), self.server),
                ("context-document", object_path(layer.PROJECT_DOC_URI), self.server),
                ("prompt", object_path(layer.PROMPT_URI), self.server),
                ("kind-rule", "/ui/kind/rule", self.server),
                ("kind-context", "/ui/kind/context", self.server),
                ("search-kind", "/ui/search?q=%s&kind=rule" % quote("greeting test"),
                 self.server),
                ("search", "/ui/search?q=" + quote("greeting test"), self.server),
                ("capabilities", "/ui/capabilities", self.server),
                ("overview", "/ui/", self.server)]

    def test_axe_finds_nothing_serious(self):
        self.assertEqual(self.axe_serious(), [])

    def test_screenshots_wide_and_narrow_light_and_dark(self):
        overflow = []
        sys.stderr.write("\n")
        for width in (1280, 390):
            for dark in (False, True):
                self.page.set_size(width, 900 if width > 400 else 844)
                self.page.set_scheme(dark)
                scheme = "dark" if dark else "light"
                for name, path, server in self.pages():
                    self.open(path, server)
                    self.assert_nothing_ran("%s at %d px %s" % (name, width, scheme))
                    self.shoot(name, width, scheme, overflow)
        self.assertEqual(overflow, [], "a page is wider than the screen")


if __name__ == "__main__":
    unittest.main()
