#!/usr/bin/env bash
# Builds the TurboQuant fork's CPU quantizer (ggml/src/ggml-turbo-quant.c, compiled alone: it needs only ggml's
# headers and libm) with turbo_fixtures.c and writes tests/fixtures/turbo/turbo.json.
# Usage: tools/turbo-fixtures/make-fixtures.sh <fork source dir> [commit]
#   the fork: github.com/TheTom/llama-cpp-turboquant, pinned at tag feature-turboquant-kv-cache-b9079-69d8e4b
#   (69d8e4be47243e83b3d0d71e932bc7aa61c644dc); e.g. `git archive <commit> ggml | tar -x -C /work/turbo-src`.
# -ffp-contract=off: no FMA, so every float op rounds as the C source writes it (x86-64 SSE, IEEE f32).
set -euo pipefail
src=${1:?usage: make-fixtures.sh <fork source dir> [commit]}
commit=${2:-69d8e4be47243e83b3d0d71e932bc7aa61c644dc}
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../../tests/fixtures/turbo"
build=$(mktemp -d)
cc -O2 -std=c11 -ffp-contract=off -w -I"$src/ggml/include" -I"$src/ggml/src" \
  "$src/ggml/src/ggml-turbo-quant.c" "$here/turbo_fixtures.c" -lm -o "$build/turbo_fixtures"
mkdir -p "$out"
"$build/turbo_fixtures" "$commit" > "$out/turbo.json"
rm -rf "$build"
echo "wrote $out/turbo.json ($(wc -c < "$out/turbo.json") bytes)"
