#include "paddle_core/meta/view_meta.h"

#include <algorithm>

#include "paddle_core/meta/infer_meta.h"
#include "paddle_core/meta/infer_meta_manipulation.h"
#include "paddle_core/tensor/checked.h"

namespace oar {

namespace {
DenseTensor make_view(const DenseTensor& x, const Dims& dims, const Dims& strides,
                      int64_t offset) {
  DenseTensor v = x;
  v.set_view(dims, strides, offset);
  return v;
}

// Shape and stride products wrap modulo 2^64 like Dims::numel (a signed overflow is undefined):
// the IR's shape inference reshapes with a large stand-in for dynamic dims whose products pass
// int64 (UBSan, tests/python/jit).
static int64_t times(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
static int64_t plus(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}

// Strides for viewing x (shape old_dims, strides old_strides) as new_dims without a
// copy, or false when impossible (PyTorch's computeStride algorithm).
bool view_strides(const Dims& od, const Dims& os, const Dims& nd, Dims* ns) {
  *ns = Dims::filled(nd.size(), 1);
  if (od.numel() == 0) {
    *ns = contiguous_strides(nd);
    return true;
  }
  int64_t view_d = nd.size() - 1;
  int64_t chunk_base_stride = os.size() ? os.back() : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = od.size() - 1; td >= 0; --td) {
    tensor_numel = times(tensor_numel, od[td]);
    if (td == 0 || (od[td - 1] != 1 && os[td - 1] != times(tensor_numel, chunk_base_stride))) {
      while (view_d >= 0 && (view_numel < tensor_numel || nd[view_d] == 1)) {
        (*ns)[view_d] = times(view_numel, chunk_base_stride);
        view_numel = times(view_numel, nd[view_d]);
        --view_d;
      }
      if (view_numel != tensor_numel) return false;
      if (td > 0) {
        chunk_base_stride = os[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}
}  // namespace

DenseTensor TransposeView(const DenseTensor& x, const std::vector<int64_t>& perm) {
  const int r = x.rank();
  OAR_ENFORCE(static_cast<int>(perm.size()) == r, InvalidArgument, "transpose: perm ", perm,
              " has ", perm.size(), " entries but the input has rank ", r);
  Dims d = Dims::filled(r, 0), s = Dims::filled(r, 0);
  std::vector<bool> used(r, false);
  for (int i = 0; i < r; ++i) {
    int p = wrap_axis(perm[i], r, "transpose");
    OAR_ENFORCE(!used[p], InvalidArgument, "transpose: perm ", perm, " repeats axis ", p);
    used[p] = true;
    d[i] = x.dims()[p];
    s[i] = x.strides()[p];
  }
  return make_view(x, d, s, x.offset());
}

Dims reshape_dims(const DenseTensor& x, const std::vector<int64_t>& shape) {
  Dims nd(shape);
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < nd.size(); ++i) {
    if (nd[i] == -1) {
      OAR_ENFORCE(infer < 0, InvalidArgument, "reshape: only one dimension can be -1, got ",
                  shape);
      infer = i;
    } else if (nd[i] == 0 && i < x.rank()) {
      nd[i] = x.dims()[i];  // Paddle: 0 copies the input's dimension
      known = times(known, nd[i]);
    } else {
      OAR_ENFORCE(nd[i] >= 0, InvalidArgument, "reshape: invalid size ", nd[i], " in shape ",
                  shape);
      known = times(known, nd[i]);
    }
  }
  if (infer >= 0) {
    OAR_ENFORCE(known != 0 && x.numel() % known == 0, InvalidArgument, "reshape: cannot reshape ",
                x.dims(), " (", x.numel(), " elements) to ", shape);
    nd[infer] = x.numel() / known;
  }
  if (nd.numel() != x.numel() && x.numel() == 0 && infer < 0 && Dims(shape).numel() == 0 &&
      std::all_of(shape.begin(), shape.end(), [](int64_t v) { return v >= 0; })) {
    // A 0-size target taken literally: Paddle's "0 copies the input's dimension" cannot
    // have been meant (it gives a non-empty shape), and backward formulas reshape grad to
    // x's exact dims (e.g. unsqueeze's grad of a [1, 0, 3, 1] view back to [0, 3]).
    nd = Dims(shape);
  }
  OAR_ENFORCE(nd.numel() == x.numel(), InvalidArgument, "reshape: cannot reshape tensor of shape ",
              x.dims(), " (", x.numel(), " elements) to ", shape, " (", nd.numel(),
              " elements)");
  return nd;
}

DenseTensor ReshapeView(const DenseTensor& x, const std::vector<int64_t>& shape) {
  const Dims nd = reshape_dims(x, shape);
  Dims ns;
  if (view_strides(x.dims(), x.strides(), nd, &ns)) return make_view(x, nd, ns, x.offset());
  DenseTensor c = contiguous(x);
  return make_view(c, nd, contiguous_strides(nd), c.offset());
}

DenseTensor SqueezeView(const DenseTensor& x, const std::vector<int64_t>& axis) {
  std::vector<bool> drop(x.rank(), false);
  if (axis.empty()) {
    for (int i = 0; i < x.rank(); ++i) drop[i] = x.dims()[i] == 1;
  } else {
    for (int64_t a : axis) {
      int i = wrap_axis(a, x.rank(), "squeeze");
      if (x.rank() > 0) drop[i] = x.dims()[i] == 1;  // Paddle ignores non-1 dims
    }
  }
  Dims d, s;
  for (int i = 0; i < x.rank(); ++i) {
    if (!drop[i]) {
      d.push_back(x.dims()[i]);
      s.push_back(x.strides()[i]);
    }
  }
  return make_view(x, d, s, x.offset());
}

DenseTensor UnsqueezeView(const DenseTensor& x, const std::vector<int64_t>& axis) {
  Dims d = x.dims(), s = x.strides();
  const int out_rank = x.rank() + static_cast<int>(axis.size());
  std::vector<int> ax;
  for (int64_t a : axis) ax.push_back(wrap_axis(a, out_rank, "unsqueeze"));
  std::sort(ax.begin(), ax.end());
  for (int a : ax) {
    int64_t st = a < s.size() ? s[a] * d[a] : 1;
    d.insert(a, 1);
    s.insert(a, st);
  }
  return make_view(x, d, s, x.offset());
}

DenseTensor FlattenView(const DenseTensor& x, int64_t start_axis, int64_t stop_axis) {
  if (x.rank() == 0) return ReshapeView(x, {1});
  int a = wrap_axis(start_axis, x.rank(), "flatten"), b = wrap_axis(stop_axis, x.rank(), "flatten");
  OAR_ENFORCE(a <= b, InvalidArgument, "flatten: start_axis (", start_axis,
              ") must not be after stop_axis (", stop_axis, ")");
  std::vector<int64_t> shape;
  for (int i = 0; i < a; ++i) shape.push_back(x.dims()[i]);
  int64_t p = 1;
  for (int i = a; i <= b; ++i) p *= x.dims()[i];
  shape.push_back(p);
  for (int i = b + 1; i < x.rank(); ++i) shape.push_back(x.dims()[i]);
  return ReshapeView(x, shape);
}

DenseTensor ExpandView(const DenseTensor& x, const std::vector<int64_t>& shape) {
  DenseTensor meta;
  ExpandInferMeta(x, shape, &meta);
  const Dims& od = meta.dims();
  // A stride-0 view holds no memory, but every op reading it loops over its count: one
  // that wraps is rejected here (checked.h), not in a kernel.
  checked::product(od.data(), od.size(), od);
  Dims s = Dims::filled(od.size(), 0);
  const int off = od.size() - x.rank();
  for (int i = off; i < od.size(); ++i) {
    s[i] = x.dims()[i - off] == od[i] ? x.strides()[i - off] : 0;
  }
  return make_view(x, od, s, x.offset());
}

DenseTensor SliceView(const DenseTensor& x, const std::vector<int64_t>& axes,
                      const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                      const std::vector<int64_t>& strides) {
  OAR_ENFORCE(axes.size() == starts.size() && axes.size() == ends.size() &&
                  (strides.empty() || strides.size() == axes.size()),
              InvalidArgument, "slice: axes ", axes, ", starts ", starts, ", ends ", ends,
              " and strides ", strides, " must have the same length");
  Dims d = x.dims(), s = x.strides();
  int64_t offset = x.offset();
  for (size_t k = 0; k < axes.size(); ++k) {
    int a = wrap_axis(axes[k], x.rank(), "slice");
    int64_t step = strides.empty() ? 1 : strides[k];
    OAR_ENFORCE(step != 0, InvalidArgument, "slice: step must not be zero");
    const int64_t n = d[a];
    int64_t st = starts[k], en = ends[k];
    if (step > 0) {
      if (st < 0) st += n;
      if (en < 0) en += n;
      st = std::clamp<int64_t>(st, 0, n);
      en = std::clamp<int64_t>(en, 0, n);
      // 1 + (span - 1) / step: en - st + step - 1 overflowed int64 for a step near 2^63.
      int64_t len = en > st ? 1 + (en - st - 1) / step : 0;
      offset = plus(offset, times(st, s[a]));
      d[a] = len;
      if (len > 1) s[a] = times(s[a], step);  // step < n; a one-element step may be any size
    } else {
      if (st < 0) st += n;
      if (en < -n) en = -1;  // "to the beginning"
      else if (en < 0) en += n;
      st = std::clamp<int64_t>(st, -1, n - 1);
      en = std::clamp<int64_t>(en, -1, n - 1);
      // 1 - (span - 1) / step (step < 0, the quotient rounds toward 0): -step overflowed
      // for step == INT64_MIN.
      int64_t len = st > en ? 1 - (st - en - 1) / step : 0;
      if (len > 0) offset = plus(offset, times(st, s[a]));
      d[a] = len;
      if (len > 1) s[a] = times(s[a], step);
    }
  }
  return make_view(x, d, s, offset);
}

DenseTensor SelectView(const DenseTensor& x, int64_t axis, int64_t index) {
  OAR_ENFORCE(x.rank() > 0, InvalidArgument, "select: cannot index a 0-D tensor");
  int a = wrap_axis(axis, x.rank(), "select");
  const int64_t n = x.dims()[a];
  OAR_ENFORCE(index >= -n && index < n, OutOfRange, "index ", index,
              " is out of bounds for axis ", a, " with size ", n);
  if (index < 0) index += n;
  Dims d = x.dims(), s = x.strides();
  int64_t offset = plus(x.offset(), times(index, s[a]));  // IR stand-in strides can pass int64
  d.erase(a);
  s.erase(a);
  return make_view(x, d, s, offset);
}

namespace {
// The parts infer-meta gave (x's dims but along a) as views of x, one after another.
std::vector<DenseTensor> parts_along(const DenseTensor& x, int64_t axis, std::vector<DenseTensor> parts) {
  const int a = wrap_axis(axis, x.rank(), "split");
  int64_t offset = x.offset();
  for (DenseTensor& p : parts) {
    const Dims d = p.dims();
    p = make_view(x, d, x.strides(), offset);
    offset = plus(offset, times(d[a], x.strides()[a]));
  }
  return parts;
}
}  // namespace

std::vector<DenseTensor> SplitView(const DenseTensor& x, const std::vector<int64_t>& num_or_sections, int64_t axis) {
  std::vector<DenseTensor> parts;
  SplitInferMeta(x, num_or_sections, axis, &parts);
  return parts_along(x, axis, std::move(parts));
}

std::vector<DenseTensor> SplitWithNumView(const DenseTensor& x, int64_t num, int64_t axis) {
  std::vector<DenseTensor> parts;
  SplitWithNumInferMeta(x, num, axis, &parts);
  return parts_along(x, axis, std::move(parts));
}

std::vector<DenseTensor> UnbindView(const DenseTensor& x, int64_t axis) {
  OAR_ENFORCE(x.rank() > 0, InvalidArgument, "unbind: x must have rank >= 1, got shape []");
  const int a = wrap_axis(axis, x.rank(), "unbind");
  std::vector<DenseTensor> parts;
  parts.reserve(x.dims()[a]);
  for (int64_t i = 0; i < x.dims()[a]; ++i) parts.push_back(SelectView(x, a, i));
  return parts;
}

// Note [Bit-cast views]: the same bytes as another dtype. Equal element sizes keep shape,
// strides and offset; otherwise the last dim (contiguous: stride 1, or size 1) is split or
// merged by the size ratio, and every other stride and the offset are rescaled, which
// needs them divisible when the new element is wider.
DenseTensor ViewDtypeView(const DenseTensor& x, DataType dtype) {
  OAR_ENFORCE(dtype != DataType::UNDEFINED, InvalidType, "view: dtype must be a defined dtype");
  const int64_t in = static_cast<int64_t>(size_of(x.dtype()));
  const int64_t out = static_cast<int64_t>(size_of(dtype));
  DenseTensor v = x;
  v.set_dtype(dtype);
  if (in == out) return v;
  const char* from = dtype_name(x.dtype());
  const char* to = dtype_name(dtype);
  const int r = x.rank();
  OAR_ENFORCE(r > 0, InvalidArgument, "view: x is 0-D; viewing its ", from, " (", in, " bytes) as ", to, " (", out,
              " bytes) needs a last dimension to resize");
  OAR_ENFORCE(x.strides()[r - 1] == 1 || x.dims()[r - 1] == 1, InvalidArgument, "view: viewing x (", from, ") as ", to,
              " needs x's last dimension contiguous "
              "(stride 1), got shape ",
              x.dims(), " and strides ", x.strides());
  Dims d = x.dims(), s = x.strides();
  int64_t offset = x.offset();
  if (in > out) {
    const int64_t k = in / out;
    d[r - 1] = times(d[r - 1], k);
    for (int i = 0; i < r - 1; ++i) s[i] = times(s[i], k);
    s[r - 1] = 1;
    offset = times(offset, k);
  } else if (x.numel() == 0) {  // no bytes are read: only the last dim must divide
    const int64_t k = out / in;
    OAR_ENFORCE(d[r - 1] % k == 0, InvalidArgument, "view: viewing x of shape ", x.dims(), " (", from, ", ", in,
                " bytes) as ", to, " (", out, " bytes) needs its last dimension divisible by ", k, ", got ", d[r - 1]);
    d[r - 1] /= k;
    s = contiguous_strides(d);
    offset /= k;
  } else {
    const int64_t k = out / in;
    OAR_ENFORCE(d[r - 1] % k == 0, InvalidArgument, "view: viewing x of shape ", x.dims(), " (", from, ", ", in,
                " bytes) as ", to, " (", out, " bytes) needs its last dimension divisible by ", k, ", got ", d[r - 1]);
    for (int i = 0; i < r - 1; ++i) {
      OAR_ENFORCE(s[i] % k == 0 || d[i] == 1, InvalidArgument, "view: viewing x (", from, ") as ", to,
                  " needs every stride but the last divisible by ", k, ", got strides ", x.strides());
      s[i] /= k;  // a size-1 dim's stride is never stepped
    }
    OAR_ENFORCE(offset % k == 0, InvalidArgument, "view: viewing x (", from, ") as ", to,
                " needs x's storage offset divisible by ", k, " elements, got ", offset);
    d[r - 1] /= k;
    s[r - 1] = 1;
    offset /= k;
  }
  v.set_view(d, s, offset);
  return v;
}

}  // namespace oar
