"""The README's picture of the class report: the crafted class of benchmarks/crafted_class.py
(32 made-up students, no real person), its report, one page in headless Chromium.

    python tools/report_screenshot.py [deploy/report.png]

Needs Chromium, chromedriver and Selenium (make setup-browser).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from benchmarks.crafted_class import ASSIGNMENTS, build  # noqa: E402
from course_grader.report import read_class, write_report  # noqa: E402


def shoot(page: Path, target: Path, width: int = 1100, height: int = 1500) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", f"--window-size={width},{height}", "--hide-scrollbars"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=shutil.which("chromedriver")))
    try:
        driver.get(page.as_uri())
        driver.save_screenshot(str(target))
    finally:
        driver.quit()


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else ROOT / "deploy" / "report.png"
    with tempfile.TemporaryDirectory(prefix="report-screenshot-") as work:
        course = Path(work)
        build(course, f"sqlite:///{course / 'gradebook.db'}", 32)
        write_report(read_class(f"sqlite:///{course / 'gradebook.db'}", course), course / "report")
        shoot(course / "report" / f"{ASSIGNMENTS[0]}.html", target)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
