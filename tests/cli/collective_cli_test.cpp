// `dtsim collective` prints what nccl-tests' *_perf binaries print, so that scripts written for nccl-tests read
// it: these tests parse the table the way such scripts do (skip '#' lines, split on blanks, thirteen fields; the
// "# Avg bus bandwidth" line by its label) and run nccl-tests' own command lines.
#include <cmath>
#include <regex>

#include "cli/cli_support.hpp"

using namespace cli_support;

namespace {

struct NcclTestsRow {
  double size;
  long long count;
  std::string type, redop;
  int root;
  double time_us, algbw, busbw, in_place_time_us, in_place_busbw;
  std::string wrong;
};

struct NcclTestsOutput {
  std::vector<NcclTestsRow> rows;
  double avg_busbw = -1;
  int devices = 0;
};

// As the parsers of nccl-tests logs read it (superbench, nccl-tests' own CI, many notebooks).
NcclTestsOutput parse_nccl_tests(const std::string& text) {
  NcclTestsOutput out;
  std::istringstream in(text);
  const std::regex avg(R"(^# Avg bus bandwidth\s*:\s*([0-9.]+))"), device(R"(^#\s+Rank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, avg)) out.avg_busbw = std::stod(m[1]);
    if (std::regex_search(line, device)) ++out.devices;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::vector<std::string> w{std::istream_iterator<std::string>(f), std::istream_iterator<std::string>()};
    REQUIRE_MESSAGE(w.size() == 13, line);
    out.rows.push_back({std::stod(w[0]), std::stoll(w[1]), w[2], w[3], std::stoi(w[4]), std::stod(w[5]),
                        std::stod(w[6]), std::stod(w[7]), std::stod(w[9]), std::stod(w[11]), w[8]});
  }
  return out;
}

}  // namespace

TEST_CASE("collective: nccl-tests' header, thirteen columns and the average bus bandwidth, read as nccl-tests' parsers read them") {
  const auto r = dtsim("collective --gpu h100-sxm5-80gb --gpus 8 --min 8 --max 1G --step-factor 8");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.rfind("# nThread 1 nGpus 8 minBytes 8 maxBytes 1073741824 step: 8(factor)", 0) == 0);
  CHECK(r.out.find("out-of-place") != std::string::npos);
  CHECK(r.out.find("in-place") != std::string::npos);
  CHECK(r.out.find("#       size         count      type   redop    root     time   algbw   busbw #wrong") !=
        std::string::npos);
  const auto p = parse_nccl_tests(r.out);
  CHECK(p.devices == 8);
  REQUIRE(p.rows.size() == 10);
  double sum = 0;
  for (const auto& row : p.rows) {
    CHECK(row.type == "float");
    CHECK(row.redop == "sum");
    CHECK(row.root == -1);
    CHECK(row.count == static_cast<long long>(row.size / 4));
    CHECK(row.wrong == "N/A");   // dtsim moves no data to check
    CHECK(row.in_place_time_us == row.time_us);
    // Two decimals printed: within their rounding.
    CHECK(std::abs(row.algbw - row.size / row.time_us / 1e3) <= 0.01 + 0.01 * row.algbw);
    CHECK(std::abs(row.busbw - row.algbw * 2 * 7 / 8) <= 0.02 + 0.01 * row.busbw);   // all-reduce: 2(n-1)/n
    sum += row.busbw;
  }
  CHECK(p.rows.front().size == 8);
  CHECK(p.rows.back().size == 1073741824.0);
  CHECK(p.avg_busbw == doctest::Approx(sum / 10).epsilon(0.001));
  CHECK(p.rows.back().busbw > 100 * p.rows.front().busbw);
}

TEST_CASE("collective: nccl-tests' own flags run unchanged (-b -e -f -g -d -o -r -n -w -c), counts per rank as nccl-tests counts them") {
  const auto r = dtsim("collective --gpu a100-sxm4-80gb -g 8 -b 1M -e 4M -f 2 -d bfloat16 -o max");
  REQUIRE_MESSAGE(r.status == 0, r.err);
  const auto p = parse_nccl_tests(r.out);
  REQUIRE(p.rows.size() == 3);
  CHECK(p.rows[0].size == 1048576.0);
  CHECK(p.rows[0].count == 524288);   // two-byte elements
  CHECK(p.rows[0].type == "bfloat16");
  CHECK(p.rows[0].redop == "max");
  // all_gather_perf counts each rank's elements and prints no reduction.
  const auto g = parse_nccl_tests(dtsim("collective --gpu a100-sxm4-80gb -g 8 -b 8M -e 8M --op allgather").out);
  REQUIRE(g.rows.size() == 1);
  CHECK(g.rows[0].count == 8 * 1048576 / 4 / 8);
  CHECK(g.rows[0].redop == "none");
  // nccl-tests' rounding: whole elements per rank (8 ranks of doubles: 64 bytes at the least), lower-case suffixes.
  const auto odd = parse_nccl_tests(dtsim("collective --gpu a100-sxm4-80gb -g 8 -b 8 -e 1k -f 4 --op allgather -d double").out);
  REQUIRE(odd.rows.size() == 3);
  CHECK(odd.rows[0].size == 64);     // 8 and 32 bytes asked: one double a rank, one row
  CHECK(odd.rows[0].count == 1);
  CHECK(odd.rows[1].size == 128);
  CHECK(odd.rows[2].size == 512);
  CHECK(odd.rows.back().count == 8);
  // broadcast_perf prints its root; the chain starts there.
  const auto b = parse_nccl_tests(dtsim("collective --gpu a100-pcie-80gb --intra pcie -g 8 -b 64M -e 64M --op broadcast -r 5").out);
  REQUIRE(b.rows.size() == 1);
  CHECK(b.rows[0].root == 5);
  // The same run as JSON carries the same columns.
  const auto j = nlohmann::json::parse(dtsim("collective --gpu a100-sxm4-80gb -g 8 -b 1M -e 1M -d half --format json").out);
  CHECK(j[0]["count"] == 524288);
  CHECK(j[0]["type"] == "half");
  CHECK(j[0]["redop"] == "sum");
  CHECK(j[0]["root"] == -1);
  // -n, -w and -c 0, as nccl-tests scripts pass them: the header says so, the times are one iteration's.
  const auto n = dtsim("collective --gpu a100-sxm4-80gb -g 8 -b 1M -e 4M -f 2 -d bfloat16 -o max -n 20 -w 5 -c 0");
  REQUIRE_MESSAGE(n.status == 0, n.err);
  CHECK(n.out.find("warmup iters: 5 iters: 20 agg iters: 1 validation: 0") != std::string::npos);
  CHECK(parse_nccl_tests(n.out).rows.size() == 3);
  CHECK(n.out.substr(n.out.find("#       size")) == r.out.substr(r.out.find("#       size")));
}

TEST_CASE("collective: an unknown datatype or reduction, a root outside the group, -c 1 and bad iterations get one line and exit 2") {
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"-d float32", "--datatype: unknown datatype 'float32' (allowed: int8, uint8"},
           {"-o mean", "--redop: unknown reduction 'mean' (allowed: sum, prod, max, min, avg)"},
           {"--op broadcast -r 8", "--root: is not a rank of the collective: '8' (allowed: a rank in [0, 7])"},
           {"-c 1", "--check: asks to check the results, but dtsim moves no data: '1' (allowed: 0"},
           {"-n 0", "--iters: out of range '0' (allowed: an integer in [1, 1000000])"},
           {"-w -1", "--warmup-iters: out of range '-1' (allowed: an integer in [0, 1000000])"}}) {
    CAPTURE(args);
    const auto e = dtsim("collective --gpu a100-sxm4-80gb -g 8 -b 1M -e 1M " + args);
    CHECK(e.status == 2);
    CHECK(e.out.empty());
    CHECK(e.err.find("dtsim: error: " + expect) == 0);
    CHECK(std::count(e.err.begin(), e.err.end(), '\n') == 1);
  }
}
