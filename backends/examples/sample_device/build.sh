#!/usr/bin/env bash
# Builds the sample device plugin as its own CMake project against the *installed* OarDevice
# package (the two headers and their CMake config, nothing else of Oar), as a vendor does:
#   build.sh <build dir> <an Oar build tree | an installed OarDevice config dir>
# Given a build tree, it first installs the `oar_device` component into <build dir>/prefix
# (what `pip install oar` ships under oar/lib/cmake/OarDevice). Prints the plugin's path.
# Used by ctest's fixture and the Python device tests.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh <build dir> <Oar build tree or OarDevice config dir>}
from=${2:?usage: build.sh <build dir> <Oar build tree or OarDevice config dir>}
mkdir -p "$out"
out=$(cd "$out" && pwd)  # absolute: CMake reads a relative OarDevice_DIR from the build dir
[ -d "$from" ] && from=$(cd "$from" && pwd)
if [ -f "$from/OarDeviceConfig.cmake" ]; then
  cfg=$from
else
  [ -f "$from/cmake_install.cmake" ] || { echo "build.sh: $from is neither an Oar build tree nor an OarDevice config dir" >&2; exit 2; }
  cmake --install "$from" --component oar_device --prefix "$out/prefix" > "$out/install.log" 2>&1 || { cat "$out/install.log"; exit 1; }
  cfg=$out/prefix/lib/cmake/OarDevice
fi
# Configure once per config dir and source dir (a cache made against another one is redone:
# a worktree that borrows another checkout's build tree must not build that checkout's plugin).
if [ ! -f "$out/CMakeCache.txt" ] || [ "$(sed -n 's/^OarDevice_DIR:[A-Z]*=//p' "$out/CMakeCache.txt")" != "$cfg" ] ||
   [ "$(sed -n 's/^CMAKE_HOME_DIRECTORY:[A-Z]*=//p' "$out/CMakeCache.txt")" != "$src" ]; then
  rm -f "$out/CMakeCache.txt"
  cmake -S "$src" -B "$out" -DOarDevice_DIR="$cfg" > "$out/configure.log" 2>&1 || { cat "$out/configure.log"; exit 1; }
fi
cmake --build "$out" > "$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
echo "$out/liboar_sample_device.so"
