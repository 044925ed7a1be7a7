// The page's tables: rows built with textContent only (a member id is data, never markup),
// and the rank changes between two listings.

// How each member's rank moved since the listing shown before: "up", "down", "new" or
// "same", with the number of places. Ranks are integers, so a JavaScript number is exact.
export function rankChanges(before, entries) {
  const changes = new Map();
  for (const entry of entries) {
    const was = before.get(entry.memberId);
    const rank = Number(entry.rank);
    if (was === undefined) changes.set(entry.memberId, { kind: before.size ? "new" : "same", places: 0 });
    else if (rank < was) changes.set(entry.memberId, { kind: "up", places: was - rank });
    else if (rank > was) changes.set(entry.memberId, { kind: "down", places: rank - was });
    else changes.set(entry.memberId, { kind: "same", places: 0 });
  }
  return changes;
}

export function ranksOf(entries) {
  return new Map(entries.map((entry) => [entry.memberId, Number(entry.rank)]));
}

const SHOWN = { up: "▲", down: "▼", new: "new", same: "–" };

function changeCell(change) {
  const cell = document.createElement("td");
  cell.className = `change ${change.kind}`;
  const shown = document.createElement("span");
  shown.setAttribute("aria-hidden", "true");
  shown.textContent = change.places ? `${SHOWN[change.kind]} ${change.places}` : SHOWN[change.kind];
  const said = document.createElement("span");
  said.className = "visually-hidden";
  said.textContent = describe(change);
  cell.append(shown, said);
  return cell;
}

export function describe(change) {
  if (change.kind === "up" || change.kind === "down") {
    return `${change.kind} ${change.places} ${change.places === 1 ? "place" : "places"}`;
  }
  return change.kind === "new" ? "new in this list" : "unchanged";
}

// Replace a table's rows: rank, member, score (and the change, when ``changes`` is given);
// the row of ``highlight`` is marked as the current one.
export function fillTable(table, entries, { changes, highlight } = {}) {
  const rows = entries.map((entry) => {
    const row = document.createElement("tr");
    for (const [text, kind] of [[entry.rank, "rank"], [entry.memberId, "member"], [entry.score, "score"]]) {
      const cell = document.createElement("td");
      cell.className = kind;
      cell.textContent = text;
      row.append(cell);
    }
    if (changes) {
      const change = changes.get(entry.memberId);
      row.append(changeCell(change));
      if (change.kind !== "same") row.classList.add("moved");
    }
    if (entry.memberId === highlight) row.setAttribute("aria-current", "true");
    return row;
  });
  table.tBodies[0].replaceChildren(...rows);
  table.hidden = false;
}
