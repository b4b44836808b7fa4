// replay::write: the replay tables (schema/migrations/008_replay.sql, and
// 021_replay_idle.sql's idle time) replaced
// in one transaction, so a re-run leaves byte-identical tables.
#include <optional>

#include "replay/replay.h"

namespace gpuobs::replay {
namespace {

template <class T>
void bind_opt(Stmt& s, int i, const std::optional<T>& v) {
  if (v) s.bind(i, static_cast<int64_t>(*v));
  else s.bind_null(i);
}

Status insert_all(Db& db, const Result& r) {
  int64_t unproven = 0;
  for (const Op& o : r.ops) unproven += !o.latest_end_ns;
  Stmt run(db.get(), "INSERT INTO replay_runs VALUES (1, 1, ?, ?, ?, ?, ?, ?, ?)");
  Stmt q(db.get(), "INSERT INTO replay_queues VALUES (?,?,?,?,?,?,?,?,?,?,?)");
  Stmt op(db.get(), "INSERT INTO replay_ops VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  Stmt dep(db.get(), "INSERT INTO replay_deps VALUES (?,?,?)");
  Stmt ob(db.get(), "INSERT INTO replay_observations VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  Stmt dp(db.get(), "INSERT INTO replay_depth VALUES (?,?,?)");
  Stmt hz(db.get(), "INSERT INTO replay_hazards VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  Stmt sp(db.get(), "INSERT INTO replay_idle_spans VALUES (?,?,?,?,?,?,?,?,?)");
  Stmt gp(db.get(), "INSERT INTO replay_idle_gaps VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  Stmt pc(db.get(), "INSERT INTO replay_idle_pieces VALUES (?,?,?,?)");
  for (Stmt* s : {&run, &q, &op, &dep, &ob, &dp, &hz, &sp, &gp, &pc})
    if (!s->valid())
      return make_error(
          "cannot prepare the replay inserts: " + db.errmsg(),
          "the capture lacks the replay tables (schema 8, idle time 21): gpuobs replay migrates it when writable");
  int rc = SQLITE_DONE;
  auto done = [&](Stmt& s) {
    rc = s.exec();
    return rc == SQLITE_DONE;
  };
  run.bind(1, int64_t(r.queues.size()))
      .bind(2, int64_t(r.ops.size()))
      .bind(3, int64_t(r.deps.size()))
      .bind(4, int64_t(r.observations.size()))
      .bind(5, int64_t(r.hazards.size()))
      .bind(6, unproven)
      .bind(7, r.end_ns);
  bool ok = done(run);
  for (size_t i = 0; ok && i < r.queues.size(); ++i) {
    const Queue& x = r.queues[i];
    q.bind(1, x.id).bind(2, x.process_id).bind(3, x.tgid).bind(4, x.kind).bind(5, x.handle);
    bind_opt(q, 6, x.tid);
    q.bind(7, int64_t{x.non_blocking});
    bind_opt(q, 8, x.created_ns);
    bind_opt(q, 9, x.destroyed_ns);
    q.bind(10, x.ops).bind(11, x.max_depth);
    ok = done(q);
  }
  for (size_t i = 0; ok && i < r.ops.size(); ++i) {
    const Op& x = r.ops[i];
    op.bind(1, x.id)
        .bind(2, x.queue_id)
        .bind(3, x.seq)
        .bind(4, x.kind)
        .bind(5, x.name)
        .bind(6, x.api)
        .bind(7, x.source_table)
        .bind(8, x.source_id)
        .bind(9, x.tid)
        .bind(10, x.stack_id)
        .bind(11, x.enqueue_ns)
        .bind(12, x.earliest_start_ns);
    bind_opt(op, 13, x.latest_end_ns);
    bind_opt(op, 14, x.bound_by);
    op.bind(15, x.dst).bind(16, x.src).bind(17, x.bytes).bind(18, x.direction).bind(19, x.event);
    ok = done(op);
  }
  for (size_t i = 0; ok && i < r.deps.size(); ++i) {
    dep.bind(1, r.deps[i].op_id).bind(2, r.deps[i].on_op_id).bind(3, r.deps[i].kind);
    ok = done(dep);
  }
  for (size_t i = 0; ok && i < r.observations.size(); ++i) {
    const Observation& x = r.observations[i];
    ob.bind(1, x.id)
        .bind(2, x.process_id)
        .bind(3, x.tid)
        .bind(4, x.kind)
        .bind(5, x.api)
        .bind(6, x.source_table)
        .bind(7, x.source_id)
        .bind(8, x.start_ns)
        .bind(9, x.end_ns);
    bind_opt(ob, 10, x.queue_id);
    ob.bind(11, x.event).bind(12, x.ops_completed).bind(13, x.blocked_ns).bind(14, x.stack_id);
    ok = done(ob);
  }
  for (size_t i = 0; ok && i < r.depth.size(); ++i) {
    dp.bind(1, r.depth[i].queue_id).bind(2, r.depth[i].ts_ns).bind(3, r.depth[i].depth);
    ok = done(dp);
  }
  for (size_t i = 0; ok && i < r.hazards.size(); ++i) {
    const Hazard& x = r.hazards[i];
    hz.bind(1, x.id).bind(2, x.kind).bind(3, x.process_id);
    bind_opt(hz, 4, x.op_id);
    bind_opt(hz, 5, x.other_op_id);
    hz.bind(6, x.source_table)
        .bind(7, x.source_id)
        .bind(8, x.api)
        .bind(9, x.ts_ns)
        .bind(10, x.stack_id)
        .bind(11, x.other_stack_id)
        .bind(12, x.detail);
    ok = done(hz);
  }
  for (size_t i = 0; ok && i < r.idle_spans.size(); ++i) {
    const IdleSpan& x = r.idle_spans[i];
    sp.bind(1, x.process_id);
    bind_opt(sp, 2, x.queue_id);
    sp.bind(3, x.start_ns).bind(4, x.end_ns).bind(5, x.work_ops).bind(6, x.measured_ops);
    sp.bind(7, x.busy_ns).bind(8, x.idle_ns).bind(9, x.gaps);
    ok = done(sp);
  }
  for (size_t i = 0; ok && i < r.idle_gaps.size(); ++i) {
    const IdleGap& x = r.idle_gaps[i];
    gp.bind(1, x.id).bind(2, x.process_id);
    bind_opt(gp, 3, x.queue_id);
    gp.bind(4, x.start_ns)
        .bind(5, x.end_ns)
        .bind(6, x.host_wait_ns)
        .bind(7, x.sync_wait_ns)
        .bind(8, x.dependency_wait_ns)
        .bind(9, x.other_ns)
        .bind(10, int64_t{x.measured})
        .bind(11, x.prev_op_id)
        .bind(12, x.next_op_id)
        .bind(13, int64_t{x.tid})
        .bind(14, x.before_stack_id)
        .bind(15, x.after_stack_id);
    ok = done(gp);
    for (size_t k = 0; ok && k < x.pieces.size(); ++k) {
      pc.bind(1, x.id).bind(2, x.pieces[k].kind).bind(3, x.pieces[k].start_ns).bind(4, x.pieces[k].end_ns);
      ok = done(pc);
    }
  }
  if (!ok) return make_error("cannot write the replay tables: " + db.errmsg());
  return {};
}

}  // namespace

Status write(Db& db, const Result& r) {
  if (auto s = db.exec("BEGIN IMMEDIATE"); !s)
    return make_error("cannot write the replay tables: " + s.error().message);
  Status s = db.exec(
      "DELETE FROM replay_idle_pieces; DELETE FROM replay_idle_gaps; DELETE FROM replay_idle_spans;"
      " DELETE FROM replay_hazards; DELETE FROM replay_depth; DELETE FROM replay_observations;"
      " DELETE FROM replay_deps; DELETE FROM replay_ops; DELETE FROM replay_queues; DELETE FROM replay_runs;");
  if (s) s = insert_all(db, r);
  if (s) s = db.exec("COMMIT");
  if (!s) {
    (void)db.exec("ROLLBACK");
    return s;
  }
  return {};
}

}  // namespace gpuobs::replay
