find_program(OAR_CCACHE ccache)
if(OAR_CCACHE)
  # CCACHE_BASEDIR makes paths relative so that several checkouts (git worktrees,
  # clean clones) share one cache.
  set(_oar_launcher ${CMAKE_COMMAND} -E env CCACHE_BASEDIR=${CMAKE_SOURCE_DIR} ${OAR_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${_oar_launcher})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${_oar_launcher})
endif()
