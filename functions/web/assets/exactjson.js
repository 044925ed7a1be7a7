// JSON.parse, except that every number stays the text it was sent as.
//
// Scores are exact decimals of up to 38 significant digits. A JavaScript number is a
// binary double, which would round them (and show 0.1 + 0.2 as 0.30000000000000004), so
// the page never makes one of a score: it shows the digits the API sent.

const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const WORDS = { true: true, false: false, null: null };

export function parseExact(text) {
  let at = 0;

  const fail = () => {
    throw new SyntaxError(`not JSON at character ${at}`);
  };
  const skipSpace = () => {
    while (at < text.length && " \t\n\r".includes(text[at])) at += 1;
  };
  const take = (pattern) => {
    pattern.lastIndex = at;
    const found = pattern.exec(text);
    if (!found) fail();
    at = pattern.lastIndex;
    return found[0];
  };
  const expect = (character) => {
    skipSpace();
    if (text[at] !== character) fail();
    at += 1;
  };

  function value() {
    skipSpace();
    const next = text[at];
    if (next === "{") return members();
    if (next === "[") return elements();
    if (next === '"') return JSON.parse(take(STRING)); // the escapes, as JSON.parse reads them
    if (next === "-" || (next >= "0" && next <= "9")) return take(NUMBER);
    for (const [word, meaning] of Object.entries(WORDS)) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return meaning;
      }
    }
    return fail();
  }

  // "a, b, c" up to ``close``: each item read by ``item``
  function items(close, item) {
    skipSpace();
    if (text[at] === close) {
      at += 1;
      return;
    }
    for (;;) {
      item();
      skipSpace();
      if (text[at] !== ",") break;
      at += 1;
    }
    expect(close);
  }

  function members() {
    const object = {};
    expect("{");
    items("}", () => {
      skipSpace();
      const key = JSON.parse(take(STRING));
      expect(":");
      // an own property even for "__proto__", as JSON.parse makes it
      Object.defineProperty(object, key, { value: value(), enumerable: true, writable: true, configurable: true });
    });
    return object;
  }

  function elements() {
    const array = [];
    expect("[");
    items("]", () => array.push(value()));
    return array;
  }

  const parsed = value();
  skipSpace();
  if (at !== text.length) fail();
  return parsed;
}
