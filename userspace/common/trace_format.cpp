#include "common/trace_format.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpuobs {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// "key:value;" starting at pos; the value without the key.
std::optional<std::string_view> attribute(std::string_view line, std::string_view key) {
  size_t at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  size_t start = at + key.size();
  size_t end = line.find(';', start);
  if (end == std::string_view::npos) return std::nullopt;
  return trim(line.substr(start, end - start));
}

std::optional<uint32_t> number(std::string_view s) {
  uint64_t v = 0;
  if (s.empty() || s.size() > 9) return std::nullopt;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return static_cast<uint32_t>(v);
}

}  // namespace

const TraceField* TraceFormat::field(std::string_view n) const {
  for (const auto& f : fields)
    if (f.name == n) return &f;
  return nullptr;
}

uint32_t TraceFormat::fixed_size() const {
  uint32_t end = 0;
  for (const auto& f : fields) end = std::max(end, f.offset + f.size);
  return end;
}

Result<TraceFormat> parse_trace_format(std::string_view text) {
  TraceFormat fmt;
  bool have_id = false;
  int line_no = 0;
  std::istringstream in{std::string(text)};
  std::string raw;
  while (std::getline(in, raw)) {
    ++line_no;
    std::string_view line = trim(raw);
    if (line.rfind("name:", 0) == 0) {
      fmt.name = std::string(trim(line.substr(5)));
    } else if (line.rfind("ID:", 0) == 0) {
      auto id = number(trim(line.substr(3)));
      if (!id) return make_error("trace format line " + std::to_string(line_no) + ": bad ID");
      fmt.id = *id;
      have_id = true;
    } else if (line.rfind("field:", 0) == 0) {
      auto decl = attribute(line, "field:");
      auto off = attribute(line, "offset:");
      auto size = attribute(line, "size:");
      auto sign = attribute(line, "signed:");
      auto o = off ? number(*off) : std::nullopt;
      auto sz = size ? number(*size) : std::nullopt;
      if (!decl || !o || !sz)
        return make_error("trace format line " + std::to_string(line_no) + ": field without offset or size");
      TraceField f;
      // The name is the declaration's last word, less an array suffix.
      std::string_view d = *decl;
      size_t sp = d.find_last_of(" \t*");
      std::string_view name = sp == std::string_view::npos ? d : d.substr(sp + 1);
      f.type = std::string(trim(sp == std::string_view::npos ? std::string_view{} : d.substr(0, sp + 1)));
      if (size_t br = name.find('['); br != std::string_view::npos) {
        f.type += std::string(name.substr(br));
        name = name.substr(0, br);
      }
      if (name.empty()) return make_error("trace format line " + std::to_string(line_no) + ": field without a name");
      f.name = std::string(name);
      f.offset = *o;
      f.size = *sz;
      f.is_signed = sign && *sign == "1";
      f.data_loc = f.type.rfind("__data_loc", 0) == 0;
      f.rel_loc = f.type.rfind("__rel_loc", 0) == 0;
      if ((f.data_loc || f.rel_loc) && f.size != 4)
        return make_error("trace format line " + std::to_string(line_no) + ": string field " + f.name +
                          " is not 4 bytes");
      fmt.fields.push_back(std::move(f));
    }
  }
  if (fmt.name.empty() || !have_id || fmt.fields.empty())
    return make_error("not a trace event format (name, ID and fields expected)");
  return fmt;
}

std::string tracefs_events_dir() {
  std::error_code ec;
  for (const char* d : {"/sys/kernel/tracing/events", "/sys/kernel/debug/tracing/events"})
    if (std::filesystem::is_directory(d, ec)) return d;
  return {};
}

Result<TraceFormat> read_trace_format(const std::string& events_dir, const std::string& system,
                                      const std::string& event) {
  std::string path = events_dir + "/" + system + "/" + event + "/format";
  std::ifstream in(path);
  if (!in) return make_error("no " + system + "/" + event + " tracepoint (" + path + ": " + std::strerror(errno) + ")");
  std::stringstream ss;
  ss << in.rdbuf();
  auto f = parse_trace_format(ss.str());
  if (!f) return make_error(path + ": " + f.error().message);
  return f;
}

std::optional<uint64_t> trace_uint(const TraceField& f, std::span<const uint8_t> entry) {
  if (uint64_t{f.offset} + f.size > entry.size()) return std::nullopt;
  const uint8_t* p = entry.data() + f.offset;
  switch (f.size) {
    case 1: {
      uint8_t v;
      std::memcpy(&v, p, 1);
      return f.is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int8_t>(v))) : v;
    }
    case 2: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return f.is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int16_t>(v))) : v;
    }
    case 4: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return f.is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v))) : v;
    }
    case 8: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return v;
    }
  }
  return std::nullopt;
}

std::optional<std::string> trace_string(const TraceField& f, std::span<const uint8_t> entry) {
  if (!f.data_loc && !f.rel_loc) return std::nullopt;
  auto loc = trace_uint(f, entry);
  if (!loc) return std::nullopt;
  uint64_t len = (*loc >> 16) & 0xffff;
  uint64_t off = *loc & 0xffff;
  if (f.rel_loc) off += uint64_t{f.offset} + f.size;
  if (off + len > entry.size()) return std::nullopt;
  const char* s = reinterpret_cast<const char*>(entry.data() + off);
  // The length counts the NUL the kernel stores; stop at the first one.
  size_t n = 0;
  while (n < len && s[n]) ++n;
  return std::string(s, n);
}

}  // namespace gpuobs
