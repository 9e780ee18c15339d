#include "paddle_core/tensor/generator.h"

#include <pthread.h>

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
    auto* g = new Generator(seed);  // never destroyed: kernels may run during exit
    // The child's copy must not stay locked by a thread that drew at fork() (a static
    // program running without the GIL): a DataLoader worker seeds it first thing.
    pthread_atfork([] { default_generator().lock_for_fork(); }, [] { default_generator().unlock_after_fork(); },
                   [] { default_generator().unlock_after_fork(); });
    return g;
  }();
  return *gen;
}

}  // namespace oar
