#pragma once
// Typed reads of the fields of a JSON object, for the readers of the run contract (run.json,
// exit records, step records, utilisation samples). Every failure is a ConfigError that names
// the field and what was expected ("missing field \"rank\"", "field \"np\" must be an
// integer"); the caller adds the file and line.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddp {

class JsonFields {
 public:
  // ConfigError "not a JSON object" when it is not one.
  explicit JsonFields(const nlohmann::json& object);

  // Present and not null.
  bool has(const char* key) const;

  int64_t integer(const char* key, int64_t min = INT64_MIN) const;
  std::optional<int64_t> optionalInteger(const char* key, int64_t min = INT64_MIN) const;
  double number(const char* key) const;
  std::optional<double> optionalNumber(const char* key) const;
  // A number >= 0.
  double duration(const char* key) const;
  std::string string(const char* key) const;
  std::optional<std::string> optionalString(const char* key) const;
  bool boolean(const char* key, bool fallback) const;
  const nlohmann::json& object(const char* key) const;
  const nlohmann::json& array(const char* key) const;
  std::vector<std::string> strings(const char* key) const;              // an array of strings; empty when absent
  std::map<std::string, std::string> stringMap(const char* key) const;  // empty when absent

 private:
  const nlohmann::json& require(const char* key) const;
  const nlohmann::json& object_;
};

}  // namespace ddp
