"""``python -m dxp_plugins.cli``: the ``dxp`` command."""

import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
