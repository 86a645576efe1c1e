#!/usr/bin/env bash
# The run folder bench/chrome-pack.sh carries to the H200 with the last part (and alone on later calls):
#   DIR/site.tar.xz  site/bench/: the benchmark page (bench/runners/index.html) built by vite; site/demo/: the demo
#                    built by vite (vite.config.ts), without the embedded model's files: chrome/run.ts serves them, and
#                    tests/fixtures/mlx/ for the page's parity checks, from the working tree that travels
#   DIR/runner.mjs.xz  bench/chrome/run.ts bundled by esbuild with puppeteer-core (no node_modules there)
# usage: bash bench/chrome-build.sh [DIR]   (default .h200/chrome-run; run after npm ci)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(realpath -m "${1:-.h200/chrome-run}")
node scripts/gen-wgsl.mjs
rm -rf "$dir" && mkdir -p "$dir/site"
vite=node_modules/.bin/vite
(cd bench/runners &&
  "../../$vite" build . --base ./ --outDir "$dir/site/bench" --emptyOutDir --target es2022 --logLevel error)
"$vite" build --outDir "$dir/site/demo" --emptyOutDir --logLevel error
for d in bench demo; do
  [ -f "$dir/site/$d/index.html" ] || { echo "vite wrote no $dir/site/$d/index.html"; exit 1; }
done
rm -rf "$dir/site/demo/models"
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && commit="$commit+dirty"
# Bundled CommonJS dependencies may call require(): give the ES module one (as bench/pack.sh does).
banner="import { createRequire as __hrmCreateRequire } from 'node:module';"
banner="$banner const require = __hrmCreateRequire(import.meta.url);"
node_modules/.bin/esbuild bench/chrome/run.ts --bundle --platform=node --format=esm --target=es2022 --minify \
  --legal-comments=none --define:__BENCH_COMMIT__="\"$commit\"" --banner:js="$banner" --log-level=warning \
  --outfile="$dir/runner.mjs"
xz -9 -f "$dir/runner.mjs"
du -sh "$dir"/site/*
tar -C "$dir" -cf - site | xz -9 > "$dir/site.tar.xz" && rm -rf "$dir/site"
du -sh "$dir" "$dir/site.tar.xz" "$dir/runner.mjs.xz"
