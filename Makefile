# Two entry points (see README): `make run` (main job) and `make test` (the test suite).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The GPU extra (CuPy) only where a GPU driver is present.
comma := ,
EXTRAS := $(if $(shell command -v nvidia-smi 2>/dev/null),test$(comma)gpu,test)
RUNS ?= runs

.PHONY: run test test-all install nvcc-check gpu-check clean

# NumPy goes in first, on its own: the nvcc check needs nothing else, so `make test` starts it
# while the rest installs.
$(BIN)/.numpy:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q numpy
	touch $@

# setup.py builds the C helpers (core/*.c, core/*.h) in the editable install: editing them
# reinstalls.
$(BIN)/.installed: $(BIN)/.numpy pyproject.toml setup.py $(wildcard src/warplab/core/*.[ch])
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[$(EXTRAS)]"
	touch $@

install: $(BIN)/.installed

## main job: the quick histogram and reduce campaigns (GPU if present, else NumPy) and the report
run: $(BIN)/.installed
	$(BIN)/warplab device
	$(BIN)/warplab bench all --quick --out $(RUNS)
	$(BIN)/warplab report "$(RUNS)/$$(ls -1 $(RUNS) | sort | tail -n 1)"

## tests on this machine (the CPU suite; GPU tests are deselected: run them with
## `make gpu-check` on the GPU machine) with the nvcc compile check beside them (scripts/test.sh:
## the check starts first, then the install is completed, then the static checks and pytest)
TEST_SH := PY=$(BIN)/python INSTALL="$(MAKE) --no-print-directory install" bash scripts/test.sh
test: $(BIN)/.numpy
	$(TEST_SH)

## `make test` plus the CPU tests marked `slow` (too long for every run; pyproject.toml's markers)
test-all: $(BIN)/.numpy
	$(TEST_SH) -m "not gpu and not large"

nvcc-check:
	$(BIN)/python scripts/nvcc_check.py -v

## on the GPU machine (no installs there): GPU tests + benchmark tables into $$OUT
gpu-check:
	bash benchmarks/gpu_check.sh all

clean:
	rm -rf $(VENV) $(RUNS) .pytest_cache .hypothesis
