// libcurl, loaded at run time. Shipping to ClickHouse is optional and off by
// default, so gpuobs and gpuobsd link no HTTP library: the first ClickHouse
// request loads libcurl.so.4 (any of Debian's builds: OpenSSL, GnuTLS, NSS)
// and resolves the few easy-interface (and mime) functions it uses. Without it, every
// fleet command says so and nothing else is affected.
#pragma once

#include <curl/curl.h>

#include <string>

#include "common/result.h"

namespace gpuobs::fleet {

struct CurlFunctions {
  CURLcode (*global_init)(long) = nullptr;
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  curl_slist* (*slist_append)(curl_slist*, const char*) = nullptr;
  void (*slist_free_all)(curl_slist*) = nullptr;
  // A multipart/form-data body (ClickHouse's external data: a query's
  // tables sent with it, clickhouse_client.cpp).
  curl_mime* (*mime_init)(CURL*) = nullptr;
  curl_mimepart* (*mime_addpart)(curl_mime*) = nullptr;
  CURLcode (*mime_name)(curl_mimepart*, const char*) = nullptr;
  CURLcode (*mime_filename)(curl_mimepart*, const char*) = nullptr;
  CURLcode (*mime_data)(curl_mimepart*, const char*, size_t) = nullptr;
  void (*mime_free)(curl_mime*) = nullptr;
};

// The process's libcurl, loaded and initialized once (thread-safe); an
// error names what is missing ("no libcurl.so.4 ...").
Result<const CurlFunctions*> curl_library();

}  // namespace gpuobs::fleet
