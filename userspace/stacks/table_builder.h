// Builds --unwind bpf tables (unwind_table.h) on a thread of its own: a
// large library takes seconds (libtorch_cuda.so: millions of rows), and the
// capture thread must keep draining the ring meanwhile. Rows go straight into
// the BPF map's memory; finished files are handed back with take_done().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "stacks/stack_types.h"

namespace gpuobs {

class TableBuilder {
 public:
  TableBuilder(uint64_t* rows, uint32_t capacity);
  ~TableBuilder();
  TableBuilder(const TableBuilder&) = delete;
  TableBuilder& operator=(const TableBuilder&) = delete;

  void request(int64_t module_id, std::shared_ptr<FileHandle> file);

  struct Done {
    int64_t module_id;
    bool ok;  // false: no table (no .eh_frame_hdr, unreadable, or the map is full)
    uint32_t row_start, row_count;
    struct Load {
      uint64_t offset, vaddr, filesz;
      bool exec;
    };
    std::vector<Load> loads;
  };
  // Finished files since the last call (cheap when there are none).
  std::vector<Done> take_done();

 private:
  void run();

  uint64_t* rows_;
  uint32_t cap_, used_ = 0;  // used_: builder thread only
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<int64_t, std::shared_ptr<FileHandle>>> queue_;
  std::vector<Done> done_;
  std::atomic<bool> have_done_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace gpuobs
