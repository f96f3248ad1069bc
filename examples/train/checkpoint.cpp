#include "checkpoint.hpp"

#include "ddp/common/error.hpp"
#include "ddp/common/files.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace ddp::train {
namespace {

namespace fs = std::filesystem;

std::string checkpointFile(const std::string& dir) { return (fs::path(dir) / "checkpoint.pt").string(); }

// Creates and removes a file in dir; false (errno set) when that fails.
bool canCreateIn(const fs::path& dir) {
  auto probe = (dir / fmt::format(".write-test.{}", ::getpid())).string();
  std::FILE* file = std::fopen(probe.c_str(), "w");
  if (!file) return false;
  std::fclose(file);
  std::remove(probe.c_str());
  return true;
}

}  // namespace

std::string modelSignature(const std::string& modelName, torch::nn::Module& model) {
  std::string signature = modelName;
  for (const auto& item : model.named_parameters())
    signature += fmt::format(";{}{}", item.key(), fmt::join(item.value().sizes(), "x"));
  return signature;
}

void checkCheckpointDir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec))
    throw ConfigError(fmt::format("checkpoint directory {} cannot be created: {}", dir,
                                  ec ? ec.message() : "a file of that name exists"));
  if (!canCreateIn(dir))
    throw ConfigError(fmt::format("checkpoint directory {} is not writable: {}", dir, std::strerror(errno)));
}

void checkWritableParent(const std::string& path, const std::string& option) {
  auto dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw ConfigError(fmt::format("{} {}: directory {} does not exist", option, path, dir.string()));
  if (!canCreateIn(dir))
    throw ConfigError(
        fmt::format("{} {}: cannot create files in {}: {}", option, path, dir.string(), std::strerror(errno)));
}

void saveCheckpoint(const std::string& dir, const std::string& signature, torch::nn::Module& model,
                    torch::optim::Optimizer& optimizer, int64_t step) {
  torch::serialize::OutputArchive archive, modelArchive, optimizerArchive;
  model.save(modelArchive);
  optimizer.save(optimizerArchive);
  archive.write("model", modelArchive);
  archive.write("optimizer", optimizerArchive);
  archive.write("signature", c10::IValue(signature));
  archive.write("step", c10::IValue(step));
  const auto path = checkpointFile(dir), tmp = temporaryFor(path);
  try {
    archive.save_to(tmp);
  } catch (const c10::Error& e) {
    std::remove(tmp.c_str());
    throw ConfigError(fmt::format("cannot write checkpoint {}: {}", tmp, e.what_without_backtrace()));
  }
  commitTemporary(tmp, path);
}

std::optional<int64_t> loadCheckpoint(const std::string& dir, const std::string& signature, torch::nn::Module& model,
                                      torch::optim::Optimizer& optimizer) {
  const auto path = checkpointFile(dir);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  torch::serialize::InputArchive archive, modelArchive, optimizerArchive;
  c10::IValue savedSignature, step;
  try {
    archive.load_from(path);
    if (!archive.try_read("signature", savedSignature) || !archive.try_read("step", step) ||
        !savedSignature.isString() || !step.isInt())
      throw ConfigError(fmt::format("checkpoint {} is not a train checkpoint (no signature or step)", path));
    auto saved = savedSignature.toStringRef();
    if (saved != signature) {
      auto name = saved.substr(0, saved.find(';'));
      throw ConfigError(
          fmt::format("checkpoint {} is of another model ({}{}); this run trains {}", path, name,
                      name == signature.substr(0, signature.find(';')) ? " with other parameter shapes" : "",
                      signature.substr(0, signature.find(';'))));
    }
    archive.read("model", modelArchive);
    archive.read("optimizer", optimizerArchive);
    model.load(modelArchive);
    optimizer.load(optimizerArchive);
  } catch (const c10::Error& e) {
    throw ConfigError(fmt::format("checkpoint {} cannot be read: {}", path, e.what_without_backtrace()));
  }
  return step.toInt();
}

}  // namespace ddp::train
