// gpuobs upgrade FILE...: brings captures written by older builds up to this
// build's schema, in place, on request only (readers never rewrite a file:
// every command reads an older capture as it is). Schema 12 turns the launch
// table into the compact one (schema/migrations/012_compact_launches.sql).
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "cli/commands.h"
#include "common/log.h"
#include "store/schema.h"

namespace gpuobs::cli {
namespace {

constexpr const char* kProgram = "gpuobs upgrade";

int upgrade_one(const std::string& file) {
  auto check = open_capture_readonly(file);  // the same clear errors as every read command
  if (!check) {
    print_error(kProgram, check.error());
    return check.error().exit_code;
  }
  if (auto s = refuse_if_newer(*check, file); !s) {
    print_error(kProgram, s.error());
    return 2;
  }
  auto before = check->scalar("PRAGMA user_version");
  if (before && *before >= schema_version()) {
    std::printf("%s: already at schema %d\n", file.c_str(), schema_version());
    return 0;
  }
  if (::access(file.c_str(), W_OK) != 0) {
    print_error(kProgram, make_error("cannot upgrade " + file + ": the file is not writable",
                                     "upgrade a copy: cp " + file + " /tmp/upgraded.gpuobs", 2));
    return 2;
  }
  auto db = Db::open(file, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW);
  if (!db) {
    print_error(kProgram, db.error());
    return 2;
  }
  sqlite3_busy_timeout(db->get(), 2000);
  // All migrations run in one transaction each: a failure leaves the file as it was at the last one.
  if (auto s = migrate(*db); !s) {
    print_error(kProgram, make_error("cannot upgrade " + file + ": " + s.error().message, "", 2));
    return 2;
  }
  (void)db->exec("PRAGMA wal_checkpoint(TRUNCATE)");
  std::printf("%s: schema %lld -> %d\n", file.c_str(), static_cast<long long>(before ? *before : 0), schema_version());
  return 0;
}

}  // namespace

int run_upgrade(const UpgradeArgs& args) {
  int worst = 0;
  for (const auto& f : args.files) worst = std::max(worst, upgrade_one(f));
  return worst;
}

}  // namespace gpuobs::cli
