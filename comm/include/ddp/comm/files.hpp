#pragma once
// Writing files so that a crash or a full disk never leaves a partial one: a temporary file
// beside the target, then rename. Used by every tool that writes results (ddpbench --json,
// ddprof's reports, train's checkpoints and parameter dumps).

#include <string>
#include <string_view>

namespace ddp {

// "<path>.tmp.<pid>": the temporary a writer fills before commitTemporary().
std::string temporaryFor(const std::string& path);
// Renames tmp over path; on failure removes tmp and throws ConfigError naming path.
void commitTemporary(const std::string& tmp, const std::string& path);
// Writes data to path through temporaryFor(path) and commitTemporary(); throws ConfigError
// naming the path, leaving neither a partial file nor the temporary.
void writeFileAtomically(const std::string& path, std::string_view data);

}  // namespace ddp
