# The README's two commands: `make demo` (the dashboard, a worker and a live demo run) and `make test`.
# Both set up everything from a fresh clone; a second run skips what is already installed.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export TRL_EXPERIMENTAL_SILENCE := 1

.PHONY: demo test setup lint format bench clean

$(STAMP): pyproject.toml client/pyproject.toml package.json
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, pinned: this takes the CPU wheel on a machine without a GPU and never a CUDA build here.
	$(PY) -m pip install -q torch==2.13.0
	# The rest, and the Python client (client/: its own package, import name trainyard, for its tests and the
	# benches), with uv (a dependency of ours: it builds environments' virtual environments): from its cache it links
	# what pip unpacked again every time (15 s here where pip took 7 minutes of every CI run); torch above is kept.
	$(PY) -m pip install -q 'uv>=0.9'
	$(VENV)/bin/uv pip install --python $(PY) -q -e '.[dev]' -e ./client
	$(PY) -m pip check
	npm ci --no-audit --no-fund --loglevel=error
	@touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput -v 0
	@# Redis first (the bundled one, unless REDIS_URL names another), so that work queued by bootstrap reaches it;
	@# it stops with the demo.
	@$(PY) -m webapp.core.embedded_redis --background
	@trap '$(PY) -m webapp.core.embedded_redis --stop' EXIT; \
	  $(PY) manage.py bootstrap && \
	  echo "Trainyard: http://$${TRAINYARD_HOST:-127.0.0.1}:$${TRAINYARD_PORT:-8000}/  (Ctrl-C stops everything)" && \
	  $(VENV)/bin/honcho start -f Procfile

# Tests run on the embedded default unless DATABASE_URL / REDIS_URL say otherwise (.ci/run sets them);
# their data folder is apart from the demo's so a running demo and its worker never see test traffic. What can be
# built again (the tiny model, warm starts: keyed by their recipe and checked against the code that built them) is
# cached in a folder every checkout on this machine shares, so a fresh clone builds none of it twice. pytest runs
# in two lanes side by side (tests/lanes.sh says how they are split; TEST_LANES=1 or PYTEST_ARGS: one pytest); each
# lane lists its 20 slowest tests.
TEST_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/trainyard
test: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	TRAINYARD_DATA_DIR=$${TRAINYARD_DATA_DIR:-$(CURDIR)/var/test} TRAINYARD_CACHE_DIR=$${TRAINYARD_CACHE_DIR:-$(TEST_CACHE)} \
	  PYTEST_ARGS="$(PYTEST_ARGS)" bash tests/lanes.sh

lint:
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

bench: setup
	@for b in bench/*.py; do case $$b in */smoke.py|*/pg_setup.py|*/step_timing.py) continue;; esac; echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf var
