#include "ddp/launcher/hosts.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

#include <cctype>
#include <fstream>
#include <sstream>

namespace ddp::launcher {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char by) {
  std::vector<std::string_view> out;
  for (size_t b = 0;;) {
    size_t e = s.find(by, b);
    out.push_back(s.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b));
    if (e == std::string_view::npos) break;
    b = e + 1;
  }
  return out;
}

std::optional<int> positive(std::string_view text) {
  if (text.empty() || text.size() > 7) return std::nullopt;
  int v = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v > 0 ? std::optional<int>(v) : std::nullopt;
}

bool validHostname(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  for (char c : h)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_')) return false;
  return true;
}

void addHost(std::vector<HostSlots>& hosts, std::string_view host, int slots) {
  for (auto& h : hosts)
    if (h.host == host) {
      h.slots += slots;
      return;
    }
  hosts.push_back({std::string(host), slots});
}

}  // namespace

std::vector<HostSlots> parseHostList(std::string_view list) {
  std::vector<HostSlots> hosts;
  for (auto item : split(list, ',')) {
    item = trim(item);
    auto colon = item.rfind(':');
    auto host = item.substr(0, colon);
    int slots = 1;
    if (colon != std::string_view::npos) {
      auto n = positive(item.substr(colon + 1));
      if (!n)
        throw ConfigError(fmt::format("-H '{}': slots of '{}' must be a positive integer (host:slots)", list, item));
      slots = *n;
    }
    if (!validHostname(host))
      throw ConfigError(fmt::format("-H '{}': '{}' is not a host name (host:slots,...)", list, item));
    addHost(hosts, host, slots);
  }
  return hosts;
}

std::vector<HostSlots> parseHostfile(std::string_view text, const std::string& path) {
  std::vector<HostSlots> hosts;
  size_t lineNo = 0;
  for (auto line : split(text, '\n')) {
    ++lineNo;
    auto content = trim(line.substr(0, line.find('#')));
    if (content.empty()) continue;
    std::istringstream words{std::string(content)};
    std::string host, word;
    words >> host;
    auto where = [&] { return fmt::format("{}:{}", path, lineNo); };
    if (!validHostname(host))
      throw ConfigError(fmt::format("{}: '{}' is not a host name (expected 'host slots=N')", where(), host));
    int slots = 1;
    while (words >> word) {
      auto eq = word.find('=');
      auto key = std::string_view(word).substr(0, eq);
      auto value = eq == std::string::npos ? std::optional<int>() : positive(std::string_view(word).substr(eq + 1));
      if ((key == "slots" || key == "max_slots" || key == "max-slots") && value) {
        if (key == "slots") slots = *value;
        continue;
      }
      throw ConfigError(fmt::format("{}: '{}' is not slots=N (expected 'host slots=N')", where(), word));
    }
    addHost(hosts, host, slots);
  }
  return hosts;
}

std::vector<HostSlots> readHostfile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(fmt::format("hostfile {} cannot be read", path));
  std::stringstream text;
  text << in.rdbuf();
  auto hosts = parseHostfile(text.str(), path);
  if (hosts.empty()) throw ConfigError(fmt::format("hostfile {} names no host", path));
  return hosts;
}

namespace {

// One item of a node list, every bracket group expanded: "r[1-2]-n[0-1]" -> r1-n0 r1-n1 r2-n0 r2-n1.
std::vector<std::string> expandItem(std::string_view item, std::string_view list, size_t maxNodes) {
  size_t open = item.find('[');
  if (open == std::string_view::npos) return {std::string(item)};
  size_t close = item.find(']', open);
  if (close == std::string_view::npos) throw ConfigError(fmt::format("Slurm node list '{}': unclosed '['", list));
  const auto prefix = item.substr(0, open);
  const auto rest = expandItem(item.substr(close + 1), list, maxNodes);
  auto isNumber = [](std::string_view t) {
    if (t.empty() || t.size() > 9) return false;
    for (char c : t)
      if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    return true;
  };
  std::vector<std::string> out;
  for (auto range : split(item.substr(open + 1, close - open - 1), ',')) {
    auto dash = range.find('-');
    auto lo = range.substr(0, dash);
    auto hi = dash == std::string_view::npos ? lo : range.substr(dash + 1);
    if (!isNumber(lo) || !isNumber(hi))
      throw ConfigError(fmt::format("Slurm node list '{}': '{}' is not a number range", list, range));
    long a = std::stol(std::string(lo)), b = std::stol(std::string(hi));
    if (b < a) throw ConfigError(fmt::format("Slurm node list '{}': bad range '{}'", list, range));
    if (static_cast<size_t>(b - a + 1) * rest.size() + out.size() > maxNodes)
      throw ConfigError(fmt::format("Slurm node list '{}' names more than {} nodes", list, maxNodes));
    for (long n = a; n <= b; ++n)
      for (const auto& r : rest) out.push_back(fmt::format("{}{:0{}}{}", prefix, n, lo.size(), r));
  }
  return out;
}

}  // namespace

std::vector<std::string> expandSlurmNodelist(std::string_view list, size_t maxNodes) {
  std::vector<std::string> out;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size() && list[i] == '[') ++depth;
    if (i < list.size() && list[i] == ']') --depth;
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      auto item = trim(list.substr(begin, i - begin));
      if (!item.empty())
        for (auto& name : expandItem(item, list, maxNodes)) out.push_back(std::move(name));
      if (out.size() > maxNodes)
        throw ConfigError(fmt::format("Slurm node list '{}' names more than {} nodes", list, maxNodes));
      begin = i + 1;
    }
  }
  return out;
}

std::vector<int> expandSlurmTasksPerNode(std::string_view list, size_t maxNodes) {
  std::vector<int> out;
  for (auto item : split(list, ',')) {
    auto paren = item.find("(x");
    auto count = positive(item.substr(0, paren));
    int repeat = 1;
    if (paren != std::string_view::npos) {
      if (item.back() != ')') count.reset();
      auto r = positive(item.substr(paren + 2, item.size() - paren - 3));
      if (!r) count.reset();
      repeat = r.value_or(0);
    }
    if (!count) throw ConfigError(fmt::format("Slurm tasks per node '{}': '{}' is not N or N(xM)", list, item));
    if (out.size() + static_cast<size_t>(repeat) > maxNodes)
      throw ConfigError(fmt::format("Slurm tasks per node '{}' covers more than {} nodes", list, maxNodes));
    out.insert(out.end(), static_cast<size_t>(repeat), *count);
  }
  return out;
}

std::optional<std::vector<HostSlots>> slurmAllocation(const Environment& environment) {
  auto nodes = environment.get(ddp::env::kSlurmJobNodelist);
  if (!nodes) nodes = environment.get(ddp::env::kSlurmNodelist);
  auto tasks = environment.get(env::kSlurmTasksPerNode);
  if (!nodes || !tasks) return std::nullopt;
  auto names = expandSlurmNodelist(*nodes);
  auto counts = expandSlurmTasksPerNode(*tasks);
  if (names.size() != counts.size())
    throw ConfigError(
        fmt::format("Slurm allocation: {} nodes in SLURM_JOB_NODELIST '{}' but {} counts in "
                    "SLURM_TASKS_PER_NODE '{}'",
                    names.size(), *nodes, counts.size(), *tasks));
  std::vector<HostSlots> hosts;
  for (size_t i = 0; i < names.size(); ++i) hosts.push_back({names[i], counts[i]});
  return hosts;
}

int totalSlots(const std::vector<HostSlots>& hosts) {
  int total = 0;
  for (const auto& h : hosts) total += h.slots;
  return total;
}

}  // namespace ddp::launcher
