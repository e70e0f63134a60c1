"""The GRPO settings a run form takes: curated groups, and an advanced box judged against TRL's own GRPOConfig fields
(read from the installed TRL, not a list of ours)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from webapp.fleet.models import Worker
from webapp.runs.grpo import GRPOSettings, settings_flat
from webapp.runs.models import Run
from webapp.runs.trl_fields import grpo_config_fields


def refusal(**config) -> dict[str, list[str]]:
    with pytest.raises(ValidationError) as refused:
        GRPOSettings.from_dict(config)
    return refused.value.message_dict


def test_the_field_table_is_trls_own():
    from importlib.metadata import version

    table = grpo_config_fields()
    assert {"loss_type", "epsilon_high", "importance_sampling_level", "weight_decay", "vllm_mode"} <= set(table)
    assert "integer" in table["num_iterations"]["types"] and "null" in table["epsilon_high"]["types"]
    assert "cosine" in table["lr_scheduler_type"]["choices"]
    from webapp.artifacts.layout import trl_fields_file

    assert trl_fields_file(version("trl")).exists()  # read once per TRL version, kept in the cache folder


def test_advanced_settings_reach_the_config_from_json_or_yaml():
    settings = GRPOSettings.from_dict({"advanced": "weight_decay: 0.01\nlr_scheduler_type: cosine\n"})
    assert settings.advanced == {"weight_decay": 0.01, "lr_scheduler_type": "cosine"}
    settings = GRPOSettings.from_dict({"advanced": '{"importance_sampling_level": "sequence", "warmup_steps": 3}'})
    assert settings.advanced["warmup_steps"] == 3
    assert GRPOSettings.from_dict({"advanced": "  "}).advanced == {}


@pytest.mark.parametrize(
    ("advanced", "named"),
    [
        ({"weight_decayy": 0.01}, "weight_decayy: TRL 1.16.0's GRPOConfig has no such field (did you mean"),
        ({"weight_decay": "lots"}, "weight_decay: takes integer or number, not string"),
        ({"lr_scheduler_type": "sideways"}, "lr_scheduler_type: one of linear, cosine"),
        ({"output_dir": "/etc"}, "output_dir: not a run's to set (Trainyard keeps checkpoints in the run's folder)"),
        ({"report_to": "wandb"}, "report_to: not a run's to set (Trainyard records metrics itself"),
        ({"use_vllm": True}, "use_vllm: not a run's to set (choose it with generation_backend"),
        ({"bf16": True}, "bf16: not a run's to set (the worker picks the device and its precision)"),
        ({"loss_type": "grpo"}, "loss_type: has its own field on the form"),
        ({"mask_truncated_completions": 1}, "mask_truncated_completions: has its own field"),
    ],
)
def test_an_advanced_key_that_cannot_be_set_is_named_with_the_reason(advanced, named):
    errors = refusal(advanced=advanced)["advanced"]
    assert any(named in e for e in errors), errors


def test_advanced_text_that_is_not_a_mapping_says_where():
    assert "line 1" in refusal(advanced="{weight_decay: [")["advanced"][0]
    assert "mapping" in refusal(advanced="- 1\n- 2")["advanced"][0]
    assert "at most 20,000" in refusal(advanced="x: " + "1" * 20_001)["advanced"][0]
    assert "at most 100" in refusal(advanced={f"k{i}": 1 for i in range(101)})["advanced"][0]


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"loss_type": "ppo"}, "loss_type"),
        ({"scale_rewards": "yes"}, "scale_rewards"),
        ({"epsilon": 0.2, "epsilon_high": 0.1}, "epsilon_high"),
        ({"top_p": 0}, "top_p"),
        ({"lora_r": -1}, "lora_r"),
        ({"lora_target_modules": "q_proj; rm -rf /"}, "lora_target_modules"),
        ({"vllm_server_url": "http://gpu:8000"}, "vllm_server_url"),
        ({"generation_backend": "vllm_server", "vllm_server_url": "gpu:8000"}, "vllm_server_url"),
        ({"mask_truncated_completions": "perhaps"}, "mask_truncated_completions"),
        ({"generation_backend": "tensorrt"}, "generation_backend"),
        ({"generation_backend": "vllm_server"}, "vllm_server_url"),
    ],
)
def test_curated_settings_are_checked_by_name(config, field):
    assert field in refusal(**config)


def test_a_run_that_predates_a_setting_shows_the_default_it_trained_with():
    flat = settings_flat({"max_steps": 3, "advanced": {"weight_decay": 0.1}})
    assert flat["loss_type"] == "dapo" and flat["lora_r"] == 0 and flat["max_steps"] == 3
    assert flat["advanced.weight_decay"] == 0.1 and "advanced" not in flat


def test_the_form_names_the_advanced_key_and_queues_nothing(client_for, alice, guess_version):
    form = {"env_version": str(guess_version.pk), "model_name": "tiny-local", "provider": "process",
            "transcript_policy": "all", "advanced": '{"report_to": "wandb"}'}  # fmt: skip
    response = client_for(alice).post(reverse("runs:run-create"), form)
    assert response.status_code == 400
    assert "report_to" in response.context["form"].errors["advanced"][0]
    assert b'id="settings-advanced" open' in response.content  # the group with the error is open
    assert not Run.objects.exists()


def test_the_form_shows_the_groups(client_for, alice, guess_version):
    page = client_for(alice).get(reverse("runs:run-create")).content.decode()
    for group in ("sampling", "loss", "optimisation", "generation-and-resources", "lora", "advanced"):
        assert f'id="settings-{group}"' in page
    assert 'name="epsilon_high"' in page and 'name="lora_r"' in page and 'name="advanced"' in page


@pytest.mark.django_db
def test_the_fleet_refuses_what_no_live_worker_offers(acme):
    from django.utils import timezone

    from webapp.fleet.fit import fleet_fit_check

    fleet_fit_check(gpus=0, generation_backend="hf")  # nothing asked of the fleet: no worker needed
    with pytest.raises(ValidationError, match="no worker is alive"):
        fleet_fit_check(gpus=0, generation_backend="vllm_colocate")
    now = timezone.now()
    Worker.objects.create(name="cpu@a", host="a", pid=1, queues=["gpu"], gpus=[], started_at=now, seen_at=now,
                          capabilities={"cuda": False, "vllm": None})  # fmt: skip
    Worker.objects.create(name="gpu@b", host="b", pid=1, queues=["gpu"], gpus=[0, 1], started_at=now, seen_at=now,
                          capabilities={"cuda": True, "vllm": None})  # fmt: skip
    with pytest.raises(ValidationError) as refused:
        fleet_fit_check(gpus=0, generation_backend="vllm_server")
    reason = refused.value.message_dict["generation_backend"][0]
    assert "cpu@a: no CUDA device and the vllm package is not installed" in reason
    assert "gpu@b: the vllm package is not installed" in reason
    fleet_fit_check(gpus=2, generation_backend="hf")
    with pytest.raises(ValidationError, match=r"no live worker offers 4 GPUs: cpu@a: no GPU.*gpu@b: 2 GPUs"):
        fleet_fit_check(gpus=4, generation_backend="hf")
    Worker.objects.filter(name="gpu@b").update(capabilities={"cuda": True, "vllm": "0.19.0"})
    fleet_fit_check(gpus=1, generation_backend="vllm_colocate")
    Worker.objects.filter(name="gpu@b").update(seen_at=now - timezone.timedelta(hours=1))  # it died
    with pytest.raises(ValidationError):
        fleet_fit_check(gpus=1, generation_backend="vllm_colocate")
