#!/usr/bin/env bash
# DelTA on verl 0.9.1 with the paper's Table 5 settings (configs/paper.yaml): Qwen3-8B-Base, 128 prompts x 16
# rollouts per step, 4 updates per rollout batch (mini-batch 32 prompts), lr 1e-6, weight decay 0.1, grad clip 1.0,
# clip-higher 0.2/0.28, dual clip 10, token-mean, no KL, no entropy bonus, rollout temperature 1.0 / top-p 1.0,
# prompts up to 2048 tokens (left-truncated), responses up to 20480, DAPO's overlong penalty (buffer 4096, factor
# 1.0), 220 steps on 8 GPUs with SGLang rollouts, AIME25 avg@8 every 4 steps. docs/scale.md says how to run it and
# what is untested without GPUs; tests/test_verl.py composes this exact configuration with hydra on CPU.
#
#   TRAIN_FILES=... VAL_FILES=... bash scripts/verl_delta.sh [METHOD] [hydra overrides...]
#   METHOD: a key of delta_repro.methods.METHODS that the plugin expresses (default DelTA; "DAPO" is verl's loss)
#   DELTA_VERL_PRINT=1 bash scripts/verl_delta.sh ...   # print the overrides, one per line, and run nothing
#
# Needs verl 0.9.1 installed as its documentation says for GPUs (e.g. its sglang extra) and this package beside it
# with `pip install --no-deps .` (verl's FSDP engine fails where TRL 1.x is importable). The plugin then loads in
# every Ray process through the verl.plugins entry point; VERL_USE_EXTERNAL_MODULES makes a failure to load it loud.
set -euo pipefail
METHOD="${1:-DelTA}"
[ $# -gt 0 ] && shift
MODEL="${MODEL:-Qwen/Qwen3-8B-Base}"
TRAIN_FILES="${TRAIN_FILES:-\$HOME/data/deepmath103k/train.parquet}"   # DeepMath-103K in verl's RL parquet format
VAL_FILES="${VAL_FILES:-\$HOME/data/aime25/test.parquet}"
NNODES="${NNODES:-1}"
GPUS="${GPUS_PER_NODE:-8}"
overrides=(
  algorithm.adv_estimator=grpo
  algorithm.norm_adv_by_std_in_grpo=true
  algorithm.use_kl_in_reward=false
  "data.train_files=$TRAIN_FILES"
  "data.val_files=$VAL_FILES"
  data.train_batch_size=128
  data.max_prompt_length=2048
  data.max_response_length=20480
  data.truncation=left
  data.filter_overlong_prompts=false
  "actor_rollout_ref.model.path=$MODEL"
  actor_rollout_ref.model.use_remove_padding=true
  actor_rollout_ref.model.enable_gradient_checkpointing=true
  actor_rollout_ref.actor.strategy=fsdp2
  actor_rollout_ref.actor.ppo_mini_batch_size=32
  actor_rollout_ref.actor.ppo_epochs=1
  actor_rollout_ref.actor.use_dynamic_bsz=true
  actor_rollout_ref.actor.ppo_max_token_len_per_gpu=24576
  actor_rollout_ref.actor.optim.lr=1e-6
  actor_rollout_ref.actor.optim.weight_decay=0.1
  actor_rollout_ref.actor.grad_clip=1.0
  actor_rollout_ref.actor.clip_ratio_low=0.2
  actor_rollout_ref.actor.clip_ratio_high=0.28
  actor_rollout_ref.actor.clip_ratio_c=10.0
  actor_rollout_ref.actor.loss_agg_mode=token-mean
  actor_rollout_ref.actor.policy_loss.loss_mode=vanilla
  actor_rollout_ref.actor.use_kl_loss=false
  actor_rollout_ref.actor.entropy_coeff=0
  actor_rollout_ref.rollout.name=sglang
  actor_rollout_ref.rollout.n=16
  actor_rollout_ref.rollout.temperature=1.0
  actor_rollout_ref.rollout.top_p=1.0
  actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=true
  actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=24576
  actor_rollout_ref.rollout.tensor_model_parallel_size=1
  actor_rollout_ref.rollout.gpu_memory_utilization=0.7
  actor_rollout_ref.rollout.val_kwargs.n=8
  actor_rollout_ref.rollout.val_kwargs.temperature=1.0
  actor_rollout_ref.rollout.val_kwargs.top_p=0.7
  actor_rollout_ref.rollout.val_kwargs.do_sample=true
  reward.reward_manager.name=dapo
  +reward.reward_kwargs.overlong_buffer_cfg.enable=true
  +reward.reward_kwargs.overlong_buffer_cfg.len=4096
  +reward.reward_kwargs.overlong_buffer_cfg.penalty_factor=1.0
  +reward.reward_kwargs.overlong_buffer_cfg.log=false
  +reward.reward_kwargs.max_resp_len=20480
  "+actor_rollout_ref.delta.method=$METHOD"
  +actor_rollout_ref.delta.proxy_store=host
  trainer.total_training_steps=220
  trainer.test_freq=4
  trainer.save_freq=4
  trainer.val_before_train=true
  "trainer.nnodes=$NNODES"
  "trainer.n_gpus_per_node=$GPUS"
  trainer.project_name=delta_repro
  "trainer.experiment_name=qwen3-8b-${METHOD//[^A-Za-z0-9=.-]/_}"
  "trainer.logger=[console,tensorboard]"
  "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES=delta_repro.verl"
)
if [ "${DELTA_VERL_PRINT:-0}" = 1 ]; then printf '%s\n' "${overrides[@]}" "$@"; exit 0; fi
export VERL_USE_EXTERNAL_MODULES=delta_repro.verl
exec python3 -m verl.trainer.main_ppo "${overrides[@]}" "$@"
