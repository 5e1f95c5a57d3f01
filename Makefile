# The two commands the README promises: `make demo` (set up + run the main job) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
BENCH := $(VENV)/bin/bench

.PHONY: setup demo test test-slow test-latest upgrade lint schema bench-compile

LOCK := requirements/lock.txt

setup: $(VENV)/.installed

# Installs exactly the versions in the committed lock (hashes checked), so the same commit installs
# the same packages forever; the project itself goes in editable, without touching its dependencies.
# Its modules are byte-compiled as pip compiles an installed wheel's: an editable install is
# otherwise compiled from source by every process that imports it where PYTHONDONTWRITEBYTECODE
# is set (CI images and containers set it), 0.3-1 s of CPU per `bench` process. A stale .pyc is
# never used (Python checks the source's size and mtime), so editing needs no re-run.
$(VENV)/.installed: pyproject.toml $(LOCK)
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --require-hashes --no-deps -r $(LOCK)
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	$(PY) -m pip check
	$(PY) -m compileall -q -j 0 cli compiler specs runtime reports >/dev/null
	touch $@

# Regenerate the lock from pyproject.toml's ranges (the newest versions they allow, for every
# platform), then `make test` to see what changed. Upgrades are deliberate: commit the new lock.
upgrade: setup
	$(VENV)/bin/uv pip compile pyproject.toml --extra dev --universal --python-version 3.11 \
	  --generate-hashes --no-header --upgrade -o $(LOCK)

# The suite against the newest versions pyproject.toml allows, in a separate venv (.venv-latest),
# without touching the lock: tells whether a release published since the lock breaks us.
test-latest:
	rm -rf .venv-latest
	python3 -m venv .venv-latest
	.venv-latest/bin/python -m pip install -q --upgrade pip
	.venv-latest/bin/python -m pip install -q --upgrade -e '.[dev]'
	.venv-latest/bin/python -m pip freeze --exclude-editable > .venv-latest/versions.txt
	.venv-latest/bin/python -m pytest -q

# The main job on embedded defaults (no API keys): compile every reference pack, run each with
# its scripted demo agent and the deterministic rules simulator and judges (all five protocols;
# the two packs running pack Python need --allow-python), store every event in bench.duckdb,
# print the summary report and write report.html.
DEMO_RUN = $(BENCH) run --quiet --db bench.duckdb --simulator rules --judge rules
demo: setup
	@set -e; for pack in taskpacks/*/; do \
	  name=$$(basename $$pack); \
	  $(BENCH) compile $$pack -o build/$$name --strict --ablation; \
	done
	$(BENCH) graph taskpacks/pharmacist-week
	rm -f bench.duckdb
	$(DEMO_RUN) build/pharmacist-week --agent scripted:taskpacks/pharmacist-week/demo/agent.yaml
	$(DEMO_RUN) build/mussel-genome-search --agent scripted:taskpacks/mussel-genome-search/demo/agent.yaml \
	  --simulator scripted:taskpacks/mussel-genome-search/demo/simulator.yaml
	$(DEMO_RUN) build/proact-quilt-show --agent scripted:taskpacks/proact-quilt-show/demo/proactive_agent.yaml
	$(DEMO_RUN) build/claw-lab-ops --agent scripted:taskpacks/claw-lab-ops/demo/agent.yaml --repeats 3
	$(DEMO_RUN) build/bookshop-service --allow-python \
	  --agent scripted:taskpacks/bookshop-service/demo/agent.yaml \
	  --simulator scripted:taskpacks/bookshop-service/demo/simulator.yaml
	$(DEMO_RUN) build/claw-ops-desk --allow-python --agent scripted:taskpacks/claw-ops-desk/demo/agent.yaml
	$(DEMO_RUN) build/fibre-help-desk --allow-python \
	  --agent scripted:taskpacks/fibre-help-desk/demo/agent.yaml \
	  --simulator scripted:taskpacks/fibre-help-desk/demo/simulator.yaml
	$(BENCH) report summary --run all --db bench.duckdb
	$(BENCH) report --format html --run all --db bench.duckdb -o report.html

test: setup
	$(PY) -m pytest -q -m 'not real_api and not slow'

# The slow cases (real harness CLIs, Ray clusters, headless Chromium, SIGKILL loops): CI runs
# them after `make test`, which stays within the suite's time budget without them.
test-slow: setup
	$(PY) -m pytest -q -m 'slow and not real_api'

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

schema: setup
	$(BENCH) schema -o schemas

bench-compile: setup
	$(PY) benchmarks/compile_bench.py
