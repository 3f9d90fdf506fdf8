// Deps: the indices an op waits on. Most ops wait on one to four, held in the op itself; more go to the heap. A
// step holds up to hundreds of thousands of ops, and an allocation each (std::vector) was most of the time to
// build and free one: the plan search builds two a candidate.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>

namespace dtsim::workloads {

class Deps {
 public:
  using value_type = std::uint32_t;
  using iterator = std::uint32_t*;
  using const_iterator = const std::uint32_t*;

  Deps() = default;
  Deps(std::initializer_list<std::uint32_t> values) { append(values.begin(), values.end()); }
  template <std::input_iterator It>
  Deps(It first, It last) {
    append(first, last);
  }
  Deps(const Deps& other) { append(other.begin(), other.end()); }
  Deps(Deps&& other) noexcept { take(other); }
  Deps& operator=(const Deps& other) {
    if (this != &other) {
      clear();
      append(other.begin(), other.end());
    }
    return *this;
  }
  Deps& operator=(Deps&& other) noexcept {
    if (this != &other) {
      heap_.reset();
      take(other);
    }
    return *this;
  }
  ~Deps() = default;

  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  iterator begin() { return data(); }
  iterator end() { return data() + size_; }
  [[nodiscard]] const_iterator begin() const { return data(); }
  [[nodiscard]] const_iterator end() const { return data() + size_; }
  std::uint32_t& operator[](std::size_t i) { return data()[i]; }
  std::uint32_t operator[](std::size_t i) const { return data()[i]; }
  std::uint32_t& front() { return data()[0]; }
  [[nodiscard]] std::uint32_t front() const { return data()[0]; }
  std::uint32_t& back() { return data()[size_ - 1]; }
  [[nodiscard]] std::uint32_t back() const { return data()[size_ - 1]; }

  void clear() { size_ = 0; }
  void reserve(std::size_t n) {
    if (n <= capacity_) return;
    if (n > kMostDeps) throw std::length_error("an op waits on more than 2^32 - 1 others");
    auto grown = std::make_unique<std::uint32_t[]>(n);
    std::copy(begin(), end(), grown.get());
    heap_ = std::move(grown);
    capacity_ = static_cast<std::uint32_t>(n);
  }
  void push_back(std::uint32_t value) {
    if (size_ == capacity_) reserve(2 * std::size_t{capacity_});
    data()[size_++] = value;
  }
  // [first, last) may be this Deps' own: it is read from the old buffer before that is freed.
  template <std::input_iterator It>
  void append(It first, It last) {
    if constexpr (std::forward_iterator<It>) {
      const auto n = static_cast<std::size_t>(std::distance(first, last));
      if (size_ + n > capacity_) {
        Deps grown;
        grown.reserve(std::max(size_ + n, 2 * std::size_t{capacity_}));
        grown.append_in_place(begin(), end());
        grown.append_in_place(first, last);
        *this = std::move(grown);
        return;
      }
    }
    for (; first != last; ++first) push_back(static_cast<std::uint32_t>(*first));
  }

  friend bool operator==(const Deps& a, const Deps& b) { return std::ranges::equal(a, b); }

 private:
  static constexpr std::uint32_t kInline = 4;
  static constexpr std::size_t kMostDeps = 0xffffffffU;

  template <std::input_iterator It>
  void append_in_place(It first, It last) {   // within the capacity reserved
    for (; first != last; ++first) data()[size_++] = static_cast<std::uint32_t>(*first);
  }   // as many as fit beside the counts in a pointer's alignment

  std::uint32_t* data() { return heap_ ? heap_.get() : in_place_.data(); }
  [[nodiscard]] const std::uint32_t* data() const { return heap_ ? heap_.get() : in_place_.data(); }
  void take(Deps& other) {
    size_ = other.size_;
    capacity_ = other.capacity_;
    heap_ = std::move(other.heap_);
    in_place_ = other.in_place_;
    other.size_ = 0;
    other.capacity_ = kInline;
  }

  std::uint32_t size_ = 0;              // 32-bit, as the indices are: the op and its deps in 32 bytes
  std::uint32_t capacity_ = kInline;
  std::array<std::uint32_t, kInline> in_place_{};
  std::unique_ptr<std::uint32_t[]> heap_;
};

}  // namespace dtsim::workloads
