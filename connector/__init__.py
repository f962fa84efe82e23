"""ringtail's connector: commit-log segments to change events on Kafka."""
import warnings

# confluent-kafka's registry client imports authlib's httpx integration, which warns on import. authlib
# installs an "always" filter for its warnings when it loads, so ours goes in after it.
try:
    import authlib.deprecate  # noqa: F401
except ImportError:
    pass
warnings.filterwarnings("ignore", message="The httpx module is deprecated")
