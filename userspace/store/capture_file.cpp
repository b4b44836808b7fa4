#include "store/capture_file.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/private_files.h"

namespace gpuobs {
namespace {

bool has_sqlite_header(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  char head[16] = {};
  ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof head) && std::memcmp(head, "SQLite format 3", 16) == 0;
}

// A gpuobs capture has the two tables every schema version made first.
bool is_capture(const std::string& path) {
  sqlite3* db = nullptr;
  bool yes = false;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    const char* q =
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('capture', 'schema_migrations')";
    if (sqlite3_prepare_v2(db, q, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      yes = sqlite3_column_int(st, 0) == 2;
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return yes;
}

std::string refusal(const std::string& path, PathKind k) {
  switch (k) {
    case PathKind::symlink: return path + " is a symbolic link: gpuobs does not write captures through links";
    case PathKind::directory: return path + " is a directory";
    case PathKind::special: return path + " is a device, FIFO or socket, not a capture file";
    case PathKind::sqlite_other: return path + " is an SQLite database but not a gpuobs capture";
    case PathKind::other_file: return path + " is not a gpuobs capture";
    default: return path + " cannot be replaced";
  }
}

}  // namespace

PathKind classify_capture_path(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return PathKind::absent;
  if (S_ISLNK(st.st_mode)) return PathKind::symlink;
  if (S_ISDIR(st.st_mode)) return PathKind::directory;
  if (!S_ISREG(st.st_mode)) return PathKind::special;
  if (st.st_size == 0) return PathKind::empty_file;
  if (!has_sqlite_header(path)) return PathKind::other_file;
  return is_capture(path) ? PathKind::capture : PathKind::sqlite_other;
}

Status create_capture_file(const std::string& path, bool force) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 && errno != ENOENT)
    return make_error("cannot write " + path + ": " + std::strerror(errno), "", 2);
  PathKind kind = classify_capture_path(path);
  if (kind != PathKind::absent) {
    // The companions are SQLite's, so regular files too; anything else at
    // those names is not ours to remove (and would make the check below fail).
    for (const char* sfx : kCaptureCompanions) {
      std::string p = path + sfx;
      if (::lstat(p.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        return make_error(p + " exists and is not a regular file; refusing to replace " + path,
                          "choose another output path (-o)", 2);
    }
    bool replaceable = kind == PathKind::capture || kind == PathKind::empty_file;
    if (!replaceable)
      return make_error(refusal(path, kind) + "; refusing to " + (force ? "replace" : "write") + " it",
                        "choose another output path (-o)", 2);
    if (!force) return make_error("output file " + path + " already exists", "use --force to overwrite it", 2);
    remove_capture_files(path);
  }
  // O_EXCL|O_NOFOLLOW: a link or file planted since the check is refused, not followed.
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, kCaptureFileMode);
  if (fd < 0) {
    int e = errno;
    if (e == EEXIST) return make_error(path + " appeared while it was being created; refusing to use it", "", 2);
    return make_error("cannot create " + path + ": " + std::strerror(e),
                      e == ENOENT ? "check that the directory exists" : "check that the directory is writable", 2);
  }
  make_private(fd, kCaptureFileMode);
  ::close(fd);
  return {};
}

bool remove_capture_files(const std::string& path) {
  // unlink never follows a link: only the name goes.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return false;
  for (const char* sfx : kCaptureCompanions) ::unlink((path + sfx).c_str());
  ::unlink((path + ".shipped").c_str());  // gpuobsd's mark of a segment shipped to ClickHouse
  return true;
}

}  // namespace gpuobs
