"""Loaded at Python's start where scripts/gpu-check.sh puts this folder on
PYTHONPATH: numba-cuda 0.30 registers an overload for numpy.row_stack at
import, an alias NumPy 2.5 removed, so that with NumPy 2.5 no Numba kernel
compiles. The alias is given back as what it always was, numpy.vstack,
where it is missing; nothing else changes."""
try:
    import numpy
except ImportError:
    pass
else:
    if not hasattr(numpy, "row_stack"):
        numpy.row_stack = numpy.vstack
