"""Held-out seeds: written as ranges and lists, bounded, and never seeds the run trains on."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from tests.webapp.runs.conftest import register_builtin
from webapp.evals.seeds import MAX_SEEDS, seeds_parse, seeds_text
from webapp.runs.models import Run
from webapp.runs.services import run_create


def test_ranges_and_lists_read_as_people_write_them():
    assert seeds_parse("1000-1003, 7;9, 7") == [1000, 1001, 1002, 1003, 7, 9]
    assert seeds_text([1000, 1001, 1002, 1003, 7, 9]) == "1000-1003, 7, 9"


@pytest.mark.parametrize("text", ["5-banana", "9-1", "-3", f"0-{MAX_SEEDS}", "1e3", str(2**60)])
def test_a_seed_list_that_is_not_one_names_its_field(text):
    with pytest.raises(ValidationError) as caught:
        seeds_parse(text, field="eval_seeds")
    assert "eval_seeds" in caught.value.message_dict


@pytest.mark.django_db
def test_held_out_seeds_that_are_training_seeds_are_refused_and_nothing_is_saved(acme, alice):
    version = register_builtin(acme, "guess-number")
    # seed 42, 16 rows (batch 4 x 4): the run trains on seeds 42000-42015
    with pytest.raises(ValidationError) as caught:
        run_create(team=acme, user=alice, env_version=version, start=False,
                   config={"eval_steps": 5, "eval_seeds": "42010-42040"})  # fmt: skip
    assert "6 held-out seed(s) are training seeds" in caught.value.message_dict["eval_seeds"][0]
    assert not Run.objects.exists()
    run = run_create(team=acme, user=alice, env_version=version, start=False,
                     config={"eval_steps": 5, "eval_seeds": "42016-42040"})  # fmt: skip
    assert run.config["eval_seeds"] == "42016-42040"


@pytest.mark.django_db
def test_a_prompts_seed_column_counts_as_training(acme, alice):
    version = register_builtin(acme, "guess-number")
    with pytest.raises(ValidationError):
        run_create(team=acme, user=alice, env_version=version, start=False,
                   prompts=[{"prompt": "p", "seed": 900000005}], config={"eval_steps": 5})  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize("field", ["model_name", "name", "prompts"])
def test_a_nul_character_is_a_field_error_not_a_database_error(acme, alice, field):
    from webapp.evals.models import Evaluation
    from webapp.evals.services import evaluation_create

    version = register_builtin(acme, "guess-number")
    values = {"model_name": "tiny-local", "name": "", "prompts": ["find it"]}
    values[field] = ["find\x00it"] if field == "prompts" else "bad\x00name"
    with pytest.raises(ValidationError) as caught:
        evaluation_create(team=acme, user=alice, versions=[version], start=False, **values)
    assert field in caught.value.message_dict and not Evaluation.objects.exists()
