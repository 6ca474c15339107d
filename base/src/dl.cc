#include "ncclrr/base/dl.h"

#include <link.h>

namespace ncclrr::dl {
namespace {

std::string PathOf(void* handle, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0')
    return map->l_name;
  return fallback;
}

}  // namespace

OpenedLibrary OpenFirst(const std::vector<std::string>& names, bool may_load, std::string* tried) {
  OpenedLibrary lib;
  for (const std::string& name : names) {
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
      return {h, PathOf(h, name), true};
    }
  }
  if (!may_load) {
    if (tried != nullptr) {
      *tried = "none of";
      for (const std::string& n : names) *tried += " " + n;
      *tried += " is loaded in this process";
    }
    return lib;
  }
  std::string why;
  for (const std::string& name : names) {
    dlerror();
    if (void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return {h, PathOf(h, name), false};
    const char* e = dlerror();
    why += "\n  " + name + ": " + (e != nullptr ? e : "not found");
  }
  if (tried != nullptr) *tried = "tried:" + why;
  return lib;
}

}  // namespace ncclrr::dl
