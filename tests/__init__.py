# Lets `python3 -m unittest tests.test_x` and discovery both find tests/support.py.
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
