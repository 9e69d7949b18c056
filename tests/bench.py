#!/usr/bin/env python3
"""Performance benchmark of majordomus: the one entry point of the package tests/bench/
(its __init__ says what it measures; a module an area).

    python3 tests/bench.py [--quick] [--only SECTIONS] [--pyz PATH] [--old COMMIT]

`bench` imported from here is the package tests/bench/ (Python imports a package before a
module of the same name in one folder).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench.common import cleanup  # noqa: E402
from bench.run import main  # noqa: E402

if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        cleanup()
        sys.exit(130)
