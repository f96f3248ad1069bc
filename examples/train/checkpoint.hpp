#pragma once
// Checkpoints of the train example: model, optimizer and step in one file, written atomically.

#include <torch/torch.h>

#include <optional>
#include <string>

namespace ddp::train {

// What a checkpoint must match to be resumed: the model name and every parameter's name and
// shape.
std::string modelSignature(const std::string& modelName, torch::nn::Module& model);

// Creates the directory and checks that files can be created in it; throws ConfigError.
void checkCheckpointDir(const std::string& dir);

// Writes <dir>/checkpoint.pt through a temporary file and rename, so a crash leaves the
// previous checkpoint intact and no partial file.
void saveCheckpoint(const std::string& dir, const std::string& signature, torch::nn::Module& model,
                    torch::optim::Optimizer& optimizer, int64_t step);

// Loads <dir>/checkpoint.pt into model and optimizer and returns its step; nullopt when there
// is no checkpoint yet. Throws ConfigError when it is unreadable or of another model.
std::optional<int64_t> loadCheckpoint(const std::string& dir, const std::string& signature, torch::nn::Module& model,
                                      torch::optim::Optimizer& optimizer);

// Checks that a file can be created beside `path` (in its directory); throws ConfigError
// naming the option.
void checkWritableParent(const std::string& path, const std::string& option);

}  // namespace ddp::train
