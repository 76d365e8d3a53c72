"""Django's admin under the product's login policy: its login form counts failures in the same
budget as /accounts/login/ (apps.core.login_limit), so a password guessed there is locked
there too, and a person locked on one form is locked on the other."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig as DjangoAdminConfig


class AdminSite(admin.AdminSite):
    def login(self, request, extra_context=None):
        from apps.core.login_limit import login_guarded  # this module loads with the app registry, before the auth models

        return login_guarded(request, lambda: super(AdminSite, self).login(request, extra_context))


class AdminConfig(DjangoAdminConfig):
    default_site = "apps.core.admin_site.AdminSite"
