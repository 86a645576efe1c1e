#!/usr/bin/env bash
# One-command setup of a fresh Debian/Ubuntu machine: the system packages WebGPU needs without a GPU (Debian's
# chromium, which ships the SwiftShader Vulkan driver Dawn runs on and is the browser of the browser tests; Mesa's
# lavapipe and the Vulkan loader for Deno), then the npm install (which also builds dist/ for the CLIs).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
[ -x /usr/bin/chromium ] || [ -x /usr/bin/chromium-browser ] || need+=(chromium)
dpkg -s mesa-vulkan-drivers >/dev/null 2>&1 || need+=(mesa-vulkan-drivers)
dpkg -s libvulkan1 >/dev/null 2>&1 || need+=(libvulkan1)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
npm ci --no-audit --no-fund
