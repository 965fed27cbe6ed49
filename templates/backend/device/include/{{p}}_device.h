/*
 * {{ NAME }} device library: the framework-independent C API of the {{ NAME }} device.
 *
 * Everything a framework adapter needs from the hardware goes through this header:
 * devices, memory (with accounting), copies, streams and events, and the compute ops
 * the kernels call. The implementation in device/src/ is host-backed ("fake NPU"): ops
 * run on the CPU, but it behaves like hardware where adapters can get things wrong.
 * To bring up real hardware, replace the bodies in device/src/ with calls into your
 * SDK; the adapters (paddle/, pytorch/) do not change.
 *
 * Contract kept by every implementation:
 *   - work submitted to one stream runs in submission order, later: ops and *_async
 *     copies return before their work runs ({{ NAME }}_SYNC=1 runs it at submission);
 *   - an event recorded on a stream completes when the work submitted to that stream
 *     before the record has completed; stream_wait_event makes a stream (not the host)
 *     wait for it;
 *   - synchronous calls (memcpy, memset, memcpy_peer, *_synchronize) return after the
 *     work submitted before them on the device; an error that queued work raised (an
 *     index out of range, a dtype the op lacks, an exception it threw) is kept with its
 *     place in the queue and returned by every synchronising call that covers that place
 *     (event_synchronize of an event recorded after it, stream or device synchronisation,
 *     a synchronous copy), until a synchronisation of the whole stream has returned it; an
 *     event recorded before the failing op synchronises OK. {{ p }}_error_detail() names the op;
 *   - a stream may be destroyed while events recorded on it or other streams' waits for it
 *     are outstanding: they complete (it is freed when nothing refers to it);
 *   - a process forked after the device was initialised (memory allocated or work queued)
 *     may not use it: calls there return {{ NAME }}_ERROR_UNSUPPORTED with a one-line detail
 *     (device_count, get/set_device answer; free, *_destroy and finalize do nothing).
 *     Use the 'spawn' start method for workers that use the device;
 *   - device memory is opaque: the host must not read or write it through the pointers
 *     {{ p }}_malloc hands out (the host-backed device faults and names the access;
 *     {{ NAME }}_HOST_VISIBLE_MEMORY=1 allows it, for debugging). Host arguments of an op
 *     (shapes, parameter structs, stride arrays) may be reused once the call returns;
 *   - memory freed while queued work may still use it is reused only after that work.
 */
#ifndef {{ NAME }}_DEVICE_H_
#define {{ NAME }}_DEVICE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define {{ NAME }}_DEVICE_API_VERSION 1

typedef enum {
  {{ NAME }}_OK = 0,
  {{ NAME }}_ERROR_INVALID_VALUE = 1,   /* bad argument, unknown handle or pointer */
  {{ NAME }}_ERROR_OUT_OF_MEMORY = 2,   /* device memory exhausted */
  {{ NAME }}_ERROR_NOT_READY = 3,       /* query: work still pending */
  {{ NAME }}_ERROR_UNSUPPORTED = 4,     /* dtype or parameter combination not implemented */
  {{ NAME }}_ERROR_PEER = 5,            /* collectives: a rank died or did not arrive in time */
} {{ p }}_status_t;

typedef enum {
  {{ NAME }}_BOOL = 0,
  {{ NAME }}_INT32 = 1,
  {{ NAME }}_INT64 = 2,
  {{ NAME }}_FLOAT32 = 3,
  {{ NAME }}_FLOAT64 = 4,
  {{ NAME }}_UINT8 = 5,
  {{ NAME }}_INT8 = 6,
  {{ NAME }}_INT16 = 7,
  {{ NAME }}_FLOAT16 = 8,   /* IEEE binary16; computed in float32, stored rounded to nearest even */
  {{ NAME }}_BFLOAT16 = 9,  /* bfloat16 (the upper half of a float32); likewise */
} {{ p }}_dtype_t;

typedef enum {
  {{ NAME }}_COPY_HOST_TO_DEVICE = 0,
  {{ NAME }}_COPY_DEVICE_TO_HOST = 1,
  {{ NAME }}_COPY_DEVICE_TO_DEVICE = 2,
} {{ p }}_copy_kind_t;

typedef struct {{ p }}_stream_st* {{ p }}_stream_t;
typedef struct {{ p }}_event_st* {{ p }}_event_t;
typedef void (*{{ p }}_host_fn_t)(void* user_data);

#define {{ NAME }}_MAX_DIMS 9

/* A dense row-major tensor shape. */
typedef struct {
  int ndim;
  int64_t dims[{{ NAME }}_MAX_DIMS];
} {{ p }}_shape_t;

const char* {{ p }}_status_string({{ p }}_status_t status);
/* What the last failed synchronising call of this thread reported of queued work:
 * "<op> (queued on device <n>) failed: <status>[: <reason>]"; in a forked child, why the
 * call was refused; "" otherwise. */
const char* {{ p }}_error_detail(void);
size_t {{ p }}_dtype_size({{ p }}_dtype_t dtype);

/* ---- devices ---------------------------------------------------------- */
{{ p }}_status_t {{ p }}_init(void);
{{ p }}_status_t {{ p }}_finalize(void);
/* {{ NAME }}_DEVICE_COUNT devices (1 to 16, default 2), each with its own memory and
 * default stream; the current device is per thread (0 until set). */
{{ p }}_status_t {{ p }}_device_count(int* count);
{{ p }}_status_t {{ p }}_set_device(int device);
{{ p }}_status_t {{ p }}_get_device(int* device);
{{ p }}_status_t {{ p }}_device_synchronize(int device);

/* ---- memory ----------------------------------------------------------- */
/* Capacity per device: {{ NAME }}_MEMORY_MB from the environment (default 8192). */
{{ p }}_status_t {{ p }}_malloc(int device, void** ptr, size_t size);
{{ p }}_status_t {{ p }}_free(int device, void* ptr);
{{ p }}_status_t {{ p }}_memset(int device, void* ptr, int value, size_t size);
{{ p }}_status_t {{ p }}_mem_info(int device, size_t* total, size_t* free_bytes);
/* Bytes currently allocated on `device` (what {{ p }}_malloc handed out, rounded to the
 * allocation granularity) and the peak since start or the last reset. */
{{ p }}_status_t {{ p }}_memory_stats(int device, size_t* allocated, size_t* peak);
/* The device whose live allocation holds `ptr`; INVALID_VALUE for any other pointer. */
{{ p }}_status_t {{ p }}_pointer_device(const void* ptr, int* device);
/* Starts peak tracking over: peak = the bytes allocated now. */
{{ p }}_status_t {{ p }}_memory_reset_peak(int device);
{{ p }}_status_t {{ p }}_memcpy(void* dst, const void* src, size_t size,
                         {{ p }}_copy_kind_t kind);
{{ p }}_status_t {{ p }}_memcpy_async({{ p }}_stream_t stream, void* dst,
                               const void* src, size_t size,
                               {{ p }}_copy_kind_t kind);
/* The device pointers of a copy must lie in live allocations of one device (memcpy_async:
 * the stream's device; NULL: the current device's default stream); between two devices use
 * the peer copy, which runs on a stream of either device (NULL: dst_device's default
 * stream). Anything else is {{ NAME }}_ERROR_INVALID_VALUE. */
{{ p }}_status_t {{ p }}_memcpy_peer(void* dst, int dst_device, const void* src, int src_device,
                              size_t size);
{{ p }}_status_t {{ p }}_memcpy_peer_async({{ p }}_stream_t stream, void* dst, int dst_device,
                                    const void* src, int src_device, size_t size);

/* ---- streams and events ---------------------------------------------- */
{{ p }}_status_t {{ p }}_stream_create(int device, {{ p }}_stream_t* stream);
/* The handle of `device`'s default stream (what NULL means while `device` is current);
 * it cannot be destroyed. */
{{ p }}_status_t {{ p }}_stream_default(int device, {{ p }}_stream_t* stream);
{{ p }}_status_t {{ p }}_stream_destroy({{ p }}_stream_t stream);
{{ p }}_status_t {{ p }}_stream_synchronize({{ p }}_stream_t stream);
{{ p }}_status_t {{ p }}_stream_query({{ p }}_stream_t stream);
{{ p }}_status_t {{ p }}_stream_wait_event({{ p }}_stream_t stream, {{ p }}_event_t event);
{{ p }}_status_t {{ p }}_launch_host_func({{ p }}_stream_t stream, {{ p }}_host_fn_t fn,
                                    void* user_data);
{{ p }}_status_t {{ p }}_event_create(int device, {{ p }}_event_t* event);
{{ p }}_status_t {{ p }}_event_destroy({{ p }}_event_t event);
{{ p }}_status_t {{ p }}_event_record({{ p }}_event_t event, {{ p }}_stream_t stream);
{{ p }}_status_t {{ p }}_event_query({{ p }}_event_t event);
{{ p }}_status_t {{ p }}_event_synchronize({{ p }}_event_t event);
/* Milliseconds between two recorded events' completions on the device clock (a record on an
 * idle stream completes when it is made), as torch.cuda's Event.elapsed_time. An event never
 * recorded: {{ NAME }}_ERROR_INVALID_VALUE; one not yet complete: {{ NAME }}_ERROR_NOT_READY. */
{{ p }}_status_t {{ p }}_event_elapsed_time({{ p }}_event_t start, {{ p }}_event_t end, float* ms);

/* ---- ops -------------------------------------------------------------- */
/* All op pointers are device pointers; shapes are row-major. A NULL stream is
 * the device's default stream. Implemented in device/src/<family>_ops.cc, one file
 * per paddle/kernels/<family>_kernels.cc of the Paddle adapter. */

typedef enum {
  {{ NAME }}_BINARY_ADD = 0,
  {{ NAME }}_BINARY_SUB,
  {{ NAME }}_BINARY_MUL,
  {{ NAME }}_BINARY_DIV,
  {{ NAME }}_BINARY_MAX,
  {{ NAME }}_BINARY_MIN,
  {{ NAME }}_BINARY_EQUAL,     /* comparison ops write BOOL */
  {{ NAME }}_BINARY_NOT_EQUAL,
  {{ NAME }}_BINARY_LESS,
  {{ NAME }}_BINARY_GREATER,
} {{ p }}_binary_op_t;

typedef enum {
  {{ NAME }}_UNARY_RELU = 0,
  {{ NAME }}_UNARY_SIGMOID,
  {{ NAME }}_UNARY_TANH,
  {{ NAME }}_UNARY_EXP,
  {{ NAME }}_UNARY_SQRT,
  {{ NAME }}_UNARY_ABS,
  /* relu that keeps NaN (torch's; RELU maps it to 0, as Paddle's does); its gradient passes
   * dout where the output is NaN (torch's threshold_backward) */
  {{ NAME }}_UNARY_RELU_KEEP_NAN,
} {{ p }}_unary_op_t;

typedef enum {
  {{ NAME }}_REDUCE_SUM = 0,
  {{ NAME }}_REDUCE_MEAN,
  {{ NAME }}_REDUCE_MAX,
} {{ p }}_reduce_op_t;

/* out = value, numel elements */
{{ p }}_status_t {{ p }}_fill({{ p }}_stream_t s, {{ p }}_dtype_t dtype, void* out, int64_t numel,
                       double value);
/* out = cast(x) */
{{ p }}_status_t {{ p }}_cast({{ p }}_stream_t s, {{ p }}_dtype_t in_dtype, const void* x,
                       {{ p }}_dtype_t out_dtype, void* out, int64_t numel);
/* out = x * scale + bias (bias_after_scale) or (x + bias) * scale */
{{ p }}_status_t {{ p }}_scale({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, void* out,
                        int64_t numel, double scale, double bias, int bias_after_scale);
/* Element-wise op with numpy broadcasting of x and y to out_shape (both
 * aligned to the trailing dimensions of out_shape). */
{{ p }}_status_t {{ p }}_binary({{ p }}_stream_t s, {{ p }}_binary_op_t op, {{ p }}_dtype_t dtype,
                         const void* x, const {{ p }}_shape_t* x_shape, const void* y,
                         const {{ p }}_shape_t* y_shape, void* out,
                         const {{ p }}_shape_t* out_shape);
{{ p }}_status_t {{ p }}_unary({{ p }}_stream_t s, {{ p }}_unary_op_t op, {{ p }}_dtype_t dtype,
                        const void* x, void* out, int64_t numel);
/* dx = dout * d(op)/dx, expressed through the forward output `out`. */
{{ p }}_status_t {{ p }}_unary_grad({{ p }}_stream_t s, {{ p }}_unary_op_t op, {{ p }}_dtype_t dtype,
                             const void* out, const void* dout, void* dx, int64_t numel);
/* Reduce x over the axes where reduce_mask has a non-zero entry; out holds the
 * kept axes in order. */
{{ p }}_status_t {{ p }}_reduce({{ p }}_stream_t s, {{ p }}_reduce_op_t op, {{ p }}_dtype_t dtype,
                         const void* x, const {{ p }}_shape_t* x_shape,
                         const int* reduce_mask, void* out);
/* Sum `x` (of shape x_shape) down to the broadcast source shape `out_shape`:
 * the gradient of numpy broadcasting. */
{{ p }}_status_t {{ p }}_sum_to_shape({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                               const {{ p }}_shape_t* x_shape, void* out,
                               const {{ p }}_shape_t* out_shape);
/* out = in broadcast to out_shape */
{{ p }}_status_t {{ p }}_broadcast({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                            const {{ p }}_shape_t* x_shape, void* out,
                            const {{ p }}_shape_t* out_shape);
/* out = x permuted by perm */
{{ p }}_status_t {{ p }}_transpose({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                            const {{ p }}_shape_t* x_shape, const int* perm, void* out);

/* out = x padded with `value`: pads_before[d] elements before dimension d
 * (out_shape gives the padded sizes). */
{{ p }}_status_t {{ p }}_pad({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                      const {{ p }}_shape_t* x_shape, const int64_t* pads_before, double value,
                      void* out, const {{ p }}_shape_t* out_shape);
/* rows x width_bytes copy between pitched buffers (device to device). */
{{ p }}_status_t {{ p }}_copy_2d({{ p }}_stream_t s, void* dst, int64_t dst_pitch, const void* src,
                          int64_t src_pitch, int64_t width_bytes, int64_t rows);
/* Inference batch norm over NCHW: y = (x - mean) / sqrt(var + eps) * scale + bias. */
{{ p }}_status_t {{ p }}_batch_norm_inference({{ p }}_stream_t s, const float* x, const float* mean,
                                       const float* variance, const float* scale,
                                       const float* bias, float epsilon, int64_t batch,
                                       int64_t channels, int64_t spatial, float* y);

/* ---- normalization, activations, dropout, indexing, strided copies --------
 * (device/src/norm_ops.cc, nn_ops.cc, stride_ops.cc). Floating-point ops take a
 * dtype: any floating-point one (FLOAT32, FLOAT64, FLOAT16, BFLOAT16: the 16-bit ones are computed
 * in float32 and stored rounded once); optional pointers may be NULL. Channel ops view the
 * tensor as [outer, channels, inner]: channels-first (NCHW) is [N, C, H*W],
 * channels-last (NHWC) [N*H*W, C, 1]. */

/* Batch norm with batch statistics (training). Writes y, saved_mean and
 * saved_inv_std = 1/sqrt(var + epsilon) (biased variance over outer*inner values)
 * and the running statistics: running_*_out = momentum * running_* + (1 - momentum)
 * * batch value (running_*_out may alias running_*). scale/bias NULL: 1 and 0. */
{{ p }}_status_t {{ p }}_batch_norm_training({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                      const void* scale, const void* bias, double epsilon,
                                      double momentum, int64_t outer, int64_t channels,
                                      int64_t inner, void* y, void* saved_mean,
                                      void* saved_inv_std, const void* running_mean,
                                      const void* running_var, void* running_mean_out,
                                      void* running_var_out);
/* Batch norm with given statistics (inference): y = (x - mean) / sqrt(var + eps) * scale + bias. */
{{ p }}_status_t {{ p }}_batch_norm_normalize({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                       const void* mean, const void* variance,
                                       const void* scale, const void* bias, double epsilon,
                                       int64_t outer, int64_t channels, int64_t inner, void* y);
/* Gradient of batch norm. global_stats == 0: mean/stat are the batch's saved mean and
 * inverse std (from batch_norm_training); != 0: the running mean and variance that
 * normalized x (dx does not flow through the statistics). dx/dscale/dbias may be NULL. */
{{ p }}_status_t {{ p }}_batch_norm_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                      const void* dy, const void* mean, const void* stat,
                                      int global_stats, double epsilon, const void* scale,
                                      int64_t outer, int64_t channels, int64_t inner, void* dx,
                                      void* dscale, void* dbias);
/* Layer norm over the last `cols` values of each of `rows` rows; scale/bias have
 * `cols` entries. mean and variance (biased) are written per row. */
{{ p }}_status_t {{ p }}_layer_norm_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                     const void* scale, const void* bias, double epsilon,
                                     int64_t rows, int64_t cols, void* y, void* mean,
                                     void* variance);
{{ p }}_status_t {{ p }}_layer_norm_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                      const void* dy, const void* mean, const void* variance,
                                      const void* scale, double epsilon, int64_t rows,
                                      int64_t cols, void* dx, void* dscale, void* dbias);
/* GELU: exact x * Phi(x), or the tanh approximation when approximate != 0. */
{{ p }}_status_t {{ p }}_gelu_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, void* out,
                               int64_t numel, int approximate);
{{ p }}_status_t {{ p }}_gelu_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                const void* dout, void* dx, int64_t numel, int approximate);

typedef enum {
  /* splitmix64 counter-based stream: the same values on every architecture */
  {{ NAME }}_RNG_COUNTER = 0,
  /* std::mt19937_64 seeded with `seed`, one uniform float in [0,1) per element: the
   * stream of a host framework's CPU kernels (Paddle's fixed-seed dropout) */
  {{ NAME }}_RNG_MT19937_64 = 1,
} {{ p }}_rng_t;

/* Dropout mask: mask[i] = 0 with probability p (uniform < p), else 1. */
{{ p }}_status_t {{ p }}_dropout_mask({{ p }}_stream_t s, uint8_t* mask, int64_t numel, float p,
                               uint64_t seed, {{ p }}_rng_t rng);
/* out[i] = mask[i] ? x[i] * scale : 0 (dropout forward and backward). */
{{ p }}_status_t {{ p }}_masked_scale({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                               const uint8_t* mask, int64_t numel, double scale, void* out);
/* Gather along the middle axis of x = [outer, axis_size, inner]:
 * out[o, j, i] = x[o, index[j], i], j < num_index. index is INT32 or INT64; entries
 * equal to skip_index (>= 0; -1: none) give zeros (embedding padding_idx). */
{{ p }}_status_t {{ p }}_gather({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, int64_t outer,
                         int64_t axis_size, int64_t inner, {{ p }}_dtype_t index_dtype,
                         const void* index, int64_t num_index, int64_t skip_index, void* out);
/* The adjoint: dx = 0, then dx[o, index[j], i] += dout[o, j, i] (skip_index skipped). */
{{ p }}_status_t {{ p }}_gather_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* dout,
                                  int64_t outer, int64_t axis_size, int64_t inner,
                                  {{ p }}_dtype_t index_dtype, const void* index,
                                  int64_t num_index, int64_t skip_index, void* dx);
/* Strided copy of a dims-shaped array: dst[sum i_d * dst_strides[d]] =
 * src[sum i_d * src_strides[d]], strides in elements, src/dst at element 0.
 * Materializes views (transpose, slice) and writes into them. */
{{ p }}_status_t {{ p }}_strided_copy({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                               const {{ p }}_shape_t* dims, const void* src,
                               const int64_t* src_strides, void* dst,
                               const int64_t* dst_strides);

/* C[M,N] = alpha * op(A) op(B) + beta * C, row-major with leading dimensions lda/ldb/ldc;
 * op(X) = X or X^T. dtype FLOAT32, FLOAT16 or BFLOAT16 (computed in float32, C rounded once);
 * the same holds for the convolution, pooling and softmax ops below. */
{{ p }}_status_t {{ p }}_gemm({{ p }}_stream_t s, {{ p }}_dtype_t dtype, int trans_a, int trans_b, int64_t m,
                       int64_t n, int64_t k, float alpha, const void* a, int64_t lda,
                       const void* b, int64_t ldb, float beta, void* c, int64_t ldc);

typedef struct {
  int64_t batch, in_channels, in_h, in_w;
  int64_t out_channels, out_h, out_w;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_top, pad_left; /* bottom/right padding is implied by out_h/out_w */
  int64_t dilation_h, dilation_w;
  int64_t groups;
} {{ p }}_conv2d_params_t;

/* NCHW input, OIHW filter (I = in_channels / groups), NCHW output. */
{{ p }}_status_t {{ p }}_conv2d_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                 const {{ p }}_conv2d_params_t* p, const void* x, const void* w, void* y);
/* dx (may be NULL) and dw (may be NULL) from dy. */
{{ p }}_status_t {{ p }}_conv2d_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                  const {{ p }}_conv2d_params_t* p, const void* x, const void* w,
                                  const void* dy, void* dx, void* dw);

typedef struct {
  int64_t batch, channels, in_h, in_w, out_h, out_w;
  int64_t kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left;
  int is_max;    /* 1: max pooling, 0: average pooling */
  int exclusive; /* average: divide by the un-padded window size */
  int adaptive;  /* windows computed from in/out sizes (adaptive pooling) */
} {{ p }}_pool2d_params_t;

/* x and y of a floating dtype; or INT8 for max pooling, which an int8 engine runs on the
 * integers of a quantized tensor (exact: the maximum of int8 values is one of them; an int8
 * average is avg_pool2d_int8's, rescaled to float). */
{{ p }}_status_t {{ p }}_pool2d_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                 const {{ p }}_pool2d_params_t* p, const void* x, void* y);
{{ p }}_status_t {{ p }}_pool2d_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                  const {{ p }}_pool2d_params_t* p, const void* x, const void* y,
                                  const void* dy, void* dx);

/* Max pooling with dilation that also returns, per output, the flat index
 * (y * in_w + x) of the maximum within its input plane: the first maximum, or the last NaN
 * of the window (as PyTorch's CPU kernel). p->is_max,
 * exclusive and adaptive are ignored. Any floating-point dtype; indices are INT64 of y's shape. */
{{ p }}_status_t {{ p }}_max_pool2d_with_indices_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                                  const {{ p }}_pool2d_params_t* p,
                                                  int64_t dilation_h, int64_t dilation_w,
                                                  const void* x, void* y, int64_t* indices);
/* dx = 0, then dx[n, c, indices[n, c, o]] += dy[n, c, o]. */
{{ p }}_status_t {{ p }}_max_pool2d_with_indices_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                                   const {{ p }}_pool2d_params_t* p,
                                                   const void* dy, const int64_t* indices,
                                                   void* dx);

/* Softmax over the middle axis of a [outer, axis, inner] view. */
{{ p }}_status_t {{ p }}_softmax_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x, void* y,
                                  int64_t outer, int64_t axis, int64_t inner);
{{ p }}_status_t {{ p }}_softmax_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* y,
                                   const void* dy, void* dx, int64_t outer, int64_t axis, int64_t inner);
/* Log-softmax over the middle axis of a [outer, axis, inner] view, any floating-point
 * dtype: y = x - max - log(sum(exp(x - max))). The backward takes the forward
 * output: dx = dy - exp(y) * sum_axis(dy). */
{{ p }}_status_t {{ p }}_log_softmax_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                      void* y, int64_t outer, int64_t axis, int64_t inner);
{{ p }}_status_t {{ p }}_log_softmax_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* y,
                                       const void* dy, void* dx, int64_t outer, int64_t axis,
                                       int64_t inner);

typedef enum {
  {{ NAME }}_REDUCTION_NONE = 0, /* one loss per target */
  {{ NAME }}_REDUCTION_MEAN = 1, /* sum / total weight of the non-ignored targets */
  {{ NAME }}_REDUCTION_SUM = 2,
} {{ p }}_reduction_t;

/* Negative log likelihood over log-probabilities x = [outer, classes, inner] with
 * INT64 targets [outer, inner], any floating-point dtype. weight (per class) may be NULL
 * (all 1); targets equal to ignore_index contribute 0 and no weight; other targets
 * outside [0, classes) are INVALID_VALUE. loss: [outer, inner] for NONE, else one
 * value; total_weight: one value, the sum of the weights of the counted targets. */
{{ p }}_status_t {{ p }}_nll_loss_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                                   const int64_t* target, const void* weight,
                                   {{ p }}_reduction_t reduction, int64_t ignore_index,
                                   int64_t outer, int64_t classes, int64_t inner, void* loss,
                                   void* total_weight);
/* dx = 0 except dx[o, target, i] = -weight[target] * dloss (NONE: dloss[o, i];
 * SUM: the one dloss; MEAN: dloss / total_weight). */
{{ p }}_status_t {{ p }}_nll_loss_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* dloss,
                                    const int64_t* target, const void* weight,
                                    {{ p }}_reduction_t reduction, int64_t ignore_index,
                                    const void* total_weight, int64_t outer, int64_t classes,
                                    int64_t inner, void* dx);

/* Softmax cross entropy over the middle axis of [outer, classes, inner], FLOAT32,
 * FLOAT16 or BFLOAT16 (computed in float32). Hard labels are int64 class indices of
 * shape [outer, inner]; soft labels are of the logits' dtype and shape. loss has shape
 * [outer, inner]. */
{{ p }}_status_t {{ p }}_softmax_cross_entropy_forward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                                const void* logits, const void* labels,
                                                int soft_label, int64_t ignore_index, void* softmax,
                                                void* loss, int64_t outer, int64_t classes,
                                                int64_t inner);
{{ p }}_status_t {{ p }}_softmax_cross_entropy_backward({{ p }}_stream_t s, {{ p }}_dtype_t dtype,
                                                 const void* softmax, const void* labels,
                                                 int soft_label, int64_t ignore_index,
                                                 const void* dloss, void* dlogits, int64_t outer,
                                                 int64_t classes, int64_t inner);

/* Index of the maximum along the middle axis; out is int64 [outer, inner]. */
{{ p }}_status_t {{ p }}_argmax({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* x,
                         int64_t outer, int64_t axis, int64_t inner, int64_t* out);
/* k largest (or smallest) values along the middle axis, sorted. */
{{ p }}_status_t {{ p }}_topk({{ p }}_stream_t s, const float* x, int64_t outer, int64_t axis,
                       int64_t inner, int64_t k, int largest, float* values,
                       int64_t* indices);
/* Fraction of rows whose top-k indices contain the label. */
{{ p }}_status_t {{ p }}_accuracy({{ p }}_stream_t s, const int64_t* indices, const int64_t* labels,
                           int64_t rows, int64_t k, float* accuracy, int32_t* correct,
                           int32_t* total);

/* param -= lr * grad */
{{ p }}_status_t {{ p }}_sgd_update({{ p }}_stream_t s, const float* param, const float* grad,
                             const float* lr, float* param_out, int64_t numel);
/* One Adam step; beta pow accumulators are updated in place into *_out. param, grad and
 * param_out are of `dtype` (FLOAT32, FLOAT16 or BFLOAT16), everything else float32. With
 * master weights (mixed precision: master, a float32 copy of param, not NULL) the step
 * updates master into master_out and param_out is master_out rounded to dtype. */
{{ p }}_status_t {{ p }}_adam_update({{ p }}_stream_t s, {{ p }}_dtype_t dtype, const void* param,
                              const void* grad, const float* lr, const float* moment1,
                              const float* moment2, const float* beta1_pow, const float* beta2_pow,
                              float beta1, float beta2, float epsilon, void* param_out,
                              float* moment1_out, float* moment2_out, float* beta1_pow_out,
                              float* beta2_pow_out, const float* master, float* master_out,
                              int64_t numel);

/* ---- mixed precision: loss scaling --------------------------------------
 * What a framework's gradient scaler runs each step, on the device: the scale, the
 * found-inf flag and the step counters are device memory, read by the next op, never by
 * the host before a synchronising call. found_inf is one BOOL (Paddle) or FLOAT32 (PyTorch). */

/* outs[i] = xs[i] * m over numels[i] elements of dtype (outs[i] may be xs[i]), for i < count,
 * where m = 1 / *scale when invert_scale, else *scale. When any element of any xs[i] is
 * infinite or NaN, *found_inf is set to 1; otherwise it is left as it is (the caller zeroes it
 * first, or accumulates over several calls). */
{{ p }}_status_t {{ p }}_check_finite_and_unscale({{ p }}_stream_t s, {{ p }}_dtype_t dtype, int count,
                                           const void* const* xs, void* const* outs,
                                           const int64_t* numels, const float* scale,
                                           int invert_scale, {{ p }}_dtype_t found_dtype,
                                           void* found_inf);

typedef struct {
  int32_t grow_every;   /* steps without inf/NaN after which the scale grows */
  int32_t shrink_every; /* steps with inf/NaN after which it shrinks (1: at the first) */
  float grow_factor, shrink_factor;
  float min_scale; /* a shrunk scale is at least this (0: no floor) */
} {{ p }}_loss_scale_params_t;

/* One step of dynamic loss scaling. With *found_inf: *good_steps = 0 and, once
 * ++*bad_steps reaches shrink_every, *scale = max(*scale * shrink_factor, min_scale) and
 * *bad_steps = 0. Without: *bad_steps = 0 and, once ++*good_steps reaches grow_every,
 * *scale *= grow_factor (kept when that is not finite) and *good_steps = 0. bad_steps may be
 * NULL when shrink_every is 1. */
{{ p }}_status_t {{ p }}_update_loss_scale({{ p }}_stream_t s, const {{ p }}_loss_scale_params_t* p,
                                    {{ p }}_dtype_t found_dtype, const void* found_inf, float* scale,
                                    int32_t* good_steps, int32_t* bad_steps);

/* outs[i] = *found_inf ? 0 : xs[i] over numels[i] elements of dtype, for i < count (a step
 * that overflowed leaves no gradient behind). */
{{ p }}_status_t {{ p }}_zero_if_found({{ p }}_stream_t s, {{ p }}_dtype_t dtype, int count,
                                const void* const* xs, void* const* outs, const int64_t* numels,
                                {{ p }}_dtype_t found_dtype, const void* found_inf);

/* ---- quantization ------------------------------------------------------
 * Symmetric linear int8 quantization, as Paddle's quantize_linear/dequantize_linear and an
 * int8 engine compute it. A scale s is the abs-max threshold of its tensor or channel:
 * q = x * (qmax / s). Per-channel scales index the middle of a [outer, channels, inner] view
 * of the array (channels = 1: one scale for the whole tensor). */
typedef struct {
  int64_t outer, channels, inner;
  int32_t qmax;       /* 127 for 8 bits */
  int32_t round_type; /* 0: q = round-half-even(x * (qmax * 1/s)), clipped to [-qmax-1, qmax];
                         1: x clipped to [-s, s] first, then rounded half away from zero */
} {{ p }}_quant_params_t;

/* out = q (see above) for x of FLOAT32, FLOAT16 or BFLOAT16, computed in float32; out is INT8,
 * or FLOAT32 holding the integer (a fake-quantized tensor). 1/s is 1/(s + 1e-6) for s <= 1e-30. */
{{ p }}_status_t {{ p }}_quantize_linear({{ p }}_stream_t s, const {{ p }}_quant_params_t* p,
                                  {{ p }}_dtype_t x_dtype, const void* x, const float* scale,
                                  {{ p }}_dtype_t out_dtype, void* out);

/* out = x * s / qmax in float32, for x of INT8 or FLOAT32 (integer values), out FLOAT32. */
{{ p }}_status_t {{ p }}_dequantize_linear({{ p }}_stream_t s, const {{ p }}_quant_params_t* p,
                                    {{ p }}_dtype_t x_dtype, const void* x, const float* scale,
                                    float* out);

/* Observes the scales of x (quantization-aware training): scale[c] = max |x| over channel c.
 * With one channel and in_accum/in_state given, the moving average instead:
 * out_state = rate * in_state + 1, out_accum = rate * in_accum + max|x|, scale = out_accum /
 * out_state (each one float). x is FLOAT32, FLOAT16 or BFLOAT16. */
{{ p }}_status_t {{ p }}_quant_observe({{ p }}_stream_t s, const {{ p }}_quant_params_t* p,
                                {{ p }}_dtype_t x_dtype, const void* x, float rate,
                                const float* in_accum, const float* in_state, float* out_accum,
                                float* out_state, float* scale);

/* int8 arithmetic, what an int8 engine computes a quantized convolution, matmul, average
 * pooling, residual add, softmax or concatenation with: int8 values (or int8 x int8 products)
 * summed in int32, then rescaled once (the operands of an add or concatenation: each rescaled
 * once by its own scale; a softmax: a table of the exponentials of the integer differences). */

/* y = conv(x, w) in int32: x int8 NCHW, w int8 OIHW (I = in_channels / groups), y int32 NCHW. */
{{ p }}_status_t {{ p }}_conv2d_int8({{ p }}_stream_t s, const {{ p }}_conv2d_params_t* p, const int8_t* x,
                              const int8_t* w, int32_t* y);

/* Row-major C[m,n] = op(A)[m,k] op(B)[k,n] in int32 for int8 A and B (lda/ldb as gemm's). */
{{ p }}_status_t {{ p }}_gemm_int8({{ p }}_stream_t s, int trans_a, int trans_b, int64_t m, int64_t n,
                            int64_t k, const int8_t* a, int64_t lda, const int8_t* b, int64_t ldb,
                            int32_t* c, int64_t ldc);

/* Average pooling of an int8 tensor x (NCHW, quantized with the one scale *x_scale): each window's
 * integers summed in int32, then rescaled once to float32: y = sum * (x_scale / qmax) / n, n the
 * window's size as pool2d_forward divides by it (p->exclusive, p->adaptive; p->is_max must be 0). */
{{ p }}_status_t {{ p }}_avg_pool2d_int8({{ p }}_stream_t s, const {{ p }}_pool2d_params_t* p, const int8_t* x,
                                  const float* x_scale, int32_t qmax, float* y);

/* y = a * a_scale / qmax + b * b_scale / qmax over numel elements: the residual add of two int8
 * tensors, each quantized with its one scale (*a_scale, *b_scale), each operand rescaled once as
 * dequantize_linear takes it back and the two added in float32. */
{{ p }}_status_t {{ p }}_add_int8({{ p }}_stream_t s, int64_t numel, const int8_t* a, const float* a_scale,
                           const int8_t* b, const float* b_scale, int32_t qmax, float* y);

/* Softmax along the middle axis of a [outer, axis, inner] view of int8 x (quantized with the one
 * scale *x_scale), to float32 y: exp((q - max q) * x_scale / qmax) from a table of the 256
 * possible differences, over the row's sum. */
{{ p }}_status_t {{ p }}_softmax_int8({{ p }}_stream_t s, int64_t outer, int64_t axis, int64_t inner,
                               const int8_t* x, const float* x_scale, int32_t qmax, float* y);

/* y = the concatenation along the middle axis of [outer, axis_lens[k], inner] views of count int8
 * tensors xs[k], each quantized with its own one scale *scales[k]: each value rescaled once (as
 * dequantize_linear: v * s / qmax) into its slice of float32 y [outer, sum of axis_lens, inner].
 * xs, scales and axis_lens are host arrays (of device pointers), read before the call returns. */
{{ p }}_status_t {{ p }}_concat_int8({{ p }}_stream_t s, int count, const int8_t* const* xs,
                              const float* const* scales, const int64_t* axis_lens, int64_t outer,
                              int64_t inner, int32_t qmax, float* y);

/* Rescales int32 accumulators of x_q * w_q products over a [outer, channels, inner] view (channel c
 * takes w_scales[c]; channels = 1: one weight scale): v = acc * (x_scale / qmax) * (w_scale / qmax),
 * the value the float operands would have given. out is FLOAT32 (v), or INT8 requantized to
 * *out_scale: round-half-even(v * qmax / out_scale) clipped to [-qmax-1, qmax]. */
{{ p }}_status_t {{ p }}_requantize({{ p }}_stream_t s, const {{ p }}_quant_params_t* p, const int32_t* acc,
                             const float* x_scale, const float* w_scales, {{ p }}_dtype_t out_dtype,
                             const float* out_scale, void* out);

/* Random numbers from a counter-based generator: the same seed gives the same
 * values on every architecture. */
{{ p }}_status_t {{ p }}_random_uniform({{ p }}_stream_t s, float* out, int64_t numel, float low,
                                 float high, uint64_t seed);
{{ p }}_status_t {{ p }}_random_normal({{ p }}_stream_t s, float* out, int64_t numel, float mean,
                                float stddev, uint64_t seed);

/* ---- collectives ------------------------------------------------------ */
/* Communication between ranks: one process per rank, each on a device of its own, as
 * paddle.distributed.launch and torchrun start them. Rank 0 makes a unique id and hands it
 * to the others (the frameworks' stores do); every rank then calls comm_init with it.
 * Collectives and send/recv are queued on a stream like any op (device pointers of the
 * stream's device) and all ranks must issue the same collectives in the same order.
 * A rank that exits, or does not arrive within {{ NAME }}_CCL_TIMEOUT_S seconds (default
 * 300), makes the waiting rank's op fail with {{ NAME }}_ERROR_PEER; {{ p }}_error_detail()
 * names the op, the rank and the timeout. Ranks that disagree on a collective (kind, count,
 * dtype, op, root) all fail it with {{ NAME }}_ERROR_INVALID_VALUE, naming both sides; a rank
 * that cannot put its data in (a full /dev/shm) makes its peers fail at once with its cause.
 * Collectives of one communicator run in the order they were called, on whatever streams.
 * The host-backed device exchanges data through files in a private directory in /dev/shm
 * (made by get_unique_id; the id names it); real hardware calls its collective library here. */
#define {{ NAME }}_CCL_ID_BYTES 64
typedef struct { char bytes[{{ NAME }}_CCL_ID_BYTES]; } {{ p }}_ccl_id_t;
typedef struct {{ p }}_comm_st* {{ p }}_comm_t;
typedef enum {
  {{ NAME }}_CCL_SUM = 0,
  {{ NAME }}_CCL_PROD = 1,
  {{ NAME }}_CCL_MAX = 2,
  {{ NAME }}_CCL_MIN = 3,
} {{ p }}_ccl_op_t;

{{ p }}_status_t {{ p }}_ccl_get_unique_id({{ p }}_ccl_id_t* id);
/* Blocks until all `nranks` ranks have joined (or the timeout). A rank given to two processes,
 * or ranks that disagree on nranks, fail every process's init at once (INVALID_VALUE). */
{{ p }}_status_t {{ p }}_ccl_comm_init(const {{ p }}_ccl_id_t* id, int nranks, int rank,
                                {{ p }}_comm_t* comm);
/* Waits for the work queued on every stream first. */
{{ p }}_status_t {{ p }}_ccl_comm_destroy({{ p }}_comm_t comm);
{{ p }}_status_t {{ p }}_ccl_comm_rank({{ p }}_comm_t comm, int* rank, int* nranks);
/* recv = op over the ranks of send (count elements; send may be recv). Every rank gets the
 * same bits: the ranks' values are combined in rank order. */
{{ p }}_status_t {{ p }}_ccl_all_reduce({{ p }}_stream_t s, const void* send, void* recv, size_t count,
                                 {{ p }}_dtype_t dtype, {{ p }}_ccl_op_t op, {{ p }}_comm_t comm);
/* Like all_reduce, with the result on `root` only (recv of other ranks is not written). */
{{ p }}_status_t {{ p }}_ccl_reduce({{ p }}_stream_t s, const void* send, void* recv, size_t count,
                             {{ p }}_dtype_t dtype, {{ p }}_ccl_op_t op, int root, {{ p }}_comm_t comm);
/* buf of every rank = buf of `root`. */
{{ p }}_status_t {{ p }}_ccl_broadcast({{ p }}_stream_t s, void* buf, size_t count, {{ p }}_dtype_t dtype,
                                int root, {{ p }}_comm_t comm);
/* recv (nranks x count) = the ranks' send (count each), in rank order. */
{{ p }}_status_t {{ p }}_ccl_all_gather({{ p }}_stream_t s, const void* send, void* recv, size_t count,
                                 {{ p }}_dtype_t dtype, {{ p }}_comm_t comm);
/* recv (count) = op over the ranks of their send's block `rank` (send: nranks x count). */
{{ p }}_status_t {{ p }}_ccl_reduce_scatter({{ p }}_stream_t s, const void* send, void* recv, size_t count,
                                     {{ p }}_dtype_t dtype, {{ p }}_ccl_op_t op, {{ p }}_comm_t comm);
/* Point to point: a send never waits for its recv (messages are buffered); a recv waits for
 * the matching send (the n-th recv from a peer takes the n-th send to it). */
{{ p }}_status_t {{ p }}_ccl_send({{ p }}_stream_t s, const void* buf, size_t count, {{ p }}_dtype_t dtype,
                           int peer, {{ p }}_comm_t comm);
{{ p }}_status_t {{ p }}_ccl_recv({{ p }}_stream_t s, void* buf, size_t count, {{ p }}_dtype_t dtype,
                           int peer, {{ p }}_comm_t comm);
/* Waits (on the stream) until every rank has reached it. */
{{ p }}_status_t {{ p }}_ccl_barrier({{ p }}_stream_t s, {{ p }}_comm_t comm);

/* ---- compiled kernels ------------------------------------------------- */
/* A kernel a compiler generated for the device (torch.compile's Inductor: see the PyTorch
 * adapter's README), queued like an op and run by the stream's worker as entry(args), in
 * order with the stream's other work. args[i] is, for a BUFFER argument, the library's view
 * of the device pointer (the kernel's loads and stores go there: the host never gets a
 * readable address); for a value argument, the address of a copy of the value. `name`
 * (a C identifier) is what the op trace, errors and the fault handler call it. A BUFFER
 * that is not memory of the stream's device is {{ NAME }}_ERROR_INVALID_VALUE, at once. */
typedef void (*{{ p }}_kernel_entry_t)(void* const* args);
typedef enum {
  {{ NAME }}_KERNEL_ARG_BUFFER = 0,
  {{ NAME }}_KERNEL_ARG_INT64 = 1,
  {{ NAME }}_KERNEL_ARG_FLOAT32 = 2,
  {{ NAME }}_KERNEL_ARG_FLOAT64 = 3,
} {{ p }}_kernel_arg_kind_t;
typedef struct {
  int32_t kind; /* a {{ p }}_kernel_arg_kind_t (an int: a value outside it is refused, not undefined) */
  union {
    void* buffer;
    int64_t i64;
    float f32;
    double f64;
  } value;
} {{ p }}_kernel_arg_t;
{{ p }}_status_t {{ p }}_launch_kernel({{ p }}_stream_t stream, const char* name, {{ p }}_kernel_entry_t entry,
                                const {{ p }}_kernel_arg_t* args, size_t num_args);
/* The stream's id, unique in the process, as the op trace prints it ("stream=<id>"); NULL:
 * the current device's default stream. */
{{ p }}_status_t {{ p }}_stream_get_id({{ p }}_stream_t stream, uint64_t* id);

/* ---- tracing ---------------------------------------------------------- */
/* A record per queued item (op, copy, collective, host function, kernel launch, a stream's
 * queued wait), written when it has run, on the device clock ({{ p }}_trace_clock_ns:
 * monotonic, nanoseconds). Off by default, where it costs one relaxed atomic load per item.
 * Items queued while tracing is on are recorded, also if it is turned off before they run;
 * {{ NAME }}_SYNC=1 records the work it runs inline alike. Records wait in a bounded buffer
 * until drained; an item that finds it full is counted ({{ p }}_trace_dropped), not kept. */
typedef struct {
  const char* name;         /* the op's name (a string of the library's: valid for the process's life) */
  int32_t device;
  int32_t status;           /* what the item returned: a {{ p }}_status_t */
  uint64_t stream_id;       /* as {{ p }}_stream_get_id gives it */
  uint64_t correlation_id;  /* unique in the process, increasing in submission order (from 1) */
  uint64_t enqueue_ns;      /* submitted <= start_ns <= end_ns: ran, on the device clock */
  uint64_t start_ns;
  uint64_t end_ns;
} {{ p }}_trace_record_t;
/* on != 0: records items queued from now on, into an emptied buffer of `capacity` records
 * (0: 65536), the drop count reset. on == 0: records no items queued from now on; what is
 * recorded stays until drained. */
{{ p }}_status_t {{ p }}_trace_enable(int on, size_t capacity);
/* Moves up to `capacity` records, oldest first, into `records`; *count: how many. Records of
 * one stream come in its queue order. */
{{ p }}_status_t {{ p }}_trace_drain({{ p }}_trace_record_t* records, size_t capacity, size_t* count);
/* How many items' records found the buffer full since tracing was last enabled. */
{{ p }}_status_t {{ p }}_trace_dropped(uint64_t* count);
/* The device clock's time now, in nanoseconds (to place host events among the records). */
{{ p }}_status_t {{ p }}_trace_clock_ns(uint64_t* ns);

/* ---- graph capture and replay ----------------------------------------- */
typedef struct {{ p }}_graph_st* {{ p }}_graph_t;
/* From now on, work queued onto `stream` (ops, copies between device buffers, kernel launches,
 * host functions, waits on events recorded in the same capture) is recorded into a new graph
 * instead of run. While it captures, a call that would make the host wait for the stream's work
 * or that the graph cannot replay is refused with {{ NAME }}_ERROR_UNSUPPORTED and a one-line
 * {{ p }}_error_detail() naming the call and the capturing stream (stream/device/event
 * synchronize, stream_query, memcpy to/from host memory, memset (synchronous) of a captured
 * buffer...). Already capturing: {{ NAME }}_ERROR_INVALID_VALUE.
 * Under {{ NAME }}_SYNC=1 a capturing stream records alike (nothing runs until a launch, which
 * then runs inline). The free of a buffer the capture has used is refused while it captures. */
{{ p }}_status_t {{ p }}_stream_begin_capture({{ p }}_stream_t stream);
/* Ends the capture; *graph: the recorded graph (owned by the caller: {{ p }}_graph_destroy). */
{{ p }}_status_t {{ p }}_stream_end_capture({{ p }}_stream_t stream, {{ p }}_graph_t* graph);
/* *capturing: 1 while `stream` captures, else 0. */
{{ p }}_status_t {{ p }}_stream_is_capturing({{ p }}_stream_t stream, int* capturing);
/* Checks and freezes the graph for replay (a graph is launched only once instantiated). */
{{ p }}_status_t {{ p }}_graph_instantiate({{ p }}_graph_t graph);
/* Queues the whole graph onto `stream` (of the graph's device) as ONE item, its nodes run in
 * capture order by the stream's worker. A node whose device buffer was freed since capture
 * fails the launch at once with {{ NAME }}_ERROR_INVALID_VALUE, the detail naming the graph,
 * the node (index and op name) and the allocation (address, size).
 * Traced (tracing on when it is launched): a record per node (the node's op name, correlation
 * ids following the launch's), then the launch's own record ("graph_launch", spanning them). */
{{ p }}_status_t {{ p }}_graph_launch({{ p }}_graph_t graph, {{ p }}_stream_t stream);
/* How many nodes the graph recorded. */
{{ p }}_status_t {{ p }}_graph_node_count({{ p }}_graph_t graph, size_t* count);
/* Safe while launches of it are queued: they keep what they run until they have run. */
{{ p }}_status_t {{ p }}_graph_destroy({{ p }}_graph_t graph);

/* ---- debugging -------------------------------------------------------- */
/* Names the framework kernel on whose behalf the calling thread's next ops run,
 * for {{ NAME }}_DUMP_OP_ARGS and {{ NAME }}_AUTOCOMPARE output (see README). */
void {{ p }}_debug_kernel(const char* name);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* {{ NAME }}_DEVICE_H_ */
