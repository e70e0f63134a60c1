"""`python -m workers.models.tokenizer_check MODEL`: can TRL drive this model's tokenizer with tools? Prints one JSON
line (the pre-flight runs it, so that a Hub that cannot be reached costs seconds, never the worker)."""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def main(model: str) -> dict:
    try:
        from transformers import AutoTokenizer
        from trl.chat_template_utils import supports_tool_calling

        tokenizer = AutoTokenizer.from_pretrained(model)
    except Exception as exc:
        return {"ok": False, "reason": f"cannot load a tokenizer from {model!r}: {type(exc).__name__}: {exc}"[:500]}
    if not getattr(tokenizer, "chat_template", None):
        return {"ok": False, "reason": f"{model} has no chat template"}
    try:
        ok = supports_tool_calling(tokenizer)
    except Exception as exc:
        return {"ok": False, "reason": f"TRL does not recognise {model}'s chat template for tools: {exc}"[:500]}
    return {"ok": bool(ok), "reason": "" if ok else f"{model}'s chat template does not support tool calls"}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
