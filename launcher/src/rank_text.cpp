#include "rank_text.hpp"

#include <nlohmann/json.hpp>

#include <deque>
#include <fstream>
#include <sstream>

namespace ddp::launcher {
namespace {

constexpr size_t kTracebackLines = 12;

// The stream's last `count` lines, each as "\n    line".
std::string tail(std::istream& in, size_t count, size_t* found) {
  std::deque<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
    if (lines.size() > count) lines.pop_front();
  }
  if (found) *found = lines.size();
  std::string out;
  for (const auto& l : lines) out += "\n    " + l;
  return out;
}

}  // namespace

std::string lastLines(const std::string& path, size_t count, size_t* found) {
  std::ifstream in(path);
  return tail(in, count, found);
}

std::string torchError(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  try {
    const auto j = nlohmann::json::parse(in);
    const auto& m = j.at("message");
    if (m.is_string()) return "\n    " + m.get<std::string>();
    std::istringstream stack(m.value("extraInfo", nlohmann::json::object()).value("py_callstack", std::string()));
    return "\n    " + m.value("message", std::string()) + tail(stack, kTracebackLines, nullptr);
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace ddp::launcher
