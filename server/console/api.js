// The console's only way to the server: calls to the public API at this origin with the API key
// kept in sessionStorage, and the errors they answer.
//
// The key lives in sessionStorage alone (never in the URL, a cookie, localStorage or a log), so
// it is gone when the tab closes or the user signs out. Any 401 answer forgets the key and hands
// control to the handler the app registers (it shows the sign-in page).

const KEY_ITEM = "bankd.console.api_key";

/** The API key of this tab's session, or null when signed out. */
export function apiKey() {
  return sessionStorage.getItem(KEY_ITEM);
}

export function rememberKey(key) {
  sessionStorage.setItem(KEY_ITEM, key);
}

const caches = new Map();

/** A Map of data kept for this session only (such as entity names); emptied by forgetKey. */
export function sessionCache(name) {
  if (!caches.has(name)) caches.set(name, new Map());
  return caches.get(name);
}

/** Signs out: forgets the key (the console keeps nothing else in sessionStorage) and the caches. */
export function forgetKey() {
  sessionStorage.removeItem(KEY_ITEM);
  for (const cache of caches.values()) cache.clear();
}

/**
 * An error answer of the API (`{type, code, message, documentation_url, details}`), or a failure
 * to reach it (`code` "network_error", `status` 0).
 */
export class ApiError extends Error {
  constructor(status, body) {
    super(body && typeof body.message === "string" ? body.message : `HTTP ${status}`);
    this.name = "ApiError";
    this.status = status;
    this.type = body && typeof body.type === "string" ? body.type : null;
    this.code = body && typeof body.code === "string" ? body.code : `http_${status}`;
    this.details = body && body.details && typeof body.details === "object" ? body.details : null;
    this.documentationUrl =
      body && typeof body.documentation_url === "string" ? body.documentation_url : null;
  }

  /** Whether sending the same request again may succeed (and must reuse its Idempotency-Key). */
  get retryable() {
    return this.status === 0 || this.status === 409 || this.status >= 500;
  }
}

let unauthorizedHandler = () => {};

/** Registers what to do after a 401: the key is already forgotten when `handler` runs. */
export function onUnauthorized(handler) {
  unauthorizedHandler = handler;
}

/** The Authorization header value: Basic auth with an empty user name and the key as password. */
function authorization(key) {
  // Keys are ASCII (`test_` or `live_` and base62), which btoa takes as is.
  return "Basic " + btoa(":" + key);
}

/**
 * Calls `method path` and answers the parsed JSON body (null for an empty body).
 *
 * options.query: object of query parameters; null, undefined and "" values are left out.
 * options.body: a value sent as JSON; options.form: a FormData sent as multipart.
 * options.idempotencyKey: sent as `Idempotency-Key` (only the operations that declare it).
 * options.signal: an AbortSignal; an aborted call rejects with a DOMException "AbortError".
 * options.key: the key to use instead of the stored one (signing in).
 */
export async function call(method, path, options = {}) {
  const key = options.key || apiKey();
  if (!key) {
    const error = new ApiError(401, { code: "unauthorized", message: "Sign in with an API key." });
    unauthorizedHandler(error);
    throw error;
  }
  const url = new URL(path, window.location.origin);
  for (const [name, value] of Object.entries(options.query || {})) {
    if (value !== null && value !== undefined && value !== "") {
      url.searchParams.set(name, String(value));
    }
  }
  const headers = { Accept: "application/json", Authorization: authorization(key) };
  let body;
  if (options.form) {
    body = options.form;
  } else if (options.body !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(options.body);
  }
  if (options.idempotencyKey) {
    headers["Idempotency-Key"] = options.idempotencyKey;
  }
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body,
      // The key travels in our own header. Leaving credentials out keeps cookies away and stops
      // the browser from answering the server's Basic challenge with a password dialog.
      credentials: "omit",
      cache: "no-store",
      redirect: "error",
      signal: options.signal,
    });
  } catch (error) {
    if (error && error.name === "AbortError") throw error;
    throw new ApiError(0, { code: "network_error", message: "The server could not be reached." });
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch (_) {
      data = null;
    }
  }
  if (!response.ok) {
    const error = new ApiError(response.status, data);
    if (response.status === 401) {
      forgetKey();
      unauthorizedHandler(error);
    }
    throw error;
  }
  return data;
}

/** A random UUID: crypto.randomUUID where the page is a secure context, else built by hand. */
export function randomUuid() {
  if (typeof crypto.randomUUID === "function") return crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The Idempotency-Key of one form: a new key for each new submission, the same key when the same
 * body is sent again after an answer that may not have been applied (network error, 409, 5xx),
 * so the server replays the first outcome instead of acting twice.
 */
export class Submission {
  constructor() {
    this.body = null;
    this.key = null;
  }

  /** The key to send with `bodyText` (the request's serialized body). */
  keyFor(bodyText) {
    if (this.key === null || this.body !== bodyText) {
      this.key = randomUuid();
      this.body = bodyText;
    }
    return this.key;
  }

  /** After an answer: keep the key only if the same request may be sent again. */
  settle(error) {
    if (!error || !(error instanceof ApiError) || !error.retryable) {
      this.key = null;
      this.body = null;
    }
  }
}
