// How the page talks to the API. The page is a route of the API itself, so every request
// goes to its own origin: no CORS, and the paths are relative to the page's address (which
// is the stage's root: /dev/ in AWS, / on the local stack).

import { parseExact } from "./exactjson.js";

const TOKEN = "podium.token";
const TOKEN_SOURCE = "podium.tokenSource";
const REMEMBERED_TAGS = 64; // answers kept for their ETags; more is forgotten, oldest first

// The bearer token lives in sessionStorage: as long as the tab, and only for this origin.
export const tokens = {
  current: () => sessionStorage.getItem(TOKEN),
  source: () => sessionStorage.getItem(TOKEN_SOURCE), // "pasted" or "local"
  keep(token, source) {
    sessionStorage.setItem(TOKEN, token);
    sessionStorage.setItem(TOKEN_SOURCE, source);
  },
  forget() {
    sessionStorage.removeItem(TOKEN);
    sessionStorage.removeItem(TOKEN_SOURCE);
  },
};

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.message ?? `the API answered ${status}`);
    this.status = status;
    this.code = body?.code;
  }
}

export class Api {
  constructor(base) {
    this.base = base;
    this.known = new Map(); // path -> {etag, body}: the last 200 of each GET
  }

  async send(method, path, { body, etag } = {}) {
    const headers = { Accept: "application/json" };
    const token = tokens.current();
    if (token) headers.Authorization = `Bearer ${token}`;
    if (etag) headers["If-None-Match"] = etag;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    // "no-store": the page keeps the last answer and sends its tag itself, so that a 304
    // reaches it as a 304 (the browser's cache would turn it back into a 200).
    const response = await fetch(new URL(path, this.base), {
      method,
      headers,
      cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = response.status === 304 ? "" : await response.text();
    return { status: response.status, etag: response.headers.get("ETag"), body: text ? parseExact(text) : null };
  }

  // A GET that costs a 304 when the answer has not changed: {body, changed}.
  async read(path) {
    const known = this.known.get(path);
    const answer = await this.send("GET", path, { etag: known?.etag });
    if (answer.status === 304 && known) return { body: known.body, changed: false };
    if (answer.status !== 200) throw new ApiError(answer.status, answer.body);
    this.remember(path, answer);
    return { body: answer.body, changed: true };
  }

  remember(path, answer) {
    this.known.delete(path);
    if (answer.etag) this.known.set(path, { etag: answer.etag, body: answer.body });
    if (this.known.size > REMEMBERED_TAGS) this.known.delete(this.known.keys().next().value);
  }

  async post(path, body) {
    const answer = await this.send("POST", path, { body });
    if (answer.status !== 200) throw new ApiError(answer.status, answer.body);
    return answer.body;
  }

  // The local stack's token issuer (POST /_local/token) is not a route of a deployed API,
  // which answers 404 for it. An empty body is refused (400) where it exists, minting nothing.
  async hasLocalIssuer() {
    const answer = await this.send("POST", "_local/token", { body: {} });
    return answer.status !== 404;
  }

  async mintLocalToken() {
    const answer = await this.send("POST", "_local/token", { body: { role: "player", memberId: "page-viewer" } });
    if (answer.status !== 200) throw new ApiError(answer.status, answer.body);
    return answer.body.token;
  }
}
