// Entry point of the sandbox console: the sign-in page, the page frame (navigation, sign-out)
// and the hash router (#/accounts, #/accounts/<id>, #/entities, #/events, #/webhooks, ...).
//
// Every page is a function that renders into <main> and may register cleanups (timers); when
// the route changes, the previous page's requests are aborted and its cleanups run.

import { apiKey, rememberKey, forgetKey, onUnauthorized, call } from "./api.js";
import { h, replace, field, errorBox, noticeBox } from "./dom.js";
import { accountsPage, accountPage } from "./accounts.js";
import { entitiesPage, entityPage } from "./entities.js";
import { transfersPage } from "./transfers.js";
import { eventsPage } from "./events.js";
import { webhooksPage, webhookPage } from "./webhooks.js";
import { platformPage } from "./platform.js";

const ROUTES = [
  { pattern: /^accounts$/, page: accountsPage, nav: "accounts" },
  { pattern: /^accounts\/([A-Za-z0-9_]+)$/, page: accountPage, nav: "accounts" },
  { pattern: /^entities$/, page: entitiesPage, nav: "entities" },
  { pattern: /^entities\/([A-Za-z0-9_]+)$/, page: entityPage, nav: "entities" },
  { pattern: /^transfers$/, page: transfersPage, nav: "transfers" },
  { pattern: /^events$/, page: eventsPage, nav: "events" },
  { pattern: /^webhooks$/, page: webhooksPage, nav: "webhooks" },
  { pattern: /^webhooks\/([A-Za-z0-9_]+)$/, page: webhookPage, nav: "webhooks" },
  { pattern: /^platform$/, page: platformPage, nav: "platform" },
];

const NAV = [
  ["accounts", "Accounts"],
  ["entities", "Entities"],
  ["transfers", "Transfers"],
  ["events", "Events"],
  ["webhooks", "Webhooks"],
  ["platform", "Platform"],
];

const app = document.getElementById("app");

// The page shown: its abort controller and cleanups.
let current = null;
// Where to go after signing in, and the error that sent the user to the sign-in page.
let returnTo = "accounts";
let signInError = null;
let signOutNotice = false;

/** The route part of the hash: "#/accounts/bacc_1" → "accounts/bacc_1". */
function routeOf(hash) {
  return hash.replace(/^#\/?/, "").replace(/\/+$/, "");
}

/** Stops the page shown: aborts its requests and runs its cleanups. */
function leavePage() {
  if (!current) return;
  current.controller.abort();
  for (const cleanup of current.cleanups) {
    try { cleanup(); } catch (_) { /* a cleanup must not stop the others */ }
  }
  current = null;
}

/** Navigates to `route` ("accounts/bacc_1"). */
export function go(route) {
  const hash = `#/${route}`;
  if (window.location.hash === hash) render(); else window.location.hash = hash;
}

function signInPage() {
  leavePage();
  document.title = "Sign in · bankd console";
  const key = h("input", {
    type: "password", name: "api_key", autocomplete: "off", spellcheck: "false",
    required: true, autocapitalize: "off",
  });
  const status = h("div", { class: "form-status" });
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h("form", { class: "card signin-form", novalidate: true },
    field("API key", key, "A sandbox key starts with test_. It is kept in this tab only, until you sign out."),
    submit, status);
  if (signInError) {
    status.appendChild(errorBox(signInError));
    signInError = null;
  }
  if (signOutNotice) {
    status.appendChild(noticeBox("You are signed out. The key is no longer stored in this tab."));
    signOutNotice = false;
  }
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const value = key.value.trim();
    replace(status);
    if (!value) {
      status.appendChild(errorBox(new Error("Enter an API key.")));
      key.focus();
      return;
    }
    submit.disabled = true;
    try {
      // A key is good when the server answers with its platform.
      await call("GET", "/platform", { key: value });
      rememberKey(value);
      key.value = "";
      const target = returnTo;
      returnTo = "accounts";
      go(target);
    } catch (error) {
      // A 401 has already rendered this page again with the error (onUnauthorized).
      if (error.status !== 401) replace(status, errorBox(error));
    } finally {
      submit.disabled = false;
    }
  });
  replace(app,
    h("main", { id: "main", class: "signin" },
      h("h1", {}, "bankd sandbox console"),
      h("p", { class: "lead" }, "Sign in with a platform API key to browse and change its sandbox data through the public API."),
      form));
  key.focus();
}

/** The page frame: skip link, header with navigation and sign-out, and <main>. */
function frame(active) {
  const signOut = h("button", { type: "button", class: "secondary sign-out" }, "Sign out");
  signOut.addEventListener("click", () => {
    leavePage();
    forgetKey();
    signOutNotice = true;
    returnTo = "accounts";
    go("signin");
  });
  const nav = h("nav", { "aria-label": "Console" },
    h("ul", {}, NAV.map(([route, label]) =>
      h("li", {}, h("a", { href: `#/${route}`, "aria-current": route === active ? "page" : null }, label)))));
  const main = h("main", { id: "main", tabindex: "-1" });
  replace(app,
    h("a", { class: "skip-link", href: "#main", on: { click: (e) => { e.preventDefault(); main.focus(); } } }, "Skip to content"),
    h("header", { class: "top" },
      h("a", { class: "brand", href: "#/accounts" }, "bankd console", h("span", { class: "badge" }, "sandbox")),
      nav, signOut),
    main);
  return main;
}

function render() {
  const route = routeOf(window.location.hash);
  if (route === "signin" || !apiKey()) {
    if (route !== "signin") {
      if (route) returnTo = route;
      window.location.replace("#/signin");
      return;
    }
    signInPage();
    return;
  }
  leavePage();
  const target = route || "accounts";
  const match = ROUTES.map((r) => ({ r, m: r.pattern.exec(target) })).find((x) => x.m);
  const main = frame(match ? match.r.nav : null);
  const controller = new AbortController();
  const page = { controller, cleanups: [] };
  current = page;
  const ctx = {
    main,
    params: match ? match.m.slice(1) : [],
    signal: controller.signal,
    /** Whether this page is still the one shown. */
    alive: () => current === page,
    /** Registers `fn` to run when the page is left. */
    onLeave: (fn) => page.cleanups.push(fn),
    go,
  };
  if (!match) {
    replace(main, h("h1", {}, "Not found"), h("p", {}, "No console page has this address. ", h("a", { href: "#/accounts" }, "Go to the accounts.")));
    return;
  }
  document.title = "bankd console";
  match.r.page(ctx);
}

onUnauthorized((error) => {
  const route = routeOf(window.location.hash);
  if (route && route !== "signin") returnTo = route;
  leavePage();
  signInError = error;
  if (route === "signin") signInPage(); else window.location.hash = "#/signin";
});

window.addEventListener("hashchange", () => {
  render();
  // Move focus to the new page so keyboard and screen reader users start there.
  const main = document.getElementById("main");
  if (main && main.tabIndex === -1) main.focus({ preventScroll: true });
});

render();
