# Each target sets itself up from nothing: a virtualenv in .venv with the package and its [dev] extra.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench clean image-env

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)  ## run the whole pipeline locally on the bundled example data set
	$(BIN)/llpipe run

# The scikit-learn image's Python 3.9 environment (pipeline/core/images.py), cached under ~/.cache/llpipe/envs (or
# $$LLPIPE_CACHE_DIR): built once here so the tests share it. Without Python 3.9 the tests that need it skip,
# except on CI (CI=true), where that is a failure.
image-env: $(STAMP)
	$(BIN)/llpipe env build || test "$$CI" != true

test: $(STAMP) image-env  ## lint and format check, then the test suite
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q -n 2

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(STAMP)
	for b in benchmarks/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) .llpipe build *.egg-info
