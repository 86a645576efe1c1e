#!/usr/bin/env bash
# Build llama.cpp's few targets the peer run needs, from the source bench/peers/llama-cpp/pack.sh packed:
#   bash bench/peers/llama-cpp/build.sh SRC_TAR BUILD_ROOT      (on the GPU machine: CUDA for sm_90)
#   CUDA=0 JOBS=2 bash bench/peers/llama-cpp/build.sh ...        (here: CPU only, the same targets)
# SRC_TAR is .h200/peers/llama-cpp-src.tar.xz; BUILD_ROOT (default /tmp/hrm-peers) gets src/ and build/, outside
# the working tree, so that a second call on the same warm machine resumes (make is incremental: a build cut short
# by a call's limit goes on where it stopped). Targets: libllama + ggml (shared), llama-bench, llama-quantize, and
# bench/peers/llama-cpp/greedy.cpp (ours: greedy ids from a prompt of ids, linked against libllama). Prints the
# seconds each step took; exits 1 with the log's tail on a failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tarball=${1:?usage: build.sh SRC_TAR [BUILD_ROOT]}
root=${2:-/tmp/hrm-peers}
jobs=${JOBS:-$(nproc)}
cuda=${CUDA:-1}
src=$root/src build=$root/build-$([ "$cuda" = 1 ] && echo cuda || echo cpu)
mkdir -p "$root"
t0=$(date +%s)
stamp=$(sha256sum < "$tarball" | cut -c1-16)
if [ "$(cat "$src/.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$src" && mkdir -p "$src"
  xz -dc "$tarball" | tar -x -C "$src" || { echo "unpacking $tarball failed"; exit 1; }
  echo "$stamp" > "$src/.stamp"
fi
echo "[build] source $(cat "$src/PEER-VERSION" 2>/dev/null | head -1) in $src ($(($(date +%s) - t0)) s)"
flags=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TOOLS=ON -DGGML_NATIVE=ON -DGGML_CCACHE=OFF)
if [ "$cuda" = 1 ]; then
  # sm_90 only (H100/H200); flash attention's default type set (f16, q8_0, q4_0 K/V pairs among them).
  flags+=(-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90)
fi
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$src" -B "$build" "${gen[@]}" "${flags[@]}" > "$root/cmake.log" 2>&1 \
    || { tail -30 "$root/cmake.log"; echo "[build] cmake configure failed"; exit 1; }
fi
echo "[build] configured ($(($(date +%s) - t0)) s)"
# libllama first, then hrm-greedy (it needs nothing else), then the tools (they need llama-common, the slow part).
cmake --build "$build" -j "$jobs" --target llama > "$root/build.log" 2>&1 \
  || { tail -40 "$root/build.log"; echo "[build] cmake --build llama failed"; exit 1; }
bin=$build/bin
"${CXX:-g++}" -O2 -std=c++17 "$here/greedy.cpp" -I "$src/include" -I "$src/ggml/include" -L "$bin" \
  -lllama -lggml -lggml-base -Wl,-rpath,"$bin" -o "$bin/hrm-greedy" > "$root/greedy-build.log" 2>&1 \
  || { cat "$root/greedy-build.log"; echo "[build] greedy.cpp failed"; exit 1; }
echo "[build] libllama, hrm-greedy built ($(($(date +%s) - t0)) s)"
cmake --build "$build" -j "$jobs" --target llama-bench llama-quantize >> "$root/build.log" 2>&1 \
  || { tail -40 "$root/build.log"; echo "[build] cmake --build llama-bench llama-quantize failed"; exit 1; }
echo "[build] llama-bench, llama-quantize built ($(($(date +%s) - t0)) s)"
echo "[build] all done in $(($(date +%s) - t0)) s: $bin"
