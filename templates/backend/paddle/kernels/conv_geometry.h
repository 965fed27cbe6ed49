// The geometry of one spatial axis of a convolution or a pooling window, as Paddle's InferMeta
// computes it (phi's UpdatePaddingAndDilation and its output sizes), and conv2d's parameters from
// the op's attributes: the one place both the kernels (conv_pool_kernels.cc) and the int8 engine
// (engine/int8_engine.cc) take them from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "{{ p }}_device.h"

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

// conv2d's parameters for an NCHW input and an OIHW filter (their dims: anything indexed by axis)
// under the op's attributes: strides, paddings (by `algorithm`) and dilations through
// axis_geometry, which also gives the output's height and width; groups at least 1.
template <typename Dims, typename Int>
{{ p }}_conv2d_params_t conv2d_params(const Dims& input, const Dims& filter, const std::vector<Int>& strides,
                                     const std::vector<Int>& paddings, const std::string& algorithm,
                                     const std::vector<Int>& dilations, int groups) {
  {{ p }}_conv2d_params_t p{};
  p.batch = input[0];
  p.in_channels = input[1];
  p.in_h = input[2];
  p.in_w = input[3];
  p.out_channels = filter[0];
  p.kernel_h = filter[2];
  p.kernel_w = filter[3];
  p.stride_h = strides[0];
  p.stride_w = strides[1];
  const AxisGeometry height = axis_geometry(p.in_h, p.kernel_h, p.stride_h, dilations[0], paddings, 0, algorithm);
  const AxisGeometry width = axis_geometry(p.in_w, p.kernel_w, p.stride_w, dilations[1], paddings, 1, algorithm);
  p.pad_top = height.pad_before;
  p.pad_left = width.pad_before;
  p.dilation_h = height.dilation;
  p.dilation_w = width.dilation;
  p.out_h = height.out;
  p.out_w = width.out;
  p.groups = groups < 1 ? 1 : groups;
  return p;
}

}  // namespace {{ p }}_kernels
