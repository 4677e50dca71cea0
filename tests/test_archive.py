"""The per-run archive (scripts/archive_runs.py): byte-stable, never overwritten, restored as it was; and the order
in which reproduce.sh trains a plan's runs (experiments.run_order)."""
import json
from pathlib import Path

import pytest

from delta_repro.experiments import load_plan, run_order

ROOT = Path(__file__).resolve().parents[1]
from conftest import script  # noqa: E402

archive_runs = script("archive_runs")


def _finished(runs: Path, rid: str, text: str = "a"):
    d = runs / rid
    (d / "best").mkdir(parents=True)
    (d / "best" / "model.safetensors").write_bytes(b"\0" * 64)  # a checkpoint: never archived
    (d / "DONE").write_text(json.dumps({"run_id": rid}))
    (d / "eval.csv").write_text(f"benchmark,problem_id\nheld,{text}\n")
    (d / "eval_final.csv").write_text("benchmark,problem_id\nheld,p\n")


def test_archive_round_trip_is_byte_stable_and_never_overwrites(tmp_path, capsys):
    runs, cache, out = tmp_path / "runs", tmp_path / "cache", tmp_path / "figures"
    _finished(runs, "m__math__DAPO__s0")
    (runs / "m__math__DelTA__s0").mkdir(parents=True)  # still training: no eval.csv, not archived
    for name, steps in (("m-math-0123", 600), ("m-math-4567", 10)):  # the plan's warm start, and another profile's
        ws = cache / name
        ws.mkdir(parents=True)
        (ws / "warm_start.json").write_text(json.dumps(dict(max_steps=steps, learning_rate=3e-3, batch_size=32)))
        (ws / "config.json").write_text(json.dumps(dict(hidden_size=128, num_hidden_layers=4)))
        (ws / "model.safetensors").write_bytes(b"w" * 10)
    backbones = {"m": dict(hidden_size=128, num_layers=4, warm_start=dict(max_steps=600, learning_rate=3e-3, batch_size=32))}
    new = archive_runs.archive(out, runs, cache, backbones=backbones)
    assert sorted(p.name for p in new) == ["m-math-0123.tar.gz", "m__math__DAPO__s0.tar.gz"]
    first = (out / "runs" / "m__math__DAPO__s0.tar.gz").read_bytes()
    assert archive_runs.archive(out, runs, cache, backbones=backbones) == []  # nothing new
    (runs / "m__math__DAPO__s0" / "DONE").touch()          # a new mtime: the same bytes
    assert archive_runs._tar_bytes(runs, [runs / "m__math__DAPO__s0" / m for m in ("DONE", "eval.csv", "eval_final.csv")]) == first
    (runs / "m__math__DAPO__s0" / "eval.csv").write_text("changed\n")  # retrained differently: reported, kept
    assert archive_runs.archive(out, runs, cache, backbones=backbones) == []
    assert "differs from its archive" in capsys.readouterr().err
    assert (out / "runs" / "m__math__DAPO__s0.tar.gz").read_bytes() == first
    # a fresh clone: restore unpacks the run without its checkpoint, and the warm start into the cache
    runs2, cache2 = tmp_path / "clone" / "runs", tmp_path / "clone" / "cache"
    assert archive_runs.restore(out, runs2, cache2) == (1, 1)
    d = runs2 / "m__math__DAPO__s0"
    assert sorted(p.name for p in d.iterdir()) == ["DONE", "eval.csv", "eval_final.csv"]
    assert (d / "eval.csv").read_text() == "benchmark,problem_id\nheld,a\n"
    assert (cache2 / "m-math-0123" / "model.safetensors").read_bytes() == b"w" * 10
    assert archive_runs.restore(out, runs2, cache2) == (0, 0)  # present runs are left alone
    # the checkpoint a figure re-reads is archived apart, and restored into its run
    assert [p.name for p in archive_runs.archive(out, runs, cache, {"m__math__DAPO__s0", "m__math__DelTA__s0"}, backbones)] == ["m__math__DAPO__s0.tar.gz"]
    archive_runs.restore(out, runs2, cache2)
    assert (runs2 / "m__math__DAPO__s0" / "best" / "model.safetensors").read_bytes() == b"\0" * 64
    assert (runs2 / "m__math__DAPO__s0" / "eval.csv").exists()


def test_restore_refuses_a_tar_with_foreign_members(tmp_path):
    import tarfile
    out = tmp_path / "figures"
    (out / "runs").mkdir(parents=True)
    evil = tmp_path / "evil"; evil.write_text("x")
    with tarfile.open(out / "runs" / "r1.tar.gz", "w:gz") as t:
        t.add(evil, arcname="../outside")
    with pytest.raises(SystemExit, match="unexpected members"):
        archive_runs.restore(out, tmp_path / "runs", tmp_path / "cache")
    assert not (tmp_path / "outside").exists()


def test_runs_train_seed_by_seed_with_methods_interleaved_and_code_last():
    plan = load_plan(ROOT / "configs" / "cpu.yaml")
    order = run_order(plan)
    assert sorted(order) == sorted(plan.runs) and len(order) == len(set(order))
    assert order[:4] == ["tiny-qwen3__math__DelTA__s0", "tiny-qwen3__math__DAPO__s0",
                         "tiny-qwen3__math__DelTA__s1", "tiny-qwen3__math__DAPO__s1"]
    tasks = [plan.runs[r].task for r in order]
    assert tasks.index("code") == len(tasks) - tasks.count("code")  # every code run after every math run
    assert run_order(plan, ["table9_olmo3"]) == ["tiny-olmo3__math__DAPO__s0", "tiny-olmo3__math__DelTA__s0",
                                                 "tiny-olmo3__math__DAPO__s1", "tiny-olmo3__math__DelTA__s1"]
    with pytest.raises(ValueError, match="artefacts"):
        run_order(plan, ["no_such_table"])


def test_a_committed_archive_deleted_here_is_not_remade_from_a_changed_run(tmp_path, monkeypatch, capsys):
    import subprocess
    repo = tmp_path / "repo"
    runs, cache, out = repo / "runs", repo / "cache", repo / "figures" / "cpu"
    _finished(runs, "m__math__DAPO__s0")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.setattr(archive_runs, "ROOT", repo)
    monkeypatch.setattr(archive_runs, "REFUSED", [])
    [target] = archive_runs.archive(out, runs, cache)
    first = target.read_bytes()
    git = lambda *a: subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *a], check=True, capture_output=True)
    git("add", "figures"); git("commit", "-qm", "archive")
    target.unlink()                                                     # deleted from the working tree
    (runs / "m__math__DAPO__s0" / "eval.csv").write_text("changed\n")  # and the run changed
    assert archive_runs.archive(out, runs, cache) == [] and not target.exists()
    assert "committed, deleted here" in capsys.readouterr().err and archive_runs.REFUSED == ["m__math__DAPO__s0"]
    (runs / "m__math__DAPO__s0" / "eval.csv").write_text("benchmark,problem_id\nheld,a\n")  # the run as archived
    assert archive_runs.archive(out, runs, cache) == []  # same bytes as committed: nothing to do, nothing refused
    git("checkout", "--", "figures")
    assert target.read_bytes() == first


def test_a_bad_archive_is_named_and_skipped(tmp_path, capsys):
    # issue 40: a truncated or non-gzip archive stopped reproduce.sh with a traceback that did not name the file
    runs, cache, out = tmp_path / "runs", tmp_path / "cache", tmp_path / "figures"
    _finished(runs, "m__math__DAPO__s0")
    archive_runs.archive(out, runs, cache, backbones={})
    good = (out / "runs" / "m__math__DAPO__s0.tar.gz").read_bytes()
    (out / "runs" / "a__truncated.tar.gz").write_bytes(good[: len(good) // 2])
    (out / "runs" / "b__not_gzip.tar.gz").write_bytes(b"not a gzip file at all")
    runs2 = tmp_path / "clone" / "runs"
    assert archive_runs.restore(out, runs2, tmp_path / "clone" / "cache") == (1, 0)  # the good one still restored
    err = capsys.readouterr().err
    assert "a__truncated.tar.gz" in err and "b__not_gzip.tar.gz" in err and "skipped" in err
    assert sorted(p.name for p in runs2.iterdir()) == ["m__math__DAPO__s0"]  # nothing half-written is left


@pytest.mark.parametrize("where, key, value, msg", [
    ("trainer", "learning_rate", "fast", "trainer.learning_rate must be of type"),
    ("trainer", "per_device_train_batch_size", 0, "trainer.per_device_train_batch_size must be > 0"),
    ("trainer", "temperature", -1.0, "trainer.temperature must be > 0"),
    ("backbone", "hidden_size", "big", "hidden_size must be a positive int"),
])
def test_the_dry_run_refuses_what_the_real_run_would(tmp_path, where, key, value, msg):
    # issue 40: load_plan accepted `learning_rate: fast`, a batch size of 0, `hidden_size: big`, a negative temperature
    import yaml
    raw = yaml.safe_load((ROOT / "configs" / "smoke.yaml").read_text())
    block = raw["trainer"] if where == "trainer" else next(iter(raw["backbones"].values()))
    block[key] = value
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match=msg):
        load_plan(tmp_path / "p.yaml")
    for plan in sorted((ROOT / "configs").glob("*.yaml")):  # the committed plans still load
        load_plan(plan)


@pytest.mark.parametrize("member, cut, says", [
    ("DONE", lambda b: b[: len(b) // 2], "DONE: not valid JSON"),
    ("eval.csv", lambda b: b[:-3], "eval.csv: 1 rows cut short"),
    ("eval.csv", lambda b: b"", "eval.csv: lacks the columns"),
])
def test_an_archive_holding_a_cut_file_is_named_and_trained_again(tmp_path, capsys, member, cut, says):
    # issue 50: a run archive that unpacked but held a cut DONE or eval.csv was taken as trained and evaluated
    import io, tarfile
    runs, cache, out = tmp_path / "runs", tmp_path / "cache", tmp_path / "figures"
    rid = "m__math__DAPO__s0"
    _finished(runs, rid)
    (runs / rid / "eval.csv").write_text("benchmark,problem_id,sample\nheld,a,0\nheld,b,1\n")
    archive_runs.archive(out, runs, cache, backbones={})
    target = out / "runs" / f"{rid}.tar.gz"
    files = {m.name: t.extractfile(m).read() for t in [tarfile.open(target)] for m in t.getmembers()}
    damaged = tmp_path / "d" / rid
    damaged.mkdir(parents=True)
    for name, data in files.items():
        (tmp_path / "d" / name).write_bytes(cut(data) if name == f"{rid}/{member}" else data)
    target.write_bytes(archive_runs._tar_bytes(tmp_path / "d", [tmp_path / "d" / n for n in files]))
    runs2 = tmp_path / "clone" / "runs"
    archive_runs.DAMAGED.clear()
    assert archive_runs.restore(out, runs2, tmp_path / "clone" / "cache") == (0, 0)
    err = capsys.readouterr().err
    assert f"{rid}.tar.gz is damaged" in err and says in err and "trained and evaluated again" in err
    assert not (runs2 / rid).exists() and archive_runs.DAMAGED == [f"{rid}.tar.gz"]  # so reproduce.sh retrains it


def test_check_run_passes_every_intact_run(tmp_path):
    rid = "m__math__DAPO__s0"
    _finished(tmp_path, rid)
    assert archive_runs.check_run(tmp_path / rid) == []
