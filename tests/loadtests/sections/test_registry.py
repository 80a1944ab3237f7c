"""Every generated section of the docs is its committed results rendered (one test for all)."""

import pytest

from loadtests.sections.registry import ALL
from loadtests.sections.section import Section


@pytest.mark.parametrize("section", ALL, ids=lambda s: s.name)
def test_every_generated_section_is_its_committed_results_rendered(section):
    assert section.body(section.path.read_text()) == section.render(), "run `python -m loadtests.sections`"


def test_a_section_is_replaced_in_place_keeping_its_marker_or_appended():
    section = Section("x", "docs/benchmarks.md", "r.json", lambda: "new")
    kept = section.replace("# B\n\n<!-- x:start (by hand) -->\nold\n<!-- x:end -->\n\nafter\n")
    assert kept == "# B\n\n<!-- x:start (by hand) -->\nnew\n<!-- x:end -->\n\nafter\n"
    assert section.replace("# B\n") == f"# B\n\n{section.start}\nnew\n{section.end}\n"


def test_the_summary_says_an_area_without_results_is_not_measured_yet():
    from loadtests.sections import summary

    assert "| Capacity | not measured yet |" in summary.render([s for s in ALL if s.name != "capacity"])
