# The two commands: `make run` and `make test`. Everything else here serves them.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.requirements.sha256
TEST_ENV := TRUSTRAG_VAR_DIR=var/test EMBEDDED_REDIS_PORT=6391

.PHONY: run test lint format install clean-var

run: install
	$(PY) manage.py serve

test: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(TEST_ENV) $(PY) -m pytest $(PYTEST_ARGS)

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

clean-var:
	rm -rf var/test
