add_library(oar_warnings INTERFACE)
target_compile_options(oar_warnings INTERFACE -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare)
# Kernels: aggressive optimization, and the build machine's vector ISA unless disabled.
add_library(oar_kernel_flags INTERFACE)
target_compile_options(oar_kernel_flags INTERFACE -O3 -fno-math-errno)
if(OAR_NATIVE_ARCH)
  target_compile_options(oar_kernel_flags INTERFACE -march=native)
endif()
