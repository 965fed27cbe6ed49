// {{ NAME }} device library on OpenCL: the compute ops it implements, as launches of the
// kernels in ops.cl (built once per device, at the first op, and cached), and the ops it
// does not implement (unimplemented.cc). Every op is queued on its stream and returns;
// argument errors are returned at once.
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "opencl_device.h"

namespace {{ p }} {
namespace {

// ops.cl, embedded at configure time (device/CMakeLists.txt).
const char kSource[] =
#include "ops_cl.inc"
    ;

struct Program {
  std::mutex mu;  // building, the kernel cache, and setting a kernel's arguments
  cl_program program = nullptr;
  cl_int status = CL_SUCCESS;
  bool built = false;
  std::map<std::string, cl_kernel> kernels;
};

Program& program_of(int device) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<Program>> programs;
  std::lock_guard<std::mutex> lock(mu);
  auto& p = programs[device];
  if (!p) p.reset(new Program());
  return *p;
}

struct TypeSpec {
  const char* suffix;
  const char* type;
  const char* acc;
  bool is_float;
};

// The program text: the untyped part, then the typed part once per dtype the device has.
std::string program_source(bool fp64) {
  const std::string text(kSource);
  // the markers on lines of their own (the file's header comment names them too)
  const std::string open = "\nTYPED_BEGIN\n", close = "\nTYPED_END\n";
  const size_t begin = text.find(open), end = text.find(close);
  const std::string typed = text.substr(begin + open.size(), end - begin - open.size());
  std::vector<TypeSpec> types;
  types.push_back(TypeSpec{"u8", "uchar", "long", false});
  types.push_back(TypeSpec{"i8", "char", "long", false});
  types.push_back(TypeSpec{"i16", "short", "long", false});
  types.push_back(TypeSpec{"i32", "int", "long", false});
  types.push_back(TypeSpec{"i64", "long", "long", false});
  types.push_back(TypeSpec{"f32", "float", fp64 ? "double" : "float", true});
  if (fp64) types.push_back(TypeSpec{"f64", "double", "double", true});
  std::string src = fp64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#define HAS_FP64 1\n" : "";
  src += text.substr(0, begin + 1);
  for (const TypeSpec& t : types) {
    src += std::string("#define T ") + t.type + "\n#define SFX " + t.suffix + "\n#define ACC " + t.acc + "\n";
    if (t.is_float) src += "#define IS_FLOAT 1\n";
    src += typed;
    src += "#undef T\n#undef SFX\n#undef ACC\n#undef IS_FLOAT\n";
  }
  return src + text.substr(end + close.size());
}

void build(int device, Program& p) {
  p.built = true;
  const DeviceInfo& info = device_info(device);
  const std::string src = program_source(info.fp64);
  const char* text = src.c_str();
  p.program = clCreateProgramWithSource(info.context, 1, &text, nullptr, &p.status);
  if (p.status != CL_SUCCESS) return;
  // Correctly rounded division and square root: the results the frameworks' CPU kernels give.
  p.status = clBuildProgram(p.program, 1, &info.id, "-cl-fp32-correctly-rounded-divide-sqrt", nullptr, nullptr);
  if (p.status != CL_SUCCESS) {
    size_t size = 0;
    clGetProgramBuildInfo(p.program, info.id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
    std::string log(size, '\0');
    clGetProgramBuildInfo(p.program, info.id, CL_PROGRAM_BUILD_LOG, size, &log[0], nullptr);
    std::fprintf(stderr, "[{{ NAME }}] building the OpenCL kernels failed on device %d:\n%s\n", device, log.c_str());
  }
}

// ---- arguments ----------------------------------------------------------------------

// An element-wise index space with two operands' strides (ops.cl's strided_t).
struct Strided {
  cl_long ndim = 0;
  cl_long dims[{{ NAME }}_MAX_DIMS] = {0};
  cl_long a[{{ NAME }}_MAX_DIMS] = {0};
  cl_long b[{{ NAME }}_MAX_DIMS] = {0};
};

// ops.cl's reduction_t.
struct Reduction {
  cl_long kept_ndim = 0;
  cl_long kept_dims[{{ NAME }}_MAX_DIMS] = {0};
  cl_long kept_strides[{{ NAME }}_MAX_DIMS] = {0};
  cl_long red_ndim = 0;
  cl_long red_dims[{{ NAME }}_MAX_DIMS] = {0};
  cl_long red_strides[{{ NAME }}_MAX_DIMS] = {0};
};

// A scalar in the op's dtype, converted as the host-backed device converts it.
struct Scalar {
  unsigned char bytes[8] = {0};
  size_t size = 0;
};

template <typename T>
Scalar scalar_of(T v) {
  Scalar s;
  std::memcpy(s.bytes, &v, sizeof(T));
  s.size = sizeof(T);
  return s;
}

Scalar make_scalar({{ p }}_dtype_t dtype, double v) {
  switch (dtype) {
    case {{ NAME }}_BOOL: return scalar_of<cl_uchar>(v != 0);
    case {{ NAME }}_UINT8: return scalar_of(static_cast<cl_uchar>(v));
    case {{ NAME }}_INT8: return scalar_of(static_cast<cl_char>(v));
    case {{ NAME }}_INT16: return scalar_of(static_cast<cl_short>(v));
    case {{ NAME }}_INT32: return scalar_of(static_cast<cl_int>(v));
    case {{ NAME }}_INT64: return scalar_of(static_cast<cl_long>(v));
    case {{ NAME }}_FLOAT32: return scalar_of(static_cast<cl_float>(v));
    case {{ NAME }}_FLOAT64: return scalar_of(v);
    case {{ NAME }}_FLOAT16: case {{ NAME }}_BFLOAT16: break;  // no kernels (suffix)
  }
  return Scalar();
}

cl_int set_arg(cl_kernel k, cl_uint& i, const BufferRef& r) {
  cl_int err = clSetKernelArg(k, i++, sizeof(cl_mem), &r.buffer);
  const cl_ulong offset = r.offset;
  return err != CL_SUCCESS ? err : clSetKernelArg(k, i++, sizeof(offset), &offset);
}
cl_int set_arg(cl_kernel k, cl_uint& i, const Scalar& s) { return clSetKernelArg(k, i++, s.size, s.bytes); }
template <typename T>
cl_int set_arg(cl_kernel k, cl_uint& i, const T& v) {
  return clSetKernelArg(k, i++, sizeof(T), &v);
}

// The kernel-name suffix of `dtype` on `device`; NULL when the device lacks it, with the
// error detail saying so (the conformance suite counts the dtype unimplemented, by design).
const char* suffix({{ p }}_dtype_t dtype, int device) {
  switch (dtype) {
    case {{ NAME }}_BOOL: case {{ NAME }}_UINT8: return "u8";
    case {{ NAME }}_INT8: return "i8";
    case {{ NAME }}_INT16: return "i16";
    case {{ NAME }}_INT32: return "i32";
    case {{ NAME }}_INT64: return "i64";
    case {{ NAME }}_FLOAT32: return "f32";
    case {{ NAME }}_FLOAT64:
      if (device_info(device).fp64) return "f64";
      core::unimplemented("float64 (the device has no cl_khr_fp64)", "the OpenCL flavour");
      return nullptr;
    case {{ NAME }}_FLOAT16:
      // By design on a device without cl_khr_fp16 (pocl on x86-64); on one with it, not yet written
      // (kernels storing through vload_half/vstore_half_rte and computing in float).
      core::unimplemented(device_info(device).fp16 ? "float16 (not yet, though the device has cl_khr_fp16)"
                                                   : "float16 (the device has no cl_khr_fp16)",
                          "the OpenCL flavour");
      return nullptr;
    case {{ NAME }}_BFLOAT16: break;
  }
  core::unimplemented(core::dtype_name(dtype), "the OpenCL flavour");
  return nullptr;
}

bool is_float({{ p }}_dtype_t dtype) { return dtype == {{ NAME }}_FLOAT32 || dtype == {{ NAME }}_FLOAT64; }

// Queues kernel `name` (`op` in errors) over `global` work items (one or two dimensions) on
// `stream`; args are set in order, a BufferRef as buffer and offset.
template <typename... Args>
{{ p }}_status_t launch({{ p }}_stream_t stream, const char* op, const std::string& name, size_t global0,
                       size_t global1, const Args&... args) {
  if (global0 == 0 || global1 == 0) return {{ NAME }}_OK;
  cl_command_queue q = queue_of(stream);
  if (q == nullptr) return {{ NAME }}_ERROR_INVALID_VALUE;
  KernelLock lock(stream_device(stream), name);
  if (lock.status() != CL_SUCCESS) return from_cl(lock.status(), op);
  cl_uint i = 0;
  cl_int err = CL_SUCCESS;
  ((err = err == CL_SUCCESS ? set_arg(lock.kernel(), i, args) : err), ...);
  const size_t global[2] = {global0, global1};
  if (err == CL_SUCCESS) err = clEnqueueNDRangeKernel(q, lock.kernel(), global1 > 1 ? 2 : 1, nullptr, global, nullptr,
                                                      0, nullptr, nullptr);
  if (err == CL_SUCCESS) err = clFlush(q);
  return from_cl(err, op);
}

// Resolves each (pointer, ref) pair against the stream's device.
bool resolve_all({{ p }}_stream_t stream, std::initializer_list<std::pair<const void*, BufferRef*>> pairs) {
  const int device = stream_device(stream);
  for (const auto& p : pairs)
    if (!resolve(p.first, device, p.second)) return false;
  return true;
}

int64_t numel_of(const {{ p }}_shape_t& s) {
  int64_t n = 1;
  for (int i = 0; i < s.ndim; ++i) n *= s.dims[i];
  return n;
}

bool valid_shape(const {{ p }}_shape_t* s) { return s && s->ndim >= 0 && s->ndim <= {{ NAME }}_MAX_DIMS; }

void contiguous_strides(const {{ p }}_shape_t& s, cl_long* strides) {
  cl_long stride = 1;
  for (int d = s.ndim - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= s.dims[d];
  }
}

// Strides of `src` in the index space of `dst` (trailing-aligned), 0 where it broadcasts.
bool broadcast_strides(const {{ p }}_shape_t& src, const {{ p }}_shape_t& dst, cl_long* strides) {
  if (src.ndim > dst.ndim) return false;
  for (int d = 0; d < dst.ndim; ++d) strides[d] = 0;
  cl_long stride = 1;
  for (int i = src.ndim - 1, j = dst.ndim - 1; i >= 0; --i, --j) {
    if (src.dims[i] == dst.dims[j]) strides[j] = src.dims[i] == 1 ? 0 : stride;
    else if (src.dims[i] != 1) return false;
    stride *= src.dims[i];
  }
  return true;
}

// A space over `dims` (0-d: one element).
Strided space_of(const {{ p }}_shape_t& dims) {
  Strided s;
  s.ndim = dims.ndim == 0 ? 1 : dims.ndim;
  s.dims[0] = 1;
  for (int d = 0; d < dims.ndim; ++d) s.dims[d] = dims.dims[d];
  return s;
}

{{ p }}_status_t strided_copy_space({{ p }}_stream_t stream, const char* op, const char* sfx, const BufferRef& src,
                                   const BufferRef& dst, const Strided& space, int64_t total) {
  return launch(stream, op, std::string("strided_copy_") + sfx, static_cast<size_t>(total), 1, src, dst, space);
}

// x (x_shape) reduced over the axes of `mask`, into out: the kept axes in order.
{{ p }}_status_t reduce_masked({{ p }}_stream_t s, const char* op_name, {{ p }}_reduce_op_t op, {{ p }}_dtype_t dtype,
                              const void* x, const {{ p }}_shape_t& x_shape, const std::vector<bool>& mask,
                              void* out) {
  const char* sfx = suffix(dtype, stream_device(s));
  if (!sfx) return {{ NAME }}_ERROR_UNSUPPORTED;
  cl_long strides[{{ NAME }}_MAX_DIMS];
  contiguous_strides(x_shape, strides);
  Reduction r;
  int64_t out_numel = 1, count = 1;
  for (int d = 0; d < x_shape.ndim; ++d) {
    if (mask[d]) {
      r.red_dims[r.red_ndim] = x_shape.dims[d];
      r.red_strides[r.red_ndim++] = strides[d];
      count *= x_shape.dims[d];
    } else {
      r.kept_dims[r.kept_ndim] = x_shape.dims[d];
      r.kept_strides[r.kept_ndim++] = strides[d];
      out_numel *= x_shape.dims[d];
    }
  }
  BufferRef rx, ro;
  if (out_numel == 0) return {{ NAME }}_OK;
  if (!resolve_all(s, {% raw %}{{x, &rx}, {out, &ro}}{% endraw %})) return {{ NAME }}_ERROR_INVALID_VALUE;
  return launch(s, op_name, std::string("reduce_") + sfx, static_cast<size_t>(out_numel), 1, rx, ro, r,
                static_cast<cl_int>(op), static_cast<cl_long>(count), static_cast<cl_int>(dtype == {{ NAME }}_BOOL));
}

}  // namespace

KernelLock::KernelLock(int device, const std::string& name) : device_(device) {
  Program& p = program_of(device);
  p.mu.lock();
  if (!p.built) build(device, p);
  status_ = p.status;
  if (status_ != CL_SUCCESS) return;
  auto it = p.kernels.find(name);
  if (it == p.kernels.end()) {
    cl_kernel k = clCreateKernel(p.program, name.c_str(), &status_);
    if (status_ != CL_SUCCESS) return;
    it = p.kernels.emplace(name, k).first;
  }
  kernel_ = it->second;
}

KernelLock::~KernelLock() { program_of(device_).mu.unlock(); }

}  // namespace {{ p }}

using namespace {{ p }};  // NOLINT

extern "C" {

{{ p }}_status_t {{ p }}_fill({{ p }}_stream_t s, {{ p }}_dtype_t dtype, void* out, int64_t numel, double value) {
  if (numel < 0) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (numel == 0) return {{ NAME }}_OK;
  const char* sfx = suffix(dtype, stream_device(s));
  if (!sfx) return {{ NAME }}_ERROR_UNSUPPORTED;
  BufferRef ro;
  if (!resolve_all(s, {% raw %}{{out, &ro}}{% endraw %})) return {{ NAME }}_ERROR_INVALID_VALUE;
  return launch(s, "fill", std::string("fill_") + sfx, static_cast<size_t>(numel), 1, ro, make_scalar(dtype, value));
}

{{ p }}_status_t {{ p }}_cast({{ p }}_stream_t s, {{ p }}_dtype_t in_dtype, const void* x, {{ p }}_dtype_t out_dtype,
                       void* out, int64_t numel) {
  if (numel < 0) return {{ NAME }}_ERROR_INVALID_VALUE;
  const int device = stream_device(s);
  const char* sfx = suffix(in_dtype, device);
  if (!sfx || !suffix(out_dtype, device)) return {{ NAME }}_ERROR_UNSUPPORTED;
  if (numel == 0) return {{ NAME }}_OK;
  BufferRef rx, ro;
  if (!resolve_all(s, {% raw %}{{x, &rx}, {out, &ro}}{% endraw %})) return {{ NAME }}_ERROR_INVALID_VALUE;
  return launch(s, "cast", std::string("cast_") + sfx, static_cast<size_t>(numel), 1, rx, ro,
                static_cast<cl_int>(out_dtype));
}

{{ p }}_status_t {{ p }}_scale({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, void* out, int64_t numel,
                        double scale, double bias, int bias_after_scale) {
  if (numel < 0) return {{ NAME }}_ERROR_INVALID_VALUE;
  const char* sfx = suffix(dtype, stream_device(s));
  if (!sfx) return {{ NAME }}_ERROR_UNSUPPORTED;
  if (numel == 0) return {{ NAME }}_OK;
  BufferRef rx, ro;
  if (!resolve_all(s, {% raw %}{{x, &rx}, {out, &ro}}{% endraw %})) return {{ NAME }}_ERROR_INVALID_VALUE;
  return launch(s, "scale", std::string("scale_") + sfx, static_cast<size_t>(numel), 1, rx, ro,
                make_scalar(dtype, scale), make_scalar(dtype, bias), static_cast<cl_int>(bias_after_scale != 0),
                static_cast<cl_int>(dtype == {{ NAME }}_BOOL));
}

{{ p }}_status_t {{ p }}_binary({{ p }}_stream_t s, {{ p }}_binary_op_t op, {{ p }}_dtype_t dtype, const void* x,
                         const {{ p }}_shape_t* x_shape, const void* y, const {{ p }}_shape_t* y_shape, void* out,
                         const {{ p }}_shape_t* out_shape) {
  if (!valid_shape(x_shape) || !valid_shape(y_shape) || !valid_shape(out_shape)) return {{ NAME }}_ERROR_INVALID_VALUE;
  const char* sfx = suffix(dtype, stream_device(s));
  if (!sfx) return {{ NAME }}_ERROR_UNSUPPORTED;
  Strided space = space_of(*out_shape);
  if (out_shape->ndim > 0 &&
      (!broadcast_strides(*x_shape, *out_shape, space.a) || !broadcast_strides(*y_shape, *out_shape, space.b)))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  const int64_t total = numel_of(*out_shape);
  if (total == 0) return {{ NAME }}_OK;
  BufferRef rx, ry, ro;
  if (!resolve_all(s, {% raw %}{{x, &rx}, {y, &ry}, {out, &ro}}{% endraw %})) return {{ NAME }}_ERROR_INVALID_VALUE;
  return launch(s, "binary", std::string("binary_") + sfx, static_cast<size_t>(total), 1, rx, ry, ro, space,
                static_cast<cl_int>(op), static_cast<cl_int>(dtype == {{ NAME }}_BOOL));
}

{{ p }}_status_t {{ p }}_unary({{ p }}_stream_t s, {{ p }}_unary_op_t op, {{ p }}_dtype_t dtype, const void* x,
                        void* out, int64_t numel) {
  const char* sfx = suffix(dtype, stream_device(s));
  if (!sfx || !is_float(dtype)) return {{ NAME }}_ERROR_UNSUPPORTED;
  if (numel <= 0) return numel < 0 ? {{ NAME }}_ERROR_INVALID_VALUE : {{ NAME }}_OK;
  BufferRef rx, ro;
  if (!resolve_all(s, {% raw %}{{x, &rx}, {out, &ro}}{% endraw %})) return {{ NAME }}_ERROR_INVALID_VALUE;
  return launch(s, "unary", std::string("unary_") + sfx, static_cast<size_t>(numel), 1, rx, ro,
                static_cast<cl_int>(op));
}

{{ p }}_status_t {{ p }}_unary_grad({{ p }}_stream_t s, {{ p }}_unary_op_t op, {{ p }}_dtype_t dtype, const void* out,
                             const void* dout, void* dx, int64_t numel) {
  const char* sfx = suffix(dtype, stream_device(s));
  if (!sfx || !is_float(dtype) || op == {{ NAME }}_UNARY_ABS) return {{ NAME }}_ERROR_UNSUPPORTED;  // abs needs x
  if (numel <= 0) return numel < 0 ? {{ NAME }}_ERROR_INVALID_VALUE : {{ NAME }}_OK;
  BufferRef ry, rdy, rdx;
  if (!resolve_all(s, {% raw %}{{out, &ry}, {dout, &rdy}, {dx, &rdx}}{% endraw %})) return {{ NAME }}_ERROR_INVALID_VALUE;
  return launch(s, "unary_grad", std::string("unary_grad_") + sfx, static_cast<size_t>(numel), 1, ry, rdy, rdx,
                static_cast<cl_int>(op));
}

{{ p }}_status_t {{ p }}_reduce({{ p }}_stream_t s, {{ p }}_reduce_op_t op, {{ p }}_dtype_t dtype, const void* x,
                         const {{ p }}_shape_t* x_shape, const int* reduce_mask, void* out) {
  if (!valid_shape(x_shape) || (!reduce_mask && x_shape->ndim > 0)) return {{ NAME }}_ERROR_INVALID_VALUE;
  std::vector<bool> mask(x_shape->ndim);
  for (int d = 0; d < x_shape->ndim; ++d) mask[d] = reduce_mask[d] != 0;
  return reduce_masked(s, "reduce", op, dtype, x, *x_shape, mask, out);
}

{{ p }}_status_t {{ p }}_sum_to_shape({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                               const {{ p }}_shape_t* x_shape, void* out, const {{ p }}_shape_t* out_shape) {
  if (!valid_shape(x_shape) || !valid_shape(out_shape) || out_shape->ndim > x_shape->ndim)
    return {{ NAME }}_ERROR_INVALID_VALUE;
  // reduced: the leading axes out_shape lacks, and the axes where it is 1 and x is not
  std::vector<bool> mask(x_shape->ndim, true);
  const int lead = x_shape->ndim - out_shape->ndim;
  for (int j = 0; j < out_shape->ndim; ++j) {
    const int64_t o = out_shape->dims[j], i = x_shape->dims[lead + j];
    if (o != i && o != 1) return {{ NAME }}_ERROR_INVALID_VALUE;
    mask[lead + j] = o != i;
  }
  return reduce_masked(s, "sum_to_shape", {{ NAME }}_REDUCE_SUM, dtype, x, *x_shape, mask, out);
}

{{ p }}_status_t {{ p }}_broadcast({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                            const {{ p }}_shape_t* x_shape, void* out, const {{ p }}_shape_t* out_shape) {
  if (!valid_shape(x_shape) || !valid_shape(out_shape)) return {{ NAME }}_ERROR_INVALID_VALUE;
  const char* sfx = suffix(dtype, stream_device(s));
  if (!sfx) return {{ NAME }}_ERROR_UNSUPPORTED;
  Strided space = space_of(*out_shape);
  if (out_shape->ndim > 0) {
    if (!broadcast_strides(*x_shape, *out_shape, space.a)) return {{ NAME }}_ERROR_INVALID_VALUE;
    contiguous_strides(*out_shape, space.b);
  }
  const int64_t total = numel_of(*out_shape);
  if (total == 0) return {{ NAME }}_OK;
  BufferRef rx, ro;
  if (!resolve_all(s, {% raw %}{{x, &rx}, {out, &ro}}{% endraw %})) return {{ NAME }}_ERROR_INVALID_VALUE;
  return strided_copy_space(s, "broadcast", sfx, rx, ro, space, total);
}

{{ p }}_status_t {{ p }}_transpose({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                            const {{ p }}_shape_t* x_shape, const int* perm, void* out) {
  if (!valid_shape(x_shape) || !perm) return {{ NAME }}_ERROR_INVALID_VALUE;
  const char* sfx = suffix(dtype, stream_device(s));
  if (!sfx) return {{ NAME }}_ERROR_UNSUPPORTED;
  const int nd = x_shape->ndim;
  cl_long in_strides[{{ NAME }}_MAX_DIMS];
  contiguous_strides(*x_shape, in_strides);
  {{ p }}_shape_t out_shape;
  out_shape.ndim = nd;
  std::vector<bool> seen(nd, false);
  for (int d = 0; d < nd; ++d) {
    if (perm[d] < 0 || perm[d] >= nd || seen[perm[d]]) return {{ NAME }}_ERROR_INVALID_VALUE;
    seen[perm[d]] = true;
    out_shape.dims[d] = x_shape->dims[perm[d]];
  }
  Strided space = space_of(out_shape);
  for (int d = 0; d < nd; ++d) space.a[d] = in_strides[perm[d]];
  if (nd > 0) contiguous_strides(out_shape, space.b);
  const int64_t total = numel_of(out_shape);
  if (total == 0) return {{ NAME }}_OK;
  BufferRef rx, ro;
  if (!resolve_all(s, {% raw %}{{x, &rx}, {out, &ro}}{% endraw %})) return {{ NAME }}_ERROR_INVALID_VALUE;
  return strided_copy_space(s, "transpose", sfx, rx, ro, space, total);
}

{{ p }}_status_t {{ p }}_strided_copy({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const {{ p }}_shape_t* dims,
                               const void* src, const int64_t* src_strides, void* dst, const int64_t* dst_strides) {
  if (!valid_shape(dims) || (dims->ndim > 0 && (!src_strides || !dst_strides))) return {{ NAME }}_ERROR_INVALID_VALUE;
  const char* sfx = suffix(dtype, stream_device(s));
  if (!sfx) return {{ NAME }}_ERROR_UNSUPPORTED;
  Strided space = space_of(*dims);
  for (int d = 0; d < dims->ndim; ++d) {
    space.a[d] = src_strides[d];
    space.b[d] = dst_strides[d];
  }
  const int64_t total = numel_of(*dims);
  if (total == 0) return {{ NAME }}_OK;
  BufferRef rs, rd;
  if (!resolve_all(s, {% raw %}{{src, &rs}, {dst, &rd}}{% endraw %})) return {{ NAME }}_ERROR_INVALID_VALUE;
  return strided_copy_space(s, "strided_copy", sfx, rs, rd, space, total);
}

{{ p }}_status_t {{ p }}_copy_2d({{ p }}_stream_t s, void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch,
                          int64_t width_bytes, int64_t rows) {
  if (width_bytes < 0 || rows < 0) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (width_bytes == 0 || rows == 0) return {{ NAME }}_OK;
  BufferRef rs, rd;
  if (!resolve_all(s, {% raw %}{{src, &rs}, {dst, &rd}}{% endraw %})) return {{ NAME }}_ERROR_INVALID_VALUE;
  Strided space;
  space.ndim = 2;
  space.dims[0] = rows, space.dims[1] = width_bytes;
  space.a[0] = src_pitch, space.a[1] = 1;
  space.b[0] = dst_pitch, space.b[1] = 1;
  return strided_copy_space(s, "copy_2d", "u8", rs, rd, space, rows * width_bytes);
}

{{ p }}_status_t {{ p }}_gemm({{ p }}_stream_t s, {{ p }}_dtype_t dtype, int trans_a, int trans_b, int64_t m, int64_t n,
                       int64_t k, float alpha, const void* a, int64_t lda, const void* b, int64_t ldb, float beta, void* c,
                       int64_t ldc) {
  if (m < 0 || n < 0 || k < 0) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (dtype != {{ NAME }}_FLOAT32)
    return core::unimplemented((std::string("gemm of ") + core::dtype_name(dtype)).c_str(), "the OpenCL flavour");
  if (m == 0 || n == 0) return {{ NAME }}_OK;
  BufferRef ra, rb, rc;
  if (!resolve_all(s, {% raw %}{{c, &rc}}{% endraw %})) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (k > 0 && !resolve_all(s, {% raw %}{{a, &ra}, {b, &rb}}{% endraw %})) return {{ NAME }}_ERROR_INVALID_VALUE;
  if (k == 0) ra = rb = rc;  // not read
  return launch(s, "gemm", "gemm_f32", static_cast<size_t>(n), static_cast<size_t>(m), ra, rb, rc,
                static_cast<cl_long>(m), static_cast<cl_long>(n), static_cast<cl_long>(k), static_cast<cl_long>(lda),
                static_cast<cl_long>(ldb), static_cast<cl_long>(ldc), static_cast<cl_int>(trans_a != 0),
                static_cast<cl_int>(trans_b != 0), alpha, beta);
}

{{ p }}_status_t {{ p }}_sgd_update({{ p }}_stream_t s, const float* param, const float* grad, const float* lr,
                             float* param_out, int64_t numel) {
  if (numel <= 0) return numel < 0 ? {{ NAME }}_ERROR_INVALID_VALUE : {{ NAME }}_OK;
  BufferRef rp, rg, rl, ro;
  if (!resolve_all(s, {% raw %}{{param, &rp}, {grad, &rg}, {lr, &rl}, {param_out, &ro}}{% endraw %}))
    return {{ NAME }}_ERROR_INVALID_VALUE;
  return launch(s, "sgd_update", "sgd_update_f32", static_cast<size_t>(numel), 1, rp, rg, rl, ro);
}

void {{ p }}_debug_kernel(const char*) {}  // the host-backed device's op dumps; not kept here

}  // extern "C"
