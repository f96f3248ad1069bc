#include "ddp/common/json_fields.hpp"

#include "ddp/common/error.hpp"

#include <fmt/format.h>

namespace ddp {
namespace {

ConfigError wrongType(const char* key, const char* what) {
  return ConfigError(fmt::format("field \"{}\" must be {}", key, what));
}

}  // namespace

JsonFields::JsonFields(const nlohmann::json& object) : object_(object) {
  if (!object.is_object()) throw ConfigError("not a JSON object");
}

bool JsonFields::has(const char* key) const {
  auto it = object_.find(key);
  return it != object_.end() && !it->is_null();
}

const nlohmann::json& JsonFields::require(const char* key) const {
  auto it = object_.find(key);
  if (it == object_.end()) throw ConfigError(fmt::format("missing field \"{}\"", key));
  return *it;
}

int64_t JsonFields::integer(const char* key, int64_t min) const {
  const auto& value = require(key);
  if (!value.is_number_integer()) throw wrongType(key, "an integer");
  // Unsigned values above INT64_MAX would wrap: they are out of range too.
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw ConfigError(fmt::format("field \"{}\" is out of range", key));
  const auto n = value.get<int64_t>();
  if (n < min) throw ConfigError(fmt::format("field \"{}\" is {}, less than {}", key, n, min));
  return n;
}

std::optional<int64_t> JsonFields::optionalInteger(const char* key, int64_t min) const {
  if (!has(key)) return std::nullopt;
  return integer(key, min);
}

double JsonFields::number(const char* key) const {
  const auto& value = require(key);
  if (!value.is_number()) throw wrongType(key, "a number");
  return value.get<double>();
}

std::optional<double> JsonFields::optionalNumber(const char* key) const {
  if (!has(key)) return std::nullopt;
  return number(key);
}

double JsonFields::duration(const char* key) const {
  const auto& value = require(key);
  const double d = value.is_number() ? value.get<double>() : -1;
  if (!(d >= 0)) throw ConfigError(fmt::format("field \"{}\" must be a duration >= 0", key));
  return d;
}

std::string JsonFields::string(const char* key) const {
  const auto& value = require(key);
  if (!value.is_string()) throw wrongType(key, "a string");
  return value.get<std::string>();
}

std::optional<std::string> JsonFields::optionalString(const char* key) const {
  if (!has(key)) return std::nullopt;
  return string(key);
}

bool JsonFields::boolean(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  const auto& value = object_.at(key);
  if (!value.is_boolean()) throw wrongType(key, "true or false");
  return value.get<bool>();
}

const nlohmann::json& JsonFields::object(const char* key) const {
  const auto& value = require(key);
  if (!value.is_object()) throw wrongType(key, "an object");
  return value;
}

const nlohmann::json& JsonFields::array(const char* key) const {
  const auto& value = require(key);
  if (!value.is_array()) throw wrongType(key, "an array");
  return value;
}

std::vector<std::string> JsonFields::strings(const char* key) const {
  std::vector<std::string> out;
  if (!has(key)) return out;
  for (const auto& item : array(key)) {
    if (!item.is_string()) throw wrongType(key, "an array of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::map<std::string, std::string> JsonFields::stringMap(const char* key) const {
  std::map<std::string, std::string> out;
  if (!has(key)) return out;
  for (const auto& [name, value] : object(key).items()) {
    if (!value.is_string()) throw wrongType(key, "an object of strings");
    out[name] = value.get<std::string>();
  }
  return out;
}

}  // namespace ddp
