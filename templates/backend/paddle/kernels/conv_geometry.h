// The geometry of one spatial axis of a convolution or a pooling window, as Paddle's InferMeta
// computes it (phi's UpdatePaddingAndDilation and its output sizes): the one place both the
// kernels (conv_pool_kernels.cc) and the int8 engine (engine/int8_engine.cc) take it from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace {{ p }}_kernels {

struct AxisGeometry {
  int64_t pad_before = 0;  // top or left padding
  int64_t out = 0;         // the output's size along the axis
  int64_t dilation = 1;    // the dilation the op runs with
};

// `paddings`: [h, w] or [top, bottom, left, right]. SAME pads for an output of ceil(in / stride)
// and runs undilated (Paddle resets the dilation to 1, whatever the attribute says); VALID pads
// nothing. `ceil_mode` (pooling): the windows may also cover a last, partial stride.
template <typename Int>
AxisGeometry axis_geometry(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                           const std::vector<Int>& paddings, int axis, const std::string& algorithm,
                           bool ceil_mode = false) {
  AxisGeometry g;
  if (algorithm == "SAME") {
    g.out = (in + stride - 1) / stride;
    g.pad_before = std::max<int64_t>((g.out - 1) * stride + kernel - in, 0) / 2;
    return g;
  }
  int64_t after = 0;
  if (algorithm != "VALID" && !paddings.empty()) {
    g.pad_before = paddings.size() == 4 ? paddings[2 * axis] : paddings[axis];
    after = paddings.size() == 4 ? paddings[2 * axis + 1] : paddings[axis];
  }
  g.dilation = dilation;
  g.out = (in + g.pad_before + after - (dilation * (kernel - 1) + 1) + (ceil_mode ? stride - 1 : 0)) / stride + 1;
  return g;
}

}  // namespace {{ p }}_kernels
