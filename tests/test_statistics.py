"""The statistics behind every comparison (effects with bootstrap intervals, the detectable effect, claim verdicts),
the learning summary and the comparison tables, on hand-computed inputs."""
import json
import math

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from delta_repro.evaluation import detectable_effect, difference_ci, mean_ci, save_results
from delta_repro.experiments import load_plan
from delta_repro.reporting import (check_claims, claim, compare_with_paper, contrast_pair, curve_auc, learning_summary,
                                   report_benchmarks, reward_summary, seed_scores, warm_start_dir, write_table)


def test_mean_ci_edge_cases_and_errors():
    assert mean_ci([2.0, 4.0, 6.0])[0] == 4.0
    m, lo, hi = mean_ci([2.0, 4.0, 6.0, 8.0])
    assert 2.0 <= lo < m < hi <= 8.0  # a percentile interval of the mean lies within the data's range
    assert mean_ci([5.0, 5.0]) == (5.0, 5.0, 5.0)  # no spread: a zero-width interval, never NaN
    assert math.isnan(mean_ci([3.0])[1])  # one score has no interval (shown as "—" in tables)
    for bad in ([], [1.0, float("nan")]):
        with pytest.raises(ValueError, match="x"):
            mean_ci(bad)


def test_difference_ci_is_the_mean_difference_with_an_interval_inside_the_resampling_range():
    a, b = [31, 33, 32, 34, 35], [28, 29, 30, 31, 27]
    d, lo, hi = difference_ci(a, b)
    assert d == pytest.approx(4.0)
    # every bootstrap difference lies between min(a)-max(b) and max(a)-min(b); the 95 % interval is inside
    assert min(a) - max(b) <= lo < d < hi <= max(a) - min(b)
    assert difference_ci([10, 10], [4, 4]) == (6.0, 6.0, 6.0)
    assert difference_ci(b, a)[0] == pytest.approx(-4.0)
    with pytest.raises(ValueError, match="at least 2"):
        difference_ci([1.0], [2.0, 3.0])


def test_detectable_effect_floor_scale_and_power():
    # the exact one-sided test cannot reach p < 0.05 with 2 vs 2 (floor 1/6) or 3 vs 3 (floor 1/20 = 0.05)
    assert detectable_effect([1, 2], [3, 4]) == math.inf
    assert detectable_effect([1, 2, 3], [3, 4, 5]) == math.inf
    assert detectable_effect([1, 2], list(range(8))) < math.inf  # 2 vs 8: floor 1/45
    a, b = np.arange(8.0), np.arange(8.0) + 0.5
    sd = np.arange(8.0).std(ddof=1)
    mde = detectable_effect(a, b)
    # a t-test would need (z_.95 + z_.80) * sqrt(2/8) = 1.24 sd; the exact, discrete Mann-Whitney a little more
    assert 1.2 * sd < mde < 1.6 * sd
    assert detectable_effect(10 * a, 10 * b) == pytest.approx(10 * mde)  # scale-equivariant
    assert detectable_effect(a + 100, b) == pytest.approx(mde)  # depends on the spread, not on the means
    assert detectable_effect([5.0, 5.0, 5.0], [5.0, 5.0, 5.0, 5.0, 5.0]) == 0.0  # no spread at all
    assert detectable_effect(a, b, alternative="two-sided") > mde  # two-sided needs more
    # fresh simulations at the returned shift reach about the stated power
    rng = np.random.default_rng(99)
    x, y = rng.standard_normal((4000, 8)) + mde / sd, rng.standard_normal((4000, 8))
    power = (stats.mannwhitneyu(x, y, alternative="greater", method="exact", axis=1).pvalue < 0.05).mean()
    assert 0.77 < power < 0.85
    for kw, msg in ((dict(alpha=0), "alpha"), (dict(power=1.0), "power"), (dict(alternative="up"), "alternative"),
                    (dict(sims=10), "sims")):
        with pytest.raises(ValueError, match=msg):
            detectable_effect(a, b, **kw)


def test_claim_reports_effect_interval_p_and_detectable_effect():
    c = claim("A > B", [30] * 4, [20] * 4)
    assert (c["verdict"], c["effect"], c["ci_low"], c["ci_high"]) == ("supported", 10, 10, 10)
    assert c["p"] == pytest.approx(1 / 70)  # exact one-sided: 1 / C(8, 4)
    not_sup = claim("A > B", [4, 5, 6], [1, 2, 3])
    assert not_sup["verdict"] == "not supported" and not_sup["detectable"] == math.inf
    assert claim("A >= B", [1, 2, 3], [1, 2, 3], ">=")["verdict"] == "not rejected"
    assert claim("A >= B", [1, 2, 3, 4, 5], [6, 7, 8, 9, 10], ">=")["verdict"] == "rejected"
    assert claim("A ≈ B", [6, 7, 8, 9, 10], [1, 2, 3, 4, 5], "≈")["verdict"] == "rejected"
    assert "holds" not in c  # a verdict in words: "not rejected" is never reported as if the claim held


def test_curve_auc_hand_computed():
    curve = pd.DataFrame({"step": [0, 50, 150], "accuracy": [10.0, 20.0, 40.0]})
    assert curve_auc(curve) == pytest.approx((15 * 50 + 30 * 100) / 150)
    assert curve_auc(curve.iloc[1:]) is None and curve_auc(curve.iloc[:1]) is None


# ---- a synthetic plan with hand-made runs -------------------------------------------------------------------------

def _plan(tmp_path, seeds=(0, 1, 2)):
    raw = yaml.safe_load(open("configs/smoke.yaml"))
    raw["tasks"]["math"]["select"] = "dev"
    raw["tasks"]["math"]["eval"] = {"dev": raw["tasks"]["math"]["eval"]["chain_sum-heldout"],
                                    "held": raw["tasks"]["math"]["eval"]["chain_sum-heldout"]}
    raw["artefacts"] = {
        "appK_significance": {"backbone": "tiny-qwen3", "task": "math", "methods": ["DelTA", "DAPO"], "seeds": list(seeds)},
        "fig3_4_token_selection": {"backbone": "tiny-qwen3", "task": "math", "methods": ["DAPO", "Bottom-50%"], "seeds": list(seeds)},
        "table1_main": {"backbone": "tiny-qwen3", "task": "math", "methods": ["DAPO", "SAPO", "DelTA"], "seeds": list(seeds)},
    }
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
    return load_plan(tmp_path / "plan.yaml")


def _run(runs, run_id, method, seed, held, dev=0.0, curve=((0, 10.0), (10, 20.0))):
    """A finished, evaluated run: 4 problems x 2 samples on 'held' with `held` of the 8 correct, and 'dev'."""
    rows = []
    for bench, n_ok in (("held", held), ("dev", dev)):
        flags = [1] * int(n_ok) + [0] * (8 - int(n_ok))
        rows += [dict(run_id=run_id, method=method, seed=seed, benchmark=bench, problem_id=f"p{i // 2}", sample=i % 2,
                      correct=bool(f), parseable=True, length=3, completion="x") for i, f in enumerate(flags)]
    save_results(pd.DataFrame(rows), runs / run_id / "eval.csv")
    (runs / run_id / "DONE").write_text(json.dumps({"selection": [{"step": s, "accuracy": a} for s, a in curve]}))


def test_report_benchmarks_exclude_the_selection_set(tmp_path):
    plan = _plan(tmp_path)
    assert report_benchmarks(plan, "math") == ["held"]
    assert report_benchmarks(plan, "math", ood=True) == list(plan.raw["tasks"]["math"]["ood"])
    with pytest.raises(ValueError, match="task"):
        report_benchmarks(plan, "chess")


def test_seed_scores_claims_and_learning_summary_hand_computed(tmp_path):
    plan = _plan(tmp_path)
    runs = tmp_path / "runs"
    ids = {(r.method, r.seed): rid for rid, r in plan.runs.items()}
    held = {"DelTA": [6, 7, 8], "DAPO": [2, 3, 4], "SAPO": [4, 4, 4], "Bottom-50%": [0, 0, 1]}  # correct of 8
    for (m, s), rid in ids.items():
        _run(runs, rid, m, s, held[m][s], dev=8, curve=((0, 10.0), (10, 10.0 + 10 * s)))
    # the warm start: 2 of 8 correct on 'held' (25 %)
    _run(runs, warm_start_dir(runs, "tiny-qwen3", "math").name, "warm start", 0, 2)

    assert seed_scores(plan, "appK_significance", runs, "DelTA") == {0: 75.0, 1: 87.5, 2: 100.0}  # 'dev' left out
    assert seed_scores(plan, "appK_significance", runs, "DAPO", "auc") == {0: 10.0, 1: 15.0, 2: 20.0}
    with pytest.raises(ValueError, match="metric"):
        seed_scores(plan, "appK_significance", runs, "DAPO", "best")

    claims = check_claims(plan, runs)
    c = claims.loc["DelTA > DAPO"]
    assert c["effect"] == pytest.approx(50.0) and c["verdict"] == "not supported"  # 3 vs 3: p floor 1/20
    assert c["p"] == pytest.approx(0.05) and c["detectable"] == math.inf and c["evidence"] == "3 vs 3 training seeds"
    assert claims.loc["DelTA > within-side only", "verdict"] == "not in the plan"  # no table2 in this plan
    assert claims.loc["DAPO > Bottom-50%", "effect"] == pytest.approx(37.5 - 100 / 24)

    s = learning_summary(plan, runs).loc[("tiny-qwen3", "math")]
    assert s.loc["DelTA", "warm start"] == pytest.approx(25.0) and s.loc["DelTA", "after RL"] == pytest.approx(87.5)
    assert s.loc["DelTA", "gain"] == pytest.approx(62.5) and s.loc["DelTA", "learns"] == "yes"
    assert s.loc["DelTA", "gain low"] > 0 and s.loc["DelTA", "seeds"] == 3
    # Bottom-50% ends at 0, 0 and 12.5 % against a 25 % warm start: a negative gain
    assert s.loc["Bottom-50%", "learns"] == "no"

    t = compare_with_paper(plan, "table1_main", runs, "table1_main", "Qwen3-8B-Base")
    assert t.loc["DelTA", "ours"] == pytest.approx(87.5) and t.loc["DelTA", "ours Δ vs DAPO"] == pytest.approx(50.0)
    assert t.loc["DAPO", "ours Δ vs DAPO"] == 0 and t.loc["SAPO", "sd"] == 0
    assert t.loc["DelTA", "Δ low"] <= 50 <= t.loc["DelTA", "Δ high"]
    assert t.loc["DelTA", "paper Δ vs DAPO"] == pytest.approx(t.loc["DelTA", "paper"] - t.loc["DAPO", "paper"])
    assert list(t["our rank"]) == [3, 2, 1] and "diff" not in t.columns  # no "ours − paper" across benchmarks


def test_collapsed_seeds_are_flagged_and_missing_values_print_as_dashes(tmp_path):
    plan = _plan(tmp_path, seeds=(0, 1))
    runs = tmp_path / "runs"
    for rid, r in plan.runs.items():
        if r.method != "SAPO":
            _run(runs, rid, r.method, r.seed, {"DAPO": 4, "DelTA": 5, "Bottom-50%": 4}[r.method] if r.seed else 0)
    _run(runs, warm_start_dir(runs, "tiny-qwen3", "math").name, "warm start", 0, 8)  # a perfect warm start
    t = compare_with_paper(plan, "table1_main", runs, "table1_main", "Qwen3-8B-Base")
    assert t.loc["SAPO", "flag"] == "no evaluated run" and math.isnan(t.loc["SAPO", "ours"])
    assert t.loc["DelTA", "flag"].startswith("2 of 2 seeds below the warm start")
    md = write_table(t, "t1", tmp_path)[0].read_text()
    assert "nan" not in md.lower() and "—" in md


def test_contrast_pair_picks_a_correct_and_a_wrong_completion_of_one_prompt():
    batch = dict(rewards=[0.0, 1.0, 0.0, 1.0, 0.0, 0.0], n_generations=3,
                 tokens=[["1", "+", "2"], ["1", "+", "3"], ["9", "+", "3"], ["5"], ["5"], ["6"]])
    assert contrast_pair(batch) == (1, 0)  # prompt 0: completion 1 is correct, 0 shares 2 positions with it
    with pytest.raises(ValueError, match="batch"):
        contrast_pair(dict(batch, rewards=[0.0] * 6))


def test_reward_summary_first_and_last_share():
    logs = pd.DataFrame({"method": ["A"] * 10, "seed": [0] * 10, "step": range(10), "reward": np.linspace(0, 0.9, 10)})
    s = reward_summary(logs, share=0.2)
    assert s.loc["A", "first"] == pytest.approx(0.05) and s.loc["A", "last"] == pytest.approx(0.85)
    assert s.loc["A", "change"] == pytest.approx(0.8) and s.loc["A", "seeds"] == 1


def test_contrast_pair_falls_back_only_when_asked():
    batch = dict(rewards=[0.0, 0.0, 0.0, 0.0], n_generations=2, tokens=[["a"], ["b"], ["c"], ["d"]])
    assert contrast_pair(batch, strict=False) == (0, 1)


def test_tables_pool_every_seed_of_a_method_across_artefacts(tmp_path):
    plan = _plan(tmp_path)
    raw = plan.raw
    raw["artefacts"]["table1_main"]["seeds"] = [0]  # Table 1 lists seed 0 only; appK trains seeds 0-2
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
    plan = load_plan(tmp_path / "plan.yaml")
    runs = tmp_path / "runs"
    for rid, r in plan.runs.items():
        _run(runs, rid, r.method, r.seed, 2 + r.seed)
    t = compare_with_paper(plan, "table1_main", runs, "table1_main", "Qwen3-8B-Base")
    assert t.loc["DelTA", "seeds"] == 3 and t.loc["SAPO", "seeds"] == 1
    assert t.loc["DelTA", "ours"] == pytest.approx(100 * (2 + 3 + 4) / 24)
