# -DOAR_SANITIZE=address,undefined (any comma list of -fsanitize= names): instruments every
# target, the Python extension included. Use a separate build dir (scripts/sanitize.sh uses
# build-asan/): the pip build stays uninstrumented. UBSan aborts on the first report
# (-fno-sanitize-recover) so a finding fails the test that hit it instead of scrolling by.
set(OAR_SANITIZE "" CACHE STRING "Sanitizers to build with, e.g. address,undefined")
if(OAR_SANITIZE)
  set(_oar_san -fsanitize=${OAR_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  if(OAR_SANITIZE MATCHES "undefined")
    # vptr checks need RTTI across the Python extension boundary that pybind11's
    # hidden-visibility types do not give; they report every cross-module cast.
    list(APPEND _oar_san -fno-sanitize=vptr)
    # gcc's (and clang's) -fsanitize=undefined leaves out float -> integer conversions whose
    # value does not fit (NaN, inf, 1e30 -> int32: undefined behaviour, not a wrap); casts
    # and kernels take user floats, so check them too.
    list(APPEND _oar_san -fsanitize=float-cast-overflow)
  endif()
  add_compile_options(${_oar_san})
  # Debian's gcc links with --as-needed by default but not when -fsanitize= is given (its spec:
  # %{!fsanitize=*:--as-needed}); without it every library on a link line becomes NEEDED, the
  # CUDA driver stub (libcuda.so.1, absent on machines without a GPU) included, and the
  # instrumented test binaries fail to start. Link as the shipped build does.
  add_link_options(${_oar_san} -Wl,--as-needed)
  message(STATUS "oar: sanitizers ${OAR_SANITIZE}")
endif()
