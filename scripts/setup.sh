#!/usr/bin/env bash
# One-command setup of a fresh Debian/Ubuntu machine: the system packages WebGPU needs without a GPU (Debian's
# chromium, which ships the SwiftShader Vulkan driver and is the browser of the browser tests; Mesa's lavapipe and
# the Vulkan loader), then the npm install (which also builds dist/ for the CLIs). Idempotent.
#
# Debian 12's own lavapipe (Mesa 22.3) is refused by Dawn ("shaderUniform*ArrayDynamicIndexing required"), which
# leaves Node on SwiftShader at a tenth of lavapipe's speed; bookworm-backports has Mesa 25, which Dawn accepts.
# So on Debian 12 the backports suite is enabled (when no apt source names it yet) and mesa-vulkan-drivers comes
# from there. Where that suite cannot be reached, Node falls back to SwiftShader (correct, slower).
set -euo pipefail
cd "$(dirname "$0")/.."

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
apt_install() { DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@"; }

if command -v apt-get >/dev/null; then
  need=()
  [ -x /usr/bin/chromium ] || [ -x /usr/bin/chromium-browser ] || need+=(chromium)
  dpkg -s mesa-vulkan-drivers >/dev/null 2>&1 || need+=(mesa-vulkan-drivers)
  dpkg -s libvulkan1 >/dev/null 2>&1 || need+=(libvulkan1)
  if [ ${#need[@]} -gt 0 ]; then
    echo "setup: installing ${need[*]}"
    $sudo apt-get update -qq
    apt_install "${need[@]}"
  fi

  codename=$( (. /etc/os-release && echo "${ID:-}-${VERSION_CODENAME:-}") 2>/dev/null || true)
  mesa=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || echo 0)
  if [ "$codename" = debian-bookworm ] && ! dpkg --compare-versions "$mesa" ge 25~; then
    list=/etc/apt/sources.list.d/bookworm-backports.sources
    added=0
    if ! grep -rqsE '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      echo "setup: enabling Debian's bookworm-backports suite ($list) for mesa-vulkan-drivers 25 (a lavapipe Dawn accepts)"
      printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian' 'Suites: bookworm-backports' 'Components: main' \
        'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' | $sudo tee "$list" >/dev/null
      added=1
    fi
    $sudo apt-get update -qq || true
    # The policy is read whole before grep: `apt-cache ... | grep -q` fails under pipefail when grep exits early.
    policy=$(apt-cache policy mesa-vulkan-drivers 2>/dev/null || true)
    if grep -q bookworm-backports <<<"$policy" && apt_install -t bookworm-backports mesa-vulkan-drivers; then
      echo "setup: mesa-vulkan-drivers $(dpkg-query -W -f='${Version}' mesa-vulkan-drivers) from bookworm-backports: Node's Dawn runs on lavapipe"
    else
      # Leave no source behind that makes every later apt-get update fail.
      [ "$added" -eq 0 ] || $sudo rm -f "$list"
      echo "setup: bookworm-backports is unreachable; Node's Dawn falls back to SwiftShader (correct, about 10x slower than lavapipe)" >&2
    fi
  fi
else
  echo "setup: no apt-get; install a Vulkan driver (Mesa's lavapipe without a GPU) and Chromium yourself" >&2
fi
# npm ci starts from an empty node_modules, so a second try is clean: an install script racing its own freshly
# written binary (esbuild's version check has failed with ETXTBSY, 1 run in 4 here) is not a reason to fail setup.
npm ci --no-audit --no-fund || { echo "setup: npm ci failed; trying once more" >&2; npm ci --no-audit --no-fund; }
