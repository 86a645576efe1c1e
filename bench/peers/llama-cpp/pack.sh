#!/usr/bin/env bash
# Pack llama.cpp's source for the GPU machine (no network there): .h200/peers/llama-cpp-src.tar.xz (git-ignored,
# carried with .h200/peers). No llama.cpp code is committed to this repository: the source comes from the npm
# registry, as the git bundle node-llama-cpp ships (llama/gitRelease.bundle, upstream llama.cpp at the release its
# llama/llama.cpp.info.json names; the upstream repository is too large to fetch here). Pinned by the package version
# and the tarball's sha256 below; a mismatch stops the pack.
#   bash bench/peers/llama-cpp/pack.sh        (here, with npm; ~1 minute; the npm tarball is cached in .h200/peers-cache)
# Trimmed to what a CUDA/CPU build of libllama, llama-bench and llama-quantize and the GGUF writer (gguf-py,
# conversion/) need: no docs, models, tests, examples, other tools (stubbed), web UI, other backends. PEER-VERSION in the tarball says what
# it is. Prints the size to carry.
set -euo pipefail
cd "$(dirname "$0")/../../.."
NLC_VERSION=${NLC_VERSION:-3.22.1}
NLC_SHA256=${NLC_SHA256:-a0d9dd80eacd2ab1cfe71aee57ac8a806487fd70b3d2a38fbec637752d9e5c5f}
cache=.h200/peers-cache out=.h200/peers
mkdir -p "$cache" "$out"
exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.h200/' "$exclude" 2>/dev/null || echo '/.h200/' >> "$exclude"
tgz=$cache/node-llama-cpp-$NLC_VERSION.tgz
[ -f "$tgz" ] || (cd "$cache" && npm pack "node-llama-cpp@$NLC_VERSION" --silent >/dev/null)
sum=$(sha256sum < "$tgz" | cut -d' ' -f1)
if [ "$sum" != "$NLC_SHA256" ]; then
  echo "node-llama-cpp-$NLC_VERSION.tgz has sha256 $sum, not $NLC_SHA256 (set NLC_SHA256 to accept another)"; exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$tgz" -C "$tmp" package/llama/gitRelease.bundle package/llama/llama.cpp.info.json
git clone -q "$tmp/package/llama/gitRelease.bundle" "$tmp/repo" 2>/dev/null
head=$(git -C "$tmp/repo" rev-parse HEAD)
tag=$(sed -n 's/.*"tag": *"\([^"]*\)".*/\1/p' "$tmp/package/llama/llama.cpp.info.json")
mkdir -p "$tmp/src"
git -C "$tmp/repo" archive HEAD | tar -x -C "$tmp/src"
s=$tmp/src
[ -f "$s/src/models/hrm-text.cpp" ] || { echo "this llama.cpp ($tag) has no src/models/hrm-text.cpp"; exit 1; }
rm -rf "$s"/{docs,models,media,tests,examples,pocs,benches,app,ci,skills,requirements,.github,.devops}
rm -rf "$s"/tools/ui "$s"/tools/server/public* "$s"/tools/server/tests "$s"/tools/server/webui 2>/dev/null || true
for b in "$s"/ggml/src/ggml-*/; do
  case "$(basename "$b")" in ggml-cpu|ggml-cuda|ggml-blas) ;; *) rm -rf "$b" ;; esac
done
find "$s" -name '*.png' -o -name '*.jpg' -o -name '*.gif' -o -name '*.svg' | xargs -r rm -f
# The tools not built here keep an empty CMakeLists.txt (tools/CMakeLists.txt adds them all); miniaudio's header
# (4 MB, for mtmd only) goes, its interface target stays.
for t in "$s"/tools/*/; do
  case "$(basename "$t")" in llama-bench|quantize) ;; *) rm -rf "$t" && mkdir -p "$t" && echo '# stubbed by bench/peers/llama-cpp/pack.sh' > "$t/CMakeLists.txt" ;; esac
done
rm -f "$s"/vendor/miniaudio/*.h
{
  echo "llama.cpp $tag (upstream ggml-org/llama.cpp; CMakeLists.txt LLAMA_VERSION $(sed -n 's/^set(LLAMA_VERSION_\(MAJOR\|MINOR\|PATCH\) \(.*\))/\2/p' "$s/CMakeLists.txt" | paste -sd.))"
  echo "from npm node-llama-cpp@$NLC_VERSION (sha256 $NLC_SHA256), llama/gitRelease.bundle HEAD $head (a squash of the release)"
  echo "packed $(date -u +%Y-%m-%dT%H:%MZ), trimmed by bench/peers/llama-cpp/pack.sh"
} > "$s/PEER-VERSION"
tar -C "$s" -cf - . | xz -9 -T2 > "$out/llama-cpp-src.tar.xz"
cat "$s/PEER-VERSION"
du -b "$out/llama-cpp-src.tar.xz" | awk '{printf "%s: %.1f MiB\n", $2, $1 / 1048576}'
