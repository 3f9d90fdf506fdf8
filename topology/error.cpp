#include "topology/error.hpp"

#include <fmt/format.h>

namespace dtsim {
namespace {
std::string compose(const std::string& key, const std::string& value, const std::string& reason,
                    const std::string& allowed, const std::string& location) {
  std::string msg = location.empty() ? std::string() : location + ": ";
  msg += value.empty() ? fmt::format("{}: {}", key, reason) : fmt::format("{}: {} '{}'", key, reason, value);
  if (!allowed.empty()) msg += fmt::format(" (allowed: {})", allowed);
  return msg;
}
}  // namespace

InputError::InputError(std::string key, std::string value, std::string reason, std::string allowed,
                       std::string location)
    : std::runtime_error(compose(key, value, reason, allowed, location)),
      key_(std::move(key)),
      value_(std::move(value)),
      reason_(std::move(reason)),
      allowed_(std::move(allowed)),
      location_(std::move(location)) {}

void assertion_failed(const char* expr, const char* file, int line, const std::string& what) {
  throw std::logic_error(fmt::format("internal error: {} ({}) at {}:{}", what, expr, file, line));
}

}  // namespace dtsim
