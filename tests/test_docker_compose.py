"""docker-compose.yml cannot run here (no registry), so its structure is checked instead."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def load() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_it_has_the_services_of_a_real_deployment():
    assert set(load()["services"]) == {"postgres", "redis", "web", "worker", "beat"}


def test_the_worker_takes_one_gpu_job_at_a_time_on_the_gpu_queue():
    worker = load()["services"]["worker"]
    command = worker["command"]
    assert command[:4] == ["celery", "-A", "workers", "worker"]
    assert command[command.index("-Q") + 1] == "gpu"
    assert command[command.index("-c") + 1] == "1"
    devices = worker["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia" and "gpu" in devices[0]["capabilities"]


def test_app_services_share_one_image_and_the_real_service_urls():
    services = load()["services"]
    for name in ("web", "worker", "beat"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:5432/" in env["DATABASE_URL"]
        assert env["REDIS_URL"] == "redis://redis:6379/0"
        assert services[name]["image"] == "trainyard:latest"
        assert "postgres" in services[name]["depends_on"] and "redis" in services[name]["depends_on"]
    assert "daphne" in " ".join(services["web"]["command"])
    assert services["beat"]["command"][:4] == ["celery", "-A", "workers", "beat"]


def test_the_image_is_built_from_the_repos_dockerfile():
    assert (ROOT / "Dockerfile").exists()
    assert load()["x-app"]["build"] == "."
