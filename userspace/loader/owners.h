// Owners of what the engine takes from libbpf and the kernel: each releases
// its resource once, in its destructor, so no error path can leak one and no
// destructor has to remember it.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <memory>
#include <utility>

struct bpf_link;
struct ring_buffer;

namespace gpuobs {

struct LinkDeleter {
  void operator()(bpf_link* l) const;  // bpf_link__destroy (defined in engine.cpp, with libbpf)
};
// A libbpf link (a perf-event uprobe or a tracepoint attachment).
using Link = std::unique_ptr<bpf_link, LinkDeleter>;

struct RingBufferDeleter {
  void operator()(ring_buffer* r) const;  // ring_buffer__free
};
using RingBuffer = std::unique_ptr<ring_buffer, RingBufferDeleter>;

// A file descriptor (a uprobe-multi link): closed once.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

// A shared mapping of a BPF map's memory: unmapped once.
class MappedRegion {
 public:
  MappedRegion() = default;
  MappedRegion(void* addr, size_t len) : addr_(addr), len_(len) {}
  MappedRegion(MappedRegion&& o) noexcept : addr_(std::exchange(o.addr_, nullptr)), len_(std::exchange(o.len_, 0)) {}
  MappedRegion& operator=(MappedRegion&& o) noexcept {
    if (this != &o) {
      reset();
      addr_ = std::exchange(o.addr_, nullptr);
      len_ = std::exchange(o.len_, 0);
    }
    return *this;
  }
  MappedRegion(const MappedRegion&) = delete;
  MappedRegion& operator=(const MappedRegion&) = delete;
  ~MappedRegion() { reset(); }
  void* get() const { return addr_; }
  void reset() {
    if (addr_) ::munmap(addr_, len_);
    addr_ = nullptr;
    len_ = 0;
  }

 private:
  void* addr_ = nullptr;
  size_t len_ = 0;
};

}  // namespace gpuobs
