"""Lists replayed at their versions: the version, MD5 and size columns of each format users bring (id_lists.py)."""

from __future__ import annotations

import pytest

from synclient.errors import ConfigError
from synclient.platform.models import FileHandle
from synclient.sync.sources.id_lists import (
    EntityRef,
    ListedContent,
    ListMismatchError,
    ids_from_text,
    read_id_file,
)

MD5_A = "0cc175b9c0f1b6a831c399e269772661"
MD5_B = "92eb5ffee6ae2fec3ad71c777531578f"


def pinned(text):
    return [(str(ref), ref.expected) for ref in ids_from_text(text, where="f")]


def test_the_download_carts_manifest_pins_versions_and_expects_md5_and_size():
    # the columns of Synapse's DownloadListManifestRequest CSV (ManifestKeys), in its order
    cart = (
        "ID,name,versionNumber,contentType,dataFileSizeBytes,createdBy,createdOn,modifiedBy,modifiedOn,parentId,"
        "synapseURL,dataFileMD5Hex\n"
        f'syn11,"a, b.txt",3,text/plain,1,1,2024-01-01,1,2024-01-01,syn9,https://www.synapse.org/#!Synapse:syn11.3,'
        f"{MD5_A}\n"
        f"syn12,c.txt,1,text/plain,20,1,2024-01-01,1,2024-01-01,syn9,https://www.synapse.org/#!Synapse:syn12.1,"
        f"{MD5_B.upper()}\n"
    )
    assert pinned(cart) == [
        ("syn11.3", ListedContent(MD5_A, 1, md5_column="dataFileMD5Hex", size_column="dataFileSizeBytes")),
        ("syn12.1", ListedContent(MD5_B, 20, md5_column="dataFileMD5Hex", size_column="dataFileSizeBytes")),
    ]


def test_a_view_query_result_csv_pins_its_current_version():
    result = (
        "ROW_ID,ROW_VERSION,ROW_ETAG,id,name,currentVersion,dataFileMD5Hex,dataFileSizeBytes,contentSize\n"
        f"11,4,e1,syn11,a.txt,2,{MD5_A},1,1\n"
    )
    [(ref, expected)] = pinned(result)
    assert ref == "syn11.2"  # not ROW_VERSION: that is the row's, not the file's
    assert expected == ListedContent(MD5_A, 1, md5_column="dataFileMD5Hex", size_column="dataFileSizeBytes")


def test_synapseutils_tsv_with_version_md5_and_size_columns():
    # synapseutils writes no version; a tool that adds the columns gets them read, tab-separated, unquoted
    manifest = (
        "path\tparent\tname\tid\tsynapseStore\tcontentType\tused\texecuted\tactivityName\tactivityDescription\t"
        "versionNumber\tdataFileMD5Hex\tdataFileSizeBytes\n"
        f'/d/a "x".txt\tsyn9\ta "x".txt\tsyn11\tTrue\t\t\t\t\t\t2\t{MD5_A}\t1\n'
        "/d/b.txt\tsyn9\tb.txt\tsyn12\tTrue\t\t\t\t\t\t\t\t\n"
    )
    assert pinned(manifest) == [
        ("syn11.2", ListedContent(MD5_A, 1, md5_column="dataFileMD5Hex", size_column="dataFileSizeBytes")),
        ("syn12", None),
    ]


def test_in_a_sync_manifest_short_names_are_annotations():
    # synclient's own manifest.csv: 'version' and 'size' here are the user's annotation keys, not read
    manifest = (
        "path,parentId,name,ID,synapseStore,contentType,used,executed,activityName,activityDescription,md5,size,"
        "version\n"
        "/d/a.txt,syn9,a.txt,syn11,True,,,,,,not hex,large,v1.2\n"
    )
    assert pinned(manifest) == [("syn11", None)]


def test_other_tables_read_the_short_names():
    assert pinned(f"id,version,md5,size\nsyn11,2,{MD5_A},1\n") == [("syn11.2", ListedContent(MD5_A, 1))]


def test_a_dotted_id_that_agrees_with_the_version_column_is_fine():
    assert pinned("id,versionNumber\nsyn5.2,2\nsyn6.3,\n") == [("syn5.2", None), ("syn6.3", None)]


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("id,versionNumber\nsyn5.2,3\n", r"m\.csv, line 2: the id names version 2 but versionNumber says 3"),
        ("id,version\nsyn1,1\nsyn5,two\n", r"m\.csv, line 3: version 'two' is not a whole number"),
        ("id,version\nsyn5,0\n", r"m\.csv, line 2: version '0' is not a version"),
        ("id,md5\nsyn5,abc\n", r"m\.csv, line 2: md5 'abc' is not an MD5"),
        ("id,dataFileSizeBytes\nsyn5,-1\n", r"m\.csv, line 2: dataFileSizeBytes '-1' is not a whole number"),
    ],
)
def test_a_bad_cell_is_one_clear_error_naming_the_line(table, message):
    with pytest.raises(ConfigError, match=message):
        ids_from_text(table, where="m.csv")


def test_a_bad_cell_in_a_file_fails_the_read(tmp_path):
    listed = tmp_path / "m.tsv"
    listed.write_text("id\tversionNumber\nsyn5\t1.5\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"line 2: versionNumber '1\.5' is not a whole number"):
        read_id_file(str(listed))


def test_column_names_are_matched_exactly():
    assert pinned("id,VersionNumber,MD5\nsyn5,3,zz\n") == [("syn5", None)]


def test_a_plain_list_is_read_as_today():
    assert pinned("syn1\nsyn2.3\n") == [("syn1", None), ("syn2.3", None)]


def test_the_expectation_is_not_part_of_the_refs_identity():
    [ref] = ids_from_text(f"id,md5\nsyn5,{MD5_A}\n", where="f")
    assert ref == EntityRef("syn5") and hash(ref) == hash(EntityRef("syn5"))


def handle(md5, size):
    return FileHandle(id="7", content_size=size, content_md5=md5)


def test_a_mismatch_names_the_column_and_both_values():
    expected = ListedContent(MD5_A, 1, md5_column="dataFileMD5Hex", size_column="dataFileSizeBytes")
    assert expected.mismatch("syn5.1", handle(MD5_A, 1)) is None
    error = expected.mismatch("syn5.1", handle(MD5_B, 1))
    assert isinstance(error, ListMismatchError)
    assert str(error) == f"syn5.1: the list expects dataFileMD5Hex {MD5_A} but the platform has {MD5_B}"
    assert str(expected.mismatch("syn5.1", handle(MD5_A, 2))) == (
        "syn5.1: the list expects dataFileSizeBytes 1 but the platform has 2"
    )
    assert ListedContent(size=1).mismatch("syn5", handle(None, None)) is None  # what the platform does not say
