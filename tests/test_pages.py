"""The pages of `serve` as a maintainer uses them (SPEC §22, issue 28): the one linker
(UiLinks) and the snippet renderer as units, then the pages of a running `serve` on a small
layer of the test's own (tests/pages_layer.py: no ../shared): links wherever a value names
an object, what matters first on an object page, the listings' key columns, search filtered
by kind, the capabilities read plainly, and the context page. (The same pages in a real
Chromium: tests/venv_pages_test.py.)"""
import html.parser
import re
import types
import unittest
from urllib.parse import quote

from tests import pages_layer as layer
from tests import support

import majordomus as mj


def fake(kind, identity, path, metadata=None, section=None):
    """An object as the linker reads one: kind, identity, URI, path, metadata, provenance."""
    return types.SimpleNamespace(kind=kind, identity=identity, path=path,
                                 uri="majordomus://%s/%s" % (kind, identity),
                                 metadata=metadata or {},
                                 provenance={"path": path, "section": section or kind})


def fake_index(*objects):
    return types.SimpleNamespace(objects=list(objects),
                                 by_uri={o.uri: o for o in objects})


def href(uri):
    return "/ui/object?uri=" + quote(uri, safe="")


def anchors(html):
    """[(href, inner HTML)] of the <a> elements of a fragment (none nested, by construction:
    an <a> inside another is an error here)."""
    found, depth = [], 0
    for match in re.finditer(r'<a\b([^>]*)>|</a>', html):
        if match.group(0) == "</a>":
            depth -= 1
            continue
        depth += 1
        if depth > 1:
            raise AssertionError("a link inside a link: %s" % html)
        target = re.search(r'href="([^"]*)"', match.group(1))
        end = html.index("</a>", match.end())
        found.append((target.group(1).replace("&amp;", "&") if target else None,
                      html[match.end():end]))
    return found


class _Tags(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(html):
    parser = _Tags()
    parser.feed(html)
    parser.close()
    return parser.tags, "".join(parser.text)


BASE = fake("rule", "project.base@1", ".ai/repo/rules/project/base.v1.md")
BASE2 = fake("rule", "project.base@2", ".ai/repo/rules/project/base.v2.md",
             {"depends_on": ["project.base@1"]})
README = fake("context", "ai.repo.rules", ".ai/repo/rules/README.md",
              {"supersedes": [], "tracks": ["lib/rules.sh"]})
PROFILE = fake("profile", "steady", ".ai/repo/profiles/steady.yaml")
PROMPT = fake("prompt", "inspect", ".ai/repo/prompts/inspect.md", {"profile": "steady"})
GUIDE = fake("document", ".ai/repo/workflows/guide.md", ".ai/repo/workflows/guide.md")
POLICY = fake("policy", ".ai/repo/policy.yaml", ".ai/repo/policy.yaml",
              {"profiles": {"default": "steady"}})
ADR = fake("document", ".ai/repo/adrs/0003-one-server.md", ".ai/repo/adrs/0003-one-server.md",
           section="adrs")


class LinkerTest(unittest.TestCase):
    """UiLinks over a made-up index, through render_markdown as every page calls it."""

    def setUp(self):
        self.links = mj.UiLinks(fake_index(BASE, BASE2, README, PROFILE, PROMPT, GUIDE, POLICY,
                                           ADR))

    def md(self, text, seen_from=None):
        linker = self.links.seen_from(seen_from) if seen_from else self.links
        return mj.render_markdown(text, linker)

    def test_an_id_in_code_links_to_its_object(self):
        out = self.md("Read `project.base@1` first.")
        self.assertEqual(anchors(out), [(href(BASE.uri), "<code>project.base@1</code>")])
        self.assertIn("first.", out)

    def test_an_id_without_its_version_names_the_highest(self):
        self.assertEqual(anchors(self.md("Read `project.base`.")),
                         [(href(BASE2.uri), "<code>project.base</code>")])
        self.assertEqual(anchors(self.md("Read project.base.")),
                         [(href(BASE2.uri), "project.base")])

    def test_an_id_in_running_text_links_and_its_full_stop_stays_text(self):
        out = self.md("It builds on project.base@1. And ai.repo.rules, too.")
        self.assertEqual(anchors(out), [(href(BASE.uri), "project.base@1"),
                                        (href(README.uri), "ai.repo.rules")])
        self.assertIn("</a>. And", out)
        self.assertIn("</a>, too.", out)

    def test_an_id_in_a_heading_links_and_the_heading_keeps_its_slug(self):
        out = self.md("## project.base@1")
        self.assertTrue(out.startswith('<h2 id="project-base-1"><a class="ref"'), out)
        self.assertEqual(anchors(out), [(href(BASE.uri), "project.base@1")])

    def test_an_id_in_a_link_is_not_linked_again(self):
        out = self.md("[the rule project.base@1 and `project.base`](https://example.org/x)")
        self.assertEqual(anchors(out), [("https://example.org/x",
                                         "the rule project.base@1 and <code>project.base</code>")])

    def test_a_link_to_a_served_uri_goes_to_its_page_and_an_unserved_one_is_text(self):
        out = self.md("[base](majordomus://rule/project.base@1) and "
                      "[none](majordomus://rule/project.none@1) and "
                      "<majordomus://rule/project.base@1>.")
        self.assertEqual(anchors(out), [(href(BASE.uri), "base"),
                                        (href(BASE.uri), "majordomus://rule/project.base@1")])
        self.assertIn("[none](majordomus://rule/project.none@1)", out)

    def test_a_uri_in_running_text_links_without_its_punctuation(self):
        out = self.md("See majordomus://rule/project.base@1, then majordomus://rule/none@9.")
        self.assertEqual(anchors(out), [(href(BASE.uri), "majordomus://rule/project.base@1")])
        self.assertIn("majordomus://rule/none@9.", out)

    def test_an_unknown_id_is_shown_plainly(self):
        out = self.md("Not project.none@1, not `project.none`, not project.base@7.")
        self.assertEqual(anchors(out), [])
        self.assertIn("project.none@1", out)
        self.assertIn("<code>project.none</code>", out)
        self.assertIn("project.base@7", out)

    def test_an_id_inside_a_word_a_path_or_a_url_is_not_a_name(self):
        for text in ("xproject.base@1", "project.base@1x", "project.base@12", "project.based",
                     "project.base-two", "project.base_two", "lib/project.base",
                     "project.base/lib", "project.base.v1.md", "http://x.org/project.base",
                     "a:project.base"):
            with self.subTest(text=text):
                self.assertEqual(anchors(self.md("Before %s after." % text)), [])

    def test_a_bare_word_is_no_name_in_a_body(self):
        # `steady` is a profile and `inspect` a prompt: in running text they are words.
        self.assertEqual(anchors(self.md("Stay steady and inspect `steady`.")), [])

    def test_a_path_in_code_links_to_its_file_and_a_relative_one_from_the_page(self):
        self.assertEqual(anchors(self.md("See `.ai/repo/workflows/guide.md`.")),
                         [(href(GUIDE.uri), "<code>.ai/repo/workflows/guide.md</code>")])
        out = self.md("See `../rules/README.md` and `../nowhere.md`.", seen_from=GUIDE)
        self.assertEqual(anchors(out), [(href(README.uri), "<code>../rules/README.md</code>")])

    def test_a_decision_is_named_by_its_number(self):
        out = self.md("As ADR 3 and ADR-0003 say (ADR3), not ADR 4, xADR 3 or ADR 3x.")
        self.assertEqual(anchors(out), [(href(ADR.uri), "ADR 3"), (href(ADR.uri), "ADR-0003"),
                                        (href(ADR.uri), "ADR3")])
        self.assertIn("ADR 4", out)
        self.assertEqual(anchors(self.md("ADR 3", seen_from=ADR)), [])

    def test_a_name_ending_in_other_digits_is_no_version(self):
        """`²` and `٣` are digits to str.isdigit(), not to int(): such a name is no version,
        and no ADR number (the linker raised ValueError on them)."""
        sup = fake("note", "x@\u00b2", ".ai/repo/notes/sup.yaml")
        ind = fake("document", ".ai/repo/adrs/\u0663-ind.md", ".ai/repo/adrs/\u0663-ind.md",
                   section="adrs")
        links = mj.UiLinks(fake_index(BASE, sup, ind))
        self.assertEqual(links.versions_of(sup), [])
        self.assertEqual(links.decisions, {})
        self.assertIs(links.target("x@\u00b2"), sup)
        self.assertEqual(anchors(mj.render_markdown("Read `x@\u00b2`.", links)),
                         [(href(sup.uri), "<code>x@\u00b2</code>")])

    def test_an_object_does_not_link_to_itself(self):
        self.assertEqual(anchors(self.md("I am project.base@1.", seen_from=BASE)), [])
        self.assertEqual(len(anchors(self.md("I am project.base@1.", seen_from=BASE2))), 1)

    def test_markup_around_a_name_stays_text(self):
        out = self.md("<b>project.base@1</b> <script>alert(1)</script>")
        self.assertEqual(anchors(out), [(href(BASE.uri), "project.base@1")])
        self.assertIn("&lt;b&gt;", out)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", out)
        self.assertNotIn("<script", out)

    def test_metadata_values_link_by_their_field(self):
        links = self.links.seen_from(PROMPT)
        self.assertEqual(links.value_html("profile", "steady"),
                         '<a class="ref" href="%s">steady</a>' % href(PROFILE.uri))
        self.assertEqual(links.value_html("profile", "nonesuch"), "nonesuch")
        self.assertEqual(links.value_html("title", "steady"), "steady")   # not a reference
        self.assertEqual(
            self.links.value_html("depends_on", ["project.base@1", "project.none@1"]),
            '["<a class="ref" href="%s">project.base@1</a>","project.none@1"]' % href(BASE.uri))
        self.assertEqual(self.links.value_html("profiles", {"default": "steady"}),
                         '{&quot;default&quot;:"<a class="ref" href="%s">steady</a>"}'
                         % href(PROFILE.uri))
        self.assertEqual(self.links.value_html("tracks", ["lib/rules.sh"]),
                         '["<a class="ref" href="/ui/context?path=lib%2Frules.sh">'
                         'lib/rules.sh</a>"]')
        # a string that JSON escapes is shown escaped, and not linked
        self.assertEqual(self.links.value_html("depends_on", ['a"<b>']),
                         '[&quot;a\\&quot;&lt;b&gt;&quot;]')
        self.assertEqual(self.links.value_html("x", [1, True, None]), "[1,true,null]")

    def test_a_value_any_number_of_levels_deep(self):
        node = "project.base@1"
        for n in range(100000):
            node = {"n": node} if n % 2 else [node]
        out = self.links.value_html("x", node)
        self.assertTrue(out.startswith("{&quot;n&quot;:[{&quot;n&quot;:["), out[:80])
        self.assertEqual(out.count("&quot;n&quot;:"), 50000)
        # the id at the bottom is a name there too
        self.assertIn('"<a class="ref" href="%s">project.base@1</a>"' % href(BASE.uri), out)

    def test_cited_by_reads_the_reference_fields_once(self):
        self.assertEqual(self.links.cited_by(BASE), [("depends_on", BASE2)])
        self.assertEqual(self.links.cited_by(PROFILE), [("profile", PROMPT),
                                                        ("profiles.default", POLICY)])
        self.assertEqual(self.links.seen_from(BASE2).cited_by(BASE), [("depends_on", BASE2)])
        self.assertEqual(self.links.cited_by(BASE2), [])

    def test_two_kinds_with_one_name_link_only_where_the_field_says_which(self):
        twin = fake("skill", "steady", ".ai/repo/skills/steady.md")
        links = mj.UiLinks(fake_index(PROFILE, twin, PROMPT))
        self.assertIsNone(links.target("steady"))
        self.assertIs(links.target("steady", ("profile",)), PROFILE)


class SnippetTest(unittest.TestCase):
    """render_snippet: a hit's line read as inline Markdown, the query's terms marked,
    nothing the line holds ever becoming markup."""

    ALLOWED = {"mark", "strong", "em", "code", "br"}

    def snippet(self, text, query):
        out = mj.render_snippet(text, set(mj.query_terms(query)[0]))
        tags, _ = parse(out)
        self.assertLessEqual({tag for tag, _ in tags}, self.ALLOWED, out)
        for tag, attrs in tags:
            self.assertEqual(attrs, {}, out)
        return out

    def test_inline_markdown_is_rendered_and_its_marks_are_gone(self):
        out = self.snippet("- **Bold** and *soft* and `code` [a link](https://x.org) here",
                           "zzz")
        self.assertEqual(out, "<strong>Bold</strong> and <em>soft</em> and <code>code</code> "
                              "a link here")

    def test_a_heading_or_quote_marker_is_dropped(self):
        self.assertEqual(self.snippet("## The rules", "zzz"), "The rules")
        self.assertEqual(self.snippet("> 1. quoted", "zzz"), "quoted")

    def test_the_query_terms_are_marked_with_their_folded_forms(self):
        out = self.snippet("Rules ruled the RULING rule; a ruler did not.", "rules")
        self.assertEqual(out.count("<mark>"), 4, out)
        self.assertIn("<mark>RULING</mark>", out)
        self.assertIn("ruler", out)
        self.assertNotIn("<mark>ruler</mark>", out)
        self.assertIn("<code><mark>test</mark>s</code>".replace("s</code>", "</code>"),
                      self.snippet("`test` it", "tests"))

    def test_no_markup_is_injected_through_a_snippet(self):
        hostile = ('<script>alert(1)</script> <img src=x onerror=alert(2)> '
                   '[x](javascript:alert(3)) <a href="https://evil">a</a> &lt;b&gt; '
                   '`<script>` **<b>bold</b>**')
        for query in ("script alert", "img onerror", "zzz", "b bold", "lt gt"):
            with self.subTest(query=query):
                out = self.snippet(hostile, query)
                self.assertNotIn("<script", out)
                self.assertNotIn("<img", out)
                self.assertNotIn("<a", out)
                self.assertNotIn("<b>", out)
                # an entity stays as written (a term may be marked inside it)
                self.assertIn("&amp;lt;b&amp;gt;", re.sub("</?mark>", "", out))
                self.assertIn("&lt;", out)
        self.assertIn("&lt;<mark>script</mark>&gt;", self.snippet(hostile, "script"))


# --- the pages of a running serve ----------------------------------------------------------

class Page:
    def __init__(self, status, headers, body):
        self.status, self.headers = status, headers
        self.html = body.decode("utf-8")
        self.tags, self.text = parse(self.html)
        main = re.search(r'<main id="main">(.*)</main>', self.html, re.S)
        self.main = main.group(1) if main else ""

    def links(self):
        return [(href, re.sub(r"<[^>]+>", "", inner)) for href, inner in anchors(self.main)]

    def between(self, start, end):
        """The main's HTML from the first `start` to the next `end` after it."""
        at = self.main.index(start)
        return self.main[at:self.main.index(end, at + len(start))]


class PagesTest(unittest.TestCase):
    """One serve on the layer of tests/pages_layer.py for the whole class."""

    @classmethod
    def setUpClass(cls):
        cls.repo = support.make_repo(support._ClassScope(cls), files=layer.files(),
                                     skeleton=False)
        cls.server = support.HttpServer(cls.repo)
        cls.addClassCleanup(cls.server.stop)

    def get(self, path, status=200):
        got = Page(*self.server.request("GET", path))
        self.assertEqual(got.status, status, got.html[:2000])
        return got

    def object(self, uri):
        return self.get("/ui/object?uri=" + quote(uri, safe=""))

    def test_the_layer_is_clean(self):
        status, value = self.server.get_json("/api/v1/repository")
        self.assertEqual(value["state"], "ok", value["diagnostics"])

    # -- what matters first ---------------------------------------------------------------

    def test_a_rule_leads_with_status_class_and_statement(self):
        page = self.object(layer.GREETING_URI)
        lead = page.between('<div class="lead">', '<h2 id="mj-content">')
        # under the title, before the URI and the content: status, class, statement
        self.assertLess(page.main.index("<h1>"), page.main.index('<div class="lead">'))
        keys = dict(re.findall(r"<dt>([^<]+)</dt><dd>(.*?)</dd>", lead.split("</dl>")[0]))
        self.assertIn(">active</span>", keys["Status"])
        self.assertIn(">advisory</span>", keys["Class"])
        self.assertEqual(keys["Version"], "2")
        self.assertIn('<p class="statement"><span class="label">Statement</span> %s</p>'
                      % layer.GREETING_STATEMENT, lead)
        self.assertLess(lead.index('class="statement"'), lead.index('class="lede"'))

    def test_depends_on_links_there_and_back(self):
        page = self.object(layer.GREETING_URI)
        lead = page.between('<dl class="refs">', "</dl>")
        self.assertIn('<dt>Depends on</dt><dd><a class="ref" href="%s">project.base@1</a>, '
                      'project.nothing@1</dd>' % href(layer.BASE_URI), lead)
        meta = page.between('aria-labelledby="mj-meta"', "</table>")
        self.assertIn('<code>["<a class="ref" href="%s">project.base@1</a>",'
                      '"project.nothing@1"]</code>' % href(layer.BASE_URI), meta)
        back = self.object(layer.BASE_URI)
        self.assertIn('<dt>Depended on by</dt><dd><a href="%s">%s</a></dd>' % (
            href(layer.GREETING_URI), layer.GREETING_TITLE), back.main)
        self.assertIn("Every change carries a test", back.text)
        self.assertIn(layer.BASE_STATEMENT, back.between('class="statement"', "</p>"))

    def test_versions_name_each_other(self):
        page = self.object(layer.GREETING_OLD_URI)
        self.assertIn('<dt>Versions</dt><dd><strong aria-current="true">1</strong>, <a href="'
                      '%s">2</a></dd>' % href(layer.GREETING_URI), page.main)
        self.assertIn(">deprecated</span>", page.between('<dl class="keys">', "</dl>"))

    def test_a_body_links_the_ids_it_names_and_not_the_unknown(self):
        content = self.object(layer.GREETING_URI).between('<div class="content">',
                                                          "<details>")
        found = anchors(content)
        self.assertIn((href(layer.BASE_URI), "<code>project.base</code>"), found)
        self.assertIn((href(layer.BASE_URI), "project.base@1"), found)
        self.assertIn((href(layer.GREETING_OLD_URI), "<code>project.greeting@1</code>"), found)
        self.assertIn((href(layer.BASE_URI), "the base by its URI"), found)
        self.assertIn(("https://example.org/base",
                       "the base rule, with project.base in its text"), found)
        self.assertFalse([a for a in found if "nothing" in a[0] or "nothing" in a[1]], found)
        for word in ("xproject.base", "project.based", "project.base-two", "lib/project.base",
                     "project.nothing,"):
            self.assertIn(word, content)
        self.assertIn('<h2 id="project-base"><a class="ref"', content)

    def test_a_prompt_links_its_profile_and_the_profile_names_it_back(self):
        page = self.object(layer.PROMPT_URI)
        self.assertIn('<dt>Profile</dt><dd><a class="ref" href="%s">steady</a></dd>'
                      % href(layer.PROFILE_URI), page.main)
        self.assertIn((href(layer.BASE_URI), "project.base@1"),
                      anchors(page.between('<div class="content">', "<details>")))
        profile = self.object(layer.PROFILE_URI)
        refs = profile.between('<dl class="refs">', "</dl>")
        self.assertIn('<dt>The profile of</dt><dd><a href="%s">inspect</a></dd>'
                      % href(layer.PROMPT_URI), refs)
        self.assertIn("<dt>The default profile of</dt>", refs)

    def test_an_issue_links_the_issue_it_depends_on(self):
        page = self.object(layer.ISSUE_A_URI)
        self.assertIn('<a class="ref" href="%s">I0102</a>, I0999' % href(layer.ISSUE_B_URI),
                      page.main)
        back = self.object(layer.ISSUE_B_URI)
        self.assertIn('<dt>Depended on by</dt><dd><a href="%s">' % href(layer.ISSUE_A_URI),
                      back.main)

    def test_a_context_document_leads_with_scope_composition_and_its_place(self):
        page = self.object(layer.PROJECT_DOC_URI)
        keys = page.between('<dl class="keys">', "</dl>")
        for label, value in (("Status", ">active</span>"), ("Scope", "subtree"),
                             ("Composition", "extend"), ("Order", "10")):
            self.assertIn("<dt>%s</dt><dd>%s" % (label, value if value[0] != ">" else ""),
                          keys)
            self.assertIn(value, keys)
        chain = page.between("<dt>Chain</dt>", "</dd>")
        self.assertIn("3 of 3 for <code>.ai/repo/rules/project</code>", chain)
        self.assertIn('<a href="%s">ai.repo.rules</a>' % href(layer.RULES_DOC_URI), chain)
        self.assertIn('<strong aria-current="true">ai.repo.rules.project</strong>', chain)
        self.assertIn('href="/ui/context?path=.ai%2Frepo%2Frules%2Fproject"', chain)
        # a relative path in its body is its own folder's neighbour
        self.assertIn((href(layer.RULES_DOC_URI), "<code>../README.md</code>"),
                      anchors(page.between('<div class="content">', "<details>")))
        rules = self.object(layer.RULES_DOC_URI)
        self.assertIn('<dt>Tracks</dt><dd><a class="ref" href="/ui/context?path=lib%2Frules.sh">'
                      'lib/rules.sh</a></dd>', rules.main)

    # -- listings ---------------------------------------------------------------------------

    def test_a_listing_has_the_kinds_key_columns_and_never_wraps_an_identity(self):
        page = self.get("/ui/kind/rule")
        heads = re.findall(r'<th scope="col">(.*?)</th>', page.main)
        self.assertEqual(heads, ["Title, identity and path under <code>.ai/repo/rules/project/"
                                 "</code>", "Status", "Class", "Description"])
        rows = re.findall(r"<tr><td class=\"object\">(.*?)</tr>", page.main)
        self.assertEqual(len(rows), 3)
        base = next(r for r in rows if "project.base@1" in r)
        self.assertIn('<div class="ident"><code>project.base@1</code></div>', base)
        self.assertIn('<span class="seg">base.v1.md</span>', base)
        self.assertIn('<td class="key"><span class="badge key-active">active</span></td>'
                      '<td class="key"><span class="badge key-blocking">blocking</span></td>',
                      base)
        self.assertNotIn("<wbr>", base.split('<div class="path">')[0])
        context = self.get("/ui/kind/context")
        self.assertEqual(re.findall(r'<th scope="col">(.*?)</th>', context.main)[1:],
                         ["Status", "Scope", "Composition", "Order", "Description"])
        # a kind whose identity is its path says it once
        document = self.get("/ui/kind/document")
        self.assertNotIn('class="ident"', document.main)
        self.assertIn("Title, path", document.main)

    def test_the_path_form_is_on_the_overview_and_every_kind_page(self):
        for path in ["/ui/"] + ["/ui/kind/" + k for k in ("rule", "context", "issue")]:
            with self.subTest(path=path):
                page = self.get(path)
                form = page.between('<form class="path-form"', "</form>")
                self.assertIn('action="/ui/context" method="get"', form)
                self.assertIn('<label for="mj-path">Path', form)
                self.assertIn('<input id="mj-path" type="text" name="path" value=""', form)
                self.assertIn('<label for="mj-intent">Intent', form)
                self.assertIn('<input id="mj-intent" type="text" name="intent" value=""', form)

    # -- search -----------------------------------------------------------------------------

    def hits(self, page):
        return re.findall(r'<li><div class="title"><a href="([^"]+)">', page.main)

    def test_search_filters_by_kind_and_counts_hits_by_kind(self):
        every = self.get("/ui/search?q=" + quote("greeting rule base"))
        counts = dict(re.findall(r'<li><a href="[^"]*"(?: aria-current="true")?>([^<]+) '
                                 r'<span class="count">(\d+)</span>', every.main))
        status, api = self.server.get_json("/api/v1/search?query=" + quote("greeting rule base")
                                           + "&limit=200")
        kinds = {}
        for hit in api["hits"]:
            kinds[hit["kind"]] = kinds.get(hit["kind"], 0) + 1
        self.assertEqual({k: int(v) for k, v in counts.items() if k != "every kind"}, kinds)
        self.assertEqual(int(counts["every kind"]), api["total"])
        self.assertGreater(len(kinds), 1, kinds)
        self.assertIn('aria-current="true">every kind', every.main)
        only = self.get("/ui/search?q=%s&kind=rule" % quote("greeting rule base"))
        found = self.hits(only)
        self.assertEqual(len(found), kinds["rule"])
        self.assertTrue(all("%2Frule%2F" in h for h in found), found)
        self.assertIn('<option value="rule" selected>rule</option>', only.main)
        self.assertIn('aria-current="true">rule <span class="count">', only.main)
        self.assertIn("among the objects of kind rule", only.main)
        # the API's own parameter name works on the page too
        same = self.get("/ui/search?query=%s&kind=rule" % quote("greeting rule base"))
        self.assertEqual(self.hits(same), found)
        self.get("/ui/search?q=greeting&kind=nonesuch", 400)

    def test_search_scores_have_two_decimals_and_snippets_mark_the_terms(self):
        page = self.get("/ui/search?q=salutation")
        self.assertEqual(self.hits(page), [href(layer.GREETING_URI)])
        scores = re.findall(r"score ([0-9.]+)</div>", page.main)
        self.assertTrue(scores and all(re.fullmatch(r"\d+\.\d\d", s) for s in scores), scores)
        page = self.get("/ui/search?q=" + quote("test failed"))
        snippets = re.findall(r'<p class="snippet">(.*?)</p>', page.main)
        self.assertIn("A <mark>test</mark> that never <mark>failed</mark> proves nothing.",
                      snippets)

    def test_search_pages_keep_the_kind(self):
        files = {".ai/repo/rules/project/r%02d.v1.md" % n: (
            "---\nid: project.r%02d\nversion: 1\nkind: rule\ntitle: Rule %d\nstatus: active\n"
            "---\n\nA many rule.\n" % (n, n)) for n in range(25)}
        repo = support.make_repo(self, files=layer.files(files), skeleton=False)
        server = support.HttpServer(repo)
        self.addCleanup(server.stop)
        first = Page(*server.request("GET", "/ui/search?q=many&kind=rule"))
        more = re.search(r'<a rel="next" href="([^"]+)">', first.main)
        self.assertTrue(more, first.main[-2000:])
        self.assertIn("&amp;kind=rule&amp;cursor=", more.group(1))
        second = Page(*server.request("GET", more.group(1).replace("&amp;", "&")))
        self.assertEqual(second.status, 200)
        self.assertEqual(len(self.hits(first)) + len(self.hits(second)), 25)

    def test_a_snippet_cut_inside_emphasis_shows_no_raw_marker(self):
        """§29: a snippet is cut at 200 characters; cut inside `**bold**`, `*emphasis*` or
        a code span, the page closes it instead of showing the marker."""
        line = ("Zymurgy " + "word " * 37 + "**a bold stretch of zymurgy that runs past the "
                "cut at two hundred characters** and `a code span` after it.")
        files = {".ai/repo/rules/project/cut.v1.md": (
            "---\nid: project.cut\nversion: 1\nkind: rule\ntitle: Cut\nstatus: active\n"
            "---\n\n%s\n" % line)}
        repo = support.make_repo(self, files=layer.files(files), skeleton=False)
        server = support.HttpServer(repo)
        self.addCleanup(server.stop)
        status, value = server.get_json("/api/v1/search?query=zymurgy")
        snippet = value["hits"][0]["snippet"]
        self.assertEqual(len(snippet), 200)
        self.assertEqual(snippet.count("**"), 1)          # the answer is the line as written
        page = Page(*server.request("GET", "/ui/search?q=zymurgy"))
        shown = page.between('<p class="snippet">', "</p>")
        self.assertNotIn("*", re.sub(r"<[^>]+>", "", shown))
        self.assertTrue(shown.endswith("<strong>a bol</strong>\u2026"), shown)

    # -- capabilities -----------------------------------------------------------------------

    def test_capability_ids_read_plainly_and_every_resource_says_how_it_is_read(self):
        page = self.get("/ui/capabilities")
        self.assertNotIn("document..ai", page.text)
        row = page.between('<span class="badge">document</span>', "</tbody>")
        self.assertIn('<td class="ident"><code>.ai/repo/workflows/guide.md</code></td>', row)
        self.assertIn('<a href="%s">The review guide</a>' % href(layer.GUIDE_URI), row)
        self.assertIn("<code>majordomus get %s</code>" % layer.GUIDE_URI, row)
        self.assertIn("<code>GET /api/v1/object?uri=%s</code>" % quote(layer.GUIDE_URI,
                                                                       safe=""), row)
        prompt = page.between('<span class="badge">prompt</span>', "</tbody>")
        self.assertIn("<code>majordomus prompt inspect</code>", prompt)
        self.assertIn("<code>prompts/get inspect</code>", prompt)
        resources = page.between('id="mj-declarative"', "</table>")
        self.assertEqual(resources.count("majordomus get "), 13)
        self.assertNotIn("<td>-</td>", page.main)
        builtin = page.between('id="mj-builtin"', "</table>")
        self.assertIn("<td><code>majordomus context resolve</code></td>", builtin)
        self.assertIn('<span class="none">none</span>', builtin)   # objects.list has no CLI

    # -- what governs a path ----------------------------------------------------------------

    def context(self, path, status=200):
        return self.get("/ui/context?path=" + quote(path, safe=""), status)

    def chain(self, page):
        return re.findall(r'<li><div class="title"><a href="[^"]+">[^<]+</a> <code>([^<]+)'
                          r'</code></div>.*?<p class="why">Applies: ([^<]+)</p>', page.main)

    def test_the_context_page_explains_the_chain_of_a_path(self):
        page = self.context(".ai/repo/rules/project/greeting.v2.md")
        self.assertIn("What governs .ai/repo/rules/project/greeting.v2.md", page.text)
        self.assertEqual(self.chain(page), [
            ("ai.layer", "ancestor at depth 0 (scope subtree)"),
            ("ai.repo.rules", "ancestor at depth 2 (scope subtree)"),
            ("ai.repo.rules.project", "the target directory (scope subtree)")])
        self.assertIn('value=".ai/repo/rules/project/greeting.v2.md"', page.main)
        status, value = self.server.get_json(
            "/api/v1/context?path=.ai/repo/rules/project/greeting.v2.md")
        self.assertIn(value["fingerprint"], page.main)
        self.assertIn("Nothing: every candidate applies.", page.text)
        outside = self.context("lib/rules.sh")
        self.assertEqual(self.chain(outside), [
            ("ai.layer", "the tree root; the target is outside .ai/"),
            ("ai.repo.rules", "tracks lib/rules.sh")])

    def test_the_context_page_says_what_was_left_out(self):
        page = self.context(".ai/repo/workflows")
        self.assertEqual(self.chain(page), [("ai.layer", "ancestor at depth 0 (scope subtree)")])
        left = page.between('<ul class="left-out">', "</ul>")
        self.assertIn("<code>ai.repo.workflows</code>", left)
        self.assertIn("deprecated; discovered and never applied", left)

    def test_the_context_page_refuses_as_the_brief_does(self):
        refused = self.context("../x", 422)
        self.assertIn("refused: refused-path '../x'", refused.text)
        self.assertIn("No brief", refused.text)
        self.assertIn("unknown-provider", self.get(
            "/ui/context?path=lib%2Frules.sh&provider=nonesuch", 400).text)
        empty = self.get("/ui/context")
        self.assertIn('<input id="mj-path" type="text" name="path" value=""', empty.main)
        # the brief's own address is the same page
        same = self.get("/ui/brief?path=lib%2Frules.sh")
        self.assertEqual(same.main, self.context("lib/rules.sh").main)

    def test_the_context_page_of_a_new_file(self):
        page = self.context(".ai/repo/rules/project/new.v1.md?")
        self.assertIn("a new file (nothing exists there yet)", page.text)
        self.assertIn("not found: no such path in the repository: .ai/repo/rules/project/"
                      "new.v1.md?: a file created there would have this chain.", page.text)
        self.assertEqual(self.chain(page), [
            ("ai.layer", "ancestor at depth 0 (scope subtree)"),
            ("ai.repo.rules", "ancestor at depth 2 (scope subtree)"),
            ("ai.repo.rules.project", "the target directory (scope subtree)")])
        brief = page.between('<section class="brief"', "</section>")
        self.assertIn(layer.BASE_TITLE, brief)                      # a rule in force
        # the brief's documents link what they name, as every page does
        self.assertIn('<a class="ref" href="%s"><code>project.base</code></a>'
                      % href(layer.BASE_URI), page.main)
        self.assertIn('<a class="ref" href="%s"><code>../README.md</code></a>'
                      % href(layer.RULES_DOC_URI), brief)   # relative to its own document
        self.assertIn('named by <a href="%s">ai.repo.rules</a>' % href(layer.RULES_DOC_URI),
                      brief)
        status, value = self.server.get_json(
            "/api/v1/brief?path=" + quote(".ai/repo/rules/project/new.v1.md?", safe=""))
        self.assertIn(value["fingerprint"], page.between('class="explain"', "</section>"))
        intent = self.get("/ui/context?path=%s&intent=%s" % (
            quote(".ai/repo/rules/project/new.v1.md"), quote("a salutation for reviews")))
        self.assertIn('value="a salutation for reviews"', intent.main)
        # §29: the intent ranks the rules: the one on greeting is chosen, with its statement
        chosen = intent.between('id="mj-brief-rules"', "</ul>")
        self.assertIn("Greet every contributor", chosen)
        self.assertIn("relevant to this path and intent", chosen)

    def test_the_context_page_explains_a_tree_that_does_not_validate(self):
        broken = layer.context_doc("ai.repo.rules.project", "Project rules",
                                   extra="tracks: [lib/gone.sh]\n")
        repo = support.make_repo(self, files=layer.files({layer.PATHS["project"]: broken}),
                                 skeleton=False)
        server = support.HttpServer(repo)
        self.addCleanup(server.stop)
        page = Page(*server.request("GET", "/ui/context?path=lib%2Frules.sh"))
        self.assertEqual(page.status, 200)
        alert = page.between('<section class="explain alert"', "</section>")
        self.assertIn("The context tree does not validate", alert)
        self.assertIn("refused: the context tree does not validate (1 problem(s)); nothing is "
                      "resolved partially", alert)
        self.assertIn('<a href="#mj-brief-problems">The problems</a> are listed in the brief '
                      "(those of this path's chain; the others on the page of <a href="
                      '"/ui/diagnostics">every diagnostic</a>)', alert)
        # beside the refusal, the chain the brief resolved over the documents the index holds
        self.assertEqual(self.chain(page), [
            ("ai.layer", "the tree root; the target is outside .ai/"),
            ("ai.repo.rules", "tracks lib/rules.sh")])
        self.assertIn("The chain the brief resolved over the documents the index holds",
                      page.text)
        # §29: the brief lists the problems of this path's chain; this one is another's
        problems = page.between('id="mj-brief-problems"', "</section>")
        self.assertIn("1 other problem(s) in the layer", problems)
        self.assertNotIn("lib/gone.sh", problems)
        self.assertIn('href="/ui/diagnostics"', problems)
        doc = Page(*server.request("GET", "/ui/object?uri=" + quote(layer.PROJECT_DOC_URI,
                                                                     safe="")))
        self.assertIn("not resolved: the context tree does not validate",
                      doc.between("<dt>Chain</dt>", "</dd>"))

    def test_hostile_names_stay_text_on_every_new_part(self):
        hostile = ('---\nid: project.hostile\nversion: 1\nkind: rule\ntitle: "<script>alert(1)'
                   '</script>"\nstatement: "<img src=x onerror=alert(2)>"\nstatus: "<b>on</b>"\n'
                   'class: "x\\" onmouseover=\\"alert(3)"\ndepends_on: ["<script>alert(4)'
                   '</script>", "javascript:alert(5)"]\n---\n\n`<script>alert(6)</script>` '
                   'project.base@1<script>alert(7)</script>\n')
        repo = support.make_repo(self, files=layer.files(
            {".ai/repo/rules/project/hostile.v1.md": hostile}), skeleton=False)
        server = support.HttpServer(repo)
        self.addCleanup(server.stop)
        for path in ("/ui/object?uri=" + quote("majordomus://rule/project.hostile@1", safe=""),
                     "/ui/kind/rule", "/ui/search?q=alert+onerror", "/ui/search?q=alert&kind=rule",
                     "/ui/capabilities", "/ui/context?path=%3Cscript%3E"):
            with self.subTest(path=path):
                page = Page(*server.request("GET", path))
                tags = {tag for tag, _ in page.tags}
                self.assertNotIn("img", tags)
                self.assertEqual([a for _, a in page.tags if any(
                    k.startswith("on") for k in a)], [])
                self.assertEqual([a for t, a in page.tags if t == "script"],
                                 [{"src": "/ui/static/live.js", "defer": None}])
                self.assertNotIn("javascript:", " ".join(
                    a.get("href") or "" for _, a in page.tags))


if __name__ == "__main__":
    unittest.main()
