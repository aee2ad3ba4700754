# voxserve — the two commands a fresh machine needs are `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install models serve test check lint bench clean system-deps

$(STAMP): pyproject.toml setup.py src/voxserve/server/protos/voxserve.proto
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,ops,bench,eval]'
	touch $(STAMP)

install: $(STAMP)

# Debian packages the end-to-end tests need (Chromium for the playground test, nginx for the
# load-balancing test, promtool for the alert rules).
system-deps:
	@bash scripts/system-deps.sh

models: install
	$(BIN)/voxserve models fetch

serve: models
	$(BIN)/voxserve serve

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

test: models system-deps lint
	$(BIN)/python -m pytest -q -p no:cacheprovider

# The inner loop: lint, types and the unit tier (no real models, servers of real models, Whisper or browser).
check: lint
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not e2e"

bench: models
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.fidelity

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info
