# The extension of pyproject.toml's package: its sources, and libaccel's
# flags from pkg-config, with libaccel's directory as the run path, so that
# the installed module finds the libaccel it was built against.
import glob
import os
import subprocess

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def pkg_config(*args):
    return subprocess.check_output(["pkg-config", *args, "libaccel"],
                                   text=True).split()


include_dirs = [f[2:] for f in pkg_config("--cflags-only-I")]
library_dirs = [f[2:] for f in pkg_config("--libs-only-L")]

setup(
    ext_modules=[
        Extension(
            "accel",
            sources=sorted(os.path.relpath(f, HERE)
                           for f in glob.glob(os.path.join(HERE, "*.c"))),
            depends=["accel_py.h"],
            include_dirs=include_dirs,
            library_dirs=library_dirs,
            runtime_library_dirs=library_dirs,
            libraries=["accel"],
            extra_compile_args=["-std=gnu11", "-D_GNU_SOURCE"],
            py_limited_api=True,
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
