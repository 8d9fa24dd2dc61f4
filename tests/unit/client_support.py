"""Constants and helpers of the control-plane unit tests (the ``platform`` fixture is in conftest.py)."""

import responses

from synclient.platform.rest import RetryPolicy

ROOT = "http://platform.test"
REPO = ROOT + "/repo/v1"
FILE = ROOT + "/file/v1"
TOKEN = "tok-secret-123"
FAST = RetryPolicy(max_attempts=4, initial_backoff=0.001, max_backoff=0.01)


def error(status, reason):
    """A Synapse ErrorResponse for ``responses``."""
    return {
        "status": status,
        "json": {"concreteType": "org.sagebionetworks.repo.model.ErrorResponse", "reason": reason},
    }


HEADER = {"id": "syn1", "name": "p", "type": "org.sagebionetworks.repo.model.Project"}


def prove(platform):
    """One well-formed answer: from now on the endpoint is known to be Synapse (the full retry policy applies)."""
    responses.add(responses.GET, REPO + "/entity/syn1/type", json=HEADER)
    platform.get_entity_header("syn1")
    assert platform.endpoint_proven
