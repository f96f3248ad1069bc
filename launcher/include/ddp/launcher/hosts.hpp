#pragma once
// Where ranks go: hosts and their slots, from -H, a hostfile or a Slurm allocation (pure
// parsing; docs/launcher.md). Errors are ConfigErrors naming the file, the line and what was
// expected.

#include "ddp/common/environment.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::launcher {

struct HostSlots {
  std::string host;
  int slots = 1;
  bool operator==(const HostSlots& o) const { return host == o.host && slots == o.slots; }
};

// "a:8,b:8" or "a,b" (1 slot each); a host named twice adds its slots.
std::vector<HostSlots> parseHostList(std::string_view list);

// Open MPI / DeepSpeed hostfile text: "host [slots=N] [max_slots=M]" per line, '#' comments,
// blank lines. `path` is only used in messages ("hosts.txt:3: ...").
std::vector<HostSlots> parseHostfile(std::string_view text, const std::string& path);

// Reads and parses a hostfile; throws ConfigError when it cannot be read or is empty.
std::vector<HostSlots> readHostfile(const std::string& path);

// More nodes than any Slurm allocation has: a list that expands beyond it is refused (ConfigError)
// instead of exhausting memory ("n[0-99999][0-99999]").
inline constexpr size_t kMaxSlurmNodes = 100000;

// Slurm's compressed node lists: "node[01-03,07],gpu5" -> node01 node02 node03 node07 gpu5.
// (maxNodes below kMaxSlurmNodes: for the fuzzer, which explores the grammar, not big lists.)
std::vector<std::string> expandSlurmNodelist(std::string_view list, size_t maxNodes = kMaxSlurmNodes);
// SLURM_TASKS_PER_NODE / SLURM_STEP_TASKS_PER_NODE: "2(x3),1" -> 2 2 2 1.
std::vector<int> expandSlurmTasksPerNode(std::string_view list, size_t maxNodes = kMaxSlurmNodes);

// The hosts and slots of the Slurm allocation this process runs in (SLURM_JOB_NODELIST and
// SLURM_TASKS_PER_NODE), or nullopt outside one; ConfigError when they disagree.
std::optional<std::vector<HostSlots>> slurmAllocation(const Environment& environment);

int totalSlots(const std::vector<HostSlots>& hosts);

}  // namespace ddp::launcher
