"""The Web UI: plain files served by the router at ``/`` (docs/webui.md).

A package only so that wheels carry the files and the router finds them where it is installed;
no Python runs here.
"""

from pathlib import Path
from typing import Final

__all__ = ["WEBUI_DIR"]

WEBUI_DIR: Final = Path(__file__).resolve().parent
