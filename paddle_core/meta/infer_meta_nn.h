// Shape/dtype inference of the nn ops (see infer_meta.h for the conventions).
#pragma once

#include <string>

#include "paddle_core/meta/infer_meta.h"

namespace oar {

void SoftmaxInferMeta(const DenseTensor& x, int64_t axis, DenseTensor* out);
void LogSoftmaxInferMeta(const DenseTensor& x, int64_t axis, DenseTensor* out);
void SoftmaxGradInferMeta(const DenseTensor& out, const DenseTensor& grad_out, int64_t axis,
                          DenseTensor* x_grad);

/// cross_entropy's reduction attribute, parsed.
enum class LossReduction { kNone, kSum, kMean };
/// Parses "none" / "sum" / "mean"; throws InvalidArgument naming `op` otherwise.
LossReduction parse_loss_reduction(const std::string& reduction, const char* op);

/// Validates cross_entropy's operands (Note [cross_entropy] in infer_meta_nn.cc) and sets
/// the loss: 0-D for "mean"/"sum"; for "none" the label's shape (hard labels) or the
/// input's shape with 1 at `axis` (soft labels).
void CrossEntropyInferMeta(const DenseTensor& input, const DenseTensor& label,
                           const DenseTensor* weight, bool soft_label, bool use_softmax,
                           int64_t ignore_index, int64_t axis, double label_smoothing,
                           const std::string& reduction, DenseTensor* loss);
void CrossEntropyGradInferMeta(const DenseTensor& input, const DenseTensor& label,
                               const DenseTensor* weight, const DenseTensor& grad_loss,
                               bool soft_label, bool use_softmax, int64_t ignore_index,
                               int64_t axis, double label_smoothing, const std::string& reduction,
                               DenseTensor* input_grad);
void CrossEntropyLabelGradInferMeta(const DenseTensor& input, const DenseTensor& label,
                                    const DenseTensor* weight, const DenseTensor& grad_loss,
                                    bool soft_label, bool use_softmax, int64_t ignore_index,
                                    int64_t axis, double label_smoothing,
                                    const std::string& reduction, DenseTensor* label_grad);

}  // namespace oar
