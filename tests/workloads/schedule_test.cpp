#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "workloads/schedule.hpp"

using namespace dtsim::workloads;

namespace {

ParallelPlan pipeline(int pp, int vpp = 1, Schedule s = Schedule::OneFOneB) {
  ParallelPlan p;
  p.pp = pp;
  p.vpp = vpp;
  p.schedule = s;
  return p;
}

std::string render(const std::vector<PipeStep>& order) {
  std::string out;
  for (const auto& s : order) {
    out.push_back(s.pass == Pass::Forward ? 'F' : 'B');
    out.append(std::to_string(s.micro_batch)).push_back(' ');
  }
  return out;
}

// Every (micro-batch, chunk) runs forward once and backward once, forward first.
void check_complete(const std::vector<PipeStep>& order, int m, int vpp) {
  CHECK(order.size() == static_cast<std::size_t>(2 * m * vpp));
  std::set<std::pair<int, int>> forwarded, done;
  for (const auto& s : order) {
    const std::pair<int, int> id{s.micro_batch, s.chunk};
    if (s.pass == Pass::Forward) CHECK(forwarded.insert(id).second);
    else {
      CHECK(forwarded.count(id) == 1);
      CHECK(done.insert(id).second);
    }
  }
  CHECK(done.size() == static_cast<std::size_t>(m * vpp));
}

}  // namespace

TEST_CASE("1F1B warms up with pp - stage - 1 forwards, then alternates") {
  const auto p = pipeline(4);
  CHECK(render(schedule_order(p, 6, 0)) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
  CHECK(render(schedule_order(p, 6, 2)) == "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 B5 ");
  CHECK(render(schedule_order(p, 6, 3)) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 ");
  for (int s = 0; s < 4; ++s) {
    check_complete(schedule_order(p, 6, s), 6, 1);
    CHECK(peak_in_flight(schedule_order(p, 6, s)) == 4 - s);   // in-flight micro-batches: pp - stage
  }
  CHECK(peak_in_flight(schedule_order(p, 2, 0)) == 2);          // fewer micro-batches than stages
}

TEST_CASE("GPipe runs every forward before any backward") {
  const auto p = pipeline(4, 1, Schedule::Gpipe);
  CHECK(render(schedule_order(p, 3, 1)) == "F0 F1 F2 B0 B1 B2 ");
  CHECK(peak_in_flight(schedule_order(p, 8, 3)) == 8);
}

TEST_CASE("interleaved 1F1B follows Megatron-LM's chunk order and warm-up") {
  const auto p = pipeline(2, 2);
  // 4 micro-batches, 2 chunks: virtual micro-batch k runs chunk (k / 2) % 2 on micro-batch (k / 4) * 2 + k % 2.
  const auto order = schedule_order(p, 4, 0);
  check_complete(order, 4, 2);
  // stage 0 warm-up: (2 - 0 - 1) * 2 + (2 - 1) * 2 = 4 forwards: mb0 c0, mb1 c0, mb0 c1, mb1 c1.
  CHECK(order[0] == PipeStep{Pass::Forward, 0, 0});
  CHECK(order[1] == PipeStep{Pass::Forward, 1, 0});
  CHECK(order[2] == PipeStep{Pass::Forward, 0, 1});
  CHECK(order[3] == PipeStep{Pass::Forward, 1, 1});
  CHECK(order[4] == PipeStep{Pass::Forward, 2, 0});
  CHECK(order[5] == PipeStep{Pass::Backward, 0, 1});   // backward starts with the last chunk
  CHECK(peak_in_flight(order) == 5);
  CHECK(peak_in_flight(schedule_order(p, 4, 1)) == 3);   // warm-up (0) * 2 + 2 = 2, then one more
  const auto big = pipeline(4, 2);
  for (int s = 0; s < 4; ++s) check_complete(schedule_order(big, 8, s), 8, 2);
  CHECK(peak_in_flight(schedule_order(big, 8, 0)) == (4 - 0 - 1) * 2 + (2 - 1) * 4 + 1);
}
