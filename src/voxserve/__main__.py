import sys

from voxserve.cli import main

sys.exit(main())
