#!/usr/bin/env bash
# The first hour on one GPU: checks of the machinery that end in minutes, to run before the gpu1 profile's hours.
# Each step runs on its own, with a time cap; a failing step does not stop the next. At the end a table gives each
# step's outcome, wall time and peak GPU memory (nvidia-smi sampled every second; "-" without a GPU).
#
#   bash scripts/first_hour.sh                # every step, logs under runs/first_hour/
#   STEPS="1 2 3" bash scripts/first_hour.sh  # some steps
#   FIRST_HOUR_OUT=/tmp/fh bash scripts/first_hour.sh
#
# Steps (the times are what a step took where it was measured; none of it has run as one script on a GPU yet):
#   1. environment: torch, CUDA, the GPU, the versions that matter (seconds)
#   2. the README's TRL example, 2 RL steps, on the device the example picks (30 s on 2 CPU cores)
#   3. the trainer tests on the device: DELTA_REPRO_TEST_DEVICE=cuda pytest tests/test_trainer.py
#      tests/test_trl_contract.py (32 of 32 passed on an H200, 2026-11-29; on CPU they are part of test.sh)
#   4. the README's example again with TRL's colocated vLLM rollouts, 2 steps (needs a GPU and
#      `pip install "delta_repro[vllm]"` or requirements-gpu.txt; skipped otherwise: on CPU, tests/test_vllm.py checks
#      vLLM rollouts with vLLM's CPU build)
#   5. the smoke profile, every artefact from tiny models (bash reproduce.sh --profile smoke; about 10 min on 2 CPU
#      cores, not yet timed on a GPU)
#   6. the gpu1 plan: bash reproduce.sh --profile gpu1 --dry-run (runs, overlaps of the data splits, GPU-hours;
#      seconds, after the MATH and AIME data are in the hub cache)
# Then: bash reproduce.sh --profile gpu1 (about 18 GPU-hours, an estimate; docs/reproduce.md).
#
# tests/test_first_hour.py runs steps 1, 2 and 4 of this script on CPU (4 then says it is skipped), and checks the
# table; steps 3, 5 and 6 on CPU are test.sh's own pytest and smoke profile and tests/test_gpu1_profile.py's dry run.
set -uo pipefail
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$_root"
STEPS="${STEPS:-1 2 3 4 5 6}"
OUT="${FIRST_HOUR_OUT:-$_root/runs/first_hour}"
for s in $STEPS; do
  case "$s" in [1-6]) ;; *) echo "first_hour: STEPS must list step numbers 1-6, got '$STEPS'" >&2; exit 2 ;; esac
done
mkdir -p "$OUT"
# shellcheck disable=SC1091
[ "${FIRST_HOUR_NO_ENV:-0}" = 1 ] || source scripts/env.sh
PY="${PY:-python}"
SUMMARY="$OUT/summary.tsv"
printf 'step\tname\toutcome\tseconds\tpeak_gpu_mib\n' > "$SUMMARY"
# shellcheck source=scripts/lib.sh
source scripts/lib.sh
has_gpu=0
[ "$(delta_gpu_count)" -gt 0 ] && has_gpu=1

# step N NAME CAP COMMAND...: runs COMMAND with a time cap of CAP seconds, its output in $OUT/stepN.log; exit code
# 77 means skipped (the command says why).
step() {
  local n="$1" name="$2" cap="$3"; shift 3
  [[ " $STEPS " == *" $n "* ]] || return 0
  echo "[first-hour] $n. $name (cap ${cap}s)"
  local peak_file="$OUT/step$n.gpu" sampler="" start end rc outcome peak="-"
  : > "$peak_file"
  if [ "$has_gpu" = 1 ]; then
    ( while sleep 1; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | head -1; done ) \
      >> "$peak_file" & sampler=$!
  fi
  start=$(date +%s)
  timeout "$cap" "$@" > "$OUT/step$n.log" 2>&1; rc=$?
  end=$(date +%s)
  [ -n "$sampler" ] && { kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null; }
  [ -s "$peak_file" ] && peak=$(sort -n "$peak_file" | tail -1)
  case "$rc" in 0) outcome=ok ;; 77) outcome=skipped ;; 124) outcome="timed out" ;; *) outcome="failed ($rc)" ;; esac
  printf '%s\t%s\t%s\t%s\t%s\n' "$n" "$name" "$outcome" "$((end - start))" "$peak" >> "$SUMMARY"
  echo "[first-hour] $n. $outcome; last lines of $OUT/step$n.log:"; tail -n 3 "$OUT/step$n.log" | sed 's/^/    /'
}

step 1 "environment" 120 "$PY" -c "
import torch, transformers, trl, accelerate, delta_repro
print('delta_repro', delta_repro.__version__, 'torch', torch.__version__, 'cuda', torch.version.cuda)
print('transformers', transformers.__version__, 'trl', trl.__version__, 'accelerate', accelerate.__version__)
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print('GPU', p.name, round(p.total_memory / 2**30, 1), 'GiB, bf16', torch.cuda.is_bf16_supported())
else:
    print('no GPU: torch sees none; the steps below run on CPU')"

export FH_ROOT="$_root" FH_OUT="$OUT" FH_PY="$PY" FH_GPU="$has_gpu"
step 2 "README example, 2 steps" 900 bash -c \
  'cd "$FH_OUT" && "$FH_PY" "$FH_ROOT/scripts/readme_example.py" "$FH_ROOT/README.md" 2'

step 3 "trainer tests on the device" 1200 bash -c '
if [ "$FH_GPU" = 1 ]; then export DELTA_REPRO_TEST_DEVICE=cuda; fi
"$FH_PY" -m pytest -q -p no:cacheprovider tests/test_trainer.py tests/test_trl_contract.py'

step 4 "README example with vLLM rollouts" 1200 bash -c '
"$FH_PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 77)" || {
  echo "skipped: no GPU (on CPU, tests/test_vllm.py checks vLLM rollouts with the CPU build of vLLM)"; exit 77; }
"$FH_PY" -c "import vllm" 2>/dev/null || {
  echo "skipped: vLLM is not installed (pip install \"delta_repro[vllm]\" or pip install -r requirements-gpu.txt)"; exit 77; }
cd "$FH_OUT" && "$FH_PY" "$FH_ROOT/scripts/readme_example.py" "$FH_ROOT/README.md" 2 --vllm'

step 5 "smoke profile" 3600 bash reproduce.sh --profile smoke

step 6 "gpu1 plan (dry run)" 600 bash reproduce.sh --profile gpu1 --dry-run

echo "[first-hour] summary ($SUMMARY):"
column -t -s $'\t' "$SUMMARY" 2>/dev/null || cat "$SUMMARY"
! grep -qE $'\t(failed|timed out)' "$SUMMARY"
