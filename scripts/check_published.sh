#!/usr/bin/env bash
# Published equals produced: remake every cpu report from the committed per-run archive
# (`bash reproduce.sh --profile cpu --reports-only`, less the reports whose page figures/machine_dependent.txt declares,
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
  # the reports whose executed page is declared machine-dependent (the overhead timings) are not remade: they would
  # differ anyway, and timing them beside the other work of a CI run takes longer than every other report together
  mapfile -t arts < <(.venv/bin/python - "${globs[@]}" <<'PY'
import fnmatch, sys
from delta_repro.experiments import load_plan
globs = sys.argv[1:]
for art in load_plan("configs/cpu.yaml").artefact_runs:
    if not any(fnmatch.fnmatch(f"figures/cpu/notebooks/{art}.ipynb", g) for g in globs): print(art)
PY
)
  [ "${#arts[@]}" -gt 0 ] || { echo "check_published.sh: no cpu artefact to remake" >&2; exit 2; }
  bash reproduce.sh --profile cpu --reports-only --only "${arts[@]}"
fi
after="$(undeclared)"
if [ -n "$after" ]; then
  echo "FAILED: published is not produced: these files differ after reproduce.sh --profile cpu --reports-only" >&2
  echo "(remake the reports with today's code and commit them, or declare a file machine-dependent in $declared):" >&2
  echo "$after" | sed 's/^/  /' >&2
  git diff --stat -- $(echo "$after" | tr '\n' ' ') >&2 || true
  exit 1
fi
echo "[published] every committed cpu report came back byte for byte ($(changed | wc -l | tr -d ' ') declared machine-dependent file(s) differ)"
