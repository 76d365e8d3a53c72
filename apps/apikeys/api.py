from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from apps.apikeys.models import KEY_ROLE_CHOICES, ApiKey
from apps.apikeys.selectors import access_apikey, apikey_list
from apps.apikeys.services import apikey_create, apikey_revoke
from apps.core import strict
from apps.core.api import error_responses
from apps.workspaces.api_base import WorkspaceAPIView
from apps.workspaces.models import Role


class ApiKeySerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    active = serializers.BooleanField(read_only=True)

    class Meta:
        model = ApiKey
        fields = ["id", "name", "prefix", "role", "created_at", "created_by", "last_used_at", "revoked_at", "active"]
        read_only_fields = fields


class ApiKeyCreatedSerializer(ApiKeySerializer):
    key = serializers.CharField(read_only=True, help_text="the secret: shown in this response only, stored as a hash")

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "key"]
        read_only_fields = fields


class ApiKeyCreateSerializer(serializers.Serializer):
    name = strict.TextField(max_length=100, one_line=True, help_text="what will use the key, e.g. “CI upload job”")
    role = strict.ChoiceField(choices=KEY_ROLE_CHOICES, default=Role.MEMBER)


class ApiKeyListCreateAPI(WorkspaceAPIView):
    """The workspace's API keys (admins and owners); creating one returns its secret once."""

    read_operation = write_operation = "manage_keys"
    serializer_class = ApiKeySerializer

    def get_queryset(self):
        return apikey_list(workspace=self.request.workspace)

    @extend_schema(responses={200: ApiKeySerializer(many=True)} | error_responses(403))
    def get(self, request, workspace_id):
        return self.list(request)

    @extend_schema(request=ApiKeyCreateSerializer, responses={201: ApiKeyCreatedSerializer} | error_responses(400, 403))
    def post(self, request, workspace_id):
        incoming = ApiKeyCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        key, secret = apikey_create(workspace=request.workspace, actor=request.membership, **incoming.validated_data)
        key.key = secret
        return Response(ApiKeyCreatedSerializer(key).data, status=status.HTTP_201_CREATED)


class ApiKeyDetailAPI(WorkspaceAPIView):
    """One key; DELETE revokes it for good (it stays listed, with `revoked_at`)."""

    read_operation = write_operation = "manage_keys"
    serializer_class = ApiKeySerializer

    @extend_schema(responses={200: ApiKeySerializer} | error_responses(403))
    def get(self, request, workspace_id, key_id):
        return Response(ApiKeySerializer(access_apikey(request.workspace, key_id)).data)

    @extend_schema(responses={204: None} | error_responses(403))
    def delete(self, request, workspace_id, key_id):
        apikey_revoke(workspace=request.workspace, actor=request.membership, key_id=key_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
