// The CPU code generator's JIT (the emitter is llvm_codegen.cc; Note [Compile cache] in
// docs/notes/cinn.md): one ORC LLJIT per process for the host it runs on, never the
// build's -march; each thread compiles with its own context and target machine; objects
// load into their own JITDylib, with SLEEF and libm resolved from the process.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>

#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>

#include "cinn/codegen/codegen.h"
#include "cinn/codegen/llvm_host.h"
#include "cinn/pipeline.h"
#include "paddle_core/base/errors.h"

namespace oar::cinn {

std::string err_text(llvm::Error e) { return llvm::toString(std::move(e)); }

Host& host() {
  static Host* h = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto* x = new Host();  // lives until exit: compiled kernels stay callable
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    OAR_ENFORCE(bool(jtmb), PreconditionNotMet, "cinn: no LLVM target for this host: ", err_text(jtmb.takeError()));
    jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
    jtmb->setRelocationModel(llvm::Reloc::PIC_);
    jtmb->setCodeModel(llvm::CodeModel::Small);
    x->cpu = jtmb->getCPU();
    x->features = jtmb->getFeatures().getString();
    for (const std::string& f : jtmb->getFeatures().getFeatures()) {
      if (f == "+avx512f") x->vec_bits = std::max(x->vec_bits, 512);
      if (f == "+avx" || f == "+avx2") x->vec_bits = std::max(x->vec_bits, 256);
    }
    // OAR_CINN_VECTOR_BITS=128/256/512 sets every kernel's width (never past the host's;
    // unset: Note [Vector width] picks per kernel): the AVX2 loops measured and tested on
    // an AVX-512 machine, 512 to compare. Part of the cache key (the target).
    if (const char* e = std::getenv("OAR_CINN_VECTOR_BITS"); e && *e) {
      const int want = std::atoi(e);
      OAR_ENFORCE(want == 128 || want == 256 || want == 512, InvalidArgument,
                  "OAR_CINN_VECTOR_BITS must be 128, 256 or 512, got ", e);
      x->vec_bits = std::min(x->vec_bits, want);
      x->width_set = true;
    }
    auto tm = jtmb->createTargetMachine();
    OAR_ENFORCE(bool(tm), PreconditionNotMet, "cinn: ", err_text(tm.takeError()));
    x->tm = std::move(*tm);
    x->jtmb = std::make_unique<llvm::orc::JITTargetMachineBuilder>(*jtmb);
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
    OAR_ENFORCE(bool(jit), PreconditionNotMet, "cinn: cannot start the JIT: ", err_text(jit.takeError()));
    x->jit = std::move(*jit);
    return x;
  }();
  return *h;
}

namespace {

// Each loaded object gets its own JITDylib, so the same kernel can be loaded again (from
// the disk cache after the memory cache was dropped) without clashing symbols.
llvm::orc::JITDylib& new_dylib(Host& h, const std::string& name) {
  static int64_t n = 0;
  auto jd = h.jit->createJITDylib(name + "#" + std::to_string(n++));
  OAR_ENFORCE(bool(jd), PreconditionNotMet, "cinn: ", err_text(jd.takeError()));
  const char prefix = h.jit->getDataLayout().getGlobalPrefix();
  // libm (expf...) from the process; SLEEF by name: the Python extension loads Oar's
  // libraries locally, so their dependencies are not in the global namespace.
  jd->addGenerator(llvm::cantFail(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix)));
  if (auto sleef = llvm::orc::DynamicLibrarySearchGenerator::Load("libsleef.so.3", prefix))
    jd->addGenerator(std::move(*sleef));
  else
    llvm::consumeError(sleef.takeError());
  return *jd;
}

}  // namespace

bool compiled_with_cinn() { return true; }

std::string codegen_target() {
  Host& h = host();
  return h.tm->getTargetTriple().str() + " " + h.cpu + " w" + std::to_string(h.vec_bits) + (h.width_set ? "set" : "") +
         " llvm-" + LLVM_VERSION_STRING + " " + h.features;
}

namespace {
// OAR_CINN_DUMP_DIR=<folder> (docs/notes/cinn.md, the switch table): every kernel this
// process compiles (not those read from the disk cache) leaves <name>.loop (its loop IR),
// <name>.ll (the emitted LLVM IR), <name>.opt.ll (after the O1 pipeline) and <name>.o
// (the object: `objdump -d --no-show-raw-insn <name>.o`) there.
std::string dump_dir() {
  const char* d = std::getenv("OAR_CINN_DUMP_DIR");
  return d && *d ? std::string(d) : std::string();
}
void dump_file(const std::string& dir, const std::string& file, const std::string& text) {
  std::ofstream(dir + "/" + file, std::ios::binary) << text;
}
std::string module_text(const llvm::Module& m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  m.print(os, nullptr);
  return os.str();
}
}  // namespace

std::string kernel_llvm_ir(const LoopKernel& k, const std::string& name) {
  Host& h = host();
  std::lock_guard<std::mutex> lock(h.mu);
  llvm::LLVMContext ctx;
  return module_text(*build_module(ctx, k, name, h, *h.tm));
}

// Thread-safe: each thread compiles with its own context and target machine (parallel
// compilation of a program's groups, FLAGS_cinn_compile_thread_num); only loading into
// the shared JIT takes the host's lock.
std::string compile_object(const LoopKernel& k, const std::string& name) {
  Host& h = host();
  thread_local std::unique_ptr<llvm::TargetMachine> own;
  if (!own) {
    std::lock_guard<std::mutex> lock(h.mu);
    auto tm = h.jtmb->createTargetMachine();
    OAR_ENFORCE(bool(tm), PreconditionNotMet, "cinn: ", err_text(tm.takeError()));
    own = std::move(*tm);
  }
  llvm::TargetMachine& tm = *own;
  // Compile time (Note [Compile cache]): the emitter writes vectorized loops already, so
  // the O1 pipeline and the `Less` code generator level give the same kernel speed as
  // O3/Aggressive in ~35% less time (instruction selection and register allocation
  // dominate; measured in docs/notes/cinn.md).
  tm.setOptLevel(llvm::CodeGenOptLevel::Less);
  llvm::LLVMContext ctx;
  auto m = build_module(ctx, k, name, h, tm);
  const std::string dump = dump_dir();
  if (!dump.empty()) {
    dump_file(dump, name + ".loop", k.text());
    dump_file(dump, name + ".ll", module_text(*m));
  }
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O1).run(*m, mam);
  if (!dump.empty()) dump_file(dump, name + ".opt.ll", module_text(*m));
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  OAR_ENFORCE(!tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile), PreconditionNotMet,
              "cinn codegen: the target cannot emit objects");
  pm.run(*m);
  std::string object(buf.data(), buf.size());
  if (!dump.empty()) dump_file(dump, name + ".o", object);
  return object;
}

KernelFn load_object(const std::string& object, const std::string& name) {
  Host& h = host();
  std::lock_guard<std::mutex> lock(h.mu);
  auto mb = llvm::MemoryBuffer::getMemBufferCopy(object, name);
  llvm::orc::JITDylib& jd = new_dylib(h, name);
  if (llvm::Error e = h.jit->addObjectFile(jd, std::move(mb)))
    OAR_THROW(InvalidArgument, "cinn: cannot load the object of ", name, ": ", err_text(std::move(e)));
  auto sym = h.jit->lookup(jd, name);
  OAR_ENFORCE(bool(sym), InvalidArgument, "cinn: cannot link ", name, ": ", err_text(sym.takeError()));
  return sym->toPtr<KernelFn>();
}

}  // namespace oar::cinn
