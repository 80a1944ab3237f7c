# Duet: `make run` starts the gateway on the embedded default; `make test` runs the whole suite.
# Every target installs what it needs, so both work on a fresh Debian machine with Python 3.11.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run run-sim test test-fast test-slow redis-server bench-sim bench-overhead clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/duet up $(ARGS)

run-sim: $(STAMP)
	$(BIN)/duet up --sim $(ARGS)

# Debian's redis-server, for the shared-state tests (they start their own on a free port).
redis-server:
	@command -v redis-server >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq redis-server; }

test: $(STAMP) redis-server
	$(BIN)/pytest -q

test-fast: $(STAMP)
	$(BIN)/pytest -q -m "not slow"

test-slow: $(STAMP) redis-server
	$(BIN)/pytest -q -m slow

bench-sim: $(STAMP)
	$(BIN)/python -m serving.sim.bench

clean:
	rm -rf $(VENV) build *.egg-info
