/* libmemgate-preload.so: exec-level interception (ARCHITECTURE.md,
 * "Interception").
 *
 * `memgate run` puts this library in the build's LD_PRELOAD. In every
 * dynamically linked program of the build it replaces the exec family and
 * posix_spawn: when the program about to start is a compiler or linker
 * (src/preload/compilers.h) and the call is the outermost one of a job, the
 * call starts memgate-wrap instead, as
 *
 *     memgate-wrap exec PATH ARGV0 ARGS...
 *
 * PATH being the file the original call would have executed (found in the
 * caller's PATH for the *p variants), ARGV0... the original argv. Every
 * other call goes to the real function unchanged, except that an
 * environment rebuilt from scratch gets memgate's variables back (see
 * mg_plan_env). A constructor does the same check for the program it is
 * loaded into, which catches compilers started by callers this library
 * cannot see (statically linked tools, Go's raw syscalls, fexecve, the build
 * command itself).
 *
 * Not caught here, and what catches it instead: a statically linked
 * compiler started by path from a static or raw-syscall caller, or through
 * fexecve (no loader runs): the PATH shims when it is started by name, the
 * runner's ungated detector otherwise; anything below a setuid program (the
 * loader drops LD_PRELOAD): the detector; 32-bit programs, which cannot load
 * this library (their 64-bit children are caught); a "compiler" that is a
 * script without #! (through the wrapper execve fails with 126). The
 * start-up check reads argv from glibc's constructor arguments; other C
 * libraries get the hooks only.
 *
 * Rules for this file: C, libc only, no heap (the hooks run between vfork
 * and exec, where malloc and locks are off limits): static buffers filled
 * once by the constructor, everything else on the stack.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/compilers.h"

#define MG_API __attribute__((visibility("default")))

extern char** environ;

/* Only this library's own file name is looked for in LD_PRELOAD. */
static const char kLibName[] = "libmemgate-preload.so";
/* An environment this large is passed on as it is, never copied. */
enum { kMaxEnv = 16384, kMaxArgs = 65536 };

/* Filled once by the constructor while the process is single-threaded,
 * read-only afterwards. g_wrapper[0] == 0: this process is not under
 * `memgate run` (no MEMGATE_SOCKET when it started), and every call passes
 * straight through. */
static char g_wrapper[PATH_MAX];                 /* memgate-wrap next to this library */
static char g_library[PATH_MAX];                 /* this library, to put back into LD_PRELOAD */
static char g_socket_entry[sizeof "MEMGATE_SOCKET=" + 108];
static char g_launchers[1024];                   /* MEMGATE_LAUNCHERS: extra launcher names */

typedef int (*execve_fn)(const char*, char* const[], char* const[]);
typedef int (*execvpe_fn)(const char*, char* const[], char* const[]);
typedef int (*spawn_fn)(pid_t*, const char*, const posix_spawn_file_actions_t*, const posix_spawnattr_t*,
                        char* const[], char* const[]);
typedef int (*execveat_fn)(int, const char*, char* const[], char* const[], int);

static execve_fn real_execve;
static execvpe_fn real_execvpe;
static spawn_fn real_posix_spawn;
static spawn_fn real_posix_spawnp;
static execveat_fn real_execveat;

static void mg_resolve(void) {
  real_execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
  real_execvpe = (execvpe_fn)dlsym(RTLD_NEXT, "execvpe");
  real_posix_spawn = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
  real_posix_spawnp = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawnp");
  real_execveat = (execveat_fn)dlsym(RTLD_NEXT, "execveat");
}

/* ---- small string helpers (no libc allocation) ------------------------ */

/* The value of NAME in envp, or NULL. */
static const char* mg_env_get(char* const envp[], const char* name, size_t len) {
  size_t i;
  if (!envp) return NULL;
  for (i = 0; envp[i]; ++i)
    if (strncmp(envp[i], name, len) == 0 && envp[i][len] == '=') return envp[i] + len + 1;
  return NULL;
}
#define MG_GET(envp, lit) mg_env_get((envp), lit, sizeof lit - 1)

static int mg_flag_set(const char* v) { return v && *v && strcmp(v, "0") != 0; }

/* Whether an LD_PRELOAD value names this library (entries are separated
 * by spaces or colons; only the file name is compared). */
static int mg_preload_has_us(const char* v) {
  const size_t n = sizeof kLibName - 1;
  while (v && *v) {
    size_t len = strcspn(v, " :");
    if (len >= n && memcmp(v + len - n, kLibName, n) == 0 && (len == n || v[len - n - 1] == '/')) return 1;
    v += len;
    v += strspn(v, " :");
  }
  return 0;
}

static size_t mg_count(char* const v[]) {
  size_t n = 0;
  if (v)
    while (v[n]) ++n;
  return n;
}

/* dst = a + b + c, if it fits. */
static int mg_concat(char* dst, size_t size, const char* a, const char* b, const char* c) {
  size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
  if (la + lb + lc + 1 > size) return 0;
  memcpy(dst, a, la);
  memcpy(dst + la, b, lb);
  memcpy(dst + la + lb, c, lc + 1);
  return 1;
}

static int mg_is_exec_file(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* execvp's search: the first executable regular file named `file` in the
 * CALLER's PATH (glibc's execvpe and posix_spawnp read the caller's PATH,
 * not the new environment's), "/bin:/usr/bin" when PATH is unset, an empty
 * entry meaning the current directory. 0 if none. */
static int mg_search_path(const char* file, char* out, size_t size) {
  const char* path = getenv("PATH");
  const char* p;
  if (!path) path = "/bin:/usr/bin";
  for (p = path;; ++p) {
    const char* end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    size_t flen = strlen(file);
    if (len == 0) {
      if (flen + 3 <= size) {
        memcpy(out, "./", 2);
        memcpy(out + 2, file, flen + 1);
        if (mg_is_exec_file(out)) return 1;
      }
    } else if (len + 1 + flen + 1 <= size) {
      memcpy(out, p, len);
      out[len] = '/';
      memcpy(out + len + 1, file, flen + 1);
      if (mg_is_exec_file(out)) return 1;
    }
    if (!end) return 0;
    p = end;
  }
}

/* ---- the decision ----------------------------------------------------- */

/* What one call is given and how it was made. */
enum mg_call_kind { MG_EXECVE, MG_EXECVPE, MG_SPAWN, MG_SPAWNP, MG_EXECVEAT };
struct mg_call {
  enum mg_call_kind kind;
  const char* file; /* as given: a path, or a bare name for the *p variants */
  char* const* argv;
  char* const* envp;
  pid_t* pid;
  const posix_spawn_file_actions_t* actions;
  const posix_spawnattr_t* attr;
  int dirfd, flags;
};

/* The environment the new program gets. An environment passed on keeps the
 * caller's word, with two repairs:
 *
 * - Rebuilt from scratch: it has neither our library in LD_PRELOAD nor
 *   MEMGATE_SOCKET (env -i, python's subprocess env={...}, SCons's clean
 *   ENV). Like Bear, we put both back, so the build stays intercepted below
 *   a tool that cleans its children's environment.
 * - Edited on purpose: it keeps one of the two and drops the other
 *   (`env -u LD_PRELOAD g++`, LD_PRELOAD= in a python env). That is
 *   respected: the program and everything below it run ungated, and the
 *   runner's ungated detector names them in the summary.
 *
 * Inside a job (the caller has MEMGATE_JOB) an environment that still
 * carries our library also gets MEMGATE_JOB back: a compiler nested in a
 * job must never ask for a job of its own (it would wait for a slot its
 * parent holds). */
struct mg_env {
  int readd;          /* put LD_PRELOAD and MEMGATE_SOCKET back */
  const char* job;    /* MEMGATE_JOB value to put back, or NULL */
  int gate_allowed;   /* the new environment is under memgate and not in a job */
};

static struct mg_env mg_plan_env(char* const envp[]) {
  struct mg_env e = {0, NULL, 0};
  const char* preload = MG_GET(envp, "LD_PRELOAD");
  int has_lib = mg_preload_has_us(preload);
  int has_socket = MG_GET(envp, "MEMGATE_SOCKET") != NULL;
  const char* caller_job = getenv("MEMGATE_JOB");
  int has_job = MG_GET(envp, "MEMGATE_JOB") != NULL;
  if (!has_lib && !has_socket && mg_count(envp) < kMaxEnv && !mg_flag_set(getenv("MEMGATE_DISABLE"))) {
    e.readd = 1;
    has_lib = has_socket = 1;
  }
  if (caller_job && !has_job && has_lib) {
    e.job = caller_job;
    has_job = 1;
  }
  e.gate_allowed = has_lib && has_socket && !has_job && !mg_flag_set(MG_GET(envp, "MEMGATE_DISABLE"));
  return e;
}

/* Calls the real function for `c` with file, argv and envp replaced. */
static int mg_forward(const struct mg_call* c, const char* file, char* const argv[], char* const envp[]) {
  /* Called before our constructor ran (from another library's): look
   * the functions up now. Never the case in a vfork child of a program
   * that was started normally. */
  if (!real_execvpe || !real_posix_spawn) mg_resolve();
  switch (c->kind) {
    case MG_EXECVE:
      if (real_execve) return real_execve(file, argv, envp);
      return (int)syscall(SYS_execve, file, argv, envp);
    case MG_EXECVPE:
      if (!real_execvpe) {
        errno = ENOSYS;
        return -1;
      }
      return real_execvpe(file, argv, envp);
    case MG_SPAWN:
      return real_posix_spawn ? real_posix_spawn(c->pid, file, c->actions, c->attr, argv, envp) : ENOSYS;
    case MG_SPAWNP:
      return real_posix_spawnp ? real_posix_spawnp(c->pid, file, c->actions, c->attr, argv, envp) : ENOSYS;
    case MG_EXECVEAT:
      if (real_execveat) return real_execveat(c->dirfd, file, argv, envp, c->flags);
      return (int)syscall(SYS_execveat, c->dirfd, file, argv, envp, c->flags);
  }
  errno = EINVAL;
  return -1;
}

static int mg_is_spawn(const struct mg_call* c) { return c->kind == MG_SPAWN || c->kind == MG_SPAWNP; }

/* Starts memgate-wrap for the program at `path` (the file the original
 * call would run). If the wrapper itself cannot be started (memgate was
 * removed under a running build) the original call is made instead. */
static int mg_gate(const struct mg_call* c, const char* path, char* const envp[]) {
  size_t argc = mg_count(c->argv), i;
  char* wargv[argc + 4];
  struct mg_call w = *c;
  int r, err;
  wargv[0] = g_wrapper;
  wargv[1] = (char*)"exec";
  wargv[2] = (char*)path;
  for (i = 0; i < argc; ++i) wargv[3 + i] = c->argv[i];
  wargv[3 + argc] = NULL;
  w.kind = mg_is_spawn(c) ? MG_SPAWN : MG_EXECVE;
  r = mg_forward(&w, g_wrapper, wargv, envp);
  err = mg_is_spawn(c) ? r : errno;
  if (err != ENOENT && err != EACCES && err != ENOEXEC) return r;
  return mg_forward(c, c->file, c->argv, envp);
}

/* The file the call would execute, if it names a job and exists. A call
 * that is going to fail (no such file, not executable) is left to fail in
 * the caller, as it would have: once the wrapper runs, the caller is gone. */
static const char* mg_job_path(const struct mg_call* c, char* buf, size_t size) {
  if (!c->file || !c->argv || !c->argv[0] || mg_count(c->argv) >= kMaxArgs) return NULL;
  if (!mg_is_job(c->file, c->argv, g_launchers)) return NULL;
  if (c->kind == MG_EXECVEAT && !(c->flags == 0 && (c->dirfd == AT_FDCWD || c->file[0] == '/'))) return NULL;
  if ((c->kind == MG_EXECVPE || c->kind == MG_SPAWNP) && !strchr(c->file, '/'))
    return (*c->file && mg_search_path(c->file, buf, size)) ? buf : NULL;
  return mg_is_exec_file(c->file) ? c->file : NULL;
}

/* Every hook ends here. */
static int mg_run(const struct mg_call* c) {
  struct mg_env e;
  size_t n, i, k = 0;
  const char* path;
  char found[PATH_MAX];
  if (!g_wrapper[0]) return mg_forward(c, c->file, c->argv, c->envp);
  e = mg_plan_env(c->envp);
  n = (e.readd || e.job) ? mg_count(c->envp) : 0;
  {
    /* The repaired environment lives on this frame until the call is made. */
    const char* old = e.readd ? MG_GET(c->envp, "LD_PRELOAD") : NULL;
    char preload[e.readd ? sizeof "LD_PRELOAD=" + strlen(g_library) + 1 + (old ? strlen(old) : 0) : 1];
    char job[e.job ? sizeof "MEMGATE_JOB=" + strlen(e.job) : 1];
    char* fixed[n + 4];
    char* const* envp = c->envp;
    if (e.readd || e.job) {
      for (i = 0; i < n; ++i)
        if (!(e.readd && strncmp(c->envp[i], "LD_PRELOAD=", 11) == 0)) fixed[k++] = c->envp[i];
      if (e.readd) {
        mg_concat(preload, sizeof preload, "LD_PRELOAD=", g_library, "");
        if (old && *old) mg_concat(preload + strlen(preload), sizeof preload - strlen(preload), ":", old, "");
        fixed[k++] = preload;
        fixed[k++] = g_socket_entry;
      }
      if (e.job) {
        mg_concat(job, sizeof job, "MEMGATE_JOB=", e.job, "");
        fixed[k++] = job;
      }
      fixed[k] = NULL;
      envp = fixed;
    }
    path = e.gate_allowed ? mg_job_path(c, found, sizeof found) : NULL;
    if (path) return mg_gate(c, path, envp);
    return mg_forward(c, c->file, c->argv, envp);
  }
}

/* ---- the constructor -------------------------------------------------- */

/* A compiler started by a caller the hooks did not see: re-exec it through
 * the wrapper before its main() runs. Only argv[0] names the program here
 * (ccache's masquerade links and gcc's own symlinks keep it meaningful);
 * /proc/self/exe is the file to run, so nothing is searched again. */
static void mg_backstop(int argc, char** argv) {
  char exe[PATH_MAX];
  ssize_t len;
  struct stat self, wrapper;
  if (argc < 1 || !argv || !argv[0] || argc >= kMaxArgs) return;
  if (getenv("MEMGATE_JOB") || mg_flag_set(getenv("MEMGATE_DISABLE"))) return;
  if (!mg_is_job(argv[0], argv, g_launchers)) return;
  len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return;
  exe[len] = 0;
  /* A fallback PATH shim is memgate-wrap named like a compiler: it gates
   * itself. */
  if (stat(exe, &self) == 0 && stat(g_wrapper, &wrapper) == 0 && self.st_dev == wrapper.st_dev &&
      self.st_ino == wrapper.st_ino)
    return;
  {
    char* wargv[argc + 4];
    int i;
    wargv[0] = g_wrapper;
    wargv[1] = (char*)"exec";
    wargv[2] = exe;
    for (i = 0; i < argc; ++i) wargv[3 + i] = argv[i];
    wargv[3 + argc] = NULL;
    if (real_execve) real_execve(g_wrapper, wargv, environ);
    /* The wrapper is gone: the compiler runs ungated, as memgate fails open. */
  }
}

__attribute__((constructor)) static void mg_init(int argc, char** argv, char** envp) {
  const char* socket = getenv("MEMGATE_SOCKET");
  const char* launchers = getenv("MEMGATE_LAUNCHERS");
  Dl_info info;
  const char* slash;
  size_t dir_len;
  (void)envp;
  mg_resolve();
  if (!socket || !*socket) return;
  if (!dladdr((void*)&mg_init, &info) || !info.dli_fname || info.dli_fname[0] != '/') return;
  if (!mg_concat(g_library, sizeof g_library, info.dli_fname, "", "")) return;
  if (!mg_concat(g_socket_entry, sizeof g_socket_entry, "MEMGATE_SOCKET=", socket, "")) return;
  if (launchers && !mg_concat(g_launchers, sizeof g_launchers, launchers, "", "")) g_launchers[0] = 0;
  slash = strrchr(g_library, '/');
  dir_len = (size_t)(slash - g_library) + 1;
  if (dir_len + sizeof "memgate-wrap" > sizeof g_wrapper) return;
  memcpy(g_wrapper, g_library, dir_len);
  memcpy(g_wrapper + dir_len, "memgate-wrap", sizeof "memgate-wrap");
  mg_backstop(argc, argv);
}

/* ---- the hooks -------------------------------------------------------- */

MG_API int execve(const char* path, char* const argv[], char* const envp[]) {
  struct mg_call c = {MG_EXECVE, path, argv, envp, NULL, NULL, NULL, AT_FDCWD, 0};
  return mg_run(&c);
}

MG_API int execv(const char* path, char* const argv[]) { return execve(path, argv, environ); }

MG_API int execvpe(const char* file, char* const argv[], char* const envp[]) {
  struct mg_call c = {MG_EXECVPE, file, argv, envp, NULL, NULL, NULL, AT_FDCWD, 0};
  return mg_run(&c);
}

MG_API int execvp(const char* file, char* const argv[]) { return execvpe(file, argv, environ); }

MG_API int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  struct mg_call c = {MG_EXECVEAT, path, argv, envp, NULL, NULL, NULL, dirfd, flags};
  return mg_run(&c);
}

MG_API int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                       const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  struct mg_call c = {MG_SPAWN, path, argv, envp, pid, actions, attr, AT_FDCWD, 0};
  return mg_run(&c);
}

MG_API int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                        const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  struct mg_call c = {MG_SPAWNP, file, argv, envp, pid, actions, attr, AT_FDCWD, 0};
  return mg_run(&c);
}

/* execl, execlp, execle: the variadic list copied into an argv on the
 * stack, then the matching array form. */
/* glibc declares `arg` nonnull, but execl(path, NULL) is a valid call
 * (an empty argv): the empty asm hides the attribute from the optimizer. */
#define MG_COLLECT_ARGS(first, argv_name)                         \
  const char* first_ = (first);                                   \
  __asm__("" : "+r"(first_));                                     \
  size_t argc_ = first_ != NULL;                                  \
  va_list ap_;                                                    \
  va_start(ap_, first);                                           \
  if (argc_)                                                      \
    while (va_arg(ap_, const char*) != NULL) ++argc_;             \
  va_end(ap_);                                                    \
  char* argv_name[argc_ + 1];                                     \
  argv_name[0] = (char*)(first);                                  \
  va_start(ap_, first);                                           \
  for (size_t i_ = 1; i_ <= argc_; ++i_) argv_name[i_] = va_arg(ap_, char*)

MG_API int execl(const char* path, const char* arg, ...) {
  MG_COLLECT_ARGS(arg, argv);
  va_end(ap_);
  return execve(path, argv, environ);
}

MG_API int execlp(const char* file, const char* arg, ...) {
  MG_COLLECT_ARGS(arg, argv);
  va_end(ap_);
  return execvpe(file, argv, environ);
}

MG_API int execle(const char* path, const char* arg, ...) {
  MG_COLLECT_ARGS(arg, argv);
  char* const* envp = va_arg(ap_, char* const*);
  va_end(ap_);
  return execve(path, argv, envp);
}
