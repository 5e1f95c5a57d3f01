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

# The main job on embedded defaults (no API keys): compile every reference pack, then run the
# intent-tracking pack with its scripted demo agent and the rule-based simulator and judges,
# storing every event in bench.duckdb.
demo: setup
	@set -e; for pack in taskpacks/*/; do \
	  name=$$(basename $$pack); \
	  $(BENCH) compile $$pack -o build/$$name --strict; \
	done
	$(BENCH) graph taskpacks/pharmacist-week
	$(BENCH) run build/pharmacist-week --agent scripted:taskpacks/pharmacist-week/demo/agent.yaml \
	  --simulator rules --judge rules --db bench.duckdb

test: setup
	$(PY) -m pytest -q

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

schema: setup
	$(BENCH) schema -o schemas

bench-compile: setup
	$(PY) benchmarks/compile_bench.py
