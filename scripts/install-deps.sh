#!/usr/bin/env bash
# Installs the Debian packages ncclrr builds with, when they are missing. Needs root (or sudo)
# only when something is missing. CUDA, NCCL and CUPTI come from /usr/local/cuda, not apt.
set -euo pipefail
pkgs=(cmake ninja-build g++ clang pkg-config libflatbuffers-dev flatbuffers-compiler libzstd-dev
      libgtest-dev qt6-base-dev nlohmann-json3-dev libfmt-dev clang-format)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "== installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "ncclrr: missing packages (${missing[*]}) and not root; install them and rerun" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
