#include "pir/pass/pipelines.h"

#include "paddle_core/base/errors.h"
#include "pir/ir/program.h"
#include "pir/pass/pass.h"
#include "pir/serialize/serialize.h"

namespace oar::pir {
namespace {

struct NamedPipeline {
  std::string name;
  std::vector<std::string> passes;
};

// Note [Pass pipelines]: the table. Names use '-', pass names '_', so a pipeline name
// never shadows a pass in add_pipeline().
const std::vector<NamedPipeline>& table() {
  static const std::vector<NamedPipeline> t = {
      // to_static programs (forward and backward of a training signature; loaded layers
      // that are fine-tuned): cleanup that keeps every op's meaning. The traced backward
      // repeats shape ops and zero fills (ResNet-18's loses ~20% of its ops); no fusion,
      // no in-place rewrite, no folding of parameters (they change between calls).
      {"jit-train", {"canonicalize", "cse", "dce", kLowerPass}},
      // DistModel's global (serial) program (Note [Static auto-parallel passes],
      // docs/notes/distributed.md): placements completed through the SPMD rules, reshard
      // transfers inserted as dist.* ops, the program cut to one rank (dist-partition's rank:
      // PADDLE_TRAINER_ID; spell the passes out with dist-partition{rank=R} for another),
      // then what jit-train does. The passes are registered by distributed/ when linked.
      {"dist-train", {"dist-complete", "dist-reshard", "dist-partition", "canonicalize", "cse", "dce", kLowerPass}},
      // Forward-only to_static programs: the same passes today; kept apart so inference
      // rewrites (fusions, in-place) can come here without touching training programs.
      {"jit-infer", {"canonicalize", "cse", "dce", kLowerPass}},
      // The predictor: analysis passes, DRR fusions, parameters folded once (the
      // saved model's parameters never change).
      {"predictor", {"canonicalize", "constant_fold", "cse", "fuse", "fold_parameters", "dce", kLowerPass}},
      // The predictor with Config.enable_memory_optim: in-place rewriting on top.
      {"predictor-memory",
       {"canonicalize", "constant_fold", "cse", "fuse", "fold_parameters", "dce", "inplace", kLowerPass}},
      // The fusion compiler (cinn/, registered when it is linked): cinn_stages runs the
      // stages cinn/pipeline.cc lists (decompose, fuse, compile each group).
      {"cinn", {"cinn_stages", kLowerPass}},
      // Everything generic, for pir_opt, benchmarks and pass tests.
      {"standard", {"canonicalize", "constant_fold", "cse", "fuse", "dce", "inplace", kLowerPass}},
  };
  return t;
}

const NamedPipeline* find(std::string_view name) {
  for (const auto& p : table())
    if (p.name == name) return &p;
  return nullptr;
}

}  // namespace

std::vector<std::string> registered_pipelines() {
  std::vector<std::string> out;
  for (const auto& p : table()) out.push_back(p.name);
  return out;
}

bool is_pipeline(std::string_view name) { return find(name) != nullptr; }

const std::vector<std::string>& pipeline_passes(std::string_view name) {
  const NamedPipeline* p = find(name);
  if (p == nullptr) {
    std::string known;
    for (const auto& q : table()) known += (known.empty() ? "" : ", ") + q.name;
    OAR_THROW(NotFound, "unknown pass pipeline '", name, "' (known pipelines: ", known, ")");
  }
  return p->passes;
}

std::string pipeline(std::string_view name) {
  std::string s;
  for (const auto& pass : pipeline_passes(name)) s += (s.empty() ? "" : ",") + pass;
  return s;
}

std::string standard_pipeline() { return pipeline("standard"); }

std::unique_ptr<Program> clone_program(const Program& program) {
  // The binary format is lossless for every program the IR can hold; the parameters'
  // data is shared, not copied.
  auto copy = deserialize_program(program.context(), serialize_program(program, /*with_parameter_data=*/false),
                                  /*verify=*/false);
  for (const auto& [name, data] : program.parameters())
    if (data) copy->set_parameter(name, data);
  return copy;
}

std::unique_ptr<Program> run_pipeline_lowering_copy(Program& program, std::string_view name, const Place& place) {
  const std::vector<std::string>& passes = pipeline_passes(name);
  OAR_ENFORCE(!passes.empty() && passes.back() == kLowerPass, InvalidArgument, "pipeline '", name,
              "' does not end with ", kLowerPass);
  PassManager head;
  head.set_place(place);
  for (size_t i = 0; i + 1 < passes.size(); ++i) head.add_pass(passes[i]);
  head.run(program);
  std::unique_ptr<Program> lowered = clone_program(program);
  PassManager lower;
  lower.set_place(place);
  lower.add_pass(kLowerPass);
  lower.run(*lowered);
  return lowered;
}

}  // namespace oar::pir
