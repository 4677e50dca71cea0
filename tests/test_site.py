"""The static site (`bash scripts/build_site.sh`): it builds offline from the committed notebooks, and in a real
headless browser (Debian's Chromium through Selenium) every page loads, every figure of the notebooks is there and
decodes, and no cell shows an error. The same checks are run on a one-page site made to fail them, so they can fail."""
import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
NOTEBOOKS = sorted(ROOT.glob("nbs/*.ipynb")) + sorted(ROOT.glob("nbs/experiments/*.ipynb"))
PNG_1PX = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")


def build(src: Path, out: Path) -> None:
    "Build the site of source tree `src` (the repository, or a stand-in with its layout) with docs/conf.py."
    if src == ROOT:
        cmd = ["bash", str(ROOT / "scripts" / "build_site.sh"), str(out)]
    else:
        cmd = ["python", "-m", "sphinx", "-q", "-b", "html", "-c", str(ROOT / "docs"), str(src), str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


def n_figures(nb: Path) -> int:
    "Image outputs of a notebook: the figures its page must show."
    cells = json.loads(nb.read_text())["cells"]
    return sum(any(k.startswith("image/") for k in o.get("data", {})) for c in cells for o in c.get("outputs", []))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    build(ROOT, out)
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("needs a headless browser: Debian's chromium and chromium-driver (scripts/env.sh installs them when "
                    "run as root; otherwise apt-get install chromium chromium-driver)")
    from selenium import webdriver

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,1000",
                f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}",
                # offline: every host but this machine fails at once (the MathJax CDN), so no page waits on the network
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def page_problems(driver, page: Path, figures: int = 0) -> list[str]:
    "What is wrong with one built page as the browser shows it (empty when nothing is)."
    driver.get(page.as_uri())
    state = driver.execute_script("""
        const a = document.querySelector('article.bd-article');
        return {ready: document.readyState, article: !!a, text: a ? a.innerText : '',
                imgs: a ? Array.from(a.querySelectorAll('img')).map(i => [i.complete, i.naturalWidth, i.getAttribute('src')]) : [],
                errors: a ? a.querySelectorAll('.output.traceback, .output.error').length : 0};""")
    problems = []
    if state["ready"] != "complete" or not state["article"] or not state["text"].strip():
        problems.append(f"did not load: readyState {state['ready']}, article {state['article']}")
    broken = [src for complete, width, src in state["imgs"] if not (complete and width > 0)]
    if broken:
        problems.append(f"images that do not display: {broken}")
    if len(state["imgs"]) < figures:
        problems.append(f"{len(state['imgs'])} images shown, the notebook has {figures} figures")
    if state["errors"] or "Traceback (most recent call last)" in state["text"]:
        problems.append(f"a cell shows an error ({state['errors']} error outputs)")
    return problems


def test_every_notebook_and_the_readme_have_a_page(site):
    pages = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    want = {"index.html", "docs/index.html", "README.html"} | {
        nb.relative_to(ROOT).with_suffix(".html").as_posix() for nb in NOTEBOOKS}
    assert want <= pages, sorted(want - pages)
    start = (site / "docs" / "index.html").read_text()
    for nb in NOTEBOOKS:  # every page is reachable from the start page
        assert nb.relative_to(ROOT / "nbs").with_suffix(".html").as_posix() in start, nb.name


def test_every_page_loads_with_its_figures_and_no_error(site, browser):
    checked, figures = {}, 0
    for page, nb in [("docs/index.html", None), ("README.html", None)] + [
            (nb.relative_to(ROOT).with_suffix(".html").as_posix(), nb) for nb in NOTEBOOKS]:
        n = n_figures(nb) if nb else 0
        figures += n
        checked[page] = page_problems(browser, site / page, n)
    assert not {p: v for p, v in checked.items() if v}, {p: v for p, v in checked.items() if v}
    assert figures >= 3, "the library notebooks are committed with their figures (scripts/execute_notebooks.sh)"


def test_the_page_checks_catch_errors_and_missing_figures(browser, tmp_path):
    "A notebook whose cell raised and whose figure cannot be decoded fails the checks; a good one passes."
    src = tmp_path / "src"
    (src / "docs").mkdir(parents=True)
    (src / "nbs").mkdir()
    (src / "docs" / "index.md").write_text("# test\n\n```{toctree}\n:glob:\n\n../nbs/*\n```\n")

    def notebook(name, outputs):
        cell = {"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {}, "outputs": outputs,
                "source": ["1 / 0"]}
        nb = {"cells": [{"cell_type": "markdown", "id": "m1", "metadata": {}, "source": [f"# {name}"]}, cell],
              "metadata": {"kernelspec": {"display_name": "python3", "language": "python", "name": "python3"}},
              "nbformat": 4, "nbformat_minor": 5}
        (src / "nbs" / f"{name}.ipynb").write_text(json.dumps(nb))

    image = lambda data: {"output_type": "display_data", "metadata": {}, "data": {"image/png": data, "text/plain": ["<Figure>"]}}
    notebook("good", [image(PNG_1PX)])
    notebook("bad", [{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
                      "traceback": ["Traceback (most recent call last):", "ZeroDivisionError: division by zero"]},
                     image(base64.b64encode(b"not a png").decode())])
    out = tmp_path / "out"
    build(src, out)
    assert page_problems(browser, out / "nbs" / "good.html", figures=1) == []
    bad = page_problems(browser, out / "nbs" / "bad.html", figures=1)
    assert any("error" in p for p in bad) and any("do not display" in p for p in bad), bad
    assert any("figures" in p for p in page_problems(browser, out / "nbs" / "good.html", figures=2))
    assert any("did not load" in p for p in page_problems(browser, out / "nbs" / "missing.html"))
