"""``python -m safeshare`` runs the CLI."""

import sys

from safeshare.cli import main

sys.exit(main())
