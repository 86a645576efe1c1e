#!/usr/bin/env bash
# Prepare a folder that carries everything WebGPU needs on the H200 benchmark machine (no network there).
# usage: bench/h200-pack.sh [DIR]      (run from the project root after `npm ci`; DIR defaults to .h200)
# Then, in the run there (it starts in the project root), begin the command with:  source DIR/enter.sh
# and run `DIR/node bench-bundle.mjs` (Dawn) or `DIR/deno run -A script.ts` (wgpu). The project's node_modules
# does not travel (too big): bundle what runs there into one file with `webgpu` left external; enter.sh links
# node_modules/webgpu to the carried copy. Keep DIR out of git: it is added to .git/info/exclude.
set -euo pipefail
dir=${1:-.h200}
mkdir -p "$dir/debs" "$dir/node_modules/webgpu/dist/linux-x64"
# In a git worktree .git is a file: ask git where this checkout's exclude file is.
exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qxF "/$dir/" "$exclude" 2>/dev/null || echo "/$dir/" >> "$exclude"
(cd "$dir/debs" && apt-get download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2 \
  libx11-6 libxext6 libxcb1 libxau6 libxdmcp6 libbsd0 libmd0 >/dev/null 2>&1) \
  || { echo "apt-get download failed (run apt-get update first)"; exit 1; }
wg=node_modules/webgpu
[ -f "$wg/dist/linux-x64/dawn.node" ] || { echo "no $wg/dist/linux-x64/dawn.node: run npm ci first"; exit 1; }
cp "$wg/index.js" "$wg/package.json" "$dir/node_modules/webgpu/"
[ -f "$dir/dawn.node.xz" ] || xz -9 -T2 -c "$wg/dist/linux-x64/dawn.node" > "$dir/dawn.node.xz"
[ -f "$dir/node.xz" ] || xz -9 -T2 -c "$(readlink -f "$(command -v node)")" > "$dir/node.xz"
denobin=$(find node_modules/@deno -name deno -type f 2>/dev/null | head -1 || true)
if [ -n "${WITH_DENO:-}" ] && [ -n "$denobin" ] && [ ! -f "$dir/deno.xz" ]; then
  xz -9 -T2 -c "$denobin" > "$dir/deno.xz"
fi
cat > "$dir/enter.sh" <<'ENTER'
# sourced on the H200 machine: unpack the Vulkan loader and the runtimes, point Vulkan at the NVIDIA driver
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for f in "$here"/debs/*.deb; do dpkg -x "$f" /; done; ldconfig
[ -f "$here/node.xz" ] && [ ! -x "$here/node" ] && xz -dk "$here/node.xz" && chmod +x "$here/node"
[ -f "$here/dawn.node.xz" ] && [ ! -f "$here/node_modules/webgpu/dist/linux-x64/dawn.node" ] && \
  xz -dc "$here/dawn.node.xz" > "$here/node_modules/webgpu/dist/linux-x64/dawn.node"
[ -f "$here/deno.xz" ] && [ ! -x "$here/deno" ] && xz -dk "$here/deno.xz" && chmod +x "$here/deno"
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export DENO_DIR=/tmp/deno-dir DENO_NO_UPDATE_CHECK=1
[ -e node_modules/webgpu ] || { mkdir -p node_modules && ln -sfn "$here/node_modules/webgpu" node_modules/webgpu; }
ENTER
du -sh "$dir" | awk '{print "packed " $1 " in '"$dir"' (the whole call may carry 64 MiB); add WITH_DENO=1 for Deno"}'
