"""``python -m conclave``: the ``conclave`` command (the same entry point, so the same
signal handling from the first line), with the same arguments and exit codes."""

import sys

from conclave.ui.entry import main

if __name__ == "__main__":
    sys.exit(main())
