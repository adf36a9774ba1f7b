#!/usr/bin/env bash
# The main job on the embedded default: the Decision schema end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
GEODE=${GEODE:-target/release/geode}
echo "== geode schema check examples/decision.schema.json"
"$GEODE" schema check examples/decision.schema.json
echo "== geode validate (a fenced answer in prose)"
"$GEODE" validate --schema examples/decision.schema.json < examples/answer-good.txt
echo "== geode validate (a wrong enum value; expect exit 1 and the errors)"
if "$GEODE" validate --schema examples/decision.schema.json < examples/answer-bad.txt; then
  echo "unexpected: the bad answer validated" >&2; exit 1
fi
