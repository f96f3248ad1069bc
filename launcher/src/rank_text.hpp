#pragma once
// What ddprun quotes of a failed or hung rank (docs/launcher.md, "Failures"): the end of its log,
// and the exception PyTorch's @record wrote into its TORCHELASTIC_ERROR_FILE.

#include <cstddef>
#include <string>

namespace ddp::launcher {

// The file's last `count` lines, each on a line of its own indented by 4; `found`: how many.
std::string lastLines(const std::string& path, size_t count, size_t* found = nullptr);

// The exception @record wrote (torchelastic's error-file format), then the end of its traceback,
// indented as lastLines; "" when there is no such file or it is not in that format.
std::string torchError(const std::string& path);

}  // namespace ddp::launcher
