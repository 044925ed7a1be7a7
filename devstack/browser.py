"""Chromium driven by Selenium, for the leaderboard page's browser test
(tests/e2e/test_web_page.py) and its screenshots (``make screenshots``).

The browser and its driver are Debian's ``chromium`` and ``chromium-driver`` (``make
browser`` installs them), named here by path: Selenium Manager, which would otherwise look
for a driver (and download one), is kept offline with ``SE_OFFLINE``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
DESKTOP = (1280, 900)
PHONE = (375, 812)  # an iPhone X-sized screen, CSS pixels


class MissingBrowser(RuntimeError):
    pass


def start_chromium(*, network_log: bool = False) -> webdriver.Chrome:
    """A headless Chromium with a desktop-sized window; ``network_log`` records the
    DevTools network events (``responses``)."""
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not path.exists()]
    if missing:
        raise MissingBrowser(f"{' and '.join(missing)} missing: run `make browser`")
    os.environ["SE_OFFLINE"] = "true"
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    # --no-sandbox: Chromium's sandbox cannot start as root, which is how the machines run
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(argument)
    options.add_argument(f"--window-size={DESKTOP[0]},{DESKTOP[1]}")
    if network_log:
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)


def emulate_screen(driver: webdriver.Chrome, size: tuple[int, int], *, mobile: bool) -> None:
    """The page's viewport as a screen of ``size`` CSS pixels (a headless window has a
    minimum width wider than a phone's, so the window alone cannot be made that narrow)."""
    width, height = size
    metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile}
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)


@dataclass(frozen=True)
class NetworkResponse:
    url: str
    status: int
    etag: str | None  # the response's ETag header


def responses(driver: webdriver.Chrome) -> list[NetworkResponse]:
    """The responses the page received since the last call (the log is read once)."""
    found = []
    # (selenium leaves get_log unannotated)
    entries: list[dict[str, Any]] = driver.get_log("performance")  # type: ignore[no-untyped-call]
    for entry in entries:
        message: dict[str, Any] = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.responseReceived":
            response = message["params"]["response"]
            headers = {name.lower(): value for name, value in response.get("headers", {}).items()}
            found.append(NetworkResponse(response["url"], int(response["status"]), headers.get("etag")))
    return found
