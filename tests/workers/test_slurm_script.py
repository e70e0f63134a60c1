"""A run's Slurm settings and job script, without a cluster (tests/workers/test_slurm.py runs them on a real one)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from webapp.runs.grpo import GRPOSettings
from workers.worker.slurm_script import job_script

pytestmark = pytest.mark.django_db


def test_the_job_asks_for_the_run_s_resources_over_the_queue_s_defaults(settings, tmp_path):
    settings.TRAINYARD_SLURM_PARTITION, settings.TRAINYARD_SLURM_ACCOUNT = "gpu", "lab"
    settings.TRAINYARD_SLURM_TIME_MINUTES, settings.TRAINYARD_SLURM_SETUP = 90, "module load cuda/12.4"
    config = GRPOSettings.from_dict({"cluster": "slurm", "nodes": 2, "gpus": 4, "processes": 4,
                                     "slurm_account": "other-lab", "slurm_mem_gb": 64}).as_dict()  # fmt: skip
    script = job_script(7, config, output=tmp_path / "out.txt")
    for line in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1", "#SBATCH --gres=gpu:4", "#SBATCH --mem=64G",
                 "#SBATCH --time=90", "#SBATCH --partition=gpu", "#SBATCH --account=other-lab",
                 f"#SBATCH --output={tmp_path / 'out.txt'}", "module load cuda/12.4"):  # fmt: skip
        assert line in script.splitlines(), line
    assert "--qos" not in script and "--cpus-per-task" not in script  # neither the run nor the queue names one
    assert script.splitlines()[-1].endswith("-m workers.training.slurm_node 7")


def test_a_template_of_one_s_own_is_rendered_with_the_same_placeholders(settings, tmp_path):
    template = tmp_path / "job.sh"
    template.write_text(
        "#!/bin/bash\n@@directives\n#SBATCH --constraint=a100\nsource /opt/env/bin/activate\n@@command\n"
    )
    settings.TRAINYARD_SLURM_TEMPLATE = str(template)
    script = job_script(3, GRPOSettings.from_dict({"cluster": "slurm"}).as_dict(), output=tmp_path / "o")
    assert "#SBATCH --constraint=a100" in script and "#SBATCH --nodes=1" in script
    assert "srun --ntasks-per-node=1 --kill-on-bad-exit=1" in script and "@@" not in script


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"nodes": 2}, "nodes"),  # several nodes are a cluster's
        ({"cluster": "slurm", "slurm_partition": "gpu; rm -rf /"}, "slurm_partition"),
        ({"slurm_qos": "high"}, "slurm_qos"),  # a Slurm setting on a run for the deployment's own workers
        ({"cluster": "kubernetes"}, "cluster"),
        ({"cluster": "slurm", "slurm_time_minutes": 10**9}, "slurm_time_minutes"),
        ({"cluster": "slurm", "nodes": 0}, "nodes"),
    ],
)
def test_bad_slurm_settings_are_refused_naming_the_field(config, field):
    with pytest.raises(ValidationError) as refused:
        GRPOSettings.from_dict(config)
    assert field in refused.value.message_dict


def test_a_run_for_the_cluster_needs_a_live_worker_on_the_slurm_queue_and_waits_there(acme, alice):
    from tests.webapp.runs.conftest import register_builtin
    from webapp.fleet.models import Worker
    from webapp.runs.services import RUN_WORK, run_create

    version = register_builtin(acme, "guess-number")
    with pytest.raises(ValidationError) as refused:
        run_create(team=acme, user=alice, env_version=version, config={"cluster": "slurm"}, start=False)
    assert "slurm queue" in refused.value.message_dict["cluster"][0]

    from django.utils import timezone

    Worker.objects.create(name="slurm@login", host="login", pid=1, queues=["slurm"], started_at=timezone.now(),
                          seen_at=timezone.now())  # fmt: skip
    run = run_create(team=acme, user=alice, env_version=version, config={"cluster": "slurm"}, start=False)
    here = run_create(team=acme, user=alice, env_version=version, config={}, start=False)
    assert (RUN_WORK.queue_of(run.pk), RUN_WORK.queue_of(here.pk)) == ("slurm", "gpu")
