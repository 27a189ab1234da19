"""``python -m dxp_plugins.cli``: the ``dxp`` command."""

import sys

from . import main

sys.exit(main())
