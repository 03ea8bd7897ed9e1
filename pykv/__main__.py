"""``python -m pykv``: the same as ``pykv-server``."""
from pykv.main import main

main()
