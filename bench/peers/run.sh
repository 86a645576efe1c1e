#!/usr/bin/env bash
# The peers on the GPU machine (issue 44), before our bench in the same call (bench/h200.sh runs this when
# .h200/peers is carried; PEERS=0 there skips it): `bash bench/peers/run.sh OUT_DIR`.
#   1. the checkpoint: tools/parity-1b/make.py's random HRM-Text-1B-shape weights and 512-id prompt into
#      $PEERS_ROOT/ckpt-1b (default /tmp/hrm-peers; made once per machine), or PEERS_MODEL=DIR (any checkpoint
#      folder with a prompts.json);
#   2. llama.cpp (LLAMA=0 skips): bench/peers/llama-cpp/run.sh -> OUT/peers/llama-cpp.json (build, GGUFs,
#      llama-bench, greedy ids);
#   3. transformers.js (TJS=0 skips; needs .h200/peers/tjs and the Chrome kit of bench/chrome-README.md unpacked):
#      bench/peers/transformers-js/run.sh -> OUT/peers/transformers-js.json;
#   4. our greedy ids on the same weights and prompt (bench/peers/ours-greedy.ts, bundled by bench/peers/pack.sh,
#      run with the node pack .h200/bench): causal f32 and bf16 against llama.cpp's runs, prefix bf16 against
#      transformers.js's, each with the teacher-forced pass; bench/peers/agree.py -> OUT/peers/agree-*.json/.md;
#   5. OUT/peers.json: all of it, for bench's --peers (stored under the run's `peers`).
# Each step's failure is written down and the next goes on. BUILD_ONLY=1 builds llama.cpp and stops; PREP_ONLY=1 also
# makes the checkpoint, the GGUFs and (with the transformers.js pack) the ONNX export, and stops: a first call, so
# that the second (bench/h200.sh with the anchors, the peers' runs and our bench) fits 600 s. Everything it makes
# stays in $PEERS_ROOT while the machine is held.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-bench/results}}
root=${PEERS_ROOT:-/tmp/hrm-peers}
p=.h200/peers
d=$out/peers
mkdir -p "$d" "$root"
t0=$(date +%s)
say() { echo "[peers] $* ($(($(date +%s) - t0)) s)"; }
model=${PEERS_MODEL:-$root/ckpt-1b}
if [ "${BUILD_ONLY:-0}" != 1 ] && [ -z "${PEERS_MODEL:-}" ] && [ ! -s "$model/prompts.json" ]; then
  rm -rf "$model"
  python3 tools/parity-1b/make.py --out "$model" --steps 128 || say "make.py failed"
fi
if [ "${LLAMA:-1}" = 1 ] && [ -f "$p/llama-cpp-src.tar.xz" ]; then
  bash bench/peers/llama-cpp/run.sh "$d" "$model"
  say "llama.cpp exited with $?"
fi
if [ "${TJS:-1}" = 1 ] && [ -f "$p/tjs/site.tar.xz" ] && [ "${PREP_ONLY:-0}" = 1 ] && [ "${BUILD_ONLY:-0}" != 1 ]; then
  TJS_EXPORT_ONLY=1 bash bench/peers/transformers-js/run.sh "$d" "$model"
fi
if [ "${BUILD_ONLY:-0}" = 1 ] || [ "${PREP_ONLY:-0}" = 1 ]; then
  say "BUILD_ONLY / PREP_ONLY: stopping before the runs"; exit 0
fi
if [ "${TJS:-1}" = 1 ] && [ -f "$p/tjs/site.tar.xz" ]; then
  bash bench/peers/transformers-js/run.sh "$d" "$model"
  say "transformers.js exited with $?"
fi
# Ours, with the node pack: the same prompt, the same weights.
ours() { # mask dtype against-files...
  local mask=$1 dtype=$2; shift 2
  local against
  against=$(printf '%s\n' "$@" | while read -r f; do [ -s "$f" ] && grep -q '"ids"' "$f" && echo "$f"; done | paste -sd,)
  [ -n "$against" ] || { say "ours $mask $dtype: no peer greedy run to compare with"; return 0; }
  ( source .h200/bench/enter.sh
    .h200/bench/node "$p/ours-greedy.mjs" --model "$model" --ids "$model/prompts.json" --n 128 --mask "$mask" \
      --dtype "$dtype" --against "$against" --json "$d/ours-$mask-$dtype.json" > /dev/null ) 2> "$d/ours-$mask-$dtype.log"
  say "ours $mask $dtype: exit $?"
  python3 bench/peers/agree.py "$d/ours-$mask-$dtype.json" ${against//,/ } --json "$d/agree-$mask-$dtype.json" \
    | tee "$d/agree-$mask-$dtype.md"
}
if [ -f "$p/ours-greedy.mjs.xz" ] && [ -f .h200/bench/enter.sh ]; then
  xz -dc "$p/ours-greedy.mjs.xz" > "$p/ours-greedy.mjs"
  ours causal f32 "$d/greedy-f32.json" "$d/greedy-bf16.json"
  ours causal bf16 "$d/greedy-bf16.json" "$d/greedy-f32.json"
  ours prefix bf16 "$d/tjs-greedy-fp16.json" "$d/tjs-greedy-q4f16.json"
else
  say "no $p/ours-greedy.mjs.xz or no .h200/bench: no token check (carry .h200/bench too)"
fi
python3 - "$d" "$out/peers.json" <<'PY'
import glob, json, os, sys
d, dest = sys.argv[1], sys.argv[2]
def load(p):
    try:
        return json.load(open(p))
    except Exception as e:
        return {"error": f"{p}: {e}"}
out = {"llama_cpp": load(f"{d}/llama-cpp.json") if os.path.exists(f"{d}/llama-cpp.json") else None,
       "transformers_js": load(f"{d}/transformers-js.json") if os.path.exists(f"{d}/transformers-js.json") else None,
       "token_checks": {os.path.basename(f)[6:-5]: load(f) for f in sorted(glob.glob(f"{d}/agree-*.json"))}}
json.dump(out, open(dest, "w"), indent=1)
print(f"[peers] wrote {dest}")
PY
