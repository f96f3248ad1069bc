#include "ddp/profiler/nccl/facts.hpp"

#include "text.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddp::profiler {
namespace {

using detail::contains;
using detail::startsWith;

// A value at the end of a message: blanks around it and a sentence's final '.' dropped.
std::string_view trimValue(std::string_view s) {
  s = detail::trim(s);
  while (!s.empty() && s.back() == '.') s.remove_suffix(1);
  return s;
}

// "[0]mlx5_0:1/IB [1]erdma_0:1/RoCE [RO]; OOB ib0:..." -> the device tokens.
template <typename F>
void forEachBracketedDevice(std::string_view list, F&& f) {
  size_t end = list.find("; OOB");
  list = list.substr(0, end);
  for (size_t i = list.find(']'); i != std::string_view::npos; i = list.find(']', i + 1)) {
    size_t b = i + 1;
    while (b < list.size() && (list[b] == ' ' || list[b] == '=' || list[b] == '{')) ++b;
    size_t e = b;
    while (e < list.size() && list[e] != ' ' && list[e] != ',' && list[e] != '}' && list[e] != ';' && list[e] != '[')
      ++e;
    if (e > b) f(list.substr(b, e - b));
  }
}

// "misc/socket.cc:564 -> 2" or "group.cc:65 -> 2 [Async thread]": the result-code trail.
std::optional<int64_t> returnCode(std::string_view m) {
  // The location is the first word: the arrow follows its first blank, or there is none.
  const size_t arrow = m.find(' ');
  if (arrow == std::string_view::npos || arrow == 0 || m.compare(arrow, 4, " -> ") != 0) return std::nullopt;
  std::string_view location = m.substr(0, arrow);
  size_t colon = location.rfind(':');
  if (colon == std::string_view::npos) return std::nullopt;
  for (size_t k = colon + 1; k < location.size(); ++k)
    if (location[k] < '0' || location[k] > '9') return std::nullopt;
  return numberAfter(m.substr(arrow + 3), "");
}

}  // namespace

void NcclFactsBuilder::addLine(std::string_view line) {
  ++facts_.linesRead;
  if (line.empty()) return;
  if (auto parsed = reader_.parse(line)) {
    ++facts_.linesRecognised;
    if (parsed->damaged) ++facts_.linesDamaged;
    addMessage(*parsed);
    return;
  }
  // Lines with no prefix at all: the bare version line, COLL records and edges whose prefix
  // another writer's output displaced or a logger split off, and PyTorch's ProcessGroupNCCL errors among NCCL's lines
  // (which may name the NCCL version too).
  bool recognised = false;
  if (auto version = parseVersion(line)) {
    recognised = true;
    facts_.ncclVersion = std::string(version->nccl);
    if (!version->cuda.empty()) facts_.cudaVersion = std::string(version->cuda);
  } else if (auto coll = parseCollSummary(line)) {
    recognised = true;
    addColl(*coll);
  } else if (auto edge = parseEdge(line)) {  // an edge whose prefix a logger split onto a line of its own
    recognised = true;
    addEdge(*edge);
  }
  if (auto failure = classifyTorchNcclLine(line)) {
    recognised = true;
    facts_.failureKinds.insert(*failure);
  }
  if (recognised) ++facts_.linesRecognised;
}

void NcclFactsBuilder::addMessage(const NcclLine& l) {
  const std::string_view m = l.message;
  if (l.hasPrefix && !l.host.empty() && !detail::equal(l.host, lastHost_) && facts_.hosts.size() < 100000) {
    facts_.hosts.emplace(l.host);
    lastHost_ = l.host;
  }
  if (l.level != Level::kWarn && addHotLine(m)) return;
  const auto failure = classifyFailure(m);
  if (failure) facts_.failureKinds.insert(*failure);
  if (l.level == Level::kWarn) {
    addWarning(l, failure);
    return;
  }
  if (addSetting(m)) return;
  addInitFacts(l);
  addNetwork(m);
  addEdgelessTransport(m);
}

// The bulk of a long log is COLL records and edges: they are dispatched on their first
// characters before any of the rarer, costlier checks run.
bool NcclFactsBuilder::addHotLine(std::string_view m) {
  if (!m.empty() && (m[0] == 'C' || m[0] == 'R')) {
    if (auto edge = parseEdge(m)) {
      addEdge(*edge);
      return true;
    }
  }
  const size_t colon = m.find(':');
  if (colon != std::string_view::npos && colon < 24) {
    if (auto coll = collSummaryAt(m, colon)) {
      addColl(*coll);
      return true;
    }
  }
  return false;
}

void NcclFactsBuilder::addWarning(const NcclLine& l, std::optional<FailureKind> failure) {
  auto& f = facts_;
  ++f.warnLines;
  if (f.warnings.size() < NcclFacts::kMaxWarnings)
    f.warnings.push_back(
        {std::string(l.host), l.pid, l.dev, std::string(l.file), l.fileLine, std::string(l.message), failure});
  else
    ++f.warningsDropped;
}

bool NcclFactsBuilder::addSetting(std::string_view m) {
  auto& f = facts_;
  if (auto env = parseEnvOverride(m)) {
    f.envOverrides[std::string(env->name)] = std::string(env->value);
    return true;
  }
  if (auto version = parseVersion(m)) {
    f.ncclVersion = std::string(version->nccl);
    if (!version->cuda.empty()) f.cudaVersion = std::string(version->cuda);
    return true;
  }
  if (auto code = returnCode(m)) {
    ++f.returnCodes[*code];
    return true;
  }
  return false;
}

// NVLS (NVLink SHARP) carries collectives without an edge line of its own: NCCL says so by the
// NVLS communicator it sets up ("NVLS comm 0x... headRank 3 nHeads 4 ...") and its NVLS channels
// ("16 coll channels, 0 collnet channels, 16 nvls channels, ..."). CollNet's connections name one
// rank: "CollNet 05/0 : 5 [receive] via COLLNET/SHARP/5/GDRDMA".
void NcclFactsBuilder::addEdgelessTransport(std::string_view m) {
  if (m.empty()) return;
  if (startsWith(m, "NVLS comm ")) see(TransportClass::kNvls);
  if (startsWith(m, "CollNet ") && contains(m, " via COLLNET/")) see(TransportClass::kCollNet);
  if (m[0] >= '0' && m[0] <= '9') {  // the channel counts' line starts with one
    const size_t at = m.find(" nvls channels");
    size_t b = at;
    while (at != std::string_view::npos && b > 0 && m[b - 1] >= '0' && m[b - 1] <= '9') --b;
    if (at != std::string_view::npos && b < at && m.substr(b, at - b).find_first_not_of('0') != std::string_view::npos)
      see(TransportClass::kNvls);
  }
}

void NcclFactsBuilder::addInitFacts(const NcclLine& l) {
  auto& f = facts_;
  const std::string_view m = l.message;
  if (startsWith(m, "Init timings")) {
    InitTiming t;
    t.rank = static_cast<int>(numberAfter(m, "rank").value_or(-1));
    t.nranks = static_cast<int>(numberAfter(m, "nranks").value_or(-1));
    if (size_t at = m.find("total "); at != std::string_view::npos)
      t.totalSeconds = std::strtod(std::string(m.substr(at + 6, 24)).c_str(), nullptr);
    if (f.initTimings.size() < NcclFacts::kMaxInitTimings) f.initTimings.push_back(t);
  }
  if (auto n = numberAfter(m, "nranks")) f.nranks = std::max(f.nranks.value_or(0), static_cast<int>(*n));
  if (auto n = numberAfter(m, "nRanks")) f.nranks = std::max(f.nranks.value_or(0), static_cast<int>(*n));
  if (auto n = numberAfter(m, "nNodes")) f.nnodes = static_cast<int>(*n);
  if (contains(m, "Init COMPLETE")) {
    ++f.initCompleteLines;
    if (auto rank = numberAfter(m, "rank");
        rank && l.hasPrefix && (f.rankHosts.size() < 100000 || f.rankHosts.count(*rank)))
      f.rankHosts[static_cast<int>(*rank)] = std::string(l.host);
  }
  if (auto driver = numberAfter(m, "cudaDriverVersion")) f.cudaDriverVersion = *driver;
}

void NcclFactsBuilder::addNetwork(std::string_view m) {
  auto& f = facts_;
  if (startsWith(m, "Using network ")) {
    f.network = std::string(trimValue(m.substr(14)));
  } else if (startsWith(m, "NET/IB : Using ") || startsWith(m, "NET/IB: Using ")) {
    netIbUsing_ = !contains(m, "for sideband");
    if (*netIbUsing_) forEachBracketedDevice(m, [&](std::string_view d) { f.ibDevices.emplace(d); });
  } else if (startsWith(m, "NET/Socket : Using ") || startsWith(m, "NET/Socket: Using ")) {
    if (!contains(m, "threads")) {
      netSocketUsing_ = true;
      forEachBracketedDevice(m, [&](std::string_view d) { f.socketInterfaces.emplace(d.substr(0, d.find(':'))); });
    }
  } else if (startsWith(m, "NET : Using interface ")) {  // 2.3
    auto name = m.substr(22);
    f.socketInterfaces.emplace(name.substr(0, name.find(':')));
  } else if (contains(m, "Using internal Network Socket")) {
    internalSocket_ = true;
  } else if (contains(m, "use ring PXN")) {
    if (auto gdr = numberAfter(m, "GDR")) (*gdr ? ringGdrOn_ : ringGdrOff_) = true;
  }
}

void NcclFactsBuilder::addColl(const CollRecord& coll) {
  auto it = facts_.collOps.find(coll.op);
  if (it == facts_.collOps.end()) it = facts_.collOps.emplace(std::string(coll.op), 0).first;
  ++it->second;
  if (coll.nranks > 0) facts_.nranks = std::max(facts_.nranks.value_or(0), coll.nranks);
}

namespace {

size_t edgeHash(int from, int to, int transport) {
  uint64_t x = (static_cast<uint64_t>(static_cast<uint32_t>(from)) << 32 | static_cast<uint32_t>(to)) ^
               (static_cast<uint64_t>(transport) << 58);
  x ^= x >> 30;  // splitmix64's finaliser: every key bit reaches the low bits the table uses
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return static_cast<size_t>(x ^ (x >> 31));
}

}  // namespace

EdgeSummary& EdgeTable::at(int from, int to, TransportClass transport) {
  const int t = static_cast<int>(transport);
  if (edges_.size() * 2 >= slots_.size()) {  // at most half full: short probes
    std::vector<Slot> old(std::max<size_t>(64, slots_.size() * 2));
    old.swap(slots_);
    for (const Slot& s : old) {
      if (s.index == 0) continue;
      size_t i = edgeHash(s.from, s.to, s.transport) & (slots_.size() - 1);
      while (slots_[i].index) i = (i + 1) & (slots_.size() - 1);
      slots_[i] = s;
    }
  }
  const size_t mask = slots_.size() - 1;
  for (size_t i = edgeHash(from, to, t) & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.index == 0) {
      EdgeSummary& e = edges_.emplace_back();
      e.from = from;
      e.to = to;
      e.transport = transport;
      s = Slot{from, to, t, static_cast<uint32_t>(edges_.size())};
      return e;
    }
    if (s.from == from && s.to == to && s.transport == t) return edges_[s.index - 1];
  }
}

void NcclFactsBuilder::addEdge(const Edge& edge) {
  ++facts_.edgeLines;
  see(edge.transport);
  auto& summary = edges_.at(edge.from, edge.to, edge.transport);
  if (summary.lines++ == 0) summary.via = std::string(edge.via);
  summary.gdr = summary.gdr || edge.gdr;
  if (edge.proxyRank >= 0) summary.proxyRank = edge.proxyRank;
}

void EdgeTable::merge(const EdgeTable& later) {
  for (const EdgeSummary& e : later.edges_) {
    EdgeSummary& summary = at(e.from, e.to, e.transport);
    if (summary.lines == 0) summary.via = e.via;
    summary.lines += e.lines;
    summary.gdr = summary.gdr || e.gdr;
    if (e.proxyRank >= 0) summary.proxyRank = e.proxyRank;
  }
}

namespace {

// The merge rules of NcclFactsBuilder::merge, one per kind of fact.
template <typename T>
void takeLater(std::optional<T>& mine, const std::optional<T>& later) {
  if (later) mine = later;
}
template <typename Container>
void addCapped(Container& mine, const Container& later, size_t cap) {
  for (const auto& v : later) {
    if (mine.size() >= cap) break;
    mine.insert(mine.end(), v);
  }
}
template <typename Map>
void addCounts(Map& mine, const Map& later) {
  for (const auto& [key, count] : later) mine[key] += count;
}

}  // namespace

void NcclFactsBuilder::merge(const NcclFactsBuilder& later) {
  auto& f = facts_;
  const auto& g = later.facts_;
  takeLater(f.ncclVersion, g.ncclVersion);
  takeLater(f.cudaVersion, g.cudaVersion);
  takeLater(f.cudaDriverVersion, g.cudaDriverVersion);
  takeLater(f.nnodes, g.nnodes);
  takeLater(f.network, g.network);
  if (g.nranks) f.nranks = std::max(f.nranks.value_or(0), *g.nranks);
  addCapped(f.hosts, g.hosts, 100000);
  f.ibDevices.insert(g.ibDevices.begin(), g.ibDevices.end());
  f.socketInterfaces.insert(g.socketInterfaces.begin(), g.socketInterfaces.end());
  f.failureKinds.insert(g.failureKinds.begin(), g.failureKinds.end());
  f.edgeLines += g.edgeLines;
  f.initCompleteLines += g.initCompleteLines;
  f.warnLines += g.warnLines;
  f.linesRead += g.linesRead;
  f.linesRecognised += g.linesRecognised;
  f.linesDamaged += g.linesDamaged;
  for (const auto& [name, value] : g.envOverrides) f.envOverrides[name] = value;
  addCounts(f.collOps, g.collOps);
  addCounts(f.returnCodes, g.returnCodes);
  const size_t before = f.warnings.size();
  addCapped(f.warnings, g.warnings, NcclFacts::kMaxWarnings);
  f.warningsDropped += g.warningsDropped + g.warnings.size() - (f.warnings.size() - before);
  addCapped(f.initTimings, g.initTimings, NcclFacts::kMaxInitTimings);
  for (const auto& [rank, host] : g.rankHosts)
    if (f.rankHosts.size() < 100000 || f.rankHosts.count(rank)) f.rankHosts[rank] = host;
  edges_.merge(later.edges_);
  transports_ |= later.transports_;
  takeLater(netIbUsing_, later.netIbUsing_);
  netSocketUsing_ = netSocketUsing_ || later.netSocketUsing_;
  internalSocket_ = internalSocket_ || later.internalSocket_;
  ringGdrOn_ = ringGdrOn_ || later.ringGdrOn_;
  ringGdrOff_ = ringGdrOff_ || later.ringGdrOff_;
  lastHost_ = later.lastHost_;
}

NcclFacts NcclFactsBuilder::finish() const {
  NcclFacts f = facts_;
  for (const auto& e : edges_.all()) f.edges.emplace(std::make_tuple(e.from, e.to, static_cast<int>(e.transport)), e);
  for (unsigned t = 0; t < 32; ++t)
    if (transports_ & (1u << t)) f.transports.insert(static_cast<TransportClass>(t));
  const bool ibEdges = f.transports.count(TransportClass::kNetIb) > 0;
  const bool socketEdges = f.transports.count(TransportClass::kNetSocket) > 0;
  if (!f.network) {
    // DESIGN.md: "Using network X", else IB when NET/IB : Using is present, else Socket when
    // NET/Socket : Using is; older logs say it only through the 2.3 line or the edges.
    if (netIbUsing_.value_or(false))
      f.network = "IB";
    else if (netSocketUsing_ || internalSocket_)
      f.network = "Socket";
    else if (ibEdges)
      f.network = "IB";
    else if (socketEdges)
      f.network = "Socket";
  }
  // eRDMA is NCCL's IB transport on erdma_* devices (its link layer printed as RoCE): only the
  // device name tells it from Mellanox RoCE.
  if (f.network == "IB" &&
      std::any_of(f.ibDevices.begin(), f.ibDevices.end(), [](const std::string& d) { return isErdmaDevice(d); }))
    f.network = "IB (eRDMA)";
  for (const auto& [key, e] : f.edges)
    if (e.transport == TransportClass::kNetOther) f.netPlugins.emplace(netName(e.via));
  // A plugin network that no "Using network" line named goes by the name its edges print.
  if (!f.network && f.netPlugins.size() == 1) f.network = *f.netPlugins.begin();
  bool netEdges = false, gdr = false;
  for (const auto& [key, e] : f.edges) {
    if (e.transport == TransportClass::kNetIb || e.transport == TransportClass::kNetSocket ||
        e.transport == TransportClass::kNetOther) {
      netEdges = true;
      gdr = gdr || e.gdr;
    }
  }
  if (netEdges)
    f.gdrdma = gdr || ringGdrOn_;
  else if (ringGdrOn_ || ringGdrOff_)
    f.gdrdma = ringGdrOn_;
  return f;
}

namespace {

// The edges, and the transport matrix over the ranks they name (cells "P2P+SHM", null for none).
std::pair<nlohmann::json, nlohmann::json> edgesJson(const NcclFacts& f) {
  using nlohmann::json;
  json edges = json::array();
  std::set<int> ranks;
  std::map<std::pair<int, int>, std::set<std::string>> cells;
  for (const auto& [key, e] : f.edges) {
    json entry = {{"from", e.from}, {"to", e.to},       {"transport", transportName(e.transport, e.via)},
                  {"via", e.via},   {"lines", e.lines}, {"gdr", e.gdr}};
    if (e.proxyRank >= 0) entry["proxy_rank"] = e.proxyRank;
    edges.push_back(std::move(entry));
    ranks.insert(e.from);
    ranks.insert(e.to);
    cells[{e.from, e.to}].emplace(transportName(e.transport, e.via));
  }
  json rows = json::array();
  for (int from : ranks) {
    json row = json::array();
    for (int to : ranks) {
      auto it = cells.find({from, to});
      if (it == cells.end()) {
        row.push_back(nullptr);
      } else {
        std::string joined;
        for (const auto& c : it->second) joined += (joined.empty() ? "" : "+") + c;
        row.push_back(joined);
      }
    }
    rows.push_back(std::move(row));
  }
  return {edges, json{{"ranks", std::vector<int>(ranks.begin(), ranks.end())}, {"cells", rows}}};
}

}  // namespace

std::vector<std::string> transportNames(const NcclFacts& f) {
  std::vector<std::string> out;
  for (auto t : f.transports) {
    if (t != TransportClass::kNetOther || f.netPlugins.empty()) out.emplace_back(transportClassName(t));
    if (t == TransportClass::kNetOther)
      for (const auto& plugin : f.netPlugins) out.push_back("NET/" + plugin);
  }
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json toJson(const NcclFacts& f) {
  using nlohmann::json;
  auto optional = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  const auto transports = transportNames(f);
  std::vector<std::string> kinds;
  for (auto k : f.failureKinds) kinds.emplace_back(failureKindName(k));
  std::sort(kinds.begin(), kinds.end());
  const auto [edges, matrix] = edgesJson(f);
  json warnings = json::array();
  for (const auto& w : f.warnings) {
    warnings.push_back({{"host", w.host},
                        {"pid", w.pid},
                        {"dev", w.dev},
                        {"location", w.file.empty() ? json(nullptr) : json(fmt::format("{}:{}", w.file, w.line))},
                        {"message", w.message},
                        {"kind", w.kind ? json(failureKindName(*w.kind)) : json(nullptr)}});
  }
  json timings = json::array();
  for (const auto& t : f.initTimings)
    timings.push_back({{"rank", t.rank}, {"nranks", t.nranks}, {"total_s", t.totalSeconds}});
  json codes = json::object();
  for (const auto& [code, count] : f.returnCodes) codes[std::to_string(code)] = count;
  json rankHosts = json::object();
  for (const auto& [rank, host] : f.rankHosts) rankHosts[std::to_string(rank)] = host;
  return {{"nccl_version", optional(f.ncclVersion)},
          {"cuda_version", optional(f.cudaVersion)},
          {"cuda_driver_version", optional(f.cudaDriverVersion)},
          {"hosts", f.hosts},
          {"nranks", optional(f.nranks)},
          {"nnodes", optional(f.nnodes)},
          {"network", optional(f.network)},
          {"net_plugins", f.netPlugins},
          {"ib_devices", f.ibDevices},
          {"socket_interfaces", f.socketInterfaces},
          {"transports", transports},
          {"gdrdma", optional(f.gdrdma)},
          {"edge_lines", f.edgeLines},
          {"env_overrides", f.envOverrides},
          {"init_complete_lines", f.initCompleteLines},
          {"coll_ops", f.collOps},
          {"has_warn", f.hasWarn()},
          {"failure_kinds", kinds},
          {"edges", edges},
          {"matrix", matrix},
          {"rank_hosts", rankHosts},
          {"warnings", warnings},
          {"warnings_dropped", f.warningsDropped},
          {"init_timings", timings},
          {"return_codes", codes},
          {"lines", {{"read", f.linesRead}, {"recognised", f.linesRecognised}, {"damaged", f.linesDamaged}}}};
}

}  // namespace ddp::profiler
