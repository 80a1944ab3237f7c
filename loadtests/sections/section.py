"""A generated section of a Markdown document: the text between ``<!-- name:start ... -->`` and
``<!-- name:end -->``, rendered from committed results by one function, written by
``python -m loadtests.sections`` and checked by one test over every registered section
(``tests/loadtests/sections/test_registry.py``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, slots=True)
class Headline:
    """One row of the benchmarks summary: an area's figure against its goal and its anchor (the
    baseline it is measured against); ``met`` None when there is nothing to judge yet."""

    area: str
    figure: str
    goal: str
    anchor: str
    met: bool | None


@dataclass(frozen=True, slots=True)
class Section:
    """One generated section: ``name`` marks it in ``document`` (relative to the repository),
    ``render`` gives the text between its markers from the committed ``results`` (a path or glob,
    said in the start marker), and ``headline``, when given, its row of the summary."""

    name: str
    document: str
    results: str
    render: Callable[[], str]
    headline: Callable[[], Headline] | None = None

    @property
    def start(self) -> str:
        return f"<!-- {self.name}:start (written by `python -m loadtests.sections` from {self.results}) -->"

    @property
    def end(self) -> str:
        return f"<!-- {self.name}:end -->"

    @property
    def path(self) -> Path:
        return REPO / self.document

    def block(self) -> str:
        """The section rendered, markers included."""
        return f"{self.start}\n{self.render()}\n{self.end}"

    def committed(self, text: str) -> str | None:
        """The section as it stands in ``text``, markers included (None when absent). The start
        marker is found by its name alone, whatever it says it was written by."""
        opening = f"<!-- {self.name}:start"
        if opening not in text or self.end not in text:
            return None
        body = text.partition(opening)[2].partition(self.end)[0]
        return opening + body + self.end

    def body(self, text: str) -> str | None:
        """The text between the markers in ``text`` (None when the section is absent)."""
        whole = self.committed(text)
        return None if whole is None else between_markers(whole)

    def replace(self, text: str) -> str:
        """``text`` with this section rendered again, its start marker kept as it stands
        (appended at the end, with the marker ``start`` names, when absent)."""
        old = self.committed(text)
        if old is None:
            return f"{text.rstrip()}\n\n{self.block()}\n"
        opening = old.partition("\n")[0]
        return text.replace(old, f"{opening}\n{self.render()}\n{self.end}", 1)

    def write(self) -> None:
        """Render the section into its document from the committed results."""
        self.path.write_text(self.replace(self.path.read_text()))


def between_markers(block: str) -> str:
    """The text of a block that a renderer wrote with its markers, without its first and last lines."""
    return block.strip("\n").partition("\n")[2].rpartition("\n")[0]
