#include "topology/error.hpp"

#include <fmt/format.h>

namespace dtsim {
namespace {

// A value as it goes into the one-line message: control characters escaped, at most 200 characters.
std::string printable(const std::string& value) {
  constexpr std::size_t kMost = 200;
  std::string out;
  for (char c : value) {
    if (out.size() >= kMost) {
      out += "...";
      break;
    }
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else out += c;
  }
  return out;
}

std::string compose(const std::string& key, const std::string& value, const std::string& reason,
                    const std::string& allowed, const std::string& location) {
  std::string msg = location.empty() ? std::string() : location + ": ";
  msg += value.empty() ? fmt::format("{}: {}", key, reason) : fmt::format("{}: {} '{}'", key, reason, printable(value));
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
