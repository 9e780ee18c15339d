#include "paddle_core/tensor/generator.h"

#include <sstream>

#include "paddle_core/base/errors.h"

namespace oar {

namespace {
void seed_engine(CpuEngine& engine, uint64_t seed) {
  std::seed_seq seq{seed};
  engine.seed(seq);
}
}  // namespace

Generator::Generator(uint64_t seed) : seed_(seed) { seed_engine(engine_, seed); }

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(mu_);
  seed_ = seed;
  seed_engine(engine_, seed);
}

uint64_t Generator::seed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seed_;
}

GeneratorState Generator::get_state() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream os;
  os << engine_;
  return {seed_, os.str()};
}

void Generator::set_state(const GeneratorState& state) {
  CpuEngine engine;
  std::istringstream is(state.engine);
  is >> engine;
  OAR_ENFORCE(!is.fail(), InvalidArgument,
              "set_rng_state: the state's engine part is not a state returned by get_rng_state "
              "(",
              state.engine.size(), " characters)");
  std::lock_guard<std::mutex> lock(mu_);
  seed_ = state.seed;
  engine_ = engine;
}

Generator& default_generator() {
  static Generator* gen = [] {
    std::random_device rd;
    const uint64_t seed = (uint64_t{rd()} << 32) ^ rd();
    return new Generator(seed);  // never destroyed: kernels may run during exit
  }();
  return *gen;
}

}  // namespace oar
