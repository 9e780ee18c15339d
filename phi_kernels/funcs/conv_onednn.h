// float32 convolutions on oneDNN (phi_kernels/cpu/conv_onednn.cc). Pointers are dense
// activations in the geometry's layout (NC... or N...C) and filters [out_c, in_c/g, k...].
// Primitives are created once per geometry and cached.
#pragma once

#include <cstdint>
#include <memory>

#include "paddle_core/meta/infer_meta_cnn.h"
#include "paddle_core/tensor/storage.h"

namespace oar::phi {

/// dst = conv(src, w). `w_storage` holds the filter (null: unknown); its version counter
/// and Storage::shared_out tell a filter seen again unchanged, which is kept in the tuned
/// candidate's layout (Note [Filters reused across calls] in docs/notes/cpu_speed_steps.md).
void onednn_conv_fwd(const ConvGeometry& g, const float* src, const float* w, float* dst,
                     const std::shared_ptr<const Storage>& w_storage = nullptr);
/// diff_src = d<conv(src, w), diff_dst>/d src (= the transposed conv of diff_dst)
void onednn_conv_bwd_data(const ConvGeometry& g, const float* diff_dst, const float* w,
                          float* diff_src);
/// diff_w = d<conv(src, w), diff_dst>/d w
void onednn_conv_bwd_weights(const ConvGeometry& g, const float* src, const float* diff_dst,
                             float* diff_w);

/// bfloat16 (bits as uint16_t) forward, data and filter gradients on oneDNN's bf16
/// kernels, f32 accumulation (Note [bf16 convolution]), the forward with reused filters
/// kept as onednn_conv_fwd's; only where
/// onednn_conv_bf16_supported() (oneDNN runs AVX512-BF16 or AMX-BF16: onednn_runs_isa).
bool onednn_conv_bf16_supported();
void onednn_conv_fwd_bf16(const ConvGeometry& g, const uint16_t* src, const uint16_t* w, uint16_t* dst,
                          const std::shared_ptr<const Storage>& w_storage = nullptr);
void onednn_conv_bwd_data_bf16(const ConvGeometry& g, const uint16_t* diff_dst, const uint16_t* w, uint16_t* diff_src);
void onednn_conv_bwd_weights_bf16(const ConvGeometry& g, const uint16_t* src, const uint16_t* diff_dst,
                                  uint16_t* diff_w);

/// Inference (fused_conv2d, and eager convolutions no gradient flows from): dst =
/// relu?(conv(src, w) + bias), bias out_c values or null, the bias and the relu as oneDNN
/// post-ops. The filter reordered to the primitive's layout is cached per buffer of
/// `w_storage` and reused until the buffer dies or is written, as onednn_conv_fwd's (null
/// storage: no cache).
void onednn_conv_fwd_fused(const ConvGeometry& g, const float* src, const float* w, const float* bias, bool relu,
                           const std::shared_ptr<const Storage>& w_storage, float* dst);

}  // namespace oar::phi
