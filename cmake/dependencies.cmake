# Every dependency comes from the system (scripts/install_deps.sh installs it); nothing is vendored.
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED)
find_package(gflags CONFIG REQUIRED)
find_package(glog CONFIG REQUIRED)
find_package(dnnl CONFIG REQUIRED)
find_package(BLAS REQUIRED)
find_package(LAPACK REQUIRED)
find_path(OAR_DLPACK_INCLUDE dlpack/dlpack.h REQUIRED)
find_path(OAR_SLEEF_INCLUDE sleef.h PATHS /usr/include /usr/include/x86_64-linux-gnu REQUIRED)
find_library(OAR_SLEEF_LIB sleef REQUIRED)
find_library(OAR_LAPACKE_LIB lapacke REQUIRED)  # C interface to LAPACK (phi_kernels/cpu/linalg_kernels.cc)
find_package(Python3 REQUIRED COMPONENTS Interpreter)

add_library(oar_deps INTERFACE)
target_include_directories(oar_deps INTERFACE ${OAR_DLPACK_INCLUDE} ${OAR_SLEEF_INCLUDE})
target_link_libraries(oar_deps INTERFACE glog::glog gflags DNNL::dnnl ${OAR_SLEEF_LIB}
  ${OAR_LAPACKE_LIB} ${LAPACK_LIBRARIES} ${BLAS_LIBRARIES} OpenMP::OpenMP_CXX Threads::Threads)
