// A library named on the command line (--libcuda, --libhip) is checked before
// any probe is made: an ELF shared object that defines at least one function
// of the API it is given for. Otherwise every symbol would be "missing", the
// recording would run and its capture would say nothing of why it is empty
// (`--libcuda /etc/passwd` exited 0 after 128 warnings).
#pragma once

#include <span>
#include <string>

#include "catalogue/api_spec.h"
#include "common/result.h"

namespace gpuobs {

// Ok, or an error (exit status 2) saying what the file is instead.
// flag: the option that named it, for the hint ("--libcuda").
Status check_api_library(const std::string& path, std::span<const ApiSpec> table, const char* flag);

}  // namespace gpuobs
