"""Copy an executed report notebook beside the figures it wrote, as a page of the site: `figures/<profile>/notebooks/`.

    python scripts/publish_report.py EXECUTED.ipynb DEST.ipynb ROOT

The executed copy under runs/<profile>/notebooks/report/ is not committed (runs/ is ignored), so a fresh clone's site
would show no result. The published copy is that notebook with the machine's repository root (ROOT) written as the
relative path of the repository (papermill's injected parameters hold absolute paths), without the notebook's default
`parameters` cell where papermill injected the real ones after it (a reader sees the parameters the report ran with,
not the smoke profile's defaults), with a title of its own where one notebook makes several pages (the comparison
tables: `reporting.report_title`, from the plan in ROOT/configs/<profile>.yaml), and without the execution metadata
(times, kernel details) that nbdev-clean drops everywhere else, and with a fixed id for papermill's injected-parameters
cell (papermill draws a random one each run), so that a regenerated report differs from the committed one only where
its results differ."""
import ast
import json
import subprocess
import sys
from pathlib import Path

SHARED_TITLE = "# Comparison tables"  # report_table.ipynb: one notebook, one page per comparison artefact


def _tags(cell) -> list:
    return cell.get("metadata", {}).get("tags", [])


def _parameters(cell) -> dict:
    "The string constants assigned in papermill's injected-parameters cell (name -> value)."
    out = {}
    for node in ast.parse("".join(cell["source"])).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and len(node.targets) == 1:
            out[getattr(node.targets[0], "id", "")] = node.value.value
    return out


def page_title(params: dict, root: str) -> str | None:
    "The page title of a comparison table's report (its artefact and profile from `params`), or None."
    artefact, profile = params.get("artefact"), params.get("profile")
    if not artefact or not profile: return None
    from delta_repro.experiments import load_plan
    from delta_repro.reporting import report_title
    return f"{report_title(load_plan(Path(root) / 'configs' / f'{profile}.yaml'), artefact)} ({profile} profile)"


def publish(src: Path, dest: Path, root: str) -> Path:
    root = root.rstrip("/")
    nb = json.loads(src.read_text(encoding="utf-8"))
    injected = next((c for c in nb["cells"] if "injected-parameters" in _tags(c)), None)
    if injected is not None:  # the real parameters follow the defaults: show only those
        nb["cells"] = [c for c in nb["cells"] if "parameters" not in _tags(c)]
        injected["id"] = "injected-parameters"  # papermill draws a new random id each run: one fixed id instead
        first = next((c for c in nb["cells"] if c["cell_type"] == "markdown"), None)
        if first is not None and "".join(first["source"]).startswith(SHARED_TITLE):
            title = page_title(_parameters(injected), root)
            if title:
                lines = "".join(first["source"]).split("\n")
                first["source"] = "\n".join([f"# {title}"] + lines[1:])
    text = json.dumps(nb, indent=1, ensure_ascii=False)
    text = text.replace(json.dumps(root + "/")[1:-1], "").replace(json.dumps(root)[1:-1], ".")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp.ipynb")
    tmp.write_text(text + "\n", encoding="utf-8")
    subprocess.run(["nbdev-clean", "--fname", str(tmp)], check=True)
    tmp.replace(dest)
    return dest


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: python scripts/publish_report.py EXECUTED.ipynb DEST.ipynb ROOT")
    src, dest, root = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    if not src.is_file(): sys.exit(f"EXECUTED.ipynb: {src} is not a file")
    print(publish(src, dest, root))
