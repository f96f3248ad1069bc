#pragma once
// Logging: spdlog, one named logger per part ("ddprun", "ddprof", "ddpbench", "comm", ...), all
// writing ddprun's diagnostics to stderr as one line each:
//   NAME[ PREFIX]: message             (info and error)
//   NAME[ PREFIX]: warning: message
//   NAME[ PREFIX]: debug: message
// Reports, tables and JSON are not diagnostics: their renderers' text goes to stdout through
// the caller, never through a logger. Libraries log; they never print.

#include <spdlog/spdlog.h>

#include <functional>
#include <memory>
#include <string>

namespace ddp::log {

// The logger of one part, made on first use with the current level and prefix.
std::shared_ptr<spdlog::logger> get(const std::string& name);

// The level of every logger, present and future (the default is info).
void setLevel(spdlog::level::level_enum level);
// "error" | "warn" | "info" | "debug"; ConfigError naming `what` otherwise.
spdlog::level::level_enum parseLevel(const std::string& text, const std::string& what);

// Set once per process: "[host:rank]" in a rank's worker, empty elsewhere.
void setPrefix(const std::string& prefix);

// Called before each message is written, so that output that redraws a line of the terminal
// (ddprun's live progress) can clear it first; empty to remove.
void setBeforeWrite(std::function<void()> hook);

}  // namespace ddp::log
