// OAR_ISA_NS: the inline namespace that headers with ISA-specific inline code (vec_math.h,
// softmax_rows.h, reduce.h) wrap their contents in, so that the per-ISA copies of a kernel
// source never share a symbol that differs between ISAs (Note [CPU dispatch]).
#pragma once

#define OAR_ISA_NS_CAT_(a, b) a##b
#define OAR_ISA_NS_CAT(a, b) OAR_ISA_NS_CAT_(a, b)
#ifdef OAR_CPU_ISA
#define OAR_ISA_NS OAR_ISA_NS_CAT(isa_, OAR_CPU_ISA)
#else
#define OAR_ISA_NS isa_base
#endif
