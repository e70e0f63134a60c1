"""The built-in "tiny-local (CPU)" model: a small Qwen3-architecture model made here, with no Hub access.

1. Synthetic tool-calling conversations are played against the built-in environments in-process, by scripted
   policies (bisection, shortest paths, word elimination), with the exact tool schemas and observation text the
   trainer's adapter produces.
2. A byte-level BPE tokenizer is trained on them; its chat template is TRL's own qwen3 template, read from the
   installed TRL byte for byte (TRL recognises templates only by exact match).
3. A randomly initialised model is warmed up by a short SFT (assistant tokens only): a random model never emits a
   parseable tool call, so GRPO would see zero reward everywhere.

The result is cached under a key of the recipe (webapp.artifacts.model_names), and rebuilt when the code that built it
changed (`builder_fingerprint`); `ensure_tiny_model()` builds it once.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import random
import shutil
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envs.adapter import format_observation, tool_env_class
from envs.prompts import default_prompt
from envs.providers.server_stack import import_server_stack
from envs.tools import tools_from_action_schema
from webapp.artifacts.layout import data_dir
from webapp.artifacts.model_names import TINY_RECIPE, tiny_model_dir

RECIPE = TINY_RECIPE
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
EXTRA_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]


# -- the built-in environments, in-process ---------------------------------------------------------------------
def builtin_games() -> dict[str, dict[str, Any]]:
    import_server_stack()  # as a server imports it: without Gradio's 7 s
    from envs.grid_catch.models import MoveAction
    from envs.grid_catch.server.environment import GridCatchEnvironment
    from envs.guess_number.models import GuessAction
    from envs.guess_number.server.environment import GuessNumberEnvironment
    from envs.word_guess.models import WordGuessAction
    from envs.word_guess.server.environment import WordGuessEnvironment

    return {
        "guess-number": {"env": GuessNumberEnvironment, "action": GuessAction, "policy": bisection,
                         "description": "Find a hidden whole number from higher/lower hints; fewer guesses earn more."},
        "word-guess": {"env": WordGuessEnvironment, "action": WordGuessAction, "policy": word_elimination,
                       "description": "A Wordle-like game: find the five-letter word from per-letter feedback."},
        "grid-catch": {"env": GridCatchEnvironment, "action": MoveAction, "policy": shortest_path,
                       "description": "Walk a small grid world with a move tool and reach the goal."},
    }  # fmt: skip


def bisection(obs: dict, memory: dict, rng: random.Random) -> dict:
    if obs.get("hint") == "start":
        memory["low"], memory["high"] = obs["low"], obs["high"]
    elif obs.get("hint") == "higher":
        memory["low"] = memory["last"] + 1
    elif obs.get("hint") == "lower":
        memory["high"] = memory["last"] - 1
    low, high = memory["low"], max(memory["low"], memory["high"])
    guess = (low + high) // 2 if rng.random() < 0.8 else rng.randint(low, high)
    memory["last"] = guess
    return {"number": guess}


def word_elimination(obs: dict, memory: dict, rng: random.Random) -> dict:
    from envs.word_guess.server.environment import mark, word_list

    candidates = memory.setdefault("candidates", list(word_list()))
    if obs.get("feedback") and obs.get("guessed"):
        memory["candidates"] = candidates = [
            w for w in candidates if mark(w, obs["guessed"]) == obs["feedback"] and w != obs["guessed"]
        ]
    return {"word": rng.choice(candidates or list(word_list()))}


def shortest_path(obs: dict, memory: dict, rng: random.Random) -> dict:
    board = obs["board"].splitlines()
    moves = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
    start, goal = tuple(obs["position"]), tuple(obs["goal"])
    queue, seen = deque([(start, None)]), {start}
    while queue:
        (r, c), first = queue.popleft()
        if (r, c) == goal:
            return {"direction": first or rng.choice(list(moves))}
        for name, (dr, dc) in moves.items():
            nr, nc = r + dr, c + dc
            if 0 <= nr < len(board) and 0 <= nc < len(board[0]) and board[nr][nc] != "#" and (nr, nc) not in seen:
                seen.add((nr, nc))
                queue.append(((nr, nc), first or name))
    return {"direction": rng.choice(list(moves))}


def tool_schemas(action_cls) -> tuple[list[dict], str]:
    """The JSON schemas the model sees, made exactly as in training: through the adapter's generated methods."""
    from transformers.utils import get_json_schema

    specs = tools_from_action_schema(action_cls.model_json_schema())
    cls = tool_env_class(name="probe", tools=specs, endpoints=["http://127.0.0.1:1"])
    return [get_json_schema(getattr(cls, s.name)) for s in specs], specs[0].name


def play_conversation(game: dict, seed: int, rng: random.Random, max_turns: int = 8) -> dict:
    schemas, tool_name = tool_schemas(game["action"])
    env = game["env"]()
    obs = env.reset(seed=seed).model_dump()
    prompt = default_prompt(description=game["description"], tool_names=[tool_name])
    messages = [{"role": "user", "content": prompt + "\n\n" + format_observation(obs)}]
    memory: dict = {}
    for _ in range(max_turns):
        arguments = game["policy"](obs, memory, rng)
        messages.append(
            {"role": "assistant", "content": "",
             "tool_calls": [{"type": "function", "function": {"name": tool_name, "arguments": json.dumps(arguments)}}]}
        )  # fmt: skip
        obs = env.step(game["action"](**arguments)).model_dump()
        messages.append({"role": "tool", "name": tool_name, "content": format_observation(obs)})
        if obs["done"]:
            break
    messages.append({"role": "assistant", "content": "Done."})
    return {"messages": messages, "tools": json.dumps(schemas), "seed": seed}


def synthetic_conversations(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    games = list(builtin_games().values())
    return [play_conversation(games[i % len(games)], seed=rng.randint(0, 10**6), rng=rng) for i in range(n)]


# -- tokenizer, model, SFT ---------------------------------------------------------------------------------
def train_tokenizer(conversations: list[dict]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_chat_template

    def corpus():
        for conv in conversations:
            yield conv["tools"]
            for m in conv["messages"]:
                yield m.get("content") or ""
                for call in m.get("tool_calls", []):
                    yield json.dumps({"name": call["function"]["name"], "arguments": call["function"]["arguments"]})
        yield qwen3_chat_template

    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=RECIPE["vocab"],
        special_tokens=SPECIAL_TOKENS + EXTRA_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=EXTRA_TOKENS,
    )
    fast.chat_template = qwen3_chat_template  # byte for byte: TRL matches templates exactly
    return fast


def build_tiny_model(out_dir: Path, *, progress: Callable[[str, float], None] | None = None) -> Path:
    import datasets
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    progress = progress or (lambda message, fraction: None)
    datasets.disable_progress_bars()
    torch.manual_seed(RECIPE["seed"])
    progress("playing synthetic tool-calling episodes", 0.02)
    conversations = synthetic_conversations(RECIPE["conversations"], RECIPE["seed"])
    progress("training the tokenizer", 0.08)
    tokenizer = train_tokenizer(conversations)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=RECIPE["hidden"],
        intermediate_size=RECIPE["hidden"] * 3,
        num_hidden_layers=RECIPE["layers"],
        num_attention_heads=RECIPE["heads"],
        num_key_value_heads=RECIPE["kv_heads"],
        head_dim=RECIPE["hidden"] // RECIPE["heads"],
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    model = Qwen3ForCausalLM(config)
    sft_save(model, tokenizer, conversations, out_dir, epochs=RECIPE["epochs"], lr=RECIPE["lr"], seed=RECIPE["seed"],
             recipe=RECIPE, progress=progress)  # fmt: skip
    return out_dir


# The tokens of one conversation that SFT trains on: TRL cuts a longer one there, so its later calls teach nothing.
SFT_MAX_LENGTH = 1024


def sft_save(
    model,
    tokenizer,
    conversations: list[dict],
    out_dir: Path,
    *,
    epochs: float,
    lr: float,
    seed: int,
    recipe: dict,
    progress: Callable[[str, float], None],
    warmup_steps: int = 10,
    builder: str = "tiny",
    like_lengths: bool = False,
    rounds: int = 1,
    learned: Callable[[Any, Any], tuple[bool, str]] | None = None,
) -> Path:
    """A short SFT on tool-calling conversations (assistant tokens only), saved so that `out_dir` appears whole or
    not at all. Shared by the tiny model's build and every warm start.

    `learned(model, tokenizer)` → (enough, what it measured), asked after each round of `epochs`: a round more (its
    own warm-up and cosine decay, from where the last ended) while it says not enough, up to `rounds`; what it
    measured last is recorded with the model (`learned`, `sft_rounds`).

    `like_lengths` batches conversations of like lengths: attention is most of a step at this size (a short hidden
    size, long conversations) and grows with the square of a batch's longest, which random batches padded 38 %
    (3.0 against 4.2 s a step). Only for one environment's conversations: the tiny model's three games differ in
    length, so its like-length batches were batches of one game, and the model it made called one game's tool in
    another (`guess_word` on guess-number)."""
    from datasets import Dataset
    from transformers import PrinterCallback, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    work = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)

    class Progress(TrainerCallback):
        """Round 1 fills the bar; a later round (of at most `rounds`) says its steps in words at the bar's end."""

        def __init__(self, round_: int) -> None:
            self.round = round_

        def on_log(self, args, state, control, logs=None, **kwargs):
            if state.max_steps:
                accuracy = (logs or {}).get("mean_token_accuracy")
                note = f" (token accuracy {accuracy:.0%})" if accuracy is not None else ""
                done = state.global_step / state.max_steps
                where = f" (round {self.round} of at most {rounds})" if self.round > 1 else ""
                progress(f"SFT warm start step {state.global_step}/{state.max_steps}{where}{note}",
                         0.1 + 0.88 * done if self.round == 1 else 0.98)  # fmt: skip

    args = SFTConfig(
        output_dir=str(work / "sft"),
        num_train_epochs=epochs,
        per_device_train_batch_size=16,
        train_sampling_strategy="group_by_length" if like_lengths else "random",
        learning_rate=lr,
        lr_scheduler_type="cosine",
        warmup_steps=warmup_steps,
        logging_steps=5,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        assistant_only_loss=True,
        max_length=SFT_MAX_LENGTH,
        seed=seed,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )
    dataset = Dataset.from_list([{"messages": c["messages"], "tools": c["tools"]} for c in conversations])
    measured: dict[str, Any] = {}
    for round_ in range(1, rounds + 1):
        trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                             callbacks=[Progress(round_)])  # fmt: skip
        trainer.remove_callback(PrinterCallback)  # our bar says it; the raw log dicts would break the bar's line
        trainer.train()
        if learned is None:
            break
        enough, said = learned(model, tokenizer)
        measured = {"sft_rounds": round_, "learned": said}
        progress(f"SFT round {round_}: {said}", 0.98)
        if enough:
            break
    progress("saving", 0.99)
    model.save_pretrained(work)
    tokenizer.save_pretrained(work)
    record = {**recipe, **measured, "builder": builder, "fingerprint": builder_fingerprint(builder)}
    (work / "trainyard-recipe.json").write_text(json.dumps(record, indent=2))
    shutil.rmtree(work / "sft", ignore_errors=True)
    shutil.rmtree(out_dir, ignore_errors=True)
    work.rename(out_dir)  # appears whole or not at all
    progress("ready", 1.0)
    return out_dir


# What a model Trainyard makes depends on besides its recipe: the code that plays, tokenizes and trains, and the
# libraries whose formats it writes. A cache shared by several checkouts must never serve a model of other code. Each
# builder has its own sources, so that a change to the warm start's player leaves the tiny model (minutes of CPU: the
# base of every warm start) in the cache; a warm start depends on all that the tiny model does, and on its player.
TINY_SOURCES = (
    "workers/models/tiny.py", "envs/adapter.py", "envs/tools.py", "envs/prompts.py", "envs/mcp_tools.py",
    "envs/refusals.py", "envs/volatile.py", "envs/guess_number", "envs/word_guess", "envs/grid_catch",
)  # fmt: skip
BUILDER_SOURCES = {"tiny": TINY_SOURCES, "warmstart": (*TINY_SOURCES, "workers/models/warmstart.py", "envs/actions.py")}
REPO_ROOT = Path(__file__).resolve().parents[2]


def _code_of(file: Path) -> bytes:
    """A source file as Python reads it, without its comments and layout: a reworded comment or a reformatted line
    builds nothing again. Docstrings stay: an environment's become its tools' descriptions, which a model reads."""
    stat = file.stat()
    return _parsed_code(str(file), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _parsed_code(path: str, mtime_ns: int, size: int) -> bytes:  # keyed by the file's state: parsed once per edit
    source = Path(path).read_bytes()
    try:
        return ast.dump(ast.parse(source)).encode()
    except SyntaxError:
        return source


def builder_fingerprint(builder: str = "tiny") -> str:
    """A digest of the code a builder ("tiny" or "warmstart") runs, and of the pinned libraries."""
    from importlib.metadata import version

    digest = hashlib.sha256()
    for name in BUILDER_SOURCES[builder]:
        path = REPO_ROOT / name
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(str(file.relative_to(REPO_ROOT)).encode())
            digest.update(_code_of(file))
    for package in ("torch", "trl"):  # the pinned ones (an image resolves the ranged ones on its own)
        digest.update(f"{package}=={version(package)}".encode())
    return digest.hexdigest()[:16]


def record_current(record: str) -> bool:
    """A model's recipe file (its text) was written by a builder whose code here is the code that built it."""
    try:
        body = json.loads(record)
    except ValueError:
        return False
    builder = body.get("builder") if isinstance(body, dict) else None
    return builder in BUILDER_SOURCES and body.get("fingerprint") == builder_fingerprint(builder)


def model_current(folder: Path) -> bool:
    """A model folder is whole (config.json) and was built by this code (its recorded fingerprint)."""
    record = folder / "trainyard-recipe.json"
    return (folder / "config.json").exists() and record.exists() and record_current(record.read_text())


def built_once(target: Path, build: Callable[[], Path]) -> Path:
    """`target` if current, else `build()` under a lock: two processes asking at once build it once."""
    if model_current(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    import fcntl

    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if model_current(target):
            return target
        return build()


def ensure_tiny_model(*, progress: Callable[[str, float], None] | None = None) -> Path:
    """The tiny model's folder, built first if it is missing or was built by other code."""
    target = tiny_model_dir()
    legacy = data_dir() / "models" / target.name  # where it was kept before the cache folder existed
    if not target.exists() and (legacy / "config.json").exists() and not legacy.is_symlink():
        target.parent.mkdir(parents=True, exist_ok=True)
        legacy.rename(target)
    return built_once(target, lambda: build_tiny_model(target, progress=progress))


def main() -> None:
    import argparse
    import os

    import django
    from tqdm import tqdm

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
    django.setup()
    argparse.ArgumentParser(description="Build the tiny local model (cached in TRAINYARD_CACHE_DIR).").parse_args()
    bar = tqdm(total=100, unit="%", bar_format="{l_bar}{bar}| {n:.0f}% {postfix}")

    def show(message: str, fraction: float) -> None:
        bar.n = round(fraction * 100)
        bar.set_postfix_str(message)
        bar.refresh()

    path = ensure_tiny_model(progress=show)
    bar.close()
    print(path)


if __name__ == "__main__":
    main()
