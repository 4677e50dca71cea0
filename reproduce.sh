#!/usr/bin/env bash
# The main job: regenerate every table and figure of the paper at the scale this machine allows.
#
#   bash reproduce.sh [--profile smoke|cpu|gpu1|paper] [--only ARTEFACT ...] [--jobs N] [--dry-run | --reports-only]
#
#   --profile  smoke: tiny models, a few steps, every artefact in minutes (CI runs it; no evidence about the method)
#              cpu:   the default without a GPU: real RL on offline tasks, 2 cores / 24 GB. Finished runs are archived
#                     in figures/cpu/runs/ and restored first, so a fresh clone trains only what the archive lacks (today
#                     the replication study's runs: a SmolLM2 run trains about 50 min (median of the SmolLM2 study's 24 runs,
#                     two at a time on two cores: `figures/cpu/run_times.csv`), then is evaluated) and remakes every report;
#                     --retrain trains every run again: many hours (docs/reproduce.md gives the measured times)
#              gpu1:  Qwen3-0.6B-Base on MATH with vLLM, DelTA vs DAPO (3 seeds) and ablations, ~a day on one 80 GB GPU
#                     (the default when nvidia-smi sees exactly one GPU)
#              paper: the paper's models and data on 8 GPUs with vLLM (the default when nvidia-smi sees several GPUs)
#   --only     restrict to some artefacts (e.g. --only table1_main fig2_dynamics): their runs and reports only
#   --jobs     runs trained at a time, each with its share of the cores (default: 2 for cpu, 1 otherwise)
#   --dry-run  validate the plan and print it (runs, status, artefacts; estimated GPU-hours for gpu1 and paper)
#   --reports-only  train and evaluate nothing: regenerate the reports from the runs that exist (missing ones show as such)
#   --retrain  do not restore the committed per-run archive (figures/<profile>/runs/*.tar.gz) into runs/<profile>/runs:
#              train every run that folder lacks (runs already trained there are still skipped, never overwritten;
#              for a full retrain use a fresh clone or move runs/<profile> aside)
#
# Finished runs of a profile are committed, without checkpoints, as figures/<profile>/runs/<run_id>.tar.gz
# (scripts/archive_runs.py); unless --retrain is given they are unpacked first, so a fresh clone's --reports-only
# remakes every report from them and a full run trains only what the archive lacks.
# Creates or reuses .venv (scripts/env.sh). Runs train through nbs/experiments/train.ipynb and are evaluated through
# nbs/experiments/evaluate.ipynb (papermill; for gpu1 and paper: scripts/train_run.py), then one
# report notebook per artefact writes figures/<profile>/<artefact>.{png,pdf,md,tex,csv}. Executed notebooks are kept
# under runs/<profile>/notebooks/. Interrupt it at any time and run it again: finished runs are skipped (never
# overwritten), unfinished ones resume from their last checkpoint.
{  # the whole script is one block: bash reads it all before running any of it, so editing this file while a
   # long run executes it (hours) cannot make the running copy read a shifted line (it did once: "e: command not found")
set -euo pipefail
cd "$(dirname "$0")"
# Ctrl-C stops the whole job, not just the notebook in flight (papermill catches SIGINT and exits 1, which would
# otherwise count as one failed run and move on to the next). Bash runs the trap once that notebook has returned.
# A TERM sent to this script alone (`kill PID`) reaches no child, so the trap stops every process below this one,
# deepest first (the training kernels, papermill, the --jobs subshells): none trains on after the script has ended.
_descendants() { local c; for c in $(pgrep -P "$1" 2>/dev/null); do _descendants "$c"; echo "$c"; done; }
trap 'kill $(_descendants $$) $(jobs -p) 2>/dev/null || true; echo; echo "[reproduce] interrupted: finished runs are kept; run the same command again to resume" >&2; exit 130' INT TERM

usage_error() { echo "reproduce.sh: $* (see --help)" >&2; exit 2; }
profile=""; profile_set=0; dry_run=0; reports_only=0; retrain=0; only=(); jobs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) [ $# -ge 2 ] || usage_error "--profile needs smoke, cpu, gpu1 or paper"
               profile="$2"; profile_set=1; shift 2 ;;
    --profile=*) profile="${1#*=}"; profile_set=1; shift ;;
    --only) shift; n=0
            while [ $# -gt 0 ] && [[ "$1" != --* ]]; do only+=("$1"); shift; n=$((n + 1)); done
            # an empty --only would otherwise mean "every artefact": hours of work nobody asked for
            [ "$n" -gt 0 ] || usage_error "--only needs at least one artefact name" ;;
    --jobs) { [ $# -ge 2 ] && [[ "$2" != --* ]]; } || usage_error "--jobs needs a positive integer"
            jobs="$2"; shift 2 ;;
    --jobs=*) jobs="${1#*=}"; [ -n "$jobs" ] || usage_error "--jobs needs a positive integer"; shift ;;
    --dry-run) dry_run=1; shift ;;
    --reports-only) reports_only=1; shift ;;
    --retrain) retrain=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;  # the comment block above
    *) usage_error "unknown argument '$1'" ;;
  esac
done
# an explicitly empty profile (--profile= or --profile "") is a mistake, not a request for the default
[ "$profile_set" = 1 ] && [ -z "$profile" ] && usage_error "--profile needs smoke, cpu, gpu1 or paper, got an empty value"
[ "$dry_run" = 1 ] && [ "$reports_only" = 1 ] && usage_error "--dry-run and --reports-only cannot be combined (one runs nothing, the other writes reports)"
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
n_gpus=$(delta_gpu_count)
if [ -z "$profile" ]; then
  case "$n_gpus" in 0) profile=cpu ;; 1) profile=gpu1 ;; *) profile=paper ;; esac
fi
# DeepSpeed, imported by accelerate in every run and report notebook, warns on a machine without a GPU that it fell
# back to the CPU; saying so up front keeps that line out of the executed notebooks (nbs/03 and nbs/06 do the same)
[ "$n_gpus" -gt 0 ] || export DS_ACCELERATOR="${DS_ACCELERATOR:-cpu}"
case "$profile" in smoke|cpu|gpu1|paper) ;; *) echo "reproduce.sh: --profile must be smoke, cpu, gpu1 or paper, got '$profile'" >&2; exit 2 ;; esac
# runs at a time: cpu trains two tiny runs side by side, one core each (a tiny model uses a second core poorly);
# paper one (each run takes all 8 GPUs)
[ -z "$jobs" ] && { [ "$profile" = cpu ] && jobs=2 || jobs=1; }
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || usage_error "--jobs must be a positive integer, got '$jobs'"

source scripts/env.sh
root="$(pwd)"
runs="$root/runs/$profile/runs"; nbout="$root/runs/$profile/notebooks"; figs="$root/figures/$profile"
mkdir -p "$runs" "$nbout/train" "$nbout/evaluate" "$nbout/report" "$figs"
export DELTA_REPRO_CACHE="${DELTA_REPRO_CACHE:-$root/runs/cache}"
# the committed per-run archive: runs (and tiny warm starts) finished in earlier sessions or on other machines
if [ "$retrain" = 0 ] && [ -d "figures/$profile/runs" ]; then
  python scripts/archive_runs.py --profile "$profile" --runs-dir "$runs" --restore
fi

# The plan: validated once; the runs (and reports) to do, restricted by --only. A dry run is printed by the same
# Python process (one import of the library, not three: a dry run took 51 s, most of it importing TRL three times).
gpus=""; [ "$profile" = paper ] && gpus=8; [ "$profile" = gpu1 ] && gpus=1
plan_txt="$(python - "$profile" "$runs" "$dry_run" "$gpus" "${only[@]}" <<'PY'
import sys
from pathlib import Path
from delta_repro.experiments import load_plan, run_order
profile, runs_dir, dry, gpus, only = sys.argv[1], Path(sys.argv[2]), sys.argv[3] == "1", sys.argv[4], sys.argv[5:]
plan = load_plan(f"configs/{profile}.yaml")
unknown = [a for a in only if a not in plan.artefact_runs]
if unknown: sys.exit(f"--only: {unknown} not in the {profile} plan; artefacts: {sorted(plan.artefact_runs)}")
arts = only or list(plan.artefact_runs)
run_ids = run_order(plan, arts)  # seeds of a comparison side by side, code-task runs last
if not dry:
    print("\n".join(f"RUN {r}" for r in run_ids))
    print("\n".join(f"ART {a}" for a in arts))
    sys.exit(0)
from delta_repro.experiments import FIXTURE_FILES, describe_plan, hub_reachable
from delta_repro.scores import warm_start_dir
# the overlap of every held-out set with the training data; hub data sets stand in as the test fixtures offline
fixtures = None if hub_reachable() else {k: Path("tests/fixtures") / v for k, v in FIXTURE_FILES.items()}
print(describe_plan(plan, runs_dir, int(gpus) if gpus else None, overlap=True, fixtures=fixtures))
todo = [r for r in run_ids if not (runs_dir / r / "eval.csv").exists()]
# the warm starts the runs to train need that are not evaluated yet (built first if not in the cache, then evaluated)
for bb, task in dict.fromkeys((plan.runs[r].backbone, plan.runs[r].task) for r in todo):
    ws = warm_start_dir(runs_dir, bb, task) / "eval.csv"
    print(f"  warm start {bb} / {task}: " + ("evaluated (archived or in runs/)" if ws.exists() else "would be built if not cached, then evaluated"))
print(f"[reproduce] dry run: {len(todo)} of {len(run_ids)} runs would be trained ({len(run_ids) - len(todo)} already trained "
      f"and evaluated), and {len(arts)} reports written; nothing was run.")
PY
)" || exit 2
if [ "$dry_run" = 1 ]; then printf '%s\n' "$plan_txt"; exit 0; fi
mapfile -t plan_lines <<< "$plan_txt"
run_ids=(); arts=()
for l in "${plan_lines[@]}"; do case "$l" in "RUN "*) run_ids+=("${l#RUN }") ;; "ART "*) arts+=("${l#ART }") ;; esac; done

pm() {  # papermill NOTEBOOK OUTPUT [-p name value ...]: execute a notebook from nbs/experiments with parameters
  local nb="$1" out="$2"; shift 2
  # the kernel's start-up warnings and third-party chatter go to a log beside the executed notebook, not the terminal
  local log="${out%.ipynb}.log"
  # no progress bars (transformers, datasets) and no ipywidgets notice in the executed notebooks: they are pages of the site
  (cd nbs/experiments && HF_HUB_DISABLE_PROGRESS_BARS=1 HF_DATASETS_DISABLE_PROGRESS_BARS=1 \
     PYTHONWARNINGS="ignore:IProgress not found" papermill --cwd . -k python3 --no-progress-bar --log-level WARNING "$nb" "$out" \
     -p profile "$profile" -p config_dir "$root/configs" "$@" >/dev/null 2>"$log") \
    || { echo "[reproduce] $(basename "$out" .ipynb) failed; the end of $log:" >&2; tail -n 5 "$log" >&2; return 1; }
}
failed=()
written=()  # the reports whose notebook ran to the end in this call
start=$(date +%s)
todo=()
for rid in "${run_ids[@]}"; do
  if [ -f "$runs/$rid/eval.csv" ]; then echo "[reproduce] $rid: done, skipped"
  elif [ "$reports_only" = 1 ]; then echo "[reproduce] $rid: not run (--reports-only)"
  else todo+=("$rid"); fi
done
# smoke: every run in one kernel (imports dominate tiny runs); cpu: one executed notebook per run, for inspection,
# `jobs` runs at a time (each with its share of the cores: tiny models use one core poorly); paper: accelerate.
status="$root/runs/$profile/.status.$$"; mkdir -p "$status"  # this invocation's outcomes (another may run beside it)
batch=1; [ "$profile" = smoke ] && { batch=${#todo[@]}; jobs=1; }
[ "$batch" -lt 1 ] && batch=1
cores=$(nproc 2>/dev/null || echo 2); threads=$(( cores / jobs )); [ "$threads" -lt 1 ] && threads=1
hms() { printf '%dh%02dm' $(( $1 / 3600 )) $(( $1 % 3600 / 60 )); }
run_chunk() {  # run_chunk NAME IDS: train then evaluate; writes its outcome and duration under $status
  local name="$1" ids="$2" t0; t0=$(date +%s)
  if [ "$profile" = paper ]; then
    accelerate launch --config_file configs/accelerate/deepspeed_zero3_1x8.yaml scripts/train_run.py \
      --profile paper --run-id "$ids" --runs-dir "$runs" || { echo "train:$ids" > "$status/$name.failed"; return; }
  elif [ "$profile" = gpu1 ]; then  # one process; evaluation in a fresh one, after the colocated vLLM engine is gone
    python scripts/train_run.py --profile gpu1 --run-id "$ids" --runs-dir "$runs" --no-eval || { echo "train:$ids" > "$status/$name.failed"; return; }
    python scripts/train_run.py --profile gpu1 --run-id "$ids" --runs-dir "$runs" --eval-only || { echo "eval:$ids" > "$status/$name.failed"; return; }
  else
    pm train.ipynb "$nbout/train/$name.ipynb" -p run_ids "$ids" -p runs_dir "$runs" || { echo "train:$name" > "$status/$name.failed"; return; }
    pm evaluate.ipynb "$nbout/evaluate/$name.ipynb" -p run_ids "$ids" -p runs_dir "$runs" || { echo "eval:$name" > "$status/$name.failed"; return; }
  fi
  echo $(( $(date +%s) - t0 )) > "$status/$name.seconds"
}
n_chunks=$(( (${#todo[@]} + batch - 1) / batch )); k=0
for ((i = 0; i < ${#todo[@]}; i += batch)); do
  chunk=("${todo[@]:i:batch}")
  ids=$(IFS=,; echo "${chunk[*]}")
  name="${chunk[0]}"; [ ${#chunk[@]} -gt 1 ] && name="batch-$i-${#chunk[@]}runs"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n 2>/dev/null || true; done
  k=$((k + 1)); elapsed=$(( $(date +%s) - start ))
  finished=$(find "$status" -name '*.seconds' | wc -l); eta=""
  if [ "$finished" -gt 0 ]; then
    mean=$(find "$status" -name '*.seconds' -exec cat {} + | awk '{s += $1} END {print int(s / NR)}')
    eta=", ~$(hms $(( mean * (n_chunks - finished) / jobs ))) left"
  fi
  echo "[reproduce] run $k/$n_chunks: ${ids//,/ } ($(hms "$elapsed") elapsed$eta)"
  OMP_NUM_THREADS=$threads run_chunk "$name" "$ids" &
done
wait
for f in "$status"/*.failed; do [ -f "$f" ] && failed+=("$(cat "$f")"); done
rm -rf "$status"

for art in "${arts[@]}"; do
  nb="${art}.ipynb"
  [ -f "nbs/experiments/$nb" ] || nb="${art%%@*}.ipynb"
  [ -f "nbs/experiments/$nb" ] || nb="report_table.ipynb"  # every comparison table (reporting.REPORT_TABLES)
  echo "[reproduce] report $art"
  args=(-p runs_dir "$runs" -p figures_dir "$figs")
  [ "${art%%@*}" = appL1_overhead ] && args=(-p figures_dir "$figs")
  { [[ "$art" == *@* ]] || [ "$nb" = report_table.ipynb ]; } && args+=(-p artefact "$art")
  # the executed report beside its figures (figures/<profile>/notebooks/), so that a fresh clone's site shows it;
  # not for smoke, whose numbers are no evidence (its copies stay under runs/smoke/notebooks/)
  pm "$nb" "$nbout/report/$art.ipynb" "${args[@]}" \
    && { [ "$profile" = smoke ] || python scripts/publish_report.py "$nbout/report/$art.ipynb" "$figs/notebooks/$art.ipynb" "$root" >/dev/null; } \
    && written+=("$art") \
    || { failed+=("report:$art"); echo "[reproduce] report $art FAILED: its files in $figs/ are not remade (see $nbout/report/$art.ipynb)" >&2; }
done

echo
echo "[reproduce] summary — profile $profile, $(( $(date +%s) - start )) s"
not_written=()
for art in "${arts[@]}"; do [[ " ${written[*]} " == *" $art "* ]] || not_written+=("$art"); done
# a report counts as written only when its notebook ran to the end in this call: files left from an earlier run are not
echo "  ${#written[@]} of ${#arts[@]} reports written${written:+ (${written[*]})}${not_written:+; not written: ${not_written[*]}}"
if [ ${#not_written[@]} -eq 0 ]; then
  echo; echo "[reproduce] key numbers at the $profile scale (full tables: learning.md, claims.md):"
  python -c "from delta_repro.reporting import key_numbers; print(key_numbers('$figs'))" | sed 's/^/  /' || true
else
  echo "  key numbers not printed: a report was not written, so $figs/ may hold numbers of an earlier run"
fi
echo "  executed notebooks: runs/$profile/notebooks/   figures and tables: figures/$profile/"
if [ ${#failed[@]} -gt 0 ]; then echo "[reproduce] FAILED: ${failed[*]} (see the executed notebooks)" >&2; exit 1; fi
exit 0
}
