#!/usr/bin/env bash
# Re-execute the library notebooks and save their outputs into them (pictures and printed checks are committed, so a
# reader sees them without running anything). Each notebook runs in-process as in test.sh (nbdev-test --save: the
# outputs are written back only if every cell succeeds), then nbdev-clean drops execution counts and metadata and
# keeps the outputs. Arguments: notebooks to execute (default: every nbs/*.ipynb; nbs/experiments/ is executed by
# reproduce.sh instead). About 10 minutes on 2 CPU cores.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${VIRTUAL_ENV:-}" ]; then source scripts/env.sh; fi
[ $# -gt 0 ] || set -- nbs/*.ipynb
for nb in "$@"; do
  echo "[notebooks] executing $nb"
  nbdev-test "$nb" --n-workers 0 --save
  nbdev-clean --fname "$nb"
done
