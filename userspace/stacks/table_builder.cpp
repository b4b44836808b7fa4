#include "stacks/table_builder.h"

#include <cstring>

#include "stacks/unwind_table.h"

namespace gpuobs {

TableBuilder::TableBuilder(uint64_t* rows, uint32_t capacity) : rows_(rows), cap_(capacity) {
  thread_ = std::thread([this] { run(); });
}

TableBuilder::~TableBuilder() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void TableBuilder::request(int64_t module_id, std::shared_ptr<FileHandle> file) {
  {
    std::lock_guard lk(mu_);
    queue_.emplace_back(module_id, std::move(file));
  }
  cv_.notify_one();
}

std::vector<TableBuilder::Done> TableBuilder::take_done() {
  if (!have_done_.load(std::memory_order_acquire)) return {};
  std::lock_guard lk(mu_);
  have_done_ = false;
  return std::exchange(done_, {});
}

void TableBuilder::run() {
  for (;;) {
    std::pair<int64_t, std::shared_ptr<FileHandle>> job;
    {
      std::unique_lock lk(mu_);
      cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    Done d{job.first, false, 0, 0, {}};
    auto t = build_unwind_table(job.second->fd(), &stop_);
    if (stop_) return;
    if (t) {
      for (auto& l : t->loads) d.loads.push_back({l.offset, l.vaddr, l.filesz, l.exec});
      if (used_ + t->rows.size() <= cap_) {
        std::memcpy(rows_ + used_, t->rows.data(), t->rows.size() * 8);
        d.ok = true;
        d.row_start = used_;
        d.row_count = static_cast<uint32_t>(t->rows.size());
        used_ += d.row_count;
      }
    }
    std::lock_guard lk(mu_);
    done_.push_back(std::move(d));
    have_done_.store(true, std::memory_order_release);
  }
}

}  // namespace gpuobs
