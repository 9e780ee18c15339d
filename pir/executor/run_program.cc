#include "pir/executor/run_program.h"

#include "oar_generated/ops_api.h"
#include "paddle_core/autograd/grad_mode.h"

namespace oar::pir {
namespace {

class RunProgramNode final : public GradNode {
 public:
  RunProgramNode(std::shared_ptr<Executor> backward, std::shared_ptr<void> keep_alive, std::vector<Tensor> saved,
                 std::unordered_map<std::string, Tensor> params)
      : backward_(std::move(backward)), keep_alive_(std::move(keep_alive)), saved_(std::move(saved)),
        params_(std::move(params)) {}
  const char* name() const override { return "RunProgramNode"; }
  void release_saved() override {
    saved_.clear();
    freed_ = true;
  }

  std::vector<Tensor> apply(std::vector<Tensor>& grads) override {
    OAR_ENFORCE(!freed_, PreconditionNotMet,
                "RunProgramNode: trying to backward through a converted function a second time; call "
                "backward(retain_graph=True) the first time");
    OAR_ENFORCE(!autograd::grad_enabled(), Unimplemented,
                "to_static: a gradient of a gradient (create_graph=True) through a converted function is not "
                "supported; run that function eagerly (oar.jit.enable_to_static(False))");
    // The backward program's inputs: one gradient per output (declared first), then the
    // saved forward values (declared as the trace first read them).
    std::vector<Tensor> ins;
    for (size_t i = 0; i < output_meta.size(); ++i) {
      Tensor g = i < grads.size() ? grads[i] : Tensor();
      if (!g.defined()) g = ops::full(output_meta[i].dims.vec(), Scalar(0.0), output_meta[i].dtype, output_meta[i].place);
      ins.push_back(std::move(g));
    }
    ins.insert(ins.end(), saved_.begin(), saved_.end());
    return backward_->run(ins, &params_);
  }

 private:
  std::shared_ptr<Executor> backward_;
  std::shared_ptr<void> keep_alive_;
  std::vector<Tensor> saved_;
  std::unordered_map<std::string, Tensor> params_;
  bool freed_ = false;
};

}  // namespace

std::vector<Tensor> run_program(Executor& forward, std::shared_ptr<Executor> backward,
                                std::shared_ptr<void> keep_alive, const std::vector<Tensor>& inputs,
                                const std::unordered_map<std::string, Tensor>& params,
                                const std::vector<Tensor>& wrt, size_t n_out,
                                const std::vector<int>& grad_outputs) {
  std::vector<Tensor> all;
  {
    autograd::GradModeGuard no_grad(false);
    all = forward.run(inputs, &params);
  }
  OAR_ENFORCE(all.size() >= n_out, Internal, "run_program: the forward program gave ", all.size(),
              " outputs, expected at least ", n_out);
  std::vector<Tensor> outs(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n_out));
  if (!autograd::grad_enabled() || !autograd::any_requires_grad(wrt)) return outs;
  std::vector<Tensor> saved(all.begin() + static_cast<std::ptrdiff_t>(n_out), all.end());
  auto node = std::make_shared<RunProgramNode>(std::move(backward), std::move(keep_alive), std::move(saved), params);
  for (const Tensor& w : wrt) node->next_edges.push_back(autograd::gradient_edge(w));
  for (size_t k = 0; k < grad_outputs.size(); ++k) {
    const int i = grad_outputs[k];
    OAR_ENFORCE(i >= 0 && static_cast<size_t>(i) < n_out, Internal, "run_program: bad grad output ", i);
    // A program output may be a program input or parameter returned as is: give the
    // caller its own handle so its history is this node's.
    if (outs[i].autograd_meta() != nullptr) outs[i] = Tensor(std::make_shared<TensorImpl>(outs[i].dense()));
    autograd::set_history(outs[i], node, static_cast<uint32_t>(k));
  }
  return outs;
}

}  // namespace oar::pir
