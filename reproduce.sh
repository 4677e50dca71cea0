#!/usr/bin/env bash
# The main job: regenerate the paper's artefacts at the scale this machine allows.
#   bash reproduce.sh [--profile smoke|cpu|paper] [--only ARTEFACT ...] [--dry-run]
# Creates or reuses .venv (scripts/env.sh), then executes notebooks with papermill; executed copies are kept
# under runs/<profile>/ for inspection.
#
# Status: the package foundation (proxies, coefficients) exists; the training, evaluation and report notebooks
# that produce the tables and figures are still being built (issues 3-5). Until then this script executes the
# library notebooks that exist and says plainly which artefacts are not produced yet.
set -euo pipefail
cd "$(dirname "$0")"

profile=""; dry_run=0; only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) profile="${2:?--profile needs smoke|cpu|paper}"; shift 2 ;;
    --profile=*) profile="${1#*=}"; shift ;;
    --only) shift; while [ $# -gt 0 ] && [[ "$1" != --* ]]; do only+=("$1"); shift; done ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [ -z "$profile" ]; then
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then profile=paper; else profile=cpu; fi
fi
case "$profile" in smoke|cpu|paper) ;; *) echo "--profile must be smoke, cpu or paper, got '$profile'" >&2; exit 2 ;; esac

source scripts/env.sh
out="runs/$profile/notebooks"
mkdir -p "$out" figures
echo "[reproduce] profile=$profile  outputs: $out/"
done_list=(); for nb in nbs/[0-9][0-9]_*.ipynb; do
  name="$(basename "$nb")"
  if [ ${#only[@]} -gt 0 ] && [[ ! " ${only[*]} " == *" ${name%.ipynb} "* ]]; then continue; fi
  if [ "$dry_run" = 1 ]; then echo "  would execute $nb -> $out/$name"; continue; fi
  echo "[reproduce] executing $nb"
  (cd nbs && papermill --cwd . -k python3 --no-progress-bar "$name" "../$out/$name" >/dev/null)
  done_list+=("$out/$name")
done
echo
echo "[reproduce] summary (profile $profile)"
for f in "${done_list[@]}"; do echo "  done     $f"; done
echo "  pending  Tables 1-12, Fig. 1-5, App. K and L.1: experiment notebooks not implemented yet (issues 3-5)"
