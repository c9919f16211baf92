"""Where the file tools may reach (docs/tools.md, Security): inside ``--tools-root`` only.

A path is resolved against the call's working directory, then every symlink in it is followed,
and the result must lie inside the root (itself resolved). So ``..``, an absolute path elsewhere
and a symlink that leads out are all refused the same way, before anything is opened.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["OutsideRoot", "ToolsRoot"]


class OutsideRoot(Exception):
    """A path that resolves outside ``--tools-root``; its message names the path as given."""


@dataclass(frozen=True, slots=True)
class ToolsRoot:
    root: Path  # already resolved (absolute, no symlinks)

    @classmethod
    def at(cls, path: Path) -> ToolsRoot:
        return cls(path.resolve(strict=True))

    def contains(self, path: Path) -> bool:
        return path == self.root or path.is_relative_to(self.root)

    def working_dir(self, cwd: str | None) -> Path:
        """The call's working directory: ``x-tool-cwd`` when given (confined too), else the root."""
        if not cwd:
            return self.root
        return self.resolve(cwd, self.root)

    def resolve(self, path: str, cwd: Path) -> Path:
        """``path`` (relative to ``cwd``) with every link followed; raises :class:`OutsideRoot`."""
        joined = cwd / os.path.expanduser(path)
        # strict=False: a file about to be written need not exist, but its existing part is
        # resolved through every link, so a linked directory cannot smuggle the write out.
        resolved = joined.resolve(strict=False)
        if not self.contains(resolved):
            raise OutsideRoot(f"path is outside the tools root: {path}")
        return resolved
