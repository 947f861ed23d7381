// DOM helpers shared by the pages: elements built with createElement and text nodes only (API
// data is never parsed as HTML), labelled form fields, error and notice boxes, and a table with
// cursor paging.

import { ApiError, Submission } from "./api.js";

const SVG_NS = "http://www.w3.org/2000/svg";

/** Appends children: strings and numbers become text nodes; null, undefined and false are skipped. */
function append(parent, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) {
      append(parent, child);
    } else if (child instanceof Node) {
      parent.appendChild(child);
    } else {
      parent.appendChild(document.createTextNode(String(child)));
    }
  }
}

/** Sets attributes; `on` maps event names to listeners; `class` and `text` are shorthands. */
function apply(node, props) {
  for (const [name, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "on") {
      for (const [event, listener] of Object.entries(value)) node.addEventListener(event, listener);
    } else if (name === "text") {
      node.textContent = String(value);
    } else if (name === "class") {
      node.setAttribute("class", Array.isArray(value) ? value.filter(Boolean).join(" ") : value);
    } else if (name === "dataset") {
      for (const [key, v] of Object.entries(value)) node.dataset[key] = String(v);
    } else if (name === "checked" || name === "disabled" || name === "hidden") {
      node[name] = Boolean(value);
    } else if (name === "value") {
      node.value = String(value);
    } else {
      node.setAttribute(name, value === true ? "" : String(value));
    }
  }
  return node;
}

/** An HTML element: h("a", {href: "#/x"}, "text", child, ...). */
export function h(tag, props, ...children) {
  const node = apply(document.createElement(tag), props);
  append(node, children);
  return node;
}

/** An SVG element, created in the SVG namespace. */
export function s(tag, props, ...children) {
  const node = apply(document.createElementNS(SVG_NS, tag), props);
  append(node, children);
  return node;
}

/** Replaces the children of `node`. */
export function replace(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

let uniqueCounter = 0;

/** A fresh element id with `prefix`. */
export function uid(prefix) {
  uniqueCounter += 1;
  return `${prefix}-${uniqueCounter}`;
}

/** Formats an RFC 3339 time for display (UTC, to the second), or "—" for null. */
export function formatTime(value) {
  if (!value) return "—";
  const text = String(value);
  const match = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})/.exec(text);
  return match ? `${match[1]} ${match[2]} UTC` : text;
}

/** A box that tells an API error: its code, message and per-field details. */
export function errorBox(error) {
  const box = h("div", { class: "error", role: "alert" });
  if (error instanceof ApiError) {
    append(box, [
      h("p", {},
        h("strong", {}, "Error "), h("code", { "data-testid": "error-code" }, error.code),
        error.status ? ` (HTTP ${error.status})` : "", ": ",
        h("span", { "data-testid": "error-message" }, error.message)),
    ]);
    if (error.details && Object.keys(error.details).length) {
      const list = h("ul", { class: "error-details" });
      for (const [field, message] of Object.entries(error.details)) {
        list.appendChild(h("li", {}, h("code", {}, field), ": ", String(message)));
      }
      box.appendChild(list);
    }
  } else {
    box.appendChild(h("p", {}, h("strong", {}, "Error: "), String(error && error.message ? error.message : error)));
  }
  return box;
}

/** A success notice; it is announced to screen readers. */
export function noticeBox(...children) {
  return h("div", { class: "notice", role: "status" }, ...children);
}

/** A labelled form field: the control gets an id, the label points at it. */
export function field(labelText, control, hint) {
  const id = control.id || uid("field");
  control.id = id;
  let hintNode = null;
  if (hint) {
    hintNode = h("span", { class: "hint", id: `${id}-hint` }, hint);
    control.setAttribute("aria-describedby", hintNode.id);
  }
  const isCheck = control.type === "checkbox";
  return h("div", { class: isCheck ? "field check" : "field" },
    isCheck ? control : null,
    h("label", { for: id }, labelText),
    isCheck ? null : control,
    hintNode);
}

/** A <select> of [value, label] pairs (or plain values). */
export function select(props, options) {
  const node = h("select", props);
  for (const option of options) {
    const [value, label] = Array.isArray(option) ? option : [option, option];
    node.appendChild(h("option", { value }, label));
  }
  if (props && props.value !== undefined) node.value = props.value;
  return node;
}

/**
 * Wires a <form>: on submit, `action(submission)` runs with the form's Idempotency-Key holder;
 * the submit buttons are disabled meanwhile and the outcome goes into the form's status area
 * (an error box, or the node `action` resolves to). Returns the status area.
 */
export function handleSubmit(form, action) {
  const status = h("div", { class: "form-status" });
  form.appendChild(status);
  const submission = new Submission();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const buttons = form.querySelectorAll("button");
    buttons.forEach((b) => { b.disabled = true; });
    replace(status);
    let failure = null;
    try {
      const shown = await action(submission, event.submitter || null);
      if (shown) replace(status, shown);
    } catch (error) {
      if (error && error.name === "AbortError") return;
      failure = error;
      replace(status, errorBox(error));
    } finally {
      submission.settle(failure);
      buttons.forEach((b) => { b.disabled = false; });
    }
  });
  return status;
}

/**
 * A table of one list operation with previous/next buttons that follow the API's cursors.
 *
 * opts.load(query) answers the list body; opts.items(body) its objects; opts.columns is
 * [{label, cell(item) → node or text}]; opts.empty is the text for an empty list; opts.limit the
 * page size. Returns {node, reload(), reset()}.
 */
export function pagedTable(opts) {
  const limit = opts.limit || 10;
  const body = h("tbody");
  const table = h("table", { class: "data" },
    opts.caption ? h("caption", {}, opts.caption) : null,
    h("thead", {}, h("tr", {}, opts.columns.map((c) => h("th", { scope: "col" }, c.label)))),
    body);
  const message = h("div", { class: "list-message" });
  const previous = h("button", { type: "button", class: "secondary" }, "Previous page");
  const next = h("button", { type: "button", class: "secondary" }, "Next page");
  const pager = h("div", { class: "pager" }, previous, next);
  const node = h("div", { class: "paged" }, h("div", { class: "table-wrap" }, table), message, pager);

  // The cursor of the page shown: {starting_after} or {ending_before} or {} for the first page.
  let cursor = {};
  let first = null;
  let last = null;
  let shownText = null;

  // Only the answer of the latest load is drawn.
  let sequence = 0;

  async function load(newCursor) {
    sequence += 1;
    const mine = sequence;
    let result;
    try {
      result = await opts.load({ limit, ...newCursor });
    } catch (error) {
      if (error && error.name === "AbortError") return;
      if (mine === sequence) {
        replace(message, errorBox(error));
        shownText = null;
      }
      return;
    }
    if (mine !== sequence) return;
    const sameCursor = JSON.stringify(newCursor) === JSON.stringify(cursor);
    cursor = newCursor;
    // An unchanged answer leaves the rows as they are (and the focus where it is).
    const text = JSON.stringify(result);
    if (sameCursor && text === shownText) return;
    shownText = text;
    const items = opts.items(result) || [];
    // A control with the keyboard focus is found again by its accessible name after the redraw.
    const focused = body.contains(document.activeElement) ? document.activeElement.getAttribute("aria-label") : null;
    replace(body);
    for (const item of items) {
      body.appendChild(h("tr", {}, opts.columns.map((c) =>
        h("td", { "data-label": c.label }, c.cell(item)))));
    }
    if (focused) {
      const again = [...body.querySelectorAll("[aria-label]")].find((n) => n.getAttribute("aria-label") === focused);
      if (again) again.focus({ preventScroll: true });
    }
    replace(message, items.length ? null : h("p", { class: "muted" }, opts.empty || "Nothing yet."));
    first = items.length ? items[0].id : null;
    last = items.length ? items[items.length - 1].id : null;
    const more = Boolean(result && result.has_more);
    // has_more speaks of the direction of travel only; the other direction has objects when
    // this page was reached through a cursor.
    if (cursor.ending_before) {
      previous.disabled = !more || !first;
      next.disabled = !last;
    } else if (cursor.starting_after) {
      previous.disabled = !first;
      next.disabled = !more || !last;
    } else {
      previous.disabled = true;
      next.disabled = !more || !last;
    }
    pager.hidden = previous.disabled && next.disabled;
  }

  previous.addEventListener("click", () => { if (first) load({ ending_before: first }); });
  next.addEventListener("click", () => { if (last) load({ starting_after: last }); });

  return {
    node,
    /** Loads the page shown again (after a change). */
    reload: () => load(cursor),
    /** Goes back to the first page. */
    reset: () => { shownText = null; return load({}); },
  };
}

/** A <dl> of [term, value] rows; a null value shows as "—". */
export function definitionList(rows, props) {
  const list = h("dl", props || { class: "facts" });
  for (const [term, value] of rows) {
    list.appendChild(h("dt", {}, term));
    list.appendChild(h("dd", {}, value === null || value === undefined || value === "" ? "—" : value));
  }
  return list;
}

/** A link to a console page: link("accounts/bacc_1", text) points at `#/accounts/bacc_1`. */
export function link(path, ...children) {
  return h("a", { href: `#/${path}` }, ...children);
}

/** A small button. */
export function button(text, onClick, props) {
  return h("button", { type: "button", ...(props || {}), on: { click: onClick } }, text);
}

/** A <section> headed by an <h2> that labels it. */
export function section(title, ...children) {
  const heading = h("h2", { id: uid("heading") }, title);
  return h("section", { class: "panel", "aria-labelledby": heading.id }, heading, ...children);
}

/** The page heading, with an optional line under it. */
export function pageHeading(ctx, title, subtitle) {
  document.title = `${title} · bankd console`;
  return [h("h1", {}, title), subtitle ? h("p", { class: "subtitle" }, subtitle) : null];
}
