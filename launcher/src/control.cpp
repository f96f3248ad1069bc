#include "ddp/launcher/control.hpp"

#include "ddp/common/json_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <vector>

namespace ddp::launcher::control {
namespace {

// Splits on single spaces; the line must have exactly `count` words.
std::optional<std::vector<std::string_view>> words(std::string_view line, size_t count) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= line.size()) {
    const size_t space = line.find(' ', start);
    const size_t end = space == std::string_view::npos ? line.size() : space;
    if (end == start) return std::nullopt;  // an empty word: two spaces, or a leading/trailing one
    out.push_back(line.substr(start, end - start));
    if (space == std::string_view::npos) break;
    start = space + 1;
  }
  if (out.size() != count) return std::nullopt;
  return out;
}

template <typename T>
std::optional<T> number(std::string_view text, T min) {
  T value{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < min) return std::nullopt;
  return value;
}

// The message's word and the rest of the line ("exit {json}"): nullopt when it is not `word`.
std::optional<std::string_view> after(std::string_view line, std::string_view word) {
  if (line.size() <= word.size() || line.substr(0, word.size()) != word || line[word.size()] != ' ')
    return std::nullopt;
  return line.substr(word.size() + 1);
}

struct WorkerFormatter {
  std::string operator()(const Hello& m) const {
    return fmt::format("hello {} {} {} {}", m.token, m.rank, m.pid, m.host);
  }
  std::string operator()(const Started& m) const { return fmt::format("started {}", m.pid); }
  std::string operator()(const Beat& m) const { return "beat " + formatStepProgress(m.progress); }
  std::string operator()(const StacksDone&) const { return "stacks-done"; }
  std::string operator()(const Alive&) const { return "alive"; }
  std::string operator()(const Exit& m) const { return "exit " + jsonText(toJson(m.record)); }
};

struct LauncherFormatter {
  std::string operator()(const Start& m) const { return fmt::format("start {} {}", m.nodeRank, m.nodes); }
  std::string operator()(const Terminate&) const { return "terminate"; }
  std::string operator()(const Stacks&) const { return "stacks"; }
  std::string operator()(const Ping&) const { return "ping"; }
};

std::optional<WorkerMessage> parseHello(std::string_view line) {
  auto w = words(line, 5);
  if (!w || (*w)[0] != "hello") return std::nullopt;
  auto rank = number<int>((*w)[2], 0);
  auto pid = number<int64_t>((*w)[3], 1);
  if (!rank || !pid) return std::nullopt;
  return Hello{std::string((*w)[1]), *rank, *pid, std::string((*w)[4])};
}

std::optional<WorkerMessage> parseExit(std::string_view json) {
  auto parsed = nlohmann::json::parse(json, nullptr, false);
  if (parsed.is_discarded()) return std::nullopt;
  try {
    return Exit{rankExitFromJson(parsed)};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

std::string format(const WorkerMessage& message) { return std::visit(WorkerFormatter{}, message); }
std::string format(const LauncherMessage& message) { return std::visit(LauncherFormatter{}, message); }

std::optional<WorkerMessage> parseWorkerMessage(std::string_view line) {
  if (line == "stacks-done") return StacksDone{};
  if (line == "alive") return Alive{};
  if (auto rest = after(line, "started")) {
    if (auto pid = number<int64_t>(*rest, 1)) return Started{*pid};
    return std::nullopt;
  }
  if (auto rest = after(line, "beat")) {
    if (auto progress = parseStepProgress(*rest); progress && rest->back() != ' ') return Beat{*progress};
    return std::nullopt;
  }
  if (auto rest = after(line, "exit")) return parseExit(*rest);
  return parseHello(line);
}

std::optional<LauncherMessage> parseLauncherMessage(std::string_view line) {
  if (line == "terminate") return Terminate{};
  if (line == "stacks") return Stacks{};
  if (line == "ping") return Ping{};
  auto w = words(line, 3);
  if (!w || (*w)[0] != "start") return std::nullopt;
  auto nodeRank = number<int>((*w)[1], 0);
  auto nodes = number<int>((*w)[2], 1);
  if (!nodeRank || !nodes || *nodeRank >= *nodes) return std::nullopt;
  return Start{*nodeRank, *nodes};
}

}  // namespace ddp::launcher::control
