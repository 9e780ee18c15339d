// Sample programs shared by the round-trip, serialization and fuzz tests.
#pragma once

#include <cmath>
#include <string>

#include "pir/ir/builder.h"
#include "pir/ir/program.h"

namespace oar::pir::testing {

/// Every type and attribute kind, nested regions (cf.if inside cf.while), a null
/// optional operand, dynamic dims, and a parameter with data.
inline std::unique_ptr<Program> kitchen_sink(IrContext* c) {
  auto p = std::make_unique<Program>(c);
  Builder b(c, p->block());
  Type t = c->tensor_type(DataType::FLOAT32, {2, 3});
  auto w = std::make_shared<DenseTensor>(Dims{2, 3}, DataType::FLOAT32);
  float* wd = w->alloc<float>();
  for (int i = 0; i < 6; ++i) wd[i] = 0.5f * i - 1.0f;
  p->set_parameter("w", w);
  Value x = b.parameter("w", t);
  Value dyn = b.parameter("dyn", c->tensor_type(DataType::FLOAT32, {-1, 3}, DataLayout::kNHWC));
  Value lbl = b.parameter("label", c->tensor_type(DataType::INT64, {2}));
  Value ce = b.op("pd_op.cross_entropy", {x, lbl, Value()}, {{"reduction", c->str_attr("sum")}});
  Value k = b.constant_scalar(-0.0, DataType::FLOAT64, {2});
  Value h = b.constant_scalar(1.5, DataType::FLOAT16, {});
  Value bf = b.constant_scalar(3.0, DataType::BFLOAT16, {1});
  Value i8 = b.constant_scalar(-7, DataType::INT8, {0, 3});
  Value cl = b.op("pd_op.clip", {x}, {{"min", c->float_attr(-1e300)}, {"max", c->float_attr(1.0 / 3.0)}});
  Value full = b.op("pd_op.full", {}, {{"shape", c->shape_attr({2, 3})}, {"fill_value", c->int_attr(-4)},
                                       {"dtype", c->dtype_attr(DataType::INT32)}, {"place", c->place_attr(CPUPlace())}});
  Value r = b.op("pd_op.relu", {dyn});
  Value list = b.combine({x, cl});
  Value cat = b.op("pd_op.concat", {list}, {{"axis", c->int_attr(-1)}});
  Value cond = b.constant_scalar(1.0, DataType::BOOL, {});
  Operation* loop = b.build("cf.while", {cond, x}, {}, {t});
  Block* body = loop->region(0).add_block();
  Value v = body->add_argument(t);
  Builder bb(c, body);
  Operation* iff = bb.build("cf.if", {cond}, {}, {t});
  Builder tb(c, iff->region(0).add_block());
  tb.yield({tb.op("pd_op.tanh", {v})});
  Builder eb(c, iff->region(1).add_block());
  eb.yield({v});
  Value s = bb.op("pd_op.sum", {iff->result(0)});
  bb.yield({bb.op("pd_op.less_than", {s, bb.constant_scalar(4.0, DataType::FLOAT32, {})}), iff->result(0)});
  Operation* misc = b.build("builtin.output", {loop->result(0)}, {{"name", c->str_attr("sum\n\"q\"")}}, {});
  misc->set_attr("note", c->array_attr({c->float_attr(1e-5), c->str_attr("\x01\xff"), c->bool_attr(false),
                                        c->array_attr({}), c->shape_attr({}), c->type_attr(c->index_type()),
                                        c->type_attr(c->vector_type({c->scalar_type(DataType::UINT8), t})),
                                        c->kernel_key_attr(0, DataType::BFLOAT16, DataLayout::kAny),
                                        c->float_attr(HUGE_VAL), c->float_attr(-HUGE_VAL), c->float_attr(NAN),
                                        c->int_attr(INT64_MIN), c->place_attr(GPUPlace(1))}));
  for (Value o : {ce, k, h, bf, i8, full, r, cat})
    b.build("builtin.output", {o}, {{"name", c->str_attr("o")}}, {});
  return p;
}

}  // namespace oar::pir::testing
