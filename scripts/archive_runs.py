"""The per-run archive of a profile: figures/<profile>/runs/<run_id>.tar.gz, one small file per finished run.

    python scripts/archive_runs.py --profile cpu            # archive every finished run not yet archived
    python scripts/archive_runs.py --profile cpu --commit   # ... and commit the new files (only those) to git
    python scripts/archive_runs.py --profile cpu --restore  # unpack archived runs that runs/<profile>/runs lacks

A run is archived once it is evaluated (`eval.csv`), without checkpoints: `DONE` (settings, timing, the selection
curve), `eval.csv` (every completion and its grades), `eval_final.csv` (the last policy's), `log_history.json` and `selection.json`. Warm-start
evaluations (`<backbone>__<task>__warm-start`) are archived alike, and so is each tiny backbone's warm-started
policy (`figures/<profile>/warm_starts/<name>.tar.gz`, under 20 MB), restored into the model cache so that a
later session resumes from the very policy the archived runs started from. An archived file is never overwritten:
a run that differs from its archive (e.g. retrained) is reported and left alone. The tar files are byte-stable
(sorted members, zeroed times and owners, gzip without a timestamp), so re-archiving a run changes nothing.
`reproduce.sh` calls --restore before it decides what to train (`--retrain` skips that). The selected checkpoint of
the runs a figure re-reads (the plan's batch artefacts: DelTA seed 0's rollout batch for Fig. 1, Fig. 5 and the λ
heat-map) is archived apart, `figures/<profile>/checkpoints/<run_id>.tar.gz`."""
import argparse, gzip, io, json, os, shutil, subprocess, sys, tarfile, time, zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEMBERS = ("DONE", "eval.csv", "eval_final.csv", "log_history.json", "selection.json")
MAX_WARM_START_BYTES = 20 * 2**20


def _tar_bytes(base: Path, files: list[Path]) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as gz, tarfile.open(fileobj=gz, mode="w") as tar:
        for f in sorted(files):
            info = tar.gettarinfo(str(f), arcname=str(f.relative_to(base)))
            info.mtime, info.uid, info.gid, info.uname, info.gname, info.mode = 0, 0, 0, "", "", 0o644
            with open(f, "rb") as fh: tar.addfile(info, fh)
    return buf.getvalue()


REFUSED: list[str] = []  # what differed from its archive in this call (main() exits 1 when any did)
DAMAGED: list[str] = []  # archives that unpacked but held a damaged file (restore() names them; not restored)


def _committed(target: Path) -> bytes | None:
    "The committed content of `target` in this repository's HEAD, or None (not committed, or not in a git checkout)."
    try:
        rel = target.resolve().relative_to(ROOT)
        r = subprocess.run(["git", "show", f"HEAD:{rel.as_posix()}"], cwd=ROOT, capture_output=True)
        return r.stdout if r.returncode == 0 else None
    except (ValueError, OSError):
        return None


def _write_once(target: Path, data: bytes, what: str) -> bool:
    """Write `data` to `target` unless it exists, or was committed (a deleted archive file is not re-made from a
    changed run); True when written. A differing existing or committed file is reported, never replaced."""
    old = target.read_bytes() if target.exists() else _committed(target)
    if old is not None:
        if old != data:
            REFUSED.append(what)
            print(f"[archive] {what}: differs from its archive {target}{'' if target.exists() else ' (committed, deleted here)'}; "
                  "the archive is kept (finished results are never overwritten)", file=sys.stderr)
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    tmp.write_bytes(data); tmp.rename(target)
    return True


def _warm_start_of(ws: Path, backbones: dict | None) -> bool:
    """Is the cached warm start `ws` one of `backbones`' (the plan's; None: any)? Its name starts with
    "<backbone>-", and its size (hidden_size, layers) and SFT settings (max_steps, learning_rate, batch_size) are the
    backbone's: another profile's warm start of the same backbone name (e.g. smoke's) shares the cache, not the plan."""
    if backbones is None: return True
    try: cfg, hp = json.loads((ws / "config.json").read_text()), json.loads((ws / "warm_start.json").read_text())
    except (OSError, ValueError): return False
    for name, spec in backbones.items():
        w = spec.get("warm_start") or {}
        if (ws.name.startswith(name + "-") and cfg.get("hidden_size") == spec.get("hidden_size")
                and cfg.get("num_hidden_layers") == spec.get("num_layers")
                and all(hp.get(k) == w.get(k) for k in ("max_steps", "learning_rate", "batch_size"))):
            return True
    return False


def archive(out_dir: Path, runs_dir: Path, cache: Path, checkpoint_runs=(), backbones: dict | None = None) -> list[Path]:
    """Archive into `out_dir` (figures/<profile>) every evaluated run of `runs_dir`, every small warm start of `cache`,
    and the selected checkpoint (`best/`) of the evaluated runs in `checkpoint_runs` (those a figure re-reads: the
    plan's batch artefacts, e.g. Fig. 1's rollout batch of DelTA seed 0), each under 20 MB; returns the new files."""
    new = []
    for rid in sorted(checkpoint_runs):
        best = runs_dir / rid / "best"
        if not (runs_dir / rid / "eval.csv").exists() or not best.is_dir(): continue
        files = [f for f in best.rglob("*") if f.is_file()]
        if not files or sum(f.stat().st_size for f in files) > MAX_WARM_START_BYTES: continue
        target = out_dir / "checkpoints" / f"{rid}.tar.gz"
        if _write_once(target, _tar_bytes(runs_dir, files), f"{rid}/best"): new.append(target)
    for run in sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []:
        if not (run / "eval.csv").exists(): continue
        files = [run / m for m in MEMBERS if (run / m).exists()]
        target = out_dir / "runs" / f"{run.name}.tar.gz"
        if _write_once(target, _tar_bytes(runs_dir, files), run.name): new.append(target)
    for ws in sorted(cache.glob("*")) if cache.is_dir() else []:
        if ".tmp" in ws.name or not (ws / "warm_start.json").exists() or not (ws / "model.safetensors").exists(): continue
        if not _warm_start_of(ws, backbones): continue
        files = [f for f in ws.rglob("*") if f.is_file()]
        if sum(f.stat().st_size for f in files) > MAX_WARM_START_BYTES: continue
        target = out_dir / "warm_starts" / f"{ws.name}.tar.gz"
        if _write_once(target, _tar_bytes(cache, files), ws.name): new.append(target)
    return new


def _unpack(archive_file: Path, dest: Path, inner: str) -> None:
    """Unpack `archive_file`, whose every member must be a plain file under `inner` (a relative path such as
    "<run>" or "<run>/best"), into `dest / inner`, through a temporary folder so that an interrupted unpack leaves
    nothing half-written. Raises `SystemExit` naming the archive when a member lies elsewhere."""
    with tarfile.open(archive_file) as tar:
        bad = [m.name for m in tar.getmembers() if not m.isfile() or not m.name.startswith(inner + "/") or ".." in m.name]
        if bad: raise SystemExit(f"[archive] {archive_file}: unexpected members {bad[:3]}; not unpacked")
        tmp = dest / f".{archive_file.name}.restore{os.getpid()}"
        tar.extractall(tmp, filter="data")
    (dest / inner).parent.mkdir(parents=True, exist_ok=True)
    (tmp / inner).rename(dest / inner)
    shutil.rmtree(tmp)


EVAL_COLUMNS = ("benchmark", "problem_id")  # what every reader of an evaluation aligns on


def check_run(run_dir: Path) -> list[str]:
    """What is damaged in a restored run or warm-start evaluation folder, one "file: reason" each (empty: nothing):
    `DONE`, `log_history.json` and `selection.json` must parse as JSON (`DONE` an object naming its run), and
    `eval.csv`/`eval_final.csv` must parse as CSV with the columns every reader aligns on, at least one row, and every
    row as long as the header (a file cut off mid-row). An archive can unpack and still hold a file cut off mid-write;
    one cut exactly at a row's end reads as fewer problems, which the reports name by run (`scores.problem_matrix`)."""
    import csv
    problems = []
    for name in ("DONE", "log_history.json", "selection.json"):
        f = run_dir / name
        if not f.exists(): continue
        try: data = json.loads(f.read_text())
        except (ValueError, UnicodeDecodeError) as e: problems.append(f"{name}: not valid JSON ({e})"); continue
        if name == "DONE" and not (isinstance(data, dict) and data.get("run_id") == run_dir.name):
            problems.append(f"DONE: not the record of run {run_dir.name}")
    for name in ("eval.csv", "eval_final.csv"):
        f = run_dir / name
        if not f.exists(): continue
        try:
            with open(f, newline="", encoding="utf-8") as fh: rows = list(csv.reader(fh))
        except (csv.Error, UnicodeDecodeError) as e: problems.append(f"{name}: unreadable ({e})"); continue
        if not rows or not set(EVAL_COLUMNS) <= set(rows[0]):
            problems.append(f"{name}: lacks the columns {list(EVAL_COLUMNS)}"); continue
        if len(rows) < 2: problems.append(f"{name}: no rows"); continue
        short = [k for k, r in enumerate(rows[1:], start=2) if len(r) != len(rows[0])]
        if short: problems.append(f"{name}: {len(short)} rows cut short (line {short[0]} has fewer fields than the header)")
    if not (run_dir / "eval.csv").exists() and not (run_dir / "DONE").exists():
        problems.append("neither DONE nor eval.csv: nothing to read")
    return problems


def restore(out_dir: Path, runs_dir: Path, cache: Path) -> tuple[int, int]:
    """Unpack every run archived in `out_dir` that `runs_dir` lacks, every archived warm start `cache` lacks, and
    every archived checkpoint (`<run>/best`) its run lacks; returns (runs, warm starts) unpacked. An archive that
    cannot be read (truncated, not gzip, not a tar) is named in a warning on stderr and skipped: the others are still
    restored, and what it held is made again by the caller (reproduce.sh retrains a run it lacks). A run archive that
unpacks but holds a damaged file (`check_run`: a cut `DONE` or `eval.csv`, ...) is named with the file and the reason,
removed again and listed in `DAMAGED`, so that it is trained again rather than read."""
    n_runs, n_ws = 0, 0
    for kind, dest in (("runs", runs_dir), ("warm_starts", cache), ("checkpoints", runs_dir)):
        for a in sorted((out_dir / kind).glob("*.tar.gz")):
            name = a.name[: -len(".tar.gz")]
            inner = f"{name}/best" if kind == "checkpoints" else name  # a checkpoint goes into its run's folder
            if (dest / inner).exists(): continue
            try: _unpack(a, dest, inner)
            except (tarfile.TarError, EOFError, OSError, zlib.error) as e:  # truncated, not gzip, unreadable
                shutil.rmtree(dest / f".{a.name}.restore{os.getpid()}", ignore_errors=True)
                print(f"[archive] WARNING: {a} is not a readable .tar.gz ({type(e).__name__}: {e}); skipped, so "
                      f"{inner} is not restored (it is made again, e.g. retrained, unless the archive is repaired)",
                      file=sys.stderr)
                continue
            damaged = check_run(dest / inner) if kind == "runs" else []
            if damaged:  # unpacked, but cut or corrupt inside: not a finished run
                shutil.rmtree(dest / inner)
                DAMAGED.append(a.name)
                print(f"[archive] WARNING: {a} is damaged: {'; '.join(damaged)}. Not restored: {inner} is trained and "
                      "evaluated again (the damaged archive is kept, and the new run is reported beside it)", file=sys.stderr)
                continue
            n_runs, n_ws = n_runs + (kind == "runs"), n_ws + (kind == "warm_starts")
    return n_runs, n_ws


def commit(paths: list[Path]) -> None:
    "Commit exactly `paths` (git commit --only), retrying while another git command holds the index."
    rel = [str(p.relative_to(ROOT)) for p in paths]
    runs = [Path(r).name[: -len(".tar.gz")] for r in rel if Path(r).parent.name == "runs"]
    runs += [Path(r).name[: -len(".tar.gz")] + " (checkpoint)" for r in rel if Path(r).parent.name == "checkpoints"]
    warm = [Path(r).name[: -len(".tar.gz")] for r in rel if Path(r).parent.name == "warm_starts"]
    names = ", ".join(runs + warm)
    msg = "archive: " + "; ".join(p for p in (
        f"{len(runs)} finished run{'s' if len(runs) != 1 else ''} ({', '.join(runs)})" if runs else "",
        f"the warm-started polic{'ies' if len(warm) != 1 else 'y'} {', '.join(warm)}" if warm else "") if p)
    for attempt in range(10):
        r = subprocess.run(["git", "add", "--", *rel], cwd=ROOT, capture_output=True, text=True)
        if r.returncode == 0:
            r = subprocess.run(["git", "commit", "-q", "-m", msg, "--only", "--", *rel], cwd=ROOT, capture_output=True, text=True)
        if r.returncode == 0: print(f"[archive] committed {names}"); return
        if "index.lock" not in r.stderr: raise SystemExit(f"[archive] git failed: {r.stderr.strip()}")
        time.sleep(5)
    raise SystemExit("[archive] git index stayed locked; nothing committed (run again)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--runs-dir", default=None, help="default: runs/<profile>/runs")
    ap.add_argument("--restore", action="store_true", help="unpack archived runs instead of archiving")
    ap.add_argument("--commit", action="store_true", help="commit the newly archived files (only those)")
    a = ap.parse_args()
    if not (ROOT / "configs" / f"{a.profile}.yaml").exists():
        ap.error(f"--profile: no configs/{a.profile}.yaml")
    runs_dir = Path(a.runs_dir) if a.runs_dir else ROOT / "runs" / a.profile / "runs"
    cache = Path(os.environ.get("DELTA_REPRO_CACHE", ROOT / "runs" / "cache"))
    out_dir = ROOT / "figures" / a.profile
    if a.restore:
        n, w = restore(out_dir, runs_dir, cache)
        files = [p.name for p in (out_dir / "runs").glob("*.tar.gz")]
        ws_evals = sum(f.endswith("__warm-start.tar.gz") for f in files)
        # n counts run folders, warm-start evaluations included, as the archive holds them
        print(f"[archive] restored {n} of the {len(files)} archived run folders of figures/{a.profile}/ "
              f"({len(files) - ws_evals} runs and {ws_evals} warm-start evaluations archived; the others were "
              f"already in place) and {w} warm start{'s' if w != 1 else ''} into {runs_dir}")
        return
    try:  # the runs whose checkpoint a report re-reads: the plan's batch artefacts (Fig. 1, Fig. 5, the λ heat-map)
        sys.path.insert(0, str(ROOT))
        from delta_repro.experiments import load_plan
        plan = load_plan(ROOT / "configs" / f"{a.profile}.yaml")
        keep = {r for n, ids in plan.artefact_runs.items() if plan.artefact(n).get("kind") == "batch" for r in ids}
        backbones = plan.raw["backbones"]
    except Exception as e:  # the archive of results must not depend on the package importing
        print(f"[archive] checkpoints and warm starts not archived: the plan could not be read ({type(e).__name__}: {e})",
              file=sys.stderr)
        keep, backbones = set(), {}
    new = archive(out_dir, runs_dir, cache, keep, backbones)
    print(f"[archive] {len(new)} new: {', '.join(p.name for p in new) or 'nothing to add'}")
    if a.commit and new: commit(new)
    if REFUSED: sys.exit(1)


if __name__ == "__main__":
    main()
