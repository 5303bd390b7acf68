# A torch extension shaped like flash-attn's setup.py: torch's
# cpp_extension with BuildExtension (ninja, MAX_JOBS), several C++ sources
# that include <torch/extension.h> (each a ~1 GB-class compile) and one
# small kernel file. MEMGATE_TORCH_EXT_CUDA=1 makes it a CUDAExtension with
# a .cu kernel (see tests/e2e/run_torch_pip.sh for what torch 1.13 says).
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

this_dir = os.path.dirname(os.path.abspath(__file__))
# MEMGATE_TORCH_EXT_SOURCES=kernel.cpp builds only the small file: a build
# that checks how torch runs its compiles, not what they make, in seconds.
names = os.environ.get("MEMGATE_TORCH_EXT_SOURCES", "api.cpp,ops_add.cpp,ops_reduce.cpp,kernel.cpp").split(",")
sources = [os.path.join("csrc", f) for f in names]
# -g0: the interpreter's CFLAGS add -g, which costs ~75% more CPU and ~200 MB more
# per compile for nothing a test needs (each file is still ~1.4 GB).
cxx_flags = ["-O2", "-g0", "-std=c++17"]

if os.environ.get("MEMGATE_TORCH_EXT_CUDA") == "1":
    ext = CUDAExtension(
        "memgate_torch_ext",
        sources + [os.path.join("csrc", "scale_kernel.cu")],
        extra_compile_args={
            "cxx": cxx_flags + ["-DMEMGATE_WITH_CUDA"],
            "nvcc": ["-O3", "-std=c++17", "-gencode", "arch=compute_80,code=sm_80", "--threads", "1"],
        },
    )
else:
    ext = CppExtension("memgate_torch_ext", sources, extra_compile_args={"cxx": cxx_flags})

setup(
    name="memgate_torch_ext",
    version="0.1.0",
    description="memgate's test torch extension",
    ext_modules=[ext],
    cmdclass={"build_ext": BuildExtension},
)
