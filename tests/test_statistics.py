"""The statistics behind every comparison (effects with bootstrap intervals, the detectable effect, claim verdicts),
the learning summary and the comparison tables, on hand-computed inputs."""
import json, shutil
import math

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from delta_repro.evaluation import (detectable_effect, difference_ci, estimate_text, holm, mean_ci, paired_difference,
                                    save_results, smallest_p)
from delta_repro.experiments import load_plan
from delta_repro.reporting import (check_claims, claim, compare_with_paper, people_table, contrast_pair, curve_auc, evidence_ranks,
                                   judge_claims, learning_summary, primary_claim, report_benchmarks, reward_summary,
                                   paired_inputs, seed_scores,
                                   table_report, warm_start_dir, write_table)


def test_paired_difference_hand_values():
    # two problems, one run a side: the problems drawn alike for both -> effect 0, 50 or 100 with chances 1/4, 1/2, 1/4
    r = paired_difference([[100.0, 0.0]], [[0.0, 0.0]])
    assert (r["effect"], r["low"], r["high"], r["n_a"], r["n_b"], r["problems"]) == (50.0, 0.0, 100.0, 1, 1, 2)
    # a side that is the other plus 3 points on every problem: every joint resample gives exactly 3
    difficulty = np.linspace(0.0, 100.0, 50)
    r = paired_difference([difficulty + 3.0] * 2, [difficulty] * 2)
    assert (r["effect"], r["low"], r["high"]) == pytest.approx((3.0, 3.0, 3.0))
    # six problems, each better by a different amount: the exact signed-rank p is 1 / 2^6
    assert paired_difference([[11.0, 22, 33, 44, 55, 66]], [[10.0, 20, 30, 40, 50, 60]])["p_wilcoxon"] == pytest.approx(1 / 64)
    # seeds paired: seed i of a is seed i of b plus 1, seeds 10 points apart -> exactly 1; unpaired seeds -> wider
    a, b = [difficulty + 1, difficulty + 11, difficulty + 21], [difficulty, difficulty + 10, difficulty + 20]
    assert paired_difference(a, b, paired_seeds=True)["low"] == pytest.approx(1.0)
    unpaired = paired_difference(a, b)
    assert unpaired["low"] < 0 < 1 < unpaired["high"]
    # no difference on any problem: the Wilcoxon reading is p = 1, not an error
    assert paired_difference([[10.0, 20.0]], [[10.0, 20.0]])["p_wilcoxon"] == 1.0


def _paired_reference(a, b, paired_seeds=False, n_resamples=9999, seed=0):
    "The bootstrap of paired_difference written out directly (one multinomial draw of problems, then the seeds)."
    a, b = np.asarray(a, float), np.asarray(b, float)
    (s_a, p), s_b = a.shape, b.shape[0]
    rng, boots = np.random.default_rng(seed), []
    for lo in range(0, n_resamples, 1000):
        r = min(1000, n_resamples - lo)
        w = rng.multinomial(p, np.full(p, 1.0 / p), size=r) / p
        ia = rng.integers(0, s_a, (r, s_a)) if s_a > 1 else np.zeros((r, 1), int)
        ib = ia if paired_seeds else (rng.integers(0, s_b, (r, s_b)) if s_b > 1 else np.zeros((r, 1), int))
        boots.append(np.take_along_axis(w @ a.T, ia, 1).mean(1) - np.take_along_axis(w @ b.T, ib, 1).mean(1))
    return tuple(np.quantile(np.concatenate(boots), [(1 - 0.95) / 2, (1 + 0.95) / 2]))


def test_paired_difference_kept_draws_give_the_fresh_draws_interval():
    # the draws are kept per (seed, problems, resamples, seeds a side): a second comparison of other scores with the
    # same shape must read the same problems and seeds as drawing anew would, never the first comparison's scores
    from delta_repro.evaluation import _paired_draws
    rng = np.random.default_rng(3)
    _paired_draws.cache_clear()
    for s_a, s_b, p, paired in ((5, 5, 64, False), (5, 5, 64, False), (4, 4, 64, True), (1, 3, 20, False), (3, 1, 20, False)):
        a, b = rng.uniform(0, 100, (s_a, p)), rng.uniform(0, 100, (s_b, p))
        r = paired_difference(a, b, paired_seeds=paired, n_resamples=2500, seed=11)
        low, high = _paired_reference(a, b, paired, 2500, 11)
        assert (r["low"], r["high"]) == (min(low, r["effect"]), max(high, r["effect"]))
    assert _paired_draws.cache_info().hits >= 1  # the repeated shape came from the kept draws
    # a seed that is a Generator is never kept: two calls draw anew and differ
    a, b = rng.uniform(0, 100, (3, 30)), rng.uniform(0, 100, (3, 30))
    g = np.random.default_rng(5)
    first, second = paired_difference(a, b, seed=g), paired_difference(a, b, seed=g)
    assert (first["low"], first["high"]) != (second["low"], second["high"])


def test_paired_interval_excludes_zero_where_the_unpaired_one_covers_it():
    # 200 problems of every difficulty; RL adds 2 points on each: small beside the spread of difficulty (SD ~29)
    rng = np.random.default_rng(0)
    difficulty = rng.uniform(0, 100, 200)
    warm = difficulty[None]
    after = np.stack([np.clip(difficulty + 2.0 + rng.normal(0, 0.5), 0, 100) for _ in range(4)])
    unpaired = difference_ci(after.mean(0), warm[0])  # problems resampled independently for the two sides
    paired = paired_difference(after, warm)
    assert unpaired[1] < 0 < unpaired[2]
    assert 0 < paired["low"] <= paired["effect"] <= paired["high"]
    assert paired["effect"] == pytest.approx(unpaired[0])
    assert paired["p_wilcoxon"] < 1e-10


def test_paired_difference_rejects_bad_input():
    for a, b in (([1.0, 2.0], [[1.0, 2.0]]), ([[1.0, 2.0]], [[1.0, 2.0, 3.0]]), (np.zeros((1, 0)), np.zeros((1, 0)))):
        with pytest.raises(ValueError, match="a and b must be"):
            paired_difference(a, b)
    with pytest.raises(ValueError, match="finite"):
        paired_difference([[1.0, float("nan")]], [[1.0, 2.0]])
    with pytest.raises(ValueError, match="paired_seeds"):
        paired_difference([[1.0], [2.0]], [[1.0]], paired_seeds=True)
    with pytest.raises(ValueError, match="alternative"):
        paired_difference([[1.0]], [[1.0]], alternative="bigger")
    for n in (0, 1, -5, 2.5):
        with pytest.raises(ValueError, match="n_resamples"):
            paired_difference([[1.0]], [[1.0]], n_resamples=n)


def test_mean_ci_edge_cases_and_errors():
    assert mean_ci([2.0, 4.0, 6.0])[0] == 4.0
    m, lo, hi = mean_ci([2.0, 4.0, 6.0, 8.0])
    assert 2.0 <= lo < m < hi <= 8.0  # a percentile interval of the mean lies within the data's range
    assert mean_ci([5.0, 5.0, 5.0, 5.0]) == (5.0, 5.0, 5.0)  # no spread: a zero-width interval, never NaN
    m, lo, hi = mean_ci([5.0, 5.0])  # two scores: no interval (a bootstrap of two values is their range)
    assert m == 5.0 and math.isnan(lo) and math.isnan(hi)
    # three: none either; the percentile bootstrap's "95 %" interval of three values is their range exactly
    assert math.isnan(mean_ci([2.0, 4.0, 6.0])[1]) and mean_ci([2.0, 4.0, 6.0], min_n=3) == (4.0, 2.0, 6.0)
    assert mean_ci([5.0, 7.0], min_n=2) == (6.0, 5.0, 7.0)  # what the bootstrap would have said: the range
    assert math.isnan(mean_ci([3.0])[1])  # one score has no interval (shown as "—" in tables)
    with pytest.raises(ValueError, match="min_n"):
        mean_ci([1.0, 2.0], min_n=1)
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


def test_holm_hand_example_order_and_missing_tests():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04; the running maximum keeps the order
    p = [0.01, 0.04, 0.03, 0.005]
    np.testing.assert_allclose(holm(p), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(holm(p[::-1]), holm(p)[::-1])  # the input order does not matter
    np.testing.assert_allclose(holm([0.5, 0.9]), [1.0, 1.0])  # capped at 1
    h = holm([0.01, np.nan, 0.04])  # a test not run is not in the family: m = 2
    np.testing.assert_allclose(h[[0, 2]], [0.02, 0.04])
    assert math.isnan(h[1])
    assert holm([0.02])[0] == 0.02  # a family of one is not adjusted
    with pytest.raises(ValueError, match="p"):
        holm([0.5, 1.5])


def test_smallest_p_of_a_design():
    assert smallest_p(8, 2) == pytest.approx(1 / 45) and smallest_p(2, 2) == pytest.approx(1 / 6)
    assert smallest_p(8, 8) == pytest.approx(1 / 12870) and smallest_p(2, 8, "two-sided") == pytest.approx(2 / 45)
    assert smallest_p(3, 5, "less") == smallest_p(5, 3)  # the mirror test has the same floor
    with pytest.raises(ValueError, match="alternative"):
        smallest_p(3, 3, "up")


def test_two_seeds_show_their_values_not_an_interval():
    assert estimate_text([28.56, 28.56]) == "28.56 (seeds: 28.56, 28.56)"  # not "[28.56, 28.56]"
    assert estimate_text([30.0]) == "30.00 (one seed)"
    assert estimate_text([1.0, 2.0, 3.0, 4.0], digits=1).startswith("2.5 [")
    c = claim("A > B", [30.0, 31.0, 29.0, 30.5], [28.0, 28.0])
    assert c["values_b"] == "28.00 (seeds: 28.00, 28.00)" and c["values_a"].startswith("30.12 [")


def test_claim_reports_effect_interval_p_and_detectable_effect():
    c = claim("A > B", [30] * 4, [20] * 4)
    assert (c["verdict"], c["effect"], c["ci_low"], c["ci_high"]) == ("supported", 10, 10, 10)
    assert c["p"] == pytest.approx(1 / 70)  # exact one-sided: 1 / C(8, 4)
    assert c["p_holm"] == c["p"] and c["p_min"] == pytest.approx(1 / 70)  # a family of one
    not_sup = claim("A > B", [4, 5, 6], [1, 2, 3])  # 3 vs 3: the floor 1/20 is not below 0.05
    assert not_sup["verdict"] == "not testable with 3 vs 3 seeds" and not_sup["detectable"] == math.inf
    # the interval excludes 0 against the claim: said so, whatever the one-sided test in the claim's direction gives
    assert claim("A > B", [1, 2, 3, 4, 5], [6, 7, 8, 9, 10])["verdict"] == "contradicted at this scale"
    assert claim("A ≈ B", [1, 2, 3, 4, 5], [6, 7, 8, 9, 10], "≈")["verdict"] == "rejected"  # significant: rejected
    assert claim("A > B", [5, 6, 4, 5, 6], [5, 4, 6, 5, 5])["verdict"] == "not supported"  # testable, no effect
    assert claim("A >= B", [1, 2, 3, 4, 5], [1, 2, 3, 4, 5], ">=")["verdict"] == "not rejected"
    assert claim("A >= B", [1, 2, 3], [1, 2, 3], ">=")["verdict"] == "not testable with 3 vs 3 seeds"
    assert claim("A >= B", [1, 2, 3, 4, 5], [6, 7, 8, 9, 10], ">=")["verdict"] == "rejected"
    assert claim("A ≈ B", [6, 7, 8, 9, 10], [1, 2, 3, 4, 5], "≈")["verdict"] == "rejected"
    assert "holds" not in c  # a verdict in words: "not rejected" is never reported as if the claim held


def test_a_family_of_claims_is_judged_on_holm_adjusted_p():
    # 8 seeds against 2, completely separated: p = 1/45 = 0.022. Alone: supported. In a family of 20 such tests
    # Holm multiplies the smallest p by 20: 0.44 -- and no outcome of 8 vs 2 could do better: not testable
    one = claim("A > B", list(range(10, 18)), [1.0, 2.0])
    assert one["verdict"] == "supported" and one["p"] == pytest.approx(1 / 45)
    fam = judge_claims(pd.DataFrame([claim(f"A{i} > B", list(range(10, 18)), [1.0, 2.0]) for i in range(20)]))
    assert np.allclose(fam["p_holm"], 20 / 45) and np.allclose(fam["p_reach"], 20 / 45)
    assert (fam["verdict"] == "not testable with 8 vs 2 seeds").all() and fam["note"].str.contains("0.44").all()
    # two 8 vs 8 claims in that family could still be decided: their floor 1/12870 x 22 is far below 0.05
    fam2 = judge_claims(pd.concat([fam, pd.DataFrame([claim("C > D", list(range(10, 18)), list(range(8)))] * 2)],
                                  ignore_index=True))
    assert (fam2["verdict"].iloc[-2:] == "supported").all() and fam2["p_holm"].iloc[-1] == pytest.approx(22 / 12870)
    assert judge_claims(pd.DataFrame([{"claim": "x", "verdict": "runs missing"}]))["verdict"].item() == "runs missing"


def test_ranks_only_where_intervals_separate():
    r = evidence_ranks({"A": [10.0, 11, 12, 11], "B": [5.0, 6, 7, 6], "C": [6.5, 7.5, 5.5, 6.5]})
    assert r == {"A": "1", "B": "tied (2–3)", "C": "tied (2–3)"}  # B and C overlap; A is above both
    r = evidence_ranks({"A": [10.0, 11, 12, 11], "B": [5.0, 6, 7, 6], "D": [1.0, 2.0], "E": []})
    assert r["A"] == "tied (1–2)" and r["B"] == "tied (2–3)"  # D has no interval: it could sit anywhere
    assert r["D"] == "not ranked (2 seeds)" and r["E"] == "—"
    assert evidence_ranks({"A": [1.0, 1, 1, 1], "B": [1.0, 1, 1, 1]}) == {"A": "tied (1–2)", "B": "tied (1–2)"}
    # three seeds a side make no interval (the bootstrap's is their range), so no rank either
    assert evidence_ranks({"A": [10.0, 11, 12], "B": [5.0, 6, 7]}) == {"A": "not ranked (3 seeds)", "B": "not ranked (3 seeds)"}


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


def _run(runs, run_id, method, seed, held, dev=0.0, curve=((0, 10.0), (10, 20.0)), last=None):
    """A finished, evaluated run: 4 problems x 2 samples on 'held' with `held` of the 8 correct, and 'dev'; and its
    last policy's evaluation on 'held' (`eval_final.csv`) with `last` of the 8 correct (default: `held`, as when the
    selected checkpoint is the last one)."""
    def rows_of(bench, n_ok):
        flags = [1] * int(n_ok) + [0] * (8 - int(n_ok))
        return [dict(run_id=run_id, method=method, seed=seed, benchmark=bench, problem_id=f"p{i // 2}", sample=i % 2,
                     correct=bool(f), parseable=True, length=3, completion="x") for i, f in enumerate(flags)]
    save_results(pd.DataFrame(rows_of("held", held) + rows_of("dev", dev)), runs / run_id / "eval.csv")
    if method != "warm start":
        save_results(pd.DataFrame(rows_of("held", held if last is None else last)), runs / run_id / "eval_final.csv")
    (runs / run_id / "DONE").write_text(json.dumps({"selection": [{"step": s, "accuracy": a} for s, a in curve]}))


def test_primary_claim_and_the_last_policy_hand_computed(tmp_path):
    plan = _plan(tmp_path)
    runs = tmp_path / "runs"
    assert primary_claim(plan, runs).empty  # the plan fixes none
    plan.raw["primary_claim"] = dict(claim="DelTA > DAPO", artefact="appK_significance", a="DelTA", b="DAPO",
                                     relation=">", checkpoint="last", benchmarks=["held"], alpha=0.05)
    assert primary_claim(plan, runs).loc["DelTA > DAPO", "verdict"] == "runs missing"
    last = {"DelTA": [6, 7, 8], "DAPO": [2, 3, 4]}  # correct of 8 for the last policy; the selected ones all 4 of 8
    for rid, r in plan.runs.items():
        if r.method in last: _run(runs, rid, r.method, r.seed, 4, dev=8, last=last[r.method][r.seed])
    _run(runs, warm_start_dir(runs, "tiny-qwen3", "math").name, "warm start", 0, 2)
    c = primary_claim(plan, runs).loc["DelTA > DAPO"]
    assert (c["family"], c["metric"], c["benchmarks"]) == ("primary", "last", "held")
    assert c["effect"] == pytest.approx(50.0) and c["p"] == pytest.approx(0.05) and c["p_holm"] == c["p"]  # alone
    assert c["interval"] == "paired by problem and seed over 4 problems" and c["ci_low"] <= 50.0 <= c["ci_high"]
    assert 0 < c["p_problems"] < 1 and c["verdict"] == "not testable with 3 vs 3 seeds"  # 3 vs 3 floor: p = 1/20
    assert c["registered seeds"] == "3 vs 3"  # every registered seed is in: the verdict is not an interim one
    assert check_claims(plan, runs).loc["DelTA > DAPO", "effect"] == pytest.approx(0.0)  # selected: 4 of 8 for both
    s = learning_summary(plan, runs).loc[("tiny-qwen3", "math")]
    assert s.loc["DelTA", "checkpoint"] == "last policy" and s.loc["DelTA", "gain"] == pytest.approx(62.5)
    assert s.loc["DAPO", "gain"] == pytest.approx(12.5) and np.isfinite(s.loc["DAPO", "gain p (Wilcoxon)"])
    plan.raw["primary_claim"]["benchmarks"] = ["dev"]
    with pytest.raises(ValueError, match="primary_claim.benchmarks"):
        primary_claim(plan, runs)
    plan.raw["primary_claim"] = {"claim": "x"}
    with pytest.raises(ValueError, match="primary_claim"):
        primary_claim(plan, runs)


def test_equivalence_reads_tost_from_the_90_percent_interval_hand_computed():
    from delta_repro.claims import equivalence
    same = equivalence([5.0, 5.0], [5.0, 5.0], margin=1.0)  # no spread at all: the interval is the point 0
    assert (same["ci90_low"], same["ci90_high"], same["equivalence_bound"]) == (0.0, 0.0, 0.0)
    assert same["tost"] == "equivalent within ±1"
    apart = equivalence([5.0, 5.0], [3.0, 3.0], margin=1.0)
    assert apart["equivalence_bound"] == 2.0 and apart["tost"] == "not shown equivalent within ±1"
    assert equivalence([5.0, 5.0], [3.0, 3.0], margin=3)["tost"] == "equivalent within ±3"
    assert equivalence([5.0, 5.0], [3.0, 3.0])["tost"] == "" and np.isnan(equivalence([5.0, 5.0], [3.0, 3.0])["equivalence_margin"])
    # paired by problem and seed: a shift of exactly 10 points on every problem of every seed is exactly 10
    rng = np.random.default_rng(0)
    b = rng.uniform(0, 80, (4, 50))
    r = equivalence(None, None, 12.0, a_problems=b + 10, b_problems=b, paired_seeds=True)
    assert r["ci90_low"] == pytest.approx(10) and r["ci90_high"] == pytest.approx(10) and r["tost"] == "equivalent within ±12"
    # the 90 % interval lies inside the 95 % one of the same resamples, and the bound is its larger end
    a = b + rng.normal(0, 5, b.shape)
    r90 = equivalence(None, None, 1.0, a_problems=a, b_problems=b)
    r95 = paired_difference(a, b, "two-sided")
    assert r95["low"] <= r90["ci90_low"] <= r90["ci90_high"] <= r95["high"]
    assert r90["equivalence_bound"] == max(abs(r90["ci90_low"]), abs(r90["ci90_high"]))
    for bad in (0, -1.0, float("nan"), float("inf"), True, "1"):
        with pytest.raises(ValueError, match="margin"):
            equivalence([1.0, 2.0], [1.0, 2.0], bad)


def test_primary_claims_one_per_study_each_with_its_equivalence_margin(tmp_path):
    plan = _plan(tmp_path)
    runs = tmp_path / "runs"
    last = {"DelTA": [6, 7, 8], "DAPO": [2, 3, 4]}
    for rid, r in plan.runs.items():
        if r.method in last: _run(runs, rid, r.method, r.seed, 4, dev=8, last=last[r.method][r.seed])
    one = dict(claim="DelTA > DAPO", artefact="appK_significance", a="DelTA", b="DAPO", relation=">", checkpoint="last",
               benchmarks=["held"], alpha=0.05, equivalence_margin=1.0, margin_note="chosen after the fact")
    two = dict(one, claim="DelTA > DAPO (second study)", equivalence_margin=60, registered="2026-12-04")
    plan.raw["primary_claim"] = [one, two]
    c = primary_claim(plan, runs)
    assert list(c.index) == ["DelTA > DAPO", "DelTA > DAPO (second study)"] and set(c["family"]) == {"primary"}
    assert c.loc["DelTA > DAPO", "effect"] == pytest.approx(50.0)  # 50 points apart (see the test above)
    # 3 vs 3 seeds reach no p below 0.05: no equivalence is read (the bootstrap over 3 seeds is too narrow for it)
    assert c.loc["DelTA > DAPO", "tost"] == c.loc["DelTA > DAPO (second study)", "tost"] == (
        "not read with 3 vs 3 seeds (too few for the seed-level test, so too few for the interval to hold the seeds' spread)")
    assert c.loc["DelTA > DAPO", "margin_note"] == "chosen after the fact"
    assert c.loc["DelTA > DAPO (second study)", "registered"] == "2026-12-04"
    r = c.loc["DelTA > DAPO (second study)"]
    assert r["ci90_low"] <= 50 <= r["ci90_high"] and r["equivalence_bound"] >= 50
    assert r["equivalence_margin"] == 60
    plan.raw["primary_claim"] = [one, dict(one)]
    with pytest.raises(ValueError, match="share a name"):
        primary_claim(plan, runs)
    plan.raw["primary_claim"] = dict(one, equivalence_margin=-2)
    with pytest.raises(ValueError, match="primary_claim.equivalence_margin"):
        primary_claim(plan, runs)


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
    assert c["effect"] == pytest.approx(50.0) and c["verdict"] == "not testable with 3 vs 3 seeds"  # p floor 1/20
    assert c["p_holm"] == pytest.approx(0.1) and (c["method_a"], c["method_b"]) == ("DelTA", "DAPO")  # 2 tests: x2
    assert c["p"] == pytest.approx(0.05) and c["detectable"] == math.inf and c["evidence"] == "3 vs 3 training seeds"
    assert claims.loc["DelTA > within-side only", "verdict"] == "not in the plan"  # no table2 in this plan
    assert claims.loc["DAPO > Bottom-50%", "effect"] == pytest.approx(37.5 - 100 / 24)

    s = learning_summary(plan, runs, "selected").loc[("tiny-qwen3", "math")]
    assert s.loc["DelTA", "checkpoint"] == "selected"
    assert s.loc["DelTA", "warm start"] == pytest.approx(25.0) and s.loc["DelTA", "after RL"] == pytest.approx(87.5)
    # 3 seeds: no interval of the gain (the bootstrap's would be about the seeds' range), so no "learns" reading
    assert s.loc["DelTA", "gain"] == pytest.approx(62.5) and s.loc["DelTA", "learns"] == "no interval (3 seeds)"
    assert np.isnan(s.loc["DelTA", "gain low"]) and s.loc["DelTA", "seeds"] == 3
    assert s.loc["DelTA", "gain shown"] == "62.5 (seeds: 50.0, 62.5, 75.0)"
    # Bottom-50% ends at 0, 0 and 12.5 % against a 25 % warm start: a negative gain
    assert s.loc["Bottom-50%", "gain"] < 0

    t = compare_with_paper(plan, "table1_main", runs, "table1_main", "Qwen3-8B-Base")
    assert t.loc["DelTA", "ours"] == pytest.approx(87.5) and t.loc["DelTA", "ours Δ vs DAPO"] == pytest.approx(50.0)
    assert t.loc["DAPO", "ours Δ vs DAPO"] == 0 and t.loc["SAPO", "sd"] == 0
    assert np.isnan(t.loc["DelTA", "Δ low"]) and np.isnan(t.loc["DelTA", "Δ high"])  # 3 seeds a side: no interval
    assert t.loc["DelTA", "paper Δ vs DAPO"] == pytest.approx(t.loc["DelTA", "paper"] - t.loc["DAPO", "paper"])
    assert set(t["our rank"]) == {"not ranked (3 seeds)"} and "diff" not in t.columns  # no "ours − paper"


def test_the_tables_difference_is_paired_by_problem_and_seed(tmp_path):
    # DAPO gets 1, 3, 5 and 7 of 8 right on seeds 0-3, DelTA one more on each seed: the seeds move both methods alike,
    # so an interval over the seeds' means alone (difference_ci) spans 0; paired by seed and problem it does not
    plan = _plan(tmp_path, seeds=(0, 1, 2, 3))
    runs = tmp_path / "runs"
    for rid, r in plan.runs.items():
        _run(runs, rid, r.method, r.seed, {"DelTA": 2}.get(r.method, 1) + 2 * r.seed)
    t = compare_with_paper(plan, "table1_main", runs, "table1_main", "Qwen3-8B-Base")
    assert t.loc["DelTA", "ours Δ vs DAPO"] == pytest.approx(12.5)
    pair = paired_inputs(plan, runs, "selected", ("table1_main", "DelTA"), ("table1_main", "DAPO"), ["held"])
    assert pair["paired_seeds"] and pair["a_problems"].shape == (4, 4)
    r = paired_difference(pair["a_problems"], pair["b_problems"], "two-sided", paired_seeds=True)
    assert (t.loc["DelTA", "Δ low"], t.loc["DelTA", "Δ high"]) == pytest.approx((r["low"], r["high"]))
    _, lo, hi = difference_ci([25.0, 50.0, 75.0, 100.0], [12.5, 37.5, 62.5, 87.5])
    assert lo < 0 <= t.loc["DelTA", "Δ low"] and t.loc["DelTA", "Δ high"] - t.loc["DelTA", "Δ low"] < hi - lo
    assert t.loc["SAPO", "ours Δ vs DAPO"] == 0 and t.loc["SAPO", "Δ low"] == t.loc["SAPO", "Δ high"] == 0  # identical runs
    # the ranks read the same paired intervals as the Δ column: here its low end touches 0, so DelTA is not ranked above
    assert t.loc["DelTA", "Δ low"] > 0 or t.loc["DelTA", "our rank"].startswith("tied")
    # the page's view: one column per quantity, the single benchmark not repeating the mean, ranks as integers
    page = people_table(t)
    assert "held" not in page.columns and "ours" not in page.columns and "Δ low" not in page.columns
    want = f"+12.50 [{t.loc['DelTA', 'Δ low']:+.2f}, {t.loc['DelTA', 'Δ high']:+.2f}]".replace("-", "−")  # a true minus sign
    assert page.loc["DelTA", "ours Δ vs DAPO [95 % CI]"] == want
    assert page.loc["DAPO", "ours Δ vs DAPO [95 % CI]"] == "0 (reference)"
    assert set(page["paper rank"]) <= {"1", "2", "3", "—"}
    with pytest.raises(ValueError, match="table: not a compare_with_paper table"):
        people_table(t.drop(columns=["Δ low"]))


def test_the_tables_ranks_read_the_paired_interval_not_the_means_intervals(tmp_path):
    # DelTA gets four more of 8 right than DAPO on every seed (DAPO 0, 0, 4, 4): over the seeds' means the two touch
    # (0-50 % against 50-100 %), paired by problem and seed they separate (a resample with no difference draws seeds
    # of one half and problems of the other: 2 / 2^8 < 2.5 %), as the Δ column and a verdict read them
    plan = _plan(tmp_path, seeds=(0, 1, 2, 3))
    runs = tmp_path / "runs"
    for rid, r in plan.runs.items():
        _run(runs, rid, r.method, r.seed, {"DelTA": 4}.get(r.method, 0) + 4 * (r.seed // 2))
    t = compare_with_paper(plan, "table1_main", runs, "table1_main", "Qwen3-8B-Base")
    assert t.loc["DelTA", "Δ low"] > 0
    assert evidence_ranks({m: list(v.values()) for m, v in t.attrs["scores"].items()})["DelTA"].startswith("tied")
    assert t.loc["DelTA", "our rank"] == "1" and t.loc["DAPO", "our rank"] == t.loc["SAPO", "our rank"] == "tied (2–3)"


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


def test_two_seed_methods_show_seed_values_in_tables_and_learning(tmp_path):
    plan = _plan(tmp_path, seeds=(0, 1))
    runs = tmp_path / "runs"
    for rid, r in plan.runs.items():
        _run(runs, rid, r.method, r.seed, {"DAPO": 4, "DelTA": 6, "SAPO": 5, "Bottom-50%": 2}[r.method])
    _run(runs, warm_start_dir(runs, "tiny-qwen3", "math").name, "warm start", 0, 2)
    s = learning_summary(plan, runs).loc[("tiny-qwen3", "math", "DelTA")]
    assert s["gain"] == pytest.approx(50.0) and math.isnan(s["gain low"])  # both seeds +50: no "[50, 50]"
    assert s["gain shown"] == "50.0 (seeds: 50.0, 50.0)" and s["learns"] == "no interval (2 seeds)"
    t = compare_with_paper(plan, "table1_main", runs, "table1_main", "Qwen3-8B-Base")
    assert math.isnan(t.loc["DelTA", "Δ low"]) and t.loc["DelTA", "ours shown"] == "75.00 (seeds: 75.00, 75.00)"
    assert t.loc["DelTA", "our rank"] == "not ranked (2 seeds)"


def _floor_plan(tmp_path):
    raw = yaml.safe_load(open("configs/smoke.yaml"))
    held = raw["tasks"]["math"]["eval"]["chain_sum-heldout"]
    raw["tasks"]["math"]["select"] = "dev"
    raw["tasks"]["math"]["eval"] = {"dev": held, "held": held, "hard": held}
    raw["artefacts"] = {"table1_main": {"backbone": "tiny-qwen3", "task": "math", "methods": ["DAPO", "DelTA"],
                                        "seeds": [0, 1, 2, 3]}}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
    return load_plan(tmp_path / "plan.yaml")


def _eval(runs, run_id, method, seed, correct: dict):
    "eval.csv with 4 problems x 2 samples per benchmark; correct[benchmark] = how many of the 8 are correct."
    rows = [dict(run_id=run_id, method=method, seed=seed, benchmark=b, problem_id=f"p{i // 2}", sample=i % 2,
                 correct=i < n, parseable=True, length=3, completion="x") for b, n in correct.items() for i in range(8)]
    save_results(pd.DataFrame(rows), runs / run_id / "eval.csv")
    (runs / run_id / "DONE").write_text(json.dumps({"selection": []}))


def test_a_benchmark_below_one_percent_for_every_method_is_a_floor(tmp_path):
    plan = _floor_plan(tmp_path)
    runs = tmp_path / "runs"
    for rid, r in plan.runs.items():  # 'hard': nobody solves anything; 'held': DelTA 6 of 8 + seed, DAPO 2 + seed
        _eval(runs, rid, r.method, r.seed, {"dev": 1, "held": (5 if r.method == "DelTA" else 1) + r.seed, "hard": 0})
    t = compare_with_paper(plan, "table1_main", runs, "table1_main", "Qwen3-8B-Base")
    assert t.attrs["floors"] == {"hard": 0.0} and "hard (floor)" in t.columns and "hard" not in t.columns
    # the average is over 'held' only: with 'hard' in it DelTA would be at (81.25 + 0) / 2 = 40.6 %
    assert t.loc["DelTA", "ours"] == pytest.approx(100 * 6.5 / 8) and t.loc["DAPO", "ours"] == pytest.approx(100 * 2.5 / 8)
    assert t.loc["DelTA", "our rank"] == "1" and t.loc["DAPO", "our rank"] == "2"  # separated intervals: ranked
    caption = table_report(plan, "table1_main", runs)[1]
    assert "At the floor" in caption and "hard (best 0.00 %)" in caption and "avg@k over held;" in caption
    # one method above 1 % on it: a comparison again, not a floor
    rid = next(r for r, run in plan.runs.items() if run.method == "DelTA" and run.seed == 0)
    (runs / rid / "eval.csv").unlink()
    _eval(runs, rid, "DelTA", 0, {"dev": 1, "held": 5, "hard": 1})
    assert compare_with_paper(plan, "table1_main", runs, "table1_main", "Qwen3-8B-Base").attrs["floors"] == {}


def test_gain_ci_is_paired_by_problem_and_puts_the_seeds_inside():
    from delta_repro.reporting import gain_ci
    warm = np.linspace(0.0, 100.0, 40)                    # problems of every difficulty
    after = np.stack([warm + d for d in (4.0, 5.0, 5.0, 6.0)])  # RL adds 4-6 points on every problem, by seed
    g = gain_ci(after, warm)
    assert g["effect"] == pytest.approx(5.0) and 4.0 <= g["low"] < 5.0 < g["high"] <= 6.0  # only the seeds vary
    assert g["p_wilcoxon"] < 1e-6
    assert np.isnan(gain_ci(after[:2], warm)["low"]) and np.isnan(gain_ci(after[:3], warm)["low"])  # 2 or 3: none
    with pytest.raises(ValueError, match="same problems"):
        gain_ci(after, warm[:10])

def test_learning_summary_leads_with_the_right_answer_in_any_form(tmp_path):
    import yaml
    from delta_repro.experiments import load_plan
    from delta_repro.reporting import learning_summary, warm_start_dir
    from pathlib import Path
    raw = yaml.safe_load((Path(__file__).parents[1] / "configs" / "smoke.yaml").read_text())
    raw["artefacts"] = {"table1_main": {"backbone": "tiny-qwen3", "task": "math", "methods": ["DAPO"], "seeds": [0, 1, 2, 3]}}
    raw["tasks"]["math"]["eval"].pop("CHAMP")  # the one reported set: basic_arithmetic
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
    plan = load_plan(tmp_path / "plan.yaml")
    def write(d, correct, lenient, parseable):
        d.mkdir(parents=True, exist_ok=True)
        pd.DataFrame({"benchmark": "basic_arithmetic", "problem_id": range(4), "sample": 0, "correct": correct,
                      "lenient": lenient, "parseable": parseable, "length": 5, "completion": "x"}).to_csv(d / "eval.csv", index=False)
    runs = tmp_path / "runs"
    write(warm_start_dir(runs, "tiny-qwen3", "math"), [1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 0, 1])  # strict 25, lenient 50
    for rid in plan.runs: write(runs / rid, [1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1])              # strict 50, lenient 50
    row = learning_summary(plan, runs, "selected").iloc[0]
    assert row["warm start"] == 50 and row["after RL"] == 50 and row["gain"] == 0      # format learned, correctness not
    assert row["gain (strict)"] == 25 and row["unparseable % (warm start)"] == 50 and row["unparseable % (after RL)"] == 0
    assert row["learns"] == "no"


def test_a_tables_caption_gives_the_gain_of_the_checkpoint_the_table_shows(tmp_path):
    # The table reads each run's selected checkpoint (eval.csv: 6 of 8 right); the last policy (eval_final.csv) has
    # 2 of 8, below the warm start's 4. The caption's gain must be the selected checkpoint's, +25 points, not the last
    # policy's -25: a gain over the warm start that disagrees with the table beside it misleads.
    plan = _plan(tmp_path, seeds=(0, 1))
    runs = tmp_path / "runs"
    for rid, r in plan.runs.items():
        _run(runs, rid, r.method, r.seed, 6, last=2)
    _run(runs, warm_start_dir(runs, "tiny-qwen3", "math").name, "warm start", 0, 4)
    table, caption = table_report(plan, "table1_main", runs)
    assert table.loc["DelTA", "ours"] == pytest.approx(75.0)
    assert "Gain of the selected checkpoint over the warm start" in caption
    assert "DelTA 25.0 (seeds: 25.0, 25.0)" in caption and "-25.0" not in caption
    # a backbone that keeps no checkpoint selection: its table and its gain are the last policy's, and say so
    plan.raw["backbones"]["tiny-qwen3"]["selection"] = {"choose": "last"}
    caption = table_report(plan, "table1_main", runs)[1]
    assert "Gain of the last policy (the one this table shows) over the warm start" in caption
    assert "selected checkpoint over" not in caption


def test_results_page_gaps_and_curves_hand_computed(tmp_path):
    # DelTA gets 6, 7, 8, 7 of 8 right at the last policy on seeds 0-3 and DAPO 2, 3, 4, 3 (each seed +50 points); at
    # the selected checkpoint both 4 of 8: the page reads the checkpoint it is asked for, for every comparison alike
    from delta_repro.results import claims_overview, conclusion, method_gaps, primary_study_curves, study_curves
    plan = _plan(tmp_path, seeds=(0, 1, 2, 3))
    runs = tmp_path / "runs"
    last = {"DelTA": [6, 7, 8, 7], "DAPO": [2, 3, 4, 3], "SAPO": [4, 4, 4, 4], "Bottom-50%": [0, 0, 0, 0]}
    for rid, r in plan.runs.items():
        _run(runs, rid, r.method, r.seed, 4, dev=8, last=last[r.method][r.seed],
             curve=((0, 10.0), (10, 10.0 + 10 * r.seed + (5 if r.method == "DelTA" else 0))))
    g = method_gaps(plan, runs)
    assert list(g.index) == ["table1_main"]  # the only comparison table (appK is not one) listing both methods
    r = g.loc["table1_main"]
    assert r["effect"] == pytest.approx(50.0) and r["low"] <= 50 <= r["high"] and (r["n_a"], r["n_b"]) == (4, 4)
    assert r["seed differences"] == "+50.00, +50.00, +50.00, +50.00" and r["paper"] == pytest.approx(28.4 - 22.95)
    assert method_gaps(plan, runs, metric="selected").loc["table1_main", "effect"] == 0.0
    with pytest.raises(ValueError, match="metric"):
        method_gaps(plan, runs, metric="auc")
    c = study_curves(plan, runs, "appK_significance").set_index(["method", "step"])
    assert c.loc[("DelTA", 10), "mean"] == pytest.approx(30.0) and c.loc[("DAPO", 10), "mean"] == pytest.approx(25.0)
    assert c.loc[("DAPO", 10), "seeds"] == 4 and c.loc[("DAPO", 0), "low"] == c.loc[("DAPO", 0), "high"] == 10.0
    with pytest.raises(ValueError, match="artefact"):
        study_curves(plan, runs, "table99")
    assert primary_study_curves(plan, runs) == {}  # the plan registers no primary claim yet
    plan.raw["primary_claim"] = dict(claim="DelTA > DAPO", artefact="appK_significance", a="DelTA", b="DAPO",
                                     relation=">", checkpoint="last", benchmarks=["held"], alpha=0.05, equivalence_margin=5)
    (title, curves), = primary_study_curves(plan, runs).items()
    assert title == "DelTA > DAPO: tiny-qwen3, 2 steps"  # the smoke plan's steps
    assert curves.equals(study_curves(plan, runs, "appK_significance", ("DAPO", "DelTA")))
    ov = claims_overview(primary_claim(plan, runs).reset_index())
    assert ov.loc["DelTA > DAPO", "effect [95 % CI]"].startswith("+50.00 [") and ov.loc["DelTA > DAPO", "p"] == "0.014"  # 1/70
    text = conclusion(ov, g)
    assert "**DelTA > DAPO**" in text and "not shown equivalent within ±5" in text and "1 of those contain 0" not in text


def test_study_pairs_hand_computed(tmp_path):
    # seed 0: DelTA right on 6 of 8, DAPO on 2; seed 1: 8 and 4 (differences +50 both). The last policies write the
    # same text on 3 of the 8 aligned rows at seed 0 and on none at seed 1; a right answer read alike on 4 and 4 rows
    from delta_repro.results import primary_study_pairs, study_pairs
    plan = _plan(tmp_path, seeds=(0, 1, 2))
    runs = tmp_path / "runs"
    last = {"DelTA": [6, 8], "DAPO": [2, 4]}
    same = {0: 3, 1: 0}  # rows 0..n-1 write "same"
    # seed 0's DelTA logs step times (a resumed run: its train_runtime, 600 s, covers the last segment only); DAPO's
    # logs neither; seed 1's DelTA logs only train_runtime
    logs = {("DelTA", 0): [{"credit/step_multiplier": 1.2, "step_time": 3600.0}, {"credit/step_multiplier": 1.4, "step_time": 3600.0},
                           {"step_time": float("nan")}, {"train_runtime": 600.0}],
            ("DelTA", 1): [{"credit/step_multiplier": 1.3}, {"train_runtime": 7200.0}],
            ("DAPO", 0): [{"credit/step_multiplier": 1.0}, {"loss": 0.1}], ("DAPO", 1): [{"loss": 0.1}]}
    for rid, r in plan.runs.items():
        if r.method not in last or r.seed == 2: continue  # seed 2: DelTA and DAPO not evaluated
        _run(runs, rid, r.method, r.seed, 4, last=last[r.method][r.seed])
        df = pd.read_csv(runs / rid / "eval_final.csv")
        df["completion"] = ["same" if i < same[r.seed] else f"{r.method}-{i}" for i in range(len(df))]
        (runs / rid / "eval_final.csv").unlink()  # finished results are never overwritten: replaced by hand here
        save_results(df, runs / rid / "eval_final.csv")
        (runs / rid / "log_history.json").write_text(json.dumps(logs[r.method, r.seed]))
    p = study_pairs(plan, runs, "appK_significance")
    assert list(p.index) == [0, 1] and p.index.name == "seed"
    assert p.loc[0, "DelTA"] == pytest.approx(75.0) and p.loc[0, "DAPO"] == pytest.approx(25.0)
    assert p.loc[1, "DelTA − DAPO"] == pytest.approx(50.0)
    assert p.loc[0, "identical"] == pytest.approx(100 * 3 / 8) and p.loc[1, "identical"] == 0.0
    # seed 0: DelTA right on rows 0-5, DAPO on rows 0-1 -> agree on rows 0, 1, 6, 7; seed 1: DelTA all, DAPO 0-3
    assert p.loc[0, "same correctness"] == pytest.approx(50.0) and p.loc[1, "same correctness"] == pytest.approx(50.0)
    assert p.loc[0, "DelTA loss scale"] == pytest.approx(1.3) and p.loc[0, "DAPO loss scale"] == 1.0  # the old log name
    # seed 0's DelTA logged 7,200 s of steps against a last segment of 600 s: interrupted and resumed; no other run
    assert p.loc[0, "resumed"] == "DelTA" and p.loc[1, "resumed"] == ""
    assert p.loc[0, "DelTA hours"] == pytest.approx(2.0) and np.isnan(p.loc[0, "DAPO hours"])  # 2 x 3600 s of steps
    assert p.loc[1, "DelTA hours"] == pytest.approx(2.0) and np.isnan(p.loc[1, "DAPO loss scale"])  # train_runtime
    # swapping the methods mirrors the difference; a seed lacking one side is left out, no NaN row
    q = study_pairs(plan, runs, "appK_significance", a="DAPO", b="DelTA")
    assert (q["DAPO − DelTA"] == -p["DelTA − DAPO"]).all() and (q["identical"] == p["identical"]).all()
    assert study_pairs(plan, tmp_path / "none", "appK_significance").empty
    for kw, says in ((dict(artefact="table99"), "artefact"), (dict(a="SAPO"), "method"), (dict(b="DelTA"), "two methods")):
        with pytest.raises(ValueError, match=says):
            study_pairs(plan, runs, **{"artefact": "appK_significance", **kw})
    assert primary_study_pairs(plan, runs) == {}
    plan.raw["primary_claim"] = dict(claim="DelTA > DAPO", artefact="appK_significance", a="DelTA", b="DAPO",
                                     relation=">", checkpoint="last", benchmarks=["held"], alpha=0.05)
    (title, frame), = primary_study_pairs(plan, runs).items()
    assert title == "DelTA > DAPO: tiny-qwen3, 2 steps" and frame.equals(p)


def test_the_registered_seed_rule_reads_the_spread_only_and_adds_its_seeds(tmp_path):
    from delta_repro.claims import seed_rule
    from delta_repro.evaluation import detectable_effect
    last = {"DelTA": [2, 5, 8, 4, 8, 8], "DAPO": [3, 4, 6, 1, 0, 0]}  # correct of 8 at the last policy, per seed
    def claims_of(seeds, rule, evaluated):
        (where := tmp_path / f"plan{len(list(tmp_path.glob('plan*')))}").mkdir()
        plan = _plan(where, seeds=seeds)
        runs = where / "runs"  # the runs of this call only
        plan.raw["primary_claim"] = dict(claim="DelTA > DAPO", artefact="appK_significance", a="DelTA", b="DAPO",
                                         relation=">", checkpoint="last", benchmarks=["held"], alpha=0.05, seed_rule=rule)
        for rid, r in plan.runs.items():
            if r.method in last and r.seed in evaluated:
                _run(runs, rid, r.method, r.seed, 4, last=last[r.method][r.seed])
        return plan, runs
    rule = {"detectable_above": 1.5, "add_seeds": [4, 5]}
    # 3 of the 4 base seeds in: not read yet; the design stays 4 vs 4
    plan, runs = claims_of((0, 1, 2, 3), rule, {0, 1, 2})
    c = primary_claim(plan, runs).loc["DelTA > DAPO"]
    assert c["seed rule"] == "read at 4 vs 4 (3 vs 3 in)" and c["registered seeds"] == "4 vs 4"
    # all 4 in: the spread of these scores puts the detectable effect far above 1.5 points, so seeds 4 and 5 are
    # added and the verdict is an interim one of the 6 vs 6 design, until the artefact lists them and they are in
    d = detectable_effect([100 * x / 8 for x in last["DelTA"][:4]], [100 * x / 8 for x in last["DAPO"][:4]], 0.05, 0.8, "greater")
    assert 1.5 < d < float("inf")
    plan, runs = claims_of((0, 1, 2, 3), rule, {0, 1, 2, 3})
    c = primary_claim(plan, runs).loc["DelTA > DAPO"]
    assert c["seed rule"] == f"detectable {d:.2f} > 1.5 at 4 vs 4: seeds 4, 5 added (4, 5 not in the artefact yet)"
    assert c["registered seeds"] == "6 vs 6" and c["verdict"].startswith("interim, 4 vs 4 of the registered 6 vs 6 seeds: ")
    plan, runs = claims_of((0, 1, 2, 3, 4, 5), rule, {0, 1, 2, 3})
    c = primary_claim(plan, runs).loc["DelTA > DAPO"]
    assert c["seed rule"] == f"detectable {d:.2f} > 1.5 at 4 vs 4: seeds 4, 5 added" and c["registered seeds"] == "6 vs 6"
    plan, runs = claims_of((0, 1, 2, 3, 4, 5), rule, {0, 1, 2, 3, 4, 5})
    c = primary_claim(plan, runs).loc["DelTA > DAPO"]  # read on the base seeds alone, whatever seeds 4 and 5 score
    assert c["seed rule"] == f"detectable {d:.2f} > 1.5 at 4 vs 4: seeds 4, 5 added" and not c["verdict"].startswith("interim")
    assert (c["n_a"], c["n_b"]) == (6, 6)
    # a threshold above the detectable effect adds nothing; an artefact that lists seeds the rule did not add is refused
    high = {"detectable_above": 1000, "add_seeds": [4, 5]}
    plan, runs = claims_of((0, 1, 2, 3), high, {0, 1, 2, 3})
    c = primary_claim(plan, runs).loc["DelTA > DAPO"]
    assert c["seed rule"] == f"detectable {d:.2f} ≤ 1000 at 4 vs 4: no seeds added" and c["registered seeds"] == "4 vs 4"
    plan, runs = claims_of((0, 1, 2, 3, 4, 5), high, {0, 1, 2, 3})
    with pytest.raises(ValueError, match="seed_rule: .* lists seeds \\[4, 5\\], which the rule does not add"):
        primary_claim(plan, runs)
    plan, runs = claims_of((0, 1, 2, 3, 4, 5), rule, {0, 1, 2})
    with pytest.raises(ValueError, match="which the rule adds only once it is read at 4 vs 4"):
        primary_claim(plan, runs)
    # malformed rules name the key
    for bad, says in (({"detectable_above": 1.5}, "needs exactly"), ({"detectable_above": -1, "add_seeds": [4]}, "detectable_above"),
                      ({"detectable_above": True, "add_seeds": [4]}, "detectable_above"),
                      ({"detectable_above": 1.5, "add_seeds": [4, 4]}, "add_seeds"), ({"detectable_above": 1.5, "add_seeds": [True]}, "add_seeds"),
                      ({"detectable_above": 1.5, "add_seeds": []}, "add_seeds"), ("add four", "needs exactly")):
        with pytest.raises(ValueError, match=f"primary_claim.seed_rule.*{says}"):
            seed_rule(plan, {**plan.raw["primary_claim"], "seed_rule": bad}, {}, {})


def test_a_study_report_reads_every_number_from_the_runs(tmp_path):
    from delta_repro.results import study_report, study_text
    plan = _plan(tmp_path, seeds=(0, 1, 2, 3))
    runs = tmp_path / "runs"
    plan.raw["primary_claim"] = dict(claim="DelTA > DAPO", artefact="appK_significance", a="DelTA", b="DAPO", relation=">",
                                     checkpoint="last", benchmarks=["held"], alpha=0.05, registered="2026-12-04",
                                     equivalence_margin=2.0)
    assert study_report(plan, runs, "table1_main") == {}  # no primary claim reads it
    with pytest.raises(ValueError, match="artefact"):
        study_report(plan, runs, "table99")
    with pytest.raises(ValueError, match="study"):
        study_text({})
    last = {"DelTA": [6, 7, 8, 7], "DAPO": [2, 3, 4, 3]}  # of 8 correct, per seed
    for rid, r in plan.runs.items():
        if r.method in last:
            _run(runs, rid, r.method, r.seed, 4, last=last[r.method][r.seed])
            (runs / rid / "log_history.json").write_text(json.dumps(
                [{"credit/loss_scale": 1.1 if r.method == "DelTA" else 1.0, "step_time": 1800.0}] * 2))
    _run(runs, warm_start_dir(runs, "tiny-qwen3", "math").name, "warm start", 0, 2)  # 25 % held out
    st = study_report(plan, runs, "appK_significance")
    assert set(st) == {"spec", "row", "pairs", "curves", "learning", "hours", "runs"}
    assert st["spec"]["claim"] == "DelTA > DAPO" and st["row"]["effect"] == pytest.approx(50.0)  # 87.5 - 37.5
    assert list(st["pairs"].index) == [0, 1, 2, 3] and set(st["curves"]["method"]) == {"DelTA", "DAPO"}
    assert sorted(st["learning"].index.get_level_values("method")) == ["DAPO", "DelTA"]
    # each of the 8 runs of the two methods logged 2 x 1800 s of steps; the other methods' runs are not the study's
    assert st["runs"] == 8 and st["hours"] == pytest.approx(8.0)
    text = study_text(st)
    assert text.startswith("**DelTA > DAPO**, registered 2026-12-04: ") and "+50.00 [" in text and "over 4 vs 4 seeds" in text
    assert "DelTA +62.5 [" in text and "DAPO +12.5 [" in text and "(25.00 %)" in text  # gains over the warm start
    assert ("loss scale (mean λ̄ over tokens with Â ≠ 0) is 1.10 to 1.10 (DAPO's 1.00 to 1.00), a factor AdamW divides "
            "out, not a larger step") in text and "larger steps" not in text and "Interrupted" not in text
    assert "Training took 8.0 hours summed over its 8 finished runs" in text
    # seeds' accuracies 75, 87.5, 100, 87.5 and 25, 37.5, 50, 37.5: SD sqrt(2 x 12.5² / 3) = 10.21 each (ddof 1)
    assert "SD of the held-out accuracy: DelTA 10.21, DAPO 10.21 points (pooled 10.21, over the 4 seeds both have)" in text


def test_a_primary_claim_read_before_every_registered_seed_is_in_says_it_is_interim(tmp_path):
    plan = _plan(tmp_path, seeds=(0, 1, 2, 3))
    runs = tmp_path / "runs"
    plan.raw["primary_claim"] = dict(claim="DelTA > DAPO", artefact="appK_significance", a="DelTA", b="DAPO",
                                     relation=">", checkpoint="last", benchmarks=["held"], alpha=0.05,
                                     equivalence_margin=90.0)
    last = {"DelTA": [2, 3, 4, 5], "DAPO": [6, 7, 8, 8]}  # DelTA below DAPO at every seed
    for rid, r in plan.runs.items():
        if r.method in last and r.seed < 2: _run(runs, rid, r.method, r.seed, 4, last=last[r.method][r.seed])
    # two seeds a side: the interval holds no seed spread, so no equivalence is read (not "equivalent within ±90")
    c = primary_claim(plan, runs).loc["DelTA > DAPO"]
    assert c["tost"] == "not read with 2 vs 2 seeds (the seeds' spread is not in the interval)"
    for rid, r in plan.runs.items():
        if r.method in last and r.seed == 2: _run(runs, rid, r.method, r.seed, 4, last=last[r.method][r.seed])
    c = primary_claim(plan, runs).loc["DelTA > DAPO"]
    assert c["registered seeds"] == "4 vs 4" and (c["n_a"], c["n_b"]) == (3, 3)
    assert c["verdict"].startswith("interim, 3 vs 3 of the registered 4 vs 4 seeds: ")
    assert c["tost"] == "interim: equivalent within ±90"
    for rid, r in plan.runs.items():
        if r.method in last and r.seed == 3: _run(runs, rid, r.method, r.seed, 4, last=last[r.method][r.seed])
    c = primary_claim(plan, runs).loc["DelTA > DAPO"]
    assert not c["verdict"].startswith("interim") and c["verdict"] == "contradicted at this scale"
    assert c["tost"] == "equivalent within ±90"


def _study_plan(tmp_path):
    "A replication-shaped plan: DAPO and DelTA seeds 0-5, Placebo and Random λ seeds 0-3 (seeds_by_method)."
    raw = yaml.safe_load(open("configs/smoke.yaml"))
    raw["tasks"]["math"]["select"] = "dev"
    raw["tasks"]["math"]["eval"] = {"dev": raw["tasks"]["math"]["eval"]["chain_sum-heldout"],
                                    "held": raw["tasks"]["math"]["eval"]["chain_sum-heldout"]}
    raw["artefacts"] = {"table9_smollm2@replication": {
        "backbone": "tiny-qwen3", "task": "math", "methods": ["DAPO", "DelTA", "Placebo", "Random λ"],
        "seeds": [0, 1, 2, 3, 4, 5], "seeds_by_method": {"Placebo": [0, 1, 2, 3], "Random λ": [0, 1, 2, 3]}}}
    common = dict(artefact="table9_smollm2@replication", relation=">", checkpoint="last", benchmarks=["held"],
                  alpha=0.05, equivalence_margin=2.0, same_start=True, study="replication")
    raw["primary_claim"] = [
        {**common, "claim": "H0", "a": "Placebo", "b": "DAPO", "relation": "≈", "seeds": [0, 1, 2, 3], "role": "control"},
        {**common, "claim": "H1", "a": "DAPO", "b": "DelTA", "seeds": [0, 1, 2, 3, 4, 5], "role": "replication"},
        {**common, "claim": "H2", "a": "DelTA", "b": "Random λ", "seeds": [0, 1, 2, 3], "family": "H2-H3", "role": "dose"},
        {**common, "claim": "H3", "a": "Random λ", "b": "DAPO", "seeds": [0, 1, 2, 3], "family": "H2-H3", "role": "premise"}]
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
    return load_plan(tmp_path / "plan.yaml")


STUDY_HELD = {"DAPO": [4, 4, 5, 4, 4, 5], "DelTA": [3, 4, 3, 3, 4, 3], "Placebo": [4, 4, 5, 5], "Random λ": [8, 7, 8, 8]}


def _study_runs(plan, tmp_path):
    "Every run of `_study_plan` finished and evaluated (`STUDY_HELD` of 8 correct at the last policy), from one start."
    runs = tmp_path / "runs"
    for rid, r in plan.runs.items():
        _run(runs, rid, r.method, r.seed, 4, last=STUDY_HELD[r.method][r.seed])
        done = json.loads((runs / rid / "DONE").read_text())
        (runs / rid / "DONE").write_text(json.dumps({**done, "provenance": {"start_sha256": "a" * 64}}))
    return runs, STUDY_HELD


def test_the_replication_study_reads_its_seeds_one_start_holm_and_the_placebo(tmp_path):
    plan = _study_plan(tmp_path)
    assert sorted(plan.runs[r].seed for r in plan.artefact_runs["table9_smollm2@replication"]
                  if plan.runs[r].method == "Placebo") == [0, 1, 2, 3]
    runs, held = _study_runs(plan, tmp_path)
    t = primary_claim(plan, runs)
    # H1 reads all 6 seeds (DAPO 26/48, DelTA 20/48 correct: +12.5 points); the others seeds 0-3 only
    assert t.loc["H1", "n_a"] == 6 and t.loc["H1", "effect"] == pytest.approx(100 * (26 - 20) / 48)
    assert t.loc["H0", "n_a"] == 4 and t.loc["H0", "n_b"] == 4 and t.loc["H0", "effect"] == pytest.approx(100 / 32)
    assert t.loc["H1", "start"] == "a" * 12 and t.loc["H0", "registered seeds"] == "4 vs 4"
    # H2 and H3: one family, Holm over 2 tests: p_holm = min(1, 2 p) for the smaller p; H0, H1 alone
    h = t.loc[["H2", "H3"]]
    assert (h["family"] == "replication: H2-H3 (Holm)").all() and t.loc["H1", "family"] == "primary"
    assert h["p_holm"].min() == pytest.approx(min(1.0, 2 * h["p"].min()))
    assert t.loc["H1", "p_holm"] == t.loc["H1", "p"]
    # the placebo null, as registered: the placebo's per-seed differences from DAPO (Placebo 4, 4, 5, 5 vs DAPO 4, 4, 5,
    # 4 of 8: 0, 0, 0, +12.5 points), read in size; H3's +43.75 points (Random λ 31/32 vs DAPO 17/32) is outside them
    assert t.loc["H0", "placebo null"] == ""
    assert t.loc["H3", "placebo null"].startswith("outside the placebo's null: 43.75 > 12.50 in size, the placebo's largest per-seed "
                                                  "difference (+0.00 to +12.50 over 4 seeds; mean +3.12 [")
    # DAPO − DelTA = +12.5 (26/48 vs 20/48): at the bound, so inside, though of the other sign than the placebo's
    assert t.loc["H1", "placebo null"].startswith("inside the placebo's null: 12.50 ≤ 12.50 in size")
    # sturdiness (6 paired seeds): leaving one pair out moves H1 between the hand-computed extremes
    loo = [100 * ((26 - held["DAPO"][i]) - (20 - held["DelTA"][i])) / 40 for i in range(6)]
    assert t.loc["H1", "loo_low"] == pytest.approx(min(loo)) and t.loc["H1", "loo_high"] == pytest.approx(max(loo))
    assert t.loc["H1", "ci_indep_low"] <= t.loc["H1", "effect"] <= t.loc["H1", "ci_indep_high"]
    assert t.loc["H1", "loo_excludes_0"].endswith("of 6")
    # a run that started from other weights: the study refuses to pair, naming it
    rid = next(r for r in plan.runs if plan.runs[r].method == "DelTA" and plan.runs[r].seed == 3)
    done = json.loads((runs / rid / "DONE").read_text())
    (runs / rid / "DONE").write_text(json.dumps({**done, "provenance": {"start_sha256": "b" * 64}}))
    with pytest.raises(ValueError, match=f"different weights.*{rid}"):
        primary_claim(plan, runs)
    (runs / rid / "DONE").write_text(json.dumps({**done, "provenance": {}}))
    with pytest.raises(ValueError, match="record no starting weights"):
        primary_claim(plan, runs)


def test_no_equivalence_is_read_while_the_claim_is_not_testable(tmp_path):
    plan = _study_plan(tmp_path)
    runs, _ = _study_runs(plan, tmp_path)
    for rid, r in plan.runs.items():  # three seeds a side (0-2): 3 vs 3 reaches no p below 0.05, one-sided
        if r.seed > 2: shutil.rmtree(runs / rid)
    t = primary_claim(plan, runs)
    for h in ("H0", "H1"):
        assert "not testable with 3 vs 3 seeds" in t.loc[h, "verdict"]
        assert t.loc[h, "tost"] == ("not read with 3 vs 3 seeds (too few for the seed-level test, so too few for the "
                                    "interval to hold the seeds' spread)")
    # from 4 seeds a side the seed-level test can reach alpha, and the equivalence reading is shown, marked interim
    runs, _ = _study_runs(plan, tmp_path / "four")
    for rid, r in plan.runs.items():
        if r.seed > 3: shutil.rmtree(runs / rid)
    assert primary_claim(plan, runs).loc["H1", "tost"].startswith("interim: ")


def test_a_study_claim_read_part_way_pairs_the_seeds_both_sides_have(tmp_path):
    plan = _study_plan(tmp_path)
    runs, held = _study_runs(plan, tmp_path)
    for rid, r in plan.runs.items():  # Placebo has seeds 0-1 in, DAPO 0-2: DAPO's seed 2 waits for its pair
        if (r.method == "Placebo" and r.seed > 1) or (r.method == "DAPO" and r.seed > 2): shutil.rmtree(runs / rid)
    t = primary_claim(plan, runs)
    h0 = t.loc["H0"]
    assert (h0["n_a"], h0["n_b"]) == (2, 2) and h0["registered seeds"] == "4 vs 4"
    # Placebo 4 + 4 of 16, DAPO 4 + 4 of 16 on seeds 0-1: no difference (with DAPO's seed 2, 5 of 8, it had been one)
    assert h0["effect"] == pytest.approx(0.0) and h0["evidence"].endswith("; DAPO's seed 2 not read until its pair is in")
    assert h0["verdict"].startswith("interim, 2 vs 2 of the registered 4 vs 4 seeds: ")
    # H1 (DAPO 0-2, DelTA 0-5): seeds 0-2 paired; DelTA's 3, 4, 5 wait
    h1 = t.loc["H1"]
    assert (h1["n_a"], h1["n_b"]) == (3, 3) and h1["effect"] == pytest.approx(100 * (13 - 10) / 24)
    assert h1["evidence"].endswith("; DelTA's seeds 3, 4, 5 not read until their pair is in")
    for rid, r in plan.runs.items():  # one seed in common: too few to read
        if r.method == "Placebo" and r.seed == 1: shutil.rmtree(runs / rid)
    h0 = primary_claim(plan, runs).loc["H0"]
    assert h0["verdict"] == "runs missing" and h0["evidence"] == "1 vs 1 evaluated seeds both sides have"


def test_a_claim_s_seeds_must_be_listed_for_both_sides(tmp_path):
    plan = _study_plan(tmp_path)
    plan.raw["primary_claim"][0]["seeds"] = [0, 1, 4]  # Placebo has no seed 4
    with pytest.raises(ValueError, match="primary_claim.seeds"):
        primary_claim(plan, tmp_path / "runs")


@pytest.mark.parametrize("by_method, says", [({"SAPO": [0]}, "seeds_by_method must map methods of the artefact"),
                                             ({"Placebo": [9]}, r"seeds_by_method\['Placebo'\]"),
                                             ({"Placebo": []}, r"seeds_by_method\['Placebo'\]"),
                                             ([0, 1], "seeds_by_method must map")])
def test_seeds_by_method_is_checked_naming_the_entry(tmp_path, by_method, says):
    _study_plan(tmp_path)
    raw = yaml.safe_load((tmp_path / "plan.yaml").read_text())
    raw["artefacts"]["table9_smollm2@replication"]["seeds_by_method"] = by_method
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True))
    with pytest.raises(ValueError, match=says):
        load_plan(tmp_path / "plan.yaml")


def test_the_replication_page_hand_computed(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    from delta_repro.results import plot_arm_differences, replication_report, replication_text, study_report
    plan = _study_plan(tmp_path)
    runs = tmp_path / "runs"
    assert replication_report(plan, runs, "table9_smollm2@replication")["runs"] == 0
    text = replication_text(replication_report(plan, runs, "table9_smollm2@replication"))
    assert text.startswith("0 of the 20 registered runs have finished") and "explain nothing" in text
    _study_runs(plan, tmp_path)
    weights = {"DAPO": (1.0, 1.0), "DelTA": (1.2, 0.9), "Placebo": (1.15, 1.15), "Random λ": (1.0, 1.0)}
    for rid, r in plan.runs.items():
        d, s = weights[r.method]
        (runs / rid / "log_history.json").write_text(json.dumps(
            [{"classes/decisive_correct": d, "classes/shared_correct": s, "classes/decisive_wrong": d,
              "classes/shared_wrong": s, "step_time": 900.0}] * 2))
    assert study_report(plan, runs, "table9_smollm2@replication") == {}  # several claims: a page of their own
    rep = replication_report(plan, runs, "table9_smollm2@replication")
    assert rep["runs"] == 20 and rep["hours"] == pytest.approx(10.0) and list(rep["claims"].index) == ["H0", "H1", "H2", "H3"]
    assert set(rep["pairs"]) == {"DelTA", "Placebo", "Random λ"} and len(rep["pairs"]["Placebo"]) == 4
    assert rep["pairs"]["DelTA"]["DelTA − DAPO"].tolist() == pytest.approx([-12.5, 0.0, -25.0, -12.5, 0.0, -25.0])
    assert rep["classes"].loc["DelTA", "decisive / shared, correct"] == pytest.approx(1.2 / 0.9)
    assert rep["classes"].loc["DelTA", "seeds logged"] == 6
    text = replication_text(rep)
    assert "20 of the 20 registered runs have finished (10.0 hours of training)." in text
    assert "- **H1** (DAPO − DelTA, 6 vs 6 seeds): " in text and "seeds resampled independently" in text
    assert "DelTA 1.33 in correct and 1.33 in wrong completions (6 seeds)" in text
    assert text.count("(Mann-Whitney over the seeds' means, one-sided; Holm)") == 2  # H2 and H3, one family
    assert "(Mann-Whitney over the seeds' means, two-sided: a test of a difference; equivalence is read by TOST)" in text
    # H1's DAPO − DelTA +12.5 against the placebo's per-seed differences (0, 0, 0, +12.5): inside, at the bound
    assert "inside the placebo's null: 12.50 ≤ 12.50 in size, the placebo's largest per-seed difference (" in text
    assert "|" not in text.split("- **H3**")[1].split("\n")[0]  # no pipe: the line goes into Markdown tables too
    assert "Interim" not in text  # every registered seed is in: the token weights are not marked interim
    # every hypothesis read at its registered seeds: the why section, from the verdicts
    assert "**Why DelTA does not help here.**" in text and "a loss scale that AdamW divides out moves" in text
    # H1: DAPO − DelTA = +12.5 points over 6 vs 6 seeds; H2 (dose) and H3 (premise) read by their registered roles
    assert "The deficit replicates on new seeds from one warm start: DAPO − DelTA = +12.50 [" in text
    assert "A wider λ range" in text and "The premise made exact beats DAPO: Random λ − DAPO = +43.75 [" in text
    # the heading says DelTA helps only where its advantage is shown (DAPO − DelTA's interval below 0), not for a mean
    claims = rep["claims"].copy()
    claims.loc["H1", ["effect", "ci_low", "ci_high"]] = [-0.5, -1.5, 0.5]
    assert "**Why DelTA does not help here.**" in replication_text({**rep, "claims": claims})
    claims.loc["H1", ["effect", "ci_low", "ci_high"]] = [-2.0, -3.0, -1.0]
    assert "**Why DelTA helps here.**" in replication_text({**rep, "claims": claims})
    # every outcome has its own words: the control (H0: per-seed 0, 0, 0, +12.5 beside DAPO) not holding, then holding
    assert ("The control does not hold: a loss scale that AdamW divides out moves held-out accuracy by +3.12 [" in text
            and "(not shown equivalent within ±2), and single seeds differ from DAPO by up to 12.50 points, so "
            "differences of that size are not told from what training for 2 steps makes of nothing." in text)
    claims = rep["claims"].copy()
    claims.loc["H0", "tost"] = "equivalent within ±2"
    claims.loc["H1", ["verdict", "tost", "detectable"]] = ["not supported", "equivalent within ±2", 1.37]
    claims.loc["H3", "verdict"] = "not supported"
    why = replication_text({**rep, "claims": claims}).split("**Why DelTA does not help here.**")[1]
    assert "The control holds: " in why and "that is what training for 2 steps makes of nothing." in why
    assert ("The deficit is not found again on new seeds from one warm start: DAPO − DelTA = +12.50 [+0.00, +31.25] "
            "points (equivalent within ±2; an effect below 1.37 points could go unseen); inside the placebo's null" in why)
    assert "The premise made exact is not shown to beat DAPO: Random λ − DAPO = +43.75 [" in why
    assert "So no gain from token credit within DelTA's range is found at this scale, exact or estimated" in why
    claims.loc["H3", "verdict"] = "contradicted at this scale"
    claims.loc["H2", "verdict"] = "not supported"
    why = replication_text({**rep, "claims": claims}).split("**Why DelTA does not help here.**")[1]
    assert "The premise made exact does worse than DAPO: " in why and "the premise itself fails here" in why
    assert "A wider λ range is not shown to cost more: DelTA − Random λ = −56.25 [" in why
    # DelTA's own weights, read from the logged classes: 1.2 / 0.9 on both sides, then below 1 on correct completions
    assert "DelTA's own weights put 1.33 times as much on the answer key's decisive tokens" in why
    assert "above 1 on both sides, as the premise asks." in why
    classes = rep["classes"].copy()
    classes.loc["DelTA", "decisive / shared, correct"] = 0.89
    why = replication_text({**rep, "claims": claims, "classes": classes}).split("**Why DelTA does not help here.**")[1]
    assert ("in correct completions and 1.33 times in wrong ones: below 1 in correct ones, where its estimate favours "
            "the tokens both sides share over those that decide the answer." in why)
    fig = plot_arm_differences(rep)
    assert len(fig.axes[0].get_yticklabels()) == 3


def test_the_figures_for_people_pass_their_layout_checks(tmp_path):
    "The forest plot and the per-arm plot: most of the width for the data, legend off the data, nothing cut off."
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from delta_repro.results import figure_layout, plot_arm_differences, plot_gaps, replication_report
    gaps = pd.read_csv("figures/cpu/results_gaps.csv").set_index("artefact")
    gaps.attrs.update(a="DelTA", b="DAPO", metric="last")
    lay = figure_layout(plot_gaps(gaps, "DelTA − DAPO"))
    assert lay["plot_share"] >= 0.55 and not lay["legend_overlaps"] and lay["clipped"] == [], lay
    plan = _study_plan(tmp_path)
    runs, held = _study_runs(plan, tmp_path)
    lay = figure_layout(plot_arm_differences(replication_report(plan, runs, "table9_smollm2@replication")))
    assert lay["plot_share"] >= 0.5 and not lay["legend_overlaps"] and lay["clipped"] == [], lay
    plt.close("all")


def test_the_layout_check_fails_a_figure_not_made_for_people():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from delta_repro.results import figure_layout
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot([0, 1], [0, 1], label="a")
    ax.set_yticks([0, 1], ["a row label far too long for its figure " * 4, "b"])
    ax.legend(loc="center")
    lay = figure_layout(fig)
    assert lay["legend_overlaps"] and lay["clipped"]
    fig, ax = plt.subplots(figsize=(7.5, 3))  # the old forest plot's fault: a long label squeezing the plot
    ax.plot([0, 1], [0, 1])
    ax.set_yticks([0, 1], ["Table 9 (extension): SmolLM2 trained 100 steps, the study (smollm2-long, 12 vs 12)", "b"])
    fig.tight_layout()
    assert figure_layout(fig)["plot_share"] < 0.55
    plt.close("all")
