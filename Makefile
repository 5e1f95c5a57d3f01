# The two commands the README promises: `make demo` (set up + run the main job) and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
BENCH := $(VENV)/bin/bench

.PHONY: setup demo test lint schema bench-compile

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

# The main job on embedded defaults (no API keys): compile every reference pack, run each with
# its scripted demo agent and the deterministic rules simulator and judges (all four protocols),
# store every event in bench.duckdb, print the summary report and write report.html.
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
	$(BENCH) report summary --run all --db bench.duckdb
	$(BENCH) report --format html --run all --db bench.duckdb -o report.html

test: setup
	$(PY) -m pytest -q

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

schema: setup
	$(BENCH) schema -o schemas

bench-compile: setup
	$(PY) benchmarks/compile_bench.py
