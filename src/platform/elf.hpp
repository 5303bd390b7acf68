// What an executable file is, as far as the dynamic loader is concerned:
// whether LD_PRELOAD can reach into it. A statically linked program has no
// program interpreter (PT_INTERP) and never loads a preload library; a
// setuid, setgid or file-capability program runs in the loader's secure
// mode, which drops LD_PRELOAD for it and everything it starts.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace memgate::platform {

enum class Linkage { not_elf, static_elf, dynamic_elf };

// Pure: the linkage of an ELF image from its first bytes (the file header
// and the program header table; 32- or 64-bit, either byte order). Too few
// bytes to see the program headers: not_elf.
Linkage elf_linkage(std::string_view bytes);

// Pure: the interpreter of a "#!" script ("/usr/bin/env" for
// "#!/usr/bin/env python3"), or "" if `bytes` do not start with "#!".
std::string shebang_interpreter(std::string_view bytes);

struct ExecutableFacts {
  Linkage linkage = Linkage::not_elf;
  std::string interpreter;  // for a script: its "#!" interpreter
  bool secure_exec = false;  // setuid/setgid to another owner, or file capabilities
};

// Reads `path` (following symlinks). nullopt if it cannot be opened.
std::optional<ExecutableFacts> inspect_executable(const std::string& path);

}  // namespace memgate::platform
