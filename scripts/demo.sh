#!/usr/bin/env bash
# `make demo`: the main job on the embedded default, the local model with constrained decoding.
set -euo pipefail
cd "$(dirname "$0")/.."
GEODE=${GEODE:-${CARGO_TARGET_DIR:-target}/release/geode}
PROMPT="$(cat examples/pr-review.txt)"

echo "== 1. Is the Decision schema OpenAI strict-compatible?"
"$GEODE" schema check examples/decision.schema.json

echo
echo "== 2. geode adapters (what each path guarantees, and what is configured here)"
"$GEODE" adapters

echo
echo "== 3. geode run: the Decision schema on the local model (no adapter named, nothing configured)"
echo "   stdout is the schema-valid answer; stderr is the guarantee ledger"
env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u ZAI_API_KEY -u ZAI_CODING_PLAN_KEY -u CLAUDE_CODE_OAUTH_TOKEN \
  "$GEODE" run --schema examples/decision.schema.json --max-tokens 128 "$PROMPT"

echo
echo "== 4. The same answer checked again by the standalone validator"
env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY -u ZAI_API_KEY -u ZAI_CODING_PLAN_KEY -u CLAUDE_CODE_OAUTH_TOKEN \
  "$GEODE" run --schema examples/decision.schema.json --max-tokens 128 "$PROMPT" 2>/dev/null \
  | "$GEODE" validate --schema examples/decision.schema.json >/dev/null && echo "valid"

echo
echo "== 5. A choice constraint on the same model"
"$GEODE" run --adapter local --choice accept,reject --max-tokens 8 "$PROMPT"
