"""``python -m dxp_plugins``: the ``dxp`` command, entered as the console script is (a
Ctrl-C while it loads is exit status 130, see :mod:`dxp_plugins._console`)."""

import sys

from ._console import main

if __name__ == "__main__":
    sys.exit(main())
