"""Sphinx configuration of the static site: the README, the index notebook, the library notebooks with their
committed outputs and the experiment notebooks, rendered by MyST-NB without executing anything.

Build it with `bash scripts/build_site.sh` (into `_site/`); `tests/test_site.py` builds it and opens every page in
headless Chromium."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
project = "delta_repro"
author = "delta_repro developers"
release = version = next(l.split('"')[1] for l in (ROOT / "delta_repro" / "__init__.py").read_text().splitlines()
                         if l.startswith("__version__"))

# The source directory is the repository root (scripts/build_site.sh runs `sphinx-build -c docs . _site`); only
# these files become pages.
root_doc = "docs/index"
include_patterns = ["docs/index.md", "README.md", "nbs/*.ipynb", "nbs/experiments/*.ipynb"]
exclude_patterns = ["_site", ".venv", "**/.ipynb_checkpoints"]

extensions = ["myst_nb"]
nb_execution_mode = "off"  # the committed outputs are the document (scripts/execute_notebooks.sh regenerates them)
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header", "misc.highlighting_failure"]  # notebooks' title-less first cells; IPython lexing

html_theme = "sphinx_book_theme"
html_title = "delta_repro"
html_theme_options = {"show_toc_level": 2}
html_show_sourcelink = False
html_extra_path = ["_extra"]  # index.html at the top of the site, pointing to docs/index.html
