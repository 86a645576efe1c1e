#!/usr/bin/env bash
# transformers.js for the GPU machine (issue 44), into .h200/peers/tjs/ (git-ignored; carried inside .h200/peers):
#   site.tar.xz        page.html + page.js (page.mjs bundled by esbuild with @huggingface/transformers 4.3.1 and its
#                      onnxruntime-web 1.31.0-dev WebGPU build) + ort/ (onnxruntime-web's asyncify wasm, which that
#                      build loads)
#   tjs-runner.mjs.xz  chrome.ts bundled with puppeteer-core (runs with the Chrome kit's node)
# transformers.js is installed from npm into .h200/peers-cache/tjs-node (--ignore-scripts: onnxruntime-node's script
# downloads from nuget.org; the page needs only the web build), never into the repository's dependencies.
#   bash bench/peers/transformers-js/pack.sh        (bench/peers/pack.sh runs it with TJS=1)
set -euo pipefail
cd "$(dirname "$0")/../../.."
TJS_VERSION=${TJS_VERSION:-4.3.1}
cache=.h200/peers-cache/tjs-node out=.h200/peers/tjs
mkdir -p "$cache" "$out"
if [ ! -f "$cache/node_modules/@huggingface/transformers/package.json" ] ||
   ! grep -q "\"version\": \"$TJS_VERSION\"" "$cache/node_modules/@huggingface/transformers/package.json"; then
  echo '{"name":"tjs-node","private":true}' > "$cache/package.json"
  (cd "$cache" && npm install --no-audit --no-fund --ignore-scripts "@huggingface/transformers@$TJS_VERSION" >/dev/null)
fi
ort=$cache/node_modules/onnxruntime-web
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/site/ort"
NODE_PATH=$(realpath "$cache/node_modules") node_modules/.bin/esbuild bench/peers/transformers-js/page.mjs --bundle \
  --platform=browser --format=esm --target=es2022 --minify --legal-comments=none --log-level=error \
  --outfile="$stage/site/page.js"
cp bench/peers/transformers-js/page.html "$stage/site/"
cp "$ort"/dist/ort-wasm-simd-threaded.asyncify.{wasm,mjs} "$stage/site/ort/"
{
  echo "@huggingface/transformers $(node -p "require('./$cache/node_modules/@huggingface/transformers/package.json').version")"
  echo "onnxruntime-web $(node -p "require('./$ort/package.json').version")"
} > "$stage/site/VERSIONS"
tar -C "$stage" -cf - site | xz -9 -T2 > "$out/site.tar.xz"
node_modules/.bin/esbuild bench/peers/transformers-js/chrome.ts --bundle --platform=node --format=esm --target=es2022 \
  --minify --legal-comments=none --log-level=warning \
  --banner:js="import { createRequire as __r } from 'node:module'; const require = __r(import.meta.url);" \
  --outfile="$out/tjs-runner.mjs"
xz -9 -f "$out/tjs-runner.mjs"
cat "$stage/site/VERSIONS"
du -sh "$out"/*
