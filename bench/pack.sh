#!/usr/bin/env bash
# Build what bench/h200.sh runs on the H200 machine, where there is no network and no node_modules: the runtime
# and Vulkan loader packed by bench/h200-pack.sh, plus the whole benchmark bundled into one file
# (esbuild; `webgpu` stays external: enter.sh links node_modules/webgpu to the carried copy).
#   bash bench/pack.sh         -> .h200/bench/       node + Dawn + bench-bundle.mjs.xz + the probes (read-probe.mjs.xz
#                                 among them) + parity.mjs.xz + parity-transformers.mjs.xz (carry [".h200/bench"])
#   bash bench/pack.sh deno    -> .h200/bench-deno/  deno + bench-deno.mjs.xz            (carry [".h200/bench-deno"];
#                                 a second run: node and deno together exceed the 64 MiB one call may carry)
# The folders are git-ignored (.h200/). The node binary is stripped before compression (2 MB less; STRIP=0 keeps
# it whole). Run after `npm ci`; H200_PACK overrides where h200-pack.sh is.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-node}
pack=${H200_PACK:-bench/h200-pack.sh}
[ -f "$pack" ] || { echo "no $pack (H200_PACK overrides it)"; exit 1; }
node scripts/gen-wgsl.mjs
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && commit="$commit+dirty"
# Bundled CommonJS dependencies may call require(): give the ES module one.
banner="import { createRequire as __hrmCreateRequire } from 'node:module';"
banner="$banner const require = __hrmCreateRequire(import.meta.url);"
bundle() { # entry outfile: one minified ES module, xz-compressed (h200.sh unpacks it next to itself)
  node_modules/.bin/esbuild "$1" --bundle --platform=node --format=esm --target=es2022 --minify --legal-comments=none \
    --external:webgpu --define:__BENCH_COMMIT__="\"$commit\"" --banner:js="$banner" --log-level=warning --outfile="$2"
  xz -9 -f "$2"
}
case "$kind" in
  node)
    dir=.h200/bench
    mkdir -p "$dir"
    if [ "${STRIP:-1}" = 1 ] && [ ! -f "$dir/node.xz" ] && command -v strip >/dev/null; then
      tmp=$(mktemp -d)
      strip -o "$tmp/node" "$(readlink -f "$(command -v node)")"
      xz -9 -T2 -c "$tmp/node" > "$dir/node.xz"
      rm -rf "$tmp"
    fi
    bash "$pack" "$dir"
    bundle bench/runners/run.ts "$dir/bench-bundle.mjs"
    bundle bench/probes/read-probe.mjs "$dir/read-probe.mjs"
    bundle bench/probes/sgmat-probe.ts "$dir/sgmat-probe.mjs"
    bundle bench/probes/prefetch-probe.ts "$dir/prefetch-probe.mjs"
    bundle bench/probes/qone-probe.ts "$dir/qone-probe.mjs"
    bundle bench/runners/parity.ts "$dir/parity.mjs"
    bundle bench/runners/parity-transformers.ts "$dir/parity-transformers.mjs"
    ;;
  deno)
    dir=.h200/bench-deno
    mkdir -p "$dir"
    # h200-pack.sh packs node and Dawn unless they are there: placeholders, removed after.
    [ -f "$dir/node.xz" ] || touch "$dir/node.xz" "$dir/dawn.node.xz"
    WITH_DENO=1 bash "$pack" "$dir"
    rm -rf "$dir/node.xz" "$dir/dawn.node.xz" "$dir/node_modules"
    [ -s "$dir/deno.xz" ] || { echo "no deno binary packed (npm ci installs it under node_modules/@deno)"; exit 1; }
    bundle bench/runners/deno.ts "$dir/bench-deno.mjs"
    ;;
  *) echo "usage: bench/pack.sh [node|deno]"; exit 2 ;;
esac
tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
packed=$(du -cb --exclude='*.mjs' "$dir" | tail -1 | cut -f1)
echo "$dir: $((packed / 1048576)) MiB to carry (without the unpacked .mjs) + $((tree / 1048576)) MiB of working tree" \
  "= $(((packed + tree) / 1048576)) MiB of the 64 MiB a call may carry"
