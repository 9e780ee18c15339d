# LLVM 19 for the fusion compiler's CPU code generator (cinn/codegen). Only the 19.1
# package's CMake folder is searched: llvm-14 is installed too, and `find_package(LLVM 19)`
# does not match 19.1 (LLVM's version file wants the exact major.minor). We link the
# shared `LLVM` target and take its include folder only: `llvm-config --cxxflags` would
# bring -fno-exceptions and -std=c++17.
#
# OAR_WITH_CINN: AUTO (default) or ON builds the code generator when LLVM 19.1 is found
# and becomes ON/OFF accordingly; OFF builds the passes with a stub generator.
get_property(_oar_cinn_type CACHE OAR_WITH_CINN PROPERTY TYPE)
if(_oar_cinn_type STREQUAL "BOOL")
  # A build folder configured before this file existed holds the old option's OFF.
  set(OAR_WITH_CINN AUTO CACHE STRING "Build the fusion compiler's LLVM code generator (AUTO, ON, OFF)" FORCE)
endif()
if(OAR_WITH_CINN STREQUAL "AUTO" OR OAR_WITH_CINN)
  find_package(LLVM 19.1 CONFIG QUIET HINTS /usr/lib/llvm-19/lib/cmake/llvm NO_DEFAULT_PATH)
  if(LLVM_FOUND AND LLVM_VERSION_MAJOR EQUAL 19 AND TARGET LLVM)
    set(OAR_WITH_CINN ON CACHE STRING "Build the fusion compiler's LLVM code generator (AUTO, ON, OFF)" FORCE)
    message(STATUS "cinn: LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")
  else()
    set(OAR_WITH_CINN OFF CACHE STRING "Build the fusion compiler's LLVM code generator (AUTO, ON, OFF)" FORCE)
    message(WARNING "cinn: LLVM 19.1 not found; the CINN switches will warn and run unfused")
  endif()
endif()
