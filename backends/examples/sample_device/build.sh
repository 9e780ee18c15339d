#!/usr/bin/env bash
# Builds the sample device plugin as its own CMake project, against only the exported
# device header: build.sh <build dir> <OarDevice config dir (the Oar build's cmake/, or
# an installed oar/cmake)>. Prints the plugin's path. Used by ctest's fixture and the
# Python device tests.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh <build dir> <OarDevice config dir>}
cfg=${2:?usage: build.sh <build dir> <OarDevice config dir>}
mkdir -p "$out"
if [ ! -f "$out/CMakeCache.txt" ]; then
  cmake -S "$src" -B "$out" -DOarDevice_DIR="$cfg" > "$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 1; }
fi
cmake --build "$out" > "$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
echo "$out/liboar_sample_device.so"
