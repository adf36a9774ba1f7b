#!/usr/bin/env bash
# The Python benchmark (make bench-python): geode's package beside Instructor and PydanticAI on the
# same Decision task against one loopback fake (python/bench/peers.py). Each contender gets its own
# pinned virtual environment under the cache; geode's holds a release wheel built here.
set -euo pipefail
cd "$(dirname "$0")/.."
readonly VENVS="${XDG_CACHE_HOME:-$HOME/.cache}/geode/venv"

scripts/install-venv.sh geode-py-bench scripts/python/geode-py-requirements.txt maturin --version
scripts/install-venv.sh bench-instructor scripts/python/bench-instructor-requirements.txt python -c "import instructor"
scripts/install-venv.sh bench-pydantic-ai scripts/python/bench-pydantic-ai-requirements.txt python -c "import pydantic_ai"
rm -rf target/wheels-release
(cd python && PATH="$VENVS/geode-py-bench/bin:$PATH" maturin build --quiet --release --strip --out ../target/wheels-release)
"$VENVS/geode-py-bench/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps target/wheels-release/geode-*.whl
cargo build --release -p geode-fakes
exec "$VENVS/geode-py-bench/bin/python" python/bench/peers.py --fake target/release/geode-fakes \
    --python geode="$VENVS/geode-py-bench/bin/python" \
    --python instructor="$VENVS/bench-instructor/bin/python" \
    --python pydantic-ai="$VENVS/bench-pydantic-ai/bin/python" "$@"
