"""Every route the emulator serves, called as synapseclient 4.14 calls it, answers with the status and the model Synapse
answers (synapse_model: schemas and controllers of Synapse-Repository-Services).

The route tables (``routes.ROUTES`` + ``entity_routes.ENTITY_WRITE_ROUTES`` + ``column_routes.COLUMN_ROUTES`` +
``table_routes.TABLE_ROUTES`` + ``download_list_routes.DOWNLOAD_LIST_ROUTES``,
keyed by method + pattern) must equal the routes the cases below reach: a new route without a case fails
``test_every_served_route_has_a_case``, and an endpoint of synapse_model the emulator does not serve fails
``test_every_synapse_endpoint_is_served``. A case names the issue-30
item it checks (``item``) where it checks one. To add a route: add its Endpoint to synapse_model.ENDPOINTS (status ->
model, from its controller), then a Case here that calls it as synapseclient does.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

import pytest
import requests
from checker import answer_model, check, check_exchange, endpoint_for, sample_path
from synapse_model import ENDPOINTS, MODELS, ZERO_ETAG

from synclient.emulator import Emulator
from synclient.emulator.column_routes import COLUMN_ROUTES
from synclient.emulator.download_list_routes import DOWNLOAD_LIST_ROUTES
from synclient.emulator.entity_routes import ENTITY_WRITE_ROUTES
from synclient.emulator.routes import ROUTES
from synclient.emulator.table_routes import TABLE_ROUTES

# every entity kind, versions, deny true / "download", external handles (emulator-served, without an MD5, foreign
# without MD5 and size), a dataset and a collection, a view and a table; a second project for parentId null
SPEC = {
    "projects": [
        {
            "name": "conf",
            "children": [
                {
                    "type": "folder",
                    "name": "d",
                    "children": [
                        {"type": "file", "name": "a.txt", "content": "alpha", "annotations": {"k": ["v"], "n": [3]}}
                    ],
                },
                {"type": "file", "name": "v.txt", "versions": [{"content": "v1"}, {"content": "v2"}]},
                {"type": "link", "name": "l", "target": "d/a.txt"},
                {"type": "file", "name": "secret", "content": "x", "deny": True},
                {
                    "type": "folder",
                    "name": "closed",
                    "deny": True,
                    "children": [{"type": "file", "name": "in", "content": "z"}],
                },
                {"type": "file", "name": "nodl", "content": "y", "deny": "download"},
                {"type": "file", "name": "ext.csv", "external": True, "content": "a,b", "record_md5": False},
                {"type": "file", "name": "far.bin", "external": "sftp://sftp.example.org/data/far.bin"},
                {"type": "dataset", "name": "ds", "items": [{"ref": "d/a.txt", "version": 1}, {"ref": "v.txt"}]},
                {"type": "datasetcollection", "name": "dc", "items": [{"ref": "ds"}]},
                {
                    "type": "entityview",
                    "name": "view",
                    "scope": ["d"],
                    "columns": ["k", {"name": "n", "type": "INTEGER"}],
                },
                {
                    "type": "table",
                    "name": "t",
                    "columns": [{"name": "file", "type": "ENTITYID"}, "note"],
                    "rows": [["d/a.txt", "first"], ["v.txt", None]],
                },
            ],
        },
        {"name": "other", "children": [{"type": "folder", "name": "f"}]},
        # what the write cases change: each case its own entity (the cases of a worker share one emulator)
        {
            "name": "scratch",
            "children": [
                {"type": "folder", "name": "gone"},
                {"type": "folder", "name": "purged", "children": [{"type": "file", "name": "x", "content": "x"}]},
                {"type": "folder", "name": "annotated"},
                {"type": "folder", "name": "stale"},
                {"type": "entityview", "name": "reshaped", "scope": ["annotated"]},
                {"type": "folder", "name": "renamed"},
            ],
        },
    ]
}
#: short names of the seeded entities (paths inside "conf")
PATHS = {
    "d": "d",
    "a": "d/a.txt",
    "v": "v.txt",
    "l": "l",
    "secret": "secret",
    "closed": "closed",
    "nodl": "nodl",
    "ext": "ext.csv",
    "far": "far.bin",
    "ds": "ds",
    "dc": "dc",
    "view": "view",
    "t": "t",
}
#: short names of the entities the write cases change (paths inside "scratch")
SCRATCH_PATHS = {
    "gone": "gone",
    "purged": "purged",
    "annotated": "annotated",
    "stale": "stale",
    "reshaped": "reshaped",
    "renamed": "renamed",
}
TABLE_PKG = "org.sagebionetworks.repo.model.table."
#: what synapseclient 4.14 asks of bundle2 by default (client.py _getEntityBundle)
CLIENT_BUNDLE = {
    "includeEntity": True,
    "includeAnnotations": True,
    "includeFileHandles": True,
    "includeRestrictionInformation": True,
}
EVERY_PART = dict(
    CLIENT_BUNDLE,
    includePermissions=True,
    includeEntityPath=True,
    includeHasChildren=True,
    includeFileName=True,
    includeThreadCount=True,
    includeBenefactorACL=True,
    includeAccessControlList=True,
)
#: synapseclient's getChildren types (client.py getChildren)
CHILD_TYPES = [
    "folder",
    "file",
    "table",
    "link",
    "entityview",
    "dockerrepo",
    "submissionview",
    "dataset",
    "materializedview",
    "virtualtable",
    "datasetcollection",
]
QUERY_BUNDLE_REQUEST = "org.sagebionetworks.repo.model.table.QueryBundleRequest"


def md5(text: str) -> str:
    return hashlib.md5(text.encode("utf-8")).hexdigest()


Fact = Callable[[object, Dict[str, str], Dict[str, str]], List[str]]  # (body, ids, headers) -> problems


@dataclass(frozen=True)
class Case:
    """One call: ``path`` and ``body`` name seeded entities as ``{short name}`` (``{h:a}``: the current file handle of
    ``a``, ``{col}``: a column id of ``t``, ``{A}``: ``a``'s id in capitals). ``facts``: value checks beyond the
    model; ``item``: the issue-30 item the case checks; ``covers``: whether it counts for route coverage (not for
    malformed ids); ``token``: None for no Authorization header, else a token (default: the user's)."""

    name: str
    method: str
    path: str
    body: object = None
    status: int = 200
    facts: Tuple[Fact, ...] = ()
    item: str = ""
    covers: bool = True
    token: Optional[str] = "user"


def fact(text: str, test: Callable[[object, Dict[str, str]], bool]) -> Fact:
    def run(body, ids, headers) -> List[str]:
        try:
            return [] if test(body, ids) else [text]
        except (KeyError, IndexError, TypeError) as error:
            return [f"{text} ({error!r})"]

    return run


def header_fact(text: str, name: str, test: Callable[[str], bool]) -> Fact:
    return lambda body, ids, headers: [] if test(headers.get(name, "")) else [f"{text}: {headers.get(name)!r}"]


def names(body) -> List[str]:
    return [header["name"] for header in body["page"]]


def dataset_checksum(body, ids) -> bool:
    """Synapse: the MD5 of the items' MD5s, sorted and joined with no separator."""
    return body["checksum"] == md5("".join(sorted([md5("alpha"), md5("v2")])))


def entity_cases() -> List[Case]:
    cases = [
        Case(f"get entity {short}", "GET", f"/repo/v1/entity/{{{short}}}")
        for short in ("d", "a", "v", "l", "nodl", "ext", "far", "dc", "view", "t")
    ]
    cases.append(Case("get project", "GET", "/repo/v1/entity/{conf}"))
    cases.append(
        Case(
            "get dataset",
            "GET",
            "/repo/v1/entity/{ds}",
            item="3",
            facts=(fact("Dataset.checksum: MD5 of the sorted item MD5s joined with no separator", dataset_checksum),),
        )
    )
    cases.append(
        Case(
            "get old version",
            "GET",
            "/repo/v1/entity/{v}/version/1",
            item="10",
            facts=(
                fact("a non-current version has the zero etag", lambda b, i: b["etag"] == ZERO_ETAG),
                fact("version 1 is not the latest", lambda b, i: b["isLatestVersion"] is False),
            ),
        )
    )
    cases.append(
        Case(
            "get current version",
            "GET",
            "/repo/v1/entity/{v}/version/2",
            facts=(fact("the current version keeps its etag", lambda b, i: b["etag"] != ZERO_ETAG),),
        )
    )
    return cases


def version_cases() -> List[Case]:
    def listed(count: int) -> Fact:
        return fact(
            f"lists {count} version(s)", lambda b, i: len(b["results"]) == count and b["totalNumberOfResults"] == count
        )

    return [
        Case("versions of a file", "GET", "/repo/v1/entity/{v}/version", facts=(listed(2),)),
        Case("versions of a file without a recorded MD5", "GET", "/repo/v1/entity/{ext}/version", item="9"),
        Case("versions of a foreign external file", "GET", "/repo/v1/entity/{far}/version", item="9"),
        Case("versions of a folder", "GET", "/repo/v1/entity/{d}/version", item="5", facts=(listed(1),)),
        Case("versions of a table", "GET", "/repo/v1/entity/{t}/version", item="5", facts=(listed(0),)),
        Case("versions of a view", "GET", "/repo/v1/entity/{view}/version", item="5", facts=(listed(0),)),
        Case("versions of a dataset", "GET", "/repo/v1/entity/{ds}/version", item="5", facts=(listed(0),)),
    ]


def lookup_cases() -> List[Case]:
    children = {"parentId": "{conf}", "includeTypes": CHILD_TYPES, "sortBy": "NAME", "sortDirection": "ASC"}
    hidden = fact(
        "children the caller cannot read are not listed",
        lambda b, i: "secret" not in names(b) and "closed" not in names(b),
    )
    return [
        Case("children", "POST", "/repo/v1/entity/children", children, item="6", facts=(hidden,)),
        Case(
            "children counts",
            "POST",
            "/repo/v1/entity/children",
            dict(children, includeTotalChildCount=True, includeSumFileSizes=True),
            item="6",
            facts=(
                hidden,
                fact("totalChildCount counts the readable children (10)", lambda b, i: b["totalChildCount"] == 10),
                fact(
                    "sumFileSizesBytes adds the recorded sizes of readable files (2 + 1 + 3)",
                    lambda b, i: b["sumFileSizesBytes"] == 6,
                ),
            ),
        ),
        Case(
            "children of a folder",
            "POST",
            "/repo/v1/entity/children",
            {"parentId": "{d}", "includeTypes": ["file", "folder"]},
        ),
        Case(
            "projects",
            "POST",
            "/repo/v1/entity/children",
            {"parentId": None, "includeTypes": ["project"]},
            facts=(fact("lists both projects", lambda b, i: {"conf", "other"} <= set(names(b))),),
        ),
        Case(
            "projects asked with [file]",
            "POST",
            "/repo/v1/entity/children",
            {"parentId": None, "includeTypes": ["file"]},
            item="14",
            facts=(
                fact(
                    "parentId null lists projects whatever includeTypes says",
                    lambda b, i: {"conf", "other"} <= set(names(b)),
                ),
            ),
        ),
        Case(
            "children without includeTypes",
            "POST",
            "/repo/v1/entity/children",
            {"parentId": "{conf}"},
            status=400,
            item="14",
        ),
        Case(
            "children with a limit over 50",
            "POST",
            "/repo/v1/entity/children",
            dict(children, nextPageToken="100a0"),
            status=400,
            item="14",
        ),
        Case(
            "headers",
            "POST",
            "/repo/v1/entity/header",
            {"references": [{"targetId": "{a}"}, {"targetId": "{d}"}, {"targetId": "{t}"}]},
            facts=(fact("three headers", lambda b, i: len(b["results"]) == 3),),
        ),
        Case(
            "header of an old version",
            "POST",
            "/repo/v1/entity/header",
            {"references": [{"targetId": "{v}", "targetVersionNumber": 1}]},
            item="2",
            facts=(
                fact(
                    "the header of version 1, not the latest",
                    lambda b, i: b["results"][0]["versionNumber"] == 1 and b["results"][0]["isLatestVersion"] is False,
                ),
            ),
        ),
        Case(
            "child by name",
            "POST",
            "/repo/v1/entity/child",
            {"parentId": "{conf}", "entityName": "d"},
            item="1",
            facts=(fact("the folder's id", lambda b, i: b["id"] == i["d"]),),
        ),
        Case(
            "project by name",
            "POST",
            "/repo/v1/entity/child",
            {"parentId": None, "entityName": "other"},
            item="1",
            facts=(fact("the project's id", lambda b, i: b["id"] == i["other"]),),
        ),
        Case(
            "no child of that name",
            "POST",
            "/repo/v1/entity/child",
            {"parentId": "{conf}", "entityName": "nope"},
            status=404,
            item="1",
        ),
        Case("type", "GET", "/repo/v1/entity/{a}/type"),
        Case(
            "path",
            "GET",
            "/repo/v1/entity/{a}/path",
            item="11",
            facts=(
                fact(
                    "root, project, folder, file",
                    lambda b, i: [h["id"] for h in b["path"]][1:] == [i["conf"], i["d"], i["a"]],
                ),
            ),
        ),
        Case(
            "annotations",
            "GET",
            "/repo/v1/entity/{a}/annotations2",
            facts=(fact("k and n", lambda b, i: set(b["annotations"]) == {"k", "n"}),),
        ),
        Case(
            "annotations of a version",
            "GET",
            "/repo/v1/entity/{v}/version/1/annotations2",
            item="10",
            facts=(
                fact(
                    "annotations of a given version have the zero etag (NodeDAOImpl, PLFM-1420)",
                    lambda b, i: b["etag"] == ZERO_ETAG,
                ),
            ),
        ),
        Case("no provenance", "GET", "/repo/v1/entity/{a}/generatedBy", status=404),
        Case("no provenance of a version", "GET", "/repo/v1/entity/{v}/version/1/generatedBy", status=404),
        Case(
            "restriction information",
            "POST",
            "/repo/v1/restrictionInformation",
            {"objectId": "{a}", "restrictableObjectType": "ENTITY"},
            item="12",
        ),
    ]


def bundle_cases() -> List[Case]:
    cases = [
        Case(f"bundle of {short}", "POST", f"/repo/v1/entity/{{{short}}}/bundle2", CLIENT_BUNDLE, item="12")
        for short in ("conf", "d", "a", "l", "ext", "ds", "dc", "view", "t")
    ]
    cases += [
        Case("bundle with every part", "POST", "/repo/v1/entity/{a}/bundle2", EVERY_PART, item="11, 12"),
        Case(
            "bundle of an old version",
            "POST",
            "/repo/v1/entity/{v}/version/1/bundle2",
            CLIENT_BUNDLE,
            item="10, 12",
            facts=(
                fact(
                    "version 1 with the zero etag",
                    lambda b, i: b["entity"]["versionNumber"] == 1 and b["entity"]["etag"] == ZERO_ETAG,
                ),
            ),
        ),
        Case(
            "bundle of a file one may not download",
            "POST",
            "/repo/v1/entity/{nodl}/bundle2",
            CLIENT_BUNDLE,
            item="4, 12",
            facts=(fact("no file handles", lambda b, i: b["fileHandles"] == []),),
        ),
    ]
    return cases


def file_cases() -> List[Case]:
    def batch(*pairs, **flags) -> dict:
        flags = flags or {
            "includeFileHandles": True,
            "includePreSignedURLs": True,
            "includePreviewPreSignedURLs": False,
        }
        return dict(
            flags,
            requestedFiles=[
                {"fileHandleId": handle, "associateObjectId": entity, "associateObjectType": "FileEntity"}
                for handle, entity in pairs
            ],
        )

    def failure(code: str) -> Fact:
        return fact(f"failureCode {code}", lambda b, i: b["requestedFiles"][0].get("failureCode") == code)

    association = "fileAssociateType=FileEntity&fileAssociateId={a}"
    return [
        Case(
            "batch",
            "POST",
            "/file/v1/fileHandle/batch",
            batch(("{h:a}", "{a}"), ("{h:ext}", "{ext}")),
            status=201,
            item="16",
            facts=(
                fact(
                    "seeded handles are another user's (Synapse always lets a handle's creator download it)",
                    lambda b, i: all(r["fileHandle"]["createdBy"] != i["me"] for r in b["requestedFiles"]),
                ),
            ),
        ),
        Case("batch of a foreign handle", "POST", "/file/v1/fileHandle/batch", batch(("{h:far}", "{far}")), status=201),
        Case(
            "batch without download",
            "POST",
            "/file/v1/fileHandle/batch",
            batch(("{h:nodl}", "{nodl}")),
            status=201,
            facts=(failure("UNAUTHORIZED"),),
        ),
        Case(
            "batch of an unknown handle",
            "POST",
            "/file/v1/fileHandle/batch",
            batch(("999999999", "{a}")),
            status=201,
            item="16",
            facts=(failure("UNAUTHORIZED"),),
        ),
        Case(
            "batch over 100",
            "POST",
            "/file/v1/fileHandle/batch",
            batch(*[("{h:a}", "{a}")] * 101),
            status=400,
            item="19",
            facts=(
                fact(
                    "Synapse's reason (FileHandleManagerImpl.MAX_REQUESTS_PER_CALL_MESSAGE)",
                    lambda b, i: b["reason"] == "Request exceeds the maximum number of objects per request: 100",
                ),
            ),
        ),
        Case("file url", "GET", "/repo/v1/entity/{a}/file?redirect=false"),
        Case("file redirect", "GET", "/repo/v1/entity/{a}/file", status=307),
        Case("file url of a version", "GET", "/repo/v1/entity/{v}/version/1/file?redirect=false"),
        Case("file redirect of a version", "GET", "/repo/v1/entity/{v}/version/1/file", status=307),
        Case("file url without download", "GET", "/repo/v1/entity/{nodl}/file?redirect=false", status=403),
        Case("handle url", "GET", f"/file/v1/file/{{h:a}}?{association}&redirect=false"),
        Case("handle redirect", "GET", f"/file/v1/file/{{h:a}}?{association}", status=307),
        Case("handle url without association", "GET", "/file/v1/file/{h:a}?redirect=false", status=400, item="15"),
    ]


def table_cases() -> List[Case]:
    return [
        Case("columns of a table", "GET", "/repo/v1/entity/{t}/column", item="8"),
        Case("columns of a view", "GET", "/repo/v1/entity/{view}/column", item="8"),
        Case("columns of a dataset", "GET", "/repo/v1/entity/{ds}/column"),
        Case("a column", "GET", "/repo/v1/column/{col}", item="8"),
        Case("no such column", "GET", "/repo/v1/column/999999999", status=404),
    ]


def error_cases() -> List[Case]:
    realm = 'Bearer realm="Synapse Repository Services"'
    return [
        Case("version", "GET", "/repo/v1/version", item="18"),
        Case("version without a token", "GET", "/repo/v1/version", token=None, item="18"),
        Case("user profile", "GET", "/repo/v1/userProfile"),
        Case("unknown entity", "GET", "/repo/v1/entity/syn999999999", status=404),
        Case("unreadable entity", "GET", "/repo/v1/entity/{secret}", status=403),
        Case("inside an unreadable folder", "GET", "/repo/v1/entity/{closed}/path", status=403),
        Case("malformed id", "GET", "/repo/v1/entity/synXYZ", status=400, item="15", covers=False),
        Case("id in capitals", "GET", "/repo/v1/entity/{A}", item="15", covers=False),
        Case("no token: the anonymous user", "GET", "/repo/v1/entity/{a}", status=403, token=None, item="15"),
        Case(
            "an unknown token",
            "GET",
            "/repo/v1/entity/{a}",
            status=401,
            token="not-a-token",
            item="15",
            facts=(header_fact("WWW-Authenticate", "WWW-Authenticate", lambda value: value.startswith(realm)),),
        ),
    ]


def write_cases() -> List[Case]:
    """Issue 34: what a client that makes its own view calls (EntityController.createEntity, deleteEntity,
    updateEntityAnnotationsV2; TableController.createColumnModels, getDefaultColumnsForViewType)."""
    project = "org.sagebionetworks.repo.model.Project"
    folder = "org.sagebionetworks.repo.model.Folder"
    view = {
        "concreteType": TABLE_PKG + "EntityView",
        "name": "made view",
        "parentId": "{scratch}",
        "columnIds": ["{col}"],
        "scopeIds": ["{d}"],
        "viewTypeMask": 1,
    }
    annotations = {
        "id": "{annotated}",
        "etag": "{etag:annotated}",
        "annotations": {"k": {"type": "LONG", "value": ["7"]}},
    }
    return [
        Case(
            "create a project",
            "POST",
            "/repo/v1/entity",
            {"concreteType": project, "name": "made project", "description": "a scratch project"},
            status=201,
            facts=(
                fact("under the root", lambda b, i: b["parentId"] == "syn4489"),
                fact("its description", lambda b, i: b["description"] == "a scratch project"),
            ),
        ),
        Case(
            "create a folder",
            "POST",
            "/repo/v1/entity",
            {"concreteType": folder, "name": "made folder", "parentId": "{scratch}"},
            status=201,
            facts=(fact("in its parent", lambda b, i: b["parentId"] == i["scratch"]),),
        ),
        Case(
            "create a view",
            "POST",
            "/repo/v1/entity",
            view,
            status=201,
            facts=(
                fact("its scope, as numeric ids", lambda b, i: b["scopeIds"] == [i["d"][3:]]),
                fact("its columns", lambda b, i: b["columnIds"] == [i["col"]] and b["viewTypeMask"] == 1),
                fact("its in-progress version", lambda b, i: b["versionLabel"] == "in progress"),
            ),
        ),
        Case(
            "create a project of a taken name",
            "POST",
            "/repo/v1/entity",
            {"concreteType": project, "name": "other"},
            status=409,
            facts=(
                fact("Synapse's words", lambda b, i: b["reason"].endswith("already exists with a parentId: syn4489")),
            ),
        ),
        Case(
            "create as the anonymous user",
            "POST",
            "/repo/v1/entity",
            {"concreteType": folder, "name": "anon", "parentId": "{scratch}"},
            status=403,
            token=None,
        ),
        Case(
            "create in an unreadable folder",
            "POST",
            "/repo/v1/entity",
            {"concreteType": folder, "name": "inside", "parentId": "{closed}"},
            status=403,
        ),
        Case(
            "create a view of an unknown column",
            "POST",
            "/repo/v1/entity",
            dict(view, name="bad view", columnIds=["999999999"]),
            status=404,  # ColumnModelManagerImpl.getAndValidateColumnModels: NotFoundException
        ),
        Case(
            "create a view with its bundle",
            "POST",
            "/repo/v1/entity/bundle2/create",
            {
                "entity": dict(view, name="bundled view", columnIds=[]),
                "annotations": {"annotations": {"owner": {"type": "STRING", "value": ["synclient"]}}},
            },
            status=201,
            facts=(
                fact(
                    "the entity", lambda b, i: b["entity"]["name"] == "bundled view" and b["entityType"] == "entityview"
                ),
                fact(
                    "its annotations", lambda b, i: b["annotations"]["annotations"]["owner"]["value"] == ["synclient"]
                ),
            ),
        ),
        Case(
            "update a folder",
            "PUT",
            "/repo/v1/entity/{renamed}",
            {
                "concreteType": folder,
                "id": "{renamed}",
                "etag": "{etag:renamed}",
                "name": "renamed again",
                "parentId": "{scratch}",
            },
            facts=(
                fact("its new name", lambda b, i: b["name"] == "renamed again"),
                fact("a new etag", lambda b, i: b["etag"] != i["etag:renamed"]),
            ),
        ),
        Case(
            "update with a stale etag",
            "PUT",
            "/repo/v1/entity/{stale}",
            {"concreteType": folder, "id": "{stale}", "etag": "00000000-0000-0000-0000-000000000001", "name": "s"},
            status=412,
        ),
        Case("delete to the trash can", "DELETE", "/repo/v1/entity/{gone}", status=204),
        Case("delete at once", "DELETE", "/repo/v1/entity/{purged}?skipTrashCan=true", status=204),
        Case("delete what does not exist", "DELETE", "/repo/v1/entity/syn999999999", status=204),
        Case("delete an unreadable entity", "DELETE", "/repo/v1/entity/{secret}", status=403),
        Case(
            "update annotations",
            "PUT",
            "/repo/v1/entity/{annotated}/annotations2",
            annotations,
            facts=(
                fact("the new value", lambda b, i: b["annotations"]["k"] == {"type": "LONG", "value": ["7"]}),
                fact("a new etag", lambda b, i: b["etag"] != i["etag:annotated"]),
            ),
        ),
        Case(
            "update annotations with a stale etag",
            "PUT",
            "/repo/v1/entity/{stale}/annotations2",
            dict(annotations, id="{stale}", etag="00000000-0000-0000-0000-000000000001"),
            status=412,
        ),
        Case(
            "create column models",
            "POST",
            "/repo/v1/column/batch",
            {
                "concreteType": "org.sagebionetworks.repo.model.ListWrapper",
                "list": [{"name": "file", "columnType": "ENTITYID"}, {"name": "note", "columnType": "STRING"}],
            },
            status=201,
            facts=(fact("the table's own column id, reused", lambda b, i: b["list"][0]["id"] == i["col"]),),
        ),
        Case(
            "default columns of a file view",
            "GET",
            "/repo/v1/column/tableview/defaults?viewEntityType=entityview&viewTypeMask=1",
            facts=(fact("15 file columns", lambda b, i: [c["name"] for c in b["list"]][:2] == ["id", "name"]),),
        ),
    ]


CASES: List[Case] = (
    entity_cases()
    + version_cases()
    + lookup_cases()
    + bundle_cases()
    + file_cases()
    + table_cases()
    + error_cases()
    + write_cases()
)


@dataclass(frozen=True)
class AsyncCase:
    """A job: ``POST start`` (201 AsyncJobId), then ``GET get/{token}`` (202 AsynchronousJobStatus while pending,
    then 201 and the job's answer)."""

    name: str
    start: str
    body: object  # a JSON template, or a function of the World that makes the body
    facts: Tuple[Fact, ...] = ()
    item: str = "7"

    @property
    def get(self) -> str:
        return self.start.replace("/async/start", "/async/get/{token}")


QUERY = {
    "concreteType": QUERY_BUNDLE_REQUEST,
    "query": {"sql": "select * from {t}", "isConsistent": True, "includeEntityEtag": True},
}
ASYNC_CASES = [
    AsyncCase("query", "/repo/v1/entity/{t}/table/query/async/start", QUERY, item="7, 8, 17"),
    AsyncCase(
        "query of a view",
        "/repo/v1/entity/{view}/table/query/async/start",
        dict(QUERY, query=dict(QUERY["query"], sql="select * from {view}")),
        item="7, 8, 17",
    ),
    AsyncCase("next page", "/repo/v1/entity/{t}/table/query/nextPage/async/start", lambda world: next_page(world)),
    AsyncCase(
        "csv",
        "/repo/v1/entity/{t}/table/download/csv/async/start",
        {
            "concreteType": "org.sagebionetworks.repo.model.table.DownloadFromTableRequest",
            "csvTableDescriptor": {
                "isFirstLineHeader": True,
                "quoteCharacter": '"',
                "escapeCharacter": "\\",
                "lineEnd": "\n",
                "separator": ",",
            },
            "sql": "select * from {t}",
            "writeHeader": True,
            "includeRowIdAndRowVersion": True,
            "includeEntityEtag": True,
        },
    ),
]


# --- the download list (DownloadListController), as synapseclient 4.14 calls it (api/download_list_services.py) ----
DOWNLOAD = "org.sagebionetworks.repo.model.download."


def cart_items(*entries: Tuple[str, Optional[int]]) -> List[dict]:
    """DownloadListItems of seeded files: (short name, version or None)."""
    return [
        {"fileEntityId": f"{{{short}}}", **({} if version is None else {"versionNumber": version})}
        for short, version in entries
    ]


def download_list_cases() -> List[Case]:
    """Each case stands alone (the cases of a module may run in any order, on any worker): its facts hold whatever
    the list holds before it."""
    never_added = cart_items(("far", 9))  # no case puts version 9 of far.bin on the list
    return [
        Case(
            "add to the download list",
            "POST",
            "/repo/v1/download/list/add",
            {"batchToAdd": cart_items(("ext", 1), ("d", None))},
            facts=(fact("a folder is no file: at most one added", lambda b, i: b["numberOfFilesAdded"] in (0, 1)),),
        ),
        Case(
            "add a batch over 1000",
            "POST",
            "/repo/v1/download/list/add",
            {"batchToAdd": cart_items(*[("a", 1)] * 1001)},
            status=400,
        ),
        Case("add to the download list without a token", "POST", "/repo/v1/download/list/add", token=None, status=401),
        Case(
            "remove from the download list",
            "POST",
            "/repo/v1/download/list/remove",
            {"batchToRemove": never_added},
            facts=(fact("nothing of it was on the list", lambda b, i: b["numberOfFilesRemoved"] == 0),),
        ),
        Case("clear the download list", "DELETE", "/repo/v1/download/list"),
        Case("a file handle of another user", "GET", "/file/v1/fileHandle/{h:a}", status=403),
        Case(
            "the URL of a file handle of another user",
            "GET",
            "/file/v1/fileHandle/{h:a}/url?redirect=false",
            status=403,
        ),
    ]


def filled_cart(world: World) -> None:
    """The list holds a (v1) and v.txt (current): available; nodl (an access requirement) and secret (no read):
    actions required."""
    world.call("DELETE", "/repo/v1/download/list")
    items = cart_items(("a", 1), ("v", None), ("nodl", None), ("secret", None))
    status, answer, _ = world.call("POST", "/repo/v1/download/list/add", world.fill({"batchToAdd": items}))
    assert status == 200 and answer["numberOfFilesAdded"] == 4, answer


def cart_query(details: dict) -> Callable[[World], dict]:
    def body(world: World) -> dict:
        filled_cart(world)
        return {"concreteType": DOWNLOAD + "DownloadListQueryRequest", "requestDetails": details}

    return body


def cart_then(body: dict) -> Callable[[World], dict]:
    def make(world: World) -> dict:
        filled_cart(world)
        return world.fill(body)

    return make


def actions(body) -> List[Tuple[str, int]]:
    """(action kind, files) of an ActionRequiredResponse, sorted"""
    page = body["responseDetails"]["page"]
    return sorted((row["action"]["concreteType"].rsplit(".", 1)[1], row["count"]) for row in page)


def download_list_async_cases() -> List[AsyncCase]:
    start = "/repo/v1/download/list/{}/async/start"
    return [
        AsyncCase(
            "download list: available files",
            start.format("query"),
            cart_query(
                {
                    "concreteType": DOWNLOAD + "AvailableFilesRequest",
                    "sort": [{"field": "fileName", "direction": "ASC"}],
                }
            ),
            item="-",
            facts=(
                fact(
                    "a.txt at version 1 and v.txt, sorted by name",
                    lambda b, i: (
                        [(r["fileName"], r.get("versionNumber")) for r in b["responseDetails"]["page"]]
                        == [("a.txt", 1), ("v.txt", None)]
                    ),
                ),
            ),
        ),
        AsyncCase(
            "download list: actions required",
            start.format("query"),
            cart_query({"concreteType": DOWNLOAD + "ActionRequiredRequest"}),
            item="-",
            facts=(
                fact(
                    "an access requirement to meet and a download to request, one file each",
                    lambda b, i: actions(b) == [("MeetAccessRequirement", 1), ("RequestDownload", 1)],
                ),
            ),
        ),
        AsyncCase(
            "download list: statistics",
            start.format("query"),
            cart_query({"concreteType": DOWNLOAD + "FilesStatisticsRequest"}),
            item="-",
            facts=(
                fact(
                    "4 files, 2 available (alpha and v2: 7 bytes), 2 requiring action",
                    lambda b, i: (
                        (
                            b["responseDetails"]["totalNumberOfFiles"],
                            b["responseDetails"]["numberOfFilesAvailableForDownload"],
                            b["responseDetails"]["numberOfFilesRequiringAction"],
                            b["responseDetails"]["sumOfFileSizesAvailableForDownload"],
                        )
                        == (4, 2, 2, 7)
                    ),
                ),
            ),
        ),
        AsyncCase(
            "download list: add a folder",
            start.format("add"),
            cart_then({"concreteType": DOWNLOAD + "AddToDownloadListRequest", "parentId": "{d}"}),
            item="-",
        ),
        AsyncCase(
            "download list: add a view query",
            start.format("add"),
            cart_then(
                {
                    "concreteType": DOWNLOAD + "AddToDownloadListRequest",
                    "query": {"sql": "select * from {view}"},
                    "useVersionNumber": False,
                }
            ),
            item="-",
        ),
        AsyncCase(
            "download list: manifest",
            start.format("manifest"),
            cart_then(
                {
                    "concreteType": DOWNLOAD + "DownloadListManifestRequest",
                    "csvTableDescriptor": {
                        "separator": ",",
                        "quoteCharacter": '"',
                        "escapeCharacter": "\\",
                        "lineEnd": "\n",
                        "isFirstLineHeader": True,
                    },
                }
            ),
            item="-",
        ),
    ]


CASES += download_list_cases()
ASYNC_CASES += download_list_async_cases()
ASYNC_CASES.append(
    AsyncCase(
        "schema change of a view",
        "/repo/v1/entity/{reshaped}/table/transaction/async/start",
        {
            "concreteType": TABLE_PKG + "TableUpdateTransactionRequest",
            "entityId": "{reshaped}",
            "changes": [
                {
                    "concreteType": TABLE_PKG + "TableSchemaChangeRequest",
                    "entityId": "{reshaped}",
                    "changes": [],
                    "orderedColumnIds": ["{col:reshaped}"],
                }
            ],
        },
        facts=(
            fact("the new schema", lambda b, i: [c["id"] for c in b["results"][0]["schema"]] == [i["col:reshaped"]]),
        ),
        item="",
    )
)
ASYNC_CASES.append(
    AsyncCase(
        "annotation columns of a scope",
        "/repo/v1/column/view/scope/async/start",
        {
            "concreteType": TABLE_PKG + "ViewColumnModelRequest",
            "viewScope": {"scope": ["{d}"], "viewEntityType": "entityview", "viewTypeMask": 1},
        },
        facts=(
            fact(
                "a.txt's annotations",
                lambda b, i: (
                    [(c["name"], c["columnType"]) for c in b["results"]] == [("k", "STRING"), ("n", "INTEGER")]
                ),
            ),
        ),
        item="",
    )
)


# --- the seeded emulator --------------------------------------------------------------------------------------------
@dataclass
class World:
    emu: Emulator
    ids: Dict[str, str]

    def fill(self, value):
        if isinstance(value, str):
            return re.sub(r"\{([^}]+)\}", lambda match: self.ids[match.group(1)], value)
        if isinstance(value, list):
            return [self.fill(item) for item in value]
        if isinstance(value, dict):
            return {key: self.fill(item) for key, item in value.items()}
        return value

    def call(self, method: str, path: str, body=None, token: Optional[str] = "user"):
        headers = {}
        if token is not None:
            headers["Authorization"] = f"Bearer {self.emu.token if token == 'user' else token}"
        response = requests.request(
            method, self.emu.endpoint + path, json=body, headers=headers, allow_redirects=False, timeout=30
        )
        content_type = response.headers.get("Content-Type", "")
        answer = response.json() if content_type.startswith("application/json") and response.content else response.text
        return response.status_code, answer, response.headers


@pytest.fixture(scope="module")
def world():
    """One emulator for the module (pages of one query row, so a query has a next page), seeded with SPEC."""
    with Emulator(query_page_rows=1) as emu:
        projects = emu.seed_spec(SPEC)
        ids = {"conf": projects["conf"], "other": projects["other"]}
        ids.update({short: emu.resolve(projects["conf"], path) for short, path in PATHS.items()})
        ids["scratch"] = projects["scratch"]
        ids.update({short: emu.resolve(projects["scratch"], path) for short, path in SCRATCH_PATHS.items()})
        ids["A"] = ids["a"].upper()
        world = World(emu, ids)
        for short in ("a", "ext", "far", "nodl"):
            status, body, _ = world.call("GET", f"/repo/v1/entity/{ids[short]}")
            ids[f"h:{short}"] = body["dataFileHandleId"]
        status, body, _ = world.call("GET", "/repo/v1/userProfile")
        ids["me"] = body["ownerId"]
        status, body, _ = world.call("GET", f"/repo/v1/entity/{ids['t']}/column")
        ids["col"] = body["results"][0]["id"]
        status, body, _ = world.call("GET", f"/repo/v1/entity/{ids['reshaped']}/column")
        ids["col:reshaped"] = body["results"][0]["id"]
        status, body, _ = world.call("GET", f"/repo/v1/entity/{ids['annotated']}/annotations2")
        ids["etag:annotated"] = body["etag"]
        status, body, _ = world.call("GET", f"/repo/v1/entity/{ids['renamed']}")
        ids["etag:renamed"] = body["etag"]
        yield world


def problems_of(
    world: World, method: str, path: str, status: int, expected: int, body, headers, facts: Tuple[Fact, ...] = ()
) -> List[str]:
    problems = [] if status == expected else [f"status {status}, Synapse answers {expected}"]
    problems += check_exchange(method, path, status, body)
    endpoint = endpoint_for(method, path)
    # a success under the wrong status: its body is still checked as the model of the right one
    if status != expected and 200 <= status < 300 and 200 <= expected < 300 and endpoint is not None:
        model = answer_model(endpoint, expected)
        if model in MODELS:
            problems += [f"as {model}: {problem}" for problem in check(model, body)]
    if status == expected:
        problems += [problem for check_fact in facts for problem in check_fact(body, world.ids, headers)]
    return problems


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_route(world, case: Case):
    path, body = world.fill(case.path), world.fill(case.body)
    status, answer, headers = world.call(case.method, path, body, case.token)
    problems = problems_of(world, case.method, path, status, case.status, answer, headers, case.facts)
    assert not problems, f"{case.method} {path} (issue 30 item {case.item or '-'}):\n" + "\n".join(problems)


def next_page(world: World) -> dict:
    """The QueryNextPageToken of the first page of the table's query (pages of one row), which synapseclient sends
    back as it is (client.py _queryTableNext)."""
    status, answer, _ = world.call("POST", world.fill("/repo/v1/entity/{t}/table/query/async/start"), world.fill(QUERY))
    token = answer["token"]
    for _ in range(5):
        status, answer, _ = world.call("GET", world.fill(f"/repo/v1/entity/{{t}}/table/query/async/get/{token}"))
        if status not in (202,):
            break
    return answer["queryResult"]["nextPageToken"]


@pytest.mark.parametrize("case", ASYNC_CASES, ids=[case.name for case in ASYNC_CASES])
def test_async_job(world, case: AsyncCase):
    start = world.fill(case.start)
    body = case.body(world) if callable(case.body) else world.fill(case.body)
    status, answer, headers = world.call("POST", start, body)
    problems = problems_of(world, "POST", start, status, 201, answer, headers)
    assert not problems, f"POST {start}:\n" + "\n".join(problems)
    get = world.fill(case.get.replace("{token}", answer["token"]))
    status, answer, headers = world.call("GET", get)  # query_pending_polls = 1: the first poll is pending
    problems = problems_of(world, "GET", get, status, 202, answer, headers)
    status, answer, headers = world.call("GET", get)
    problems += problems_of(world, "GET", get, status, 201, answer, headers, case.facts)
    assert not problems, f"GET {get} (issue 30 item {case.item}):\n" + "\n".join(problems)


def test_the_creator_reads_the_download_list_manifest_handle(world):
    """The manifest job's file handle is the user's own: ``GET /fileHandle/{id}`` answers its FileHandle and
    ``.../url`` its URL (as synapseclient 4.14 reads the manifest), where another user's handle answers 403 (the
    cases above)."""
    case = next(case for case in ASYNC_CASES if case.name == "download list: manifest")
    status, answer, _ = world.call("POST", world.fill(case.start), case.body(world))
    get = world.fill(case.get.replace("{token}", answer["token"]))
    for _ in range(5):  # pending for query_pending_polls polls, then done
        status, answer, _ = world.call("GET", get)
        if status != 202:
            break
    assert status == 201, answer
    handle = answer["resultFileHandleId"]
    problems: List[str] = []
    for path, expected in (
        (f"/file/v1/fileHandle/{handle}", 200),
        (f"/file/v1/fileHandle/{handle}/url?redirect=false", 200),
        (f"/file/v1/fileHandle/{handle}/url", 307),
    ):
        status, body, headers = world.call("GET", path)
        problems += problems_of(world, "GET", path, status, expected, body, headers)
    assert not problems, "\n".join(problems)


def test_a_throttled_request_answers_the_throttle_filter_body(emulator):
    """Issue 30 item 13: a 429 is written by Synapse's throttle filter as exactly {"reason": ...}."""
    emulator.set_knobs(fault_api_429_rate=1.0)
    world = World(emulator, {})
    for method, path in (("GET", "/repo/v1/version"), ("POST", "/repo/v1/entity/children")):
        status, answer, headers = world.call(method, path, {"parentId": None, "includeTypes": ["project"]})
        problems = problems_of(world, method, path, status, 429, answer, headers)
        assert not problems, f"{method} {path} (issue 30 item 13):\n" + "\n".join(problems)


# --- coverage -------------------------------------------------------------------------------------------------------
def _dummy(path: str) -> str:
    """A case's path with placeholders filled by values of the right shape (no emulator needed)."""

    def value(match) -> str:
        name = match.group(1)
        return "1" if name.startswith("h:") or name in ("col", "token") else "syn1"

    return re.sub(r"\{([^}]+)\}", value, path.split("?")[0])


def _calls() -> List[Tuple[str, str, str]]:
    """(case name, method, dummy path) of every call the cases make that counts for coverage."""
    calls = [(case.name, case.method, _dummy(case.path)) for case in CASES if case.covers]
    for case in ASYNC_CASES:
        calls += [(case.name, "POST", _dummy(case.start)), (case.name, "GET", _dummy(case.get))]
    return calls


def _served():
    return ROUTES + ENTITY_WRITE_ROUTES + COLUMN_ROUTES + TABLE_ROUTES + DOWNLOAD_LIST_ROUTES


def _key(route) -> Tuple[str, str]:
    return route.method, route.pattern.pattern


def test_every_served_route_has_a_case():
    """The routing tables' keys (method + pattern) equal the keys of the routes the cases call: a route without a
    case, or a case the emulator does not route, fails here (issue 30 item 1: /entity/id, /entity/child)."""
    covered, unrouted = set(), []
    for name, method, path in _calls():
        route = next((r for r in _served() if r.method == method and r.pattern.match(path)), None)
        if route is None:
            unrouted.append(f"{name}: {method} {path}")
        else:
            covered.add(_key(route))
    uncovered = sorted(f"{method} {pattern}" for method, pattern in {_key(r) for r in _served()} - covered)
    assert not uncovered and not unrouted, (
        f"served without a conformance case: {uncovered}; cases the emulator does not route: {unrouted}"
    )


def test_every_case_calls_a_synapse_endpoint():
    strays = [f"{name}: {method} {path}" for name, method, path in _calls() if endpoint_for(method, path) is None]
    assert not strays, "cases outside synapse_model.ENDPOINTS: " + "; ".join(strays)


def test_every_synapse_endpoint_is_served_and_called():
    """Each endpoint of synapse_model is routed by the emulator and called by a case (issue 30 item 1)."""
    called = {endpoint_for(method, path).key for _, method, path in _calls() if endpoint_for(method, path)}
    unserved = [
        f"{e.method} {e.template}"
        for e in ENDPOINTS
        if not any(r.method == e.method and r.pattern.match(sample_path(e)) for r in _served())
    ]
    uncalled = [f"{e.method} {e.template}" for e in ENDPOINTS if e.key not in called]
    assert not unserved and not uncalled, f"not served: {unserved}; no case: {uncalled}"


def test_the_cases_check_models():
    """Sanity of the table: every status a case expects is one its endpoint declares or an error."""
    for case in CASES:
        endpoint = endpoint_for(case.method, _dummy(case.path))
        if endpoint is not None and case.status < 400:
            assert case.status in endpoint.answers, case.name
