from __future__ import annotations

from django.contrib import admin

from webapp.accounts.admin import SuperuserOnlyAdmin
from webapp.catalog.models import Environment, EnvironmentVersion, TrustReport


class VersionInline(admin.TabularInline):
    model = EnvironmentVersion
    extra = 0
    fields = ["label", "source_kind", "source_ref", "pinned_ref", "used_at"]
    readonly_fields = fields


@admin.register(Environment)
class EnvironmentAdmin(SuperuserOnlyAdmin):
    list_display = ["name", "slug", "team", "visibility", "created_at"]
    list_filter = ["visibility", "team"]
    search_fields = ["name", "slug"]
    inlines = [VersionInline]


@admin.register(EnvironmentVersion)
class EnvironmentVersionAdmin(SuperuserOnlyAdmin):
    list_display = ["environment", "label", "source_kind", "pinned_ref", "used_at"]
    list_filter = ["source_kind"]
    readonly_fields = ["pinned_ref", "tools", "action_schema", "observation_schema", "state_schema", "used_at"]


@admin.register(TrustReport)
class TrustReportAdmin(SuperuserOnlyAdmin):
    list_display = ["version", "state", "created_at", "finished_at"]
    list_filter = ["state"]
