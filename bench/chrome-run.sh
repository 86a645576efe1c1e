#!/usr/bin/env bash
# On the H200, after bench/chrome-unpack.sh has unpacked every part: run headless Chrome's bench, flag probe and demo
# (bench/chrome/run.ts, bundled in .h200/chrome-run/runner.mjs.xz) with the carried chromium and node; files into
# $OUT (bench/results/ when unset). Arguments pass to the runner: [--phases probe,bench,demo] [--set NAME] ...
# [-- bench options]. CHROME_ROOT (default /opt/chrome-root) is where the unpack put them; CHROME_RUN the run folder.
set -uo pipefail
cd "$(dirname "$0")/.."
prefix=${CHROME_ROOT:-/opt/chrome-root}
run=${CHROME_RUN:-.h200/chrome-run}
[ -f "$prefix/env.sh" ] || { echo "no $prefix/env.sh: bench/chrome-unpack.sh has not unpacked every part yet"; exit 1; }
[ -f "$run/runner.mjs.xz" ] || { echo "no $run/runner.mjs.xz: carry $run (bench/chrome-pack.sh builds it)"; exit 1; }
# shellcheck disable=SC1091
source "$prefix/env.sh"
xz -dc "$run/runner.mjs.xz" > "$run/runner.mjs" || exit 1
rm -rf "$run/site" && xz -dc "$run/site.tar.xz" | tar -x -C "$run" || exit 1
out=${OUT:-bench/results}
mkdir -p "$out"
echo "node: $(command -v node) $(node --version); chromium: $CHROMIUM_PATH"
node "$run/runner.mjs" --out "$out" "$@"
rc=$?
ls -la "$out"
exit $rc
