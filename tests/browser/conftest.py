"""Fixtures of the console's browser tests: the bankd under test, Debian's Chromium through
Playwright, a page that records Content-Security-Policy violations and script errors, the
local webhook receivers, and a screenshot in target/console-artifacts/ of a failing test's page.

Run by scripts/console-browser, which starts bankd and sets BANKD_URL, BANKD_KEY, AXE_JS and
CONSOLE_BACKEND (a label for the artifacts).
"""

import base64
import json
import os
import pathlib
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect, sync_playwright

from receivers import Receiver

ROOT = pathlib.Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "target" / "console-artifacts"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
BACKEND = os.environ.get("CONSOLE_BACKEND", "local")

# Waits of the assertions: webhook attempts and the feed's polling take seconds.
expect.set_options(timeout=15_000)


class Api:
    """The public API, called from the test (setup and cross-checks, never what is asserted on
    the page)."""

    def __init__(self, url, key):
        self.url = url
        self.key = key

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", "Basic " + base64.b64encode(f":{self.key}".encode()).decode())
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read()
        return json.loads(text) if text else None


@pytest.fixture(scope="session")
def api():
    return Api(os.environ["BANKD_URL"], os.environ["BANKD_KEY"])


@pytest.fixture(scope="session")
def console_url(api):
    return api.url + "/console/"


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        yield browser
        browser.close()


class PageLog:
    """What the page reported: CSP violations and uncaught errors fail a test; failed loads
    (the 401 of a wrong key) are expected and kept for the failure report only."""

    def __init__(self):
        self.violations = []
        self.errors = []
        self.other = []

    def on_console(self, message):
        text = message.text
        if "Content Security Policy" in text or "Refused to" in text:
            self.violations.append(text)
        elif message.type == "error":
            self.other.append(text)

    def on_page_error(self, error):
        self.errors.append(str(error))


@pytest.fixture
def page(browser, request):
    """A page in its own context, under the server's real CSP; the test fails on any CSP
    violation or uncaught script error."""
    context = browser.new_context(viewport={"width": 1440, "height": 900}, locale="en-US", timezone_id="UTC")
    page = context.new_page()
    log = PageLog()
    page.on("console", log.on_console)
    page.on("pageerror", log.on_page_error)
    page.log = log
    request.node.console_page = page
    yield page
    context.close()
    assert not log.violations, f"Content-Security-Policy violations: {log.violations}"
    assert not log.errors, f"uncaught script errors: {log.errors}"


@pytest.fixture
def receivers():
    ok = Receiver()
    refusing = Receiver(refusing=True)
    yield ok, refusing
    ok.close()
    refusing.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    page = getattr(item, "console_page", None)
    if page is None or page.is_closed():
        return
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    stem = ARTIFACTS / f"{BACKEND}-{item.name}"
    try:
        page.screenshot(path=f"{stem}.png", full_page=True)
        stem.with_suffix(".url").write_text(page.url + "\n")
        report.sections.append(("console artifacts", f"screenshot: {stem}.png"))
    except Exception as error:  # the report must not fail for want of a screenshot
        report.sections.append(("console artifacts", f"no screenshot: {error}"))
