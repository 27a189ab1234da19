"""``python -m dxp_plugins.cli``: the ``dxp`` command, entered as the console script is
(see :mod:`dxp_plugins._console`)."""

import sys

from .._console import main

if __name__ == "__main__":
    sys.exit(main())
