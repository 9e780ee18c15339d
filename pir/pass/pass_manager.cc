#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "paddle_core/base/errors.h"
#include "pir/ir/operation.h"
#include "pir/ir/printer.h"
#include "pir/ir/program.h"
#include "pir/ir/verifier.h"
#include "pir/pass/pass.h"
#include "pir/pass/pipelines.h"

namespace oar::pir {

void register_builtin_passes();  // transforms/passes.cc

namespace {
thread_local Program* t_current_program = nullptr;
thread_local Place t_current_place = CPUPlace();
}  // namespace

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class IrPrinter : public PassInstrumentation {
 public:
  IrPrinter(std::ostream& os, bool before, bool after, std::string only)
      : os_(os), before_(before), after_(after), only_(std::move(only)) {}
  void before_pass(const Pass& p, Operation* anchor) override {
    if (before_ && (only_.empty() || only_ == p.name())) dump("before", p, anchor);
  }
  void after_pass(const Pass& p, Operation* anchor, bool changed) override {
    if (after_ && (only_.empty() || only_ == p.name())) dump("after", p, anchor);
  }

 private:
  void dump(const char* when, const Pass& p, Operation* anchor) {
    os_ << "// ----- IR " << when << " " << p.name() << " -----\n";
    if (anchor->name() == "builtin.module") {
      os_ << "module {\n";
      for (Operation* op : *anchor->region(0).front()) {
        std::string s = print_op(op);
        os_ << "  " << s;
      }
      os_ << "}\n";
    } else {
      os_ << print_op(anchor);
    }
  }
  std::ostream& os_;
  bool before_, after_;
  std::string only_;
};

/// Runs a nested pipeline on every op named `nested->anchor()` inside the anchor.
class NestedPipeline : public Pass {
 public:
  explicit NestedPipeline(std::unique_ptr<PassManager> pm) : Pass(pm->anchor()), pm_(std::move(pm)) {}
  bool run(Operation* anchor) override {
    std::vector<Operation*> targets;
    anchor->walk([&](Operation* op) {
      if (op->name() == pm_->anchor()) targets.push_back(op);
    });
    bool changed = false;
    for (Operation* t : targets) changed |= pm_->run_on(t);
    return changed;
  }
  PassManager* pm() const { return pm_.get(); }

 private:
  std::unique_ptr<PassManager> pm_;
};

std::map<std::string, PassFactory>& pass_registry() {
  static std::map<std::string, PassFactory> r;
  return r;
}
void ensure_builtin_passes() {
  static std::once_flag once;
  std::call_once(once, [] { register_builtin_passes(); });
}
}  // namespace

std::unique_ptr<PassInstrumentation> make_ir_printer(std::ostream& os, bool before, bool after,
                                                     std::string only_pass) {
  return std::make_unique<IrPrinter>(os, before, after, std::move(only_pass));
}

void PassTiming::before_pass(const Pass&, Operation*) { starts_.push_back(now_s()); }
void PassTiming::after_pass(const Pass& p, Operation*, bool) {
  double dt = now_s() - starts_.back();
  starts_.pop_back();
  for (auto& e : entries_)
    if (e.name == p.name()) { e.seconds += dt; ++e.runs; return; }
  entries_.push_back(Entry{p.name(), dt, 1});
}
std::string PassTiming::report() const {
  std::ostringstream os;
  double total = 0;
  os << "pass timing:\n";
  for (const auto& e : entries_) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "  %-20s %10.6f s  (%d run%s)\n", e.name.c_str(), e.seconds, e.runs,
                  e.runs == 1 ? "" : "s");
    os << buf;
    total += e.seconds;
  }
  char buf[80];
  std::snprintf(buf, sizeof(buf), "  %-20s %10.6f s\n", "total", total);
  os << buf;
  return os.str();
}

struct PassManager::Item {
  std::unique_ptr<Pass> pass;
};

PassManager::PassManager(std::string anchor) : anchor_(std::move(anchor)) {}
PassManager::~PassManager() = default;

void PassManager::add_pass(std::unique_ptr<Pass> pass) {
  items_.push_back(std::make_unique<Item>(Item{std::move(pass)}));
}
void PassManager::add_pass(std::string_view name) { add_pass(create_pass(name)); }
PassManager& PassManager::nest(const std::string& op_name) {
  auto pm = std::make_unique<PassManager>(op_name);
  pm->parent_ = this;
  PassManager* raw = pm.get();
  add_pass(std::make_unique<NestedPipeline>(std::move(pm)));
  return *raw;
}
void PassManager::add_instrumentation(std::shared_ptr<PassInstrumentation> inst) {
  inst_.push_back(std::move(inst));
}
const std::vector<std::shared_ptr<PassInstrumentation>>& PassManager::instrumentations() const {
  return parent_ ? parent_->instrumentations() : inst_;
}
bool PassManager::verify_each() const { return parent_ ? parent_->verify_each() : verify_each_; }

void PassManager::add_pipeline(std::string_view spec) {
  if (is_pipeline(spec)) {
    for (const std::string& pass : pipeline_passes(spec)) add_pass(pass);
    return;
  }
  size_t i = 0;
  auto skip = [&] { while (i < spec.size() && (spec[i] == ' ' || spec[i] == '\n')) ++i; };
  while (true) {
    skip();
    if (i >= spec.size()) return;
    size_t b = i;
    while (i < spec.size() && spec[i] != ',' && spec[i] != '(' && spec[i] != ')' && spec[i] != ' ' && spec[i] != '{')
      ++i;
    std::string name(spec.substr(b, i - b));
    OAR_ENFORCE(!name.empty(), InvalidArgument, "pass pipeline '", spec, "': expected a pass name at ", b);
    skip();
    if (i < spec.size() && spec[i] == '{') {  // options: name{key=value,key=value}
      const size_t close = spec.find('}', i);
      OAR_ENFORCE(close != std::string_view::npos, InvalidArgument, "pass pipeline '", spec, "': unclosed '{' at ", i);
      std::unique_ptr<Pass> pass = create_pass(name);
      std::string_view opts = spec.substr(i + 1, close - i - 1);
      while (!opts.empty()) {
        const size_t comma = opts.find(',');
        std::string_view kv = opts.substr(0, comma);
        const size_t eq = kv.find('=');
        OAR_ENFORCE(eq != std::string_view::npos && eq > 0, InvalidArgument, "pass pipeline '", spec, "': option '", kv,
                    "' of ", name, " is not key=value");
        pass->set_option(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
        opts = comma == std::string_view::npos ? std::string_view() : opts.substr(comma + 1);
      }
      add_pass(std::move(pass));
      i = close + 1;
    } else if (i < spec.size() && spec[i] == '(') {
      int depth = 1;
      size_t start = ++i;
      while (i < spec.size() && depth) {
        if (spec[i] == '(') ++depth;
        if (spec[i] == ')') --depth;
        ++i;
      }
      OAR_ENFORCE(depth == 0, InvalidArgument, "pass pipeline '", spec, "': unbalanced parentheses");
      nest(name).add_pipeline(spec.substr(start, i - 1 - start));
    } else {
      add_pass(name);
    }
    skip();
    if (i >= spec.size()) return;
    OAR_ENFORCE(spec[i] == ',', InvalidArgument, "pass pipeline '", spec, "': expected ',' at ", i);
    ++i;
  }
}

std::string PassManager::str() const {
  std::string s;
  for (const auto& it : items_) {
    if (!s.empty()) s += ",";
    if (auto* n = dynamic_cast<NestedPipeline*>(it->pass.get()))
      s += n->pm()->anchor() + "(" + n->pm()->str() + ")";
    else
      s += it->pass->name();
  }
  return s;
}

bool PassManager::run_on(Operation* anchor) {
  static const bool print_env = [] {
    const char* e = std::getenv("OAR_PIR_PRINT_IR");
    return e && *e && std::string(e) != "0";
  }();
  struct PlaceScope {  // passes see the place the program is compiled for
    Place prev;
    explicit PlaceScope(const Place& p) : prev(t_current_place) { t_current_place = p; }
    ~PlaceScope() { t_current_place = prev; }
  } place_scope(place());
  bool changed = false;
  for (const auto& it : items_) {
    Pass& p = *it->pass;
    for (const auto& i : instrumentations()) i->before_pass(p, anchor);
    bool c = false;
    try {
      c = p.run(anchor);
    } catch (const Error& e) {
      throw Error(e.kind(), "pass '" + p.name() + "' failed: " + e.message());
    }
    changed |= c;
    const auto& insts = instrumentations();
    for (auto i = insts.rbegin(); i != insts.rend(); ++i) (*i)->after_pass(p, anchor, c);
    if (print_env && !dynamic_cast<NestedPipeline*>(&p))
      std::cerr << "// ----- IR after " << p.name() << " -----\n" << print_op(anchor);
    if (verify_each() && !dynamic_cast<NestedPipeline*>(&p)) {
      try {
        verify_op(anchor);
      } catch (const Error& e) {
        throw Error(e.kind(), "IR is invalid after pass '" + p.name() + "': " + e.message());
      }
    }
  }
  return changed;
}

Program* current_program() { return t_current_program; }
Place current_place() { return t_current_place; }

Place PassManager::place() const {
  if (has_place_) return place_;
  return parent_ ? parent_->place() : t_current_place;
}

bool PassManager::run(Program& program) {
  OAR_ENFORCE(anchor_ == "builtin.module", InvalidArgument, "PassManager::run: a pipeline anchored on '",
              anchor_, "' runs on ops, not programs (use nest())");
  struct Scope {  // passes see the program (its parameter data) while it runs
    Program* prev;
    explicit Scope(Program* p) : prev(t_current_program) { t_current_program = p; }
    ~Scope() { t_current_program = prev; }
  } scope(&program);
  return run_on(program.module());
}

void Pass::set_option(const std::string& key, const std::string& value) {
  OAR_THROW(InvalidArgument, "pass '", name_, "' takes no option '", key, "' (given ", key, "=", value, ")");
}

void register_pass(const std::string& name, PassFactory factory) {
  pass_registry()[name] = std::move(factory);
}
std::unique_ptr<Pass> create_pass(std::string_view name) {
  ensure_builtin_passes();
  auto it = pass_registry().find(std::string(name));
  if (it == pass_registry().end()) {
    std::string known;
    for (const auto& [n, _] : pass_registry()) known += (known.empty() ? "" : ", ") + n;
    OAR_THROW(NotFound, "unknown pass '", name, "' (known passes: ", known, ")");
  }
  return it->second();
}
std::vector<std::string> registered_passes() {
  ensure_builtin_passes();
  std::vector<std::string> out;
  for (const auto& [n, _] : pass_registry()) out.push_back(n);
  return out;
}
}  // namespace oar::pir
