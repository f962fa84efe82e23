"""`python -m spark.job` or `spark-submit spark/job/__main__.py` (ringtail installed on the nodes)."""
import sys

from spark.job.cli import main

if __name__ == "__main__":
    sys.exit(main())
