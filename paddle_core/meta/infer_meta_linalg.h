// Shape/dtype inference of the decompositions and solvers (linalg.yaml): inputs are
// float32/float64 stacks of matrices [*, m, n]; batch dims of two operands must be
// equal (the Python wrappers broadcast them first).
#pragma once

#include <string>

#include "paddle_core/meta/infer_meta.h"

namespace oar {

/// [*, n, n] -> [*, n, n] (inv, cholesky).
void SquareMatrixInferMeta(const DenseTensor& x, DenseTensor* out);
void CholeskyInferMeta(const DenseTensor& x, bool upper, DenseTensor* out);
/// [*, n, n] -> [*] (det).
void DetInferMeta(const DenseTensor& x, DenseTensor* out);
void LuInferMeta(const DenseTensor& x, DenseTensor* out, DenseTensor* pivots, DenseTensor* infos);
void LuGradInferMeta(const DenseTensor& lu, const DenseTensor& pivots, const DenseTensor& grad_out,
                     DenseTensor* x_grad);
void SlogdetInferMeta(const DenseTensor& x, DenseTensor* sign, DenseTensor* logabsdet);
/// x [*, n, n], y [*, n, k] -> [*, n, k].
void SolveInferMeta(const DenseTensor& x, const DenseTensor& y, DenseTensor* out);
void TriangularSolveInferMeta(const DenseTensor& x, const DenseTensor& y, bool upper,
                              bool transpose, bool unitriangular, DenseTensor* out);
/// mode: reduced (q [*, m, k], r [*, k, n]) or complete (q [*, m, m], r [*, m, n]), k = min(m, n).
void QrInferMeta(const DenseTensor& x, const std::string& mode, DenseTensor* q, DenseTensor* r);
void SvdInferMeta(const DenseTensor& x, bool full_matrices, DenseTensor* u, DenseTensor* s,
                  DenseTensor* vh);
void EighInferMeta(const DenseTensor& x, const std::string& UPLO, DenseTensor* w,
                   DenseTensor* v);

namespace meta {
/// Checks a float32/float64 tensor of rank >= 2 (square when `square`); `op`/`arg` name it.
void check_matrix(const DenseTensor& x, const char* op, const char* arg, bool square);
}  // namespace meta

}  // namespace oar
