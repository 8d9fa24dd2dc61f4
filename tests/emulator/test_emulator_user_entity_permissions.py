"""Issue 30: every field of UserEntityPermissions (restrictionInformation and bundle2's permissions) as Synapse
computes it (services/repository-managers/src/main/java/org/sagebionetworks/repo/manager/entity/
EntityAuthorizationUtils.java getUserPermissionsForEntity) for the emulator's caller: a certified user with READ and
DOWNLOAD unless denied, who created the seeded entities (their createdBy), and the anonymous user (no token)."""

from __future__ import annotations

import pytest
from emuhelpers import Api

SPEC = {
    "projects": [
        {
            "name": "p",
            "children": [
                {"type": "file", "name": "open.txt", "content": "o"},
                {"type": "file", "name": "nodownload", "content": "n", "deny": "download"},
                {"type": "file", "name": "secret", "content": "s", "deny": True},
            ],
        }
    ]
}
#: what no ACL of the emulator grants: UPDATE, CREATE, DELETE, CHANGE_PERMISSIONS, MODERATE; no public READ, no open
#: data, not a data contributor (UPDATE and DELETE: UserAccessRestrictionUtils.isUserDataContributor)
ALWAYS_FALSE = {
    "canEdit": False,
    "canMove": False,
    "canAddChild": False,
    "canCertifiedUserEdit": False,
    "canCertifiedUserAddChild": False,
    "canChangePermissions": False,
    "canDelete": False,
    "canEnableInheritance": False,
    "canPublicRead": False,
    "canModerate": False,
    "isEntityOpenData": False,
    "isDataContributor": False,
}


@pytest.fixture
def world(emulator):
    project = emulator.seed_spec(SPEC)["p"]
    api = Api(emulator)
    owner = int(api.get(f"/repo/v1/entity/{project}").json()["createdBy"])
    return emulator, (lambda path: emulator.resolve(project, path)), owner


def _permissions(api: Api, entity_id: str) -> dict:
    answer = api.post("/repo/v1/restrictionInformation", {"objectId": entity_id, "restrictableObjectType": "ENTITY"})
    assert answer.status_code == 200, answer.text  # RestrictionInformationManagerImpl checks no READ
    return answer.json()["userEntityPermissions"]


@pytest.mark.parametrize(
    "name, can_view, can_download",
    [
        ("open.txt", True, True),
        ("nodownload", True, False),
        ("secret", False, False),
    ],
)
def test_the_callers_permissions_are_synapses(world, name, can_view, can_download):
    emulator, ids, owner = world
    api = Api(emulator)
    permissions = _permissions(api, ids(name))
    assert permissions == dict(
        ALWAYS_FALSE,
        canView=can_view,
        canDownload=can_download,
        canUpload=True,  # "not anonymous" (the ToS filter checks the rest)
        isCertificationRequired=True,  # always
        isCertifiedUser=True,  # the emulator's caller is certified
        canChangeSettings=True,  # GRANT_IF_USER_IS_CREATOR: the caller created the seeded entities
        ownerPrincipalId=owner,
    )
    if can_view:  # bundle2's permissions come from the same method (EntityBundleServiceImpl)
        bundle = api.post(f"/repo/v1/entity/{ids(name)}/bundle2", {"includePermissions": True}).json()
        assert bundle["permissions"] == permissions


def test_the_anonymous_users_permissions_are_synapses(world):
    """No token: DENY_IF_ANONYMOUS takes canChangeSettings, canUpload is false, the anonymous user is not certified
    (AuthorizationUtils.isCertifiedUser) and reads nothing of the emulator's (no public data)."""
    emulator, ids, owner = world
    anonymous = Api(emulator, token=False)
    for name in ("open.txt", "nodownload", "secret"):
        assert _permissions(anonymous, ids(name)) == dict(
            ALWAYS_FALSE,
            canView=False,
            canDownload=False,
            canUpload=False,
            isCertificationRequired=True,
            isCertifiedUser=False,
            canChangeSettings=False,
            ownerPrincipalId=owner,
        )
