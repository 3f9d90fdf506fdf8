#include "results/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "sim/process.hpp"
#include <zlib.h>
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

std::string gzipped(const std::string& text) {
  z_stream z{};
  // windowBits 15 + 16: a gzip stream (header and CRC), which gzip, zcat and Perfetto's UI read.
  DTSIM_ASSERT(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK, "zlib initialises");
  std::string out;
  constexpr std::size_t kChunk = std::size_t{1} << 26;   // zlib counts in 32 bits: text and output go by chunks
  std::size_t fed = 0;
  int status = Z_OK;
  while (status != Z_STREAM_END) {
    if (z.avail_in == 0 && fed < text.size()) {
      const std::size_t n = std::min(kChunk, text.size() - fed);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data() + fed));
      z.avail_in = static_cast<uInt>(n);
      fed += n;
    }
    const std::size_t before = out.size();
    out.resize(before + kChunk / 4);
    z.next_out = reinterpret_cast<Bytef*>(out.data() + before);
    z.avail_out = static_cast<uInt>(kChunk / 4);
    status = deflate(&z, fed == text.size() ? Z_FINISH : Z_NO_FLUSH);
    DTSIM_ASSERT(status == Z_OK || status == Z_STREAM_END || status == Z_BUF_ERROR, "deflate runs");
    out.resize(before + kChunk / 4 - z.avail_out);
  }
  deflateEnd(&z);
  return out;
}

void write_file(const std::string& path, const std::string& text, const std::string& key) {
  if (path.size() > 3 && path.ends_with(".gz")) return write_plain_file(path, gzipped(text), key);
  write_plain_file(path, text, key);
}

void write_plain_file(const std::string& path, const std::string& text, const std::string& key) {
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
