from __future__ import annotations

import pytest


@pytest.mark.django_db(transaction=True)
def test_healthz_reports_every_part_ok_with_a_real_worker(client, live_worker):
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 200, body
    assert body["database"]["ok"] and body["redis"]["ok"] and body["worker"]["ok"]
    assert "test-worker" in body["worker"]["detail"]


@pytest.mark.django_db
def test_healthz_is_503_when_redis_is_down(client, settings, tmp_path):
    settings.REDIS_URL = f"unix://{tmp_path}/nothing-here.sock"
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["redis"]["ok"] is False
    assert body["worker"]["ok"] is False
    assert body["database"]["ok"] is True


def test_login_page_renders(client, db):
    response = client.get("/login/")
    assert response.status_code == 200
    assert b"Log in to Trainyard" in response.content
