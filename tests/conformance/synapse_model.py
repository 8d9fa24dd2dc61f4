"""Facts about Synapse's REST model, written for this suite: for each model the emulator answers, its fields and their
JSON types, the fields Synapse always sets, enum values and the exact ``concreteType``; and the endpoints the emulator
serves, with the statuses and models Synapse's controllers declare.

Each fact names where it comes from in Sage-Bionetworks/Synapse-Repository-Services: ``# schema: X.json`` is
``lib/lib-auto-generated/src/main/resources/schema/org/sagebionetworks/repo/model/X.json`` (read "implements"/"extends"
and ``$ref``: the fields of an interface are listed once and merged into every model that implements it); other paths
are given in full. "Required" here means what Synapse always writes: a schema's ``"required": true`` or the code that
fills the object (named in the comment).

Type expressions of a field: ``string``, ``integer``, ``number``, ``boolean``, ``date-time`` (a string such as
``2024-01-01T00:00:00.000Z``), ``object`` (any JSON object, not looked into), ``enum:Name`` (a string of ``ENUMS``),
a model name (``EntityHeader``), ``[T]`` (a list of T), ``{T}`` (a map from strings to T) and ``T?`` (T or null, only
where Synapse writes a null: the cells of a row).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional, Tuple

P = "org.sagebionetworks.repo.model."
DOWNLOAD_PKG = P + "download."
CONTROLLERS = "services/repository/src/main/java/org/sagebionetworks/repo/web/controller/"


@dataclass(frozen=True)
class Model:
    """One model: ``fields`` maps each field it may have to its type expression; ``required`` are always written;
    a ``concrete_type`` must be the value of ``concreteType`` (and is then required); an interface lists the models a
    value may be (``variants``), chosen by its ``concreteType``."""

    name: str
    source: str
    fields: Mapping[str, str] = field(default_factory=dict)
    required: Tuple[str, ...] = ()
    concrete_type: Optional[str] = None
    variants: Tuple[str, ...] = ()


def _merge(*parts: Mapping[str, str], **more: str) -> Dict[str, str]:
    merged: Dict[str, str] = {}
    for part in parts:
        merged.update(part)
    merged.update(more)
    return merged


# --- enums --------------------------------------------------------------------------------------------------------
ENUMS: Dict[str, Tuple[str, ...]] = {
    # schema: EntityType.json
    "EntityType": (
        "project",
        "folder",
        "file",
        "table",
        "link",
        "entityview",
        "dockerrepo",
        "submissionview",
        "dataset",
        "datasetcollection",
        "materializedview",
        "virtualtable",
    ),
    # EntityHeader.type: EntityTypeUtils.getEntityTypeClassName (NodeDAOImpl ENTITY_HEADER_ROWMAPPER), the classes of
    # lib/lib-shared-models/src/main/java/org/sagebionetworks/repo/model/EntityTypeUtils.java
    "EntityClass": tuple(
        P + name
        for name in (
            "Project",
            "Folder",
            "FileEntity",
            "table.TableEntity",
            "Link",
            "table.EntityView",
            "docker.DockerRepository",
            "table.SubmissionView",
            "table.Dataset",
            "table.DatasetCollection",
            "table.MaterializedView",
            "table.VirtualTable",
        )
    ),
    # schema: annotation/v2/AnnotationsValueType.json
    "AnnotationsValueType": ("STRING", "DOUBLE", "LONG", "TIMESTAMP_MS", "BOOLEAN"),
    # schema: RestrictionLevel.json
    "RestrictionLevel": ("OPEN", "RESTRICTED_BY_TERMS_OF_USE", "CONTROLLED_BY_ACT"),
    # schema: file/FileHandleStatus.json
    "FileHandleStatus": ("AVAILABLE", "UNLINKED", "ARCHIVED"),
    # schema: file/FileResult.json (failureCode, enum FileResultFailureCode)
    "FileResultFailureCode": ("NOT_FOUND", "UNAUTHORIZED"),
    # schema: table/ColumnModelInterface.json (columnType, enum ColumnType)
    "ColumnType": (
        "STRING",
        "DOUBLE",
        "INTEGER",
        "BOOLEAN",
        "DATE",
        "FILEHANDLEID",
        "ENTITYID",
        "SUBMISSIONID",
        "EVALUATIONID",
        "LINK",
        "MEDIUMTEXT",
        "LARGETEXT",
        "USERID",
        "STRING_LIST",
        "INTEGER_LIST",
        "BOOLEAN_LIST",
        "DATE_LIST",
        "ENTITYID_LIST",
        "USERID_LIST",
        "JSON",
    ),
    # schema: table/FacetType.json
    "FacetType": ("enumeration", "range"),
    # schema: table/EntityView.json (type, enum ViewType)
    "ViewType": ("file", "project", "file_and_table"),
    # schema: asynch/AsynchronousJobStatus.json (jobState, enum AsynchJobState)
    "AsynchJobState": ("PROCESSING", "FAILED", "COMPLETE"),
    # schema: ErrorResponseCode.json
    "ErrorResponseCode": (
        "PASSWORD_RESET_VIA_EMAIL_REQUIRED",
        "USER_CERTIFICATION_REQUIRED",
        "INVALID_TABLE_QUERY_FACET_COLUMN_REQUEST",
        "OAUTH_CLIENT_NOT_VERIFIED",
        "TWO_FA_REQUIRED",
        "UNSUPPORTED_WEBHOOK_DOMAIN",
    ),
    # schema: ACCESS_TYPE.json (the ones an entity ACL uses)
    "ACCESS_TYPE": (
        "CREATE",
        "READ",
        "UPDATE",
        "DELETE",
        "CHANGE_PERMISSIONS",
        "DOWNLOAD",
        "UPLOAD",
        "PARTICIPATE",
        "SUBMIT",
        "READ_PRIVATE_SUBMISSION",
        "UPDATE_SUBMISSION",
        "DELETE_SUBMISSION",
        "TEAM_MEMBERSHIP_UPDATE",
        "SEND_MESSAGE",
        "CHANGE_SETTINGS",
        "MODERATE",
        "REVIEW_SUBMISSIONS",
        "EXEMPTION_ELIGIBLE",
    ),
}

# --- field sets of interfaces (merged into the models that implement them) ---------------------------------------
# schema: Entity.json (interface)
ENTITY = {
    "name": "string",
    "description": "string",
    "id": "string",
    "etag": "string",
    "createdOn": "date-time",
    "modifiedOn": "date-time",
    "createdBy": "string",
    "modifiedBy": "string",
    "parentId": "string",
    "concreteType": "string",
}
#: every entity read from the repository has these (the node's columns: NodeDAOImpl + NodeTranslationUtils)
ENTITY_REQUIRED = (
    "name",
    "id",
    "etag",
    "createdOn",
    "modifiedOn",
    "createdBy",
    "modifiedBy",
    "parentId",
    "concreteType",
)
# schema: Versionable.json + VersionableEntity.json (implements Entity, Versionable)
VERSIONABLE = _merge(
    ENTITY, versionNumber="integer", versionLabel="string", versionComment="string", isLatestVersion="boolean"
)
VERSIONABLE_REQUIRED = ENTITY_REQUIRED + ("versionNumber", "versionLabel", "isLatestVersion")
# schema: table/Table.json (implements VersionableEntity); table/View.json adds nothing
TABLE = _merge(VERSIONABLE, columnIds="[string]", isSearchEnabled="boolean")
# schema: table/EntityRefCollectionView.json (implements View)
ENTITY_REF_COLLECTION = _merge(TABLE, items="[EntityRef]")
# schema: file/FileHandle.json (interface)
FILE_HANDLE = {
    "id": "string",
    "etag": "string",
    "createdBy": "string",
    "createdOn": "date-time",
    "modifiedOn": "date-time",
    "concreteType": "string",
    "contentType": "string",
    "contentMd5": "string",
    "fileName": "string",
    "storageLocationId": "integer",
    "contentSize": "integer",
    "status": "enum:FileHandleStatus",
}
FILE_HANDLE_REQUIRED = ("id", "etag", "createdBy", "createdOn", "concreteType", "fileName")
# schema: table/ColumnModelInterface.json (interface)
COLUMN_MODEL_INTERFACE = {"name": "string", "columnType": "enum:ColumnType", "facetType": "enum:FacetType"}
# schema: table/Query.json (DownloadFromTableRequest "extends" it)
QUERY = {
    "sql": "string",
    "additionalFilters": "[object]",
    "selectedFacets": "[object]",
    "includeEntityEtag": "boolean",
    "selectFileColumn": "integer",
    "selectFileVersionColumn": "integer",
    "offset": "integer",
    "limit": "integer",
    "sort": "[object]",
}
TABLE_PKG = P + "table."
# schema: auth/UserEntityPermissions.json
USER_ENTITY_PERMISSIONS = _merge(
    {
        name: "boolean"
        for name in (
            "canView",
            "canEdit",
            "canMove",
            "canAddChild",
            "canCertifiedUserEdit",
            "canCertifiedUserAddChild",
            "isCertifiedUser",
            "canChangePermissions",
            "canChangeSettings",
            "canDelete",
            "canDownload",
            "canUpload",
            "canEnableInheritance",
            "canPublicRead",
            "canModerate",
            "isCertificationRequired",
            "isEntityOpenData",
            "isDataContributor",
        )
    },
    ownerPrincipalId="integer",
)
# schema: table/FacetColumnResult.json (interface)
FACET_COLUMN_RESULT = {
    "concreteType": "string",
    "columnName": "string",
    "facetType": "enum:FacetType",
    "jsonPath": "string",
}


def _models(*models: Model) -> Dict[str, Model]:
    return {model.name: model for model in models}


MODELS: Dict[str, Model] = _models(
    # --- entities ---------------------------------------------------------------------------------------------------
    Model(
        "EntityHeader",
        "schema: EntityHeader.json; all set by lib/jdomodels/src/main/java/org/sagebionetworks/"
        "repo/model/dbo/dao/NodeDAOImpl.java ENTITY_HEADER_ROWMAPPER (children, header batch, /type)",
        {
            "name": "string",
            "id": "string",
            "type": "enum:EntityClass",
            "versionNumber": "integer",
            "versionLabel": "string",
            "isLatestVersion": "boolean",
            "benefactorId": "integer",
            "createdOn": "date-time",
            "modifiedOn": "date-time",
            "createdBy": "string",
            "modifiedBy": "string",
        },
        required=(
            "name",
            "id",
            "type",
            "versionNumber",
            "versionLabel",
            "isLatestVersion",
            "benefactorId",
            "createdOn",
            "modifiedOn",
            "createdBy",
            "modifiedBy",
        ),
    ),
    Model(
        "PathEntityHeader",
        "schema: EntityHeader.json, as a path item: only name, id and type "
        "(lib/models/src/main/java/org/sagebionetworks/repo/model/entity/NameIdType.java toEntityHeader, "
        "used by NodeManagerImpl.getNodePath)",
        {"name": "string", "id": "string", "type": "enum:EntityClass"},
        required=("name", "id", "type"),
    ),
    Model("EntityPath", "schema: EntityPath.json", {"path": "[PathEntityHeader]"}, required=("path",)),
    Model(
        "PaginatedEntityHeaders",
        "lib/lib-shared-models/src/main/java/org/sagebionetworks/reflection/model/"
        "PaginatedResults.java of EntityHeader",
        {"results": "[EntityHeader]", "totalNumberOfResults": "integer"},
        required=("results", "totalNumberOfResults"),
    ),
    Model(
        "EntityChildrenResponse",
        "schema: EntityChildrenResponse.json",
        {
            "page": "[EntityHeader]",
            "nextPageToken": "string",
            "totalChildCount": "integer",
            "sumFileSizesBytes": "integer",
        },
        required=("page",),
    ),
    Model("EntityId", "schema: EntityId.json", {"id": "string"}, required=("id",)),
    Model(
        "Entity",
        "schema: Entity.json (interface; the concrete models below)",
        variants=(
            "Project",
            "Folder",
            "FileEntity",
            "Link",
            "Dataset",
            "DatasetCollection",
            "EntityView",
            "TableEntity",
        ),
    ),
    Model(
        "Project",
        "schema: Project.json (implements Entity)",
        _merge(ENTITY, alias="string"),
        ENTITY_REQUIRED,
        P + "Project",
    ),
    Model("Folder", "schema: Folder.json (implements Entity)", ENTITY, ENTITY_REQUIRED, P + "Folder"),
    Model(
        "FileEntity",
        "schema: FileEntity.json (implements VersionableEntity)",
        _merge(VERSIONABLE, dataFileHandleId="string", fileNameOverride="string"),
        VERSIONABLE_REQUIRED + ("dataFileHandleId",),
        P + "FileEntity",
    ),
    Model(
        "Link",
        "schema: Link.json (implements Entity)",
        _merge(ENTITY, linksTo="Reference", linksToClassName="string"),
        ENTITY_REQUIRED + ("linksTo",),
        P + "Link",
    ),
    Model(
        "Reference",
        "schema: Reference.json",
        {"targetId": "string", "targetVersionNumber": "integer"},
        required=("targetId",),
    ),
    Model(
        "EntityRef",
        "schema: EntityRef.json",
        {"entityId": "string", "versionNumber": "integer"},
        required=("entityId", "versionNumber"),
    ),
    Model(
        "Dataset",
        "schema: table/Dataset.json (implements EntityRefCollectionView -> View -> Table)",
        _merge(ENTITY_REF_COLLECTION, size="integer", checksum="string", count="integer"),
        VERSIONABLE_REQUIRED,
        TABLE_PKG + "Dataset",
    ),
    Model(
        "DatasetCollection",
        "schema: table/DatasetCollection.json (implements EntityRefCollectionView)",
        ENTITY_REF_COLLECTION,
        VERSIONABLE_REQUIRED,
        TABLE_PKG + "DatasetCollection",
    ),
    Model(
        "EntityView",
        "schema: table/EntityView.json (implements View, HasViewTypeMask)",
        _merge(TABLE, viewTypeMask="integer", type="enum:ViewType", scopeIds="[string]"),
        VERSIONABLE_REQUIRED,
        TABLE_PKG + "EntityView",
    ),
    Model(
        "TableEntity",
        "schema: table/TableEntity.json (implements Table)",
        TABLE,
        VERSIONABLE_REQUIRED,
        TABLE_PKG + "TableEntity",
    ),
    # --- annotations, versions -------------------------------------------------------------------------------------
    Model(
        "Annotations",
        "schema: annotation/v2/Annotations.json",
        {"id": "string", "etag": "string", "annotations": "{AnnotationsValue}"},
        required=("id", "etag", "annotations"),
    ),
    Model(
        "AnnotationsValue",
        'schema: annotation/v2/AnnotationsValue.json (both "required": true)',
        {"type": "enum:AnnotationsValueType", "value": "[string]"},
        required=("type", "value"),
    ),
    Model(
        "VersionInfo",
        "schema: VersionInfo.json; set by NodeDAOImpl.getVersionsOfEntity's row mapper (contentMd5, "
        "contentSize and versionComment only when recorded)",
        {
            "id": "string",
            "versionNumber": "integer",
            "versionLabel": "string",
            "versionComment": "string",
            "isLatestVersion": "boolean",
            "modifiedBy": "string",
            "contentSize": "string",
            "contentMd5": "string",
            "modifiedByPrincipalId": "string",
            "modifiedOn": "date-time",
        },
        required=(
            "id",
            "versionNumber",
            "versionLabel",
            "isLatestVersion",
            "modifiedBy",
            "modifiedByPrincipalId",
            "modifiedOn",
        ),
    ),
    Model(
        "PaginatedVersionInfo",
        "PaginatedResults.java of VersionInfo (EntityController.getAllVersionsOfEntity)",
        {"results": "[VersionInfo]", "totalNumberOfResults": "integer"},
        required=("results", "totalNumberOfResults"),
    ),
    # --- permissions, restrictions, ACLs ---------------------------------------------------------------------------
    Model(
        "RestrictionInformationResponse",
        "schema: RestrictionInformationResponse.json; every field set by "
        "services/repository-managers/src/main/java/org/sagebionetworks/repo/manager/dataaccess/"
        "RestrictionInformationManagerImpl.java (restrictionDetails [] when none)",
        {
            "objectId": "integer",
            "restrictionLevel": "enum:RestrictionLevel",
            "hasUnmetAccessRequirement": "boolean",
            "userEntityPermissions": "UserEntityPermissions",
            "restrictionDetails": "[RestrictionFulfillment]",
        },
        required=(
            "objectId",
            "restrictionLevel",
            "hasUnmetAccessRequirement",
            "userEntityPermissions",
            "restrictionDetails",
        ),
    ),
    Model(
        "RestrictionFulfillment",
        "schema: RestrictionFulfillment.json",
        {"accessRequirementId": "integer", "isApproved": "boolean", "isMet": "boolean", "isExempt": "boolean"},
    ),
    Model(
        "UserEntityPermissions",
        "schema: auth/UserEntityPermissions.json; every field set by "
        "services/repository-managers/src/main/java/org/sagebionetworks/repo/manager/entity/"
        "EntityAuthorizationUtils.java getUserPermissionsForEntity",
        USER_ENTITY_PERMISSIONS,
        required=tuple(USER_ENTITY_PERMISSIONS),
    ),
    Model(
        "AccessControlList",
        "schema: AccessControlList.json",
        {
            "id": "string",
            "createdBy": "string",
            "creationDate": "date-time",
            "modifiedBy": "string",
            "modifiedOn": "date-time",
            "etag": "string",
            "resourceAccess": "[ResourceAccess]",
        },
        required=("id", "etag", "resourceAccess"),
    ),
    Model(
        "ResourceAccess",
        "schema: ResourceAccess.json",
        {"principalId": "integer", "accessType": "[enum:ACCESS_TYPE]"},
        required=("principalId", "accessType"),
    ),
    # --- bundle -----------------------------------------------------------------------------------------------------
    Model(
        "EntityBundle",
        "schema: entitybundle/v2/EntityBundle.json (only the parts asked for are set)",
        {
            "entity": "Entity",
            "entityType": "enum:EntityType",
            "annotations": "Annotations",
            "permissions": "UserEntityPermissions",
            "path": "EntityPath",
            "hasChildren": "boolean",
            "accessControlList": "AccessControlList",
            "fileHandles": "[FileHandle]",
            "tableBundle": "object",
            "rootWikiId": "string",
            "benefactorAcl": "AccessControlList",
            "doiAssociation": "object",
            "fileName": "string",
            "threadCount": "integer",
            "restrictionInformation": "RestrictionInformationResponse",
            "activity": "object",
        },
    ),
    # --- file handles -----------------------------------------------------------------------------------------------
    Model("FileHandle", "schema: file/FileHandle.json (interface)", variants=("S3FileHandle", "ExternalFileHandle")),
    Model(
        "S3FileHandle",
        "schema: file/S3FileHandle.json (implements CloudProviderFileHandleInterface -> FileHandle)",
        _merge(FILE_HANDLE, bucketName="string", key="string", previewId="string", isPreview="boolean"),
        FILE_HANDLE_REQUIRED + ("bucketName", "key"),
        P + "file.S3FileHandle",
    ),
    Model(
        "ExternalFileHandle",
        "schema: file/ExternalFileHandle.json (implements ExternalFileHandleInterface -> FileHandle)",
        _merge(FILE_HANDLE, externalURL="string"),
        FILE_HANDLE_REQUIRED + ("externalURL",),
        P + "file.ExternalFileHandle",
    ),
    Model(
        "BatchFileResult",
        "schema: file/BatchFileResult.json",
        {"requestedFiles": "[FileResult]"},
        required=("requestedFiles",),
    ),
    Model(
        "FileResult",
        "schema: file/FileResult.json",
        {
            "fileHandleId": "string",
            "fileHandle": "FileHandle",
            "preSignedURL": "string",
            "previewPreSignedURL": "string",
            "failureCode": "enum:FileResultFailureCode",
        },
        required=("fileHandleId",),
    ),
    # --- tables -----------------------------------------------------------------------------------------------------
    Model(
        "ColumnModel",
        "schema: table/ColumnModel.json (implements ColumnModelInterface; no concreteType)",
        _merge(
            COLUMN_MODEL_INTERFACE,
            id="string",
            defaultValue="string",
            maximumSize="integer",
            maximumListLength="integer",
            enumValues="[string]",
            jsonSubColumns="[JsonSubColumnModel]",
        ),
        required=("id", "name", "columnType"),
    ),
    Model(
        "ColumnModelList",
        "lib/lib-shared-models/src/main/java/org/sagebionetworks/repo/model/ListWrapper.java of ColumnModel "
        "(writeToJSONObject: concreteType is the class of the items; TableController.createColumnModels, "
        "getDefaultColumnsForViewType)",
        {"concreteType": "string", "list": "[ColumnModel]"},
        required=("concreteType", "list"),
        concrete_type=TABLE_PKG + "ColumnModel",
    ),
    Model(
        "SuggestedColumnModel",
        "schema: table/ColumnModel.json as lib/lib-table-cluster/src/main/java/org/sagebionetworks/table/cluster/"
        "TableIndexDAOImpl.java expandFromAggregation makes it: no id (not stored)",
        _merge(
            COLUMN_MODEL_INTERFACE,
            id="string",
            defaultValue="string",
            maximumSize="integer",
            maximumListLength="integer",
            enumValues="[string]",
            jsonSubColumns="[JsonSubColumnModel]",
        ),
        required=("name", "columnType"),
    ),
    Model(
        "TableUpdateTransactionRequest",
        "schema: table/TableUpdateTransactionRequest.json (implements AsynchronousRequestBody, HasEntityId); its "
        "changes here: TableSchemaChangeRequest.json",
        {
            "concreteType": "string",
            "entityId": "string",
            "changes": "[object]",
            "createSnapshot": "boolean",
            "snapshotOptions": "object",
        },
        concrete_type=TABLE_PKG + "TableUpdateTransactionRequest",
    ),
    Model(
        "TableUpdateTransactionResponse",
        "schema: table/TableUpdateTransactionResponse.json (implements AsynchronousResponseBody)",
        {"concreteType": "string", "results": "[TableSchemaChangeResponse]", "snapshotVersionNumber": "integer"},
        concrete_type=TABLE_PKG + "TableUpdateTransactionResponse",
    ),
    Model(
        "TableSchemaChangeResponse",
        "schema: table/TableSchemaChangeResponse.json (implements TableUpdateResponse)",
        {"concreteType": "string", "schema": "[ColumnModel]"},
        concrete_type=TABLE_PKG + "TableSchemaChangeResponse",
    ),
    Model(
        "ViewScope",
        "schema: table/ViewScope.json (implements HasViewTypeMask)",
        {"scope": "[string]", "viewEntityType": "string", "viewTypeMask": "integer", "viewType": "enum:ViewType"},
    ),
    Model(
        "ViewColumnModelRequest",
        "schema: table/ViewColumnModelRequest.json (implements AsynchronousRequestBody)",
        {
            "concreteType": "string",
            "viewScope": "ViewScope",
            "includeDerivedAnnotations": "boolean",
            "nextPageToken": "string",
        },
        required=("viewScope",),
        concrete_type=TABLE_PKG + "ViewColumnModelRequest",
    ),
    Model(
        "ViewColumnModelResponse",
        "schema: table/ViewColumnModelResponse.json (implements AsynchronousResponseBody)",
        {"concreteType": "string", "results": "[SuggestedColumnModel]", "nextPageToken": "string"},
        required=("results",),
        concrete_type=TABLE_PKG + "ViewColumnModelResponse",
    ),
    Model(
        "JsonSubColumnModel", "schema: table/JsonSubColumnModel.json", _merge(COLUMN_MODEL_INTERFACE, jsonPath="string")
    ),
    Model(
        "PaginatedColumnModels",
        "schema: table/PaginatedColumnModels.json",
        {"results": "[ColumnModel]", "totalNumberOfResults": "integer"},
        required=("results", "totalNumberOfResults"),
    ),
    Model(
        "SelectColumn",
        "schema: table/SelectColumn.json",
        {"name": "string", "columnType": "enum:ColumnType", "id": "string"},
        required=("name", "columnType"),
    ),
    Model(
        "Row",
        "schema: table/Row.json (values: strings; a cell without a value is a null there, the one null Synapse writes)",
        {"rowId": "integer", "versionNumber": "integer", "etag": "string", "values": "[string?]"},
        required=("values",),
    ),
    Model(
        "RowSet",
        "schema: table/RowSet.json (implements AppendableRowSet)",
        {"concreteType": "string", "tableId": "string", "etag": "string", "headers": "[SelectColumn]", "rows": "[Row]"},
        required=("tableId", "headers", "rows"),
        concrete_type=TABLE_PKG + "RowSet",
    ),
    Model(
        "QueryNextPageToken",
        "schema: table/QueryNextPageToken.json (implements CacheableRequestBody, HasEntityId)",
        {"concreteType": "string", "entityId": "string", "token": "string"},
        required=("token",),
        concrete_type=TABLE_PKG + "QueryNextPageToken",
    ),
    Model(
        "QueryResult",
        "schema: table/QueryResult.json (implements AsynchronousResponseBody)",
        {"concreteType": "string", "queryResults": "RowSet", "nextPageToken": "QueryNextPageToken"},
        required=("queryResults",),
        concrete_type=TABLE_PKG + "QueryResult",
    ),
    Model(
        "QueryResultBundle",
        "schema: table/QueryResultBundle.json (implements AsynchronousResponseBody)",
        {
            "concreteType": "string",
            "queryResult": "QueryResult",
            "queryCount": "integer",
            "selectColumns": "[SelectColumn]",
            "maxRowsPerPage": "integer",
            "columnModels": "[ColumnModel]",
            "facets": "[FacetColumnResult]",
            "sumFileSizes": "SumFileSizes",
            "lastUpdatedOn": "date-time",
            "combinedSql": "string",
            "actionsRequired": "[ActionRequiredCount]",
        },
        concrete_type=TABLE_PKG + "QueryResultBundle",
    ),
    Model(
        "FacetColumnResult",
        "schema: table/FacetColumnResult.json (interface; one per faceted column: "
        "services/repository-managers/src/main/java/org/sagebionetworks/repo/manager/table/FacetModel.java)",
        variants=("FacetColumnResultValues", "FacetColumnResultRange"),
    ),
    Model(
        "FacetColumnResultValues",
        "schema: table/FacetColumnResultValues.json (implements FacetColumnResult); "
        "all but jsonPath set by .../repo/manager/table/FacetTransformerValueCounts.java translateToResult",
        _merge(FACET_COLUMN_RESULT, facetValues="[FacetColumnResultValueCount]"),
        required=("columnName", "facetType", "facetValues"),
        concrete_type=TABLE_PKG + "FacetColumnResultValues",
    ),
    Model(
        "FacetColumnResultValueCount",
        "schema: table/FacetColumnResultValueCount.json; all three set by "
        "FacetTransformerValueCounts.translateToResult",
        {"value": "string", "count": "integer", "isSelected": "boolean"},
        required=("value", "count", "isSelected"),
    ),
    Model(
        "FacetColumnResultRange",
        "schema: table/FacetColumnResultRange.json (implements FacetColumnResult); "
        "columnMin/columnMax are MIN/MAX of the column (absent when no row has a value), selectedMin/selectedMax "
        "the request's (.../repo/manager/table/FacetTransformerRange.java translateToResult)",
        _merge(FACET_COLUMN_RESULT, columnMin="string", columnMax="string", selectedMin="string", selectedMax="string"),
        required=("columnName", "facetType"),
        concrete_type=TABLE_PKG + "FacetColumnResultRange",
    ),
    Model(
        "SumFileSizes",
        "schema: table/SumFileSizes.json; both set by services/repository-managers/src/main/java/"
        "org/sagebionetworks/repo/manager/table/TableQueryManagerImpl.java runSumFileSize",
        {"sumFileSizesBytes": "integer", "greaterThan": "boolean"},
        required=("sumFileSizesBytes", "greaterThan"),
    ),
    Model("ActionRequiredCount", "schema: download/ActionRequiredCount.json", {"action": "Action", "count": "integer"}),
    # --- the download list (DownloadListDAOImpl RESULT_MAPPER and STATS_MAPPER set every field) -------------------
    Model("Action", "schema: download/Action.json (interface)", variants=("MeetAccessRequirement", "RequestDownload")),
    Model(
        "MeetAccessRequirement",
        "schema: download/MeetAccessRequirement.json (implements Action)",
        {"concreteType": "string", "accessRequirementId": "integer"},
        required=("accessRequirementId",),
        concrete_type=DOWNLOAD_PKG + "MeetAccessRequirement",
    ),
    Model(
        "RequestDownload",
        "schema: download/RequestDownload.json (implements Action)",
        {"concreteType": "string", "benefactorId": "integer"},
        required=("benefactorId",),
        concrete_type=DOWNLOAD_PKG + "RequestDownload",
    ),
    Model(
        "AddBatchOfFilesToDownloadListResponse",
        "schema: download/AddBatchOfFilesToDownloadListResponse.json",
        {"numberOfFilesAdded": "integer"},
        required=("numberOfFilesAdded",),
    ),
    Model(
        "RemoveBatchOfFilesFromDownloadListResponse",
        "schema: download/RemoveBatchOfFilesFromDownloadListResponse.json",
        {"numberOfFilesRemoved": "integer"},
        required=("numberOfFilesRemoved",),
    ),
    Model(
        "DownloadListItemResult",
        "schema: download/DownloadListItemResult.json (extends DownloadListItem)",
        {
            "fileEntityId": "string",
            "versionNumber": "integer",
            "fileName": "string",
            "addedOn": "date-time",
            "projectId": "string",
            "projectName": "string",
            "createdBy": "string",
            "createdOn": "date-time",
            "fileSizeBytes": "integer",
            "isEligibleForPackaging": "boolean",
            "fileHandleId": "string",
        },
        required=(
            "fileEntityId",
            "fileName",
            "addedOn",
            "projectId",
            "projectName",
            "createdBy",
            "createdOn",
            "fileSizeBytes",
            "isEligibleForPackaging",
            "fileHandleId",
        ),
    ),
    Model(
        "QueryResponseDetails",
        "schema: download/QueryResponseDetails.json (interface)",
        variants=("AvailableFilesResponse", "ActionRequiredResponse", "FilesStatisticsResponse"),
    ),
    Model(
        "AvailableFilesResponse",
        "schema: download/AvailableFilesResponse.json (implements QueryResponseDetails)",
        {"concreteType": "string", "page": "[DownloadListItemResult]", "nextPageToken": "string"},
        required=("page",),
        concrete_type=DOWNLOAD_PKG + "AvailableFilesResponse",
    ),
    Model(
        "ActionRequiredResponse",
        "schema: download/ActionRequiredResponse.json (implements QueryResponseDetails)",
        {"concreteType": "string", "page": "[ActionRequiredCount]", "nextPageToken": "string"},
        required=("page",),
        concrete_type=DOWNLOAD_PKG + "ActionRequiredResponse",
    ),
    Model(
        "FilesStatisticsResponse",
        "schema: download/FilesStatisticsResponse.json (implements QueryResponseDetails)",
        {
            "concreteType": "string",
            "totalNumberOfFiles": "integer",
            "numberOfFilesAvailableForDownload": "integer",
            "numberOfFilesAvailableForDownloadAndEligibleForPackaging": "integer",
            "numberOfFilesRequiringAction": "integer",
            "sumOfFileSizesAvailableForDownload": "integer",
        },
        required=(
            "totalNumberOfFiles",
            "numberOfFilesAvailableForDownload",
            "numberOfFilesAvailableForDownloadAndEligibleForPackaging",
            "numberOfFilesRequiringAction",
            "sumOfFileSizesAvailableForDownload",
        ),
        concrete_type=DOWNLOAD_PKG + "FilesStatisticsResponse",
    ),
    Model(
        "DownloadListQueryResponse",
        "schema: download/DownloadListQueryResponse.json (implements AsynchronousResponseBody)",
        {"concreteType": "string", "responseDetails": "QueryResponseDetails"},
        required=("responseDetails",),
        concrete_type=DOWNLOAD_PKG + "DownloadListQueryResponse",
    ),
    Model(
        "AddToDownloadListResponse",
        "schema: download/AddToDownloadListResponse.json (implements AsynchronousResponseBody)",
        {"concreteType": "string", "numberOfFilesAdded": "integer"},
        required=("numberOfFilesAdded",),
        concrete_type=DOWNLOAD_PKG + "AddToDownloadListResponse",
    ),
    Model(
        "DownloadListManifestResponse",
        "schema: download/DownloadListManifestResponse.json (implements AsynchronousResponseBody)",
        {"concreteType": "string", "resultFileHandleId": "string"},
        required=("resultFileHandleId",),
        concrete_type=DOWNLOAD_PKG + "DownloadListManifestResponse",
    ),
    Model(
        "DownloadFromTableResult",
        "schema: table/DownloadFromTableResult.json (implements "
        "AsynchronousResponseBody); etag: the RowSet's (TableQueryManagerImpl.runQueryDownloadAsStream), which "
        'queryAfterAuthorization sets to the table status\'s lastTableChangeEtag ("DEFAULT" for a view)',
        {
            "concreteType": "string",
            "resultsFileHandleId": "string",
            "tableId": "string",
            "etag": "string",
            "headers": "[SelectColumn]",
        },
        required=("resultsFileHandleId", "tableId", "etag", "headers"),
        concrete_type=TABLE_PKG + "DownloadFromTableResult",
    ),
    Model(
        "QueryBundleRequest",
        "schema: table/QueryBundleRequest.json (implements CacheableRequestBody, HasEntityId)",
        {"concreteType": "string", "entityId": "string", "query": "Query", "partMask": "integer"},
        required=("query",),
        concrete_type=TABLE_PKG + "QueryBundleRequest",
    ),
    Model("Query", "schema: table/Query.json", QUERY, required=("sql",)),
    Model(
        "DownloadFromTableRequest",
        "schema: table/DownloadFromTableRequest.json (extends Query; implements CacheableRequestBody, HasEntityId)",
        _merge(
            QUERY,
            concreteType="string",
            entityId="string",
            writeHeader="boolean",
            includeRowIdAndRowVersion="boolean",
            csvTableDescriptor="object",
            fileName="string",
        ),
        required=("sql",),
        concrete_type=TABLE_PKG + "DownloadFromTableRequest",
    ),
    # --- asynchronous jobs ------------------------------------------------------------------------------------------
    Model("AsyncJobId", "schema: asynch/AsyncJobId.json", {"token": "string"}, required=("token",)),
    Model(
        "AsynchronousJobStatus",
        "schema: asynch/AsynchronousJobStatus.json; required: what "
        "lib/jdomodels/src/main/java/org/sagebionetworks/repo/model/dbo/asynch/AsynchJobStatusDAOImpl.java startJob "
        "sets; no callersContext: services/repository-managers/src/main/java/org/sagebionetworks/repo/manager/"
        "asynch/AsynchJobStatusManagerImpl.java getJobStatus nulls it before answering",
        {
            "jobState": "enum:AsynchJobState",
            "jobCanceling": "boolean",
            "requestBody": "AsynchronousRequestBody",
            "responseBody": "AsynchronousResponseBody",
            "etag": "string",
            "jobId": "string",
            "startedByUserId": "integer",
            "startedOn": "date-time",
            "changedOn": "date-time",
            "progressMessage": "string",
            "progressCurrent": "integer",
            "progressTotal": "integer",
            "exception": "string",
            "errorMessage": "string",
            "errorDetails": "string",
            "runtimeMS": "integer",
        },
        required=(
            "jobState",
            "jobCanceling",
            "requestBody",
            "etag",
            "jobId",
            "startedByUserId",
            "startedOn",
            "changedOn",
            "runtimeMS",
        ),
    ),
    Model(
        "AsynchronousRequestBody",
        "schema: asynch/AsynchronousRequestBody.json (interface)",
        variants=(
            "QueryBundleRequest",
            "QueryNextPageToken",
            "DownloadFromTableRequest",
            "DownloadListQueryRequest",
            "AddToDownloadListRequest",
            "DownloadListManifestRequest",
            "ViewColumnModelRequest",
            "TableUpdateTransactionRequest",
        ),
    ),
    Model(
        "DownloadListQueryRequest",
        "schema: download/DownloadListQueryRequest.json (implements AsynchronousRequestBody)",
        {"concreteType": "string", "requestDetails": "object"},
        concrete_type=DOWNLOAD_PKG + "DownloadListQueryRequest",
    ),
    Model(
        "AddToDownloadListRequest",
        "schema: download/AddToDownloadListRequest.json (implements AsynchronousRequestBody)",
        {"concreteType": "string", "parentId": "string", "query": "object", "useVersionNumber": "boolean"},
        concrete_type=DOWNLOAD_PKG + "AddToDownloadListRequest",
    ),
    Model(
        "DownloadListManifestRequest",
        "schema: download/DownloadListManifestRequest.json (implements AsynchronousRequestBody)",
        {"concreteType": "string", "csvTableDescriptor": "object"},
        concrete_type=DOWNLOAD_PKG + "DownloadListManifestRequest",
    ),
    Model(
        "AsynchronousResponseBody",
        "schema: asynch/AsynchronousResponseBody.json (interface)",
        variants=(
            "QueryResultBundle",
            "QueryResult",
            "DownloadFromTableResult",
            "DownloadListQueryResponse",
            "AddToDownloadListResponse",
            "DownloadListManifestResponse",
            "ViewColumnModelResponse",
            "TableUpdateTransactionResponse",
        ),
    ),
    # --- users, stack, errors ---------------------------------------------------------------------------------------
    Model(
        "UserProfile",
        "schema: UserProfile.json",
        _merge(
            {
                name: "string"
                for name in (
                    "ownerId",
                    "etag",
                    "firstName",
                    "lastName",
                    "email",
                    "userName",
                    "displayName",
                    "rStudioUrl",
                    "summary",
                    "position",
                    "location",
                    "industry",
                    "company",
                    "profilePicureFileHandleId",
                    "url",
                    "teamName",
                )
            },
            emails="[string]",
            openIds="[string]",
            notificationSettings="object",
            preferences="[object]",
            createdOn="date-time",
            twoFactorAuthEnabled="boolean",
        ),
        required=("ownerId", "userName"),
    ),
    Model(
        "SynapseVersionInfo",
        "schema: versionInfo/SynapseVersionInfo.json; both set by " + CONTROLLERS + "SynapseVersionInfoController.java",
        {"version": "string", "stackInstance": "string"},
        required=("version", "stackInstance"),
    ),
    Model(
        "ErrorResponse",
        "schema: ErrorResponse.json (implements BaseError); written by "
        + CONTROLLERS
        + "BaseControllerExceptionHandlerAdvice.java handleException",
        {"concreteType": "string", "reason": "string", "errorCode": "enum:ErrorResponseCode"},
        required=("reason",),
        concrete_type=P + "ErrorResponse",
    ),
    Model(
        "ThrottleError",
        "the 429 body, written as text by services/repository/src/main/java/org/sagebionetworks/"
        'repo/web/filter/throttle/ThrottleUtils.java setResponseError: exactly {"reason": ...} '
        "(UserConcurrentConnectionThrottler, UserRequestFrequencyThrottler, UserApiFrequencyThrottler)",
        {"reason": "string"},
        required=("reason",),
    ),
)

#: the etag Synapse gives every version of an entity but the current one (NodeConstants.ZERO_E_TAG, set by
#: lib/jdomodels/src/main/java/org/sagebionetworks/repo/model/dbo/persistence/NodeMapper.java), and the annotations
#: of a given version (NodeDAOImpl, PLFM-1420)
ZERO_ETAG = "00000000-0000-0000-0000-000000000000"


# --- endpoints ------------------------------------------------------------------------------------------------------
#: body markers of an answer that is not a JSON model
REDIRECT = "<redirect>"  # 307, a Location header, no body looked at
TEXT_URL = "<text url>"  # 200 text/plain: a URL
EMPTY = "<empty>"  # a void controller method: the status, no body


@dataclass(frozen=True)
class Endpoint:
    """A Synapse endpoint the emulator serves: ``template`` is the path with ``{placeholders}``; ``answers`` maps each
    status its controller declares for a success to the model of that answer; any 4xx/5xx is an ErrorResponse
    (a 429 from the throttle filter is a ThrottleError)."""

    method: str
    template: str
    answers: Mapping[int, str]
    source: str

    @property
    def key(self) -> Tuple[str, str]:
        return self.method, self.template


_ASYNC_GET = (
    "ACCEPTED 202 with the job's AsynchronousJobStatus while it runs (BaseControllerExceptionHandlerAdvice "
    "handleResultNotReadyException)"
)
ENDPOINTS: Tuple[Endpoint, ...] = (
    Endpoint("GET", "/repo/v1/version", {200: "SynapseVersionInfo"}, "SynapseVersionInfoController.getVersionInfo"),
    Endpoint("GET", "/repo/v1/userProfile", {200: "UserProfile"}, "UserProfileController.getMyOwnUserProfile"),
    Endpoint("POST", "/repo/v1/entity/children", {200: "EntityChildrenResponse"}, "EntityController.getChildren"),
    Endpoint(
        "POST",
        "/repo/v1/entity/header",
        {200: "PaginatedEntityHeaders"},
        "EntityController.getEntityVersionedTypeBatch",
    ),
    Endpoint("POST", "/repo/v1/entity/child", {200: "EntityId"}, "EntityController.lookupChild"),
    Endpoint(
        "POST",
        "/repo/v1/restrictionInformation",
        {200: "RestrictionInformationResponse"},
        "DataAccessController.getRestrictionInformation",
    ),
    Endpoint("GET", "/repo/v1/entity/{id}", {200: "Entity"}, "EntityController.getEntity"),
    Endpoint("GET", "/repo/v1/entity/{id}/version/{version}", {200: "Entity"}, "EntityController.getEntityForVersion"),
    Endpoint(
        "GET", "/repo/v1/entity/{id}/version", {200: "PaginatedVersionInfo"}, "EntityController.getAllVersionsOfEntity"
    ),
    Endpoint("GET", "/repo/v1/entity/{id}/type", {200: "EntityHeader"}, "EntityController.getEntityType"),
    Endpoint("GET", "/repo/v1/entity/{id}/path", {200: "EntityPath"}, "EntityController.getEntityPath"),
    Endpoint(
        "GET", "/repo/v1/entity/{id}/annotations2", {200: "Annotations"}, "EntityController.getEntityAnnotationsV2"
    ),
    Endpoint(
        "GET",
        "/repo/v1/entity/{id}/version/{version}/annotations2",
        {200: "Annotations"},
        "EntityController.getEntityAnnotationsV2ForVersion",
    ),
    Endpoint("GET", "/repo/v1/entity/{id}/generatedBy", {200: "object"}, "EntityController.getActivityForEntity"),
    Endpoint(
        "GET",
        "/repo/v1/entity/{id}/version/{version}/generatedBy",
        {200: "object"},
        "EntityController.getActivityForEntityVersion",
    ),
    Endpoint("POST", "/repo/v1/entity/{id}/bundle2", {200: "EntityBundle"}, "EntityBundleV2Controller.getEntityBundle"),
    Endpoint(
        "POST",
        "/repo/v1/entity/{id}/version/{version}/bundle2",
        {200: "EntityBundle"},
        "EntityBundleV2Controller.getEntityBundle (version)",
    ),
    Endpoint(
        "GET",
        "/repo/v1/entity/{id}/file",
        {307: REDIRECT, 200: TEXT_URL},
        "EntityController.fileRedirectURLForCurrentVersion (redirect=false: the URL as text)",
    ),
    Endpoint(
        "GET",
        "/repo/v1/entity/{id}/version/{version}/file",
        {307: REDIRECT, 200: TEXT_URL},
        "EntityController.fileRedirectURLForVersion",
    ),
    Endpoint(
        "POST",
        "/file/v1/fileHandle/batch",
        {201: "BatchFileResult"},
        "services/repository/src/main/java/org/sagebionetworks/file/controller/UploadController.java "
        "getFileHandleAndUrlBatch, @ResponseStatus(CREATED)",
    ),
    Endpoint(
        "GET", "/file/v1/file/{handle}", {307: REDIRECT, 200: TEXT_URL}, "UploadController.fileRedirectURLForAffiliate"
    ),
    Endpoint("POST", "/repo/v1/entity", {201: "Entity"}, "EntityController.createEntity, @ResponseStatus(CREATED)"),
    Endpoint(
        "POST",
        "/repo/v1/entity/bundle2/create",
        {201: "EntityBundle"},
        "EntityBundleV2Controller.createEntityBundle, @ResponseStatus(CREATED)",
    ),
    Endpoint(
        "POST",
        "/repo/v1/entity/{id}/table/transaction/async/start",
        {201: "AsyncJobId"},
        "TableController.updateTableAsyncStart, @ResponseStatus(CREATED)",
    ),
    Endpoint(
        "GET",
        "/repo/v1/entity/{id}/table/transaction/async/get/{token}",
        {201: "TableUpdateTransactionResponse", 202: "AsynchronousJobStatus"},
        "TableController.updateTableAsyncGet, @ResponseStatus(CREATED); " + _ASYNC_GET,
    ),
    Endpoint("PUT", "/repo/v1/entity/{id}", {200: "Entity"}, "EntityController.updateEntity, @ResponseStatus(OK)"),
    Endpoint(
        "DELETE",
        "/repo/v1/entity/{id}",
        {204: EMPTY},
        "EntityController.deleteEntity, @ResponseStatus(NO_CONTENT) (TrashManagerImpl.moveToTrash)",
    ),
    Endpoint(
        "PUT",
        "/repo/v1/entity/{id}/annotations2",
        {200: "Annotations"},
        "EntityController.updateEntityAnnotationsV2, @ResponseStatus(OK)",
    ),
    Endpoint(
        "POST",
        "/repo/v1/column/batch",
        {201: "ColumnModelList"},
        "TableController.createColumnModels, @ResponseStatus(CREATED)",
    ),
    Endpoint(
        "GET",
        "/repo/v1/column/tableview/defaults",
        {200: "ColumnModelList"},
        "TableController.getDefaultColumnsForViewType, @ResponseStatus(OK)",
    ),
    Endpoint(
        "POST",
        "/repo/v1/column/view/scope/async/start",
        {201: "AsyncJobId"},
        "TableController.getViewScopeColumnsAsyncStart, @ResponseStatus(CREATED)",
    ),
    Endpoint(
        "GET",
        "/repo/v1/column/view/scope/async/get/{token}",
        {201: "ViewColumnModelResponse", 202: "AsynchronousJobStatus"},
        "TableController.getViewScopeColumnsAsyncGet, @ResponseStatus(CREATED); " + _ASYNC_GET,
    ),
    Endpoint("GET", "/repo/v1/entity/{id}/column", {200: "PaginatedColumnModels"}, "TableController.getColumnForTable"),
    Endpoint("GET", "/repo/v1/column/{column}", {200: "ColumnModel"}, "TableController.getColumnModel"),
    Endpoint(
        "POST",
        "/repo/v1/entity/{id}/table/query/async/start",
        {201: "AsyncJobId"},
        "TableController.queryAsyncStart, @ResponseStatus(CREATED)",
    ),
    Endpoint(
        "GET",
        "/repo/v1/entity/{id}/table/query/async/get/{token}",
        {201: "QueryResultBundle", 202: "AsynchronousJobStatus"},
        "TableController.queryAsyncGet, @ResponseStatus(CREATED); " + _ASYNC_GET,
    ),
    Endpoint(
        "POST",
        "/repo/v1/entity/{id}/table/query/nextPage/async/start",
        {201: "AsyncJobId"},
        "TableController.queryNextPageAsyncStart, @ResponseStatus(CREATED)",
    ),
    Endpoint(
        "GET",
        "/repo/v1/entity/{id}/table/query/nextPage/async/get/{token}",
        {201: "QueryResult", 202: "AsynchronousJobStatus"},
        "TableController.queryNextPageAsyncGet, @ResponseStatus(CREATED); " + _ASYNC_GET,
    ),
    Endpoint(
        "POST",
        "/repo/v1/entity/{id}/table/download/csv/async/start",
        {201: "AsyncJobId"},
        "TableController.csvDownloadAsyncStart (entity), @ResponseStatus(CREATED)",
    ),
    Endpoint(
        "GET",
        "/repo/v1/entity/{id}/table/download/csv/async/get/{token}",
        {201: "DownloadFromTableResult", 202: "AsynchronousJobStatus"},
        "TableController.csvDownloadAsyncGet (entity), @ResponseStatus(CREATED); " + _ASYNC_GET,
    ),
    # --- the download list: services/repository/src/main/java/org/sagebionetworks/repo/web/controller/
    # DownloadListController.java; its jobs answer CREATED 201 as the table jobs do ----------------------------------
    Endpoint(
        "POST",
        "/repo/v1/download/list/add",
        {200: "AddBatchOfFilesToDownloadListResponse"},
        "DownloadListController.addBatchOfFilesToDownloadList, @ResponseStatus(OK)",
    ),
    Endpoint(
        "POST",
        "/repo/v1/download/list/remove",
        {200: "RemoveBatchOfFilesFromDownloadListResponse"},
        "DownloadListController.removeBatchOfFilesToDownloadList, @ResponseStatus(OK)",
    ),
    Endpoint(
        "DELETE",
        "/repo/v1/download/list",
        {200: EMPTY},
        "DownloadListController.clearDownloadList, @ResponseStatus(OK), a void method",
    ),
    Endpoint(
        "POST",
        "/repo/v1/download/list/query/async/start",
        {201: "AsyncJobId"},
        "DownloadListController.queryAsyncStart, @ResponseStatus(CREATED)",
    ),
    Endpoint(
        "GET",
        "/repo/v1/download/list/query/async/get/{token}",
        {201: "DownloadListQueryResponse", 202: "AsynchronousJobStatus"},
        "DownloadListController.getBulkFileDownloadResults, @ResponseStatus(CREATED); " + _ASYNC_GET,
    ),
    Endpoint(
        "POST",
        "/repo/v1/download/list/add/async/start",
        {201: "AsyncJobId"},
        "DownloadListController.startAddFileToDownloadList, @ResponseStatus(CREATED)",
    ),
    Endpoint(
        "GET",
        "/repo/v1/download/list/add/async/get/{token}",
        {201: "AddToDownloadListResponse", 202: "AsynchronousJobStatus"},
        "DownloadListController.getAddFileToDownloadListResults, @ResponseStatus(CREATED); " + _ASYNC_GET,
    ),
    Endpoint(
        "POST",
        "/repo/v1/download/list/manifest/async/start",
        {201: "AsyncJobId"},
        "DownloadListController (manifest/async/start), @ResponseStatus(CREATED) as its other jobs",
    ),
    Endpoint(
        "GET",
        "/repo/v1/download/list/manifest/async/get/{token}",
        {201: "DownloadListManifestResponse", 202: "AsynchronousJobStatus"},
        "DownloadListController (manifest/async/get), @ResponseStatus(CREATED) as its other jobs; " + _ASYNC_GET,
    ),
    # the creator's own handle (the manifest's, as synapseclient 4.14 reads it: api/file_services.py)
    Endpoint(
        "GET",
        "/file/v1/fileHandle/{handle}",
        {200: "FileHandle"},
        "UploadController (GET /fileHandle/{handleId}): the creator only, else 403",
    ),
    Endpoint(
        "GET",
        "/file/v1/fileHandle/{handle}/url",
        {307: REDIRECT, 200: TEXT_URL},
        "UploadController (GET /fileHandle/{handleId}/url, redirect=false: the URL as text): the creator only",
    ),
)
