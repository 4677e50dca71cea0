#!/usr/bin/env bash
# The whole test suite. Creates or reuses .venv with the pinned requirements, checks that the generated package
# delta_repro/ is in sync with the notebooks, runs the notebooks' own tests (nbdev-test), then pytest.
# Before pytest it runs the smoke profile of reproduce.sh (the tests check its artefacts; DELTA_SKIP_SMOKE=1 skips it),
# and meanwhile, in the background, creates or reuses the optional vLLM environment .venv-vllm for tests/test_vllm.py
# (DELTA_SKIP_VLLM=1 skips it; the test then skips, saying so) and the optional verl environment .venv-verl for
# tests/test_verl.py (DELTA_SKIP_VERL=1 skips it, likewise). CI runs all of them. Each phase prints its time, and
# pytest lists its 30 slowest tests (docs/develop.md has where CI's time goes). Beside them it checks that published
# equals produced: the committed cpu reports remade from the per-run archive come back byte for byte
# (scripts/check_published.sh; DELTA_SKIP_PUBLISHED=1 skips it).
# pytest includes what a user of `pip install delta_repro` gets (tests/test_packaging.py, scripts/check_wheel.py): the
# sdist and the wheel built and checked (twine), the wheel installed into a fresh venv with the pinned torch, and the
# README's example run from outside the clone with an empty cache (~4 min on 2 busy cores with pip's cache warm).
# Extra arguments go to pytest, e.g. `bash test.sh -k coefficients`.
set -euo pipefail
cd "$(dirname "$0")"
_t0=$SECONDS
_phase() { echo "[test] $1 took $((SECONDS - $2)) s"; }
export DELTA_WANT_BROWSER=1  # scripts/env.sh installs headless Chromium for tests/test_site.py when it can
source scripts/env.sh
_phase ".venv (scripts/env.sh)" "$_t0"

# The optional vLLM and verl environments are built in the background while the notebooks and the smoke profile run
# (pip mostly waits on the disk; the smoke profile on the CPU); pytest starts once both are ready. A failed build
# prints its log and fails the suite, as before.
_logs="$PWD/runs/test-logs"; mkdir -p "$_logs"
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT  # a suite that stops early stops its background builds too
_bg_env() {  # NAME SCRIPT: start SCRIPT in the background, its log in $_logs/NAME.log
  echo "[test] building the optional $1 environment in the background (bash $2; log: runs/test-logs/$1.log)"
  ( _s=$SECONDS; bash "$2" > "$_logs/$1.log" 2>&1; _rc=$?; echo "[test] the $1 environment took $((SECONDS - _s)) s" >> "$_logs/$1.log"; exit $_rc ) &
}
_wait_env() {  # NAME PID
  if ! wait "$2"; then cat "$_logs/$1.log" >&2; echo "FAILED: building the optional $1 environment (log above)" >&2; exit 1; fi
  tail -n 2 "$_logs/$1.log"
}
if [ "${DELTA_SKIP_VLLM:-0}" != 1 ]; then
  # vLLM's CPU build beside the pinned stack (scripts/vllm_env.sh): ~4 GB, ~4 min the first time on this 2-core
  # machine with pip's cache warm, seconds afterwards; tests/test_vllm.py then takes ~75 s.
  _bg_env vllm scripts/vllm_env.sh; _vllm_pid=$!
  export DELTA_VLLM_PYTHON="${DELTA_VLLM_VENV:-$PWD/.venv-vllm}/bin/python"
fi
if [ "${DELTA_SKIP_VERL:-0}" != 1 ]; then
  # verl 0.9.1 beside the pinned stack (scripts/verl_env.sh; it needs transformers < 5.11): ~2 GB, ~5 min the first
  # time on this 2-core machine, seconds afterwards; tests/test_verl.py then takes ~2.5 min.
  _bg_env verl scripts/verl_env.sh; _verl_pid=$!
  export DELTA_VERL_PYTHON="${DELTA_VERL_VENV:-$PWD/.venv-verl}/bin/python"
fi

_t=$SECONDS
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

if [ "${DELTA_SKIP_PUBLISHED:-0}" != 1 ]; then
  # Published equals produced (scripts/check_published.sh): a clean clone's `reproduce.sh --profile cpu --reports-only`
  # must give back every committed cpu report byte for byte, apart from the timings figures/machine_dependent.txt
  # declares. About 11 minutes of mostly one core beside two busy ones (docs/develop.md), so it runs beside the notebooks and the smoke profile (started once nbdev-export has
  # rewritten delta_repro/, so that no report imports a module while it is written); on a tree with
  # changes of its own it is skipped, saying so (CI's clone is always clean). DELTA_SKIP_PUBLISHED=1 skips it.
  echo "[test] remaking the cpu reports in the background (bash scripts/check_published.sh; log: runs/test-logs/published.log)"
  ( _s=$SECONDS; bash scripts/check_published.sh > "$_logs/published.log" 2>&1; _rc=$?
    echo "[test] the published-equals-produced check took $((SECONDS - _s)) s" >> "$_logs/published.log"; exit $_rc ) &
  _published_pid=$!
fi

echo "[test] nbdev-test: executing the library notebooks"
nbdev-test --n-workers 0 --timing --skip-folder-re "^experiments$"  # in-process: fork-based workers and our
# grading/sandbox subprocesses do not mix
_phase "nbdev-export and nbdev-test" "$_t"

if [ "${DELTA_SKIP_SMOKE:-0}" != 1 ]; then
  echo "[test] the smoke profile of reproduce.sh (every artefact from tiny models; about 10 minutes)"
  _t=$SECONDS
  bash reproduce.sh --profile smoke
  export DELTA_SMOKE_RAN=1
  _phase "the smoke profile" "$_t"
fi

_t=$SECONDS
[ -n "${_vllm_pid:-}" ] && _wait_env vllm "$_vllm_pid"
[ -n "${_verl_pid:-}" ] && _wait_env verl "$_verl_pid"
if [ -n "${_published_pid:-}" ]; then
  _rc=0; wait "$_published_pid" || _rc=$?
  if [ "$_rc" = 3 ]; then echo "[test] published-equals-produced check skipped: this tree has changes of its own (it needs a clean clone)"; tail -n 20 "$_logs/published.log"
  elif [ "$_rc" != 0 ]; then tail -n 60 "$_logs/published.log" >&2; echo "FAILED: published is not produced (log above)" >&2; exit 1
  else tail -n 2 "$_logs/published.log"; fi
fi
_phase "waiting for the optional environments and the published-reports check" "$_t"

echo "[test] pytest, $((SECONDS - _t0)) s into the suite (its 30 slowest tests are listed before its summary line)"
python -m pytest --durations=30 "$@"
