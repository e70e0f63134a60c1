"""What the API reads and writes, as pydantic models: the OpenAPI document is generated from these."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import field_validator

from webapp.evals.episode_budget import DEFAULT_MAX_TOKENS


def _nul_in(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_nul_in(k) or _nul_in(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_nul_in(v) for v in value)
    return False


class InputSchema(Schema):
    """What a client sends: no text anywhere in it may hold a NUL character (PostgreSQL cannot store one); the
    field that does is named in the 422."""

    @field_validator("*", mode="after")
    @classmethod
    def no_nul_characters(cls, value: Any) -> Any:
        if _nul_in(value):
            raise ValueError("holds a NUL character")
        return value


class ErrorOut(Schema):
    detail: str
    errors: dict[str, list[str]] = Field(default_factory=dict, description="Messages per field, when a field is wrong")


class MeOut(Schema):
    user: str
    team: str
    scope: Literal["read", "write"]
    expires_at: datetime | None


class VersionOut(Schema):
    id: int
    label: str
    source_kind: str
    source_ref: str
    pinned_ref: str
    tools: list[str]
    capacity: int
    success_threshold: float
    settings: dict[str, Any] = Field(
        description="env, fixed, offered_tools, observation_fields, reset_args, requirements, reward"
    )
    reward: dict[str, str] = Field(
        description="Whose reward a run learns from: kind (sum, final, environment), the "
        "field it is read from, and its source (default, declared, detected, chosen)"
    )
    mcp: bool = Field(description="An MCP environment: its tools are what its server lists")
    transport: str = Field(
        description="How sessions reach its server: ws (OpenEnv's /ws socket) or http (a server that serves no /ws: "
        "reset and step over HTTP, one tenant per session, tools listed on POST /mcp)"
    )
    frozen: bool = Field(description="A run used it: its settings can no longer change")
    created_at: datetime


class EnvironmentOut(Schema):
    id: int
    name: str
    slug: str
    team: str
    description: str
    tags: list[str]
    visibility: str
    versions: list[VersionOut]


class RunIn(InputSchema):
    env: str = Field(min_length=1, max_length=100, description="The environment's slug (its latest version)")
    env_version: str | None = Field(None, max_length=50, description="A version label (default: the latest)")
    model: str = Field("tiny-local", min_length=1, max_length=300)
    max_steps: int = Field(20, ge=1, le=1_000_000)
    config: dict[str, Any] = Field(default_factory=dict, description="GRPO settings, as the run form's fields")
    name: str = Field("", max_length=100)
    tags: list[str] = Field(default_factory=list, max_length=20)
    provider: Literal["process", "docker", "url"] | None = None
    replicas: int | None = Field(None, ge=1, le=64)
    trust_override_reason: str = Field("", max_length=2000)


class RunOut(Schema):
    id: int
    name: str
    kind: Literal["worker", "external"]
    external: dict[str, Any] = Field(description="An external run: the host, command and client it reported")
    status: str
    failure_reason: str
    environment: str
    environment_version: str
    env_version_id: int
    model: str
    provider: str
    step: int
    max_steps: int
    config: dict[str, Any]
    tags: list[str]
    created_at: datetime
    running_at: datetime | None
    finished_at: datetime | None
    worker_host: str
    resume_from: str
    episodes: int
    env_tool_calls: int
    never_stepped_environment: bool = Field(
        description="Episodes were played but not one tool call reached the environment: it learned nothing from it"
    )
    url: str


class ResumeIn(InputSchema):
    checkpoint: str | None = Field(None, max_length=60, description="checkpoint-N (default: the last one stored)")


class SeriesOut(Schema):
    step: list[int]
    value: list[float]
    wall_time: list[float]


class MetricsOut(Schema):
    run: int
    last_seq: int
    series: dict[str, SeriesOut]


class EpisodeOut(Schema):
    id: int
    step: int
    group: int
    index: int
    rank: int
    environment: str
    reward: float
    advantage: float | None
    num_tool_calls: int
    num_tool_errors: int
    error: str
    prompt: str
    turns: list[Any]


class SavedModelOut(Schema):
    name: str
    model_name: str
    step: int
    size_bytes: int
    adapter: bool
    download_url: str


class EvaluationOut(Schema):
    id: int
    name: str
    status: str
    failure_reason: str
    model: str
    run: int | None
    step: int | None
    k: int
    greedy: bool
    episodes_total: int
    episodes_done: int
    results: dict[str, Any]
    created_at: datetime


class WorkerOut(Schema):
    name: str
    host: str
    queues: list[str]
    gpus: list[int]
    alive: bool
    seen_at: datetime
    current_runs: list[int] = Field(description="Runs of this team it executes now (another team's are left out)")


class QueuedOut(Schema):
    position: int
    kind: str
    waited_s: float
    gpus: int
    id: int | None = Field(description="Empty for another team's work: counted, never named")
    name: str
    status: str


class FleetOut(Schema):
    workers: list[WorkerOut]
    queued: list[QueuedOut]


class PageOut(Schema):
    count: int = Field(description="How many there are in all")
    limit: int
    offset: int


class RunPage(PageOut):
    items: list[RunOut]


class EpisodePage(PageOut):
    items: list[EpisodeOut]


class EnvironmentPage(PageOut):
    items: list[EnvironmentOut]


class EvaluationPage(PageOut):
    items: list[EvaluationOut]


class ExternalRunIn(InputSchema):
    environment: str = Field(min_length=1, max_length=100, description="The catalog environment's slug it trains on")
    environment_version: str | None = Field(None, max_length=50, description="A version label (default: latest)")
    name: str = Field("", max_length=100)
    model: str = Field("", max_length=300, description="The model it trains, as the script names it")
    config: dict[str, Any] = Field(default_factory=dict, description="Its settings (at most 64 kB as JSON)")
    max_steps: int = Field(0, ge=0, le=2**31 - 1, description="0: not known")
    tags: list[str] = Field(default_factory=list, max_length=20)
    host: str = Field("", max_length=200, description="Where it runs")
    command: str = Field("", max_length=2000, description="How it was launched")
    client: str = Field("", max_length=100, description="The client and its version")


class MetricRowIn(InputSchema):
    step: int = Field(ge=0, le=2**31 - 1)
    values: dict[str, float | int | None] = Field(max_length=1000, description="Metric name to value")
    wall_time: float | None = Field(None, description="Unix seconds (default: when it arrives)")


class EpisodeIn(InputSchema):
    step: int = Field(ge=0, le=2**31 - 1)
    group: int = Field(ge=0, le=1_000_000, description="Its GRPO group: the rollouts of one prompt")
    reward: float
    turns: list[dict[str, Any]] = Field(default_factory=list, max_length=400,
                                        description="Chat messages as TRL's completions hold them")  # fmt: skip
    index: int | None = Field(None, ge=0, le=100_000, description="Its place in the group")
    advantage: float | None = None
    prompt: str = Field("", max_length=200_000)
    environment: str = Field("", max_length=120)
    error: str = Field("", max_length=10_000)
    rank: int = Field(0, ge=0, le=100_000)
    reset: dict[str, Any] = Field(default_factory=dict, description="What reset() was given (its seed, say)")


class BatchIn(InputSchema):
    batch_id: str = Field(min_length=1, max_length=100, description="Idempotency key: a retried batch counts once")
    metrics: list[MetricRowIn] = Field(default_factory=list, max_length=1000)
    episodes: list[EpisodeIn] = Field(default_factory=list, max_length=256)


class BatchOut(Schema):
    duplicate: bool = Field(description="This batch_id was recorded before: nothing was added")
    metrics: int
    episodes: int
    status: str
    cancel_requested: bool = Field(description="Someone cancelled it in Trainyard: stop, then finish as cancelled")


class StateOut(Schema):
    status: str
    cancel_requested: bool


class FinishIn(InputSchema):
    status: Literal["succeeded", "failed", "cancelled", "crashed"]
    reason: str = Field("", max_length=10_000)


class EvaluationIn(InputSchema):
    model: str = Field(min_length=1, max_length=300, description="tiny-local, a warm start, a Hub id, run:ID/final")
    environments: list[str] = Field(min_length=1, max_length=8, description="Slugs, or slug@version")
    episodes: int = Field(32, ge=1, le=4096)
    seeds: str = Field("", max_length=2000, description="e.g. 1000-1063,2000 (instead of episodes)")
    k: int = Field(1, ge=1, le=64, description="Samples per episode (avg@k, pass@k)")
    greedy: bool = True
    temperature: float = Field(1.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_turns: int = Field(6, ge=1, le=64)
    max_tokens: int = Field(DEFAULT_MAX_TOKENS, ge=16, le=8192)
    name: str = Field("", max_length=100)


class TrustReportOut(Schema):
    id: int
    state: str
    verdict: str
    results: list[Any]
    error: str
    created_at: datetime
    finished_at: datetime | None


class EnvironmentIn(InputSchema):
    name: str = Field(min_length=1, max_length=100)
    source_kind: Literal["git", "folder", "image", "url"]
    source_ref: str = Field(min_length=1, max_length=500, description="Repository URL, folder, image or server URL")
    git_ref: str = Field("", max_length=200, description="Branch, tag or commit (git)")
    git_subdir: str = Field("", max_length=300, description="The environment's folder in the repository (git)")
    label: str = Field("1.0.0", min_length=1, max_length=50)
    slug: str = Field("", max_length=100)
    description: str = Field("", max_length=5000)
    tags: list[str] = Field(default_factory=list, max_length=20)
    visibility: Literal["team", "shared"] = "team"
    capacity: int = Field(64, ge=1, le=4096)
    settings: dict[str, Any] = Field(
        default_factory=dict, description="env, fixed, offered_tools, observation_fields, reset_args"
    )


class TestDriveIn(InputSchema):
    tool: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)
    provider: Literal["process", "docker", "url"] | None = None
    seed: int | None = Field(None, ge=0, le=2**31 - 1)


class JobOut(Schema):
    id: int
    kind: str
    status: str
    phase: str
    progress: float
    result: dict[str, Any]
    errors: dict[str, Any]
    created_at: datetime
    finished_at: datetime | None


class VersionSettingsIn(InputSchema):
    settings: dict[str, Any] = Field(
        description="env, fixed, offered_tools, observation_fields, reset_args, reward (as the settings page)"
    )


class VersionIn(InputSchema):
    label: str = Field(min_length=1, max_length=50, description="A new version name, e.g. 1.1.0")
    source_kind: Literal["git", "folder", "image", "url"]
    source_ref: str = Field(min_length=1, max_length=500)
    git_ref: str = Field("", max_length=200)
    git_subdir: str = Field("", max_length=300)
    capacity: int = Field(64, ge=1, le=4096)
    settings: dict[str, Any] = Field(default_factory=dict)
