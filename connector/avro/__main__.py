import sys

from connector.avro.cli import main

sys.exit(main())
