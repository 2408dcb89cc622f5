# Two commands for a fresh machine:
#   make demo   - set everything up, start Kafka, run the end-to-end demo
#   make test   - set everything up, run the test suite (unit + integration + one chaos pass)
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
JARS   := .lk/jars/.fetched

.PHONY: setup demo test scenarios cluster chaos lint bench bench-long bench-scaling clean down airflow-screenshot report-screenshot

setup: $(STAMP) $(JARS)

$(STAMP): pyproject.toml constraints.txt
	infra/install-system-deps.sh
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip "setuptools>=69" wheel
	$(BIN)/pip install -q -c constraints.txt -e '.[dev]'
	@touch $@

$(JARS): $(STAMP) infra/maven/spark/pom.xml infra/maven/broker/pom.xml infra/maven/s3/pom.xml
	$(BIN)/lk infra fetch
	@touch $@

demo: setup
	bin/demo

test: setup
	$(BIN)/pytest -m "(unit or integration or chaos) and not scenario" -q --durations=15

scenarios: setup
	$(BIN)/pytest -m scenario -q --durations=15

# The platform on a local Spark standalone cluster and Delta on the object store (SeaweedFS),
# faults included (docs/scaling.md); each test starts and stops its own pieces. Not in CI.
cluster: setup
	$(BIN)/pytest -m cluster -q --durations=15

# Faults on purpose, 20 passes over every scenario; the table goes to benchmarks/results/chaos.md.
chaos: setup
	$(BIN)/lk chaos --runs 20

# Style, the import contracts, and types over every package ([tool.mypy] in pyproject.toml;
# CI runs the type check as tests/test_types.py).
lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/lint-imports && $(BIN)/mypy

# The 90-minute steady-state comparison at 5,000 events/s (issue 32): lk, the views floor and
# the tuned floor one after the other (about 5 hours); per 10-minute slice in the JSON.
bench-long: setup
	$(BIN)/python -m benchmarks.freshness --rate 5000 --seconds 5400 --discard 600 \
		--contenders lk floor-views floor-tuned \
		--output benchmarks/results/freshness_5000_90min.json

bench: setup
	$(BIN)/python -m benchmarks.producer_throughput
	$(BIN)/python -m benchmarks.replay_throughput
	$(BIN)/python -m benchmarks.serving_latency
	$(BIN)/python -m benchmarks.serving_reload
	$(BIN)/python -m benchmarks.split_reload
	$(BIN)/python -m benchmarks.join_lookback
	$(BIN)/python -m benchmarks.recompute_vs_replay
	$(BIN)/python -m benchmarks.small_work
	$(BIN)/python -m benchmarks.view_cost
	$(BIN)/python -m benchmarks.micro_batch_profile
	$(BIN)/python -m benchmarks.micro_batch_profile --per-write --output benchmarks/results/micro_batch_writes.json
	$(BIN)/python -m benchmarks.micro_batch_profile --events 300000 --offsets 28000 --output benchmarks/results/first_micro_batch_lk.json
	$(BIN)/python -m benchmarks.micro_batch_profile --events 300000 --offsets 28000 --contender floor --output benchmarks/results/first_micro_batch_floor.json
	$(BIN)/python -m benchmarks.micro_batch_profile --events 300000 --offsets 28000 --contender floor-views --output benchmarks/results/first_micro_batch_floor_views.json
	$(BIN)/python -m benchmarks.freshness
	$(BIN)/python -m benchmarks.freshness --rate 1000 --seconds 420 --contenders lk serving-floor \
		--output benchmarks/results/freshness_1000_lk_vs_serving_floor.json
	$(BIN)/python -m benchmarks.freshness --rate 5000 --seconds 300 --contenders lk serving-floor \
		--output benchmarks/results/freshness_5000_lk_vs_serving_floor.json
	$(BIN)/python -m benchmarks.sustainable_rate

# Batch recompute and Kappa replay on local[2], 1 and 2 workers, local disk and the object
# store, side by side (EVENTS=1000000 by default); JSON into benchmarks/results/scaling.json.
EVENTS ?= 1000000
bench-scaling: setup
	$(BIN)/python -m benchmarks.scaling --events $(EVENTS)

# A screenshot of the Airflow grid after a run (Airflow up via `lk airflow up`).
airflow-screenshot: setup
	infra/install-system-deps.sh
	$(BIN)/python bin/airflow-screenshot lambda_nightly

# A PNG of an lk compare report, with a check that its plots rendered (REPORT=folder).
REPORT ?= .lk/reports/demo
report-screenshot: setup
	infra/install-system-deps.sh
	$(BIN)/python -m compare.screenshot $(REPORT)/report.html docs/img/lk-compare-report.png

down:
	-$(BIN)/lk airflow down
	-$(BIN)/lk infra down

clean: down
	rm -rf .lk $(VENV)
