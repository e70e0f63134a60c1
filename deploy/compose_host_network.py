"""Write a variant of docker-compose.yml for hosts where bridge networks do not work or no registry is reachable.

    python deploy/compose_host_network.py --image trainyard:abc --postgres-image trainyard-postgres:abc \
        --redis-image trainyard-redis:abc --base-image trainyard/base:bookworm-py311-v3 > compose.host.yml
    docker-compose -f compose.host.yml -p trainyard up -d

Every service runs on the host's network (`network_mode: host`, so published ports and the `envs` network go), on
ports apart from the host's own PostgreSQL, Redis and web server; environment containers run on the host network
too. The services, commands, queues and settings are docker-compose.yml's own: this only changes how they connect.
A Compose v1 override cannot remove `networks:` from a service, hence a generated file rather than an override.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
APP_SERVICES = ("web", "worker", "cpu", "beat")
WORKERS = ("worker", "cpu")


def host_network_variant(compose: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    services = compose["services"]
    for service in services.values():
        service.pop("networks", None)
        service.pop("ports", None)
        service["network_mode"] = "host"
    postgres, redis = services["postgres"], services["redis"]
    if args.postgres_image:
        postgres["image"] = args.postgres_image
    postgres.setdefault("environment", {})["PGPORT"] = str(args.postgres_port)
    postgres["healthcheck"]["test"] = ["CMD", "pg_isready", "-h", "127.0.0.1", "-p", str(args.postgres_port),
                                       "-U", "trainyard"]  # fmt: skip
    if args.redis_image:
        redis["image"] = args.redis_image
    redis["command"] = ["redis-server", "--port", str(args.redis_port), "--bind", "127.0.0.1", "--appendonly", "yes",
                        "--dir", "/var/lib/redis"]  # fmt: skip
    redis["healthcheck"]["test"] = ["CMD", "redis-cli", "-p", str(args.redis_port), "ping"]
    for name in APP_SERVICES:
        service = services[name]
        service.pop("build", None)
        if args.image:
            service["image"] = args.image
        env = service["environment"]
        env["DATABASE_URL"] = f"postgres://trainyard:trainyard@127.0.0.1:{args.postgres_port}/trainyard"
        env["REDIS_URL"] = f"redis://127.0.0.1:{args.redis_port}/0"
        service["volumes"] = list(service.get("volumes", [])) + list(args.volume)
    web = services["web"]
    web["command"] = ["sh", "-c", "python manage.py migrate --noinput && exec daphne -b 127.0.0.1 -p "
                      f"{args.web_port} webapp.asgi:application"]  # fmt: skip
    for name in WORKERS:
        service = services[name]
        service["environment"]["TRAINYARD_DOCKER_NETWORK"] = "host"
        if args.base_image:
            service["environment"]["TRAINYARD_DOCKER_BASE_IMAGE"] = args.base_image
        service["volumes"] = [f"{args.docker_socket}:/var/run/docker.sock" if v.endswith(":/var/run/docker.sock")
                              else v for v in service["volumes"]]  # fmt: skip
    compose.pop("networks", None)
    compose = {k: v for k, v in compose.items() if not k.startswith("x-")}
    return compose


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compose", default=str(ROOT / "docker-compose.yml"))
    parser.add_argument("--image", help="the app image (default: the file's)")
    parser.add_argument("--postgres-image", help="e.g. one built from deploy/postgres/Dockerfile")
    parser.add_argument("--redis-image", help="e.g. one built from deploy/redis/Dockerfile")
    parser.add_argument("--base-image", help="TRAINYARD_DOCKER_BASE_IMAGE for environment images")
    parser.add_argument("--docker-socket", default="/var/run/docker.sock")
    parser.add_argument("--postgres-port", type=int, default=55432)
    parser.add_argument("--redis-port", type=int, default=56379)
    parser.add_argument("--web-port", type=int, default=58000)
    parser.add_argument("--volume", action="append", default=[], help="an extra HOST:CONTAINER[:ro] for app services")
    args = parser.parse_args(argv)
    compose = yaml.safe_load(Path(args.compose).read_text())
    yaml.safe_dump(host_network_variant(compose, args), sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
