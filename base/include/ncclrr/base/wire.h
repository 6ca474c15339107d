#pragma once
// Plain binary blobs for what the processes of one job exchange (the members of a spread check:
// MPI ranks of one job, one machine architecture). A short or malformed blob reads as zeros and
// sets `bad`.
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace ncclrr::wire {

class Writer {
 public:
  explicit Writer(std::string* out) : out_(*out) {}
  template <typename T>
  void Put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void Str(const std::string& s) {
    Put<uint64_t>(s.size());
    out_.append(s);
  }
  template <typename T>
  void Vec(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    Put<uint64_t>(v.size());
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  // A count, then put(x) for each x.
  template <typename T, typename F>
  void Each(const std::vector<T>& v, F put) {
    Put<uint64_t>(v.size());
    for (const T& x : v) put(x);
  }

 private:
  std::string& out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  T Get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v{};
    if (!Take(&v, sizeof v)) v = T{};
    return v;
  }
  std::string Str() {
    const auto n = Get<uint64_t>();
    if (n > in_.size() - at_) return Fail(std::string());
    std::string s = in_.substr(at_, n);
    at_ += n;
    return s;
  }
  template <typename T>
  std::vector<T> Vec() {
    const auto n = Get<uint64_t>();
    if (n > (in_.size() - at_) / sizeof(T)) return Fail(std::vector<T>());
    std::vector<T> v(n);
    Take(v.data(), n * sizeof(T));
    return v;
  }
  // What Writer::Each wrote: get() once per element.
  template <typename F>
  void Each(F get) {
    for (auto n = Get<uint64_t>(); n > 0 && !bad_; --n) get();
  }
  bool done() const { return at_ >= in_.size(); }
  // For nested blobs another reader takes: where this one stands, and skipping what it took.
  const char* here() const { return in_.data() + at_; }
  size_t left() const { return in_.size() - at_; }
  void Skip(size_t n) {
    if (n > left()) return (void)Fail(0);
    at_ += n;
  }
  bool bad() const { return bad_; }

 private:
  bool Take(void* p, size_t n) {
    if (n > in_.size() - at_) {
      bad_ = true;
      at_ = in_.size();
      return false;
    }
    std::memcpy(p, in_.data() + at_, n);
    at_ += n;
    return true;
  }
  template <typename T>
  T Fail(T v) {
    bad_ = true;
    at_ = in_.size();
    return v;
  }
  const std::string& in_;
  size_t at_ = 0;
  bool bad_ = false;
};

}  // namespace ncclrr::wire
