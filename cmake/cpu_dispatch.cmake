# CPU dispatch (Note [CPU dispatch], docs/notes/cpu_dispatch.md): kernels build for the
# baseline ISA; the hot kernel sources build once per ISA below, each copy in its own
# namespace, and only the copy matching the CPU (or OAR_CPU_CAPABILITY) registers its
# kernels at start-up.
#
# The baseline is x86-64-v3 (AVX2, FMA, F16C, BMI2): every machine Oar runs on has it,
# and the kernels outside the dispatch tables keep their AVX2 paths (conv_direct,
# pool_fwd, the elementwise transposes), which x86-64-v2 would turn into scalar code.
set(OAR_BASELINE_ARCH_FLAGS -march=x86-64-v3 -mtune=generic)
# Optimization flags of every kernel, baseline or ISA copy. A sanitizer build
# (cmake/sanitizers.cmake, scripts/sanitize.sh) uses -O1 like the rest of that build: at -O3
# the instrumented kernel sources (each built once per ISA) took most of a build that did not
# finish on a 2-core machine, and -O1 is the level ASan's documentation recommends.
if(OAR_SANITIZE)
  set(OAR_KERNEL_OPT_FLAGS -O1 -fno-math-errno)
else()
  # No second, narrower vector loop for a vectorized loop's remainder (GCC's epilogue
  # vectorization): the remainder runs scalar. It was a tenth of binary_kernels.cc's code and
  # compile; the ops benchmark did not move (Note [One copy of a loop], cpu_dispatch.md).
  # Loops start on a 64-byte line: where a hot loop lands moved with unrelated changes
  # elsewhere in the library (a float16 mul's F16C block loop across a line: 0.22 -> 0.32 ms
  # after an edit to vec_math.h on the Xeon; argmax 0.8 or 1.2 ms by build on Zen 3).
  set(OAR_KERNEL_OPT_FLAGS -O3 -fno-math-errno --param=vect-epilogues-nomask=0 -falign-loops=64)
endif()

# name -> compile flags of each ISA copy. avx2 is the baseline itself; it is still a
# separate copy so that every ISA copy is built and registered the same way.
set(OAR_CPU_ISAS avx2 avx512)
set(OAR_CPU_ISA_FLAGS_avx2 -march=x86-64-v3 -mtune=generic)
# 512-bit auto-vectorization too: generic tuning would keep gcc's own loops at 256 bits,
# and this copy only runs where AVX-512 is present (argmax's scan, gathers, reorders).
set(OAR_CPU_ISA_FLAGS_avx512 -march=x86-64-v4 -mtune=generic -mprefer-vector-width=512)

# oar_add_isa_kernels(<sources>): one object library oar_phi_kernels_<isa> per ISA from
# the same sources; OAR_ISA_OBJECTS collects their objects for the core library, which
# links them after every baseline object (see the note on inline functions).
function(oar_add_isa_kernels)
  set(objects)
  foreach(isa ${OAR_CPU_ISAS})
    set(t oar_phi_kernels_${isa})
    add_library(${t} OBJECT ${ARGN})
    add_dependencies(${t} oar_codegen)
    target_include_directories(${t} PUBLIC ${CMAKE_SOURCE_DIR} ${OAR_GENERATED_DIR})
    target_link_libraries(${t} PRIVATE oar_deps oar_warnings)
    target_compile_options(${t} PRIVATE ${OAR_KERNEL_OPT_FLAGS} ${OAR_CPU_ISA_FLAGS_${isa}} -include
                                        ${CMAKE_SOURCE_DIR}/phi_kernels/cpu/dispatch/isa_register.h)
    target_compile_definitions(${t} PRIVATE OAR_CPU_ISA=${isa})
    list(APPEND objects $<TARGET_OBJECTS:${t}>)
  endforeach()
  set(OAR_ISA_OBJECTS ${objects} PARENT_SCOPE)
endfunction()
