// run_isolated: one SimGrid simulation per child process (SimGrid allows one Engine per process, and its clock,
// signals and model config leak into the next one; ../shared/SIMGRID.md §7).
//
// Wire format, child to parent through a pipe: one tag byte, then length-prefixed strings.
//   'R' result            'I' InputError: key, value, reason, allowed, location            'E' other: what()
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <csignal>
#include <new>
#include <optional>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "sim/process.hpp"
#include "sim/simgrid/isolated.hpp"
#include "topology/error.hpp"

namespace dtsim::sim {
namespace {

constexpr char kResult = 'R';
constexpr char kInputError = 'I';
constexpr char kOtherError = 'E';

void append(std::string& out, std::string_view s) {
  const auto n = static_cast<std::uint64_t>(s.size());
  std::array<char, sizeof n> len{};
  std::memcpy(len.data(), &n, sizeof n);
  out.append(len.data(), len.size());
  out.append(s);
}

// Reads length-prefixed strings back; throws on a truncated message.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  std::string next() {
    std::uint64_t n = 0;
    if (data_.size() < sizeof n) throw std::runtime_error("simulation process sent a truncated message");
    std::memcpy(&n, data_.data(), sizeof n);
    data_.remove_prefix(sizeof n);
    if (data_.size() < n) throw std::runtime_error("simulation process sent a truncated message");
    std::string s(data_.substr(0, static_cast<std::size_t>(n)));
    data_.remove_prefix(static_cast<std::size_t>(n));
    return s;
  }

 private:
  std::string_view data_;
};

std::string encode_child_result(const std::function<std::string()>& work) {
  std::string msg;
  try {
    std::string result = work();
    msg.push_back(kResult);
    append(msg, result);
  } catch (const InputError& e) {
    msg.assign(1, kInputError);
    for (const std::string* s : {&e.key(), &e.value(), &e.reason(), &e.allowed(), &e.location()}) append(msg, *s);
  } catch (const std::exception& e) {
    msg.assign(1, kOtherError);
    append(msg, e.what());
  } catch (...) {
    msg.assign(1, kOtherError);
    append(msg, "unknown exception in the simulation process");
  }
  return msg;
}

using Clock = std::chrono::steady_clock;

// Set in a simulation child: a simulation it starts itself reports to the same Progress and to no sink.
bool g_in_child = false;

ProgressSink& sink() {
  static ProgressSink s;
  return s;
}

// The progress of one simulation to the sink, from the second second on: how much of the played ranks' ops have
// ended; `finished` at the end when anything was reported.
class ProgressLine {
 public:
  explicit ProgressLine(const Progress& p, std::optional<double> limit_s)
      : p_(p), limit_s_(limit_s), shown_(!g_in_child && static_cast<bool>(sink())) {}
  ~ProgressLine() {
    if (reported_) sink()(SimulationProgress{share(), elapsed(), limit_s_, true, p_.requests.load()});
  }
  void update() {
    if (!shown_ || elapsed() < 1) return;
    sink()(SimulationProgress{share(), elapsed(), limit_s_, false, p_.requests.load()});
    reported_ = true;
  }

 private:
  [[nodiscard]] double elapsed() const { return std::chrono::duration<double>(Clock::now() - started_).count(); }
  [[nodiscard]] double share() const {
    const auto total = p_.total.load(std::memory_order_relaxed), done = p_.done.load(std::memory_order_relaxed);
    return total == 0 ? 0 : static_cast<double>(done) / static_cast<double>(total);
  }
  const Progress& p_;
  std::optional<double> limit_s_;
  bool shown_;
  bool reported_ = false;
  Clock::time_point started_ = Clock::now();
};

// Everything the child writes until it closes the pipe; nullopt when `limit_s` passed first.
std::optional<std::string> read_all(int fd, std::optional<double> limit_s, ProgressLine& line) {
  const auto until = limit_s ? Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(*limit_s))
                             : Clock::time_point::max();
  std::string out;
  std::array<char, 65536> buf{};
  for (;;) {
    long long wait_ms = 1000;
    if (limit_s) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      if (left <= 0) return std::nullopt;
      wait_ms = std::min<long long>(left, wait_ms);
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(wait_ms));
    if (ready < 0 && errno != EINTR) throw std::runtime_error(fmt::format("poll failed: {}", std::strerror(errno)));
    if (ready <= 0) {
      line.update();
      continue;
    }
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
}

// A leak found in the child ends it before it reports (the parent sees "died: exit status 23"), so a leaking
// simulation cannot pass for a good one in the sanitizer build.
[[noreturn]] void run_child(int fd, const std::function<std::string()>& work) {
  const std::string msg = encode_child_result(work);
  if (found_leaks()) exit_child(kLeakStatus, /*checked=*/true);
  (void)write_all(fd, msg);   // false: the parent is gone or the pipe broke, nothing left to tell
  ::close(fd);
  exit_child(0, /*checked=*/true);
}

int wait_for(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(fmt::format("waitpid failed: {}", std::strerror(errno)));
  return status;
}

std::string decode(const std::string& msg, int status) {
  if (WIFSIGNALED(status))
    throw std::runtime_error(fmt::format("simulation process died: signal {}", WTERMSIG(status)));
  if (msg.empty())
    throw std::runtime_error(fmt::format("simulation process died: exit status {}", WEXITSTATUS(status)));
  Reader in(std::string_view(msg).substr(1));
  if (msg.front() == kResult) return in.next();
  if (msg.front() == kInputError) {
    std::string key = in.next(), value = in.next(), reason = in.next(), allowed = in.next();
    throw InputError(std::move(key), std::move(value), std::move(reason), std::move(allowed), in.next());
  }
  throw std::runtime_error(in.next());
}

}  // namespace

void set_progress_sink(ProgressSink s) { sink() = std::move(s); }

std::string run_isolated(const std::function<std::string()>& work, std::optional<double> limit_s) {
  // The counters the child's player advances, in memory shared with it (a child's own simulations share its
  // parent's: the mapping is inherited).
  static Progress* shared = [] {
    void* m = ::mmap(nullptr, sizeof(Progress), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return m == MAP_FAILED ? nullptr : new (m) Progress;
  }();
  if (shared != nullptr && !g_in_child) {
    shared->total.store(0);
    shared->done.store(0);
    shared->requests.store(false);
  }
  std::array<int, 2> fds{};
  if (::pipe(fds.data()) != 0) throw std::runtime_error(fmt::format("pipe failed: {}", std::strerror(errno)));
  std::fflush(stdout);   // buffered output would otherwise be written twice, once by the child
  std::fflush(stderr);
  const pid_t pid = fork_tied();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    g_in_child = true;
    set_progress(shared);
    ::close(fds[0]);
    run_child(fds[1], work);
  }
  ::close(fds[1]);
  std::optional<std::string> msg;
  {
    ProgressLine line(shared != nullptr ? *shared : progress(), limit_s);
    msg = read_all(fds[0], limit_s, line);
  }
  ::close(fds[0]);
  if (!msg) {
    ::kill(pid, SIGKILL);
    wait_for(pid);
    throw TimeLimitExceeded(*limit_s);
  }
  return decode(*msg, wait_for(pid));
}

}  // namespace dtsim::sim
