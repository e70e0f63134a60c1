"""Training the way teams with GPUs do, proved on the CPU through a real worker: LoRA adapters that save and
resume, loss and sampling settings and TRL's other fields that reach GRPOConfig, and generation backends the fleet
cannot run refused before anything is queued.

The GPU is the boundary we cannot reach here: vLLM itself never runs in these tests; its refusal does.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.urls import reverse

from tests.webapp.runs.conftest import register_builtin
from tests.workers.conftest import wait_final, wait_for
from tests.workers.test_training_runs import SMALL, start_run
from webapp.artifacts.layout import run_checkpoints_dir, run_trainer_config_file
from webapp.artifacts.saved_models import saved_models
from webapp.fleet.models import Worker
from webapp.runs.models import Episode, MetricPoint, Status
from webapp.runs.services import run_create, run_resume

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_a_lora_run_with_papers_settings_saves_its_adapter_resumes_and_is_trained_further(
    acme, globex, alice, charlie, client_for, tiny_model, live_worker, tmp_path
):
    run = start_run(
        acme, max_steps=4, save_steps=2, lora_r=8, lora_alpha=16, lora_dropout=0.0,
        loss_type="dr_grpo", scale_rewards="none", epsilon_high=0.28, top_p=0.95,
        advanced={"weight_decay": 0.01, "lr_scheduler_type": "constant", "importance_sampling_level": "token"},
    )  # fmt: skip
    run = wait_final(run, timeout=900)
    assert run.status == Status.SUCCEEDED, run.failure_reason

    # What TRL really trained with: every curated and advanced setting reached GRPOConfig.
    trained = json.loads(run_trainer_config_file(run.pk).read_text())
    assert trained["loss_type"] == "dr_grpo" and trained["scale_rewards"] == "none"
    assert trained["epsilon_high"] == 0.28 and trained["top_p"] == 0.95
    assert trained["weight_decay"] == 0.01 and trained["lr_scheduler_type"] == "constant"

    # A LoRA checkpoint is the adapter, not the whole model.
    second = run_checkpoints_dir(run.pk) / "checkpoint-2"
    assert (second / "adapter_model.safetensors").exists() and (second / "adapter_config.json").exists()
    assert not (second / "model.safetensors").exists()
    adapter = json.loads((second / "adapter_config.json").read_text())
    assert adapter["r"] == 8 and adapter["lora_alpha"] == 16 and adapter["peft_type"] == "LORA"
    assert adapter["base_model_name_or_path"] == str(tiny_model)

    # Resume from the adapter checkpoint at step 2: steps 3 and 4 are played again on top of it.
    run = run_resume(run=run, user=None, checkpoint="checkpoint-2")
    run = wait_final(run, timeout=900)
    assert run.status == Status.SUCCEEDED, run.failure_reason
    steps = sorted(MetricPoint.objects.filter(run=run, name="reward").values_list("step", flat=True))
    assert steps == [1, 2, 3, 4]
    assert Episode.objects.filter(run=run).count() == 4 * SMALL["per_device_train_batch_size"]

    # Its models: the final adapter and the checkpoints, downloadable by the team only.
    models = {m.name: m for m in saved_models(run)}
    assert list(models) == ["final", "checkpoint-4", "checkpoint-2"]
    assert models["final"].adapter and models["final"].step == 4 and models["final"].size_bytes > 1000
    url = reverse("runs:run-model-download", args=[run.pk, "checkpoint-2"])
    response = client_for(alice).get(url)
    assert response.status_code == 200
    with tarfile.open(fileobj=io.BytesIO(b"".join(response.streaming_content)), mode="r:gz") as tar:
        names = {Path(n).name for n in tar.getnames()}
    assert {"adapter_model.safetensors", "adapter_config.json", "tokenizer.json"} <= names
    assert "optimizer.pt" not in names
    assert client_for(charlie).get(url).status_code == 404

    # Exported merged: a plain model folder, no adapter left.
    call_command("model", "export", "--run", str(run.pk), "--merge", "--out", str(tmp_path / "merged"))
    assert (tmp_path / "merged" / "model.safetensors").exists()
    assert not (tmp_path / "merged" / "adapter_config.json").exists()

    # Train from the adapter checkpoint at step 2: a new run whose page names where it came from.
    child = run_create(team=acme, user=alice, env_version=run.env_version, model_name=f"run:{run.pk}/checkpoint-2",
                       config={**SMALL, "max_steps": 2})  # fmt: skip
    child = wait_final(child, timeout=900)
    assert child.status == Status.SUCCEEDED, child.failure_reason
    assert (child.parent_id, child.parent_model, child.parent_step) == (run.pk, "checkpoint-2", 2)
    page = client_for(alice).get(child.get_absolute_url()).content.decode()
    assert f'Trained from <a href="{run.get_absolute_url()}">{run.name}</a>\'s checkpoint-2 (step 2)' in page
    assert child.name in client_for(alice).get(run.get_absolute_url()).content.decode()
    assert not saved_models(child)[0].adapter  # full fine-tuning from the merged checkpoint
    with pytest.raises(ValidationError, match="no run"):
        run_create(team=globex, user=charlie, env_version=run.env_version, model_name=f"run:{run.pk}/final")


def test_generation_the_fleet_cannot_do_is_refused_before_anything_is_queued(acme, live_worker):
    worker = wait_for(lambda: Worker.objects.filter(name__startswith="test-worker-", capabilities__has_key="cuda")
                      .first(), timeout=120, what="the worker to record what it can run")  # fmt: skip
    assert worker.capabilities["cuda"] is False and worker.capabilities["peft"]
    for backend, url in (("vllm_colocate", ""), ("vllm_server", "http://gpu-box:8000")):
        with pytest.raises(ValidationError) as refused:
            start_run(acme, max_steps=2, generation_backend=backend, vllm_server_url=url)
        reason = " ".join(refused.value.message_dict["generation_backend"])
        assert "no CUDA device" in reason and worker.name in reason
    with pytest.raises(ValidationError) as refused:
        start_run(acme, max_steps=2, gpus=2)
    assert f"{worker.name}: no GPU" in " ".join(refused.value.message_dict["gpus"])
    from webapp.runs.models import Run

    assert not Run.objects.exists()


def test_a_run_generating_with_transformers_continuous_batching(acme, tiny_model, live_worker):
    # One step of shorter completions: continuous batching generates token by token in Python on the CPU (158 s in
    # CI for 2 steps of 256 tokens); what is tested is that the backend is the one the trainer used, and that it plays.
    run = wait_final(start_run(acme, max_steps=1, max_completion_length=128, generation_backend="continuous_batching"),
                     timeout=900)  # fmt: skip
    assert run.status == Status.SUCCEEDED, run.failure_reason
    trained = json.loads(run_trainer_config_file(run.pk).read_text())
    assert trained["use_transformers_continuous_batching"] is True and trained["use_vllm"] is False
    assert Episode.objects.filter(run=run, num_tool_calls__gt=0).exists()


def test_a_two_process_cpu_run_records_episodes_from_both_ranks(acme, tiny_model, live_worker):
    run = wait_final(start_run(acme, max_steps=2, processes=2), timeout=900)
    assert run.status == Status.SUCCEEDED, run.failure_reason
    assert run.gpu == "cpu x 2 processes"
    episodes = Episode.objects.filter(run=run)
    per_rank = SMALL["per_device_train_batch_size"]
    assert episodes.count() == run.episodes_recorded == 2 * 2 * per_rank
    for step in (1, 2):
        ranks = list(episodes.filter(step=step).order_by("group", "index_in_group").values_list("rank", "group"))
        assert sorted({r for r, _ in ranks}) == [0, 1]
        assert all(group == rank for rank, group in ranks)  # one group a rank: groups never span ranks
    steps = sorted(MetricPoint.objects.filter(run=run, name="reward").values_list("step", flat=True))
    assert steps == [1, 2]  # metrics come from rank 0 alone
    assert run.replicas * run.env_version.effective_capacity >= 2 * per_rank  # sized for both ranks' sessions
    assert saved_models(run)[0].name == "final"


def test_a_mixed_run_on_two_environments_records_rewards_per_environment(acme, alice, client_for, tiny_model,
                                                                         live_worker):  # fmt: skip
    guess, words = register_builtin(acme, "guess-number"), register_builtin(acme, "word-guess")
    config = {**SMALL, "per_device_train_batch_size": 8, "max_steps": 3}
    run = wait_final(run_create(team=acme, user=alice, env_version=guess, config=config, mixture=[(words, 1.0)]),
                     timeout=900)  # fmt: skip
    assert run.status == Status.SUCCEEDED, run.failure_reason
    assert [(e["key"], e["weight"]) for e in run.environments] == [("guess-number", 1.0), ("word-guess", 1.0)]
    assert set(run.deployment["environments"]) == {"word-guess"} and run.deployment.get("torn_down") is True

    episodes = Episode.objects.filter(run=run)
    assert set(episodes.values_list("environment", flat=True)) == {"guess-number", "word-guess"}
    tools = {"guess-number": {t["name"] for t in guess.tools}, "word-guess": {t["name"] for t in words.tools}}
    for episode in episodes:  # each rollout met its own environment's tools, and only those reached a server
        called = {t["name"] for t in episode.turns if t["role"] == "tool" and not t.get("error")}
        assert called <= tools[episode.environment] | {None}, (episode.environment, called)
    assert episodes.filter(environment="word-guess", num_tool_calls__gt=0).exists()

    # Reward per environment: each step's reward/<key> is the mean of that environment's episodes in the step.
    for key in ("guess-number", "word-guess"):
        points = MetricPoint.objects.filter(run=run, name=f"reward/{key}")
        assert points.exists(), key
        for point in points:
            mine = list(episodes.filter(step=point.step, environment=key).values_list("reward", flat=True))
            assert point.value == pytest.approx(sum(mine) / len(mine), abs=1e-6)

    url = reverse("runs:run-episodes", args=[run.pk]) + "?environment=word-guess&limit=500"
    listed = client_for(alice).get(url).json()["episodes"]
    assert listed and {e["environment"] for e in listed} == {"word-guess"}
    page = client_for(alice).get(run.get_absolute_url()).content.decode()
    assert 'id="run-mixture"' in page and 'id="filter-env"' in page
