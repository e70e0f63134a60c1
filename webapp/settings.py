"""Trainyard's one settings module.

Every value comes from an environment variable read through a typed helper that raises
ImproperlyConfigured on a bad value, so a typo fails at start-up instead of at 3 a.m. The defaults are the
embedded ones: a SQLite file and a bundled Redis on a unix socket, both under the data folder.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no, on/off)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={value} must be at least {minimum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_choice(name: str, default: str, choices: set[str]) -> str:
    value = os.environ.get(name, default) or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name}={value!r} must be one of {sorted(choices)}")
    return value


DATA_DIR = Path(env_str("TRAINYARD_DATA_DIR", str(BASE_DIR / "var"))).resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)
# What can be built again and is named by its content (the tiny model, warm starts, environment sources and virtual
# environments): several data folders may share one (webapp/artifacts/layout.py).
CACHE_DIR = Path(env_str("TRAINYARD_CACHE_DIR", "") or str(DATA_DIR / "cache")).expanduser().resolve()
# Every file another process or host reads (webapp/artifacts/store.py): file:///a/folder (a shared mount across
# hosts) or s3://bucket/prefix. The default, a folder inside the data folder, is right for one machine.
ARTIFACTS_URL = env_str("TRAINYARD_ARTIFACTS", "") or (DATA_DIR / "artifacts").as_uri()

DEBUG = env_bool("DJANGO_DEBUG", False)


def _secret_key() -> str:
    """A real deployment sets DJANGO_SECRET_KEY; the demo gets one generated once and kept in the data folder."""
    configured = os.environ.get("DJANGO_SECRET_KEY")
    if configured:
        return configured
    if not env_bool("TRAINYARD_DEMO_SECRET", True):
        raise ImproperlyConfigured("DJANGO_SECRET_KEY is required when TRAINYARD_DEMO_SECRET is off")
    key_file = DATA_DIR / "demo-secret-key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
        key_file.chmod(0o600)
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "channels",
    "ninja",  # the API's browsable page from its own static files, never from a CDN
    "webapp.accounts",
    "webapp.core",
    "webapp.catalog",
    "webapp.artifacts",
    "webapp.runs",
    "webapp.live",
    "webapp.fleet",
    "webapp.jobs",
    "webapp.evals",
    "webapp.demo",
    "webapp.tokens",
    "webapp.alerts",
    "webapp.api",
    # manage.py commands that do a worker's work in the calling process (bootstrap, model): the web never imports them
    "workers.cli",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "webapp.accounts.middleware.CurrentTeamMiddleware",
    "webapp.core.query_params.BadQueryMiddleware",
]

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = None
ASGI_APPLICATION = "webapp.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "webapp.accounts.context_processors.teams",
            ],
        },
    },
]

DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'trainyard.sqlite3'}")
try:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=60)}
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Web, worker and trainer write the same file: WAL and a busy timeout keep them from tripping on each other.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-trainyard.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Redis: one URL feeds Celery's broker and result backend and the Channels layer, so the embedded default
# and production go through the same code. The default is the bundled redis-server on a unix socket.
EMBEDDED_REDIS_SOCKET = DATA_DIR / "redis.sock"
REDIS_URL = env_str("REDIS_URL", f"unix://{EMBEDDED_REDIS_SOCKET}")
if not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured(f"REDIS_URL={REDIS_URL!r} must start with redis://, rediss:// or unix://")
REDIS_IS_EMBEDDED = "REDIS_URL" not in os.environ


def celery_redis_url(url: str) -> str:
    """Celery (kombu) spells a unix socket redis+socket:// where redis-py spells it unix://."""
    return "redis+socket://" + url.removeprefix("unix://") if url.startswith("unix://") else url


# Redis pub/sub, not channels_redis.core: a group send is one PUBLISH pushed to each web process, where the core
# layer takes a ZRANGE and a Lua script per send and four round trips per message received. bench/live_latency.py,
# the two alternated on one machine: p50 6.3 ms / p99 11 ms against 8.6 ms / 17 ms.
# Pub/sub keeps nothing for a socket that is away; nothing needs it to: every message is stored first and a page
# that missed any replays them from the database by sequence number.
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL]},
    }
}

CELERY_BROKER_URL = celery_redis_url(REDIS_URL)
CELERY_RESULT_BACKEND = celery_redis_url(REDIS_URL)
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_DEFAULT_QUEUE = "default"
# https://docs.celeryq.dev/en/stable/userguide/optimizing.html#prefetch-limits : one GPU job at a time per worker.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# A reserved task is re-delivered after visibility_timeout when unacknowledged; runs last hours, so make it long
# (https://docs.celeryq.dev/en/stable/getting-started/backends-and-brokers/redis.html#visibility-timeout).
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 12 * 3600}
CELERY_TASK_ROUTES = {"workers.execute_run": {"queue": "gpu"}}
CELERY_BEAT_SCHEDULE = {
    "reap-lost-runs": {"task": "workers.reap_lost_runs", "schedule": 10.0},
    "requeue-stranded": {"task": "workers.requeue_stranded", "schedule": 60.0},
}

# Runs: how long a cancel waits for the trainer's next step before SIGTERM, and when a silent run is lost.
TRAINYARD_CANCEL_GRACE = env_int("TRAINYARD_CANCEL_GRACE", 20, minimum=0)
TRAINYARD_HEARTBEAT_TIMEOUT = env_int("TRAINYARD_HEARTBEAT_TIMEOUT", 300, minimum=5)
TRAINYARD_LOST_AFTER = env_int("TRAINYARD_LOST_AFTER", 120, minimum=10)
# An external run (launched elsewhere, reported through the API) whose client has not beaten for this long is crashed.
TRAINYARD_EXTERNAL_CRASH_AFTER = env_int("TRAINYARD_EXTERNAL_CRASH_AFTER", 40, minimum=5)
# A worker keeps a trainer process that has imported torch and TRL, and an environment server process that has
# imported OpenEnv, waiting for its next run (workers/standby.py): seconds off every run's start, for the memory of
# two idle processes.
TRAINYARD_STANDBY = env_bool("TRAINYARD_STANDBY", True)
# A job (pre-flight, test drive) still running after this long lost its worker: it fails, saying so.
TRAINYARD_JOB_LOST_AFTER = env_int("TRAINYARD_JOB_LOST_AFTER", 1800, minimum=60)
# Workers record a heartbeat row this often; one silent for TRAINYARD_WORKER_LOST_AFTER is gone (its runs fail).
TRAINYARD_WORKER_BEAT = env_int("TRAINYARD_WORKER_BEAT", 5, minimum=1)
TRAINYARD_WORKER_LOST_AFTER = env_int("TRAINYARD_WORKER_LOST_AFTER", 15, minimum=3)
# How often a worker copies a running trainer's or evaluator's log to the artifact store (pages read it there).
TRAINYARD_PUBLISH_SECONDS = env_int("TRAINYARD_PUBLISH_SECONDS", 5, minimum=1)

# The REST API (/api/v1/): requests per token, as N/s, N/m, N/h or N/d (a 429 beyond it). The count is kept in the
# cache: per web process with the default local-memory cache.
TRAINYARD_API_RATE = env_str("TRAINYARD_API_RATE", "1200/m")
if not re.fullmatch(r"\d+/[smhd]", TRAINYARD_API_RATE):
    raise ImproperlyConfigured(f"TRAINYARD_API_RATE must look like 1200/m, not {TRAINYARD_API_RATE!r}")

# Slurm: the defaults of the queue whose worker (on a login node: `celery -A workers worker -Q slurm`) submits runs
# with sbatch; a run overrides them in its resources group. TRAINYARD_SLURM_TEMPLATE: a job script of your own
# (workers/worker/slurm_script.py says what it may use); TRAINYARD_SLURM_SETUP: shell lines run before srun (module
# loads, a virtual environment's activate).
TRAINYARD_SLURM_PARTITION = env_str("TRAINYARD_SLURM_PARTITION", "")
TRAINYARD_SLURM_ACCOUNT = env_str("TRAINYARD_SLURM_ACCOUNT", "")
TRAINYARD_SLURM_QOS = env_str("TRAINYARD_SLURM_QOS", "")
TRAINYARD_SLURM_TIME_MINUTES = env_int("TRAINYARD_SLURM_TIME_MINUTES", 240, minimum=1)
TRAINYARD_SLURM_CPUS_PER_TASK = env_int("TRAINYARD_SLURM_CPUS_PER_TASK", 0, minimum=0)
TRAINYARD_SLURM_MEM_GB = env_int("TRAINYARD_SLURM_MEM_GB", 0, minimum=0)
TRAINYARD_SLURM_TEMPLATE = env_str("TRAINYARD_SLURM_TEMPLATE", "")
TRAINYARD_SLURM_SETUP = env_str("TRAINYARD_SLURM_SETUP", "")
TRAINYARD_SLURM_POLL_SECONDS = env_int("TRAINYARD_SLURM_POLL_SECONDS", 3, minimum=1)

# Environments: where their servers run. Docker settings have the ordinary values as defaults; CI here uses
# host networking and a base image made locally ("local"), since no registry can be reached.
TRAINYARD_ENV_PROVIDER = env_choice("TRAINYARD_ENV_PROVIDER", "process", {"process", "docker"})
TRAINYARD_DOCKER_BASE_IMAGE = env_str("TRAINYARD_DOCKER_BASE_IMAGE", "python:3.11-slim")
TRAINYARD_DOCKER_NETWORK = env_str("TRAINYARD_DOCKER_NETWORK", "trainyard-envs")
TRAINYARD_ENV_STEP_TIMEOUT = env_int("TRAINYARD_ENV_STEP_TIMEOUT", 30, minimum=1)
# Samples an evaluation generates at once (its sessions: replicas are sized for it).
TRAINYARD_EVAL_BATCH = env_int("TRAINYARD_EVAL_BATCH", 32, minimum=1)
# Sessions the capacity measurement opens at most when a version is added.
TRAINYARD_CAPACITY_PROBE_LIMIT = env_int("TRAINYARD_CAPACITY_PROBE_LIMIT", 64, minimum=1)
# A run's prompts (inline or a JSONL file) live in their own table, never in the run row, up to this size.
TRAINYARD_MAX_PROMPTS_MB = env_int("TRAINYARD_MAX_PROMPTS_MB", 16, minimum=1)
TRAINYARD_MAX_PROMPT_ROWS = env_int("TRAINYARD_MAX_PROMPT_ROWS", 100_000, minimum=1)
# Forms may carry inline prompts up to that size; anything larger is a 400 page that says so.
DATA_UPLOAD_MAX_MEMORY_SIZE = (TRAINYARD_MAX_PROMPTS_MB + 1) * 1_000_000
# Every new catalog version gets a trust report from a worker.
TRAINYARD_TRUST_ON_ADD = env_bool("TRAINYARD_TRUST_ON_ADD", True)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
STATICFILES_DIRS = [BASE_DIR / "webapp" / "static"]
# Serve from the finders too, so a checkout works before (or without) collectstatic.
WHITENOISE_USE_FINDERS = True
# Front-end libraries installed from npm at set-up (see Makefile); never a CDN at run time.
NODE_MODULES_DIR = BASE_DIR / "node_modules"
if NODE_MODULES_DIR.exists():
    STATICFILES_DIRS.append(("vendor", NODE_MODULES_DIR))

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"client_errors": {"()": "webapp.core.log_filters.ClientErrorsWithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["client_errors"]}},
    "root": {"handlers": ["console"], "level": env_str("TRAINYARD_LOG_LEVEL", "INFO")},
    "loggers": {"django.channels.server": {"level": "WARNING"}, "httpx": {"level": "WARNING"}},
}

# Alerts (webapp/alerts/): links in a delivered alert point at TRAINYARD_PUBLIC_URL; e-mail goes through Django's
# SMTP backend to TRAINYARD_SMTP_HOST:TRAINYARD_SMTP_PORT (a delivery that cannot connect is recorded as failed,
# with the reason, and retried).
TRAINYARD_PUBLIC_URL = env_str("TRAINYARD_PUBLIC_URL", "http://127.0.0.1:8000").rstrip("/")
EMAIL_HOST = env_str("TRAINYARD_SMTP_HOST", "127.0.0.1")
EMAIL_PORT = env_int("TRAINYARD_SMTP_PORT", 25, minimum=1)
EMAIL_HOST_USER = env_str("TRAINYARD_SMTP_USER", "")
EMAIL_HOST_PASSWORD = env_str("TRAINYARD_SMTP_PASSWORD", "")
EMAIL_USE_TLS = env_bool("TRAINYARD_SMTP_TLS", False)
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = env_str("TRAINYARD_EMAIL_FROM", "trainyard@localhost")
CELERY_BEAT_SCHEDULE["watch-stalled-runs"] = {"task": "workers.watch_stalled_runs", "schedule": 60.0}
