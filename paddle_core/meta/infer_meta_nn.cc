#include "paddle_core/meta/infer_meta_nn.h"

#include <array>
#include <string>

// Note [cross_entropy]
// cross_entropy follows paddle.nn.functional.cross_entropy (Paddle 3.x) exactly:
//  * input: [..., C, ...] with the classes along `axis`; float dtype.
//  * hard labels (soft_label=False): int32/int64, shape = input's with the class dim
//    removed or set to 1. A label equal to ignore_index gives loss 0 (and weight 0);
//    any other label outside [0, C) is an IndexError. soft labels: input's shape and
//    dtype; ignore_index > 0 is rejected, as in Paddle.
//  * per-sample loss: -sum_c y_c log p_c, p = softmax(input) (use_softmax=True) or the
//    input itself (use_softmax=False; log(0) is clamped to -1e20, Paddle's TolerableValue).
//  * label_smoothing = eps > 0: y = (1 - eps) * y + eps / C (hard labels are one-hot
//    encoded first). Unlike Paddle, whose one_hot fails on them, ignored hard labels
//    stay ignored. As in Paddle, 'none' then returns the label shape with the class
//    dim kept as 1 (the labels became soft).
//  * weight [C]: each sample's loss is scaled by W = sum_c y_c weight_c (weight[label]
//    for plain hard labels).
//  * reduction 'none': per-sample losses; 'sum': their sum; 'mean': their sum divided by
//      - sum of W over non-ignored samples when weighted (a zero sum counts as 1),
//      - the number of non-ignored samples for hard labels when ignore_index >= 0 or
//        eps > 0 (0 counts as 1),
//      - otherwise the number of samples (Paddle's mean_all: with a negative
//        ignore_index, ignored samples are still counted).
// Gradients: d/d input for both label kinds; d/d label for soft labels (including the
// dependence of W and of the weighted mean's denominator on the labels). The weight
// gets no gradient.

namespace oar {
namespace {

void softmax_meta(const DenseTensor& x, int64_t axis, DenseTensor* out, const char* op) {
  OAR_ENFORCE(is_floating(x.dtype()), InvalidType, op, ": x must be a floating-point tensor, got ",
              dtype_name(x.dtype()));
  wrap_axis(axis, x.rank(), op);
  out->set_dtype(x.dtype());
  out->set_dims(x.dims());
}

// Validates cross_entropy's operands; returns the class axis (wrapped).
int check_cross_entropy(const DenseTensor& input, const DenseTensor& label,
                        const DenseTensor* weight, bool soft_label, int64_t ignore_index,
                        int64_t axis, double label_smoothing, const std::string& reduction,
                        const char* op) {
  parse_loss_reduction(reduction, op);
  OAR_ENFORCE(input.rank() >= 1, InvalidArgument, op,
              ": input must have at least one dimension (the classes), got a 0-D tensor");
  OAR_ENFORCE(is_floating(input.dtype()), InvalidType, op,
              ": input must be a floating-point tensor, got ", dtype_name(input.dtype()));
  const int a = wrap_axis(axis, input.rank(), op);
  const Dims& in = input.dims();
  const Dims& lb = label.dims();
  OAR_ENFORCE(label_smoothing >= 0.0 && label_smoothing <= 1.0, InvalidArgument, op,
              ": label_smoothing must be in [0, 1], got ", label_smoothing);
  if (soft_label) {
    OAR_ENFORCE(ignore_index <= 0, InvalidArgument, op,
                ": with soft_label=True, ignore_index must be -100 (it is unused), got ",
                ignore_index);
    OAR_ENFORCE(lb == in, InvalidArgument, op, ": soft labels must have the input's shape ", in,
                ", got ", lb);
    OAR_ENFORCE(label.dtype() == input.dtype(), InvalidType, op,
                ": soft labels must have the input's dtype ", dtype_name(input.dtype()), ", got ",
                dtype_name(label.dtype()));
  } else {
    OAR_ENFORCE(label.dtype() == DataType::INT64 || label.dtype() == DataType::INT32, InvalidType,
                op, ": hard labels (soft_label=False) must be int64 or int32, got ",
                dtype_name(label.dtype()), " (pass soft_label=True for probabilities)");
    Dims expect = in;
    bool ok = false;
    if (lb.size() == in.size()) {
      expect[a] = 1;
      ok = lb == expect;
    } else if (lb.size() + 1 == in.size()) {
      expect.erase(a);
      ok = lb == expect;
    }
    OAR_ENFORCE(ok, InvalidArgument, op, ": label shape ", lb, " does not match input shape ", in,
                " with classes along axis ", a, " (expected ", expect, ")");
  }
  if (weight != nullptr) {
    OAR_ENFORCE(weight->rank() == 1 && weight->dims()[0] == in[a], InvalidArgument, op,
                ": weight must have shape [", in[a], "] (one per class), got ", weight->dims());
    OAR_ENFORCE(weight->dtype() == input.dtype(), InvalidType, op,
                ": weight must have the input's dtype ", dtype_name(input.dtype()), ", got ",
                dtype_name(weight->dtype()));
  }
  return a;
}

}  // namespace

void SoftmaxInferMeta(const DenseTensor& x, int64_t axis, DenseTensor* out) {
  softmax_meta(x, axis, out, "softmax");
}

void GluInferMeta(const DenseTensor& x, int64_t axis, DenseTensor* out) {
  OAR_ENFORCE(x.rank() > 0, InvalidArgument, "glu: x must have at least one dimension");
  const int a = wrap_axis(axis, x.rank(), "glu");
  OAR_ENFORCE(x.dims()[a] % 2 == 0, InvalidArgument, "glu: the size of x along axis ", axis, " must be even, got ",
              x.dims()[a], " (x of shape ", x.dims(), ")");
  Dims d = x.dims();
  d[a] /= 2;
  out->set_dtype(x.dtype());
  out->set_dims(d);
}

void LogSoftmaxInferMeta(const DenseTensor& x, int64_t axis, DenseTensor* out) {
  softmax_meta(x, axis, out, "log_softmax");
}

void SoftmaxGradInferMeta(const DenseTensor& out, const DenseTensor& grad_out, int64_t axis,
                          DenseTensor* x_grad) {
  OAR_ENFORCE(out.dims() == grad_out.dims(), InvalidArgument, "softmax_grad: out shape ",
              out.dims(), " and grad_out shape ", grad_out.dims(), " differ");
  OAR_ENFORCE(out.dtype() == grad_out.dtype(), InvalidType, "softmax_grad: out dtype ",
              dtype_name(out.dtype()), " and grad_out dtype ", dtype_name(grad_out.dtype()),
              " differ");
  softmax_meta(out, axis, x_grad, "softmax_grad");
}

LossReduction parse_loss_reduction(const std::string& reduction, const char* op) {
  if (reduction == "mean") return LossReduction::kMean;
  if (reduction == "sum") return LossReduction::kSum;
  if (reduction == "none") return LossReduction::kNone;
  OAR_THROW(InvalidArgument, op, ": reduction must be 'mean', 'sum' or 'none', got '", reduction,
            "'");
}

void CrossEntropyInferMeta(const DenseTensor& input, const DenseTensor& label,
                           const DenseTensor* weight, bool soft_label, bool use_softmax,
                           int64_t ignore_index, int64_t axis, double label_smoothing,
                           const std::string& reduction, DenseTensor* loss) {
  const int a = check_cross_entropy(input, label, weight, soft_label, ignore_index, axis,
                                    label_smoothing, reduction, "cross_entropy");
  loss->set_dtype(input.dtype());
  if (parse_loss_reduction(reduction, "cross_entropy") != LossReduction::kNone) {
    loss->set_dims(Dims{});
    return;
  }
  Dims d = label.dims();
  if (soft_label) {
    d[a] = 1;
  } else if (d.size() + 1 == input.rank() && label_smoothing > 0.0) {
    d.insert(a, 1);  // Paddle: smoothed labels are soft, so the class dim stays
  }
  loss->set_dims(d);
}

void CrossEntropyGradInferMeta(const DenseTensor& input, const DenseTensor& label,
                               const DenseTensor* weight, const DenseTensor& grad_loss,
                               bool soft_label, bool use_softmax, int64_t ignore_index,
                               int64_t axis, double label_smoothing, const std::string& reduction,
                               DenseTensor* input_grad) {
  DenseTensor loss;
  CrossEntropyInferMeta(input, label, weight, soft_label, use_softmax, ignore_index, axis,
                        label_smoothing, reduction, &loss);
  OAR_ENFORCE(grad_loss.numel() == loss.numel() && grad_loss.dtype() == input.dtype(),
              InvalidArgument, "cross_entropy_grad: grad_loss must have the loss' shape ",
              loss.dims(), " and dtype ", dtype_name(input.dtype()), ", got ", grad_loss.dims(),
              " ", dtype_name(grad_loss.dtype()));
  input_grad->set_dtype(input.dtype());
  input_grad->set_dims(input.dims());
}

void CrossEntropyLabelGradInferMeta(const DenseTensor& input, const DenseTensor& label,
                                    const DenseTensor* weight, const DenseTensor& grad_loss,
                                    bool soft_label, bool use_softmax, int64_t ignore_index,
                                    int64_t axis, double label_smoothing,
                                    const std::string& reduction, DenseTensor* label_grad) {
  OAR_ENFORCE(soft_label, InvalidArgument,
              "cross_entropy_label_grad: hard labels (soft_label=False) have no gradient");
  DenseTensor unused;
  CrossEntropyGradInferMeta(input, label, weight, grad_loss, soft_label, use_softmax, ignore_index,
                            axis, label_smoothing, reduction, &unused);
  label_grad->set_dtype(label.dtype());
  label_grad->set_dims(label.dims());
}

namespace {

void set_meta(DenseTensor* t, const Dims& dims, DataType dtype) {
  t->set_dtype(dtype);
  t->set_dims(dims);
}

// Checks a [rows, cols] operand of an LSTM op.
void check_lstm_2d(const DenseTensor& t, int64_t rows, int64_t cols, DataType dtype, const char* op, const char* name) {
  OAR_ENFORCE(t.dtype() == dtype, InvalidType, op, ": ", name, " must have dtype ", dtype_name(dtype), " like xw, got ",
              dtype_name(t.dtype()));
  OAR_ENFORCE(t.rank() == 2 && t.dims()[0] == rows && t.dims()[1] == cols, InvalidArgument, op, ": ", name,
              " must have shape [", rows, ", ", cols, "], got ", t.dims());
}

}  // namespace

void LstmSequenceInferMeta(const DenseTensor& xw, const DenseTensor& w_hh, const DenseTensor& bias,
                           const DenseTensor& h0, const DenseTensor& c0, bool batch_first, bool /*reverse*/,
                           DenseTensor* out, DenseTensor* last_h, DenseTensor* last_c, DenseTensor* gates,
                           DenseTensor* cells) {
  const char* op = "lstm_sequence";
  OAR_ENFORCE(xw.dtype() == DataType::FLOAT32 || xw.dtype() == DataType::FLOAT64, InvalidType, op,
              ": xw must be float32 or float64, got ", dtype_name(xw.dtype()));
  OAR_ENFORCE(xw.rank() == 3 && xw.dims()[2] % 4 == 0, InvalidArgument, op, ": xw must have shape ",
              batch_first ? "[batch, time, 4 * hidden]" : "[time, batch, 4 * hidden]", ", got ", xw.dims());
  const int64_t t = batch_first ? xw.dims()[1] : xw.dims()[0], b = batch_first ? xw.dims()[0] : xw.dims()[1];
  const int64_t h = xw.dims()[2] / 4;
  check_lstm_2d(w_hh, 4 * h, h, xw.dtype(), op, "w_hh");
  OAR_ENFORCE(bias.dtype() == xw.dtype() && bias.rank() == 1 && bias.dims()[0] == 4 * h, InvalidArgument, op,
              ": bias must be a ", dtype_name(xw.dtype()), " vector of ", 4 * h, " values, got shape ", bias.dims(),
              " and dtype ", dtype_name(bias.dtype()));
  check_lstm_2d(h0, b, h, xw.dtype(), op, "h0");
  check_lstm_2d(c0, b, h, xw.dtype(), op, "c0");
  set_meta(out, batch_first ? Dims{b, t, h} : Dims{t, b, h}, xw.dtype());
  set_meta(last_h, h0.dims(), xw.dtype());
  set_meta(last_c, c0.dims(), xw.dtype());
  set_meta(gates, Dims{t, b, 4 * h}, xw.dtype());
  set_meta(cells, Dims{t, b, h}, xw.dtype());
}

void LstmSequenceGradInferMeta(const DenseTensor& w_hh, const DenseTensor& h0, const DenseTensor& c0,
                               const DenseTensor& gates, const DenseTensor& cells, const DenseTensor* grad_out,
                               const DenseTensor* grad_last_h, const DenseTensor* grad_last_c, bool batch_first,
                               bool reverse, DenseTensor* xw_grad, DenseTensor* w_hh_grad, DenseTensor* bias_grad,
                               DenseTensor* h0_grad, DenseTensor* c0_grad) {
  const char* op = "lstm_sequence_grad";
  DenseTensor out, last_h, last_c, g, c, bias;
  OAR_ENFORCE(gates.rank() == 3, InvalidArgument, op, ": gates must have shape [time, batch, 4 * hidden], got ",
              gates.dims());
  set_meta(&bias, Dims{gates.dims()[2]}, gates.dtype());
  LstmSequenceInferMeta(gates, w_hh, bias, h0, c0, false, reverse, &out, &last_h, &last_c, &g, &c);
  OAR_ENFORCE(cells.dims() == out.dims() && cells.dtype() == gates.dtype(), InvalidArgument, op,
              ": cells must have shape ", out.dims(), ", got ", cells.dims());
  const int64_t t = gates.dims()[0], b = gates.dims()[1];
  const Dims out_dims = batch_first ? Dims{b, t, out.dims()[2]} : out.dims();
  const auto check = [&](const DenseTensor* x, const Dims& dims, const char* name) {
    OAR_ENFORCE(x == nullptr || (x->dims() == dims && x->dtype() == gates.dtype()), InvalidArgument, op, ": ", name,
                " must have shape ", dims, " and dtype ", dtype_name(gates.dtype()));
  };
  check(grad_out, out_dims, "grad_out");
  check(grad_last_h, h0.dims(), "grad_last_h");
  check(grad_last_c, c0.dims(), "grad_last_c");
  set_meta(xw_grad, batch_first ? Dims{b, t, gates.dims()[2]} : gates.dims(), gates.dtype());
  set_meta(w_hh_grad, w_hh.dims(), gates.dtype());
  set_meta(bias_grad, bias.dims(), gates.dtype());
  set_meta(h0_grad, h0.dims(), gates.dtype());
  set_meta(c0_grad, c0.dims(), gates.dtype());
}

namespace {

// The common checks of the GRU/SimpleRNN ops: xw [T, B, gates * H] in its layout, w_hh
// [gates * H, H], h0 [B, H]. Returns {T, B, H}.
std::array<int64_t, 3> check_rnn_seq(const DenseTensor& xw, const DenseTensor& w_hh, const DenseTensor& h0,
                                     int64_t gates, bool batch_first, const char* op) {
  OAR_ENFORCE(xw.dtype() == DataType::FLOAT32 || xw.dtype() == DataType::FLOAT64, InvalidType, op,
              ": xw must be float32 or float64, got ", dtype_name(xw.dtype()));
  OAR_ENFORCE(xw.rank() == 3 && xw.dims()[2] % gates == 0, InvalidArgument, op, ": xw must have shape ",
              batch_first ? "[batch, time, " : "[time, batch, ", gates, " * hidden], got ", xw.dims());
  const int64_t t = batch_first ? xw.dims()[1] : xw.dims()[0], b = batch_first ? xw.dims()[0] : xw.dims()[1];
  const int64_t h = xw.dims()[2] / gates;
  check_lstm_2d(w_hh, gates * h, h, xw.dtype(), op, "w_hh");
  check_lstm_2d(h0, b, h, xw.dtype(), op, "h0");
  return {t, b, h};
}

void check_rnn_bias(const DenseTensor& bias, int64_t n, DataType dtype, const char* op, const char* name) {
  OAR_ENFORCE(bias.dtype() == dtype && bias.rank() == 1 && bias.dims()[0] == n, InvalidArgument, op, ": ", name,
              " must be a ", dtype_name(dtype), " vector of ", n, " values, got shape ", bias.dims(), " and dtype ",
              dtype_name(bias.dtype()));
}

void check_rnn_grad(const DenseTensor* g, const Dims& dims, DataType dtype, const char* op, const char* name) {
  OAR_ENFORCE(g == nullptr || (g->dims() == dims && g->dtype() == dtype), InvalidArgument, op, ": ", name,
              " must have shape ", dims, " and dtype ", dtype_name(dtype));
}

}  // namespace

void GruSequenceInferMeta(const DenseTensor& xw, const DenseTensor& w_hh, const DenseTensor& bias_ih,
                          const DenseTensor& bias_hh, const DenseTensor& h0, bool batch_first, bool /*reverse*/,
                          DenseTensor* out, DenseTensor* last_h, DenseTensor* gates) {
  const char* op = "gru_sequence";
  const auto [t, b, h] = check_rnn_seq(xw, w_hh, h0, 3, batch_first, op);
  check_rnn_bias(bias_ih, 3 * h, xw.dtype(), op, "bias_ih");
  check_rnn_bias(bias_hh, 3 * h, xw.dtype(), op, "bias_hh");
  set_meta(out, batch_first ? Dims{b, t, h} : Dims{t, b, h}, xw.dtype());
  set_meta(last_h, h0.dims(), xw.dtype());
  set_meta(gates, Dims{t, b, 4 * h}, xw.dtype());
}

void GruSequenceGradInferMeta(const DenseTensor& w_hh, const DenseTensor& h0, const DenseTensor& out,
                              const DenseTensor& gates, const DenseTensor* grad_out, const DenseTensor* grad_last_h,
                              bool batch_first, bool /*reverse*/, DenseTensor* xw_grad, DenseTensor* w_hh_grad,
                              DenseTensor* bias_ih_grad, DenseTensor* bias_hh_grad, DenseTensor* h0_grad) {
  const char* op = "gru_sequence_grad";
  OAR_ENFORCE(gates.rank() == 3 && gates.dims()[2] % 4 == 0, InvalidArgument, op,
              ": gates must have shape [time, batch, 4 * hidden], got ", gates.dims());
  const int64_t t = gates.dims()[0], b = gates.dims()[1], h = gates.dims()[2] / 4;
  const DataType dt = gates.dtype();
  const Dims out_dims = batch_first ? Dims{b, t, h} : Dims{t, b, h};
  check_lstm_2d(w_hh, 3 * h, h, dt, op, "w_hh");
  check_lstm_2d(h0, b, h, dt, op, "h0");
  check_rnn_grad(&out, out_dims, dt, op, "out");
  check_rnn_grad(grad_out, out_dims, dt, op, "grad_out");
  check_rnn_grad(grad_last_h, h0.dims(), dt, op, "grad_last_h");
  set_meta(xw_grad, batch_first ? Dims{b, t, 3 * h} : Dims{t, b, 3 * h}, dt);
  set_meta(w_hh_grad, w_hh.dims(), dt);
  set_meta(bias_ih_grad, Dims{3 * h}, dt);
  set_meta(bias_hh_grad, Dims{3 * h}, dt);
  set_meta(h0_grad, h0.dims(), dt);
}

void RnnSequenceInferMeta(const DenseTensor& xw, const DenseTensor& w_hh, const DenseTensor& bias,
                          const DenseTensor& h0, bool batch_first, bool /*reverse*/, const std::string& activation,
                          DenseTensor* out, DenseTensor* last_h) {
  const char* op = "rnn_sequence";
  OAR_ENFORCE(activation == "tanh" || activation == "relu", InvalidArgument, op,
              ": activation must be 'tanh' or 'relu', got '", activation, "'");
  const auto [t, b, h] = check_rnn_seq(xw, w_hh, h0, 1, batch_first, op);
  check_rnn_bias(bias, h, xw.dtype(), op, "bias");
  set_meta(out, batch_first ? Dims{b, t, h} : Dims{t, b, h}, xw.dtype());
  set_meta(last_h, h0.dims(), xw.dtype());
}

void RnnSequenceGradInferMeta(const DenseTensor& w_hh, const DenseTensor& h0, const DenseTensor& out,
                              const DenseTensor* grad_out, const DenseTensor* grad_last_h, bool batch_first,
                              bool reverse, const std::string& activation, DenseTensor* xw_grad, DenseTensor* w_hh_grad,
                              DenseTensor* bias_grad, DenseTensor* h0_grad) {
  const char* op = "rnn_sequence_grad";
  DenseTensor bias, o, lh;
  set_meta(&bias, Dims{w_hh.rank() == 2 ? w_hh.dims()[1] : 0}, out.dtype());
  RnnSequenceInferMeta(out, w_hh, bias, h0, batch_first, reverse, activation, &o, &lh);
  check_rnn_grad(grad_out, out.dims(), out.dtype(), op, "grad_out");
  check_rnn_grad(grad_last_h, h0.dims(), out.dtype(), op, "grad_last_h");
  set_meta(xw_grad, out.dims(), out.dtype());
  set_meta(w_hh_grad, w_hh.dims(), out.dtype());
  set_meta(bias_grad, bias.dims(), out.dtype());
  set_meta(h0_grad, h0.dims(), out.dtype());
}

}  // namespace oar
