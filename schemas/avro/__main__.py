import sys

from schemas.avro.cli import main

sys.exit(main())
