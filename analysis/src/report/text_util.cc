#include "report/text_util.h"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "ncclrr/trace/describe.h"

namespace ncclrr::analysis {

std::string Thousands(uint64_t v) {
  const std::string digits = std::to_string(v);
  std::string s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

std::string RankList(const std::vector<int>& in) {
  std::vector<int> r = in;
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  if (r.empty()) return "no rank";
  if (r.size() == 1) return "rank " + std::to_string(r[0]);
  // Runs of consecutive ranks are written a-b.
  std::vector<std::string> parts;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (j - i >= 2)
      parts.push_back(std::to_string(r[i]) + "-" + std::to_string(r[j]));
    else
      for (size_t k = i; k <= j; ++k) parts.push_back(std::to_string(r[k]));
    i = j + 1;
  }
  std::string s = "ranks ";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) s += i + 1 == parts.size() ? " and " : ", ";
    s += parts[i];
  }
  return s;
}

std::string CommShortName(const CommModel& c) {
  return c.name.empty() ? Hex64(c.id) : "\"" + c.name + "\"";
}

std::string CommLabel(const CommModel& c) {
  if (!c.name.empty()) return "comm \"" + c.name + "\" (" + Hex64(c.id) + ")";
  return "comm " + Hex64(c.id);
}

std::string FileLabel(const TraceModel& m, size_t f, bool stable) {
  const FileView& v = m.files()[f];
  std::string holds;
  if (!v.ranks.empty()) {
    const auto& [ci, r] = v.ranks.front();
    holds = "rank " + std::to_string(r) + " of " + CommLabel(m.comms()[ci]);
  }
  if (stable) return holds.empty() ? std::string("a trace file") : "the trace file of " + holds;
  return "trace file " + v.name + " (host " + v.host + " pid " + std::to_string(v.pid) +
         (holds.empty() ? "" : ", " + holds) + ")";
}

std::string Seconds(int64_t ns) {
  const double a = static_cast<double>(ns < 0 ? -ns : ns);
  if (a >= 1e9) return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
  if (a >= 1e6) return fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6);
  return fmt::format("{:.0f} us", static_cast<double>(ns) / 1e3);
}

std::string Plural(uint64_t n, const std::string& one, const std::string& many) {
  return Thousands(n) + " " + (n == 1 ? one : many);
}

std::string Capitalized(std::string s) {
  if (!s.empty() && s[0] >= 'a' && s[0] <= 'z') s[0] = static_cast<char>(s[0] - 'a' + 'A');
  return s;
}

std::string Wrap(const std::string& text, size_t width, const std::string& indent) {
  std::string out, line;
  size_t i = 0;
  auto flush = [&] {
    out += indent + line + "\n";
    line.clear();
  };
  while (i < text.size()) {
    if (text[i] == '\n') {
      flush();
      ++i;
      continue;
    }
    size_t j = text.find_first_of(" \n", i);
    if (j == std::string::npos) j = text.size();
    const std::string word = text.substr(i, j - i);
    if (!line.empty() && indent.size() + line.size() + 1 + word.size() > width) flush();
    if (!line.empty()) line += " ";
    line += word;
    i = j < text.size() && text[j] == ' ' ? j + 1 : j;
  }
  if (!line.empty()) flush();
  return out;
}

}  // namespace ncclrr::analysis

namespace ncclrr::analysis {

std::string CompactRanks(const std::vector<int>& in) {
  std::vector<int> r = in;
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  std::string s;
  for (size_t i = 0; i < r.size();) {
    size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (!s.empty()) s += ",";
    s += std::to_string(r[i]);
    if (j > i) s += "-" + std::to_string(r[j]);
    i = j + 1;
  }
  return s;
}

std::string SeqRange(uint64_t first, size_t n) {
  if (n <= 1) return std::to_string(first);
  return std::to_string(first) + "-" + std::to_string(first + n - 1);
}

std::pair<std::string, std::string> PartingFrames(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const size_t ei = std::min(a.find('<', i), a.size()), ej = std::min(b.find('<', j), b.size());
    if (a.compare(i, ei - i, b, j, ej - j) != 0) return {a.substr(i, ei - i), b.substr(j, ej - j)};
    i = ei + 1;
    j = ej + 1;
  }
  return {a.substr(std::min(i, a.size())), b.substr(std::min(j, b.size()))};
}

}  // namespace ncclrr::analysis
