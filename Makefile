# geode: the two commands to start with are `make demo` and `make test`.
SHELL := /bin/bash
export CARGO_TERM_COLOR := never
CACHE ?= $(HOME)/.cache/geode

.PHONY: demo test bench bench-peer bench-gateway bench-python bench-cache lint fmt setup fuzz api

setup:
	@scripts/setup.sh

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

# The workspace tests include crates/geode/tests/fuzz_replay.rs: every committed fuzz seed
# (fuzz/seeds/<target>) replayed through its target's entry function on the stable toolchain.
# `geode gateway` and `geode mcp` exec the geode-gateway and geode-mcp binaries beside `geode`; cargo
# builds a package's binary only for that package's own tests, so they are built first for geode-cli's.
# The Python package last: its wheel is built against the workspace's debug build, and its pytest
# suite drives the debug binaries (the fakes, geode-engine) that cargo test built.
test: setup lint
	cargo build -p geode-gateway -p geode-mcp
	cargo test --workspace --all-targets
	cargo test --workspace --doc
	scripts/python-package.sh

# GEODE_LINK_ORDER=1: the release link puts the code a hosted task runs first (crates/geode-cli/build.rs),
# which takes a worker's peak RSS from about 11 to 6.5 MiB (docs/benchmarks.md, "A lean worker").
demo: setup
	GEODE_LINK_ORDER=1 cargo build --release -p geode-cli -p geode-local -p geode-gateway
	@scripts/demo.sh

bench: setup
	scripts/install-venv.sh litellm scripts/python/litellm-requirements.txt litellm --version
	cargo build --release -p geode-gateway
	GEODE_LINK_ORDER=1 cargo bench --workspace

# geode's local engine beside upstream llama-server (built once into the cache by setup), same
# model, prompts, schema, sampling and threads, interleaved; prints per-call latency, prompt and
# generation tok/s, validity and the ratios (crates/geode-local/benches/peer.rs).
bench-peer: setup
	cargo bench -p geode-local --bench peer

# geode gateway beside the LiteLLM proxy (pinned, its own venv under the cache, installed here
# only) in front of the same fast loopback upstream: added latency at 1, 64 and 512 clients,
# requests per second, peak RSS, RSS with 1,000 open streams (crates/geode-cli/benches/gateway.rs).
bench-gateway: setup
	scripts/install-venv.sh litellm scripts/python/litellm-requirements.txt litellm --version
	cargo build --release -p geode-gateway
	cargo bench -p geode-cli --bench gateway

# geode batch --cache over 1,000 tasks against a 200 ms loopback fake, run cold then warm, with a
# directory and a Redis cache: upstream requests (0 warm), wall time and tasks/s side by side
# (crates/geode-cli/benches/cache.rs).
bench-cache: setup
	cargo bench -p geode-cli --bench cache

# geode's Python package (a release wheel) beside Instructor and PydanticAI (PyPI, pinned, each in its
# own venv under the cache, installed here only) on one Decision task against one loopback fake:
# wall time and process CPU per call, import time, interleaved rounds (python/bench/peers.py).
bench-python: setup
	scripts/bench-python.sh

# Every cargo-fuzz target for FUZZ_SECONDS each (default 600), one after another; prints
# execs and crashes per target (scripts/fuzz.sh).
FUZZ_SECONDS ?= 600
fuzz: setup
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

# The documented public API of the geode crate, counted from rustdoc's JSON (nightly): every
# item and method reachable from the root, hidden modules left out, and any item reachable by
# more than one path (scripts/public-api.py; `API_LIST=1` prints every path).
api:
	cargo +nightly rustdoc -p geode --lib -- -Z unstable-options --output-format json
	python3 scripts/public-api.py target/doc/geode.json $(if $(API_LIST),--list)
