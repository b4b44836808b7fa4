#include "store/nccl_rows.h"

namespace gpuobs {

int write_nccl_stall(sqlite3* db, const NcclStall& s) {
  Stmt st(db,
          "INSERT INTO nccl_stalls (detected_mono_ns, comm_hash, seq, op, kind, nranks, ranks_in, ranks_missing,"
          " waited_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  st.bind(1, s.detected_ns).bind(2, s.comm_hash).bind(3, s.seq).bind(4, s.op).bind(5, s.kind).bind(6, s.nranks);
  st.bind(7, s.ranks_in).bind(8, s.ranks_missing).bind(9, s.waited_ns);
  if (int rc = st.exec(); rc != SQLITE_DONE) return rc;
  int64_t id = sqlite3_last_insert_rowid(db);
  Stmt r(db,
         "INSERT INTO nccl_stall_ranks (stall_id, rank, tgid, state, last_seq, last_api, last_call_mono_ns) VALUES"
         " (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
  for (const auto& k : s.ranks) {
    r.bind(1, id).bind(2, k.rank).bind(3, k.tgid).bind(4, k.state).bind(5, k.last_seq);
    if (k.last_api.empty()) r.bind_null(6);
    else r.bind(6, k.last_api);
    r.bind(7, k.last_call_ns);
    if (int rc = r.exec(); rc != SQLITE_DONE) return rc;
  }
  return SQLITE_DONE;
}

Status NcclRowWriter::prepare(sqlite3* db, StringTable* strings) {
  db_ = db;
  strings_ = strings;
  comm_ =
      Stmt(db,
           "INSERT INTO nccl_comm_rows (process_id, tgid, comm, comm_hash, rank, nranks, device, parent_hash,"
           " created_mono_ns, api_id, result, stack_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  call_ =
      Stmt(db,
           "INSERT INTO nccl_call_rows (ts_mono_ns, duration_ns, process_id, tgid, tid, comm_id, seq, api_id, op_id,"
           " count, datatype_id, redop_id, peer, stream, bytes, send_buf, recv_buf, result, stack_id) VALUES (?1,"
           " ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)");
  if (!comm_.valid() || !call_.valid())
    return make_error(std::string("cannot prepare NCCL statements: ") + sqlite3_errmsg(db));
  return {};
}

int64_t NcclRowWriter::text(std::string_view t) {
  int64_t id = strings_->intern(t);
  if (!id) failed_ = true;
  return id;
}

void NcclRowWriter::forget_process(uint32_t tgid) {
  comms_.forget_process(tgid);
  row_of_.erase(row_of_.lower_bound({tgid, 0}), row_of_.upper_bound({tgid, UINT64_MAX}));
  std::erase_if(new_in_batch_, [&](const auto& k) { return k.first == tgid; });
}

int64_t NcclRowWriter::comm_row(const NcclCall& c, int64_t pid, int64_t stack_id, bool made_here) {
  if (!c.comm) return 0;
  auto key = std::make_pair(c.call.tgid, c.comm);
  if (!made_here)
    if (auto it = row_of_.find(key); it != row_of_.end()) return it->second;
  const NcclComms::Comm* m = comms_.find(c.call.tgid, c.comm);
  comm_.bind(1, pid).bind(2, c.call.tgid).bind(3, c.comm);
  if (m && m->id_hash) comm_.bind(4, m->id_hash);
  else comm_.bind_null(4);
  comm_.bind(5, m ? m->rank : std::nullopt).bind(6, m ? m->nranks : std::nullopt).bind(7, m ? m->device : std::nullopt);
  if (made_here && c.parent) {
    const NcclComms::Comm* p = comms_.find(c.call.tgid, *c.parent);
    if (p && p->id_hash) comm_.bind(8, p->id_hash);
    else comm_.bind_null(8);
  } else {
    comm_.bind_null(8);
  }
  if (made_here) {
    comm_.bind(9, c.call.ts_ns).bind(10, text(c.call.api)).bind(11, c.call.result);
    if (stack_id) comm_.bind(12, stack_id);
    else comm_.bind_null(12);
  } else {
    comm_.bind_null(9).bind_null(10).bind_null(11).bind_null(12);
  }
  if (failed_ || comm_.exec() != SQLITE_DONE) {
    comm_.reset();
    return 0;
  }
  int64_t id = sqlite3_last_insert_rowid(db_);
  row_of_[key] = id;
  new_in_batch_.push_back(key);
  return id;
}

int NcclRowWriter::write_call(const ApiCallEvent& e, const ApiSpec& spec, int64_t pid, int64_t stack_id) {
  failed_ = false;
  NcclCall c = decode_nccl(e, spec);
  int64_t seq = comms_.observe(c.call.tgid, c);
  bool makes = c.op == NcclOp::comm_init || c.op == NcclOp::comm_init_all || c.op == NcclOp::comm_split;
  int64_t comm_id = 0;
  if (makes) {
    comm_id = comm_row(c, pid, stack_id, true);
  } else if (c.op == NcclOp::comm_device && c.device) {
    comm_id = comm_row(c, pid, 0, false);
    // The device learned later: the comm row says it from now on.
    if (comm_id) {
      Stmt up(db_, "UPDATE nccl_comm_rows SET device = ?1 WHERE id = ?2");
      up.bind(1, *c.device).bind(2, comm_id);
      (void)up.exec();
    }
  } else if ((c.op == NcclOp::comm_rank && c.rank) || (c.op == NcclOp::comm_count && c.nranks)) {
    comm_id = comm_row(c, pid, 0, false);
    // A split's rank and size, learned when the application asked NCCL.
    if (comm_id) {
      Stmt up(db_, c.op == NcclOp::comm_rank ? "UPDATE nccl_comm_rows SET rank = ?1 WHERE id = ?2"
                                             : "UPDATE nccl_comm_rows SET nranks = ?1 WHERE id = ?2");
      up.bind(1, c.op == NcclOp::comm_rank ? *c.rank : *c.nranks).bind(2, comm_id);
      (void)up.exec();
    }
  } else {
    comm_id = comm_row(c, pid, 0, false);
  }
  const NcclComms::Comm* m = c.comm ? comms_.find(c.call.tgid, c.comm) : nullptr;
  std::optional<int64_t> nranks = m ? m->nranks : std::nullopt;
  std::optional<int64_t> rank = m ? m->rank : std::nullopt;
  call_.bind(1, c.call.ts_ns).bind(2, c.call.duration_ns).bind(3, pid).bind(4, c.call.tgid).bind(5, c.call.tid);
  if (comm_id) call_.bind(6, comm_id);
  else call_.bind_null(6);
  if (seq) call_.bind(7, seq);
  else call_.bind_null(7);
  call_.bind(8, text(c.call.api)).bind(9, text(to_string(c.op))).bind(10, c.count);
  if (c.dtype) call_.bind(11, text(nccl_dtype_name(*c.dtype)));
  else call_.bind_null(11);
  if (c.redop) call_.bind(12, text(nccl_redop_name(*c.redop)));
  else call_.bind_null(12);
  call_.bind(13, c.peer)
      .bind(14, c.stream)
      .bind(15, nccl_bytes(c, nranks, rank))
      .bind(16, c.send_buf)
      .bind(17, c.recv_buf);
  call_.bind(18, c.call.result);
  if (stack_id) call_.bind(19, stack_id);
  else call_.bind_null(19);
  if (failed_) {
    call_.reset();
    return SQLITE_ERROR;
  }
  return call_.exec();
}

}  // namespace gpuobs
