#include "platform/elf.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace memgate::platform {
namespace {

// Reads an unsigned integer of `size` bytes at `off` in the given byte order.
std::uint64_t read_uint(std::string_view b, std::size_t off, std::size_t size, bool big_endian) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < size; ++i) {
    auto byte = static_cast<std::uint8_t>(b[off + (big_endian ? i : size - 1 - i)]);
    v = (v << 8) | byte;
  }
  return v;
}

}  // namespace

Linkage elf_linkage(std::string_view b) {
  if (b.size() < EI_NIDENT || std::memcmp(b.data(), ELFMAG, SELFMAG) != 0) return Linkage::not_elf;
  bool is64 = b[EI_CLASS] == ELFCLASS64;
  if (!is64 && b[EI_CLASS] != ELFCLASS32) return Linkage::not_elf;
  bool be = b[EI_DATA] == ELFDATA2MSB;
  std::size_t ehsize = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
  if (b.size() < ehsize) return Linkage::not_elf;
  std::uint64_t phoff = is64 ? read_uint(b, offsetof(Elf64_Ehdr, e_phoff), 8, be)
                             : read_uint(b, offsetof(Elf32_Ehdr, e_phoff), 4, be);
  std::uint64_t phentsize = read_uint(b, is64 ? offsetof(Elf64_Ehdr, e_phentsize) : offsetof(Elf32_Ehdr, e_phentsize), 2, be);
  std::uint64_t phnum = read_uint(b, is64 ? offsetof(Elf64_Ehdr, e_phnum) : offsetof(Elf32_Ehdr, e_phnum), 2, be);
  std::size_t min_ent = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
  if (phentsize < min_ent || phnum > 4096 || phoff > b.size() || phnum * phentsize > b.size() - phoff)
    return Linkage::not_elf;
  for (std::uint64_t i = 0; i < phnum; ++i) {
    std::uint64_t type = read_uint(b, static_cast<std::size_t>(phoff + i * phentsize), 4, be);
    if (type == PT_INTERP) return Linkage::dynamic_elf;
  }
  return Linkage::static_elf;
}

std::string shebang_interpreter(std::string_view b) {
  if (b.size() < 3 || b[0] != '#' || b[1] != '!') return "";
  std::size_t i = 2;
  while (i < b.size() && (b[i] == ' ' || b[i] == '\t')) ++i;
  std::size_t j = i;
  while (j < b.size() && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r') ++j;
  return std::string(b.substr(i, j - i));
}

std::optional<ExecutableFacts> inspect_executable(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  ExecutableFacts f;
  struct stat st;
  if (::fstat(fd, &st) == 0) {
    bool setuid = (st.st_mode & S_ISUID) && st.st_uid != ::geteuid();
    bool setgid = (st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != ::getegid();
    bool caps = ::fgetxattr(fd, "security.capability", nullptr, 0) > 0;
    f.secure_exec = setuid || setgid || caps;
  }
  // The program headers of real executables sit right after the 64-byte
  // header; 16 KiB covers any sane table.
  std::string head(16384, '\0');
  ssize_t n = ::pread(fd, head.data(), head.size(), 0);
  ::close(fd);
  head.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  f.linkage = elf_linkage(head);
  if (f.linkage == Linkage::not_elf) f.interpreter = shebang_interpreter(head);
  return f;
}

}  // namespace memgate::platform
