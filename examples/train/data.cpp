#include "data.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

namespace ddp::train {
namespace {

namespace fs = std::filesystem;

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Standard normal values from a counter-based stream, identical on every machine.
void fillNormal(uint64_t state, float* out, int64_t n) {
  constexpr double kTwoPi = 6.283185307179586;
  for (int64_t i = 0; i < n; i += 2) {
    double u1 = (static_cast<double>(splitmix64(state) >> 11) + 1.0) * 0x1.0p-53;
    double u2 = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(r * std::cos(kTwoPi * u2));
    if (i + 1 < n) out[i + 1] = static_cast<float>(r * std::sin(kTwoPi * u2));
  }
}

// Gaussian inputs labelled by a fixed random linear teacher: learnable, and every sample is a
// pure function of (seed, index).
class SyntheticDataset : public Dataset {
 public:
  SyntheticDataset(SampleShape shape, int64_t size, uint64_t seed)
      : shape_(shape), size_(size), seed_(seed), teacher_(kClassesHere * shape.numel()) {
    // Drawn class by class, kept input by input: the ten scores of a sample then accumulate side
    // by side, each in the same order as one after the other (the same labels, bit for bit).
    std::vector<float> byClass(teacher_.size());
    fillNormal(seed ^ 0x7EAC4E5ull, byClass.data(), static_cast<int64_t>(byClass.size()));
    const int64_t d = shape.numel();
    for (int64_t c = 0; c < kClassesHere; ++c)
      for (int64_t j = 0; j < d; ++j) teacher_[j * kClassesHere + c] = byClass[c * d + j];
  }
  int64_t size() const override { return size_; }
  SampleShape shape() const override { return shape_; }
  std::string describe() const override { return fmt::format("synthetic ({} samples)", size_); }
  void load(const std::vector<int64_t>& indices, torch::Tensor& x, torch::Tensor& y) const override {
    const int64_t d = shape_.numel(), n = static_cast<int64_t>(indices.size());
    x = torch::empty({n, shape_.channels, shape_.height, shape_.width});
    y = torch::empty({n}, torch::kLong);
    float* xs = x.data_ptr<float>();
    int64_t* ys = y.data_ptr<int64_t>();
    for (int64_t k = 0; k < n; ++k) {
      float* sample = xs + k * d;
      fillNormal(seed_ * 0x100000001B3ull + static_cast<uint64_t>(indices[k]), sample, d);
      std::array<double, kClassesHere> score{};
      for (int64_t j = 0; j < d; ++j) {
        const float* w = teacher_.data() + j * kClassesHere;
        for (int64_t c = 0; c < kClassesHere; ++c) score[c] += static_cast<double>(w[c]) * sample[j];
      }
      double best = -1e300;
      for (int64_t c = 0; c < kClassesHere; ++c)
        if (score[c] > best) best = score[c], ys[k] = c;
    }
  }

 private:
  static constexpr int64_t kClassesHere = 10;
  SampleShape shape_;
  int64_t size_;
  uint64_t seed_;
  std::vector<float> teacher_;  // [input][class]
};

std::vector<unsigned char> readWhole(const fs::path& path, const std::string& dataset, const std::string& expected) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw ConfigError(fmt::format("{}: {} is missing; expected {}", dataset, path.string(), expected));
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) throw ConfigError(fmt::format("{}: cannot read {}", dataset, path.string()));
  return bytes;
}

// Images as bytes [n, C, H, W] and labels, normalised per channel when loaded.
class ByteImageDataset : public Dataset {
 public:
  ByteImageDataset(std::string name, SampleShape shape, std::vector<unsigned char> pixels,
                   std::vector<unsigned char> labels, std::vector<float> mean, std::vector<float> std)
      : name_(std::move(name)),
        shape_(shape),
        pixels_(std::move(pixels)),
        labels_(std::move(labels)),
        mean_(std::move(mean)),
        std_(std::move(std)) {}
  int64_t size() const override { return static_cast<int64_t>(labels_.size()); }
  SampleShape shape() const override { return shape_; }
  std::string describe() const override { return fmt::format("{} ({} samples)", name_, size()); }
  void load(const std::vector<int64_t>& indices, torch::Tensor& x, torch::Tensor& y) const override {
    const int64_t d = shape_.numel(), plane = shape_.height * shape_.width;
    const int64_t n = static_cast<int64_t>(indices.size());
    x = torch::empty({n, shape_.channels, shape_.height, shape_.width});
    y = torch::empty({n}, torch::kLong);
    float* xs = x.data_ptr<float>();
    int64_t* ys = y.data_ptr<int64_t>();
    for (int64_t k = 0; k < n; ++k) {
      const unsigned char* src = pixels_.data() + indices[k] * d;
      for (int64_t j = 0; j < d; ++j) {
        int64_t c = j / plane;
        xs[k * d + j] = (static_cast<float>(src[j]) / 255.0f - mean_[c]) / std_[c];
      }
      ys[k] = static_cast<int64_t>(labels_[static_cast<size_t>(indices[k])]);
    }
  }

 private:
  std::string name_;
  SampleShape shape_;
  std::vector<unsigned char> pixels_, labels_;
  std::vector<float> mean_, std_;
};

uint32_t bigEndian32(const std::vector<unsigned char>& b, size_t at) {
  return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) | b[at + 3];
}

std::unique_ptr<Dataset> openMnist(const fs::path& dir) {
  const auto imagesPath = dir / "train-images-idx3-ubyte", labelsPath = dir / "train-labels-idx1-ubyte";
  auto images = readWhole(imagesPath, "mnist", "the uncompressed MNIST training images (IDX, magic 2051)");
  auto labels = readWhole(labelsPath, "mnist", "the uncompressed MNIST training labels (IDX, magic 2049)");
  if (images.size() < 16 || bigEndian32(images, 0) != 2051)
    throw ConfigError(
        fmt::format("mnist: {} is not an IDX image file (expected magic 2051 in its "
                    "first 4 bytes; gunzip it first if it is compressed)",
                    imagesPath.string()));
  if (labels.size() < 8 || bigEndian32(labels, 0) != 2049)
    throw ConfigError(
        fmt::format("mnist: {} is not an IDX label file (expected magic 2049 in its "
                    "first 4 bytes; gunzip it first if it is compressed)",
                    labelsPath.string()));
  const uint64_t n = bigEndian32(images, 4), rows = bigEndian32(images, 8), cols = bigEndian32(images, 12);
  if (rows != 28 || cols != 28 || images.size() != 16 + n * rows * cols)
    throw ConfigError(
        fmt::format("mnist: {} holds {} bytes for {} images of {}x{}; expected 28x28 "
                    "images and 16 + n*784 bytes",
                    imagesPath.string(), images.size(), n, rows, cols));
  if (bigEndian32(labels, 4) != n || labels.size() != 8 + n)
    throw ConfigError(
        fmt::format("mnist: {} does not hold {} labels (one byte each after an 8-byte "
                    "header)",
                    labelsPath.string(), n));
  images.erase(images.begin(), images.begin() + 16);
  labels.erase(labels.begin(), labels.begin() + 8);
  for (auto label : labels)
    if (label >= 10)
      throw ConfigError(fmt::format("mnist: {} has label {} (expected 0-9)", labelsPath.string(), int{label}));
  return std::make_unique<ByteImageDataset>("mnist", SampleShape{1, 28, 28}, std::move(images), std::move(labels),
                                            std::vector<float>{0.1307f}, std::vector<float>{0.3081f});
}

std::unique_ptr<Dataset> openCifar10(const fs::path& dir) {
  constexpr size_t kRecord = 1 + 3072, kPerFile = 10000;
  std::vector<unsigned char> pixels, labels;
  for (int i = 1; i <= 5; ++i) {
    auto path = dir / fmt::format("data_batch_{}.bin", i);
    auto bytes = readWhole(path, "cifar10", "the CIFAR-10 binary version (cifar-10-batches-bin)");
    if (bytes.size() != kRecord * kPerFile)
      throw ConfigError(
          fmt::format("cifar10: {} is {} bytes; expected {} (10000 records of a label "
                      "byte and 3072 pixel bytes)",
                      path.string(), bytes.size(), kRecord * kPerFile));
    for (size_t r = 0; r < kPerFile; ++r) {
      const unsigned char* rec = bytes.data() + r * kRecord;
      if (rec[0] >= 10)
        throw ConfigError(
            fmt::format("cifar10: {} record {} has label {} (expected 0-9)", path.string(), r, int{rec[0]}));
      labels.push_back(rec[0]);
      pixels.insert(pixels.end(), rec + 1, rec + kRecord);
    }
  }
  return std::make_unique<ByteImageDataset>("cifar10", SampleShape{3, 32, 32}, std::move(pixels), std::move(labels),
                                            std::vector<float>{0.4914f, 0.4822f, 0.4465f},
                                            std::vector<float>{0.2470f, 0.2435f, 0.2616f});
}

}  // namespace

std::unique_ptr<Dataset> openDataset(const std::string& spec, const std::string& model, int64_t syntheticSize,
                                     uint64_t seed) {
  if (spec == "synthetic") {
    SampleShape shape = model == "mlp" ? SampleShape{1, 28, 28} : SampleShape{3, 32, 32};
    return std::make_unique<SyntheticDataset>(shape, syntheticSize, seed);
  }
  auto colon = spec.find(':');
  std::string kind = spec.substr(0, colon), dir = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if ((kind == "cifar10" || kind == "mnist") && !dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw ConfigError(fmt::format("{}: data directory {} does not exist", kind, dir));
    return kind == "mnist" ? openMnist(dir) : openCifar10(dir);
  }
  throw ConfigError(fmt::format("--data '{}' is not synthetic, cifar10:DIR or mnist:DIR", spec));
}

ShardSampler::ShardSampler(int64_t datasetSize, int64_t batch, int64_t accumulate, int worldSize, uint64_t seed)
    : datasetSize_(datasetSize), batch_(batch), accumulate_(accumulate), worldSize_(worldSize), seed_(seed) {
  if (stepsPerEpoch() == 0)
    throw ConfigError(
        fmt::format("the dataset has {} samples, fewer than one global batch of {} "
                    "({} ranks x {} per rank x {} micro-batches)",
                    datasetSize_, globalBatch(), worldSize_, batch_, accumulate_));
}

const std::vector<int64_t>& ShardSampler::permutation(int64_t epoch) const {
  if (epoch != cachedEpoch_) {
    permutation_.resize(static_cast<size_t>(datasetSize_));
    for (int64_t i = 0; i < datasetSize_; ++i) permutation_[static_cast<size_t>(i)] = i;
    // Fisher-Yates over splitmix64: the same on every rank and every standard library.
    uint64_t state = seed_ * 0x2545F4914F6CDD1Dull + static_cast<uint64_t>(epoch);
    for (int64_t i = datasetSize_ - 1; i > 0; --i) {
      auto j = static_cast<int64_t>(splitmix64(state) % static_cast<uint64_t>(i + 1));
      std::swap(permutation_[static_cast<size_t>(i)], permutation_[static_cast<size_t>(j)]);
    }
    cachedEpoch_ = epoch;
  }
  return permutation_;
}

std::vector<int64_t> ShardSampler::indices(int64_t step, int rank, int64_t micro) const {
  const auto& perm = permutation(step / stepsPerEpoch());
  int64_t begin = (step % stepsPerEpoch()) * globalBatch() + (rank * accumulate_ + micro) * batch_;
  return {perm.begin() + begin, perm.begin() + begin + batch_};
}

}  // namespace ddp::train
