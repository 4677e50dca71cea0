#!/usr/bin/env bash
# The whole test suite. Creates or reuses .venv with the pinned requirements, checks that the generated package
# delta_repro/ is in sync with the notebooks, runs the notebooks' own tests (nbdev-test), then pytest.
# Then it runs the smoke profile of reproduce.sh (the tests check its artefacts; DELTA_SKIP_SMOKE=1 skips it), and
# creates or reuses the optional vLLM environment .venv-vllm for tests/test_vllm.py (DELTA_SKIP_VLLM=1 skips it; the
# test then skips, saying so), and the optional verl environment .venv-verl for tests/test_verl.py (DELTA_SKIP_VERL=1
# skips it, likewise). CI runs all of them.
# pytest includes what a user of `pip install delta_repro` gets (tests/test_packaging.py, scripts/check_wheel.py): the
# sdist and the wheel built and checked (twine), the wheel installed into a fresh venv with the pinned torch, and the
# README's example run from outside the clone with an empty cache (~4 min on 2 busy cores with pip's cache warm).
# Extra arguments go to pytest, e.g. `bash test.sh -k coefficients`.
set -euo pipefail
cd "$(dirname "$0")"
export DELTA_WANT_BROWSER=1  # scripts/env.sh installs headless Chromium for tests/test_site.py when it can
source scripts/env.sh

echo "[test] nbdev-export must leave delta_repro/ unchanged"
_snap() { find delta_repro -name '*.py' -print0 | sort -z | xargs -0 sha256sum; }
before="$(_snap)"
nbdev-export
after="$(_snap)"
if [ "$before" != "$after" ]; then
  diff <(echo "$before") <(echo "$after") || true
  echo "FAILED: nbdev-export changed delta_repro/ — the committed modules were out of sync with nbs/." >&2
  exit 1
fi

echo "[test] nbdev-test: executing the library notebooks"
nbdev-test --n-workers 0 --timing --skip-folder-re "^experiments$"  # in-process: fork-based workers and our
# grading/sandbox subprocesses do not mix

if [ "${DELTA_SKIP_SMOKE:-0}" != 1 ]; then
  echo "[test] the smoke profile of reproduce.sh (every artefact from tiny models; about 10 minutes)"
  bash reproduce.sh --profile smoke
  export DELTA_SMOKE_RAN=1
fi

if [ "${DELTA_SKIP_VLLM:-0}" != 1 ]; then
  # vLLM's CPU build beside the pinned stack (scripts/vllm_env.sh): ~4 GB, ~4 min the first time on this 2-core
  # machine with pip's cache warm, seconds afterwards; tests/test_vllm.py then takes ~75 s.
  echo "[test] the optional vLLM environment .venv-vllm (DELTA_SKIP_VLLM=1 skips it and tests/test_vllm.py)"
  bash scripts/vllm_env.sh
  export DELTA_VLLM_PYTHON="${DELTA_VLLM_VENV:-$PWD/.venv-vllm}/bin/python"
fi

if [ "${DELTA_SKIP_VERL:-0}" != 1 ]; then
  # verl 0.9.1 beside the pinned stack (scripts/verl_env.sh; it needs transformers < 5.11): ~2 GB, ~5 min the first
  # time on this 2-core machine, seconds afterwards; tests/test_verl.py then takes ~2.5 min.
  echo "[test] the optional verl environment .venv-verl (DELTA_SKIP_VERL=1 skips it and tests/test_verl.py)"
  bash scripts/verl_env.sh
  export DELTA_VERL_PYTHON="${DELTA_VERL_VENV:-$PWD/.venv-verl}/bin/python"
fi

echo "[test] pytest"
python -m pytest "$@"
