"""What runs inside the Celery worker process: its tasks, the one life cycle of runs and evaluations (claim,
provision, supervise, finish), jobs (pre-flight, test drive), its heartbeat, standby processes, the reaper. Never
imports torch: the subprocesses it supervises do (workers.training)."""
