"""Hostile values against every form and JSON endpoint: never a 5xx, every error names its field or parameter, and
nothing is half-saved. Property-based (hypothesis): each test draws many values and combinations."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webapp.catalog.models import Environment, EnvironmentVersion, TrustReport
from webapp.runs.grpo import BOUNDS, GRPOSettings
from webapp.runs.models import Episode, MetricPoint, Run, RunPrompts

PROPERTY = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

# Values that break naive parsing: overflow, NaN, huge ids, negative limits, NULs, markup, non-numbers.
NASTY = st.sampled_from(
    ["-1", "0", "1e400", "-1e400", "nan", "inf", "-inf", "1e20", str(10**20), str(2**63), str(2**64), "9" * 40,
     "1.5", "-0.0", "abc", "\x00", "1\x00", "' OR 1=1 --", "<script>alert(1)</script>", "%00", " ", "١٢", "0x10",
     "1_000", "²", "--1", "1e-400", ",", ",,,", "1,2,3"]
)  # fmt: skip
LONG_TEXT = st.tuples(st.text(min_size=1, max_size=3), st.integers(7_000, 25_000)).map(lambda t: t[0] * t[1])
ANY_TEXT = st.one_of(NASTY, st.integers(-(2**80), 2**80).map(str), st.floats().map(repr), st.text(max_size=30))


def out_of_bounds(name: str) -> st.SearchStrategy[str]:
    """Values of one GRPO setting that must be refused: outside its bounds, not a number, or not finite."""
    lo, hi = BOUNDS[name]
    is_int = isinstance(getattr(GRPOSettings, name), int)
    beyond = st.one_of(
        st.integers(int(hi) + 1, 10**30) if is_int else st.floats(hi, 1e300, exclude_min=True),
        st.integers(-(10**30), int(lo) - 1) if is_int else st.floats(-1e300, lo, exclude_max=True),
    ).map(str)
    junk = st.sampled_from(["nan", "inf", "-inf", "1e400", "abc", "\x00", "1\x00", "' OR 1=1"])
    if is_int:
        junk = st.one_of(junk, st.sampled_from(["1.5", "2.000001"]))
    return st.one_of(beyond, junk)


@pytest.fixture
def acme_run(acme, alice, guess_version):
    run = Run.objects.create(team=acme, created_by=alice, name="hostile", env_version=guess_version, max_steps=3)
    MetricPoint.objects.bulk_create(
        MetricPoint(run=run, name="reward", step=s, value=s / 10, wall_time=1e9 + s) for s in range(5)
    )
    Episode.objects.create(run=run, step=1, group=0, index_in_group=0, reward=0.5)
    return run


def assert_named_400(response, names: set[str]) -> None:
    """A 400 whose JSON error names one of the parameters."""
    assert response.status_code == 400, response.content[:300]
    assert set(json.loads(response.content)["error"]) & names


@PROPERTY
@given(params=st.dictionaries(st.sampled_from(["lo", "hi", "names"]), ANY_TEXT, max_size=3))
def test_metrics_json_answers_every_query(client_for, alice, acme_run, params):
    response = client_for(alice).get(reverse("runs:run-metrics", args=[acme_run.pk]), params)
    assert response.status_code < 500
    if response.status_code == 400:
        assert_named_400(response, {"lo", "hi", "names"})


@PROPERTY
@given(
    params=st.dictionaries(
        st.sampled_from(["step", "min_reward", "max_reward", "limit", "errors"]), ANY_TEXT, min_size=1, max_size=5
    )
)
def test_episodes_json_answers_every_query(client_for, alice, acme_run, params):
    response = client_for(alice).get(reverse("runs:run-episodes", args=[acme_run.pk]), params)
    assert response.status_code < 500
    if response.status_code == 400:
        assert_named_400(response, {"step", "min_reward", "max_reward", "limit"})
    else:
        assert len(json.loads(response.content)["episodes"]) <= 500


@PROPERTY
@given(ids=st.lists(ANY_TEXT, min_size=1, max_size=4))
def test_compare_answers_every_list_of_ids(client_for, alice, acme_run, ids):
    client = client_for(alice)
    for name in ("runs:compare", "runs:compare-metrics", "runs:compare-summary-csv", "runs:compare-metrics-csv"):
        response = client.get(reverse(name), {"runs": [str(acme_run.pk), *ids]})
        assert response.status_code in (200, 400, 404), (name, response.status_code)


@PROPERTY
@given(params=st.dictionaries(st.sampled_from(["status", "env", "owner", "tag", "q", "page"]), ANY_TEXT, max_size=6))
def test_lists_answer_every_filter(client_for, alice, acme_run, params):
    client = client_for(alice)
    for name in ("runs:run-list", "catalog:environment-list"):
        response = client.get(reverse(name), params)
        assert response.status_code in (200, 400), (name, response.status_code)


@pytest.mark.parametrize("path", ["/runs/{}/", "/runs/{}/metrics.json", "/envs/{}/", "/envs/1/versions/{}/settings/"])
def test_huge_ids_in_urls_are_not_found(client_for, alice, acme_run, path):
    for huge in (2**63, 10**30):
        assert client_for(alice).get(path.format(huge)).status_code == 404


@PROPERTY
@given(data=st.data())
def test_the_run_form_names_every_refused_setting_and_saves_nothing(client_for, alice, guess_version, data):
    name = data.draw(st.sampled_from(sorted(BOUNDS)), label="setting")
    value = data.draw(out_of_bounds(name), label="value")
    form = {
        **{k: str(v) for k, v in GRPOSettings().as_dict().items()},
        "env_version": str(guess_version.pk), "model_name": "tiny-local", "provider": "process",
        "transcript_policy": "all", name: value,
    }  # fmt: skip
    runs_before = Run.objects.count()
    response = client_for(alice).post(reverse("runs:run-create"), form)
    assert response.status_code == 400
    assert name in response.context["form"].errors, (name, value, response.context["form"].errors)
    assert Run.objects.count() == runs_before and not RunPrompts.objects.exists()


@PROPERTY
@given(
    field=st.sampled_from(["model_name", "tags", "trust_override_reason", "prompts", "replicas", "provider"]),
    value=st.one_of(NASTY, LONG_TEXT, st.just("x" * 301), st.just("\x00")),
)
def test_the_run_form_refuses_hostile_text_by_name(client_for, alice, guess_version, field, value):
    form = {k: str(v) for k, v in GRPOSettings().as_dict().items()}
    form.update(env_version=str(guess_version.pk), model_name="tiny-local", provider="process")
    form[field] = value
    form["max_steps"] = "0"  # the form is refused in any case; the question is which fields it names
    response = client_for(alice).post(reverse("runs:run-create"), form)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert set(errors) <= {field, "max_steps"}, errors
    assert Run.objects.count() == 0


def test_a_prompts_file_over_the_limit_is_a_field_error(client_for, alice, guess_version, settings):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.TRAINYARD_MAX_PROMPTS_MB = 1
    rows = "".join(json.dumps({"prompt": "p" * 1000, "seed": i}) + "\n" for i in range(1100))  # ~1.1 MB
    form = {k: str(v) for k, v in GRPOSettings().as_dict().items()}
    form.update(env_version=str(guess_version.pk), model_name="tiny-local", provider="process")
    form["prompts_file"] = SimpleUploadedFile("p.jsonl", rows.encode())
    response = client_for(alice).post(reverse("runs:run-create"), form)
    assert response.status_code == 400
    assert "at most 1 MB" in response.context["form"].errors["prompts_file"][0]
    assert Run.objects.count() == 0


def test_a_form_larger_than_the_request_limit_says_so(client_for, alice, guess_version, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100_000
    response = client_for(alice).post(reverse("runs:run-create"), {"prompts": "x" * 200_000})
    assert response.status_code == 400
    assert b"larger than this server accepts" in response.content
    assert Run.objects.count() == 0


def test_prompts_live_outside_the_run_row(acme, alice, guess_version):
    from webapp.runs.selectors import run_list, run_prompts
    from webapp.runs.services import run_create

    run = run_create(team=acme, user=alice, env_version=guess_version, prompts=["a", "b"], start=False)
    assert run.prompt_count == 2 and run_prompts(run=run) == [{"prompt": "a"}, {"prompt": "b"}]
    assert "prompts" not in {f.name for f in Run._meta.concrete_fields}
    assert "rows" not in str(run_list(user=alice).query)


@PROPERTY
@given(
    field=st.sampled_from(["name", "description", "tags", "source_ref", "git_ref", "git_subdir", "label", "capacity",
                           "env", "fixed", "requirements", "visibility", "source_kind"]),
    value=st.one_of(NASTY, LONG_TEXT, st.just("\x00")),
)  # fmt: skip
def test_the_environment_form_refuses_hostile_values_by_name(client_for, alice, field, value):
    form = {"name": "Hostile", "source_kind": "builtin", "source_ref": "no-such-builtin", "label": "1.0.0",
            "capacity": "64", "visibility": "team", field: value}  # fmt: skip
    response = client_for(alice).post(reverse("catalog:environment-create"), form)
    assert response.status_code == 400
    assert response.context["form"].errors
    assert not Environment.objects.exists() and not EnvironmentVersion.objects.exists()


@PROPERTY
@given(seed=ANY_TEXT, guess=ANY_TEXT)
def test_the_testdrive_form_refuses_hostile_arguments_without_starting_anything(
    client_for, alice, guess_version, seed, guess
):
    url = reverse("catalog:version-testdrive", args=[guess_version.environment.pk, guess_version.pk])
    tool = guess_version.tools[0]["name"]
    field = next(iter(guess_version.tools[0]["parameters"]["properties"]))
    response = client_for(alice).post(url, {"tool": tool, "seed": seed, field: guess, "provider": "nowhere"})
    assert response.status_code in (200, 400)
    if response.status_code == 400:
        assert response.context["form"].errors


def test_an_unreachable_docker_engine_is_a_field_error(client_for, alice, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    form = {"name": "Imaged", "source_kind": "image", "source_ref": "example/env:1", "label": "1.0.0",
            "capacity": "4", "visibility": "team"}  # fmt: skip
    response = client_for(alice).post(reverse("catalog:environment-create"), form)
    assert response.status_code == 400
    assert "unreachable" in " ".join(response.context["form"].errors["source_ref"])
    assert not Environment.objects.exists() and not TrustReport.objects.exists()


EVAL_FIELDS = ["model_name", "episodes", "seed_start", "seeds", "k", "temperature", "top_p", "max_turns",
               "max_tokens", "name", "versions", "prompts"]  # fmt: skip


@PROPERTY
@given(field=st.sampled_from(EVAL_FIELDS), value=st.one_of(NASTY, LONG_TEXT, st.integers(-(2**80), 2**80).map(str)))
def test_the_evaluation_form_refuses_hostile_values_by_name_and_saves_nothing(client_for, alice, guess_version, field,
                                                                              value):  # fmt: skip
    from webapp.evals.models import Evaluation

    form = {"model_name": "tiny-local", "versions": [str(guess_version.pk)], "episodes": "4", "seed_start": "0",
            "seeds": "", "k": "1", "temperature": "1", "top_p": "1", "max_turns": "4", "max_tokens": "64"}  # fmt: skip
    form[field] = value
    anchor = "max_turns" if field == "episodes" else "episodes"
    form[anchor] = "0"  # the form is refused in any case; the question is which fields it names
    response = client_for(alice).post(reverse("evals:eval-create"), form)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert anchor in errors and set(errors) <= {anchor, field, "__all__"}, (field, value, errors)
    assert not Evaluation.objects.exists()


@PROPERTY
@given(ids=st.lists(ANY_TEXT, min_size=1, max_size=4))
def test_evaluation_pages_answer_every_list_of_ids(client_for, alice, acme_run, ids):
    response = client_for(alice).get(reverse("evals:eval-compare"), {"ids": ",".join(ids)})
    assert response.status_code in (200, 400), response.status_code


@pytest.mark.parametrize("path", ["/evals/{}/", "/evals/{}/summary.json", "/evals/leaderboard/{}/"])
def test_huge_evaluation_ids_are_not_found(client_for, alice, acme_run, path):
    for huge in (2**63, 10**30):
        assert client_for(alice).get(path.format(huge)).status_code == 404
