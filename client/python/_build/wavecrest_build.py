"""A PEP 517 build backend for the wavecrest package that needs nothing but the standard
library, so `pip install ./client/python` works without a package index. It builds a pure-Python
wheel of the `wavecrest` directory (the generated stubs included) and an sdist of this
directory; the metadata comes from pyproject.toml."""
from __future__ import annotations

import base64
import hashlib
import io
import os
import ast
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Dict, List, Optional

HERE = Path(__file__).resolve().parent.parent
PACKAGE = "wavecrest"


def _project_table(text: str) -> Dict[str, object]:
    """The [project] table of our own pyproject.toml without tomllib (Python 3.10 has none): one
    `key = value` per line, values a string, a list of strings or an inline table of strings."""
    out: Dict[str, object] = {}
    in_project = False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            in_project = line == "[project]"
            continue
        if not in_project or not line or line.startswith("#"):
            continue
        key, _, value = (part.strip() for part in line.partition("="))
        if value.startswith("{"):
            out[key] = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', value))
        else:
            out[key] = ast.literal_eval(value)
    return out


def _project() -> Dict[str, object]:
    text = (HERE / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib  # Python 3.11+
    except ImportError:
        return _project_table(text)
    return dict(tomllib.loads(text)["project"])


def _metadata() -> str:
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p['description']}", f"Requires-Python: {p['requires-python']}"]
    license_ = p.get("license")
    if isinstance(license_, dict) and "text" in license_:
        lines.append(f"License: {license_['text']}")
    for dep in p.get("dependencies", []):  # type: ignore[union-attr]
        lines.append(f"Requires-Dist: {dep}")
    return "\n".join(lines) + "\n"


def _files() -> List[Path]:
    out = []
    for path in sorted((HERE / PACKAGE).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            out.append(path)
    return out


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[dict] = None) -> List[str]:
    return []


def _dist_info() -> str:
    p = _project()
    return f"{p['name']}-{p['version']}.dist-info"


def prepare_metadata_for_build_wheel(metadata_directory: str,
                                     config_settings: Optional[dict] = None) -> str:
    target = Path(metadata_directory) / _dist_info()
    target.mkdir(parents=True, exist_ok=True)
    (target / "METADATA").write_text(_metadata())
    return target.name


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    p = _project()
    name = f"{p['name']}-{p['version']}-py3-none-any.whl"
    dist_info = _dist_info()
    records = []
    with zipfile.ZipFile(Path(wheel_directory) / name, "w", zipfile.ZIP_DEFLATED) as wheel:
        def add(arcname: str, data: bytes) -> None:
            info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            wheel.writestr(info, data, zipfile.ZIP_DEFLATED)
            records.append(_record_line(arcname, data))
        for path in _files():
            add(path.relative_to(HERE).as_posix(), path.read_bytes())
        add(f"{dist_info}/METADATA", _metadata().encode())
        add(f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: wavecrest_build\n"
                                  b"Root-Is-Purelib: true\nTag: py3-none-any\n")
        add(f"{dist_info}/top_level.txt", f"{PACKAGE}\n".encode())
        record = "\n".join(records + [f"{dist_info}/RECORD,,"]) + "\n"
        wheel.writestr(f"{dist_info}/RECORD", record)
    return name


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    p = _project()
    base = f"{p['name']}-{p['version']}"
    name = f"{base}.tar.gz"
    with tarfile.open(Path(sdist_directory) / name, "w:gz") as tar:
        for path in [HERE / "pyproject.toml", *sorted((HERE / "_build").glob("*.py")), *_files()]:
            tar.add(path, arcname=f"{base}/{path.relative_to(HERE).as_posix()}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return name
