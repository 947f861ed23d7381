// Money as the API has it: an integer count of the minor unit of a currency (cents, yen, fils).
// Formatting and parsing work on the decimal digits with BigInt; no amount ever goes through a
// floating-point computation.

// ISO 4217 minor-unit exponents of the currencies the server supports (the table CURRENCIES in
// core/src/model/money.rs). A code missing here is shown in minor units with its code.
export const EXPONENTS = Object.freeze({
  AUD: 2, BHD: 3, CAD: 2, CHF: 2, CLP: 0, CNY: 2, DKK: 2, EUR: 2, GBP: 2, HKD: 2, INR: 2,
  JOD: 3, JPY: 0, KRW: 0, KWD: 3, MXN: 2, NOK: 2, NZD: 2, OMR: 3, SEK: 2, SGD: 2, TND: 3,
  USD: 2,
});

export const CURRENCY_CODES = Object.freeze(Object.keys(EXPONENTS).sort());

/** The exponent of `code`, or null when the console does not know the currency. */
export function exponentOf(code) {
  return Object.prototype.hasOwnProperty.call(EXPONENTS, code) ? EXPONENTS[code] : null;
}

/** "1234567" → "1,234,567". */
function groupThousands(digits) {
  let out = "";
  for (let i = 0; i < digits.length; i++) {
    if (i > 0 && (digits.length - i) % 3 === 0) out += ",";
    out += digits[i];
  }
  return out;
}

/**
 * Formats `amount` minor units of `code`: formatMoney(123456, "USD") is "1,234.56 USD",
 * formatMoney(-5, "BHD") is "-0.005 BHD", formatMoney(500, "JPY") is "500 JPY".
 */
export function formatMoney(amount, code) {
  if (!Number.isInteger(amount)) return `${String(amount)} ${code}`;
  const exponent = exponentOf(code);
  const negative = amount < 0;
  let digits = (negative ? -BigInt(amount) : BigInt(amount)).toString();
  let text;
  if (exponent === null) {
    text = `${groupThousands(digits)} (minor units)`;
  } else if (exponent === 0) {
    text = groupThousands(digits);
  } else {
    digits = digits.padStart(exponent + 1, "0");
    const whole = digits.slice(0, digits.length - exponent);
    const fraction = digits.slice(digits.length - exponent);
    text = `${groupThousands(whole)}.${fraction}`;
  }
  return `${negative ? "-" : ""}${text} ${code}`;
}

/**
 * Parses an amount typed in major units ("1234.56", "1,234.5") into minor units of `code`.
 * Answers {value} or {error: message}. Only positive amounts are accepted: every amount a
 * console form sends is at least one minor unit.
 */
export function parseAmount(text, code) {
  const exponent = exponentOf(code);
  if (exponent === null) return { error: `Unknown currency ${code}.` };
  const cleaned = String(text).trim().replace(/,/g, "");
  const match = /^(\d+)(?:\.(\d*))?$/.exec(cleaned);
  if (!match) return { error: "Enter an amount such as 12.34." };
  const fraction = match[2] || "";
  if (fraction.length > exponent) {
    return {
      error: exponent === 0
        ? `${code} has no minor unit: enter a whole number.`
        : `${code} has ${exponent} decimal places at most.`,
    };
  }
  const minor = BigInt(match[1] + fraction.padEnd(exponent, "0"));
  if (minor < 1n) return { error: "The amount must be more than zero." };
  if (minor > BigInt(Number.MAX_SAFE_INTEGER)) return { error: "The amount is too large." };
  return { value: Number(minor) };
}
