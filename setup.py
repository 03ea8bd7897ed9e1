"""Builds pykv's Cython hot paths (the RESP request parser and reply writer)."""
from Cython.Build import cythonize
from setuptools import Extension, setup

extensions = [
    Extension("pykv.protocol._parser", ["pykv/protocol/_parser.pyx"]),
    Extension("pykv.protocol._writer", ["pykv/protocol/_writer.pyx"]),
    Extension("pykv.storage.rdb._codec", ["pykv/storage/rdb/_codec.pyx"]),
    Extension("pykv.storage._numeric", ["pykv/storage/_numeric.pyx"]),
    Extension("pykv.storage._hll", ["pykv/storage/_hll.pyx"]),
]

setup(
    ext_modules=cythonize(
        extensions,
        language_level=3,
        compiler_directives={"boundscheck": False, "wraparound": False, "cdivision": True},
    )
)
