#pragma once
// Directories for tests under the system's temporary directory.
#include <string>

namespace ncclrr::testing {

// A fresh, empty directory that is removed with everything in it when the object goes.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// <tmp>/ncclrr-<tag>-<pid>, emptied and created; it stays after the test (to look at). Tags
// name the test and what the directory is for.
std::string FreshTempDir(const std::string& tag);

}  // namespace ncclrr::testing
