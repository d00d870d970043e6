"""The HTML report in a real browser (headless Chromium through selenium): the issue's own
scenario, ``conclave batch tasks.jsonl --compare single.yaml panel.yaml --epochs 3 --grade
numeric`` then ``conclave report ... --html``. The charts render (their marks have a size on
the page), the per-sample viewer opens a run (its task, every agent's answers, the votes,
the final answer and the grade), and the run's event log opens from its link.

Needs ``chromium`` and ``chromedriver`` (apt: chromium chromium-driver; .ci/run installs
them) and selenium (the dev extra)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver import Chrome
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait

from conclave.ui.cli import main
from tests.batch.helpers import write_tasks
from tests.cli.helpers import write_config

TASKS = 4
EPOCHS = 3


def _binary(*names: str) -> str:
    for name in names:
        found = shutil.which(name)
        if found is not None:
            return found
    raise AssertionError(
        f"none of {', '.join(names)} is installed: apt-get install chromium chromium-driver"
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Chrome]:
    options = Options()
    options.binary_location = _binary("chromium", "chromium-browser", "google-chrome")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--window-size=1280,2000", "--allow-file-access-from-files"):  # fmt: skip
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(_binary("chromedriver")))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def report_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    single = write_config(tmp_path / "single.yaml", [{"id": "solo", "answer_text": "It is 41."}])
    panel = write_config(
        tmp_path / "panel.yaml",
        [{"id": "a", "seed": 1, "answer_text": "I get 42."},
         {"id": "b", "seed": 2, "answer_text": "42, surely."}],
    )  # fmt: skip
    lines = [
        {"id": f"q{i}", "task": f"What is {i} + {42 - i}?", "expected": 42,
         "category": "easy" if i % 2 else "hard"}
        for i in range(TASKS)
    ]  # fmt: skip
    source = write_tasks(tmp_path / "tasks.jsonl", lines)
    ran = main(
        ["batch", str(source), "--out", "results.jsonl", "--compare", str(single), str(panel),
         "--epochs", str(EPOCHS), "--grade", "numeric", "--log-dir", "logs"]
    )  # fmt: skip
    assert ran == 0, capsys.readouterr().err
    assert main(["report", "results.jsonl", "--html", "report.html"]) == 0
    return tmp_path / "report.html"


def _drawn(element: WebElement) -> bool:
    size = element.size
    return element.is_displayed() and size["width"] > 0 and size["height"] > 0


def test_the_reports_charts_render_in_a_browser(browser: Chrome, report_page: Path) -> None:
    browser.get(report_page.as_uri())

    charts = browser.find_elements(By.CSS_SELECTOR, "svg.chart")
    assert [c.get_attribute("id") for c in charts] == ["accuracy-cost", "latency", "categories"]
    assert all(_drawn(chart) for chart in charts)
    points = browser.find_elements(By.CSS_SELECTOR, "#accuracy-cost .point circle")
    assert len(points) == 2 and all(_drawn(p) for p in points)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#latency .box rect")) == 2
    bars = browser.find_elements(By.CSS_SELECTOR, "#categories rect.bar")
    assert len(bars) == 2 * 2 and all(_drawn(b) for b in bars)
    summary = browser.find_element(By.ID, "summary").text
    assert "single" in summary and "panel" in summary and "pass@3" in summary
    logs = browser.get_log("browser")  # type: ignore[no-untyped-call]
    assert not [e for e in logs if e["level"] == "SEVERE"]


def test_the_per_sample_viewer_opens_a_run(browser: Chrome, report_page: Path) -> None:
    browser.get(report_page.as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, "#sample-list tbody tr.sample")
    assert len(rows) == 2 * TASKS * EPOCHS
    Select(browser.find_element(By.ID, "variant-filter")).select_by_value("panel")
    rows = browser.find_elements(By.CSS_SELECTOR, "#sample-list tbody tr.sample")
    assert len(rows) == TASKS * EPOCHS

    rows[0].click()

    view = browser.find_element(By.ID, "sample-view")
    WebDriverWait(browser, 10).until(lambda _: view.is_displayed())
    text = view.text
    assert "q0 - panel, epoch 1" in text and "What is 0 + 42?" in text
    answers = view.find_elements(By.CSS_SELECTOR, ".answer")
    assert len(answers) == 2 and "I get 42." in answers[0].text + answers[1].text
    assert len(view.find_elements(By.CSS_SELECTOR, "[data-field=votes] li")) == 2
    assert "correct (number)" in view.find_element(By.CSS_SELECTOR, "[data-field=grade]").text
    assert browser.current_url.endswith(f"#sample-{rows[0].get_attribute('data-index')}")

    browser.find_element(By.ID, "event-log").click()

    WebDriverWait(browser, 10).until(lambda b: b.current_url.endswith("/events.jsonl"))
    assert '"kind":"log_opened"' in browser.find_element(By.TAG_NAME, "body").text
