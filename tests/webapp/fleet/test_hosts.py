"""The Workers page groups workers by host, and says for each host whether it can use the artifact store, how big
its cache is, and whether it agrees with the web on what every host must share (the secret key, the store)."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from webapp.fleet.deployment import deployment_differences, deployment_report, deployment_settings
from webapp.fleet.models import Worker

pytestmark = pytest.mark.django_db


def a_worker(name: str, host: str, deployment: dict) -> Worker:
    now = timezone.now()
    return Worker.objects.create(name=name, host=host, pid=7, queues=["gpu"], started_at=now, seen_at=now,
                                 deployment=deployment)  # fmt: skip


def test_each_host_shows_its_store_its_cache_and_what_it_disagrees_on(client_for, alice, settings, tmp_path):
    agreeing = {**deployment_report(with_cache_size=False), "cache_bytes": 5_000_000}
    a_worker("gpu-0@a", "host-a#1", agreeing)
    a_worker("gpu-1@a", "host-a#1", agreeing)
    unreachable = "s3://other/bucket cannot be written: EndpointConnectionError"
    a_worker("gpu-0@b", "host-b#9", {"store": "s3://other/bucket", "secret": "0123456789ab", "cache_bytes": 0,
                                     "store_problem": unreachable})  # fmt: skip

    page = client_for(alice).get(reverse("workers")).content.decode()
    host_a = page.split('data-host="host-a#1"')[1].split("</tr>")[0]
    host_b = page.split('data-host="host-b#9"')[1].split("</tr>")[0]
    assert "2 live of 2" in host_a and "reachable" in host_a and "4.8\xa0MB" in host_a and ">yes<" in host_a
    assert "unreachable" in host_b
    assert "its DJANGO_SECRET_KEY differs from the web&#x27;s" in host_b
    assert "its artifact store is s3://other/bucket" in host_b and "EndpointConnectionError" in host_b


def test_a_host_report_sees_an_unusable_store_and_measures_its_cache(settings, tmp_path):
    (tmp_path / "cache" / "models").mkdir(parents=True)
    (tmp_path / "cache" / "models" / "weights").write_bytes(b"x" * 1234)
    settings.CACHE_DIR = tmp_path / "cache"
    report = deployment_report()
    assert report["store_problem"] == "" and report["cache_bytes"] == 1234
    assert deployment_differences(report) == []

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the store's folder should be")
    settings.ARTIFACTS_URL = blocked.as_uri()
    report = deployment_report(with_cache_size=False)
    assert "cannot be written" in report["store_problem"]
    assert deployment_differences(report, {**deployment_settings(), "store": "file:///elsewhere"})[0].startswith(
        "its artifact store is"
    )


def test_the_secret_is_never_reported_only_a_fingerprint_of_it(settings):
    settings.SECRET_KEY = "s3cr3t-" * 8
    shown = deployment_settings()["secret"]
    assert "s3cr3t" not in shown and len(shown) == 12
    settings.SECRET_KEY = "another-" * 8
    assert deployment_settings()["secret"] != shown
