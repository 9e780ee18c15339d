# Source this to use an out-of-tree development build from Python:
#   source scripts/dev_env.sh [build-dir]     (default build/dev)
#   cmake -S . -B "$OAR_BUILD" -G Ninja && ninja -C "$OAR_BUILD" && python -m pytest tests/python
_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export OAR_BUILD=${1:-$_root/build/dev}
case "$OAR_BUILD" in /*) ;; *) OAR_BUILD=$_root/$OAR_BUILD ;; esac
export OAR_EXT_DIR=$OAR_BUILD/python/oar
export PYTHONPATH=$_root/python${PYTHONPATH:+:$PYTHONPATH}
