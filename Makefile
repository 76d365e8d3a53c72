# The two commands: `make run` and `make test`. Everything else here serves them.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
TEST_ENV := TRUSTRAG_VAR_DIR=var/test EMBEDDED_REDIS_PORT=6391

.PHONY: run test faults load stop lint format install install-browser install-ocr clean-var

run: install
	@sh scripts/install-ocr.sh --optional
	$(PY) manage.py serve

test: install install-browser install-ocr
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	@$(TEST_ENV) $(PY) -m pytest $(PYTEST_ARGS); status=$$?; \
	$(TEST_ENV) $(MAKE) --no-print-directory stop >/dev/null 2>&1; exit $$status

# The fault tests alone (they are part of `make test` too): a worker SIGKILLed mid-ingestion,
# Redis stopped during uploads and questions, Postgres restarted under load, providers down or slow.
FAULT_TESTS := tests/ops/test_ingest_faults.py tests/ops/test_faults_redis.py tests/ops/test_faults_postgres.py tests/ops/test_worker_connections.py \
	"tests/queries/test_generation.py::test_a_groq_timeout_hands_over_to_zhipuai_within_the_timeout_plus_one_second" \
	"tests/queries/test_generation.py::test_when_both_providers_fail_the_local_provider_answers" \
	"tests/queries/test_generation.py::test_a_rate_limited_groq_falls_back_to_zhipuai" \
	"tests/queries/test_generation.py::test_a_stream_that_trickles_past_the_timeout_is_abandoned"

faults: install
	@$(TEST_ENV) $(PY) -m pytest $(FAULT_TESTS) $(PYTEST_ARGS); status=$$?; \
	$(TEST_ENV) $(MAKE) --no-print-directory stop >/dev/null 2>&1; exit $$status

# Load on loopback against the dev services (20 clients × 60 s of questions, then 50 uploads at once);
# prints p50/p95 and the counts. LOAD_ARGS="--clients 5 --seconds 10 --uploads 10" for a short run.
load: install
	$(PY) manage.py migrate --no-input -v 0
	$(PY) manage.py bench_load $(LOAD_ARGS)

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: install
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

# Install only when requirements.txt or bench/requirements.txt changed since the last install (its
# checksum is kept in the venv), so a second `make run` starts at once.
# torch goes first and alone: only that exact pin takes the CPU build on disk.
install:
	@sh scripts/install.sh "$(PYTHON)" "$(VENV)"

install-browser:
	@sh scripts/install-browser.sh

# Tesseract and pdftoppm for OCR of scanned PDF pages (`make run` goes on without them).
install-ocr:
	@sh scripts/install-ocr.sh

# Stop the embedded Postgres and Redis that `make run` (or any manage.py command) started.
stop:
	$(PY) -c "import os, pathlib; from apps.core.embedded import stop_services; \
	stop_services(pathlib.Path(os.environ.get('TRUSTRAG_VAR_DIR', 'var')).resolve(), int(os.environ.get('EMBEDDED_REDIS_PORT', '6390')))"

clean-var:
	rm -rf var/test
