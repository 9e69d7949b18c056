"""The Markdown renderer of the pages (SPEC §22, majordomus.render_markdown): one test per
construct, per escaping case and per refused link form, pathological inputs bounded in
time, and fuzzed documents audited for tags and attributes of the renderer's own."""

import html.parser
import random
import re
import subprocess
import sys
import time
import unittest

from tests import support

import majordomus as mdrender
from majordomus import render_markdown as md


def esc(text):
    """What every input character that reaches the output must look like."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


def para(inner):
    return "<p>%s</p>\n" % inner


# What the renderer may emit: its own tags and attributes, nothing else.
TAGS = {"h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "em", "strong", "code", "pre",
        "ul", "ol", "li", "blockquote", "a", "hr", "div", "table", "thead", "tbody",
        "tr", "th", "td"}
ATTRIBUTES = {"id", "href", "title", "rel", "class", "start", "style"}
STYLES = {"text-align:left", "text-align:center", "text-align:right"}
OWN_TAG = re.compile(r'</?[a-z0-9]+(?: [a-z]+="[^"<>\']*")*>')
ENTITY = re.compile(r"&(?:amp|lt|gt|quot|#39);")


class TagAudit(html.parser.HTMLParser):
    """The tags of a fragment with their attributes, and any comment, declaration or
    processing instruction (none may come out of the renderer); tests/fuzz.py uses it too."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_comment(self, data):
        self.tags.append(("<!--", {}))

    def handle_decl(self, decl):
        self.tags.append(("<!", {}))

    def handle_pi(self, data):
        self.tags.append(("<?", {}))


class Case(unittest.TestCase):
    def assertSafe(self, out):
        """Only the renderer's own tags and attributes, and only allowed link targets."""
        audit = TagAudit()
        audit.feed(out)
        audit.close()
        for tag, attrs in audit.tags:
            self.assertIn(tag, TAGS, out[:500])
            self.assertLessEqual(set(attrs), ATTRIBUTES, out[:500])
            if "style" in attrs:
                self.assertIn(attrs["style"], STYLES)
            if "class" in attrs:
                self.assertTrue(attrs["class"] in ("image", "table-wrap")
                                or attrs["class"].startswith("language-"))
            if "rel" in attrs:
                self.assertEqual(attrs["rel"], "noopener noreferrer")
            if "href" in attrs:
                href = attrs["href"]
                head = href.split("/")[0].split("?")[0].split("#")[0]
                if ":" in head:
                    self.assertIn(head.split(":")[0].lower(), ("http", "https", "mailto"))
                self.assertFalse(href.replace("\\", "/").startswith("//"), href)
                self.assertTrue(href.isprintable() and " " not in href, repr(href))

    def assertRefused(self, source):
        """The whole link is shown as written, escaped, and nothing is linked."""
        out = md(source)
        self.assertEqual(out, para(esc(source)))
        self.assertNotIn("<a", out)
        self.assertSafe(out)

    def assertQuick(self, source, limit=30.0):
        """Bounded on hostile input: each of these renders in well under a second here, and a
        quadratic path would take minutes, so the generous limit is a hang guard that a
        loaded CI machine cannot trip (tests/bench.py is where speed is measured)."""
        start = time.perf_counter()
        out = md(source)
        elapsed = time.perf_counter() - start
        self.assertIsInstance(out, str)
        self.assertLess(elapsed, limit, "took %.2f s" % elapsed)
        self.assertSafe(out)
        return out


class Headings(Case):
    def test_levels_one_to_six(self):
        self.assertEqual(md("# a\n## b\n### c\n#### d\n##### e\n###### f"),
                         '<h1 id="a">a</h1>\n<h2 id="b">b</h2>\n<h3 id="c">c</h3>\n'
                         '<h4 id="d">d</h4>\n<h5 id="e">e</h5>\n<h6 id="f">f</h6>\n')

    def test_seven_hashes_is_text(self):
        self.assertEqual(md("####### seven"), para("####### seven"))

    def test_hash_without_space_is_text(self):
        self.assertEqual(md("#hashtag"), para("#hashtag"))

    def test_closing_hashes_stripped(self):
        self.assertEqual(md("## Title ###"), '<h2 id="title">Title</h2>\n')

    def test_closing_hashes_need_a_space(self):
        self.assertEqual(md("# C#"), '<h1 id="c">C#</h1>\n')

    def test_escaped_closing_hash_kept(self):
        self.assertEqual(md("# a \\#"), '<h1 id="a">a #</h1>\n')

    def test_inline_in_heading(self):
        self.assertEqual(md("# The *big* `x`"),
                         '<h1 id="the-big-x">The <em>big</em> <code>x</code></h1>\n')

    def test_slug_letters_digits_hyphens(self):
        self.assertEqual(md("# Hello, World! 2.0 (beta)"),
                         '<h1 id="hello-world-2-0-beta">Hello, World! 2.0 (beta)</h1>\n')

    def test_slug_folds_accents(self):
        self.assertEqual(md("# Über Café"), '<h1 id="uber-cafe">Über Café</h1>\n')

    def test_slug_without_letters(self):
        self.assertEqual(md("# 日本語\n# !!!"),
                         '<h1 id="section">日本語</h1>\n<h1 id="section-2">!!!</h1>\n')

    def test_slugs_deduplicated(self):
        out = md("# A\n# A\n# A\n# A 2")
        self.assertEqual(out, '<h1 id="a">A</h1>\n<h1 id="a-2">A</h1>\n'
                              '<h1 id="a-3">A</h1>\n<h1 id="a-2-2">A 2</h1>\n')

    def test_slug_ignores_markup_and_entities(self):
        self.assertEqual(md("# a & <b>"), '<h1 id="a-b">a &amp; &lt;b&gt;</h1>\n')


class Paragraphs(Case):
    def test_empty_input(self):
        self.assertEqual(md(""), "")
        self.assertEqual(md(" \n\n  \n"), "")

    def test_paragraphs(self):
        self.assertEqual(md("one\ntwo\n\nthree"), "<p>one\ntwo</p>\n<p>three</p>\n")

    def test_two_spaces_break(self):
        self.assertEqual(md("a  \nb"), para("a<br>\nb"))

    def test_backslash_break(self):
        self.assertEqual(md("a\\\nb"), para("a<br>\nb"))

    def test_one_space_is_no_break(self):
        self.assertEqual(md("a \nb"), para("a \nb"))

    def test_trailing_break_at_end_ignored(self):
        self.assertEqual(md("a  "), para("a"))

    def test_crlf_and_cr(self):
        self.assertEqual(md("# t\r\n\r\na\r\nb\rc"), md("# t\n\na\nb\nc"))

    def test_nul_replaced(self):
        self.assertEqual(md("a\0b"), para("a\ufffdb"))

    def test_deterministic(self):
        source = "# a\n# a\n\n- *x* [l](https://e.x)\n\n| a |\n|:-:|\n| b |\n"
        self.assertEqual(md(source), md(source))

    def test_leading_indent_of_continuation_dropped(self):
        self.assertEqual(md("a\n    b"), para("a\nb"))


class Emphasis(Case):
    def test_star_em(self):
        self.assertEqual(md("*em*"), para("<em>em</em>"))

    def test_underscore_em(self):
        self.assertEqual(md("_em_"), para("<em>em</em>"))

    def test_star_strong(self):
        self.assertEqual(md("**x**"), para("<strong>x</strong>"))

    def test_underscore_strong(self):
        self.assertEqual(md("__x__"), para("<strong>x</strong>"))

    def test_strong_and_em(self):
        self.assertEqual(md("***x***"), para("<em><strong>x</strong></em>"))

    def test_nested(self):
        self.assertEqual(md("*a **b** c*"), para("<em>a <strong>b</strong> c</em>"))

    def test_no_intraword_underscore(self):
        self.assertEqual(md("snake_case_name and __init__x"),
                         para("snake_case_name and __init__x"))

    def test_intraword_star(self):
        self.assertEqual(md("un*frigging*believable"),
                         para("un<em>frigging</em>believable"))

    def test_unmatched_is_literal(self):
        self.assertEqual(md("a * b and *c"), para("a * b and *c"))

    def test_crossing_spans(self):
        self.assertEqual(md("*a _b* c_"), para("<em>a _b</em> c_"))

    def test_backslash_escapes(self):
        self.assertEqual(md("\\*not em\\* \\_ \\\\ \\a"), para("*not em* _ \\ \\a"))


class CodeSpans(Case):
    def test_code_span(self):
        self.assertEqual(md("`x`"), para("<code>x</code>"))

    def test_contents_escaped(self):
        self.assertEqual(md("`<b>&\"'`"), para("<code>&lt;b&gt;&amp;&quot;&#39;</code>"))

    def test_nothing_processed_inside(self):
        self.assertEqual(md("`*a* [l](https://x) \\* <https://x>`"),
                         para("<code>*a* [l](https://x) \\* &lt;https://x&gt;</code>"))

    def test_backtick_runs(self):
        self.assertEqual(md("`` a`b ``"), para("<code>a`b</code>"))

    def test_unmatched_run_is_literal(self):
        self.assertEqual(md("``a`"), para("``a`"))

    def test_newline_becomes_space(self):
        self.assertEqual(md("`a\nb`"), para("<code>a b</code>"))


class FencedCode(Case):
    def test_backticks(self):
        self.assertEqual(md("```\na\n  b\n```"), "<pre><code>a\n  b\n</code></pre>\n")

    def test_tildes(self):
        self.assertEqual(md("~~~\na\n~~~"), "<pre><code>a\n</code></pre>\n")

    def test_language_class(self):
        self.assertEqual(md("```python extra words\nx\n```"),
                         '<pre><code class="language-python">x\n</code></pre>\n')

    def test_language_escaped(self):
        self.assertEqual(md('~~~ "><script>\nx\n~~~'),
                         '<pre><code class="language-&quot;&gt;&lt;script&gt;">x\n</code></pre>\n')

    def test_contents_escaped_not_processed(self):
        self.assertEqual(md("```\n<script>*x*</script> &\n```"),
                         "<pre><code>&lt;script&gt;*x*&lt;/script&gt; &amp;\n</code></pre>\n")

    def test_closing_fence_at_least_as_long(self):
        self.assertEqual(md("````\n```\n`````"), "<pre><code>```\n</code></pre>\n")

    def test_closing_fence_same_character(self):
        self.assertEqual(md("```\n~~~\n```"), "<pre><code>~~~\n</code></pre>\n")

    def test_unclosed_fence_runs_to_end(self):
        self.assertEqual(md("```\na\n\n# not a heading\n"),
                         "<pre><code>a\n\n# not a heading\n</code></pre>\n")

    def test_fence_indent_removed(self):
        self.assertEqual(md("  ```\n  a\n    b\n  ```"), "<pre><code>a\n  b\n</code></pre>\n")

    def test_backtick_info_with_backtick_is_text(self):
        self.assertEqual(md("``` a`b"), para("``` a`b"))

    def test_fence_interrupts_paragraph(self):
        self.assertEqual(md("a\n```\nb\n```"), "<p>a</p>\n<pre><code>b\n</code></pre>\n")


class IndentedCode(Case):
    def test_indented_code_supported(self):
        self.assertEqual(md("    <b>\n\n    more\n\n\nafter"),
                         "<pre><code>&lt;b&gt;\n\nmore\n</code></pre>\n<p>after</p>\n")

    def test_tab_indent(self):
        self.assertEqual(md("\tx = 1"), "<pre><code>x = 1\n</code></pre>\n")


class Lists(Case):
    def test_dash(self):
        self.assertEqual(md("- a\n- b"), "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n")

    def test_star(self):
        self.assertEqual(md("* a\n* b"), "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n")

    def test_plus(self):
        self.assertEqual(md("+ a\n+ b"), "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n")

    def test_ordered_dot(self):
        self.assertEqual(md("1. a\n2. b"), "<ol>\n<li>a</li>\n<li>b</li>\n</ol>\n")

    def test_ordered_paren(self):
        self.assertEqual(md("1) a\n2) b"), "<ol>\n<li>a</li>\n<li>b</li>\n</ol>\n")

    def test_start_attribute(self):
        self.assertEqual(md("3. a\n4. b"), '<ol start="3">\n<li>a</li>\n<li>b</li>\n</ol>\n')
        self.assertEqual(md("0) a"), '<ol start="0">\n<li>a</li>\n</ol>\n')

    def test_nested_by_indentation(self):
        self.assertEqual(md("- a\n  - b\n    1. c\n- d"),
                         "<ul>\n<li>a\n<ul>\n<li>b\n<ol>\n<li>c</li>\n</ol></li>\n</ul></li>\n"
                         "<li>d</li>\n</ul>\n")

    def test_several_paragraphs_in_item(self):
        self.assertEqual(md("1. a\n\n   b\n2. c"),
                         "<ol>\n<li><p>a</p>\n<p>b</p></li>\n<li><p>c</p></li>\n</ol>\n")

    def test_code_in_item(self):
        self.assertEqual(md("- a\n\n  ```sh\n  run <x>\n  ```\n- b"),
                         '<ul>\n<li><p>a</p>\n<pre><code class="language-sh">run &lt;x&gt;\n'
                         '</code></pre></li>\n<li><p>b</p></li>\n</ul>\n')

    def test_loose_list(self):
        self.assertEqual(md("- a\n\n- b"), "<ul>\n<li><p>a</p></li>\n<li><p>b</p></li>\n</ul>\n")

    def test_lazy_continuation(self):
        self.assertEqual(md("- a\nb\n- c"), "<ul>\n<li>a\nb</li>\n<li>c</li>\n</ul>\n")

    def test_other_marker_starts_other_list(self):
        self.assertEqual(md("- a\n* b"), "<ul>\n<li>a</li>\n</ul>\n<ul>\n<li>b</li>\n</ul>\n")

    def test_number_not_one_does_not_interrupt_paragraph(self):
        self.assertEqual(md("In\n2024. we shipped"), para("In\n2024. we shipped"))

    def test_list_interrupts_paragraph(self):
        self.assertEqual(md("Items:\n- a"), "<p>Items:</p>\n<ul>\n<li>a</li>\n</ul>\n")

    def test_empty_item(self):
        self.assertEqual(md("-\n- b"), "<ul>\n<li></li>\n<li>b</li>\n</ul>\n")


class BlockQuotes(Case):
    def test_quote(self):
        self.assertEqual(md("> a\n> b"), "<blockquote>\n<p>a\nb</p>\n</blockquote>\n")

    def test_nested(self):
        self.assertEqual(md("> a\n>> b"), "<blockquote>\n<p>a</p>\n<blockquote>\n<p>b</p>\n"
                                          "</blockquote>\n</blockquote>\n")

    def test_holds_any_block(self):
        self.assertEqual(md("> # h\n> - i\n>\n> ```\n> c\n> ```"),
                         '<blockquote>\n<h1 id="h">h</h1>\n<ul>\n<li>i</li>\n</ul>\n'
                         "<pre><code>c\n</code></pre>\n</blockquote>\n")

    def test_lazy_continuation(self):
        self.assertEqual(md("> a\nb\n\nc"), "<blockquote>\n<p>a\nb</p>\n</blockquote>\n"
                                            "<p>c</p>\n")

    def test_quote_in_list(self):
        self.assertEqual(md("- > q"), "<ul>\n<li><blockquote>\n<p>q</p>\n</blockquote></li>\n"
                                      "</ul>\n")


class Tables(Case):
    def test_table(self):
        self.assertEqual(md("| a | b |\n|---|---|\n| 1 | 2 |"),
                         '<div class="table-wrap"><table>\n<thead>\n<tr><th>a</th><th>b</th>'
                         '</tr>\n</thead>\n<tbody>\n<tr><td>1</td><td>2</td></tr>\n</tbody>\n'
                         '</table></div>\n')

    def test_alignment(self):
        out = md("| l | c | r | n |\n|:--|:-:|--:|---|\n| 1 | 2 | 3 | 4 |")
        self.assertIn('<th style="text-align:left">l</th><th style="text-align:center">c'
                      '</th><th style="text-align:right">r</th><th>n</th>', out)
        self.assertIn('<td style="text-align:left">1</td><td style="text-align:center">2'
                      '</td><td style="text-align:right">3</td><td>4</td>', out)

    def test_without_outer_pipes(self):
        self.assertEqual(md("a|b\n-|-\nc|d"),
                         '<div class="table-wrap"><table>\n<thead>\n<tr><th>a</th><th>b</th>'
                         '</tr>\n</thead>\n<tbody>\n<tr><td>c</td><td>d</td></tr>\n</tbody>\n'
                         '</table></div>\n')

    def test_header_only(self):
        self.assertEqual(md("| a |\n|---|"), '<div class="table-wrap"><table>\n<thead>\n'
                                            '<tr><th>a</th></tr>\n</thead>\n</table></div>\n')

    def test_inline_in_cells(self):
        out = md("| *a* | `b\\|c` |\n|---|---|\n| [l](https://x) | d \\| e |")
        self.assertIn("<th><em>a</em></th><th><code>b|c</code></th>", out)
        self.assertIn('<td><a href="https://x" rel="noopener noreferrer">l</a></td>'
                      '<td>d | e</td>', out)

    def test_rows_fit_the_header(self):
        out = md("| a | b |\n|---|---|\n| 1 |\n| 1 | 2 | 3 |")
        self.assertIn("<tr><td>1</td><td></td></tr>\n<tr><td>1</td><td>2</td></tr>", out)

    def test_cells_escaped(self):
        self.assertIn('<td>&lt;b onclick=&quot;x&quot;&gt;</td>',
                      md('| a |\n|---|\n| <b onclick="x"> |'))

    def test_unescaped_pipe_in_code_splits_cells(self):     # as GitHub
        self.assertEqual(md("| `a|b` |\n|---|"), para("| <code>a|b</code> |\n|---|"))

    def test_mismatched_delimiter_is_text(self):
        self.assertEqual(md("| a |\n|---|---|"), para("| a |\n|---|---|"))

    def test_table_ends_at_blank_line(self):
        self.assertTrue(md("| a |\n|---|\n| 1 |\n\nafter").endswith("</table></div>\n"
                                                                    "<p>after</p>\n"))

    def test_style_never_from_input(self):
        out = md('| a |\n|:-:|\n| b |\n\n<p style="color:red">x</p>')
        self.assertEqual(out.count('style="'), 2)
        self.assertIn("&lt;p style=&quot;color:red&quot;&gt;", out)
        self.assertSafe(out)


class Rules(Case):
    def test_dashes(self):
        self.assertEqual(md("---"), "<hr>\n")

    def test_stars(self):
        self.assertEqual(md("***"), "<hr>\n")

    def test_underscores(self):
        self.assertEqual(md("___"), "<hr>\n")

    def test_spaced(self):
        self.assertEqual(md("- - -\n * * *"), "<hr>\n<hr>\n")

    def test_two_is_text(self):
        self.assertEqual(md("--"), para("--"))

    def test_rule_between_paragraphs(self):
        self.assertEqual(md("a\n***\nb"), "<p>a</p>\n<hr>\n<p>b</p>\n")


class Links(Case):
    def test_link(self):
        self.assertEqual(md("[text](https://example.com/a?b=c#d)"),
                         para('<a href="https://example.com/a?b=c#d" '
                              'rel="noopener noreferrer">text</a>'))

    def test_title_double_quotes(self):
        self.assertEqual(md('[t](https://x "The title")'),
                         para('<a href="https://x" title="The title" '
                              'rel="noopener noreferrer">t</a>'))

    def test_title_single_quotes(self):
        self.assertEqual(md("[t](https://x 'T')"),
                         para('<a href="https://x" title="T" rel="noopener noreferrer">t</a>'))

    def test_inline_in_text(self):
        self.assertEqual(md("[*a* `b`](/p)"), para('<a href="/p"><em>a</em> <code>b</code></a>'))

    def test_no_link_inside_link_text(self):
        self.assertEqual(md("[see <https://y>](/p)"),
                         para('<a href="/p">see &lt;https://y&gt;</a>'))

    def test_parentheses_in_target(self):
        self.assertEqual(md("[w](https://w.org/A_(b))"),
                         para('<a href="https://w.org/A_(b)" rel="noopener noreferrer">w</a>'))

    def test_http(self):
        self.assertEqual(md("[a](http://x)"),
                         para('<a href="http://x" rel="noopener noreferrer">a</a>'))

    def test_mailto(self):
        self.assertEqual(md("[a](mailto:a@b.c)"),
                         para('<a href="mailto:a@b.c" rel="noopener noreferrer">a</a>'))

    def test_scheme_case_insensitive(self):
        self.assertEqual(md("[a](HTTPS://X)"),
                         para('<a href="HTTPS://X" rel="noopener noreferrer">a</a>'))

    def test_relative_path(self):
        self.assertEqual(md("[a](docs/a.md)"), para('<a href="docs/a.md">a</a>'))

    def test_relative_parent(self):
        self.assertEqual(md("[a](../x)"), para('<a href="../x">a</a>'))

    def test_relative_fragment(self):
        self.assertEqual(md("[a](#frag)"), para('<a href="#frag">a</a>'))

    def test_relative_query(self):
        self.assertEqual(md("[a](?q=1)"), para('<a href="?q=1">a</a>'))

    def test_relative_absolute_path(self):
        self.assertEqual(md("[a](/path)"), para('<a href="/path">a</a>'))

    def test_colon_after_slash_query_or_fragment_is_relative(self):
        self.assertEqual(md("[a](docs/a:b.md) [b](?x=a:b) [c](#a:b)"),
                         para('<a href="docs/a:b.md">a</a> <a href="?x=a:b">b</a> '
                              '<a href="#a:b">c</a>'))

    def test_trailing_space_in_parentheses(self):
        self.assertEqual(md("[a](/p )"), para('<a href="/p">a</a>'))

    def test_autolink(self):
        self.assertEqual(md("<https://x.org/a>"),
                         para('<a href="https://x.org/a" rel="noopener noreferrer">'
                              'https://x.org/a</a>'))

    def test_autolink_mailto(self):
        self.assertEqual(md("<mailto:a@b.c>"),
                         para('<a href="mailto:a@b.c" rel="noopener noreferrer">mailto:a@b.c</a>'))

    def test_bracket_text_without_target(self):
        self.assertEqual(md("[a] and [b] (c)"), para("[a] and [b] (c)"))

    def test_escaped_bracket_is_no_link(self):
        self.assertEqual(md("\\[a](/p)"), para("[a](/p)"))


class Images(Case):
    def test_image_becomes_link(self):
        self.assertEqual(md("![A cat](img/cat.png)"),
                         para('<a href="img/cat.png" class="image">A cat</a>'))

    def test_image_with_scheme_and_title(self):
        self.assertEqual(md('![a](https://x/i.png "T")'),
                         para('<a href="https://x/i.png" title="T" class="image" '
                              'rel="noopener noreferrer">a</a>'))

    def test_image_without_alt_shows_target(self):
        self.assertEqual(md("![](i.png)"), para('<a href="i.png" class="image">i.png</a>'))

    def test_image_never_loaded(self):
        self.assertNotIn("<img", md("![a](i.png) ![b](https://x/i.png)"))

    def test_alt_is_text(self):
        self.assertEqual(md("![*a* <b>](i.png)"),
                         para('<a href="i.png" class="image">*a* &lt;b&gt;</a>'))

    def test_refused_image_javascript(self):
        self.assertRefused("![x](javascript:alert(1))")

    def test_refused_image_data(self):
        self.assertRefused("![x](data:image/svg+xml;base64,PHN2Zz4=)")


class Escaping(Case):
    def test_text(self):
        self.assertEqual(md("a & b < c > d \" e ' f"),
                         para("a &amp; b &lt; c &gt; d &quot; e &#39; f"))

    def test_entities_not_decoded(self):
        self.assertEqual(md("&copy; &amp; &#60;"), para("&amp;copy; &amp;amp; &amp;#60;"))

    def test_heading_text(self):
        self.assertEqual(md("# <i>&'"), '<h1 id="i">&lt;i&gt;&amp;&#39;</h1>\n')

    def test_url_attribute(self):
        self.assertEqual(md('[a](https://x/"><script>&)'),
                         para('<a href="https://x/&quot;&gt;&lt;script&gt;&amp;" '
                              'rel="noopener noreferrer">a</a>'))

    def test_autolink_url(self):
        self.assertEqual(md('<https://x/?a=1&b="2\'>'),
                         para('<a href="https://x/?a=1&amp;b=&quot;2&#39;" '
                              'rel="noopener noreferrer">https://x/?a=1&amp;b=&quot;2&#39;</a>'))

    def test_title_attribute(self):
        self.assertEqual(md("[a](/p 'x\"<y>&')"),
                         para('<a href="/p" title="x&quot;&lt;y&gt;&amp;">a</a>'))

    def test_link_text(self):
        self.assertEqual(md("[<b>&](/p)"), para('<a href="/p">&lt;b&gt;&amp;</a>'))

    def test_alt_text(self):
        self.assertEqual(md('![a"b\'<c>](i.png)'),
                         para('<a href="i.png" class="image">a&quot;b&#39;&lt;c&gt;</a>'))

    def test_code_span(self):
        self.assertEqual(md("`'\"`"), para("<code>&#39;&quot;</code>"))

    def test_fenced_code(self):
        self.assertEqual(md("```\n'\"&<>\n```"),
                         "<pre><code>&#39;&quot;&amp;&lt;&gt;\n</code></pre>\n")

    def test_language_name(self):
        self.assertEqual(md("```a'b&c\nx\n```"),
                         '<pre><code class="language-a&#39;b&amp;c">x\n</code></pre>\n')

    def test_table_cell(self):
        self.assertIn("<td>&#39;&amp;</td>", md("| a |\n|---|\n| '& |"))

    def test_list_item_and_quote(self):
        self.assertEqual(md("> - <x>"), "<blockquote>\n<ul>\n<li>&lt;x&gt;</li>\n</ul>\n"
                                        "</blockquote>\n")

    def test_backslash_escaped_angle(self):
        self.assertEqual(md("\\<b>"), para("&lt;b&gt;"))


class RawHtml(Case):
    def test_script_block(self):
        self.assertEqual(md("<script>alert(1)</script>"),
                         para("&lt;script&gt;alert(1)&lt;/script&gt;"))

    def test_script_inline(self):
        self.assertEqual(md("a <script>alert(1)</script> b"),
                         para("a &lt;script&gt;alert(1)&lt;/script&gt; b"))

    def test_img_onerror(self):
        self.assertEqual(md("<img src=x onerror=alert(1)>"),
                         para("&lt;img src=x onerror=alert(1)&gt;"))

    def test_div_block(self):
        self.assertEqual(md('<div class="x">\n*hi*\n</div>'),
                         para("&lt;div class=&quot;x&quot;&gt;\n<em>hi</em>\n&lt;/div&gt;"))

    def test_comment(self):
        self.assertEqual(md("<!-- secret -->"), para("&lt;!-- secret --&gt;"))

    def test_raw_anchor(self):
        self.assertEqual(md('<a href="javascript:alert(1)">x</a>'),
                         para("&lt;a href=&quot;javascript:alert(1)&quot;&gt;x&lt;/a&gt;"))

    def test_svg_onload(self):
        self.assertEqual(md("<svg/onload=alert(1)>"), para("&lt;svg/onload=alert(1)&gt;"))

    def test_event_attribute_in_fence_info(self):
        out = md("``` onmouseover=alert(1)\nx\n```")
        self.assertEqual(out, '<pre><code class="language-onmouseover=alert(1)">x\n'
                              '</code></pre>\n')
        self.assertSafe(out)

    def test_html_in_every_place_stays_text(self):
        attack = '<img src=x onerror="alert(1)">'
        source = "# %s\n\n%s\n\n- %s\n\n> %s\n\n| %s |\n|---|\n| %s |\n\n[%s](/p)\n\n`%s`" % (
            (attack,) * 8)
        out = md(source)
        self.assertNotIn("<img", out)
        self.assertEqual(out.count("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"), 8)
        self.assertSafe(out)


class RefusedLinks(Case):
    def test_javascript(self):
        self.assertRefused("[a](javascript:alert(1))")

    def test_javascript_mixed_case(self):
        self.assertRefused("[a](JaVaScRiPt:alert(1))")

    def test_data(self):
        self.assertRefused("[a](data:text/html;base64,PHNjcmlwdD4=)")

    def test_vbscript(self):
        self.assertRefused("[a](vbscript:msgbox(1))")

    def test_file(self):
        self.assertRefused("[a](file:///etc/passwd)")

    def test_other_scheme(self):
        self.assertRefused("[a](ftp://x/y)")

    def test_scheme_without_slashes(self):
        self.assertRefused("[a](a:b/c)")

    def test_tab_inside_scheme(self):
        self.assertRefused("[a](java\tscript:alert(1))")

    def test_space_inside_scheme(self):
        self.assertRefused("[a](java script:alert(1))")

    def test_newline_inside_scheme(self):
        out = md("[a](java\nscript:alert(1))")
        self.assertEqual(out, para("[a](java\nscript:alert(1))"))

    def test_control_inside_scheme(self):
        self.assertRefused("[a](java\x01script:alert(1))")

    def test_zero_width_inside_scheme(self):
        self.assertRefused("[a](java\u200bscript:alert(1))")

    def test_non_breaking_space_inside_scheme(self):
        self.assertRefused("[a](java\u00a0script:alert(1))")

    def test_leading_space(self):
        self.assertRefused("[a]( javascript:alert(1))")

    def test_leading_space_before_allowed_target(self):
        self.assertRefused("[a]( https://example.com)")

    def test_leading_control(self):
        self.assertRefused("[a](\x01javascript:alert(1))")

    def test_leading_nul(self):
        out = md("[a](\0javascript:alert(1))")
        self.assertEqual(out, para(esc("[a](\ufffdjavascript:alert(1))")))

    def test_entity_colon(self):
        self.assertRefused("[a](javascript&#58;alert(1))")

    def test_named_entity_colon(self):
        self.assertRefused("[a](javascript&colon;alert(1))")

    def test_entity_letter(self):
        self.assertRefused("[a](&#106;avascript:alert(1))")

    def test_protocol_relative(self):
        self.assertRefused("[a](//evil.example)")

    def test_protocol_relative_backslashes(self):
        self.assertRefused("[a](\\\\evil.example)")

    def test_protocol_relative_mixed_slashes(self):
        self.assertRefused("[a](/\\evil.example)")

    def test_empty_target(self):
        self.assertRefused("[a]()")

    def test_angle_target(self):
        self.assertRefused("[a](<javascript:alert(1)>)")

    def test_bad_title(self):
        self.assertRefused('[a](/p "t" x)')

    def test_text_processed_nowhere(self):
        self.assertRefused("[*a* `b`](javascript:alert(1))")

    def test_autolink_javascript(self):
        self.assertRefused("<javascript:alert(1)>")

    def test_autolink_data(self):
        self.assertRefused("<data:text/html,alert(1)>")

    def test_autolink_protocol_relative(self):
        self.assertRefused("<//evil.example>")

    def test_autolink_control(self):
        self.assertRefused("<http://a\x01b>")

    def test_rel_only_with_scheme(self):
        out = md("[a](/x) [b](https://x) [c](mailto:c@d.e) [d](x.md)")
        self.assertEqual(out.count('rel="noopener noreferrer"'), 2)
        self.assertEqual(out.count("<a "), 4)


class Pathological(Case):
    def test_ten_thousand_nested_quotes(self):
        out = self.assertQuick(">" * 10000 + " x")
        self.assertEqual(out.count("<blockquote>"), mdrender._MD_MAX_DEPTH)
        self.assertIn(">" * 100, out.replace("&gt;", ">"))

    def test_deep_quote_lines(self):
        self.assertQuick("\n".join(">" * i + " x" for i in range(1, 1500)))

    def test_deep_quote_with_lazy_lines(self):
        self.assertQuick(">" * 40 + " x\n" + "x\n" * 50000)

    def test_ten_thousand_nested_list_markers(self):
        out = self.assertQuick("- " * 10000 + "x")
        self.assertEqual(out.count("<ul>"), mdrender._MD_MAX_DEPTH)

    def test_deep_list_lines(self):
        self.assertQuick("\n".join("  " * i + "- x" for i in range(1000)))

    def test_deep_lists_with_lazy_lines(self):
        self.assertQuick("- " * 40 + "x\n" + "x\n" * 50000)

    def test_ten_thousand_brackets(self):
        self.assertQuick("[" * 10000)

    def test_brackets_and_parentheses(self):
        self.assertQuick("[" * 10000 + "](" * 10000 + ")" * 10000)
        self.assertQuick("[a](" * 100000)
        self.assertQuick("[a](" + "(" * 100000)

    def test_hundred_thousand_stars_rule(self):
        self.assertEqual(self.assertQuick("*" * 100000), "<hr>\n")

    def test_hundred_thousand_stars_in_text(self):
        self.assertQuick("a" + "*" * 100000 + "a")

    def test_hundred_thousand_separate_stars(self):
        self.assertQuick("*a" * 100000)
        self.assertQuick("a*" * 100000)
        self.assertQuick("* " * 100000 + "x")

    def test_hundred_thousand_underscores(self):
        self.assertQuick("_a_ " * 100000)

    def test_one_megabyte_line(self):
        out = self.assertQuick("x" * 1000000)
        self.assertEqual(len(out), 1000008)

    def test_one_megabyte_line_of_markup(self):
        sample = "*a* _b_ **c** `d` [e](/f) ![g](h.png) <https://i> \\* <b> & "
        self.assertQuick(sample * (1000000 // len(sample)))

    def test_one_megabyte_lines_of_dense_marks(self):
        for unit in ("*a", "`a", "\\*", "![", "<a", "[a](b) ", "a  \n"):
            with self.subTest(unit=unit):
                self.assertQuick(unit * (1000000 // len(unit)))

    def test_one_megabyte_random_line(self):
        rng = random.Random(7)
        chunk = "".join(rng.choice("ab *_`[]()<>!\\#|-:&\"'") for _ in range(1000))
        self.assertQuick(chunk * 1000)

    def test_spaces_in_link_target(self):
        self.assertQuick("[a](" + " " * 1000000 + "x")

    def test_open_title(self):
        self.assertQuick('[a](b "' + "x" * 1000000)

    def test_many_backtick_runs(self):
        self.assertQuick("`a" * 100000)
        self.assertQuick("".join("`" * n + "a" for n in range(1, 1400)))

    def test_many_angle_brackets(self):
        self.assertQuick("<" * 100000)
        self.assertQuick("<http:" * 100000)

    def test_many_identical_headings(self):
        out = self.assertQuick("# a\n" * 10000)
        self.assertIn('id="a-10000"', out)

    def test_wide_table(self):
        self.assertQuick("|" + "a|" * 10000 + "\n|" + "-|" * 10000 + "\n|" + "b|" * 10000)

    def test_many_fences(self):
        self.assertQuick("```\n" * 10000)

    def test_mixed_containers(self):
        self.assertQuick("> - " * 5000 + "x")
        self.assertQuick("\n".join("> - " * 20 + "x" for _ in range(10000)))

    def test_inline_tokens_bounded_per_text(self):
        out = self.assertQuick("`x` " * 20000)
        self.assertEqual(out.count("<code>"), 10000)    # the rest is shown as written
        self.assertTrue(out.endswith("`x` `x`</p>\n"))

    def test_nesting_budget_spares_ordinary_documents(self):
        item = "- a\n  - b\n    > c\n    > - d\n"
        out = md(item * 2000)
        self.assertEqual(out.count("<li>d</li>"), 2000)

    def test_no_recursion_error_with_small_stack(self):
        limit = sys.getrecursionlimit()
        depth = len(_stack())
        sys.setrecursionlimit(depth + 200)    # the renderer needs about 4 frames a level
        try:
            md(">" * 10000 + "\n" + "- " * 10000 + "\n" + "> - " * 10000)
        finally:
            sys.setrecursionlimit(limit)


def _stack():
    frames, frame = [], sys._getframe()
    while frame:
        frames.append(frame)
        frame = frame.f_back
    return frames


class Fuzz(Case):
    def test_random_documents_are_safe(self):
        rng = random.Random(2024)
        alphabet = ["*", "_", "`", "[", "]", "(", ")", "<", ">", "!", "\\", "#", "|", "-",
                    ":", "~", " ", "  ", "\n", "\n\n", "\t", "a", "b", "1.", "> ", "- ",
                    "javascript:", "http://", "//", "&#58;", "\"", "'", "&", "```", "    "]
        for _ in range(1500):
            source = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80)))
            self.assertSafe(md(source))

    def test_every_input_character_escaped(self):
        rng = random.Random(99)
        for _ in range(1000):
            source = "".join(rng.choice("<>&\"'ab*_`[]()# |-\n") for _ in range(60))
            out = md(source)
            self.assertSafe(out)
            text = OWN_TAG.sub("", out)     # what is left is text: escaped or nothing
            self.assertFalse(set(text) & set("<>\"'"), (source, out))
            self.assertEqual(text.count("&"), len(ENTITY.findall(text)), (source, out))


class Module(unittest.TestCase):
    def test_nothing_compiled_at_import(self):
        code = ("import sys; sys.path.insert(0, %r); import majordomus; "
                "print(len(majordomus._MD_PATTERNS))" % support.ROOT)
        out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual((out.returncode, out.stdout.strip()), (0, "0"), out.stderr)

    def test_no_warnings_in_dev_mode(self):
        sample = ("# h #\n\n*a* _b_ **c** __d__ `e` \\* a  \nb\\\nc\n\n```py\nx\n```\n\n"
                  "    code\n\n- a\n  1) b\n\n> q\n>> r\n\n[l](https://x 't') ![i](i.png) "
                  "<https://y> [j](javascript:x)\n\n| a | b |\n|:-|-:|\n| 1 | 2 |\n\n---\n")
        code = ("import sys; sys.path.insert(0, %r); import majordomus; "
                "majordomus.render_markdown(%r)" % (support.ROOT, sample))
        out = subprocess.run([sys.executable, "-W", "error", "-X", "dev", "-c", code],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True)
        self.assertEqual((out.returncode, out.stderr), (0, ""))


if __name__ == "__main__":
    unittest.main()
