// Shape/dtype inference of the nn ops (see infer_meta.h for the conventions).
#pragma once

#include "paddle_core/meta/infer_meta.h"

namespace oar {
}  // namespace oar
