# The two commands: `make run` and `make test`. Everything else here serves them.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
TEST_ENV := TRUSTRAG_VAR_DIR=var/test EMBEDDED_REDIS_PORT=6391

.PHONY: run test stop lint format install install-browser clean-var

run: install
	$(PY) manage.py serve

test: install install-browser
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	@$(TEST_ENV) $(PY) -m pytest $(PYTEST_ARGS); status=$$?; \
	$(TEST_ENV) $(MAKE) --no-print-directory stop >/dev/null 2>&1; exit $$status

lint: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: install
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

# Install only when requirements.txt changed since the last install (its
# checksum is kept in the venv), so a second `make run` starts at once.
# torch goes first and alone: only that exact pin takes the CPU build on disk.
install:
	@sh scripts/install.sh "$(PYTHON)" "$(VENV)"

install-browser:
	@sh scripts/install-browser.sh

# Stop the embedded Postgres and Redis that `make run` (or any manage.py command) started.
stop:
	$(PY) -c "import os, pathlib; from apps.core.embedded import stop_services; \
	stop_services(pathlib.Path(os.environ.get('TRUSTRAG_VAR_DIR', 'var')).resolve(), int(os.environ.get('EMBEDDED_REDIS_PORT', '6390')))"

clean-var:
	rm -rf var/test
