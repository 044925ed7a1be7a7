// The live leaderboard of one board: its top, memberCount, a member's window, a score band
// and a friends list, read again every POLL_MS with If-None-Match (docs/web.md).

import { Api, ApiError, tokens } from "./api.js";
import { describe, fillTable, rankChanges, ranksOf } from "./tables.js";

// The board's head lags writes by up to 2 s, so polling faster would show nothing sooner;
// an unchanged answer costs a 304 with no body.
const POLL_MS = 1500;
const AROUND_RADIUS = 3;
const MAX_FRIENDS = 100; // what POST /ranks takes at once
const MAX_LISTED = 1000; // boards read for the board picker, 100 a page
const NO_BOARD = "Give a token to list the boards, or open this page with ?board=<boardId> for a board whose publicRead is on.";

const $ = (id) => document.getElementById(id);
const api = new Api(new URL(".", location.href));
const state = {
  boardId: new URLSearchParams(location.search).get("board"),
  period: "current", // "current", "previous" or a period id
  rows: 10,
  member: null, // the member searched for
  friends: [],
  band: null, // {min, max}: the ends typed, as text (the API reads them as exact decimals)
  shownRanks: new Map(), // the top's ranks as last shown: what a change is measured from
  shownView: null, // the rows and period last shown: another view is drawn even from a 304
  localIssuer: false,
};

// -- polling ------------------------------------------------------------------------------

let timer = null;
let running = false;
let again = false;

async function tick() {
  clearTimeout(timer);
  if (running) {
    again = true; // a control changed mid-refresh: refresh once more right after
    return;
  }
  running = true;
  try {
    if (state.boardId && !document.hidden) {
      await refresh();
      showProblem(null);
    }
  } catch (error) {
    if (error instanceof ApiError && error.status === 401 && tokens.source() === "local") {
      await useLocalToken().catch(() => {}); // an hour old: the stack mints another
    }
    showProblem(error);
  } finally {
    running = false;
    timer = setTimeout(tick, again ? 0 : POLL_MS);
    again = false;
  }
}

function periodQuery() {
  return state.period === "current" ? "" : `period=${encodeURIComponent(state.period)}`;
}

async function refresh() {
  const board = encodeURIComponent(state.boardId);
  const period = periodQuery();
  const [settings, top] = await Promise.all([
    api.read(`boards/${board}`),
    api.read(`boards/${board}/top?limit=${state.rows}${period ? `&${period}` : ""}`),
  ]);
  const view = `${state.rows} ${state.period}`;
  const anotherView = view !== state.shownView;
  if (anotherView) state.shownRanks = new Map(); // another listing: nothing has moved in it yet
  if (settings.changed || anotherView) showBoard(settings.body);
  if (top.changed || anotherView) showTop(top.body);
  state.shownView = view;
  await Promise.all([
    state.member ? refreshSearch(board, period) : null,
    state.band ? refreshBand(board, period) : null,
    state.friends.length ? refreshFriends(board, period) : null,
  ]);
}

// -- what is shown ------------------------------------------------------------------------

function showBoard(board) {
  const title = board.title || board.boardId;
  $("board-title").textContent = title;
  document.title = `${title} · Podium`;
  $("member-count").textContent = board.memberCount;
  $("period-controls").hidden = !board.reset;
  const periods = { current: `period ${board.period} (current)`, previous: "the previous period" };
  $("period-shown").textContent = board.reset ? `· ${board.reset} board, ${periods[state.period] ?? `period ${state.period}`}` : "";
}

function showTop(page) {
  const changes = rankChanges(state.shownRanks, page.entries);
  fillTable($("top-table"), page.entries, { changes, highlight: state.member });
  $("top-empty").hidden = page.entries.length > 0;
  const first = state.shownRanks.size === 0;
  state.shownRanks = ranksOf(page.entries);
  const time = new Date().toLocaleTimeString();
  if (first) {
    $("live").textContent = `Showing the top ${page.entries.length} of ${page.total}; updated live.`;
    return;
  }
  const moves = page.entries
    .filter((entry) => changes.get(entry.memberId).kind !== "same")
    .slice(0, 3)
    .map((entry) => `${entry.memberId} ${describe(changes.get(entry.memberId))}, now ${entry.rank}`);
  $("live").textContent = `Updated at ${time}: ${moves.join("; ") || "the board changed, no rank moved"}.`;
}

async function refreshSearch(board, period) {
  const member = encodeURIComponent(state.member);
  try {
    const [rank, around] = await Promise.all([
      api.read(`boards/${board}/members/${member}/rank${period ? `?${period}` : ""}`),
      api.read(`boards/${board}/members/${member}/around?radius=${AROUND_RADIUS}${period ? `&${period}` : ""}`),
    ]);
    const found = rank.body;
    $("search-result").textContent =
      `${found.memberId}: rank ${found.rank} of ${found.total} (top ${found.topPercent} %), score ${found.score}`;
    fillTable($("around-table"), around.body.entries, { highlight: state.member });
  } catch (error) {
    if (!(error instanceof ApiError) || error.status >= 500) throw error;
    $("search-result").textContent =
      error.status === 404 ? `${state.member} has no rank on this board${period ? " in this period" : ""}.` : error.message;
    $("around-table").hidden = true;
  }
}

// The band's first page, as many rows as the top shows: GET .../scores, each end sent as
// the text typed, so that the API reads it exactly (a JavaScript number would not).
async function refreshBand(board, period) {
  const ends = Object.entries(state.band).filter(([, value]) => value !== "");
  const query = ends.map(([name, value]) => `${name}=${encodeURIComponent(value)}`);
  query.push(`limit=${state.rows}`);
  if (period) query.push(period);
  try {
    const page = (await api.read(`boards/${board}/scores?${query.join("&")}`)).body;
    fillTable($("band-table"), page.entries, { highlight: state.member });
    const shown = page.entries.length;
    $("band-table").hidden = shown === 0;
    $("band-result").textContent = shown === 0
      ? "No member has a score in this band."
      : `Ranks ${page.entries[0].rank} to ${page.entries[shown - 1].rank} of ${page.total}` +
        (page.nextCursor ? `: the first ${shown} of the band.` : ".");
  } catch (error) {
    if (!(error instanceof ApiError) || error.status >= 500) throw error;
    $("band-result").textContent = error.message;
    $("band-table").hidden = true;
  }
}

async function refreshFriends(board, period) {
  try {
    const answer = await api.post(`boards/${board}/ranks${period ? `?${period}` : ""}`, { memberIds: state.friends });
    fillTable($("friends-table"), answer.entries);
    const ranked = new Set(answer.entries.map((entry) => entry.memberId));
    const missing = state.friends.filter((member) => !ranked.has(member));
    $("friends-result").textContent =
      `${answer.entries.length} of ${state.friends.length} ranked` + (missing.length ? `; not ranked here: ${missing.join(", ")}.` : ".");
  } catch (error) {
    if (!(error instanceof ApiError) || error.status >= 500) throw error;
    $("friends-result").textContent = error.message;
    $("friends-table").hidden = true;
  }
}

function showProblem(problem) {
  const shown = $("problem");
  shown.hidden = !problem;
  shown.textContent = problem ? explain(problem) : "";
}

function explain(problem) {
  if (typeof problem === "string") return problem;
  if (!(problem instanceof ApiError)) return "The API did not answer; trying again.";
  if (problem.status === 401 && !tokens.current()) {
    const local = state.localIssuer ? ", or use a local token" : "";
    return `Board ${state.boardId} is not open to everyone (its publicRead is off): give a token${local}.`;
  }
  return problem.message;
}

function showTokenStatus() {
  const said = {
    pasted: "Reading with the token you gave (kept in this tab only).",
    local: "Reading with a local token: a player's, minted by this local stack.",
  };
  $("token-status").textContent = said[tokens.source()] ?? "No token: only a board whose publicRead is on can be read.";
}

// -- boards and tokens ----------------------------------------------------------------------

async function listBoards() {
  const listed = [];
  let cursor = null;
  do {
    const page = await api.read(`boards?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    listed.push(...page.body.boards);
    cursor = page.body.nextCursor;
  } while (cursor && listed.length < MAX_LISTED);
  return listed;
}

// The boards the caller may list fill the picker (GET /boards needs a token, unless the
// stack checks none). Without ?board= the page shows the one with the most members (ties:
// the first listed), and puts it in the address.
async function chooseBoard() {
  let listed = [];
  try {
    listed = await listBoards();
  } catch (error) {
    // with ?board= the page goes on without the picker's list
    if (!state.boardId) {
      const noToken = error instanceof ApiError && error.status === 401 && !tokens.current();
      return showProblem(noToken ? NO_BOARD : error);
    }
  }
  if (!state.boardId) {
    if (!listed.length) return showProblem("There is no board yet: create one with PUT /boards/{boardId}.");
    const biggest = listed.reduce((best, board) => (Number(board.memberCount) > Number(best.memberCount) ? board : best));
    state.boardId = biggest.boardId;
    history.replaceState(null, "", `?board=${encodeURIComponent(state.boardId)}`);
  }
  const ids = listed.map((board) => board.boardId);
  if (!ids.includes(state.boardId)) ids.unshift(state.boardId);
  $("board-select").replaceChildren(...ids.map((id) => new Option(id, id, false, id === state.boardId)));
}

async function useLocalToken() {
  tokens.keep(await api.mintLocalToken(), "local");
  showTokenStatus();
}

async function tokenChanged() {
  showTokenStatus();
  await chooseBoard();
  tick();
}

// -- controls -------------------------------------------------------------------------------

function onSubmit(id, handle) {
  $(id).addEventListener("submit", (event) => {
    event.preventDefault();
    handle();
  });
}

function wireControls() {
  $("board-select").addEventListener("change", (event) => {
    location.search = `?board=${encodeURIComponent(event.target.value)}`;
  });
  $("rows").addEventListener("change", (event) => {
    state.rows = Number(event.target.value);
    tick();
  });
  $("period-select").addEventListener("change", (event) => {
    const choice = event.target.value;
    $("period-form").hidden = choice !== "id";
    if (choice === "id") return; // the field comes next in the Tab order (no focus moved on a change)
    state.period = choice;
    tick();
  });
  onSubmit("period-form", () => {
    state.period = $("period-id").value.trim() || "current";
    tick();
  });
  onSubmit("search-form", () => {
    state.member = $("search").value.trim() || null;
    $("search-result").textContent = state.member ? `Looking for ${state.member}…` : "";
    $("around-table").hidden = true;
    tick();
  });
  onSubmit("band-form", () => {
    const [min, max] = [$("band-min").value.trim(), $("band-max").value.trim()];
    state.band = min || max ? { min, max } : null;
    $("band-result").textContent = state.band ? "Reading the band…" : "";
    $("band-table").hidden = true;
    tick();
  });
  onSubmit("friends-form", () => {
    const ids = [...new Set($("friends").value.split(/[\s,]+/).filter(Boolean))];
    state.friends = ids.slice(0, MAX_FRIENDS);
    $("friends-result").textContent = ids.length > MAX_FRIENDS ? `Only the first ${MAX_FRIENDS} ids are compared.` : "";
    $("friends-table").hidden = true;
    tick();
  });
  onSubmit("token-form", () => {
    const token = $("token").value.trim();
    $("token").value = "";
    if (!token) return;
    tokens.keep(token, "pasted");
    tokenChanged();
  });
  $("forget-token").addEventListener("click", () => {
    tokens.forget();
    tokenChanged();
  });
  $("local-token").addEventListener("click", () => useLocalToken().then(tokenChanged, showProblem));
  document.addEventListener("visibilitychange", () => document.hidden || tick());
}

async function start() {
  wireControls();
  state.localIssuer = await api.hasLocalIssuer().catch(() => false);
  $("local-token").hidden = !state.localIssuer;
  // A fresh local stack (make run, then this page): a local token lists its boards at once.
  if (!state.boardId && !tokens.current() && state.localIssuer) await useLocalToken().catch(showProblem);
  showTokenStatus();
  await chooseBoard();
  tick();
}

start();
