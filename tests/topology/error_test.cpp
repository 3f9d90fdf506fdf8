// InputError's one line and its "did you mean": near names by edit distance, prefixes, nothing for prose.
#include <doctest/doctest.h>

#include "topology/error.hpp"

using dtsim::did_you_mean;
using dtsim::InputError;

TEST_CASE("did you mean: one edit, a swap of neighbours, case, prefixes, nothing far or from prose") {
  const std::vector<std::string> gpus{"a100-sxm4-80gb", "h100-sxm5-80gb", "h100-pcie-80gb", "h100-nvl-94gb", "l4"};
  CHECK(did_you_mean("h100-sxm-80gb", gpus) == "did you mean 'h100-sxm5-80gb'?");      // a character left out
  CHECK(did_you_mean("H100-SXM5-80GB", gpus) == "did you mean 'h100-sxm5-80gb'?");     // case
  CHECK(did_you_mean("h100-smx5-80gb", gpus) == "did you mean 'h100-sxm5-80gb'?");     // neighbours swapped
  CHECK(did_you_mean("h100", gpus) == "did you mean 'h100-sxm5-80gb', 'h100-pcie-80gb' or 'h100-nvl-94gb'?");
  CHECK(did_you_mean("l5", gpus) == "did you mean 'l4'?");
  CHECK(did_you_mean("mi250x", gpus).empty());
  CHECK(did_you_mean("", gpus).empty());
  CHECK(did_you_mean("l4", gpus).empty());   // the name itself is no suggestion
  const std::vector<std::string> keys{"hidden", "heads", "kv_heads", "layers"};
  CHECK(did_you_mean("hiden", keys) == "did you mean 'hidden'?");
  CHECK(did_you_mean("head", keys) == "did you mean 'heads'?");
}

TEST_CASE("InputError adds the suggestion to unknown names from their allowed list, not to other errors") {
  CHECK(std::string(InputError("cluster.intra", "nvswich", "unknown value", "nvswitch, full-mesh, ring").what()) ==
        "cluster.intra: unknown value 'nvswich' (allowed: nvswitch, full-mesh, ring); did you mean 'nvswitch'?");
  // Not an unknown name: no guess.
  CHECK(std::string(InputError("parallelism.tp", "5", "does not divide model.heads 64: tp", "a divisor of heads").what()) ==
        "parallelism.tp: does not divide model.heads 64: tp '5' (allowed: a divisor of heads)");
  // An allowed list in prose gives no names to guess from.
  CHECK(std::string(InputError("--min", "8X", "unknown size suffix", "bytes with a K, M or G suffix, e.g. 8X1").what())
            .find("did you mean") == std::string::npos);
}

TEST_CASE("require_utf8: UTF-8 passes, and a stray, cut, overlong, surrogate or too large sequence is named") {
  using dtsim::require_utf8;
  CHECK_NOTHROW(require_utf8("", "f"));
  CHECK_NOTHROW(require_utf8("name: caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80\n", "f"));   // 2, 3, 4 bytes
  CHECK_NOTHROW(require_utf8("\xEF\xBF\xBF \xF4\x8F\xBF\xBF", "f"));   // U+FFFF, U+10FFFF
  const auto error = [](std::string_view text) {
    try {
      require_utf8(text, "s.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());   // "file:line: ..." (the location leads the message)
    }
    return std::string("accepted");
  };
  CHECK(error("a\nname: m\xCEx") == "s.yaml:2: (text): not UTF-8: byte '0xCE' (allowed: UTF-8 text)");   // stray
  CHECK(error("m\xC3") == "s.yaml:1: (text): not UTF-8: byte '0xC3' (allowed: UTF-8 text)");     // cut at the end
  CHECK(error("\xC0\x80") == "s.yaml:1: (text): not UTF-8: byte '0xC0' (allowed: UTF-8 text)");  // overlong NUL
  CHECK(error("\xE0\x80\x80") == "s.yaml:1: (text): not UTF-8: byte '0xE0' (allowed: UTF-8 text)");   // overlong
  CHECK(error("\xED\xA0\x80") == "s.yaml:1: (text): not UTF-8: byte '0xED' (allowed: UTF-8 text)");   // surrogate
  CHECK(error("\xF4\x90\x80\x80") == "s.yaml:1: (text): not UTF-8: byte '0xF4' (allowed: UTF-8 text)");   // > U+10FFFF
  CHECK(error("\xF5\x80\x80\x80") == "s.yaml:1: (text): not UTF-8: byte '0xF5' (allowed: UTF-8 text)");
  CHECK(error("\x80") == "s.yaml:1: (text): not UTF-8: byte '0x80' (allowed: UTF-8 text)");   // a lone continuation
}

TEST_CASE("a long value is cut in the one-line message between characters, never inside one") {
  std::string value(199, 'a');
  for (int i = 0; i < 10; ++i) value += "\xE2\x86\x92";   // U+2192, three bytes: the cut at 200 falls inside one
  const std::string what = InputError("model.name", value, "too long", "a short name").what();
  CHECK(dtsim::first_non_utf8(what) == what.size());
  CHECK(what.find(std::string(199, 'a') + "\xE2\x86\x92...") != std::string::npos);
}
