#!/usr/bin/env bash
# Copies the build-time Debian packages the GPU machine lacks (FlatBuffers, GoogleTest, zstd
# headers, nlohmann-json, fmt) into .gpu-deps/usr, preserving paths, so
# tests/gpu/build_on_device.sh can use them.
# .gpu-deps is git-ignored (add "/.gpu-deps/" to .git/info/exclude) and carried to the device.
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
D=$ROOT/.gpu-deps
rm -rf "$D"
mkdir -p "$D"
for pkg in libflatbuffers-dev libflatbuffers2 flatbuffers-compiler libgtest-dev libgmock-dev libzstd-dev nlohmann-json3-dev libfmt-dev libfmt9; do
  dpkg -L "$pkg" | grep -E '^/usr/(bin|include|lib|share/cmake)' | while read -r f; do
    if [ -f "$f" ] || [ -L "$f" ]; then mkdir -p "$D$(dirname "$f")"; cp -a "$f" "$D$f"; fi
  done
done
cp -a /usr/lib/x86_64-linux-gnu/libzstd.so.1* "$D/usr/lib/x86_64-linux-gnu/"
du -sh "$D"
