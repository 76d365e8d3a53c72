from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics, mixins, serializers, status
from rest_framework.response import Response

from apps.core import strict
from apps.core.api import error_responses
from apps.core.credentials import WorkspaceCredential
from apps.core.errors import ApplicationError
from apps.workspaces import services
from apps.workspaces.api_base import WorkspaceAPIView, refuse_unwanted_body
from apps.workspaces.models import Invitation, InvitationStatus, Membership, Role
from apps.workspaces.selectors import (
    invitation_get,
    invitation_list,
    invitation_list_for_user,
    membership_get,
    membership_list,
    membership_list_for_user,
    settings_get,
)
from apps.workspaces.services import SETTINGS
from apps.workspaces.tenancy import resolve_key_membership


class WorkspaceSerializer(serializers.Serializer):
    """A workspace as the caller sees it: from a membership, or from an API key's standing."""

    id = serializers.UUIDField(source="workspace.id", read_only=True)
    name = serializers.CharField(source="workspace.name", read_only=True)
    slug = serializers.SlugField(source="workspace.slug", read_only=True)
    role = serializers.ChoiceField(choices=Role.choices, read_only=True, help_text="your role (or your API key's) in it")
    created_at = serializers.DateTimeField(source="workspace.created_at", read_only=True)


class WorkspaceCreateSerializer(serializers.Serializer):
    name = strict.TextField(max_length=120, one_line=True)
    slug = strict.SlugField(max_length=60, required=False, allow_blank=True, help_text="made from the name when empty")


class WorkspaceListCreateAPI(generics.GenericAPIView):
    """Your workspaces (an API key: its own), and new ones (people only: the creator owns it)."""

    serializer_class = WorkspaceSerializer

    def get_queryset(self):
        if isinstance(self.request.auth, WorkspaceCredential):
            return [resolve_key_membership(self.request.auth, workspace_id=self.request.auth.workspace_id)]
        return membership_list_for_user(user=self.request.user)

    @extend_schema(responses={200: WorkspaceSerializer(many=True)} | error_responses())
    def get(self, request):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(WorkspaceSerializer(page, many=True).data)

    @extend_schema(request=WorkspaceCreateSerializer, responses={201: WorkspaceSerializer} | error_responses(400, 403))
    def post(self, request):
        if isinstance(request.auth, WorkspaceCredential):
            raise ApplicationError("An API key belongs to one workspace and cannot create others.", status=403, code="permission_denied")
        incoming = WorkspaceCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        workspace = services.workspace_create(owner=request.user, **incoming.validated_data)
        owner = Membership.objects.select_related("workspace").get(workspace=workspace, user=request.user)
        return Response(WorkspaceSerializer(owner).data, status=status.HTTP_201_CREATED)


class WorkspaceDetailAPI(WorkspaceAPIView):
    serializer_class = WorkspaceSerializer

    @extend_schema(responses={200: WorkspaceSerializer} | error_responses())
    def get(self, request, workspace_id):
        return Response(WorkspaceSerializer(request.membership).data)


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    email = serializers.EmailField(source="user.email", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "username", "email", "role", "created_at"]
        read_only_fields = fields


class MemberInviteSerializer(serializers.Serializer):
    identifier = strict.TextField(
        max_length=254, one_line=True, help_text="username or e-mail of the person to invite; never checked against the accounts"
    )
    role = strict.ChoiceField(choices=Role.choices, default=Role.MEMBER, help_text="the role they get when they accept")


class InvitationSerializer(serializers.ModelSerializer):
    """A pending invitation as the workspace's admins see it."""

    invited_by = serializers.CharField(source="invited_by.username", read_only=True, allow_null=True, default=None)
    status = serializers.ChoiceField(choices=InvitationStatus.choices, read_only=True)

    class Meta:
        model = Invitation
        fields = ["id", "identifier", "role", "status", "invited_by", "created_at"]
        read_only_fields = fields


class MemberRoleSerializer(serializers.Serializer):
    role = strict.ChoiceField(choices=Role.choices)


class MemberListCreateAPI(WorkspaceAPIView):
    """Members of the workspace (admins and owners); POST invites someone, who joins only by
    accepting (202, the same answer whether or not anyone holds the username or e-mail)."""

    read_operation = write_operation = "manage_members"
    serializer_class = MemberSerializer

    def get_queryset(self):
        return membership_list(workspace=self.request.workspace)

    @extend_schema(responses={200: MemberSerializer(many=True)} | error_responses(403))
    def get(self, request, workspace_id):
        return self.list(request)

    @extend_schema(request=MemberInviteSerializer, responses={202: InvitationSerializer} | error_responses(400, 403))
    def post(self, request, workspace_id):
        incoming = MemberInviteSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        invited = services.invitation_create(workspace=request.workspace, actor=request.membership, **incoming.validated_data)
        return Response(InvitationSerializer(invited).data, status=status.HTTP_202_ACCEPTED)


class MemberDetailAPI(WorkspaceAPIView):
    """One member: read, change the role (PATCH), remove (DELETE). Only an owner touches owners."""

    read_operation = write_operation = "manage_members"
    serializer_class = MemberSerializer

    @extend_schema(responses={200: MemberSerializer} | error_responses(403))
    def get(self, request, workspace_id, membership_id):
        found = membership_get(workspace=request.workspace, membership_id=membership_id)
        return Response(MemberSerializer(found).data)

    @extend_schema(request=MemberRoleSerializer, responses={200: MemberSerializer} | error_responses(400, 403))
    def patch(self, request, workspace_id, membership_id):
        incoming = MemberRoleSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        changed = services.membership_change_role(
            workspace=request.workspace, actor=request.membership, membership_id=membership_id, role=incoming.validated_data["role"]
        )
        return Response(MemberSerializer(changed).data)

    @extend_schema(responses={204: None} | error_responses(400, 403))
    def delete(self, request, workspace_id, membership_id):
        services.membership_remove(workspace=request.workspace, actor=request.membership, membership_id=membership_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvitationListAPI(WorkspaceAPIView):
    """The workspace's pending invitations (admins and owners)."""

    read_operation = write_operation = "manage_members"
    serializer_class = InvitationSerializer

    def get_queryset(self):
        return invitation_list(workspace=self.request.workspace)

    @extend_schema(responses={200: InvitationSerializer(many=True)} | error_responses(403))
    def get(self, request, workspace_id):
        return self.list(request)


class InvitationDetailAPI(WorkspaceAPIView):
    """One pending invitation: read, revoke (DELETE). Only an owner revokes an invitation to be an owner."""

    read_operation = write_operation = "manage_members"
    serializer_class = InvitationSerializer

    @extend_schema(responses={200: InvitationSerializer} | error_responses(403))
    def get(self, request, workspace_id, invitation_id):
        found = invitation_get(workspace=request.workspace, invitation_id=invitation_id)
        return Response(InvitationSerializer(found).data)

    @extend_schema(responses={204: None} | error_responses(403))
    def delete(self, request, workspace_id, invitation_id):
        services.invitation_revoke(workspace=request.workspace, actor=request.membership, invitation_id=invitation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class WorkspaceLeaveAPI(WorkspaceAPIView):
    """You leave the workspace (any role; not its last owner). An API key is no member: 403."""

    write_operation = "leave"
    takes_body = False

    @extend_schema(request=None, responses={204: None} | error_responses(400, 403))
    def post(self, request, workspace_id):
        services.membership_leave(workspace=request.workspace, actor=request.membership)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PersonAPIView(generics.GenericAPIView):
    """An endpoint of the person calling, across workspaces: a workspace API key is no person (403)."""

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        refuse_unwanted_body(request, wanted=False)  # whoever sends it: no endpoint here reads a body
        if isinstance(request.auth, WorkspaceCredential):
            raise ApplicationError("An API key belongs to a workspace, not a person: it has no invitations.", status=403, code="forbidden")


class WorkspaceRefSerializer(serializers.Serializer):
    id = serializers.UUIDField(read_only=True)
    name = serializers.CharField(read_only=True)
    slug = serializers.SlugField(read_only=True)


class MyInvitationSerializer(serializers.ModelSerializer):
    """A pending invitation addressed to you (by your username or e-mail)."""

    workspace = WorkspaceRefSerializer(read_only=True)
    invited_by = serializers.CharField(source="invited_by.username", read_only=True, allow_null=True, default=None)

    class Meta:
        model = Invitation
        fields = ["id", "workspace", "identifier", "role", "invited_by", "created_at"]
        read_only_fields = fields


class MyInvitationListAPI(PersonAPIView):
    """Your pending invitations, in every workspace."""

    serializer_class = MyInvitationSerializer

    def get_queryset(self):
        return invitation_list_for_user(user=self.request.user)

    @extend_schema(responses={200: MyInvitationSerializer(many=True)} | error_responses(403))
    def get(self, request):
        return mixins.ListModelMixin.list(self, request)


class MyInvitationAcceptAPI(PersonAPIView):
    """Accept an invitation addressed to you: you join its workspace with its role (201)."""

    serializer_class = WorkspaceSerializer

    @extend_schema(request=None, responses={201: WorkspaceSerializer} | error_responses(400, 403))
    def post(self, request, invitation_id):
        membership = services.invitation_accept(user=request.user, invitation_id=invitation_id)
        return Response(WorkspaceSerializer(membership).data, status=status.HTTP_201_CREATED)


class MyInvitationDeclineAPI(PersonAPIView):
    """Decline an invitation addressed to you (204); the workspace is not told who you are."""

    serializer_class = MyInvitationSerializer

    @extend_schema(request=None, responses={204: None} | error_responses(403))
    def post(self, request, invitation_id):
        services.invitation_decline(user=request.user, invitation_id=invitation_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _settings_fields() -> dict:
    kinds = {bool: strict.BooleanField, int: strict.IntegerField, float: strict.FloatField, str: strict.TextField}
    fields = {}
    for name, setting in SETTINGS.items():
        bounds = {"max_length": 60, "one_line": True} if setting.kind is str else {"min_value": setting.low, "max_value": setting.high}
        bounds = {} if setting.kind is bool else bounds
        fields[name] = kinds[setting.kind](required=False, help_text=setting.help or setting.label, **bounds)
    return fields


# One field per changeable setting, with its type and range, for the schema and for reading.
WorkspaceSettingsSerializer = type("WorkspaceSettingsSerializer", (serializers.Serializer,), {"__module__": __name__, **_settings_fields()})


class SettingsAPI(WorkspaceAPIView):
    """The workspace's pipeline settings: everyone reads them; owners and admins PATCH them with
    the settings page's validation, and each change is audited from → to."""

    serializer_class = WorkspaceSettingsSerializer
    write_operation = "manage_settings"

    @extend_schema(responses={200: WorkspaceSettingsSerializer} | error_responses())
    def get(self, request, workspace_id):
        return Response(WorkspaceSettingsSerializer(settings_get(workspace=request.workspace)).data)

    @extend_schema(request=WorkspaceSettingsSerializer, responses={200: WorkspaceSettingsSerializer} | error_responses(400, 403))
    def patch(self, request, workspace_id):
        if not isinstance(request.data, dict):
            raise ApplicationError("Send a JSON object of the settings to change.")
        options = services.settings_update(workspace=request.workspace, actor=request.membership, changes=dict(request.data))
        return Response(WorkspaceSettingsSerializer(options).data)
