#include "store/schema.h"

#include <sys/stat.h>

#include <cstdlib>
#include <string>

#include "store/embedded_sql.h"

namespace gpuobs {
namespace {

int version_of(std::string_view migration_name) {
  return std::atoi(std::string(migration_name.substr(0, migration_name.find('_'))).c_str());
}

}  // namespace

int schema_version() {
  const auto& m = sql::migrations();
  return m.empty() ? 0 : version_of(m.back().name);
}

Status migrate(Db& db) {
  auto cur = db.scalar("PRAGMA user_version");
  if (!cur) return cur.error();
  if (*cur > schema_version())
    return make_error("capture schema version " + std::to_string(*cur) +
                      " is newer than this gpuobs understands (" + std::to_string(schema_version()) + ")",
                      "upgrade gpuobs", 2);
  if (auto s = db.exec("CREATE TABLE IF NOT EXISTS schema_migrations ("
                       " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_utc TEXT NOT NULL)");
      !s)
    return s;
  for (const auto& m : sql::migrations()) {
    int v = version_of(m.name);
    if (v <= *cur) continue;
    std::string tx = "BEGIN;\n" + std::string(m.text) +
                     "\nINSERT INTO schema_migrations VALUES (" + std::to_string(v) + ", '" +
                     std::string(m.name) + "', strftime('%Y-%m-%dT%H:%M:%SZ','now'));\n" +
                     "PRAGMA user_version = " + std::to_string(v) + ";\nCOMMIT;";
    if (auto s = db.exec(tx); !s) {
      (void)db.exec("ROLLBACK");
      return make_error("migration " + std::string(m.name) + " failed: " + s.error().message);
    }
  }
  return db.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
}

Result<Db> open_capture_readonly(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0)
    return make_error("cannot open capture " + path + ": no such file", "", 2);
  auto db = Db::open(path, SQLITE_OPEN_READONLY);
  if (!db) return make_error(db.error().message, "", 2);
  (void)db->exec("PRAGMA query_only = 1");
  // A writer commits in milliseconds; a lock held longer is reported, not waited on forever.
  sqlite3_busy_timeout(db->get(), 2000);
  auto app = db->scalar("PRAGMA application_id");
  if (!app) {
    if (sqlite3_errcode(db->get()) == SQLITE_BUSY)
      return make_error(path + " is locked by another process", "retry when its writer has finished", 2);
    return make_error(path + " is not a readable SQLite database: " + app.error().message, "", 2);
  }
  if (*app != kApplicationId)
    return make_error(path + " is not a gpuobs capture (application_id " + std::to_string(*app) + ")", "", 2);
  auto ver = db->scalar("PRAGMA user_version");
  if (!ver) return make_error(path + ": " + ver.error().message, "", 2);
  if (*ver > schema_version())
    return make_error(path + " has schema version " + std::to_string(*ver) +
                      ", newer than this gpuobs understands (" + std::to_string(schema_version()) + ")",
                      "upgrade gpuobs", 2);
  if (*ver < 1) return make_error(path + " is an incomplete gpuobs capture (no schema)", "", 2);
  // A cheap structural check catches truncated files before a report half-prints.
  auto ok = db->scalar("SELECT count(*) FROM capture");
  if (!ok) return make_error(path + " is damaged: " + ok.error().message, "", 2);
  return std::move(db.value());
}

}  // namespace gpuobs
