// Core IR: uniquing, use-def integrity, shape inference shared with eager, verifier errors.
#include <cstring>

#include "pir/ir/builder.h"
#include "pir/ir/printer.h"
#include "pir/ir/verifier.h"
#include "tests/cpp/pir/pir_test_util.h"

namespace oar::pir {
namespace {
using testing::ctx;
using testing::expect_error;

TEST(PirCore, TypesAreUniqued) {
  IrContext c;
  Type a = c.tensor_type(DataType::FLOAT32, {2, 3});
  Type b = c.tensor_type(DataType::FLOAT32, {2, 3});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c.tensor_type(DataType::FLOAT32, {3, 2}));
  EXPECT_NE(a, c.tensor_type(DataType::FLOAT64, {2, 3}));
  EXPECT_NE(a, c.tensor_type(DataType::FLOAT32, {2, 3}, DataLayout::kNHWC));
  EXPECT_EQ(c.scalar_type(DataType::INT64), c.scalar_type(TypeKind::kInt64));
  EXPECT_EQ(c.vector_type({a, a}), c.vector_type({b, b}));
  EXPECT_NE(c.vector_type({a}), c.vector_type({a, a}));
  EXPECT_EQ(c.tensor_type(DataType::FLOAT32, {-1, 4}).str(), "tensor<?x4xf32>");
  EXPECT_EQ(c.tensor_type(DataType::INT64, {}).str(), "tensor<i64>");
  EXPECT_EQ(c.vector_type({a, c.index_type()}).str(), "vec<tensor<2x3xf32>, index>");
  expect_error([&] { c.tensor_type(DataType::FLOAT32, {2, -3}); }, "dim -3 is invalid");
}

TEST(PirCore, AttributesAreUniqued) {
  IrContext c;
  EXPECT_EQ(c.int_attr(5), c.int_attr(5));
  EXPECT_EQ(c.int_attr(123456789), c.int_attr(123456789));
  EXPECT_NE(c.int_attr(1), c.float_attr(1.0));
  EXPECT_NE(c.float_attr(0.0), c.float_attr(-0.0));
  EXPECT_EQ(c.str_attr("ab"), c.str_attr("ab"));
  EXPECT_EQ(c.array_attr({c.int_attr(1), c.str_attr("x")}), c.array_attr({c.int_attr(1), c.str_attr("x")}));
  EXPECT_EQ(c.shape_attr({2, -1}), c.shape_attr({2, -1}));
  EXPECT_EQ(c.dtype_attr(DataType::FLOAT16), c.dtype_attr(DataType::FLOAT16));
  EXPECT_EQ(c.place_attr(CPUPlace()), c.place_attr(CPUPlace()));
  EXPECT_NE(c.place_attr(CPUPlace()), c.place_attr(GPUPlace(0)));
  Type t = c.tensor_type(DataType::INT32, {2});
  std::string bytes(8, '\1');
  EXPECT_EQ(c.dense_attr(t, bytes), c.dense_attr(t, bytes));
  expect_error([&] { c.dense_attr(t, "abc"); }, "needs 8 bytes of data, got 3");
  size_t n = c.num_uniqued_attrs();
  c.int_attr(5);
  c.shape_attr({2, -1});
  EXPECT_EQ(c.num_uniqued_attrs(), n);
  EXPECT_EQ(c.float_attr(1.0).str(), "1.0");
  EXPECT_EQ(c.float_attr(1e-5).str(), "1e-05");
  EXPECT_EQ(c.str_attr("a\"b\n").str(), "\"a\\\"b\\n\"");
  EXPECT_EQ(c.kernel_key_attr(0, DataType::FLOAT32, DataLayout::kNCHW).str(), "#kernel_key<cpu, f32, NCHW>");
}

TEST(PirCore, DialectsAndGeneratedOps) {
  IrContext c;
  EXPECT_TRUE(c.has_dialect("builtin"));
  EXPECT_EQ(c.find_op("pd_op.add"), nullptr);
  c.load_all_dialects();
  const OpInfo* add = c.op_info("pd_op.add");
  EXPECT_TRUE(add->has(kTraitPure));
  EXPECT_TRUE(add->has(kTraitCommutative));
  EXPECT_EQ(add->inputs.size(), 2u);
  EXPECT_EQ(add->kernel, "add");
  EXPECT_NE(add->backward.find("sum_to(grad, x)"), std::string::npos);
  EXPECT_EQ(add->inplace, "pd_op.add_");
  EXPECT_EQ(c.op_info("pd_op.add_")->inplace_of, "pd_op.add");
  EXPECT_TRUE(c.op_info("pd_op.uniform")->has(kTraitRandom));
  EXPECT_FALSE(c.op_info("pd_op.uniform")->has(kTraitPure));
  EXPECT_TRUE(c.op_info("pd_op.reshape")->has(kTraitView));
  const OpInfo* sum = c.op_info("pd_op.sum");
  ASSERT_EQ(sum->attrs.size(), 3u);
  EXPECT_EQ(sum->attrs[0].name, "axis");
  EXPECT_EQ(sum->attrs[0].default_value.str(), "#shape[]");
  EXPECT_EQ(sum->attrs[1].default_value.str(), "#dtype<undefined>");
  expect_error([&] { c.op_info("pd_op.no_such_op"); }, "'pd_op.no_such_op' is not registered");
  expect_error([&] { c.load_dialect("nope"); }, "unknown dialect 'nope'");
}

TEST(PirCore, UseDefChainsSurviveRewrites) {
  Program p(ctx());
  Builder b(ctx(), p.block());
  Type t = ctx()->tensor_type(DataType::FLOAT32, {4, 8});
  Value x = b.parameter("x", t);
  Value y = b.op("pd_op.relu", {x});
  Value z = b.op("pd_op.add", {y, x});
  Value w = b.op("pd_op.multiply", {z, y});
  EXPECT_EQ(x.num_uses(), 2u);
  EXPECT_EQ(y.num_uses(), 2u);
  EXPECT_TRUE(w.use_empty());
  EXPECT_EQ(z.defining_op()->operand(0), y);
  // y -> tanh(x) everywhere
  Builder at(ctx());
  at.set_insertion_point(y.defining_op());
  Value y2 = at.op("pd_op.tanh", {x});
  y.replace_all_uses_with(y2);
  EXPECT_TRUE(y.use_empty());
  EXPECT_EQ(y2.num_uses(), 2u);
  EXPECT_EQ(x.num_uses(), 3u);
  EXPECT_EQ(w.defining_op()->operand(1), y2);
  y.defining_op()->erase();
  EXPECT_EQ(x.num_uses(), 2u);
  // set_operand moves a use between lists
  z.defining_op()->set_operand(1, y2);
  EXPECT_EQ(x.num_uses(), 1u);
  EXPECT_EQ(y2.num_uses(), 3u);
  size_t seen = 0;
  for (OpOperand* u = y2.first_use(); u; u = u->next_use()) {
    EXPECT_EQ(u->owner()->operand(u->index()), y2);
    ++seen;
  }
  EXPECT_EQ(seen, 3u);
  verify_program(p);
  expect_error([&] { y2.defining_op()->erase(); }, "still has uses");
  EXPECT_EQ(p.num_ops(), 4u) << p.str();
}

TEST(PirCore, ShapeInferenceIsTheEagerInferMeta) {
  Program p(ctx());
  Builder b(ctx(), p.block());
  Value x = b.parameter("x", ctx()->tensor_type(DataType::FLOAT32, {4, 8}));
  Value w = b.parameter("w", ctx()->tensor_type(DataType::FLOAT32, {8, 16}));
  EXPECT_EQ(b.op("pd_op.matmul", {x, w}).type().str(), "tensor<4x16xf32>");
  EXPECT_EQ(b.op("pd_op.matmul", {w, x}, {{"transpose_x", ctx()->bool_attr(true)},
                                          {"transpose_y", ctx()->bool_attr(true)}}).type().str(),
            "tensor<16x4xf32>");
  Value i = b.parameter("i", ctx()->tensor_type(DataType::INT32, {8}));
  EXPECT_EQ(b.op("pd_op.add", {x, i}).type().str(), "tensor<4x8xf32>");  // promotion + broadcast
  EXPECT_EQ(b.op("pd_op.exp", {i}).type().str(), "tensor<8xf32>");        // promote_float
  EXPECT_EQ(b.op("pd_op.sum", {x}, {{"axis", ctx()->shape_attr({1})}, {"keepdim", ctx()->bool_attr(true)}})
                .type().str(), "tensor<4x1xf32>");
  EXPECT_EQ(b.op("pd_op.reshape", {x}, {{"shape", ctx()->shape_attr({2, -1})}}).type().str(),
            "tensor<2x16xf32>");
  Value list = b.combine({x, x});
  EXPECT_EQ(b.op("pd_op.concat", {list}, {{"axis", ctx()->int_attr(1)}}).type().str(), "tensor<4x16xf32>");
  Operation* sp = b.build("pd_op.split_with_num", {x}, {{"num", ctx()->int_attr(2)}, {"axis", ctx()->int_attr(1)}});
  EXPECT_EQ(sp->result(0).type().str(), "vec<tensor<4x4xf32>, tensor<4x4xf32>>");
  EXPECT_EQ(b.split(sp->result(0)).size(), 2u);
  // dynamic dims stay dynamic
  Value d = b.parameter("d", ctx()->tensor_type(DataType::FLOAT32, {-1, 8}));
  EXPECT_EQ(b.op("pd_op.relu", {d}).type().str(), "tensor<?x8xf32>");
  EXPECT_EQ(b.op("pd_op.matmul", {d, w}).type().str(), "tensor<?x16xf32>");
  EXPECT_EQ(b.op("pd_op.add", {d, d}).type().str(), "tensor<?x8xf32>");
  // ? broadcast against a static size: the static size wins; against 1: stays dynamic
  Value s3 = b.parameter("s3", ctx()->tensor_type(DataType::FLOAT32, {3, 8}));
  Value s1 = b.parameter("s1", ctx()->tensor_type(DataType::FLOAT32, {1, 8}));
  EXPECT_EQ(b.op("pd_op.add", {d, s3}).type().str(), "tensor<3x8xf32>");
  EXPECT_EQ(b.op("pd_op.add", {s1, d}).type().str(), "tensor<?x8xf32>");
  Value d2 = b.parameter("d2", ctx()->tensor_type(DataType::FLOAT32, {-1, -1}));
  EXPECT_EQ(b.op("pd_op.add", {d2, s3}).type().str(), "tensor<3x8xf32>");
  Value s5 = b.parameter("s5", ctx()->tensor_type(DataType::FLOAT32, {3, 5}));
  expect_error([&] { b.op("pd_op.add", {d, s5}); }, "(some input dims are dynamic)");
  // errors come from the same infer-meta as eager, prefixed with the IR op
  expect_error([&] { b.op("pd_op.matmul", {x, x}); }, "pd_op.matmul: matmul");
  expect_error([&] { b.op("pd_op.add", {x, w}); }, "pd_op.add:");
  verify_program(p);
}

TEST(PirCore, VerifierReportsMalformedPrograms) {
  IrContext* c = ctx();
  Type t = c->tensor_type(DataType::FLOAT32, {2, 3});
  {  // wrong operand count
    Program p(c);
    Builder b(c, p.block());
    Value x = b.parameter("x", t);
    b.build("pd_op.add", {x}, {}, {t});
    expect_error([&] { verify_program(p); }, "expected 2 operand(s) (x, y), got 1");
  }
  {  // wrong result type
    Program p(c);
    Builder b(c, p.block());
    Value x = b.parameter("x", t);
    b.build("pd_op.relu", {x}, {}, {c->tensor_type(DataType::FLOAT32, {3, 2})});
    expect_error([&] { verify_program(p); }, "result 0 has type tensor<3x2xf32> but shape inference gives tensor<2x3xf32>");
  }
  {  // unknown attribute, wrong attribute kind
    Program p(c);
    Builder b(c, p.block());
    Value x = b.parameter("x", t);
    b.build("pd_op.relu", {x}, {{"alpha", c->float_attr(1)}});
    expect_error([&] { verify_program(p); }, "unknown attribute 'alpha' (the op takes: none)");
  }
  {
    Program p(c);
    Builder b(c, p.block());
    Value x = b.parameter("x", t);
    b.build("pd_op.softmax", {x}, {{"axis", c->str_attr("last")}}, {t});
    expect_error([&] { verify_program(p); }, "attribute 'axis' must be int, got \"last\"");
  }
  {  // use before definition
    Program p(c);
    Builder b(c, p.block());
    Value x = b.parameter("x", t);
    Value y = b.op("pd_op.relu", {x});
    Operation* first = x.defining_op();
    Builder front(c);
    front.set_insertion_point(first);
    front.build("pd_op.tanh", {y});
    expect_error([&] { verify_program(p); }, "operand 0 is not defined before this op");
  }
  {  // terminator not last; yield outside control flow
    Program p(c);
    Builder b(c, p.block());
    Value x = b.parameter("x", t);
    b.yield({x});
    b.op("pd_op.relu", {x});
    expect_error([&] { verify_program(p); }, "a terminator must be the last op of its block");
  }
  {  // cf.if branch yields the wrong type
    Program p(c);
    Builder b(c, p.block());
    Value x = b.parameter("x", t);
    Value cond = b.parameter("c", c->tensor_type(DataType::BOOL, {1}));
    Operation* iff = b.build("cf.if", {cond}, {}, {t});
    Builder tb(c, iff->region(0).add_block());
    tb.yield({tb.op("pd_op.relu", {x})});
    Builder eb(c, iff->region(1).add_block());
    eb.yield({eb.op("pd_op.cast", {x}, {{"dtype", c->dtype_attr(DataType::FLOAT64)}})});
    expect_error([&] { verify_program(p); }, "the else region yields tensor<2x3xf64> for result 0 of type tensor<2x3xf32>");
  }
  {  // values of a region are not visible after it
    Program p(c);
    Builder b(c, p.block());
    Value x = b.parameter("x", t);
    Value cond = b.parameter("c", c->tensor_type(DataType::BOOL, {}));
    Operation* iff = b.build("cf.if", {cond}, {}, {});
    Builder tb(c, iff->region(0).add_block());
    Value inner = tb.op("pd_op.relu", {x});
    tb.yield({});
    Builder eb(c, iff->region(1).add_block());
    eb.yield({});
    b.op("pd_op.tanh", {inner});
    expect_error([&] { verify_program(p); }, "not defined before this op (or not visible here)");
  }
}

TEST(PirCore, WhileLoopVerifies) {
  IrContext* c = ctx();
  Program p(c);
  Builder b(c, p.block());
  Type t = c->tensor_type(DataType::FLOAT32, {3});
  Type bt = c->tensor_type(DataType::BOOL, {});
  Value x = b.parameter("x", t);
  Value limit = b.constant_scalar(10.0, DataType::FLOAT32, {});
  Value cond = b.constant_scalar(1.0, DataType::BOOL, {});
  Operation* loop = b.build("cf.while", {cond, x}, {}, {t});
  Block* body = loop->region(0).add_block();
  Value carried = body->add_argument(t);
  Builder bb(c, body);
  Value next = bb.op("pd_op.scale", {carried}, {{"scale", c->float_attr(2.0)}});
  Value s = bb.op("pd_op.sum", {next});
  Value more = bb.op("pd_op.less_than", {s, limit});
  EXPECT_EQ(more.type(), bt);
  bb.yield({more, next});
  b.build("builtin.output", {loop->result(0)}, {{"name", c->str_attr("out")}}, {});
  verify_program(p);
  std::string text = p.str();
  EXPECT_NE(text.find("^bb0(%"), std::string::npos) << text;
  EXPECT_EQ(parse_program(c, text)->str(), text);
}

}  // namespace
}  // namespace oar::pir

namespace oar::pir {
namespace {

TEST(PirCore, TypeRefines) {
  IrContext* c = ctx();
  Type known = c->tensor_type(DataType::FLOAT32, {2, 4});
  Type rows = c->tensor_type(DataType::FLOAT32, {-1, 4});
  EXPECT_TRUE(known.refines(rows));
  EXPECT_TRUE(known.refines(known));
  EXPECT_FALSE(rows.refines(known));                                         // ? is not 2
  EXPECT_FALSE(c->tensor_type(DataType::FLOAT32, {2, 5}).refines(rows));     // 5 vs 4
  EXPECT_FALSE(c->tensor_type(DataType::FLOAT64, {2, 4}).refines(rows));     // dtype
  EXPECT_FALSE(c->tensor_type(DataType::FLOAT32, {2, 4, 1}).refines(rows));  // rank
}

// A loop carrying tensor<?x3> (rows appended per iteration): the init and the yielded
// value may have known sizes; a yield that contradicts a static size is rejected.
TEST(PirCore, WhileLoopCarriesARefinedType) {
  IrContext* c = ctx();
  for (bool bad : {false, true}) {
    Program p(c);
    Builder b(c, p.block());
    Type carried = c->tensor_type(DataType::FLOAT32, {-1, 3});
    Value init = b.parameter("x", c->tensor_type(DataType::FLOAT32, {0, 3}));
    Value row = b.parameter("r", c->tensor_type(DataType::FLOAT32, {bad ? 4 : 3}));
    Value cond = b.constant_scalar(1.0, DataType::BOOL, {});
    Operation* loop = b.build("cf.while", {cond, init}, {}, {carried});
    Block* body = loop->region(0).add_block();
    Value buf = body->add_argument(carried);
    Builder bb(c, body);
    Value next = bb.op("pd_op.append_row", {buf, row});
    bb.yield({cond, next});
    b.build("builtin.output", {loop->result(0)}, {{"name", c->str_attr("out")}}, {});
    if (bad) {
      expect_error([&] { verify_program(p); }, "must refine it");
    } else {
      verify_program(p);
      EXPECT_EQ(next.type().str(), "tensor<?x3xf32>");
    }
  }
}

}  // namespace
}  // namespace oar::pir
