#include "results/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "sim/process.hpp"
#include "topology/error.hpp"

namespace dtsim::results {

void make_directory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("--out", dir, fmt::format("cannot create directory ({})", ec.message()), "a writable path");
}

namespace {

[[noreturn]] void cannot_write(const std::string& key, const std::string& path, const char* step, int error) {
  throw InputError(key, path, fmt::format("cannot write file ({} failed: {})", step, std::strerror(error)),
                   "a writable path on a disk with room");
}

}  // namespace

void write_file(const std::string& path, const std::string& text, const std::string& key) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::is_directory(status)) throw InputError(key, path, "is a directory, not a file:", "a file path");
  // A regular file is written beside itself and renamed over: readers see the old file or the whole new one, never
  // a torn one. A device or FIFO (/dev/stdout, /dev/full) is written in place.
  const bool in_place = std::filesystem::exists(status) && !std::filesystem::is_regular_file(status);
  const std::string target = in_place ? path : fmt::format("{}.{}.tmp", path, ::getpid());
  const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) cannot_write(key, path, "open", errno);
  const auto give_up = [&](const char* step) {
    const int error = errno;
    ::close(fd);
    if (!in_place) ::unlink(target.c_str());
    cannot_write(key, path, step, error);
  };
  if (!sim::write_all(fd, text)) give_up("write");
  if (!in_place && ::fsync(fd) != 0) give_up("fsync");
  if (::close(fd) != 0) {
    const int error = errno;
    if (!in_place) ::unlink(target.c_str());
    cannot_write(key, path, "close", error);
  }
  if (!in_place && ::rename(target.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(target.c_str());
    cannot_write(key, path, "rename", error);
  }
}

void append_file(const std::string& path, const std::string& text, const std::string& key) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) cannot_write(key, path, "open", errno);
  struct stat before {};
  if (::fstat(fd, &before) != 0) {
    const int error = errno;
    ::close(fd);
    cannot_write(key, path, "fstat", error);
  }
  if (!sim::write_all(fd, text) || ::fsync(fd) != 0) {
    // A disk that filled mid-write keeps what the file held before, never part of `text`.
    const int error = errno;
    (void)::ftruncate(fd, before.st_size);
    ::close(fd);
    cannot_write(key, path, "append", error);
  }
  if (::close(fd) != 0) cannot_write(key, path, "close", errno);
}

}  // namespace dtsim::results
