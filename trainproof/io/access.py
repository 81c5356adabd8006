"""What an input may lead trainproof to read: the symlink rule shared by ``data``, ``tokenizer`` and ``text``.

These commands run in CI on files that arrive in pull requests, beside a
checkout whose ``.git/config`` holds a token and an environment that holds
cloud credentials. A committed symlink (``a.txt -> ../.git/config``,
``b.txt -> /proc/self/environ``) would otherwise have its target read as a
transcript and quoted in every report. So a symlink met inside an input's
roots (the folder of the input named, and the working directory for layouts
whose paths resolve there) is followed only when its target stays inside
those roots and out of any ``.git`` folder; ``--follow-links`` lifts the
rule. A path that lies outside every root is read as written: an absolute
path a manifest lists on mounted storage is the manifest's own word, not a
link someone committed beside it.

:meth:`ReadPolicy.refusal` says why one path may not be read (None when it
may), :meth:`ReadPolicy.require` raises it as an InputError;
:meth:`ReadPolicy.for_input` builds the policy of one named input.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from trainproof.io.errors import InputError

LINK_HINT = "--follow-links reads it"
"""What every refusal ends with: how a user who trusts the link reads it anyway."""


@dataclass(frozen=True)
class ReadPolicy:
    """Where a symlink met inside ``roots`` may lead: inside ``roots`` again and out of any ``.git`` folder;
    anywhere when ``follow_links``. ``roots`` are folders as named, kept absolute and each once (a link within them is
    what is judged); ``real_roots``, derived, the same folders resolved (where a followed link may land)."""

    roots: tuple[str, ...] = ()
    follow_links: bool = False
    real_roots: tuple[str, ...] = field(init=False)
    _links: dict[str, bool] = field(default_factory=dict, compare=False, hash=False, repr=False)  # folder -> holds a link below its root

    def __post_init__(self) -> None:
        roots = tuple(dict.fromkeys(os.path.abspath(root) for root in self.roots))
        object.__setattr__(self, "roots", roots)
        object.__setattr__(self, "real_roots", tuple(dict.fromkeys(_real(root) for root in roots)))

    @classmethod
    def for_input(
        cls,
        path: str | os.PathLike[str],
        *,
        cwd: bool = True,
        extra: tuple[str | os.PathLike[str] | None, ...] = (),
        follow_links: bool = False,
    ) -> ReadPolicy:
        """The policy of the input at ``path``: its folder (itself, when it is one), the working directory when
        ``cwd``, and the ``extra`` folders the user named (``--root``, ``--audio-dir``)."""
        given = os.path.abspath(os.fspath(path))
        folder = given if os.path.isdir(given) and not os.path.islink(given) else os.path.dirname(given)
        named = [folder, *(os.fspath(more) for more in extra if more)]
        if cwd:
            named.append(os.getcwd())
        return cls(tuple(named), follow_links)

    def refusal(self, path: str | os.PathLike[str]) -> str | None:
        """Why ``path`` may not be read under this policy, as the end of a sentence about it (``<path> <refusal>``);
        None when it may, or when nothing is there (the caller reports a missing file as it always has)."""
        if self.follow_links:
            return None
        given = os.path.abspath(os.fspath(path))
        if _descriptor(given):
            return None
        root = next((root for root in self.roots if _inside(given, root)), None)
        if root is None or not self._passes_link(given, root) or not os.path.exists(given):  # a dangling link reads nothing
            return None
        target = _real(given)
        if _in_git(target):
            return f"leads through a symlink into a .git folder ({target}); trainproof does not follow it ({LINK_HINT})"
        if not any(_inside(target, real) for real in self.real_roots):
            return f"leads through a symlink to {target}, outside {self._where()}; trainproof does not follow it ({LINK_HINT})"
        return None

    def require(self, path: str | os.PathLike[str]) -> None:
        """An InputError naming ``path`` when this policy refuses it (:meth:`refusal`), before anything opens it."""
        refusal = self.refusal(path)
        if refusal is not None:
            raise InputError(os.fspath(path), refusal)

    def _where(self) -> str:
        """The roots, as a refusal names them."""
        cwd = os.getcwd()
        return "the input's folder and the working directory" if cwd in self.roots and len(self.roots) > 1 else "the input's folder"

    def _passes_link(self, path: str, root: str) -> bool:
        """Whether ``path`` or a folder between it and ``root`` is a symlink (each folder asked once per policy)."""
        try:
            if os.path.islink(path):
                return True
        except (OSError, ValueError):
            return False
        return self._folder_has_link(os.path.dirname(path), root)

    def _folder_has_link(self, folder: str, root: str) -> bool:
        if not _inside(folder, root) or folder == root:
            return False
        known = self._links.get(folder)
        if known is None:
            try:
                known = os.path.islink(folder) or self._folder_has_link(os.path.dirname(folder), root)
            except (OSError, ValueError):
                known = False
            self._links[folder] = known
        return known


def _descriptor(absolute: str) -> bool:
    """Whether the absolute path names one of this process's open descriptors (``/dev/stdin < text.txt``, ``<(...)``):
    what the user's shell opened, which no committed link can be named as (a link *to* ``/dev/stdin`` is still a link)."""
    return absolute == "/dev/stdin" or absolute.startswith(("/dev/fd/", "/proc/self/fd/"))


def _real(path: str) -> str:
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):
        return path


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _in_git(path: str) -> bool:
    return ".git" in path.split(os.sep)
