#!/usr/bin/env bash
# Parity with transformers at the HRM-Text-1B shape on this GPU (issue 32): `bash bench/parity-transformers.sh OUT
# [PACK]` on the H200 machine, PACK the node pack bench/pack.sh built (default .h200/bench). tools/parity-1b/make.py
# writes seeded random 1B weights and a 512-token prompt into a temp dir, tools/train-embedded/reference.py runs
# transformers on them (f32 with TF32 off, and bf16; 32 greedy steps), then bench/runners/parity-transformers.ts
# checks ours over five kernel paths: the Markdown list into OUT/parity-transformers.md, the JSON into
# OUT/parity-transformers.json and, where the bench ran first, into the bench's JSON as `parity.transformers`
# (bench/harness/merge-parity.mjs). Python's output and timings go to OUT/parity-transformers.log. Skipped (exit 0)
# where python cannot import transformers' HrmTextForCausalLM. About 2-3 minutes; bench/h200.sh runs it last.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: bash bench/parity-transformers.sh OUT [PACK]}
dir=${2:-.h200/bench}
mkdir -p "$out"
if [ ! -f "$dir/parity-transformers.mjs.xz" ]; then
  echo "no $dir/parity-transformers.mjs.xz: run bench/pack.sh first"; exit 1
fi
if ! python3 -c 'import torch; from transformers import HrmTextForCausalLM' 2>/dev/null; then
  echo "parity with transformers: skipped (python3 cannot import transformers' HrmTextForCausalLM)"
  exit 0
fi
tf=$(mktemp -d)
trap 'rm -rf "$tf"' EXIT
echo "== parity with transformers at the HRM-Text-1B shape (into $tf)"
start=$SECONDS
# (&&, not set -e: errexit does not hold in a subshell whose status `if` tests)
if ! { timeout 120 python3 tools/parity-1b/make.py --out "$tf" &&
  timeout 300 python3 tools/train-embedded/reference.py --model "$tf" --prompts "$tf/prompts.json"
} > "$out/parity-transformers.log" 2>&1; then
  echo "make.py or reference.py failed after $((SECONDS - start)) s:"; tail -5 "$out/parity-transformers.log"
  # The bench's JSON still says so: one failed check, merged as the runner's report would be.
  printf '{"passed":0,"failed":1,"checks":[{"name":"%s","figure":"Infinity","bound":0,"ok":false}]}\n' \
    "make.py and reference.py ran (see parity-transformers.log)" > "$out/parity-transformers.json"
  ( source "$dir/enter.sh"; "$dir/node" bench/harness/merge-parity.mjs "$out" "$out/parity-transformers.json" )
  exit 1
fi
echo "weights and transformers' reference: $((SECONDS - start)) s"
(
  # shellcheck disable=SC1090
  source "$dir/enter.sh"
  xz -dc "$dir/parity-transformers.mjs.xz" > "$dir/parity-transformers.mjs"
  timeout 300 "$dir/node" "$dir/parity-transformers.mjs" --model "$tf" --json "$out/parity-transformers.json"
  rc=$?
  json=$out/parity-transformers.json
  [ -s "$json" ] && "$dir/node" bench/harness/merge-parity.mjs "$out" "$json"
  exit $rc
) > "$out/parity-transformers.md" 2>> "$out/parity-transformers.log"
rc=$?
echo "parity-transformers exited with $rc after $((SECONDS - start)) s"
cat "$out/parity-transformers.md"
grep 'merge-parity\|\[parity-transformers\]' "$out/parity-transformers.log"
exit $rc
