// sim/process.hpp: the shared descriptor writer and the child exit that lets LeakSanitizer see a forked child.
#include "sim/process.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <string>

namespace {

// Leaks `bytes` in a function of its own, so no pointer to the block is left on the caller's stack.
[[gnu::noinline]] void leak_one(std::size_t bytes) {
  volatile char* lost = new char[bytes];
  lost[0] = 1;
  lost = nullptr;
}

// Overwrites the stack below the caller, where a stale copy of a leaked pointer may still sit in a spilled register
// or a dead slot: LeakSanitizer scans stacks conservatively and would count such a block as reachable.
[[gnu::noinline]] void scrub_stack() {
  volatile char junk[16384];
  for (std::size_t i = 0; i < sizeof junk; ++i) junk[i] = 0;
}

// Leaks several independent blocks: a stale pointer can hide at most the last one (CI once saw a single block
// found reachable), and the check only needs one leak.
void leak(std::size_t bytes) {
  for (int i = 0; i < 8; ++i) leak_one(bytes);
  scrub_stack();
}

// The exit status of a forked child that runs `body` and ends with exit_child(0).
template <class F>
int child_status(F body) {
  std::fflush(nullptr);   // the child flushes stdio as it ends: nothing of the parent's may be waiting there
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    body();
    dtsim::sim::exit_child(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("exit_child: a child that leaks fails in the sanitizer build, a clean one exits with its status") {
  CHECK(child_status([] {}) == 0);
  const int leaked = child_status([] { leak(4096); });
  if (dtsim::sim::leak_checked_build()) CHECK(leaked == dtsim::sim::kLeakStatus);
  else CHECK(leaked == 0);
}

TEST_CASE("write_all: every byte through a pipe, and errno when the reader is gone") {
  std::array<int, 2> fds{};
  REQUIRE(::pipe(fds.data()) == 0);
  const std::string text(100'000, 'x');   // more than a pipe buffer: the writer must loop
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    dtsim::sim::exit_child(dtsim::sim::write_all(fds[1], text) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string got;
  std::array<char, 4096> buf{};
  for (ssize_t n; (n = ::read(fds[0], buf.data(), buf.size())) > 0;) got.append(buf.data(), static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(got == text);

  const int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  REQUIRE(full >= 0);
  errno = 0;
  CHECK_FALSE(dtsim::sim::write_all(full, "abc"));
  CHECK(errno == ENOSPC);
  ::close(full);
}
