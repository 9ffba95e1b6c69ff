import sys

from warplab.cli import main

sys.exit(main())
