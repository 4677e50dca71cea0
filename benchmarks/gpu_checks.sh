#!/usr/bin/env bash
# GPU checks, one script for a short lease of one GPU (written for an H200 with PyTorch already installed).
#
#   OUT=gpu_out bash benchmarks/gpu_checks.sh
#   SECTIONS="4 5" SKIP_WHEELS=pyarrow bash benchmarks/gpu_checks.sh     # a rerun of some sections
#
# Wheels in .whl/ (trl, datasets and what they need that the machine lacks) are installed first, under a path that
# contains "site-packages": dill (through datasets' fingerprinting) pickles modules from any other path by value.
# Each section has its own time cap and logs to $OUT; a failing section does not stop the next one.
#   1. environment: GPU, versions;
#   2. coefficient speed and memory at d = 4096 (bf16 proxies, 1e5 to 4e6 tokens), and the bandwidth ratio against a
#      bf16 matvec over the same array, benchmarks/coefficients.py;
#   3. bf16 precision of λ̄ at d = 4096 and 1e6 tokens, benchmarks/precision.py;
#   4. DelTA's step overhead over DAPO with TRL's bf16 mixed precision, benchmarks/overhead.py;
#   5. the trainer tests on CUDA (float32): DELTA_REPRO_TEST_DEVICE=cuda pytest tests/test_trainer.py ...
#   6. peak GPU memory of each proxy_cache option through the trainer, benchmarks/memory.py --device cuda (added with
#      the 'host' option; not yet run on a GPU).
# vLLM rollouts are not checked here: the vllm 0.31.0 wheel alone is 305 MiB, over what a lease can carry.
set -u
OUT=${OUT:-$PWD/gpu_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
PY=${PY:-python3}
SECTIONS=${SECTIONS:-1 2 3 4 5 6}
wheels=$(ls .whl/*.whl 2>/dev/null | grep -vE "${SKIP_WHEELS:-^$}")
if [ -n "$wheels" ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/wheels/site-packages $wheels \
    && export PYTHONPATH=$PYTHONPATH:/tmp/wheels/site-packages
fi
section() { echo; echo "=== $1 ($(date +%T))"; [[ " $SECTIONS " == *" ${1%%.*} "* ]]; }
{
  section "1. environment" && {
  nvidia-smi -L || true
  $PY -c "import torch, transformers, accelerate; print('torch', torch.__version__, 'cuda', torch.version.cuda,
torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'no GPU'); print('transformers', transformers.__version__,
'accelerate', accelerate.__version__)"
  $PY -c "import trl, datasets, pyarrow, fsspec; print('trl', trl.__version__, 'datasets', datasets.__version__,
'pyarrow', pyarrow.__version__, 'fsspec', fsspec.__version__)" || echo "trl/datasets import FAILED"; }

  section "2. coefficient speed, d=4096" && {
  timeout 150 $PY benchmarks/coefficients.py --sizes 1e5 1e6 4e6 --dtype bfloat16 --device cuda \
    --json "$OUT/coefficients_bf16.json" || echo "section 2 FAILED ($?)"
  timeout 40 $PY benchmarks/coefficients.py --sizes 1e6 --dtype float32 --device cuda \
    --json "$OUT/coefficients_fp32.json" || echo "section 2b FAILED ($?)"; }

  section "3. bf16 precision of the coefficients" && { timeout 60 $PY benchmarks/precision.py --device cuda \
    --tokens 1e6 --json "$OUT/precision.json" || echo "section 3 FAILED ($?)"; }

  section "4. step overhead, bf16" && { timeout 200 $PY benchmarks/overhead.py --device cuda --bf16 \
    --sizes 30m 0.6b-shape 8b-width --rounds 3 --csv "$OUT/overhead_bf16.csv" || echo "section 4 FAILED ($?)"; }

  section "5. trainer tests on CUDA" && { DELTA_REPRO_TEST_DEVICE=cuda timeout 150 $PY -m pytest -q \
    -p no:cacheprovider tests/test_trainer.py tests/test_trl_contract.py --junitxml="$OUT/pytest_cuda.xml" 2>&1 | tail -40; }
  section "6. proxy memory per proxy_cache option on CUDA" && { timeout 300 $PY benchmarks/memory.py --device cuda \
    --d 1024 --completions 64 --tokens 1024 --micro 8 --json "$OUT/memory_cuda.json" || echo "section 6 FAILED ($?)"; }
  section "done"; true
} 2>&1 | tee "$OUT/gpu_checks.log"
