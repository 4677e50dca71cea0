#!/usr/bin/env bash
# The optional verl environment on a CPU machine: .venv-verl (git-ignored) with verl 0.9.1, the CPU torch of
# requirements.txt and this package without its dependencies (delta_repro.verl, the DelTA plugin for verl, imports
# there; TRL does not: see below).
# tests/test_verl.py runs there (test.sh calls it with this environment's python) and skips, saying why, where it is
# absent. On a GPU cluster install verl the way its documentation says and this package beside it (docs/scale.md).
#
#   bash scripts/verl_env.sh            # create or update .venv-verl
#   DELTA_VERL_VENV=/path bash scripts/verl_env.sh
#
# Facts this script depends on (verl 0.9.1's wheel metadata):
# - verl's base requirements name no torch (its extras pin torch 2.11 with CUDA builds); it runs its CPU loss tests
#   with any recent torch, so torch is pinned first to requirements.txt's CPU build (2.13.0), before anything can
#   pull in a CUDA build.
# - verl needs transformers >= 5.5.3, < 5.11 (not 5.6.0) and numpy >= 2: requirements.txt's transformers 5.17 does not
#   fit, so transformers is pinned to 5.9.0 (the one verl's own cpu extra pins).
# - No TRL: verl's FSDP engine, whenever TRL is importable, patches TRL's AutoModelForCausalLMWithValueHead, which
#   TRL 1.x no longer has, and fails building the model. So the package goes in with --no-deps, and the plugin needs
#   nothing of TRL (its METHODS table is delta_repro.methods); tests/test_verl.py compares with the TRL trainer's
#   loss computed in the main environment.
# - Only what the plugin and its tests import is pinned to requirements.txt (torch, pytest, fastcore, pyyaml,
#   math-verify, nbdev); the rest is left to pip: with requirements.txt
#   as a constraint file the resolver finds no set (its typer and antlr4 pins exclude the hub and hydra verl needs).
set -euo pipefail
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_venv="${DELTA_VERL_VENV:-$_root/.venv-verl}"
_py="${PYTHON:-python3.11}"
command -v "$_py" >/dev/null 2>&1 || _py=python3
VERL="verl==0.9.1"
TRANSFORMERS="transformers==5.9.0"
HYDRA="hydra-core==1.3.8"  # verl composes its configs with hydra 1.3 (omegaconf 2.x)
# What verl's worker and trainer modules import beyond its base requirements (part of its verl-core extra, without
# the GPU and multimodal packages); tensordict restated because TransferQueue alone would take one verl refuses.
VERL_CORE=(fastapi uvicorn "TransferQueue==0.1.11" msgspec cachetools "tensordict>=0.8.0,!=0.9.0,<=0.10.0")
_stamp="$_venv/.delta_repro_verl_installed"
_want="$(cat "$_root/requirements.txt" "$_root/pyproject.toml" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$_stamp" 2>/dev/null)" = "$_want" ]; then echo "[verl-env] $_venv is up to date"; exit 0; fi
[ -x "$_venv/bin/python" ] || { echo "[verl-env] creating $_venv"; "$_py" -m venv "$_venv"; }
pip() { "$_venv/bin/python" -m pip "$@"; }
echo "[verl-env] installing $VERL, $TRANSFORMERS and the torch of requirements.txt into $_venv"
pip install -q --upgrade pip
pip install -q "$(grep -E '^torch==' "$_root/requirements.txt")"
_req() { grep -E "^$1==" "$_root/requirements.txt"; }
pip install -q "$VERL" "$TRANSFORMERS" "$HYDRA" "${VERL_CORE[@]}" "$(_req pytest)" "$(_req fastcore)" \
  "$(_req pyyaml)" "$(_req math-verify)" "$(_req nbdev)"  # math-verify: the running example's reward; nbdev:
# `.venv-verl/bin/nbdev-test nbs/10_verl.ipynb --n-workers 0 --save` executes that notebook's verl checks
pip install -q --no-deps -e "$_root"
pip uninstall -q -y trl 2>/dev/null || true  # an environment made by an earlier version of this script had it
"$_venv/bin/python" -c "import importlib.util, sys, torch, transformers, verl, numpy; \
assert 'delta_repro.verl' in sys.modules, 'the verl.plugins entry point did not load delta_repro.verl'; \
assert not torch.cuda.is_available() and importlib.util.find_spec('trl') is None; \
print(f'[verl-env] verl {verl.__version__} with the DelTA plugin, torch {torch.__version__}, transformers {transformers.__version__}, numpy {numpy.__version__}')"
echo "$_want" > "$_stamp"
