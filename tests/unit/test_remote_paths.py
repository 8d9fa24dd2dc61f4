"""FolderPaths: the remote folder paths of --keep-paths, one path call per folder no earlier chain named."""

from __future__ import annotations

from pathlib import PurePosixPath

from synclient.errors import AccessDeniedError, UnsafePathError
from synclient.platform.models import EntityHeader, EntityType
from synclient.sync.sources.remote_paths import FolderPaths

ROOT = EntityHeader("syn4489", "Redacted", EntityType.FOLDER)


class FakePaths:
    """``GET /entity/{id}/path`` over a small world: id -> (name, type, parent id); counts the calls."""

    def __init__(self, world, unreadable=(), redacted=()):
        self.world = world
        self.unreadable = set(unreadable)
        self.redacted = set(redacted)  # readable ids above which the caller may not read (named Redacted)
        self.asked = []
        self.header_batches = []

    def headers(self, ids):
        self.header_batches.append(list(ids))
        return {i: EntityHeader(i, self.world[i][0], self.world[i][1]) for i in ids if i not in self.redacted}

    def __call__(self, entity_id):
        self.asked.append(entity_id)
        if entity_id in self.unreadable:
            raise AccessDeniedError(f"{entity_id}: no READ", status=403)
        chain = []
        while entity_id is not None:
            name, kind, parent = self.world[entity_id]
            chain.append(EntityHeader(entity_id, "Redacted" if entity_id in self.redacted else name, kind))
            entity_id = parent
        return [ROOT] + chain[::-1]


P, D = EntityType.PROJECT, EntityType.FOLDER
WORLD = {
    "syn1": ("alpha", P, None),
    "syn2": ("raw", D, "syn1"),
    "syn3": ("2024", D, "syn2"),
    "syn4": ("beta", P, None),
    "syn5": ("raw", D, "syn4"),
    "syn6": ("..", D, "syn4"),
    "syn7": ("inner", D, "syn6"),
    "syn8": ("a/b", D, "syn1"),
    "syn9": ("nul\x00", D, "syn1"),
    "syn10": ("secret", D, "syn1"),
    "syn11": ("Redacted", D, "syn1"),
    "syn12": ("open", D, "syn10"),
}


def folder_paths(lookup):
    return FolderPaths(lookup, lookup.headers)


def test_paths_of_two_projects_and_nested_folders():
    paths = folder_paths(FakePaths(WORLD))
    paths.resolve(["syn3", "syn5", "syn1"])
    assert paths.path("syn3").text == "alpha/raw/2024"
    assert paths.path("syn2").text == "alpha/raw"
    assert paths.path("syn5").text == "beta/raw"
    assert paths.path("syn1").text == "alpha"  # a file at the project's top: <project name>/<name>


def test_one_call_per_folder_no_earlier_chain_named():
    lookup = FakePaths(WORLD)
    paths = folder_paths(lookup)
    paths.resolve(["syn3", "syn2", "syn1", "syn3", "syn5", "syn4"])
    assert lookup.asked == ["syn3", "syn5"]  # syn2 and syn1 came with syn3's chain, syn4 with syn5's
    assert paths.calls == 2


def test_hostile_names_land_flat_with_their_subtree():
    paths = folder_paths(FakePaths(WORLD))
    paths.resolve(["syn7", "syn8", "syn9", "syn5"])
    for folder in ("syn6", "syn7", "syn8", "syn9"):
        assert paths.path(folder) is None
        assert "can be no local name" in paths.why_flat(folder)
    assert paths.path("syn5").text == "beta/raw"  # the project above a hostile folder keeps its path
    assert paths.path("syn4").text == "beta"


def test_a_folder_that_may_not_be_read_lands_flat_with_a_note():
    paths = folder_paths(FakePaths(WORLD, unreadable={"syn10"}))
    paths.resolve(["syn10", "syn3"])
    assert paths.path("syn10") is None
    assert paths.why_flat("syn10").startswith("its folder syn10 may not be read")
    assert paths.path("syn3").text == "alpha/raw/2024"
    assert paths.why_flat("syn3") == ""


def test_a_chain_without_a_project_lands_flat():
    paths = FolderPaths(lambda entity_id: [ROOT, EntityHeader(entity_id, "loose", EntityType.FOLDER)], dict)
    paths.resolve(["syn99"])
    assert paths.path("syn99") is None
    assert "no project" in paths.why_flat("syn99")


def test_a_redacted_ancestor_lands_flat_and_a_folder_named_redacted_does_not():
    lookup = FakePaths(WORLD, redacted={"syn10"})
    paths = folder_paths(lookup)
    paths.resolve(["syn12", "syn11", "syn3"])
    assert paths.path("syn12") is None  # readable, under a folder the caller may not read
    assert "syn10 may not be read" in paths.why_flat("syn12")
    assert paths.path("syn11").text == "alpha/Redacted"  # only named so
    assert paths.path("syn3").text == "alpha/raw/2024"
    assert lookup.header_batches == [["syn10", "syn11"]]  # one batch for every item so named, not one per item
    assert lookup.asked == ["syn12", "syn11", "syn3"]


def test_a_name_the_local_check_refuses_lands_flat_with_its_subtree():
    checked = []

    def local_path(folder, name):  # (as the name gate refuses a name this disk cannot hold)
        checked.append((folder, name))
        if name == "2024":
            raise UnsafePathError("name '2024' is not allowed here")
        return (folder or PurePosixPath("/t")) / name

    paths = FolderPaths(FakePaths(WORLD), FakePaths(WORLD).headers, local_path)
    paths.resolve(["syn3", "syn5"])
    assert paths.path("syn2").text == "alpha/raw" and paths.path("syn5").text == "beta/raw"
    assert paths.path("syn3") is None
    assert "can be no local name" in paths.why_flat("syn3") and "not allowed here" in paths.why_flat("syn3")
    # each name checked once, in the local folder of its parent (a deep chain costs one check per folder)
    assert checked == [
        (None, "alpha"),
        (PurePosixPath("/t/alpha"), "raw"),
        (PurePosixPath("/t/alpha/raw"), "2024"),
        (None, "beta"),
        (PurePosixPath("/t/beta"), "raw"),
    ]
