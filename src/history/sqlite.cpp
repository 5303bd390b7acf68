#include "history/sqlite.hpp"

#include <sqlite3.h>

#include <fmt/core.h>

namespace memgate::sql {

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    if (s_) sqlite3_finalize(s_);
    s_ = o.s_;
    db_ = o.db_;
    o.s_ = nullptr;
  }
  return *this;
}

Stmt::~Stmt() {
  if (s_) sqlite3_finalize(s_);
}

Stmt& Stmt::bind(int i, std::int64_t v) {
  sqlite3_bind_int64(s_, i, v);
  return *this;
}

Stmt& Stmt::bind(int i, double v) {
  sqlite3_bind_double(s_, i, v);
  return *this;
}

Stmt& Stmt::bind(int i, std::string_view v) {
  sqlite3_bind_text64(s_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  return *this;
}

Stmt& Stmt::bind_null(int i) {
  sqlite3_bind_null(s_, i);
  return *this;
}

bool Stmt::step(std::string* error) {
  error->clear();
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) *error = sqlite3_errmsg(db_);
  return false;
}

Status Stmt::run() {
  std::string err;
  while (step(&err)) {
  }
  if (!err.empty()) return Error{err};
  return ok_status();
}

void Stmt::reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

std::int64_t Stmt::int64(int col) const { return sqlite3_column_int64(s_, col); }
double Stmt::real(int col) const { return sqlite3_column_double(s_, col); }
bool Stmt::is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }

std::string Stmt::text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
  if (!p) return {};
  return std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, col)));
}

Db& Db::operator=(Db&& o) noexcept {
  if (this != &o) {
    close();
    db_ = o.db_;
    o.db_ = nullptr;
  }
  return *this;
}

Db::~Db() { close(); }

void Db::close() {
  if (db_) sqlite3_close_v2(db_);
  db_ = nullptr;
}

Result<Db> Db::open(const std::string& path, int busy_ms) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) return Error{db.message("cannot open")};
  sqlite3_busy_timeout(raw, busy_ms);
  sqlite3_extended_result_codes(raw, 0);
  return db;
}

Result<Stmt> Db::prepare(std::string_view sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &s, nullptr) != SQLITE_OK)
    return Error{message("cannot prepare a statement")};
  return Stmt(s, db_);
}

Status Db::exec(std::string_view sql) {
  std::string copy(sql);
  char* err = nullptr;
  if (sqlite3_exec(db_, copy.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return Error{m};
  }
  return ok_status();
}

Result<std::string> Db::query_text(std::string_view sql) {
  auto st = prepare(sql);
  if (!st) return Error{st.error()};
  std::string err;
  std::string out = st->step(&err) ? st->text(0) : std::string();
  if (!err.empty()) return Error{err};
  return out;
}

std::int64_t Db::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }

int Db::changes() const { return sqlite3_changes(db_); }

int Db::last_code() const { return db_ ? sqlite3_errcode(db_) : SQLITE_CANTOPEN; }

bool Db::last_was_corrupt() const {
  int c = last_code();
  return c == SQLITE_CORRUPT || c == SQLITE_NOTADB;
}

bool Db::last_was_busy() const {
  int c = last_code();
  return c == SQLITE_BUSY || c == SQLITE_LOCKED;
}

std::string Db::message(std::string_view what) const {
  return fmt::format("{}: {}", what, db_ ? sqlite3_errmsg(db_) : "out of memory");
}

}  // namespace memgate::sql
