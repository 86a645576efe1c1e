#!/usr/bin/env bash
# The one command for the H200 benchmark machine: `bash bench/h200.sh [bench options]`, run in the repository root
# there, with the pack(s) bench/pack.sh built here carried along (nothing can be downloaded there):
#   Dawn (node):  carry [".h200/bench"]        <- bash bench/pack.sh
#   wgpu (Deno):  carry [".h200/bench-deno"]   <- bash bench/pack.sh deno   (a second call: both do not fit in one)
# First the PyTorch anchors (bench/suites/torch-anchors.py, 1-2 minutes; ANCHORS=0 skips them) on the same GPU,
# then every pack present in turn: the plain WebGPU read probe (bench/probes/read-probe.mjs, its JSON line into
# read-probe.json), then the bench with --check-sgmat (the tensor-core matmul's parity checks), --anchors (the
# anchors' JSON stored verbatim under `anchors`, ratios in the Markdown), --weights bf16,q8,q4 (the model on
# quantized weights too, under `weights`) and --read-probe (the probe's line, held against bench's stream read),
# then the model again with the decode MLP in one dispatch (--decode-mlp fold, full and q4 caches, bf16, q8 and q4
# weights; MLPFOLD=0 skips it), with PERSIST=1 the model again with the persistent decode MLP (--decode-step
# persistent, full and q4 caches, bf16 weights: its tok/s beside the per-op run's above), then the MLX parity checks
# on this GPU (bench/runners/parity.ts; PARITY=0 skips them) into parity.md (with the folded decode merge checked
# against the separate one), then the cross-check against transformers at the 1B shape
# (bench/parity-transformers.sh, 2-3 minutes, where python imports transformers' HrmText; TFPARITY=0 skips it) into
# parity-transformers.md and the bench's JSON (`parity.transformers`); with it the whole call may pass a 600 s
# limit: TFPARITY=0 here and `bash bench/parity-transformers.sh $OUT` in a call of its own after. NODE_FLAGS (e.g. V8's
# --max-semi-space-size=64) go to node before the bench. The probes run when asked: PROBE=1
# bench/probes/sgmat-probe.ts into sgmat-probe.log, PREFETCH=1 bench/probes/prefetch-probe.ts into
# prefetch-probe.log, QONE=1 bench/probes/qone-probe.ts into qone-probe.log. Results (JSON, Markdown, SVG), logs
# and nvidia-smi's view go to $OUT (bench/results/ when $OUT is unset). With no options this is the full
# HRM-Text-1B run (about 1-3 minutes of measurement; a 300 s budget skips what has not started by then, so with the
# anchors the files land inside a 600 s limit).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-bench/results}
# A git worktree's node_modules symlink travels dangling: enter.sh then links node_modules/webgpu afresh.
if [ -L node_modules ] && [ ! -e node_modules ]; then rm node_modules; fi
mkdir -p "$out"
{
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.memory --format=csv
} > "$out/nvidia-smi.txt" 2>&1 || true
anchors=()
if [ "${ANCHORS:-1}" = 1 ]; then
  bash bench/torch-anchors.sh "$out"
  anchors=(--anchors "$out/anchors.json")
fi
# The peers (issue 44: llama.cpp, transformers.js; bench/peers/run.sh) on the same GPU, when .h200/peers is carried
# (bench/peers/pack.sh); PEERS=0 skips them. Their JSON goes under the run's `peers` (--peers).
peers=()
if [ "${PEERS:-1}" = 1 ] && [ -d .h200/peers ]; then
  bash bench/peers/run.sh "$out" 2>&1 | tee "$out/peers.log"
  [ -s "$out/peers.json" ] && peers=(--peers "$out/peers.json")
fi
status=0
ran=0
# A probe bundled by pack.sh from bench/NAME.ts, run from pack $dir for at most SECONDS: its output into
# $out/NAME.log, its JSON lines (one per measured form) shown.
unpack() { xz -dc "$dir/$1.mjs.xz" > "$dir/$1.mjs"; } # NAME: the bundle NAME.mjs from pack $dir
probe() { # NAME SECONDS
  [ -f "$dir/$1.mjs.xz" ] || return 0
  echo "== $dir $1"
  ( source "$dir/enter.sh"; unpack "$1" && timeout "$2" "$dir/node" "$dir/$1.mjs" ) > "$out/$1.log" 2>&1
  echo "$1 exited with $?"; grep '^{' "$out/$1.log" | cut -c1-400
}
for dir in .h200/bench .h200/bench-deno; do
  [ -f "$dir/enter.sh" ] || continue
  ran=1
  name=${dir##*/}
  # The plain read's ceiling on the fresh GPU, before the bench: its line goes to the bench, which warns when its
  # own stream read is more than 10 % from it (issue 30). No line (no probe in the pack, a failure): no flag.
  probed=()
  if [ -f "$dir/read-probe.mjs.xz" ]; then
    probe read-probe 120
    grep '^{' "$out/read-probe.log" | tail -1 > "$out/read-probe.json"
    if [ -s "$out/read-probe.json" ]; then probed=(--read-probe "$out/read-probe.json")
    else echo "read-probe printed no JSON line: the bench runs without --read-probe"; rm -f "$out/read-probe.json"; fi
  fi
  echo "== $dir"
  (
    # shellcheck disable=SC1091
    source "$dir/enter.sh"
    if [ -f "$dir/bench-bundle.mjs.xz" ]; then
      unpack bench-bundle && "$dir/node" ${NODE_FLAGS:-} "$dir/bench-bundle.mjs" \
        --out "$out" --budget 300 --check-sgmat --weights bf16,q8,q4 "${anchors[@]}" "${peers[@]}" "${probed[@]}" "$@"
    elif [ -f "$dir/bench-deno.mjs.xz" ]; then
      unpack bench-deno && "$dir/deno" run -A "$dir/bench-deno.mjs" \
        --out "$out" --budget 300 --check-sgmat --weights bf16,q8,q4 "${anchors[@]}" "${peers[@]}" "${probed[@]}" "$@"
    else
      echo "$dir has no bench bundle: run bench/pack.sh here first"; exit 1
    fi
  ) 2>&1 | tee "$out/$name.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || { echo "== $dir exited with $rc"; status=$rc; }
  # The decode MLP in one dispatch (--decode-mlp fold), timed right after the default in the same call, against the
  # same anchors: a run of its own in $out (issue 30). MLPFOLD=0 skips it.
  if [ "${MLPFOLD:-1}" = 1 ] && [ -f "$dir/bench-bundle.mjs" ]; then
    echo "== $dir, decode MLP in one dispatch"
    ( source "$dir/enter.sh"; "$dir/node" ${NODE_FLAGS:-} "$dir/bench-bundle.mjs" --out "$out" --budget 150 \
      --only model --caches full,q4 --weights bf16,q8,q4 --decode-mlp fold "${anchors[@]}" ) 2>&1 | tee "$out/$name-mlpfold.log"
  fi
  # The persistent decode MLP (--decode-step persistent, issue 39), when asked: PERSIST=1. Its run's fastPaths say
  # whether the grid barrier's self-check passed, its decode path whether the step's MLPs ran persistent.
  if [ "${PERSIST:-0}" = 1 ] && [ -f "$dir/bench-bundle.mjs" ]; then
    echo "== $dir, persistent decode MLP"
    ( source "$dir/enter.sh"; "$dir/node" ${NODE_FLAGS:-} "$dir/bench-bundle.mjs" --out "$out" --budget 150 \
      --only model --caches full,q4 --decode-step persistent "${anchors[@]}" ) 2>&1 | tee "$out/$name-persist.log"
  fi
  if [ -f "$dir/parity.mjs.xz" ] && [ "${PARITY:-1}" = 1 ]; then
    # MLX parity of the model on this GPU's own kernel paths (bench/runners/parity.ts), into parity.md.
    echo "== $dir parity"
    ( source "$dir/enter.sh"; unpack parity && timeout 120 "$dir/node" "$dir/parity.mjs" ) \
      > "$out/parity.md" 2> "$out/parity.log"
    echo "parity exited with $?"; cat "$out/parity.md"
  fi
  # Parity with transformers at the 1B shape on this GPU's kernel paths (issue 32); needs the node pack's runner.
  if [ -f "$dir/parity-transformers.mjs.xz" ] && [ "${TFPARITY:-1}" = 1 ]; then
    bash bench/parity-transformers.sh "$out" "$dir"
  fi
  # The probes, each when asked: the tensor-core kernel forms (bench/probes/sgmat-probe.ts), weights pulled into L2
  # by the dispatch before their product (bench/probes/prefetch-probe.ts), the quantized decode attention's
  # dispatches timed apart (bench/probes/qone-probe.ts).
  [ "${PROBE:-0}" = 1 ] && probe sgmat-probe "${PROBE_S:-150}"
  [ "${PREFETCH:-0}" = 1 ] && probe prefetch-probe 120
  [ "${QONE:-0}" = 1 ] && probe qone-probe 120
done
if [ "$ran" != 1 ]; then
  echo "no pack found: carry .h200/bench (bench/pack.sh) or .h200/bench-deno (bench/pack.sh deno)"
  exit 1
fi
ls -la "$out"
exit "$status"
