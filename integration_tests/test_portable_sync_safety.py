"""Issue 18: sync-safety tests again, with every fallback of :mod:`synclient.portable` in force (see
test_portable_sync_engine.py): deletion through folders reached by checked path (no ``dir_fd``), the download's
folder checks by ``realpath`` (no ``/proc/self/fd``)."""

from __future__ import annotations

import pytest
from test_sync_safety import (
    test_a_folder_swapped_for_a_symlink_after_planning_is_not_written_through,
    test_a_folder_with_files_synclient_did_not_write_is_never_replaced,
    test_delete_never_follows_a_symlinked_folder_out_of_the_target,
    test_delete_resolves_the_path_when_unlinking_not_when_listing,
    test_keep_local_with_delete_replaces_a_folder_of_synclients_own_files,
    test_manifests_never_list_deleted_files,
    test_remote_file_replaced_by_a_folder_converges_in_one_run_with_delete,
    test_remote_folder_replaced_by_a_file_converges_in_one_run_with_delete,
)

#: the imported tests and fixtures, collected here again with the fallbacks in force
__all__ = [
    "test_a_folder_swapped_for_a_symlink_after_planning_is_not_written_through",
    "test_a_folder_with_files_synclient_did_not_write_is_never_replaced",
    "test_delete_never_follows_a_symlinked_folder_out_of_the_target",
    "test_delete_resolves_the_path_when_unlinking_not_when_listing",
    "test_keep_local_with_delete_replaces_a_folder_of_synclients_own_files",
    "test_manifests_never_list_deleted_files",
    "test_remote_file_replaced_by_a_folder_converges_in_one_run_with_delete",
    "test_remote_folder_replaced_by_a_file_converges_in_one_run_with_delete",
]
pytestmark = pytest.mark.usefixtures("portable_fallbacks")
