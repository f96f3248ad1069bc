#pragma once
// The control protocol between ddprun and its workers (docs/launcher.md, "Control protocol"):
// one TCP connection per worker to DDPRUN_CONTROL, one message per line.
//
//   worker → ddprun                       ddprun → worker
//   hello TOKEN RANK WORKER_PID HOST      start NODE_RANK NODES   (every rank has said hello)
//   started PROGRAM_PID                   terminate               (stop the program)
//   beat STEP PHASE                       stacks                  (write the program's stacks)
//   stacks-done                           ping                    (ddprun is there: every second)
//   alive                                 (the worker is there: every second)
//   exit RECORD_JSON                      (the exit record, then the worker closes)
//
// Either end that hears nothing from the other for kLinkSilence takes the link as dead
// (a host whose link went down sends no RST): the worker stops its program, ddprun takes a host
// none of whose workers it hears from as lost.
//
// Each message has one format function and one parser; a line that is not a well-formed
// message of the expected direction parses to nullopt. Pure, unit-tested.

#include "ddp/common/rank_exit.hpp"
#include "ddp/common/step_record.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace ddp::launcher::control {

// Worker → ddprun.
struct Hello {
  std::string token;
  int rank = -1;
  int64_t pid = -1;
  std::string host;
};
struct Started {
  int64_t pid = -1;
};
// The heartbeat: what the rank's progress file says (the step under way and its phase).
struct Beat {
  StepProgress progress;
};
struct StacksDone {};
struct Alive {};
struct Exit {
  RankExitRecord record;
};
using WorkerMessage = std::variant<Hello, Started, Beat, StacksDone, Exit, Alive>;

// ddprun → worker.
struct Start {
  int nodeRank = 0, nodes = 1;
};
struct Terminate {};
struct Stacks {};
struct Ping {};
using LauncherMessage = std::variant<Start, Terminate, Stacks, Ping>;

// How often each end says it is there, and how long a silence means the link is gone.
inline constexpr std::chrono::seconds kKeepalive{1};
inline constexpr std::chrono::seconds kLinkSilence{10};

// One line, without the newline.
std::string format(const WorkerMessage& message);
std::string format(const LauncherMessage& message);
std::optional<WorkerMessage> parseWorkerMessage(std::string_view line);
std::optional<LauncherMessage> parseLauncherMessage(std::string_view line);

}  // namespace ddp::launcher::control
