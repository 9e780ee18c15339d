# NVRTC for the fusion compiler's CUDA C generator (cinn/codegen/nvrtc_compile.cc): CUDA C
# -> PTX / sm_90 CUBIN without a GPU. Found through CMake's CUDAToolkit (target
# CUDA::nvrtc; $CUDA_HOME or /usr/local/cuda). Only that file sees the CUDA headers, so
# the rest of the build's flags do not change with the toolkit.
#
# OAR_WITH_NVRTC: AUTO (default) builds with NVRTC when it is found and becomes ON/OFF
# accordingly; ON fails the configure without it; OFF never looks.
set(OAR_WITH_NVRTC AUTO CACHE STRING "Compile the fusion compiler's CUDA C with NVRTC (AUTO, ON, OFF)")
if(OAR_WITH_NVRTC STREQUAL "AUTO" OR OAR_WITH_NVRTC)
  set(_oar_nvrtc_required ${OAR_WITH_NVRTC})
  if(NOT CUDAToolkit_ROOT AND DEFINED ENV{CUDA_HOME})
    set(CUDAToolkit_ROOT $ENV{CUDA_HOME})
  endif()
  find_package(CUDAToolkit QUIET)
  if(TARGET CUDA::nvrtc)
    set(OAR_WITH_NVRTC ON CACHE STRING "Compile the fusion compiler's CUDA C with NVRTC (AUTO, ON, OFF)" FORCE)
    message(STATUS "cinn: NVRTC from CUDA ${CUDAToolkit_VERSION} (${CUDAToolkit_LIBRARY_DIR})")
  elseif(_oar_nvrtc_required STREQUAL "ON")
    message(FATAL_ERROR "cinn: OAR_WITH_NVRTC=ON but CUDA::nvrtc was not found (set CUDA_HOME)")
  else()
    set(OAR_WITH_NVRTC OFF CACHE STRING "Compile the fusion compiler's CUDA C with NVRTC (AUTO, ON, OFF)" FORCE)
    message(STATUS "cinn: NVRTC not found; the CUDA C generator emits source only")
  endif()
endif()
