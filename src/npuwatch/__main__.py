"""`python -m npuwatch` runs the command line."""

import sys

from npuwatch.cli import main

sys.exit(main())
