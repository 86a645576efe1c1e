#!/usr/bin/env bash
# llama.cpp on HRM-Text, on the GPU machine (issue 44): build (bench/peers/llama-cpp/build.sh, resumed if a build is
# there), convert a checkpoint folder to GGUF (to-gguf.py: bf16 and f32; llama-quantize: Q8_0, Q4_0), then
#   - llama-bench pp512 / tg128, flash attention on, -ngl 99, bf16 / Q8_0 / Q4_0 weights x f16 / q8_0 / q4_0 K and V
#     caches (the same type for K and V), 5 repetitions each, JSON: DIR/llama-bench.json (one array);
#   - hrm-greedy: 128 greedy ids from the folder's prompts.json (tools/parity-1b/make.py's 512 seeded ids), causal:
#     f32 weights with f32 caches and no flash attention (the exact check against our f32), and bf16 weights with
#     f16 caches and flash attention (what a user runs): DIR/greedy-f32.json, DIR/greedy-bf16.json.
#   bash bench/peers/llama-cpp/run.sh DIR MODEL_DIR        (PEERS_ROOT, default /tmp/hrm-peers: source, build, GGUFs)
# BUILD_ONLY=1 stops after the build, PREP_ONLY=1 after the GGUFs (a first call: the build and the conversions do not
# fit one call's limit with the runs and our bench; a second call on the same warm machine reuses them);
# BENCH=0 skips llama-bench, GREEDY=0 the greedy runs, F32=0 the f32 GGUF; PP, TG, REPS and GREEDY_N shrink the work
# (a CPU check: CUDA=0 SKIP_BUILD=1 PP=64 TG=16 REPS=1 GREEDY_N=16). Writes DIR/llama-cpp.json (the version,
# the flags, each step's seconds, llama-bench's results, the greedy runs' files) and DIR/llama-cpp.log.
set -uo pipefail
cd "$(dirname "$0")/../../.."
dir=${1:?usage: run.sh OUT_DIR MODEL_DIR}
model=${2:?usage: run.sh OUT_DIR MODEL_DIR}
root=${PEERS_ROOT:-/tmp/hrm-peers}
mkdir -p "$dir" "$root/gguf"
log=$dir/llama-cpp.log
: > "$log"
t0=$(date +%s)
step() { echo "[llama-cpp] $* ($(($(date +%s) - t0)) s)" | tee -a "$log"; }
steps=()
mark() { steps+=("\"$1\": $(($(date +%s) - t0))"); }
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  bash bench/peers/llama-cpp/build.sh .h200/peers/llama-cpp-src.tar.xz "$root" 2>&1 | tee -a "$log"
  [ "${PIPESTATUS[0]}" = 0 ] || { step "build failed"; exit 1; }
fi
mark build
bin=$root/build-cuda/bin
[ "${CUDA:-1}" = 1 ] || bin=$root/build-cpu/bin
[ "${BUILD_ONLY:-0}" = 1 ] && { step "built; BUILD_ONLY=1 stops here"; exit 0; }
[ -s "$model/model.safetensors" ] || { step "no checkpoint in $model"; exit 1; }
export GGUF_PY=$root/src/gguf-py
name=$(basename "$(realpath "$model")")
g=$root/gguf/$name
# A GGUF is rebuilt when the checkpoint is newer than it.
convert() { # outtype
  local f=$g-$1.gguf
  if [ ! -s "$f" ] || [ "$model/model.safetensors" -nt "$f" ]; then
    python3 bench/peers/llama-cpp/to-gguf.py --model "$model" --out "$f.tmp" --outtype "$1" \
      --tokenizer models/hrm-text-brown-10m/tokenizer.json 2>&1 | tee -a "$log"
    [ "${PIPESTATUS[0]}" = 0 ] && mv "$f.tmp" "$f" || return 1
  fi
}
quantize() { # type
  local f=$g-$(echo "$1" | tr 'A-Z' 'a-z').gguf
  if [ ! -s "$f" ] || [ "$g-bf16.gguf" -nt "$f" ]; then
    "$bin/llama-quantize" "$g-bf16.gguf" "$f.tmp" "$1" "$(nproc)" >> "$log" 2>&1 && mv "$f.tmp" "$f" || return 1
  fi
}
convert bf16 || { step "to-gguf bf16 failed"; exit 1; }
mark convert_bf16
if [ "${F32:-1}" = 1 ]; then convert f32 || step "to-gguf f32 failed"; mark convert_f32; fi
quantize Q8_0 && quantize Q4_0 || { step "llama-quantize failed"; exit 1; }
mark quantize
step "GGUFs: $(cd "$root/gguf" && ls -s --block-size=M "$name"-*.gguf | tr '\n' ' ')"
[ "${PREP_ONLY:-0}" = 1 ] && { step "built and converted; PREP_ONLY=1 stops here"; exit 0; }
if [ "${BENCH:-1}" = 1 ]; then
  for kv in f16 q8_0 q4_0; do
    "$bin/llama-bench" -m "$g-bf16.gguf" -m "$g-q8_0.gguf" -m "$g-q4_0.gguf" -p "${PP:-512}" -n "${TG:-128}" -fa 1 -ngl 99 \
      -ctk "$kv" -ctv "$kv" -r "${REPS:-5}" -o json > "$dir/llama-bench-$kv.json" 2>> "$log"
    step "llama-bench, $kv caches: exit $?"
  done
  python3 - "$dir" <<'PY'
import json, sys, os
d = sys.argv[1]
rows = []
for kv in ("f16", "q8_0", "q4_0"):
    p = os.path.join(d, f"llama-bench-{kv}.json")
    try:
        rows += json.load(open(p))
    except Exception as e:
        rows.append({"error": f"{p}: {e}"})
json.dump(rows, open(os.path.join(d, "llama-bench.json"), "w"), indent=1)
for r in rows:
    if "error" in r:
        print(r["error"]); continue
    test = f"pp{r['n_prompt']}" if r["n_gen"] == 0 else f"tg{r['n_gen']}"
    print(f"{os.path.basename(r['model_filename']):28s} {r['model_type']:24s} K {r['type_k']:5s} V {r['type_v']:5s} "
          f"fa {r['flash_attn']} {test:6s} {r['avg_ts']:10.1f} +- {r['stddev_ts']:.1f} tok/s")
PY
  mark bench
fi
if [ "${GREEDY:-1}" = 1 ]; then
  ids=$model/prompts.json
  if [ -s "$g-f32.gguf" ]; then
    "$bin/hrm-greedy" -m "$g-f32.gguf" --ids "$ids" -n "${GREEDY_N:-128}" --fa off --ctk f32 --ctv f32 > "$dir/greedy-f32.json" 2>> "$log"
    step "greedy f32: exit $?"
  fi
  "$bin/hrm-greedy" -m "$g-bf16.gguf" --ids "$ids" -n "${GREEDY_N:-128}" --fa on --ctk f16 --ctv f16 > "$dir/greedy-bf16.json" 2>> "$log"
  step "greedy bf16: exit $?"
  mark greedy
fi
python3 - "$dir" "$root/src/PEER-VERSION" "{$(IFS=,; echo "${steps[*]}")}" <<'PY'
import json, os, sys
d, version, steps = sys.argv[1], sys.argv[2], sys.argv[3]
def load(p):
    try:
        return json.load(open(p))
    except Exception as e:
        return {"error": f"{p}: {e}"}
out = {
    "engine": "llama.cpp", "version": open(version).read().strip().splitlines() if os.path.exists(version) else None,
    "build": "cmake -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DBUILD_SHARED_LIBS=ON Release; llama-bench, llama-quantize, hrm-greedy",
    "bench_flags": f"-p {os.environ.get('PP', '512')} -n {os.environ.get('TG', '128')} -fa 1 -ngl 99 -ctk X -ctv X (X: f16, q8_0, q4_0) "
                   f"-r {os.environ.get('REPS', '5')}; weights bf16 (to-gguf.py), Q8_0 and Q4_0 (llama-quantize defaults)",
    "seconds_since_start": json.loads(steps),
    "bench": load(os.path.join(d, "llama-bench.json")) if os.path.exists(os.path.join(d, "llama-bench.json")) else None,
    "greedy": {k: load(os.path.join(d, f"greedy-{k}.json")) for k in ("f32", "bf16") if os.path.exists(os.path.join(d, f"greedy-{k}.json"))},
}
json.dump(out, open(os.path.join(d, "llama-cpp.json"), "w"), indent=1)
PY
step "done: $dir/llama-cpp.json"
