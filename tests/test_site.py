"""The static site (`bash scripts/build_site.sh`): it builds offline from the committed notebooks and needs no
network: no page links to or loads anything outside the site (math is typeset by the local copy of MathJax in
`_static/mathjax/`). In a real headless browser (Debian's Chromium through Selenium) every page loads, every figure of
the notebooks is there and decodes, every equation is typeset, no cell shows an error or one of nbdev's `#|`
directives, and `#| hide` cells are not there. The same checks are run on a small site made to fail them, so they can
fail."""
import base64
import json
import os
import re
import shutil
import subprocess
import time
from html.parser import HTMLParser
from urllib.parse import quote
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
# the library notebooks and the executed reports (nbs/experiments/ holds their sources, without outputs: not on the site)
NOTEBOOKS = sorted(ROOT.glob("nbs/*.ipynb")) + sorted(ROOT.glob("figures/*/notebooks/*.ipynb"))
PAGES = sorted(p for p in ROOT.glob("docs/*.md") if p.name != "index.md")  # reproduce, status, install, ...
# Seconds a page may take to load and typeset its math. Every file is local, so a page's time is the browser's work
# alone: the slowest page (nbs/00_proxies.html or nbs/01_coefficients.html, with 20 and 115 equations) took 3.4 s
# and 5.0 s in two runs on the 2-core machine while other jobs kept its load average at 4-7; the limit leaves a
# margin of 12x or more. The test prints the slowest page and its margin each time.
LOAD_LIMIT = 60
PNG_1PX = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")


def build(src: Path, out: Path) -> None:
    "Build the site of source tree `src` (the repository, or a stand-in with its layout) with docs/conf.py."
    if src == ROOT:
        cmd = ["bash", str(ROOT / "scripts" / "build_site.sh"), str(out)]
    else:
        cmd = ["python", "-m", "sphinx", "-q", "-b", "html", "-c", str(ROOT / "docs"), str(src), str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


class _Refs(HTMLParser):
    "Every address an HTML page refers to: attributes that load or link something, and `url(...)` in inline CSS."
    ATTRS = {"src", "href", "srcset", "data", "action", "poster", "formaction", "content"}

    def __init__(self):
        super().__init__()
        self.refs, self._style = [], False

    def handle_starttag(self, tag, attrs):
        self._style = tag == "style"
        for name, value in attrs:
            if not value:
                continue
            if name in self.ATTRS:
                self.refs += [v.strip().split()[0] for v in value.split(",") if v.strip()] if name == "srcset" else [value]
            if name == "style":
                self.refs += re.findall(r"url\(\s*['\"]?([^'\")]+)", value)

    def handle_data(self, data):
        if self._style:
            self.refs += re.findall(r"url\(\s*['\"]?([^'\")]+)", data)

    def handle_endtag(self, tag):
        self._style = False


# http://, https://, file://, //host, and the address in a <meta http-equiv="refresh" content="0; url=...">
EXTERNAL = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:)?//|(?:^|;)\s*url=\s*(?:[a-z][a-z0-9+.-]*:)?//", re.I)


def external_references(site: Path) -> dict[str, list[str]]:
    """Addresses outside the site, by file, in every built page (links included: the whole site reads offline, the
    paper is cited by its arXiv id as text) and every stylesheet (fonts, imports)."""
    found = {}
    for f in sorted(site.rglob("*.html")) + sorted(site.rglob("*.css")):
        text = f.read_text(errors="ignore")
        if f.suffix == ".html":
            parser = _Refs()
            parser.feed(text)
            refs = parser.refs
        else:
            refs = re.findall(r"url\(\s*['\"]?([^'\")]+)", text) + re.findall(r"@import\s+['\"]([^'\"]+)", text)
        bad = sorted({r for r in refs if EXTERNAL.match(r)})
        if bad:
            found[f.relative_to(site).as_posix()] = bad
    return found


def n_figures(nb: Path) -> int:
    "Image outputs of a notebook: the figures its page must show."
    cells = json.loads(nb.read_text())["cells"]
    return sum(any(k.startswith("image/") for k in o.get("data", {})) for c in cells for o in c.get("outputs", []))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    build(ROOT, out)
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("needs a headless browser: Debian's chromium and chromium-driver (scripts/env.sh installs them when "
                    "run as root; otherwise apt-get install chromium chromium-driver)")
    from selenium import webdriver

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1000",
                f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
                # offline: every host but this machine fails at once, so a page that did ask for a remote file could
                # not wait on the network (and the resource check below would name it)
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(LOAD_LIMIT)
    driver.set_script_timeout(LOAD_LIMIT)
    yield driver
    driver.quit()


def page_problems(driver, page: Path, figures: int = 0, timing: dict | None = None) -> list[str]:
    """What is wrong with one built page as the browser shows it (empty when nothing is). `timing[page]`, when given,
    gets the seconds from the request to the math typeset."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    start = time.perf_counter()
    driver.get(page.as_uri())
    # wait on the page's own state, not on get() alone: on a busy machine get() has returned with the document still
    # "loading" (issue 27). The page is ready when it is this page and its load event has fired; then MathJax's
    # startup promise says when its math is typeset (inside the script below).
    try:
        WebDriverWait(driver, LOAD_LIMIT, poll_frequency=0.2).until(
            lambda d: d.execute_script("return [document.readyState, document.URL]") == ["complete", page.as_uri()])
    except TimeoutException:
        ready, url = driver.execute_script("return [document.readyState, document.URL]")
        return [f"did not load within {LOAD_LIMIT} s: readyState {ready} at {url}"]
    state = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const report = () => {
          const a = document.querySelector('article.bd-article');
          const prose = a ? a.cloneNode(true) : null;  // the text outside code: raw TeX there is an untypeset equation
          if (prose) prose.querySelectorAll('pre, code, .highlight').forEach(e => e.remove());
          const math = a ? Array.from(a.querySelectorAll('span.math, div.math')) : [];
          done({ready: document.readyState, article: !!a, text: a ? a.innerText : '', prose: prose ? prose.innerText : '',
                imgs: a ? Array.from(a.querySelectorAll('img')).map(i => [i.complete, i.naturalWidth, i.getAttribute('src')]) : [],
                errors: a ? a.querySelectorAll('.output.traceback, .output.error').length : 0,
                math: math.length, typeset: math.filter(m => m.querySelector('mjx-container')).length,
                code: a ? Array.from(a.querySelectorAll('div.cell_input pre')).map(p => p.innerText) : [],
                remote: performance.getEntriesByType('resource').map(e => e.name)
                          .filter(n => !/^(file|data|blob|about):/.test(n))});
        };
        // MathJax typesets after the load event; startup.promise resolves when the page's math is done
        if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(report, report);
        else report();""")
    if timing is not None:
        timing["/".join(page.parts[-2:])] = time.perf_counter() - start
    problems = []
    if state["ready"] != "complete" or not state["article"] or not state["text"].strip():
        problems.append(f"did not load: readyState {state['ready']}, article {state['article']}")
    broken = [src for complete, width, src in state["imgs"] if not (complete and width > 0)]
    if broken:
        problems.append(f"images that do not display: {broken}")
    if len(state["imgs"]) < figures:
        problems.append(f"{len(state['imgs'])} images shown, the notebook has {figures} figures")
    if state["errors"] or "Traceback (most recent call last)" in state["text"]:
        problems.append(f"a cell shows an error ({state['errors']} error outputs)")
    if state["typeset"] < state["math"] or re.search(r"\\\(|\\\[|\$\$", state["prose"]):
        problems.append(f"untypeset math: {state['typeset']} of {state['math']} equations typeset")
    if any(re.match(r"\s*#\s*\|", line) for code in state["code"] for line in code.splitlines()):
        problems.append("a code cell shows nbdev's #| directives")
    if state["remote"]:
        problems.append(f"loaded from outside the site: {state['remote']}")
    return problems


def test_every_notebook_and_the_readme_have_a_page(site):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    want = {"index.html", "docs/index.html", "README.html"} | {
        f.relative_to(ROOT).with_suffix(".html").as_posix() for f in NOTEBOOKS + PAGES}
    assert want <= pages, sorted(want - pages)
    start = (site / "docs" / "index.html").read_text()
    for nb in NOTEBOOKS:  # every page is reachable from the start page
        assert quote(os.path.relpath(nb.with_suffix(".html"), ROOT / "docs")) in start, nb.name  # "@" is "%40"
    assert not any((site / "nbs" / "experiments").glob("*.html")), "a source notebook without outputs is on the site"
    assert start.count("results.html") >= 2  # the results page: linked first, and in the table of contents
    for page in PAGES:
        assert f'href="{page.stem}.html"' in start, page.name


def test_no_page_refers_to_an_address_outside_the_site(site):
    "Nothing to load and nothing to follow outside the site: it reads the same without a network."
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file(), "the local copy of MathJax is in the site"
    assert not external_references(site), external_references(site)


def test_every_page_loads_with_its_figures_math_and_no_error(site, browser):
    checked, figures, timing = {}, 0, {}
    for page, nb in [("docs/index.html", None), ("README.html", None)] + [
            (f"docs/{p.stem}.html", None) for p in PAGES] + [
            (nb.relative_to(ROOT).with_suffix(".html").as_posix(), nb) for nb in NOTEBOOKS]:
        n = n_figures(nb) if nb else 0
        figures += n
        checked[page] = page_problems(browser, site / page, n, timing)
    slowest = max(timing, key=timing.get)
    print(f"slowest page: {slowest}, {timing[slowest]:.1f} s to load and typeset (limit {LOAD_LIMIT} s, "
          f"margin {LOAD_LIMIT / timing[slowest]:.0f}x)")
    assert not {p: v for p, v in checked.items() if v}, {p: v for p, v in checked.items() if v}
    assert figures >= 3, "the library notebooks are committed with their figures (scripts/execute_notebooks.sh)"
    typeset = page_problems(browser, site / "nbs" / "01_coefficients.html")  # has equations: they were typeset
    assert not typeset and browser.execute_script("return document.querySelectorAll('mjx-container').length") > 10


def test_the_page_checks_catch_errors_and_missing_figures(browser, tmp_path):
    """A notebook whose cell raised, whose figure cannot be decoded and which links outside fails the checks; a good
    one passes, with its math typeset, its `#| hide` cell left out and its directives hidden."""
    src = tmp_path / "src"
    (src / "docs").mkdir(parents=True)
    (src / "nbs").mkdir()
    (src / "docs" / "index.md").write_text("# test\n\n```{toctree}\n:glob:\n\n../nbs/*\n```\n")

    def notebook(name, outputs, markdown=""):
        cell = {"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {}, "outputs": outputs,
                "source": ["#| export\n", "shown_cell = 1 / 0"]}
        hidden = {"cell_type": "code", "execution_count": None, "id": "c2", "metadata": {}, "outputs": [],
                  "source": ["#| hide\n", "hidden_cell = 1"]}
        nb = {"cells": [{"cell_type": "markdown", "id": "m1", "metadata": {}, "source": [f"# {name}\n\n{markdown}"]},
                        cell, hidden],
              "metadata": {"kernelspec": {"display_name": "python3", "language": "python", "name": "python3"}},
              "nbformat": 4, "nbformat_minor": 5}
        (src / "nbs" / f"{name}.ipynb").write_text(json.dumps(nb))

    image = lambda data: {"output_type": "display_data", "metadata": {}, "data": {"image/png": data, "text/plain": ["<Figure>"]}}
    notebook("good", [image(PNG_1PX)], "A token's proxy $v = (1-p)\\,h$ and its margin\n\n$$\\Delta = 2v^\\top\\mu$$")
    notebook("bad", [{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                      "traceback": ["Traceback (most recent call last):", "ZeroDivisionError: division by zero"]},
                     image(base64.b64encode(b"not a png").decode())],
             "[the paper](https://arxiv.org/abs/2605.21467) ![a remote figure](https://example.org/fig.png)")
    out = tmp_path / "out"
    build(src, out)
    assert page_problems(browser, out / "nbs" / "good.html", figures=1) == []
    text = browser.find_element("css selector", "article").text
    assert "shown_cell" in text and "hidden_cell" not in text and "#|" not in text
    assert len(browser.find_elements("css selector", "mjx-container")) == 2  # both equations typeset
    bad = page_problems(browser, out / "nbs" / "bad.html", figures=1)
    assert any("error" in p for p in bad) and any("do not display" in p for p in bad), bad
    assert any("outside the site" in p for p in bad), bad  # the browser asked for the remote figure
    assert external_references(out) == {"nbs/bad.html": ["https://arxiv.org/abs/2605.21467",
                                                         "https://example.org/fig.png"]}
    assert any("figures" in p for p in page_problems(browser, out / "nbs" / "good.html", figures=2))
    assert any("did not load" in p for p in page_problems(browser, out / "nbs" / "missing.html"))


def _executed_copy(nb_path: Path, png_b64: str, table_html: str) -> dict:
    "The experiment notebook `nb_path` as papermill leaves it: its figure cell with a PNG, its table cell with a table."
    nb = json.loads(nb_path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "parameters" not in c["metadata"].get("tags", [])]
    code[0]["outputs"] = [{"output_type": "display_data", "metadata": {},
                           "data": {"image/png": png_b64, "text/plain": ["<Figure size 1000x300 with 4 Axes>"]}}]
    code[-1]["outputs"] = [{"output_type": "execute_result", "execution_count": 3, "metadata": {},
                            "data": {"text/html": [table_html], "text/plain": ["(the table)"]}}]
    return nb


def test_an_executed_report_notebook_renders_with_its_figure_and_table(browser, tmp_path):
    """An experiment notebook that reproduce.sh executed and published (its copy under figures/<profile>/notebooks/,
    committed beside the figures) is a page of the site with its figure and its table, linked from the start page, so
    a fresh clone's site shows a profile's results; the site's own start page and configuration are used, and
    without a published report the page is simply not there."""
    import io

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    src = tmp_path / "src"
    (src / "docs").mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "index.md", src / "docs" / "index.md")
    report = src / "figures" / "cpu" / "notebooks"
    report.mkdir(parents=True)
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.plot([0, 1, 2], [0.45, 0.52, 0.58])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    table = pd.DataFrame({"method": ["DAPO", "DelTA"], "first 10 %": [0.451, 0.449], "last 10 %": [0.562, 0.571]})
    nb = _executed_copy(ROOT / "nbs" / "experiments" / "fig2_dynamics.ipynb", base64.b64encode(buf.getvalue()).decode(),
                        table.to_html(index=False))
    (report / "fig2_dynamics.ipynb").write_text(json.dumps(nb))
    out = tmp_path / "out"
    build(src, out)
    page = out / "figures" / "cpu" / "notebooks" / "fig2_dynamics.html"
    assert page.is_file(), sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html"))
    assert "figures/cpu/notebooks/fig2_dynamics.html" in (out / "docs" / "index.html").read_text()
    assert page_problems(browser, page, figures=1) == []
    rows = [r.text.split() for r in browser.find_elements("css selector", "article table tr")]
    assert ["DelTA", "0.449", "0.571"] in rows, rows
    assert "Fig. 2" in browser.find_element("css selector", "article h1").text
    # without a published report, the same start page builds and has no such page
    shutil.rmtree(src / "figures")
    empty = tmp_path / "empty"
    build(src, empty)
    assert not (empty / "figures").exists()


def test_outputs_of_the_reading_path_are_not_clipped(site, browser):
    """The content column is wide enough for the outputs of index and 00-03: no output block needs a scroll bar in a
    1280-pixel window (the widest lines are 120 characters)."""
    clipped = {}
    for name in ("index", "00_proxies", "01_coefficients", "02_losses", "03_trainer"):
        browser.get((site / "nbs" / f"{name}.html").as_uri())
        wide = browser.execute_script("""
            return Array.from(document.querySelectorAll('article div.cell_output pre'))
              .filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.innerText.split('\\n')[0].slice(0, 60));""")
        if wide:
            clipped[name] = wide
    assert not clipped, clipped


class _Links(HTMLParser):
    "The local addresses a page follows or loads: `href` of a and link, `src` of img, script, iframe, source."
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        ref = a.get("href") if tag in ("a", "link") else a.get("src") if tag in ("img", "script", "iframe", "source") else None
        if ref and not re.match(r"^(?:[a-z][a-z0-9+.-]*:|#|//)", ref, re.I):
            self.links.append(ref)


def broken_links(site: Path) -> dict:
    "{page: [local href/src whose target the site lacks]} over every page of a built site (the theme's templates aside)."
    from urllib.parse import unquote, urlsplit
    out = {}
    for page in sorted(site.rglob("*.html")):
        if "_static" in page.relative_to(site).parts:
            continue
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        bad = [ref for ref in parser.links
               if (path := unquote(urlsplit(ref).path)) and not (page.parent / path).exists()]
        if bad:
            out[page.relative_to(site).as_posix()] = bad
    return out


def test_every_local_link_and_image_of_the_site_resolves(site):
    "A crawl of the built site: every link a page follows and every file it loads is there (report links included)."
    assert not broken_links(site), broken_links(site)
    results = (site / "figures" / "cpu" / "notebooks" / "results.html").read_text()
    assert "appK_significance.html" in results and "appK_significance.ipynb" not in results  # rewritten by docs/conf.py


def test_the_link_crawl_finds_a_broken_link(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "page.html").write_text('<a href="there.html">x</a><a href="../b.html#top">y</a>'
                                              '<img src="pic.png"><a href="https://example.org">z</a><a href="#s">s</a>')
    (tmp_path / "a" / "there.html").write_text("")
    (tmp_path / "b.html").write_text("")
    assert broken_links(tmp_path) == {"a/page.html": ["pic.png"]}
