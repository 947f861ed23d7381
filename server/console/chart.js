// The balance-history chart of a bank account: one bar per day for the available balance at the
// day's close, drawn as SVG with DOM calls (createElementNS). Each day is focusable; hovering or
// focusing it shows its closing balances below the chart and in its <title>. The chart is drawn
// for the pixel width it is given, so its text keeps its size on a phone and on a desktop.

import { h, s } from "./dom.js";
import { formatMoney } from "./money.js";

const HEIGHT = 260;
const MIN_WIDTH = 280;
const MARGIN = { top: 16, right: 16, bottom: 48 };
// Width of one character of a 12 px axis label, at most (digits, commas, capitals).
const CHAR_WIDTH = 7.5;
// Room for one label of the x axis ("11-28").
const X_LABEL_ROOM = 64;

/**
 * Tick values (integers, minor units) that cover [min, max] in about four equal "nice" steps
 * (1, 2 or 5 times a power of ten). Exact integer arithmetic on BigInt.
 */
function ticks(min, max) {
  let low = BigInt(min);
  let high = BigInt(max);
  if (low === high) high = low + 1n;
  const raw = (high - low + 3n) / 4n;
  let power = 1n;
  while (power * 10n <= raw) power *= 10n;
  const step = [power, 2n * power, 5n * power, 10n * power].find((c) => c >= raw);
  const floorDiv = (a, b) => (a >= 0n ? a / b : -((-a + b - 1n) / b));
  const start = floorDiv(low, step) * step;
  const end = -floorDiv(-high, step) * step;
  const values = [];
  for (let v = start; v <= end; v += step) values.push(Number(v));
  return values;
}

/** Text that tells one day's closing balances. */
function describeDay(day, currency) {
  const postings = day.transaction_count === 1 ? "1 posting" : `${day.transaction_count} postings`;
  return `${day.effective_on}: available ${formatMoney(day.available_close, currency)}, ` +
    `pending ${formatMoney(day.pending_close, currency)}, ` +
    `holding ${formatMoney(day.holding_close, currency)}, ` +
    `locked ${formatMoney(day.locked_close, currency)}; ${postings}`;
}

/**
 * A <figure> with the chart of `history` (the API's BankAccountHistory: days newest first) for
 * an account in `currency`, `width` pixels wide.
 */
export function balanceChart(history, currency, width) {
  const WIDTH = Math.max(MIN_WIDTH, Math.floor(width || 720));
  const days = (history.history || []).slice().reverse();
  const readout = h("p", { class: "chart-readout", "aria-live": "polite", "data-testid": "chart-readout" },
    "Hover over or focus a day to read its balances.");
  const caption = h("figcaption", {},
    `Available balance at the close of each day (${history.time_zone}), in ${currency}.`);
  if (!days.length) {
    return h("figure", { class: "chart" }, caption, h("p", { class: "muted" }, "No days to show yet."));
  }

  const values = days.map((d) => d.available_close);
  const scale = ticks(Math.min(0, ...values), Math.max(0, ...values));
  const low = scale[0];
  const high = scale[scale.length - 1];
  const labels = scale.map((value) => formatMoney(value, currency));
  const left = 12 + CHAR_WIDTH * Math.max(...labels.map((l) => l.length));
  const plotWidth = WIDTH - left - MARGIN.right;
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom;
  // Pixel positions only; the amounts themselves stay integers.
  const y = (value) => MARGIN.top + plotHeight * (high - value) / (high - low);
  const slot = plotWidth / days.length;
  const barWidth = Math.max(2, Math.min(slot * 0.7, 48));

  const svg = s("svg", {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: "group",
    "aria-label": `Daily closing available balance, ${days[0].effective_on} to ${days[days.length - 1].effective_on}`,
    "data-testid": "balance-chart",
  });

  // Grid lines and the y axis labels.
  const yAxis = s("g", { class: "axis y-axis" });
  scale.forEach((value, i) => {
    const at = y(value);
    yAxis.appendChild(s("line", {
      x1: left, x2: WIDTH - MARGIN.right, y1: at, y2: at,
      class: value === 0 ? "zero-line" : "grid-line",
    }));
    yAxis.appendChild(s("text", { x: left - 8, y: at, class: "tick-label", "text-anchor": "end", "dominant-baseline": "middle" },
      labels[i]));
  });
  yAxis.appendChild(s("line", {
    x1: left, x2: left, y1: MARGIN.top, y2: MARGIN.top + plotHeight, class: "axis-line",
  }));
  svg.appendChild(yAxis);

  // The x axis: the first and last days and a few between them.
  const xAxis = s("g", { class: "axis x-axis" });
  xAxis.appendChild(s("line", {
    x1: left, x2: WIDTH - MARGIN.right, y1: MARGIN.top + plotHeight, y2: MARGIN.top + plotHeight,
    class: "axis-line",
  }));
  const every = Math.max(1, Math.ceil(days.length / Math.max(1, Math.floor(plotWidth / X_LABEL_ROOM))));
  days.forEach((day, i) => {
    if (i % every !== 0 && i !== days.length - 1) return;
    if (i !== days.length - 1 && days.length - 1 - i < every / 2) return;
    xAxis.appendChild(s("text", {
      x: left + slot * (i + 0.5), y: MARGIN.top + plotHeight + 18,
      class: "tick-label", "text-anchor": "middle",
    }, day.effective_on.slice(5)));
  });
  xAxis.appendChild(s("text", {
    x: left + plotWidth / 2, y: HEIGHT - 6, class: "axis-title", "text-anchor": "middle",
  }, `Day (${history.time_zone}, month-day)`));
  svg.appendChild(xAxis);

  // One focusable group per day: a transparent hit area over the whole slot and the bar.
  const bars = s("g", { class: "bars" });
  let selected = null;
  const show = (group, day) => {
    if (selected) selected.classList.remove("selected");
    selected = group;
    group.classList.add("selected");
    readout.textContent = describeDay(day, currency);
  };
  days.forEach((day, i) => {
    const value = day.available_close;
    const top = Math.min(y(value), y(0));
    const height = Math.max(1, Math.abs(y(value) - y(0)));
    const text = describeDay(day, currency);
    const group = s("g", {
      class: value < 0 ? "day negative" : "day",
      tabindex: "0",
      role: "img",
      "aria-label": text,
      "data-testid": "chart-day",
      "data-day": day.effective_on,
      "data-available-close": String(value),
    },
    s("title", {}, text),
    s("rect", { class: "hit", x: left + slot * i, y: MARGIN.top, width: slot, height: plotHeight }),
    s("rect", { class: "bar", x: left + slot * (i + 0.5) - barWidth / 2, y: top, width: barWidth, height }));
    group.addEventListener("mouseenter", () => show(group, day));
    group.addEventListener("focus", () => show(group, day));
    bars.appendChild(group);
  });
  svg.appendChild(bars);

  return h("figure", { class: "chart" }, caption, h("div", { class: "chart-frame" }, svg), readout);
}
