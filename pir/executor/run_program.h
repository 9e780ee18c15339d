// Training through converted programs (Note [Backward program] in docs/notes/jit.md):
// the forward program runs without autograd and one RunProgramNode stands for it in the
// autograd graph; its backward runs the backward program, which was traced from the
// ops' backward rules, on the values the forward saved.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "paddle_core/autograd/node.h"
#include "pir/executor/executor.h"

namespace oar::pir {

/// Runs `forward` (outputs: the n_out results, then the values the backward reads) with
/// autograd off. When grads are enabled and some `wrt` tensor requires grad, the
/// outputs listed in `grad_outputs` get a RunProgramNode whose backward runs `backward`
/// (inputs: one gradient per grad output, then the saved values; outputs: one gradient
/// per `wrt` tensor). `keep_alive` holds whatever owns the programs.
std::vector<Tensor> run_program(Executor& forward, std::shared_ptr<Executor> backward,
                                std::shared_ptr<void> keep_alive, const std::vector<Tensor>& inputs,
                                const std::unordered_map<std::string, Tensor>& params,
                                const std::vector<Tensor>& wrt, size_t n_out,
                                const std::vector<int>& grad_outputs);

}  // namespace oar::pir
