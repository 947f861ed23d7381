// The events feed (#/events): the platform's events, newest first, optionally of one type. While
// the page is open and visible it asks for new events every two seconds and adds them in list
// order; each event's JSON is shown as text in a <pre>.

import { call } from "./api.js";
import { h, replace, field, select, pageHeading, errorBox, formatTime, button } from "./dom.js";

const POLL_MS = 2000;
const PAGE = 25;
// When a poll finds only new events, it pages back this many times at most to close the gap.
const CATCH_UP_PAGES = 4;

export const EVENT_TYPES = [
  "entity.created", "entity.updated", "entity.deleted",
  "bank_account.created", "bank_account.updated", "bank_account.closed", "bank_account.overdrafted",
  "account_number.created", "account_number.updated",
  "counterparty.created", "counterparty.deleted",
  "document.created",
  "book.transfer.completed", "book.transfer.hold_created", "book.transfer.canceled",
  "ach.incoming_transfer.completed", "ach.incoming_transfer.returned",
];

/** Orders events as the list does: newest first, by creation time then id. */
function newerFirst(a, b) {
  const ta = Date.parse(a.created_at);
  const tb = Date.parse(b.created_at);
  if (ta !== tb) return tb - ta;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/** One event: a disclosure whose summary names it and whose body is its JSON. */
function eventItem(event) {
  const json = h("pre", { class: "json", tabindex: "0", "aria-label": `JSON of event ${event.id}` });
  json.textContent = JSON.stringify(event, null, 2);
  return h("li", { class: "event", "data-testid": "event", "data-event-type": event.type, "data-event-id": event.id },
    h("details", {},
      h("summary", {},
        h("code", { class: "event-type" }, event.type), " ",
        h("span", { class: "muted" }, formatTime(event.created_at)), " ",
        h("span", { class: "event-id" }, event.id)),
      json));
}

export function eventsPage(ctx) {
  const type = select({ name: "type" }, [["", "All types"], ...EVENT_TYPES]);
  const pause = button("Pause updates", () => {
    paused = !paused;
    pause.setAttribute("aria-pressed", String(paused));
    pause.textContent = paused ? "Resume updates" : "Pause updates";
    describe();
    if (!paused) poll();
  }, { class: "secondary", "aria-pressed": "false" });
  const state = h("p", { class: "muted", "aria-live": "polite", "data-testid": "feed-state" });
  const problems = h("div");
  const list = h("ol", { class: "events", "aria-label": "Events, newest first" });
  const older = button("Load older events", () => loadOlder(), { class: "secondary" });
  older.hidden = true;
  const filters = h("form", { class: "filters", role: "search" }, field("Event type", type), pause);
  filters.addEventListener("submit", (event) => event.preventDefault());
  type.addEventListener("change", () => restart());

  replace(ctx.main,
    pageHeading(ctx, "Events", "Changes to the platform's resources, as the webhook endpoints receive them."),
    filters, state, problems, list, older);

  let shown = [];
  let paused = false;
  let busy = false;
  let lastPoll = null;
  // Bumped by each restart so that answers for a former filter are dropped.
  let generation = 0;

  function describe(added) {
    const when = lastPoll ? ` Last checked ${lastPoll.toISOString().slice(11, 19)} UTC.` : "";
    const news = added ? ` ${added} new event${added === 1 ? "" : "s"}.` : "";
    state.textContent = paused
      ? `Updates paused.${when}`
      : `Following new events every ${POLL_MS / 1000} s.${news}${when}`;
  }

  /** Adds events not shown yet at their place in list order; answers how many were added. */
  function merge(events) {
    const known = new Set(shown.map((e) => e.event.id));
    let added = 0;
    for (const event of events) {
      if (known.has(event.id)) continue;
      known.add(event.id);
      const entry = { event, node: eventItem(event) };
      const at = shown.findIndex((e) => newerFirst(event, e.event) < 0);
      if (at === -1) {
        list.appendChild(entry.node);
        shown.push(entry);
      } else {
        list.insertBefore(entry.node, shown[at].node);
        shown.splice(at, 0, entry);
      }
      added += 1;
    }
    return added;
  }

  async function poll() {
    if (busy || paused || document.hidden || !ctx.alive()) return;
    busy = true;
    const mine = generation;
    try {
      const first = shown.length === 0;
      let body = await call("GET", "/events", { query: { limit: PAGE, type: type.value }, signal: ctx.signal });
      if (mine !== generation) return;
      const collected = [...body.events];
      const knownIds = new Set(shown.map((e) => e.event.id));
      // Every event of the page is new: page back until a known one, within a bound.
      for (let i = 0; !first && i < CATCH_UP_PAGES && body.has_more && body.events.length
        && body.events.every((e) => !knownIds.has(e.id)); i++) {
        body = await call("GET", "/events", {
          query: { limit: PAGE, type: type.value, starting_after: body.events[body.events.length - 1].id },
          signal: ctx.signal,
        });
        if (mine !== generation) return;
        collected.push(...body.events);
      }
      const added = merge(collected);
      if (first) older.hidden = !body.has_more;
      lastPoll = new Date();
      replace(problems);
      describe(first ? 0 : added);
      if (first && !shown.length) state.textContent += " No events yet.";
    } catch (error) {
      if (error && error.name === "AbortError") return;
      replace(problems, errorBox(error));
    } finally {
      busy = false;
    }
  }

  async function loadOlder() {
    if (!shown.length) return;
    older.disabled = true;
    const mine = generation;
    try {
      const oldest = shown[shown.length - 1].event.id;
      const body = await call("GET", "/events", { query: { limit: PAGE, type: type.value, starting_after: oldest }, signal: ctx.signal });
      if (mine !== generation) return;
      merge(body.events);
      older.hidden = !body.has_more;
    } catch (error) {
      if (error && error.name === "AbortError") return;
      replace(problems, errorBox(error));
    } finally {
      older.disabled = false;
    }
  }

  function restart() {
    generation += 1;
    busy = false;
    shown = [];
    replace(list);
    older.hidden = true;
    poll();
  }

  const timer = window.setInterval(poll, POLL_MS);
  const onVisible = () => { if (!document.hidden) poll(); };
  document.addEventListener("visibilitychange", onVisible);
  ctx.onLeave(() => {
    window.clearInterval(timer);
    document.removeEventListener("visibilitychange", onVisible);
  });
  describe();
  poll();
}
