import sys

from connector.cli import main

sys.exit(main())
