"""A bundle without its file's handle: Synapse withholds the handle from a caller without DOWNLOAD access
(``EntityBundleServiceImpl.getEntityBundle`` answers ``fileHandles: []``), which is access denied, not not-found."""

from __future__ import annotations

import pytest

from synclient.errors import AccessDeniedError, NotFoundError
from synclient.platform.models import FileBundle
from synclient.sync.pipeline import missing_handle_error

FILE = {"id": "syn2", "name": "a.txt", "concreteType": "org.sagebionetworks.repo.model.FileEntity", "versionNumber": 1}


@pytest.mark.parametrize("entity,kind", [(dict(FILE, dataFileHandleId="10"), AccessDeniedError), (FILE, NotFoundError)])
def test_a_withheld_handle_is_access_denied(entity, kind):
    error = missing_handle_error("syn2", FileBundle.from_wire({"entity": entity, "fileHandles": []}))
    assert type(error) is kind and "syn2" in str(error)
    assert isinstance(error, PermissionError) is (kind is AccessDeniedError)
