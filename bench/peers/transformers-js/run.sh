#!/usr/bin/env bash
# transformers.js on HRM-Text in the repository's headless Chrome on the GPU machine (issue 44):
#   bash bench/peers/transformers-js/run.sh OUT_DIR MODEL_DIR
# needs the Chrome kit unpacked (bench/chrome-README.md's calls 1-6; $CHROME_ROOT/env.sh, default /opt/chrome-root)
# and .h200/peers/tjs (bench/peers/transformers-js/pack.sh). Steps: export MODEL_DIR to ONNX (export-onnx.py: fp16,
# and q4f16 through onnxruntime's MatMulNBitsQuantizer; $PEERS_ROOT/onnx/NAME, default /tmp/hrm-peers, once per
# machine), unpack the page, then chrome.ts: per dtype (TJS_DTYPES, default fp16,q4f16) load the model from
# 127.0.0.1, greedy 128 tokens from MODEL_DIR/prompts.json twice (the second timed), OUT_DIR/tjs-greedy-DTYPE.json.
# Writes OUT_DIR/transformers-js.json (versions, flags, export seconds, each dtype's line) and transformers-js.log.
set -uo pipefail
cd "$(dirname "$0")/../../.."
dir=${1:?usage: run.sh OUT_DIR MODEL_DIR}
model=${2:?usage: run.sh OUT_DIR MODEL_DIR}
root=${PEERS_ROOT:-/tmp/hrm-peers}
prefix=${CHROME_ROOT:-/opt/chrome-root}
p=.h200/peers/tjs
mkdir -p "$dir"
log=$dir/transformers-js.log
t0=$(date +%s)
say() { echo "[transformers-js] $* ($(($(date +%s) - t0)) s)" | tee -a "$log"; }
[ "${TJS_EXPORT_ONLY:-0}" = 1 ] || [ -f "$prefix/env.sh" ] || { say "no $prefix/env.sh: unpack the Chrome kit first (bench/chrome-README.md)"; exit 1; }
name=$(basename "$(realpath "$model")")
onnx=$root/onnx/$name
q4=--q4f16
case ",${TJS_DTYPES:-fp16,q4f16}," in *,q4f16,*) ;; *) q4= ;; esac
if [ ! -s "$onnx/onnx/model_fp16.onnx" ] || [ "$model/model.safetensors" -nt "$onnx/onnx/model_fp16.onnx" ]; then
  python3 bench/peers/transformers-js/export-onnx.py --model "$model" --out "$onnx" --dtype fp16 $q4 2>&1 | tee -a "$log"
  say "export exited with ${PIPESTATUS[0]}"
fi
export_s=$(($(date +%s) - t0))
[ "${TJS_EXPORT_ONLY:-0}" = 1 ] && { say "exported; TJS_EXPORT_ONLY=1 stops here"; exit 0; }
rm -rf "$p/site" && xz -dc "$p/site.tar.xz" | tar -x -C "$p" || { say "cannot unpack $p/site.tar.xz"; exit 1; }
xz -dc "$p/tjs-runner.mjs.xz" > "$p/tjs-runner.mjs"
# shellcheck disable=SC1091
source "$prefix/env.sh"
node "$p/tjs-runner.mjs" --site "$p/site" --models "$root/onnx" --name "$name" --ids "$model/prompts.json" \
  --dtypes "${TJS_DTYPES:-fp16,q4f16}" --n 128 --set "${TJS_SET:-vulkan-angle}" --out "$dir" \
  --timeout-s "${TJS_TIMEOUT_S:-400}" 2>&1 | tee -a "$log"
say "runner exited with ${PIPESTATUS[0]}"
python3 - "$dir" "$p/site/VERSIONS" "$export_s" "${TJS_DTYPES:-fp16,q4f16}" <<'PY'
import json, os, sys
d, versions, export_s, dtypes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
def load(p):
    try:
        return json.loads([l for l in open(p).read().splitlines() if l.startswith("{")][-1])
    except Exception as e:
        return {"error": f"{p}: {e}"}
out = {"engine": "transformers.js", "versions": open(versions).read().split("\n")[:2] if os.path.exists(versions) else None,
       "export": "bench/peers/transformers-js/export-onnx.py (standard ONNX ops, opset 17; q4f16: MatMulNBits 4-bit block 32)",
       "export_s": export_s, "runs": {t: load(os.path.join(d, f"tjs-greedy-{t}.json")) for t in dtypes}}
json.dump(out, open(os.path.join(d, "transformers-js.json"), "w"), indent=1)
PY
