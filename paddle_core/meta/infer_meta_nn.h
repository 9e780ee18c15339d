// Shape/dtype inference of the nn ops (see infer_meta.h for the conventions).
#pragma once

#include <string>

#include "paddle_core/meta/infer_meta.h"

namespace oar {

// glu: x's shape with `axis` halved (its size must be even).
void GluInferMeta(const DenseTensor& x, int64_t axis, DenseTensor* out);
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

// lstm_sequence: xw [T, B, 4H] (batch_first: [B, T, 4H]), w_hh [4H, H], bias [4H], h0 and c0
// [B, H] (Note [Fused LSTM]).
void LstmSequenceInferMeta(const DenseTensor& xw, const DenseTensor& w_hh, const DenseTensor& bias,
                           const DenseTensor& h0, const DenseTensor& c0, bool batch_first, bool reverse,
                           DenseTensor* out, DenseTensor* last_h, DenseTensor* last_c, DenseTensor* gates,
                           DenseTensor* cells);
void LstmSequenceGradInferMeta(const DenseTensor& w_hh, const DenseTensor& h0, const DenseTensor& c0,
                               const DenseTensor& gates, const DenseTensor& cells, const DenseTensor* grad_out,
                               const DenseTensor* grad_last_h, const DenseTensor* grad_last_c, bool batch_first,
                               bool reverse, DenseTensor* xw_grad, DenseTensor* w_hh_grad, DenseTensor* bias_grad,
                               DenseTensor* h0_grad, DenseTensor* c0_grad);
// gru_sequence: xw [T, B, 3H] (batch_first: [B, T, 3H]), w_hh [3H, H], bias_ih and bias_hh [3H],
// h0 [B, H] (Note [Fused GRU and SimpleRNN]).
void GruSequenceInferMeta(const DenseTensor& xw, const DenseTensor& w_hh, const DenseTensor& bias_ih,
                          const DenseTensor& bias_hh, const DenseTensor& h0, bool batch_first, bool reverse,
                          DenseTensor* out, DenseTensor* last_h, DenseTensor* gates);
void GruSequenceGradInferMeta(const DenseTensor& w_hh, const DenseTensor& h0, const DenseTensor& out,
                              const DenseTensor& gates, const DenseTensor* grad_out, const DenseTensor* grad_last_h,
                              bool batch_first, bool reverse, DenseTensor* xw_grad, DenseTensor* w_hh_grad,
                              DenseTensor* bias_ih_grad, DenseTensor* bias_hh_grad, DenseTensor* h0_grad);
// rnn_sequence: xw [T, B, H] (batch_first: [B, T, H]), w_hh [H, H], bias [H], h0 [B, H].
void RnnSequenceInferMeta(const DenseTensor& xw, const DenseTensor& w_hh, const DenseTensor& bias,
                          const DenseTensor& h0, bool batch_first, bool reverse, const std::string& activation,
                          DenseTensor* out, DenseTensor* last_h);
void RnnSequenceGradInferMeta(const DenseTensor& w_hh, const DenseTensor& h0, const DenseTensor& out,
                              const DenseTensor* grad_out, const DenseTensor* grad_last_h, bool batch_first,
                              bool reverse, const std::string& activation, DenseTensor* xw_grad, DenseTensor* w_hh_grad,
                              DenseTensor* bias_grad, DenseTensor* h0_grad);

}  // namespace oar
