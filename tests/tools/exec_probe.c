/* exec_probe: starts a program through one chosen exec form, for the
 * preload library's tests (tests/unit/preload_test.cpp).
 *
 *   exec_probe [--env inherit|scratch|drop-preload] FORM FILE ARGV0 [ARGS...]
 *
 * FORM is execve, execv, execvp, execvpe, execl, execlp, execle (these
 * replace the probe), posix_spawn, posix_spawnp, vfork-execve, vfork-execvp,
 * fork-execv (these wait and exit with the child's status), execveat or
 * fexecve. --env picks the environment handed to forms that take one:
 * the probe's own (default), a new one holding only PATH ("scratch", like
 * env -i or python's env={...}), or the probe's own without LD_PRELOAD.
 * An exec that returns prints "exec_probe: FORM: <error>" and exits 127.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

static char* scratch_env[3];
static char scratch_path[4096];

__attribute__((noinline)) static char** pick_env(const char* how) {
  size_t n = 0, k = 0;
  char** out;
  if (strcmp(how, "inherit") == 0) return environ;
  if (strcmp(how, "scratch") == 0) {
    const char* path = getenv("PATH");
    snprintf(scratch_path, sizeof scratch_path, "PATH=%s", path ? path : "/usr/bin:/bin");
    scratch_env[0] = scratch_path;
    scratch_env[1] = NULL;
    return scratch_env;
  }
  while (environ[n]) ++n;
  out = calloc(n + 1, sizeof *out);
  for (size_t i = 0; i < n; ++i)
    if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0) out[k++] = environ[i];
  out[k] = NULL;
  return out;
}

static int wait_status(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 126;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int failed(const char* form, int err) {
  fprintf(stderr, "exec_probe: %s: %s\n", form, strerror(err));
  return 127;
}

int main(int argc, char** argv) {
  const char* env_how = "inherit";
  int i = 1;
  if (argc > 2 && strcmp(argv[1], "--env") == 0) {
    env_how = argv[2];
    i = 3;
  }
  if (argc - i < 3) {
    fprintf(stderr, "usage: exec_probe [--env inherit|scratch|drop-preload] FORM FILE ARGV0 [ARGS...]\n");
    return 2;
  }
  const char* form = argv[i];
  const char* file = argv[i + 1];
  char** args = argv + i + 2;
  int nargs = argc - i - 2;
  char** envp = pick_env(env_how);
  pid_t pid;
  int r;

  if (strcmp(form, "execve") == 0) execve(file, args, envp);
  else if (strcmp(form, "execv") == 0) execv(file, args);
  else if (strcmp(form, "execvp") == 0) execvp(file, args);
  else if (strcmp(form, "execvpe") == 0) execvpe(file, args, envp);
  else if (strcmp(form, "execl") == 0 || strcmp(form, "execlp") == 0 || strcmp(form, "execle") == 0) {
    char* a[5] = {NULL, NULL, NULL, NULL, NULL};
    for (int k = 0; k < nargs && k < 4; ++k) a[k] = args[k];
    if (form[5] == 'p') execlp(file, a[0], a[1], a[2], a[3], (char*)NULL);
    else if (form[5] == 'e') execle(file, a[0], a[1], a[2], a[3], (char*)NULL, envp);
    else execl(file, a[0], a[1], a[2], a[3], (char*)NULL);
  } else if (strcmp(form, "posix_spawn") == 0 || strcmp(form, "posix_spawnp") == 0) {
    r = form[11] == 'p' ? posix_spawnp(&pid, file, NULL, NULL, args, envp)
                        : posix_spawn(&pid, file, NULL, NULL, args, envp);
    if (r != 0) return failed(form, r);
    return wait_status(pid);
  } else if (strcmp(form, "vfork-execve") == 0 || strcmp(form, "vfork-execvp") == 0 ||
             strcmp(form, "fork-execv") == 0) {
    pid = form[0] == 'v' ? vfork() : fork();
    if (pid == 0) {
      if (strcmp(form, "vfork-execve") == 0) execve(file, args, envp);
      else if (strcmp(form, "vfork-execvp") == 0) execvp(file, args);
      else execv(file, args);
      _exit(127);
    }
    if (pid < 0) return failed(form, errno);
    return wait_status(pid);
  } else if (strcmp(form, "execveat") == 0) {
    execveat(AT_FDCWD, file, args, envp, 0);
  } else if (strcmp(form, "fexecve") == 0) {
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return failed(form, errno);
    fexecve(fd, args, envp);
  } else {
    fprintf(stderr, "exec_probe: unknown form %s\n", form);
    return 2;
  }
  return failed(form, errno);
}
