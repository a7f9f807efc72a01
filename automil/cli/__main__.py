"""``python -m automil.cli``: the same as the ``automil`` command."""

import sys

from automil.cli.main import main

sys.exit(main())
