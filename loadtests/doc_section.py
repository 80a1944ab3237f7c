"""A generated section of a Markdown document: the text between a start and an end marker,
rewritten from committed result files by the generator that owns the markers, and read back by
the test that checks the committed document still holds what the files render to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class DocSection:
    """The markers of one generated section."""

    start: str
    end: str

    def replace(self, document: str, text: str) -> str:
        """``document`` with ``text`` between the markers (the section appended when absent)."""
        block = f"{self.start}\n{text.strip()}\n{self.end}"
        if self.start in document and self.end in document:
            head, rest = document.split(self.start, 1)
            return head + block + rest.split(self.end, 1)[1]
        return f"{document.rstrip()}\n\n{block}\n"

    def whole(self, document: str) -> str:
        """The section as it stands in ``document``, markers included ('' when there is none)."""
        if self.start not in document:
            return ""
        body = document.partition(self.start)[2].partition(self.end)[0]
        return self.start + body + self.end

    def committed(self, document: str) -> str | None:
        """The text between the markers in ``document``, stripped (None when absent)."""
        if self.start not in document or self.end not in document:
            return None
        return document.split(self.start, 1)[1].split(self.end, 1)[0].strip()
