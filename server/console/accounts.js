// The bank account pages: the paged list with balances and owners (#/accounts), and one
// account (#/accounts/<id>) with its balances, balance-history chart, account numbers, book
// transfers (clear and cancel on holds) and the forms that move money: a book transfer and the
// sandbox's incoming ACH credit and debit.

import { call, sessionCache } from "./api.js";
import {
  h, replace, field, select, handleSubmit, pagedTable, definitionList, link, section,
  pageHeading, errorBox, noticeBox, formatTime,
} from "./dom.js";
import { formatMoney, parseAmount } from "./money.js";
import { balanceChart } from "./chart.js";
import { bookTransferColumns } from "./transfers.js";

const BALANCES = [
  ["available_amount", "Available", "available"],
  ["pending_amount", "Pending", "pending"],
  ["holding_amount", "Holding", "holding"],
  ["locked_amount", "Locked", "locked"],
];

/** The name of each entity in `ids`, fetched once per session; answers a Map id → name. */
export async function entityNames(ids, signal) {
  const names = sessionCache("entity-names");
  const missing = [...new Set(ids)].filter((id) => !names.has(id));
  await Promise.all(missing.map(async (id) => {
    try {
      const entity = await call("GET", `/entities/${encodeURIComponent(id)}`, { signal });
      names.set(id, entity.name);
    } catch (error) {
      if (error && error.name === "AbortError") throw error;
      // An owner that cannot be read is shown by its id.
    }
  }));
  return names;
}

/** Links to the owners of `account`, by name once the names are known. */
function ownersCell(account, signal) {
  const cell = h("span", { class: "owners" });
  const draw = (names) => replace(cell, account.owners.map((id, i) => [
    i ? ", " : "", link(`entities/${id}`, names && names.has(id) ? names.get(id) : id),
  ]));
  draw(sessionCache("entity-names"));
  entityNames(account.owners, signal).then(draw, () => {});
  return cell;
}

/** The account's name as shown: its display name, else its description. */
export function accountLabel(account) {
  return account.display_name || account.description;
}

export function accountsPage(ctx) {
  const query = h("input", { type: "search", name: "query", autocomplete: "off" });
  const type = select({ name: "type" }, [["", "Any type"], "CHECKING", "PROGRAM_RESERVE", "OVERDRAFT_RESERVE", "NETWORK_SETTLEMENT_ACCOUNT"]);
  const filters = h("form", { class: "filters", role: "search" },
    field("Search", query, "Description, display name or owner name"),
    field("Type", type),
    h("button", { type: "submit", class: "secondary" }, "Apply"));
  const table = pagedTable({
    caption: "Bank accounts of the platform, newest first",
    load: (page) => call("GET", "/bank-accounts", {
      query: { ...page, query: query.value.trim(), type: type.value }, signal: ctx.signal,
    }),
    items: (body) => body.bank_accounts,
    empty: "No bank accounts match.",
    columns: [
      { label: "Account", cell: (a) => link(`accounts/${a.id}`, accountLabel(a)) },
      { label: "Type", cell: (a) => a.type },
      { label: "Status", cell: (a) => a.status },
      { label: "Owners", cell: (a) => ownersCell(a, ctx.signal) },
      ...BALANCES.map(([key, label]) => ({
        label, cell: (a) => h("span", { class: "money" }, formatMoney(a.balances[key], a.currency_code)),
      })),
    ],
  });
  filters.addEventListener("submit", (event) => { event.preventDefault(); table.reset(); });
  replace(ctx.main,
    pageHeading(ctx, "Bank accounts", "Balances are in each account's currency. Open a new account from an entity's page."),
    filters, table.node);
  table.reset();
}

/** The four balances of `account` as cards. */
function balanceCards(account) {
  return h("div", { class: "balances" }, BALANCES.map(([key, label, id]) =>
    h("div", { class: "balance" },
      h("span", { class: "balance-label" }, label),
      h("span", { class: "balance-value", "data-testid": `balance-${id}` },
        formatMoney(account.balances[key], account.currency_code)))));
}

export function accountPage(ctx) {
  const id = ctx.params[0];
  const head = h("div", {}, pageHeading(ctx, "Bank account", id));
  const balances = h("div", { "aria-live": "polite" });
  const facts = h("div");
  const chart = h("div", { class: "chart-slot" });
  const actionStatus = h("div", { "aria-live": "polite" });
  const forms = h("div", { class: "form-grid" });
  const numbers = h("div");
  const transfersSlot = h("div");
  replace(ctx.main, head,
    section("Balances", balances),
    section("Balance history", chart),
    section("Move money", forms),
    section("Book transfers", actionStatus, transfersSlot),
    section("Account numbers", numbers),
    section("Details", facts));

  let account = null;
  let transfers = null;

  async function loadAccount() {
    account = await call("GET", `/bank-accounts/${encodeURIComponent(id)}`, { signal: ctx.signal });
    replace(head, pageHeading(ctx, accountLabel(account), `${account.type} · ${account.status} · ${account.currency_code} · ${account.id}`));
    replace(balances, balanceCards(account));
    replace(facts, definitionList([
      ["Id", h("code", {}, account.id)],
      ["Description", account.description],
      ["Display name", account.display_name],
      ["Owners", ownersCell(account, ctx.signal)],
      ["Default account number", `${account.default_account_number} (routing ${account.routing_number}, BIC ${account.bic})`],
      ["Overdraftable", account.is_overdraftable ? `yes, reserve ${account.overdraft_reserve_account_id}` : "no"],
      ["Created", formatTime(account.created_at)],
      ["Updated", formatTime(account.updated_at)],
    ]));
  }

  // The last history read: the chart is drawn again at the new width when the window resizes.
  let history = null;
  const drawChart = () => {
    if (history) replace(chart, balanceChart(history, account.currency_code, chart.clientWidth));
  };
  let resizeFrame = 0;
  const onResize = () => {
    window.cancelAnimationFrame(resizeFrame);
    resizeFrame = window.requestAnimationFrame(drawChart);
  };
  window.addEventListener("resize", onResize);
  ctx.onLeave(() => {
    window.removeEventListener("resize", onResize);
    window.cancelAnimationFrame(resizeFrame);
  });

  async function loadChart() {
    try {
      history = await call("GET", `/bank-accounts/${encodeURIComponent(id)}/history`, { signal: ctx.signal });
      drawChart();
    } catch (error) {
      if (error && error.name === "AbortError") return;
      if (error.code === "reporting_time_zone_not_set") {
        replace(chart, errorBox(error),
          h("p", {}, "The history counts days in the platform's reporting time zone. ",
            link("platform", "Set it on the platform page"), ", then come back."));
      } else {
        replace(chart, errorBox(error));
      }
    }
  }

  /** Reads the account, its chart and its transfers again after a change. */
  async function refresh() {
    try {
      await loadAccount();
    } catch (error) {
      if (error && error.name === "AbortError") return;
      replace(balances, errorBox(error));
      return;
    }
    await Promise.all([loadChart(), transfers ? transfers.reload() : null]);
  }

  async function transferAction(transfer, verb) {
    replace(actionStatus);
    try {
      // Clear and cancel declare no Idempotency-Key; a repeated call answers transfer_not_on_hold.
      const result = await call("POST", `/transfers/book/${encodeURIComponent(transfer.id)}/${verb}`, {
        body: {}, signal: ctx.signal,
      });
      replace(actionStatus, noticeBox(`Transfer ${result.id} is now ${result.status}.`));
    } catch (error) {
      if (error && error.name === "AbortError") return;
      replace(actionStatus, errorBox(error));
    }
    await refresh();
  }

  (async () => {
    try {
      await loadAccount();
    } catch (error) {
      if (error && error.name === "AbortError") return;
      replace(ctx.main, pageHeading(ctx, "Bank account", id), errorBox(error), h("p", {}, link("accounts", "Back to the accounts")));
      return;
    }
    loadChart();
    transfers = pagedTable({
      caption: "Book transfers sent or received by this account, newest first",
      load: (page) => call("GET", "/transfers/book", {
        query: { ...page, bank_account_id: id }, signal: ctx.signal,
      }),
      items: (body) => body.transfers,
      empty: "No book transfers yet.",
      columns: bookTransferColumns({ account: id, onAction: transferAction }),
    });
    replace(transfersSlot, transfers.node);
    transfers.reset();
    replace(forms, transferForm(ctx, account, refresh), simulationForm(ctx, account, refresh));
    loadNumbers(ctx, account, numbers);
  })();
}

/** The book transfer form: this account sends to another open account of its currency. */
function transferForm(ctx, account, refresh) {
  const receiver = select({ name: "receiver", required: true }, [["", "Loading accounts…"]]);
  const amount = h("input", { type: "text", name: "amount", inputmode: "decimal", autocomplete: "off", required: true });
  const description = h("input", { type: "text", name: "description", maxlength: "255", autocomplete: "off" });
  const hold = h("input", { type: "checkbox", name: "hold" });
  const form = h("form", { class: "card", "aria-label": "Book transfer", novalidate: true },
    h("h3", {}, "Book transfer"),
    h("p", { class: "muted" }, `From this account to another account in ${account.currency_code}.`),
    field("Receiver account", receiver),
    field(`Amount (${account.currency_code})`, amount, "In major units, for example 25.00"),
    field("Description (optional)", description),
    field("Place on hold (clear or cancel it later)", hold),
    h("button", { type: "submit" }, "Send transfer"));
  call("GET", "/bank-accounts", {
    query: { limit: 100, currency_code: account.currency_code, status: "open" }, signal: ctx.signal,
  }).then((body) => {
    const others = body.bank_accounts.filter((a) => a.id !== account.id);
    replace(receiver);
    receiver.appendChild(h("option", { value: "" }, others.length ? "Choose an account" : "No other open account"));
    for (const other of others) {
      receiver.appendChild(h("option", { value: other.id }, `${accountLabel(other)} (${other.type}, ${other.id})`));
    }
  }, (error) => {
    if (error && error.name === "AbortError") return;
    replace(receiver, h("option", { value: "" }, `Could not load accounts: ${error.code}`));
  });
  handleSubmit(form, async (submission) => {
    const parsed = parseAmount(amount.value, account.currency_code);
    if (parsed.error) throw new Error(parsed.error);
    if (!receiver.value) throw new Error("Choose the receiver account.");
    const body = {
      amount: parsed.value,
      currency_code: account.currency_code,
      sender_bank_account_id: account.id,
      receiver_bank_account_id: receiver.value,
      hold: hold.checked,
    };
    if (description.value.trim()) body.description = description.value.trim();
    const transfer = await call("POST", "/transfers/book", {
      body, idempotencyKey: submission.keyFor(JSON.stringify(body)), signal: ctx.signal,
    });
    amount.value = "";
    description.value = "";
    hold.checked = false;
    await refresh();
    return noticeBox(`Transfer ${transfer.id}: ${formatMoney(transfer.amount, transfer.currency_code)}, ${transfer.status}.`);
  });
  return form;
}

/** The sandbox simulation form: an incoming ACH credit or debit on one of the account's numbers. */
function simulationForm(ctx, account, refresh) {
  const number = select({ name: "account_number", required: true },
    [[account.default_account_number_id, `${account.default_account_number} (default)`]]);
  const amount = h("input", { type: "text", name: "amount", inputmode: "decimal", autocomplete: "off", required: true });
  const companyId = h("input", { type: "text", name: "company_id", value: "1234567890", maxlength: "10", autocomplete: "off", required: true });
  const companyName = h("input", { type: "text", name: "company_name", value: "ACME PAYROLL", maxlength: "255", autocomplete: "off", required: true });
  const credit = h("button", { type: "submit", name: "direction", value: "credit" }, "Receive ACH credit");
  const debit = h("button", { type: "submit", name: "direction", value: "debit", class: "secondary" }, "Receive ACH debit");
  const form = h("form", { class: "card", "aria-label": "Simulate incoming ACH", novalidate: true },
    h("h3", {}, "Simulate incoming ACH"),
    h("p", { class: "muted" }, "Sandbox only: money arriving from (credit) or taken by (debit) another bank."),
    field("Account number", number),
    field(`Amount (${account.currency_code})`, amount, "In major units, for example 1234.56"),
    field("Originator company id", companyId, "10 letters or digits"),
    field("Originator company name", companyName),
    h("div", { class: "buttons" }, credit, debit));
  call("GET", `/bank-accounts/${encodeURIComponent(account.id)}/account-numbers`, {
    query: { limit: 100 }, signal: ctx.signal,
  }).then((body) => {
    const chosen = number.value;
    replace(number);
    for (const n of body.account_numbers) {
      const isDefault = n.id === account.default_account_number_id;
      number.appendChild(h("option", { value: n.id }, `${n.account_number}${isDefault ? " (default)" : ""}${n.description ? ` ${n.description}` : ""}`));
    }
    number.value = chosen;
  }, () => {});
  handleSubmit(form, async (_submission, submitter) => {
    const direction = submitter && submitter.value === "debit" ? "debit" : "credit";
    const parsed = parseAmount(amount.value, account.currency_code);
    if (parsed.error) throw new Error(parsed.error);
    const body = {
      destination_account_number_id: number.value,
      amount: parsed.value,
      currency_code: account.currency_code,
      company_id: companyId.value.trim(),
      company_name: companyName.value.trim(),
    };
    // The simulations declare no Idempotency-Key (the server ignores one), so none is sent.
    const transfer = await call("POST", `/simulate/receive-ach-${direction}`, { body, signal: ctx.signal });
    amount.value = "";
    await refresh();
    const returned = transfer.status === "RETURNED" ? ` (return code ${transfer.return_code})` : "";
    return noticeBox(`ACH ${transfer.type.toLowerCase()} ${transfer.id}: ${formatMoney(transfer.amount, transfer.currency_code)}, ${transfer.status}${returned}.`);
  });
  return form;
}

/** The account numbers of the account, with a form that adds one. */
function loadNumbers(ctx, account, slot) {
  const table = pagedTable({
    caption: "Account numbers that point to this account, newest first",
    load: (page) => call("GET", `/bank-accounts/${encodeURIComponent(account.id)}/account-numbers`, {
      query: page, signal: ctx.signal,
    }),
    items: (body) => body.account_numbers,
    columns: [
      { label: "Account number", cell: (n) => h("code", {}, n.account_number) },
      { label: "Routing", cell: (n) => n.routing_number },
      { label: "BIC", cell: (n) => n.bic },
      { label: "Description", cell: (n) => n.description || "—" },
      { label: "Id", cell: (n) => h("code", {}, n.id) },
      { label: "Created", cell: (n) => formatTime(n.created_at) },
    ],
  });
  const description = h("input", { type: "text", name: "description", maxlength: "255", autocomplete: "off" });
  const form = h("form", { class: "inline-form", "aria-label": "New account number", novalidate: true },
    field("Description of a new account number", description),
    h("button", { type: "submit", class: "secondary" }, "Add account number"));
  handleSubmit(form, async (submission) => {
    const body = { description: description.value.trim() };
    const created = await call("POST", `/bank-accounts/${encodeURIComponent(account.id)}/account-numbers`, {
      body, idempotencyKey: submission.keyFor(JSON.stringify(body)), signal: ctx.signal,
    });
    description.value = "";
    table.reset();
    return noticeBox(`Account number ${created.account_number} added.`);
  });
  replace(slot, table.node, form);
  table.reset();
}
