"""The first screen of docs/benchmarks.md: for each area, the headline figure against its goal
and its anchor, met or not, linked to the section that proves it. An area no registered section
gives a headline to says so."""

from __future__ import annotations

from collections.abc import Sequence

from loadtests.sections.section import Headline, Section

AREAS = ("Routing at the knee", "Prompt cache", "Capacity", "Capacity over layouts", "Autoscaling", "A day on a fitted curve",
         "Gateway overhead", "Simulator fidelity", "Real variants")
VERDICT = {True: "**met**", False: "**not met**", None: "—"}


def _anchor_link(title: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return "#" + kept.replace(" ", "-")


def _heading(section: Section) -> str:
    """The section's first heading (or, when it has none, the heading just above its markers in
    its document), as its link's text and target."""
    inside = [line for line in section.render().splitlines() if line.startswith("#")]
    above = [line for line in section.path.read_text().partition(f"<!-- {section.name}:start")[0].splitlines()
             if line.startswith("#")]
    return (inside or above[-1:])[0].lstrip("#").strip()


def render(sections: Sequence[Section]) -> str:
    """The summary table, one row per area in ``AREAS``."""
    rows: dict[str, tuple[Headline, Section]] = {}
    for section in sections:
        if section.headline is not None:
            headline = section.headline()
            rows[headline.area] = (headline, section)
    lines = ["## Summary", "",
             "What the committed results say, each against its goal and its anchor; the sections below prove it.", "",
             "| area | headline | goal | anchor | verdict | section |", "|:--|:--|:--|:--|:--|:--|"]
    for area in AREAS:
        if area not in rows:
            lines.append(f"| {area} | not measured yet | — | — | — | — |")
            continue
        headline, section = rows[area]
        title = _heading(section)
        lines.append(f"| {area} | {headline.figure} | {headline.goal} | {headline.anchor} | {VERDICT[headline.met]} | "
                     f"[{title}]({_anchor_link(title)}) |")
    return "\n".join(lines)
