# Op code generation: paddle_core/ops/*.yaml -> build/generated/oar_generated/*.
set(OAR_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)
file(GLOB OAR_OP_YAMLS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/paddle_core/ops/*.yaml)
file(GLOB OAR_OP_GENERATOR CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/paddle_core/ops/generator/*.py)
set(OAR_GEN_OPS_CC "")
set(OAR_GEN_PY_CC "")
foreach(y ${OAR_OP_YAMLS})
  get_filename_component(tag ${y} NAME_WE)
  list(APPEND OAR_GEN_OPS_CC ${OAR_GENERATED_DIR}/oar_generated/ops_${tag}.cc)
  list(APPEND OAR_GEN_PY_CC ${OAR_GENERATED_DIR}/oar_generated/ops_py_${tag}.cc)
endforeach()
set(OAR_GEN_HEADERS
  ${OAR_GENERATED_DIR}/oar_generated/ops_api.h
  ${OAR_GENERATED_DIR}/oar_generated/kernel_signatures.h
  ${OAR_GENERATED_DIR}/oar_generated/ops_py.h)
add_custom_command(
  OUTPUT ${OAR_GEN_HEADERS} ${OAR_GEN_OPS_CC} ${OAR_GEN_PY_CC}
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/paddle_core/ops/generator/gen_ops.py
          --out ${OAR_GENERATED_DIR} ${OAR_OP_YAMLS}
  DEPENDS ${OAR_OP_YAMLS} ${OAR_OP_GENERATOR}
  COMMENT "Generating op API, autograd nodes and bindings from paddle_core/ops/*.yaml"
  VERBATIM)
# Per-op tables (gen_op_tables.py): the autocast categories (amp:) and the
# decompositions (decomp:), compiled into the core with the op functions.
set(OAR_GEN_TABLES_CC
  ${OAR_GENERATED_DIR}/oar_generated/amp_table.cc
  ${OAR_GENERATED_DIR}/oar_generated/decomp.cc)
add_custom_command(
  OUTPUT ${OAR_GEN_TABLES_CC} ${OAR_GENERATED_DIR}/oar_generated/decomp.h
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/paddle_core/ops/generator/gen_op_tables.py
          --out ${OAR_GENERATED_DIR} ${OAR_OP_YAMLS}
  DEPENDS ${OAR_OP_YAMLS} ${OAR_OP_GENERATOR}
  COMMENT "Generating the amp table and decompositions from paddle_core/ops/*.yaml"
  VERBATIM)
list(APPEND OAR_GEN_HEADERS ${OAR_GENERATED_DIR}/oar_generated/decomp.h)
add_custom_target(oar_codegen DEPENDS ${OAR_GEN_HEADERS} ${OAR_GEN_OPS_CC} ${OAR_GEN_PY_CC}
                                      ${OAR_GEN_TABLES_CC})
list(APPEND OAR_GEN_OPS_CC ${OAR_GEN_TABLES_CC})
