// {{ NAME }} device library: the compute ops as OpenCL C kernels.
//
// ops.cc builds one program per device from this text: the part between TYPED_BEGIN and
// TYPED_END once per dtype (T its OpenCL type, SFX the kernel-name suffix, ACC the
// accumulator type), the rest once. Every tensor argument is a buffer and a byte offset
// into it (a device pointer is a position inside an allocation); index spaces and
// strides are in elements and passed by value.

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define KERNEL(name) __kernel void CAT(name, SFX)
#define AT(type, base, off) ((__global type*)((__global uchar*)(base) + (off)))

#define MAX_DIMS 9

// The index space of an element-wise op over `dims`, with two operands' strides
// (0 where an operand broadcasts).
typedef struct {
  long ndim;
  long dims[MAX_DIMS];
  long a[MAX_DIMS];
  long b[MAX_DIMS];
} strided_t;

// A reduction: the output's (kept) axes and the reduced axes, with the input's strides.
typedef struct {
  long kept_ndim;
  long kept_dims[MAX_DIMS];
  long kept_strides[MAX_DIMS];
  long red_ndim;
  long red_dims[MAX_DIMS];
  long red_strides[MAX_DIMS];
} reduction_t;

// Offsets of linear index i of the space in operands a and b.
inline void offsets(const strided_t* s, long i, long* oa, long* ob) {
  long a = 0, b = 0;
  for (long d = s->ndim - 1; d >= 0; --d) {
    const long k = i % s->dims[d];
    i /= s->dims[d];
    a += k * s->a[d];
    b += k * s->b[d];
  }
  *oa = a;
  *ob = b;
}

// op codes: {{ p }}_binary_op_t / {{ p }}_unary_op_t / {{ p }}_reduce_op_t
enum { ADD, SUB, MUL, DIV, MAX_, MIN_, EQUAL, NOT_EQUAL, LESS, GREATER };
enum { RELU, SIGMOID, TANH, EXP, SQRT, ABS, RELU_KEEP_NAN };
enum { SUM, MEAN, RMAX };

__kernel void gemm_f32(__global uchar* a_buf, ulong a_off, __global uchar* b_buf, ulong b_off,
                       __global uchar* c_buf, ulong c_off, long m, long n, long k, long lda, long ldb,
                       long ldc, int ta, int tb, float alpha, float beta) {
  const long j = get_global_id(0), i = get_global_id(1);
  if (i >= m || j >= n) return;
  __global const float* a = AT(const float, a_buf, a_off);
  __global const float* b = AT(const float, b_buf, b_off);
  __global float* c = AT(float, c_buf, c_off);
  float acc = 0.f;
  for (long p = 0; p < k; ++p) {
    const float av = ta ? a[p * lda + i] : a[i * lda + p];
    const float bv = tb ? b[j * ldb + p] : b[p * ldb + j];
    acc = fma(av, bv, acc);
  }
  // beta == 0 never reads C: it may hold anything, NaN included
  c[i * ldc + j] = beta == 0.f ? alpha * acc : alpha * acc + beta * c[i * ldc + j];
}

__kernel void sgd_update_f32(__global uchar* p_buf, ulong p_off, __global uchar* g_buf, ulong g_off,
                             __global uchar* lr_buf, ulong lr_off, __global uchar* o_buf, ulong o_off) {
  const long i = get_global_id(0);
  const float lr = AT(const float, lr_buf, lr_off)[0];
  AT(float, o_buf, o_off)[i] = AT(const float, p_buf, p_off)[i] - lr * AT(const float, g_buf, g_off)[i];
}

TYPED_BEGIN

KERNEL(fill)(__global uchar* out_buf, ulong out_off, T value) {
  AT(T, out_buf, out_off)[get_global_id(0)] = value;
}

// out = cast(x), out's dtype a {{ p }}_dtype_t code
KERNEL(cast)(__global uchar* x_buf, ulong x_off, __global uchar* o_buf, ulong o_off, int out_dtype) {
  const long i = get_global_id(0);
  const T v = AT(const T, x_buf, x_off)[i];
  switch (out_dtype) {
    case 0: AT(uchar, o_buf, o_off)[i] = v != (T)0; break;  // BOOL
    case 1: AT(int, o_buf, o_off)[i] = (int)v; break;
    case 2: AT(long, o_buf, o_off)[i] = (long)v; break;
    case 3: AT(float, o_buf, o_off)[i] = (float)v; break;
#ifdef HAS_FP64
    case 4: AT(double, o_buf, o_off)[i] = (double)v; break;
#endif
    case 5: AT(uchar, o_buf, o_off)[i] = (uchar)v; break;
    case 6: AT(char, o_buf, o_off)[i] = (char)v; break;
    case 7: AT(short, o_buf, o_off)[i] = (short)v; break;
  }
}

KERNEL(scale)(__global uchar* x_buf, ulong x_off, __global uchar* o_buf, ulong o_off, T scale, T bias,
              int bias_after_scale, int is_bool) {
  const long i = get_global_id(0);
  const T v = AT(const T, x_buf, x_off)[i];
  AT(T, o_buf, o_off)[i] = is_bool ? v : bias_after_scale ? v * scale + bias : (v + bias) * scale;
}

KERNEL(binary)(__global uchar* x_buf, ulong x_off, __global uchar* y_buf, ulong y_off, __global uchar* o_buf,
               ulong o_off, strided_t space, int op, int is_bool) {
  const long i = get_global_id(0);
  long ia, ib;
  offsets(&space, i, &ia, &ib);
  const T a = AT(const T, x_buf, x_off)[ia], b = AT(const T, y_buf, y_off)[ib];
  if (op >= EQUAL) {
    uchar r = op == EQUAL ? a == b : op == NOT_EQUAL ? a != b : op == LESS ? a < b : a > b;
    AT(uchar, o_buf, o_off)[i] = r;
    return;
  }
  T r;
  if (is_bool) {  // bool arithmetic is logical
    r = (op == MUL || op == MIN_) ? (a && b) : (a || b);
  } else {
    switch (op) {
      case ADD: r = a + b; break;
      case SUB: r = a - b; break;
      case MUL: r = a * b; break;
#ifdef IS_FLOAT
      case DIV: r = a / b; break;
#else
      case DIV: r = b == (T)0 ? (T)0 : a / b; break;
#endif
      case MAX_: r = a > b ? a : b; break;
      default: r = a < b ? a : b; break;
    }
  }
  AT(T, o_buf, o_off)[i] = r;
}

// dst at space.b strides = src at space.a strides: broadcast, transpose, strided and 2-D copies
KERNEL(strided_copy)(__global uchar* s_buf, ulong s_off, __global uchar* d_buf, ulong d_off, strided_t space) {
  long is, id;
  offsets(&space, get_global_id(0), &is, &id);
  AT(T, d_buf, d_off)[id] = AT(const T, s_buf, s_off)[is];
}

KERNEL(reduce)(__global uchar* x_buf, ulong x_off, __global uchar* o_buf, ulong o_off, reduction_t r, int op,
               long count, int is_bool) {
  long o = get_global_id(0), base = 0;
  const long out_index = o;
  for (long d = r.kept_ndim - 1; d >= 0; --d) {
    base += (o % r.kept_dims[d]) * r.kept_strides[d];
    o /= r.kept_dims[d];
  }
  __global const T* x = AT(const T, x_buf, x_off);
  ACC acc = 0;
  for (long j = 0; j < count; ++j) {
    long rest = j, off = base;
    for (long d = r.red_ndim - 1; d >= 0; --d) {
      off += (rest % r.red_dims[d]) * r.red_strides[d];
      rest /= r.red_dims[d];
    }
    const ACC v = (ACC)x[off];
    acc = op == RMAX ? (j == 0 || v > acc ? v : acc) : acc + v;
  }
  if (op == MEAN && count > 0) acc = acc / (ACC)count;
  AT(T, o_buf, o_off)[out_index] = is_bool ? (T)(acc != 0) : (T)acc;
}

#ifdef IS_FLOAT
KERNEL(unary)(__global uchar* x_buf, ulong x_off, __global uchar* o_buf, ulong o_off, int op) {
  const long i = get_global_id(0);
  const T v = AT(const T, x_buf, x_off)[i];
  T r;
  switch (op) {
    case RELU: r = v > (T)0 ? v : (T)0; break;
    case RELU_KEEP_NAN: r = v <= (T)0 ? (T)0 : v; break;
    case SIGMOID: r = (T)1 / ((T)1 + exp(-v)); break;
    case TANH: r = tanh(v); break;
    case EXP: r = exp(v); break;
    case SQRT: r = sqrt(v); break;
    default: r = fabs(v); break;
  }
  AT(T, o_buf, o_off)[i] = r;
}

// dx = dout * d(op)/dx through the forward output y
KERNEL(unary_grad)(__global uchar* y_buf, ulong y_off, __global uchar* dy_buf, ulong dy_off, __global uchar* dx_buf,
                   ulong dx_off, int op) {
  const long i = get_global_id(0);
  const T y = AT(const T, y_buf, y_off)[i], d = AT(const T, dy_buf, dy_off)[i];
  T r;
  switch (op) {
    case RELU: r = y > (T)0 ? d : (T)0; break;
    case RELU_KEEP_NAN: r = y <= (T)0 ? (T)0 : d; break;
    case SIGMOID: r = d * y * ((T)1 - y); break;
    case TANH: r = d * ((T)1 - y * y); break;
    case EXP: r = d * y; break;
    default: r = d * (T)0.5 / y; break;  // SQRT
  }
  AT(T, dx_buf, dx_off)[i] = r;
}
#endif

TYPED_END
