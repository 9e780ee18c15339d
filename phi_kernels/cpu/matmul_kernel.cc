// matmul: float32 through OpenBLAS or oneDNN's sgemm (funcs/sgemm.h picks by shape), bfloat16
// through funcs/lowp_gemm.h (oneDNN on AVX512-BF16/AMX, float blocks elsewhere),
// float64 through BLAS dgemm, complex64/complex128 through cgemm/zgemm, other dtypes through a plain loop in OpMath.
// Batch dims broadcast; a transposed-contiguous operand is passed with a transpose flag instead of being copied.
#include <cblas.h>

#include <algorithm>
#include <vector>

#include "oar_generated/kernel_signatures.h"
#include "paddle_core/meta/infer_meta.h"
#include "phi_kernels/cpu/elementwise.h"
#include "phi_kernels/cpu/matmul_kernel.h"
#include "phi_kernels/cpu/parallel.h"
#include "phi_kernels/cpu/scratch.h"
#include "phi_kernels/funcs/lowp_gemm.h"
#include "phi_kernels/funcs/sgemm.h"

namespace oar::phi {
namespace {

// A matrix operand: the tensor (a view of the input or a contiguous copy), leading dimension,
// whether it is stored transposed, and the element strides of its batch dims.
struct MatOperand {
  DenseTensor t;  // keeps a contiguous copy alive when one was needed
  bool trans = false;
  int64_t ld = 0;
  std::vector<int64_t> batch_strides;
};

// Views the last two dims of `x` as a row-major matrix (possibly transposed) with any
// leading dimension, and its batch dims with any (non-negative) strides: a [B, H, L, D]
// view of a [B, L, H, D] tensor (transpose([0, 2, 1, 3])) and k.transpose(-1, -2) are
// read in place. Copies only when neither of the last two dims is unit-stride.
MatOperand as_matrix(const DenseTensor& x, bool transpose) {
  MatOperand m;
  const int r = x.rank();
  const int64_t rows = x.dims()[r - 2], cols = x.dims()[r - 1];
  const int64_t s0 = x.strides()[r - 2], s1 = x.strides()[r - 1];
  bool batch_ok = true;
  for (int i = 0; i < r - 2; ++i) batch_ok = batch_ok && (x.strides()[i] >= 0 || x.dims()[i] == 1);
  const int64_t min_ld_rm = std::max<int64_t>(cols, 1), min_ld_cm = std::max<int64_t>(rows, 1);
  if (batch_ok && (s1 == 1 || cols == 1) && (rows == 1 || s0 >= min_ld_rm)) {
    m.t = x;
    m.trans = transpose;
    m.ld = rows == 1 ? min_ld_rm : s0;
  } else if (batch_ok && (s0 == 1 || rows == 1) && (cols == 1 || s1 >= min_ld_cm)) {
    m.t = x;
    m.trans = !transpose;
    m.ld = cols == 1 ? min_ld_cm : s1;
  } else {
    m.t = contiguous(x);
    m.trans = transpose;
    m.ld = min_ld_rm;
  }
  for (int i = 0; i < r - 2; ++i) m.batch_strides.push_back(m.t.dims()[i] == 1 ? 0 : m.t.strides()[i]);
  return m;
}

// True when the matrices of t (stored untransposed as `rows` rows, leading dimension ld) lie
// rows * ld apart across the batch too, so that t reads as one [batch * rows, cols] matrix.
bool rows_fold(const DenseTensor& t, int64_t rows, int64_t ld) {
  int64_t expect = rows * ld;
  for (int i = t.rank() - 3; i >= 0; --i) {
    if (t.dims()[i] != 1 && t.strides()[i] != expect) return false;
    expect *= t.dims()[i];
  }
  return true;
}

// Copies a rows x cols matrix (leading dimension ld) of a 16-bit float into dense float.
template <typename T>
void widen_matrix(const T* src, int64_t ld, int64_t rows, int64_t cols, float* dst) {
  parallel_for(  // F16C, rows split over the pool (inline inside a batch's region)
      rows,
      [&](int64_t r0, int64_t r1) {
    for (int64_t i = r0; i < r1; ++i) detail::to_floats(src + i * ld, dst + i * cols, cols);
      },
      rows * cols);
}

template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const T* A, int64_t lda, const T* B,
          int64_t ldb, T* C, int64_t ldc) {
  if constexpr (std::is_same_v<T, float>) {
    sgemm_rowmajor(ta, tb, M, N, K, A, lda, B, ldb, C, ldc);  // OpenBLAS or oneDNN by shape
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M,
                N, K, 1.0, A, lda, B, ldb, 0.0, C, ldc);
  } else if constexpr (is_complex_v<T>) {
    const T one(1), zero(0);
    const auto op_a = ta ? CblasTrans : CblasNoTrans, op_b = tb ? CblasTrans : CblasNoTrans;
    if constexpr (std::is_same_v<T, std::complex<float>>) {
      cblas_cgemm(CblasRowMajor, op_a, op_b, M, N, K, &one, A, lda, B, ldb, &zero, C, ldc);
    } else {
      cblas_zgemm(CblasRowMajor, op_a, op_b, M, N, K, &one, A, lda, B, ldb, &zero, C, ldc);
    }
  } else if constexpr (std::is_same_v<T, bfloat16>) {
    // oneDNN's bf16 matmul on AVX512-BF16/AMX, float blocks through sgemm elsewhere.
    static_assert(sizeof(bfloat16) == sizeof(uint16_t));
    bf16gemm_rowmajor(ta, tb, M, N, K, reinterpret_cast<const uint16_t*>(A), lda, reinterpret_cast<const uint16_t*>(B),
                      ldb, reinterpret_cast<uint16_t*>(C), ldc);
  } else if constexpr (std::is_same_v<T, float16>) {
    // float16: widen both operands to float, sgemm, round once on store (F16C). The float
    // copies live in per-thread scratch: fresh vectors faulted in 12 MB of pages a call at
    // 1024^3 and the store rounded in software, 25.5 ms against float32's 12.9.
    thread_local Scratch scratch;
    float* a32 = scratch.get<float>(M * K + K * N + M * N, "matmul");
    float *b32 = a32 + M * K, *c32 = b32 + K * N;
    widen_matrix(A, lda, ta ? K : M, ta ? M : K, a32);
    widen_matrix(B, ldb, tb ? N : K, tb ? K : N, b32);
    gemm<float>(ta, tb, M, N, K, a32, ta ? M : K, b32, tb ? K : N, c32, N);
    parallel_for(
        M,
        [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0; i < r1; ++i) detail::from_floats(c32 + i * N, C + i * ldc, N);
        },
        M * N);
    scratch.trim();
  } else {
    using Mt = OpMath<T>;
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        Mt acc = 0;
        for (int64_t k = 0; k < K; ++k) {
          Mt a = static_cast<Mt>(ta ? A[k * lda + i] : A[i * lda + k]);
          Mt b = static_cast<Mt>(tb ? B[j * ldb + k] : B[k * ldb + j]);
          acc += a * b;
        }
        C[i * ldc + j] = static_cast<T>(acc);
      }
    }
  }
}

// out = x @ y written into `o`: matrix i (batch index, row-major over the broadcast batch
// dims) starts at o + out_offset(i), its rows ldc apart, its columns adjacent. The
// contiguous output (ldc < 0) is ldc = N with matrices M * N apart; a strided one (matmul_into)
// writes a permuted layout directly (Note [Matmul output layout] in docs/notes/cinn.md).
template <typename T>
void matmul_impl(DenseTensor x, DenseTensor y, bool transpose_x, bool transpose_y, T* o, int64_t ldc,
                 std::vector<int64_t> out_batch_strides) {
  // 1-D operands: x is a row vector, y a column vector.
  if (x.rank() == 1) x.set_view({1, x.dims()[0]}, {0, x.strides()[0]}, x.offset()), transpose_x = false;
  if (y.rank() == 1) y.set_view({y.dims()[0], 1}, {y.strides()[0], 0}, y.offset()), transpose_y = false;
  const int64_t M = transpose_x ? x.dims()[x.rank() - 1] : x.dims()[x.rank() - 2];
  const int64_t K = transpose_x ? x.dims()[x.rank() - 2] : x.dims()[x.rank() - 1];
  const int64_t N = transpose_y ? y.dims()[y.rank() - 2] : y.dims()[y.rank() - 1];
  // Broadcast batch dims.
  Dims bx(x.dims().begin(), x.dims().end() - 2), by(y.dims().begin(), y.dims().end() - 2);
  Dims batch = meta::broadcast_dims(bx, by, "matmul");
  const int64_t nb = batch.numel();
  if (nb == 0 || M == 0 || N == 0) return;
  if (ldc < 0) {  // the contiguous output: rows N apart, matrices M * N apart
    ldc = N;
    out_batch_strides.assign(batch.size(), 0);
    for (int64_t d = static_cast<int64_t>(batch.size()) - 1, st = M * N; d >= 0; st *= batch[d], --d)
      out_batch_strides[d] = st;
  }
  bool out_folds = true;  // the output's matrices nest: stride[d] == stride[d + 1] * batch[d + 1]
  for (int64_t d = static_cast<int64_t>(batch.size()) - 1, expect = M * ldc; d >= 0; expect *= batch[d], --d)
    if (batch[d] != 1 && out_batch_strides[d] != expect) out_folds = false;
  auto out_offset = [&](int64_t i) {
    if (out_folds) return i * M * ldc;  // no divisions per product (a batch of tiny products)
    int64_t off = 0;
    for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
      off += (i % batch[d]) * out_batch_strides[d];
      i /= batch[d];
    }
    return off;
  };
  if (K == 0) {
    for (int64_t i = 0; i < nb; ++i)
      for (int64_t r = 0; r < M; ++r) std::fill(o + out_offset(i) + r * ldc, o + out_offset(i) + r * ldc + N, T(0));
    return;
  }
  MatOperand a = as_matrix(x, transpose_x), b = as_matrix(y, transpose_y);
  const T* A = a.t.data<T>();
  const T* B = b.t.data<T>();
  // y without batch dims (a Linear layer's weight) and x's batch of matrices one uniform
  // stack of rows, written as one (out_folds): the whole product is one GEMM of nb * M
  // rows, not nb small ones.
  if (nb > 1 && y.rank() == 2 && !a.trans && rows_fold(a.t, M, a.ld) && out_folds) {
    gemm<T>(false, b.trans, nb * M, N, K, A, a.ld, B, b.ld, o, ldc);
    return;
  }
  auto one = [&](int64_t i) {
    // Map batch index i to each operand's (possibly broadcast) element offset.
    int64_t rem = i, ia = 0, ib = 0;
    for (int d = batch.size() - 1; d >= 0; --d) {
      int64_t idx = rem % batch[d];
      rem /= batch[d];
      int da = d - (batch.size() - bx.size()), db = d - (batch.size() - by.size());
      if (da >= 0) ia += idx * a.batch_strides[da];
      if (db >= 0) ib += idx * b.batch_strides[db];
    }
    gemm<T>(a.trans, b.trans, M, N, K, A + ia, a.ld, B + ib, b.ld, o + out_offset(i), ldc);
  };
  // A batch of small products (a GEMM library threads one of them poorly: float32 [64, 128,
  // 64] @ [64, 64, 128] took the same time at 2 threads as at 1; bf16 attention scores
  // [32, 128, 64] @ [32, 64, 128] ran 1.2x faster at 2 threads than at 1, split per product):
  // one product per thread. float32, and the 16-bit floats: oneDNN's bf16 primitive (about
  // twice sgemm's rate, lowp_gemm.cc) or sgemm on widened copies, both serial in a region.
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) {
    if (nb > 1 && M * N * K < (int64_t{1} << 22) && omp_get_max_threads() > 1 && !in_parallel_region()) {
      sgemm_serial_in_team();
      const int64_t cost = std::is_same_v<T, bfloat16> ? sgemm_cost(M, N, K) / 2 : sgemm_cost(M, N, K);
      parallel_for(
          nb,
          [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) one(i);
          },
          nb * cost);
      return;
    }
  }
  for (int64_t i = 0; i < nb; ++i) one(i);
}

template <typename T>
void MatmulKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y, bool transpose_x, bool transpose_y,
                  DenseTensor* out) {
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  matmul_impl<T>(x, y, transpose_x, transpose_y, o, -1, {});
}

}  // namespace

void matmul_into(const DenseTensor& x, const DenseTensor& y, bool transpose_x, bool transpose_y, DenseTensor* out) {
  OAR_ENFORCE(out != nullptr && out->initialized(), InvalidArgument, "matmul_into: out must be an allocated tensor");
  OAR_ENFORCE(x.rank() >= 2 && y.rank() >= 2, InvalidArgument, "matmul_into: x and y must have rank >= 2, got shapes ",
              x.dims(), " and ", y.dims());
  OAR_ENFORCE(x.dtype() == y.dtype() && x.dtype() == out->dtype(), InvalidArgument,
              "matmul_into: x, y and out must have one dtype, got ", dtype_name(x.dtype()), ", ", dtype_name(y.dtype()),
              " and ", dtype_name(out->dtype()));
  DenseTensor want;
  MatmulInferMeta(x, y, transpose_x, transpose_y, &want);
  OAR_ENFORCE(out->dims() == want.dims(), InvalidArgument, "matmul_into: out has shape ", out->dims(),
              ", the product of x ", x.dims(), (transpose_x ? " (transposed)" : ""), " and y ", y.dims(),
              (transpose_y ? " (transposed)" : ""), " has shape ", want.dims());
  const int r = out->rank();
  const int64_t M = out->dims()[r - 2], N = out->dims()[r - 1];
  const int64_t cs = out->strides()[r - 1], rs = out->strides()[r - 2];
  bool batch_ok = true;
  for (int d = 0; d < r - 2; ++d) batch_ok = batch_ok && out->strides()[d] >= 0;
  OAR_ENFORCE((cs == 1 || N <= 1) && (rs >= N || M <= 1) && batch_ok, InvalidArgument, "matmul_into: out's strides ",
              out->strides(), " (shape ", out->dims(),
              ") need a unit column stride, a row stride of at least N and non-negative batch strides");
  if (out->numel() == 0) return;
  const std::vector<int64_t> bs(out->strides().begin(), out->strides().end() - 2);
  const int64_t ldc = M <= 1 ? std::max<int64_t>(N, 1) : rs;
  auto run = [&](auto tag) {
    using T = typename decltype(tag)::type;
    matmul_impl<T>(x, y, transpose_x, transpose_y, out->data<T>(), ldc, bs);
  };
  switch (x.dtype()) {
    case DataType::FLOAT32:
      return run(TypeTag<float>{});
    case DataType::FLOAT64:
      return run(TypeTag<double>{});
    case DataType::FLOAT16:
      return run(TypeTag<float16>{});
    case DataType::BFLOAT16:
      return run(TypeTag<bfloat16>{});
    case DataType::INT32:
      return run(TypeTag<int32_t>{});
    case DataType::INT64:
      return run(TypeTag<int64_t>{});
    case DataType::COMPLEX64:
      return run(TypeTag<std::complex<float>>{});
    case DataType::COMPLEX128:
      return run(TypeTag<std::complex<double>>{});
    default:
      break;
  }
  OAR_THROW(InvalidArgument, "matmul_into: x has dtype ", dtype_name(x.dtype()),
            "; float32, float64, float16, bfloat16, int32, int64, complex64 or complex128 expected");
}

}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(matmul, CPU, MatmulKernel, float, double, ::oar::float16, ::oar::bfloat16, int32_t, int64_t,
                    OAR_COMPLEX_TYPES)
