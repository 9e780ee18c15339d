// The dialects this build knows, loadable by name into any IrContext.
#include <string>
#include <utility>
#include <vector>

#include "paddle_core/base/errors.h"
#include "pir/ir/ir_context.h"

namespace oar::pir {

void register_pd_op_dialect(IrContext* ctx);
void register_cf_dialect(IrContext* ctx);
void register_kernel_dialect(IrContext* ctx);

namespace {
// Dialects of the layers above pir (distributed/'s `dist`), added by register_dialect_loader
// when their objects are linked.
std::vector<std::pair<std::string, DialectLoader>>& loaders() {
  static std::vector<std::pair<std::string, DialectLoader>> v;
  return v;
}
}  // namespace

void register_dialect_loader(const std::string& name, DialectLoader load) {
  for (auto& [n, l] : loaders())
    if (n == name) return;
  loaders().emplace_back(name, load);
}

std::vector<std::string> known_dialect_names() {
  std::vector<std::string> out = {"builtin", "pd_op", "cf", "kernel"};
  for (const auto& [n, l] : loaders()) out.push_back(n);
  return out;
}

void register_known_dialect(IrContext* ctx, std::string_view name) {
  if (name == "pd_op") return register_pd_op_dialect(ctx);
  if (name == "cf") return register_cf_dialect(ctx);
  if (name == "kernel") return register_kernel_dialect(ctx);
  for (const auto& [n, load] : loaders())
    if (n == name) return load(ctx);
  std::string known;
  for (const auto& n : known_dialect_names()) known += (known.empty() ? "" : ", ") + n;
  OAR_THROW(NotFound, "IrContext: unknown dialect '", name, "' (known: ", known, ")");
}

}  // namespace oar::pir
