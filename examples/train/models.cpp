#include "models.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

namespace ddp::train {
namespace {

namespace nn = torch::nn;

struct Mlp : Net {
  Mlp(int64_t in, const std::vector<int64_t>& hidden) {
    int64_t width = in;
    for (size_t i = 0; i < hidden.size(); ++i) {
      layers.push_back(register_module(fmt::format("fc{}", i + 1), nn::Linear(width, hidden[i])));
      width = hidden[i];
    }
    layers.push_back(register_module(fmt::format("fc{}", hidden.size() + 1), nn::Linear(width, kClasses)));
  }
  torch::Tensor forward(torch::Tensor x) override {
    x = x.flatten(1);
    for (size_t i = 0; i + 1 < layers.size(); ++i) x = torch::relu(layers[i]->forward(x));
    return layers.back()->forward(x);
  }
  std::vector<nn::Linear> layers;
};

struct SmallCnn : Net {
  explicit SmallCnn(const SampleShape& s)
      : conv1(register_module("conv1", nn::Conv2d(nn::Conv2dOptions(s.channels, 16, 3).padding(1)))),
        conv2(register_module("conv2", nn::Conv2d(nn::Conv2dOptions(16, 32, 3).padding(1)))),
        fc(register_module("fc", nn::Linear(32 * (s.height / 4) * (s.width / 4), kClasses))) {}
  torch::Tensor forward(torch::Tensor x) override {
    x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
    return fc->forward(x.flatten(1));
  }
  nn::Conv2d conv1, conv2;
  nn::Linear fc;
};

nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

// A residual block; basic (two 3x3) or bottleneck (1x1, 3x3, 1x1 with 4x expansion).
struct Block : nn::Module {
  Block(int64_t in, int64_t planes, int64_t stride, bool bottleneck) : bottleneck(bottleneck) {
    int64_t out = bottleneck ? planes * 4 : planes;
    if (bottleneck) {
      c1 = register_module("conv1", conv(in, planes, 1, 1));
      c2 = register_module("conv2", conv(planes, planes, 3, stride));
      c3 = register_module("conv3", conv(planes, out, 1, 1));
      b3 = register_module("bn3", nn::BatchNorm2d(out));
    } else {
      c1 = register_module("conv1", conv(in, planes, 3, stride));
      c2 = register_module("conv2", conv(planes, planes, 3, 1));
    }
    b1 = register_module("bn1", nn::BatchNorm2d(planes));
    b2 = register_module("bn2", nn::BatchNorm2d(planes));
    if (stride != 1 || in != out) {
      shortcut = register_module("shortcut", nn::Sequential(conv(in, out, 1, stride), nn::BatchNorm2d(out)));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    auto y = torch::relu(b1->forward(c1->forward(x)));
    y = b2->forward(c2->forward(y));
    if (bottleneck) y = b3->forward(c3->forward(torch::relu(y)));
    return torch::relu(y + (shortcut ? shortcut->forward(x) : x));
  }
  bool bottleneck;
  nn::Conv2d c1{nullptr}, c2{nullptr}, c3{nullptr};
  nn::BatchNorm2d b1{nullptr}, b2{nullptr}, b3{nullptr};
  nn::Sequential shortcut{nullptr};
};

struct ResNet : Net {
  ResNet(const SampleShape& s, const std::vector<int>& depth, bool bottleneck) {
    stem = register_module("conv1", conv(s.channels, 64, 3, 1));
    bn = register_module("bn1", nn::BatchNorm2d(64));
    int64_t in = 64;
    const int64_t planes[] = {64, 128, 256, 512};
    for (size_t stage = 0; stage < 4; ++stage) {
      for (int i = 0; i < depth[stage]; ++i) {
        int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
        auto block = std::make_shared<Block>(in, planes[stage], stride, bottleneck);
        blocks.push_back(register_module(fmt::format("layer{}_{}", stage + 1, i), block));
        in = bottleneck ? planes[stage] * 4 : planes[stage];
      }
    }
    fc = register_module("fc", nn::Linear(in, kClasses));
  }
  torch::Tensor forward(torch::Tensor x) override {
    x = torch::relu(bn->forward(stem->forward(x)));
    for (auto& block : blocks) x = block->forward(x);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc->forward(x);
  }
  nn::Conv2d stem{nullptr};
  nn::BatchNorm2d bn{nullptr};
  std::vector<std::shared_ptr<Block>> blocks;
  nn::Linear fc{nullptr};
};

}  // namespace

std::shared_ptr<Net> makeModel(const std::string& name, const SampleShape& shape, const std::vector<int64_t>& hidden) {
  if (name == "mlp") return std::make_shared<Mlp>(shape.numel(), hidden);
  if (name == "cnn") return std::make_shared<SmallCnn>(shape);
  if (name == "resnet18") return std::make_shared<ResNet>(shape, std::vector<int>{2, 2, 2, 2}, false);
  if (name == "resnet50") return std::make_shared<ResNet>(shape, std::vector<int>{3, 4, 6, 3}, true);
  throw ConfigError(fmt::format("unknown model '{}' (known: mlp, cnn, resnet18, resnet50)", name));
}

}  // namespace ddp::train
