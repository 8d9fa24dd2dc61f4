"""Constants and helpers of the control-plane unit tests (the ``platform`` fixture is in conftest.py)."""
from synclient.client import RetryPolicy

ROOT = "http://platform.test"
REPO = ROOT + "/repo/v1"
FILE = ROOT + "/file/v1"
TOKEN = "tok-secret-123"
FAST = RetryPolicy(max_attempts=4, initial_backoff=0.001, max_backoff=0.01)


def error(status, reason):
    """A Synapse ErrorResponse for ``responses``."""
    return {"status": status, "json": {"concreteType": "org.sagebionetworks.repo.model.ErrorResponse",
                                       "reason": reason}}
