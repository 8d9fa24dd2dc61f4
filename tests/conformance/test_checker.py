"""The checker itself: it flags each kind of problem, recurses, and passes what Synapse writes."""

from __future__ import annotations

import re

import pytest
from checker import check, check_exchange, endpoint_for, sample_path
from synapse_model import ENDPOINTS, ENUMS, MODELS, ZERO_ETAG

HEADER = {
    "name": "a.txt",
    "id": "syn2",
    "type": "org.sagebionetworks.repo.model.FileEntity",
    "versionNumber": 1,
    "versionLabel": "1",
    "isLatestVersion": True,
    "benefactorId": 1,
    "createdOn": "2024-01-01T00:00:00.000Z",
    "modifiedOn": "2024-01-01T00:00:00.000Z",
    "createdBy": "7",
    "modifiedBy": "7",
}
FILE = {
    "name": "a.txt",
    "id": "syn2",
    "etag": ZERO_ETAG,
    "createdOn": "2024-01-01T00:00:00.000Z",
    "modifiedOn": "2024-01-01T00:00:00.000Z",
    "createdBy": "7",
    "modifiedBy": "7",
    "parentId": "syn1",
    "concreteType": "org.sagebionetworks.repo.model.FileEntity",
    "versionNumber": 1,
    "versionLabel": "1",
    "isLatestVersion": True,
    "dataFileHandleId": "9",
}


def test_a_well_formed_value_has_no_problem():
    assert check("EntityHeader", HEADER) == []
    assert check("Entity", FILE) == []
    assert check("EntityChildrenResponse", {"page": [HEADER], "nextPageToken": "50a50"}) == []


def test_a_null_is_flagged_even_inside_an_object_field():
    assert check("EntityHeader", dict(HEADER, versionLabel=None)) == [
        "$.versionLabel: null (Synapse leaves a field out instead)"
    ]
    problems = check("EntityBundle", {"tableBundle": {"columnModels": None}})
    assert problems == ["$.tableBundle.columnModels: null (Synapse leaves a field out instead)"]


def test_a_null_cell_of_a_row_is_what_synapse_writes():
    assert check("Row", {"rowId": 1, "versionNumber": 1, "values": ["a", None]}) == []


def test_an_unknown_field_is_flagged():
    assert check("EntityId", {"id": "syn2", "name": "x"}) == ["$.name: not a field of EntityId"]


def test_a_wrong_type_is_flagged():
    assert check("EntityHeader", dict(HEADER, benefactorId="1")) == [
        '$.benefactorId: "1" is a string, expected integer'
    ]
    assert check("EntityHeader", dict(HEADER, versionNumber=True)) == [
        "$.versionNumber: true is a boolean, expected integer"
    ]
    assert check("EntityHeader", dict(HEADER, createdOn="yesterday")) == [
        '$.createdOn: "yesterday" is a string, expected date-time'
    ]
    assert check("EntityPath", {"path": {}}) == ["$.path: a object, expected a list"]


def test_an_unknown_enum_value_is_flagged():
    value = {"type": "TEXT", "value": ["x"]}
    assert check("AnnotationsValue", value) == ['$.type: "TEXT" is not a value of AnnotationsValueType']


def test_a_wrong_concrete_type_is_flagged():
    row_set = {
        "concreteType": "org.sagebionetworks.repo.model.table.QueryResult",
        "tableId": "syn3",
        "headers": [],
        "rows": [],
    }
    assert check("RowSet", row_set) == [
        "$.concreteType: 'org.sagebionetworks.repo.model.table.QueryResult', expected "
        "'org.sagebionetworks.repo.model.table.RowSet'"
    ]
    problems = check("Entity", dict(FILE, concreteType="org.sagebionetworks.repo.model.Thing"))
    assert len(problems) == 1 and problems[0].startswith(
        '$.concreteType: "org.sagebionetworks.repo.model.Thing" is not a Entity'
    )


def test_a_concrete_type_on_a_model_that_has_none_is_flagged():
    column = {
        "id": "1",
        "name": "c",
        "columnType": "STRING",
        "concreteType": "org.sagebionetworks.repo.model.table.ColumnModel",
    }
    assert check("ColumnModel", column) == ["$.concreteType: not a field of ColumnModel"]


def test_a_missing_required_field_is_flagged():
    header = dict(HEADER)
    del header["benefactorId"]
    assert check("EntityHeader", header) == ["$: EntityHeader lacks its required field 'benefactorId'"]
    assert check("SynapseVersionInfo", {"version": "1"}) == [
        "$: SynapseVersionInfo lacks its required field 'stackInstance'"
    ]
    assert check("Entity", {"name": "x"}) == [
        "$: a Entity without concreteType (one of %s)"
        % sorted(MODELS[m].concrete_type for m in MODELS["Entity"].variants)
    ]


def test_nested_models_lists_and_maps_are_checked_with_their_place():
    body = {"page": [HEADER, dict(HEADER, type="folder")]}
    assert check("EntityChildrenResponse", body) == ['$.page[1].type: "folder" is not a value of EntityClass']
    annotations = {"id": "syn2", "etag": "e", "annotations": {"k": {"type": "STRING", "value": [1]}}}
    assert check("Annotations", annotations) == ["$.annotations.k.value[0]: 1 is a integer, expected string"]
    bundle = {"path": {"path": [HEADER]}}
    assert check("EntityBundle", bundle) == [
        f"$.path.path[0].{key}: not a field of PathEntityHeader" for key in HEADER if key not in ("name", "id", "type")
    ]


def test_an_interface_is_checked_as_the_model_its_concrete_type_names():
    handle = {
        "id": "9",
        "etag": "e",
        "createdBy": "7",
        "createdOn": "2024-01-01T00:00:00.000Z",
        "concreteType": "org.sagebionetworks.repo.model.file.ExternalFileHandle",
        "contentType": "text/csv",
        "fileName": "x.csv",
        "externalURL": "https://example.org/x.csv",
    }
    assert check("FileHandle", handle) == []
    assert check("FileHandle", dict(handle, bucketName="b")) == ["$.bucketName: not a field of ExternalFileHandle"]


def test_check_exchange_finds_the_endpoint_and_checks_status_and_body():
    assert check_exchange("POST", "https://repo-prod.prod.sagebase.org/repo/v1/entity/child", 200, {"id": "syn2"}) == []
    assert check_exchange("POST", "/repo/v1/entity/id", 200, {"id": "syn2"}) == [
        "POST /repo/v1/entity/id -> 200: no Synapse endpoint in synapse_model.ENDPOINTS"
    ]
    assert check_exchange("GET", "/repo/v1/entity/syn2/table/query/async/get/7", 200, {})[0].startswith(
        "GET /repo/v1/entity/syn2/table/query/async/get/7 -> 200: Synapse answers [201, 202] here, not 200"
    )
    assert (
        check_exchange(
            "GET",
            "/repo/v1/entity/syn2",
            404,
            b'{"reason": "gone", "concreteType": "org.sagebionetworks.repo.model.ErrorResponse"}',
        )
        == []
    )
    assert check_exchange("GET", "/repo/v1/entity/syn2", 429, '{"reason": "slow down"}') == []
    assert check_exchange("GET", "/repo/v1/entity/syn2", 429, {"concreteType": "x", "reason": "slow down"}) == [
        "GET /repo/v1/entity/syn2 -> 429: ThrottleError $.concreteType: not a field of ThrottleError"
    ]
    assert check_exchange("GET", "/repo/v1/entity/syn2/file?redirect=false", 200, "https://data/x") == []
    assert check_exchange("GET", "/repo/v1/entity/syn2/file", 307, b"") == []
    assert check_exchange("GET", "/repo/v1/userProfile/", 200, {"ownerId": "7", "userName": "u"}) == []
    assert check_exchange("POST", "/file/v1/fileHandle/batch", 200, {"requestedFiles": []})[0].endswith(
        "@ResponseStatus(CREATED))"
    )


def test_the_fact_table_is_consistent():
    """Every type a model names exists, every interface's variants have distinct concrete types, every endpoint's
    answer model exists, and every endpoint's sample path is found again."""

    def names(expr):
        while expr[:1] in "[{":
            expr = expr[1:-1]
        return expr.rstrip("?")

    for model in MODELS.values():
        for name, expr in model.fields.items():
            base = names(expr)
            assert (
                base in MODELS
                or base[5:] in ENUMS
                or re.match(
                    r"^(string|integer|number|boolean|date-time|"
                    r"object)$",
                    base,
                )
            ), (model.name, name, expr)
        for key in model.required:
            assert key in model.fields, (model.name, key)
        concrete = [MODELS[variant].concrete_type for variant in model.variants]
        assert None not in concrete and len(set(concrete)) == len(concrete), model.name
    for endpoint in ENDPOINTS:
        for model in endpoint.answers.values():
            assert model in MODELS or model in ("object", "<redirect>", "<text url>", "<empty>"), endpoint
        assert endpoint_for(endpoint.method, sample_path(endpoint)) is endpoint


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_flags_a_non_object(name):
    assert check(name, [1]) != []


def test_a_void_answer_has_no_body():
    """``DELETE /download/list`` (a void controller method): 200 and nothing else."""
    assert check_exchange("DELETE", "/repo/v1/download/list", 200, "") == []
    assert check_exchange("DELETE", "/repo/v1/download/list", 200, {}) != []
