#include "ncclrr/testing/temp_dir.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace ncclrr::testing {

ScratchDir::ScratchDir(const std::string& tag) {
  std::string tmpl = (std::filesystem::temp_directory_path() / ("ncclrr-" + tag + "-XXXXXX"));
  const char* made = mkdtemp(tmpl.data());
  path_ = made != nullptr ? made : "";
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

std::string FreshTempDir(const std::string& tag) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ncclrr-" + tag + "-" + std::to_string(getpid()));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace ncclrr::testing
