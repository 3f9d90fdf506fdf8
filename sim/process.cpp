// Process helpers (process.hpp).
#include "sim/process.hpp"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

#include <cerrno>
#include <cstdio>

#if defined(__SANITIZE_ADDRESS__)
#define DTSIM_LEAK_CHECKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DTSIM_LEAK_CHECKS 1
#endif
#endif

#ifdef DTSIM_LEAK_CHECKS
#include <sanitizer/lsan_interface.h>
#endif

namespace dtsim::sim {

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ::ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

namespace {
Progress g_unread;
Progress* g_progress = &g_unread;
}  // namespace

Progress& progress() { return *g_progress; }
void set_progress(Progress* p) { g_progress = p != nullptr ? p : &g_unread; }

int fork_tied() {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  // If the parent ended between fork and prctl, the signal will never come: the parent is no longer ours.
  if (pid == 0 && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)) ::_exit(1);
  return pid;
}

bool leak_checked_build() {
#ifdef DTSIM_LEAK_CHECKS
  return true;
#else
  return false;
#endif
}

bool found_leaks() {
#ifdef DTSIM_LEAK_CHECKS
  return __lsan_do_recoverable_leak_check() != 0;
#else
  return false;
#endif
}

void exit_child(int status, bool checked) {
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(!checked && found_leaks() ? kLeakStatus : status);
}

}  // namespace dtsim::sim
