#!/usr/bin/env bash
# Everything the peers need on the GPU machine, into .h200/peers/ (git-ignored; carry [".h200/peers"] with
# [".h200/bench"], whose node and Dawn run our side of the token check):
#   llama-cpp-src.tar.xz   bench/peers/llama-cpp/pack.sh (llama.cpp's source from npm, trimmed; reused if there)
#   ours-greedy.mjs.xz     bench/peers/ours-greedy.ts bundled by esbuild (webgpu external, as bench/pack.sh bundles)
#   tjs/                   bench/peers/transformers-js/pack.sh, when TJS=1 (transformers.js + onnxruntime-web and the
#                          page and runner; it needs the Chrome kit's calls too: bench/peers/README.md)
# usage: bash bench/peers/pack.sh      (after npm ci; FORCE=1 repacks llama.cpp's source)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.h200/peers
mkdir -p "$out"
if [ "${FORCE:-0}" = 1 ] || [ ! -s "$out/llama-cpp-src.tar.xz" ]; then bash bench/peers/llama-cpp/pack.sh; fi
node scripts/gen-wgsl.mjs
banner="import { createRequire as __hrmCreateRequire } from 'node:module';"
banner="$banner const require = __hrmCreateRequire(import.meta.url);"
node_modules/.bin/esbuild bench/peers/ours-greedy.ts --bundle --platform=node --format=esm --target=es2022 --minify \
  --legal-comments=none --external:webgpu --banner:js="$banner" --log-level=warning --outfile="$out/ours-greedy.mjs"
xz -9 -f "$out/ours-greedy.mjs"
if [ "${TJS:-0}" = 1 ]; then bash bench/peers/transformers-js/pack.sh; fi
tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
packed=$(du -cb --exclude='*.mjs' "$out" | tail -1 | cut -f1)
echo "$out: $((packed / 1048576)) MiB to carry + $((tree / 1048576)) MiB of working tree (+ .h200/bench's)"
