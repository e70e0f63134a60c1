#!/usr/bin/env bash
# `make test`'s pytest, in two lanes side by side: most of the suite waits (on trainers, servers, browsers, the
# database), so two lanes on two cores take far less wall time than one.
#   lane A: the tiny model's build (5 to 15 minutes on its one thread, as busy as the other lane keeps the CPU; .ci/run
#           makes it beforehand, beside its package installs), then the slow tests that need no Docker (training,
#           several processes);
#   lane B: everything else (unit and page tests, the browser tests, every Docker test and the compose stack — Docker
#           tests clean up the engine's managed containers, so they all live in one lane), and the slow tests marked
#           lane_b (Slurm, the broker down, evaluations, supervision), which balance the lanes.
# Each lane has its own database, Redis database, data folder (so its own store and embedded Redis) and temporary
# folder; they share the cache (the tiny model, warm starts, images: content-keyed and built under locks).
# TEST_LANES=1, or any PYTEST_ARGS, runs one pytest as before.
set -uo pipefail
durations=(--durations=20)
if [ "${TEST_LANES:-2}" = 1 ] || [ -n "${PYTEST_ARGS:-}" ]; then
  exec pytest "${durations[@]}" ${PYTEST_ARGS:-}
fi

# Each lane's torch gets its share of the cores. Left alone, every trainer, warm start and model build opens one
# OpenMP thread per core; two lanes then run twice as many spinning threads as there are cores, and each parallel
# region waits for a thread the other lane holds: two tiny-model builds side by side took 417 s with one thread each,
# and were only half done after 420 s with two each (2 cores). A value set by the caller is kept.
cores=$(nproc 2>/dev/null || echo 2)
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(( cores / 2 > 0 ? cores / 2 : 1 ))}"
export MKL_NUM_THREADS="${MKL_NUM_THREADS:-$OMP_NUM_THREADS}"

data="${TRAINYARD_DATA_DIR:?}"
lane_b_env=(TRAINYARD_DATA_DIR="$data-b")
if [ -n "${DATABASE_URL:-}" ]; then
  case "$DATABASE_URL" in
    postgres*://*/*) lane_b_env+=(DATABASE_URL="${DATABASE_URL%%\?*}_lane_b") ;;
    *) echo "tests/lanes.sh: cannot give lane B a database of its own from DATABASE_URL=$DATABASE_URL" >&2; exit 2 ;;
  esac
fi  # unset: each lane's SQLite file lies in its own data folder
if [ -n "${REDIS_URL:-}" ]; then
  if [[ "$REDIS_URL" =~ ^(rediss?://[^/]+)/([0-9]+)$ ]]; then
    n=${BASH_REMATCH[2]}
    lane_b_env+=(REDIS_URL="${BASH_REMATCH[1]}/$(( n > 0 ? n - 1 : n + 1 ))")
  else
    echo "tests/lanes.sh: cannot give lane B a Redis database of its own from REDIS_URL=$REDIS_URL" >&2; exit 2
  fi
fi  # unset: each lane's embedded Redis lies in its own data folder

mkdir -p "$data"
lane_a_log="$data/lane-a.log"
started=$(date +%s)
# Lane A starts with the tiny model: most of its tests train on it or on a warm start made from it. Built inside a test
# it could pass pytest's 600 s limit beside the other lane (a cold CI machine here: every test that needed it failed
# with that one timeout), so it is built first, outside pytest, with the lane's share of the cores (the thread count
# changes a trained model's last bits, and the tests' expectations were set on this build). Lane B's few tests that
# need it come late and wait for it under the cache's lock; a cache that has it skips this in a second.
{
  echo "==> the tiny model the training tests share (built once per cache folder)"
  python -m workers.models.tiny 2>&1 | tr '\r' '\n' | grep --line-buffered -E "step [0-9]*0/|ready|Error|error" | uniq
  [ "${PIPESTATUS[0]}" = 0 ] && exec pytest "${durations[@]}" -m "slow and not docker and not lane_b" --basetemp="$data/tmp-a" \
    -p no:cacheprovider
} > "$lane_a_log" 2>&1 &
lane_a=$!
trap 'kill $lane_a 2>/dev/null' EXIT
echo "==> lane B (everything but lane A) here; lane A (the tiny model, then the slow tests without Docker, but those marked lane_b) beside it, shown when it ends"
env "${lane_b_env[@]}" pytest "${durations[@]}" -m "not slow or docker or lane_b" --basetemp="$data-b/tmp-b" -p no:cacheprovider
status_b=$?
ended_b=$(date +%s)
wait $lane_a
status_a=$?
trap - EXIT
echo
echo "==> lane A (the slow tests without Docker, but those marked lane_b)"
cat "$lane_a_log"
echo
ended_a=$(stat -c %Y "$lane_a_log")  # its last line is pytest's summary
printf '==> lanes: A %s, B %s; A ended after %d s, B after %d s, both after %d s\n' \
  "$([ $status_a = 0 ] && echo passed || echo FAILED)" "$([ $status_b = 0 ] && echo passed || echo FAILED)" \
  $((ended_a - started)) $((ended_b - started)) $(($(date +%s) - started))
[ $status_a = 0 ] && [ $status_b = 0 ]
