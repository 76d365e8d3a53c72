"""An admin creates an API key in the browser, copies it once, and revokes it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from rest_framework.test import APIClient

from tests.browser.conftest import log_in, screenshot

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_admin_creates_a_key_that_is_shown_once_then_revokes_it(personas, password, page, request):
    log_in(page, personas.admin.user.username, password)
    page.goto("/w/acme/documents/")
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name").fill("CI upload job")
    page.get_by_label("Role").select_option("member")
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("code.secret").inner_text()
    screenshot(page, request, "-created")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get(f"/api/v1/workspaces/{personas.workspace_a.pk}/documents/").status_code == 200

    page.goto("/w/acme/api-keys/")
    expect(page.locator("code.secret")).to_have_count(0)
    row = page.locator("tr", has_text="CI upload job")
    expect(row).to_contain_text("Member")
    expect(row).to_contain_text(secret.split("_")[0] + "_" + secret.split("_")[1])
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke CI upload job").click()
    expect(page.get_by_text("revoked: it no longer works")).to_be_visible()
    screenshot(page, request, "-revoked")
    assert client.get(f"/api/v1/workspaces/{personas.workspace_a.pk}/documents/").status_code == 401
