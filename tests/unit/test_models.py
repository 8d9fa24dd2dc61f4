"""Entity id syntax and wire parsing: bad input is a typed, one-line error, never ValueError/KeyError from inside."""

import pytest

from synclient.errors import ConfigError, MalformedAnswerError, PlatformError
from synclient.platform.models import (
    ChildrenPage,
    Entity,
    EntityHeader,
    FileBundle,
    FileHandle,
    PresignedUrlAnswer,
    parse_entity_id,
    user_profile_from_wire,
)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("syn123", ("syn123", None)),
        ("syn123.4", ("syn123", 4)),
        ("SYN7", ("syn7", None)),
        ("Syn7.10", ("syn7", 10)),
        (" syn5\n", ("syn5", None)),
    ],
)
def test_good_ids(text, expected):
    assert parse_entity_id(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "syn1.\u00b2",
        "syn\u0661\u0662",
        "syn\uff11",
        "syn1.\u0663",
        "syn",
        "syn.1",
        "syn1.",
        "syn1.2.3",
        "syn-1",
        "syn+1",
        "syn 1",
        "123",
        "x123",
        "",
        "syn1.-2",
        "syn" + "9" * 20,
        "syn1." + "9" * 5000,
    ],
)
def test_bad_ids_are_config_errors_with_one_line(text):
    with pytest.raises(ConfigError) as info:
        parse_entity_id(text)
    message = str(info.value)
    assert message.startswith("not a platform id: ") and "\n" not in message and len(message) < 200


@pytest.mark.parametrize(
    "parse,answer,missing",
    [
        (EntityHeader.from_wire, {"name": "a"}, "'id'"),
        (EntityHeader.from_wire, {"id": "syn1"}, "'name'"),
        (Entity.from_wire, {}, "'id'"),
        (FileHandle.from_wire, {"contentSize": 3}, "'id'"),
        (FileBundle.from_wire, {}, "'entity'"),
        (user_profile_from_wire, {"userName": "u"}, "'ownerId'"),
        (PresignedUrlAnswer.batch_from_wire, {"requestedFiles": [{"preSignedURL": "x"}]}, "'fileHandleId'"),
    ],
)
def test_a_missing_required_field_is_a_malformed_answer(parse, answer, missing):
    with pytest.raises(MalformedAnswerError, match=missing) as info:
        parse(answer)
    assert isinstance(info.value, PlatformError) and not isinstance(info.value, KeyError)


@pytest.mark.parametrize(
    "parse",
    [
        EntityHeader.from_wire,
        Entity.from_wire,
        ChildrenPage.from_wire,
        FileBundle.from_wire,
        PresignedUrlAnswer.batch_from_wire,
    ],
)
@pytest.mark.parametrize("answer", [None, [], "text", 3])
def test_an_answer_that_is_not_an_object_is_a_malformed_answer(parse, answer):
    with pytest.raises(MalformedAnswerError, match="JSON object"):
        parse(answer)


def test_a_version_that_is_not_a_number_is_a_malformed_answer():
    with pytest.raises(MalformedAnswerError, match="'versionNumber' of entity is not a whole number"):
        Entity.from_wire({"id": "syn1", "name": "a", "versionNumber": "two"})
