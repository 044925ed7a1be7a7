"""``make screenshots``: the leaderboard page's pictures in docs/img, taken in headless
Chromium (``make browser``) from a local stack of their own, in this process, on a free
port, with tokens checked.

The stack gets the README's example board (``images`` and its six images), the page is
opened on it, a score moves one image up two places while it is open, a member is looked
up and two are compared as friends; then ``page-desktop.png`` is the whole page in a
1280-pixel-wide window, and ``page-phone.png`` on a 375-pixel-wide phone. Motion is turned off
(``prefers-reduced-motion``) so that a moved row keeps its highlight in the picture.
"""

from __future__ import annotations

import base64
import io
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import requests
from PIL import Image
from selenium.webdriver import Chrome
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from devstack.browser import DESKTOP, PHONE, emulate_screen, start_chromium
from devstack.stack import STATE, Stack
from podium_client import local_token

ROOT = Path(__file__).resolve().parent.parent
PICTURES = ROOT / "docs" / "img"
TIMEOUT = 30
WAIT = 60
IMAGE_VIEWS = {"001": 27, "002": 23, "003": 16, "004": 83, "005": 52, "006": 94}
# A page of flat colours and text reads as well in 64 colours, in a third of the bytes.
PALETTE_COLOURS = 64


@contextmanager
def local_stack() -> Iterator[str]:
    """``make run``'s stack, announcing nothing (a ``make run`` may be running); what its
    functions print goes to .devstack/screenshots.log."""
    stack = Stack(port=0, table_prefix=f"shots{uuid.uuid4().hex[:6]}-", announce=False, auth=True)
    STATE.mkdir(parents=True, exist_ok=True)
    with (STATE / "screenshots.log").open("w") as log, redirect_stdout(log), redirect_stderr(log):
        try:
            stack.start()
            yield stack.url
        finally:
            stack.stop()


class Admin:
    def __init__(self, url: str) -> None:
        self.url = url
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {local_token(url, 'admin')}"

    def send(self, method: str, path: str, body: str) -> None:
        """``body`` is JSON text, sent as written (scores are exact decimals)."""
        answer = self.session.request(method, f"{self.url}{path}", data=body, timeout=TIMEOUT)
        answer.raise_for_status()


def seed_example(admin: Admin) -> None:
    """The README's "Try it": the board, its six images, and reads open to everyone."""
    admin.send("PUT", "/boards/images", '{"shards": 3, "title": "Most viewed images", "publicRead": true}')
    for image, views in IMAGE_VIEWS.items():
        body = f'{{"score": {views}, "data": {{"owner": "ana"}}}}'
        admin.send("PUT", f"/boards/images/members/img-{image}.jpg", body)


def wait(driver: Chrome, holds: Callable[[Chrome], Any], what: str) -> None:
    WebDriverWait(driver, WAIT, poll_frequency=0.2).until(holds, f"the page never showed {what}")


def rows_shown(driver: Chrome, table: str, count: int) -> Callable[[Chrome], bool]:
    return lambda _: len(driver.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr")) == count


def use_the_page(driver: Chrome, url: str, admin: Admin, *, move: str | None) -> None:
    """Open the page on the example board, move ``move`` up (a score of 60 more), look
    img-005.jpg up and compare two images as friends."""
    driver.get(f"{url}/?board=images")
    wait(driver, rows_shown(driver, "top-table", len(IMAGE_VIEWS)), "the six images")
    wait(driver, lambda _: driver.find_element(By.ID, "member-count").text == "6", "memberCount 6")
    if move:
        admin.send("POST", f"/boards/images/members/{move}/score", '{"value": 60}')
        wait(driver, lambda _: driver.find_elements(By.CSS_SELECTOR, "td.change.up"), "the move")
    driver.find_element(By.ID, "search").send_keys("img-005.jpg", Keys.ENTER)
    wait(driver, lambda _: "rank" in driver.find_element(By.ID, "search-result").text, "the search")
    driver.find_element(By.ID, "friends").send_keys("img-001.jpg, img-006.jpg")
    driver.find_element(By.CSS_SELECTOR, "#friends-form button").click()
    wait(driver, rows_shown(driver, "friends-table", 2), "the friends")


def whole_page_png(driver: Chrome, width: int) -> bytes:
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    clip = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {"captureBeyondViewport": True, "clip": clip})
    return base64.b64decode(shot["data"])


def small_png(picture: bytes) -> bytes:
    image = Image.open(io.BytesIO(picture)).convert("RGB")
    smaller = io.BytesIO()
    image.quantize(colors=PALETTE_COLOURS, dither=Image.Dither.NONE).save(smaller, "PNG", optimize=True)
    return smaller.getvalue()


def take(url: str) -> list[Path]:
    admin = Admin(url)
    seed_example(admin)
    driver = start_chromium()
    try:
        reduced_motion = {"features": [{"name": "prefers-reduced-motion", "value": "reduce"}]}
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", reduced_motion)
        emulate_screen(driver, DESKTOP, mobile=False)
        use_the_page(driver, url, admin, move="img-001.jpg")
        desktop = whole_page_png(driver, DESKTOP[0])
        emulate_screen(driver, PHONE, mobile=True)
        use_the_page(driver, url, admin, move=None)
        phone = whole_page_png(driver, PHONE[0])
    finally:
        driver.quit()
    written = []
    for name, picture in (("page-desktop.png", desktop), ("page-phone.png", phone)):
        path = PICTURES / name
        path.write_bytes(small_png(picture))
        written.append(path)
    return written


def main() -> int:
    with local_stack() as url:
        written = take(url)
    for path in written:
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
