from __future__ import annotations

from functools import cache

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password

from apps.workspaces.models import Membership, Role, Workspace, WorkspaceSettings

PASSWORD = "correct-horse-battery"


@cache
def _password_hash() -> str:
    # Hashed once per session: the real hasher costs ~0.5 s a call by design.
    return make_password(PASSWORD)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.LazyFunction(_password_hash)


class WorkspaceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Workspace
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Workspace {n}")
    slug = factory.Sequence(lambda n: f"ws-{n}")
    settings = factory.RelatedFactory("tests.factories.WorkspaceSettingsFactory", factory_related_name="workspace")


class WorkspaceSettingsFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = WorkspaceSettings


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    workspace = factory.SubFactory(WorkspaceFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.MEMBER
