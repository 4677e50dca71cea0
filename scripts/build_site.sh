#!/usr/bin/env bash
# Build the static HTML site — README, the index notebook, the library notebooks with their committed outputs and
# the experiment notebooks — into _site/ (or the folder given as $1), offline, executing nothing (Sphinx + MyST-NB,
# configured in docs/conf.py). Open _site/index.html. The site needs no network: math is typeset by the local copy
# of MathJax that the pinned sphinx-mathjax-offline copies into _static/mathjax/, and no page refers to an address
# outside the site (tests/test_site.py).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${VIRTUAL_ENV:-}" ]; then source scripts/env.sh; fi
out="${1:-_site}"
python -m sphinx -q -b html -j auto -c docs . "$out"
echo "[site] built: $out/index.html"
