// A thin RAII layer over the SQLite C API: a connection, prepared
// statements with typed binds and reads, and errors as values. Only what
// history needs; every SQLite call stays behind this seam.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace memgate::sql {

class Db;

class Stmt {
 public:
  Stmt() = default;
  Stmt(Stmt&& o) noexcept : s_(o.s_), db_(o.db_) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  // Parameters are 1-based, as in SQL.
  Stmt& bind(int i, std::int64_t v);
  Stmt& bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
  Stmt& bind(int i, double v);
  Stmt& bind(int i, std::string_view v);
  Stmt& bind_null(int i);

  // true: a row is ready; false: done. Errors go to *error (empty if none).
  bool step(std::string* error);
  // Runs to completion (no rows expected).
  Status run();
  void reset();  // for reuse: clears the position and the bindings

  std::int64_t int64(int col) const;
  double real(int col) const;
  std::string text(int col) const;
  bool is_null(int col) const;

 private:
  friend class Db;
  Stmt(sqlite3_stmt* s, sqlite3* db) : s_(s), db_(db) {}
  sqlite3_stmt* s_ = nullptr;
  sqlite3* db_ = nullptr;
};

class Db {
 public:
  Db() = default;
  Db(Db&& o) noexcept : db_(o.db_) { o.db_ = nullptr; }
  Db& operator=(Db&& o) noexcept;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  ~Db();

  // Read-write, created if missing. `busy_ms`: how long to wait for locks.
  static Result<Db> open(const std::string& path, int busy_ms);
  void close();

  Result<Stmt> prepare(std::string_view sql);
  Status exec(std::string_view sql);  // one or more statements, no results
  // The first column of the first row as text ("" if no row).
  Result<std::string> query_text(std::string_view sql);
  std::int64_t last_insert_rowid() const;
  // Rows the last INSERT, UPDATE or DELETE changed.
  int changes() const;

  // The code of the last failure: corruption is handled differently from
  // a lock held too long.
  int last_code() const;
  bool last_was_corrupt() const;
  bool last_was_busy() const;

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  std::string message(std::string_view what) const;
  sqlite3* db_ = nullptr;
};

}  // namespace memgate::sql
