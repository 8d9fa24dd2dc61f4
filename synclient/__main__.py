"""``python -m synclient``: the same as the ``synclient`` command."""

import sys

from synclient.cli import main

sys.exit(main())
