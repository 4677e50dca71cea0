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


def test_a_comparison_page_gets_its_own_title_and_only_its_real_parameters(tmp_path):
    # report_table.ipynb makes one page per comparison artefact: each must carry its own title, and the smoke
    # defaults of the `parameters` cell must not stand above the parameters the report actually ran with
    md = {"cell_type": "markdown", "id": "m0", "metadata": {}, "source": "# Comparison tables (Tables 1–4, 9–12)\n\nOne notebook."}
    defaults = {"cell_type": "code", "id": "p0", "execution_count": 1, "metadata": {"tags": ["parameters"]},
                "source": 'profile = "smoke"\nartefact = "table1_main"\n', "outputs": []}
    injected = {"cell_type": "code", "id": "p1", "execution_count": 2, "metadata": {"tags": ["injected-parameters"]},
                "source": '# Parameters\nprofile = "cpu"\nartefact = "table9_smollm2@long"\n', "outputs": []}
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3"}}, "cells": [md, defaults, injected]}
    src = tmp_path / "executed.ipynb"
    src.write_text(json.dumps(nb))
    dest = tmp_path / "out.ipynb"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "publish_report.py"), str(src), str(dest), str(ROOT)], check=True)
    out = json.loads(dest.read_text())
    assert [c["id"] for c in out["cells"]] == ["m0", "injected-parameters"]  # the defaults are gone, the real parameters stay
    # papermill gives its injected cell a random id each run: a second run of the same report publishes the same bytes
    injected["id"] = "a7c9e2f0"
    src.write_text(json.dumps(nb))
    again = tmp_path / "again.ipynb"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "publish_report.py"), str(src), str(again), str(ROOT)], check=True)
    assert again.read_bytes() == dest.read_bytes()
    title = "".join(out["cells"][0]["source"]).split("\n")[0]
    assert title == "# Table 9 (extension): SmolLM2-135M-Instruct trained 100 steps, the pre-registered study (cpu profile)"
    assert "One notebook." in "".join(out["cells"][0]["source"])
