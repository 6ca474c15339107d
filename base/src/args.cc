#include "ncclrr/base/args.h"

#include <cstdlib>

namespace ncclrr {

Args::Args(std::string program, const std::vector<std::string>& args)
    : program_(std::move(program)), raw_(args) {}

Args::Args(std::string program, int argc, char** argv, int first) : program_(std::move(program)) {
  for (int i = first; i < argc; ++i) raw_.emplace_back(argv[i]);
}

Args& Args::Flag(const std::string& name) {
  declared_[name] = false;
  return *this;
}
Args& Args::Option(const std::string& name) {
  declared_[name] = true;
  return *this;
}

void Args::Parse() {
  for (size_t i = 0; i < raw_.size(); ++i) {
    const std::string& a = raw_[i];
    if (a == "--") {
      rest_.assign(raw_.begin() + static_cast<long>(i) + 1, raw_.end());
      return;
    }
    if (a.size() < 2 || a[0] != '-') {
      positional_.push_back(a);
      continue;
    }
    std::string name = a, value;
    bool inline_value = false;
    if (auto eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    auto it = declared_.find(name);
    if (it == declared_.end())
      throw UsageError("unknown flag '" + name + "' for `" + program_ + "`");
    if (!it->second) {
      if (inline_value) throw UsageError("flag '" + name + "' takes no value");
      values_[name] = "";
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= raw_.size()) throw UsageError("flag '" + name + "' needs a value");
      value = raw_[++i];
    }
    values_[name] = value;
  }
}

bool Args::Has(const std::string& name) const { return values_.count(name) > 0; }

std::optional<std::string> Args::Get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::string Args::GetOr(const std::string& name, const std::string& fallback) const {
  return Get(name).value_or(fallback);
}

long long Args::GetInt(const std::string& name, long long fallback) const {
  auto v = Get(name);
  if (!v) return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v->c_str(), &end, 0);
  if (v->empty() || *end != '\0')
    throw UsageError("flag '" + name + "' expects a number, got '" + *v + "'");
  return n;
}

uint64_t Args::GetBytes(const std::string& name, uint64_t fallback) const {
  auto v = Get(name);
  if (!v) return fallback;
  char* end = nullptr;
  const double n = std::strtod(v->c_str(), &end);
  double scale = 1;
  std::string unit(end);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  if (unit == "K" || unit == "k")
    scale = 1024.0;
  else if (unit == "M" || unit == "m")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "g")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "t")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty())
    end = nullptr;
  if (v->empty() || end == v->c_str() || !end || !(n > 0) || n * scale >= 1.8e19)
    throw UsageError("flag '" + name +
                     "' expects a size such as 8G, 512M or 1000000 (bytes), got '" + *v + "'");
  return static_cast<uint64_t>(n * scale);
}

const std::string& Args::Positional(size_t i, const std::string& what) const {
  if (positional_.size() <= i) throw UsageError("missing " + what);
  if (positional_.size() > i + 1 && i == 0)
    throw UsageError("unexpected argument '" + positional_[i + 1] + "'");
  return positional_[i];
}

}  // namespace ncclrr
