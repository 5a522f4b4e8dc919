"""``python -m hetlab`` runs the ``hetlab`` command."""

import sys

from .cli import main

sys.exit(main())
