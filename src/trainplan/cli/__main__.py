import sys

from trainplan.cli import main

sys.exit(main())
