"""The blend detector's compiled arithmetic (``gateway.detect.native``): built from the package's
source, named by its hash, answering as the numpy path does for every shape of request, refusing
ids outside its tables, and chosen by ``routing.task_detector.core``."""

from __future__ import annotations

import ctypes
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from gateway.config import parse_config
from gateway.detect import native
from gateway.detect.blend_model import MODEL_FILE, BlendDetector, BlendWeights
from gateway.detect.blend_model import _vectors as shared_vectors
from gateway.detect.features import PROGRAMMING, SYSTEM_CHARS, request_text, window
from gateway.detect.native import BlendCore, NativeUnavailable, Reading
from gateway.detect.training.blend import TASKS
from gateway.detect.training.data.sources import load_all
from gateway.detect.vectors import VECTORS, bert_characters
from gateway.errors import ConfigError
from tests.gateway.config.test_load import demo_with
from tests.gateway.detect.test_blend_model import SHAPED, TRAINED, _document, _user, _vectors

needs_compiler = pytest.mark.skipif(native.compiler() is None, reason="no C compiler here (cc, gcc or $CC)")


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    if native.compiler() is None:
        pytest.skip("no C compiler here (cc, gcc or $CC)")
    directory = tmp_path_factory.mktemp("native")
    native.build(directory)
    loaded = native.load(directory)
    assert loaded is not None
    return loaded


def _same(a: BlendDetector, b: BlendDetector, messages: list) -> None:
    got, expected = a.detect_messages(messages), b.detect_messages(messages)
    assert all(abs(got.probabilities[t] - expected.probabilities[t]) < 1e-6 for t in TASKS), messages


def test_the_compiled_core_answers_as_numpy_for_every_shape_of_request(library: ctypes.CDLL) -> None:
    for familiarity in (-2.0, 0.999):  # with and without the unfamiliar's uniform answer
        document, _, _ = _document(familiarity=familiarity)
        compiled = BlendDetector.from_document(document, _vectors(), library)
        plain = BlendDetector.from_document(document, _vectors())
        assert (compiled.core_name, plain.core_name) == ("native", "numpy")
        for messages in [*SHAPED, *(_user(text) for text in TRAINED.values()), [], _user("")]:
            _same(compiled, plain, messages)


@pytest.mark.skipif(not VECTORS.exists(), reason="needs `make detector-vectors`")
def test_the_shipped_model_answers_the_same_compiled(library: ctypes.CDLL) -> None:
    vectors = shared_vectors(VECTORS)
    compiled, plain = BlendDetector.packaged(vectors, library), BlendDetector.packaged(vectors)
    requests = [
        _user("What is the capital of France? Answer briefly."),
        _user("If all bloops are razzies and all razzies are lazzies, are all bloops definitely lazzies?"),
        _user("def add(a, b):\n    return a - b\n\nFix the bug in this function."),
        _user("Extract the invoice number and the total from: Invoice #4471, total due $1,208.50." * 40),
        _user("Écris un poème sur la mer, s'il te plaît. 🌊"),
        [{"role": "system", "content": "You are a support agent for ACME."}, _user("My order never came.")[0]],
        [_user("Look up the weather.")[0], {"role": "assistant", "content": "", "tool_calls": [{"id": "1"}]},
         {"role": "tool", "content": '{"temp": 21, "sky": "clear"}'}],
    ]
    for messages in requests:
        _same(compiled, plain, messages)


def test_ids_outside_the_tables_are_refused_not_read(library: ctypes.CDLL) -> None:
    weights = np.zeros((10, 2), dtype=np.float32)
    rows = np.ones((5, 4), dtype=np.float32)
    blocks = np.ones((2, 4, 3), dtype=np.float32)
    core = BlendCore(library, weights, rows, blocks)
    scores, familiarity, filled = core.scores([1], [1, 0], ([0, 4], []))
    assert filled == 1 and len(scores) == 2 and familiarity == pytest.approx(2.0)  # a unit row of 4 ones . ones
    with pytest.raises(ValueError, match="outside"):
        core.scores([], [0, 0], ([5], []))
    with pytest.raises(ValueError, match="outside"):
        core.scores([9], [1, 0], ([], []))  # the last row is the bias, not a column


def test_the_library_is_named_by_its_source(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    before = native.library_path(tmp_path)
    monkeypatch.setattr(native, "source_text", lambda: "int duet_blend_scores(void) { return 0; }\n")
    assert native.library_path(tmp_path) != before
    assert native.load.__wrapped__(tmp_path) is None  # not built: nothing stale is loaded


def test_no_compiler_or_a_failing_one_says_so(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(native, "compiler", lambda: None)
    with pytest.raises(NativeUnavailable, match="no C compiler"):
        native.build(tmp_path)
    with pytest.raises(NativeUnavailable, match="failed on blend_core.c"):
        native.build(tmp_path, cc="false")
    assert not list(tmp_path.rglob("*.so"))


@needs_compiler
def test_build_keeps_a_build_it_already_has(tmp_path: Path) -> None:
    first = native.build(tmp_path)
    stamp = first.stat().st_mtime_ns
    assert native.build(tmp_path, cc="false") == first and first.stat().st_mtime_ns == stamp


def _config(core: str):  # type: ignore[no-untyped-def]
    return parse_config(demo_with(lambda raw: raw["routing"].update(task_detector={"core": core})))


@pytest.mark.skipif(not VECTORS.exists(), reason="needs `make detector-vectors`")
def test_the_config_chooses_the_core_and_names_it_when_it_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    def core_of(config) -> str:  # type: ignore[no-untyped-def]
        assert config.policy.detection is not None
        return config.policy.detection.detector.core_name  # type: ignore[no-any-return]

    assert core_of(_config("numpy")) == "numpy"
    monkeypatch.setattr(native, "load", lambda: None)  # as on a machine where it was never built
    assert core_of(_config("auto")) == "numpy"
    with pytest.raises(ConfigError, match="routing.task_detector.core") as raised:
        _config("native")
    assert "duet detect native" in str(raised.value)


def test_threads_detecting_at_once_each_get_their_own_answer(library: ctypes.CDLL) -> None:
    # ctypes releases the GIL during the call: the answers must not share a buffer.
    import threading

    document, _, _ = _document(familiarity=-2.0)
    compiled = BlendDetector.from_document(document, _vectors(), library)
    texts = list(TRAINED.values())
    expected = {text: compiled.detect_messages(_user(text)) for text in texts}
    wrong: list[str] = []

    def detect(text: str) -> None:
        for _ in range(300):
            if compiled.detect_messages(_user(text)) != expected[text]:
                wrong.append(text)

    threads = [threading.Thread(target=detect, args=(text,)) for text in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


# Texts at the edges of how the detector reads (features.py, blend_features.py, vectors.py): code
# lines after blank ones, ``from x import y`` and its near misses, fences, sentence ends before
# newlines and colons, tabs and CRLF, runs of digits, words longer than WordPiece reads, words with
# no known piece, punctuation alone, a question mark after trailing space, nothing at all.
EDGES = [
    "def f():\n    return 1", "\n\n   class A:", "x\n  from os import path", "from  os import path", "from os  import x",
    "text ```code``` text", "``not a fence``", "#include <stdio.h>\nint main", "let x = 1;\r\nconst y = 2;",
    "fn main() {}", "package main", "import numpy", "public class A", "function f() {}",
    "First sentence. Second one!\nThird: fourth?  ", "a:b. c\n\n\nd", ". . . ?", "   \t\n  ", "",
    "Call 555-1234 or 0800 123 456 by 2024-01-31.", "x" * 150 + " tail.", "y" * 101, "z" * 100 + "!", "Zyzzyva qqqq xxzz! Sort?",
    "__init__ and foo_bar(baz)", "who is taller?   \n", "extract the names from the email: Ann, Bob.",
    ("Solve the riddle. " * 40) + "Now, who is taller?", "a" * 1030, "Hello!!! ?!?! ...", "~`!@#$%^&*()_+-=[]{}|;':\",./<>?",
    # Beyond ASCII: accents (BERT strips them, Python keeps them as tokens of their own), curly
    # quotes and dashes (punctuation to BERT), no-break and other spaces (white space to Python),
    # a combining accent, zero-width and control characters (BERT drops them), a ligature, symbols,
    # a sentence ending before a no-break space, a question before a line separator.
    "Café – naïve ‘quotes’ and “more” … ÀÉÎÕÜ", "\u00a0nbsp\u00a0in\u202fthe\u2009middle", "cafe\u0301 e\u0301te\u0301",
    "zero\u200bwidth\u2060marks\x00and\x07bells", "\u0133sselmeer Ĳ ǆ ǅ", "Ω ≥ ≤ ± ° µ × − → •", "Done.\u00a0Next one?\u2028",
    "def f():\n\u00a0 return 1", "from\u00a0x import y\nfrom é import ü", "\x1c\x1d\x1e\x1f\x0b\x0c\x85 seps", "ΑΒΓ αβγ Ωμέγα",
    # Ideographs (BERT's normaliser spaces them apart), fullwidth forms, Hangul (decomposed to
    # three jamo: nine bytes), kana, emoji (four bytes), Cherokee (lowered past U+AB70).
    "日本語で書いて。abc的def，好", "ＡＢＣ１２３！", "한국어 문장입니다", "カタカナ ひらがな", "emoji 🌊🚀 ok", "ᏣᎳᎩ",
]


def _requests() -> list[list[dict]]:
    out = [_user(text) for text in EDGES]
    for text in EDGES[:12]:
        out.append([{"role": "system", "content": text}, _user("Sort the list.")[0]])
        out.append([_user("Look it up.")[0], {"role": "assistant", "content": "", "tool_calls": [{"id": "1"}]},
                    {"role": "tool", "content": text}, {"role": "tool", "content": text[::-1]}])
        out.append([_user(text)[0], {"role": "assistant", "content": "ok"}, _user("why?")[0]])  # a follow-up
    return out


def test_the_compiled_reading_answers_as_python_reads_at_the_edges(library: ctypes.CDLL) -> None:
    for familiarity in (-2.0, 0.999):
        document, _, _ = _document(familiarity=familiarity)
        compiled = BlendDetector.from_document(document, _vectors(), library)
        plain = BlendDetector.from_document(document, _vectors())
        for messages in [*_requests(), *SHAPED]:
            assert _read_in_c(compiled, messages), messages  # the reading under test, not Python's
            _same(compiled, plain, messages)


def _read_in_c(detector: BlendDetector, messages: list) -> bool:
    """Whether C reads the request; where it does, its columns and ids are Python's, each one."""
    read = request_text(messages)
    assert detector._core is not None
    found = detector._core.read(window(read.user), len(read.user), read.system[:SYSTEM_CHARS],
                                " ".join(read.tool_results), detector._features.shape_columns(read.shape))
    if found is None:
        return False
    expected = detector._features.ids_of(read)
    assert found == (expected.shapes, expected.words, expected.spans), messages
    return True


def test_characters_c_does_not_read_are_read_in_python(library: ctypes.CDLL) -> None:
    document, _, _ = _document(familiarity=-2.0)
    compiled = BlendDetector.from_document(document, _vectors(), library)
    plain = BlendDetector.from_document(document, _vectors())
    # A capital sigma (Python lowers it by its context), a dotted capital I (lowered to two
    # characters), an ideograph past the table's planes.
    for text in ["ΟΔΟΣ ΣΟΦΟΣ", "İstanbul", "rare \U00020000 ideograph"]:
        for messages in (_user(text), [{"role": "system", "content": text}, _user("hello")[0]]):
            assert not _read_in_c(compiled, messages)
            _same(compiled, plain, messages)
    assert compiled._core is not None
    assert compiled._core.detect("x" * 6000, 6000, "", "", []) is None  # longer than C reads: Python reads it


@pytest.mark.skipif(not VECTORS.exists(), reason="needs `make detector-vectors`")
def test_random_text_of_any_character_c_reads_is_read_as_in_python(library: ctypes.CDLL) -> None:
    import random

    vectors = shared_vectors(VECTORS)
    compiled, plain = BlendDetector.packaged(vectors, library), BlendDetector.packaged(vectors)
    rng = random.Random(5)
    pool = [*(chr(c) for c in range(0, native.CHARACTERS, 7) if not 0xD800 <= c <= 0xDFFF),
            *([" ", "\n", ". ", "? ", ": ", "def ", "from x import y\n", "```", "the ", "Sort "] * 400)]
    read = 0
    for _ in range(400):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
        messages = [{"role": "system", "content": "".join(rng.choice(pool) for _ in range(rng.randint(0, 30)))},
                    _user(text)[0], {"role": "tool", "content": "".join(rng.choice(pool) for _ in range(rng.randint(0, 20)))}]
        read += _read_in_c(compiled, messages)
        _same(compiled, plain, messages)
    assert read >= 300  # most draw no character C leaves to Python


@pytest.mark.skipif(not VECTORS.exists(), reason="needs `make detector-vectors`")
def test_the_shipped_model_reads_real_prompts_in_c_as_in_python(library: ctypes.CDLL) -> None:
    vectors = shared_vectors(VECTORS)
    compiled, plain = BlendDetector.packaged(vectors, library), BlendDetector.packaged(vectors)
    by_source: dict[str, int] = {}
    requests = []
    try:
        labelled = load_all(cap=40)  # every source the detector is judged on, 40 requests each
    except SystemExit:
        pytest.skip("needs `make detector-data`")
    for item in labelled:
        requests.append(item.messages)
        by_source[item.source] = by_source.get(item.source, 0) + 1
    requests += _requests()
    assert len(by_source) >= 30
    read = 0
    for messages in requests:
        read += _read_in_c(compiled, messages)
        _same(compiled, plain, messages)
    assert read >= 0.95 * len(requests)  # nearly all: the C reading is what was compared


@pytest.mark.skipif(not VECTORS.exists(), reason="needs `make detector-vectors`")
def test_a_reading_that_might_outgrow_its_buffer_is_left_to_python(library: ctypes.CDLL) -> None:
    # No character the tokenizer reads has more characters in its normalised text than bytes of its
    # own, so a request's bytes bound its subword ids. A table where "a" reads as "zqzqzqzqzqzq"
    # (twelve pieces: "z", "##q", "##z", ...) breaks that bound: C must give the request back
    # (None), not write past its buffer.
    vectors = shared_vectors(VECTORS)
    document = json.loads(resources.files("gateway.detect").joinpath(MODEL_FILE).read_text(encoding="utf-8"))
    compiled = BlendDetector.from_document(document, vectors, library)
    characters = list(bert_characters(native.CHARACTERS))
    characters[ord("a")] = ("zq" * 6, "word")
    features = compiled._features
    reading = Reading(features.shapes, sorted(PROGRAMMING), vectors.tokens, characters, features.parts, 1.0, -2.0)
    core = BlendCore(library, BlendWeights.from_document(document).weights, vectors.rows, compiled._span_blocks, reading)
    text = "a " * 2500
    assert core.detect(text, len(text), text, text, []) is None
    assert core.detect("a b", 3, "", "", []) is not None  # a short one still fits
