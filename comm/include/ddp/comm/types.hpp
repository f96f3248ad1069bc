#pragma once
// Element types and reduction operators of the comm layer, with their names.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

namespace ddp::comm {

enum class DType { kFloat32, kFloat64, kInt32, kInt64, kFloat16, kBFloat16 };
enum class ReduceOp { kSum, kProd, kMin, kMax, kAvg };

inline constexpr DType kAllDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                       DType::kInt64,   DType::kFloat16, DType::kBFloat16};
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                                             ReduceOp::kAvg};

size_t dtypeSize(DType dtype);
bool isFloating(DType dtype);
// nccl-tests spellings: float, double, int32, int64, half, bf16.
std::string_view dtypeName(DType dtype);
std::optional<DType> parseDType(std::string_view name);
// sum, prod, min, max, avg.
std::string_view reduceOpName(ReduceOp op);
std::optional<ReduceOp> parseReduceOp(std::string_view name);

// IEEE binary16 and bfloat16 conversions (round to nearest even), for host-side reductions
// and checks.
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
inline float bf16ToFloat(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
uint16_t floatToBf16(float f);

// Element `index` of a buffer of `dtype`, widened to double; and the inverse store.
double loadAsDouble(const void* data, DType dtype, size_t index);
void storeFromDouble(void* data, DType dtype, size_t index, double value);

// Divides every element by `divisor` in place (ReduceOp::kAvg after a sum); integers truncate.
void divideInPlace(void* data, DType dtype, size_t count, int divisor);

// out[i] = op(a[i], b[i]) for i < count (kAvg combines as a sum); out may be a or b.
void combineInto(void* out, const void* a, const void* b, DType dtype, size_t count, ReduceOp op);
// out[i] = op(out[i], in[i]).
void reduceInto(void* out, const void* in, DType dtype, size_t count, ReduceOp op);

}  // namespace ddp::comm
