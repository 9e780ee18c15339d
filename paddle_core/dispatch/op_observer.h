// A per-thread observer of every eager op call (oar.amp.debugging: the tensor checker
// and operator stats). It rides on the amp dispatch layer: installing one turns that
// layer on for the thread, so an op pays nothing more when none is installed (the one
// thread-local bit test every op already makes). The observer sees each call after the
// layers below amp ran (outputs filled); ops it calls itself are not observed.
// Programs run by the executor do not walk the dispatch layers and are not observed.
#pragma once

#include <functional>

namespace oar::dispatch {
struct OpCall;
}  // namespace oar::dispatch

namespace oar::amp {

using OpObserver = std::function<void(const dispatch::OpCall& call)>;
/// Installs this thread's observer (an empty function removes it).
void set_op_observer(OpObserver fn);
bool has_op_observer();

}  // namespace oar::amp
