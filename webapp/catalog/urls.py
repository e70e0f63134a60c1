from __future__ import annotations

from django.urls import path

from webapp.catalog import views

app_name = "catalog"

urlpatterns = [
    path("", views.environment_list, name="environment-list"),
    path("new/", views.environment_create, name="environment-create"),
    path("<int:pk>/", views.environment_detail, name="environment-detail"),
    path("<int:pk>/versions/new/", views.version_create, name="version-create"),
    path("<int:pk>/versions/<int:version_pk>/testdrive/", views.version_testdrive, name="version-testdrive"),
    path("<int:pk>/versions/<int:version_pk>/trust/", views.version_trust_check, name="version-trust"),
    path("<int:pk>/versions/<int:version_pk>/settings/", views.version_settings, name="version-settings"),
]
