"""``python -m kraftlog.protocol.codegen [--check]``: regenerate (or check) ``protocol/messages.py``."""

import sys

from .generate import main

sys.exit(main(sys.argv))
