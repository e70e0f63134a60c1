from __future__ import annotations

from django.urls import path

from webapp.catalog import views

app_name = "catalog"

urlpatterns = [
    path("", views.environment_list, name="environment-list"),
    path("new/", views.environment_create, name="environment-create"),
    path("catalog.json", views.catalog_json, name="catalog-json"),
    path("catalog/import/", views.catalog_import_start, name="catalog-import"),
    path("<id:pk>/catalog/check/", views.catalog_check, name="catalog-check"),
    path("<id:pk>/catalog/update/", views.catalog_update, name="catalog-update"),
    path("<id:pk>/", views.environment_detail, name="environment-detail"),
    path("<id:pk>/versions/new/", views.version_create, name="version-create"),
    path("<id:pk>/versions/<id:version_pk>/testdrive/", views.version_testdrive, name="version-testdrive"),
    path("<id:pk>/versions/<id:version_pk>/trust/", views.version_trust_check, name="version-trust"),
    path("<id:pk>/versions/<id:version_pk>/settings/", views.version_settings, name="version-settings"),
    path("<id:pk>/versions/<id:version_pk>/assets/", views.version_asset_upload, name="version-asset"),
]
