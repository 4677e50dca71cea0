"""Copy an executed report notebook beside the figures it wrote, as a page of the site: `figures/<profile>/notebooks/`.

    python scripts/publish_report.py EXECUTED.ipynb DEST.ipynb ROOT

The executed copy under runs/<profile>/notebooks/report/ is not committed (runs/ is ignored), so a fresh clone's site
would show no result. The published copy is that notebook with the machine's repository root (ROOT) written as the
relative path of the repository (papermill's injected parameters hold absolute paths), and with the execution
metadata (times, kernel details) that nbdev-clean drops everywhere else, so that a regenerated report differs from
the committed one only where its results differ."""
import json
import subprocess
import sys
from pathlib import Path


def publish(src: Path, dest: Path, root: str) -> Path:
    text = src.read_text(encoding="utf-8")
    root = root.rstrip("/")
    text = text.replace(json.dumps(root + "/")[1:-1], "").replace(json.dumps(root)[1:-1], ".")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_suffix(".tmp.ipynb")
    tmp.write_text(text, encoding="utf-8")
    subprocess.run(["nbdev-clean", "--fname", str(tmp)], check=True)
    tmp.replace(dest)
    return dest


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: python scripts/publish_report.py EXECUTED.ipynb DEST.ipynb ROOT")
    src, dest, root = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    if not src.is_file(): sys.exit(f"EXECUTED.ipynb: {src} is not a file")
    print(publish(src, dest, root))
