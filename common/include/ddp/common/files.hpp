#pragma once
// Files and directories for every tool that writes results (ddpbench --json, ddprof's reports,
// the run directory, train's checkpoints and parameter dumps): writes that a crash or a full
// disk never leaves half done (a temporary file beside the target, then rename), directories
// made with a clear error, and listings in a stable order.

#include <string>
#include <string_view>
#include <vector>

namespace ddp {

// "<path>.tmp.<pid>": the temporary a writer fills before commitTemporary().
std::string temporaryFor(const std::string& path);
// Renames tmp over path; on failure removes tmp and throws ConfigError naming path.
void commitTemporary(const std::string& tmp, const std::string& path);
// Writes data to path through temporaryFor(path) and commitTemporary(); throws ConfigError
// naming the path, leaving neither a partial file nor the temporary.
void writeFileAtomically(const std::string& path, std::string_view data);

// Creates a directory and its parents; ConfigError "<what> <path>: cannot create: <why>" (or
// "not writable").
void makeDirectories(const std::string& path, const std::string& what);

// The regular files directly in dir whose names start with prefix and end with suffix (a name
// that is only the suffix does not count), sorted; none when dir is not a directory.
std::vector<std::string> listFiles(const std::string& dir, std::string_view prefix, std::string_view suffix);

}  // namespace ddp
