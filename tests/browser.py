"""A small harness over Selenium 4 for proving HTML pages in a real headless Chromium.

It runs in the test virtual environment (.venv, where `selenium` is installed) and drives
Debian's chromium and chromedriver (tests/toolchain.py installs them; run_all.py passes their
paths as MAJORDOMUS_CHROMIUM and MAJORDOMUS_CHROMEDRIVER, and axe-core's as MAJORDOMUS_AXE).
Selenium Manager never runs: both paths are given explicitly, and SE_MANAGER_PATH names no
file, so that a mistake fails at once instead of reaching for the network. Nothing here
downloads a browser.

    import browser
    tools, why = browser.tools()              # None and a one-line reason when not here
    with browser.Browser(width=390, dark=True) as page:
        page.open("http://127.0.0.1:PORT/ui/")
        page.click("Diagnostics")             # a CSS selector or a link's text
        page.wait_for("main h1")
        page.text("main h1"); page.recorded(); page.browser_log()
        page.screenshot("/tmp/diag.png")      # the full page, beyond the viewport
        page.axe(tools["axe"])                # [{id, impact, help, nodes: [target, ...]}]

Before any script of any page runs (every navigation, every frame), a recorder replaces
alert, confirm, prompt and print with functions that record the call and return at once
(undefined, false, null, undefined: a page cannot block the browser on a dialog), and records
uncaught errors, unhandled rejections, console.error and what the page's CSP refused. It is added with the DevTools call
Page.addScriptToEvaluateOnNewDocument, and reads back with execute_script; neither is subject
to the page's Content-Security-Policy (venv_browser_selftest.py proves it under
`script-src 'self'`). What it holds belongs to the current document: a navigation starts a new,
empty record.
"""
import base64
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import toolchain  # noqa: E402

# Selenium Manager (a binary inside the selenium wheel) would look for browsers and drivers
# on the network; with the paths given it is skipped, and should it ever be asked this fails.
os.environ.setdefault("SE_MANAGER_PATH", os.path.join(HERE, ".no-selenium-manager"))
os.environ.setdefault("SE_OFFLINE", "true")

try:
    import selenium
    from selenium import webdriver
    from selenium.common.exceptions import (InvalidSelectorException, JavascriptException,
                                            WebDriverException)
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    SELENIUM_MISSING = None
except ImportError as exc:        # the stdlib interpreters import this module to say why not
    selenium = webdriver = Options = Service = By = None
    InvalidSelectorException = JavascriptException = WebDriverException = Exception
    SELENIUM_MISSING = "selenium is not installed for %s (%s): it lives in .venv" % (
        sys.executable, exc)

FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-default-browser-check",
         "--disable-extensions", "--disable-default-apps", "--hide-scrollbars",
         "--force-device-scale-factor=1", "--lang=en-US"]
TIMEOUT = 15            # seconds: a page load, a wait, a script
START_TIMEOUT = 60      # chromedriver and Chromium starting (about a second here)
RECORD = "__majordomusRecorded"

RECORDER = r"""
(function () {
  if (Object.prototype.hasOwnProperty.call(window, "%(name)s")) { return; }
  var seen = [];
  Object.defineProperty(window, "%(name)s", {value: seen, enumerable: false});
  function text(value) {
    try {
      if (value instanceof Error) { return String(value.stack || value); }
      return typeof value === "string" ? value : JSON.stringify(value);
    } catch (e) { return String(value); }
  }
  function note(kind, args, extra) {
    var entry = {kind: kind, args: Array.prototype.map.call(args || [], text),
                 url: String(location.href)};
    for (var key in (extra || {})) { entry[key] = extra[key]; }
    seen.push(entry);
  }
  var answers = {alert: undefined, confirm: false, prompt: null, print: undefined};
  Object.keys(answers).forEach(function (name) {
    window[name] = function () { note(name, arguments); return answers[name]; };
  });
  var consoleError = console.error;
  console.error = function () {
    note("console.error", arguments);
    return consoleError.apply(console, arguments);
  };
  window.addEventListener("error", function (event) {
    if (!(event instanceof ErrorEvent)) { return; }     // a resource that failed to load
    note("error", [event.message], {source: event.filename || "", line: event.lineno || 0,
                                    column: event.colno || 0});
  }, true);
  window.addEventListener("unhandledrejection", function (event) {
    note("unhandledrejection", [event.reason]);
  });
  window.addEventListener("securitypolicyviolation", function (event) {
    note("csp", [event.violatedDirective], {blocked: event.blockedURI || "",
                                            source: event.sourceFile || "",
                                            line: event.lineNumber || 0});
  }, true);
})();
""" % {"name": RECORD}

AXE_RUN = r"""
var options = arguments[0], done = arguments[arguments.length - 1];
if (typeof axe === "undefined") { done({error: "axe is not defined after injection"}); return; }
axe.run(document, options || {}).then(function (result) {
  done({version: axe.version, violations: result.violations.map(function (v) {
    return {id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl,
            nodes: v.nodes.map(function (n) { return n.target.map(String).join(" >>> "); })};
  })});
}, function (error) { done({error: String(error && error.stack || error)}); });
"""


class Unavailable(Exception):
    """The browser cannot be had here; str() is the one-line reason."""


def tools(log=None):
    """({"chromium", "chromedriver", "axe", "version"}, None) or (None, reason): the paths
    run_all.py passed (MAJORDOMUS_CHROMIUM, MAJORDOMUS_CHROMEDRIVER, MAJORDOMUS_AXE), or,
    when it passed none, what tests/toolchain.py finds or installs."""
    if SELENIUM_MISSING:
        return None, SELENIUM_MISSING
    found = {"chromium": os.environ.get("MAJORDOMUS_CHROMIUM"),
             "chromedriver": os.environ.get("MAJORDOMUS_CHROMEDRIVER"),
             "axe": os.environ.get("MAJORDOMUS_AXE"), "version": None}
    if not (found["chromium"] and found["chromedriver"]):
        got, why = toolchain.chromium(log)
        if not got:
            return None, why
        found.update(chromium=got["chromium"], chromedriver=got["chromedriver"],
                     version=got["version"])
    if not found["axe"]:
        found["axe"], why = toolchain.axe_core(log)
        if not found["axe"]:
            return None, why
    for name in ("chromium", "chromedriver", "axe"):
        if not os.path.isfile(found[name]):
            return None, "%s: %s is not a file" % (name, found[name])
    return found, None


class Browser:
    """A headless Chromium with a fresh profile, driven through chromedriver; use it as a
    context manager (`with Browser() as page:`), or call close()."""

    def __init__(self, width=1280, height=900, dark=False, chromium=None, chromedriver=None,
                 timeout=TIMEOUT):
        if SELENIUM_MISSING:
            raise Unavailable(SELENIUM_MISSING)
        if not (chromium and chromedriver):
            found, why = tools()
            if not found:
                raise Unavailable(why)
            chromium, chromedriver = chromium or found["chromium"], \
                chromedriver or found["chromedriver"]
        self.timeout = timeout
        self.axe_version = None         # set by axe()
        self.width, self.height, self.dark = width, height, bool(dark)
        self.scratch = tempfile.mkdtemp(prefix="mj-browser-")
        self.driver_log = os.path.join(self.scratch, "chromedriver.log")
        options = Options()
        options.binary_location = chromium
        for flag in FLAGS:
            options.add_argument(flag)
        options.add_argument("--user-data-dir=" + os.path.join(self.scratch, "profile"))
        options.add_argument("--window-size=%d,%d" % (width, height))
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        options.page_load_strategy = "normal"
        service = Service(executable_path=chromedriver, log_output=self.driver_log,
                          service_args=["--log-level=INFO"])
        began = time.time()
        try:
            self.driver = webdriver.Chrome(service=service, options=options)
        except WebDriverException as exc:
            reason = "chromedriver could not start %s: %s" % (
                chromium, str(exc.msg or exc).strip().splitlines()[0][:300])
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise Unavailable(reason)
        self.start_seconds = time.time() - began
        self.driver.set_page_load_timeout(timeout)
        self.driver.set_script_timeout(max(timeout, 60))
        self.cdp("Page.addScriptToEvaluateOnNewDocument", {"source": RECORDER})
        self.set_size(width, height)
        self.set_scheme(self.dark)

    # --- the session -------------------------------------------------------------------

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        driver, self.driver = getattr(self, "driver", None), None
        if driver is not None:
            try:
                driver.quit()
            except Exception:       # a crashed browser still has its profile to remove
                pass
        shutil.rmtree(self.scratch, ignore_errors=True)

    def cdp(self, method, params=None):
        """A Chrome DevTools Protocol command on the current page; its result (dict)."""
        return self.driver.execute_cdp_cmd(method, params or {})

    def script(self, source, *args):
        """execute_script: source is a function body; `return` answers."""
        return self.driver.execute_script(source, *args)

    @property
    def version(self):
        caps = self.driver.capabilities
        return "Chromium %s, chromedriver %s" % (
            caps.get("browserVersion", "?"),
            caps.get("chrome", {}).get("chromedriverVersion", "?").split()[0])

    def set_size(self, width, height):
        """The viewport's size in CSS pixels (the page's innerWidth and innerHeight)."""
        self.width, self.height = width, height
        self.cdp("Emulation.setDeviceMetricsOverride",
                 {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def set_scheme(self, dark):
        """prefers-color-scheme: dark (dark=True) or light; kept across navigations."""
        self.dark = bool(dark)
        self.cdp("Emulation.setEmulatedMedia", {"media": "", "features": [
            {"name": "prefers-color-scheme", "value": "dark" if self.dark else "light"}]})

    # --- pages -------------------------------------------------------------------------

    @property
    def current_url(self):
        return self.driver.current_url

    @property
    def title(self):
        return self.driver.title

    def source(self):
        return self.driver.page_source

    def open(self, url):
        """Load url and wait for it (document.readyState complete)."""
        self.driver.get(url)
        self._settle()
        return self

    def _settle(self):
        self.wait_for(lambda page: page.script("return document.readyState") == "complete")

    def find(self, target, timeout=None):
        """The first element a CSS selector names or, failing that, the link whose text is
        target (exact, then partial); waits for one up to timeout seconds."""
        return self.wait_for(lambda page: page._find(target), timeout,
                             what="an element %r" % target)

    def _find(self, target):
        try:
            elements = self.driver.find_elements(By.CSS_SELECTOR, target)
        except InvalidSelectorException:
            elements = []
        for how in (By.LINK_TEXT, By.PARTIAL_LINK_TEXT):
            if elements:
                break
            elements = self.driver.find_elements(how, target)
        return elements[0] if elements else None

    def find_all(self, css):
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def click(self, target):
        """Click what a CSS selector or a link's text names, as a person would (the element
        is scrolled into view and must be clickable); waits for any navigation it starts."""
        element = self.find(target)
        self.script("arguments[0].scrollIntoView({block: 'center'})", element)
        element.click()
        self._settle()
        return self

    def text(self, css="body"):
        """The rendered text (innerText) of the first element css names."""
        return self.find(css).text

    def type(self, css, text, clear=True):
        """Type text into the field css names (after emptying it, unless clear=False)."""
        element = self.find(css)
        if clear:
            element.clear()
        element.send_keys(text)
        return self

    def submit(self, css="form"):
        """Submit the form css names, or the form of the field or button it names: a submit
        button is clicked; otherwise form.requestSubmit() (validation and the submit event as
        for a person pressing Enter). Waits for the navigation, when there is one."""
        element = self.find(css)
        self.script("window.__majordomusOld = true;")
        kind = self.script(
            "var e = arguments[0];"
            "if (e.tagName === 'FORM') { return 'form'; }"
            "if ((e.tagName === 'BUTTON' || e.tagName === 'INPUT') && e.type === 'submit')"
            " { return 'button'; }"
            "return e.form ? 'field' : 'none';", element)
        if kind == "button":
            element.click()
        elif kind in ("form", "field"):
            self.script("var f = arguments[0].tagName === 'FORM' ? arguments[0] :"
                        " arguments[0].form; f.requestSubmit();", element)
        else:
            raise ValueError("%r names no form and no field of one" % css)
        deadline = time.time() + 2
        while time.time() < deadline:       # a submit that navigates does so at once
            try:
                if not self.script("return window.__majordomusOld === true"):
                    break
            except JavascriptException:
                break
            time.sleep(0.05)
        self._settle()
        return self

    def wait_for(self, condition, timeout=None, what=None):
        """Wait until condition holds: a CSS selector (an element is there, answered), or a
        callable given this Browser (its truthy answer is answered). TimeoutError after
        timeout seconds (the Browser's timeout by default)."""
        timeout = self.timeout if timeout is None else timeout
        if isinstance(condition, str):
            css = condition
            what = what or "an element %r" % css
            condition = lambda page: (page.find_all(css) or [None])[0]  # noqa: E731
        deadline = time.time() + timeout
        last = None
        while True:
            try:
                value = condition(self)
                if value:
                    return value
            except (JavascriptException, WebDriverException) as exc:
                last = exc          # a page in the middle of navigating
            if time.time() >= deadline:
                raise TimeoutError("waited %.1f s for %s on %s%s" % (
                    timeout, what or getattr(condition, "__name__", "a condition"),
                    self.current_url, "; last error: %s" % str(last).splitlines()[0][:200]
                    if last else ""))
            time.sleep(0.05)

    # --- what the page did -------------------------------------------------------------

    def recorded(self):
        """[{kind, args, url, ...}] of this document: kind is alert, confirm, prompt, print,
        console.error, error (an uncaught exception: source, line, column too),
        unhandledrejection or csp (what the page's Content-Security-Policy refused: args is the
        directive, blocked "inline", "eval" or a URL). None when the recorder is not in the page (it always should be)."""
        return self.script("return window.%s ? JSON.parse(JSON.stringify(window.%s)) : null"
                           % (RECORD, RECORD))

    def browser_log(self):
        """The console messages and browser errors since the last call: [{level, message,
        source, timestamp}] (chromedriver's 'browser' log)."""
        return self.driver.get_log("browser")

    def screenshot(self, path, full_page=True):
        """Write a PNG of the page to path (the whole page, beyond the viewport, when
        full_page); answers path."""
        params = {"format": "png", "fromSurface": True}
        if full_page:
            metrics = self.cdp("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            params.update(captureBeyondViewport=True, clip={
                "x": 0, "y": 0, "scale": 1,
                "width": max(int(size["width"] + 0.999), 1),
                "height": max(int(size["height"] + 0.999), 1)})
        data = base64.b64decode(self.cdp("Page.captureScreenshot", params)["data"])
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
        return path

    def axe(self, axe_js_path, options=None):
        """Run axe-core in the current page: [{id, impact, help, helpUrl, nodes: [target]}]
        of its violations (a target is a CSS selector; ' >>> ' joins those of frames and
        shadow roots). The library is injected with execute_script, which the page's CSP does
        not govern; options go to axe.run (e.g. {"runOnly": ["wcag2a", "wcag2aa"]})."""
        with open(axe_js_path, encoding="utf-8") as handle:
            library = handle.read()
        self.script(library + "\n;window.axe = window.axe || (typeof axe !== 'undefined'"
                    " ? axe : undefined);")
        answer = self.driver.execute_async_script(AXE_RUN, options or {})
        if not isinstance(answer, dict) or "error" in answer:
            raise RuntimeError("axe.run failed: %s" % (
                answer.get("error") if isinstance(answer, dict) else json.dumps(answer)))
        self.axe_version = answer.get("version")
        return answer["violations"]


def open_browser(cls, prefix):
    """A browser test class's screenshots folder (MAJORDOMUS_SCREENSHOTS when set, else a
    scratch one) and its one headless Chromium for the whole class: cls.shots, cls.tools,
    cls.why (why there is none) and cls.page, each closed with the class."""
    keep = os.environ.get("MAJORDOMUS_SCREENSHOTS")
    scratch = tempfile.mkdtemp(prefix=prefix)
    cls.addClassCleanup(shutil.rmtree, scratch, True)
    cls.shots = os.path.abspath(keep) if keep else os.path.join(scratch, "screenshots")
    os.makedirs(cls.shots, exist_ok=True)
    cls.tools, cls.why = tools()
    if cls.tools:
        try:
            cls.page = Browser(chromium=cls.tools["chromium"],
                               chromedriver=cls.tools["chromedriver"])
        except Unavailable as exc:
            cls.tools, cls.why = None, str(exc)
        else:
            cls.addClassCleanup(cls.page.close)
