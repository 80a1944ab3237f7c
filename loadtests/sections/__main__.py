"""``python -m loadtests.sections``: render every registered section into its document from the
committed results."""

from __future__ import annotations

import sys

from loadtests.sections.registry import ALL


def main() -> int:
    for section in ALL:
        section.write()
        print(f"{section.document}: {section.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
