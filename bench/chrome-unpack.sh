#!/usr/bin/env bash
# On the H200 (bench/chrome-README.md): gather the parts of headless Chrome that bench/chrome-pack.sh split, call by
# call, and unpack them into a prefix once all have come. Each part present under .h200/chrome/partN/ is checked
# against its SHA256SUMS and copied to $CHROME_ROOT.parts/ (outside the working tree), so parts carried by earlier
# calls on the same warm machine count; a part of another pack empties that folder first. With every part there
# (and the whole's sum right) the tree goes to $CHROME_ROOT (default /opt/chrome-root; chromium under
# usr/lib/chromium, its libraries under usr/lib/x86_64-linux-gnu, nothing into /), once: later calls skip it. Then
# $CHROME_ROOT/env.sh (LD_LIBRARY_PATH, FONTCONFIG_FILE, VK_DRIVER_FILES, CHROMIUM_PATH, node on PATH), the
# sonames ldd still cannot find, and `chromium --version`. Exits 1 on a bad part or a missing library.
set -uo pipefail
cd "$(dirname "$0")/.."
prefix=${CHROME_ROOT:-/opt/chrome-root}
stage=$prefix.parts
mkdir -p "$stage"
for d in .h200/chrome/part*/; do
  [ -f "$d/SHA256SUMS" ] || continue
  if [ -f "$stage/SHA256SUMS" ] && ! cmp -s "$d/SHA256SUMS" "$stage/SHA256SUMS"; then
    echo "$d belongs to another pack than the parts gathered so far: starting over"; rm -f "$stage"/*
  fi
  cp "$d/SHA256SUMS" "$stage/SHA256SUMS"
  for f in "$d"chrome.tar.xz.*; do
    name=${f##*/}
    (cd "$d" && grep " $name\$" SHA256SUMS | sha256sum -c --quiet -) \
      || { echo "$f: checksum mismatch (a broken copy)"; exit 1; }
    cmp -s "$f" "$stage/$name" || cp "$f" "$stage/$name"
    echo "part $name ok"
  done
done
[ -f "$stage/SHA256SUMS" ] || { echo "no part under .h200/chrome/ nor in $stage: carry .h200/chrome/part1"; exit 1; }
n=$(awk '$2 == "parts" {print $1}' "$stage/SHA256SUMS")
whole=$(awk '$2 == "whole" {print $1}' "$stage/SHA256SUMS")
missing=$(for i in $(seq 1 "$n"); do [ -f "$stage/chrome.tar.xz.$i" ] || printf '%s ' "$i"; done)
if [ -n "$missing" ]; then
  echo "have $(ls "$stage"/chrome.tar.xz.* 2>/dev/null | wc -l) of $n parts; still to carry: part $missing"
  exit 0
fi
if [ "$(cat "$prefix/.unpacked" 2>/dev/null)" != "$whole" ]; then
  got=$(for i in $(seq 1 "$n"); do cat "$stage/chrome.tar.xz.$i"; done | sha256sum | cut -d' ' -f1)
  [ "$got" = "$whole" ] || { echo "the joined parts' sum is $got, not $whole"; exit 1; }
  rm -rf "$prefix" && mkdir -p "$prefix"
  t0=$(date +%s)
  for i in $(seq 1 "$n"); do cat "$stage/chrome.tar.xz.$i"; done | xz -dc -T0 | tar -x -C "$prefix" \
    || { echo "unpacking failed"; exit 1; }
  echo "$whole" > "$prefix/.unpacked"
  echo "unpacked $n parts into $prefix ($(du -sm "$prefix" | cut -f1) MB) in $(($(date +%s) - t0)) s"
fi
cat > "$prefix/env.sh" <<ENV
# sourced before running the carried chromium or node (bench/chrome-run.sh does)
export CHROME_ROOT=$prefix
# pulseaudio/: libpulse's private libpulsecommon, which chromium links and ld.so does not look for elsewhere
libs=$prefix/usr/lib/x86_64-linux-gnu:$prefix/lib/x86_64-linux-gnu:$prefix/usr/lib/x86_64-linux-gnu/pulseaudio
export LD_LIBRARY_PATH=\$libs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export FONTCONFIG_FILE=$prefix/etc/fonts/fonts.conf
export CHROMIUM_PATH=$prefix/usr/lib/chromium/chromium
export PATH=$prefix/node:\$PATH
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [ -f "\$icd" ]; then export VK_DRIVER_FILES=\$icd; fi
ENV
# shellcheck disable=SC1091
source "$prefix/env.sh"
status=0
lacking=$(ldd "$CHROMIUM_PATH" | grep 'not found' | awk '{print $1}' | tr '\n' ' ')
if [ -n "$lacking" ]; then
  echo "chromium still lacks: $lacking"; status=1
else
  echo "ldd: every library chromium links is found"
fi
echo "$(ldd "$CHROMIUM_PATH" | grep -c "=> $prefix/") of its libraries come from $prefix"
"$CHROMIUM_PATH" --version || status=1
node --version || status=1
echo "VK_DRIVER_FILES=${VK_DRIVER_FILES:-unset}"
exit $status
