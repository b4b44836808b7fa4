#include "loader/libraries.h"

#include <sys/sysmacros.h>

#include "common/split.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace gpuobs {
namespace {

// Where driver installers put libcuda.so.1 (Debian/Ubuntu multiarch, RHEL,
// NVIDIA container toolkit mounts, WSL).
constexpr const char* kLibcudaDirs[] = {
    "/usr/lib/x86_64-linux-gnu", "/usr/lib64",       "/usr/lib", "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",     "/usr/lib/wsl/lib",
};

std::vector<std::string> ldconfig_paths(const char* soname) {
  std::vector<std::string> out;
  for (const char* ldconfig : {"/sbin/ldconfig", "/usr/sbin/ldconfig"}) {
    if (::access(ldconfig, X_OK) != 0) continue;
    std::string cmd = std::string(ldconfig) + " -p 2>/dev/null";
    std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose);
    if (!p) break;
    char line[4096];
    while (std::fgets(line, sizeof line, p.get())) {
      std::string s(line);
      if (s.find(soname) == std::string::npos || s.find("x86-64") == std::string::npos) continue;
      auto arrow = s.find("=> ");
      if (arrow == std::string::npos) continue;
      std::string path = s.substr(arrow + 3);
      while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
      out.push_back(path);
    }
    break;
  }
  return out;
}

// ROCm installs (/opt/rocm is a symlink to the versioned directory) and
// distribution packages (Debian/Ubuntu's libamdhip64-5, -6).
constexpr const char* kLibhipDirs[] = {"/opt/rocm/lib", "/opt/rocm/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64",
                                       "/usr/lib"};
constexpr const char* kLibhipNames[] = {"libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"};

}  // namespace

Result<LibraryFile> library_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return make_error("cannot open library " + path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return make_error(path + " is not a regular file");
  char buf[PATH_MAX];
  std::string real = ::realpath(path.c_str(), buf) ? std::string(buf) : path;
  return LibraryFile{path, real, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

void add_unique(std::vector<LibraryFile>& files, LibraryFile f) {
  for (auto& have : files)
    if (have.dev == f.dev && have.ino == f.ino) return;
  files.push_back(std::move(f));
}

std::vector<LibraryFile> discover_libcuda() {
  std::vector<LibraryFile> out;
  // GPUOBS_LIBCUDA_SEARCH_PATH (colon-separated directories) replaces the
  // linker cache and the default directories: for unusual installs, and for
  // tests that need a host without libcuda.
  if (const char* env = std::getenv("GPUOBS_LIBCUDA_SEARCH_PATH")) {
    for (const auto& dir : split_list(env))
      if (!dir.empty())
        if (auto f = library_file(dir + "/libcuda.so.1")) add_unique(out, *f);
    return out;
  }
  for (auto& p : ldconfig_paths("libcuda.so.1"))
    if (auto f = library_file(p)) add_unique(out, *f);
  for (const char* dir : kLibcudaDirs)
    if (auto f = library_file(std::string(dir) + "/libcuda.so.1")) add_unique(out, *f);
  return out;
}

}  // namespace gpuobs

namespace gpuobs {

std::vector<LibraryFile> discover_libhip() {
  std::vector<LibraryFile> out;
  auto scan_dir = [&](const std::string& dir) {
    for (const char* name : kLibhipNames)
      if (auto f = library_file(dir + "/" + name)) add_unique(out, *f);
  };
  if (const char* env = std::getenv("GPUOBS_LIBHIP_SEARCH_PATH")) {
    for (const auto& dir : split_list(env))
      if (!dir.empty()) scan_dir(dir);
    return out;
  }
  for (auto& p : ldconfig_paths("libamdhip64.so"))
    if (auto f = library_file(p)) add_unique(out, *f);
  for (const char* dir : kLibhipDirs) scan_dir(dir);
  return out;
}

}  // namespace gpuobs

namespace gpuobs {

std::vector<LibraryFile> discover_libze() {
  std::vector<LibraryFile> out;
  if (const char* env = std::getenv("GPUOBS_LIBZE_SEARCH_PATH")) {
    for (const auto& dir : split_list(env))
      if (!dir.empty())
        if (auto f = library_file(dir + "/libze_loader.so.1")) add_unique(out, *f);
    return out;
  }
  for (auto& p : ldconfig_paths("libze_loader.so.1"))
    if (auto f = library_file(p)) add_unique(out, *f);
  // Debian/Ubuntu's libze1, Fedora's oneapi-level-zero.
  for (const char* dir : {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"})
    if (auto f = library_file(std::string(dir) + "/libze_loader.so.1")) add_unique(out, *f);
  return out;
}

std::vector<LibraryFile> gpu_libraries_on_search_path(const std::string& dirs) {
  std::vector<LibraryFile> out;
  if (dirs.empty()) return out;  // ld.so ignores an empty LD_LIBRARY_PATH (an empty element is ".")
  std::vector<std::string> names = {"libcuda.so.1"};
  for (const char* n : kLibhipNames) names.emplace_back(n);
  // The sonames NCCL and RCCL are loaded by (DT_NEEDED of libtorch_cuda,
  // dlopen by JAX's plugins).
  names.emplace_back("libnccl.so.2");
  names.emplace_back("librccl.so.1");
  names.emplace_back("libze_loader.so.1");
  for (const auto& name : names)
    for (const auto& dir : split_list(dirs)) {
      // ld.so reads an empty element as the current directory.
      if (auto f = library_file((dir.empty() ? std::string(".") : dir) + "/" + name)) {
        add_unique(out, *f);
        break;
      }
    }
  return out;
}

uint32_t kernel_dev(uint64_t st_dev) {
  return static_cast<uint32_t>((major(st_dev) << 20) | (minor(st_dev) & 0xfffff));
}

uint64_t user_dev(uint32_t kdev) { return makedev(kdev >> 20, kdev & 0xfffff); }

}  // namespace gpuobs
