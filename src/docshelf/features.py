"""Features that need something from the operating system rather than from PyPI: PDF export
(WeasyPrint's Pango, HarfBuzz and fontconfig, and a font) and single sign-on (the `xmlsec1`
program pysaml2 runs). `detect` checks them once a process, at start, in a child process that
then ends (~100 ms: the libraries are opened as WeasyPrint opens them, by their shared-object
names, and fontconfig is asked for its fonts); the server then names the features that are off
in one block at start (`startup_notice`), `/readyz` lists every feature, and a feature that is
off answers 503 naming what is missing (`require`) instead of failing on the content.

A feature that is off does not make the server unready: everything else works, and restarting
a container would not install a library."""

from __future__ import annotations

import ctypes
import functools
import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from docshelf.kit.errors import ServiceUnavailable

log = logging.getLogger("docshelf.features")
_PROBE_SECONDS = 20


@dataclass(frozen=True, slots=True)
class Need:
    """One thing a feature needs: `what` is how it is named to people, `package` the Debian
    package that brings it."""

    what: str
    package: str
    present: Callable[[], bool]


@dataclass(frozen=True, slots=True)
class Feature:
    name: str  # the key in /readyz
    label: str
    needs: tuple[Need, ...]


@dataclass(frozen=True, slots=True)
class Library:
    """Whether the dynamic loader opens one of `names` (the Linux shared-object name first,
    then the macOS one), as WeasyPrint's own loading does."""

    names: tuple[str, ...]

    def __call__(self) -> bool:
        for name in self.names:
            try:
                ctypes.CDLL(name)
            except OSError:
                continue
            return True
        return False


def library(*names: str) -> Library:
    return Library(names)


def program(name: str) -> Callable[[], bool]:
    return lambda: shutil.which(name) is not None


class _FontSet(ctypes.Structure):
    _fields_ = [("nfont", ctypes.c_int), ("sfont", ctypes.c_int), ("fonts", ctypes.c_void_p)]


def _fonts_known() -> bool:
    """Whether fontconfig knows at least one font (WeasyPrint's own test before it warns that
    the output will have no text worth reading). False when fontconfig itself cannot load."""
    try:
        fc = ctypes.CDLL("libfontconfig.so.1")
    except OSError:
        try:
            fc = ctypes.CDLL("libfontconfig.1.dylib")
        except OSError:
            return False
    fc.FcInitLoadConfigAndFonts.restype = ctypes.c_void_p
    fc.FcConfigGetFonts.restype = ctypes.POINTER(_FontSet)
    fc.FcConfigGetFonts.argtypes = [ctypes.c_void_p, ctypes.c_int]
    fc.FcConfigDestroy.argtypes = [ctypes.c_void_p]
    config = fc.FcInitLoadConfigAndFonts()
    if not config:
        return False
    try:
        fonts = fc.FcConfigGetFonts(config, 0)  # FcSetSystem
        return bool(fonts) and fonts.contents.nfont > 0
    finally:
        fc.FcConfigDestroy(config)


@dataclass(frozen=True, slots=True)
class Fonts:
    """Whether fontconfig knows a font: a value, like Library, so that a child can be asked."""

    def __call__(self) -> bool:
        return _fonts_known()


FONTS = Fonts()

PDF = Feature(
    "pdf",
    "PDF export",
    (
        Need("libgobject-2.0.so.0", "libglib2.0-0", library("libgobject-2.0.so.0")),
        Need(
            "libpango-1.0.so.0",
            "libpango-1.0-0",
            library("libpango-1.0.so.0", "libpango-1.0.dylib"),
        ),
        Need(
            "libpangoft2-1.0.so.0",
            "libpangoft2-1.0-0",
            library("libpangoft2-1.0.so.0", "libpangoft2-1.0.dylib"),
        ),
        Need(
            "libharfbuzz.so.0", "libharfbuzz0b", library("libharfbuzz.so.0", "libharfbuzz.0.dylib")
        ),
        # WeasyPrint still falls back to fontTools without it, with a warning that a coming
        # version will require it; Debian has it wherever it has Pango.
        Need(
            "libharfbuzz-subset.so.0",
            "libharfbuzz-subset0",
            library("libharfbuzz-subset.so.0", "libharfbuzz-subset.0.dylib"),
        ),
        Need(
            "libfontconfig.so.1",
            "libfontconfig1",
            library("libfontconfig.so.1", "libfontconfig.1.dylib"),
        ),
        Need("a font (DejaVu)", "fonts-dejavu-core", FONTS),
    ),
)
SSO = Feature("sso", "Single sign-on (SAML)", (Need("xmlsec1", "xmlsec1", program("xmlsec1")),))
FEATURES: tuple[Feature, ...] = (PDF, SSO)


@dataclass(frozen=True, slots=True)
class Status:
    feature: Feature
    missing: tuple[Need, ...]

    @property
    def on(self) -> bool:
        return not self.missing

    def readiness(self) -> dict[str, object]:
        if self.on:
            return {"status": "ok"}
        return {
            "status": "off",
            "missing": [n.what for n in self.missing],
            "install": install_command(self.missing),
        }

    def message(self) -> str:
        names = ", ".join(n.what for n in self.missing)
        return (
            f"{self.feature.label} is unavailable on this server: it lacks {names}. "
            f"An administrator turns it on with `{install_command(self.missing)}` and a restart"
        )


def install_command(needs: Iterable[Need]) -> str:
    packages = dict.fromkeys(n.package for n in needs)
    sudo = "" if os.geteuid() == 0 else "sudo "
    return f"{sudo}apt-get install {' '.join(packages)}"


@dataclass(frozen=True, slots=True)
class Features:
    statuses: tuple[Status, ...]

    def __getitem__(self, name: str) -> Status:
        for status in self.statuses:
            if status.feature.name == name:
                return status
        raise KeyError(name)

    def readiness(self) -> dict[str, dict[str, object]]:
        return {s.feature.name: s.readiness() for s in self.statuses}

    def off(self) -> list[Status]:
        return [s for s in self.statuses if not s.on]


def check(
    features: tuple[Feature, ...], present: Callable[[Need], bool] = lambda n: n.present()
) -> Features:
    return Features(tuple(Status(f, tuple(n for n in f.needs if not present(n))) for f in features))


@functools.cache
def detect() -> Features:
    """The features of this machine, checked once a process. What is checked by opening a
    library (and asking fontconfig for its fonts) is checked in a child process: a library
    once opened stays in the process, and Pango, GLib and fontconfig held ~3 MB of every API
    process for what only the PDF export's worker processes use."""
    opened = [n for f in FEATURES for n in f.needs if _opens(n)]
    answers = dict(zip(opened, _probe_apart(opened), strict=True))
    return check(FEATURES, lambda n: answers[n] if n in answers else n.present())


def _opens(need: Need) -> bool:
    return isinstance(need.present, (Library, Fonts))


def _probe_apart(needs: Sequence[Need]) -> list[bool]:
    """Each of `needs` checked in a child Python. Checked here only when no child could be
    started or import this module; a child that crashed or hung (a broken library can do
    either) leaves its needs missing, with a warning, rather than doing the same here."""
    if not needs:
        return []

    def checked_here() -> list[bool]:
        return [n.present() for n in needs]

    if not sys.executable:
        return checked_here()
    probes = [
        ["lib", list(n.present.names)] if isinstance(n.present, Library) else ["fonts"]
        for n in needs
    ]
    code = "import sys; from docshelf.features import _probe_main; _probe_main(sys.argv[1])"
    try:
        # -P: nothing from the working directory is imported in its place.
        done = subprocess.run(
            [sys.executable, "-P", "-c", code, json.dumps(probes)],
            capture_output=True,
            timeout=_PROBE_SECONDS,
            check=False,
        )
    except OSError:
        return checked_here()
    except subprocess.TimeoutExpired:
        log.warning("the feature probe did not end within %s s: taken as missing", _PROBE_SECONDS)
        return [False] * len(needs)
    if done.returncode == 1:  # an error of its own, such as an import: not a library's doing
        return checked_here()
    try:
        answers = json.loads(done.stdout) if done.returncode == 0 else None
    except ValueError:
        answers = None
    if not (isinstance(answers, list) and len(answers) == len(needs)):
        log.warning(
            "the feature probe ended with %s: taken as missing; %s",
            done.returncode,
            done.stderr.decode(errors="replace")[-500:],
        )
        return [False] * len(needs)
    return [a is True for a in answers]


def _probe_main(probes: str) -> None:
    """The child's side of _probe_apart: one JSON boolean per probe on stdout."""
    answers = [
        Library(tuple(probe[1]))() if probe[0] == "lib" else FONTS() for probe in json.loads(probes)
    ]
    sys.stdout.write(json.dumps(answers))


def require(features: Features, name: str) -> None:
    status = features[name]
    if not status.on:
        raise ServiceUnavailable(status.message())


def startup_notice(features: Features) -> str | None:
    """The one block `docshelf serve` prints when features are off, or None."""
    off = features.off()
    if not off:
        return None
    lines = ["Some features are off: this machine lacks what they need."]
    lines += [f"  {s.feature.label}: missing {', '.join(n.what for n in s.missing)}" for s in off]
    lines += [
        "Turn them on with:",
        f"  {install_command(n for s in off for n in s.missing)}",
        "then restart Docshelf. They answer 503 until then; GET /readyz lists every feature.",
    ]
    return "\n".join(lines)
