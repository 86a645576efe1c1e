#!/usr/bin/env bash
# Build, here, what headless Chrome needs on the H200 benchmark machine (no browser, no network, at most 64 MiB a
# call, ~34 MiB of it the working tree): Debian 12's chromium, the .debs of every library the H200 lacks
# (bench/chrome-libs.txt), a font and a fontconfig file, and a stripped node, unpacked, trimmed (other locales, the
# Vulkan validation layer, docs), in one tar.xz split into parts of at most PART_MIB (26) MiB:
#   .h200/chrome/partN/   chrome.tar.xz.N + SHA256SUMS (every part's and the whole's sums: each part checks alone)
#   .h200/chrome-run/     the runner (bench/chrome/run.ts bundled by esbuild, no node_modules needed there), the
#                         built bench page and demo (vite), carried with the last part
# There, bench/chrome-unpack.sh gathers the parts call by call and unpacks them once all have come;
# bench/chrome-README.md gives the calls. Run after `npm ci` and `apt-get update`. The .debs stay cached in
# .h200/chrome-debs/ (not carried). Prints the calls it takes.
set -euo pipefail
cd "$(dirname "$0")/.."
part_mib=${PART_MIB:-26}
debs=.h200/chrome-debs parts=.h200/chrome run=.h200/chrome-run whole=.h200/chrome-whole.tar.xz
mkdir -p "$debs"
exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qxF '/.h200/' "$exclude" 2>/dev/null || echo '/.h200/' >> "$exclude"
mapfile -t pkgs < <(sed -e 's/#.*//' -e '/^present:/d' bench/chrome-libs.txt | tr -s ' \n' '\n\n' | grep .)
(cd "$debs" && apt-get download chromium chromium-common "${pkgs[@]}" >/dev/null 2>&1) \
  || { echo "apt-get download failed for one of: chromium chromium-common ${pkgs[*]} (apt-get update first?)"; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# The whole tar.xz is kept (not carried) and reused while the .debs, the package list and node are the same: xz -9
# of the 440 MB tree takes ~10 CPU minutes. FORCE=1 rebuilds it.
stamp=$( (ls "$debs"/*.deb; cat bench/chrome-libs.txt; node --version) | sha256sum | cut -c1-16)
if [ "${FORCE:-0}" = 1 ] || [ "$(cat "$whole.stamp" 2>/dev/null)" != "$stamp" ]; then
  root=$stage/root
  for f in "$debs"/*.deb; do dpkg -x "$f" "$root"; done
  # What headless Chrome does not need: docs, icons, other locales' strings, the Vulkan validation layer and the mock
  # driver (23 MB and 0.5 MB), the /usr/bin wrapper script (the binary is run directly), Debian's /etc files.
  rm -rf "$root"/usr/share/{doc,man,icons,applications,lintian,bug,menu,metainfo,appdata,gtk-doc}
  rm -rf "$root/etc" "$root/usr/bin"
  find "$root/usr/lib/chromium/locales" -type f ! -name 'en-US.pak' -delete
  rm -f "$root"/usr/lib/chromium/libVkLayer_khronos_validation.so* "$root"/usr/lib/chromium/libVkICD_mock_icd.so*
  # libgbm's Mesa backend (it needs Mesa's libgallium, 30 MB): GBM is for display buffers; headless Chrome has none.
  rm -rf "$root/usr/lib/x86_64-linux-gnu/gbm"
  # fontconfig reads FONTCONFIG_FILE (chrome-unpack.sh's env.sh sets it); the font folder is relative to this file.
  mkdir -p "$root/etc/fonts"
  cat > "$root/etc/fonts/fonts.conf" <<'CONF'
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <dir prefix="relative">../../usr/share/fonts</dir>
  <cachedir>/tmp/hrm-fontconfig-cache</cachedir>
  <alias><family>sans-serif</family><prefer><family>DejaVu Sans</family></prefer></alias>
  <alias><family>serif</family><prefer><family>DejaVu Serif</family></prefer></alias>
  <alias><family>monospace</family><prefer><family>DejaVu Sans Mono</family></prefer></alias>
</fontconfig>
CONF
  mkdir -p "$root/node"
  strip -o "$root/node/node" "$(readlink -f "$(command -v node)")"

  # Every library any binary here needs must be in the tree or on the H200 (bench/chrome-libs.txt's present: line,
  # from its ldconfig -p); else name it and stop, before anything is carried.
  present=" $(sed -n 's/^present: //p' bench/chrome-libs.txt) "
  have=" $(find "$root" \( -type f -o -type l \) -name '*.so*' -printf '%f\n' | tr '\n' ' ') "
  lacking=$(find "$root" -type f \( -name '*.so*' -o -perm -u+x \) -print0 | xargs -0 file -L |
    awk -F: '/ELF/ {print $1}' |
    xargs -r readelf -d 2>/dev/null | awk '/NEEDED/ {gsub(/[][]/, "", $5); print $5}' | sort -u |
    while read -r so; do [[ "$present" == *" $so "* || "$have" == *" $so "* ]] || echo "$so"; done)
  [ -z "$lacking" ] || { echo "the H200 would lack: $lacking (add their packages to bench/chrome-libs.txt)"; exit 1; }
  echo "compressing $(du -sm "$root" | cut -f1) MB (xz -9: ~10 CPU minutes)"
  tar -C "$root" -cf - . | xz -9 -T2 > "$whole.tmp" && mv "$whole.tmp" "$whole" && echo "$stamp" > "$whole.stamp"
  rm -rf "$root"
else
  echo "reusing $whole (FORCE=1 rebuilds it)"
fi

# Parts of equal size, as few as PART_MIB allows: each call carries the same, well under the limit.
rm -rf "$parts" && mkdir -p "$parts"
n=$(( ($(stat -c %s "$whole") + part_mib * 1048576 - 1) / (part_mib * 1048576) ))
split -n "$n" -d -a 1 --numeric-suffixes=1 "$whole" "$stage/chrome.tar.xz."
sum=$(sha256sum < "$whole" | cut -d' ' -f1)
(cd "$stage" && sha256sum chrome.tar.xz.* && echo "$sum  whole" && echo "$n  parts") > "$stage/SHA256SUMS"
for i in $(seq 1 "$n"); do
  mkdir -p "$parts/part$i" && mv "$stage/chrome.tar.xz.$i" "$parts/part$i/" && cp "$stage/SHA256SUMS" "$parts/part$i/"
done

bash bench/chrome-build.sh "$run"
tree=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
mib() { echo $((($1 + 1048575) / 1048576)); }
echo "working tree $(mib "$tree") MiB; a call may carry 64 MiB in all. The calls, back to back (timeout_s 600):"
for i in $(seq 1 "$n"); do
  size=$(du -cb "$parts/part$i" | tail -1 | cut -f1)
  carry="[\"$parts/part$i\"]" cmd="bash bench/chrome-unpack.sh"
  if [ "$i" = "$n" ]; then
    size=$((size + $(du -cb "$run" | tail -1 | cut -f1)))
    carry="[\"$parts/part$i\", \"$run\"]" cmd="$cmd && bash bench/chrome-run.sh --phases probe --probe-all"
  fi
  echo "  call $i: carry $carry  command: $cmd  ($(mib $((size + tree))) MiB)"
done
echo "  call $((n + 1)): carry [\"$run\"]  command: bash bench/chrome-run.sh --phases probe,bench"
echo "  call $((n + 2)): carry [\"$run\"]  command: bash bench/chrome-run.sh --phases probe,demo"
