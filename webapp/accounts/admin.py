"""Admin for superusers only: team members manage their teams through the app's own pages."""

from __future__ import annotations

from django.contrib import admin

from webapp.accounts.models import Membership, Team


class SuperuserOnlyAdmin(admin.ModelAdmin):
    def has_module_permission(self, request) -> bool:
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request, obj=None) -> bool:
        return request.user.is_active and request.user.is_superuser

    has_change_permission = has_view_permission
    has_add_permission = has_view_permission
    has_delete_permission = has_view_permission


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Team)
class TeamAdmin(SuperuserOnlyAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(SuperuserOnlyAdmin):
    list_display = ["user", "team", "role", "created_at"]
    list_filter = ["role", "team"]
    search_fields = ["user__username", "team__name"]
