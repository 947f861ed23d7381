// The transfers page (#/transfers): book transfers with the list's filters (status, bank
// account), with clear and cancel on those on hold, and the ACH transfers received. Also the
// book transfer columns that the account page shares.

import { call } from "./api.js";
import {
  h, replace, field, select, pagedTable, link, section, pageHeading, errorBox, noticeBox,
  formatTime, button,
} from "./dom.js";
import { formatMoney } from "./money.js";

/** A link to a bank account; `self` is the account whose page this is. */
function accountRef(id, self) {
  if (id === self) return h("span", { class: "muted" }, "this account");
  return link(`accounts/${id}`, h("code", {}, id));
}

/**
 * The columns of a book transfer table. opts.account: the account whose page shows the table
 * (or null); opts.onAction(transfer, "clear" | "cancel") runs the buttons of held transfers.
 */
export function bookTransferColumns(opts) {
  return [
    { label: "Created", cell: (t) => formatTime(t.created_at) },
    { label: "From", cell: (t) => accountRef(t.sender_bank_account_id, opts.account) },
    { label: "To", cell: (t) => accountRef(t.receiver_bank_account_id, opts.account) },
    { label: "Amount", cell: (t) => h("span", { class: "money" }, formatMoney(t.amount, t.currency_code)) },
    { label: "Status", cell: (t) => h("span", { class: `status status-${t.status.toLowerCase()}`, "data-testid": "transfer-status" }, t.status) },
    { label: "Description", cell: (t) => t.description || "—" },
    {
      label: "Actions",
      cell: (t) => t.status !== "HOLD" ? "—" : h("div", { class: "buttons" },
        button("Clear", () => opts.onAction(t, "clear"), { "aria-label": `Clear transfer ${t.id}` }),
        button("Cancel", () => opts.onAction(t, "cancel"), { class: "secondary", "aria-label": `Cancel transfer ${t.id}` })),
    },
  ];
}

export function transfersPage(ctx) {
  const status = select({ name: "status" }, [["", "Any status"], "HOLD", "COMPLETED", "CANCELED", "REJECTED"]);
  const account = h("input", { type: "text", name: "bank_account_id", autocomplete: "off", maxlength: "64", placeholder: "bacc_…" });
  const filters = h("form", { class: "filters", role: "search" },
    field("Status", status), field("Bank account id", account),
    h("button", { type: "submit", class: "secondary" }, "Apply"));
  const actionStatus = h("div", { "aria-live": "polite" });
  const book = pagedTable({
    caption: "Book transfers, newest first",
    load: (page) => call("GET", "/transfers/book", {
      query: { ...page, status: status.value, bank_account_id: account.value.trim() }, signal: ctx.signal,
    }),
    items: (body) => body.transfers,
    empty: "No book transfers match.",
    columns: bookTransferColumns({
      account: null,
      onAction: async (transfer, verb) => {
        replace(actionStatus);
        try {
          const result = await call("POST", `/transfers/book/${encodeURIComponent(transfer.id)}/${verb}`, { body: {}, signal: ctx.signal });
          replace(actionStatus, noticeBox(`Transfer ${result.id} is now ${result.status}.`));
        } catch (error) {
          if (error && error.name === "AbortError") return;
          replace(actionStatus, errorBox(error));
        }
        book.reload();
      },
    }),
  });
  filters.addEventListener("submit", (event) => { event.preventDefault(); book.reset(); });
  const ach = pagedTable({
    caption: "ACH transfers received, newest first",
    load: (page) => call("GET", "/transfers/ach", { query: page, signal: ctx.signal }),
    items: (body) => body.transfers,
    empty: "No ACH transfers yet.",
    columns: [
      { label: "Created", cell: (t) => formatTime(t.created_at) },
      { label: "Type", cell: (t) => t.type },
      { label: "Account", cell: (t) => link(`accounts/${t.bank_account_id}`, h("code", {}, t.bank_account_id)) },
      { label: "Amount", cell: (t) => h("span", { class: "money" }, formatMoney(t.amount, t.currency_code)) },
      { label: "Status", cell: (t) => t.return_code ? `${t.status} (${t.return_code})` : t.status },
      { label: "Originator", cell: (t) => `${t.company_name} (${t.company_id})` },
    ],
  });
  replace(ctx.main,
    pageHeading(ctx, "Transfers"),
    section("Book transfers", filters, actionStatus, book.node),
    section("ACH transfers", ach.node));
  book.reset();
  ach.reset();
}
