#pragma once
// Small string_view helpers shared by the profiler's parsers (inline: they sit on the hot path
// of a gigabyte log, where a call to memcmp costs more than the loop).

#include <cctype>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ddp::profiler::detail {

inline bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && isSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && isSpace(s.back())) s.remove_suffix(1);
  return s;
}

inline bool startsWith(std::string_view s, std::string_view p) {
  if (s.size() < p.size()) return false;
  for (size_t k = 0; k < p.size(); ++k)
    if (s[k] != p[k]) return false;
  return true;
}

inline bool equal(std::string_view a, std::string_view b) { return a.size() == b.size() && startsWith(a, b); }

inline bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

// The whole of `text` as a finite number, if it is one.
inline std::optional<double> number(const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

inline std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace ddp::profiler::detail
