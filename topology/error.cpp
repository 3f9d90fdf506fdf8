#include "topology/error.hpp"

#include <algorithm>
#include <cctype>
#include <fmt/format.h>

namespace dtsim {
namespace {

// A value as it goes into the one-line message: control characters escaped, at most 200 bytes, cut before a
// character rather than inside one (a UTF-8 continuation byte is never the first one left out), so that the
// message stays UTF-8 where it goes into JSON (an invalid sweep point's row).
std::string printable(const std::string& value) {
  constexpr std::size_t kMost = 200;
  const auto continues = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; };
  std::string out;
  for (char c : value) {
    if (out.size() >= kMost && !continues(c)) {
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

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

// The single-word names of an allowed list ("a, b, c"); prose ("a divisor of heads") gives none.
std::vector<std::string> allowed_names(const std::string& allowed) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= allowed.size()) {
    std::size_t end = allowed.find(',', start);
    if (end == std::string::npos) end = allowed.size();
    std::string word = allowed.substr(start, end - start);
    word.erase(0, word.find_first_not_of(' '));
    word.erase(word.find_last_not_of(' ') + 1);
    if (!word.empty() && word.find(' ') != std::string::npos) return {};
    if (!word.empty()) out.push_back(word);
    start = end + 1;
  }
  return out;
}

std::string compose(const std::string& key, const std::string& value, const std::string& reason,
                    const std::string& allowed, const std::string& location) {
  std::string msg = location.empty() ? std::string() : location + ": ";
  msg += value.empty() ? fmt::format("{}: {}", key, reason) : fmt::format("{}: {} '{}'", key, reason, printable(value));
  // A value too long to be a misspelt name is not compared (the distance costs its length squared).
  constexpr std::size_t kLongestName = 100;
  const std::string hint = reason.starts_with("unknown") && !value.empty() && value.size() <= kLongestName
                               ? did_you_mean(value, allowed_names(allowed))
                               : std::string();
  if (!allowed.empty()) msg += fmt::format(" (allowed: {})", allowed);
  if (!hint.empty()) msg += fmt::format("; {}", hint);
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

std::string did_you_mean(std::string_view value, const std::vector<std::string>& candidates) {
  constexpr std::size_t kMost = 3;
  const std::string v = lower(value);
  if (v.empty()) return {};
  std::vector<std::string> near;
  std::size_t best = std::max<std::size_t>(1, v.size() / 3);
  for (const auto& c : candidates) {
    const std::string lc = lower(c);
    if (c == value || std::max(lc.size(), v.size()) - std::min(lc.size(), v.size()) > best) continue;
    const std::size_t d = edit_distance(v, lc);
    if (d < best) near.clear(), best = d;
    if (d == best && near.size() < kMost) near.push_back(c);
  }
  if (near.empty() && v.size() >= 2)
    for (const auto& c : candidates)
      if (c != value && lower(c).starts_with(v)) near.push_back(c);
  if (near.empty()) return {};
  std::string list;
  for (std::size_t i = 0; i < near.size() && i < kMost; ++i)
    list += fmt::format("{}'{}'", i == 0 ? "" : (i + 1 == std::min(near.size(), kMost) ? " or " : ", "), near[i]);
  if (near.size() > kMost) list += " or another";
  return fmt::format("did you mean {}?", list);
}

std::size_t first_non_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto lead = static_cast<unsigned char>(s[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t more = 0;
    unsigned char low = 0x80, high = 0xBF;   // the bounds of the second byte
    if (lead >= 0xC2 && lead <= 0xDF) more = 1;
    else if (lead == 0xE0) more = 2, low = 0xA0;
    else if (lead == 0xED) more = 2, high = 0x9F;
    else if (lead >= 0xE1 && lead <= 0xEF) more = 2;
    else if (lead == 0xF0) more = 3, low = 0x90;
    else if (lead == 0xF4) more = 3, high = 0x8F;
    else if (lead >= 0xF1 && lead <= 0xF3) more = 3;
    else return i;
    for (std::size_t k = 1; k <= more; ++k) {
      if (i + k >= s.size()) return i;
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (b < low || b > high) : (b < 0x80 || b > 0xBF)) return i;
    }
    i += more + 1;
  }
  return s.size();
}

void require_utf8(std::string_view text, std::string_view origin) {
  const std::size_t at = first_non_utf8(text);
  if (at == text.size()) return;
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  throw InputError("(text)", fmt::format("0x{:02X}", static_cast<unsigned char>(text[at])), "not UTF-8: byte",
                   "UTF-8 text", fmt::format("{}:{}", origin, line));
}

void assertion_failed(const char* expr, const char* file, int line, const std::string& what) {
  throw std::logic_error(fmt::format("internal error: {} ({}) at {}:{}", what, expr, file, line));
}

}  // namespace dtsim
