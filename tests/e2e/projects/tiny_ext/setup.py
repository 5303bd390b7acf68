# A C extension of two sources, the smallest pip build with compile jobs.
from setuptools import Extension, setup

setup(
    name="memgate-tiny-ext",
    version="1.0",
    ext_modules=[Extension("tiny_ext", sources=["tiny.c", "add.c"])],
)
