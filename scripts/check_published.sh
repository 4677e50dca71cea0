#!/usr/bin/env bash
# Published equals produced: remake every cpu report from the committed per-run archive
# (`bash reproduce.sh --profile cpu --reports-only`, less the reports whose table figures/machine_dependent.txt declares,
# the timings) and fail if any tracked file changed or any new file appeared, apart from the files declared there. Run it on a clean clone (test.sh does, in the
# background beside the smoke profile); on a clone with changes of its own it refuses, as it could not tell them apart.
#
#   bash scripts/check_published.sh [--no-remake]
#
#   --no-remake  skip reproduce.sh: only compare the working tree with HEAD (after a remake done some other way)
#
# Exit status: 0 when every report came back byte for byte, 1 when some did not (each named, with `git diff --stat`),
# 2 for a bad argument, 3 for a tree that was not clean to begin with (nothing is remade then).
set -euo pipefail
cd "$(dirname "$0")/.."
remake=1
for a in "$@"; do
  case "$a" in
    --no-remake) remake=0 ;;
    -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "check_published.sh: unknown argument '$a' (see --help)" >&2; exit 2 ;;
  esac
done
declared="figures/machine_dependent.txt"
[ -f "$declared" ] || { echo "check_published.sh: $declared is missing" >&2; exit 2; }
mapfile -t globs < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$declared")
changed() { git status --porcelain --untracked-files=all | cut -c4-; }
undeclared() {  # the changed paths no declared glob matches
  local p g hit
  while IFS= read -r p; do
    [ -n "$p" ] || continue
    hit=0; for g in "${globs[@]}"; do [[ "$p" == $g ]] && { hit=1; break; }; done
    [ "$hit" = 1 ] || echo "$p"
  done < <(changed)
}
if [ "$remake" = 1 ]; then
  before="$(undeclared)"
  if [ -n "$before" ]; then
    echo "check_published.sh: the tree has changes of its own before the remake; run it on a clean clone:" >&2
    echo "$before" >&2; exit 3
  fi
  # the reports whose table itself is declared machine-dependent (the overhead timings) are not remade: they would
  # differ anyway, and timing them beside the other work of a CI run takes longer than every other report together
  mapfile -t arts < <(.venv/bin/python - "${globs[@]}" <<'PY'
import fnmatch, sys
from delta_repro.experiments import load_plan
globs = sys.argv[1:]
for art in load_plan("configs/cpu.yaml").artefact_runs:
    if not any(fnmatch.fnmatch(f"figures/cpu/{art}.csv", g) for g in globs): print(art)  # its table declared: skip
PY
)
  [ "${#arts[@]}" -gt 0 ] || { echo "check_published.sh: no cpu artefact to remake" >&2; exit 2; }
  bash reproduce.sh --profile cpu --reports-only --only "${arts[@]}"
fi
after="$(undeclared)"
# a CSV is written at 6 significant digits (reporting.CSV_FORMAT); a value a forward pass computed on another CPU can
# still flip its last digit, so a changed CSV counts as the same where every number agrees to 1e-5 relative and every
# other cell is equal (the .md and .tex beside it, at 2 decimals, are compared byte for byte)
if [ -n "$after" ]; then
  after="$(echo "$after" | .venv/bin/python -c '
import subprocess, sys, io
import numpy as np, pandas as pd
for path in sys.stdin.read().split():
    same = False
    if path.endswith(".csv"):
        try:
            old = pd.read_csv(io.BytesIO(subprocess.run(["git", "show", f"HEAD:{path}"], capture_output=True, check=True).stdout))
            new = pd.read_csv(path)
            if list(old.columns) == list(new.columns) and old.shape == new.shape:
                num = [c for c in old.columns if pd.api.types.is_numeric_dtype(old[c]) and pd.api.types.is_numeric_dtype(new[c])]
                rest = [c for c in old.columns if c not in num]
                same = (np.allclose(old[num].to_numpy(float), new[num].to_numpy(float), rtol=1e-5, atol=1e-12, equal_nan=True)
                        and old[rest].astype(str).equals(new[rest].astype(str)))
        except (subprocess.CalledProcessError, ValueError, pd.errors.ParserError):
            same = False
    if same: print(f"[published] {path}: differs only below its stated precision (6 significant digits)", file=sys.stderr)
    else: print(path)
')"
fi
if [ -n "$after" ]; then
  echo "FAILED: published is not produced: these files differ after reproduce.sh --profile cpu --reports-only" >&2
  echo "(remake the reports with today's code and commit them, or declare a file machine-dependent in $declared):" >&2
  echo "$after" | sed 's/^/  /' >&2
  git diff --stat -- $(echo "$after" | tr '\n' ' ') >&2 || true
  exit 1
fi
echo "[published] every committed cpu report came back byte for byte ($(changed | wc -l | tr -d ' ') declared machine-dependent file(s) differ)"
