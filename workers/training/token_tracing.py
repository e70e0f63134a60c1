"""Per-token values of a sample of episodes, taken from the trainer's own loss computation: no second forward pass.

TRL's `_compute_loss` computes each completion token's log-probability and entropy (it always asks for entropies)
and weighs the loss by the advantages and the loss mask (tool results are not trained on). The subclass below
lends `_get_per_token_logps_and_entropies` a hand that keeps what it returns for the traced rows, and marks each
row of a generated batch with its position (`trainyard_row`), which survives TRL's shuffle and split into micro
batches; position p is the episode the reward function recorded as group p // G, index p % G of this rank.
"""

from __future__ import annotations

from typing import Any

ROW_KEY = "trainyard_row"


class TokenTracer:
    """Which rows to trace (the first `groups` GRPO groups of each step on this rank) and the writing of them."""

    def __init__(self, run_id: int, tokenizer, *, groups: int, group_size: int, rank: int = 0) -> None:
        self.run_id, self.tokenizer, self.groups, self.group_size, self.rank = (
            run_id,
            tokenizer,
            groups,
            group_size,
            rank,
        )
        self.step = 0
        self.first_group = 0
        self.done: set[tuple[int, int]] = set()  # (step, row) written: num_iterations > 1 sees a row again

    def generated(self, step: int, batch_size: int) -> int:
        """A batch was generated for `step`: how many of its first rows are traced."""
        self.step = step
        self.first_group = self.rank * (batch_size // max(1, self.group_size))  # as the episode recorder counts
        return min(batch_size, self.groups * self.group_size)

    def record(self, inputs: dict[str, Any], logps, entropies) -> int:
        """Write the traced rows of one micro batch; the number written."""
        import torch

        from webapp.runs.models import TokenTrace
        from webapp.runs.token_traces import trace_build

        rows = inputs.get(ROW_KEY)
        if rows is None or logps is None:
            return 0
        wanted = self.groups * self.group_size
        picked = [
            (j, int(r)) for j, r in enumerate(rows.tolist()) if r < wanted and (self.step, int(r)) not in self.done
        ]
        if not picked:
            return 0
        completion_mask = inputs["completion_mask"]
        loss_mask = completion_mask * inputs["tool_mask"] if "tool_mask" in inputs else completion_mask
        advantages = inputs["advantages"]
        with torch.no_grad():
            traces = []
            for j, row in picked:
                length = int(completion_mask[j].nonzero().max().item()) + 1 if completion_mask[j].any() else 0
                ids = inputs["completion_ids"][j, :length].tolist()
                adv = advantages[j, :length] if advantages.dim() == 2 else advantages[j].expand(length)
                ent = entropies[j, :length].float().cpu().tolist() if entropies is not None else [0.0] * length
                traces.append(trace_build(
                    run_id=self.run_id, step=self.step, rank=self.rank, index=row % self.group_size,
                    group=self.first_group + row // self.group_size,
                    tokens=self.tokenizer.batch_decode([[i] for i in ids]),
                    logprobs=logps[j, :length].float().cpu().tolist(),
                    entropies=ent,
                    advantages=adv.float().cpu().tolist(), trained=loss_mask[j, :length].int().cpu().tolist(),
                ))  # fmt: skip
                self.done.add((self.step, row))
        TokenTrace.objects.bulk_create(traces, ignore_conflicts=True)
        return len(traces)


def token_tracing_trainer(base: type, tracer: TokenTracer | None) -> type:
    """`base` (a GRPOTrainer) tracing the rows `tracer` picks; `base` itself when nothing is traced."""
    if tracer is None or tracer.groups <= 0:
        return base

    class TokenTracingGRPOTrainer(base):
        def _generate_and_score_completions(self, inputs):
            import torch

            output = super()._generate_and_score_completions(inputs)
            if self.model.training:  # evaluations are not traced
                size = output["completion_ids"].size(0)
                tracer.generated(self.state.global_step + 1, size)
                output[ROW_KEY] = torch.arange(size, device=output["completion_ids"].device)
            return output

        def _compute_loss(self, model, inputs):
            rows = inputs.get(ROW_KEY)
            if rows is None or not model.training:
                return super()._compute_loss(model, inputs)
            kept: dict[str, Any] = {}
            compute = self._get_per_token_logps_and_entropies

            def keeping(*args, **kwargs):
                result = compute(*args, **kwargs)
                kept.setdefault("logps", result[0].detach())
                kept.setdefault("entropies", result[1].detach() if result[1] is not None else None)
                return result

            self._get_per_token_logps_and_entropies = keeping
            try:
                loss = super()._compute_loss(model, inputs)
            finally:
                del self._get_per_token_logps_and_entropies  # the class's own again
            try:
                tracer.record(inputs, kept.get("logps"), kept.get("entropies"))
            except Exception as exc:  # a trace is never worth a run: say so in the log and go on
                print(f"token trace of step {tracer.step} not recorded: {type(exc).__name__}: {exc}", flush=True)
            return loss

    return TokenTracingGRPOTrainer
