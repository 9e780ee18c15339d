include(${CMAKE_CURRENT_LIST_DIR}/cpu_dispatch.cmake)
add_library(oar_warnings INTERFACE)
target_compile_options(oar_warnings INTERFACE -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare)
# Kernels: aggressive optimization on the portable baseline ISA (Note [CPU dispatch],
# docs/notes/cpu_dispatch.md); the hot kernels are compiled once more per wider ISA and
# picked at run time (cmake/cpu_dispatch.cmake). OAR_NATIVE_ARCH (off by default) is for
# local experiments only: a library built with it may not run on another CPU, and ccache
# keys on the flag's text, not on the ISA it expands to.
add_library(oar_kernel_flags INTERFACE)
target_compile_options(oar_kernel_flags INTERFACE ${OAR_KERNEL_OPT_FLAGS})
if(OAR_NATIVE_ARCH)
  target_compile_options(oar_kernel_flags INTERFACE -march=native)
else()
  target_compile_options(oar_kernel_flags INTERFACE ${OAR_BASELINE_ARCH_FLAGS})
endif()
