// Schema versioning: PRAGMA application_id marks a gpuobs capture,
// PRAGMA user_version is its schema version, schema_migrations records each
// migration applied (schema/migrations/NNN_name.sql, in order).
#pragma once

#include "store/db.h"

namespace gpuobs {

constexpr int32_t kApplicationId = 0x4750424F;  // "GPBO"
int schema_version();                            // the newest migration this build knows

// Brings a writable database up to schema_version(), in one transaction per migration.
Status migrate(Db& db);
// Opens a capture for reading, read-only by construction (SQLITE_OPEN_READONLY
// and query_only). Errors: not a gpuobs capture, newer schema, corrupt file;
// each with exit code 2.
Result<Db> open_capture_readonly(const std::string& path);

}  // namespace gpuobs
