"""`trainyard`: the common actions from a laptop with a token (TRAINYARD_URL, TRAINYARD_TOKEN).

trainyard env list [--json]
trainyard run list|show ID|cancel ID [--json]
trainyard run create --env SLUG [--max-steps N] [--config JSON] [--wait] [--json]
trainyard eval show ID [--json]
trainyard sync SPOOL          # send what a finished script left in its spool file
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from trainyard.http import ApiError, call
from trainyard.sender import Spool

FINAL = {"succeeded", "failed", "cancelled", "crashed"}


def _api(args, method: str, path: str, body: Any = None) -> dict:
    return call(method, f"{args.url.rstrip('/')}/api/v1{path}", args.token, body, timeout=60)


def _print(args, value: Any, line: str) -> None:
    print(json.dumps(value, indent=2) if args.json else line)


def _wait(args, run: dict) -> dict:
    while run["status"] not in FINAL:
        done = run["step"] / run["max_steps"] if run["max_steps"] else 0.0
        bar = "#" * int(done * 30)
        print(f"\r[{bar:<30}] {done:4.0%} step {run['step']}/{run['max_steps']} {run['status']:<12}", end="",
              file=sys.stderr, flush=True)  # fmt: skip
        time.sleep(2)
        run = _api(args, "GET", f"/runs/{run['id']}")
    print(file=sys.stderr)
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="trainyard", description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=os.environ.get("TRAINYARD_URL", ""))
    parser.add_argument("--token", default=os.environ.get("TRAINYARD_TOKEN", ""))
    parser.add_argument("--json", action="store_true")
    sub = parser.add_subparsers(dest="what", required=True)
    env = sub.add_parser("env").add_subparsers(dest="action", required=True)
    env.add_parser("list")
    add = env.add_parser("add")
    source = add.add_mutually_exclusive_group(required=True)
    for kind in ("git", "folder", "image", "url"):  # (dest apart from the server's --url)
        source.add_argument(f"--{kind}", dest=f"source_{kind}", help=f"the environment's {kind}")
    add.add_argument("--subdir", default="", help="its folder in the git repository")
    add.add_argument("--ref", default="", help="branch, tag or commit (git)")
    add.add_argument("--name", default="")
    run = sub.add_parser("run").add_subparsers(dest="action", required=True)
    run.add_parser("list")
    for name in ("show", "cancel"):
        run.add_parser(name).add_argument("run_id", type=int)
    create = run.add_parser("create")
    create.add_argument("--env", required=True)
    create.add_argument("--model", default="tiny-local")
    create.add_argument("--max-steps", type=int, default=20)
    create.add_argument("--config", default="{}")
    create.add_argument("--wait", action="store_true")
    evaluation = sub.add_parser("eval").add_subparsers(dest="action", required=True)
    evaluation.add_parser("show").add_argument("eval_id", type=int)
    eval_create = evaluation.add_parser("create")
    eval_create.add_argument("--model", required=True)
    eval_create.add_argument("--env", action="append", required=True, help="SLUG or SLUG@VERSION (repeatable)")
    eval_create.add_argument("--episodes", type=int, default=32)
    eval_create.add_argument("--k", type=int, default=1)
    eval_create.add_argument("--sample", action="store_true", help="sample (default: greedy decoding)")
    eval_create.add_argument("--wait", action="store_true")
    sub.add_parser("sync").add_argument("spool", type=Path)
    args = parser.parse_args(argv)
    if not args.url or not args.token:
        parser.error("set --url and --token (or TRAINYARD_URL and TRAINYARD_TOKEN)")
    try:
        return _run(args)
    except ApiError as exc:
        print(f"trainyard: {exc}", file=sys.stderr)
        return 1


def _run(args) -> int:
    if args.what == "env" and args.action == "add":
        return _env_add(args)
    if args.what == "eval" and args.action == "create":
        found = _api(
            args,
            "POST",
            "/evaluations",
            {
                "model": args.model,
                "environments": args.env,
                "episodes": args.episodes,
                "k": args.k,
                "greedy": not args.sample,
            },
        )
        while args.wait and found["status"] not in FINAL:
            done = found["episodes_done"] / found["episodes_total"] if found["episodes_total"] else 0.0
            print(f"\r[{'#' * int(done * 30):<30}] {done:4.0%} {found['status']:<12}", end="", file=sys.stderr,
                  flush=True)  # fmt: skip
            time.sleep(2)
            found = _api(args, "GET", f"/evaluations/{found['id']}")
        _print(args, found, f"evaluation {found['id']} {found['name']}: {found['status']}")
        return 0 if not args.wait or found["status"] == "succeeded" else 1
    if args.what == "env":
        page = _api(args, "GET", "/environments?limit=500")
        _print(args, page, "\n".join(f"{e['slug']}\t{e['versions'][0]['label'] if e['versions'] else '-'}\t"
                                     f"{e['description'][:60]}" for e in page["items"]))  # fmt: skip
    elif args.what == "eval":
        found = _api(args, "GET", f"/evaluations/{args.eval_id}")
        _print(args, found, f"evaluation {found['id']} {found['name']}: {found['status']}")
    elif args.what == "sync":
        return _sync(args)
    elif args.action == "list":
        page = _api(args, "GET", "/runs?limit=100")
        _print(args, page, "\n".join(f"{r['id']}\t{r['status']}\t{r['kind']}\t{r['name']}" for r in page["items"]))
    elif args.action == "create":
        found = _api(args, "POST", "/runs", {"env": args.env, "model": args.model, "max_steps": args.max_steps,
                                             "config": json.loads(args.config)})  # fmt: skip
        found = _wait(args, found) if args.wait else found
        _print(args, found, f"run {found['id']} {found['name']}: {found['status']}")
        if args.wait and found["never_stepped_environment"]:  # whatever its status says, it learned nothing
            print(f"trainyard: not one tool call of run {found['id']}'s {found['episodes']} episodes reached the "
                  "environment", file=sys.stderr)  # fmt: skip
            return 1
        return 0 if not args.wait or found["status"] == "succeeded" else 1
    else:
        path = f"/runs/{args.run_id}" + ("/cancel" if args.action == "cancel" else "")
        found = _api(args, "POST" if args.action == "cancel" else "GET", path)
        _print(args, found, f"run {found['id']} {found['name']}: {found['status']}")
    return 0


def _env_add(args) -> int:
    """Add an environment through a job on a worker, with its phase and a bar until it is done."""
    kind = next(k for k in ("git", "folder", "image", "url") if getattr(args, f"source_{k}"))
    ref = getattr(args, f"source_{kind}")
    name = args.name or (args.subdir or ref).rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    job = _api(args, "POST", "/environments", {"name": name, "source_kind": kind, "source_ref": ref,
                                               "git_subdir": args.subdir, "git_ref": args.ref})  # fmt: skip
    while job["status"] in ("queued", "running"):
        print(f"\r[{'#' * int(job['progress'] * 30):<30}] {job['progress']:4.0%} {job['phase'][:60]:<60}", end="",
              file=sys.stderr, flush=True)  # fmt: skip
        time.sleep(1)
        job = _api(args, "GET", f"/jobs/{job['id']}")
    print(file=sys.stderr)
    if job["status"] != "succeeded":
        errors = "; ".join(f"{field}: {' '.join(messages)}" for field, messages in job["errors"].items())
        print(f"trainyard: adding {name} failed: {errors}", file=sys.stderr)
        return 1
    _print(args, job["result"], f"added {job['result']['slug']} ({args.url.rstrip('/')}{job['result']['url']})")
    return 0


def _sync(args) -> int:
    """Send a spool file's batches (each recorded once by its key, however often it is sent)."""
    name = args.spool.name  # HOST-run-ID.jsonl
    run_id = int(name.rsplit("-run-", 1)[1].removesuffix(".jsonl"))
    spool = Spool(args.spool)
    pending = spool.pending()
    for number, batch in enumerate(pending, start=1):
        answer = _api(args, "POST", f"/runs/{run_id}/log", batch)
        spool.ack(batch["batch_id"])
        print(f"\r{number}/{len(pending)} batches sent{' (already there)' if answer['duplicate'] else ''}",
              end="", file=sys.stderr)  # fmt: skip
    print(file=sys.stderr)
    spool.clear_if_done()
    return 0


if __name__ == "__main__":
    sys.exit(main())
