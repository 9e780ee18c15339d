#include "paddle_core/meta/infer_meta_linalg.h"

#include <algorithm>

namespace oar {

namespace meta {
void check_matrix_of(const DenseTensor& x, const char* op, const char* arg, bool square, bool complex_ok);

void check_matrix(const DenseTensor& x, const char* op, const char* arg, bool square) {
  check_matrix_of(x, op, arg, square, false);
}

// check_matrix, complex64/complex128 too when complex_ok (eigh).
void check_matrix_of(const DenseTensor& x, const char* op, const char* arg, bool square, bool complex_ok) {
  const bool real = x.dtype() == DataType::FLOAT32 || x.dtype() == DataType::FLOAT64;
  OAR_ENFORCE(real || (complex_ok && is_complex(x.dtype())), InvalidType, op, ": ", arg, " must be float32 or float64",
              complex_ok ? " (or complex64/complex128)" : "", ", got ", dtype_name(x.dtype()));
  OAR_ENFORCE(x.rank() >= 2, InvalidArgument, op, ": ", arg,
              " must have rank >= 2 ([*, m, n]), got shape ", x.dims());
  OAR_ENFORCE(!square || x.dims()[x.rank() - 1] == x.dims()[x.rank() - 2], InvalidArgument, op,
              ": ", arg, " must be a stack of square matrices, got shape ", x.dims());
}
}  // namespace meta

namespace {
Dims batch_of(const DenseTensor& x) { return Dims(x.dims().begin(), x.dims().end() - 2); }

Dims with_matrix(const Dims& batch, int64_t m, int64_t n) {
  Dims d = batch;
  d.push_back(m);
  d.push_back(n);
  return d;
}

void check_rhs(const DenseTensor& x, const DenseTensor& y, const char* op) {
  meta::check_matrix(x, op, "x", true);
  meta::check_matrix(y, op, "y", false);
  OAR_ENFORCE(x.dtype() == y.dtype(), InvalidType, op, ": y must have the dtype of x (",
              dtype_name(x.dtype()), "), got ", dtype_name(y.dtype()));
  OAR_ENFORCE(y.dims()[y.rank() - 2] == x.dims()[x.rank() - 1] && batch_of(x) == batch_of(y),
              InvalidArgument, op, ": x of shape ", x.dims(), " and y of shape ", y.dims(),
              " do not match (expected x [*, n, n] and y [*, n, k])");
}
}  // namespace

void SquareMatrixInferMeta(const DenseTensor& x, DenseTensor* out) {
  meta::check_matrix(x, "inv", "x", true);
  out->set_dtype(x.dtype());
  out->set_dims(x.dims());
}

void LuInferMeta(const DenseTensor& x, DenseTensor* out, DenseTensor* pivots, DenseTensor* infos) {
  meta::check_matrix(x, "lu", "x", false);
  const int64_t m = x.dims()[x.rank() - 2], n = x.dims()[x.rank() - 1];
  out->set_dtype(x.dtype());
  out->set_dims(x.dims());
  Dims pd = batch_of(x);
  pd.push_back(std::min(m, n));
  pivots->set_dtype(DataType::INT32);
  pivots->set_dims(pd);
  infos->set_dtype(DataType::INT32);
  infos->set_dims(batch_of(x));
}

void LuGradInferMeta(const DenseTensor& lu, const DenseTensor& pivots, const DenseTensor& grad_out,
                     DenseTensor* x_grad) {
  meta::check_matrix(lu, "lu_grad", "lu", false);
  OAR_ENFORCE(grad_out.dims() == lu.dims() && grad_out.dtype() == lu.dtype(), InvalidArgument, "lu_grad: grad_out (",
              dtype_name(grad_out.dtype()), " ", grad_out.dims(), ") must match lu (", dtype_name(lu.dtype()), " ",
              lu.dims(), ")");
  Dims pd = batch_of(lu);
  pd.push_back(std::min(lu.dims()[lu.rank() - 2], lu.dims()[lu.rank() - 1]));
  OAR_ENFORCE(pivots.dtype() == DataType::INT32 && pivots.dims() == pd, InvalidArgument,
              "lu_grad: pivots must be int32 of shape ", pd, ", got ", dtype_name(pivots.dtype()), " ", pivots.dims());
  x_grad->set_dtype(lu.dtype());
  x_grad->set_dims(lu.dims());
}

void CholeskyInferMeta(const DenseTensor& x, bool, DenseTensor* out) {
  meta::check_matrix(x, "cholesky", "x", true);
  out->set_dtype(x.dtype());
  out->set_dims(x.dims());
}

void DetInferMeta(const DenseTensor& x, DenseTensor* out) {
  meta::check_matrix(x, "det", "x", true);
  out->set_dtype(x.dtype());
  out->set_dims(batch_of(x));
}

void SlogdetInferMeta(const DenseTensor& x, DenseTensor* sign, DenseTensor* logabsdet) {
  meta::check_matrix(x, "slogdet", "x", true);
  for (DenseTensor* t : {sign, logabsdet}) {
    t->set_dtype(x.dtype());
    t->set_dims(batch_of(x));
  }
}

void SolveInferMeta(const DenseTensor& x, const DenseTensor& y, DenseTensor* out) {
  check_rhs(x, y, "solve");
  out->set_dtype(x.dtype());
  out->set_dims(y.dims());
}

void TriangularSolveInferMeta(const DenseTensor& x, const DenseTensor& y, bool, bool, bool,
                              DenseTensor* out) {
  check_rhs(x, y, "triangular_solve");
  out->set_dtype(x.dtype());
  out->set_dims(y.dims());
}

void QrInferMeta(const DenseTensor& x, const std::string& mode, DenseTensor* q, DenseTensor* r) {
  meta::check_matrix(x, "qr", "x", false);
  OAR_ENFORCE(mode == "reduced" || mode == "complete", InvalidArgument,
              "qr: mode must be 'reduced', 'complete' or 'r', got '", mode, "'");
  const int64_t m = x.dims()[x.rank() - 2], n = x.dims()[x.rank() - 1], k = std::min(m, n);
  const int64_t qc = mode == "complete" ? m : k;
  q->set_dtype(x.dtype());
  q->set_dims(with_matrix(batch_of(x), m, qc));
  r->set_dtype(x.dtype());
  r->set_dims(with_matrix(batch_of(x), qc, n));
}

void SvdInferMeta(const DenseTensor& x, bool full_matrices, DenseTensor* u, DenseTensor* s,
                  DenseTensor* vh) {
  meta::check_matrix(x, "svd", "x", false);
  const int64_t m = x.dims()[x.rank() - 2], n = x.dims()[x.rank() - 1], k = std::min(m, n);
  u->set_dtype(x.dtype());
  u->set_dims(with_matrix(batch_of(x), m, full_matrices ? m : k));
  Dims sd = batch_of(x);
  sd.push_back(k);
  s->set_dtype(x.dtype());
  s->set_dims(sd);
  vh->set_dtype(x.dtype());
  vh->set_dims(with_matrix(batch_of(x), full_matrices ? n : k, n));
}

void EighInferMeta(const DenseTensor& x, const std::string& UPLO, DenseTensor* w,
                   DenseTensor* v) {
  meta::check_matrix_of(x, "eigh", "x", true, true);
  OAR_ENFORCE(UPLO == "L" || UPLO == "U", InvalidArgument, "eigh: UPLO must be 'L' or 'U', got '",
              UPLO, "'");
  Dims wd = batch_of(x);
  wd.push_back(x.dims()[x.rank() - 1]);
  w->set_dtype(complex_to_real(x.dtype()));
  w->set_dims(wd);
  v->set_dtype(x.dtype());
  v->set_dims(x.dims());
}

}  // namespace oar
