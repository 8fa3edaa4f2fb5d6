# The few commands a person needs. `make run` and `make test` work on a fresh machine.
.PHONY: run test lint bench setup

DATA_DIR ?= ./data

setup:
	scripts/setup.sh

run: setup
	.venv/bin/docshelf serve --data-dir $(DATA_DIR)

test:
	scripts/test.sh

lint: setup
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy

bench: setup
	.venv/bin/python benchmarks/load_orgs.py
