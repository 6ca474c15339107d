#include "ncclrr/base/new_file.h"

#include <fcntl.h>

#include <cerrno>

namespace ncclrr {

int CreateNewFile(const std::string& dir, const std::string& name, std::string* created) {
  const size_t dot = name.rfind('.');
  const std::string stem = dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
  const std::string ext = stem.size() == name.size() ? "" : name.substr(stem.size());
  for (int n = 1; n <= 1000; ++n) {
    const std::string candidate = n == 1 ? name : stem + "-" + std::to_string(n) + ext;
    const std::string path = dir.empty() ? candidate : dir + "/" + candidate;
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
      if (created) *created = candidate;
      return fd;
    }
    if (errno != EEXIST) return -1;
  }
  errno = EEXIST;
  return -1;
}

}  // namespace ncclrr
