// The platform page (#/platform): the platform the key belongs to and a form that sets its
// reporting time zone, which the balance history needs to count days.

import { call } from "./api.js";
import { h, replace, field, handleSubmit, definitionList, section, pageHeading, errorBox, noticeBox, formatTime } from "./dom.js";

/** The IANA time zones the browser knows, for the input's suggestions. */
function knownTimeZones() {
  try {
    return Intl.supportedValuesOf("timeZone");
  } catch (_) {
    return [];
  }
}

export function platformPage(ctx) {
  const facts = h("div");
  const zone = h("input", { type: "text", name: "reporting_time_zone", autocomplete: "off", maxlength: "64", required: true, list: "time-zones" });
  const zones = h("datalist", { id: "time-zones" }, knownTimeZones().map((z) => h("option", { value: z })));
  const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const form = h("form", { class: "card", novalidate: true },
    field("Reporting time zone", zone, `An IANA name such as America/New_York; this browser's is ${browserZone}.`),
    zones,
    h("button", { type: "submit" }, "Save time zone"));
  replace(ctx.main,
    pageHeading(ctx, "Platform", "The platform (tenant) that the API key belongs to."),
    section("Settings", facts),
    section("Time zone", h("p", {}, "Bank account history counts days in the platform's reporting time zone."), form));

  function show(platform) {
    replace(facts, definitionList([
      ["Name", platform.name],
      ["Id", h("code", {}, platform.id)],
      ["Reporting time zone", h("span", { "data-testid": "reporting-time-zone" }, platform.reporting_time_zone || "not set")],
      ["Additional requirements", platform.additional_requirements.length
        ? platform.additional_requirements.map((f) => `${f.name} (${f.type}${f.required ? ", required" : ""})`).join(", ")
        : "none"],
      ["Created", formatTime(platform.created_at)],
      ["Updated", formatTime(platform.updated_at)],
    ]));
    // Never over what the user is typing: the answer may arrive after they began.
    if (!zone.dataset.edited) zone.value = platform.reporting_time_zone || browserZone;
  }
  zone.addEventListener("input", () => { zone.dataset.edited = "yes"; });

  handleSubmit(form, async () => {
    // PATCH /platform declares no Idempotency-Key; setting the same zone twice is harmless.
    const platform = await call("PATCH", "/platform", { body: { reporting_time_zone: zone.value.trim() }, signal: ctx.signal });
    show(platform);
    return noticeBox(`The reporting time zone is ${platform.reporting_time_zone}.`);
  });

  call("GET", "/platform", { signal: ctx.signal }).then(show, (error) => {
    if (error && error.name === "AbortError") return;
    replace(facts, errorBox(error));
  });
}
