# Sourced by scripts/test, scripts/demo and bench/run: installs the Debian
# packages memgate needs, and only those that are missing.
memgate_install_deps() {
  local pkgs=(cmake ninja-build g++ make pkg-config libsqlite3-dev libcli11-dev nlohmann-json3-dev
              libfmt-dev googletest libgtest-dev util-linux procps python3 chromium parallel
              # Real torch extension and HIP builds (tests/e2e/run_torch_pip.sh, run_hipcc.sh,
              # bench/run's torch workload): torch with its C++ headers, pip, and hipcc.
              python3-torch libtorch-dev pybind11-dev python3-pip python3-wheel python3-setuptools
              python3-packaging python3-psutil hipcc rocm-device-libs
              # The libFuzzer targets (tests/fuzz, ctest -L fuzz, bench/fuzz): clang with its runtimes.
              clang-14 libclang-rt-14-dev
              # Shell completion (tests/e2e/cli_completion.sh loads the zsh one), the man page and
              # `man -l` (cli_help), tmux (run_tty), ip (tests/lib/icecc.sh's network namespace), bc, xz,
              # /usr/bin/time (memjob_profile's CPU of a replayed curve, bench/lib/cold-record's peak RSS).
              zsh help2man man-db tmux iproute2 bc xz-utils time
              # Distributed engines and launchers (run_distcc*, run_offload, run_governed_server,
              # run_icecc, run_sccache, run_nvcc_nested's ccache), Rust (run_cargo).
              distcc icecc sccache ccache cargo rustc
              # The cgroup-v2 VM (tests/vm/v2vm.sh): qemu, Debian's kernel, busybox for the guest.
              qemu-system-x86 linux-image-amd64 busybox-static cpio
              # scripts/fresh-check builds a Debian root; scripts/package a wheel and a .deb
              # (e2e.package_*; package_wheel builds a C extension: Python.h).
              debootstrap python3-build python3-venv dpkg-dev fakeroot python3-dev)
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "memgate: installing ${missing[*]}" >&2
    if [ "$(id -u)" -ne 0 ]; then
      echo "memgate: error: missing packages (${missing[*]}) and not root to install them" >&2
      return 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

# Builds through ccache, keyed by paths relative to the tree and not by the
# build directory (CCACHE_BASEDIR, CCACHE_NOHASHDIR): a second build of the
# same tree elsewhere, such as tests/e2e/install_build.sh's, is cache hits.
memgate_build() {
  local root=$1 build=$2 launcher=()
  if command -v ccache >/dev/null; then
    launcher=("-DCMAKE_C_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$root;CCACHE_NOHASHDIR=1;ccache"
              "-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$root;CCACHE_NOHASHDIR=1;ccache")
  fi
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMGATE_WERROR=ON "${launcher[@]}" >/dev/null &&
    cmake --build "$build"
}
