"""Settings of the whole suite."""
import os

# The loop IR is verified after lowering and after every IR pass, in this process and in the build processes the
# tests start (transpiler/lowering/verify.py).
os.environ.setdefault("RT_VERIFY_IR", "1")
