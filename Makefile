# Two entry points (see README): `make run` (main job) and `make test` (the test suite).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The GPU extra (CuPy) only where a GPU driver is present.
comma := ,
EXTRAS := $(if $(shell command -v nvidia-smi 2>/dev/null),test$(comma)gpu,test)
RUNS ?= runs

.PHONY: run test install nvcc-check gpu-check clean

# setup.py builds the C helpers (core/*.c) in the editable install: editing them reinstalls.
$(BIN)/.installed: pyproject.toml setup.py $(wildcard src/warplab/core/*.c)
	$(PY) -m venv $(VENV)
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
## `make gpu-check` on the GPU machine) with the nvcc compile check beside them (scripts/test.sh)
test: $(BIN)/.installed
	PY=$(BIN)/python bash scripts/test.sh

nvcc-check:
	$(BIN)/python scripts/nvcc_check.py -v

## on the GPU machine (no installs there): GPU tests + benchmark tables into $$OUT
gpu-check:
	bash benchmarks/gpu_check.sh all

clean:
	rm -rf $(VENV) $(RUNS) .pytest_cache .hypothesis
