"""The live leaderboard page in a real browser (headless Chromium, ``make browser``) against
a local stack that checks tokens, as a viewer uses it: a public board read without a token
and a private one with a pasted or a local token follow score changes made through the
API; a search, the period switcher and the friends view show what the API answers (and
a plain sorted list says); a phone-sized screen needs no sideways scroll, every control
has a label and is reached with the keyboard; and an unchanged board's polls are 304s,
counted from the browser's own network log.

One browser serves the module. Nothing waits a fixed time: each check waits (up to
``WAIT`` seconds, for a loaded machine) until the page shows what is expected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any, TypeVar

import pytest
import requests
from selenium.common.exceptions import TimeoutException
from selenium.webdriver import ActionChains, Chrome
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.select import Select
from selenium.webdriver.support.ui import WebDriverWait

from devstack.browser import DESKTOP, PHONE, emulate_screen, responses, start_chromium
from tests.conftest import StackLauncher
from tests.helpers import IMAGE_VIEWS, assert_equal, decimal_json, eventually, expected_listing, unique_id
from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e

TIMEOUT = 30
WAIT = 60
T = TypeVar("T")
Row = tuple[int, str, Decimal]

# The rows of a table as the page shows them: rank, member, score (the cells' text).
ROWS = """
const table = document.getElementById(arguments[0]);
if (table.hidden) return [];
return [...table.tBodies[0].rows].map((row) =>
  ["rank", "member", "score"].map((kind) => row.querySelector(`td.${kind}`).textContent));
"""


class Api:
    """The stack's API as an admin (seeding boards), and its token issuer."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {self.token('admin')}"

    def token(self, role: str, member: str | None = None) -> str:
        body = {"role": role, **({"memberId": member} if member else {})}
        response = requests.post(f"{self.url}/_local/token", json=body, timeout=TIMEOUT)
        assert response.status_code == 200, response.text
        return str(response.json()["token"])

    def call(self, method: str, path: str, body: Any = None) -> Any:
        response = self.session.request(method, f"{self.url}{path}", json=body, timeout=TIMEOUT)
        assert response.status_code in (200, 201), f"{method} {path}: {response.text}"
        return decimal_json(response)

    def board(self, settings: dict[str, Any], scores: dict[str, Decimal | int]) -> str:
        board = unique_id("page")
        self.call("PUT", f"/boards/{board}", settings)
        for member, score in scores.items():
            # the score as JSON text, exactly as given (a Decimal has no JSON type of its own)
            response = self.session.put(
                f"{self.url}/boards/{board}/members/{member}",
                data=f'{{"score": {score}}}',
                timeout=TIMEOUT,
            )
            assert response.status_code == 201, response.text
        return board

    def score(self, board: str, member: str, value: Decimal | int) -> None:
        response = self.session.post(
            f"{self.url}/boards/{board}/members/{member}/score", data=f'{{"value": {value}}}', timeout=TIMEOUT
        )
        assert response.status_code == 200, response.text


@pytest.fixture(scope="module")
def api(auth_stack: LocalStack) -> Api:
    return Api(auth_stack.url)


@pytest.fixture(scope="module")
def browser() -> Iterator[Chrome]:
    driver = start_chromium(network_log=True)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def desktop(browser: Chrome) -> Chrome:
    emulate_screen(browser, DESKTOP, mobile=False)
    return browser


def open_page(driver: Chrome, url: str, query: str = "", token: str | None = None) -> None:
    """The page at ``url/?query`` in a tab whose sessionStorage holds ``token`` (pasted)
    or none: set on the page's origin first, from one of its files, where no script runs."""
    driver.get(f"{url}/web/page.css")
    driver.execute_script(
        "sessionStorage.clear();"
        "if (arguments[0]) { sessionStorage.setItem('podium.token', arguments[0]);"
        " sessionStorage.setItem('podium.tokenSource', 'pasted'); }",
        token,
    )
    driver.get(f"{url}/{query}")


def shown_rows(driver: Chrome, table: str = "top-table") -> list[Row]:
    found: list[list[str]] = driver.execute_script(ROWS, table)
    return [(int(rank), member, Decimal(score)) for rank, member, score in found]


def text_of(driver: Chrome, element_id: str) -> str:
    return str(driver.find_element(By.ID, element_id).text)


def wait_until(driver: Chrome, read: Callable[[], T], expected: Callable[[T], bool], what: str) -> T:
    """What ``read`` returns once ``expected`` holds for it; after WAIT seconds, a failure
    that shows what the page showed last."""
    last: list[T] = []

    def holds(_: Any) -> bool:
        last[:] = [read()]
        return expected(last[0])

    try:
        WebDriverWait(driver, WAIT, poll_frequency=0.2).until(holds)
    except TimeoutException:
        raise AssertionError(f"{what}: the page shows {last[0] if last else None!r}") from None
    return last[0]


def wait_for_rows(driver: Chrome, expected: list[Row], table: str = "top-table") -> None:
    wait_until(driver, lambda: shown_rows(driver, table), lambda rows: rows == expected, f"{table} rows")


def wait_for_text(driver: Chrome, element_id: str, part: str) -> str:
    return wait_until(driver, lambda: text_of(driver, element_id), lambda text: part in text, element_id)


def wait_for_count(driver: Chrome, members: int) -> None:
    """The page's memberCount, once the stream has counted the members."""
    wait_until(
        driver, lambda: text_of(driver, "member-count"), lambda shown: shown == str(members), "memberCount"
    )


def submit(driver: Chrome, element_id: str, text: str) -> None:
    """Type into a field and press Enter, as a keyboard user does."""
    field = driver.find_element(By.ID, element_id)
    field.clear()
    field.send_keys(text, Keys.ENTER)


def decimals(scores: dict[str, Decimal | int]) -> dict[str, Decimal]:
    return {member: Decimal(score) for member, score in scores.items()}


# -- reading a board live ----------------------------------------------------------------------


def test_a_public_board_without_a_token_follows_score_changes_exactly(
    api: Api, auth_stack: LocalStack, desktop: Chrome
) -> None:
    # Given a publicRead board whose scores include more digits than a binary float holds
    scores: dict[str, Decimal | int] = {
        **IMAGE_VIEWS,
        "img-007.jpg": Decimal("12345678901234567890.123456789"),
        "img-008.jpg": Decimal("0.1"),
    }
    board = api.board({"shards": 3, "publicRead": True, "title": "Most viewed images"}, scores)

    # When the page is opened on it with no token
    open_page(desktop, auth_stack.url, f"?board={board}")

    # Then it shows the board's top, digit for digit, its memberCount, and that no token is used
    wait_for_rows(desktop, expected_listing(decimals(scores)))
    assert text_of(desktop, "board-title") == "Most viewed images"
    assert "No token" in text_of(desktop, "token-status")
    wait_for_count(desktop, len(scores))
    assert text_of(desktop, "member-count") == str(api.call("GET", f"/boards/{board}")["memberCount"])

    # When a score changes through the API: img-001.jpg gains 60.5, from 5th to 3rd
    api.score(board, "img-001.jpg", Decimal("60.5"))
    scores["img-001.jpg"] = Decimal("87.5")

    # Then the page follows, and shows img-001.jpg's move (and says it in its live region)
    wait_for_rows(desktop, expected_listing(decimals(scores)))
    moved = desktop.find_element(By.XPATH, "//td[@class='member' and text()='img-001.jpg']/..")
    change = moved.find_element(By.CSS_SELECTOR, "td.change").get_attribute("textContent")
    assert change is not None
    assert "up 2 places" in change
    assert "img-001.jpg up 2 places, now 3" in text_of(desktop, "live")

    # When a member is added, the page's count follows too
    api.call("PUT", f"/boards/{board}/members/img-009.jpg", {"score": 50})
    scores["img-009.jpg"] = 50
    wait_for_rows(desktop, expected_listing(decimals(scores)))
    wait_for_count(desktop, len(scores))


def test_a_private_board_is_read_with_a_pasted_token_or_a_local_one(
    api: Api, auth_stack: LocalStack, desktop: Chrome
) -> None:
    # Given a board that is not publicly readable
    scores: dict[str, Decimal | int] = {"ana": 40, "bo": Decimal("7.5"), "cy": -3}
    board = api.board({"shards": 2}, scores)

    # When the page is opened on it without a token
    open_page(desktop, auth_stack.url, f"?board={board}")

    # Then it says a token is needed, and offers a local one (this is the local stack)
    wait_for_text(desktop, "problem", "give a token, or use a local token")
    assert desktop.find_element(By.ID, "local-token").is_displayed()
    assert shown_rows(desktop) == []

    # When a player's token is pasted and Enter pressed
    submit(desktop, "token", api.token("player", "bo"))

    # Then the board shows, read with that token
    wait_for_rows(desktop, expected_listing(decimals(scores)))
    assert "the token you gave" in text_of(desktop, "token-status")
    assert not desktop.find_element(By.ID, "problem").is_displayed()

    # When the token is forgotten, and a local one asked for instead
    desktop.find_element(By.ID, "forget-token").click()
    wait_for_text(desktop, "problem", "give a token")
    api.score(board, "cy", 100)
    scores["cy"] = 97
    desktop.find_element(By.ID, "local-token").click()

    # Then the board shows again, as it is now
    wait_for_rows(desktop, expected_listing(decimals(scores)))
    assert "a local token" in text_of(desktop, "token-status")


def test_search_shows_the_members_rank_and_the_window_around_it(
    api: Api, auth_stack: LocalStack, desktop: Chrome
) -> None:
    # Given a public board of 15 members, some tied
    scores: dict[str, Decimal | int] = {f"m{n:02d}": (n * 7) % 40 for n in range(15)}
    board = api.board({"shards": 3, "publicRead": True}, scores)
    listing = expected_listing(decimals(scores))
    open_page(desktop, auth_stack.url, f"?board={board}")
    wait_for_rows(desktop, listing[:10])
    wait_for_count(desktop, len(scores))

    # When the 8th of the listing is searched for (typed, then Enter)
    member = listing[7][1]
    submit(desktop, "search", member)

    # Then its rank and the window of 3 either side are shown, as the API and the model say
    rank = api.call("GET", f"/boards/{board}/members/{member}/rank")
    assert (rank["rank"], rank["total"]) == (listing[7][0], len(scores))
    around = api.call("GET", f"/boards/{board}/members/{member}/around?radius=3")
    window = [(int(e["rank"]), e["memberId"], e["score"]) for e in around["entries"]]
    assert window == listing[4:11]
    wait_for_rows(desktop, window, "around-table")
    result = wait_for_text(desktop, "search-result", f"rank {rank['rank']} of {rank['total']}")
    assert f"score {scores[member]}" in result
    current = desktop.find_element(By.CSS_SELECTOR, "#around-table tr[aria-current='true'] td.member")
    assert current.text == member

    # When a member that is not on the board is searched for
    submit(desktop, "search", "nobody")

    # Then the page says so, and shows no window
    wait_for_text(desktop, "search-result", "nobody has no rank on this board")
    assert shown_rows(desktop, "around-table") == []


def test_the_friends_view_ranks_the_ids_given_on_the_whole_board(
    api: Api, auth_stack: LocalStack, desktop: Chrome
) -> None:
    # Given a board, and a friends list pasted with commas, spaces and new lines, one unknown
    scores: dict[str, Decimal | int] = {f"p{n}": n * 10 for n in range(12)}
    board = api.board({"shards": 2, "publicRead": True}, scores)
    open_page(desktop, auth_stack.url, f"?board={board}")
    friends = ["p2", "nobody", "p9", "p5"]
    desktop.find_element(By.ID, "friends").send_keys("p2, nobody\np9 p5")

    # When they are compared
    desktop.find_element(By.CSS_SELECTOR, "#friends-form button").click()

    # Then the known ones show with their board-wide ranks, better first, as the model says
    listing = expected_listing(decimals(scores))
    expected = [row for row in listing if row[1] in friends]
    wait_for_rows(desktop, expected, "friends-table")
    assert api.call("POST", f"/boards/{board}/ranks", {"memberIds": friends})["entries"] == [
        {"rank": rank, "memberId": member, "score": score} for rank, member, score in expected
    ]
    assert "not ranked here: nobody" in text_of(desktop, "friends-result")


def test_the_score_band_lists_the_members_in_it_with_their_ranks(
    api: Api, auth_stack: LocalStack, desktop: Chrome
) -> None:
    # Given a public board whose scores tie, are negative, and hold more digits than a double
    scores: dict[str, Decimal | int] = {f"s{n:02d}": Decimal(n % 7 - 2) / 4 for n in range(14)}
    scores["s14"] = Decimal("0.2500000000000000000001")
    board = api.board({"shards": 3, "publicRead": True}, scores)
    listing = expected_listing(decimals(scores))
    open_page(desktop, auth_stack.url, f"?board={board}")
    wait_for_rows(desktop, listing[:10])

    # When the band -0.25 .. 0.25 is asked for (typed in both fields, then Enter)
    desktop.find_element(By.ID, "band-min").send_keys("-0.25")
    submit(desktop, "band-max", "0.25")

    # Then its members show, better first, with their board-wide ranks, as a sorted list
    # filtered by score says (0.2500000000000000000001 is above the band, not rounded into it)
    band = [row for row in listing if Decimal("-0.25") <= row[2] <= Decimal("0.25")]
    wait_for_rows(desktop, band, "band-table")
    wait_for_text(desktop, "band-result", f"Ranks {band[0][0]} to {band[-1][0]} of {len(scores)}")
    answer = api.call("GET", f"/boards/{board}/scores?min=-0.25&max=0.25")["entries"]
    assert [(e["rank"], e["memberId"], e["score"]) for e in answer] == band

    # When only a lower end is given, then the band runs to the bottom of the board
    desktop.find_element(By.ID, "band-max").clear()
    submit(desktop, "band-min", "0.25")
    wait_for_rows(desktop, [row for row in listing if row[2] >= Decimal("0.25")], "band-table")

    # When the ends are the wrong way round, then the page says what the API said
    desktop.find_element(By.ID, "band-min").clear()
    desktop.find_element(By.ID, "band-min").send_keys("1")
    submit(desktop, "band-max", "0")
    wait_for_text(desktop, "band-result", "must not be above max")
    assert shown_rows(desktop, "band-table") == []


# -- periods ----------------------------------------------------------------------------------


@pytest.fixture
def set_clock(auth_stack: LocalStack) -> Iterator[Callable[[str | None], None]]:
    def move(now: str | None) -> None:
        response = requests.put(f"{auth_stack.url}/_devstack/clock", json={"now": now}, timeout=TIMEOUT)
        assert response.status_code == 200, response.text

    yield move
    move(None)


def test_the_period_switcher_shows_the_previous_week(
    api: Api, auth_stack: LocalStack, desktop: Chrome, set_clock: Callable[[str | None], None]
) -> None:
    # Given a weekly board scored in ISO week 48 of 2026, then in week 49
    set_clock("2026-11-26T12:00:00Z")
    board = api.board({"reset": "weekly", "publicRead": True, "shards": 2}, {})
    week_48: dict[str, Decimal | int] = {"ana": 5, "bo": 7}
    for member, value in week_48.items():
        api.call("PUT", f"/boards/{board}/members/{member}", {})
        api.score(board, member, value)
    set_clock("2026-12-01T12:00:00Z")
    week_49: dict[str, Decimal | int] = {"ana": 10, "cy": 3}
    for member, value in week_49.items():
        api.call("PUT", f"/boards/{board}/members/{member}", {})
        api.score(board, member, value)

    # When the page is opened on it
    open_page(desktop, auth_stack.url, f"?board={board}")

    # Then it shows this week, and offers the period switcher
    wait_for_rows(desktop, expected_listing(decimals(week_49)))
    wait_for_text(desktop, "period-shown", "2026-W49 (current)")

    # When the previous period is chosen, then week 48 by its id (typed, then Enter)
    Select(desktop.find_element(By.ID, "period-select")).select_by_value("previous")
    wait_for_rows(desktop, expected_listing(decimals(week_48)))
    Select(desktop.find_element(By.ID, "period-select")).select_by_value("current")
    wait_for_rows(desktop, expected_listing(decimals(week_49)))
    Select(desktop.find_element(By.ID, "period-select")).select_by_value("id")
    submit(desktop, "period-id", "2026-W48")

    # Then week 48's ranking shows, as the API reads it
    wait_for_rows(desktop, expected_listing(decimals(week_48)))
    previous = api.call("GET", f"/boards/{board}/top?period=previous")["entries"]
    assert [(e["rank"], e["memberId"], e["score"]) for e in previous] == expected_listing(decimals(week_48))
    assert "period 2026-W48" in text_of(desktop, "period-shown")


# -- what polling costs -------------------------------------------------------------------------


def test_polls_of_an_unchanged_board_are_answered_304(
    api: Api, auth_stack: LocalStack, desktop: Chrome
) -> None:
    # Given the page on a board that has settled (its rows and count shown)
    scores: dict[str, Decimal | int] = {"a": 1, "b": 2, "c": 3}
    board = api.board({"publicRead": True}, scores)
    open_page(desktop, auth_stack.url, f"?board={board}")
    wait_for_rows(desktop, expected_listing(decimals(scores)))
    wait_for_count(desktop, 3)

    # When the page goes on polling while nothing changes, as the browser's network log sees it
    top = f"{auth_stack.url}/boards/{board}/top?limit=10"
    settings = f"{auth_stack.url}/boards/{board}"
    seen: list[Any] = []

    def polls() -> list[Any]:
        seen.extend(found for found in responses(desktop) if found.url in (top, settings))
        return seen

    def three_in_a_row_unchanged(found: list[Any]) -> bool:
        last = [response.status for response in found if response.url == top][-3:]
        return last == [304, 304, 304]

    wait_until(desktop, polls, three_in_a_row_unchanged, "the top's polls")

    # Then each poll of the top is answered 304, under the tag of the listing the page holds,
    # and so are the board's own reads
    tops = [response for response in seen if response.url == top][-3:]
    held = requests.get(top, timeout=TIMEOUT).headers["ETag"]
    assert [(response.status, response.etag) for response in tops] == [(304, held)] * 3
    assert 304 in {response.status for response in seen if response.url == settings}
    assert shown_rows(desktop) == expected_listing(decimals(scores))


# -- a phone, the keyboard, and what the page says to assistive technology ---------------------

# Text whose colour is below WCAG AA's contrast with its background (4.5:1, 3:1 when large).
LOW_CONTRAST = """
const channels = (colour) => colour.match(/[\\d.]+/g).map(Number);
const luminance = ([r, g, b]) => {
  const linear = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
  return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
};
const background = (element) => {
  for (let at = element; at; at = at.parentElement) {
    const found = channels(getComputedStyle(at).backgroundColor);
    if (found.length < 4 || found[3] > 0) return found;
  }
  return [255, 255, 255];
};
const low = [];
for (const element of document.body.querySelectorAll("*")) {
  const text = [...element.childNodes].some((node) => node.nodeType === 3 && node.textContent.trim());
  if (!text || !element.checkVisibility() || element.closest(".visually-hidden")) continue;
  const style = getComputedStyle(element);
  const pair = [luminance(channels(style.color)), luminance(background(element))];
  const [light, dark] = pair.sort((a, b) => b - a);
  const ratio = (light + 0.05) / (dark + 0.05);
  const size = parseFloat(style.fontSize);
  const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
  if (ratio < (large ? 3 : 4.5)) low.push(`${element.id || element.tagName}: ${ratio.toFixed(2)}`);
}
return low;
"""

# The controls whose text no label gives (a button's is its own text).
UNLABELLED = """
return [...document.querySelectorAll("input, select, textarea, button")]
  .filter((control) => control.checkVisibility())
  .filter((control) => control.tagName === "BUTTON"
    ? !control.textContent.trim()
    : ![...control.labels].some((label) => label.textContent.trim()))
  .map((control) => control.id || control.outerHTML);
"""

# The focused control, and whether its focus can be seen (an outline).
FOCUSED = """
const focused = document.activeElement;
const style = getComputedStyle(focused);
const outlined = style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0;
return [focused.id || focused.textContent.trim(), outlined];
"""


def test_on_a_phone_the_page_fits_is_labelled_and_keyboard_usable(
    api: Api, auth_stack: LocalStack, browser: Chrome
) -> None:
    # Given a daily board whose best member has an id of 200 characters, on a 375 x 812 screen
    long_id = "m" * 200
    scores: dict[str, Decimal | int] = {long_id: Decimal("123456789012345678901234567.891"), "short": 2}
    board = api.board({"publicRead": True, "reset": "daily"}, scores)
    emulate_screen(browser, PHONE, mobile=True)
    open_page(browser, auth_stack.url, f"?board={board}")
    wait_for_rows(browser, expected_listing(decimals(scores)))

    # When the long id is looked up and compared as a friend, by keyboard
    submit(browser, "search", long_id)
    wait_for_text(browser, "search-result", "rank 1 of 2")
    browser.find_element(By.ID, "friends").send_keys(f"{long_id} short")
    browser.find_element(By.CSS_SELECTOR, "#friends-form button").send_keys(Keys.ENTER)
    wait_for_rows(browser, expected_listing(decimals(scores)), "friends-table")

    # Then nothing is wider than the screen
    scroll_width, client_width = browser.execute_script(
        "return [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert client_width == PHONE[0]
    assert scroll_width <= client_width

    # And every control has a label, and its text is AA contrast
    assert browser.execute_script(UNLABELLED) == []
    assert browser.execute_script(LOW_CONTRAST) == []
    assert browser.find_element(By.ID, "live").get_attribute("aria-live") == "polite"
    headers = browser.find_elements(By.CSS_SELECTOR, "#top-table thead th[scope='col']")
    assert [header.text for header in headers] == ["Rank", "Member", "Score", "Change"]

    # And from the top of the page (loaded afresh), Tab walks the controls in reading order,
    # each focus visible
    browser.refresh()
    wait_for_rows(browser, expected_listing(decimals(scores)))
    assert browser.find_element(By.ID, "period-select").is_displayed()
    walked = []
    for _ in range(15):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        walked.append(tuple(browser.execute_script(FOCUSED)))
    assert [name for name, _ in walked] == [
        "Skip to the leaderboard",
        "board-select",
        "rows",
        "period-select",
        "token",
        "Use this token",
        "local-token",
        "forget-token",
        "search",
        "Find",
        "band-min",
        "band-max",
        "List",
        "friends",
        "Compare",
    ]
    assert all(visible for _, visible in walked), walked


# -- the README's example, from a fresh stack ---------------------------------------------------


def test_opening_the_root_shows_the_readme_example_board(
    launch_stack: StackLauncher, desktop: Chrome
) -> None:
    with launch_stack(name="web-readme", auth=True) as stack:
        # Given the boards of the README's "Try it" on a stack of their own: images and its
        # six images, the rollup boards and brian's scores, and the weekly board
        api = Api(stack.url)
        api.call("PUT", "/boards/images", {"shards": 3, "title": "Most viewed images"})
        for image, views in IMAGE_VIEWS.items():
            api.call("PUT", f"/boards/images/members/{image}", {"score": views, "data": {"owner": "ana"}})
        api.call("PUT", "/boards/all_level1", {})
        for platform in ("xbox_level1", "pc_level1"):
            api.call("PUT", f"/boards/{platform}", {"rollupTo": ["all_level1"]})
        api.call("PUT", "/boards/xbox_level1/members/brian", {"score": 120})
        api.call("PUT", "/boards/pc_level1/members/brian", {"score": 30})
        api.call("PUT", "/boards/weekly_runs", {"reset": "weekly", "retainPeriods": 12})
        # (as by the time a person has read the README's next lines: the stream has counted them)
        eventually(lambda: assert_equal(api.call("GET", "/boards/images")["memberCount"], len(IMAGE_VIEWS)))

        # When http://<stack>/ is opened, with no board named and no token
        open_page(desktop, stack.url)

        # Then the page takes a local token, and shows the example board, the one with the
        # most members
        wait_until(desktop, lambda: desktop.current_url, lambda url: url.endswith("/?board=images"), "url")
        wait_for_rows(desktop, expected_listing(decimals(dict(IMAGE_VIEWS))))
        assert text_of(desktop, "board-title") == "Most viewed images"
        assert "a local token" in text_of(desktop, "token-status")
