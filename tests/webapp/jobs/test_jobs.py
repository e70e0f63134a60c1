"""Pre-flight and test drives are jobs: the request answers at once, a worker does the work, the page follows it."""

from __future__ import annotations

import time

import pytest
from django.urls import reverse

from webapp.jobs.models import Job
from webapp.runs.grpo import GRPOSettings
from webapp.runs.models import Run
from workers.worker.jobs import run_job


def run_form(version, **fields) -> dict:
    form = {k: str(v) for k, v in GRPOSettings().as_dict().items()}
    form.update(env_version=str(version.pk), model_name="tiny-local", provider="process", transcript_policy="all")
    form.update(fields)
    return form


def test_the_run_form_answers_at_once_and_a_job_queues_the_run(client_for, alice, guess_version, tiny_model):
    c = client_for(alice)
    response = c.post(reverse("runs:run-create"), run_form(guess_version, max_steps="3", prompts="Play!\nAgain!"))
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == job.get_absolute_url()
    assert not Run.objects.exists() and job.status == "queued" and job.kind == "run_create"
    page = c.get(job.get_absolute_url())
    assert b'id="job-status"' in page.content and b"waiting for a worker" in page.content
    assert run_job(job.pk) == "succeeded"
    job.refresh_from_db()
    run = Run.objects.get()
    assert job.result == {"run": run.pk, "url": run.get_absolute_url()} and job.progress == 1.0
    assert run.max_steps == 3 and run.prompt_count == 2 and run.created_by == alice
    assert c.get(reverse("jobs:job-json", args=[job.pk])).json()["next"] == run.get_absolute_url()
    assert run_job(job.pk) == "not queued" and Run.objects.count() == 1  # a job queued twice runs once


def test_an_unreachable_hub_is_a_model_error_within_seconds(client_for, alice, guess_version):
    c = client_for(alice)
    c.post(reverse("runs:run-create"), run_form(guess_version, model_name="nobody-here/no-such-model-7b"))
    job = Job.objects.get()
    started = time.monotonic()
    assert run_job(job.pk) == "failed"
    took = time.monotonic() - started
    job.refresh_from_db()
    assert took < 15, f"{took:.0f} s"
    assert "nobody-here/no-such-model-7b" in job.errors["model_name"][0] and not Run.objects.exists()
    # "Change and try again": the form comes back as it was sent
    form = c.get(job.params["back"]).context["form"]
    assert form.initial["model_name"] == "nobody-here/no-such-model-7b"
    assert str(form.initial["env_version"]) == str(guess_version.pk)


def test_cheap_errors_stay_on_the_form_and_queue_no_job(client_for, alice, guess_version):
    response = client_for(alice).post(reverse("runs:run-create"), run_form(guess_version, num_generations="3"))
    assert response.status_code == 400 and "per_device_train_batch_size" in response.context["form"].errors
    assert not Job.objects.exists()


@pytest.mark.parametrize("who", ["bob", "charlie"])
def test_a_job_is_its_makers_alone(client_for, alice, bob, charlie, guess_version, who):
    client_for(alice).post(reverse("runs:run-create"), run_form(guess_version))
    job = Job.objects.get()
    other = client_for({"bob": bob, "charlie": charlie}[who])
    assert other.get(job.get_absolute_url()).status_code == 404
    assert other.get(reverse("jobs:job-json", args=[job.pk])).status_code == 404
    assert other.get(f"{reverse('runs:run-create')}?from_job={job.pk}").context["form"].initial == {}


def test_a_job_left_running_by_a_dead_worker_fails_saying_so(alice, acme):
    from datetime import timedelta

    from django.utils import timezone

    from webapp.jobs.services import jobs_lost_fail

    job = Job.objects.create(team=acme, created_by=alice, kind="testdrive", status="running",
                             started_at=timezone.now() - timedelta(hours=1))  # fmt: skip
    assert jobs_lost_fail(older_than_s=600) == [job.pk]
    job.refresh_from_db()
    assert job.status == "failed" and "stopped answering" in job.errors["__all__"][0]


@pytest.mark.django_db(transaction=True)
def test_a_test_drive_through_the_real_worker(client, acme, alice, live_worker):
    from tests.webapp.runs.conftest import register_builtin
    from tests.workers.conftest import wait_for

    version = register_builtin(acme, "guess-number")
    client.force_login(alice)
    url = reverse("catalog:version-testdrive", args=[version.environment.pk, version.pk])
    response = client.post(url, {"tool": "guess", "number": 8, "seed": 3})
    assert response.status_code == 302  # the request hands the drive to a worker and answers
    job = Job.objects.get()
    wait_for(lambda: Job.objects.get(pk=job.pk).status == "succeeded", timeout=120, what="the test drive job")
    drive = client.get(response["Location"]).context["drive"]
    assert drive["reset"]["observation"]["hint"] == "start" and drive["error"] is None
