"""docker-compose.yml: its structure, and the whole stack booted for real on the Docker engine `.ci/run` starts.

The boot test builds the app image on the base image made here (no registry), PostgreSQL and Redis from Debian's
packages on the same base, runs the stack on the host network (deploy/compose_host_network.py: no bridges here),
waits for /healthz to be green, trains a 3-step run through the compose workers with the docker provider, and
takes it all down again. The engine's layer cache keeps rebuilds quick (each layer is keyed by its content).
"""

from __future__ import annotations

import calendar
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_TIMEOUT = 900


def load() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_it_has_the_services_of_a_real_deployment():
    assert set(load()["services"]) == {"postgres", "redis", "web", "worker", "cpu", "beat"}


def test_gpu_workers_take_training_and_a_cpu_worker_takes_everything_else():
    services = load()["services"]
    queues = {}
    for name in ("worker", "cpu"):
        command = services[name]["command"]
        assert command[:4] == ["celery", "-A", "workers", "worker"]
        queues[name] = command[command.index("-Q") + 1]
    assert queues == {"worker": "gpu", "cpu": "default"}  # a trust check never waits behind a training run
    assert services["worker"]["command"][services["worker"]["command"].index("-c") + 1] == "1"
    assert "deploy" not in services["worker"]  # a CPU host starts the file as it is
    gpu = yaml.safe_load((ROOT / "docker-compose.gpu.yml").read_text())["services"]["worker"]
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"


def test_workers_share_the_environment_network_and_the_docker_engine():
    compose = load()
    assert compose["networks"]["envs"] == {"name": "trainyard-envs", "internal": True}
    for name in ("worker", "cpu"):
        service = compose["services"][name]
        assert "envs" in service["networks"]
        assert service["environment"]["TRAINYARD_DOCKER_NETWORK"] == "trainyard-envs"
        assert "/var/run/docker.sock:/var/run/docker.sock" in service["volumes"]


def test_app_services_share_one_image_and_the_real_service_urls():
    services = load()["services"]
    for name in ("web", "worker", "cpu", "beat"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:5432/" in env["DATABASE_URL"]
        assert env["REDIS_URL"] == "redis://redis:6379/0"
        assert services[name]["image"] == "${TRAINYARD_IMAGE:-trainyard:latest}"
        assert "postgres" in services[name]["depends_on"] and "redis" in services[name]["depends_on"]
    assert "daphne" in " ".join(services["web"]["command"])
    assert services["beat"]["command"][:4] == ["celery", "-A", "workers", "beat"]


def test_the_image_is_built_from_the_repos_dockerfile_with_its_charts():
    assert load()["x-app"]["build"] == "."
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "npm ci" in dockerfile and "COPY --from=assets /app /app" in dockerfile
    # After the dependencies, the app is one layer: on vfs every layer is a full copy of the image.
    after_dependencies = dockerfile.split("pip install -q -r /tmp/requirements.txt", 1)[1]
    assert [line.split()[0] for line in after_dependencies.splitlines() if line[:4] in {"RUN ", "COPY"}] == ["COPY"]


# -- the stack, booted ------------------------------------------------------------------------------------


def docker_build(dockerfile: str, tag: str, base: str, *build_args: str) -> None:
    started = time.monotonic()
    extra = [part for arg in build_args if arg for part in ("--build-arg", arg)]
    result = subprocess.run(
        ["docker", "build", "--network", "host", "--build-arg", f"BASE_IMAGE={base}", *extra, "-f", dockerfile,
         "-t", tag, "."], cwd=ROOT, capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    assert result.returncode == 0, f"building {tag} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    print(f"built {tag} in {time.monotonic() - started:.0f} s", file=sys.stderr)


TORCH_WHEEL_PORT = 58765  # fixed: the build argument is part of the layer cache's key


@contextlib.contextmanager
def torch_wheels_served():
    """This machine's CPU torch wheel (pip's find-links folder), served to the image build: never the CUDA build
    from PyPI, and never a copy in the build context. Yields the build argument, or None when there is none."""
    folders = [Path(f) for f in os.environ.get("PIP_FIND_LINKS", "/opt/wheels").split()]
    folder = next((f for f in folders if list(f.glob("torch-2.13.0*cpu*.whl"))), None)
    if folder is None:
        yield None
        return
    command = [sys.executable, "-m", "http.server", str(TORCH_WHEEL_PORT), "--bind", "127.0.0.1", "--directory",
               str(folder)]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield f"TORCH_FIND_LINKS=http://127.0.0.1:{TORCH_WHEEL_PORT}/"
    finally:
        server.terminate()
        server.wait(10)


class Stack:
    def __init__(self, compose_file: Path, env: dict[str, str], project: str) -> None:
        self.base = ["docker-compose", "-f", str(compose_file), "-p", project]
        self.env = env

    def __call__(self, *args: str, timeout: float = COMPOSE_TIMEOUT, check: bool = True) -> str:
        result = subprocess.run([*self.base, *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        if check:
            assert result.returncode == 0, f"{' '.join(args)}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        return result.stdout

    def manage(self, *args: str, timeout: float = COMPOSE_TIMEOUT) -> str:
        return self("exec", "-T", "web", "python", "manage.py", *args, timeout=timeout)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.timeout(3000)  # the first build of the app image on vfs takes ten minutes or more; later ones, seconds
def test_the_compose_stack_boots_and_trains_a_run(tiny_model, tmp_path):
    from tests.conftest import require_docker

    require_docker()
    if shutil.which("docker-compose") is None:
        if os.environ.get("TRAINYARD_DOCKER") == "required":
            pytest.fail("docker-compose is not installed (apt-get install docker-compose)")
        pytest.skip("docker-compose is not installed")
    import docker

    from envs.providers.base_image import local_base_image

    leftover_stacks_removed()
    base = local_base_image(docker.from_env())
    builds_started = int(time.time())
    with torch_wheels_served() as torch_wheels:
        docker_build("Dockerfile", "trainyard:ci", base, torch_wheels)
    docker_build("deploy/postgres/Dockerfile", "trainyard-postgres:ci", base)
    docker_build("deploy/redis/Dockerfile", "trainyard-redis:ci", base)
    earlier_builds_removed(before=builds_started)
    room_checked("trainyard:ci", containers=4)

    # The tiny model built here, readable by the image's user (safetensors writes its file 0600).
    model = tmp_path / tiny_model.name
    shutil.copytree(tiny_model, model)
    for path in [model, *model.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    socket = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://")
    compose_file = tmp_path / "compose.host.yml"
    with compose_file.open("w") as out:
        subprocess.run(
            [sys.executable, "deploy/compose_host_network.py", "--image", "trainyard:ci",
             "--postgres-image", "trainyard-postgres:ci", "--redis-image", "trainyard-redis:ci", "--base-image", base,
             "--docker-socket", socket, "--volume", f"{model}:/data/cache/models/{tiny_model.name}:ro"],
            cwd=ROOT, stdout=out, check=True,
        )  # fmt: skip
    env = {**os.environ, "DJANGO_SECRET_KEY": "compose-test-secret-" + "x" * 40,
           "DOCKER_GID": str(os.stat(socket).st_gid), "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
           # Creating a container copies the image's files on vfs: a minute or more each, four at once.
           "COMPOSE_HTTP_TIMEOUT": "900", "DOCKER_CLIENT_TIMEOUT": "900"}  # fmt: skip
    stack = Stack(compose_file, env, project=f"trainyardci{os.getpid()}")
    stack_started = time.time()
    try:
        started = time.monotonic()
        stack("up", "-d")
        health = wait_for_health("http://127.0.0.1:58000/healthz", timeout=300)
        assert health["database"]["detail"] == "postgresql"
        assert "gpu-0@" in health["worker"]["detail"] and "cpu@" in health["worker"]["detail"]
        print(f"stack healthy in {time.monotonic() - started:.0f} s", file=sys.stderr)

        stack.manage("bootstrap", "--skip-model")
        # The trust check of the new versions runs on the cpu worker (the default queue) meanwhile.
        wait_until(lambda: trust_state(stack) == "done", timeout=600, what="the trust check")
        summary = json.loads(stack.manage(
            "run", "create", "--env", "guess-number", "--max-steps", "3", "--provider", "docker", "--config",
            json.dumps({"num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 256,
                        "max_tool_calling_iterations": 4, "temperature": 0.7, "learning_rate": 5e-5}),
            "--wait", "--json",
        ))  # fmt: skip
        assert summary["status"] == "succeeded", summary
        assert summary["metric_steps"] == 3 and summary["episodes"] == 12 and summary["env_tool_calls"] > 0
        print(f"3-step run through compose: {json.dumps(summary)}", file=sys.stderr)
    except BaseException:
        print(stack("logs", "--tail", "60", check=False)[-12000:], file=sys.stderr)
        raise
    finally:
        stack("down", "-v", "--remove-orphans", check=False, timeout=600)
        environments_of_the_stack_removed(since=stack_started)
    assert "trainyardci" not in subprocess.run(["docker", "ps", "-a"], capture_output=True, text=True).stdout


def environments_of_the_stack_removed(*, since: float) -> None:
    """Environment containers the stack's workers started on the host engine. `down` stops the cpu worker while it
    may still be trust-checking the other built-ins; in production its restart reaps them, here nothing restarts."""
    rows = docker_cli("ps", "-a", "--filter", "label=trainyard.managed=1", "--format", "{{.ID}} {{.CreatedAt}}")

    def created(row: str) -> float:  # "ID 2026-12-03 16:34:10 +0000 UTC"
        return calendar.timegm(time.strptime(" ".join(row.split()[1:3]), "%Y-%m-%d %H:%M:%S"))

    mine = [row.split()[0] for row in rows.splitlines() if created(row) >= since - 1]
    if mine:
        print(f"removing {len(mine)} environment container(s) the stack left", file=sys.stderr)
        docker_cli("rm", "-f", "-v", *mine)


def docker_cli(*args: str) -> str:
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"docker {' '.join(args)}: {result.stderr[-2000:]}"
    return result.stdout


def leftover_stacks_removed() -> None:
    """Containers and volumes of a boot test that was killed before its `down` (project trainyardci<pid>)."""
    projects = docker_cli("ps", "-a", "--filter", "label=com.docker.compose.project", "--format",
                          '{{.Label "com.docker.compose.project"}}').split()  # fmt: skip
    for project in set(projects):
        pid = project.removeprefix("trainyardci")
        if project == pid or not pid.isdigit() or Path(f"/proc/{pid}").exists():
            continue
        label = f"label=com.docker.compose.project={project}"
        docker_cli("rm", "-f", "-v", *docker_cli("ps", "-aq", "--filter", label).split())
        volumes = docker_cli("volume", "ls", "-q", "--filter", label).split()
        if volumes:
            docker_cli("volume", "rm", *volumes)


def earlier_builds_removed(*, before: int) -> None:
    """Images of earlier builds that this one left untagged. Each is gigabytes on vfs (every layer a full copy),
    and a machine that keeps them fills its disk after a few rebuilds (CI's did: "no space left on device")."""
    docker_cli("image", "prune", "-f", "--filter", "label=org.trainyard.image", "--filter", f"until={before}")


def room_checked(image: str, *, containers: int) -> None:
    """On vfs every container is a full copy of its image: say how much room the stack needs before starting it,
    rather than fail halfway with "no space left on device"."""
    driver, root = docker_cli("info", "--format", "{{.Driver}} {{.DockerRootDir}}").split()
    if driver != "vfs" or not Path(root).exists():
        return
    size = int(docker_cli("image", "inspect", "--format", "{{.Size}}", image))
    need = size * containers + 4 * 2**30  # and room for the environment images and containers of the run
    free = shutil.disk_usage(root).free
    assert free >= need, (
        f"the stack needs about {need / 2**30:.1f} GiB free under {root} ({containers} containers of "
        f"{size / 2**30:.1f} GiB on vfs, plus the run's environments); {free / 2**30:.1f} GiB are free"
    )
    print(f"room: {free / 2**30:.1f} GiB free, {need / 2**30:.1f} GiB needed", file=sys.stderr)


TRUST_STATE = (
    "from webapp.catalog.models import TrustReport as T; "
    "r = T.objects.filter(version__environment__slug='guess-number').first(); "
    "print(r.state if r else 'none')"
)


def trust_state(stack: Stack) -> str:
    state = stack.manage("shell", "--no-imports", "-c", TRUST_STATE).strip().splitlines()[-1]
    assert state != "error", stack.manage("shell", "-c", TRUST_STATE.replace("r.state", "r.error"))
    return state


def wait_for_health(url: str, *, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    body: dict = {}
    while time.monotonic() < deadline:
        try:
            response = httpx.get(url, timeout=2)
            body = response.json()
            if response.status_code == 200:
                return body
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(2)
    raise AssertionError(f"/healthz not green within {timeout:.0f} s: {body}")


def wait_until(predicate, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(3)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
