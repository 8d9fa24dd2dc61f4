"""The entity routes answer as Synapse does (issue 30): the child lookup, headers of a named version, version
lists, the zero etag of old versions, path items, restriction information, how ids are read, the file route's
required parameters and the stack's version info.

Each assertion cites the Synapse-Repository-Services source it comes from (paths below its ``services/`` and
``lib/`` trees; schemas under lib/lib-auto-generated/src/main/resources/schema/org/sagebionetworks/repo/model/).
"""

from __future__ import annotations

import pytest
from emuhelpers import Api

from tests.conformance.checker import check
from tests.conformance.synapse_model import ZERO_ETAG

FOLDER = "org.sagebionetworks.repo.model.Folder"
PROJECT = "org.sagebionetworks.repo.model.Project"
FILE = "org.sagebionetworks.repo.model.FileEntity"

SPEC = {
    "projects": [
        {
            "name": "proj",
            "children": [
                {
                    "type": "folder",
                    "name": "raw",
                    "children": [
                        {"type": "file", "name": "a.txt", "content": "A", "annotations": {"k": ["v"]}},
                    ],
                },
                {
                    "type": "file",
                    "name": "v.txt",
                    "versions": [{"content": "v1"}, {"content": "v22"}, {"content": "v333"}],
                },
                {
                    "type": "file",
                    "name": "x.csv",
                    "external": True,
                    "content": "a,b",
                    "record_md5": False,
                    "record_size": False,
                },
                {
                    "type": "folder",
                    "name": "closed",
                    "deny": True,
                    "children": [{"type": "file", "name": "in", "content": "z"}],
                },
                {"type": "file", "name": "secret", "content": "s", "deny": True},
                {"type": "file", "name": "nodownload", "content": "n", "deny": "download"},
                {"type": "dataset", "name": "ds", "items": [{"ref": "raw/a.txt"}]},
                {"type": "entityview", "name": "view", "scope": ["raw"]},
                {"type": "table", "name": "t", "columns": [{"name": "n", "type": "INTEGER"}], "rows": [[1]]},
            ],
        }
    ]
}


@pytest.fixture
def seeded(emulator):
    project = emulator.seed_spec(SPEC)["proj"]
    return Api(emulator), project, lambda path: emulator.resolve(project, path)


# --- item 1: POST /entity/child ------------------------------------------------------------------------------------
def test_entity_child_finds_a_child_and_a_project_by_name(seeded):
    # EntityController.lookupChild (UrlHelpers.ENTITY_CHILD = "/entity/child"): EntityLookupRequest -> EntityId;
    # EntityManagerImpl.lookupChild: a null parentId looks up projects (the root folder's children)
    api, project, ids = seeded
    found = api.post("/repo/v1/entity/child", {"parentId": project, "entityName": "raw"})
    assert (found.status_code, found.json()) == (200, {"id": ids("raw")})
    assert api.post("/repo/v1/entity/child", {"parentId": None, "entityName": "proj"}).json() == {"id": project}
    assert api.post("/repo/v1/entity/child", {"entityName": "proj"}).json() == {"id": project}
    assert api.post("/repo/v1/entity/child", {"parentId": "syn4489", "entityName": "proj"}).json() == {"id": project}


def test_entity_child_errors_as_synapse_words_them(seeded):
    api, project, ids = seeded
    # NodeDAOImpl.lookupChild: NotFoundException "Child not found for parent: '%s' with name: '%s'", the parentId as
    # sent; a project lookup sends the root folder's id, EntityManagerImpl.ROOT_ID (stack.properties: 4489)
    missing = api.post("/repo/v1/entity/child", {"parentId": project, "entityName": "nope"})
    assert missing.status_code == 404
    assert missing.json()["reason"] == f"Child not found for parent: '{project}' with name: 'nope'"
    no_project = api.post("/repo/v1/entity/child", {"parentId": None, "entityName": "nope"})
    assert (no_project.status_code, no_project.json()["reason"]) == (
        404,
        "Child not found for parent: '4489' with name: 'nope'",
    )
    # ValidateArgument.required(request.getEntityName(), "EntityLookupRequest.entityName")
    nameless = api.post("/repo/v1/entity/child", {"parentId": project})
    assert (nameless.status_code, nameless.json()["reason"]) == (400, "EntityLookupRequest.entityName is required.")
    # EntityManagerImpl.lookupChild: READ on the parent, then on the child, else UnauthorizedException (403)
    closed = api.post("/repo/v1/entity/child", {"parentId": ids("closed"), "entityName": "in"})
    assert (closed.status_code, closed.json()["reason"]) == (403, "Lack of READ permission on the parent entity.")
    secret = api.post("/repo/v1/entity/child", {"parentId": project, "entityName": "secret"})
    assert (secret.status_code, secret.json()["reason"]) == (403, "Lack of READ permission on the requested entity.")


def test_entity_id_route_is_gone(seeded):
    # Synapse has no POST /entity/id (UrlHelpers has ENTITY_CHILD, no such path)
    api, project, _ = seeded
    assert api.post("/repo/v1/entity/id", {"parentId": project, "entityName": "raw"}).status_code != 200


# --- item 2: POST /entity/header with targetVersionNumber ----------------------------------------------------------
def test_entity_header_answers_the_named_version(seeded, emulator):
    # NodeDAOImpl.getEntityHeader(List<Reference>): a reference with targetVersionNumber gets that revision's
    # header (ENTITY_HEADER_ROWMAPPER: revision number, label, modifiedOn; isLatestVersion = current revision);
    # an unknown version or a null targetId is left out; results follow the references' order
    api, _, ids = seeded
    file_id = ids("v.txt")
    old_version = emulator.store.version(int(file_id[3:]), 1)
    answer = api.post(
        "/repo/v1/entity/header",
        {
            "references": [
                {"targetId": file_id, "targetVersionNumber": 1},
                {"targetId": file_id, "targetVersionNumber": 9},
                {"targetVersionNumber": 1},
                {"targetId": file_id},
                {"targetId": file_id, "targetVersionNumber": 3},
            ]
        },
    )
    assert answer.status_code == 200
    results = answer.json()["results"]
    assert [(h["versionNumber"], h["versionLabel"], h["isLatestVersion"]) for h in results] == [
        (1, "1", False),
        (3, "3", True),
        (3, "3", True),
    ]
    assert results[0]["modifiedOn"] == old_version.modified_on
    # createMisusedPaginatedResults: totalNumberOfResults is the page's size
    assert answer.json()["totalNumberOfResults"] == 3
    # a folder has revision 1 only (NodeDAOImpl.createNewNode)
    folder = api.post(
        "/repo/v1/entity/header",
        {
            "references": [
                {"targetId": ids("raw"), "targetVersionNumber": 1},
                {"targetId": ids("raw"), "targetVersionNumber": 2},
            ]
        },
    )
    assert [(h["id"], h["versionNumber"], h["isLatestVersion"]) for h in folder.json()["results"]] == [
        (ids("raw"), 1, True)
    ]


# --- items 5 and 9: GET /entity/{id}/version -----------------------------------------------------------------------
def test_version_list_of_table_types_skips_the_in_progress_version(seeded):
    # NodeManagerImpl.getVersionsOfEntity: for every TableType the current version is no snapshot and is skipped
    # (offset + 1); the emulator makes no snapshots, so it lists none. PaginatedResults.createWithLimitAndOffset
    api, _, ids = seeded
    for name in ("ds", "view", "t"):
        answer = api.get(f"/repo/v1/entity/{ids(name)}/version")
        assert (answer.status_code, answer.json()) == (200, {"results": [], "totalNumberOfResults": 0}), name


def test_version_list_of_folders_and_projects_is_revision_one(seeded):
    # every node is created with revision 1, label "1" (NodeDAOImpl.createNewNode, NodeConstants.DEFAULT_VERSION_*);
    # getVersionsOfEntity lists it like any revision, with no file fields
    api, project, ids = seeded
    for entity_id in (ids("raw"), project):
        listed = api.get(f"/repo/v1/entity/{entity_id}/version").json()
        assert [(v["id"], v["versionNumber"], v["versionLabel"], v["isLatestVersion"]) for v in listed["results"]] == [
            (entity_id, 1, "1", True)
        ]
        assert listed["totalNumberOfResults"] == 1
        assert "contentMd5" not in listed["results"][0] and "contentSize" not in listed["results"][0]
    # NodeDAOImpl.getVersionsOfEntity sets each VersionInfo's id to the id as the caller wrote it in the path
    numeric = ids("raw")[3:]
    assert [v["id"] for v in api.get(f"/repo/v1/entity/{numeric}/version").json()["results"]] == [numeric]


def test_version_list_of_a_file_leaves_unrecorded_fields_out(seeded):
    # VersionInfo.json: contentMd5/contentSize "when applicable and available"; a null field is not written
    api, _, ids = seeded
    external = api.get(f"/repo/v1/entity/{ids('x.csv')}/version").json()
    assert check("PaginatedVersionInfo", external) == []
    assert "contentMd5" not in external["results"][0] and "contentSize" not in external["results"][0]
    listed = api.get(f"/repo/v1/entity/{ids('v.txt')}/version", params={"limit": 2}).json()
    assert check("PaginatedVersionInfo", listed) == []
    assert [(v["versionNumber"], v["contentSize"], v["isLatestVersion"]) for v in listed["results"]] == [
        (3, "4", True),
        (2, "3", False),
    ]
    # a full page: Synapse estimates offset + page + 1 (PaginatedResults.calculateTotalWithLimitAndOffset)
    assert listed["totalNumberOfResults"] == 3
    last = api.get(f"/repo/v1/entity/{ids('v.txt')}/version", params={"offset": 2, "limit": 2}).json()
    assert ([v["versionNumber"] for v in last["results"]], last["totalNumberOfResults"]) == ([1], 3)
    # ServiceConstants.validatePaginationParams
    bad = api.get(f"/repo/v1/entity/{ids('v.txt')}/version", params={"limit": 0})
    assert (bad.status_code, bad.json()["reason"]) == (400, "pagination limit must be 1 or greater")
    # EntityController.getAllVersionsOfEntity: offset and limit are Integer request parameters (Spring converts them)
    assert api.get(f"/repo/v1/entity/{ids('v.txt')}/version", params={"offset": "x"}).status_code == 400


# --- item 10: the zero etag of non-current versions ----------------------------------------------------------------
def test_old_versions_answer_the_zero_etag(seeded):
    # NodeMapper.mapRow: a revision that is not the current one gets NodeConstants.ZERO_E_TAG (PLFM-1420, PLFM-4269)
    api, _, ids = seeded
    file_id = ids("v.txt")
    current = api.get(f"/repo/v1/entity/{file_id}").json()
    assert current["etag"] != ZERO_ETAG
    assert api.get(f"/repo/v1/entity/{file_id}/version/3").json()["etag"] == current["etag"]
    assert api.get(f"/repo/v1/entity/{file_id}/version/1").json()["etag"] == ZERO_ETAG
    bundle = api.post(f"/repo/v1/entity/{file_id}/version/2/bundle2", {"includeEntity": True}).json()
    assert bundle["entity"]["etag"] == ZERO_ETAG


def test_annotations_of_a_named_version_answer_the_zero_etag(seeded):
    # NodeDAOImpl.getUserAnnotationsForVersion sets ZERO_E_TAG for any named version (the current one too); bundle2
    # of a version reads its annotations the same way (EntityBundleServiceImpl)
    api, _, ids = seeded
    file_id = ids("raw/a.txt")
    assert api.get(f"/repo/v1/entity/{file_id}/annotations2").json()["etag"] != ZERO_ETAG
    assert api.get(f"/repo/v1/entity/{file_id}/version/1/annotations2").json()["etag"] == ZERO_ETAG
    bundle = api.post(f"/repo/v1/entity/{file_id}/version/1/bundle2", {"includeAnnotations": True}).json()
    assert bundle["annotations"]["etag"] == ZERO_ETAG
    assert (
        api.post(f"/repo/v1/entity/{file_id}/bundle2", {"includeAnnotations": True}).json()["annotations"]["etag"]
        != ZERO_ETAG
    )
    # a revision that does not exist: NotFoundException(CANNOT_FIND_A_NODE_WITH_ID + id)
    missing = api.get(f"/repo/v1/entity/{file_id}/version/7/annotations2")
    assert (missing.status_code, missing.json()["reason"]) == (404, f"Cannot find a node with id: {file_id}")


# --- item 11: path items -------------------------------------------------------------------------------------------
def test_path_items_carry_name_id_and_type_only(seeded):
    # NodeDAOImpl.getEntityPath selects id, name, type (NAME_ID_TYPE_ROWMAPPER) and NameIdType.toEntityHeader sets
    # only those; bundle2's path is the same list (EntityBundleServiceImpl, EntityPath.json). NodeManagerImpl
    # .getNodePath names an item the caller cannot READ "Redacted": the root folder, whose bootstrap ACL grants
    # authenticated users CREATE only (lib/jdomodels/src/main/resources/private/bootstrap-entites-spb.xml)
    api, project, ids = seeded
    expected = [
        {"name": "Redacted", "id": "syn4489", "type": FOLDER},
        {"name": "proj", "id": project, "type": PROJECT},
        {"name": "raw", "id": ids("raw"), "type": FOLDER},
        {"name": "a.txt", "id": ids("raw/a.txt"), "type": FILE},
    ]
    assert api.get(f"/repo/v1/entity/{ids('raw/a.txt')}/path").json() == {"path": expected}
    bundle = api.post(f"/repo/v1/entity/{ids('raw/a.txt')}/bundle2", {"includeEntityPath": True}).json()
    assert bundle["path"] == {"path": expected}


# --- item 12: restriction information ------------------------------------------------------------------------------
def _check_restriction_information(answer, entity_id):
    # RestrictionInformationManagerImpl.buildRestrictionInformationResponse: with no access requirement, OPEN, no
    # unmet requirement, restrictionDetails [] and the caller's userEntityPermissions (every field of both models:
    # synapse_model's RestrictionInformationResponse and UserEntityPermissions)
    assert check("RestrictionInformationResponse", answer) == []
    assert (
        answer["objectId"],
        answer["restrictionLevel"],
        answer["hasUnmetAccessRequirement"],
        answer["restrictionDetails"],
    ) == (int(entity_id[3:]), "OPEN", False, [])
    return answer["userEntityPermissions"]


def test_restriction_information_has_every_field(seeded):
    api, _, ids = seeded
    for name in ("raw/a.txt", "nodownload"):
        alone = api.post(
            "/repo/v1/restrictionInformation", {"objectId": ids(name), "restrictableObjectType": "ENTITY"}
        ).json()
        permissions = _check_restriction_information(alone, ids(name))
        assert permissions["canDownload"] is (name == "raw/a.txt")
        bundle = api.post(f"/repo/v1/entity/{ids(name)}/bundle2", {"includeRestrictionInformation": True}).json()
        assert bundle["restrictionInformation"] == alone


def test_restriction_information_checks_its_request_not_read_access(seeded):
    # RestrictionInformationManagerImpl.getRestrictionInformation: objectId and restrictableObjectType required; no
    # READ check (the caller's permissions are part of the answer)
    api, _, ids = seeded
    unreadable = api.post(
        "/repo/v1/restrictionInformation", {"objectId": ids("secret"), "restrictableObjectType": "ENTITY"}
    )
    assert unreadable.status_code == 200
    assert _check_restriction_information(unreadable.json(), ids("secret"))["canView"] is False
    untyped = api.post("/repo/v1/restrictionInformation", {"objectId": ids("raw")})
    assert (untyped.status_code, untyped.json()["reason"]) == (
        400,
        "RestrictionInformationRequest.restrictableObjectType is required.",
    )
    no_id = api.post("/repo/v1/restrictionInformation", {"restrictableObjectType": "ENTITY"})
    assert (no_id.status_code, no_id.json()["reason"]) == (400, "RestrictionInformationRequest.objectId is required.")


# --- item 15 (ids and the file route) ------------------------------------------------------------------------------
def test_ids_are_read_as_synapse_reads_them(seeded):
    # KeyFactory.stringToKey: URL-decoded, trimmed, lower-cased, one "syn" taken off, then a Long; otherwise
    # IllegalArgumentException "<id> is not a valid Synapse ID." (400, BaseControllerExceptionHandlerAdvice)
    api, _, ids = seeded
    bad = api.get("/repo/v1/entity/synXYZ")
    assert (bad.status_code, bad.json()["reason"]) == (400, "synXYZ is not a valid Synapse ID.")
    upper = api.get(f"/repo/v1/entity/SYN{ids('raw')[3:]}")
    assert (upper.status_code, upper.json()["id"]) == (200, ids("raw"))
    assert api.get(f"/repo/v1/entity/{ids('raw')[3:]}/type").json()["id"] == ids("raw")
    header = api.post("/repo/v1/entity/header", {"references": [{"targetId": "nonsense"}]})
    assert (header.status_code, header.json()["reason"]) == (400, "nonsense is not a valid Synapse ID.")


def test_file_route_requires_its_association(seeded):
    # UploadController.fileRedirectURLForAffiliate: fileAssociateType and fileAssociateId are required request
    # parameters; Spring 5.3's MissingServletRequestParameterException answers 400
    api, _, ids = seeded
    handle = api.get(f"/repo/v1/entity/{ids('raw/a.txt')}").json()["dataFileHandleId"]
    bare = api.get(f"/file/v1/file/{handle}", allow_redirects=False)
    assert (bare.status_code, bare.json()["reason"]) == (
        400,
        "Required request parameter 'fileAssociateType' for method parameter type FileHandleAssociateType "
        "is not present",
    )
    typed = api.get(f"/file/v1/file/{handle}", params={"fileAssociateType": "FileEntity"}, allow_redirects=False)
    assert (typed.status_code, typed.json()["reason"]) == (
        400,
        "Required request parameter 'fileAssociateId' for method parameter type String is not present",
    )
    assert (
        api.get(
            f"/file/v1/file/{handle}",
            params={"fileAssociateType": "Nonsense", "fileAssociateId": ids("raw")},
            allow_redirects=False,
        ).status_code
        == 400
    )
    assert (
        api.get(
            f"/file/v1/file/{handle}",
            params={"fileAssociateType": "FileEntity", "fileAssociateId": ids("raw/a.txt")},
            allow_redirects=False,
        ).status_code
        == 307
    )


# --- item 18: GET /version -----------------------------------------------------------------------------------------
def test_version_info_carries_the_stack_instance(emulator):
    # versionInfo/SynapseVersionInfo.json: version, stackInstance; SynapseVersionInfoController sets both
    answer = Api(emulator).get("/repo/v1/version").json()
    assert check("SynapseVersionInfo", answer) == []
    assert all(isinstance(value, str) and value for value in answer.values())


# --- item 9: no null field in any answer of these routes (the checker flags a null anywhere) ------------------------
ENTITY_ROUTES = {
    "": "Entity",
    "/type": "EntityHeader",
    "/path": "EntityPath",
    "/version": "PaginatedVersionInfo",
    "/annotations2": "Annotations",
    "/version/1": "Entity",
    "/version/1/annotations2": "Annotations",
}


def test_no_null_fields_in_entity_answers(seeded):
    api, project, ids = seeded
    for name in ("raw", "raw/a.txt", "v.txt", "x.csv", "ds", "view", "t", "nodownload"):
        entity_id = ids(name)
        for path, model in ENTITY_ROUTES.items():
            answer = api.get(f"/repo/v1/entity/{entity_id}{path}")
            assert answer.status_code == 200, (name, path)
            assert check(model, answer.json()) == [], (name, path)
        bundle = api.post(
            f"/repo/v1/entity/{entity_id}/bundle2",
            {
                "includeEntity": True,
                "includeAnnotations": True,
                "includeEntityPath": True,
                "includeRestrictionInformation": True,
                "includeHasChildren": True,
            },
        )
        assert check("EntityBundle", bundle.json()) == [], name
    headers = api.post("/repo/v1/entity/header", {"references": [{"targetId": ids(n)} for n in ("raw", "x.csv")]})
    assert check("PaginatedEntityHeaders", headers.json()) == []
    assert check("EntityId", api.post("/repo/v1/entity/child", {"parentId": project, "entityName": "raw"}).json()) == []
    assert check("SynapseVersionInfo", api.get("/repo/v1/version").json()) == []


def test_missing_entities_and_versions_are_404_in_synapse_words(seeded):
    # EntityDeciderFunctions.DENY_IF_DOES_NOT_EXIST and NodeDAOImpl.getNodeForVersion: NotFoundException
    # "Resource: '%s' does not exist" with the id, or IdAndVersion.toString() ("syn1.2") for a version
    api, _, ids = seeded
    missing = api.get("/repo/v1/entity/syn999999999")
    assert (missing.status_code, missing.json()["reason"]) == (404, "Resource: 'syn999999999' does not exist")
    version = api.get(f"/repo/v1/entity/{ids('v.txt')}/version/9")
    assert (version.status_code, version.json()["reason"]) == (404, f"Resource: '{ids('v.txt')}.9' does not exist")
    folder_version = api.get(f"/repo/v1/entity/{ids('raw')}/version/2")
    assert (folder_version.status_code, folder_version.json()["reason"]) == (
        404,
        f"Resource: '{ids('raw')}.2' does not exist",
    )


def test_denied_entities_are_403_in_synapse_words(seeded):
    # EntityDeciderFunctions.DENY: "You lack %s access to the requested entity." with the access type
    # (AuthorizationConstants.ERR_MSG_YOU_LACK_ACCESS_TO_REQUESTED_ENTITY_TEMPLATE)
    api, _, ids = seeded
    unreadable = api.get(f"/repo/v1/entity/{ids('secret')}")
    assert (unreadable.status_code, unreadable.json()["reason"]) == (
        403,
        "You lack READ access to the requested entity.",
    )
    undownloadable = api.get(f"/repo/v1/entity/{ids('nodownload')}/file", allow_redirects=False)
    assert (undownloadable.status_code, undownloadable.json()["reason"]) == (
        403,
        "You lack DOWNLOAD access to the requested entity.",
    )


def test_generated_by_without_provenance(seeded):
    # NodeManagerImpl.getActivityForNode: the revision's activity id (NodeDAOImpl.getActivityId: 404 "Activity for:
    # '%s', version: '%s' does not exist" for a missing revision), then DBOActivityDAOImpl.getDBO: a null id is 404
    # "No activity"; no READ check comes first
    api, _, ids = seeded
    for path in (
        f"{ids('v.txt')}/generatedBy",
        f"{ids('v.txt')}/version/1/generatedBy",
        f"{ids('secret')}/generatedBy",
        f"{ids('raw')}/version/1/generatedBy",
    ):
        answer = api.get(f"/repo/v1/entity/{path}")
        assert (answer.status_code, answer.json()["reason"]) == (404, "No activity"), path
    version = api.get(f"/repo/v1/entity/{ids('v.txt')}/version/9/generatedBy")
    assert (version.status_code, version.json()["reason"]) == (
        404,
        f"Activity for: '{ids('v.txt')}', version: '9' does not exist",
    )
    missing = api.get("/repo/v1/entity/syn999999999/generatedBy")
    assert (missing.status_code, missing.json()["reason"]) == (404, "Resource: 'syn999999999' does not exist")
