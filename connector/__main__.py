import sys
import warnings

# confluent-kafka's registry client imports authlib's httpx integration, which warns on import.
warnings.filterwarnings("ignore", message="The httpx module is deprecated")

from connector.cli import main  # noqa: E402

sys.exit(main())
