// Internals shared by conv_onednn.cc (the float32/bf16 convolutions, their tuning and
// the filters kept across calls) and conv_onednn_fused.cc (the inference convolution
// with bias and relu): oneDNN descriptors, the cached primitive and its operands, the
// tuning's keys and switches. Not part of phi_kernels/funcs: only these two files use it.
#pragma once

#include <gflags/gflags.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <string>

#include "paddle_core/meta/infer_meta_cnn.h"

DECLARE_bool(cudnn_deterministic);

namespace oar::phi::onednn_detail {

using dnnl::memory;
using tag = dnnl::memory::format_tag;

dnnl::engine& cpu_engine();

struct Attrs {
  memory::dims strides, dil, pl, pr;
};

Attrs attrs_of(const ConvGeometry& g);

/// OAR_CONV_TUNE_LOG=1: print each convolution's candidate timings to stderr.
bool tune_log();
/// OAR_CONV_ALGO: the candidate forced by name, or "".
std::string forced_algo();
/// The tuning's clock, in seconds: at one thread the calling thread's CPU time, which a
/// busy neighbour core does not inflate; at more threads, the wall clock.
double tune_clock();
/// A geometry's cache key (readable: spelled out for the tuning log).
std::string key_of(const ConvGeometry& g, char kind, bool readable = false);
/// key_of plus the element type and the settings a tuned choice depends on
/// (FLAGS_cudnn_deterministic, OAR_CONV_ALGO).
std::string tune_key(const ConvGeometry& g, char kind, memory::data_type dt = memory::data_type::f32);

// One operand of a cached convolution: the user's plain layout, the layout the
// primitive chose, and the reorder between them when they differ.
struct Operand {
  int arg = 0;
  bool is_output = false;
  memory::desc user_md, prim_md;
  bool reorder = false;
  dnnl::reorder to_prim, to_user;

  void init(int a, bool out, const memory::desc& user, const memory::desc& chosen) {
    arg = a, is_output = out, user_md = user, prim_md = chosen;
    reorder = user != chosen;
    if (!reorder) return;
    auto& e = cpu_engine();
    if (out)
      to_user = dnnl::reorder(dnnl::reorder::primitive_desc(e, chosen, e, user));
    else
      to_prim = dnnl::reorder(dnnl::reorder::primitive_desc(e, user, e, chosen));
  }
};

// One cached convolution: the primitive and its three operands (oneDNN picks the
// layouts; a blocked layout is usually several times faster than plain NCHW).
struct ConvPrim {
  // What runs: `prim`, or (float32 forward only) conv_im2col_fwd or conv_winograd_fwd.
  enum Algo { kOneDnn, kIm2col, kWinograd } algo = kOneDnn;
  const char* name = "onednn";  // OAR_CONV_ALGO's name
  dnnl::primitive prim;
  std::string impl;  // oneDNN's implementation ("jit:avx512_core", "ref:any", ...)
  Operand ops[3];
  memory::desc scratch_md;
};

struct Mds {
  memory::desc src, dst, w, any_src, any_dst, any_w;
};

// The activation layout a candidate primitive is asked for: oneDNN's choice (on
// AVX-512 in 2.6 usually channels-last for its brgconv kernels), the user's own (no
// activation reorders), or channels in blocks of the vector width (nChw16c on AVX-512,
// nChw8c below), which selects oneDNN's older jit:avx512_core / jit:avx2 direct
// kernels: on Zen 4 those beat brgconv on 3x3 filters (Note [Convolution tuning]).
enum class Layout { kPreferred, kPlain, kBlocked };

/// The user's layouts and the candidate's (`any` where oneDNN picks) in element type dt.
Mds mds_of(const ConvGeometry& g, Layout layout = Layout::kPreferred, memory::data_type dt = memory::data_type::f32);
/// Primitive attributes with a user-provided scratchpad.
dnnl::primitive_attr user_scratchpad();
/// The calling thread's reusable buffer `slot` (0-2: reordered operands, 3: scratchpad).
void* workspace(int slot, size_t bytes);
/// OAR_CONV_ALGO's name of a oneDNN candidate.
const char* layout_name(Layout l);

}  // namespace oar::phi::onednn_detail
