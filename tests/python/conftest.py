"""The tests mirror python/oar in folders; the shared harness, op_test_utils.py, sits here
beside this file, and this puts it on sys.path for the tests in every folder."""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
