// Errors: exceptions for bad input, DTSIM_ASSERT for broken invariants (kept in Release, unlike assert).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim {

// Bad input. Carries the key (dotted scenario path, e.g. "cluster.gpu"), the offending value and what is
// allowed, so the program can print one line: `file:line: key: reason 'value' (allowed: ...)`.
// Library code never knows the file; the command-line program adds it.
class InputError : public std::runtime_error {
 public:
  InputError(std::string key, std::string value, std::string reason, std::string allowed,
             std::string location = {});

  // "file:line" where the error is, when the library knows it (a user graph file); else empty and the
  // program names the scenario file and the key's line.
  [[nodiscard]] const std::string& location() const { return location_; }
  [[nodiscard]] const std::string& key() const { return key_; }
  [[nodiscard]] const std::string& value() const { return value_; }
  [[nodiscard]] const std::string& reason() const { return reason_; }
  [[nodiscard]] const std::string& allowed() const { return allowed_; }

 private:
  std::string key_;
  std::string value_;
  std::string reason_;
  std::string allowed_;
  std::string location_;
};

// "did you mean 'x'?" for a misspelt name: the candidates nearest `value` by edit distance (a swap of two
// neighbours counts one; case ignored) when within a third of its length, else those that begin with it; at most
// three. Empty when none is near. InputError adds it to every "unknown ..." error from the allowed names.
std::string did_you_mean(std::string_view value, const std::vector<std::string>& candidates);

// The index of the first byte of `text` that does not begin or continue a well-formed UTF-8 sequence (a stray
// byte, a cut or overlong sequence, a surrogate, past U+10FFFF: the Unicode Standard's table 3-7), or text.size()
// when all of it is UTF-8.
std::size_t first_non_utf8(std::string_view text);

// Throws InputError naming `origin`'s line and the first byte of `text` that is not UTF-8 (a stray byte, a cut or
// overlong sequence, a surrogate, past U+10FFFF). YAML and DOT files are Unicode text, and every name read from
// them reaches the JSON results, which hold UTF-8 only.
void require_utf8(std::string_view text, std::string_view origin);

[[noreturn]] void assertion_failed(const char* expr, const char* file, int line, const std::string& what);

}  // namespace dtsim

#define DTSIM_ASSERT(cond, what)                                          \
  do {                                                                    \
    if (!(cond)) ::dtsim::assertion_failed(#cond, __FILE__, __LINE__, what); \
  } while (false)
