"""Sphinx configuration of the static site: the README, the pages in docs/, the index notebook, the library
notebooks with their committed outputs and the experiment notebooks, rendered by MyST-NB without executing anything.

The site needs no network: math is typeset by a local copy of MathJax (the pinned package sphinx-mathjax-offline
copies MathJax 3.2.2 into `_static/mathjax/`), and no page links or loads anything outside the site
(tests/test_site.py checks both). nbdev's cell directives (`#| export`, ...) are not shown, and `#| hide` cells are left
out, as on nbdev's own documentation sites (`nbdev_cells` below).

Build it with `bash scripts/build_site.sh` (into `_site/`); `tests/test_site.py` builds it and opens every page in
headless Chromium."""
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
project = "delta_repro"
author = "delta_repro developers"
release = version = next(l.split('"')[1] for l in (ROOT / "delta_repro" / "__init__.py").read_text().splitlines()
                         if l.startswith("__version__"))

# The source directory is the repository root (scripts/build_site.sh runs `sphinx-build -c docs . _site`); only
# these files become pages.
root_doc = "docs/index"
# The executed report notebooks, published by `reproduce.sh` beside their figures (figures/<profile>/notebooks/), are
# pages too, with the outputs they were executed with (figures and tables): committed, so a fresh clone shows them.
# nbs/experiments/ is left out: sources without outputs, whose executed copies are the reports in figures/*/notebooks/
include_patterns = ["docs/*.md", "README.md", "nbs/*.ipynb", "figures/*/notebooks/*.ipynb"]
exclude_patterns = ["_site", ".venv", "**/.ipynb_checkpoints"]

# sphinx-mathjax-offline sets mathjax_path to its bundled copy (instead of Sphinx's default CDN address) and copies
# it into the built site
extensions = ["myst_nb", "sphinx-mathjax-offline"]
nb_execution_mode = "off"  # the committed outputs are the document (scripts/execute_notebooks.sh regenerates them)
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
# notebooks' title-less first cells; IPython lexing; the executed reports' glob before any profile has run
suppress_warnings = ["myst.header", "misc.highlighting_failure", "toc.empty_glob"]

html_theme = "sphinx_book_theme"
html_title = "delta_repro"
# no right-hand "on this page" column: its width goes to the content, so that 120-character outputs fit beside the
# navigation in a 1280-pixel window (tests/test_site.py)
html_theme_options = {"show_toc_level": 2, "secondary_sidebar_items": []}
html_show_sourcelink = False
html_extra_path = ["_extra"]  # index.html at the top of the site, pointing to docs/index.html
# a content column wide enough for 120 monospace characters (code and outputs are written to that width)
html_static_path = ["_static"]
html_css_files = ["wide.css"]


# nbdev's directives: `#| name[:] value` comment lines at the top of a code cell
_DIRECTIVE = re.compile(r"^\s*#\s*\|\s*([\w-]+)\s*:?\s*(.*?)\s*$")
_DROP = {"hide", "default_exp"}  # cells nbdev leaves out of its documentation


def nbdev_cells(nb: dict) -> dict:
    """The notebook `nb` (nbformat JSON) as nbdev's documentation shows it: cells with `#| hide` (or
    `#| include: false`) and the `#| default_exp` cell are removed, the directive lines are removed from every other
    code cell, `#| echo: false` hides a cell's source and `#| output: false` its outputs (MyST-NB's remove-input and
    remove-output tags). Returns a new dict; `nb` is not changed."""
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            cells.append(cell)
            continue
        lines = "".join(cell["source"]).splitlines(keepends=True)
        directives = {}
        while lines and (m := _DIRECTIVE.match(lines[0])):
            directives[m.group(1)] = m.group(2)
            lines.pop(0)
        if _DROP & set(directives) or directives.get("include", "").lower() == "false":
            continue
        tags = list(cell.get("metadata", {}).get("tags", []))
        if directives.get("echo", "").lower() == "false":
            tags.append("remove-input")
        if directives.get("output", "").lower() == "false":
            tags.append("remove-output")
        metadata = {**cell.get("metadata", {}), **({"tags": tags} if tags else {})}
        cells.append({**cell, "source": "".join(lines).lstrip("\n"), "metadata": metadata})
    return {**nb, "cells": cells}


def _strip_directives(app, docname: str, source: list) -> None:
    "Sphinx `source-read` hook: MyST-NB parses the notebook text handed on here, so it gets `nbdev_cells` of it."
    if app.env.doc2path(docname).suffix == ".ipynb":
        source[0] = json.dumps(nbdev_cells(json.loads(source[0])))


_IPYNB_LINK = re.compile(r'(href=")(?![a-zA-Z][a-zA-Z0-9+.-]*:)([^"?]+?)\.ipynb((?:#[^"]*)?")')


def _ipynb_links(app, exception) -> None:
    """Sphinx `build-finished` hook: a link to a notebook written inside a cell's output (the results page lists every
    report that way, as `name.ipynb`, so that it also works where the notebook itself is read) is not rewritten by
    MyST-NB, which resolves links in Markdown cells only. Here every local `href="….ipynb"` whose page the site holds
    becomes `….html`; a link to a notebook the site lacks is left as it is, and `tests/test_site.py`'s link crawl
    fails on it."""
    if exception is not None or app.builder.format != "html":
        return
    from html import unescape
    from urllib.parse import unquote
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")  # attribute values are HTML-escaped ("@" as "&#64;")
        fixed = _IPYNB_LINK.sub(lambda m: f"{m.group(1)}{m.group(2)}.html{m.group(3)}"
                                if (page.parent / f"{unquote(unescape(m.group(2)))}.html").exists() else m.group(0), text)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")


def setup(app):
    app.connect("source-read", _strip_directives)
    app.connect("build-finished", _ipynb_links)
    # sphinx-mathjax-offline only sets mathjax_path and copies its files once the build has finished: it is safe for
    # parallel reading, but does not say so (Sphinx would then read serially, with a warning)
    app.extensions["sphinx-mathjax-offline"].parallel_read_safe = True
