// The sample device's 2-D convolution and pooling kernels (float32 and float64):
// conv2d (im2col + GEMM over a chunk of images per group), conv2d_transpose (its input
// gradient: GEMM + col2im), conv2d_grad_filter, max_pool2d(_with_index), max_pool_index_grad,
// avg_pool2d, avg_pool_grad. Channels-last tensors are read and written through
// permuted views and computed channels first.
#include <algorithm>
#include <cmath>

#include "kernels.h"

namespace sample {
namespace {

bool channels_last(Call& c, const std::string& fmt) {
  if (fmt == "NCHW" || fmt == "AnyLayout") return false;
  if (fmt == "NHWC") return true;
  // Declined, not refused: Oar runs the CPU kernel instead (Note [Declined plugin kernels]).
  c.fail(OAR_ERROR_UNIMPLEMENTED, "data_format must be 'NCHW' or 'NHWC', got '" + fmt + "'");
}

/// `v` (4-D, channels last when `last`) seen as NCHW: the same memory, dims and strides permuted.
View as_nchw(const View& v, bool last) {
  if (!last || v.ndim() != 4) return v;
  View o = v;
  o.dims = {v.dims[0], v.dims[3], v.dims[1], v.dims[2]};
  o.strides = {v.strides[0], v.strides[3], v.strides[1], v.strides[2]};
  return o;
}

/// Writes the contiguous NCHW array `src` into `out` (an NCHW view of any strides).
template <typename T>
void store(const T* src, const View& out) {
  if (out.contiguous()) {
    std::copy(src, src + out.numel(), out.ptr<T>());
    return;
  }
  T* o = out.ptr<T>();
  for_rows<1>(out.dims, {out.strides}, [&](int64_t n, std::array<int64_t, 1> off, std::array<int64_t, 1> s) {
    for (int64_t i = 0; i < n; ++i) o[off[0] + i * s[0]] = *src++;
  });
}

/// Two spatial values from a 1- or 2-value attribute.
void pair(Call& c, const std::vector<int64_t>& v, const char* what, int64_t out[2]) {
  if (v.size() != 1 && v.size() != 2)
    c.fail(OAR_ERROR_INVALID_ARGUMENT, std::string(what) + " must have 1 or 2 values, got " + dims_str(v));
  out[0] = v[0];
  out[1] = v.size() == 2 ? v[1] : v[0];
}

/// The top and left paddings of a 1-, 2- or 4-value paddings attribute.
void pads(Call& c, const std::vector<int64_t>& v, int64_t out[2]) {
  if (v.size() == 4) {
    out[0] = v[0];
    out[1] = v[2];
  } else {
    pair(c, v, "paddings", out);
  }
}

struct ConvGeom {
  int64_t N, C, H, W, OC, OH, OW, KH, KW, groups;
  int64_t stride[2], pad[2], dil[2];
  int64_t Cg() const { return C / groups; }
  int64_t OCg() const { return OC / groups; }
  int64_t K() const { return Cg() * KH * KW; }
};

// im2col of one image's group: col[(c, kh, kw), (oh, ow)] for channels [c0, c0 + Cg), rows
// `ld` elements apart (several images side by side make one wide GEMM).
template <typename T>
void im2col(const ConvGeom& g, const T* img, int64_t c0, T* col, int64_t ld) {
  for (int64_t c = 0; c < g.Cg(); ++c)
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        T* row = col + ((c * g.KH + kh) * g.KW + kw) * ld;
        const T* plane = img + (c0 + c) * g.H * g.W;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const int64_t ih = oh * g.stride[0] - g.pad[0] + kh * g.dil[0];
          T* r = row + oh * g.OW;
          if (ih < 0 || ih >= g.H) {
            std::fill(r, r + g.OW, T(0));
            continue;
          }
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            const int64_t iw = ow * g.stride[1] - g.pad[1] + kw * g.dil[1];
            r[ow] = iw >= 0 && iw < g.W ? plane[ih * g.W + iw] : T(0);
          }
        }
      }
}

// The adjoint of im2col: adds col (rows `ld` apart) into one image's group.
template <typename T>
void col2im(const ConvGeom& g, const T* col, int64_t c0, T* img, int64_t ld) {
  for (int64_t c = 0; c < g.Cg(); ++c)
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const T* row = col + ((c * g.KH + kh) * g.KW + kw) * ld;
        T* plane = img + (c0 + c) * g.H * g.W;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const int64_t ih = oh * g.stride[0] - g.pad[0] + kh * g.dil[0];
          if (ih < 0 || ih >= g.H) continue;
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            const int64_t iw = ow * g.stride[1] - g.pad[1] + kw * g.dil[1];
            if (iw >= 0 && iw < g.W) plane[ih * g.W + iw] += row[oh * g.OW + ow];
          }
        }
      }
}

// The geometry of conv2d(input, filter) -> out (NCHW views; the attributes from `a0`).
ConvGeom conv_geom(Call& c, const View& in, const View& filter, const View& out, size_t a0) {
  ConvGeom g;
  pair(c, c.attr_ints(a0), "strides", g.stride);
  pads(c, c.attr_ints(a0 + 1), g.pad);
  pair(c, c.attr_ints(a0 + 2), "dilations", g.dil);
  g.groups = c.attr_int(a0 + 3);
  if (in.ndim() != 4 || filter.ndim() != 4 || out.ndim() != 4)
    c.fail(OAR_ERROR_INVALID_ARGUMENT, "expects 4-D input, filter and output, got " + dims_str(in.dims) + ", " +
                                           dims_str(filter.dims) + ", " + dims_str(out.dims));
  g.N = in.dims[0], g.C = in.dims[1], g.H = in.dims[2], g.W = in.dims[3];
  g.OC = out.dims[1], g.OH = out.dims[2], g.OW = out.dims[3];
  g.KH = filter.dims[2], g.KW = filter.dims[3];
  if (g.groups < 1 || g.C % g.groups != 0 || g.OC % g.groups != 0)
    c.fail(OAR_ERROR_INVALID_ARGUMENT, "groups " + std::to_string(g.groups) + " does not divide the channels");
  return g;
}

// The convolutions run as GEMMs over several images at once: the im2col columns of a chunk
// of `nb` images side by side ([K, nb * P]), so the GEMM is nb times wider than one image's
// (LeNet's second conv: 16 x 800 x 150 instead of eight 16 x 100 x 150). The chunk keeps
// the column buffer near 4 Mi elements.
int64_t chunk_images(const ConvGeom& g) {
  const int64_t per_image = std::max<int64_t>(g.K() * g.OH * g.OW, 1);
  return std::clamp<int64_t>((int64_t{1} << 22) / per_image, 1, std::max<int64_t>(g.N, 1));
}

// The channels [c0, c0 + rows) of images [n0, n0 + nb) of an NCHW array (P pixels per
// plane) as one matrix m[r, i * P + p] (gather), and back (scatter).
struct Planes {
  int64_t n0, nb, OC, c0, rows, P;
  int64_t nchw(int64_t r, int64_t i) const { return ((n0 + i) * OC + c0 + r) * P; }
  int64_t mat(int64_t r, int64_t i) const { return (r * nb + i) * P; }
};
template <typename T>
void gather_channels(const Planes& q, const T* nchw, T* m) {
  for (int64_t r = 0; r < q.rows; ++r)
    for (int64_t i = 0; i < q.nb; ++i) std::copy_n(nchw + q.nchw(r, i), q.P, m + q.mat(r, i));
}
template <typename T>
void scatter_channels(const Planes& q, const T* m, T* nchw) {
  for (int64_t r = 0; r < q.rows; ++r)
    for (int64_t i = 0; i < q.nb; ++i) std::copy_n(m + q.mat(r, i), q.P, nchw + q.nchw(r, i));
}

template <typename T>
void conv2d(Call& c) {  // (input, filter, strides, paddings, dilations, groups, data_format)
  const bool last = channels_last(c, c.attr_str(4));
  const View in = as_nchw(c.input(0), last), filter = c.input(1), out = as_nchw(c.output(0), last);
  const ConvGeom g = conv_geom(c, in, filter, out, 0);
  if (out.numel() == 0) return;
  c.launch([in, filter, out, g] {
    const int64_t P = g.OH * g.OW, nb = chunk_images(g);
    std::vector<T> xb, wb, res, col(g.K() * nb * P), tmp(g.OCg() * nb * P);
    const T* x = contiguous_data<T>(in, &xb);
    const T* w = contiguous_data<T>(filter, &wb);
    if (!out.contiguous()) res.resize(out.numel());
    T* o = out.contiguous() ? out.ptr<T>() : res.data();
    for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
      const int64_t m = std::min(nb, g.N - n0);
      for (int64_t gr = 0; gr < g.groups; ++gr) {
        for (int64_t i = 0; i < m; ++i)
          im2col(g, x + (n0 + i) * g.C * g.H * g.W, gr * g.Cg(), col.data() + i * P, m * P);
        gemm<T>(g.OCg(), m * P, g.K(), w + gr * g.OCg() * g.K(), col.data(), tmp.data(), false);
        scatter_channels<T>({n0, m, g.OC, gr * g.OCg(), g.OCg(), P}, tmp.data(), o);
      }
    }
    if (!out.contiguous()) store(res.data(), out);
  });
}

template <typename T>
void conv2d_grad_filter(Call& c) {  // (input, filter, grad_out, strides, paddings, dilations, groups, data_format)
  const bool last = channels_last(c, c.attr_str(4));
  const View in = as_nchw(c.input(0), last), filter = c.input(1), grad = as_nchw(c.input(2), last);
  const View dw = c.output(0);
  const ConvGeom g = conv_geom(c, in, filter, grad, 0);
  if (dw.numel() == 0) return;
  c.launch([in, grad, dw, g] {
    const int64_t P = g.OH * g.OW, nb = chunk_images(g);
    std::vector<T> xb, gb, col(g.K() * nb * P), gm(g.OCg() * nb * P);
    const T* x = contiguous_data<T>(in, &xb);
    const T* gp = contiguous_data<T>(grad, &gb);
    T* d = dw.ptr<T>();
    std::fill(d, d + dw.numel(), T(0));
    for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
      const int64_t m = std::min(nb, g.N - n0);
      for (int64_t gr = 0; gr < g.groups; ++gr) {
        for (int64_t i = 0; i < m; ++i)
          im2col(g, x + (n0 + i) * g.C * g.H * g.W, gr * g.Cg(), col.data() + i * P, m * P);
        gather_channels<T>({n0, m, g.OC, gr * g.OCg(), g.OCg(), P}, gp, gm.data());
        gemm_nt<T>(g.OCg(), g.K(), m * P, gm.data(), col.data(), d + gr * g.OCg() * g.K(), true);
      }
    }
  });
}

template <typename T>
void conv2d_transpose(Call& c) {  // (x, filter, strides, paddings, output_padding, dilations, groups, data_format)
  const bool last = channels_last(c, c.attr_str(5));
  const View x = as_nchw(c.input(0), last), filter = c.input(1), out = as_nchw(c.output(0), last);
  ConvGeom g;  // the forward conv's geometry: out is its input, x its output
  pair(c, c.attr_ints(0), "strides", g.stride);
  pads(c, c.attr_ints(1), g.pad);
  pair(c, c.attr_ints(3), "dilations", g.dil);
  g.groups = c.attr_int(4);
  if (x.ndim() != 4 || filter.ndim() != 4 || out.ndim() != 4)
    c.fail(OAR_ERROR_INVALID_ARGUMENT, "expects 4-D x, filter and output");
  g.N = out.dims[0], g.C = out.dims[1], g.H = out.dims[2], g.W = out.dims[3];
  g.OC = x.dims[1], g.OH = x.dims[2], g.OW = x.dims[3];
  g.KH = filter.dims[2], g.KW = filter.dims[3];
  if (g.groups < 1 || g.C % g.groups != 0 || g.OC % g.groups != 0)
    c.fail(OAR_ERROR_INVALID_ARGUMENT, "groups " + std::to_string(g.groups) + " does not divide the channels");
  if (out.numel() == 0) return;
  c.launch([x, filter, out, g] {
    const int64_t P = g.OH * g.OW, nb = chunk_images(g);
    std::vector<T> xb, wb, col(g.K() * nb * P), xm(g.OCg() * nb * P), res(out.numel(), T(0));
    const T* xp = contiguous_data<T>(x, &xb);
    const T* w = contiguous_data<T>(filter, &wb);  // [OC (x's channels), C / groups, KH, KW]
    for (int64_t n0 = 0; n0 < g.N && P > 0 && g.K() > 0; n0 += nb) {
      const int64_t m = std::min(nb, g.N - n0);
      for (int64_t gr = 0; gr < g.groups; ++gr) {
        gather_channels<T>({n0, m, g.OC, gr * g.OCg(), g.OCg(), P}, xp, xm.data());
        gemm_tn<T>(g.K(), m * P, g.OCg(), w + gr * g.OCg() * g.K(), xm.data(), col.data(), false);
        for (int64_t i = 0; i < m; ++i)
          col2im(g, col.data() + i * P, gr * g.Cg(), res.data() + (n0 + i) * g.C * g.H * g.W, m * P);
      }
    }
    store(res.data(), out);
  });
}

// ---- pooling

struct PoolGeom {
  int64_t planes, H, W, OH, OW, k[2], stride[2], pad[2];
  bool adaptive, exclusive;
  void window(int i, int64_t o, int64_t* b, int64_t* e) const {
    const int64_t in = i == 0 ? H : W, out = i == 0 ? OH : OW;
    if (adaptive) {
      *b = o * in / out;
      *e = ((o + 1) * in + out - 1) / out;
    } else {
      const int64_t s = o * stride[i] - pad[i];
      *b = std::max<int64_t>(s, 0);
      *e = std::min(s + k[i], in);
    }
  }
};

PoolGeom pool_geom(Call& c, const View& x, const View& out, bool adaptive, bool exclusive) {
  PoolGeom g;
  pair(c, c.attr_ints(0), "kernel_size", g.k);
  pair(c, c.attr_ints(1), "strides", g.stride);
  pads(c, c.attr_ints(2), g.pad);
  g.adaptive = adaptive;
  g.exclusive = exclusive;
  if (x.ndim() != 4 || out.ndim() != 4) c.fail(OAR_ERROR_UNIMPLEMENTED, "expects 4-D x and output");
  g.planes = x.dims[0] * x.dims[1];
  g.H = x.dims[2], g.W = x.dims[3], g.OH = out.dims[2], g.OW = out.dims[3];
  return g;
}

template <typename T, bool kMask>
void max_pool(Call& c) {  // (x, kernel_size, strides, paddings, ceil_mode, adaptive, data_format) -> out[, mask]
  const bool last = channels_last(c, c.attr_str(5));
  const View x = as_nchw(c.input(0), last), out = as_nchw(c.output(0), last);
  View mask;
  if (kMask) mask = as_nchw(c.output(1), last);
  const PoolGeom g = pool_geom(c, x, out, c.attr_bool(4), true);
  if (out.numel() == 0) return;
  c.launch([x, out, mask, g] {
    std::vector<T> xb, res;
    std::vector<int32_t> idx;
    const T* xp = contiguous_data<T>(x, &xb);
    // Written in place when contiguous (the usual case), else through a buffer.
    if (!out.contiguous()) res.resize(out.numel());
    if (kMask && !mask.contiguous()) idx.resize(out.numel());
    T* o = out.contiguous() ? out.ptr<T>() : res.data();
    int32_t* mi = !kMask ? nullptr : mask.contiguous() ? mask.ptr<int32_t>() : idx.data();
    // The windows of each output row and column, once per call.
    std::vector<int64_t> rb(g.OH), re(g.OH), cb(g.OW), ce(g.OW);
    for (int64_t oh = 0; oh < g.OH; ++oh) g.window(0, oh, &rb[oh], &re[oh]);
    for (int64_t ow = 0; ow < g.OW; ++ow) g.window(1, ow, &cb[ow], &ce[ow]);
    int64_t j = 0;
    for (int64_t p = 0; p < g.planes; ++p) {
      const T* src = xp + p * g.H * g.W;
      for (int64_t oh = 0; oh < g.OH; ++oh)
        for (int64_t ow = 0; ow < g.OW; ++ow, ++j) {
          const int64_t hb = rb[oh], he = re[oh], wb = cb[ow], we = ce[ow];
          if (hb >= he || wb >= we) {  // a window without input elements
            o[j] = T(0);
            if (kMask) mi[j] = -1;
            continue;
          }
          int64_t arg = hb * g.W + wb;
          T best = src[arg];
          for (int64_t h = hb; h < he; ++h)
            for (int64_t w = wb; w < we; ++w)
              if (src[h * g.W + w] > best) best = src[arg = h * g.W + w];  // the first maximum
          o[j] = best;
          if (kMask) mi[j] = static_cast<int32_t>(arg);
        }
    }
    if (!out.contiguous()) store(res.data(), out);
    if (kMask && !mask.contiguous()) store(idx.data(), mask);
  });
}

template <typename T>
void max_pool_index_grad(Call& c) {  // (x, mask, grad_out, data_format)
  const bool last = channels_last(c, c.attr_str(0));
  const View mask = as_nchw(c.input(1), last), grad = as_nchw(c.input(2), last);
  const View dx = as_nchw(c.output(0), last);
  if (dx.numel() == 0) return;
  if (dx.ndim() != 4 || mask.ndim() != 4) c.fail(OAR_ERROR_UNIMPLEMENTED, "expects 4-D x and mask");
  c.launch([mask, grad, dx] {
    std::vector<int32_t> mb;
    std::vector<T> gb, res(dx.numel(), T(0));
    const int32_t* m = contiguous_data<int32_t>(mask, &mb);
    const T* gp = contiguous_data<T>(grad, &gb);
    const int64_t planes = dx.dims[0] * dx.dims[1], is = dx.dims[2] * dx.dims[3], os = mask.dims[2] * mask.dims[3];
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t j = 0; j < os; ++j) {
        const int64_t k = m[p * os + j];
        if (k >= 0 && k < is) res[p * is + k] += gp[p * os + j];
      }
    store(res.data(), dx);
  });
}

template <typename T>
void avg_pool(Call& c) {  // (x, kernel_size, strides, paddings, ceil_mode, exclusive, adaptive, data_format)
  const bool last = channels_last(c, c.attr_str(6));
  const View x = as_nchw(c.input(0), last), out = as_nchw(c.output(0), last);
  const PoolGeom g = pool_geom(c, x, out, c.attr_bool(5), c.attr_bool(4));
  if (out.numel() == 0) return;
  c.launch([x, out, g] {
    std::vector<T> xb, res(out.numel());
    const T* xp = contiguous_data<T>(x, &xb);
    int64_t j = 0;
    for (int64_t p = 0; p < g.planes; ++p)
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        int64_t hb, he;
        g.window(0, oh, &hb, &he);
        for (int64_t ow = 0; ow < g.OW; ++ow, ++j) {
          int64_t wb, we;
          g.window(1, ow, &wb, &we);
          T sum = 0;
          for (int64_t h = hb; h < he; ++h)
            for (int64_t w = wb; w < we; ++w) sum += xp[(p * g.H + h) * g.W + w];
          const int64_t n = g.exclusive || g.adaptive ? std::max<int64_t>(he - hb, 0) * std::max<int64_t>(we - wb, 0)
                                                      : g.k[0] * g.k[1];
          res[j] = n > 0 ? sum / static_cast<T>(n) : T(0);
        }
      }
    store(res.data(), out);
  });
}

template <typename T>
void avg_pool_grad(Call& c) {  // (x, grad_out, kernel_size, strides, paddings, ceil_mode, exclusive, adaptive, fmt)
  const bool last = channels_last(c, c.attr_str(6));
  const View x = as_nchw(c.input(0), last), grad = as_nchw(c.input(1), last), dx = as_nchw(c.output(0), last);
  const PoolGeom g = pool_geom(c, x, grad, c.attr_bool(5), c.attr_bool(4));
  if (dx.numel() == 0) return;
  c.launch([grad, dx, g] {
    std::vector<T> gb, res(dx.numel(), T(0));
    const T* gp = contiguous_data<T>(grad, &gb);
    int64_t j = 0;
    for (int64_t p = 0; p < g.planes; ++p)
      for (int64_t oh = 0; oh < g.OH; ++oh) {
        int64_t hb, he;
        g.window(0, oh, &hb, &he);
        for (int64_t ow = 0; ow < g.OW; ++ow, ++j) {
          int64_t wb, we;
          g.window(1, ow, &wb, &we);
          const int64_t n = g.exclusive || g.adaptive ? std::max<int64_t>(he - hb, 0) * std::max<int64_t>(we - wb, 0)
                                                      : g.k[0] * g.k[1];
          if (n <= 0) continue;
          const T v = gp[j] / static_cast<T>(n);
          for (int64_t h = hb; h < he; ++h)
            for (int64_t w = wb; w < we; ++w) res[(p * g.H + h) * g.W + w] += v;
        }
      }
    store(res.data(), dx);
  });
}

template <void (*Body)(Call&)>
struct K {
  template <const char* Op>
  static OAR_Status fn(const OAR_KernelApi* api, OAR_KernelContext ctx) {
    return run_kernel(api, ctx, Op, Body);
  }
};

constexpr char k_conv2d[] = "conv2d", k_conv2d_grad_filter[] = "conv2d_grad_filter",
               k_conv2d_transpose[] = "conv2d_transpose", k_max_pool2d[] = "max_pool2d",
               k_max_pool2d_with_index[] = "max_pool2d_with_index", k_max_pool_index_grad[] = "max_pool_index_grad",
               k_avg_pool2d[] = "avg_pool2d", k_avg_pool_grad[] = "avg_pool_grad";

template <typename T>
void add_kernels(OAR_DataType t, std::vector<KernelDef>* d) {
  d->push_back({"conv2d", t,
                "(Tensor input, Tensor filter, int[] strides, int[] paddings, int[] dilations, int groups, "
                "str data_format) -> Tensor(out)",
                K<conv2d<T>>::template fn<k_conv2d>});
  d->push_back({"conv2d_grad_filter", t,
                "(Tensor input, Tensor filter, Tensor grad_out, int[] strides, int[] paddings, int[] dilations, "
                "int groups, str data_format) -> Tensor(filter_grad)",
                K<conv2d_grad_filter<T>>::template fn<k_conv2d_grad_filter>});
  d->push_back({"conv2d_transpose", t,
                "(Tensor x, Tensor filter, int[] strides, int[] paddings, int[] output_padding, int[] dilations, "
                "int groups, str data_format) -> Tensor(out)",
                K<conv2d_transpose<T>>::template fn<k_conv2d_transpose>});
  d->push_back({"max_pool2d_with_index", t,
                "(Tensor x, int[] kernel_size, int[] strides, int[] paddings, bool ceil_mode, bool adaptive, "
                "str data_format) -> Tensor(out), Tensor(mask)",
                K<max_pool<T, true>>::template fn<k_max_pool2d_with_index>});
  d->push_back({"max_pool2d", t,
                "(Tensor x, int[] kernel_size, int[] strides, int[] paddings, bool ceil_mode, bool adaptive, "
                "str data_format) -> Tensor(out)",
                K<max_pool<T, false>>::template fn<k_max_pool2d>});
  d->push_back({"max_pool_index_grad", t, "(Tensor x, Tensor mask, Tensor grad_out, str data_format) -> Tensor(x_grad)",
                K<max_pool_index_grad<T>>::template fn<k_max_pool_index_grad>});
  d->push_back({"avg_pool2d", t,
                "(Tensor x, int[] kernel_size, int[] strides, int[] paddings, bool ceil_mode, bool exclusive, "
                "bool adaptive, str data_format) -> Tensor(out)",
                K<avg_pool<T>>::template fn<k_avg_pool2d>});
  d->push_back({"avg_pool_grad", t,
                "(Tensor x, Tensor grad_out, int[] kernel_size, int[] strides, int[] paddings, bool ceil_mode, "
                "bool exclusive, bool adaptive, str data_format) -> Tensor(x_grad)",
                K<avg_pool_grad<T>>::template fn<k_avg_pool_grad>});
}

}  // namespace

void cnn_kernels(std::vector<KernelDef>* d) {
  add_kernels<float>(OAR_DTYPE_FLOAT32, d);
  add_kernels<double>(OAR_DTYPE_FLOAT64, d);
}

}  // namespace sample
