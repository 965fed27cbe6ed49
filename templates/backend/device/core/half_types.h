// The 16-bit floating-point storage types of the {{ NAME }} C API ({{ NAME }}_FLOAT16, IEEE
// binary16, and {{ NAME }}_BFLOAT16, the upper half of a binary32), as the device core keeps
// them: values are stored in 16 bits and computed in float. Conversions from float round to
// nearest, ties to even, the way every framework and accelerator does; NaN stays NaN (quiet,
// sign kept), infinities stay infinite, a float16 overflow becomes infinity and a value below
// half the smallest subnormal becomes a signed zero. Header-only and free of any framework:
// the conformance suite checks a flavour's casts bit for bit against these.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>

namespace {{ p }}::core {

inline uint32_t float_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}
inline float bits_float(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

inline uint16_t float_to_float16_bits(float f) {
  const uint32_t x = float_bits(f), sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));  // NaN
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (magnitude < 0x38800000u) {  // below 2^-14: a subnormal float16 (or zero)
    if (magnitude <= 0x33000000u) return static_cast<uint16_t>(sign);  // at most 2^-25: ties to the even zero
    const uint32_t exponent = magnitude >> 23, mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // in units of 2^-24, the smallest subnormal
    uint32_t r = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  const uint32_t rebased = magnitude - 0x38000000u;  // exponent bias 127 -> 15
  uint32_t r = rebased >> 13;
  const uint32_t rest = rebased & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (r & 1u))) ++r;  // a carry moves into the exponent, as it should
  return static_cast<uint16_t>(sign | r);
}

inline float float16_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return bits_float(sign);
  uint32_t shift = 0;  // a subnormal: normalise it
  while (!(mantissa & 0x400u)) {
    mantissa <<= 1;
    ++shift;
  }
  return bits_float(sign | ((113 - shift) << 23) | ((mantissa & 0x3ffu) << 13));
}

inline uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN, quiet
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);  // overflow rounds to infinity
}

inline float bfloat16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

// A 16-bit storage type: converts to float implicitly (so arithmetic on it is float
// arithmetic) and from float with rounding. It has no compound assignment on purpose: an
// accumulator of this type would round at every step, and does not compile.
template <uint16_t (*Encode)(float), float (*Decode)(uint16_t)>
struct Float16Storage {
  uint16_t bits;
  Float16Storage() = default;
  Float16Storage(float f) : bits(Encode(f)) {}  // NOLINT(google-explicit-constructor)
  operator float() const { return Decode(bits); }  // NOLINT(google-explicit-constructor)
  static Float16Storage from_bits(uint16_t b) {
    Float16Storage s;
    s.bits = b;
    return s;
  }
};

using float16 = Float16Storage<float_to_float16_bits, float16_bits_to_float>;
using bfloat16 = Float16Storage<float_to_bfloat16_bits, bfloat16_bits_to_float>;
static_assert(sizeof(float16) == 2 && sizeof(bfloat16) == 2, "16-bit storage");

// Whether T holds real numbers (float, double and the 16-bit types above).
template <typename T>
constexpr bool is_real = std::numeric_limits<T>::is_iec559;

// The type a value of T is computed and accumulated in: float for the 16-bit types.
template <typename T>
struct Compute {
  using type = T;
};
template <uint16_t (*E)(float), float (*D)(uint16_t)>
struct Compute<Float16Storage<E, D>> {
  using type = float;
};
template <typename T>
using compute_t = typename Compute<T>::type;

}  // namespace {{ p }}::core

// numeric_limits for the 16-bit types (a program may specialise it for its own types).
template <>
struct std::numeric_limits<{{ p }}::core::float16> {
  using T = {{ p }}::core::float16;
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false, is_iec559 = true;
  static constexpr bool has_infinity = true, has_quiet_NaN = true;
  static constexpr int digits = 11;
  static T lowest() { return T::from_bits(0xfbffu); }
  static T max() { return T::from_bits(0x7bffu); }
  static T min() { return T::from_bits(0x0400u); }
  static T epsilon() { return T::from_bits(0x1400u); }
  static T infinity() { return T::from_bits(0x7c00u); }
  static T quiet_NaN() { return T::from_bits(0x7e00u); }
};
template <>
struct std::numeric_limits<{{ p }}::core::bfloat16> {
  using T = {{ p }}::core::bfloat16;
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false, is_iec559 = true;
  static constexpr bool has_infinity = true, has_quiet_NaN = true;
  static constexpr int digits = 8;
  static T lowest() { return T::from_bits(0xff7fu); }
  static T max() { return T::from_bits(0x7f7fu); }
  static T min() { return T::from_bits(0x0080u); }
  static T epsilon() { return T::from_bits(0x3c00u); }
  static T infinity() { return T::from_bits(0x7f80u); }
  static T quiet_NaN() { return T::from_bits(0x7fc0u); }
};
