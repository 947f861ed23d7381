"""The sandbox console (/console) in Chromium, against a running bankd: the security headers,
sign-in and the 401 path, a scenario through every page (entity, account, ACH credit and debit
with the balance and the chart, a held book transfer cleared, the events feed, webhook endpoints
with a succeeding and a refusing receiver, a retry), sign-out, layout at 375 and 1440 px, and
axe-core's serious and critical violations on every page.
"""

import os
import re

from playwright.sync_api import expect

from conftest import ARTIFACTS, BACKEND

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
KEY_ITEM = "bankd.console.api_key"
WRONG_KEY = "test_" + "x" * 32
BOOK_ID = re.compile(r"book_[0-9A-Za-z]{27}")


def sign_in(page, console_url, key):
    page.goto(console_url)
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1, name="Bank accounts")).to_be_visible()


def nav(page, name):
    page.get_by_role("navigation", name="Console").get_by_role("link", name=name, exact=True).click()


def assert_no_horizontal_overflow(page, what):
    sizes = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert sizes[0] <= sizes[1], f"{what}: the page is {sizes[0]} px wide in a {sizes[1]} px window"


def screenshot(page, name):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{BACKEND}-{name}.png"), full_page=True)


def test_console_answers_carry_the_security_headers(page, console_url):
    seen = []
    page.on("response", lambda r: seen.append(r) if "/console" in r.url else None)
    response = page.goto(console_url)
    expect(page.get_by_label("API key")).to_be_visible()
    assert response.status == 200
    served = [r for r in seen if r.status == 200]
    # The page, its style sheet and every script module it imports.
    assert {r.url.rsplit("/", 1)[1] for r in served} >= {"", "console.css", "console.js", "api.js", "chart.js"}
    for r in served:
        headers = r.headers
        assert headers.get("content-security-policy") == CSP, r.url
        assert headers.get("x-frame-options") == "DENY", r.url
        assert headers.get("referrer-policy") == "no-referrer", r.url
        assert headers.get("x-content-type-options") == "nosniff", r.url


def test_a_wrong_key_is_refused_at_sign_in(page, console_url):
    page.goto(console_url)
    page.get_by_label("API key").fill(WRONG_KEY)
    page.get_by_label("API key").press("Enter")
    expect(page.get_by_test_id("error-code")).to_have_text("unauthorized")
    expect(page.get_by_test_id("error-message")).to_contain_text("invalid credentials")
    expect(page.get_by_role("heading", level=1)).to_have_text("bankd sandbox console")
    assert page.url.endswith("#/signin")
    assert page.evaluate("sessionStorage.length") == 0


def test_scenario(page, console_url, api, receivers):
    ok_receiver, refusing_receiver = receivers
    key = api.key
    requests = []
    page.on("request", lambda r: requests.append((r.method, r.url, r.headers)))

    # Sign in: the key is in sessionStorage only.
    sign_in(page, console_url, key)
    assert page.evaluate(f"sessionStorage.getItem('{KEY_ITEM}')") == key
    assert page.evaluate("localStorage.length") == 0
    assert page.evaluate("document.cookie") == ""

    # The history counts days in the platform's time zone: set it on the platform page.
    nav(page, "Platform")
    expect(page.get_by_test_id("reporting-time-zone")).to_have_text("not set")
    page.get_by_label("Reporting time zone").fill("UTC")
    page.get_by_role("button", name="Save time zone").click()
    expect(page.get_by_test_id("reporting-time-zone")).to_have_text("UTC")

    # A business whose name is markup is shown as text, never parsed.
    nav(page, "Entities")
    page.get_by_label("Business name").fill('<img src=x id="injected">Acme')
    page.get_by_role("button", name="Create business").click()
    expect(page.get_by_role("heading", level=1)).to_have_text('<img src=x id="injected">Acme')
    expect(page.locator("#injected")).to_have_count(0)

    # A person, then an account of theirs.
    nav(page, "Entities")
    person = page.get_by_role("form", name="Create a person")
    person.get_by_label("First name").fill("Ada")
    person.get_by_label("Last name").fill("Lovelace")
    person.get_by_role("button", name="Create person").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Ada Lovelace")
    expect(page.get_by_test_id("verification-status")).to_have_text("VERIFIED")
    upload = page.get_by_role("form", name="Upload a document")
    upload.get_by_label("File", exact=True).set_input_files(
        files=[{"name": "passport.txt", "mimeType": "text/plain", "buffer": b"Ada Lovelace, passport"}])
    upload.get_by_label("Document type").select_option("identity_passport")
    upload.get_by_role("button", name="Upload document").click()
    expect(page.get_by_role("button", name="Download passport.txt")).to_be_visible()
    expect(page.get_by_role("cell", name="identity_passport")).to_be_visible()
    page.get_by_label("Account description").fill("Ada's checking")
    page.get_by_role("button", name="Open bank account").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Ada's checking")
    account_id = page.url.rsplit("/", 1)[1]
    assert account_id.startswith("bacc_")
    expect(page.get_by_test_id("balance-available")).to_have_text("0.00 USD")
    today = page.get_by_test_id("chart-day").last
    expect(today).to_have_attribute("data-available-close", "0")

    # An incoming ACH credit moves the balance and today's bar of the chart.
    simulate = page.get_by_role("form", name="Simulate incoming ACH")
    simulate.get_by_label("Amount (USD)").fill("1234.56")
    simulate.get_by_role("button", name="Receive ACH credit").click()
    expect(simulate.get_by_role("status")).to_contain_text("COMPLETED")
    expect(page.get_by_test_id("balance-available")).to_have_text("1,234.56 USD")
    today = page.get_by_test_id("chart-day").last
    expect(today).to_have_attribute("data-available-close", "123456")
    expect(today).to_have_attribute("aria-label", re.compile(r"available 1,234\.56 USD"))
    today.focus()
    expect(page.get_by_test_id("chart-readout")).to_contain_text("available 1,234.56 USD")
    # The y axis is labelled in the account's currency.
    expect(page.get_by_test_id("balance-chart").locator("text.tick-label").first).to_contain_text("USD")

    # And a debit takes money out.
    simulate.get_by_label("Amount (USD)").fill("34.56")
    simulate.get_by_role("button", name="Receive ACH debit").click()
    expect(page.get_by_test_id("balance-available")).to_have_text("1,200.00 USD")
    expect(page.get_by_test_id("chart-day").last).to_have_attribute("data-available-close", "120000")

    # An amount with more decimals than the currency has is refused before any request.
    transfer = page.get_by_role("form", name="Book transfer")
    transfer.get_by_label("Amount (USD)").fill("1.234")
    transfer.get_by_role("button", name="Send transfer").click()
    expect(transfer.get_by_role("alert")).to_contain_text("2 decimal places")

    # A held book transfer to the program reserve, then cleared.
    reserve = api.call("GET", "/bank-accounts?type=PROGRAM_RESERVE")["bank_accounts"][0]["id"]
    transfer.get_by_label("Receiver account").select_option(reserve)
    transfer.get_by_label("Amount (USD)").fill("200")
    transfer.get_by_label("Place on hold (clear or cancel it later)").check()
    # The first answer is lost on its way back (the server did make the transfer): sending the
    # form again reuses its Idempotency-Key, and the server replays the transfer it made.
    sent = []

    def lose_first_answer(route):
        sent.append(route.request.headers.get("idempotency-key"))
        if len(sent) == 1:
            route.fetch()
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route("**/transfers/book", lose_first_answer)
    transfer.get_by_role("button", name="Send transfer").click()
    expect(transfer.get_by_test_id("error-code")).to_have_text("network_error")
    transfer.get_by_role("button", name="Send transfer").click()
    expect(transfer.get_by_role("status")).to_contain_text("HOLD")
    page.unroute("**/transfers/book")
    assert len(sent) == 2 and sent[0] and sent[0] == sent[1], sent
    transfer_id = BOOK_ID.search(transfer.get_by_role("status").inner_text()).group(0)
    expect(page.get_by_test_id("balance-available")).to_have_text("1,000.00 USD")
    expect(page.get_by_test_id("balance-holding")).to_have_text("200.00 USD")
    expect(page.get_by_test_id("transfer-status")).to_have_text(["HOLD"])
    # One transfer only, made with that key.
    assert api.call("GET", f"/transfers/book/{transfer_id}")["idempotency_key"] == sent[0]
    assert len(api.call("GET", f"/transfers/book?bank_account_id={account_id}")["transfers"]) == 1
    page.get_by_role("button", name=f"Clear transfer {transfer_id}").click()
    expect(page.get_by_test_id("transfer-status")).to_have_text(["COMPLETED"])
    expect(page.get_by_test_id("balance-holding")).to_have_text("0.00 USD")
    expect(page.get_by_test_id("balance-available")).to_have_text("1,000.00 USD")
    screenshot(page, "account-1440")
    page.get_by_role("heading", level=1).scroll_into_view_if_needed()
    page.get_by_test_id("chart-day").last.hover()
    page.screenshot(path=str(ARTIFACTS / f"{BACKEND}-account-1440-top.png"))

    # At 375 px the account page still fits the window.
    page.set_viewport_size({"width": 375, "height": 812})
    expect(page.get_by_test_id("balance-available")).to_be_visible()
    assert_no_horizontal_overflow(page, "account page at 375 px")
    screenshot(page, "account-375")
    page.set_viewport_size({"width": 1440, "height": 900})
    assert_no_horizontal_overflow(page, "account page at 1440 px")

    # The events feed shows both events of the transfer, and an event's JSON as text.
    nav(page, "Events")
    held = page.locator('[data-testid=event][data-event-type="book.transfer.hold_created"]')
    completed = page.locator('[data-testid=event][data-event-type="book.transfer.completed"]')
    expect(held).to_have_count(1)
    expect(completed).to_have_count(1)
    held.locator("summary").click()
    expect(held.locator("pre")).to_contain_text(f'"id": "{transfer_id}"')
    expect(held.locator("pre")).to_contain_text('"status": "HOLD"')
    # It follows new events without a reload.
    entity_events = page.locator('[data-testid=event][data-event-type="entity.created"]')
    before = entity_events.count()
    assert before >= 2  # the business and Ada
    api.call("POST", "/entities/person", {"first_name": "Alan", "last_name": "Turing"})
    expect(entity_events).to_have_count(before + 1)
    expect(entity_events.first.locator("pre")).to_contain_text('"name": "Alan Turing"')
    # The type filter.
    page.get_by_label("Event type").select_option("book.transfer.hold_created")
    expect(page.get_by_test_id("event")).to_have_count(1)
    expect(held).to_have_count(1)
    page.set_viewport_size({"width": 375, "height": 812})
    assert_no_horizontal_overflow(page, "events page at 375 px")
    page.set_viewport_size({"width": 1440, "height": 900})

    # Webhook endpoints: one on a receiver that answers 200, one on a receiver that refuses
    # entity.created events until it recovers.
    nav(page, "Webhooks")
    register = page.get_by_role("form", name="Register a webhook endpoint")
    register.get_by_label("URL").fill(ok_receiver.url)
    register.get_by_role("button", name="Register endpoint").click()
    secret = register.get_by_test_id("secret-once")
    expect(secret).to_have_text(re.compile(r"^whsec_[A-Za-z0-9+/]{43}=$"))
    first_secret = secret.inner_text()
    register.get_by_label("URL").fill(refusing_receiver.url)
    register.get_by_label("Event types (optional)").fill("entity.created")
    register.get_by_role("button", name="Register endpoint").click()
    expect(register.get_by_test_id("secret-once")).not_to_have_text(first_secret)
    refusing_secret = register.get_by_test_id("secret-once").inner_text()
    expect(page.get_by_role("link", name=refusing_receiver.url)).to_be_visible()

    # An event for both: a person created through the console.
    nav(page, "Entities")
    person = page.get_by_role("form", name="Create a person")
    person.get_by_label("First name").fill("Grace")
    person.get_by_label("Last name").fill("Hopper")
    person.get_by_role("button", name="Create person").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Grace Hopper")

    # The good receiver's delivery succeeds.
    nav(page, "Webhooks")
    # The secrets are shown once, right after the create; not in the list.
    expect(page.get_by_role("link", name=ok_receiver.url)).to_be_visible()
    assert first_secret not in page.content() and refusing_secret not in page.content()
    page.get_by_role("link", name=ok_receiver.url).click()
    expect(page.get_by_test_id("delivery-status").first).to_have_text("succeeded")
    expect(page.get_by_test_id("delivery-response").first).to_have_text("200")
    assert ok_receiver.answered(200)

    # The refusing receiver's attempts fail (the server makes two), with their error.
    nav(page, "Webhooks")
    page.get_by_role("link", name=refusing_receiver.url).click()
    statuses = page.get_by_test_id("delivery-status")
    expect(statuses).to_have_text(["failed", "failed"])
    expect(page.get_by_test_id("delivery-response")).to_have_text(["500", "500"])
    expect(page.get_by_test_id("delivery-error")).to_have_text(["the receiver answered HTTP 500"] * 2)
    assert len(refusing_receiver.answered(500)) == 2
    screenshot(page, "webhook-failed")

    # Once the receiver recovers, a retry succeeds.
    refusing_receiver.recover()
    page.get_by_role("button", name=re.compile(r"^Retry event evnt_\w+ \(attempt 2\)$")).click()
    expect(page.get_by_role("status")).to_contain_text("pending")
    expect(statuses.first).to_have_text("succeeded")
    expect(page.get_by_test_id("delivery-response").first).to_have_text("200")
    assert refusing_receiver.answered(200)

    # Disable it, and rotate its secret (shown once).
    page.get_by_role("button", name="Disable endpoint").click()
    expect(page.get_by_test_id("endpoint-state")).to_have_text("disabled")
    page.get_by_role("button", name="Rotate secret").click()
    expect(page.get_by_test_id("secret-once")).to_have_text(re.compile(r"^whsec_"))
    expect(page.get_by_test_id("secret-once")).not_to_have_text(refusing_secret)

    # The key never went into a URL; the writes that declare an Idempotency-Key sent one, the
    # others none.
    assert not [url for _, url, _ in requests if key in url]
    writes = [(url.split("?")[0].replace(api.url, ""), headers) for method, url, headers in requests
              if method in ("POST", "PATCH")]
    declared = ("/entities/person", "/entities/business", "/bank-accounts", "/transfers/book", "/documents")
    for path, headers in writes:
        assert ("idempotency-key" in headers) == (path in declared), (path, headers.get("idempotency-key"))
    assert {path for path, _ in writes} >= {"/entities/person", "/simulate/receive-ach-credit", "/webhook-endpoints", "/platform"}

    # Sign out: the key is gone and the pages ask for it again.
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("API key")).to_be_visible()
    expect(page.get_by_role("status")).to_contain_text("signed out")
    assert page.evaluate("sessionStorage.length") == 0
    page.goto(console_url + "#/accounts")
    expect(page.get_by_label("API key")).to_be_visible()

    # A 401 in the middle of a session (a key the server no longer takes) signs out too.
    # The wrong key goes in once no request of the page is left in flight: the accounts page
    # loads its owners' names after its table, and a 401 to one of those would sign out before
    # the click below, taking the navigation away under it. The platform page sends one request.
    sign_in(page, console_url, key)
    nav(page, "Platform")
    expect(page.get_by_test_id("reporting-time-zone")).to_be_visible()
    page.evaluate(f"sessionStorage.setItem('{KEY_ITEM}', '{WRONG_KEY}')")
    nav(page, "Entities")
    expect(page.get_by_label("API key")).to_be_visible()
    expect(page.get_by_test_id("error-code")).to_have_text("unauthorized")
    assert page.evaluate("sessionStorage.length") == 0


def test_lists_page_with_cursors(page, console_url, api):
    for n in range(1, 12):
        api.call("POST", "/entities/person", {"first_name": "Page", "last_name": f"Person {n:02}"})
    sign_in(page, console_url, api.key)
    nav(page, "Entities")
    table = page.get_by_role("table", name="Entities of the platform, newest first")
    rows = table.locator("tbody tr")
    previous = page.get_by_role("button", name="Previous page")
    following = page.get_by_role("button", name="Next page")
    expect(rows).to_have_count(10)
    expect(rows.first).to_contain_text("Page Person 11")
    expect(previous).to_be_disabled()
    following.click()
    expect(rows.first).to_contain_text("Page Person 01")
    expect(previous).to_be_enabled()
    previous.click()
    expect(rows.first).to_contain_text("Page Person 11")
    expect(rows).to_have_count(10)
    expect(previous).to_be_disabled()


def test_no_serious_accessibility_violations(browser, console_url, api):
    """axe-core on every page. Its script is injected, which the page's CSP forbids, so this
    pass alone runs in a context that bypasses the CSP (the other tests run under it)."""
    entity = api.call("POST", "/entities/person", {"first_name": "Axe", "last_name": "Checker"})
    account = api.call("POST", "/bank-accounts", {"entity_id": entity["id"], "description": "Axe account"})
    api.call("PATCH", "/platform", {"reporting_time_zone": "UTC"})
    api.call("POST", "/simulate/receive-ach-credit", {
        "destination_account_number_id": account["default_account_number_id"], "amount": 5000,
        "company_id": "1234567890", "company_name": "AXE"})
    endpoint = api.call("POST", "/webhook-endpoints", {"url": "http://127.0.0.1:9/axe"})

    context = browser.new_context(bypass_csp=True, viewport={"width": 1440, "height": 900})
    page = context.new_page()
    pages = [
        ("", "API key", None),
        ("#/accounts", "Bank accounts", None),
        (f"#/accounts/{account['id']}", "Axe account", "[data-testid=chart-day]"),
        ("#/entities", "Entities", "table.data tbody tr"),
        (f"#/entities/{entity['id']}", "Axe Checker", "table.data tbody tr"),
        ("#/transfers", "Transfers", None),
        ("#/events", "Events", "[data-testid=event]"),
        ("#/webhooks", "Webhooks", "table.data tbody tr"),
        (f"#/webhooks/{endpoint['id']}", "http://127.0.0.1:9/axe", None),
        ("#/platform", "Platform", "[data-testid=reporting-time-zone]"),
    ]
    failures = []
    try:
        for width in (1440, 375):
            page.set_viewport_size({"width": width, "height": 900})
            for route, ready, selector in pages:
                if route == "":
                    page.goto(console_url)
                    page.evaluate("sessionStorage.clear()")
                    page.reload()
                    expect(page.get_by_label(ready)).to_be_visible()
                else:
                    if page.evaluate("sessionStorage.length") == 0:
                        page.get_by_label("API key").fill(api.key)
                        page.get_by_role("button", name="Sign in").click()
                        expect(page.get_by_role("heading", level=1, name="Bank accounts")).to_be_visible()
                    page.goto(console_url + route)
                    expect(page.get_by_role("heading", level=1)).to_have_text(ready)
                    if selector:
                        expect(page.locator(selector).first).to_be_attached()
                    page.wait_for_timeout(300)
                if route == "#/events":
                    page.locator("[data-testid=event] summary").first.click()
                page.add_script_tag(path=os.environ["AXE_JS"])
                result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
                for violation in result["violations"]:
                    if violation["impact"] in ("serious", "critical"):
                        targets = [n["target"] for n in violation["nodes"]][:5]
                        failures.append(f"{width}px {route or '#/signin'}: {violation['id']} ({violation['impact']}): "
                                        f"{violation['help']} at {targets}")
    finally:
        context.close()
    assert not failures, "axe-core violations:\n" + "\n".join(failures)
