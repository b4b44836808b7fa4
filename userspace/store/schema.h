// Schema versioning: PRAGMA application_id marks a gpuobs capture,
// PRAGMA user_version is its schema version, schema_migrations records each
// migration applied (schema/migrations/NNN_name.sql, in order).
#pragma once

#include <string>
#include <vector>

#include "store/db.h"

namespace gpuobs {

constexpr int32_t kApplicationId = 0x4750424F;  // "GPBO"
int schema_version();                           // the newest migration this build knows

// Brings a writable database up to schema_version(), in one transaction per
// migration. Refuses (exit 2) a capture written by a newer gpuobs.
// up_to: stop after this version (tests build captures of older schemas).
Status migrate(Db& db, int up_to = 1 << 30);

// Why a capture was written by a gpuobs newer than this build: its
// user_version, a schema_migrations row or capture.abi_version is above what
// this build knows. Empty when it is not newer.
std::string newer_than_build(Db& db);
// Before anything writes into an existing capture (replay's tables, record
// --force replacing it): a newer capture is refused, exit 2. A newer gpuobs
// may have added meanings this build would break or drop.
Status refuse_if_newer(Db& db, const std::string& path);
// record --force: refuses to replace a capture newer than this build; a path
// that is no readable capture is left to the caller's own checks.
Status refuse_replacing_newer(const std::string& path);

// Files up to this size (with their -wal) get PRAGMA quick_check when opened
// for reading: about 0.1 s at this size, and it catches damaged pages that a
// report would not touch. Larger files: `gpuobs check`, and corruption met by
// a query is reported as such (capture_error).
constexpr int64_t kQuickCheckMaxBytes = int64_t{64} << 20;
enum class OpenCheck { quick, none };

// Opens a capture for reading, read-only by construction (SQLITE_OPEN_READONLY
// and query_only). Errors: not a gpuobs capture, corrupt file (quick_check on
// small files); each with exit code 2. A capture newer than this build is
// read, with one warning on stderr per file and process.
// Threads::one: the connection is used by one thread only
// (SQLITE_OPEN_NOMUTEX: no mutex taken per sqlite3_column_* call, about a
// tenth of the shipper's time reading a capture).
enum class Threads { any, one };
Result<Db> open_capture_readonly(const std::string& path, OpenCheck check = OpenCheck::quick,
                                 Threads threads = Threads::any);

// PRAGMA integrity_check (or quick_check): up to max problems; empty: ok.
Result<std::vector<std::string>> integrity_problems(Db& db, bool quick, int max = 20);
// SQLITE_CORRUPT / SQLITE_NOTADB (extended codes included).
bool is_corruption(int rc);
// An SQLite failure on db, as the CLI shows it: "capture is corrupt: ..."
// with the way to check it when the error is corruption, else "WHAT: errmsg".
Error capture_error(sqlite3* db, const std::string& what, int exit_code = 2);

}  // namespace gpuobs
