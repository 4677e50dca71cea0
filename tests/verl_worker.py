"""Runs in the verl environment (.venv-verl, scripts/verl_env.sh) for tests/test_verl.py and writes a JSON report.

    python tests/verl_worker.py REFERENCE.pt REPORT.json RECIPE_OVERRIDES.txt

REFERENCE.pt is made in the main environment by tests/test_verl.py: a tiny Qwen3 (saved with save_pretrained), one
generation batch of DeltaGRPOTrainer, Â, λ̄ and old log-probs, and TRL's loss and gradient for each aggregation mode
(DeltaGRPOTrainer._compute_loss, loss_type dapo / grpo / dr_grpo). Here the same model and batch go through verl's own
code on CPU: FSDPEngineWithLMHead.prepare_model_inputs / prepare_model_outputs (the engine's forward step without
its device move, which needs CUDA), the plugin's delta_ppo_loss (verl's ppo_loss on Â·λ̄), and backward; the report
holds the differences. Also: the proxies captured in verl's pass against our proxies, two gloo processes against
one, every METHODS entry, one DelTA update step, and the recipe's hydra config composed and checked."""
import json
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from verl.utils import tensordict_utils as tu
from verl.utils.config import omega_conf_to_dataclass
from verl.utils.dataset.dataset_utils import DatasetPadMode
from verl.utils.torch_functional import entropy_from_logits
from verl.workers.config import FSDPEngineConfig
from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead
from verl.workers.utils.padding import no_padding_2_padding

import delta_repro.verl as dv
from delta_repro.coefficients import delta_coefficients
from delta_repro.losses import token_selection_weights
from delta_repro.methods import METHODS
from delta_repro.proxies import completion_proxies

MODES = {"dapo": "token-mean", "grpo": "seq-mean-token-mean", "dr_grpo": "seq-mean-token-sum-norm"}


def bare_engine(model, remove_padding: bool):
    """verl's FSDPEngineWithLMHead around `model` without its FSDP set-up (which needs CUDA: verl 0.9.1 has no CPU
    platform): its prepare_model_inputs / prepare_model_outputs are verl's code, unchanged."""
    eng = FSDPEngineWithLMHead.__new__(FSDPEngineWithLMHead)
    eng.engine_config = FSDPEngineConfig(strategy="fsdp2", use_torch_compile=False)
    eng.use_ulysses_sp, eng.pad_to_length, eng.module = False, False, model
    eng.ulysses_sequence_parallel_size, eng.use_remove_padding = 1, remove_padding
    eng.compute_entropy_from_logits = entropy_from_logits
    return eng


def engine_log_probs(eng, mb, remove_padding: bool, entropy: bool = False):
    "verl's forward step on `mb` (no device move): the nested log-probs, with their graph."
    tu.assign_non_tensor(mb, use_remove_padding=remove_padding, calculate_entropy=entropy,
                         pad_mode=DatasetPadMode.NO_PADDING, use_fused_kernels=False)
    mb["temperature"] = torch.ones(mb.batch_size[0])
    inputs, out_args = eng.prepare_model_inputs(mb)
    out = eng.module(**inputs, use_cache=False)
    return eng.prepare_model_outputs(out, out_args, mb, None)["log_probs"]


def actor_config(mode: str, max_len: int, **kw):
    from omegaconf import OmegaConf
    return omega_conf_to_dataclass(OmegaConf.create(dict(
        _target_="verl.workers.config.FSDPActorConfig", strategy="fsdp", ppo_mini_batch_size=8,
        ppo_micro_batch_size_per_gpu=8, rollout_n=4, clip_ratio_low=0.2, clip_ratio_high=0.28, clip_ratio_c=10.0,
        loss_agg_mode=MODES[mode], loss_scale_factor=max_len if mode == "dr_grpo" else None, use_kl_loss=False,
        entropy_coeff=0.0, **kw)))


def micro_batch(ref, weights, **kw):
    return dv.verl_micro_batch(ref["prompt_ids"], ref["prompt_mask"], ref["completion_ids"], ref["completion_mask"],
                               ref["advantages"], ref["old_logps"], weights, **kw)


def loss_section(ref, model) -> dict:
    out = {}
    B, T = ref["completion_ids"].shape
    for case in ref["cases"]:
        mode, credit = case["mode"], case["credit"]
        w = ref["lam_bar"] if credit == "delta" else torch.ones(B, T)
        for rmpad in (False, True):
            model.zero_grad()
            mb = micro_batch(ref, w, global_batch_size=B)
            lp = engine_log_probs(bare_engine(model, rmpad), mb, rmpad)
            loss, metrics = dv.delta_ppo_loss(actor_config(mode, ref["max_completion_length"]), {"log_probs": lp}, mb)
            loss.backward()
            grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
            gdiff = max(float((grads[n] - g).abs().max()) for n, g in case["grads"].items())
            gscale = max(float(g.abs().max()) for g in case["grads"].values())
            logps = no_padding_2_padding(lp.detach(), mb)
            m = ref["completion_mask"].bool()
            out[f"{mode}/{credit}/{'rmpad' if rmpad else 'padded'}"] = dict(
                loss=float(loss), trl_loss=case["loss"], loss_diff=abs(float(loss) - case["loss"]), grad_diff=gdiff,
                grad_scale=gscale, logp_diff=float((logps - ref["logps"]).abs()[m].max()),
                clipfrac=float(metrics["actor/pg_clipfrac"].aggregate()))
    return out


def capture_section(ref, model) -> dict:
    "Proxies captured in verl's forward pass (both layouts) against completion_proxies of 00_proxies."
    out = {}
    ids = torch.cat([ref["prompt_ids"], ref["completion_ids"]], 1)
    attn = torch.cat([ref["prompt_mask"], ref["completion_mask"]], 1)
    T = ref["completion_ids"].shape[1]
    with torch.no_grad():
        v, _, _ = completion_proxies(model, ids, attn, T)
    for rmpad in (False, True):
        mb = micro_batch(ref, None)
        eng, cache = bare_engine(model, rmpad), dv.ProxyCache()
        with cache.capturing(eng), torch.no_grad():
            engine_log_probs(eng, mb, rmpad, entropy=True)
        restored = "prepare_model_outputs" not in vars(eng)
        rows = cache.batch(mb["input_ids"])
        m = ref["completion_mask"].bool()
        diff = max(float((r - v[i, :r.shape[0]]).abs()[m[i, :r.shape[0]]].max()) for i, r in enumerate(rows))
        out["rmpad" if rmpad else "padded"] = dict(max_diff=diff, scale=float(v.abs().max()), n_rows=len(rows),
                                                    lengths=[r.shape[0] for r in rows], hook_removed=restored)
    return out, v


def methods_section(v, ref) -> dict:
    "Every METHODS entry: refused with a reason, or λ̄ equal to the TRL trainer's computation of the same switches."
    out = {}
    adv = ref["advantages"][:, None] * ref["completion_mask"]
    mask = ref["completion_mask"]
    rows = [v[i] for i in range(v.shape[0])]
    for name in METHODS:
        try:
            cfg = dv.VerlDeltaConfig.from_method(name)
        except ValueError as e:
            out[name] = dict(supported=False, reason=str(e))
            continue
        g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
        w, coefs = dv.delta_weights(rows, adv, mask, cfg, generator=g1)
        if cfg.credit_assignment == "none": want = torch.ones_like(w)
        elif cfg.credit_assignment == "random":
            from delta_repro.coefficients import random_coefficients
            want = random_coefficients(mask, cfg.delta_lam_min, cfg.delta_lam_max, g2, cfg.delta_normalize).weights
        else:
            c = delta_coefficients(v, ref["advantages"], mask, cfg.delta_config)
            want = (token_selection_weights(c.lam, mask, cfg.token_selection, cfg.token_selection_ratio, g2)
                    if cfg.credit_assignment == "token_selection" else c.weights)
        m = mask.bool()
        out[name] = dict(supported=True, credit_assignment=cfg.credit_assignment,
                         max_diff=float((w - want).abs()[m].max()), mean_weight=float(w[m].mean()))
    return out


def _dp_worker(rank, world, port, payload, q):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        v, adv, mask = payload["v"], payload["adv"], payload["mask"]
        half = v.shape[0] // world
        sl = slice(rank * half, (rank + 1) * half)
        res = {}
        for name in ("DelTA", "w/o λ-norm", "K=2", "Within-side only", "Top-50%"):
            cfg = dv.VerlDeltaConfig.from_method(name)
            w, _ = dv.delta_weights([v[i] for i in range(sl.start, sl.stop)], adv[sl], mask[sl], cfg,
                                    generator=torch.Generator().manual_seed(11))
            res[name] = w
        local, _ = dv.delta_weights([v[i] for i in range(sl.start, sl.stop)], adv[sl], mask[sl],
                                    dv.VerlDeltaConfig(delta_statistics="local"))
        res["local"] = local
        # verl's token-mean over 2 ranks (global token count, dp_size 2; FSDP averages the gradients)
        ref = payload["ref"]
        mb = dv.verl_micro_batch(ref["prompt_ids"][sl], ref["prompt_mask"][sl], ref["completion_ids"][sl],
                                 ref["completion_mask"][sl], ref["advantages"][sl], ref["old_logps"][sl],
                                 ref["lam_bar"][sl], dp_size=world, batch_num_tokens=int(ref["completion_mask"].sum()))
        logps = ref["logps"][sl].clone().requires_grad_(True)
        loss, _ = dv.delta_ppo_loss(actor_config("dapo", 6), {"log_probs": dv.nested_log_probs(logps, mb)}, mb)
        loss.backward()
        res["loss"], res["grad"] = float(loss), logps.grad
        q.put((rank, {k: v.detach().numpy() if isinstance(v, torch.Tensor) else v for k, v in res.items()}))
    finally:
        dist.destroy_process_group()


def dp_section(v, ref) -> dict:
    adv = ref["advantages"][:, None] * ref["completion_mask"]
    payload = dict(v=v, adv=adv, mask=ref["completion_mask"], ref=ref)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = 29500 + os.getpid() % 1000
    procs = [ctx.Process(target=_dp_worker, args=(r, 2, port, payload, q)) for r in range(2)]
    for p in procs: p.start()
    got = {r: {k: torch.from_numpy(v) if hasattr(v, "dtype") else v for k, v in res.items()}
           for r, res in (q.get(timeout=300) for _ in procs)}
    for p in procs: p.join(60)
    out = {}
    rows = [v[i] for i in range(v.shape[0])]
    for name in ("DelTA", "w/o λ-norm", "K=2", "Within-side only"):
        one, _ = dv.delta_weights(rows, adv, ref["completion_mask"], dv.VerlDeltaConfig.from_method(name))
        two = torch.cat([got[0][name], got[1][name]])
        out[name] = float((one - two).abs().max())
    sel_two = torch.cat([got[0]["Top-50%"], got[1]["Top-50%"]])
    c = delta_coefficients(v, ref["advantages"], ref["completion_mask"])
    m = ref["completion_mask"].bool()
    out["Top-50%_selected"] = int((sel_two > 0).sum())
    out["Top-50%_valid"] = int(m.sum())
    # the selected tokens are the globally top-ranked ones: their smallest λ is at least the largest unselected one
    lam = c.lam[m]; sel = (sel_two > 0)[m]
    out["Top-50%_ranked"] = bool(lam[sel].min() >= lam[~sel].max() - 1e-6)
    one_local = torch.cat([dv.delta_weights(rows[:4], adv[:4], ref["completion_mask"][:4], dv.VerlDeltaConfig())[0],
                           dv.delta_weights(rows[4:], adv[4:], ref["completion_mask"][4:], dv.VerlDeltaConfig())[0]])
    out["local_vs_per_shard"] = float((one_local - torch.cat([got[0]["local"], got[1]["local"]])).abs().max())
    out["local_vs_global"] = float((one_local - torch.cat([got[0]["DelTA"], got[1]["DelTA"]])).abs().max())
    # the loss: verl averages the two ranks' gradients (FSDP); the loss values are summed in verl's metrics
    logps = ref["logps"].clone().requires_grad_(True)
    mb = micro_batch(ref, ref["lam_bar"])
    loss, _ = dv.delta_ppo_loss(actor_config("dapo", 6), {"log_probs": dv.nested_log_probs(logps, mb)}, mb)
    loss.backward()
    out["loss_one"], out["loss_two_mean"] = float(loss), (got[0]["loss"] + got[1]["loss"]) / 2
    out["loss_diff"] = abs(out["loss_one"] - out["loss_two_mean"])
    two_grad = torch.cat([got[0]["grad"], got[1]["grad"]]) / 2
    out["grad_diff"] = float((logps.grad - two_grad).abs().max())
    return out


def step_section(ref, model) -> dict:
    "One DelTA update through verl's forward-step code: capture in the old-log-prob pass, λ̄, loss, backward, AdamW."
    B, T = ref["completion_ids"].shape
    eng, cache = bare_engine(model, True), dv.ProxyCache()
    mb = micro_batch(ref, None, global_batch_size=B)
    with cache.capturing(eng), torch.no_grad():
        old = no_padding_2_padding(engine_log_probs(eng, mb, True, entropy=True), mb)
    mask = ref["completion_mask"]
    adv = ref["advantages"][:, None] * mask
    w, coefs = dv.delta_weights(cache.batch(mb["input_ids"]), adv, mask, dv.VerlDeltaConfig())
    train = dv.verl_micro_batch(ref["prompt_ids"], ref["prompt_mask"], ref["completion_ids"], mask, adv, old, w,
                                global_batch_size=B)
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    lp = engine_log_probs(eng, train, True)
    loss, _ = dv.delta_ppo_loss(actor_config("dapo", 6), {"log_probs": lp}, train)
    loss.backward()
    opt.step()
    moved = max(float((p - b).abs().max()) for p, b in zip(model.parameters(), before))
    m = mask.bool()
    return dict(loss=float(loss), moved=moved, lam_mean=float(coefs.lam[m].mean()),
                weight_mean=float(w[m].mean()), old_logp_diff=float((old - ref["logps"]).abs()[m].max()))


class _TrainingStandIn:
    """Stands in for verl's TrainingWorker, which needs CUDA: `infer_batch` and `train_mini_batch` run verl's forward
    step code (`bare_engine`) and the loss function the worker set, on the whole batch as one micro-batch."""
    def __init__(self, engine, remove_padding):
        self.engine, self.rmpad, self.loss_fn, self.trained_on = engine, remove_padding, None, None
        engine.get_data_parallel_rank = lambda: 0
        engine.get_data_parallel_group = lambda: None

    def set_loss_fn(self, loss_fn): self.loss_fn = loss_fn

    def infer_batch(self, data):
        with torch.no_grad():
            lp = engine_log_probs(self.engine, data, self.rmpad, entropy=True)
        return tu.get_tensordict(tensor_dict={"log_probs": lp}, non_tensor_dict={"metrics": {}})

    def train_mini_batch(self, data):
        self.trained_on = data
        lp = engine_log_probs(self.engine, data, self.rmpad)
        loss, _ = self.loss_fn(model_output={"log_probs": lp}, data=data, dp_group=None)
        loss.backward()
        return tu.get_tensordict(tensor_dict={}, non_tensor_dict={"metrics": {"loss": [float(loss)]}})


def worker_section(ref, model) -> dict:
    """DeltaActorRolloutRefWorker's own methods (compute_log_prob, _set_delta_loss, update_actor) around the stand-in:
    the old-log-prob pass is captured, the ref-model pass is not, λ̄ lands in the batch, the loss is DelTA's."""
    from functools import partial
    from omegaconf import OmegaConf
    from verl.workers.utils.losses import ppo_loss
    B, T = ref["completion_ids"].shape
    w = dv.DeltaActorRolloutRefWorker.__new__(dv.DeltaActorRolloutRefWorker)  # Worker.__init__ needs Ray
    w.delta = dv.VerlDeltaConfig.from_config(OmegaConf.create({"method": "DelTA"}))
    w._delta_on, w._delta_cache, w.enable_routing_replay, w.distillation_enabled = True, dv.ProxyCache(), False, False
    w.actor = _TrainingStandIn(bare_engine(model, True), True)
    w.loss_fn = partial(ppo_loss, config=actor_config("dapo", 6))
    w.actor.set_loss_fn(w.loss_fn)
    w._set_delta_loss()
    mask = ref["completion_mask"]
    adv = ref["advantages"][:, None] * mask
    ref_pass = micro_batch(ref, None)
    tu.assign_non_tensor(ref_pass, calculate_entropy=False, no_lora_adapter=True)
    w.compute_log_prob(ref_pass)
    after_ref = len(w._delta_cache.rows)
    old_pass = micro_batch(ref, None)
    tu.assign_non_tensor(old_pass, calculate_entropy=True)
    out = w.compute_log_prob(old_pass)
    old = no_padding_2_padding(out["log_probs"], old_pass)
    after_old = len(w._delta_cache.rows)
    train = dv.verl_micro_batch(ref["prompt_ids"], ref["prompt_mask"], ref["completion_ids"], mask, adv, old,
                                global_batch_size=B)
    model.zero_grad()
    res = w.update_actor(train)
    seen = w.actor.trained_on
    v, _, _ = completion_proxies(model, torch.cat([ref["prompt_ids"], ref["completion_ids"]], 1),
                                 torch.cat([ref["prompt_mask"], mask], 1), T)
    want = delta_coefficients(v, ref["advantages"], mask).weights
    m = mask.bool()
    metrics = tu.get(res, "metrics")
    return dict(loss_fn=w.loss_fn.func.__name__, cached_after_ref_pass=after_ref, cached_after_old_pass=after_old,
                weights_diff=float((seen[dv.DELTA_KEY] - want).abs()[m].max()), cache_emptied=len(w._delta_cache.rows) == 0,
                advantages_untouched=bool(torch.equal(seen["advantages"], train["advantages"])),
                lam_mean=metrics["delta/lam_mean"][0], loss=metrics["loss"][0],
                grad=max(float(p.grad.abs().max()) for p in model.parameters() if p.grad is not None))


def recipe_section(overrides_file: str) -> dict:
    "Compose verl's ppo_trainer config with the recipe's overrides (hydra) and check it without running anything."
    import verl
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf
    from verl.workers.config import ActorConfig
    overrides = [l for l in Path(overrides_file).read_text().splitlines() if l.strip()]
    cfg_dir = str(Path(verl.__file__).parent / "trainer" / "config")
    with initialize_config_dir(config_dir=cfg_dir, version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=overrides)
    arr = cfg.actor_rollout_ref
    actor = omega_conf_to_dataclass(arr.actor)
    delta = dv.VerlDeltaConfig.from_config(arr.get("delta"))
    rollout = omega_conf_to_dataclass(arr.rollout)
    return dict(
        n_overrides=len(overrides), actor_class=type(actor).__name__, is_actor_config=isinstance(actor, ActorConfig),
        train_batch_size=cfg.data.train_batch_size, n=rollout.n, ppo_mini_batch_size=arr.actor.ppo_mini_batch_size,
        max_prompt_length=cfg.data.max_prompt_length, max_response_length=cfg.data.max_response_length,
        truncation=cfg.data.truncation, lr=actor.optim.lr, weight_decay=actor.optim.weight_decay,
        grad_clip=actor.grad_clip, clip_ratio_low=actor.clip_ratio_low, clip_ratio_high=actor.clip_ratio_high,
        clip_ratio_c=actor.clip_ratio_c, loss_agg_mode=actor.loss_agg_mode, loss_mode=actor.policy_loss.loss_mode,
        use_kl_loss=actor.use_kl_loss, use_kl_in_reward=cfg.algorithm.use_kl_in_reward,
        entropy_coeff=actor.entropy_coeff, adv_estimator=cfg.algorithm.adv_estimator,
        temperature=rollout.temperature, top_p=rollout.top_p, rollout_name=rollout.name,
        total_training_steps=cfg.trainer.total_training_steps, n_gpus_per_node=cfg.trainer.n_gpus_per_node,
        test_freq=cfg.trainer.test_freq, reward_manager=cfg.reward.reward_manager.name,
        overlong=OmegaConf.to_container(cfg.reward.reward_kwargs.overlong_buffer_cfg),
        max_resp_len=cfg.reward.reward_kwargs.max_resp_len, ppo_epochs=actor.ppo_epochs,
        delta=None if delta is None else delta.__dict__, use_dynamic_bsz=actor.use_dynamic_bsz,
        ulysses=actor.ulysses_sequence_parallel_size if hasattr(actor, "ulysses_sequence_parallel_size") else None)


def main(ref_path, report_path, overrides_file):
    torch.manual_seed(0)
    from transformers import AutoModelForCausalLM
    ref = torch.load(ref_path, weights_only=False)
    model = AutoModelForCausalLM.from_pretrained(ref["model_dir"], attn_implementation="sdpa").eval()
    report = {"plugin_loaded": "delta_repro.verl" in sys.modules and
              __import__("verl.workers.engine_workers", fromlist=["x"]).ActorRolloutRefWorker is dv.DeltaActorRolloutRefWorker}
    report["loss"] = loss_section(ref, model)
    report["capture"], v = capture_section(ref, model)
    report["methods"] = methods_section(v, ref)
    report["dp"] = dp_section(v, ref)
    report["recipe"] = recipe_section(overrides_file)
    report["step"] = step_section(ref, model)
    report["worker"] = worker_section(ref, model)
    Path(report_path).write_text(json.dumps(report, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main(*sys.argv[1:4])
