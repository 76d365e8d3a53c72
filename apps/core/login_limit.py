"""Login attempts counted per username and address in Redis, on every login form (`login_guarded`): past LOGIN_MAX_FAILURES within
LOGIN_LOCKOUT_S that pair is refused (429) until the window ends. Guessing one person's password
from one address is stopped; the person can still log in from elsewhere.

The username is counted as Django's login form reads it (stripped, NFKC-normalised, so "ｒｔ＿ｌｏｃｋｍｅ"
is "rt_lockme") and with its case folded: every spelling that reaches one account shares one
budget. Each attempt is counted atomically *before* the password is checked (a success clears
the count), so parallel guesses cannot all slip in before the first failure is recorded."""

from __future__ import annotations

import hashlib
import logging
import unicodedata
from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.forms import UsernameField
from django.core.cache import caches
from django.http import HttpResponse
from django.shortcuts import render

from apps.core.ratelimit import count_hit

log = logging.getLogger(__name__)


def login_username(username: str) -> str:
    """The account a login attempt is for: the login form's own reading of the name (what
    Django looks the user up by), case-folded."""
    read = UsernameField().to_python(username) or ""
    return unicodedata.normalize("NFKC", read.casefold())


def login_key(username: str, address: str) -> str:
    digest = hashlib.sha256(f"{login_username(username)}\0{address}".encode("utf-8", "replace")).hexdigest()[:32]
    return f"login-failures:{digest}"


def login_attempt_allowed(key: str) -> bool:
    """Count this attempt; False once it is past the allowed failures."""
    try:
        return count_hit(key, ttl_s=settings.LOGIN_LOCKOUT_S) <= settings.LOGIN_MAX_FAILURES
    except Exception:  # Redis down: let people log in rather than lock everyone out (healthz reports it)
        log.warning("login limit not checked: the throttle cache is unreachable")
        return True


def login_succeeded(key: str) -> None:
    try:
        caches["throttle"].delete(key)
    except Exception:
        log.warning("login failures not reset: the throttle cache is unreachable")


def login_guarded(request, attempt: Callable[[], HttpResponse]) -> HttpResponse:
    """The one login policy, for every login form (the product's and the admin's): a POST is
    counted for its username and address before `attempt` checks the password; past the limit
    the answer is 429 with the login page and no password is checked; a login that succeeds
    (a redirect with the person now signed in) clears the count."""
    if request.method != "POST":
        return attempt()
    key = login_key(request.POST.get("username", ""), request.META.get("REMOTE_ADDR", ""))
    if not login_attempt_allowed(key):
        return _locked(request)
    response = attempt()
    if response.status_code in (301, 302, 303) and request.user.is_authenticated:
        login_succeeded(key)
    return response


def _locked(request) -> HttpResponse:
    from django.contrib.auth.forms import AuthenticationForm  # needs the apps loaded

    minutes = max(1, settings.LOGIN_LOCKOUT_S // 60)
    message = f"Too many failed attempts for this username. Try again in {minutes} minute(s)."
    # An unbound form: rendering a bound one would validate it, and so check the password.
    context = {"form": AuthenticationForm(request), "locked": message, "next": request.POST.get("next", "")}
    response = render(request, "registration/login.html", context, status=429)
    response["Retry-After"] = str(settings.LOGIN_LOCKOUT_S)
    return response
