"Claim tests of App. K: which scores are compared (seeds or repeated evaluations), with hand-computed values."
from pathlib import Path

import pandas as pd
import pytest
import yaml

from delta_repro.evaluation import save_results
from delta_repro.experiments import load_plan
from delta_repro.reporting import claim, latex_escape, run_scores, write_table


def _plan(tmp_path, seeds):
    raw = yaml.safe_load(open("configs/smoke.yaml"))
    raw["artefacts"] = {"appK_significance": {"backbone": "tiny-qwen3", "task": "math", "methods": ["DelTA", "DAPO"],
                                              "seeds": seeds}}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
    return load_plan(tmp_path / "plan.yaml")


def _evaluate(runs_dir, plan, run_id, correct):
    "An eval.csv with one benchmark of 2 problems x 4 samples; `correct[i]` lists sample i's outcome per problem."
    run = plan.runs[run_id]
    rows = [dict(run_id=run_id, method=run.method, seed=run.seed, benchmark="B", problem_id=f"p{j}", sample=i,
                 correct=bool(c[j]), parseable=True, length=3, completion="x")
            for i, c in enumerate(correct) for j in range(2)]
    save_results(pd.DataFrame(rows), runs_dir / run_id / "eval.csv")


def test_scores_by_seed_and_by_repeated_evaluation(tmp_path):
    plan = _plan(tmp_path, [0, 1, 2])
    runs = tmp_path / "runs"
    ids = {(r.method, r.seed): rid for rid, r in plan.runs.items()}
    # DelTA seed s solves (s+1) of the 8 (problem, sample) pairs: Avg. = 12.5, 25, 37.5 %
    for s in range(3):
        flat = [1] * (s + 1) + [0] * (7 - s)
        _evaluate(runs, plan, ids[("DelTA", s)], [flat[2 * i: 2 * i + 2] for i in range(4)])
    assert run_scores(plan, "appK_significance", runs, "DelTA", by="seeds") == [12.5, 25.0, 37.5]
    assert run_scores(plan, "appK_significance", runs, "DelTA") == [12.5, 25.0, 37.5]  # auto: 3 seeds
    # repeated evaluations of seed 2 (samples 0|1|2|3 → both, first, none, none solved): 100, 50, 0, 0 %
    assert run_scores(plan, "appK_significance", runs, "DelTA", repeats=4, by="repeats", seed=2) == [100, 50, 0, 0]
    assert run_scores(plan, "appK_significance", runs, "DelTA", repeats=2, by="repeats") == [25.0, 0.0]  # seed 0
    assert run_scores(plan, "appK_significance", runs, "DAPO") == []  # nothing evaluated yet
    with pytest.raises(ValueError, match="by"): run_scores(plan, "appK_significance", runs, "DelTA", by="runs")
    with pytest.raises(ValueError, match="seed"): run_scores(plan, "appK_significance", runs, "DelTA", seed=7)


def test_auto_uses_repeated_evaluations_below_three_seeds(tmp_path):
    plan = _plan(tmp_path, [0, 1])
    runs = tmp_path / "runs"
    for rid, r in plan.runs.items():
        _evaluate(runs, plan, rid, [[1, 1], [1, 0], [0, 0], [0, 0]] if r.seed == 0 else [[0, 0]] * 4)
    assert run_scores(plan, "appK_significance", runs, "DAPO", repeats=4) == [100, 50, 0, 0]


def test_claim_verdicts_hand_computed():
    # 5 seeds vs 5, fully separated: exact one-sided Mann-Whitney p = 1 / C(10, 5) = 1/252
    c = claim("A > B", [6, 7, 8, 9, 10], [1, 2, 3, 4, 5])
    assert c["verdict"] == "supported" and c["p"] == pytest.approx(1 / 252) and (c["n_a"], c["n_b"]) == (5, 5)
    assert c["effect"] == pytest.approx(5.0) and c["ci_low"] <= 5.0 <= c["ci_high"]
    # 3 vs 3 can never reach p < 0.05: the smallest exact p is 1 / C(6, 3) = 0.05
    c3 = claim("A > B", [4, 5, 6], [1, 2, 3])
    assert c3["p"] == pytest.approx(0.05) and c3["verdict"] == "not testable with 3 vs 3 seeds"
    assert c3["p_min"] == pytest.approx(0.05) and "0.05" in c3["note"]
    assert claim("A > B", [1, 2, 3, 4, 5], [6, 7, 8, 9, 10])["verdict"] == "contradicted at this scale"
    assert claim("A > B", [1, 2, 4, 3, 5], [2, 3, 1, 5, 4])["verdict"] == "not supported"  # testable, no effect
    assert claim("A >= B", [1, 2, 3, 4, 5], [1, 2, 3, 4, 5], ">=")["verdict"] == "not rejected"
    assert claim("A ≈ B", [6, 7, 8, 9, 10], [1, 2, 3, 4, 5], "≈")["verdict"] == "rejected"
    with pytest.raises(ValueError, match="relation"): claim("A ? B", [1, 2], [3, 4], "?")


def test_unknown_artefact_or_method_is_an_error_not_an_empty_list(tmp_path):
    plan = _plan(tmp_path, [0])
    with pytest.raises(ValueError, match="method"): run_scores(plan, "appK_significance", tmp_path, "DeLTA")
    with pytest.raises(ValueError, match="artefact"): run_scores(plan, "table1", tmp_path, "DelTA")


def test_latex_tables_escape_labels_cells_and_caption(tmp_path):
    import re
    df = pd.DataFrame({"Avg.": [8.13, 3.29], "note": ["a_b & c", "#1"]}, index=pd.Index(["Top-50%", "w/o H(α)"], name="method"))
    md, tex, csv = write_table(df, "t", tmp_path, caption="λ ∈ [0.8, 1.2] at 50% & K=1")
    body = tex.read_text()
    assert not re.findall(r"(?<!\\)%", body), body  # an unescaped % comments out the rest of a LaTeX line
    for s in (r"Top-50\%", r"w/o H($\alpha$)", r"a\_b \& c", r"\#1", r"$\lambda$ $\in$ [0.8, 1.2] at 50\% \& K=1"):
        assert s in body, s
    assert "Top-50%" in md.read_text() and pd.read_csv(csv, index_col=0).loc["Top-50%", "Avg."] == 8.13  # .md and .csv verbatim
    assert latex_escape("x^2~{y}") == r"x\textasciicircum{}2\textasciitilde{}\{y\}"
    assert latex_escape("β ς Σ Α a>b\nc") == r"$\beta$ $\varsigma$ $\Sigma$ A a$>$b c"  # all of Greek; > is ¿ in T1
    tuples = write_table(pd.DataFrame({("a_b", "c%"): [1.0], "x": [("d_e", "%")]}), "u", tmp_path)[1].read_text()
    assert not re.findall(r"(?<!\\)[%_]", tuples), tuples  # non-string labels and cells are escaped too
    with pytest.raises(TypeError, match="df"):
        write_table(pd.Series([1.0]), "s", tmp_path)
    p = pd.DataFrame({"p": [0.0016, float("nan")], "x": [0.0016, 1.0]}, index=["a", "b"])
    md, tex, csv = write_table(p, "p", tmp_path, formats={"p": "{:.3f}"})
    assert "| 0.002 |" in md.read_text() and "| —     |" in md.read_text() and "0.002" in tex.read_text()
    assert pd.read_csv(csv, index_col=0).loc["a", "p"] == 0.0016  # the CSV keeps the number


@pytest.mark.parametrize("name", ["../escape", "a/b", "", ".", "...", ".hidden", "-x", "t ab", "a" * 201])
def test_table_names_must_be_plain_file_stems(tmp_path, name):
    with pytest.raises(ValueError, match="name"):
        write_table(pd.DataFrame({"a": [1]}), name, tmp_path)


def test_figures_are_byte_identical_when_regenerated(tmp_path, monkeypatch):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from delta_repro.reporting import save_figure
    digests = []
    for i in range(2):
        monkeypatch.setenv("SOURCE_DATE_EPOCH", str(1_700_000_000 + 86_400 * i))  # matplotlib's clock: another day
        fig, ax = plt.subplots()
        ax.plot([1, 3, 2])
        digests.append([p.read_bytes() for p in save_figure(fig, "f", tmp_path / str(i))])
        plt.close(fig)
    assert digests[0] == digests[1]  # no creation date in the PDF: no churn in git for unchanged numbers
    with pytest.raises(ValueError, match="name"):
        save_figure(fig, "...", tmp_path)  # matplotlib would have written "....png.png"
    with pytest.raises(TypeError, match="fig"):
        save_figure(fig.axes[0], "f", tmp_path)


# ---- confound diagnostics: zero-advantage tokens and the step size -------------------------------------------------

def test_credit_diagnostics_on_a_hand_made_batch():
    import math
    import torch
    from delta_repro.trainer import credit_diagnostics
    # 3 completions x 4 positions, the last padded after 2 tokens; completion 1 is a tied group (Â = 0).
    # valid tokens 4 + 4 + 2 = 10, of them 4 with Â = 0: share 0.4. Weights on the 6 tokens with Â != 0:
    # 1.0 1.2 1.2 1.0 | 1.3 1.3 -> multiplier 7 / 6, min 1.0, max 1.3 (the tied completion's 0.8 does not count)
    adv = torch.tensor([0.5, 0.0, -0.5])
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 0, 0]])
    w = torch.tensor([[1.0, 1.2, 1.2, 1.0], [0.8, 0.8, 0.8, 0.8], [1.3, 1.3, 9.0, 9.0]], dtype=torch.float64)
    d = credit_diagnostics(adv, w, mask)
    assert d["zero_adv_share"] == 0.4 and d["loss_scale"] == pytest.approx(7 / 6)
    assert (d["weight_min"], d["weight_max"]) == (1.0, 1.3)  # padding (9.0) is not a token
    # per-token advantages give the same numbers as per-completion ones
    assert credit_diagnostics(adv[:, None].expand(3, 4), w, mask) == d
    # DelTA-like self-normalisation over all valid tokens: λ̄ = λ·N/Z with the tied tokens at λ_min = 0.8 pushes the
    # mean over the tokens with Â != 0 above 1 -- the confound the reports state
    lam = torch.where(adv[:, None].expand(3, 4) == 0, 0.8, 1.0) * mask
    lam_bar = lam * mask.sum() / lam.sum()
    assert credit_diagnostics(adv, lam_bar, mask)["loss_scale"] == pytest.approx(10 / 9.2)
    # a token selection: 5 tokens kept, 3 of them in the tied completion
    sel = torch.tensor([[1, 0, 0, 1], [1, 1, 1, 0], [0, 0, 0, 0]]).bool()
    d = credit_diagnostics(adv, torch.where(sel, 2.0, 0.0), mask, sel)
    assert d["selected_zero_adv_share"] == pytest.approx(0.6) and d["loss_scale"] == pytest.approx(4 / 6)
    assert set(credit_diagnostics(adv, None, mask)) == {"zero_adv_share"}  # weights made in the loss: no multiplier
    assert math.isnan(credit_diagnostics(torch.zeros(3), w, mask)["loss_scale"])  # no token with a gradient
    with pytest.raises(ValueError, match="weights"):
        credit_diagnostics(adv, w[:, :3], mask)


def _logged_plan(tmp_path, multipliers: dict):
    import json
    raw = yaml.safe_load(open("configs/smoke.yaml"))
    raw["artefacts"] = {
        "appK_significance": {"backbone": "tiny-qwen3", "task": "math", "methods": ["DelTA", "DAPO"], "seeds": [0, 1]},
        "table3_ablations": {"backbone": "tiny-qwen3", "task": "math", "methods": ["DelTA", "w/o range map"], "seeds": [0, 1]}}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
    plan = load_plan(tmp_path / "plan.yaml")
    for rid, r in plan.runs.items():  # two rollout batches, the first logged under the old name of the loss scale
        lo, hi = multipliers[r.method][r.seed]
        hist = [{"step": 1, "credit/zero_adv_share": 0.3, "credit/step_multiplier": lo,
                 "credit/weight_min": 0.8 + 0.01 * r.seed, "credit/weight_max": 1.3, "grad_norm": 0.5},
                {"step": 2, "loss": 0.0, "grad_norm": 1.5},
                {"step": 5, "credit/zero_adv_share": 0.5, "credit/loss_scale": hi,
                 "credit/weight_min": 0.9, "credit/weight_max": 1.2 + 0.1 * r.seed, "grad_norm": 2.0 if r.seed else 0.9}]
        (tmp_path / rid).mkdir(parents=True)
        (tmp_path / rid / "log_history.json").write_text(json.dumps(hist))
    return plan


def test_credit_summary_gives_the_loss_scale_its_spread_and_the_clipped_steps(tmp_path):
    from delta_repro.reporting import credit_summary, credit_text
    plan = _logged_plan(tmp_path, {"DelTA": [(1.0, 1.1), (1.02, 1.12)], "DAPO": [(1.0, 1.0), (1.0, 1.0)],
                                   "w/o range map": [(1.4, 1.6), (1.4, 1.6)]})
    cs = credit_summary(plan, "table3_ablations", tmp_path)
    assert cs.loc["DelTA", "loss scale"] == pytest.approx(1.06) and cs.loc["DelTA", "Â = 0 share"] == pytest.approx(0.4)
    assert cs.loc["DelTA", "λ̄ min"] == 0.8 and cs.loc["DelTA", "λ̄ max"] == pytest.approx(1.3)  # extremes, not means
    # spread across rollout batches: SD (ddof 0) over the mean, per seed, averaged: 0.05/1.05 and 0.05/1.07
    assert cs.loc["DelTA", "loss scale spread"] == pytest.approx((0.05 / 1.05 + 0.05 / 1.07) / 2)
    assert cs.loc["w/o range map", "loss scale spread"] == pytest.approx(0.1 / 1.5)
    # clipped: gradient norms above max_grad_norm (1.0 without a DONE): seed 0 one of 3 steps, seed 1 two of 3
    assert cs.loc["DelTA", "clipped"] == pytest.approx((1 / 3 + 2 / 3) / 2)
    assert cs.loc["DelTA", "seeds logged"] == 2 and "multiplier / DelTA" not in cs
    text = credit_text(cs)
    assert "loss scale 1.06" in text and "not a step size" in text and "larger step" not in text
    dapo = credit_summary(plan, "appK_significance", tmp_path)
    assert dapo.loc["DAPO", "loss scale"] == 1.0 and dapo.loc["DAPO", "loss scale spread"] == 0.0
    # runs that predate the diagnostics: said so, never a silent blank
    for f in tmp_path.glob("*/log_history.json"): f.write_text('[{"step": 1, "loss": 0.0}]')
    old = credit_summary(plan, "table3_ablations", tmp_path)
    assert (old["seeds logged"] == 0).all() and "not logged" in credit_text(old)


# ---- λ on real tokens: shared and decisive tokens ------------------------------------------------------------------

def test_token_classes_on_a_hand_made_pair():
    import math
    from types import SimpleNamespace
    import torch
    from delta_repro.reporting import token_class_summary, token_class_text, token_classes
    # one character a token: "1+2=3,\boxed{3}" (correct) and "1+2=4,\boxed{4}" (wrong) share "1+2=", part at the
    # result (position 4) and differ again in the answer (position 13); a second prompt has two wrong completions
    right, wrong = list("1+2=3,\\boxed{3}"), list("1+2=4,\\boxed{4}")
    T = len(right)
    lam = torch.tensor([[1.1] * 4 + [1.2] + [1.0] * (T - 5),
                        [0.9] * 4 + [0.8] + [1.0] * (T - 7) + [1.2, 1.0], [1.0] * T, [1.0] * T])
    batch = dict(rewards=torch.tensor([1.0, 0.0, 0.0, 0.0]), n_generations=2, tokens=[right, wrong, wrong, wrong],
                 mask=torch.ones(4, T), coefficients=SimpleNamespace(lam=lam))
    tc = token_classes(batch)
    assert set(tc["prompt"]) == {0} and len(tc) == 2 * T  # the prompt without a contrast is left out
    for outcome in ("wrong", "correct"):
        cls = tc[tc["outcome"] == outcome].set_index("position")["class"]
        assert list(cls[:4]) == ["shared"] * 4 and cls[4] == "first divergence" and cls[13] == "final answer"
        assert set(cls[5:13]) == {"after divergence"} and cls[14] == "after divergence"  # "," ... "{" and "}"
    ts = token_class_summary(tc)
    assert ts.loc[("wrong", "shared"), "lam"] == pytest.approx(0.9)
    assert ts.loc[("wrong", "first divergence"), "lam"] == pytest.approx(0.8)
    assert ts.loc[("wrong", "final answer"), "lam"] == pytest.approx(1.2)
    assert ts.loc[("wrong", "decisive"), "lam"] == pytest.approx(1.0) and ts.loc[("wrong", "decisive"), "tokens"] == 2
    assert ts.loc[("correct", "first divergence"), "lam"] == pytest.approx(1.2)
    assert math.isnan(ts.loc[("wrong", "shared"), "low"])  # one prompt: no interval over prompts
    # three copies of the prompt: an interval, zero-width as every copy agrees; decisive (1.0) lies above shared (0.9)
    tc3 = pd.concat([tc.assign(prompt=k) for k in range(3)])
    ts3 = token_class_summary(tc3)
    assert ts3.loc[("wrong", "shared"), "low"] == pytest.approx(0.9) and ts3.loc[("wrong", "shared"), "prompts"] == 3
    text = token_class_text(ts3)
    assert "3 prompts with both outcomes" in text and "in wrong completions, shared 0.900 [0.900, 0.900]" in text
    assert "decisive tokens above shared ones" in text


def test_fig1_on_a_batch_where_every_group_tied_says_so():
    import matplotlib
    matplotlib.use("Agg")
    import torch
    from types import SimpleNamespace
    from delta_repro.reporting import plot_overview
    batch = {"coefficients": SimpleNamespace(), "mask": torch.ones(4, 3), "advantages": torch.zeros(4),
             "proxies": torch.zeros(4, 3, 2)}
    fig = plot_overview(batch, "tied")
    assert "nothing to project" in fig.axes[0].texts[0].get_text() and "0 tokens" in fig.axes[0].texts[0].get_text()


def test_lambda_token_classes_script_writes_both_groupings(tmp_path, monkeypatch):
    # the SmolLM2 table of issue 37 is made by this script once its checkpoint exists; here on the smoke warm start
    # (4 prompts x its 4 completions)
    import subprocess, sys
    monkeypatch.setenv("DELTA_REPRO_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "lt" / "classes.csv"
    res = subprocess.run([sys.executable, "scripts/lambda_token_classes.py", "--profile", "smoke", "--backbone",
                          "tiny-qwen3", "--prompts", "4", "--out", str(out)], cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    import re
    df = pd.read_csv(out)
    (both,) = map(int, re.findall(r"warm start: reward [\d.]+ over 16 completions, (\d+) prompts with both", res.stdout))
    if both:  # a batch without a prompt of both outcomes has no contrast to measure: no rows, as the output says
        assert set(df["policy"]) == {"warm start"} and set(df["grouping"]) == {"position", "made of"}
        assert df["lam"].between(0.5, 1.5).all() and set(df["batch_completions"]) == {16}
    else:
        assert df.empty
    assert out.with_suffix(".md").exists()
    bad = subprocess.run([sys.executable, "scripts/lambda_token_classes.py", "--profile", "smoke", "--backbone", "nope",
                          "--out", str(out)], cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=600)
    assert bad.returncode != 0 and "--backbone" in bad.stderr
