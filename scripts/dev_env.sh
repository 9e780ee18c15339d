# Source this to use an out-of-tree development build from Python:
#   source scripts/dev_env.sh [build-dir]     (default build/dev)
#   cmake -S . -B "$OAR_BUILD" -G Ninja && ninja -C "$OAR_BUILD" && python -m pytest tests/python
_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export OAR_BUILD=${1:-$_root/build/dev}
case "$OAR_BUILD" in /*) ;; *) OAR_BUILD=$_root/$OAR_BUILD ;; esac
export OAR_EXT_DIR=$OAR_BUILD/python/oar
export PYTHONPATH=$_root/python${PYTHONPATH:+:$PYTHONPATH}
# An editable install (scripts/setup.sh) puts an import redirect ahead of sys.path that would
# still resolve `import oar` to the installed checkout; scikit-build-core's
# SKBUILD_EDITABLE_SKIP marker (the redirect's build folder) makes it step aside in this shell.
_oar_skip=$(python3 -c 'import sys; print(":".join(str(f.path) for f in sys.meta_path if type(f).__name__ == "ScikitBuildRedirectingFinder" and getattr(f, "path", None)))' 2>/dev/null || true)
if [ -n "$_oar_skip" ]; then
  export SKBUILD_EDITABLE_SKIP=$_oar_skip${SKBUILD_EDITABLE_SKIP:+:$SKBUILD_EDITABLE_SKIP}
fi
unset _oar_skip
