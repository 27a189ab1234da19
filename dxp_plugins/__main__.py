"""``python -m dxp_plugins``: the ``dxp`` command (as ``python -m dxp_plugins.cli``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
