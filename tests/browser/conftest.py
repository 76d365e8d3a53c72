"""Browser fixtures: Debian's headless Chromium through Playwright, one browser per test
module, a fresh context per test, against pytest-django's live server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = Path(__file__).resolve().parent.parent / "screenshots"
# The README's images, redrawn by the browser tests that reach their pages, so they show the
# product as it is; a fixed width and a capped height keep them alike from run to run and small.
README_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
README_WIDTH = 1200
README_MAX_HEIGHT = 1400


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing; run scripts/install-browser.sh")
    # Playwright's sync API keeps an asyncio loop running on this thread, which Django's
    # async-safety check would mistake for an async context around every ORM call the
    # tests and their fixtures make here. The live server answers from its own thread.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def context(browser: Browser, live_server) -> Iterator[BrowserContext]:
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    yield context
    context.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


def screenshot(page: Page, request: pytest.FixtureRequest, suffix: str = "") -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{request.node.name}{suffix}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def readme_screenshot(page: Page, name: str, until: str) -> Path:
    """docs/images/<name>.png: the page from its top down to the end of the element `until`
    (a CSS selector), README_WIDTH wide and at most README_MAX_HEIGHT tall."""
    README_IMAGES.mkdir(parents=True, exist_ok=True)
    path = README_IMAGES / f"{name}.png"
    viewport = page.viewport_size or {"width": 1280, "height": 900}
    page.set_viewport_size({"width": README_WIDTH, "height": viewport["height"]})
    try:
        box = page.locator(until).first.bounding_box()
        assert box, f"{until} is not shown on {page.url}"
        bottom = box["y"] + box["height"] + page.evaluate("window.scrollY") + 16
        height = min(round(bottom), README_MAX_HEIGHT)
        page.screenshot(path=str(path), full_page=True, clip={"x": 0, "y": 0, "width": README_WIDTH, "height": height})
    finally:
        page.set_viewport_size(viewport)
    return path


def log_in(page: Page, username: str, password: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("button", name=f"Log out {username}")).to_be_visible()
