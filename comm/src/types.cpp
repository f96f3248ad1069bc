#include "ddp/comm/types.hpp"

#include <algorithm>
#include <cmath>

namespace ddp::comm {
namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
  bool floating;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kFloat32, "float", 4, true}, {DType::kFloat64, "double", 8, true}, {DType::kInt32, "int32", 4, false},
    {DType::kInt64, "int64", 8, false},  {DType::kFloat16, "half", 2, true},   {DType::kBFloat16, "bf16", 2, true},
};

constexpr std::pair<ReduceOp, std::string_view> kOps[] = {
    {ReduceOp::kSum, "sum"}, {ReduceOp::kProd, "prod"}, {ReduceOp::kMin, "min"},
    {ReduceOp::kMax, "max"}, {ReduceOp::kAvg, "avg"},
};

const DTypeInfo& info(DType dtype) { return kDTypes[static_cast<size_t>(dtype)]; }

template <typename T>
T combine(T a, T b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return static_cast<T>(a + b);
    case ReduceOp::kProd:
      return static_cast<T>(a * b);
    case ReduceOp::kMin:
      return std::min(a, b);
    case ReduceOp::kMax:
      return std::max(a, b);
  }
  return a;
}

// The operator is a template argument so each loop is a plain vectorisable kernel.
template <typename T, ReduceOp Op>
void combineLoop(T* o, const T* a, const T* b, size_t count) {
  for (size_t i = 0; i < count; ++i) o[i] = combine(a[i], b[i], Op);
}

template <typename T>
void combineTyped(void* out, const void* a, const void* b, size_t count, ReduceOp op) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      combineLoop<T, ReduceOp::kSum>(o, x, y, count);
      break;
    case ReduceOp::kProd:
      combineLoop<T, ReduceOp::kProd>(o, x, y, count);
      break;
    case ReduceOp::kMin:
      combineLoop<T, ReduceOp::kMin>(o, x, y, count);
      break;
    case ReduceOp::kMax:
      combineLoop<T, ReduceOp::kMax>(o, x, y, count);
      break;
  }
}

// 16-bit floats are combined in float and rounded once per step, as NCCL and Gloo do.
template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void combine16(void* out, const void* a, const void* b, size_t count, ReduceOp op) {
  auto* o = static_cast<uint16_t*>(out);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < count; ++i) o[i] = Store(combine(Load(x[i]), Load(y[i]), op));
}

}  // namespace

size_t dtypeSize(DType dtype) { return info(dtype).size; }
bool isFloating(DType dtype) { return info(dtype).floating; }
std::string_view dtypeName(DType dtype) { return info(dtype).name; }

std::optional<DType> parseDType(std::string_view name) {
  for (const auto& d : kDTypes) {
    if (d.name == name) return d.dtype;
  }
  return std::nullopt;
}

std::string_view reduceOpName(ReduceOp op) { return kOps[static_cast<size_t>(op)].second; }

std::optional<ReduceOp> parseReduceOp(std::string_view name) {
  for (const auto& [op, opName] : kOps) {
    if (opName == name) return op;
  }
  return std::nullopt;
}

float halfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: value = mant * 2^-24
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign != 0 ? -v : v;
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t absBits = bits & 0x7fffffffu;
  if (absBits >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (absBits > 0x7f800000u ? 0x200u : 0u));
  }
  if (absBits >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (absBits < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    const float a = std::fabs(f);
    const float scaled = a * 16777216.0f;  // 2^24: units of the smallest subnormal
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(std::nearbyint(scaled)));
  }
  const uint32_t exp = (absBits >> 23) - 112;
  uint32_t mant = absBits & 0x7fffffu;
  uint32_t half = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u) != 0)) ++half;  // nearest even
  return static_cast<uint16_t>(sign | half);
}

uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);  // nearest even
  return static_cast<uint16_t>(bits >> 16);
}

double loadAsDouble(const void* data, DType dtype, size_t index) {
  switch (dtype) {
    case DType::kFloat32:
      return static_cast<const float*>(data)[index];
    case DType::kFloat64:
      return static_cast<const double*>(data)[index];
    case DType::kInt32:
      return static_cast<const int32_t*>(data)[index];
    case DType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(data)[index]);
    case DType::kFloat16:
      return halfToFloat(static_cast<const uint16_t*>(data)[index]);
    case DType::kBFloat16:
      return bf16ToFloat(static_cast<const uint16_t*>(data)[index]);
  }
  return 0;
}

void storeFromDouble(void* data, DType dtype, size_t index, double value) {
  switch (dtype) {
    case DType::kFloat32:
      static_cast<float*>(data)[index] = static_cast<float>(value);
      break;
    case DType::kFloat64:
      static_cast<double*>(data)[index] = value;
      break;
    case DType::kInt32:
      static_cast<int32_t*>(data)[index] = static_cast<int32_t>(value);
      break;
    case DType::kInt64:
      static_cast<int64_t*>(data)[index] = static_cast<int64_t>(value);
      break;
    case DType::kFloat16:
      static_cast<uint16_t*>(data)[index] = floatToHalf(static_cast<float>(value));
      break;
    case DType::kBFloat16:
      static_cast<uint16_t*>(data)[index] = floatToBf16(static_cast<float>(value));
      break;
  }
}

void divideInPlace(void* data, DType dtype, size_t count, int divisor) {
  switch (dtype) {
    case DType::kFloat32: {
      auto* p = static_cast<float*>(data);
      for (size_t i = 0; i < count; ++i) p[i] /= static_cast<float>(divisor);
      break;
    }
    case DType::kFloat64: {
      auto* p = static_cast<double*>(data);
      for (size_t i = 0; i < count; ++i) p[i] /= divisor;
      break;
    }
    case DType::kInt32: {
      auto* p = static_cast<int32_t*>(data);
      for (size_t i = 0; i < count; ++i) p[i] /= divisor;
      break;
    }
    case DType::kInt64: {
      auto* p = static_cast<int64_t*>(data);
      for (size_t i = 0; i < count; ++i) p[i] /= divisor;
      break;
    }
    case DType::kFloat16:
    case DType::kBFloat16:
      for (size_t i = 0; i < count; ++i) {
        storeFromDouble(data, dtype, i, static_cast<float>(loadAsDouble(data, dtype, i)) / static_cast<float>(divisor));
      }
      break;
  }
}

void combineInto(void* out, const void* a, const void* b, DType dtype, size_t count, ReduceOp op) {
  switch (dtype) {
    case DType::kFloat32:
      combineTyped<float>(out, a, b, count, op);
      break;
    case DType::kFloat64:
      combineTyped<double>(out, a, b, count, op);
      break;
    case DType::kInt32:
      combineTyped<int32_t>(out, a, b, count, op);
      break;
    case DType::kInt64:
      combineTyped<int64_t>(out, a, b, count, op);
      break;
    case DType::kFloat16:
      combine16<halfToFloat, floatToHalf>(out, a, b, count, op);
      break;
    case DType::kBFloat16:
      combine16<bf16ToFloat, floatToBf16>(out, a, b, count, op);
      break;
  }
}

void reduceInto(void* out, const void* in, DType dtype, size_t count, ReduceOp op) {
  combineInto(out, out, in, dtype, count, op);
}

}  // namespace ddp::comm
