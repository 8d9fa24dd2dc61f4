"""Lists of ids as users bring them: command line, plain files, manifests and query results (CSV/TSV)."""

from __future__ import annotations

import io

import pytest

from synclient.errors import ConfigError, LocalIOError
from synclient.sync.records.manifest import MANIFEST_FILENAME, ManifestMode, ManifestRow, write_manifests
from synclient.sync.sources.id_lists import EntityRef, ids_from_text, parse_refs, read_id_file


def refs(*texts):
    return [EntityRef.parse(text) for text in texts]


def test_command_line_ids_with_versions():
    assert parse_refs(["syn1", "SYN2.3", " syn4 "]) == [EntityRef("syn1"), EntityRef("syn2", 3), EntityRef("syn4")]
    assert [str(ref) for ref in parse_refs(["syn2.3", "syn4"])] == ["syn2.3", "syn4"]


def test_one_id_per_line_with_comments_and_blank_lines():
    text = "# my selection\nsyn1\n\n  syn2.3   # the old version\nsyn4\n"
    assert ids_from_text(text, where="f") == refs("syn1", "syn2.3", "syn4")


def test_a_bad_line_names_the_file_and_line():
    with pytest.raises(ConfigError, match=r"ids\.txt, line 3: not a platform id: 'syn12x'"):
        ids_from_text("syn1\n# ok\nsyn12x\n", where="ids.txt")


def test_a_tsv_manifest_gives_its_id_column():
    manifest = (
        "path\tparent\tname\tid\tsynapseStore\n"
        "/d/a.csv\tsyn9\ta.csv\tsyn11\tTrue\n"
        "/d/b, with comma.csv\tsyn9\tb, with comma.csv\tsyn12\tTrue\n"
    )
    assert ids_from_text(manifest, where="m.tsv") == refs("syn11", "syn12")


def test_a_csv_query_result_with_an_upper_case_id_column():
    result = 'ROW_ID,ROW_VERSION,ID,name\n1,1,syn5,"a, b.txt"\n2,1,syn6.2,c.txt\n3,1,,empty row\n'
    assert ids_from_text(result, where="q.csv") == refs("syn5", "syn6.2")


def test_a_table_without_an_id_column_says_which_columns_it_has():
    with pytest.raises(ConfigError, match=r"needs an 'id' column \(its columns: path, name\)"):
        ids_from_text("path,name\n/a,a\n", where="x.csv")


def test_files_and_stdin(tmp_path):
    listed = tmp_path / "ids.txt"
    listed.write_text("\ufeffsyn1\nsyn2\n", encoding="utf-8")  # a BOM, as some editors write
    assert read_id_file(str(listed)) == refs("syn1", "syn2")
    assert read_id_file("-", stdin=io.StringIO("syn3\n")) == refs("syn3")


def test_missing_empty_and_binary_files_are_clear_errors(tmp_path):
    with pytest.raises(LocalIOError, match="cannot read the id list"):
        read_id_file(str(tmp_path / "missing.txt"))
    (tmp_path / "empty.txt").write_text("# nothing yet\n")
    with pytest.raises(ConfigError, match="holds no ids"):
        read_id_file(str(tmp_path / "empty.txt"))
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00syn1")
    with pytest.raises(ConfigError, match="not a UTF-8 text file"):
        read_id_file(str(tmp_path / "bin"))


@pytest.mark.parametrize(
    "text, expected",
    [
        ("syn1   # raw, v2\nsyn2\n", ("syn1", "syn2")),  # a comma in a comment is no table
        ("\tsyn1\nsyn2\n", ("syn1", "syn2")),  # nor is an indented id
        ("id\nsyn1\nsyn2.3\n", ("syn1", "syn2.3")),  # a one-column table (SELECT id FROM ...)
        ("\ufeffsyn1\n", ("syn1",)),  # a byte order mark, on standard input too
        ("# exported\n# by a script\nid,x\nsyn1,a\n", ("syn1",)),
        (" id , name \nsyn1 ,a\n", ("syn1",)),  # blanks around the column names
    ],
)
def test_what_is_a_table_and_what_is_a_list(text, expected):
    assert ids_from_text(text, where="f") == refs(*expected)


def test_a_bad_row_of_a_table_is_named_by_its_line_in_the_file():
    with pytest.raises(ConfigError, match=r"f, line 5: not a platform id: 'bad'"):
        ids_from_text("# c\n# c2\nid,x\nsyn1,a\nbad,b\n", where="f")
    with pytest.raises(ConfigError, match=r"f, line 4: not a platform id: 'bad'"):
        ids_from_text('id,note\nsyn1,"two\nlines"\nbad,x\n', where="f")  # a quoted cell over two lines


def test_a_manifest_whose_annotation_holds_an_unbalanced_quote_gives_every_id(tmp_path):
    """Issue 29, defect 4: the TSV is unquoted (synapseutils' and ours); read as quoted, the '"' swallowed the rows
    up to the next one, and 5 files listed gave 2 ids."""
    rows = [
        ManifestRow(
            tmp_path / f"f{n}.txt",
            "syn1",
            f"f{n}.txt",
            f"syn{10 + n}",
            "text/plain",
            {"note": {"type": "STRING", "value": [note]}},
        )
        for n, note in enumerate(['a "quoted', "plain", 'inch 3"', '"', "end"])
    ]
    written, failures = write_manifests(lambda: iter(rows), tmp_path, ManifestMode.ROOT)
    assert failures == [] and written == [tmp_path / MANIFEST_FILENAME]
    assert '\ta "quoted\n' in written[0].read_text()  # as written, unquoted
    assert read_id_file(str(written[0])) == refs("syn10", "syn11", "syn12", "syn13", "syn14")


def test_a_row_of_a_table_that_cannot_be_read_is_an_error_naming_its_line():
    with pytest.raises(ConfigError, match=r"^f, line 3: the row has 1 of the header's 3 fields, so no 'id' value$"):
        ids_from_text("path\tname\tid\n/a\ta\tsyn1\n/b\n", where="f")
    with pytest.raises(ConfigError, match=r"^f, line \d: cannot be read as CSV \(.*\)$"):
        ids_from_text('id,note\nsyn1,"open\nsyn2,x\n', where="f")  # a quote never closed: not a silent skip
