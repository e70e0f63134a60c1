"""Write a variant of docker-compose.yml for hosts where bridge networks do not work or no registry is reachable.

    python deploy/compose_host_network.py --image trainyard:abc --postgres-image trainyard-postgres:abc \
        --redis-image trainyard-redis:abc --base-image trainyard/base:bookworm-py311-v3 > compose.host.yml
    docker-compose -f compose.host.yml -p trainyard up -d

It also takes docker-compose.worker-host.yml (`--compose`), for a second worker host on the same machine, as CI
starts one (`--no-gpu-reservations` where no NVIDIA runtime is installed); that file's service URLs stay its
variables (DATABASE_URL, REDIS_URL, TRAINYARD_ARTIFACTS: the deployment's).

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
        if args.no_gpu_reservations:
            service.pop("deploy", None)
    if "postgres" in services:
        databases_on_host_ports(services, args)
    for name in APP_SERVICES:
        if name not in services:
            continue
        service = services[name]
        service.pop("build", None)
        if args.image:
            service["image"] = args.image
        service["volumes"] = volumes_with(service.get("volumes", []), args.volume)
        service.setdefault("environment", {}).update(args.env)
    if "web" in services:
        services["web"]["command"] = ["sh", "-c", "python manage.py migrate --noinput && exec daphne -b 127.0.0.1 "
                                      f"-p {args.web_port} webapp.asgi:application"]  # fmt: skip
    for name in WORKERS:
        if name not in services:
            continue
        service = services[name]
        service["environment"]["TRAINYARD_DOCKER_NETWORK"] = "host"
        if args.base_image:
            service["environment"]["TRAINYARD_DOCKER_BASE_IMAGE"] = args.base_image
        service["volumes"] = [f"{args.docker_socket}:/var/run/docker.sock" if v.endswith(":/var/run/docker.sock")
                              else v for v in service["volumes"]]  # fmt: skip
    compose.pop("networks", None)
    compose = {k: v for k, v in compose.items() if not k.startswith("x-")}
    return compose


def volumes_with(volumes: list[str], extra: list[str]) -> list[str]:
    """The service's volumes with each extra HOST:CONTAINER[:ro] added, or put in place of the one that is mounted
    at the same path (a bind of a shared folder instead of a named volume, say)."""

    def target(volume: str) -> str:  # "${SOURCE:-default}:/path:ro" -> "/path"
        return volume.removesuffix(":ro").removesuffix(":rw").rsplit(":", 1)[-1]

    result = list(volumes)
    for volume in extra:
        result = [v for v in result if target(v) != target(volume)] + [volume]
    return result


def databases_on_host_ports(services: dict[str, Any], args: argparse.Namespace) -> None:
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
        env = services[name]["environment"]
        env["DATABASE_URL"] = f"postgres://trainyard:trainyard@127.0.0.1:{args.postgres_port}/trainyard"
        env["REDIS_URL"] = f"redis://127.0.0.1:{args.redis_port}/0"


def assignment(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE")
    return name, value


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
    parser.add_argument(
        "--volume",
        action="append",
        default=[],
        help="an extra HOST:CONTAINER[:ro] for app services (in place of one at the same path)",
    )
    parser.add_argument(
        "--env",
        action="append",
        type=assignment,
        default=[],
        metavar="NAME=VALUE",
        help="an extra environment variable for the app services (OMP_NUM_THREADS=1 beside other work on the host)",
    )
    parser.add_argument(
        "--no-gpu-reservations",
        action="store_true",
        help="leave out NVIDIA device reservations (a host without the NVIDIA runtime)",
    )
    args = parser.parse_args(argv)
    compose = yaml.safe_load(Path(args.compose).read_text())
    yaml.safe_dump(host_network_variant(compose, args), sys.stdout, sort_keys=False)


if __name__ == "__main__":
    main()
