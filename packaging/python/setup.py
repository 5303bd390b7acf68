# Builds memgate's wheel from an install tree scripts/package put in
# memgate/data/ (python3 -m build --wheel --no-isolation, offline). The
# wheel holds native binaries, so it is not pure; its platform tag
# (MEMGATE_WHEEL_PLAT, e.g. manylinux_2_34_x86_64) says the oldest glibc
# the binaries need, which scripts/package reads from their symbols.
import os

from setuptools import setup
from setuptools.dist import Distribution
from wheel.bdist_wheel import bdist_wheel


class NativeDistribution(Distribution):
    # Native binaries: the package goes to platlib, the wheel's root.
    def has_ext_modules(self):
        return True


class NativeWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return "py3", "none", os.environ["MEMGATE_WHEEL_PLAT"]


def data_files():
    root = os.path.join("memgate", "data")
    for dirpath, _, files in os.walk(root):
        for f in files:
            yield os.path.relpath(os.path.join(dirpath, f), "memgate")


setup(
    name="memgate",
    version=os.environ["MEMGATE_VERSION"],
    description="Run a parallel build at the highest parallelism its memory allows",
    packages=["memgate"],
    package_data={"memgate": sorted(data_files())},
    # The man page also goes where man looks beside the venv's bin/.
    data_files=[("share/man/man1", ["memgate/data/share/man/man1/memgate.1"])],
    entry_points={"console_scripts": ["memgate = memgate:main"]},
    python_requires=">=3.7",
    distclass=NativeDistribution,
    cmdclass={"bdist_wheel": NativeWheel},
    zip_safe=False,
)
