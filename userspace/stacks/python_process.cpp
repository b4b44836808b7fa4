#include "stacks/python_process.h"

#include <gelf.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "stacks/proc_maps.h"
#include "stacks/python_lines.h"

namespace gpuobs {
namespace {

constexpr size_t kMaxStr = 4096;           // longest name or path kept
constexpr size_t kMaxLineTable = 1 << 20;  // longest line table read

// "python3.12", "libpython3.12.so.1.0", "libpython3.10d.so": the minor
// version, or -1 when the name is not an interpreter's.
int minor_from_name(const std::string& path) {
  std::string base = path.substr(path.rfind('/') + 1);
  for (const char* prefix : {"python3.", "libpython3."}) {
    size_t n = std::strlen(prefix);
    if (base.compare(0, n, prefix) != 0) continue;
    int minor = 0, digits = 0;
    for (size_t i = n; i < base.size() && base[i] >= '0' && base[i] <= '9' && digits < 3; ++i, ++digits)
      minor = minor * 10 + (base[i] - '0');
    return digits ? minor : -1;
  }
  return -1;
}

struct ElfSyms {
  std::map<std::string, GElf_Sym> syms;  // the symbols asked for that the file defines
  std::vector<GElf_Phdr> loads;
};

// The named symbols of an ELF file (its dynamic symbols, then .symtab).
bool read_syms(int fd, const std::vector<std::string>& names, ElfSyms& out) {
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  if (!elf) return false;
  size_t nph = 0;
  if (elf_getphdrnum(elf, &nph) == 0)
    for (size_t i = 0; i < nph; ++i) {
      GElf_Phdr ph;
      if (gelf_getphdr(elf, static_cast<int>(i), &ph) && ph.p_type == PT_LOAD) out.loads.push_back(ph);
    }
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    size_t n = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < n; ++i) {
      GElf_Sym s;
      if (!gelf_getsym(data, static_cast<int>(i), &s) || s.st_shndx == SHN_UNDEF) continue;
      const char* name = elf_strptr(elf, sh.sh_link, s.st_name);
      if (!name) continue;
      for (const auto& want : names)
        if (want == name) out.syms.emplace(want, s);
    }
  }
  elf_end(elf);
  return true;
}

}  // namespace

gpuobs_py_proc PythonProcess::bpf() const {
  gpuobs_py_proc p = layout_.bpf;
  p.runtime = runtime;
  return p;
}

bool PythonProcess::read(uint64_t addr, void* out, size_t n) const {
  if (!addr) return false;
  iovec local{out, n};
  iovec remote{reinterpret_cast<void*>(addr), n};
  bool ok = ::process_vm_readv(static_cast<pid_t>(tgid_), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
  if (!ok && errno == ESRCH) gone_ = true;
  return ok;
}

// A str object: compact ASCII data follows PyASCIIObject, other compact
// strings follow PyCompactUnicodeObject in 1, 2 or 4 bytes a character
// (state bits: kind 2..4, compact 5, ascii 6). Returned as UTF-8.
std::optional<std::string> PythonProcess::read_str(uint64_t addr) const {
  uint8_t head[40];  // through state
  if (!read(addr, head, sizeof head)) return std::nullopt;
  int64_t length = 0;
  uint32_t state = 0;
  std::memcpy(&length, head + 16, 8);
  std::memcpy(&state, head + 32, 4);
  unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (length < 0 || !compact || (kind != 1 && kind != 2 && kind != 4)) return std::nullopt;
  size_t chars = std::min<size_t>(static_cast<size_t>(length), kMaxStr);
  uint64_t data = addr + (ascii ? layout_.str_ascii_size : layout_.str_compact_size);
  std::string raw(chars * kind, '\0');
  if (chars && !read(data, raw.data(), raw.size())) return std::nullopt;
  if (kind == 1 && ascii) return raw;
  std::string out;
  for (size_t i = 0; i < chars; ++i) {
    uint32_t c = 0;
    std::memcpy(&c, raw.data() + i * kind, kind);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xc0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 63));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xe0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 63));
      out += static_cast<char>(0x80 | (c & 63));
    } else {
      out += static_cast<char>(0xf0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 63));
      out += static_cast<char>(0x80 | ((c >> 6) & 63));
      out += static_cast<char>(0x80 | (c & 63));
    }
  }
  return out;
}

// A bytes object: ob_size at 16, the bytes at 32.
std::optional<std::string> PythonProcess::read_bytes(uint64_t addr, size_t max) const {
  int64_t size = 0;
  if (!read(addr + 16, &size, 8) || size < 0 || static_cast<size_t>(size) > max) return std::nullopt;
  std::string out(static_cast<size_t>(size), '\0');
  if (size && !read(addr + 32, out.data(), out.size())) return std::nullopt;
  return out;
}

const PyCode* PythonProcess::code(uint64_t addr) {
  auto [it, fresh] = codes_.try_emplace(addr);
  if (!fresh) return it->second.get();
  if (gone_) {  // nothing more can be read: not cached, so no code is called "not a code object"
    codes_.erase(it);
    return nullptr;
  }
  uint8_t obj[256];
  size_t n = std::min<size_t>(layout_.code_read, sizeof obj);
  uint64_t type = 0, filename = 0, name = 0, linetable = 0;
  int32_t firstlineno = 0;
  if (!read(addr, obj, n)) {
    ++unreadable_;
    if (gone_) codes_.erase(it);
    return nullptr;
  }
  std::memcpy(&type, obj + 8, 8);
  if (type != code_type) {
    ++unreadable_;
    return nullptr;
  }
  std::memcpy(&filename, obj + layout_.code_filename, 8);
  std::memcpy(&name, obj + layout_.code_name, 8);
  std::memcpy(&linetable, obj + layout_.code_linetable, 8);
  std::memcpy(&firstlineno, obj + layout_.code_firstlineno, 4);
  auto file = read_str(filename);
  auto qual = read_str(name);
  auto lines = read_bytes(linetable, kMaxLineTable);
  if (!file || !qual || !lines) {
    ++unreadable_;
    if (gone_) codes_.erase(it);
    return nullptr;
  }
  bool shim = *file == "__init__" && *qual == "__init__";  // no program's file is named so: paths, "<string>"
  it->second =
      std::make_unique<PyCode>(PyCode{std::move(*qual), std::move(*file), firstlineno, std::move(*lines), shim});
  return it->second.get();
}

int PythonProcess::line(const PyCode& c, uint32_t instr) const {
  uint32_t unit = 0;
  if (layout_.instr_is_index) {
    if (static_cast<int32_t>(instr) < 0) return c.firstlineno;  // not started
    unit = instr;
  } else {
    // A frame being set up points before its first instruction.
    if (instr < layout_.code_adaptive) return c.firstlineno;
    unit = (instr - layout_.code_adaptive) / 2;
  }
  return python_line(layout_.lines, c.linetable, c.firstlineno, unit);
}

PythonFound find_python(uint32_t tgid, const std::string& proc_root) {
  PythonFound found;
  auto maps = read_proc_maps(tgid, proc_root);
  if (!maps) {
    found.status = PythonFind::unreadable;
    return found;
  }
  // Candidate files: named like an interpreter, the shared library first
  // (an executable linked to libpython exports nothing of its own).
  struct Candidate {
    const Mapping* first;  // its mapping of lowest offset
    int minor;
  };
  std::map<std::pair<uint64_t, uint64_t>, Candidate> files;
  for (const Mapping& m : *maps) {
    if (!m.inode) continue;
    int minor = minor_from_name(m.path);
    if (minor < 0) continue;
    auto [it, fresh] = files.try_emplace({m.dev, m.inode}, Candidate{&m, minor});
    if (!fresh && m.offset < it->second.first->offset) it->second.first = &m;
  }
  std::vector<Candidate> order;
  for (auto& [k, c] : files) order.push_back(c);
  std::stable_sort(order.begin(), order.end(), [](const Candidate& a, const Candidate& b) {
    return a.first->path.find("/libpython") != std::string::npos &&
           b.first->path.find("/libpython") == std::string::npos;
  });
  for (const Candidate& c : order) {
    const Mapping& m = *c.first;
    int fd = open_mapped_file(tgid, m, proc_root);  // the stack resolver's way to the file
    if (fd < 0) {
      found.status = PythonFind::unreadable;
      found.file = m.path;
      continue;
    }
    ElfSyms es;
    bool ok = read_syms(fd, {"_PyRuntime", "Py_Version", "_PyEval_EvalFrameDefault", "PyCode_Type"}, es);
    ::close(fd);
    if (!ok || !es.syms.count("_PyRuntime") || !es.syms.count("PyCode_Type")) continue;
    // Load bias: the mapping of lowest offset shows the PT_LOAD holding it.
    int64_t bias = 0;
    bool have_bias = false;
    for (const GElf_Phdr& ph : es.loads)
      if (m.offset >= (ph.p_offset & ~uint64_t{0xfff}) && m.offset < ph.p_offset + std::max<uint64_t>(ph.p_filesz, 1)) {
        bias = static_cast<int64_t>(m.start) - static_cast<int64_t>(ph.p_vaddr - ph.p_offset + m.offset);
        have_bias = true;
        break;
      }
    if (!have_bias) continue;
    auto proc = std::make_shared<PythonProcess>(tgid, PyLayout{}, m.path);
    uint32_t version = 0x0300 | static_cast<uint32_t>(c.minor);
    if (auto v = es.syms.find("Py_Version"); v != es.syms.end()) {
      uint32_t hex = 0;  // PY_VERSION_HEX, e.g. 0x030b02f0
      iovec local{&hex, 4};
      iovec remote{reinterpret_cast<void*>(v->second.st_value + bias), 4};
      if (::process_vm_readv(static_cast<pid_t>(tgid), &local, 1, &remote, 1, 0) != 4) {
        found.status = PythonFind::unreadable;
        found.file = m.path;
        return found;
      }
      version = hex >> 16;
    }
    found.file = m.path;
    found.version = version;
    auto layout = python_layout(version);
    if (!layout) {
      found.status = PythonFind::unknown_version;
      return found;
    }
    proc = std::make_shared<PythonProcess>(tgid, *layout, m.path);
    proc->runtime = es.syms["_PyRuntime"].st_value + bias;
    proc->code_type = es.syms["PyCode_Type"].st_value + bias;
    if (auto e = es.syms.find("_PyEval_EvalFrameDefault"); e != es.syms.end()) {
      proc->eval_start_ = e->second.st_value + bias;
      proc->eval_end_ = proc->eval_start_ + std::max<uint64_t>(e->second.st_size, 1);
    }
    found.status = PythonFind::found;
    found.proc = std::move(proc);
    return found;
  }
  return found;
}

}  // namespace gpuobs
