#include "ncclrr/replay/options.h"

#include <cstdlib>

namespace ncclrr::replay {

std::string OrderSpec::Label() const {
  switch (kind) {
    case Kind::kRecorded:
      return "recorded";
    case Kind::kCanonical:
      return "canonical";
    case Kind::kPermute:
      return "permute:" + std::to_string(trials);
    case Kind::kFile:
      return "file:" + file;
  }
  return "?";
}

StatusOr<std::vector<OrderSpec>> ParseOrderSpecs(std::string_view text) {
  std::vector<OrderSpec> out;
  const std::string forms = "recorded, canonical, permute, permute:N or file:PATH";
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    // A file path may hold commas only as the last element: "file:" takes the rest.
    if (text.substr(start, 5) == "file:") comma = std::string_view::npos;
    const std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    OrderSpec s;
    if (item == "recorded") {
      s.kind = OrderSpec::Kind::kRecorded;
    } else if (item == "canonical") {
      s.kind = OrderSpec::Kind::kCanonical;
    } else if (item == "permute" || item.substr(0, 8) == "permute:") {
      s.kind = OrderSpec::Kind::kPermute;
      s.trials = kDefaultPermuteTrials;
      if (item.size() > 8) {
        const std::string n(item.substr(8));
        char* end = nullptr;
        const long v = std::strtol(n.c_str(), &end, 10);
        if (end == n.c_str() || *end != '\0' || v < 1 || v > kMaxPermuteTrials)
          return InvalidArgument("--order " + std::string(item) +
                                 ": N must be a number of trials "
                                 "from 1 to " +
                                 std::to_string(kMaxPermuteTrials));
        s.trials = static_cast<int>(v);
      }
    } else if (item.substr(0, 5) == "file:" && item.size() > 5) {
      s.kind = OrderSpec::Kind::kFile;
      s.file = std::string(item.substr(5));
    } else {
      return InvalidArgument("--order: '" + std::string(item) + "' is not an ordering; expected " +
                             forms + " (several separated by commas)");
    }
    out.push_back(s);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace ncclrr::replay
