// Note [Compile cache] (docs/notes/cinn.md). Key: the group's loop kernel text (its
// canonical form: ops, classes, constants, static and dynamic dims), the dtype, the
// group's symbolic signature (sym_shapes, Note [Symbolic shapes]), the codegen target
// (CPU, vector width, LLVM version) and kCompilerVersion. Memory: key -> kernel. Disk:
// <dir>/<fnv64(key)>.o holding a header (magic, the key, the object's length and FNV-64)
// and the object; written to a temporary file and renamed (atomic); an entry whose
// header or checksum does not match is counted corrupt and rebuilt; an unwritable folder
// logs one warning and the cache stays in memory.
#include "cinn/runtime/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cinn/codegen/codegen.h"
#include "cinn/dialect.h"
#include "cinn/pipeline.h"
#include "cinn/runtime/runtime_slots.h"
#include "cinn/schedule/loop_ir.h"
#include "paddle_core/base/errors.h"
#include "pir/ir/builder.h"
#include "pir/ir/program.h"

namespace oar::cinn {

bool accuracy_differs(double got, double want, double rtol, double atol) {
  // NaN must meet NaN, and an infinity the same infinity: |inf - 1| > atol + rtol * inf is
  // false and inf - inf is NaN, so the relative test alone passed 1 against inf and inf
  // against -inf.
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) != std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got != want;
  return std::abs(got - want) > atol + rtol * std::abs(want);
}

State& state() {
  static State* s = new State();
  return *s;
}

namespace {

// Bump when the loop IR's meaning or the codegen changes in a way the key text misses.
constexpr const char* kCompilerVersion = "oar-cinn-8";  // 8: 256-bit vectors without exp & co (Note [Vector width])
constexpr const char* kMagic = "OARCINN1";

uint64_t fnv64(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
std::string hex(uint64_t v) {
  std::ostringstream os;
  os << std::hex << v;
  return os.str();
}

// The group's signature "S0x64, 64 -> S0x64" -> per input, its dims' names.
std::vector<std::vector<std::string>> parse_signature(const std::string& sig) {
  std::vector<std::vector<std::string>> out;
  const std::string ins = sig.substr(0, sig.find(" -> "));
  int depth = 0;
  std::vector<std::string> cur(1);
  for (size_t i = 0; i <= ins.size(); ++i) {
    const char c = i < ins.size() ? ins[i] : ',';
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && c == ',') {
      if (cur.size() == 1 && cur[0] == "scalar") cur.clear();
      out.push_back(cur);
      cur.assign(1, "");
      if (i + 1 < ins.size() && ins[i + 1] == ' ') ++i;
    } else if (depth == 0 && c == 'x') {
      cur.emplace_back();
    } else {
      cur.back() += c;
    }
  }
  return out;
}

/// The group's ops as a program: inputs in0..., outputs out0... (the accuracy check).
std::shared_ptr<pir::Program> unfused_program(const pir::Operation* fusion, std::string* ops) {
  pir::IrContext* ctx = fusion->info()->ctx;
  auto p = std::make_shared<pir::Program>(ctx);
  pir::Builder b(ctx, p->block());
  std::vector<pir::Value> args;
  for (size_t i = 0; i < fusion->num_operands(); ++i)
    args.push_back(
        b.build("builtin.input", {}, {{"name", ctx->str_attr("in" + std::to_string(i))}}, {fusion->operand(i).type()})
            ->result(0));
  std::vector<pir::Value> outs = clone_fusion_body(b, fusion, args);
  for (size_t i = 0; i < outs.size(); ++i)
    b.build("builtin.output", {outs[i]}, {{"name", ctx->str_attr("out" + std::to_string(i))}}, {});
  for (const pir::Operation* op : *fusion->region(0).front())
    if (op->name() != kYieldOp) *ops += (ops->empty() ? "" : ", ") + op->name();
  return p;
}

std::string resolve_dir() {
  if (!FLAGS_enable_cinn_compile_cache) return "";
  if (!FLAGS_cinn_cache_dir.empty()) return FLAGS_cinn_cache_dir;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/oar/cinn";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/oar/cinn";
  return "";
}

// Reads a disk entry; empty when missing. `corrupt` is set when it exists but is bad.
std::string read_entry(const std::string& path, const std::string& key, bool* corrupt) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  *corrupt = true;
  std::istringstream is(data);
  std::string magic(8, '\0');
  uint64_t klen = 0, olen = 0, sum = 0;
  if (!is.read(magic.data(), 8) || magic != kMagic) return "";
  if (!is.read(reinterpret_cast<char*>(&klen), 8) || klen != key.size()) return "";
  std::string k(klen, '\0');
  if (!is.read(k.data(), static_cast<std::streamsize>(klen)) || k != key) return "";
  if (!is.read(reinterpret_cast<char*>(&olen), 8) || !is.read(reinterpret_cast<char*>(&sum), 8)) return "";
  if (olen == 0 || olen > data.size()) return "";
  std::string obj(olen, '\0');
  if (!is.read(obj.data(), static_cast<std::streamsize>(olen)) || fnv64(obj) != sum) return "";
  *corrupt = false;
  return obj;
}

bool write_entry(const std::string& dir, const std::string& path, const std::string& key, const std::string& obj) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    const uint64_t klen = key.size(), olen = obj.size(), sum = fnv64(obj);
    out.write(kMagic, 8);
    out.write(reinterpret_cast<const char*>(&klen), 8);
    out.write(key.data(), static_cast<std::streamsize>(klen));
    out.write(reinterpret_cast<const char*>(&olen), 8);
    out.write(reinterpret_cast<const char*>(&sum), 8);
    out.write(obj.data(), static_cast<std::streamsize>(olen));
    if (!out) return false;
  }
  std::filesystem::rename(tmp, path, ec);  // atomic: readers see the old entry or the new one
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::string cache_dir() { return resolve_dir(); }

PreparedGroup prepare_group(const pir::Operation* fusion) {
  OAR_ENFORCE(!FLAGS_cinn_test_fail_compile, PreconditionNotMet,
              "cinn: compilation failed (FLAGS_cinn_test_fail_compile)");
  PreparedGroup g;
  g.kernel = lower_fusion(fusion);
  const std::string target = codegen_target();
  OAR_ENFORCE(!target.empty(), Unimplemented, "cinn: Oar was built without LLVM 19 (OAR_WITH_CINN=OFF)");
  // The group's symbolic signature (the cinn_shape stage; symbols renamed canonically):
  // groups whose dims are proven equal share a kernel whatever the sizes.
  const pir::Attribute sig_attr = fusion->attr("sym_shapes"), assumed_attr = fusion->attr("sym_assumed");
  g.sym_shapes = sig_attr ? sig_attr.as_string() : "";
  g.sym_assumed = assumed_attr ? assumed_attr.as_string() : "";
  g.key = g.kernel.text() + "\nsym " + g.sym_shapes + "\n" + target + "\n" + kCompilerVersion;
  g.name = "cinn_" + hex(fnv64(g.key));
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  g.in_memory = s.by_key.count(g.key) > 0;
  return g;
}

// The object of a prepared group: from the disk cache, else compiled by LLVM (and written
// to the cache). Runs on compile threads: the state's lock is held only for the counters.
void build_object(PreparedGroup& g) {
  if (g.in_memory || !g.object.empty()) return;
  State& s = state();
  const std::string dir = resolve_dir();
  const std::string path = dir.empty() ? "" : dir + "/" + hex(fnv64(g.key)) + ".o";
  if (!path.empty()) {
    auto t0 = std::chrono::steady_clock::now();
    bool corrupt = false;
    g.object = read_entry(path, g.key, &corrupt);
    if (corrupt) {
      std::lock_guard<std::mutex> lock(s.mu);
      ++s.stats.corrupt;
      std::fprintf(stderr, "oar: warning: cinn: the compile cache entry %s is corrupt; rebuilding it\n", path.c_str());
    }
    if (!g.object.empty()) {
      g.from_disk = true;
      g.seconds = seconds_since(t0);
      return;
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  g.object = compile_object(g.kernel, g.name);
  g.seconds = seconds_since(t0);
  if (path.empty()) return;
  const bool wrote = write_entry(dir, path, g.key, g.object);
  std::lock_guard<std::mutex> lock(s.mu);
  if (wrote) {
    ++s.stats.disk_writes;
  } else if (!s.warned_dir) {
    s.warned_dir = true;
    std::fprintf(stderr, "oar: warning: cinn: cannot write the compile cache in %s; caching in memory only\n",
                 dir.c_str());
  }
}

std::string install_group(const pir::Operation* fusion, PreparedGroup& g) {
  State& s = state();
  std::unique_lock<std::mutex> lock(s.mu);
  if (auto it = s.by_key.find(g.key); it != s.by_key.end()) {
    ++s.stats.memory_hits;
    return g_slots[it->second].name;
  }
  if (g.object.empty()) {  // in memory when prepared and forgotten since, or a duplicate: build it now
    lock.unlock();
    g.in_memory = false;
    build_object(g);
    lock.lock();
  }
  OAR_ENFORCE(s.used < kSlots, ResourceExhausted, "cinn: more than ", kSlots, " distinct fused kernels");
  auto t0 = std::chrono::steady_clock::now();
  KernelFn fn = load_object(g.object, g.name);
  if (g.from_disk) {
    ++s.stats.disk_hits;
    s.stats.load_seconds += g.seconds + seconds_since(t0);
  } else {
    ++s.stats.compiles;
    s.stats.compile_seconds += g.seconds + seconds_since(t0);
  }
  const size_t slot = s.used++;
  std::string ops;
  std::shared_ptr<pir::Program> unfused = unfused_program(fusion, &ops);
  Compiled& c = g_slots[slot];
  c = Compiled{};
  c.kernel = std::move(g.kernel);
  c.fn = fn;
  c.name = g.name;
  c.unfused = std::move(unfused);
  c.ops = std::move(ops);
  c.sym_inputs = parse_signature(g.sym_shapes);
  c.sym_assumed = g.sym_assumed;
  c.key = g.key;
  c.ctx = fusion->info()->ctx;
  c.overwrite = overwrite_table(c.kernel);
  for (size_t i = 0; i < fusion->num_operands(); ++i) c.in_types.push_back(fusion->operand(i).type());
  dispatch::register_kernel_step(g.name, {kernel_step(slot), false, false, /*host_code=*/true});
  s.by_key[g.key] = slot;
  ++s.stats.kernels;
  return g.name;
}

std::string compile_group(const pir::Operation* fusion) {
  PreparedGroup g = prepare_group(fusion);
  build_object(g);
  return install_group(fusion, g);
}

void note_parallel_compile(int threads) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mu);
  s.stats.compile_threads = std::max<int64_t>(s.stats.compile_threads, threads);
}

void note_fallback(const std::string& why) {
  State& s = state();
  static std::set<std::string>* logged = new std::set<std::string>();
  std::lock_guard<std::mutex> lock(s.mu);
  ++s.stats.fallbacks;
  if (logged->insert(why).second)
    std::fprintf(stderr, "oar: warning: cinn: a fused group runs unfused: %s\n", why.c_str());
}

CacheStats cache_stats() {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().stats;
}

void reset_cache_stats() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().stats = CacheStats{};
}

std::vector<std::pair<std::string, LoopKernel>> loaded_kernels() {
  std::lock_guard<std::mutex> lock(state().mu);
  std::vector<std::pair<std::string, LoopKernel>> out;
  for (size_t i = 0; i < state().used; ++i) out.emplace_back(g_slots[i].name, g_slots[i].kernel);
  return out;
}

void forget_memory_cache() {
  forget_classes();
  std::lock_guard<std::mutex> lock(state().mu);
  state().by_key.clear();
}

}  // namespace oar::cinn