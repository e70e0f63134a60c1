"""docker-compose.yml: its structure, and the whole stack booted for real on the Docker engine `.ci/run` starts.

The boot test builds the app image on the base image made here (no registry), PostgreSQL and Redis from Debian's
packages on the same base, runs the stack on the host network (deploy/compose_host_network.py: no bridges here),
waits for /healthz to be green, trains a 3-step run through the compose workers with the docker provider, and
takes it all down again. The engine's layer cache keeps rebuilds quick (each layer is keyed by its content).
"""

from __future__ import annotations

import calendar
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import httpx
import pytest
import yaml

from webapp.artifacts.store import store_for

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
    after_dependencies = dockerfile.split("-r /tmp/requirements.txt", 1)[1]
    assert [line.split()[0] for line in after_dependencies.splitlines() if line[:4] in {"RUN ", "COPY"}] == ["COPY"]


def host_network_variant_of(*args: str) -> dict:
    out = subprocess.run([sys.executable, "deploy/compose_host_network.py", *args], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    return yaml.safe_load(out)


def test_a_worker_host_shares_only_the_store_and_keeps_the_deployment_s_urls_as_variables():
    host = yaml.safe_load((ROOT / "docker-compose.worker-host.yml").read_text())
    worker = host["services"]["worker"]
    assert set(host["services"]) == {"worker"} and worker["hostname"].startswith("${TRAINYARD_HOST_NAME")
    env = worker["environment"]
    for name in ("DATABASE_URL", "REDIS_URL", "TRAINYARD_ARTIFACTS", "DJANGO_SECRET_KEY"):
        assert env[name].startswith(f"${{{name}:?"), name  # refused unless the deployment's value is given
    assert {v.split(":")[-1] for v in worker["volumes"]} == {"/data", "/cache", "/artifacts", "/var/run/docker.sock"}
    assert {"host-data", "host-cache"} <= set(host["volumes"])  # its own, never the web's

    variant = host_network_variant_of("--compose", "docker-compose.worker-host.yml", "--no-gpu-reservations")
    worker = variant["services"]["worker"]
    assert "deploy" not in worker and worker["network_mode"] == "host"
    assert worker["environment"]["DATABASE_URL"].startswith("${DATABASE_URL:?")  # not the stack's own ports


def test_the_host_network_variant_puts_an_extra_volume_in_place_of_the_one_at_the_same_path():
    variant = host_network_variant_of("--volume", "/srv/shared:/artifacts", "--volume", "/m:/data/cache/models/m:ro")
    for name in ("web", "worker", "cpu", "beat"):
        volumes = variant["services"][name]["volumes"]
        assert "/srv/shared:/artifacts" in volumes and "trainyard-artifacts:/artifacts" not in volumes, volumes
        assert "/m:/data/cache/models/m:ro" in volumes and "trainyard-data:/data" in volumes


def test_the_host_network_variant_gives_app_services_extra_variables():
    variant = host_network_variant_of("--env", "OMP_NUM_THREADS=1", "--compose", "docker-compose.worker-host.yml",
                                      "--no-gpu-reservations")  # fmt: skip
    environment = variant["services"]["worker"]["environment"]
    assert environment["OMP_NUM_THREADS"] == "1" and environment["REDIS_URL"].startswith("${REDIS_URL:?")


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
@pytest.mark.timeout(3600)  # the first build of the app image on vfs takes ten minutes or more; later ones, seconds
def test_the_compose_stack_and_a_second_worker_host_train_across_hosts(tiny_model, tmp_path, monkeypatch):
    """The stack (host A) and a worker host started from docker-compose.worker-host.yml (host B: its own hostname,
    its own data and cache volumes, its own pid namespace) share only PostgreSQL, Redis and the artifact store.
    First the store is a folder both mount (what NFS gives two machines), then S3 (moto's server: no production
    S3-compatible store installs here); on each, a run lands on B and succeeds, its log, checkpoints and final model
    show on A's pages and download. On S3, then, B is killed mid-run, the run fails from heartbeats within 30 s, and
    resumes on A from the checkpoint B left in the store (on a folder store, tests/workers/test_across_hosts.py)."""
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
    room_checked("trainyard:ci", containers=5)

    # The tiny model built here, readable by the image's user (safetensors writes its file 0600); host A has it in
    # its cache and publishes it to the store, host B pulls it from there.
    model = tmp_path / tiny_model.name
    shutil.copytree(tiny_model, model)
    for path in [model, *model.iterdir()]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    store = tmp_path / "store"  # the shared folder: the one thing both hosts mount
    store.mkdir()
    store.chmod(0o777)
    socket = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://")
    common = ["--image", "trainyard:ci", "--base-image", base, "--docker-socket", socket]
    # The containers' torch takes this lane's share of the cores (tests/lanes.sh), as the lane's own trainers do.
    common += [f"--env={name}={os.environ[name]}" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
               if name in os.environ]  # fmt: skip
    a_file, b_file = tmp_path / "compose.host.yml", tmp_path / "worker-host.host.yml"
    host_network_file(a_file, *common, "--postgres-image", "trainyard-postgres:ci", "--redis-image",
                      "trainyard-redis:ci", "--volume", f"{model}:/data/cache/models/{tiny_model.name}:ro",
                      "--volume", f"{store}:/artifacts")  # fmt: skip
    host_network_file(b_file, *common, "--compose", "docker-compose.worker-host.yml", "--no-gpu-reservations")
    secret = "compose-test-secret-" + "x" * 40
    env = {**os.environ, "DJANGO_SECRET_KEY": secret, "DOCKER_GID": str(os.stat(socket).st_gid),
           "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost", "TRAINYARD_ARTIFACTS": "file:///artifacts",
           # Creating a container copies the image's files on vfs: a minute or more each, four at once.
           "COMPOSE_HTTP_TIMEOUT": "900", "DOCKER_CLIENT_TIMEOUT": "900"}  # fmt: skip
    for name in ("DATABASE_URL", "REDIS_URL", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        env.pop(name, None)  # this test process's own services are not the stack's
    stack = Stack(a_file, env, project=f"trainyardci{os.getpid()}")
    host_b = Stack(b_file, {**env, "DATABASE_URL": "postgres://trainyard:trainyard@127.0.0.1:55432/trainyard",
                            "REDIS_URL": "redis://127.0.0.1:56379/0", "TRAINYARD_HOST_NAME": HOST_B,
                            "TRAINYARD_ARTIFACTS_MOUNT": str(store)},
                   project=f"trainyardcihostb{os.getpid()}")  # fmt: skip
    stack_started = time.time()
    try:
        started = time.monotonic()
        stack("up", "-d")
        health = wait_for_health("http://127.0.0.1:58000/healthz", timeout=300)
        assert health["database"]["detail"] == "postgresql"
        assert "gpu-0@" in health["worker"]["detail"] and "cpu@" in health["worker"]["detail"]
        print(f"stack healthy in {time.monotonic() - started:.0f} s", file=sys.stderr)

        stack.manage("bootstrap")  # the demo team, the built-ins, and the tiny model published to the store
        # The trust check of the new versions runs on the cpu worker (the default queue) meanwhile.
        wait_until(lambda: trust_state(stack) == "done", timeout=600, what="the trust check")
        web = logged_in()
        # On the folder store, a run on B only: a killed host's run resumed from the folder store is
        # tests/workers/test_across_hosts.py's story (lane A); here the whole story is told once, on S3 below.
        across_hosts(stack, host_b, web, store_for(store.as_uri()), what="folder store", host_killed=False)

        # The same deployment on S3: every host's TRAINYARD_ARTIFACTS changes (compose recreates the app services).
        endpoint = s3_server_started()
        bucket = f"trainyard-ci-{os.getpid()}"
        s3 = {"TRAINYARD_ARTIFACTS": f"s3://{bucket}/deployment", "AWS_ENDPOINT_URL": endpoint,
              "AWS_ACCESS_KEY_ID": "trainyard-ci", "AWS_SECRET_ACCESS_KEY": "trainyard-ci-secret"}  # fmt: skip
        for name, value in s3.items():
            monkeypatch.setenv(name, value)  # this process reads the store too
        import boto3

        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
        stack.env.update(s3)
        host_b.env.update(s3)
        stack("up", "-d")
        wait_for_health("http://127.0.0.1:58000/healthz", timeout=300)
        stack.manage("bootstrap")  # the tiny model into the new store
        across_hosts(stack, host_b, logged_in(), store_for(s3["TRAINYARD_ARTIFACTS"]), what="S3 store (moto)")
    except BaseException:
        print(stack("logs", "--tail", "60", check=False)[-12000:], file=sys.stderr)
        print(host_b("logs", "--tail", "60", check=False)[-8000:], file=sys.stderr)
        raise
    finally:
        host_b("down", "-v", "--remove-orphans", check=False, timeout=600)
        stack("down", "-v", "--remove-orphans", check=False, timeout=600)
        environments_of_the_stack_removed(since=stack_started)
    assert "trainyardci" not in subprocess.run(["docker", "ps", "-a"], capture_output=True, text=True).stdout


HOST_B = "gpu-host-b"
SMALL = {"num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 256,
         "max_tool_calling_iterations": 4, "temperature": 0.7, "learning_rate": 5e-5}  # fmt: skip


def across_hosts(stack: Stack, host_b: Stack, web: httpx.Client, store, *, what: str, host_killed: bool = True) -> None:
    """One story on one store: B trains a run; (host_killed) B dies mid-run and A finishes it from B's checkpoint."""
    started = time.monotonic()
    stack("stop", "worker")  # host A's GPU worker: runs go to B meanwhile
    host_b("up", "-d")
    wait_until(lambda: f"gpu-0@{HOST_B}" in health_now()["worker"]["detail"], timeout=180, what="host B's worker")
    hosts = web.get("/workers/").text
    row = hosts[hosts.index(f'data-host="{HOST_B}') :]
    row = row[: row.index("</tr>")]
    assert "reachable" in row and ">yes<" in row, row  # B reaches the store and agrees with the web

    # 1. A run lands on B and succeeds; its log, checkpoints and final model show on A's pages and download.
    first = manage_json(stack, "run", "create", "--env", "guess-number", "--max-steps", "2", "--provider", "docker",
                        "--config", json.dumps({**SMALL, "save_steps": 1}), "--wait", "--json")  # fmt: skip
    assert first["status"] == "succeeded", first
    assert first["worker_host"].startswith(HOST_B), first["worker_host"]
    assert first["metric_steps"] == 2 and first["env_tool_calls"] > 0, first
    assert {"final", "checkpoint-2"} <= set(first["saved_models"]), first["saved_models"]
    stack("exec", "-T", "web", "test", "!", "-e", f"/data/runs/{first['id']}")  # A's disk holds nothing of it
    page = web.get(f"/runs/{first['id']}/").text
    assert "checkpoint-2" in page and f"/runs/{first['id']}/models/final.tar.gz" in page
    log = web.get(f"/runs/{first['id']}/log.txt")
    assert log.status_code == 200 and "pulling" in log.text and "from the artifact store" in log.text, log.text[:800]
    for name in ("final", "checkpoint-2"):
        assert any(n.endswith("model.safetensors") for n in downloaded(web, first["id"], name)), name

    if not host_killed:
        host_b("down", "-v")
        stack("start", "worker")
        print(f"a run on host B on the {what}: {time.monotonic() - started:.0f} s", file=sys.stderr)
        return

    # 2. A second run on B; B is killed (the whole host: its container) after its first checkpoint.
    # Four steps: checkpoint-2 is written with two steps still to go (the kill lands mid-run; the resume continues).
    second = manage_json(stack, "run", "create", "--env", "guess-number", "--max-steps", "4", "--provider",
                         "docker", "--config", json.dumps({**SMALL, "save_steps": 2}), "--json")  # fmt: skip
    marker = f"runs/{second['id']}/checkpoints/checkpoint-2/trainer_state.json"
    wait_until(lambda: store.exists(marker), timeout=600, what="B's first checkpoint in the store", interval=0.5)
    host_b("kill", "worker")
    killed_at = time.monotonic()
    wait_until(lambda: manage_json(stack, "run", "show", str(second["id"]))["status"] == "failed", timeout=90,
               what="the run of the killed host to fail", interval=1)  # fmt: skip
    failed_after = time.monotonic() - killed_at
    shown = manage_json(stack, "run", "show", str(second["id"]))
    assert "worker lost" in shown["failure_reason"], shown
    assert failed_after <= 30, f"failed {failed_after:.0f} s after its host died"

    # 3. Resumed, it finishes on A from B's checkpoint in the store.
    stack("start", "worker")
    resumed = manage_json(stack, "run", "resume", str(second["id"]), "--wait", "--json")
    assert resumed["status"] == "succeeded" and resumed["resume_from"] == "checkpoint-2", resumed
    assert not resumed["worker_host"].startswith(HOST_B) and resumed["metric_steps"] == 4, resumed
    assert "pulling checkpoint-2 from the artifact store" in web.get(f"/runs/{second['id']}/log.txt").text
    host_b("down", "-v")
    print(f"across hosts on the {what}: {time.monotonic() - started:.0f} s; the run failed {failed_after:.0f} s "
          f"after its host died; resumed: {json.dumps(resumed)}", file=sys.stderr)  # fmt: skip


def host_network_file(out_path: Path, *args: str) -> None:
    with out_path.open("w") as out:
        subprocess.run([sys.executable, "deploy/compose_host_network.py", *args], cwd=ROOT, stdout=out, check=True)


def manage_json(stack: Stack, *args: str) -> dict:
    return json.loads(stack.manage(*args))


def health_now() -> dict:
    try:
        return httpx.get("http://127.0.0.1:58000/healthz", timeout=5).json()
    except (httpx.HTTPError, ValueError):
        return {"worker": {"detail": ""}}


def logged_in() -> httpx.Client:
    """A browser's session for the demo user on the stack's web server (its login form, CSRF token and all)."""
    web = httpx.Client(base_url="http://127.0.0.1:58000", timeout=60)
    web.get("/login/")
    response = web.post("/login/", data={"username": "demo", "password": "trainyard-demo",
                                         "csrfmiddlewaretoken": web.cookies["csrftoken"]})  # fmt: skip
    assert response.status_code == 302, response.text[:2000]
    return web


def downloaded(web: httpx.Client, run_id: int, name: str) -> list[str]:
    response = web.get(f"/runs/{run_id}/models/{name}.tar.gz")
    assert response.status_code == 200, (name, response.status_code)
    with tarfile.open(fileobj=io.BytesIO(response.content), mode="r:gz") as tar:
        return tar.getnames()


def s3_server_started() -> str:
    """moto's S3-compatible server on this machine's network (the stack's containers share it); stopped with the
    test process."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
    with contextlib.closing(__import__("socket").socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    return f"http://127.0.0.1:{port}"


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
        pid = project.removeprefix("trainyardci").removeprefix("hostb")  # the stack's, and its second host's
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


def wait_until(predicate, *, timeout: float, what: str, interval: float = 3) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
