"""Names a local filesystem cannot hold, and the local name each remote entity gets instead.

A remote folder may hold names the target's filesystem cannot tell apart or cannot store: ``Case.txt`` and
``case.txt`` (case-insensitive folders: Windows, macOS), ``é`` composed and decomposed (macOS normalizes Unicode),
and on Windows ``<>:"|?*\\``, control characters, trailing dots and spaces and the reserved device names (``CON``,
``NUL``, ``COM1``, ...). :class:`FilesystemNames` says what the target's filesystem does (a probe at the start of a
run, or forced: ``SYNCLIENT_FS_PROBE=case,nfd,windows``); :func:`local_names` maps one remote folder's listing to
local names, deterministically:

1. Windows rules (rclone's encoder's choices): each of ``<>:"|?*\\`` becomes its full-width lookalike (``:`` ->
   ``：``), a control character its Unicode control picture (``\\x01`` -> ``␁``), a trailing ``.`` becomes ``．``
   and a trailing space ``␠``; a reserved device name gets ``_`` after its stem (``CON.txt`` -> ``CON_.txt``).
2. Twins: names that the filesystem takes for one (same ``casefold`` on a case-insensitive one, same NFC form on a
   normalizing one, or the same name after step 1) keep one name between them. A name that needed no mapping
   wins over a mapped one, then the oldest entity (the smallest id: a twin added later never renames the file you
   already have); every other twin gets its entity id before its extension, ``case (syn456).txt`` (a folder:
   ``Data (syn456)``), the format synclient already uses for the entries of a list that share a name.

3. Sticky names: an entry that already has a local name (the index's: a file at the version fetched, a folder
   where its files are) keeps it while that is still one of its forms (its legal form, or that with its id) and
   no older entry keeps the same name; the others are mapped as above around the names kept. So a newcomer never
   renames what is there, and a folder twin whose keeper goes stays in its local folder.

The mapping depends only on the folder's set of (name, id) pairs and the local names they have, never on the
listing's order, so a re-sync maps every name the same way. Each renamed entity is reported
(:class:`LocalRename`); the index keeps the remote path and the local one, and the manifests list the remote name
with the local path.
"""

from __future__ import annotations

import enum
import logging
import os
import re
import shutil
import sys
import tempfile
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from synclient.errors import ConfigError, UnsafePathError

log = logging.getLogger("synclient.sync")

#: the environment variable that forces the probe's answer (tests; a filesystem the probe misjudges)
PROBE_ENV = "SYNCLIENT_FS_PROBE"

#: Windows' reserved characters and their full-width lookalikes (rclone's encoder maps them the same way)
WINDOWS_CHARACTERS = {
    "<": "\uff1c",
    ">": "\uff1e",
    ":": "\uff1a",
    '"': "\uff02",
    "|": "\uff5c",
    "?": "\uff1f",
    "*": "\uff0a",
    "\\": "\uff3c",
}
TRAILING_DOT, TRAILING_SPACE = "\uff0e", "\u2420"  # "．" and "␠": what a trailing "." or " " becomes on Windows
WINDOWS_RESERVED_STEMS = frozenset(
    {
        "CON",
        "PRN",
        "AUX",
        "NUL",
        "CONIN$",
        "CONOUT$",
        *(f"{port}{n}" for port in ("COM", "LPT") for n in "123456789\u00b9\u00b2\u00b3"),
    }
)
#: characters of a whole path Windows allows where long paths are not enabled (MAX_PATH 260, less the final NUL)
WINDOWS_MAX_PATH = 259


class Normalization(enum.Enum):
    """How a filesystem stores names that Unicode spells two ways (``é`` composed or ``e`` + combining accent)."""

    NFC = "nfc"  # stored composed, or kept as given and compared normalized: twins are one name
    NFD = "nfd"  # stored decomposed (macOS HFS+): twins are one name


class Renaming(enum.Enum):
    """Why an entity's local name is not its remote name."""

    WINDOWS = "Windows cannot hold this name"
    CASE_TWIN = "another name of the folder differs only in case, which this filesystem ignores"
    UNICODE_TWIN = "another name of the folder differs only in Unicode normalization, which this filesystem ignores"
    CASE_AND_UNICODE_TWIN = (
        "another name of the folder differs only in case and Unicode normalization, which this filesystem ignores"
    )
    TAKEN = "another name of the folder gets this local name"
    RESERVED = "the name is synclient's own here (its index folder)"
    KEPT = "it keeps the local name it already has (given when a twin had its name)"


@dataclass(frozen=True)
class FilesystemNames:
    """What the target's filesystem does with names (every field keyword-only): ``case_insensitive``: ``A`` and
    ``a`` are one file; ``normalizes_unicode``: Unicode normalization twins are one file (and the form it stores);
    ``windows_rules``: Windows' reserved names and characters are refused; ``max_name_bytes``: the longest name;
    ``max_path``: the longest whole path in characters (None: no limit that matters)."""

    case_insensitive: bool = False
    normalizes_unicode: Optional[Normalization] = None
    windows_rules: bool = False
    max_name_bytes: int = 255
    max_path: Optional[int] = None

    @property
    def maps_names(self) -> bool:
        """Whether any remote name may need another local name here (else names are used as they are)."""
        return self.case_insensitive or self.normalizes_unicode is not None or self.windows_rules

    def same_name_key(self, name: str) -> str:
        """What this filesystem compares when it looks a name up: two names with one key are one file. ``casefold``
        folds a little more than NTFS or APFS do (``ß`` and ``ss``): such a pair gets two names, never one file."""
        if self.normalizes_unicode is not None:
            name = unicodedata.normalize("NFC", name)
        if self.case_insensitive:
            name = unicodedata.normalize("NFC", name.casefold()) if self.normalizes_unicode else name.casefold()
        return name

    def same_name(self, name: str, other: str) -> bool:
        """Whether this filesystem takes ``name`` and ``other`` for one name (one file of a folder)."""
        return name == other or self.same_name_key(name) == self.same_name_key(other)

    def legal_form(self, name: str) -> str:
        """``name`` as this filesystem can store it (Windows rules, step 1 of the module's doc); else unchanged."""
        return windows_form(name) if self.windows_rules else name

    def check_length(self, path: Path) -> Path:
        """``path``, if this filesystem can hold a name and a path that long; else :class:`UnsafePathError` (the
        entity fails with that reason: a name is not cut short, which would make it another name)."""
        size = len(path.name.encode("utf-8", "surrogateescape"))
        if size > self.max_name_bytes:
            raise UnsafePathError(
                f"{path} has a name of {size} bytes, longer than the {self.max_name_bytes} this "
                "filesystem allows; not written"
            )
        if self.max_path is not None and len(str(path)) > self.max_path:
            raise UnsafePathError(
                f"{path} is longer than the {self.max_path} characters a path may have on this "
                "filesystem; not written (sync it into a shorter target path)"
            )
        return path

    def describe(self) -> str:
        traits = [
            trait
            for trait, on in (("case-insensitive", self.case_insensitive), ("Windows names", self.windows_rules))
            if on
        ]
        if self.normalizes_unicode is not None:
            traits.append(f"Unicode-normalizing ({self.normalizes_unicode.value.upper()})")
        return ", ".join(traits) or "names kept as they are"

    # -- where the answer comes from -------------------------------------------------------------------------------

    @classmethod
    def parse(cls, spec: str) -> FilesystemNames:
        """A forced answer, as ``SYNCLIENT_FS_PROBE`` spells it: comma-separated ``case``, ``nfc`` or ``nfd``,
        ``windows`` (which also limits paths to 259 characters unless ``max_path=N`` says otherwise), ``max_path=N``,
        ``max_name=N``; ``none`` (or empty) for a filesystem that keeps every name as it is."""
        fields: Dict[str, object] = {}
        for word in (w.strip().lower() for w in spec.split(",")):
            key, _, value = word.partition("=")
            if word in ("", "none", "posix"):
                continue
            if word == "case":
                fields["case_insensitive"] = True
            elif word in ("nfc", "nfd"):
                fields["normalizes_unicode"] = Normalization(word)
            elif word == "windows":
                fields["windows_rules"] = True
                fields.setdefault("max_path", WINDOWS_MAX_PATH)
            elif key in ("max_path", "max_name") and value.isascii() and value.isdigit() and int(value) > 0:
                fields["max_path" if key == "max_path" else "max_name_bytes"] = int(value)
            else:
                raise ConfigError(
                    f"{PROBE_ENV}: {word!r} is not one of case, nfc, nfd, windows, max_path=N, max_name=N, none"
                )
        return cls(**fields)  # type: ignore[arg-type]

    @classmethod
    def of_this_system(cls) -> FilesystemNames:
        """What this operating system's usual filesystem does, for when no probe can run (a dry run writes
        nothing, not even a probe file): Windows (NTFS) and macOS (APFS) fold case; macOS normalizes Unicode."""
        if os.name == "nt":
            return cls(case_insensitive=True, windows_rules=True, max_path=_windows_max_path())
        if sys.platform == "darwin":
            return cls(case_insensitive=True, normalizes_unicode=Normalization.NFC)
        return cls()

    @classmethod
    def probe(cls, folder: Path) -> FilesystemNames:
        """Ask the filesystem of ``folder`` (a folder synclient owns: the probe files are made, checked and removed
        in a temporary folder inside it). A probe that cannot run says what this system usually does."""
        try:
            scratch = Path(tempfile.mkdtemp(prefix="names-probe-", dir=folder))
        except OSError as exc:
            log.debug("filesystem probe in %s not run (%s); assuming this system's usual rules", folder, exc)
            return cls.of_this_system()
        try:
            return cls(
                case_insensitive=_same_file(scratch, "Ab", "aB"),
                normalizes_unicode=_normalization(scratch),
                windows_rules=os.name == "nt" or not _can_create(scratch, 'a:b"c|d?e*f<g>h'),
                max_name_bytes=_max_name_bytes(folder),
                max_path=_windows_max_path() if os.name == "nt" else None,
            )
        except OSError as exc:
            log.debug("filesystem probe in %s failed (%s); assuming this system's usual rules", folder, exc)
            return cls.of_this_system()
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    @classmethod
    def for_target(cls, folder: Optional[Path], *, forced: FilesystemNames | str | None = None) -> FilesystemNames:
        """The answer a run uses: ``forced`` (an option), else ``SYNCLIENT_FS_PROBE``, else the probe of ``folder``
        (None: no probe may write there, this system's usual rules)."""
        if isinstance(forced, FilesystemNames):
            return forced
        spec = forced if forced is not None else os.environ.get(PROBE_ENV)
        if spec is not None:
            return cls.parse(spec)
        return cls.probe(folder) if folder is not None else cls.of_this_system()


def _same_file(folder: Path, name: str, other: str) -> bool:
    """Create ``name``; is ``other`` the same file?"""
    (folder / name).touch()
    try:
        return os.path.samefile(folder / name, folder / other)
    except FileNotFoundError:
        return False
    finally:
        (folder / name).unlink()


def _normalization(folder: Path) -> Optional[Normalization]:
    composed, decomposed = "\u00e9", "e\u0301"
    if not _same_file(folder, composed, decomposed):
        return None
    (folder / composed).touch()
    try:
        stored = os.listdir(folder)
    finally:
        (folder / composed).unlink()
    return Normalization.NFD if decomposed in stored else Normalization.NFC


def _can_create(folder: Path, name: str) -> bool:
    try:
        (folder / name).touch()
    except OSError:
        return False
    # created, but is it the name asked for? (some FUSE and SMB mounts map these characters themselves)
    ok = name in os.listdir(folder)
    (folder / name).unlink()
    return ok


def _max_name_bytes(folder: Path) -> int:
    try:
        return min(int(os.pathconf(folder, "PC_NAME_MAX")), 255)
    except (AttributeError, ValueError, OSError):  # (no pathconf on Windows; NTFS allows 255 UTF-16 units)
        return 255


def _windows_max_path() -> Optional[int]:  # pragma: no cover - Windows only
    """None where Windows' long paths are enabled (Python is long-path aware), else MAX_PATH."""
    if sys.platform != "win32":  # no registry to ask (and type checkers know winreg only on Windows)
        return WINDOWS_MAX_PATH
    try:
        import winreg

        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, r"SYSTEM\CurrentControlSet\Control\FileSystem") as key:
            return None if winreg.QueryValueEx(key, "LongPathsEnabled")[0] == 1 else WINDOWS_MAX_PATH
    except (ImportError, OSError):
        return WINDOWS_MAX_PATH


# -- the mapping ----------------------------------------------------------------------------------------------------

_CONTROL = re.compile("[\x01-\x1f]")


def windows_form(name: str) -> str:
    """``name`` as Windows can store it (step 1 of the module's doc); a name Windows takes as it is is unchanged,
    and so is a hostile one (empty, ``.``, ``..``, a ``/`` or NUL in it): refused as it is, never mapped into a
    name that passes (``..`` would become ``.．``)."""
    if name in ("", ".", "..") or "/" in name or "\x00" in name:
        return name
    mapped = "".join(WINDOWS_CHARACTERS.get(c, c) for c in name)
    mapped = _CONTROL.sub(lambda m: chr(0x2400 + ord(m.group())), mapped)
    if mapped.endswith("."):
        mapped = mapped[:-1] + TRAILING_DOT
    elif mapped.endswith(" "):
        mapped = mapped[:-1] + TRAILING_SPACE
    stem, dot, rest = mapped.partition(".")
    if stem.rstrip(" ").upper() in WINDOWS_RESERVED_STEMS:  # "CON", "con.txt", "COM1.tar.gz" name devices
        mapped = f"{stem}_{dot}{rest}"
    return mapped


@dataclass(frozen=True)
class Listed:
    """One entry of a remote folder's listing, as the mapping needs it."""

    name: str
    entity_id: str
    is_folder: bool = False


@dataclass(frozen=True)
class LocalName:
    """The local name of one remote entry, and why it is not the remote name (None: it is)."""

    name: str
    renaming: Optional[Renaming] = None
    twin_of: Optional[str] = None  # the remote name that kept the name (a twin's renaming)

    def reason(self) -> str:
        if self.renaming is None:
            return ""
        return f"{self.renaming.value}: {self.twin_of}" if self.twin_of is not None else self.renaming.value


@dataclass(frozen=True)
class LocalRename:
    """One entity that got another local name than its remote one, for the report."""

    entity_id: str
    remote_path: str  # '/'-separated, relative to the sync root
    local_path: str  # and where it is, relative to the target
    reason: str

    def __str__(self) -> str:
        return f"{self.entity_id}: {self.remote_path} -> {self.local_path} ({self.reason})"


def local_names(
    listing: Iterable[Listed],
    rules: FilesystemNames,
    *,
    reserved: Iterable[str] = (),
    current: Optional[Dict[str, str]] = None,
) -> Dict[str, LocalName]:
    """Remote name -> local name for every entry of one folder's listing (the whole folder: a twin may be on any
    page), under ``rules``; ``reserved``: names no entry may take (synclient's index folder at the target's top);
    ``current``: remote name -> the local name that entry already has (the index's). Local names are sticky: an
    entry keeps the local name it has while that is still one the mapping could give it (its legal form, or that
    with its id) and no older entry keeps the same name; the others are mapped as the module's doc says around the
    names kept. Deterministic: depends on the set of entries (and ``current``), not their order."""
    entries = list(listing)
    if not rules.maps_names:
        return {entry.name: LocalName(entry.name) for entry in entries}
    groups: Dict[str, List[Tuple[Listed, str]]] = {}
    for entry in entries:
        legal = rules.legal_form(entry.name)
        groups.setdefault(rules.same_name_key(legal), []).append((entry, legal))
    taken = {rules.same_name_key(name) for name in reserved}
    reserved_keys = set(taken)
    holder: Dict[str, Listed] = {}  # local name's key -> the entry that has it
    kept = _kept_names(entries, rules, current or {}, taken, holder)
    result: Dict[str, LocalName] = {}
    losers: List[Tuple[Listed, str, Optional[Listed]]] = []  # (entry, its legal form, the entry that has the name)
    keeper: Optional[Listed]  # None when a reserved name has the key
    for key in sorted(groups):
        members = [
            m
            for m in sorted(groups[key], key=lambda m: (m[1] != m[0].name, id_order(m[0].entity_id), m[0].name))
            if m[0].name not in kept
        ]
        if not members:
            continue
        (keeper, legal), rest = members[0], members[1:]
        if key in taken:  # a reserved name, or one an entry keeps: every other member is renamed
            rest, keeper = members, holder.get(key)
        else:
            taken.add(key)
            holder[key] = keeper
            result[keeper.name] = LocalName(legal, Renaming.WINDOWS if legal != keeper.name else None)
        losers.extend((entry, form, keeper) for entry, form in rest)
    for entry in entries:
        if entry.name in kept:
            result[entry.name] = _kept_reason(entry, kept[entry.name], rules, holder, reserved_keys)
    for entry, legal, keeper in sorted(losers, key=lambda loser: (id_order(loser[0].entity_id), loser[0].name)):
        name = with_id(legal, entry.entity_id, is_folder=entry.is_folder)
        n = 2
        while rules.same_name_key(name) in taken:  # a remote name already spelled like this one (rare)
            name = with_id(legal, f"{entry.entity_id}-{n}", is_folder=entry.is_folder)
            n += 1
        taken.add(rules.same_name_key(name))
        result[entry.name] = LocalName(
            name,
            _twin_kind(entry.name, keeper.name if keeper else None, rules),
            keeper.name if keeper is not None else None,
        )
    return result


def _kept_names(
    entries: List[Listed], rules: FilesystemNames, current: Dict[str, str], taken: set, holder: Dict[str, Listed]
) -> Dict[str, str]:
    """Remote name -> the local name it keeps (see :func:`local_names`), oldest entry first; ``taken`` and
    ``holder`` get each kept name's key."""
    kept: Dict[str, str] = {}
    for entry in sorted((e for e in entries if e.name in current), key=lambda e: (id_order(e.entity_id), e.name)):
        name, legal = current[entry.name], rules.legal_form(entry.name)
        key = rules.same_name_key(name)
        if name != legal and not _is_id_form(name, legal, entry):
            continue  # not a name the mapping gives this entry (a keep.both copy's, another rule's): not kept
        if rules.legal_form(name) != name or key in taken:
            continue
        taken.add(key)
        holder[key] = entry
        kept[entry.name] = name
    return kept


def _is_id_form(name: str, legal: str, entry: Listed) -> bool:
    """Whether ``name`` is ``legal`` with ``entry``'s id in it (``case (syn4).txt``, ``case (syn4-2).txt``)."""
    stem, ext = (legal, "") if entry.is_folder else os.path.splitext(legal)
    pattern = f"{re.escape(stem)} \\({re.escape(entry.entity_id)}(-[0-9]+)?\\){re.escape(ext)}"
    return re.fullmatch(pattern, name) is not None


def _kept_reason(
    entry: Listed, name: str, rules: FilesystemNames, holder: Dict[str, Listed], reserved_keys: set
) -> LocalName:
    """The :class:`LocalName` of an entry that keeps ``name``: why it is not the remote name, if it is not."""
    legal = rules.legal_form(entry.name)
    if name == entry.name:
        return LocalName(name)
    if name == legal:
        return LocalName(name, Renaming.WINDOWS)
    key = rules.same_name_key(legal)
    if key in reserved_keys:
        return LocalName(name, Renaming.RESERVED)
    other = holder.get(key)
    if other is None or other is entry:  # no twin has the name now: the entry stays where it is
        return LocalName(name, Renaming.KEPT)
    return LocalName(name, _twin_kind(entry.name, other.name, rules), other.name)


def with_id(name: str, label: str, *, is_folder: bool) -> str:
    """``name (label).ext`` (a folder: ``name (label)``); a hidden file's leading dot is no extension."""
    stem, ext = (name, "") if is_folder else os.path.splitext(name)
    return f"{stem} ({label}){ext}"


def _twin_kind(name: str, keeper: Optional[str], rules: FilesystemNames) -> Renaming:
    if keeper is None:
        return Renaming.RESERVED
    if rules.normalizes_unicode is not None and unicodedata.normalize("NFC", name) == unicodedata.normalize(
        "NFC", keeper
    ):
        return Renaming.UNICODE_TWIN
    if rules.case_insensitive and name.casefold() == keeper.casefold():
        return Renaming.CASE_TWIN
    if (
        rules.case_insensitive
        and rules.normalizes_unicode is not None
        and rules.same_name_key(name) == rules.same_name_key(keeper)
    ):
        return Renaming.CASE_AND_UNICODE_TWIN
    return Renaming.TAKEN


def id_order(entity_id: str) -> Tuple[int, str]:
    """Entity ids by age: ``syn9`` before ``syn10`` (an id without a number last, by text)."""
    digits = entity_id.lower().removeprefix("syn").split(".")[0]
    return (int(digits), entity_id) if digits.isascii() and digits.isdigit() else (sys.maxsize, entity_id)
