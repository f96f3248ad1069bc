// Line-level NCCL log parsing: hand-written scanning (no regex), so a 1 GB log parses in about
// 1.5 s (docs/benchmarks.md). Shapes: ../shared/nccl-log-format.md, docs/nccl-parser.md.
#include "ddp/profiler/nccl/line.hpp"

#include "text.hpp"

#include <array>
#include <cctype>
#include <cstring>
#include <type_traits>

namespace ddp::profiler {
namespace {

using detail::contains;
using detail::isSpace;
using detail::startsWith;
using detail::trim;

bool isDigit(char c) { return c >= '0' && c <= '9'; }

// Reads an unsigned decimal at s[i]; advances i.
std::optional<int64_t> readInt(std::string_view s, size_t& i) {
  if (i >= s.size() || !isDigit(s[i])) return std::nullopt;
  int64_t v = 0;
  while (i < s.size() && isDigit(s[i]) && v < (int64_t{1} << 58)) v = v * 10 + (s[i++] - '0');
  return v;
}

bool expect(std::string_view s, size_t& i, std::string_view what) {
  if (s.size() - std::min(i, s.size()) < what.size()) return false;
  for (size_t k = 0; k < what.size(); ++k)
    if (s[i + k] != what[k]) return false;  // short literals: a loop beats a memcmp call
  i += what.size();
  return true;
}

// memchr for the first character, then a compare: faster than memmem on ~200-byte lines,
// where memmem's set-up dominates.
size_t findIn(std::string_view hay, std::string_view needle, size_t from = 0) { return hay.find(needle, from); }

bool isAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
int hexValue(char c) {
  if (isDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
// Skips one space-free token at s[i].
void skipToken(std::string_view s, size_t& i) {
  while (i < s.size() && s[i] != ' ') ++i;
}

// Parses "host:pid:tid [dev] MIDDLE" ending at `end` (where the level tag starts) within s.
bool parsePrefix(std::string_view s, size_t end, NcclLine& out) {
  size_t pos = end;
  while (pos > 0) {
    pos = s.rfind("] ", pos - 1);
    if (pos == std::string_view::npos) return false;
    size_t open = s.rfind('[', pos);
    if (open == std::string_view::npos || open < 2 || s[open - 1] != ' ' || open + 1 == pos) continue;
    bool digits = true;
    for (size_t k = open + 1; k < pos; ++k) digits = digits && isDigit(s[k]);
    if (!digits) continue;
    // tid, then ':' pid, then ':' host (back to whitespace, ':' or the start)
    size_t k = open - 1;
    auto backDigits = [&](int64_t& value) {
      size_t stop = k;
      while (k > 0 && isDigit(s[k - 1])) --k;
      if (k == stop) return false;
      size_t at = k;
      value = readInt(s.substr(0, stop), at).value_or(0);
      return true;
    };
    int64_t tid = 0, pid = 0;
    if (!backDigits(tid) || k == 0 || s[k - 1] != ':') continue;
    --k;
    if (!backDigits(pid) || k == 0 || s[k - 1] != ':') continue;
    size_t hostEnd = --k;
    while (k > 0 && !isSpace(s[k - 1]) && s[k - 1] != ':' && s[k - 1] != ']') --k;
    out.hasPrefix = true;
    out.host = s.substr(k, hostEnd - k);
    out.pid = pid;
    out.tid = tid;
    size_t devAt = open + 1;
    out.dev = static_cast<int>(readInt(s, devAt).value_or(-1));
    // What lies between "[dev] " and the tag: WARN's "file:line [(func)] ", TRACE's
    // "<ms> func:line ", or legacy WARN's "file:line ".
    std::string_view middle = trim(s.substr(pos + 2, end - pos - 2));
    if (!middle.empty() && isDigit(middle.front())) {  // TRACE timestamp
      size_t space = middle.find(' ');
      middle = space == std::string_view::npos ? std::string_view() : trim(middle.substr(space));
    }
    size_t space = middle.find(' ');
    std::string_view location = middle.substr(0, space);
    size_t colon = location.rfind(':');
    if (colon != std::string_view::npos && colon + 1 < location.size()) {
      size_t at = colon + 1;
      if (auto line = readInt(location, at); line && at == location.size()) {
        out.file = location.substr(0, colon);
        out.fileLine = static_cast<int>(*line);
      }
    }
    return true;
  }
  return false;
}

struct Tag {
  size_t at;
  size_t length;
  Level level;
};

std::optional<Tag> tagAt(std::string_view s, size_t at, bool withNccl) {
  static constexpr std::array<std::pair<std::string_view, Level>, 3> kLevels = {
      {{"INFO", Level::kInfo}, {"WARN", Level::kWarn}, {"TRACE", Level::kTrace}}};
  size_t word = at + (withNccl ? 5 : 0);
  for (const auto& [name, level] : kLevels) {
    if (startsWith(s.substr(std::min(word, s.size())), name) &&
        (word + name.size() == s.size() || s[word + name.size()] == ' '))
      return Tag{at, word + name.size() - at, level};
  }
  return std::nullopt;
}

// Whether "NCCL " occurs in s: memchr for its rare first letter, then four compares.
bool hasNcclWord(std::string_view s) {
  const char* p = s.data();
  const char* const end = p + s.size();
  while (end - p >= 5 && (p = static_cast<const char*>(std::memchr(p, 'N', static_cast<size_t>(end - p - 4))))) {
    if (p[1] == 'C' && p[2] == 'C' && p[3] == 'L' && p[4] == ' ') return true;
    ++p;
  }
  return false;
}

// The standard line, read forwards in one pass: "host:pid:tid [dev] NCCL LEVEL message" from the
// line's first byte, nothing between "[dev] " and the tag, and no second "NCCL " in the message
// (where a concurrent writer's line may have been interleaved). Anything else is left to the
// general reading, which gives the same result for these lines.
// prefixLength, when given, gets the length of "host:pid:tid [dev] NCCL LEVEL " (0 when the level
// ends the line).
std::optional<NcclLine> parseStandard(std::string_view s, size_t* prefixLength) {
  const size_t n = s.size();
  size_t i = 0;
  while (i < n && s[i] != ':') {
    if (isSpace(s[i]) || s[i] == ']') return std::nullopt;
    ++i;
  }
  NcclLine out;
  out.host = s.substr(0, i);
  ++i;
  std::optional<int64_t> pid, tid, dev;
  if (!(pid = readInt(s, i)) || !expect(s, i, ":") || !(tid = readInt(s, i)) || !expect(s, i, " [") ||
      !(dev = readInt(s, i)) || !expect(s, i, "] NCCL "))
    return std::nullopt;
  out.pid = *pid;
  out.tid = *tid;
  out.dev = static_cast<int>(*dev);
  const auto tag = tagAt(s, i - 5, true);
  if (!tag) return std::nullopt;
  out.level = tag->level;
  out.message = trim(s.substr(tag->at + tag->length));
  if (hasNcclWord(out.message)) return std::nullopt;
  out.hasPrefix = true;
  if (prefixLength) *prefixLength = tag->at + tag->length < n ? tag->at + tag->length + 1 : 0;
  return out;
}

// Any line but the standard one: the last "NCCL <LEVEL>" tag, its prefix read backwards.
std::optional<NcclLine> parseGeneral(std::string_view line) {
  // The last "NCCL <LEVEL>" tag with a prefix before it is the line's; an earlier one means a
  // concurrent writer's unfinished line was interleaved in front of it.
  std::optional<Tag> last;
  int tags = 0;
  for (size_t at = findIn(line, "NCCL "); at != std::string_view::npos; at = findIn(line, "NCCL ", at + 5)) {
    if (auto tag = tagAt(line, at, true)) {
      last = tag;
      ++tags;
    }
  }
  if (!last) {
    // NCCL <= 2.2: "host:pid:tid [dev] INFO msg", "... [dev] include/socket.h:360 WARN msg".
    for (std::string_view word : {" INFO ", " WARN "}) {
      size_t at = findIn(line, word);
      if (at == std::string_view::npos) continue;
      if (auto tag = tagAt(line, at + 1, false)) {
        NcclLine out;
        if (!parsePrefix(line, at + 1, out)) continue;
        out.level = tag->level;
        out.message = trim(line.substr(at + 1 + tag->length));
        return out;
      }
    }
    return std::nullopt;
  }
  NcclLine out;
  out.level = last->level;
  out.message = trim(line.substr(last->at + last->length));
  out.damaged = tags > 1;
  // A prefix belongs to this tag only if it lies after the previous line's text.
  if (!parsePrefix(line, last->at, out)) out.hasPrefix = false;
  return out;
}

}  // namespace

std::optional<NcclLine> NcclLineReader::parse(std::string_view line) {
  const size_t n = prefix_.size();
  if (n > 0 && line.size() >= n && std::memcmp(line.data(), prefix_.data(), n) == 0) {
    NcclLine out = fields_;
    out.host = std::string_view(prefix_).substr(0, hostLength_);
    out.message = trim(line.substr(n));
    if (!hasNcclWord(out.message)) return out;
    return parseGeneral(line);  // a second tag
  }
  size_t prefixLength = 0;
  auto parsed = parseStandard(line, &prefixLength);
  if (!parsed) return parseGeneral(line);
  if (prefixLength > 0) {
    prefix_.assign(line.data(), prefixLength);
    fields_ = *parsed;
    hostLength_ = parsed->host.size();
  }
  return parsed;
}

std::optional<NcclLine> parseNcclLine(std::string_view line) {
  if (auto standard = parseStandard(line, nullptr)) return standard;
  return parseGeneral(line);
}

std::optional<VersionInfo> parseVersion(std::string_view text) {
  size_t at = findIn(text, "NCCL version ");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(at + 13);
  size_t i = 0;
  while (i < rest.size() && (isDigit(rest[i]) || rest[i] == '.')) ++i;
  if (i == 0 || !isDigit(rest[0])) return std::nullopt;
  VersionInfo v;
  v.nccl = rest.substr(0, i);
  if (startsWith(rest.substr(i), "+cuda")) {
    size_t b = i + 5, e = b;
    while (e < rest.size() && (isDigit(rest[e]) || rest[e] == '.')) ++e;
    if (e > b && isDigit(rest[b]) && (e == rest.size() || isSpace(rest[e]))) v.cuda = rest.substr(b, e - b);
  }
  return v;
}

std::string_view netName(std::string_view via) {
  const auto rest = startsWith(via, "NET/") ? via.substr(4) : via;
  return rest.substr(0, rest.find('/'));
}

std::string transportName(TransportClass c, std::string_view via) {
  if (c != TransportClass::kNetOther || !startsWith(via, "NET/")) return std::string(transportClassName(c));
  return "NET/" + std::string(netName(via));
}

std::string_view transportClassName(TransportClass c) {
  switch (c) {
    case TransportClass::kP2P:
      return "P2P";
    case TransportClass::kShm:
      return "SHM";
    case TransportClass::kNetIb:
      return "NET/IB";
    case TransportClass::kNetSocket:
      return "NET/Socket";
    case TransportClass::kNetOther:
      return "NET/other";
    case TransportClass::kNvls:
      return "NVLS";
    case TransportClass::kCollNet:
      return "COLLNET";
  }
  return "?";
}

std::optional<Edge> parseEdge(std::string_view m) {
  size_t i = 0;
  if (!expect(m, i, "Channel ") && !expect(m, i, "Ring ")) return std::nullopt;
  Edge e;
  auto channel = readInt(m, i);
  if (!channel) return std::nullopt;
  e.channel = static_cast<int>(*channel);
  if (i < m.size() && m[i] == '/') {  // connIndex
    ++i;
    if (!readInt(m, i)) return std::nullopt;
  }
  if (!expect(m, i, " : ")) return std::nullopt;
  auto rankWithDevice = [&](int& rank) {
    auto r = readInt(m, i);
    if (!r) return false;
    rank = static_cast<int>(*r);
    if (i < m.size() && m[i] == '[') {  // "[device]": a few characters, not worth a memchr
      while (i < m.size() && m[i] != ']') ++i;
      if (i == m.size()) return false;
      ++i;
    }
    return true;
  };
  if (!rankWithDevice(e.from) || !expect(m, i, " -> ") || !rankWithDevice(e.to)) return std::nullopt;
  if (expect(m, i, " [send]"))
    e.direction = 1;
  else if (expect(m, i, " [receive]"))
    e.direction = -1;
  if (!expect(m, i, " via ")) return std::nullopt;
  e.via = trim(m.substr(i));
  const auto via = e.via;
  if (startsWith(via, "P2P"))
    e.transport = TransportClass::kP2P;
  else if (startsWith(via, "SHM") || startsWith(via, "direct shared memory"))
    e.transport = TransportClass::kShm;
  else if (startsWith(via, "NVLS"))
    e.transport = TransportClass::kNvls;
  else if (startsWith(via, "CollNet") || startsWith(via, "COLLNET"))
    e.transport = TransportClass::kCollNet;
  else if (startsWith(via, "NET/")) {
    std::string_view rest = via.substr(4);
    size_t slash = rest.find('/');
    std::string_view name = rest.substr(0, slash);
    e.transport = startsWith(name, "IB") ? TransportClass::kNetIb
                  : name == "Socket"     ? TransportClass::kNetSocket
                                         : TransportClass::kNetOther;
    if (slash != std::string_view::npos) {
      size_t k = slash + 1;
      if (auto dev = readInt(rest, k)) {
        e.netDevice = static_cast<int>(*dev);
        if (k < rest.size() && rest[k] == '(') {  // PXN: the proxy rank relays this edge
          ++k;
          if (auto proxy = readInt(rest, k); proxy && k < rest.size() && rest[k] == ')')
            e.proxyRank = static_cast<int>(*proxy);
        }
      }
    }
    e.gdr = contains(rest, "/GDRDMA");
  } else {
    return std::nullopt;
  }
  return e;
}

std::optional<EnvOverride> parseEnvOverride(std::string_view m) {
  if (!startsWith(m, "NCCL_")) return std::nullopt;
  // "NCCL_X set by environment to V." (the parameter table), "NCCL_IB_HCA set to V" (the transports'
  // own lines, e.g. net_ib's).
  size_t at = m.find(" set by environment to "), skip = 23;
  if (at == std::string_view::npos) at = m.find(" set to "), skip = 8;
  if (at == std::string_view::npos || m.substr(0, at).find(' ') != std::string_view::npos) return std::nullopt;
  std::string_view value = trim(m.substr(at + skip));
  if (!value.empty() && value.back() == '.') value.remove_suffix(1);
  return EnvOverride{m.substr(0, at), value};
}

std::optional<int64_t> numberAfter(std::string_view text, std::string_view key) {
  for (size_t at = findIn(text, key); at != std::string_view::npos; at = findIn(text, key, at + 1)) {
    if (at > 0 && !isSpace(text[at - 1]) && text[at - 1] != '[' && text[at - 1] != '(') continue;
    size_t i = at + key.size();
    if (i < text.size() && (text[i] == ' ' || text[i] == '=')) ++i;
    if (auto v = readInt(text, i)) return v;
  }
  return std::nullopt;
}

// "AllReduce: opCount " with its ':' at `at` -> a record with the op, and where the opCount value
// starts.
static std::optional<std::pair<CollRecord, size_t>> collHeadAt(std::string_view text, size_t at) {
  if (!(text.size() - at >= 10 && text.compare(at, 10, ": opCount ") == 0)) return std::nullopt;
  size_t b = at;
  while (b > 0 && isAlpha(text[b - 1])) --b;
  if (b == at) return std::nullopt;
  CollRecord r;
  r.op = text.substr(b, at - b);
  return std::make_pair(r, at + 10);
}

static std::optional<std::pair<CollRecord, size_t>> collHead(std::string_view text) {
  size_t at = findIn(text, ": opCount ");
  if (at == std::string_view::npos) return std::nullopt;
  return collHeadAt(text, at);
}

std::optional<CollRecord> parseColl(std::string_view text) {
  auto head = collHead(text);
  if (!head) return std::nullopt;
  auto [r, k] = *head;
  for (int v; k < text.size() && (v = hexValue(text[k])) >= 0; ++k)
    r.opCount = r.opCount * 16 + static_cast<uint64_t>(v);
  // The fixed layout of enqueue.cc, read in one pass: this is the bulk of a COLL-enabled log.
  {
    size_t i = k;
    auto field = [&](std::string_view key, auto& out) {
      if (!expect(text, i, key)) return false;
      auto v = readInt(text, i);
      if (!v) return false;
      out = static_cast<std::remove_reference_t<decltype(out)>>(*v);
      return true;
    };
    auto skip = [&](std::string_view key) {
      if (!expect(text, i, key)) return false;
      skipToken(text, i);
      return true;
    };
    if (skip(" sendbuff ") && skip(" recvbuff ") && field(" count ", r.count) && field(" datatype ", r.datatype) &&
        field(" op ", r.redop) && field(" root ", r.root) && skip(" comm ") && field(" [nranks=", r.nranks))
      return r;
    r.count = 0;
    r.datatype = r.redop = r.root = r.nranks = -1;
  }
  // Any other order or extra fields (RCCL's, future versions): "key value" pairs.
  std::string_view key;
  while (k < text.size()) {
    while (k < text.size() && text[k] == ' ') ++k;
    size_t end = k;
    while (end < text.size() && text[end] != ' ') ++end;
    std::string_view token = text.substr(k, end - k);
    if (startsWith(token, "[nranks=")) {
      size_t at2 = 8;
      if (auto v = readInt(token, at2)) r.nranks = static_cast<int>(*v);
    } else if (!key.empty()) {
      size_t at2 = 0;
      if (auto v = readInt(token, at2)) {
        if (key == "count")
          r.count = static_cast<uint64_t>(*v);
        else if (key == "datatype")
          r.datatype = static_cast<int>(*v);
        else if (key == "op")
          r.redop = static_cast<int>(*v);
        else if (key == "root")
          r.root = static_cast<int>(*v);
      }
      key = {};
      k = end;
      continue;
    }
    key = token;
    k = end;
  }
  return r;
}

std::optional<CollRecord> collSummaryAt(std::string_view text, size_t colon) {
  auto head = collHeadAt(text, colon);
  if (!head) return std::nullopt;
  auto [r, at] = *head;
  size_t open = text.rfind('[');
  if (open != std::string_view::npos && open > at) {
    size_t i = open;
    if (expect(text, i, "[nranks="))
      if (auto v = readInt(text, i)) r.nranks = static_cast<int>(*v);
  }
  return r;
}

std::optional<CollRecord> parseCollSummary(std::string_view text) {
  const size_t at = findIn(text, ": opCount ");
  return at == std::string_view::npos ? std::nullopt : collSummaryAt(text, at);
}

std::string_view failureKindName(FailureKind kind) {
  switch (kind) {
    case FailureKind::kConnectionRefused:
      return "connection_refused";
    case FailureKind::kConnectionTimeout:
      return "connection_timeout";
    case FailureKind::kSocketAbort:
      return "socket_abort";
    case FailureKind::kIbCompletionError:
      return "ib_completion_error";
    case FailureKind::kUnhandledSystemError:
      return "unhandled_system_error";
    case FailureKind::kUnhandledCudaError:
      return "unhandled_cuda_error";
    case FailureKind::kTimeout:
      return "timeout";
    case FailureKind::kNoIbDevice:
      return "no_ib_device";
    case FailureKind::kDuplicateGpu:
      return "duplicate_gpu";
    case FailureKind::kRemoteError:
      return "remote_error";
    case FailureKind::kCollNetFailed:
      return "collnet_failed";
  }
  return "?";
}

// A peer's process gone or the network to it: NCCL's ncclRemoteError, as PyTorch prints it too.
static bool remoteError(std::string_view m) {
  return contains(m, "ncclRemoteError") || contains(m, "remote process exited");
}

std::optional<FailureKind> classifyFailure(std::string_view m) {
  if (contains(m, "Connection refused")) return FailureKind::kConnectionRefused;
  if (contains(m, "Connection timed out")) return FailureKind::kConnectionTimeout;
  if (contains(m, "Software caused connection abort") || contains(m, "Connection closed by remote peer") ||
      contains(m, "Connection reset by peer"))
    return FailureKind::kSocketAbort;
  if (contains(m, "Got completion")) return FailureKind::kIbCompletionError;
  if (contains(m, "unhandled system error") || contains(m, "ncclSystemError"))
    return FailureKind::kUnhandledSystemError;
  if (contains(m, "unhandled cuda error") || contains(m, "ncclUnhandledCudaError"))
    return FailureKind::kUnhandledCudaError;
  if (contains(m, "NET/IB : No device found")) return FailureKind::kNoIbDevice;
  if (contains(m, "Duplicate GPU detected")) return FailureKind::kDuplicateGpu;
  if (remoteError(m)) return FailureKind::kRemoteError;
  if (contains(m, "Cannot initialize CollNet") ||
      (contains(m, "SHARP") && (contains(m, "failed") || contains(m, "error"))))
    return FailureKind::kCollNetFailed;
  if (contains(m, "Watchdog caught collective operation timeout") || contains(m, "timed out") || contains(m, "Timeout"))
    return FailureKind::kTimeout;
  return std::nullopt;
}

std::optional<FailureKind> classifyTorchNcclLine(std::string_view line) {
  if (contains(line, "Watchdog caught collective operation timeout")) return FailureKind::kTimeout;
  if (remoteError(line)) return FailureKind::kRemoteError;
  return std::nullopt;
}

}  // namespace ddp::profiler
