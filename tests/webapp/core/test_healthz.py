from __future__ import annotations

import pytest


@pytest.mark.django_db(transaction=True)
def test_healthz_reports_every_part_ok_with_a_real_worker(client, live_worker):
    from tests.workers.conftest import wait_for

    # The worker's heartbeat row (re)appears within one beat (tests before this one may have flushed the table).
    response = wait_for(lambda: (r := client.get("/healthz")).status_code == 200 and r, timeout=15, what="a beat")
    body = response.json()
    assert body["database"]["ok"] and body["redis"]["ok"] and body["worker"]["ok"]
    assert "test-worker" in body["worker"]["detail"]


@pytest.mark.django_db
def test_healthz_reads_heartbeats_and_names_a_queue_nobody_takes(client):
    from datetime import timedelta

    from django.utils import timezone

    from webapp.fleet.models import Worker

    now = timezone.now()
    Worker.objects.create(name="gpu-0@box", host="box", pid=1, queues=["gpu"], started_at=now, seen_at=now)
    Worker.objects.create(name="cpu@gone", host="gone", pid=2, queues=["default"], started_at=now,
                          seen_at=now - timedelta(minutes=5))  # fmt: skip
    body = client.get("/healthz").json()
    assert body["worker"] == {"ok": False, "detail": "gpu-0@box (no worker takes default)"}
    Worker.objects.filter(name="cpu@gone").update(seen_at=now)
    assert client.get("/healthz").json()["worker"]["ok"] is True


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
