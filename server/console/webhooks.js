// The webhook pages: the endpoints with the form that registers one (#/webhooks), and one
// endpoint (#/webhooks/<id>) with its delivery attempts (status, response code, latency, error,
// next attempt), a retry button on each and an automatic refresh every two seconds. Disabling,
// enabling and rotating the secret work on both pages. A signing secret is shown once, right
// after the create or the rotation that made it.

import { call } from "./api.js";
import {
  h, replace, field, handleSubmit, pagedTable, definitionList, link, section, pageHeading,
  errorBox, noticeBox, formatTime, button,
} from "./dom.js";

const REFRESH_MS = 2000;

/** A notice that shows a signing secret once. */
function secretNotice(endpoint, what) {
  return noticeBox(
    h("p", {}, `${what} Copy the signing secret now; the console does not show it again.`),
    h("p", {}, h("code", { class: "secret", "data-testid": "secret-once" }, endpoint.secret)));
}

/** Why an attempt failed: the server's error, else the receiver's non-2xx status. */
function deliveryError(delivery) {
  if (delivery.error) return delivery.error;
  if (delivery.status === "failed" && delivery.response_status !== null) {
    return `the receiver answered HTTP ${delivery.response_status}`;
  }
  return "—";
}

/** "a, b c" → ["a", "b", "c"]. */
function selectors(text) {
  return text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
}

/** Disable or enable `endpoint`; answers the updated endpoint. */
function setDisabled(ctx, endpoint, disabled) {
  return call("PATCH", `/webhook-endpoints/${encodeURIComponent(endpoint.id)}`, {
    body: { is_disabled: disabled }, signal: ctx.signal,
  });
}

function rotate(ctx, endpoint) {
  return call("POST", `/webhook-endpoints/${encodeURIComponent(endpoint.id)}/rotate-secret`, { signal: ctx.signal });
}

/** Runs `action` and shows its outcome (a node) or its error in `status`, then `after`. */
async function act(status, action, after) {
  replace(status);
  try {
    const shown = await action();
    if (shown) replace(status, shown);
  } catch (error) {
    if (error && error.name === "AbortError") return;
    replace(status, errorBox(error));
  }
  if (after) await after();
}

export function webhooksPage(ctx) {
  const actionStatus = h("div", { "aria-live": "polite" });
  const table = pagedTable({
    caption: "Webhook endpoints, newest first",
    load: (page) => call("GET", "/webhook-endpoints", { query: page, signal: ctx.signal }),
    items: (body) => body.webhook_endpoints,
    empty: "No webhook endpoints yet.",
    columns: [
      { label: "URL", cell: (w) => link(`webhooks/${w.id}`, w.url) },
      { label: "Description", cell: (w) => w.description || "—" },
      { label: "Events", cell: (w) => w.enabled_events.length ? w.enabled_events.join(", ") : "all" },
      { label: "State", cell: (w) => h("span", { "data-testid": "endpoint-state" }, w.is_disabled ? "disabled" : "enabled") },
      { label: "Created", cell: (w) => formatTime(w.created_at) },
      {
        label: "Actions",
        cell: (w) => h("div", { class: "buttons" },
          button(w.is_disabled ? "Enable" : "Disable", () => act(actionStatus, async () => {
            const updated = await setDisabled(ctx, w, !w.is_disabled);
            return noticeBox(`${updated.url} is ${updated.is_disabled ? "disabled" : "enabled"}.`);
          }, () => table.reload()), { class: "secondary", "aria-label": `${w.is_disabled ? "Enable" : "Disable"} ${w.url}` }),
          button("Rotate secret", () => act(actionStatus, async () =>
            secretNotice(await rotate(ctx, w), `The secret of ${w.url} was rotated; the previous one stays valid for 24 hours.`)),
          { class: "secondary", "aria-label": `Rotate secret of ${w.url}` })),
      },
    ],
  });

  const url = h("input", { type: "url", name: "url", required: true, maxlength: "2048", autocomplete: "off", placeholder: "https://example.com/webhooks" });
  const description = h("input", { type: "text", name: "description", maxlength: "500", autocomplete: "off" });
  const events = h("input", { type: "text", name: "enabled_events", autocomplete: "off" });
  const form = h("form", { class: "card", "aria-label": "Register a webhook endpoint", novalidate: true },
    h("h3", {}, "Register an endpoint"),
    field("URL", url),
    field("Description (optional)", description),
    field("Event types (optional)", events, "Types or prefixes such as entity.created, book.transfer.*; empty for every event"),
    h("button", { type: "submit" }, "Register endpoint"));
  handleSubmit(form, async () => {
    const body = { url: url.value.trim() };
    if (description.value.trim()) body.description = description.value.trim();
    const chosen = selectors(events.value);
    if (chosen.length) body.enabled_events = chosen;
    // The create declares no Idempotency-Key (the server ignores one), so none is sent.
    const endpoint = await call("POST", "/webhook-endpoints", { body, signal: ctx.signal });
    url.value = "";
    description.value = "";
    events.value = "";
    table.reset();
    return h("div", {}, secretNotice(endpoint, `Registered ${endpoint.url}.`),
      h("p", {}, link(`webhooks/${endpoint.id}`, "See its delivery attempts")));
  });

  replace(ctx.main,
    pageHeading(ctx, "Webhooks", "Endpoints that receive the platform's events, signed (Standard Webhooks)."),
    section("Endpoints", actionStatus, table.node),
    section("New endpoint", form));
  table.reset();
}

export function webhookPage(ctx) {
  const id = ctx.params[0];
  const path = `/webhook-endpoints/${encodeURIComponent(id)}`;
  const head = h("div", {}, pageHeading(ctx, "Webhook endpoint", id));
  const facts = h("div");
  const controls = h("div", { class: "buttons" });
  const actionStatus = h("div", { "aria-live": "polite" });
  const deliveries = pagedTable({
    caption: "Delivery attempts of this endpoint, newest first",
    limit: 20,
    load: (page) => call("GET", `${path}/deliveries`, { query: page, signal: ctx.signal }),
    items: (body) => body.deliveries,
    empty: "No delivery attempts yet: they start with the next event.",
    columns: [
      { label: "Attempt", cell: (d) => String(d.attempt) },
      { label: "Event", cell: (d) => h("code", {}, d.event_id) },
      { label: "Status", cell: (d) => h("span", { class: `status status-${d.status}`, "data-testid": "delivery-status" }, d.status) },
      { label: "Response", cell: (d) => h("span", { "data-testid": "delivery-response" }, d.response_status === null ? "—" : String(d.response_status)) },
      { label: "Latency", cell: (d) => d.latency_ms === null ? "—" : `${d.latency_ms} ms` },
      { label: "Error", cell: (d) => h("span", { "data-testid": "delivery-error" }, deliveryError(d)) },
      { label: "Scheduled", cell: (d) => formatTime(d.created_at) },
      { label: "Next attempt", cell: (d) => formatTime(d.next_attempt_at) },
      {
        label: "Actions",
        cell: (d) => button("Retry", () => act(actionStatus, async () => {
          const scheduled = await call("POST", `${path}/deliveries/${encodeURIComponent(d.id)}/retry`, { signal: ctx.signal });
          return noticeBox(`Attempt ${scheduled.attempt} of event ${scheduled.event_id} is ${scheduled.status}, due ${formatTime(scheduled.next_attempt_at)}.`);
        }, () => deliveries.reload()), { class: "secondary", "aria-label": `Retry event ${d.event_id} (attempt ${d.attempt})` }),
      },
    ],
  });
  replace(ctx.main, head,
    section("Endpoint", facts, controls, actionStatus),
    section("Delivery attempts", deliveries.node));

  async function load() {
    let endpoint;
    try {
      endpoint = await call("GET", path, { signal: ctx.signal });
    } catch (error) {
      if (error && error.name === "AbortError") return;
      replace(ctx.main, pageHeading(ctx, "Webhook endpoint", id), errorBox(error), h("p", {}, link("webhooks", "Back to the webhooks")));
      return;
    }
    replace(head, pageHeading(ctx, endpoint.url, `Webhook endpoint ${endpoint.id}`));
    replace(facts, definitionList([
      ["Id", h("code", {}, endpoint.id)],
      ["URL", endpoint.url],
      ["Description", endpoint.description],
      ["Events", endpoint.enabled_events.length ? endpoint.enabled_events.join(", ") : "all"],
      ["State", h("span", { "data-testid": "endpoint-state" }, endpoint.is_disabled ? "disabled" : "enabled")],
      ["Created", formatTime(endpoint.created_at)],
      ["Updated", formatTime(endpoint.updated_at)],
    ]));
    replace(controls,
      button(endpoint.is_disabled ? "Enable endpoint" : "Disable endpoint", () => act(actionStatus, async () => {
        const updated = await setDisabled(ctx, endpoint, !endpoint.is_disabled);
        return noticeBox(`The endpoint is ${updated.is_disabled ? "disabled" : "enabled"}.`);
      }, load), { class: "secondary" }),
      button("Rotate secret", () => act(actionStatus, async () =>
        secretNotice(await rotate(ctx, endpoint), "The secret was rotated; the previous one stays valid for 24 hours.")),
      { class: "secondary" }));
  }

  // Attempts change on their own (retries, answers): refresh them while the page is open.
  const timer = window.setInterval(() => {
    if (!document.hidden) deliveries.reload();
  }, REFRESH_MS);
  ctx.onLeave(() => window.clearInterval(timer));
  load();
  deliveries.reset();
}
