// {{ NAME }} device library: 2-D convolution (im2col + GEMM) and pooling
// (the device side of paddle/kernels/conv_pool_kernels.cc).
//
// Host-backed reference implementations, declared in {{ p }}_device.h; shared
// helpers (dispatch, broadcasting, GEMM, submission) are in internal.h. A vendor
// replaces each body with a launch on the device; signatures stay.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "debug.h"
#include "internal.h"

namespace {{ p }} {
namespace {

// ---- convolution helpers ----------------------------------------------------
// The output columns [lo, hi) of one kernel offset whose input column ox*sw - pl + j*dw falls
// inside the row: outside them im2col reads padding.
void valid_columns(const {{ p }}_conv2d_params_t& p, int64_t j, int64_t* lo, int64_t* hi) {
  const int64_t offset = j * p.dilation_w - p.pad_left;  // input column of ox = 0
  *lo = offset >= 0 ? 0 : (-offset + p.stride_w - 1) / p.stride_w;
  *hi = offset >= p.in_w ? 0 : std::min(p.out_w, (p.in_w - 1 - offset) / p.stride_w + 1);
  *lo = std::min(*lo, *hi);
}

// dst[0, n) = src[0, n) for the short runs of im2col (a row of a small image: LeNet's are 10 to
// 28 floats, about 280 000 runs a training step), with fixed-size copies the compiler inlines,
// the last one overlapping, instead of a call to memmove per run (10 % of the samples of LeNet's
// step on the device).
inline void copy_run(const float* src, float* dst, int64_t n) {
  if (n >= 8) {
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) std::memcpy(dst + k, src + k, 8 * sizeof(float));
    if (k < n) std::memcpy(dst + n - 8, src + n - 8, 8 * sizeof(float));
  } else if (n >= 4) {
    std::memcpy(dst, src, 4 * sizeof(float));
    std::memcpy(dst + n - 4, src + n - 4, 4 * sizeof(float));
  } else {
    for (int64_t k = 0; k < n; ++k) dst[k] = src[k];
  }
}

// col[(c*kh + i)*kw + j][oy*ow + ox] = x[c][oy*sh - pt + i*dh][ox*sw - pl + j*dw], rows `ld`
// floats apart (ld > oh*ow when several images share one column matrix). Rows are copied as
// runs: with stride 1 a run is a contiguous piece of an input row.
void im2col(const float* x, int64_t channels, const {{ p }}_conv2d_params_t& p, float* col, int64_t ld) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < p.kernel_h; ++i)
      for (int64_t j = 0; j < p.kernel_w; ++j) {
        float* dst = col + ((c * p.kernel_h + i) * p.kernel_w + j) * ld;
        const float* src = x + c * p.in_h * p.in_w;
        int64_t lo, hi;
        valid_columns(p, j, &lo, &hi);
        const int64_t first = lo * p.stride_w - p.pad_left + j * p.dilation_w;  // input column of ox = lo
        for (int64_t oy = 0; oy < p.out_h; ++oy) {
          const int64_t iy = oy * p.stride_h - p.pad_top + i * p.dilation_h;
          float* drow = dst + oy * p.out_w;
          if (iy < 0 || iy >= p.in_h) {
            std::fill(drow, drow + p.out_w, 0.f);
            continue;
          }
          const float* srow = src + iy * p.in_w + first;
          for (int64_t ox = 0; ox < lo; ++ox) drow[ox] = 0.f;
          if (p.stride_w == 1) {
            copy_run(srow, drow + lo, hi - lo);
          } else {
            for (int64_t ox = lo; ox < hi; ++ox) drow[ox] = srow[(ox - lo) * p.stride_w];
          }
          for (int64_t ox = hi; ox < p.out_w; ++ox) drow[ox] = 0.f;
        }
      }
}

// The adjoint of im2col: accumulates columns back into x (which must be zeroed).
void col2im(const float* col, int64_t ld, int64_t channels, const {{ p }}_conv2d_params_t& p, float* x) {
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < p.kernel_h; ++i)
      for (int64_t j = 0; j < p.kernel_w; ++j) {
        const float* src = col + ((c * p.kernel_h + i) * p.kernel_w + j) * ld;
        float* dst = x + c * p.in_h * p.in_w;
        int64_t lo, hi;
        valid_columns(p, j, &lo, &hi);
        const int64_t first = lo * p.stride_w - p.pad_left + j * p.dilation_w;
        for (int64_t oy = 0; oy < p.out_h; ++oy) {
          const int64_t iy = oy * p.stride_h - p.pad_top + i * p.dilation_h;
          if (iy < 0 || iy >= p.in_h) continue;
          const float* srow = src + oy * p.out_w;
          float* drow = dst + iy * p.in_w + first;
          for (int64_t ox = lo; ox < hi; ++ox) drow[(ox - lo) * p.stride_w] += srow[ox];
        }
      }
}

// One input channel per group (depthwise, MobileNet's 3x3 layers): im2col + GEMM would
// multiply a 1-row matrix per channel, so each kernel tap is added to a whole output
// row at once (a loop the compiler vectorizes), clipped to the taps inside the input.
// Per output the taps are summed in the same order (kernel row, then column).
void depthwise_forward(const {{ p }}_conv2d_params_t& p, int64_t og, const float* x, const float* w,
                       float* y) {
  const int64_t khw = p.kernel_h * p.kernel_w, ohw = p.out_h * p.out_w, sw = p.stride_w;
  parallel_for(p.batch * p.out_channels, 2 * ohw * khw, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / p.out_channels, oc = t % p.out_channels;
      const float* src = x + (n * p.in_channels + oc / og) * p.in_h * p.in_w;
      const float* wk = w + oc * khw;
      float* dst = y + t * ohw;
      std::fill(dst, dst + ohw, 0.f);
      for (int64_t oy = 0; oy < p.out_h; ++oy) {
        float* __restrict drow = dst + oy * p.out_w;
        for (int64_t i = 0; i < p.kernel_h; ++i) {
          const int64_t iy = oy * p.stride_h - p.pad_top + i * p.dilation_h;
          if (iy < 0 || iy >= p.in_h) continue;
          const float* __restrict srow = src + iy * p.in_w;
          for (int64_t j = 0; j < p.kernel_w; ++j) {
            const float wv = wk[i * p.kernel_w + j];
            const int64_t off = j * p.dilation_w - p.pad_left;  // ix = ox * sw + off
            int64_t lo, hi;
            valid_columns(p, j, &lo, &hi);
            if (sw == 1) {
              for (int64_t ox = lo; ox < hi; ++ox) drow[ox] += wv * srow[ox + off];
            } else {
              for (int64_t ox = lo; ox < hi; ++ox) drow[ox] += wv * srow[ox * sw + off];
            }
          }
        }
      }
    }
  });
}

// Images whose columns share one im2col matrix (and so one GEMM): per-image GEMMs of small
// images (LeNet's 28x28) are too small to run fast. Bounded to 16 MB of columns.
int64_t images_per_gemm(int64_t ckk, int64_t ohw, int64_t batch) {
  constexpr int64_t kColumnFloats = int64_t{1} << 22;
  return std::clamp<int64_t>(kColumnFloats / std::max<int64_t>(1, ckk * ohw), 1, std::max<int64_t>(batch, 1));
}

// Moves `count` images' [channels, ohw] planes between NCHW (`nchw`, image stride
// `image_stride`) and the GEMM's layout [channels, count * ohw] (`rows`).
void gather_planes(const float* nchw, int64_t image_stride, int64_t count, int64_t channels, int64_t ohw,
                   float* rows) {
  parallel_for(count, channels * ohw, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      for (int64_t c = 0; c < channels; ++c)
        std::copy_n(nchw + i * image_stride + c * ohw, ohw, rows + c * count * ohw + i * ohw);
  });
}
void scatter_planes(const float* rows, int64_t count, int64_t channels, int64_t ohw, float* nchw,
                    int64_t image_stride) {
  parallel_for(count, channels * ohw, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      for (int64_t c = 0; c < channels; ++c)
        std::copy_n(rows + c * count * ohw + i * ohw, ohw, nchw + i * image_stride + c * ohw);
  });
}

// A 1x1 convolution with stride 1 and no padding reads its input as the im2col matrix.
bool is_pointwise(const {{ p }}_conv2d_params_t& p) {
  return p.kernel_h == 1 && p.kernel_w == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_top == 0 &&
         p.pad_left == 0 && p.out_h == p.in_h && p.out_w == p.in_w;
}

// Pooling window [start, end) of output position `o` along one axis.
void pool_window(int64_t o, int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad,
                 bool adaptive, int64_t* start, int64_t* end) {
  if (adaptive) {
    *start = (o * in) / out;
    *end = ((o + 1) * in + out - 1) / out;
    return;
  }
  *start = o * stride - pad;
  *end = *start + k;
}

// The input window of output (oy, ox), clipped to the input, and the divisor
// average pooling uses (with or without the padded cells).
struct PoolWindow {
  int64_t y0, y1, x0, x1, count;
};

PoolWindow pool_window_2d(const {{ p }}_pool2d_params_t& p, int64_t oy, int64_t ox) {
  PoolWindow w;
  pool_window(oy, p.in_h, p.out_h, p.kernel_h, p.stride_h, p.pad_top, p.adaptive, &w.y0, &w.y1);
  pool_window(ox, p.in_w, p.out_w, p.kernel_w, p.stride_w, p.pad_left, p.adaptive, &w.x0, &w.x1);
  const int64_t full = (w.y1 - w.y0) * (w.x1 - w.x0);
  w.y0 = std::max<int64_t>(w.y0, 0);
  w.x0 = std::max<int64_t>(w.x0, 0);
  w.y1 = std::min(w.y1, p.in_h);
  w.x1 = std::min(w.x1, p.in_w);
  w.count = (p.exclusive || p.adaptive) ? (w.y1 - w.y0) * (w.x1 - w.x0) : full;
  return w;
}


// ---- float32 bodies (the 16-bit dtypes run through them: FloatOperands) -------

void conv_forward(const {{ p }}_conv2d_params_t* p, const float* x, const float* w, float* y) {
  const int64_t cg = p->in_channels / p->groups, og = p->out_channels / p->groups;
  const int64_t ckk = cg * p->kernel_h * p->kernel_w, ohw = p->out_h * p->out_w;
  const int64_t in_image = p->in_channels * p->in_h * p->in_w, out_image = p->out_channels * ohw;
  if (cg == 1 && p->groups > 1) {  // (one input channel and no groups, LeNet's first layer, is a GEMM)
    depthwise_forward(*p, og, x, w, y);
  } else if (is_pointwise(*p)) {
    for (int64_t n = 0; n < p->batch; ++n)
      for (int64_t g = 0; g < p->groups; ++g)
        gemm(false, false, og, ohw, ckk, 1.f, w + g * og * ckk, ckk, x + n * in_image + g * cg * ohw, ohw, 0.f,
             y + n * out_image + g * og * ohw, ohw);
  } else {
    // Y_g[og, images*ohw] = W_g[og, ckk] * col[ckk, images*ohw], a batch of images at a time
    const int64_t per = images_per_gemm(ckk, ohw, p->batch);
    float* col = scratch(Scratch::kConvColumns, static_cast<size_t>(ckk * per * ohw));
    float* rows = scratch(Scratch::kConvRows, static_cast<size_t>(og * per * ohw));
    for (int64_t n0 = 0; n0 < p->batch; n0 += per) {
      const int64_t count = std::min(per, p->batch - n0), ld = count * ohw;
      for (int64_t g = 0; g < p->groups; ++g) {
        parallel_for(count, 2 * ckk * ohw, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i)
            im2col(x + (n0 + i) * in_image + g * cg * p->in_h * p->in_w, cg, *p, col + i * ohw, ld);
        });
        gemm(false, false, og, ld, ckk, 1.f, w + g * og * ckk, ckk, col, ld, 0.f, rows, ld);
        scatter_planes(rows, count, og, ohw, y + n0 * out_image + g * og * ohw, out_image);
      }
    }
  }
}

void conv_backward(const {{ p }}_conv2d_params_t* p, const float* x, const float* w, const float* dy, float* dx,
                   float* dw) {
  const int64_t cg = p->in_channels / p->groups, og = p->out_channels / p->groups;
  const int64_t ckk = cg * p->kernel_h * p->kernel_w, ohw = p->out_h * p->out_w;
  const int64_t in_plane = p->in_h * p->in_w, in_image = p->in_channels * in_plane;
  const int64_t out_image = p->out_channels * ohw;
  // A batch of images at a time, as in the forward pass: dY_g as [og, images*ohw].
  const int64_t per = images_per_gemm(ckk, ohw, p->batch);
  float* col = scratch(Scratch::kConvColumns, static_cast<size_t>(ckk * per * ohw));
  float* rows = scratch(Scratch::kConvRows, static_cast<size_t>(og * per * ohw));
  if (dw) std::fill(dw, dw + p->out_channels * ckk, 0.f);
  if (dx) std::fill(dx, dx + p->batch * in_image, 0.f);
  for (int64_t n0 = 0; n0 < p->batch; n0 += per) {
    const int64_t count = std::min(per, p->batch - n0), ld = count * ohw;
    for (int64_t g = 0; g < p->groups; ++g) {
      gather_planes(dy + n0 * out_image + g * og * ohw, out_image, count, og, ohw, rows);
      if (dw) {
        parallel_for(count, 2 * ckk * ohw, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i)
            im2col(x + (n0 + i) * in_image + g * cg * in_plane, cg, *p, col + i * ohw, ld);
        });
        // dW[og, ckk] += dY[og, images*ohw] * col^T
        gemm(false, true, og, ckk, ld, 1.f, rows, ld, col, ld, 1.f, dw + g * og * ckk, ckk);
      }
      if (dx) {
        // dcol[ckk, images*ohw] = W^T[ckk, og] * dY[og, images*ohw], then back into each image
        gemm(true, false, ckk, ld, og, 1.f, w + g * og * ckk, ckk, rows, ld, 0.f, col, ld);
        parallel_for(count, 2 * ckk * ohw, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i)
            col2im(col + i * ohw, ld, cg, *p, dx + (n0 + i) * in_image + g * cg * in_plane);
        });
      }
    }
  }
}

}  // namespace

// An int8 convolution through the float32 one, whose packed GEMM is several times faster on a CPU
// than integer loops without int8 dot-product instructions, and exact: an int8 product is an
// integer of at most 2^14, so every partial sum of at most kExactTerms of them is an integer of
// at most 2^24, which float32 holds exactly whatever order the GEMM adds in. A longer sum (more
// input channels x kernel cells) runs as convolutions over input-channel chunks of at most
// kExactTerms terms, whose exact results are added in int32.
constexpr int64_t kExactTerms = int64_t{1} << 10;  // 2^10 * 2^7 * 2^7 = 2^24

bool conv2d_int8_through_float(const {{ p }}_conv2d_params_t& p, const int8_t* x, const int8_t* w, int32_t* y) {
  const int64_t cells = p.kernel_h * p.kernel_w, cg = p.in_channels / p.groups;
  const int64_t chunk = cg * cells <= kExactTerms ? cg : kExactTerms / cells;
  if (chunk == 0 || (chunk < cg && p.groups > 1)) return false;  // (grouped chunks: the integer loops)
  const int64_t plane = p.in_h * p.in_w, outputs = p.batch * p.out_channels * p.out_h * p.out_w;
  float* xf = scratch(Scratch::kInt8Input, static_cast<size_t>(p.batch * chunk * p.groups * plane));
  float* wf = scratch(Scratch::kInt8Weight, static_cast<size_t>(p.out_channels * chunk * cells));
  float* yf = scratch(Scratch::kInt8Sums, static_cast<size_t>(outputs));
  for (int64_t c0 = 0; c0 < cg; c0 += chunk) {
    const int64_t cc = std::min(chunk, cg - c0);
    {{ p }}_conv2d_params_t part = p;
    part.in_channels = cc * p.groups;  // (chunk == cg where there are groups)
    // the chunk's input channels of every image, and their weights, as float32
    for (int64_t n = 0; n < p.batch; ++n)
      std::copy(x + (n * p.in_channels + c0) * plane, x + (n * p.in_channels + c0 + cc * p.groups) * plane,
                xf + n * cc * p.groups * plane);
    for (int64_t o = 0; o < p.out_channels; ++o)
      std::copy(w + (o * cg + c0) * cells, w + (o * cg + c0 + cc) * cells, wf + o * cc * cells);
    conv_forward(&part, xf, wf, yf);
    if (c0 == 0) {
      for (int64_t i = 0; i < outputs; ++i) y[i] = static_cast<int32_t>(yf[i]);
    } else {
      for (int64_t i = 0; i < outputs; ++i) y[i] += static_cast<int32_t>(yf[i]);
    }
  }
  return true;
}

namespace {

// Calls y_plane[oy * out_w + ox] = f(x_plane, window) for every output of every (image, channel)
// plane, the planes across the threads.
template <typename In, typename Out, typename F>
void each_window(const {{ p }}_pool2d_params_t* p, const In* x, Out* y, F&& f) {
  parallel_for(p->batch * p->channels, p->out_h * p->out_w * p->kernel_h * p->kernel_w, [&](int64_t begin, int64_t end) {
    for (int64_t nc = begin; nc < end; ++nc) {
      const In* src = x + nc * p->in_h * p->in_w;
      Out* dst = y + nc * p->out_h * p->out_w;
      for (int64_t oy = 0; oy < p->out_h; ++oy)
        for (int64_t ox = 0; ox < p->out_w; ++ox) dst[oy * p->out_w + ox] = f(src, pool_window_2d(*p, oy, ox));
    }
  });
}

// T: float, or int8_t for max pooling (an int8 engine's: the maximum of int8 values is one of them)
template <typename T>
void pool_forward(const {{ p }}_pool2d_params_t* p, const T* x, T* y) {
  each_window(p, x, y, [p](const T* src, const PoolWindow& w) {
    float acc = p->is_max ? -std::numeric_limits<float>::infinity() : 0.f;
    for (int64_t iy = w.y0; iy < w.y1; ++iy)
      for (int64_t ix = w.x0; ix < w.x1; ++ix) {
        const float v = static_cast<float>(src[iy * p->in_w + ix]);
        acc = p->is_max ? std::max(acc, v) : acc + v;
      }
    if (!p->is_max) acc = w.count > 0 ? acc / w.count : 0.f;
    if (std::is_same<T, int8_t>::value) acc = std::max(acc, -128.f);  // (a window of padding alone)
    return static_cast<T>(acc);
  });
}

// Average pooling of a quantized tensor: each window's integers summed in int32 (exact), then
// rescaled once to float, as requantize does a convolution's sums.
void avg_pool_int8(const {{ p }}_pool2d_params_t* p, const int8_t* x, double step, float* y) {
  each_window(p, x, y, [p, step](const int8_t* src, const PoolWindow& w) {
    int32_t sum = 0;
    for (int64_t iy = w.y0; iy < w.y1; ++iy)
      for (int64_t ix = w.x0; ix < w.x1; ++ix) sum += src[iy * p->in_w + ix];
    return w.count > 0 ? static_cast<float>(sum * step / static_cast<double>(w.count)) : 0.f;
  });
}

void pool_backward(const {{ p }}_pool2d_params_t* p, const float* x, const float* y, const float* dy, float* dx) {
  std::fill(dx, dx + p->batch * p->channels * p->in_h * p->in_w, 0.f);
  for (int64_t nc = 0; nc < p->batch * p->channels; ++nc) {
    const float* src = x + nc * p->in_h * p->in_w;
    const float* out = y + nc * p->out_h * p->out_w;
    const float* gout = dy + nc * p->out_h * p->out_w;
    float* gin = dx + nc * p->in_h * p->in_w;
    for (int64_t oy = 0; oy < p->out_h; ++oy)
      for (int64_t ox = 0; ox < p->out_w; ++ox) {
        const PoolWindow w = pool_window_2d(*p, oy, ox);
        const float g = gout[oy * p->out_w + ox];
        if (p->is_max) {
          // The gradient goes to the first maximum, as Paddle's CPU kernel does.
          const float m = out[oy * p->out_w + ox];
          bool done = false;
          for (int64_t iy = w.y0; iy < w.y1 && !done; ++iy)
            for (int64_t ix = w.x0; ix < w.x1 && !done; ++ix)
              if (src[iy * p->in_w + ix] == m) {
                gin[iy * p->in_w + ix] += g;
                done = true;
              }
        } else if (w.count > 0) {
          for (int64_t iy = w.y0; iy < w.y1; ++iy)
            for (int64_t ix = w.x0; ix < w.x1; ++ix) gin[iy * p->in_w + ix] += g / w.count;
        }
      }
  }
}

// Max pooling with indices where every window lies inside the input (no padding, no dilation,
// no ceil-mode overhang) and is K x K with stride S, both known at compile time (the common 2x2/2
// and 3x3/2 pooling of CNNs; LeNet's two poolings took 15 % of its step through the general
// loop): per output row, the winners as 32-bit offsets in their windows in a loop of unrolled
// selects the compiler vectorizes, then the int64 indices. Same rule as the general loop: the
// first maximum wins and the last NaN.
template <int K, int S, typename T>
void max_pool_inside(const T* src, T* dst, int64_t* idx, int64_t oh, int64_t ow, int64_t iw) {
  constexpr int64_t kChunk = 256;
  int32_t offset[kChunk];
  for (int64_t oy = 0; oy < oh; ++oy) {
    const T* row = src + oy * S * iw;
    for (int64_t ox0 = 0; ox0 < ow; ox0 += kChunk) {
      const int64_t n = std::min(kChunk, ow - ox0);
      const T* window = row + ox0 * S;
      T* out = dst + oy * ow + ox0;
      for (int64_t o = 0; o < n; ++o) {
        T best = window[o * S];
        int32_t at = 0;
        for (int i = 0; i < K; ++i) {
          for (int j = 0; j < K; ++j) {
            const T v = window[o * S + i * iw + j];
            const bool take = v > best || v != v;
            best = take ? v : best;
            at = take ? static_cast<int32_t>(i * iw + j) : at;
          }
        }
        out[o] = best;
        offset[o] = at;
      }
      int64_t* where = idx + oy * ow + ox0;
      const int64_t first = oy * S * iw + ox0 * S;
      for (int64_t o = 0; o < n; ++o) where[o] = first + o * S + offset[o];
    }
  }
}

}  // namespace
}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_conv2d_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                 const {{ p }}_conv2d_params_t* p, const void* x, const void* w, void* y) {
  debug::Trace trace_("conv2d_forward");
  if (p) trace_.attr("stride", p->stride_h).attr("pad", p->pad_top).attr("dilation", p->dilation_h).attr("groups", p->groups).tensor("x", x, dtype, {p->batch, p->in_channels, p->in_h, p->in_w}).tensor("w", w, dtype, {p->out_channels, p->in_channels / std::max<int64_t>(p->groups, 1), p->kernel_h, p->kernel_w}).tensor("y", y, dtype, {p->batch, p->out_channels, p->out_h, p->out_w});
  if (!valid_conv(p)) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (!float_body_dtype(dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  keep(p);
  {{ NAME }}_DEVICE_POINTERS(s, x, w, y);
  {{ NAME }}_SUBMIT(s, {
    const int64_t ohw = p->out_h * p->out_w;
    FloatOperands f(dtype);
    const float* fx = f.in(x, p->batch * p->in_channels * p->in_h * p->in_w);
    const float* fw = f.in(w, p->out_channels * (p->in_channels / p->groups) * p->kernel_h * p->kernel_w);
    float* fy = f.out(y, p->batch * p->out_channels * ohw);
    conv_forward(p, fx, fw, fy);
    if (debug::settings().autocompare) {
      std::vector<float> want(static_cast<size_t>(p->batch * p->out_channels * ohw));
      reference::conv2d_forward(*p, fx, fw, want.data());
      debug::compare("conv2d_forward", "y", fy, want.data(), static_cast<int64_t>(want.size()),
                     debug::dims_string({p->batch, p->out_channels, p->out_h, p->out_w}));
    }
    f.finish();
  });
}

{{ p }}_status_t {{ p }}_conv2d_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                  const {{ p }}_conv2d_params_t* p, const void* x, const void* w,
                                  const void* dy, void* dx, void* dw) {
  debug::Trace trace_("conv2d_backward");
  if (p) trace_.attr("groups", p->groups).tensor("dy", dy, dtype, {p->batch, p->out_channels, p->out_h, p->out_w});
  if (!valid_conv(p)) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (!float_body_dtype(dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  keep(p);
  {{ NAME }}_DEVICE_POINTERS(s, x, w, dy, dx, dw);
  {{ NAME }}_SUBMIT(s, {
    const int64_t x_numel = p->batch * p->in_channels * p->in_h * p->in_w;
    const int64_t w_numel = p->out_channels * (p->in_channels / p->groups) * p->kernel_h * p->kernel_w;
    FloatOperands f(dtype);
    const float* fdy = f.in(dy, p->batch * p->out_channels * p->out_h * p->out_w);
    const float* fx = dw ? f.in(x, x_numel) : nullptr;  // (each gradient reads only what it needs)
    const float* fw = dx ? f.in(w, w_numel) : nullptr;
    conv_backward(p, fx, fw, fdy, f.out(dx, x_numel), f.out(dw, w_numel));
    f.finish();
  });
}

{{ p }}_status_t {{ p }}_pool2d_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                 const {{ p }}_pool2d_params_t* p, const void* x, void* y) {
  debug::Trace trace_("pool2d_forward");
  if (p) trace_.attr("max", p->is_max).attr("kernel", p->kernel_h).attr("stride", p->stride_h).tensor("x", x, dtype, {p->batch, p->channels, p->in_h, p->in_w}).tensor("y", y, dtype, {p->batch, p->channels, p->out_h, p->out_w});
  if (!p) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (dtype == {{ NAME }}_INT8) {
    if (!p->is_max) return {{ NAME }}_ERROR_UNSUPPORTED;  // an int8 average needs a rounding: avg_pool2d_int8
    keep(p);
    {{ NAME }}_DEVICE_POINTERS(s, x, y);
    {{ NAME }}_SUBMIT(s, { pool_forward(p, static_cast<const int8_t*>(x), static_cast<int8_t*>(y)); });
  }
  if (!float_body_dtype(dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  keep(p);
  {{ NAME }}_DEVICE_POINTERS(s, x, y);
  {{ NAME }}_SUBMIT(s, {
    FloatOperands f(dtype);
    const int64_t planes = p->batch * p->channels;
    pool_forward(p, f.in(x, planes * p->in_h * p->in_w), f.out(y, planes * p->out_h * p->out_w));
    f.finish();
  });
}

{{ p }}_status_t {{ p }}_avg_pool2d_int8({{ p }}_stream_t s, const {{ p }}_pool2d_params_t* p, const int8_t* x,
                                  const float* x_scale, int32_t qmax, float* y) {
  debug::Trace trace_("avg_pool2d_int8");
  if (p) trace_.attr("kernel", p->kernel_h).attr("stride", p->stride_h).attr("adaptive", p->adaptive).tensor("x", x, {{ NAME }}_INT8, {p->batch, p->channels, p->in_h, p->in_w}).tensor("y", y, {{ NAME }}_FLOAT32, {p->batch, p->channels, p->out_h, p->out_w});
  if (!p || p->is_max || qmax < 1 || qmax > 127 || !x_scale) return {{ NAME }}_ERROR_INVALID_VALUE;
  // (the sum of a window of int8 values fits int32 below 2^24 cells)
  if (!p->adaptive && p->kernel_h * p->kernel_w >= (int64_t{1} << 24)) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (p->adaptive && p->in_h * p->in_w >= (int64_t{1} << 24)) return {{ NAME }}_ERROR_INVALID_VALUE;
  keep(p);
  {{ NAME }}_DEVICE_POINTERS(s, x, x_scale, y);
  {{ NAME }}_SUBMIT(s, { avg_pool_int8(p, x, static_cast<double>(*x_scale) / qmax, y); });
}

{{ p }}_status_t {{ p }}_pool2d_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                  const {{ p }}_pool2d_params_t* p, const void* x, const void* y,
                                  const void* dy, void* dx) {
  debug::Trace trace_("pool2d_backward");
  if (p) trace_.attr("max", p->is_max).tensor("dy", dy, dtype, {p->batch, p->channels, p->out_h, p->out_w}).tensor("dx", dx, dtype, {p->batch, p->channels, p->in_h, p->in_w});
  if (!p) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (!float_body_dtype(dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  keep(p);
  {{ NAME }}_DEVICE_POINTERS(s, x, y, dy, dx);
  {{ NAME }}_SUBMIT(s, {
    FloatOperands f(dtype);
    const int64_t in_numel = p->batch * p->channels * p->in_h * p->in_w;
    const int64_t out_numel = p->batch * p->channels * p->out_h * p->out_w;
    pool_backward(p, f.in(x, in_numel), f.in(y, out_numel), f.in(dy, out_numel), f.out(dx, in_numel));
    f.finish();
  });
}

{{ p }}_status_t {{ p }}_max_pool2d_with_indices_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                                  const {{ p }}_pool2d_params_t* p,
                                                  int64_t dilation_h, int64_t dilation_w,
                                                  const void* x, void* y, int64_t* indices) {
  debug::Trace trace_("max_pool2d_with_indices_forward");
  if (p) trace_.attr("kernel", p->kernel_h).attr("stride", p->stride_h).attr("dilation", dilation_h).tensor("x", x, dtype, {p->batch, p->channels, p->in_h, p->in_w}).tensor("y", y, dtype, {p->batch, p->channels, p->out_h, p->out_w});
  if (!p || dilation_h < 1 || dilation_w < 1) return {{ NAME }}_ERROR_INVALID_VALUE;
  keep(p);
  {{ NAME }}_DEVICE_POINTERS(s, x, y, indices);
  {{ NAME }}_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      const {{ p }}_pool2d_params_t q = *p;
      const T* xs = as<T>(x);
      T* ys = as<T>(y);
      int64_t* is = indices;
      parallel_for(q.batch * q.channels, q.out_h * q.out_w * q.kernel_h * q.kernel_w, [=](int64_t begin, int64_t end) {
        // The parameters as locals of this body: read through the closure, every store to
        // indices (int64_t, as they are) would make the compiler load them again.
        const int64_t kh = q.kernel_h, kw = q.kernel_w, sh = q.stride_h, sw = q.stride_w, pt = q.pad_top;
        const int64_t pl = q.pad_left, ih = q.in_h, iw = q.in_w, oh = q.out_h, ow = q.out_w;
        const int64_t dh = dilation_h, dw = dilation_w;
        // Window taps [first, last) that fall inside the input, for a window starting at `start`
        // (a division only for dilated windows: it would cost more than the window itself).
        auto first_tap = [](int64_t start, int64_t d) { return start >= 0 ? 0 : d == 1 ? -start : (d - 1 - start) / d; };
        auto last_tap = [](int64_t start, int64_t k, int64_t n, int64_t d) {
          return std::min(k, d == 1 ? n - start : (n - start + d - 1) / d);
        };
        const bool inside = dh == 1 && dw == 1 && pt == 0 && pl == 0 && (oh - 1) * sh + kh <= ih &&
                            (ow - 1) * sw + kw <= iw && kh == kw && sh == sw;
        const auto pool_inside = kh == 2 && sh == 2   ? max_pool_inside<2, 2, T>
                                 : kh == 3 && sh == 2 ? max_pool_inside<3, 2, T>
                                 : kh == 3 && sh == 3 ? max_pool_inside<3, 3, T>
                                 : kh == 3 && sh == 1 ? max_pool_inside<3, 1, T>
                                                      : nullptr;
        for (int64_t nc = begin; nc < end; ++nc) {
          const T* src = xs + nc * ih * iw;
          T* dst = ys + nc * oh * ow;
          int64_t* idx = is + nc * oh * ow;
          if (inside && pool_inside) {
            pool_inside(src, dst, idx, oh, ow, iw);
            continue;
          }
          for (int64_t oy = 0; oy < oh; ++oy) {
            const int64_t y0 = oy * sh - pt, i0 = first_tap(y0, dh), i1 = last_tap(y0, kh, ih, dh);
            for (int64_t ox = 0; ox < ow; ++ox) {
              const int64_t x0 = ox * sw - pl, j0 = first_tap(x0, dw), j1 = last_tap(x0, kw, iw, dw);
              if (i0 >= i1 || j0 >= j1) {  // a window of padding only
                dst[oy * ow + ox] = -std::numeric_limits<T>::infinity();
                idx[oy * ow + ox] = -1;
                continue;
              }
              int64_t best_at = (y0 + i0 * dh) * iw + x0 + j0 * dw;
              T best = src[best_at];
              for (int64_t i = i0; i < i1; ++i) {
                const int64_t row = (y0 + i * dh) * iw + x0;
                for (int64_t j = j0; j < j1; ++j) {
                  const int64_t at = row + j * dw;
                  const T v = src[at];
                  // The first maximum wins and the last NaN (as PyTorch's CPU kernel: `val >
                  // maxval || isnan(val)`). Selects, not branches: which tap wins is data, and
                  // mispredicted half the time.
                  const bool take = v > best || std::isnan(v);
                  best = take ? v : best;
                  best_at = take ? at : best_at;
                }
              }
              dst[oy * ow + ox] = best;
              idx[oy * ow + ox] = best_at;
            }
          }
        }
      });
    });
  });
}

{{ p }}_status_t {{ p }}_max_pool2d_with_indices_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                                   const {{ p }}_pool2d_params_t* p,
                                                   const void* dy, const int64_t* indices,
                                                   void* dx) {
  debug::Trace trace_("max_pool2d_with_indices_backward");
  if (p) trace_.tensor("dy", dy, dtype, {p->batch, p->channels, p->out_h, p->out_w}).tensor("dx", dx, dtype, {p->batch, p->channels, p->in_h, p->in_w});
  if (!p) return {{ NAME }}_ERROR_INVALID_VALUE;
  keep(p);
  {{ NAME }}_DEVICE_POINTERS(s, dy, indices, dx);
  {{ NAME }}_SUBMIT(s, {
    {{ NAME }}_REAL_OR_UNSUPPORTED(dtype, {
      const int64_t plane_in = p->in_h * p->in_w, plane_out = p->out_h * p->out_w;
      std::fill(as<T>(dx), as<T>(dx) + p->batch * p->channels * plane_in, T(0));
      for (int64_t nc = 0; nc < p->batch * p->channels; ++nc) {
        const T* g = as<T>(dy) + nc * plane_out;
        const int64_t* idx = indices + nc * plane_out;
        T* gin = as<T>(dx) + nc * plane_in;
        for (int64_t o = 0; o < plane_out; ++o) {
          if (idx[o] < 0 || idx[o] >= plane_in) {
            status_ = {{ NAME }}_ERROR_INVALID_VALUE;
            return;
          }
          gin[idx[o]] = T(gin[idx[o]] + g[o]);
        }
      }
    });
  });
}

}  // extern "C"
