# The few commands a person needs. `make run` and `make test` work on a fresh machine.
# `make run` installs what running needs; the development tools come with `make test` (and
# `make lint`, `make bench`).
.PHONY: run test lint bench setup setup-dev

DATA_DIR ?= ./data

setup:
	scripts/setup.sh

setup-dev:
	scripts/setup.sh dev

run: setup
	.venv/bin/docshelf serve --data-dir $(DATA_DIR)

test:
	scripts/test.sh

lint: setup-dev
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy

bench: setup-dev
	.venv/bin/python benchmarks/load_orgs.py
