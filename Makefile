# Each target sets itself up from nothing: a virtualenv in .venv with the package and its [dev] and [docs] extras.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast lint docs docs-check bench clean image-env bench-env bench-recordio test-py39

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,docs]'
	touch $(STAMP)

run: $(STAMP)  ## run the whole pipeline locally on the bundled example data set
	$(BIN)/llpipe run

# The scikit-learn image's Python 3.9 environment (pipeline/core/images.py), cached under ~/.cache/llpipe/envs (or
# $$LLPIPE_CACHE_DIR): built once here so the tests share it. Without Python 3.9 the tests that need it skip,
# except on CI (CI=true), where that is a failure.
image-env: $(STAMP)
	$(BIN)/llpipe env build || test "$$CI" != true

# The docs are checked by the suite itself: tests/integration/test_docs.py runs docs-check's two checks (the generated
# pages against the code, the strict build) and opens the built site in a browser, so docs-check is not run again.
test: $(STAMP) image-env  ## lint and format check, the test suite (the docs too), the codec's tests under Python 3.9
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n 2
	@if [ -n "$(PYTHON39)" ] || [ "$$CI" = true ]; then $(MAKE) --no-print-directory test-py39; \
	else echo "no Python 3.9 here: the codec's tests under the image's numpy (make test-py39) were skipped"; fi

# The documentation site (mkdocs.yml): the pages generated from the code (docs/gen_references.py) rewritten, then
# built strictly into site/ (a broken link, anchor or reference fails). docs-check rewrites nothing: it fails on a
# generated page that differs from the code, and builds into a temporary folder.
docs: $(STAMP)
	$(BIN)/python docs/gen_references.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

docs-check: $(STAMP)
	$(BIN)/python docs/gen_references.py --check
	@out=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir "$$out"; \
	status=$$?; rm -rf "$$out"; exit $$status

# The unit and contract tiers (tests/unit, tests/contract; tests/README.md): no local run, server, job process or
# stack, about 90 s of CPU: under a minute on 2 cores when nothing else runs. `make test` runs them too, with the
# integration tier. One BLAS thread per worker: beside the other worker, BLAS threads of its own only spin on the 2
# cores.
test-fast: $(STAMP)  ## the unit and contract tiers only: what to run while working
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n 2 tests/unit tests/contract

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

# A Python 3.9 venv for the codec's benchmark and tests as the scikit-learn image runs them (numpy 1.24.1, scipy
# 1.8.0) plus the protobuf reference and pytest (benchmarks/requirements-py39.txt), outside the repository. PYTHON39
# is pyenv's newest 3.9, else python3.9 on PATH (a pyenv shim that refuses to run is skipped).
CACHE_DIR := $(or $(LLPIPE_CACHE_DIR),$(HOME)/.cache/llpipe)
BENCH_ENV ?= $(CACHE_DIR)/bench-envs/py39
PYENV_ROOT ?= $(HOME)/.pyenv
PYTHON39 ?= $(or $(shell ls -dv $(PYENV_ROOT)/versions/3.9.*/bin/python3.9 2>/dev/null | tail -n 1),$\
	$(shell python3.9 -c 'import sys; print(sys.executable)' 2>/dev/null))
BENCH_STAMP := $(BENCH_ENV)/.installed

$(BENCH_STAMP): benchmarks/requirements-py39.txt
	@test -n "$(PYTHON39)" || { echo "no Python 3.9: put python3.9 on PATH or set PYTHON39=/path/to/python3.9"; exit 1; }
	rm -rf $(BENCH_ENV)
	$(PYTHON39) -m venv $(BENCH_ENV)
	$(BENCH_ENV)/bin/python -m pip install --quiet --only-binary=:all: -r benchmarks/requirements-py39.txt
	touch $(BENCH_STAMP)

bench-env: $(BENCH_STAMP)  ## build the Python 3.9 benchmark venv (prints its interpreter)
	@echo $(BENCH_ENV)/bin/python

# The codec against its protobuf reference under the image's Python 3.9 and numpy, then under .venv's interpreter.
bench-recordio: $(STAMP) $(BENCH_STAMP)
	uptime
	$(BIN)/python benchmarks/recordio.py --repeat 3 --python $(BENCH_ENV)/bin/python
	$(BIN)/python benchmarks/recordio.py --repeat 3

# The codec's tests under the image's Python 3.9 and numpy 1.24.1: pytest runs tests in its own interpreter, so
# `make test` runs them under .venv's only.
test-py39: $(BENCH_STAMP)
	$(BENCH_ENV)/bin/python -m pytest -q tests/unit/containerlib/test_recordio.py

clean:
	rm -rf $(VENV) .llpipe build site *.egg-info
