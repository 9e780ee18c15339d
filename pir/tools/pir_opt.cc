// pir-opt: reads a program in the textual form, runs a pass pipeline, prints the result.
//   pir_opt [--pipeline=canonicalize,cse,dce] [--timing] [--print-ir-after-all] [file|-]
// With no pipeline it parses, verifies and prints (a round trip).
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "paddle_core/base/errors.h"
#include "pir/ir/parser.h"
#include "pir/ir/program.h"
#include "pir/pass/pass.h"

int main(int argc, char** argv) {
  using namespace oar::pir;  // NOLINT
  std::string pipeline, file = "-";
  bool timing = false, print_after = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--pipeline=", 0) == 0) pipeline = a.substr(11);
    else if (a == "--timing") timing = true;
    else if (a == "--print-ir-after-all") print_after = true;
    else if (a == "--help" || a == "-h") {
      std::cout << "usage: pir_opt [--pipeline=P] [--timing] [--print-ir-after-all] [file|-]\n"
                << "standard pipeline: " << standard_pipeline() << "\n";
      return 0;
    } else file = a;
  }
  std::stringstream ss;
  if (file == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream in(file);
    if (!in) {
      std::cerr << "pir_opt: cannot open " << file << "\n";
      return 1;
    }
    ss << in.rdbuf();
  }
  try {
    auto prog = parse_program(IrContext::global(), ss.str());
    PassManager pm;
    if (pipeline == "standard") pipeline = standard_pipeline();
    pm.add_pipeline(pipeline);
    auto t = std::make_shared<PassTiming>();
    if (timing) pm.add_instrumentation(t);
    if (print_after) pm.add_instrumentation(make_ir_printer(std::cerr, false, true));
    pm.run(*prog);
    std::cout << prog->str();
    if (timing) std::cerr << t->report();
  } catch (const oar::Error& e) {
    std::cerr << "pir_opt: " << e.message() << "\n";
    return 1;
  }
  return 0;
}
