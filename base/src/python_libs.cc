#include "ncclrr/base/python_libs.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace ncclrr {
namespace {

namespace fs = std::filesystem;

void AddPrefix(const fs::path& prefix, std::vector<fs::path>* prefixes) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(prefix, ec);
  const fs::path p = ec ? prefix : canonical;
  if (std::find(prefixes->begin(), prefixes->end(), p) == prefixes->end()) prefixes->push_back(p);
}

}  // namespace

std::vector<std::string> PythonNvidiaLibDirs(std::string_view package) {
  std::vector<fs::path> prefixes;
  for (const char* var : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') AddPrefix(v, &prefixes);
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    std::string_view rest = path;
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      const std::string dir(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      std::error_code ec;
      // The python3 itself, not where a link to it leads: a venv's bin/python3 links to the
      // system's interpreter, but its packages are in the venv.
      if (!dir.empty() && fs::exists(fs::path(dir) / "python3", ec))
        AddPrefix(fs::path(dir).parent_path(), &prefixes);
    }
  }
  std::vector<std::string> dirs;
  for (const fs::path& prefix : prefixes) {
    std::error_code ec;
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(prefix / "lib", ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("python3", 0) != 0) continue;
      const fs::path lib = e.path() / "site-packages" / "nvidia" / std::string(package) / "lib";
      if (fs::is_directory(lib, ec)) found.push_back(lib);
    }
    std::sort(found.begin(), found.end());
    for (const fs::path& f : found) dirs.push_back(f.string());
  }
  return dirs;
}

}  // namespace ncclrr
