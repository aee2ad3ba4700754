# voxserve — the two commands a fresh machine needs are `make serve` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

PLUGINS := .venv-plugins
PLUGINS_STAMP := $(PLUGINS)/.installed

PEERS := .venv-peers
PEERS_STAMP := $(PEERS)/.installed

.PHONY: install models serve test lint bench clean system-deps plugins-venv peers-venv check

$(STAMP): pyproject.toml setup.py src/voxserve/server/protos/voxserve.proto
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev,ops,bench,eval]'
	touch $(STAMP)

install: $(STAMP)

# The framework plugins' tests (tests/integrations) run in a venv of their own: LiveKit Agents and
# Pipecat pin versions (protobuf, soundfile) that the server's venv cannot hold. It holds the
# frameworks, the client's dependencies and pytest (the extras livekit, pipecat, plugin-tests);
# voxserve comes from src/, and the server under test runs in .venv (tests/server/test_integrations.py).
$(PLUGINS_STAMP): pyproject.toml $(STAMP)
	test -x $(PLUGINS)/bin/python || $(PYTHON) -m venv $(PLUGINS)
	$(PLUGINS)/bin/pip install -q --upgrade pip
	$(BIN)/python -c "import tomllib; extras = tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']; print('\n'.join(extras['livekit'] + extras['pipecat'] + extras['plugin-tests']))" > $(PLUGINS)/requirements.txt
	$(PLUGINS)/bin/pip install -q -r $(PLUGINS)/requirements.txt
	touch $(PLUGINS_STAMP)

plugins-venv: $(PLUGINS_STAMP)

# The peer libraries of `voxserve eval --compare` (kokoro-onnx, piper-tts) in a venv of their own, from
# PyPI (bench/peers-requirements.txt says why); the eval starts them as subprocesses.
$(PEERS_STAMP): bench/peers-requirements.txt
	test -x $(PEERS)/bin/python || $(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/pip install -q --upgrade pip
	$(PEERS)/bin/pip install -q -r bench/peers-requirements.txt
	touch $(PEERS_STAMP)

peers-venv: $(PEERS_STAMP)

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
	$(BIN)/mypy src/voxserve tests bench

# The unit tier and most of the end-to-end tier run on two workers: much of their time is spent waiting
# on servers, subprocesses and timers. The end-to-end tests marked `alone` play audio in real time and
# count stalls, so they run last, one at a time, sharing the machine's cores with nothing else.
test: models system-deps lint plugins-venv peers-venv
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not e2e" -n 2
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "e2e and not alone" -n 2
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "e2e and alone"

# The inner loop: lint, types and the unit tier (no real models, servers of real models, Whisper or browser),
# on two pytest workers: the tier spends half its time waiting on servers and timers, not on the CPU.
check: lint
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "not e2e" -n 2

bench: models
	$(BIN)/python -m bench.run
	$(BIN)/python -m bench.fidelity

clean:
	rm -rf $(VENV) $(PLUGINS) $(PEERS) build *.egg-info src/*.egg-info
