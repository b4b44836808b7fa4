#include "fleet/curl_library.h"

#include <dlfcn.h>

#include <mutex>

namespace gpuobs::fleet {
namespace {

// Debian's libcurl4 (OpenSSL), then its GnuTLS and NSS builds: the same
// ABI under three names.
constexpr const char* kNames[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl-nss.so.4"};

template <class F>
bool resolve(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

Result<const CurlFunctions*> load() {
  void* lib = nullptr;
  for (const char* n : kNames)
    if ((lib = dlopen(n, RTLD_NOW | RTLD_LOCAL))) break;
  if (!lib)
    return make_error("no libcurl.so.4: shipping to ClickHouse needs libcurl",
                      "install it (Debian: apt-get install libcurl4)");
  static CurlFunctions f;
  bool ok = resolve(lib, "curl_global_init", f.global_init) && resolve(lib, "curl_easy_init", f.easy_init) &&
            resolve(lib, "curl_easy_setopt", f.easy_setopt) && resolve(lib, "curl_easy_perform", f.easy_perform) &&
            resolve(lib, "curl_easy_getinfo", f.easy_getinfo) && resolve(lib, "curl_easy_cleanup", f.easy_cleanup) &&
            resolve(lib, "curl_easy_strerror", f.easy_strerror) && resolve(lib, "curl_slist_append", f.slist_append) &&
            resolve(lib, "curl_slist_free_all", f.slist_free_all) && resolve(lib, "curl_mime_init", f.mime_init) &&
            resolve(lib, "curl_mime_addpart", f.mime_addpart) && resolve(lib, "curl_mime_name", f.mime_name) &&
            resolve(lib, "curl_mime_filename", f.mime_filename) && resolve(lib, "curl_mime_data", f.mime_data) &&
            resolve(lib, "curl_mime_free", f.mime_free);
  if (!ok)
    return make_error("libcurl lacks a function gpuobs needs (curl_easy_*, curl_mime_*: 7.56 or later): too old?");
  // Not thread-safe itself: once, here, under the caller's once_flag.
  if (f.global_init(CURL_GLOBAL_ALL) != CURLE_OK) return make_error("curl_global_init failed");
  return &f;
}

}  // namespace

Result<const CurlFunctions*> curl_library() {
  static std::once_flag once;
  static Result<const CurlFunctions*> loaded = make_error("not loaded");
  std::call_once(once, [] { loaded = load(); });
  return loaded;
}

}  // namespace gpuobs::fleet
