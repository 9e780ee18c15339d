// Decompositions and solvers through LAPACKE, batched over the leading dims.
//
// LAPACK is column-major; our matrices are row-major. A row-major buffer read as
// column-major is the transpose, so most routines run on the buffer as is with the
// roles adjusted (inv(A^T) = inv(A)^T, det(A^T) = det(A), a row-major lower
// triangle is a column-major upper one, svd(A^T) swaps U and V). Only the
// right-hand sides of solves and QR's input need a transposed copy, and svd and eigh
// run on a column-major copy so that the vectors' signs/phases are LAPACK's for A (Paddle's).
#include <cblas.h>
#include <lapacke.h>

#include <complex>

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "oar_generated/kernel_signatures.h"
#include "phi_kernels/cpu/elementwise.h"
#include "phi_kernels/funcs/dense_copy.h"

namespace oar::phi {
namespace {

using lapack_idx = lapack_int;

template <typename T> struct Lapack;
template <> struct Lapack<float> {
  static lapack_int getrf(lapack_int m, lapack_int n, float* a, lapack_int lda, lapack_int* p) {
    return LAPACKE_sgetrf(LAPACK_COL_MAJOR, m, n, a, lda, p);
  }
  static lapack_int getri(lapack_int n, float* a, lapack_int lda, const lapack_int* p) {
    return LAPACKE_sgetri(LAPACK_COL_MAJOR, n, a, lda, p);
  }
  static lapack_int getrs(char t, lapack_int n, lapack_int k, const float* a, lapack_int lda,
                          const lapack_int* p, float* b, lapack_int ldb) {
    return LAPACKE_sgetrs(LAPACK_COL_MAJOR, t, n, k, a, lda, p, b, ldb);
  }
  static lapack_int trtrs(char ul, char t, char d, lapack_int n, lapack_int k, const float* a,
                          lapack_int lda, float* b, lapack_int ldb) {
    return LAPACKE_strtrs(LAPACK_COL_MAJOR, ul, t, d, n, k, a, lda, b, ldb);
  }
  static lapack_int potrf(char ul, lapack_int n, float* a, lapack_int lda) {
    return LAPACKE_spotrf(LAPACK_COL_MAJOR, ul, n, a, lda);
  }
  static lapack_int geqrf(lapack_int m, lapack_int n, float* a, lapack_int lda, float* tau) {
    return LAPACKE_sgeqrf(LAPACK_COL_MAJOR, m, n, a, lda, tau);
  }
  static lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, float* a, lapack_int lda,
                          const float* tau) {
    return LAPACKE_sorgqr(LAPACK_COL_MAJOR, m, n, k, a, lda, tau);
  }
  static lapack_int gesdd(char job, lapack_int m, lapack_int n, float* a, lapack_int lda, float* s,
                          float* u, lapack_int ldu, float* vt, lapack_int ldvt) {
    return LAPACKE_sgesdd(LAPACK_COL_MAJOR, job, m, n, a, lda, s, u, ldu, vt, ldvt);
  }
  static lapack_int syevd(char ul, lapack_int n, float* a, lapack_int lda, float* w) {
    return LAPACKE_ssyevd(LAPACK_COL_MAJOR, 'V', ul, n, a, lda, w);
  }
};
template <> struct Lapack<double> {
  static lapack_int getrf(lapack_int m, lapack_int n, double* a, lapack_int lda, lapack_int* p) {
    return LAPACKE_dgetrf(LAPACK_COL_MAJOR, m, n, a, lda, p);
  }
  static lapack_int getri(lapack_int n, double* a, lapack_int lda, const lapack_int* p) {
    return LAPACKE_dgetri(LAPACK_COL_MAJOR, n, a, lda, p);
  }
  static lapack_int getrs(char t, lapack_int n, lapack_int k, const double* a, lapack_int lda,
                          const lapack_int* p, double* b, lapack_int ldb) {
    return LAPACKE_dgetrs(LAPACK_COL_MAJOR, t, n, k, a, lda, p, b, ldb);
  }
  static lapack_int trtrs(char ul, char t, char d, lapack_int n, lapack_int k, const double* a,
                          lapack_int lda, double* b, lapack_int ldb) {
    return LAPACKE_dtrtrs(LAPACK_COL_MAJOR, ul, t, d, n, k, a, lda, b, ldb);
  }
  static lapack_int potrf(char ul, lapack_int n, double* a, lapack_int lda) {
    return LAPACKE_dpotrf(LAPACK_COL_MAJOR, ul, n, a, lda);
  }
  static lapack_int geqrf(lapack_int m, lapack_int n, double* a, lapack_int lda, double* tau) {
    return LAPACKE_dgeqrf(LAPACK_COL_MAJOR, m, n, a, lda, tau);
  }
  static lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, double* a, lapack_int lda,
                          const double* tau) {
    return LAPACKE_dorgqr(LAPACK_COL_MAJOR, m, n, k, a, lda, tau);
  }
  static lapack_int gesdd(char job, lapack_int m, lapack_int n, double* a, lapack_int lda,
                          double* s, double* u, lapack_int ldu, double* vt, lapack_int ldvt) {
    return LAPACKE_dgesdd(LAPACK_COL_MAJOR, job, m, n, a, lda, s, u, ldu, vt, ldvt);
  }
  static lapack_int syevd(char ul, lapack_int n, double* a, lapack_int lda, double* w) {
    return LAPACKE_dsyevd(LAPACK_COL_MAJOR, 'V', ul, n, a, lda, w);
  }
};

// Complex Hermitian eigh (heevd). std::complex<R> has the layout of C's R _Complex (LAPACKE's complex type).
inline lapack_complex_float* lc(std::complex<float>* p) { return reinterpret_cast<lapack_complex_float*>(p); }
inline lapack_complex_double* lc(std::complex<double>* p) { return reinterpret_cast<lapack_complex_double*>(p); }

template <typename R>
struct Lapack<std::complex<R>> {
  using C = std::complex<R>;
  static constexpr bool kFloat = std::is_same_v<R, float>;
  static lapack_int syevd(char ul, lapack_int n, C* a, lapack_int lda, R* w) {
    if constexpr (kFloat)
      return LAPACKE_cheevd(LAPACK_COL_MAJOR, 'V', ul, n, lc(a), lda, w);
    else
      return LAPACKE_zheevd(LAPACK_COL_MAJOR, 'V', ul, n, lc(a), lda, w);
  }
};

template <typename T>
struct RealOf {
  using type = T;
};
template <typename R>
struct RealOf<std::complex<R>> {
  using type = R;
};

int64_t batch_count(const DenseTensor& x) {
  int64_t b = 1;
  for (int i = 0; i + 2 < x.rank(); ++i) b *= x.dims()[i];
  return b;
}

// dst (cols x rows, row-major) = src (rows x cols, row-major) transposed.
template <typename T>
void transpose_into(const T* src, T* dst, int64_t rows, int64_t cols) {
  transpose_strided(src, cols, rows, cols, dst, rows);
}

// LAPACK's iterative eigen/singular-value solvers can loop without end on NaN or Inf
// (pinv, matrix_rank, cond, svd and eigh all reach them), so non-finite input is rejected
// before the call, as PyTorch's linalg does.
template <typename T>
bool finite(T v) {
  if constexpr (is_complex_v<T>) {
    return std::isfinite(v.real()) && std::isfinite(v.imag());
  } else {
    return std::isfinite(v);
  }
}

template <typename T>
void check_finite(const std::vector<T>& a, const char* op, int64_t b) {
  for (T v : a) {
    OAR_ENFORCE(finite(v), InvalidArgument, op, ": the input contains NaN or Inf (batch ", b,
                "); the iterative solver does not converge on non-finite values");
  }
}

void check_info(lapack_int info, const char* op, int64_t b) {
  OAR_ENFORCE(info >= 0, Internal, op, ": LAPACK rejected argument ", -info, " (batch ", b, ")");
}

template <typename T>
void InvKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  copy_into(x, out);
  const int64_t n = x.dims()[x.rank() - 1], nb = batch_count(x);
  std::vector<lapack_int> piv(n);
  for (int64_t b = 0; b < nb; ++b) {
    T* a = o + b * n * n;
    lapack_int info = Lapack<T>::getrf(n, n, a, n, piv.data());
    check_info(info, "inv", b);
    OAR_ENFORCE(info == 0, InvalidArgument, "inv: the matrix at batch index ", b,
                " is singular (U(", info, ", ", info, ") is exactly zero); it has no inverse");
    check_info(Lapack<T>::getri(n, a, n, piv.data()), "inv", b);
  }
}

// The BLAS-3 calls of lu_grad, row-major.
template <typename T>
struct Blas;
template <>
struct Blas<float> {
  static void trmm(CBLAS_SIDE s, CBLAS_UPLO u, CBLAS_TRANSPOSE t, CBLAS_DIAG d, int64_t m, int64_t n, const float* a,
                   int64_t lda, float* b, int64_t ldb) {
    cblas_strmm(CblasRowMajor, s, u, t, d, m, n, 1.0f, a, lda, b, ldb);
  }
  static void trsm(CBLAS_SIDE s, CBLAS_UPLO u, CBLAS_TRANSPOSE t, CBLAS_DIAG d, int64_t m, int64_t n, const float* a,
                   int64_t lda, float* b, int64_t ldb) {
    cblas_strsm(CblasRowMajor, s, u, t, d, m, n, 1.0f, a, lda, b, ldb);
  }
  static void gemm_sub(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const float* a,
                       int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, -1.0f, a, lda, b, ldb, 1.0f, c, ldc);
  }
};
template <>
struct Blas<double> {
  static void trmm(CBLAS_SIDE s, CBLAS_UPLO u, CBLAS_TRANSPOSE t, CBLAS_DIAG d, int64_t m, int64_t n, const double* a,
                   int64_t lda, double* b, int64_t ldb) {
    cblas_dtrmm(CblasRowMajor, s, u, t, d, m, n, 1.0, a, lda, b, ldb);
  }
  static void trsm(CBLAS_SIDE s, CBLAS_UPLO u, CBLAS_TRANSPOSE t, CBLAS_DIAG d, int64_t m, int64_t n, const double* a,
                   int64_t lda, double* b, int64_t ldb) {
    cblas_dtrsm(CblasRowMajor, s, u, t, d, m, n, 1.0, a, lda, b, ldb);
  }
  static void gemm_sub(CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, int64_t m, int64_t n, int64_t k, const double* a,
                       int64_t lda, const double* b, int64_t ldb, double* c, int64_t ldc) {
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, -1.0, a, lda, b, ldb, 1.0, c, ldc);
  }
};

// x = P L U per matrix: getrf on a column-major copy, the factors transposed back into out.
template <typename T>
void LuKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out, DenseTensor* pivots, DenseTensor* infos) {
  T* o = out->alloc<T>();
  int32_t* piv = pivots->alloc<int32_t>();
  int32_t* info = infos->alloc<int32_t>();
  const int64_t m = x.dims()[x.rank() - 2], n = x.dims()[x.rank() - 1], k = std::min(m, n);
  const int64_t nb = batch_count(x);
  std::fill(info, info + nb, 0);
  if (k == 0 || nb == 0) return;
  DenseTensor c = dense_copy<T>(x);
  const T* xp = c.data<T>();
  std::vector<T> a(m * n);
  std::vector<lapack_int> p(k);
  for (int64_t b = 0; b < nb; ++b) {
    transpose_into(xp + b * m * n, a.data(), m, n);
    const lapack_int r = Lapack<T>::getrf(m, n, a.data(), m, p.data());
    check_info(r, "lu", b);
    info[b] = static_cast<int32_t>(r);  // > 0: U(r, r) is exactly zero
    transpose_into(a.data(), o + b * m * n, n, m);
    for (int64_t i = 0; i < k; ++i) piv[b * k + i] = static_cast<int32_t>(p[i]);
  }
}

// The gradient of lu's packed factors, A = P L U (k = min(m, n)). The strictly lower part of
// the output's gradient G is L's, the rest U's. With A' = P^T A = L U and X = L1^-1 dA1 U1^-1
// (L1, U1 the leading k x k blocks), dL1 = L1 tril(X, -1) and dU1 = triu(X) U1; the trailing
// rows of L (m > n) or columns of U (m < n) follow from dA2, which gives
//   m >= n: phi = tril(L1^T gL1, -1) + triu(gU U^T - L2^T gL2),  gA1 = L1^-T phi U^-T,  gA2 = gL2 U^-T;
//   m <  n: phi = tril(L^T gL - gU2 U2^T, -1) + triu(gU1 U1^T),  gA1 = L^-T phi U1^-T,  gA2 = L^-T gU2;
// and gA = P gA', the pivots' row interchanges applied last to first. Every triangle is read
// in place from the packed factors (lda n); a zero pivot gives inf / NaN, as the inverse does.
template <typename T>
void LuGradKernel(const DeviceContext&, const DenseTensor& lu, const DenseTensor& pivots, const DenseTensor& grad_out,
                  DenseTensor* x_grad) {
  T* o = x_grad->alloc<T>();
  const int64_t m = lu.dims()[lu.rank() - 2], n = lu.dims()[lu.rank() - 1], k = std::min(m, n);
  const int64_t nb = batch_count(lu);
  if (x_grad->numel() == 0) return;
  if (k == 0) {
    std::fill(o, o + x_grad->numel(), T(0));
    return;
  }
  const DenseTensor lc = dense_copy<T>(lu), gc = dense_copy<T>(grad_out);
  const DenseTensor pc = contiguous(pivots);
  const int32_t* pp = pc.data<int32_t>();
  std::vector<T> p1(k * k), p2(k * k);
  using B = Blas<T>;
  for (int64_t b = 0; b < nb; ++b) {
    const T* A = lc.data<T>() + b * m * n;
    const T* G = gc.data<T>() + b * m * n;
    T* R = o + b * m * n;
    for (int64_t i = 0; i < k; ++i) {  // p1 = tril(G[:k, :k], -1), p2 = triu(G[:k, :k])
      for (int64_t j = 0; j < k; ++j) {
        p1[i * k + j] = j < i ? G[i * n + j] : T(0);
        p2[i * k + j] = j >= i ? G[i * n + j] : T(0);
      }
    }
    if (m >= n) {  // gU is G's upper triangle, gL2 its trailing rows
      B::trmm(CblasLeft, CblasLower, CblasTrans, CblasUnit, k, k, A, n, p1.data(), k);      // L1^T gL1
      B::trmm(CblasRight, CblasUpper, CblasTrans, CblasNonUnit, k, k, A, n, p2.data(), k);  // gU U^T
      if (m > n) B::gemm_sub(CblasTrans, CblasNoTrans, k, k, m - n, A + n * n, n, G + n * n, n, p2.data(), k);
    } else {  // gL is G's strictly lower k x k triangle, gU = [gU1 gU2]
      B::trmm(CblasLeft, CblasLower, CblasTrans, CblasUnit, k, k, A, n, p1.data(), k);       // L^T gL
      B::gemm_sub(CblasNoTrans, CblasTrans, k, k, n - m, G + m, n, A + m, n, p1.data(), k);  // - gU2 U2^T
      B::trmm(CblasRight, CblasUpper, CblasTrans, CblasNonUnit, k, k, A, n, p2.data(), k);   // gU1 U1^T
    }
    for (int64_t i = 0; i < k; ++i) {  // phi, into R's leading k x k block
      for (int64_t j = 0; j < k; ++j) R[i * n + j] = j < i ? p1[i * k + j] : p2[i * k + j];
    }
    B::trsm(CblasLeft, CblasLower, CblasTrans, CblasUnit, k, k, A, n, R, n);      // L1^-T phi
    B::trsm(CblasRight, CblasUpper, CblasTrans, CblasNonUnit, k, k, A, n, R, n);  // ... U1^-T
    if (m > n) {                                                                  // gA2 = gL2 U^-T
      std::memcpy(R + n * n, G + n * n, (m - n) * n * sizeof(T));
      B::trsm(CblasRight, CblasUpper, CblasTrans, CblasNonUnit, m - n, n, A, n, R + n * n, n);
    } else if (m < n) {  // gA2 = L^-T gU2
      for (int64_t i = 0; i < m; ++i) std::memcpy(R + i * n + m, G + i * n + m, (n - m) * sizeof(T));
      B::trsm(CblasLeft, CblasLower, CblasTrans, CblasUnit, m, n - m, A, n, R + m, n);
    }
    for (int64_t i = k - 1; i >= 0; --i) {  // gA = P gA'
      const int64_t j = pp[b * k + i] - 1;
      OAR_ENFORCE(j >= 0 && j < m, InvalidArgument, "lu_grad: pivot ", j + 1, " of matrix ", b, " is not a row in [1, ",
                  m, "]");
      if (j != i) std::swap_ranges(R + i * n, R + (i + 1) * n, R + j * n);
    }
  }
}

// LU of each matrix: sign and log|det| (det of A^T equals det of A).
template <typename T>
void lu_logdet(const DenseTensor& x, const char* op, T* sign, T* logabs) {
  const int64_t n = x.dims()[x.rank() - 1], nb = batch_count(x);
  DenseTensor c = dense_copy<T>(x);
  const T* xp = c.data<T>();
  std::vector<T> a(n * n);
  std::vector<lapack_int> piv(std::max<int64_t>(n, 1));
  for (int64_t b = 0; b < nb; ++b) {
    if (n == 0) {
      sign[b] = T(1);
      logabs[b] = T(0);
      continue;
    }
    std::memcpy(a.data(), xp + b * n * n, n * n * sizeof(T));
    lapack_int info = Lapack<T>::getrf(n, n, a.data(), n, piv.data());
    check_info(info, op, b);
    if (info > 0) {
      sign[b] = T(0);
      logabs[b] = -std::numeric_limits<T>::infinity();
      continue;
    }
    T s = 1, l = 0;
    for (int64_t i = 0; i < n; ++i) {
      const T d = a[i * n + i];
      if (piv[i] != i + 1) s = -s;
      if (d < 0) s = -s;
      l += std::log(std::abs(d));
    }
    sign[b] = s;
    logabs[b] = l;
  }
}

template <typename T>
void DetKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* out) {
  T* o = out->alloc<T>();
  const int64_t nb = out->numel();
  std::vector<T> sign(nb), logabs(nb);
  lu_logdet<T>(x, "det", sign.data(), logabs.data());
  for (int64_t b = 0; b < nb; ++b) o[b] = sign[b] * std::exp(logabs[b]);
}

template <typename T>
void SlogdetKernel(const DeviceContext&, const DenseTensor& x, DenseTensor* sign,
                   DenseTensor* logabsdet) {
  T* s = sign->alloc<T>();
  T* l = logabsdet->alloc<T>();
  lu_logdet<T>(x, "slogdet", s, l);
}

// Solves op(A) X = B per batch; B [n, k] row-major is handed to LAPACK as a
// column-major copy. `solve_one(a_colmajor_is_AT, b_colmajor)`.
template <typename T, typename Solve>
void solve_batched(const DenseTensor& x, const DenseTensor& y, DenseTensor* out, Solve solve_one) {
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  const int64_t n = x.dims()[x.rank() - 1], k = y.dims()[y.rank() - 1], nb = batch_count(x);
  DenseTensor xc = dense_copy<T>(x), yc = dense_copy<T>(y);
  const T* xp = xc.data<T>();
  const T* yp = yc.data<T>();
  std::vector<T> a(n * n), bm(n * k);
  for (int64_t b = 0; b < nb; ++b) {
    std::memcpy(a.data(), xp + b * n * n, n * n * sizeof(T));
    transpose_into(yp + b * n * k, bm.data(), n, k);
    solve_one(b, n, k, a.data(), bm.data());
    transpose_into(bm.data(), o + b * n * k, k, n);
  }
}

template <typename T>
void SolveKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y,
                 DenseTensor* out) {
  std::vector<lapack_int> piv(std::max<int64_t>(x.dims()[x.rank() - 1], 1));
  solve_batched<T>(x, y, out, [&](int64_t b, int64_t n, int64_t k, T* a, T* bm) {
    lapack_int info = Lapack<T>::getrf(n, n, a, n, piv.data());  // LU of A^T
    check_info(info, "solve", b);
    OAR_ENFORCE(info == 0, InvalidArgument, "solve: the matrix x at batch index ", b,
                " is singular; the system has no unique solution");
    check_info(Lapack<T>::getrs('T', n, k, a, n, piv.data(), bm, n), "solve", b);  // (A^T)^T X = B
  });
}

template <typename T>
void TriangularSolveKernel(const DeviceContext&, const DenseTensor& x, const DenseTensor& y,
                           bool upper, bool transpose, bool unitriangular, DenseTensor* out) {
  // The buffer is A^T in column-major: its triangle is the other one, and op flips.
  solve_batched<T>(x, y, out, [&](int64_t b, int64_t n, int64_t k, T* a, T* bm) {
    lapack_int info = Lapack<T>::trtrs(upper ? 'L' : 'U', transpose ? 'N' : 'T',
                                       unitriangular ? 'U' : 'N', n, k, a, n, bm, n);
    check_info(info, "triangular_solve", b);
    OAR_ENFORCE(info == 0, InvalidArgument, "triangular_solve: the matrix x at batch index ", b,
                " is singular (zero on the diagonal at ", info, ")");
  });
}

template <typename T>
void CholeskyKernel(const DeviceContext&, const DenseTensor& x, bool upper, DenseTensor* out) {
  T* o = out->alloc<T>();
  if (out->numel() == 0) return;
  copy_into(x, out);
  const int64_t n = x.dims()[x.rank() - 1], nb = batch_count(x);
  for (int64_t b = 0; b < nb; ++b) {
    T* a = o + b * n * n;
    // Column-major 'U' gives U with A = U^T U; read row-major that is L = U^T.
    lapack_int info = Lapack<T>::potrf(upper ? 'L' : 'U', n, a, n);
    check_info(info, "cholesky", b);
    OAR_ENFORCE(info == 0, InvalidArgument, "cholesky: the matrix at batch index ", b,
                " is not positive definite (the leading minor of order ", info,
                " is not positive)");
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (upper ? j < i : j > i) a[i * n + j] = T(0);
      }
    }
  }
}

template <typename T>
void QrKernel(const DeviceContext&, const DenseTensor& x, const std::string& mode, DenseTensor* q,
              DenseTensor* r) {
  T* qp = q->alloc<T>();
  T* rp = r->alloc<T>();
  const int64_t m = x.dims()[x.rank() - 2], n = x.dims()[x.rank() - 1], k = std::min(m, n);
  const int64_t qc = q->dims()[q->rank() - 1];
  std::fill(rp, rp + r->numel(), T(0));
  if (q->numel() == 0 && r->numel() == 0) return;
  const int64_t nb = batch_count(x);
  if (k == 0) {  // Q is the identity's first columns; R stays zero.
    std::fill(qp, qp + q->numel(), T(0));
    for (int64_t b = 0; b < nb; ++b) {
      for (int64_t i = 0; i < std::min(m, qc); ++i) qp[b * m * qc + i * qc + i] = T(1);
    }
    return;
  }
  DenseTensor c = dense_copy<T>(x);
  const T* xp = c.data<T>();
  const int64_t cols = std::max(n, qc);
  std::vector<T> a(m * cols), tau(k);
  for (int64_t b = 0; b < nb; ++b) {
    transpose_into(xp + b * m * n, a.data(), m, n);  // column-major A, ld m
    check_info(Lapack<T>::geqrf(m, n, a.data(), m, tau.data()), "qr", b);
    T* rb = rp + b * qc * n;
    for (int64_t i = 0; i < std::min(qc, m); ++i) {
      for (int64_t j = i; j < n; ++j) rb[i * n + j] = a[j * m + i];
    }
    check_info(Lapack<T>::orgqr(m, qc, k, a.data(), m, tau.data()), "qr", b);
    transpose_into(a.data(), qp + b * m * qc, qc, m);
  }
}

template <typename T>
void SvdKernel(const DeviceContext&, const DenseTensor& x, bool full_matrices, DenseTensor* u,
               DenseTensor* s, DenseTensor* vh) {
  T* up = u->alloc<T>();
  T* sp = s->alloc<T>();
  T* vp = vh->alloc<T>();
  const int64_t m = x.dims()[x.rank() - 2], n = x.dims()[x.rank() - 1], k = std::min(m, n);
  const int64_t nb = batch_count(x);
  const int64_t uc = u->dims()[u->rank() - 1], vr = vh->dims()[vh->rank() - 2];
  if (k == 0) {  // no singular values; full matrices are identities
    std::fill(up, up + u->numel(), T(0));
    std::fill(vp, vp + vh->numel(), T(0));
    for (int64_t b = 0; b < nb; ++b) {
      for (int64_t i = 0; i < std::min(m, uc); ++i) up[b * m * uc + i * uc + i] = T(1);
      for (int64_t i = 0; i < std::min(n, vr); ++i) vp[b * vr * n + i * n + i] = T(1);
    }
    return;
  }
  DenseTensor c = dense_copy<T>(x);
  const T* xp = c.data<T>();
  // LAPACK runs on A itself (a column-major copy), not on the row-major buffer's A^T: the
  // signs of the singular vectors then are those of Paddle (and NumPy), which do the same.
  std::vector<T> a(m * n), ucm(m * uc), vtcm(vr * n);
  for (int64_t b = 0; b < nb; ++b) {
    transpose_into(xp + b * m * n, a.data(), m, n);
    check_finite(a, "svd", b);
    lapack_int info =
        Lapack<T>::gesdd(full_matrices ? 'A' : 'S', m, n, a.data(), m, sp + b * k, ucm.data(), m, vtcm.data(), vr);
    check_info(info, "svd", b);
    OAR_ENFORCE(info == 0, InvalidArgument, "svd: the decomposition did not converge (batch ", b,
                ")");
    transpose_into(ucm.data(), up + b * m * uc, uc, m);
    transpose_into(vtcm.data(), vp + b * vr * n, n, vr);
  }
}

template <typename T>
void EighKernel(const DeviceContext&, const DenseTensor& x, const std::string& UPLO,
                DenseTensor* w, DenseTensor* v) {
  auto* wp = w->alloc<typename RealOf<T>::type>();
  T* vp = v->alloc<T>();
  if (v->numel() == 0) return;
  const int64_t n = x.dims()[x.rank() - 1], nb = batch_count(x);
  DenseTensor c = dense_copy<T>(x);
  const T* xp = c.data<T>();
  std::vector<T> a(n * n);
  for (int64_t b = 0; b < nb; ++b) {
    // A column-major copy of x (the row-major buffer would be x^T, which for a Hermitian x
    // is conj(x): its eigenvectors' phases would differ from Paddle's).
    transpose_into(xp + b * n * n, a.data(), n, n);
    check_finite(a, "eigh", b);
    lapack_int info = Lapack<T>::syevd(UPLO == "L" ? 'L' : 'U', n, a.data(), n, wp + b * n);
    check_info(info, "eigh", b);
    OAR_ENFORCE(info == 0, InvalidArgument, "eigh: the decomposition did not converge (batch ", b,
                ")");
    transpose_into(a.data(), vp + b * n * n, n, n);  // eigenvectors are LAPACK's columns
  }
}

}  // namespace
}  // namespace oar::phi

using namespace oar::phi;  // NOLINT

OAR_REGISTER_KERNEL(inv, CPU, InvKernel, float, double)
OAR_REGISTER_KERNEL(lu, CPU, LuKernel, float, double)
OAR_REGISTER_KERNEL(lu_grad, CPU, LuGradKernel, float, double)
OAR_REGISTER_KERNEL(det, CPU, DetKernel, float, double)
OAR_REGISTER_KERNEL(slogdet, CPU, SlogdetKernel, float, double)
OAR_REGISTER_KERNEL(solve, CPU, SolveKernel, float, double)
OAR_REGISTER_KERNEL(triangular_solve, CPU, TriangularSolveKernel, float, double)
OAR_REGISTER_KERNEL(cholesky, CPU, CholeskyKernel, float, double)
OAR_REGISTER_KERNEL(qr, CPU, QrKernel, float, double)
OAR_REGISTER_KERNEL(svd, CPU, SvdKernel, float, double)
OAR_REGISTER_KERNEL(eigh, CPU, EighKernel, float, double, OAR_COMPLEX_TYPES)
