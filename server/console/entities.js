// The entity pages: the paged list with the forms that create a person or a business
// (#/entities), and one entity (#/entities/<id>) with its details, its bank accounts, a form that
// opens an account for it, its documents and a form that uploads one.

import { call, sessionCache } from "./api.js";
import {
  h, replace, field, select, handleSubmit, pagedTable, definitionList, link, section,
  pageHeading, errorBox, noticeBox, formatTime, button,
} from "./dom.js";
import { formatMoney, CURRENCY_CODES } from "./money.js";
import { accountLabel } from "./accounts.js";

const DOCUMENT_TYPES = [
  "identity_license", "identity_passport", "identity_utility", "bank_statement", "w9",
  "irs_letter", "certificate_of_business_formation", "ein_confirmation", "check_attachment",
  "monthly_statement", "other",
];

/** A text input; optional ones are left out of the request when empty. */
function textInput(name, props) {
  return h("input", { type: "text", name, autocomplete: "off", ...(props || {}) });
}

/** Copies the non-empty trimmed values of `inputs` (name → input) into `body`. */
function collect(body, inputs) {
  for (const [name, input] of Object.entries(inputs)) {
    const value = input.value.trim();
    if (value) body[name] = value;
  }
  return body;
}

export function entitiesPage(ctx) {
  const table = pagedTable({
    caption: "Entities of the platform, newest first",
    load: (page) => call("GET", "/entities", { query: page, signal: ctx.signal }),
    items: (body) => body.entities,
    empty: "No entities yet.",
    columns: [
      { label: "Name", cell: (e) => link(`entities/${e.id}`, e.name) },
      { label: "Type", cell: (e) => e.is_root ? `${e.type} (root)` : e.type },
      { label: "Verification", cell: (e) => e.verification_status },
      { label: "Documents", cell: (e) => String(e.documents.length) },
      { label: "Created", cell: (e) => formatTime(e.created_at) },
    ],
  });

  const person = {
    first_name: textInput("first_name", { required: true, maxlength: "100" }),
    last_name: textInput("last_name", { required: true, maxlength: "100" }),
    email: h("input", { type: "email", name: "email", autocomplete: "off", maxlength: "254" }),
    date_of_birth: h("input", { type: "date", name: "date_of_birth" }),
  };
  const personForm = h("form", { class: "card", "aria-label": "Create a person", novalidate: true },
    h("h3", {}, "Create a person"),
    h("p", { class: "muted" }, "Sandbox verification runs at once: a last name of Review or Denied is not verified."),
    field("First name", person.first_name),
    field("Last name", person.last_name),
    field("Email (optional)", person.email),
    field("Date of birth (optional)", person.date_of_birth),
    h("button", { type: "submit" }, "Create person"));
  handleSubmit(personForm, async (submission) => {
    const body = collect({}, person);
    const entity = await call("POST", "/entities/person", {
      body, idempotencyKey: submission.keyFor(JSON.stringify(body)), signal: ctx.signal,
    });
    sessionCache("entity-names").set(entity.id, entity.name);
    ctx.go(`entities/${entity.id}`);
    return null;
  });

  const business = { business_name: textInput("business_name", { required: true, maxlength: "255" }) };
  const businessForm = h("form", { class: "card", "aria-label": "Create a business", novalidate: true },
    h("h3", {}, "Create a business"),
    field("Business name", business.business_name),
    h("button", { type: "submit" }, "Create business"));
  handleSubmit(businessForm, async (submission) => {
    const body = collect({}, business);
    const entity = await call("POST", "/entities/business", {
      body, idempotencyKey: submission.keyFor(JSON.stringify(body)), signal: ctx.signal,
    });
    sessionCache("entity-names").set(entity.id, entity.name);
    ctx.go(`entities/${entity.id}`);
    return null;
  });

  replace(ctx.main,
    pageHeading(ctx, "Entities", "Persons and businesses that own bank accounts."),
    section("All entities", table.node),
    section("New entity", h("div", { class: "form-grid" }, personForm, businessForm)));
  table.reset();
}

/** The facts of a person's or a business's details. */
function detailRows(entity) {
  const rows = [];
  const p = entity.person_details;
  if (p) {
    rows.push(["First name", p.first_name], ["Middle name", p.middle_name], ["Last name", p.last_name],
      ["Date of birth", p.date_of_birth], ["Email", p.email], ["SSN (last 4)", p.ssn_last_4]);
  }
  const b = entity.business_details;
  if (b) {
    rows.push(["Business name", b.business_name], ["Legal type", b.legal_type], ["Industry", b.industry],
      ["EIN", b.ein], ["Website", b.website], ["State of incorporation", b.state_of_incorporation],
      ["Year of incorporation", b.year_of_incorporation],
      ["Countries of operation", b.countries_of_operation.join(", ")]);
  }
  const address = (p && p.address) || (b && b.address);
  if (address) {
    rows.push(["Address", [address.line_1, address.line_2, address.city, address.state, address.postal_code, address.country_code]
      .filter(Boolean).join(", ")]);
  }
  return rows;
}

/**
 * A button that downloads a document: it asks for the document again, since its signed link is
 * valid for 60 seconds only, and follows the link when it points at this server.
 */
function downloadButton(ctx, doc, status) {
  return button("Download", async () => {
    replace(status);
    try {
      const fresh = await call("GET", `/documents/${encodeURIComponent(doc.id)}`, { signal: ctx.signal });
      const url = new URL(fresh.url);
      if (url.origin !== window.location.origin) throw new Error(`The download link points elsewhere: ${fresh.url}`);
      window.location.assign(url.href);
    } catch (error) {
      if (error && error.name === "AbortError") return;
      replace(status, errorBox(error));
    }
  }, { class: "secondary", "aria-label": `Download ${doc.file_name}` });
}

export function entityPage(ctx) {
  const id = ctx.params[0];
  const head = h("div", {}, pageHeading(ctx, "Entity", id));
  const facts = h("div");
  const accounts = h("div");
  const documents = h("div");
  replace(ctx.main, head,
    section("Details", facts),
    section("Bank accounts", accounts),
    section("Documents", documents));

  async function load() {
    let entity;
    try {
      entity = await call("GET", `/entities/${encodeURIComponent(id)}`, { signal: ctx.signal });
    } catch (error) {
      if (error && error.name === "AbortError") return;
      replace(ctx.main, pageHeading(ctx, "Entity", id), errorBox(error), h("p", {}, link("entities", "Back to the entities")));
      return;
    }
    sessionCache("entity-names").set(entity.id, entity.name);
    replace(head, pageHeading(ctx, entity.name, `${entity.type} · ${entity.verification_status} · ${entity.id}`));
    replace(facts, definitionList([
      ["Id", h("code", {}, entity.id)],
      ["Type", entity.is_root ? `${entity.type} (the platform's root entity)` : entity.type],
      ["Verification", h("span", { "data-testid": "verification-status" }, entity.verification_status)],
      ["Review reasons", entity.review_reasons.join(", ")],
      ...detailRows(entity),
      ["Created", formatTime(entity.created_at)],
      ["Updated", formatTime(entity.updated_at)],
    ]));
    showDocuments(entity);
  }

  function showDocuments(entity) {
    const downloadStatus = h("div", { "aria-live": "polite" });
    const list = entity.documents.length
      ? h("div", { class: "table-wrap" }, h("table", { class: "data" },
        h("caption", {}, "Documents of this entity, newest first"),
        h("thead", {}, h("tr", {}, ["Type", "File name", "Size", "Description", "Uploaded", "File"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, entity.documents.map((d) => h("tr", {},
          h("td", { "data-label": "Type" }, d.type),
          h("td", { "data-label": "File name" }, d.file_name),
          h("td", { "data-label": "Size" }, `${d.size} bytes`),
          h("td", { "data-label": "Description" }, d.description || "—"),
          h("td", { "data-label": "Uploaded" }, formatTime(d.created_at)),
          h("td", { "data-label": "File" }, downloadButton(ctx, d, downloadStatus)))))))
      : h("p", { class: "muted" }, "No documents yet.");
    const file = h("input", { type: "file", name: "file", required: true });
    const type = select({ name: "type" }, DOCUMENT_TYPES);
    const description = textInput("description", { maxlength: "127" });
    const form = h("form", { class: "inline-form", "aria-label": "Upload a document", novalidate: true },
      field("File", file, "At most 10 MiB"),
      field("Document type", type),
      field("Description (optional)", description),
      h("button", { type: "submit", class: "secondary" }, "Upload document"));
    handleSubmit(form, async (submission) => {
      if (!file.files.length) throw new Error("Choose a file to upload.");
      const chosen = file.files[0];
      const data = new FormData();
      data.append("type", type.value);
      data.append("entity_id", entity.id);
      if (description.value.trim()) data.append("description", description.value.trim());
      data.append("file", chosen, chosen.name);
      // The same file and fields sent again reuse the key (the body itself is multipart).
      const signature = JSON.stringify([type.value, description.value.trim(), chosen.name, chosen.size, chosen.lastModified]);
      await call("POST", "/documents", { form: data, idempotencyKey: submission.keyFor(signature), signal: ctx.signal });
      await load();
      return null;
    });
    replace(documents, downloadStatus, list, form);
  }

  const accountsTable = pagedTable({
    caption: "Bank accounts this entity owns, alone or jointly",
    load: (page) => call("GET", "/bank-accounts", { query: { ...page, entity_id: id }, signal: ctx.signal }),
    items: (body) => body.bank_accounts,
    empty: "This entity owns no bank account yet.",
    columns: [
      { label: "Account", cell: (a) => link(`accounts/${a.id}`, accountLabel(a)) },
      { label: "Type", cell: (a) => a.type },
      { label: "Status", cell: (a) => a.status },
      { label: "Available", cell: (a) => h("span", { class: "money" }, formatMoney(a.balances.available_amount, a.currency_code)) },
    ],
  });
  const open = {
    description: textInput("description", { required: true, minlength: "3", maxlength: "255" }),
    display_name: textInput("display_name", { maxlength: "255" }),
  };
  const currency = select({ name: "currency_code", value: "USD" }, CURRENCY_CODES);
  const openForm = h("form", { class: "inline-form", "aria-label": "Open a bank account", novalidate: true },
    field("Account description", open.description, "3 to 255 characters"),
    field("Display name (optional)", open.display_name),
    field("Currency", currency),
    h("button", { type: "submit" }, "Open bank account"));
  handleSubmit(openForm, async (submission) => {
    const body = collect({ entity_id: id }, open);
    body.currency_code = currency.value;
    const account = await call("POST", "/bank-accounts", {
      body, idempotencyKey: submission.keyFor(JSON.stringify(body)), signal: ctx.signal,
    });
    ctx.go(`accounts/${account.id}`);
    return noticeBox(`Opened ${account.id}.`);
  });
  replace(accounts, accountsTable.node, h("h3", {}, "Open a bank account"), openForm);
  accountsTable.reset();
  load();
}
