# geode: the two README commands are `make demo` and `make test`.
SHELL := /bin/bash
export CARGO_TERM_COLOR := never
CACHE ?= $(HOME)/.cache/geode

.PHONY: demo test bench lint fmt setup

setup:
	@scripts/setup.sh

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

test: setup lint
	cargo test --workspace --all-targets
	cargo test --workspace --doc

demo: setup
	cargo build --release -p geode-cli
	@scripts/demo.sh

bench: setup
	cargo bench --workspace
