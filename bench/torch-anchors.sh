#!/usr/bin/env bash
# The PyTorch anchors on this GPU, for the WebGPU figures of the same call: `bash bench/torch-anchors.sh DIR` runs
# bench/suites/torch-anchors.py (1-2 minutes, at most 240 s) and writes DIR/anchors.json (its last JSON line, or an
# {"error"} naming the log) and DIR/anchors.log. Used by bench/h200.sh and bench/chrome-run.sh.
dir=$1
mkdir -p "$dir"
echo "== bench/suites/torch-anchors.py"
# The anchors print one JSON line last; anything else (warnings) goes to the log.
timeout 240 python3 "$(dirname "$0")/suites/torch-anchors.py" > "$dir/anchors.log" 2>&1
echo "torch-anchors exited with $?"
grep '^{' "$dir/anchors.log" | tail -1 > "$dir/anchors.json"
if [ -s "$dir/anchors.json" ]; then cat "$dir/anchors.json"
else
  echo '{"error": "torch-anchors.py printed no JSON (see anchors.log)"}' > "$dir/anchors.json"
  tail -5 "$dir/anchors.log"
fi
