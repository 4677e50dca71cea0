"""scripts/publish_report.py: an executed report notebook becomes a committed page without the machine's paths or
its execution metadata, its outputs unchanged."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_published_report_names_no_machine_path_and_keeps_its_outputs(tmp_path):
    root = "/home/someone/delta_repro"
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"papermill": {"duration": 12.5}, "kernelspec": {"name": "python3"}},
          "cells": [{"cell_type": "code", "id": "a1", "execution_count": 1, "metadata": {"tags": ["injected-parameters"],
                     "papermill": {"duration": 0.01}},
                     "source": f'# Parameters\nruns_dir = "{root}/runs/cpu/runs"\nconfig_dir = "{root}"\n',
                     "outputs": []},
                    {"cell_type": "code", "id": "a2", "execution_count": 2, "metadata": {"execution": {"iopub.status.busy": "x"}},
                     "source": "print(1)", "outputs": [{"output_type": "stream", "name": "stdout", "text": ["held-out 71.25 %\n"]}]}]}
    src = tmp_path / "executed.ipynb"
    src.write_text(json.dumps(nb))
    dest = tmp_path / "figures" / "cpu" / "notebooks" / "learning.ipynb"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "publish_report.py"), str(src), str(dest), root + "/"], check=True)
    text = dest.read_text()
    assert root not in text and "papermill" not in text and "iopub" not in text
    out = json.loads(text)
    assert "".join(out["cells"][0]["source"]) == '# Parameters\nruns_dir = "runs/cpu/runs"\nconfig_dir = "."\n'
    assert out["cells"][1]["outputs"][0]["text"] == ["held-out 71.25 %\n"] and out["cells"][1]["execution_count"] is None
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "publish_report.py"), str(tmp_path / "none.ipynb"),
                          str(dest), root], capture_output=True, text=True)
    assert bad.returncode != 0 and "EXECUTED.ipynb" in bad.stderr
