# Every dependency comes from the system (scripts/install_deps.sh installs it); nothing is vendored.
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED)
find_package(gflags CONFIG REQUIRED)
find_package(glog CONFIG REQUIRED)
find_package(dnnl CONFIG REQUIRED)
find_package(BLAS REQUIRED)
find_package(LAPACK REQUIRED)
find_package(ZLIB REQUIRED)  # CRC-32 of saved programs and checkpoints (pir/serialize): crc32_combine
find_path(OAR_DEFLATE_INCLUDE libdeflate.h REQUIRED)  # the CRC-32 itself, on PCLMULQDQ (pir/serialize)
find_library(OAR_DEFLATE_LIB deflate REQUIRED)
find_path(OAR_DLPACK_INCLUDE dlpack/dlpack.h REQUIRED)
find_path(OAR_SLEEF_INCLUDE sleef.h PATHS /usr/include /usr/include/x86_64-linux-gnu REQUIRED)
find_library(OAR_SLEEF_LIB sleef REQUIRED)
find_library(OAR_LAPACKE_LIB lapacke REQUIRED)  # C interface to LAPACK (phi_kernels/cpu/linalg_kernels.cc)
find_path(OAR_FFTW_INCLUDE fftw3.h REQUIRED)      # FFTW: oar.fft (phi_kernels/cpu/fft_kernels.cc)
find_library(OAR_FFTW_LIB fftw3 REQUIRED)
find_library(OAR_FFTWF_LIB fftw3f REQUIRED)
find_package(Python3 REQUIRED COMPONENTS Interpreter)

add_library(oar_deps INTERFACE)
target_include_directories(oar_deps INTERFACE ${OAR_DLPACK_INCLUDE} ${OAR_SLEEF_INCLUDE} ${OAR_DEFLATE_INCLUDE})
target_link_libraries(oar_deps INTERFACE glog::glog gflags DNNL::dnnl ${OAR_SLEEF_LIB}
  ${OAR_FFTW_LIB} ${OAR_FFTWF_LIB} ${OAR_LAPACKE_LIB} ${LAPACK_LIBRARIES} ${BLAS_LIBRARIES} OpenMP::OpenMP_CXX Threads::Threads ZLIB::ZLIB ${OAR_DEFLATE_LIB})

# float32 GEMM (phi_kernels/cpu/sgemm.cc; docs/notes/gemm_backends.md): a current OpenBLAS
# from PyPI's scipy-openblas32 (DYNAMIC_ARCH: picks AVX2/AVX-512 kernels at run time, knows
# Zen 4/5 and Sapphire Rapids, which Debian's 0.3.21 runs with AVX2 code). Its symbols are
# prefixed (scipy_cblas_sgemm), so it sits beside Debian's OpenBLAS, which keeps float64,
# complex and LAPACK. Without it (or with -DOAR_SCIPY_OPENBLAS=OFF) sgemm uses Debian's.
option(OAR_SCIPY_OPENBLAS "float32 GEMM through PyPI's scipy-openblas32 when it is installed" ON)
set(OAR_SGEMM_OPENBLAS_INCLUDE "")
set(OAR_SGEMM_OPENBLAS_LIB "")
if(OAR_SCIPY_OPENBLAS)
  if(DEFINED Python_EXECUTABLE)
    set(_oar_py ${Python_EXECUTABLE})
  else()
    set(_oar_py ${Python3_EXECUTABLE})
  endif()
  execute_process(
    COMMAND ${_oar_py} -c "import scipy_openblas32 as s\nprint(s.get_include_dir(), s.get_lib_dir(), s.get_library(), sep=chr(10))"
    OUTPUT_VARIABLE _oar_sob OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _oar_sob_rc ERROR_QUIET)
  if(_oar_sob_rc EQUAL 0)
    string(REPLACE "\n" ";" _oar_sob "${_oar_sob}")
    list(GET _oar_sob 0 _oar_sob_inc)
    list(GET _oar_sob 1 _oar_sob_dir)
    list(GET _oar_sob 2 _oar_sob_name)
    set(_oar_sob_lib ${_oar_sob_dir}/lib${_oar_sob_name}.so)
    if(EXISTS ${_oar_sob_lib} AND EXISTS ${_oar_sob_inc}/cblas.h)
      set(OAR_SGEMM_OPENBLAS_LIB ${_oar_sob_lib})
      set(OAR_SGEMM_OPENBLAS_INCLUDE ${_oar_sob_inc})
      target_link_libraries(oar_deps INTERFACE ${OAR_SGEMM_OPENBLAS_LIB})
      message(STATUS "float32 GEMM: scipy-openblas32 (${OAR_SGEMM_OPENBLAS_LIB})")
    endif()
  endif()
endif()
if(NOT OAR_SGEMM_OPENBLAS_INCLUDE)
  message(STATUS "float32 GEMM: Debian's OpenBLAS (pip install scipy-openblas32 for the current one)")
endif()
