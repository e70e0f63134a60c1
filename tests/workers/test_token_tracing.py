"""The token tracer on a micro batch as TRL hands it to `_compute_loss` (shuffled rows, padding, a tool result in
the completion): it keeps the traced group's rows, each once, trimmed to the completion, and packs them compactly."""

from __future__ import annotations

import pytest

from tests.webapp.runs.conftest import register_builtin
from webapp.runs.models import TokenTrace
from webapp.runs.services import run_create
from webapp.runs.token_traces import MOST_TOKENS, half_pack, half_unpack, trace_build, trace_dict
from workers.training.token_tracing import ROW_KEY, TokenTracer


class Tokenizer:
    def batch_decode(self, ids):
        return [f"<{i[0]}>" for i in ids]


def test_float16_packing_keeps_values_to_three_digits_and_bounds_the_rest():
    assert half_unpack(half_pack([-0.125, 2.5, float("nan"), 1e9])) == [-0.125, 2.5, 0.0, 65504.0]
    trace = trace_build(run_id=1, step=1, rank=0, group=0, index=0, tokens=["a"] * (MOST_TOKENS + 5),
                        logprobs=[-1.0] * (MOST_TOKENS + 5), entropies=[0.5] * (MOST_TOKENS + 5),
                        advantages=[1.0] * (MOST_TOKENS + 5), trained=[1] * (MOST_TOKENS + 5))  # fmt: skip
    assert len(trace.tokens) == MOST_TOKENS and len(bytes(trace.logprobs)) == 2 * MOST_TOKENS


@pytest.mark.django_db
def test_the_tracer_keeps_the_traced_groups_rows_once_each(acme, alice):
    torch = pytest.importorskip("torch")
    run = run_create(team=acme, user=alice, env_version=register_builtin(acme, "guess-number"), start=False)
    tracer = TokenTracer(run.pk, Tokenizer(), groups=1, group_size=2, rank=0)
    assert tracer.generated(step=3, batch_size=4) == 2
    # A shuffled micro batch: rows 2, 0, 1 of the generated batch; row 0 has a tool result (mask 0) and padding.
    inputs = {
        ROW_KEY: torch.tensor([2, 0, 1]),
        "completion_ids": torch.tensor([[7, 8, 9, 0], [11, 12, 13, 14], [21, 22, 0, 0]]),
        "completion_mask": torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 0, 0]]),
        "tool_mask": torch.tensor([[1, 1, 1, 1], [1, 0, 0, 1], [1, 1, 1, 1]]),
        "advantages": torch.tensor([0.0, 1.5, -1.5]),
    }
    logps = -torch.arange(12, dtype=torch.float32).reshape(3, 4) / 10
    entropies = torch.ones(3, 4) / 4
    assert tracer.record(inputs, logps, entropies) == 2
    assert tracer.record(inputs, logps, entropies) == 0, "num_iterations > 1 sees the rows again: kept once"
    first, second = (trace_dict(t) for t in TokenTrace.objects.filter(run=run).order_by("index_in_group"))
    assert (first["step"], first["group"], first["index"]) == (3, 0, 0)
    assert first["tokens"] == ["<11>", "<12>", "<13>", "<14>"] and first["trained"] == [1, 0, 0, 1]
    assert first["advantage"] == [1.5] * 4 and first["logprob"] == pytest.approx([-0.4, -0.5, -0.6, -0.7], abs=1e-3)
    assert second["tokens"] == ["<21>", "<22>"] and second["advantage"] == [-1.5, -1.5], "trimmed to its completion"
